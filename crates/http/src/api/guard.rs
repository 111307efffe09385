//! Checks every request gets before routing, in one middleware:
//! - the path and the query string must percent-decode to UTF-8 without control characters
//!   (`abc%ffdef` would otherwise become `abc\u{fffd}def`, and two names would collapse into
//!   one; `%00` cannot be stored): 400 `invalid_path` or `invalid_query`;
//! - the body must have arrived within the body-read deadline after the headers (a client that
//!   trickles a byte every few seconds would otherwise hold a connection and a worker forever):
//!   reading it then fails, and the extractors answer 408 `request_timeout`;
//! - a panic while handling the request (a defect) answers 500 `internal_server_error`, logged
//!   with the path, instead of dropping the connection without an answer.

use crate::services::ErrorCode;
use std::time::Duration;

use actix_web::body::MessageBody;
use actix_web::dev::{Payload, ServiceRequest, ServiceResponse};
use actix_web::error::PayloadError;
use actix_web::middleware::Next;
use futures_util::{FutureExt, StreamExt};
use percent_encoding::percent_decode;
use std::panic::AssertUnwindSafe;

use super::error::ApiError;

/// The deadline for reading a request body, as app data (from `BODY_READ_TIMEOUT_MS`).
#[derive(Debug, Clone, Copy)]
pub struct BodyReadTimeout(pub Duration);

/// The error a body stream ends with when its deadline passes.
pub fn body_timeout_error() -> PayloadError {
    PayloadError::Io(std::io::Error::new(
        std::io::ErrorKind::TimedOut,
        "the request body did not arrive in time",
    ))
}

pub fn is_body_timeout(err: &PayloadError) -> bool {
    matches!(err, PayloadError::Io(e) if e.kind() == std::io::ErrorKind::TimedOut)
}

pub async fn guard_requests(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    if let Err(detail) = decodes_cleanly(req.path().as_bytes()) {
        return Err(
            ApiError::refused(ErrorCode::InvalidPath, format!("The path {detail}.")).into(),
        );
    }
    if let Err(detail) = decodes_cleanly(req.query_string().as_bytes()) {
        return Err(ApiError::refused(
            ErrorCode::InvalidQuery,
            format!("The query string {detail}."),
        )
        .into());
    }
    if let Some(timeout) = req.app_data::<BodyReadTimeout>().copied() {
        let payload = actix_web::HttpMessage::take_payload(&mut req);
        req.set_payload(with_deadline(payload, timeout.0));
    }
    // the request itself cannot be kept (routing needs it unshared): its path can
    let path = req.path().to_owned();
    match AssertUnwindSafe(next.call(req)).catch_unwind().await {
        Ok(result) => result,
        Err(_) => Err(ApiError::internal(format_args!("panic while handling {path}")).into()),
    }
}

/// Percent-decodes `raw` (a path or a query string) and checks the result.
fn decodes_cleanly(raw: &[u8]) -> Result<(), String> {
    let decoded: Vec<u8> = percent_decode(raw).collect();
    let text = std::str::from_utf8(&decoded)
        .map_err(|_| "is not UTF-8 once percent-decoded".to_string())?;
    match text.chars().find(|c| c.is_control()) {
        Some(c) => Err(format!("contains the control character U+{:04X}", c as u32)),
        None => Ok(()),
    }
}

/// The request body as a stream that fails once `deadline` has passed since the headers.
fn with_deadline(payload: Payload, deadline: Duration) -> Payload {
    let until = tokio::time::Instant::now() + deadline;
    let stream = futures_util::stream::unfold(Some(payload), move |state| async move {
        let mut payload = state?;
        match tokio::time::timeout_at(until, payload.next()).await {
            Ok(Some(item)) => Some((item, Some(payload))),
            Ok(None) => None,
            Err(_) => Some((Err(body_timeout_error()), None)),
        }
    });
    Payload::Stream {
        payload: Box::pin(stream),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_must_decode_to_clean_utf8() {
        assert!(decodes_cleanly(b"/v1.0/messages/order%20paid").is_ok());
        assert!(decodes_cleanly("/v1.0/messages/caf%C3%A9".as_bytes()).is_ok());
        assert!(decodes_cleanly(b"/v1.0/messages/abc%ffdef").is_err());
        assert!(decodes_cleanly(b"/v1.0/messages/x%00y").is_err());
        assert!(decodes_cleanly(b"/v1.0/messages/x%0Ay").is_err());
        assert!(decodes_cleanly(b"name=%00").is_err());
        assert!(decodes_cleanly(b"name=a%2Bb&status=ready").is_ok());
    }
}
