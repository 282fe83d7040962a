use perf_trace_core::{key, record::set_endpoint, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(endpoints)]
pub enum Endpoint {
    #[key(default)]
    Other,
    #[key(rename = "orders.list")]
    OrdersList,
    #[key(rename = "orders.get")]
    OrdersGet,
}

fn main() {
    set_endpoint(key!(Endpoint::OrderList));
    set_endpoint(key!("orders.list"));
}
