//! HTTP side of the connector-proxy protocol: execution (with 307/308 following) and
//! discovery. Classification of what comes back is pure and lives in `envelope`.
//!
//! Neither the API key nor request/response bodies are ever logged; reqwest errors are
//! stripped of their URL before they are turned into messages (a base URL may carry
//! credentials in its user-info part).

use std::fmt;
use std::time::Duration;

use reqwest::header::{HeaderMap, HeaderValue, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;

use super::envelope::{classify, split_operator_id, Outcome};

/// Header that carries the proxy API key.
pub const API_KEY_HEADER: &str = "Wf-Connector-Proxy-Api-Key";
/// `User-Agent` of every request to the proxy.
pub const USER_AGENT: &str = "workflow-backend";

/// Where and how to reach the connector proxy.
#[derive(Clone)]
pub struct ProxyConfig {
    /// `WORKFLOW_BACKEND_CONNECTOR_PROXY_URL`; `/v1/...` is appended (a trailing `/` is ignored).
    pub base_url: String,
    /// `WORKFLOW_BACKEND_CONNECTOR_PROXY_API_KEY`; sent as `Wf-Connector-Proxy-Api-Key`.
    pub api_key: Option<String>,
    /// Bound on establishing a connection.
    pub connect_timeout: Duration,
    /// Bound on one request/response exchange (per redirect hop), body included.
    pub timeout: Duration,
    /// Number of 307/308 hops followed before giving up (5 by default).
    pub max_redirects: usize,
}

impl ProxyConfig {
    /// Defaults: connect timeout 10 s, response timeout 45 s (as the reference), 5 redirects.
    pub fn new(base_url: impl Into<String>) -> Self {
        ProxyConfig {
            base_url: base_url.into(),
            api_key: None,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(45),
            max_redirects: 5,
        }
    }
}

/// Redacts the API key.
impl fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .field("max_redirects", &self.max_redirects)
            .finish()
    }
}

/// A response as received (after following 307/308).
#[derive(Debug, Clone, PartialEq)]
pub struct RawResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

impl RawResponse {
    /// Applies the protocol's classification ([`classify`]).
    pub fn classify(&self) -> Outcome {
        classify(self.status, &self.body)
    }
}

/// Why no HTTP response could be obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportErrorKind {
    /// Operator id is not `connector/command` (permanent).
    InvalidOperatorId,
    /// Base URL or API key unusable (permanent).
    InvalidConfig,
    /// Connection refused, DNS failure, TLS failure... (transient).
    Connect,
    /// Connect or response timeout (transient).
    Timeout,
    /// More than `max_redirects` 307/308 hops (transient, as every transport error).
    TooManyRedirects,
    /// A 307/308 whose `Location` cannot be used: unparsable, not http(s), or an https -> http
    /// downgrade that would expose the API key (permanent).
    InvalidRedirect,
    /// Anything else while sending or reading the body (transient).
    Other,
}

impl TransportErrorKind {
    /// The error code used when this error becomes an [`Outcome::ProxyFailure`].
    pub fn error_code(self) -> &'static str {
        match self {
            TransportErrorKind::InvalidOperatorId => "invalid_operator_id",
            TransportErrorKind::InvalidConfig => "connector_proxy_misconfigured",
            TransportErrorKind::Connect => "connector_proxy_unreachable",
            TransportErrorKind::Timeout => "connector_proxy_timeout",
            TransportErrorKind::TooManyRedirects => "connector_proxy_too_many_redirects",
            TransportErrorKind::InvalidRedirect => "connector_proxy_invalid_redirect",
            TransportErrorKind::Other => "connector_proxy_transport_error",
        }
    }
}

/// No usable HTTP response. The message holds no secret and no body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TransportError {
    pub kind: TransportErrorKind,
    pub message: String,
}

impl TransportError {
    fn new(kind: TransportErrorKind, message: impl Into<String>) -> Self {
        TransportError {
            kind,
            message: message.into(),
        }
    }

