//! What every layer names: typed ids ([`ids`]) and the states of instances, tasks and messages
//! ([`states`]). Each state is one enum whose labels are written once, in its declaration:
//! the engine, the SQL (as bound values and, through the label macros such as
//! [`message_status!`], as literals in statements), and the wire all use them.

mod labels;

pub mod ids;
pub mod states;

pub use ids::{InstanceId, MessageId, ModelId, TaskGuid};

/// An enum of text labels (see the state enums): what a caller needs to read one from text.
pub trait Labelled: Sized + Copy {
    /// Every label, in declaration order.
    const LABELS: &'static [&'static str];
    fn parse(label: &str) -> Option<Self>;
}
pub use states::{
    FailureReason, InstanceStatus, MessageState, MessageStatus, MessageType, TaskState,
};
