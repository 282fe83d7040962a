//! Server-sent events: subjects, the broadcast bus (relayed across replicas
//! on PostgreSQL), and authorized subscriptions.

mod bus;
mod relay;
pub mod subjects;
mod subscription;

pub use bus::{EventBus, HubEvent};
pub(crate) use relay::PgEventRelay;
pub(crate) use subjects::parse_subjects;
pub use subjects::Pattern;
pub use subjects::Subject;
pub(crate) use subscription::{authorize_subjects, expand_subjects};
