//! The examples of `perf-trace-macros`' documentation, compiled and run here
//! through `perf_trace_core`'s re-exports: the macros crate cannot run them as
//! its own doctests, since it cannot depend on the crate that depends on it.
//! Keep each test the same as its example.

/// The example of `#[derive(KeySet)]`.
mod key_set {
    use perf_trace_core::keys::EndpointKey;
    use perf_trace_core::KeySet;

    #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(phases)]
    enum Phase {
        ListScopeAuthz,
        ListDbRead,
    }

    #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(endpoints)]
    enum Endpoint {
        #[key(default)]
        Other,
        #[key(rename = "agents.project.sorted")]
        AgentsProjectSorted,
    }

    #[test]
    fn names_order_and_default() {
        assert_eq!(Phase::NAMES, ["list_scope_authz", "list_db_read"]);
        assert_eq!(Phase::SORTED, [1, 0]);
        assert_eq!(
            Endpoint::AgentsProjectSorted.name(),
            "agents.project.sorted"
        );
        assert_eq!(Endpoint::DEFAULT, Endpoint::Other);
    }
}

/// The example of `#[traced_phase]`.
mod traced_phase {
    use perf_trace_core::{traced_phase, KeySet};

    #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(phases)]
    enum Phase {
        ListDbRead,
        Enrich,
    }

    #[traced_phase(Phase::ListDbRead)]
    fn read(ids: &[u32]) -> Result<Vec<u32>, String> {
        if ids.is_empty() {
            return Err("no ids".into());
        }
        Ok(ids.to_vec())
    }

    #[traced_phase(Phase::Enrich)]
    async fn enrich(rows: Vec<u32>) -> Result<usize, String> {
        let rows = read(&rows)?;
        Ok(rows.len())
    }

    #[test]
    fn traced_fns_return_what_their_bodies_return() {
        assert_eq!(read(&[1]), Ok(vec![1]));
        assert_eq!(read(&[]), Err("no ids".to_owned()));
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(enrich(vec![1, 2])), Ok(2));
        assert_eq!(runtime.block_on(enrich(vec![])), Err("no ids".to_owned()));
    }
}

/// The example of `#[counted_store]`.
mod counted_store {
    use perf_trace_core::{counted_store, KeySet};

    #[counted_store]
    pub trait AuthzStore {
        /// The store's error.
        type Error;
        /// A user by id.
        fn get_user(&self, id: u64) -> Result<String, Self::Error>;
        /// Role definitions by ids.
        #[counted(rename = "GetRoleDefinitionsByIDs")]
        fn get_role_definitions_by_ids(&self, ids: &[u64]) -> Vec<String>;
        /// Not counted.
        #[counted(skip)]
        fn name(&self) -> &'static str {
            "store"
        }
    }

    struct Db;
    impl AuthzStore for Db {
        type Error = String;
        fn get_user(&self, id: u64) -> Result<String, String> {
            Ok(format!("user{id}"))
        }
        fn get_role_definitions_by_ids(&self, _ids: &[u64]) -> Vec<String> {
            vec![]
        }
    }

    #[test]
    fn decorator_forwards_and_names_the_methods() {
        let store = CountedAuthzStore::new(Db);
        assert_eq!(store.get_user(7), Ok("user7".to_owned()));
        assert_eq!(
            store.get_role_definitions_by_ids(&[1]),
            Vec::<String>::new()
        );
        assert_eq!(store.name(), "store");
        assert_eq!(
            AuthzStoreMethod::NAMES,
            ["get_user", "get_role_definitions_by_ids"]
        );
    }
}

/// The example of `key!`.
mod key_macro {
    use perf_trace_core::{key, KeySet};

    #[derive(KeySet, Clone, Copy, PartialEq, Eq, Debug)]
    #[key_set(counters, prefix = "cache")]
    enum Cache {
        Hit,
        Miss,
    }

    #[test]
    fn a_checked_key_is_the_variant() {
        assert_eq!(key!(Cache::Miss), Cache::Miss);
        assert_eq!(key!(Cache::Hit).name(), "hit");
    }
}
