//! The states of instances, tasks and messages: one enum each, from the engine to SQL to the
//! wire.

use crate::labels::text_enum;

text_enum! {
    /// A process instance's status.
    pub enum InstanceStatus as instance_status {
        Running = "running",
        Waiting = "waiting",
        UserInputRequired = "user_input_required",
        Complete = "complete",
        Error = "error",
        Suspended = "suspended",
        Terminated = "terminated",
    }
}

impl InstanceStatus {
    /// No event can move the instance on (complete, error, terminated).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            InstanceStatus::Complete | InstanceStatus::Error | InstanceStatus::Terminated
        )
    }
}

text_enum! {
    /// A task's state (SpiffWorkflow's names).
    pub enum TaskState as task_state {
        Ready = "READY",
        Waiting = "WAITING",
        Started = "STARTED",
        Completed = "COMPLETED",
        Error = "ERROR",
        Cancelled = "CANCELLED",
    }
}

impl TaskState {
    /// READY, WAITING or STARTED.
    pub fn is_live(self) -> bool {
        matches!(
            self,
            TaskState::Ready | TaskState::Waiting | TaskState::Started
        )
    }
}

text_enum! {
    /// A message sent (API or engine) or a receive waiting at a catch element.
    pub enum MessageType as message_type {
        Send = "send",
        Receive = "receive",
    }
}

text_enum! {
    /// A message's stored status: `ready` (a send buffered, or a receive waiting), `running` (a
    /// send being routed), `completed` (correlated or started an instance), `failed`,
    /// `cancelled` (expired, or its wait ended without it), `not_accepted` (refused),
    /// `suspended` (a receive of a suspended instance).
    pub enum MessageStatus as message_status {
        Ready = "ready",
        Running = "running",
        Completed = "completed",
        Failed = "failed",
        Cancelled = "cancelled",
        NotAccepted = "not_accepted",
        Suspended = "suspended",
    }
}

text_enum! {
    /// Why a send was not taken.
    pub enum FailureReason as failure_reason {
        NoReceiver = "no_receiver",
        CorrelationMismatch = "correlation_mismatch",
        Expired = "expired",
    }
}

text_enum! {
    /// What the messages list labels a message with, from its type and status
    /// ([`MessageState::of`]).
    pub enum MessageState as message_state {
        Accepted = "accepted",
        Buffered = "buffered",
        Completed = "completed",
        Rejected = "rejected",
        Waiting = "waiting",
        Cancelled = "cancelled",
    }
}

impl MessageState {
    /// A send is `accepted` (delivery under way), `buffered`, `completed` or `rejected` (not
    /// accepted, failed, or expired); a receive is `waiting` (also while its instance is
    /// suspended), `completed` or `cancelled`. The store's list filter is generated from this
    /// rule.
    pub fn of(message_type: MessageType, status: MessageStatus) -> MessageState {
        use MessageStatus::*;
        match (message_type, status) {
            (_, Completed) => MessageState::Completed,
            (MessageType::Send, Running) => MessageState::Accepted,
            (MessageType::Send, Ready) => MessageState::Buffered,
            (MessageType::Send, Failed | Cancelled | NotAccepted | Suspended) => {
                MessageState::Rejected
            }
            (MessageType::Receive, Ready | Running | Suspended) => MessageState::Waiting,
            (MessageType::Receive, Failed | Cancelled | NotAccepted) => MessageState::Cancelled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_read_back_and_match_their_macros() {
        for status in InstanceStatus::ALL {
            assert_eq!(InstanceStatus::parse(status.as_str()), Some(*status));
        }
        for state in TaskState::ALL {
            assert_eq!(TaskState::parse(state.as_str()), Some(*state));
        }
        assert_eq!(instance_status!(UserInputRequired), "user_input_required");
        assert_eq!(task_state!(Ready), TaskState::Ready.as_str());
        assert_eq!(
            message_status!(NotAccepted),
            MessageStatus::NotAccepted.as_str()
        );
        assert_eq!(InstanceStatus::parse("finished"), None);
    }

    #[test]
    fn serde_uses_the_labels_and_refuses_others() {
        assert_eq!(
            serde_json::to_string(&TaskState::Cancelled).unwrap(),
            "\"CANCELLED\""
        );
        assert!(serde_json::from_str::<TaskState>("\"DONE\"").is_err());
        let waiting: InstanceStatus = serde_json::from_str("\"waiting\"").unwrap();
        assert_eq!(waiting, InstanceStatus::Waiting);
    }
}
