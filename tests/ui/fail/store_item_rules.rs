use std::sync::Arc;

use perf_trace_core::counted_store;

// `#[counted]` on a trait's type or const, a method that takes or returns
// `Self`, an associated function: each refused where it is written, every
// one reported. A skipped method with a default body keeps it, whatever its
// receiver.
#[counted_store]
pub trait AuthzStore {
    #[counted(skip)]
    type Error;

    #[counted]
    const LIMIT: u32;

    fn get_user(&self, id: u64) -> Option<String>;

    fn fork(&self) -> Self
    where
        Self: Sized;

    #[counted(rename = "Join Them")]
    fn join(&self, others: Vec<Self>) -> Box<Self>
    where
        Self: Sized;

    #[counted(skip)]
    fn shared(self: Arc<Self>) -> u32 {
        0
    }

    #[counted(rename = "Bad Name")]
    fn open() -> u32;
}

pub struct Repo;

// A skipped `const fn` is fine; a skipped method has no variant to rename,
// and a block whose methods are all skipped counts nothing.
#[counted_store(methods = RepoCalls)]
impl Repo {
    #[counted(skip)]
    pub const fn zero(&self) -> u32 {
        0
    }

    #[counted(skip, rename = "Load")]
    pub fn load(&self) -> u32 {
        1
    }
}

fn main() {}
