use perf_trace_core::KeySet;

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
    #[key(route = "FETCH /items")]
    ItemsList,
    #[key(route = "GET items/{sku}")]
    ItemsGet,
}

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(phases)]
pub enum Phase {
    #[key(route = "GET /items")]
    Load,
}

fn main() {}
