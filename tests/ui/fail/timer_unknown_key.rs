use perf_trace_core::{key, time, KeySet};

#[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
#[key_set(timers, prefix = "render")]
pub enum Render {
    Invoice,
    PackingSlip,
}

fn main() {
    time(key!(Render::Invoise), || ());
    time(key!(Render::Receipt), || ());
}