    fn from_reqwest(err: reqwest::Error) -> Self {
        let kind = if err.is_timeout() {
            TransportErrorKind::Timeout
        } else if err.is_connect() {
            TransportErrorKind::Connect
        } else {
            TransportErrorKind::Other
        };
        let err = err.without_url();
        let mut message = match kind {
            TransportErrorKind::Timeout => "connector proxy timed out".to_owned(),
            TransportErrorKind::Connect => "cannot connect to connector proxy".to_owned(),
            _ => "connector proxy request failed".to_owned(),
        };
        message.push_str(&format!(": {err}"));
        let mut source = std::error::Error::source(&err);
        while let Some(s) = source {
            message.push_str(&format!(": {s}"));
            source = s.source();
        }
        TransportError { kind, message }
    }

    /// Transient: connect errors, timeouts, too many redirects and other I/O errors.
    /// Permanent: invalid operator id, invalid configuration, unusable redirect target.
    pub fn is_transient(&self) -> bool {
        !matches!(
            self.kind,
            TransportErrorKind::InvalidOperatorId
                | TransportErrorKind::InvalidConfig
                | TransportErrorKind::InvalidRedirect
        )
    }
}

impl From<TransportError> for Outcome {
    fn from(err: TransportError) -> Self {
        Outcome::ProxyFailure {
            error_code: err.kind.error_code().to_owned(),
            transient: err.is_transient(),
            message: err.message,
            status: None,
            logs: Vec::new(),
        }
    }
}

/// Client of one connector proxy. Cheap to clone (reqwest's client is shared).
#[derive(Clone)]
pub struct ConnectorClient {
    http: reqwest::Client,
    config: ProxyConfig,
}

impl fmt::Debug for ConnectorClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectorClient")
            .field("config", &self.config)
            .finish()
    }
}

impl ConnectorClient {
    /// Builds the client. Panics only if the TLS backend cannot be initialised (see
    /// [`ConnectorClient::try_new`]).
    pub fn new(config: ProxyConfig) -> ConnectorClient {
        Self::try_new(config).expect("cannot build the connector-proxy HTTP client")
    }

