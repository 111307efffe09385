//! Authentication (bearer JWTs and API keys) and scope checks: the single home for both in the
//! HTTP layer (the keys, verification and minting live in [`crate::tokens`], API keys in
//! [`crate::services::api_keys`]).
//!
//! A handler takes a [`Principal`] argument (the credential is verified by the extractor, with
//! the [`JwtKeys`] and the [`App`] registered as app data) and states what it needs in one
//! line: `principal.require("instances:create:group/model")?;`.
//!
//! Credentials: `Authorization: Bearer <JWT>`, `Authorization: Bearer wbk_...` (an API key), or
//! `SpiffWorkflow-Api-Key: wbk_...` (SpiffArena's header, so its clients work unchanged).
//!
//! Scope grammar (space-separated `scope` claim):
//! - `admin` grants everything;
//! - a granted scope containing `*` is a glob: `*` matches any run of characters, `/` and `:`
//!   included (`instances:create:*`, `instances:create:finance/*`, `messages:send:order_*`);
//! - a granted scope of two parts (`messages:send`) grants every third part
//!   (`messages:send:<anything>`);
//! - otherwise the granted scope must equal the needed one.
//!
//! A name inside a scope (`messages:send:<message name>`, `signals:send:<signal name>`) is
//! written with `%` and whitespace percent-encoded ([`scope_part`]), since the claim separates
//! scopes by spaces: the message `order paid` needs `messages:send:order%20paid`.

use crate::services::{api_keys, ErrorCode};
use crate::App;
use futures_util::future::LocalBoxFuture;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};

use crate::api::error::ApiError;
use crate::tokens::{JwtKeys, TokenError, VerifiedToken};

/// The verified caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub subject: String,
    pub scopes: Vec<String>,
}

impl Principal {
    /// Whether any granted scope covers `needed`.
    pub fn allows(&self, needed: &str) -> bool {
        self.scopes
            .iter()
            .any(|granted| scope_grants(granted, needed))
    }

    /// Whether the grants cover every scope `pattern` matches (`instances:update:*`: the
    /// instances of every model), by [`scope_contains`].
    pub fn allows_every(&self, pattern: &str) -> bool {
        self.scopes
            .iter()
            .any(|granted| scope_contains(granted, pattern))
    }

    /// Whether some grant could cover reading a model's instances (`admin`, an `instances...`
    /// scope, or a glob): a cheap test before work whose answer is filtered model by model,
    /// never refusing a caller [`Principal::allows`] would let read something.
    pub fn may_read_some_instances(&self) -> bool {
        self.scopes
            .iter()
            .any(|g| g == "admin" || g.starts_with("instances") || g.contains('*'))
    }

    /// 403 `not_authorized` naming the scope when it is not granted.
    pub fn require(&self, needed: &str) -> Result<(), ApiError> {
        if self.allows(needed) {
            return Ok(());
        }
        Err(ApiError::forbidden(format!(
            "This action needs the scope `{needed}`, which the token does not grant."
        ))
        .with_extra("required_scope", needed))
    }

    /// 403 `not_authorized` unless one of `needed` is granted.
    pub fn require_any(&self, needed: &[&str]) -> Result<(), ApiError> {
        if needed.iter().any(|n| self.allows(n)) {
            return Ok(());
        }
        let list = needed
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ");
        Err(ApiError::forbidden(format!(
            "This action needs one of the scopes {list}, which the token does not grant."
        ))
        .with_extra("required_scopes", needed.to_vec()))
    }
}

