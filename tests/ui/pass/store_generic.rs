use std::fmt::Debug;

use perf_trace_core::{counted_store, KeySet};

/// A store generic over its id type, with a lifetime and a const parameter.
#[counted_store]
pub trait Repo<'a, Id: Copy + Debug + 'a, const SHARDS: usize>: Send + Sync
where
    Id: PartialEq,
{
    /// An item that borrows from the store.
    type Item<'b>: Debug
    where
        Self: 'b;

    /// The number of keys per shard.
    const PER_SHARD: usize;

    fn get<'b>(&'b self, id: Id) -> Option<Self::Item<'b>>;

    fn find<P: Fn(&Id) -> bool>(&self, ids: &'a [Id], pred: P) -> Option<&'a Id>;

    fn chunk<const N: usize>(&self, ids: [Id; N]) -> [Option<Id>; N];

    fn describe(&self, _: Id, (a, b): (u8, u8)) -> String {
        format!("{a}-{b}")
    }
}

#[derive(Clone, Debug)]
struct Mem {
    names: Vec<String>,
}

impl<'a> Repo<'a, usize, 4> for Mem {
    type Item<'b> = &'b str;
    const PER_SHARD: usize = 16;

    fn get<'b>(&'b self, id: usize) -> Option<&'b str> {
        self.names.get(id).map(String::as_str)
    }

    fn find<P: Fn(&usize) -> bool>(&self, ids: &'a [usize], pred: P) -> Option<&'a usize> {
        ids.iter().find(|i| pred(i))
    }

    fn chunk<const N: usize>(&self, ids: [usize; N]) -> [Option<usize>; N] {
        ids.map(|i| (i < self.names.len()).then_some(i))
    }
}

fn use_repo<'a, R: Repo<'a, usize, 4>>(repo: &R, ids: &'a [usize]) -> Option<&'a usize> {
    repo.find(ids, |i| *i > 1)
}

fn main() {
    let store = CountedRepo::new(Mem {
        names: vec!["a".into(), "b".into()],
    });
    assert_eq!(store.get(1), Some("b"));
    assert_eq!(use_repo(&store, &[1, 2, 3]), Some(&2));
    assert_eq!(store.chunk([0, 5]), [Some(0), None]);
    assert_eq!(store.describe(0, (1, 2)), "1-2");
    assert_eq!(<CountedRepo<Mem> as Repo<usize, 4>>::PER_SHARD, 16);
    assert_eq!(
        RepoMethod::NAMES,
        ["get", "find", "chunk", "describe"]
    );
    let copy = store.clone();
    assert_eq!(format!("{copy:?}"), r#"CountedRepo { inner: Mem { names: ["a", "b"] } }"#);
}
