//! Pure rules of the connector-proxy protocol: response classification, callback parsing,
//! the synchronous result value, command-catalog merging and retry delays.
//!
//! Nothing here does I/O; everything is covered by table-driven tests at the bottom.
//!
//! Rules chosen where `connector-proxy-protocol.md` is silent:
//!
//! * **Empty body.** A body that is empty or only whitespace counts as `{}`.
//! * **Effective command response.** `command_response` when present and not null; else the
//!   legacy `api_response` when present and not null; else (old unversioned response) the whole
//!   body. A value that is not an object is wrapped as `{"body": value}`, so that the result is
//!   always an object and `operator_identifier` can be added to it.
//! * **Envelope** (needed for the 202 rule): the effective command response comes from a
//!   `command_response` (or legacy `api_response`) field holding an object.
//! * **Structured error.** `error` must be an object with a non-null `error_code`; a string
//!   code is used as is, any other JSON value is rendered as JSON. A missing `message` becomes
//!   `"command failed with error code <code>"`. An `error` that is not an object, or lacks
//!   `error_code`, is ignored.
//! * **Inner status** (`command_response.http_status`): an integer, or a string of digits;
//!   anything else counts as absent.
//! * **Error codes made up by the engine:** inner status >= 300 -> `http_status_<n>`;
//!   outer status >= 300 without a structured error -> `proxy_http_status_<n>`; a body that is
//!   not JSON -> `invalid_proxy_response`; transport errors -> see
//!   [`super::TransportErrorKind::error_code`].
//! * **Transient or permanent.** A failure is transient when the status that describes it
//!   is >= 500 or 429. For a structured error or an inner-status failure that status is the inner
//!   `http_status` when present, else the outer status (so a 503 minimal envelope is transient,
//!   a 404 `command_not_found` permanent, a 200 + structured error without inner status
//!   permanent). For a proxy failure it is the outer status. Transport errors: see
//!   [`super::TransportError::is_transient`].
//! * **Logs.** `wf__logs` must be an array; string items are kept as they are, other items are
//!   rendered as JSON. A body that is not JSON has no logs.

use std::time::Duration;

use serde_json::{Map, Value};

/// The classification of one execution response (spec "Errors" and "States" tables).
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Synchronous completion. `command_response` is the effective command response (always an
    /// object); the caller adds `operator_identifier` with [`result_with_operator`].
    Success {
        command_response: Value,
        logs: Vec<String>,
    },
    /// Outer 202 with a valid envelope: the task waits for the callback.
    Accepted { logs: Vec<String> },
    /// The command ran (or was dispatched) and failed: structured error or inner status >= 300.
    CommandFailure {
        error_code: String,
        message: String,
        /// `command_response.http_status` when the proxy reported one.
        http_status: Option<u16>,
        transient: bool,
        logs: Vec<String>,
    },
    /// The proxy itself failed: body not JSON, outer status >= 300 without structured error,
    /// or (through `From<TransportError>`) no HTTP response at all.
    ProxyFailure {
        error_code: String,
        message: String,
        /// The outer HTTP status; `None` for transport errors.
        status: Option<u16>,
        transient: bool,
        logs: Vec<String>,
    },
}

impl Outcome {
    /// The `wf__logs` lines of the response (empty when there were none).
    pub fn logs(&self) -> &[String] {
        match self {
            Outcome::Success { logs, .. }
            | Outcome::Accepted { logs }
            | Outcome::CommandFailure { logs, .. }
            | Outcome::ProxyFailure { logs, .. } => logs,
        }
    }

    /// True for a failure that a retry may cure.
    pub fn is_transient(&self) -> bool {
        match self {
            Outcome::CommandFailure { transient, .. } | Outcome::ProxyFailure { transient, .. } => {
                *transient
            }
            _ => false,
        }
    }

    /// True for `CommandFailure` and `ProxyFailure`.
    pub fn is_failure(&self) -> bool {
        matches!(
            self,
            Outcome::CommandFailure { .. } | Outcome::ProxyFailure { .. }
        )
    }
}