/// A name as a scope writes it: `%` and whitespace percent-encoded (UTF-8 bytes), everything
/// else as it is (`order paid` -> `order%20paid`, `50%` -> `50%25`).
pub fn scope_part(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.chars().any(|c| c == '%' || c.is_whitespace()) {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut encoded = String::with_capacity(name.len() + 8);
    for c in name.chars() {
        if c == '%' || c.is_whitespace() {
            let mut bytes = [0; 4];
            for byte in c.encode_utf8(&mut bytes).bytes() {
                encoded.push_str(&format!("%{byte:02X}"));
            }
        } else {
            encoded.push(c);
        }
    }
    std::borrow::Cow::Owned(encoded)
}

/// Whether the granted scope covers the needed one (see the module docs).
pub fn scope_grants(granted: &str, needed: &str) -> bool {
    if granted == "admin" || granted == needed {
        return true;
    }
    if granted.contains('*') {
        return glob_match(granted, needed);
    }
    granted.matches(':').count() == 1
        && needed
            .strip_prefix(granted)
            .is_some_and(|rest| rest.starts_with(':'))
}

/// Whether every needed scope `requested` would grant is also granted by `granted`: the check
/// for giving a new credential (an API key) scopes, so that the right to make keys is not a way
/// to more rights. Asking whether `granted` covers `requested` as a needed scope would not do:
/// `a*` matches the text `admin`, yet grants far less than `admin` does.
///
/// Only `admin` contains `admin` (a glob never does). Otherwise each scope is the union of the
/// glob patterns it grants: `messages:send` is `messages:send` and `messages:send:*`, a glob is
/// itself, any other scope is the one literal. `requested` is contained when each of its
/// patterns is contained in one of `granted`'s.
pub fn scope_contains(granted: &str, requested: &str) -> bool {
    if granted == "admin" || granted == requested {
        return true;
    }
    if requested == "admin" {
        return false;
    }
    let granted = granted_patterns(granted);
    granted_patterns(requested)
        .iter()
        .all(|r| granted.iter().any(|g| pattern_contains(g, r)))
}

/// The glob patterns a scope other than `admin` grants (see [`scope_grants`]).
fn granted_patterns(scope: &str) -> Vec<String> {
    if !scope.contains('*') && scope.matches(':').count() == 1 {
        vec![scope.to_string(), format!("{scope}:*")]
    } else {
        vec![scope.to_string()]
    }
}

/// Whether every text `inner` matches is matched by `outer` (globs whose only wildcard is `*`).
/// That holds exactly when `outer` matches `inner` with each `*` of `inner` taken as a
/// character only a `*` of `outer` can match: put a character `outer` never uses in place of
/// each `*` of `inner`; `outer` must swallow each of them with one of its own `*`s, which then
/// swallow whatever else those `*`s of `inner` stand for.
fn pattern_contains(outer: &str, inner: &str) -> bool {
    let inner: Vec<Option<u8>> = inner.bytes().map(|b| (b != b'*').then_some(b)).collect();
    glob_match_symbols(outer.as_bytes(), &inner)
}

/// `*` matches any run of characters (possibly empty); every other character matches itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let text: Vec<Option<u8>> = text.bytes().map(Some).collect();
    glob_match_symbols(pattern.as_bytes(), &text)
}

