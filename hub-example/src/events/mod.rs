//! Server-sent events: subjects, the broadcast bus (relayed across replicas
//! on PostgreSQL), and authorized subscriptions.

mod bus;
mod relay;
pub mod subjects;
mod subscription;

pub use bus::{EventBus, EventRelay, HubEvent, BUS_CAPACITY};
pub use relay::PgEventRelay;
pub use subjects::{parse_subjects, Pattern, Subject, SubjectError};
pub use subscription::{authorize_subjects, expand_subjects, Expanded, Requirement};