/// Outcome of a callback body (`PUT {wf__callback_url}`).
#[derive(Debug, Clone, PartialEq)]
pub enum CallbackOutcome {
    /// `result` is `command_response.body` (a JSON string body parsed, see [`parse_callback`]).
    Success { result: Value, logs: Vec<String> },
    Failure {
        error_code: String,
        message: String,
        transient: bool,
        logs: Vec<String>,
    },
}

/// True for a status that a retry may cure: >= 500 or 429.
pub fn is_transient_status(status: u64) -> bool {
    status >= 500 || status == 429
}

/// Splits an operator id `connector/command` at its single slash. Both parts must be
/// non-empty and neither may be `.` or `..`.
pub fn split_operator_id(operator_id: &str) -> Option<(&str, &str)> {
    let (connector, command) = operator_id.split_once('/')?;
    let ok = |s: &str| !s.is_empty() && s != "." && s != ".." && !s.contains('/');
    (ok(connector) && ok(command)).then_some((connector, command))
}

/// Parses a response body; an empty (or whitespace-only) body counts as `{}`.
fn parse_body(body: &[u8]) -> Option<Value> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Some(Value::Object(Map::new()));
    }
    serde_json::from_slice(body).ok()
}

/// `wf__logs` of a parsed body.
pub fn extract_logs(body: &Value) -> Vec<String> {
    match body.get("wf__logs") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| match item {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// `(error_code, message)` of a structured error, if the body carries one.
fn structured_error(body: &Value) -> Option<(String, String)> {
    let error = body.get("error")?.as_object()?;
    let code = match error.get("error_code")? {
        Value::Null => return None,
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let message = match error.get("message") {
        Some(Value::String(s)) => s.clone(),
        None | Some(Value::Null) => format!("command failed with error code {code}"),
        Some(other) => other.to_string(),
    };
    Some((code, message))
}

fn wrap_object(value: &Value) -> Value {
    match value {
        Value::Object(_) => value.clone(),
        other => serde_json::json!({ "body": other }),
    }
}

/// The effective command response and whether it came from a real envelope field holding an
/// object (see the module documentation).
fn effective_command_response(body: &Value) -> (Value, bool) {
    for field in ["command_response", "api_response"] {
        match body.get(field) {
            None | Some(Value::Null) => continue,
            Some(v) => return (wrap_object(v), v.is_object()),
        }
    }
    (wrap_object(body), false)
}

fn http_status_of(command_response: &Value) -> Option<u64> {
    match command_response.get("http_status")? {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Classifies one execution response (spec "Errors" table in its order, then "States").
pub fn classify(status: u16, body: &[u8]) -> Outcome {
    let outer = u64::from(status);
    // (1) Not valid JSON -> proxy failure.
    let Some(parsed) = parse_body(body) else {
        return Outcome::ProxyFailure {
            error_code: "invalid_proxy_response".into(),
            message: format!("connector proxy answered HTTP {status} with a body that is not JSON"),
            status: Some(status),
            transient: is_transient_status(outer),
            logs: Vec::new(),
        };
    };
    let logs = extract_logs(&parsed);
    let (command_response, is_envelope) = effective_command_response(&parsed);
    let inner = http_status_of(&command_response);
    let inner_u16 = inner.and_then(|n| u16::try_from(n).ok());
    // The status that decides whether a command failure is transient.
    let deciding = inner.unwrap_or(outer);

    // (2) Structured error with error_code -> command failure.
    if let Some((error_code, message)) = structured_error(&parsed) {
        return Outcome::CommandFailure {
            error_code,
            message,
            http_status: inner_u16,
            transient: is_transient_status(deciding),
            logs,
        };
    }
    // (3) Inner status >= 300 -> command failure, even under outer 200.
    if let Some(n) = inner.filter(|n| *n >= 300) {
        return Outcome::CommandFailure {
            error_code: format!("http_status_{n}"),
            message: format!("command reported HTTP status {n}"),
            http_status: inner_u16,
            transient: is_transient_status(n),
            logs,
        };
    }
    // (4) Outer status >= 300 -> proxy failure.
    if status >= 300 {
        let mut message = format!("connector proxy answered HTTP {status}");
        if matches!(status, 301..=303) {
            message.push_str(" (301, 302 and 303 redirects are not followed for command routing)");
        }
        return Outcome::ProxyFailure {
            error_code: format!("proxy_http_status_{status}"),
            message,
            status: Some(status),
            transient: is_transient_status(outer),
            logs,
        };
    }
    // States: outer 202 + envelope + no error + inner absent or < 300 -> waiting.
    if status == 202 && is_envelope {
        return Outcome::Accepted { logs };
    }
    Outcome::Success {
        command_response,
        logs,
    }
}

/// The value a synchronous success stores in the result variable: the command response plus
/// `operator_identifier` (the `connector/command` id). A non-object is wrapped as `{"body": v}`.
pub fn result_with_operator(command_response: Value, operator_id: &str) -> Value {
    let mut value = match command_response {
        Value::Object(map) => map,
        other => {
            let mut map = Map::new();
            map.insert("body".into(), other);
            map
        }
    };
    value.insert(
        "operator_identifier".into(),
        Value::String(operator_id.to_owned()),
    );
    Value::Object(value)
}

/// True when a mimetype denotes JSON: `application/json` or `*/*+json`, parameters ignored.
fn is_json_mimetype(mimetype: &str) -> bool {
    let essence = mimetype
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json" || (essence.contains('/') && essence.ends_with("+json"))
}

/// Parses the body of a callback `PUT`.
///
/// * A structured error (`error` object with `error_code`) -> `Failure`; transient when
///   `command_response.http_status` is >= 500 or 429.
/// * Else `command_response.body` (present, any JSON value including null) -> `Success`; a
///   string body whose `mimetype` is JSON is parsed, and stays a string when it fails to parse.
///   `command_response.http_status` is not consulted for a success (the spec defines only the
///   structured error as a callback failure).
/// * Else `Err` (malformed: not an object, or neither body nor structured error).
pub fn parse_callback(body: &Value) -> Result<CallbackOutcome, String> {
    if !body.is_object() {
        return Err("callback body must be a JSON object".into());
    }
    let logs = extract_logs(body);
    let command_response = body.get("command_response").filter(|v| v.is_object());
    if let Some((error_code, message)) = structured_error(body) {
        let transient = command_response
            .and_then(http_status_of)
            .is_some_and(is_transient_status);
        return Ok(CallbackOutcome::Failure {
            error_code,
            message,
            transient,
            logs,
        });
    }
    let Some(command_response) = command_response else {
        return Err("callback body needs command_response.body or an error with error_code".into());
    };
    let Some(result) = command_response.get("body") else {
        return Err("callback body needs command_response.body or an error with error_code".into());
    };
    let is_json = command_response
        .get("mimetype")
        .and_then(Value::as_str)
        .is_some_and(is_json_mimetype);
    let result = match result {
        Value::String(s) if is_json => {
            serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone()))
        }
        other => other.clone(),
    };
    Ok(CallbackOutcome::Success { result, logs })
}

/// The service-task catalog: embedded commands first, then the proxy's commands whose `id`
/// the embedded list lacks. Proxy entries without a string `id` are dropped, and a proxy id
/// repeated in the proxy list is kept once (first occurrence). This is the single home of
/// the "embedded wins" rule.
pub fn merge_commands(embedded: Vec<Value>, proxy: Vec<Value>) -> Vec<Value> {
    let mut seen: std::collections::HashSet<String> = embedded
        .iter()
        .filter_map(|c| c.get("id").and_then(Value::as_str).map(str::to_owned))
        .collect();
    let mut merged = embedded;
    for command in proxy {
        let Some(id) = command.get("id").and_then(Value::as_str) else {
            continue;
        };
        if seen.insert(id.to_owned()) {
            merged.push(command);
        }
    }
    merged
}

/// Longest retry delay [`retry_delay`] returns.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(3600);

/// Delay before retry number `attempt` (counted from 0): `backoff_base^(attempt+1)` seconds,
/// capped at [`MAX_RETRY_DELAY`]. A base that is NaN, zero or negative gives zero.
pub fn retry_delay(backoff_base: f64, attempt: u32) -> Duration {
    if backoff_base.is_nan() || backoff_base <= 0.0 {
        return Duration::ZERO;
    }
    let secs = backoff_base.powf(f64::from(attempt) + 1.0);
    if !secs.is_finite() || secs >= MAX_RETRY_DELAY.as_secs_f64() {
        return MAX_RETRY_DELAY;
    }
    Duration::from_secs_f64(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn success(cr: Value, logs: &[&str]) -> Outcome {
        Outcome::Success {
            command_response: cr,
            logs: logs.iter().map(|s| s.to_string()).collect(),
        }
    }
    fn cmd_fail(code: &str, http_status: Option<u16>, transient: bool) -> Outcome {
        Outcome::CommandFailure {
            error_code: code.into(),
            message: String::new(),
            http_status,
            transient,
            logs: vec![],
        }
    }
    fn proxy_fail(code: &str, status: u16, transient: bool) -> Outcome {
        Outcome::ProxyFailure {
            error_code: code.into(),
            message: String::new(),
            status: Some(status),
            transient,
            logs: vec![],
        }
    }
    /// Compares ignoring messages (checked separately where it matters).
    fn strip_message(o: Outcome) -> Outcome {
        match o {
            Outcome::CommandFailure {
                error_code,
                http_status,
                transient,
                logs,
                ..
            } => Outcome::CommandFailure {
                error_code,
                message: String::new(),
                http_status,
                transient,
                logs,
            },
            Outcome::ProxyFailure {
                error_code,
                status,
                transient,
                logs,
                ..
            } => Outcome::ProxyFailure {
                error_code,
                message: String::new(),
                status,
                transient,
                logs,
            },
            other => other,
        }
    }

    fn v2(cr: Value, error: Value) -> String {
        json!({
            "command_response": cr,
            "command_response_version": 2,
            "error": error,
            "wf__logs": [],
        })
        .to_string()
    }

    #[test]
    fn classify_table() {
        let ok_cr = json!({"body": {"a": 1}, "mimetype": "application/json", "http_status": 200});
        let cases: Vec<(&str, u16, String, Outcome)> = vec![
            // Errors table, rule 1.
            ("200 not json", 200, "<html>".into(), proxy_fail("invalid_proxy_response", 200, false)),
            ("500 not json is transient", 500, "oops".into(), proxy_fail("invalid_proxy_response", 500, true)),
            ("502 html", 502, "<h1>Bad gateway</h1>".into(), proxy_fail("invalid_proxy_response", 502, true)),
            ("429 not json", 429, "slow down".into(), proxy_fail("invalid_proxy_response", 429, true)),
            ("truncated json", 200, "{\"command_response\":".into(), proxy_fail("invalid_proxy_response", 200, false)),
            // Rule 2.
            ("200 + structured error", 200,
                v2(json!({"body": null, "mimetype": "application/json"}), json!({"error_code": "TIMEOUT_ERROR", "message": "m"})),
                cmd_fail("TIMEOUT_ERROR", None, false)),
            ("404 minimal envelope command_not_found is permanent", 404,
                json!({"command_response": {}, "error": {"error_code": "command_not_found", "message": "no"}}).to_string(),
                cmd_fail("command_not_found", None, false)),
            ("503 minimal envelope is transient", 503,
                json!({"command_response": {}, "error": {"error_code": "busy", "message": "no"}}).to_string(),
                cmd_fail("busy", None, true)),
            ("202 + error fails at once", 202,
                v2(json!({"body": {}, "mimetype": "application/json"}), json!({"error_code": "E", "message": "m"})),
                cmd_fail("E", None, false)),
            ("error with inner 500 is transient", 200,
                v2(json!({"body": {}, "mimetype": "application/json", "http_status": 500}), json!({"error_code": "E", "message": "m"})),
                cmd_fail("E", Some(500), true)),
            ("error with inner 429 is transient", 200,
                v2(json!({"body": {}, "mimetype": "application/json", "http_status": 429}), json!({"error_code": "E", "message": "m"})),
                cmd_fail("E", Some(429), true)),
            ("error with inner 400 under outer 500 is permanent", 500,
                v2(json!({"body": {}, "mimetype": "application/json", "http_status": 400}), json!({"error_code": "E", "message": "m"})),
                cmd_fail("E", Some(400), false)),
            ("numeric error_code", 200,
                json!({"command_response": {}, "error": {"error_code": 42}}).to_string(),
                cmd_fail("42", None, false)),
            // An error without error_code is ignored.
            ("error without error_code ignored", 200,
                v2(ok_cr.clone(), json!({"message": "ignored"})),
                success(ok_cr.clone(), &[])),
            ("error string ignored", 200,
                json!({"command_response": ok_cr, "error": "text"}).to_string(),
                success(ok_cr.clone(), &[])),
            ("null error_code ignored", 200,
                v2(ok_cr.clone(), json!({"error_code": null})),
                success(ok_cr.clone(), &[])),
            // Rule 3.
            ("200 + inner 500 -> command failure", 200,
                v2(json!({"body": "x", "mimetype": "text/plain", "http_status": 500}), Value::Null),
                cmd_fail("http_status_500", Some(500), true)),
            ("200 + inner 404 -> permanent", 200,
                v2(json!({"body": "x", "mimetype": "text/plain", "http_status": 404}), Value::Null),
                cmd_fail("http_status_404", Some(404), false)),
            ("200 + inner 300", 200,
                v2(json!({"body": "x", "mimetype": "text/plain", "http_status": 300}), Value::Null),
                cmd_fail("http_status_300", Some(300), false)),
            ("202 + inner 500 -> failure", 202,
                v2(json!({"body": "x", "mimetype": "text/plain", "http_status": 500}), Value::Null),
                cmd_fail("http_status_500", Some(500), true)),
            ("500 + inner 429 -> command failure wins over rule 4", 500,
                v2(json!({"body": "x", "mimetype": "text/plain", "http_status": 429}), Value::Null),
                cmd_fail("http_status_429", Some(429), true)),
            ("inner status as string", 200,
                v2(json!({"body": "x", "mimetype": "text/plain", "http_status": "503"}), Value::Null),
                cmd_fail("http_status_503", Some(503), true)),
            // Rule 4.
            ("500 json without error -> proxy failure", 500, "{}".into(), proxy_fail("proxy_http_status_500", 500, true)),
            ("500 empty body -> proxy failure", 500, "".into(), proxy_fail("proxy_http_status_500", 500, true)),
            ("401 -> permanent proxy failure", 401, "{\"detail\":\"no\"}".into(), proxy_fail("proxy_http_status_401", 401, false)),
            ("404 without structured error", 404, "{}".into(), proxy_fail("proxy_http_status_404", 404, false)),
            ("429 json", 429, "{}".into(), proxy_fail("proxy_http_status_429", 429, true)),
            ("301 not followed", 301, "".into(), proxy_fail("proxy_http_status_301", 301, false)),
            ("302 not followed", 302, "".into(), proxy_fail("proxy_http_status_302", 302, false)),
            ("303 not followed", 303, "".into(), proxy_fail("proxy_http_status_303", 303, false)),
            ("307 unfollowed (no Location)", 307, "".into(), proxy_fail("proxy_http_status_307", 307, false)),
            ("400 with envelope, inner 200, no error", 400,
                v2(ok_cr.clone(), Value::Null), proxy_fail("proxy_http_status_400", 400, false)),
            // States table.
            ("202 + envelope -> accepted", 202,
                v2(json!({"body": {"job": 1}, "mimetype": "application/json"}), Value::Null),
                Outcome::Accepted { logs: vec![] }),
            ("202 + inner 200 -> accepted", 202,
                v2(ok_cr.clone(), Value::Null), Outcome::Accepted { logs: vec![] }),
            ("202 + inner 202 -> accepted", 202,
                v2(json!({"body": {}, "mimetype": "application/json", "http_status": 202}), Value::Null),
                Outcome::Accepted { logs: vec![] }),
            ("200 + inner 202 -> success, not waiting", 200,
                v2(json!({"body": {}, "mimetype": "application/json", "http_status": 202}), Value::Null),
                success(json!({"body": {}, "mimetype": "application/json", "http_status": 202}), &[])),
            ("202 without envelope -> not waiting", 202, "{\"job\": 7}".into(), success(json!({"job": 7}), &[])),
            ("202 empty body -> not waiting", 202, "".into(), success(json!({}), &[])),
            ("202 command_response not an object -> not waiting", 202,
                json!({"command_response": "queued"}).to_string(), success(json!({"body": "queued"}), &[])),
            ("200 sync success", 200, v2(ok_cr.clone(), Value::Null), success(ok_cr.clone(), &[])),
            ("201 sync success", 201, v2(ok_cr.clone(), Value::Null), success(ok_cr.clone(), &[])),
            ("empty body 200 -> {}", 200, "".into(), success(json!({}), &[])),
            ("whitespace body 204 -> {}", 204, " \n".into(), success(json!({}), &[])),
            // Older unversioned responses.
            ("legacy api_response object", 200,
                json!({"api_response": {"body": "b", "mimetype": "text/plain"}}).to_string(),
                success(json!({"body": "b", "mimetype": "text/plain"}), &[])),
            ("legacy api_response scalar", 200,
                json!({"api_response": [1, 2]}).to_string(), success(json!({"body": [1, 2]}), &[])),
            ("legacy api_response inner 500", 200,
                json!({"api_response": {"body": "b", "http_status": 500}}).to_string(),
                cmd_fail("http_status_500", Some(500), true)),
            ("command_response wins over api_response", 200,
                json!({"command_response": {"body": 1}, "api_response": {"body": 2}}).to_string(),
                success(json!({"body": 1}), &[])),
            ("unversioned whole body", 200, "{\"x\": 1}".into(), success(json!({"x": 1}), &[])),
            ("unversioned array body", 200, "[1]".into(), success(json!({"body": [1]}), &[])),
            // wf__logs in every case.
            ("logs on success", 200,
                json!({"command_response": ok_cr, "error": null, "wf__logs": ["a", "b"]}).to_string(),
                success(ok_cr.clone(), &["a", "b"])),
            ("logs on accepted", 202,
                json!({"command_response": {}, "error": null, "wf__logs": ["queued"]}).to_string(),
                Outcome::Accepted { logs: vec!["queued".into()] }),
            ("logs on command failure, non-string item as json", 200,
                json!({"command_response": {}, "error": {"error_code": "E"}, "wf__logs": ["x", {"k": 1}]}).to_string(),
                Outcome::CommandFailure { error_code: "E".into(), message: String::new(), http_status: None, transient: false, logs: vec!["x".into(), "{\"k\":1}".into()] }),
            ("logs on proxy failure", 503,
                json!({"wf__logs": ["down"]}).to_string(),
                Outcome::ProxyFailure { error_code: "proxy_http_status_503".into(), message: String::new(), status: Some(503), transient: true, logs: vec!["down".into()] }),
            ("wf__logs not an array", 200, json!({"command_response": {}, "wf__logs": "x"}).to_string(), success(json!({}), &[])),
        ];
        for (name, status, body, expected) in cases {
            let got = strip_message(classify(status, body.as_bytes()));
            assert_eq!(got, expected, "case {name:?}");
        }
    }

    #[test]
    fn classify_messages() {
        let o = classify(200, br#"{"error": {"error_code": "E", "message": "boom"}}"#);
        assert!(matches!(o, Outcome::CommandFailure { ref message, .. } if message == "boom"));
        let o = classify(200, br#"{"error": {"error_code": "E"}}"#);
        assert!(matches!(o, Outcome::CommandFailure { ref message, .. } if message.contains('E')));
        let o = classify(302, b"");
        assert!(
            matches!(o, Outcome::ProxyFailure { ref message, .. } if message.contains("not followed"))
        );
        // A non-JSON body never reaches the message (it may hold sensitive data).
        let o = classify(500, b"secret-stack-trace");
        assert!(
            matches!(o, Outcome::ProxyFailure { ref message, .. } if !message.contains("secret"))
        );
    }

    #[test]
    fn outcome_helpers() {
        assert!(classify(503, b"x").is_transient());
        assert!(classify(503, b"x").is_failure());
        assert!(!classify(200, b"").is_failure());
        assert_eq!(classify(200, br#"{"wf__logs": ["l"]}"#).logs(), ["l"]);
    }

    #[test]
    fn result_with_operator_table() {
        let cases = vec![
            (
                json!({"body": 1, "mimetype": "application/json"}),
                json!({"body": 1, "mimetype": "application/json", "operator_identifier": "http/GetRequest"}),
            ),
            (json!({}), json!({"operator_identifier": "http/GetRequest"})),
            (
                json!("text"),
                json!({"body": "text", "operator_identifier": "http/GetRequest"}),
            ),
            (
                json!({"operator_identifier": "old"}),
                json!({"operator_identifier": "http/GetRequest"}),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(result_with_operator(input, "http/GetRequest"), expected);
        }
    }

    #[test]
    fn split_operator_id_table() {
        let cases = [
            ("http/GetRequest", Some(("http", "GetRequest"))),
            ("a/b", Some(("a", "b"))),
            ("nocommand", None),
            ("/cmd", None),
            ("conn/", None),
            ("a/b/c", None),
            ("", None),
            ("../x", None),
            ("x/.", None),
        ];
        for (id, expected) in cases {
            assert_eq!(split_operator_id(id), expected, "{id:?}");
        }
    }

    #[test]
    fn parse_callback_table() {
        let ok = |result: Value, logs: &[&str]| {
            Ok(CallbackOutcome::Success {
                result,
                logs: logs.iter().map(|s| s.to_string()).collect(),
            })
        };
        let fail = |code: &str, message: &str, transient: bool| {
            Ok(CallbackOutcome::Failure {
                error_code: code.into(),
                message: message.into(),
                transient,
                logs: vec![],
            })
        };
        let cases: Vec<(&str, Value, Result<CallbackOutcome, String>)> = vec![
            (
                "object body",
                json!({"command_response": {"body": {"a": 1}, "mimetype": "application/json"}, "command_response_version": 2, "error": null, "wf__logs": ["done"]}),
                ok(json!({"a": 1}), &["done"]),
            ),
            (
                "json string body parsed",
                json!({"command_response": {"body": "{\"a\": [1, 2]}", "mimetype": "application/json"}}),
                ok(json!({"a": [1, 2]}), &[]),
            ),
            (
                "json string body with charset",
                json!({"command_response": {"body": "[1]", "mimetype": "application/json; charset=utf-8"}}),
                ok(json!([1]), &[]),
            ),
            (
                "+json mimetype",
                json!({"command_response": {"body": "{}", "mimetype": "application/problem+json"}}),
                ok(json!({}), &[]),
            ),
            (
                "bad json string stays a string",
                json!({"command_response": {"body": "{not json", "mimetype": "application/json"}}),
                ok(json!("{not json"), &[]),
            ),
            (
                "text body not parsed",
                json!({"command_response": {"body": "{\"a\":1}", "mimetype": "text/plain"}}),
                ok(json!("{\"a\":1}"), &[]),
            ),
            (
                "no mimetype: not parsed",
                json!({"command_response": {"body": "1"}}),
                ok(json!("1"), &[]),
            ),
            (
                "null body is a result",
                json!({"command_response": {"body": null, "mimetype": "application/json"}}),
                ok(Value::Null, &[]),
            ),
            (
                "error",
                json!({"command_response": {}, "error": {"error_code": "TIMEOUT_ERROR", "message": "late"}}),
                fail("TIMEOUT_ERROR", "late", false),
            ),
            (
                "error wins over body",
                json!({"command_response": {"body": 1}, "error": {"error_code": "E", "message": "m"}}),
                fail("E", "m", false),
            ),
            (
                "error with inner 502 is transient",
                json!({"command_response": {"body": null, "http_status": 502}, "error": {"error_code": "E", "message": "m"}}),
                fail("E", "m", true),
            ),
            (
                "error without command_response",
                json!({"error": {"error_code": "E", "message": "m"}}),
                fail("E", "m", false),
            ),
            (
                "error without code and body -> body wins",
                json!({"command_response": {"body": 2}, "error": {"message": "x"}}),
                ok(json!(2), &[]),
            ),
            ("not an object", json!([1]), Err(String::new())),
            ("string", json!("x"), Err(String::new())),
            ("empty object", json!({}), Err(String::new())),
            (
                "no body",
                json!({"command_response": {"mimetype": "application/json"}}),
                Err(String::new()),
            ),
            (
                "command_response not object",
                json!({"command_response": "x"}),
                Err(String::new()),
            ),
            (
                "error without code, no body",
                json!({"error": {"message": "x"}}),
                Err(String::new()),
            ),
        ];
        for (name, body, expected) in cases {
            let got = parse_callback(&body);
            match (&got, &expected) {
                (Err(_), Err(_)) => {}
                _ => assert_eq!(got, expected, "case {name:?}"),
            }
        }
    }

    #[test]
    fn retry_delay_table() {
        let cases = [
            (2.0, 0, Duration::from_secs(2)),
            (2.0, 1, Duration::from_secs(4)),
            (2.0, 2, Duration::from_secs(8)),
            (3.0, 0, Duration::from_secs(3)),
            (1.0, 10, Duration::from_secs(1)),
            (0.1, 0, Duration::from_millis(100)),
            (2.0, 11, Duration::from_secs(3600)), // 4096 s capped
            (2.0, u32::MAX, MAX_RETRY_DELAY),
            (f64::INFINITY, 0, MAX_RETRY_DELAY),
            (0.0, 3, Duration::ZERO),
            (-2.0, 1, Duration::ZERO),
            (f64::NAN, 1, Duration::ZERO),
        ];
        for (base, attempt, expected) in cases {
            let got = retry_delay(base, attempt);
            let diff = got.abs_diff(expected);
            assert!(
                diff < Duration::from_micros(1),
                "base {base} attempt {attempt}: {got:?} != {expected:?}"
            );
        }
    }

    #[test]
    fn merge_commands_table() {
        let c = |id: &str, src: &str| json!({"id": id, "src": src});
        let cases: Vec<(Vec<Value>, Vec<Value>, Vec<Value>)> = vec![
            (vec![], vec![], vec![]),
            (vec![], vec![c("p/a", "proxy")], vec![c("p/a", "proxy")]),
            (vec![c("e/a", "emb")], vec![], vec![c("e/a", "emb")]),
            (
                vec![c("x/a", "emb"), c("e/b", "emb")],
                vec![c("p/z", "proxy"), c("x/a", "proxy"), c("p/y", "proxy")],
                vec![
                    c("x/a", "emb"),
                    c("e/b", "emb"),
                    c("p/z", "proxy"),
                    c("p/y", "proxy"),
                ],
            ),
            (
                vec![],
                vec![
                    c("p/a", "first"),
                    c("p/a", "second"),
                    json!({"no": "id"}),
                    json!(3),
                ],
                vec![c("p/a", "first")],
            ),
        ];
        for (embedded, proxy, expected) in cases {
            assert_eq!(merge_commands(embedded, proxy), expected);
        }
    }
}
