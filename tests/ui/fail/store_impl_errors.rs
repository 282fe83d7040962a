use perf_trace_core::{counted_store, key};

pub struct Repo;

// `decorator` has nothing to name on an impl block; a const fn cannot be
// timed; two methods may not share a key.
#[counted_store(decorator = CountedRepo)]
impl Repo {
    pub const fn zero(&self) -> u32 {
        0
    }

    pub fn get_stock(&self) -> u32 {
        1
    }

    #[counted(rename = "GetStock")]
    pub fn fetch_stock(&self) -> u32 {
        2
    }

    #[counted]
    pub const LIMIT: u32 = 3;
}

pub trait Stock {
    fn get(&self) -> u32;
}

// A trait's impl: the attribute goes on the trait.
#[counted_store]
impl Stock for Repo {
    fn get(&self) -> u32 {
        4
    }
}

pub struct Orders;

#[counted_store]
impl Orders {
    pub fn get_order(&self) -> u32 {
        5
    }
}

fn main() {
    let _ = key!(OrdersMethod::GetOrdr);
}
