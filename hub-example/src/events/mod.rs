//! Server-sent events: subjects, the broadcast bus, and authorized subscriptions.

mod bus;
pub mod subjects;
mod subscription;

pub use bus::{EventBus, HubEvent, BUS_CAPACITY};
pub use subjects::{parse_subjects, Pattern, Subject, SubjectError};
pub use subscription::{authorize_subjects, expand_subjects, Expanded, Requirement};