/// [`glob_match`] over symbols, where `None` is a character that only a `*` matches.
fn glob_match_symbols(p: &[u8], t: &[Option<u8>]) -> bool {
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it currently stands for the end of.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && t[ti] == Some(p[pi]) {
            pi += 1;
            ti += 1;
        } else if let Some((star_pi, star_ti)) = star {
            // Let the last `*` swallow one more character and retry.
            pi = star_pi + 1;
            ti = star_ti + 1;
            star = Some((star_pi, star_ti + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

impl From<VerifiedToken> for Principal {
    fn from(token: VerifiedToken) -> Principal {
        Principal {
            subject: token.subject,
            scopes: token.scopes,
        }
    }
}

/// 401: `token_expired` for an expired token, `invalid_token` for any other refusal; 503
/// `identity_provider_unavailable` (with `Retry-After`) when the keys that would decide cannot
/// be fetched.
impl From<TokenError> for ApiError {
    fn from(err: TokenError) -> ApiError {
        match err {
            TokenError::Expired => ApiError::refused(ErrorCode::TokenExpired, err.to_string()),
            TokenError::Invalid(detail) => invalid_token(detail),
            TokenError::Unavailable(detail) => {
                ApiError::refused(ErrorCode::IdentityProviderUnavailable, detail).retry_later()
            }
        }
    }
}

fn invalid_token(detail: impl Into<String>) -> ApiError {
    ApiError::refused(ErrorCode::InvalidToken, detail)
}

/// The header SpiffArena's clients send their API key in.
pub const API_KEY_HEADER: &str = "SpiffWorkflow-Api-Key";

/// What a request presents.
enum Credential {
    Jwt(String),
    ApiKey(String),
}

fn credential(req: &HttpRequest) -> Result<Credential, ApiError> {
    if let Some(value) = req.headers().get(API_KEY_HEADER) {
        let key = value.to_str().map_err(|_| {
            invalid_token(format!("The {API_KEY_HEADER} header is not valid text."))
        })?;
        return Ok(Credential::ApiKey(key.trim().to_string()));
    }
    let value = req.headers().get(header::AUTHORIZATION).ok_or_else(|| {
        invalid_token(format!(
            "No credentials: send `Authorization: Bearer <JWT or API key>` or `{API_KEY_HEADER}: <API key>`."
        ))
    })?;
    let value = value
        .to_str()
        .map_err(|_| invalid_token("The Authorization header is not valid text."))?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            let token = token.trim();
            Ok(if token.starts_with(api_keys::KEY_PREFIX) {
                Credential::ApiKey(token.to_string())
            } else {
                Credential::Jwt(token.to_string())
            })
        }
        _ => Err(invalid_token(
            "The Authorization header is not `Bearer <JWT or API key>`.",
        )),
    }
}

async fn verify(
    credential: Credential,
    keys: Option<web::Data<JwtKeys>>,
    state: Option<web::Data<App>>,
) -> Result<Principal, ApiError> {
    match credential {
        Credential::Jwt(token) => {
            let keys =
                keys.ok_or_else(|| ApiError::internal("JwtKeys are not registered as app data"))?;
            Ok(keys.verify(&token).await.map(Principal::from)?)
        }
        Credential::ApiKey(key) => {
            let state =
                state.ok_or_else(|| ApiError::internal("App is not registered as app data"))?;
            match api_keys::authenticate(&state.pool, &key).await? {
                Some((name, scopes)) => Ok(Principal {
                    subject: format!("api-key:{name}"),
                    scopes,
                }),
                None => Err(invalid_token(
                    "The API key is not valid (unknown, revoked or expired).",
                )),
            }
        }
    }
}

impl FromRequest for Principal {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Principal, ApiError>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        let credential = credential(req);
        let keys = req.app_data::<web::Data<JwtKeys>>().cloned();
        let state = req.app_data::<web::Data<App>>().cloned();
        let path = req.path().to_string();
        Box::pin(async move {
            let result = match credential {
                Ok(credential) => verify(credential, keys, state).await,
                Err(e) => Err(e),
            };
            if let Err(e) = &result {
                tracing::debug!(error_code = e.error_code(), path = %path, "credential rejected");
            }
            result
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(scopes: &str) -> Principal {
        Principal {
            subject: "t".into(),
            scopes: scopes.split_whitespace().map(str::to_string).collect(),
        }
    }

    #[test]
    fn the_overview_precheck_never_refuses_a_caller_that_may_read_some_instances() {
        for scopes in [
            "admin",
            "instances:read:*",
            "instances:read:shop/orders",
            "instances:read",
            "instances:*",
            "*:read:*",
        ] {
            assert!(principal(scopes).may_read_some_instances(), "{scopes}");
        }
        for scopes in ["models:read", "messages:send:x secrets:manage", ""] {
            let p = principal(scopes);
            assert!(!p.may_read_some_instances(), "{scopes}");
            assert!(!p.allows("instances:read:shop/orders"), "{scopes}");
        }
    }

    #[test]
    fn scope_matching_table() {
        let cases: &[(&str, &str, bool)] = &[
            ("admin", "anything:at:all", true),
            ("admin", "callback:1/abc", true),
            ("models:write", "models:write", true),
            ("models:write", "models:read", false),
            ("instances:create:*", "instances:create:group/model", true),
            ("instances:create:*", "instances:create:", true),
            ("instances:create:*", "instances:read:group/model", false),
            (
                "instances:create:group/*",
                "instances:create:group/model",
                true,
            ),
            (
                "instances:create:group/*",
                "instances:create:group/sub/model",
                true,
            ),
            (
                "instances:create:group/*",
                "instances:create:other/model",
                false,
            ),
            ("instances:create:group/*", "instances:create:group", false),
            (
                "instances:create:*/orders",
                "instances:create:a/b/orders",
                true,
            ),
            (
                "instances:create:*/orders",
                "instances:create:a/b/orders2",
                false,
            ),
            ("instances:*:group/m", "instances:update:group/m", true),
            ("messages:send", "messages:send:order%20placed", true),
            (
                "messages:send:order%20*",
                "messages:send:order%20placed",
                true,
            ),
            ("messages:send", "messages:send:a:b", true),
            ("messages:send", "messages:send", true),
            ("messages:send", "messages:sendx:a", false),
            ("messages:send", "messages:sen", false),
            ("messages:send:order_*", "messages:send:order_paid", true),
            ("messages:send:order_*", "messages:send:invoice_paid", false),
            ("messages:send:order", "messages:send:order_paid", false),
            (
                "instances:create:group/model",
                "instances:create:group/model",
                true,
            ),
            (
                "instances:create:group/model",
                "instances:create:group/model2",
                false,
            ),
            ("callback", "callback:1/abc", false),
            ("callback:1/abc", "callback:1/abc", true),
            ("callback:1/abc", "callback:1/abd", false),
            ("callback:1/abc", "callback:12/abc", false),
            ("*", "anything", true),
            ("a**b", "ab", true),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("", "messages:send", false),
        ];
        for &(granted, needed, expected) in cases {
            assert_eq!(
                scope_grants(granted, needed),
                expected,
                "granted {granted:?}, needed {needed:?}"
            );
        }
    }

    #[test]
    fn scope_containment_table() {
        let cases: &[(&str, &str, bool)] = &[
            // admin: only admin gives it, and gives everything
            ("admin", "admin", true),
            ("admin", "*", true),
            ("admin", "secrets:read", true),
            ("*", "admin", false),
            ("a*", "admin", false),
            ("ad*", "admin", false),
            ("admin*", "admin", false),
            // the exploit: `a*` matches the text `admin` but grants less
            ("a*", "api-keys:write", true),
            ("a*", "secrets:manage", false),
            // globs within globs
            ("*", "*", true),
            ("*", "anything:at:all", true),
            ("*", "instances:*", true),
            ("instances:*", "instances:read:*", true),
            ("instances:*", "instances:*:group/m", true),
            ("instances:read:*", "instances:*", false),
            ("instances:read:*", "instances:read:finance/*", true),
            ("instances:read:finance/*", "instances:read:*", false),
            (
                "instances:read:finance/*",
                "instances:read:finance/*/x",
                true,
            ),
            ("instances:read:finance/*", "instances:read:finance*", false),
            ("instances:*:group/m", "instances:read:group/m", true),
            ("instances:*:group/m", "instances:*:group/*", false),
            ("a*b", "a*b", true),
            ("a*b", "a**b", true),
            ("a*b", "ab*", false),
            ("a*b", "a*xb", true),
            ("a*b*c", "a*c", false),
            ("a*c", "a*b*c", true),
            ("*a*", "x*a*y", true),
            ("x*", "*x", false),
            // two parts: the scope and every third part
            ("messages:send", "messages:send", true),
            ("messages:send", "messages:send:order_*", true),
            ("messages:send", "messages:send:*", true),
            ("messages:send", "messages:send:order_paid", true),
            ("messages:send", "messages:send*", false),
            ("messages:send", "messages:*", false),
            ("messages:send", "messages:sendx", false),
            ("messages:send:*", "messages:send", false),
            ("messages:*", "messages:send", true),
            ("messages:send*", "messages:send", true),
            ("messages:send:order_*", "messages:send", false),
            ("messages:send:order_*", "messages:send:order_paid", true),
            ("messages:send:order_*", "messages:send:*", false),
            // literals give themselves only
            ("callback:1/abc", "callback:1/abc", true),
            ("callback:1/abc", "callback:1/*", false),
            ("callback", "callback:1/abc", false),
            ("models:write", "models:write:x", true),
            ("models:read", "models:write", false),
            ("", "messages:send", false),
        ];
        for &(granted, requested, expected) in cases {
            assert_eq!(
                scope_contains(granted, requested),
                expected,
                "granted {granted:?}, requested {requested:?}"
            );
        }
    }

    #[test]
    fn require_names_the_scope() {
        let p = principal("messages:send:order_* instances:read:*");
        assert!(p.require("messages:send:order_paid").is_ok());
        let err = p.require("models:write").unwrap_err();
        assert_eq!(err.status().as_u16(), 403);
        assert_eq!(err.error_code(), "not_authorized");
        assert!(err.detail().contains("`models:write`"));
        assert_eq!(err.body()["required_scope"], "models:write");
        assert!(p
            .require_any(&["models:write", "instances:read:g/m"])
            .is_ok());
        let err = p.require_any(&["models:write", "admin"]).unwrap_err();
        assert!(err.detail().contains("`models:write`, `admin`"));
        assert!(!principal("").allows("anything"));
    }

    #[test]
    fn refused_tokens_are_401_expired_or_invalid() {
        let expired = ApiError::from(TokenError::Expired);
        assert_eq!(expired.status().as_u16(), 401);
        assert_eq!(expired.error_code(), "token_expired");
        assert_eq!(expired.detail(), "The bearer token has expired.");
        let invalid = ApiError::from(TokenError::Invalid("The bearer token is malformed.".into()));
        assert_eq!(invalid.status().as_u16(), 401);
        assert_eq!(invalid.error_code(), "invalid_token");
        assert_eq!(invalid.detail(), "The bearer token is malformed.");
    }

    #[test]
    fn names_with_spaces_are_written_percent_encoded_in_scopes() {
        assert_eq!(scope_part("order_paid"), "order_paid");
        assert_eq!(scope_part("order paid"), "order%20paid");
        assert_eq!(scope_part("50% off"), "50%25%20off");
        assert_eq!(scope_part("a\u{a0}b"), "a%C2%A0b");
    }
}
