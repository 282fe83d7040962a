use std::future::Future;

use async_trait::async_trait;
use perf_trace_core::{counted_store, KeySet};

#[counted_store(methods = AgentStoreMethod, decorator = CountedAgents)]
#[allow(async_fn_in_trait)]
pub trait AgentStore: Send + Sync {
    type Error: Send;

    async fn get_agent(&self, id: u64) -> Result<String, Self::Error>;

    fn get_project(&self, id: u64) -> impl Future<Output = Result<u64, Self::Error>> + Send;

    fn get_hub_setting(&self, key: &str) -> Option<String>;
}

struct Db;

impl AgentStore for Db {
    type Error = String;

    async fn get_agent(&self, id: u64) -> Result<String, String> {
        Ok(format!("agent-{id}"))
    }

    fn get_project(&self, id: u64) -> impl Future<Output = Result<u64, String>> + Send {
        async move { Ok(id) }
    }

    fn get_hub_setting(&self, key: &str) -> Option<String> {
        (key == "x").then(|| "1".to_owned())
    }
}

// `#[async_trait]` under `#[counted_store]`: the decorator's impl gets it too.
#[counted_store]
#[async_trait]
pub trait GroupStore: Send + Sync {
    async fn get_group(&self, id: u64) -> Option<String>;
}

// `#[async_trait]` over `#[counted_store]`: the boxed futures are timed.
#[async_trait]
#[counted_store]
pub trait UserStore: Send + Sync {
    async fn get_user(&self, id: u64) -> Option<String>;
}

struct Groups;

#[async_trait]
impl GroupStore for Groups {
    async fn get_group(&self, id: u64) -> Option<String> {
        Some(format!("group-{id}"))
    }
}

#[async_trait]
impl UserStore for Groups {
    async fn get_user(&self, id: u64) -> Option<String> {
        Some(format!("user-{id}"))
    }
}

fn assert_send<T: Send>(_: &T) {}

fn main() {
    let agents = CountedAgents::new(Db);
    let project = agents.get_project(1);
    assert_send(&project);
    drop(project);
    let _ = agents.get_agent(1);
    assert_eq!(agents.get_hub_setting("x"), Some("1".to_owned()));

    let groups = CountedGroupStore::new(Groups);
    let group = groups.get_group(1);
    assert_send(&group);
    drop(group);
    let users = CountedUserStore::new(Groups);
    let user = users.get_user(1);
    assert_send(&user);
    drop(user);

    assert_eq!(AgentStoreMethod::NAMES, ["get_agent", "get_project", "get_hub_setting"]);
    assert_eq!(GroupStoreMethod::NAMES, ["get_group"]);
    assert_eq!(UserStoreMethod::NAMES, ["get_user"]);
}
