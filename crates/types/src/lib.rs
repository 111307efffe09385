//! What every layer names: typed ids ([`ids`]) and the states of instances, tasks and messages
//! ([`states`]). Each state is one enum whose labels are written once, in its declaration:
//! the engine, the SQL (as bound values and, through the label macros such as
//! [`message_status!`], as literals in statements), and the wire all use them.

mod labels;

pub mod ids;
pub mod states;

pub use ids::{InstanceId, MessageId, TaskGuid};
pub use states::{
    FailureReason, InstanceStatus, MessageState, MessageStatus, MessageType, TaskState,
};