    /// Builds the client: no automatic redirects, bounded connect/response timeouts,
    /// `User-Agent: workflow-backend`.
    pub fn try_new(config: ProxyConfig) -> Result<ConnectorClient, TransportError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(config.connect_timeout)
            .timeout(config.timeout)
            .user_agent(USER_AGENT)
            .build()
            .map_err(|e| {
                TransportError::new(
                    TransportErrorKind::InvalidConfig,
                    format!("cannot build HTTP client: {}", e.without_url()),
                )
            })?;
        Ok(ConnectorClient { http, config })
    }

    pub fn config(&self) -> &ProxyConfig {
        &self.config
    }

    /// `{base_url}/{segments...}`, each segment percent-encoded.
    fn url(&self, segments: &[&str]) -> Result<Url, TransportError> {
        let mut url = Url::parse(&self.config.base_url).map_err(|e| {
            TransportError::new(
                TransportErrorKind::InvalidConfig,
                format!("invalid connector proxy URL: {e}"),
            )
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(TransportError::new(
                TransportErrorKind::InvalidConfig,
                "connector proxy URL must be http or https",
            ));
        }
        url.path_segments_mut()
            .map_err(|_| {
                TransportError::new(
                    TransportErrorKind::InvalidConfig,
                    "connector proxy URL cannot take a path",
                )
            })?
            .pop_if_empty()
            .extend(segments);
        Ok(url)
    }

    fn api_key_headers(&self) -> Result<HeaderMap, TransportError> {
        let mut headers = HeaderMap::new();
        if let Some(key) = &self.config.api_key {
            let mut value = HeaderValue::from_str(key).map_err(|_| {
                TransportError::new(
                    TransportErrorKind::InvalidConfig,
                    "connector proxy API key is not a valid header value",
                )
            })?;
            value.set_sensitive(true);
            headers.insert(API_KEY_HEADER, value);
        }
        Ok(headers)
    }

    /// `POST {base_url}/v1/do/{connector}/{command}` with `body`; follows 307/308 up to
    /// `max_redirects` hops keeping method, body and API key (a relative `Location` is
    /// resolved against the current URL). Any other status, 301/302/303 included, is returned
    /// as is; [`classify`] turns it into an [`Outcome`].
    pub async fn execute(
        &self,
        operator_id: &str,
        body: &Value,
    ) -> Result<RawResponse, TransportError> {
        let (connector, command) = split_operator_id(operator_id).ok_or_else(|| {
            TransportError::new(
                TransportErrorKind::InvalidOperatorId,
                format!("operator id {operator_id:?} is not of the form connector/command"),
            )
        })?;
        let mut url = self.url(&["v1", "do", connector, command])?;
        let mut headers = self.api_key_headers()?;
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // the current span's `traceparent`, when traced: the proxy's spans join the trace
        for (name, value) in crate::telemetry::traces::outgoing_headers() {
            if let (Ok(name), Ok(value)) = (
                reqwest::header::HeaderName::try_from(name),
                HeaderValue::try_from(value),
            ) {
                headers.insert(name, value);
            }
        }
        let payload = serde_json::to_vec(body).map_err(|e| {
            TransportError::new(
                TransportErrorKind::Other,
                format!("cannot serialise request: {e}"),
            )
        })?;

        let mut hops = 0usize;
        loop {
            let response = self
                .http
                .request(Method::POST, url.clone())
                .headers(headers.clone())
                .body(payload.clone())
                .send()
                .await
                .map_err(TransportError::from_reqwest)?;
            let status = response.status();
            if matches!(
                status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            ) {
                if let Some(location) = response.headers().get(LOCATION) {
                    hops += 1;
                    if hops > self.config.max_redirects {
                        tracing::warn!(
                            operator_id,
                            max_redirects = self.config.max_redirects,
                            "connector proxy: too many redirects"
                        );
                        return Err(TransportError::new(
                            TransportErrorKind::TooManyRedirects,
                            format!(
                                "connector proxy redirected more than {} times",
                                self.config.max_redirects
                            ),
                        ));
                    }
                    url = redirect_target(&url, location)?;
                    tracing::debug!(
                        operator_id,
                        status = status.as_u16(),
                        hops,
                        "connector proxy: following redirect"
                    );
                    continue;
                }
            }
            let body = response
                .bytes()
                .await
                .map_err(TransportError::from_reqwest)?
                .to_vec();
            tracing::debug!(
                operator_id,
                status = status.as_u16(),
                "connector proxy: command answered"
            );
            return Ok(RawResponse {
                status: status.as_u16(),
                body,
            });
        }
    }

    /// [`ConnectorClient::execute`] then [`classify`]; a transport error becomes a
    /// `ProxyFailure` with `status: None`.
    pub async fn call(&self, operator_id: &str, body: &Value) -> Outcome {
        match self.execute(operator_id, body).await {
            Ok(raw) => raw.classify(),
            Err(err) => err.into(),
        }
    }

    /// `GET {base_url}/v1/{what}`: `Ok(array)` on 200 with a JSON array.
    async fn discover(&self, what: &str) -> Result<Vec<Value>, String> {
        let url = self.url(&["v1", what]).map_err(|e| e.message)?;
        let headers = self.api_key_headers().map_err(|e| e.message)?;
        let response = self
            .http
            .get(url)
            .headers(headers)
            .send()
            .await
            .map_err(|e| TransportError::from_reqwest(e).message)?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(format!("HTTP {}", status.as_u16()));
        }
        let bytes = response
            .bytes()
            .await
            .map_err(|e| TransportError::from_reqwest(e).message)?;
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Array(items)) => Ok(items),
            Ok(_) => Err("body is not a JSON array".into()),
            Err(_) => Err("body is not JSON".into()),
        }
    }

    /// `GET /v1/commands`. Any failure (transport, non-200, not a JSON array) gives an empty
    /// list and a warning.
    pub async fn commands(&self) -> Vec<Value> {
        self.discover("commands").await.unwrap_or_else(|reason| {
            tracing::warn!(%reason, "connector proxy: command discovery failed, no proxy commands");
            Vec::new()
        })
    }

    /// `GET /v1/auths` (optional endpoint). Any failure gives an empty list (a warning
    /// except for a plain non-200 status, which is logged at debug level).
    pub async fn auths(&self) -> Vec<Value> {
        self.discover("auths").await.unwrap_or_else(|reason| {
            if reason.starts_with("HTTP ") {
                tracing::debug!(%reason, "connector proxy: no authentication handlers");
            } else {
                tracing::warn!(%reason, "connector proxy: auth discovery failed");
            }
            Vec::new()
        })
    }
}

