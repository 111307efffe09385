//! The proxy's answer as it is stored and traced: made storable (no NUL, a result the
//! database can hold), and the attributes of its `connector call` span.

use crate::connector::Outcome;
use crate::services::ErrorCode;
use crate::telemetry::traces::KeyValue;

/// What a span says of a call's outcome: its kind, the proxy's status and error code.
pub(super) fn outcome_attributes(outcome: &Outcome) -> Vec<KeyValue> {
    let (kind, status, error_code) = match outcome {
        Outcome::Success { .. } => ("success", None, None),
        Outcome::Accepted { .. } => ("accepted", Some(202), None),
        Outcome::CommandFailure {
            error_code,
            http_status,
            ..
        } => ("command_failure", *http_status, Some(error_code)),
        Outcome::ProxyFailure {
            error_code, status, ..
        } => ("proxy_failure", *status, Some(error_code)),
    };
    let mut attributes = vec![KeyValue::new("workflow.connector.outcome", kind)];
    attributes.extend(status.map(|s| KeyValue::new("http.response.status_code", i64::from(s))));
    attributes.extend(
        error_code.map(|code| KeyValue::new("workflow.connector.error_code", code.clone())),
    );
    attributes
}

/// The outcome with everything the database cannot hold made storable: NUL characters in log
/// lines and error texts become U+FFFD, a result's floats are written to come back as floats
/// (`input::keep_floats`), and a result that cannot be stored (NUL, nesting, numbers out of
/// range) turns the call into a failure that says why.
pub fn storable(outcome: Outcome) -> Outcome {
    let clean = |text: String| {
        if text.contains('\0') {
            text.replace('\0', "\u{FFFD}")
        } else {
            text
        }
    };
    let clean_logs = |logs: Vec<String>| logs.into_iter().map(clean).collect::<Vec<_>>();
    match outcome {
        Outcome::Success {
            mut command_response,
            logs,
        } => {
            crate::services::input::keep_floats(&mut command_response);
            match crate::services::input::check_json(
                &command_response,
                ErrorCode::InvalidConnectorResponse,
                "the connector's result",
            ) {
                Ok(()) => Outcome::Success {
                    command_response,
                    logs: clean_logs(logs),
                },
                Err(e) => Outcome::CommandFailure {
                    error_code: "invalid_connector_response".into(),
                    message: e.to_string(),
                    http_status: None,
                    transient: false,
                    logs: clean_logs(logs),
                },
            }
        }
        Outcome::Accepted { logs } => Outcome::Accepted {
            logs: clean_logs(logs),
        },
        Outcome::CommandFailure {
            error_code,
            message,
            http_status,
            transient,
            logs,
        } => Outcome::CommandFailure {
            error_code: clean(error_code),
            message: clean(message),
            http_status,
            transient,
            logs: clean_logs(logs),
        },
        Outcome::ProxyFailure {
            error_code,
            message,
            status,
            transient,
            logs,
        } => Outcome::ProxyFailure {
            error_code: clean(error_code),
            message: clean(message),
            status,
            transient,
            logs: clean_logs(logs),
        },
    }
}
