#![deny(missing_docs, dead_code)]
//! A public store: everything generated is documented.

use perf_trace_core::keys::StoreMethodKey;
use perf_trace_core::{counted_store, KeySet};

/// The authorization inputs, keyed as the Scion contract keys them.
#[counted_store(rename_all = "PascalCase")]
pub trait AuthzStore {
    /// Role definitions by ids.
    #[counted(rename = "GetRoleDefinitionsByIDs")]
    fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<u64>;

    /// Effective groups.
    fn get_effective_groups(&self, user: u64) -> Vec<u64>;

    /// The backend's name: not counted.
    #[counted(skip)]
    fn backend(&self) -> &'static str;

    /// Makes a store; keeps its default body on the decorator.
    #[counted(skip)]
    fn describe() -> &'static str
    where
        Self: Sized,
    {
        "authz"
    }

    /// Raw access.
    ///
    /// # Safety
    /// `p` must be valid.
    unsafe fn read_raw(&self, p: *const u64) -> u64;
}

struct Db;

impl AuthzStore for Db {
    fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<u64> {
        ids.to_vec()
    }
    fn get_effective_groups(&self, user: u64) -> Vec<u64> {
        vec![user]
    }
    fn backend(&self) -> &'static str {
        "sqlite"
    }
    unsafe fn read_raw(&self, p: *const u64) -> u64 {
        unsafe { *p }
    }
}

fn is_store_key<K: StoreMethodKey>(_: K) {}

fn main() {
    let store = CountedAuthzStore::new(Db);
    assert_eq!(store.get_role_definitions_by_ids(&[3]), [3]);
    assert_eq!(store.backend(), "sqlite");
    assert_eq!(CountedAuthzStore::<Db>::describe(), "authz");
    let x = 9;
    assert_eq!(unsafe { store.read_raw(&x) }, 9);
    assert_eq!(
        AuthzStoreMethod::NAMES,
        ["GetRoleDefinitionsByIDs", "GetEffectiveGroups", "ReadRaw"]
    );
    assert_eq!(
        AuthzStoreMethod::GetRoleDefinitionsByIDs.name(),
        "GetRoleDefinitionsByIDs"
    );
    is_store_key(AuthzStoreMethod::GetEffectiveGroups);
    let _ = store.get_effective_groups(1);
    let _: &Db = store.inner();
    let _: Db = store.into_inner();
}
