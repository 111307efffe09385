//! Client of the connector proxy (`docs/connector-protocol.md`).
//!
//! * [`envelope`]: pure rules — [`classify`] an execution response into an [`Outcome`],
//!   [`parse_callback`] a callback body, [`result_with_operator`], [`merge_commands`],
//!   [`retry_delay`].
//! * [`client`]: HTTP — [`ConnectorClient::execute`] (POST `/v1/do/{connector}/{command}`,
//!   307/308 followed by hand), [`ConnectorClient::commands`], [`ConnectorClient::auths`].
//!
//! Typical dispatcher use:
//!
//! ```ignore
//! let outcome = client.call(operator_id, &request_body).await; // execute + classify
//! store_logs(outcome.logs());
//! match outcome {
//!     Outcome::Success { command_response, .. } => {
//!         let result = result_with_operator(command_response, operator_id);
//!         // assign `result` to the result variable, complete the task
//!     }
//!     Outcome::Accepted { .. } => { /* task stays waiting for the callback */ }
//!     Outcome::CommandFailure { transient, .. } | Outcome::ProxyFailure { transient, .. } => {
//!         // retry after retry_delay(base, attempt) when transient and retries remain,
//!         // else error boundary event or instance error
//!     }
//! }
//! ```

pub mod client;
pub mod envelope;
#[cfg(test)]
pub(crate) mod fake_proxy;

pub use client::{
    ConnectorClient, ProxyConfig, RawResponse, TransportError, TransportErrorKind, API_KEY_HEADER,
    USER_AGENT,
};
pub use envelope::{
    classify, extract_logs, is_transient_status, merge_commands, parse_callback,
    result_with_operator, retry_delay, split_operator_id, CallbackOutcome, Outcome,
    MAX_RETRY_DELAY,
};