/// Resolves a 307/308 `Location` against the current URL.
fn redirect_target(current: &Url, location: &HeaderValue) -> Result<Url, TransportError> {
    let invalid = |why: &str| {
        TransportError::new(
            TransportErrorKind::InvalidRedirect,
            format!("connector proxy redirect not followed: {why}"),
        )
    };
    let location = location
        .to_str()
        .map_err(|_| invalid("Location is not text"))?;
    let target = current
        .join(location)
        .map_err(|_| invalid("Location is not a URL"))?;
    if !matches!(target.scheme(), "http" | "https") {
        return Err(invalid("Location is not http(s)"));
    }
    if current.scheme() == "https" && target.scheme() == "http" {
        return Err(invalid("https to http downgrade"));
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::connector::fake_proxy::{FakeProxy, Scripted};
    use serde_json::json;

    fn client(base_url: &str, api_key: Option<&str>) -> ConnectorClient {
        let mut config = ProxyConfig::new(base_url);
        config.api_key = api_key.map(str::to_owned);
        config.connect_timeout = Duration::from_secs(2);
        config.timeout = Duration::from_secs(5);
        ConnectorClient::new(config)
    }

    fn envelope(body: Value) -> String {
        json!({
            "command_response": {"body": body, "mimetype": "application/json", "http_status": 200},
            "command_response_version": 2,
            "error": null,
            "wf__logs": ["ran"],
        })
        .to_string()
    }

    #[test]
    fn redirect_target_table() {
        let base = Url::parse("http://proxy:1/v1/do/a/b").unwrap();
        let https = Url::parse("https://proxy/v1/do/a/b").unwrap();
        let cases: Vec<(&Url, &str, Option<&str>)> = vec![
            (&base, "/other/x", Some("http://proxy:1/other/x")),
            (&base, "c", Some("http://proxy:1/v1/do/a/c")),
            (
                &base,
                "http://elsewhere/v1/do/a/b",
                Some("http://elsewhere/v1/do/a/b"),
            ),
            (&base, "https://secure/x", Some("https://secure/x")),
            (&base, "ftp://x/y", None),
            (&https, "http://plain/x", None),
            (&https, "/ok", Some("https://proxy/ok")),
        ];
        for (current, location, expected) in cases {
            let got = redirect_target(current, &HeaderValue::from_str(location).unwrap());
            assert_eq!(
                got.ok().map(|u| u.to_string()),
                expected.map(str::to_owned),
                "{location}"
            );
        }
    }

    #[test]
    fn url_building() {
        for base in [
            "http://h:9",
            "http://h:9/",
            "http://h:9/prefix",
            "http://h:9/prefix/",
        ] {
            let url = client(base, None).url(&["v1", "do", "c", "d e"]).unwrap();
            let prefix = if base.contains("prefix") {
                "/prefix"
            } else {
                ""
            };
            assert_eq!(url.as_str(), format!("http://h:9{prefix}/v1/do/c/d%20e"));
        }
        assert_eq!(
            client("not a url", None).url(&["v1"]).unwrap_err().kind,
            TransportErrorKind::InvalidConfig
        );
    }

    #[test]
    fn debug_redacts_api_key() {
        let c = client("http://h", Some("s3cret"));
        assert!(!format!("{c:?}").contains("s3cret"));
    }

    #[tokio::test]
    async fn execute_sends_headers_and_body_with_api_key() {
        let proxy = FakeProxy::start().await;
        proxy.push(Scripted::json(200, envelope(json!({"x": 1}))));
        let body = json!({"url": "https://x", "wf__task_id": "t"});
        let raw = client(&proxy.base_url, Some("k3y"))
            .execute("http/GetRequest", &body)
            .await
            .unwrap();
        assert_eq!(raw.status, 200);
        assert_eq!(
            raw.classify(),
            Outcome::Success {
                command_response: json!({"body": {"x": 1}, "mimetype": "application/json", "http_status": 200}),
                logs: vec!["ran".into()],
            }
        );
        let reqs = proxy.requests();
        assert_eq!(reqs.len(), 1);
        let r = &reqs[0];
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/v1/do/http/GetRequest");
        assert_eq!(r.header("user-agent"), Some("workflow-backend"));
        assert_eq!(r.header("content-type"), Some("application/json"));
        assert_eq!(r.header("wf-connector-proxy-api-key"), Some("k3y"));
        assert_eq!(serde_json::from_slice::<Value>(&r.body).unwrap(), body);
    }

    #[tokio::test]
    async fn execute_without_api_key_sends_no_key_header() {
        let proxy = FakeProxy::start().await;
        proxy.push(Scripted::json(202, envelope(json!({"job": 1}))));
        let outcome = client(&format!("{}/", proxy.base_url), None)
            .call("c/d", &json!({}))
            .await;
        assert_eq!(
            outcome,
            Outcome::Accepted {
                logs: vec!["ran".into()]
            }
        );
        let reqs = proxy.requests();
        assert_eq!(reqs[0].path, "/v1/do/c/d");
        assert_eq!(reqs[0].header("wf-connector-proxy-api-key"), None);
        assert_eq!(reqs[0].header("user-agent"), Some("workflow-backend"));
    }

    #[tokio::test]
    async fn execute_follows_307_and_308_keeping_method_body_and_key() {
        for status in [307u16, 308] {
            let proxy = FakeProxy::start().await;
            proxy.push(Scripted::redirect(status, "/elsewhere/v1/do/c/d"));
            proxy.push(Scripted::redirect(
                status,
                &format!("{}/third", proxy.base_url),
            ));
            proxy.push(Scripted::json(200, envelope(json!("ok"))));
            let body = json!({"p": [1, 2], "wf__task_data": {"a": "b"}});
            let raw = client(&proxy.base_url, Some("k"))
                .execute("c/d", &body)
                .await
                .unwrap();
            assert_eq!(raw.status, 200, "{status}");
            let reqs = proxy.requests();
            let paths: Vec<&str> = reqs.iter().map(|r| r.path.as_str()).collect();
            assert_eq!(paths, ["/v1/do/c/d", "/elsewhere/v1/do/c/d", "/third"]);
            for r in &reqs {
                assert_eq!(r.method, "POST", "{status}");
                assert_eq!(r.header("wf-connector-proxy-api-key"), Some("k"));
                assert_eq!(r.header("content-type"), Some("application/json"));
                assert_eq!(r.header("user-agent"), Some("workflow-backend"));
                assert_eq!(serde_json::from_slice::<Value>(&r.body).unwrap(), body);
            }
        }
    }

    #[tokio::test]
    async fn execute_does_not_follow_301_302_303() {
        for status in [301u16, 302, 303] {
            let proxy = FakeProxy::start().await;
            proxy.push(Scripted::redirect(status, "/elsewhere"));
            proxy.push(Scripted::json(200, envelope(json!("never"))));
            let raw = client(&proxy.base_url, None)
                .execute("c/d", &json!({}))
                .await
                .unwrap();
            assert_eq!(raw.status, status);
            assert_eq!(proxy.requests().len(), 1);
            assert!(matches!(
                raw.classify(),
                Outcome::ProxyFailure { status: Some(s), transient: false, .. } if s == status
            ));
        }
    }

    #[tokio::test]
    async fn execute_too_many_redirects() {
        let proxy = FakeProxy::start().await;
        for _ in 0..10 {
            proxy.push(Scripted::redirect(307, "/loop"));
        }
        let mut config = ProxyConfig::new(proxy.base_url.clone());
        config.max_redirects = 3;
        let err = ConnectorClient::new(config)
            .execute("c/d", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, TransportErrorKind::TooManyRedirects);
        assert!(err.is_transient());
        assert_eq!(proxy.requests().len(), 4); // the first request + 3 hops
        let outcome: Outcome = err.into();
        assert!(
            matches!(outcome, Outcome::ProxyFailure { status: None, transient: true, ref error_code, .. } if error_code == "connector_proxy_too_many_redirects")
        );
    }

    #[tokio::test]
    async fn execute_response_timeout() {
        let proxy = FakeProxy::start().await;
        proxy.push(Scripted::json(200, envelope(json!(1))).delayed(Duration::from_secs(3)));
        let mut config = ProxyConfig::new(proxy.base_url.clone());
        config.timeout = Duration::from_millis(300);
        let started = std::time::Instant::now();
        let err = ConnectorClient::new(config)
            .execute("c/d", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, TransportErrorKind::Timeout, "{err}");
        assert!(err.is_transient());
        assert!(started.elapsed() < Duration::from_secs(2));
    }

    #[tokio::test]
    async fn execute_connection_refused() {
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let err = client(&format!("http://127.0.0.1:{port}"), Some("k"))
            .execute("c/d", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, TransportErrorKind::Connect, "{err}");
        assert!(err.is_transient());
        assert!(!err.message.contains("127.0.0.1"), "{}", err.message);
    }

    #[tokio::test]
    async fn execute_invalid_operator_id() {
        let err = client("http://127.0.0.1:9", None)
            .execute("no-slash", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(err.kind, TransportErrorKind::InvalidOperatorId);
        assert!(!err.is_transient());
    }

    #[tokio::test]
    async fn execute_returns_error_statuses_for_classification() {
        let proxy = FakeProxy::start().await;
        proxy.push(Scripted::json(
            404,
            json!({"command_response": {}, "error": {"error_code": "command_not_found", "message": "no"}}).to_string(),
        ));
        proxy.push(Scripted::text(500, "Internal Server Error"));
        let c = client(&proxy.base_url, None);
        assert!(matches!(
            c.call("c/d", &json!({})).await,
            Outcome::CommandFailure { ref error_code, transient: false, .. } if error_code == "command_not_found"
        ));
        assert!(matches!(
            c.call("c/d", &json!({})).await,
            Outcome::ProxyFailure { ref error_code, transient: true, status: Some(500), .. } if error_code == "invalid_proxy_response"
        ));
    }

    #[tokio::test]
    async fn discovery_commands_and_auths() {
        let proxy = FakeProxy::start().await;
        let commands = json!([{"id": "http/GetRequest", "parameters": [{"id": "url", "type": "str", "required": true}]}]);
        proxy.push(Scripted::json(200, commands.to_string()));
        proxy.push(Scripted::json(500, "[]".into()));
        proxy.push(Scripted::json(200, "{\"not\": \"array\"}".into()));
        proxy.push(Scripted::text(200, "garbage"));
        proxy.push(Scripted::json(200, "[{\"id\": \"oauth/google\"}]".into()));
        proxy.push(Scripted::json(404, "{}".into()));
        proxy.push(Scripted::text(200, "nope"));
        let c = client(&proxy.base_url, Some("key"));
        assert_eq!(Value::Array(c.commands().await), commands);
        assert_eq!(c.commands().await, Vec::<Value>::new());
        assert_eq!(c.commands().await, Vec::<Value>::new());
        assert_eq!(c.commands().await, Vec::<Value>::new());
        assert_eq!(c.auths().await, vec![json!({"id": "oauth/google"})]);
        assert_eq!(c.auths().await, Vec::<Value>::new());
        assert_eq!(c.auths().await, Vec::<Value>::new());
        let reqs = proxy.requests();
        let seen: Vec<(&str, &str)> = reqs
            .iter()
            .map(|r| (r.method.as_str(), r.path.as_str()))
            .collect();
        assert_eq!(
            seen,
            [
                ("GET", "/v1/commands"),
                ("GET", "/v1/commands"),
                ("GET", "/v1/commands"),
                ("GET", "/v1/commands"),
                ("GET", "/v1/auths"),
                ("GET", "/v1/auths"),
                ("GET", "/v1/auths"),
            ]
        );
        for r in &reqs {
            assert_eq!(r.header("wf-connector-proxy-api-key"), Some("key"));
            assert_eq!(r.header("user-agent"), Some("workflow-backend"));
        }
    }

    #[tokio::test]
    async fn discovery_without_key_and_unreachable() {
        let proxy = FakeProxy::start().await;
        proxy.push(Scripted::json(200, "[]".into()));
        let c = client(&proxy.base_url, None);
        assert!(c.commands().await.is_empty());
        assert_eq!(
            proxy.requests()[0].header("wf-connector-proxy-api-key"),
            None
        );
        let port = {
            let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            listener.local_addr().unwrap().port()
        };
        let dead = client(&format!("http://127.0.0.1:{port}"), None);
        assert!(dead.commands().await.is_empty());
        assert!(dead.auths().await.is_empty());
    }
}
