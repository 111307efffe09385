//! Bearer JWT authentication and scope checks: the single home for both.
//!
//! A handler takes a [`Principal`] argument (the token is verified by the extractor, with the
//! [`JwtKeys`] registered as app data) and states what it needs in one line:
//! `principal.require("instances:create:group/model")?;`.
//!
//! Scope grammar (space-separated `scope` claim):
//! - `admin` grants everything;
//! - a granted scope containing `*` is a glob: `*` matches any run of characters, `/` and `:`
//!   included (`instances:create:*`, `instances:create:finance/*`, `messages:send:order_*`);
//! - a granted scope of two parts (`messages:send`) grants every third part
//!   (`messages:send:<anything>`);
//! - otherwise the granted scope must equal the needed one.

use std::fmt;
use std::future::{ready, Ready};
use std::time::Duration;

use actix_web::dev::Payload;
use actix_web::http::header;
use actix_web::{web, FromRequest, HttpRequest};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::api::error::ApiError;
use crate::config::{ConfigError, JwtSettings};

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

/// `*` matches any run of characters (possibly empty); every other character matches itself.
fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t) = (pattern.as_bytes(), text.as_bytes());
    let (mut pi, mut ti) = (0, 0);
    // Where the last `*` was, and the text position it currently stands for the end of.
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
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

#[derive(Debug, Serialize, Deserialize)]
struct Claims {
    sub: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    scope: Option<ScopeClaim>,
    exp: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iat: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iss: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    aud: Option<serde_json::Value>,
}

/// `scope` is a space-separated string; a JSON array of strings is accepted too.
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

impl ScopeClaim {
    fn into_scopes(self) -> Vec<String> {
        match self {
            ScopeClaim::Text(s) => s.split_whitespace().map(str::to_string).collect(),
            ScopeClaim::List(list) => list,
        }
    }
}

/// The keys bearer tokens are verified with, from [`JwtSettings`]: an HS256 secret and/or one PEM
/// public key (RSA or EC, detected from the PEM). `exp` and `sub` are required; `iss` and `aud`
/// are required and checked when configured.
pub struct JwtKeys {
    hmac: Option<(DecodingKey, EncodingKey)>,
    public: Option<DecodingKey>,
    issuer: Option<String>,
    audience: Option<String>,
    leeway_seconds: u64,
}

impl fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtKeys")
            .field("hs256", &self.hmac.is_some())
            .field("public_key", &self.public.as_ref().map(|k| k.family()))
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway_seconds", &self.leeway_seconds)
            .finish()
    }
}

/// The one algorithm accepted per key kind: HS256 with the secret, RS256 with an RSA public
/// key, ES256 with an EC one. A token naming another (HS512 with the same secret, say) is
/// refused, so a configuration means exactly the algorithms it says.
fn accepted_algorithm(family: AlgorithmFamily) -> Algorithm {
    match family {
        AlgorithmFamily::Hmac => Algorithm::HS256,
        AlgorithmFamily::Rsa => Algorithm::RS256,
        AlgorithmFamily::Ec => Algorithm::ES256,
        AlgorithmFamily::Ed => Algorithm::EdDSA,
    }
}

impl JwtKeys {
    /// Fails with [`ConfigError::NoJwtKey`] when neither a secret nor a public key is configured,
    /// and names `WORKFLOW_BACKEND_JWT_PUBLIC_KEY_FILE` when that file cannot be read or parsed.
    pub fn from_settings(jwt: &JwtSettings) -> Result<JwtKeys, ConfigError> {
        if jwt.secret.is_none() && jwt.public_key_file.is_none() {
            return Err(ConfigError::NoJwtKey);
        }
        let hmac = jwt.secret.as_ref().map(|secret| {
            (
                DecodingKey::from_secret(secret.as_bytes()),
                EncodingKey::from_secret(secret.as_bytes()),
            )
        });
        let public = match &jwt.public_key_file {
            None => None,
            Some(path) => {
                let pem = std::fs::read(path).map_err(|e| {
                    ConfigError::invalid(
                        "JWT_PUBLIC_KEY_FILE",
                        format!("cannot read {}: {e}", path.display()),
                    )
                })?;
                Some(public_key_from_pem(&pem).ok_or_else(|| {
                    ConfigError::invalid(
                        "JWT_PUBLIC_KEY_FILE",
                        format!("{} is not a PEM RSA or EC public key", path.display()),
                    )
                })?)
            }
        };
        Ok(JwtKeys {
            hmac,
            public,
            issuer: jwt.issuer.clone(),
            audience: jwt.audience.clone(),
            leeway_seconds: jwt.leeway_seconds,
        })
    }

    /// Verifies a bearer token. Errors are 401 `token_expired` or `invalid_token`.
    pub fn verify(&self, token: &str) -> Result<Principal, ApiError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid_token("The bearer token is not a JWT."))?;
        let family = header.alg.family();
        let key = match family {
            AlgorithmFamily::Hmac => self.hmac.as_ref().map(|(decoding, _)| decoding),
            _ => self.public.as_ref().filter(|key| key.family() == family),
        }
        .filter(|_| header.alg == accepted_algorithm(family))
        .ok_or_else(|| {
            invalid_token(format!(
                "Tokens signed with {:?} are not accepted here.",
                header.alg
            ))
        })?;
        // RFC 7515 4.1.11: extensions listed in `crit` must be understood; none are here.
        if header.crit.is_some() {
            return Err(invalid_token(
                "The bearer token's header lists critical extensions (crit), which are not supported.",
            ));
        }

        let mut validation = Validation::new(header.alg);
        validation.leeway = self.leeway_seconds;
        validation.validate_nbf = true;
        let mut required = vec!["exp", "sub"];
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
            required.push("iss");
        }
        match &self.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                required.push("aud");
            }
            None => validation.validate_aud = false,
        }
        validation.set_required_spec_claims(&required);

        let data = jsonwebtoken::decode::<Claims>(token, key, &validation).map_err(|e| match e
            .kind()
        {
            ErrorKind::ExpiredSignature => {
                ApiError::unauthorized("token_expired", "The bearer token has expired.")
            }
            ErrorKind::InvalidSignature => {
                invalid_token("The bearer token's signature does not verify.")
            }
            ErrorKind::InvalidIssuer => {
                invalid_token("The bearer token's issuer (iss) is not accepted.")
            }
            ErrorKind::InvalidAudience => {
                invalid_token("The bearer token's audience (aud) is not accepted.")
            }
            ErrorKind::MissingRequiredClaim(claim) => {
                invalid_token(format!("The bearer token has no `{claim}` claim."))
            }
            ErrorKind::ImmatureSignature => {
                invalid_token("The bearer token is not valid yet (nbf is in the future).")
            }
            _ => invalid_token("The bearer token is malformed."),
        })?;
        if data.claims.sub.trim().is_empty() {
            return Err(invalid_token("The bearer token's subject (sub) is empty."));
        }
        Ok(Principal {
            subject: data.claims.sub,
            scopes: data
                .claims
                .scope
                .map(ScopeClaim::into_scopes)
                .unwrap_or_default(),
        })
    }

    /// An HS256 token with the configured issuer and audience (so this server accepts it).
    /// Used by the `token` command and for callback tokens; needs `WORKFLOW_BACKEND_JWT_SECRET`.
    pub fn mint(&self, sub: &str, scope: &str, ttl: Duration) -> Result<String, ConfigError> {
        let (_, key) = self.hmac.as_ref().ok_or_else(|| {
            ConfigError::invalid(
                "JWT_SECRET",
                "not set; minting a token needs the HS256 secret",
            )
        })?;
        Ok(encode(
            key,
            sub,
            scope,
            ttl,
            self.issuer.clone(),
            self.audience.clone(),
        ))
    }
}

/// An HS256 token `{sub, scope, iat, exp}` signed with `secret` (no `iss`/`aud`: when those are
/// configured, use [`JwtKeys::mint`]).
pub fn mint_token(secret: &str, sub: &str, scope: &str, ttl: Duration) -> String {
    encode(
        &EncodingKey::from_secret(secret.as_bytes()),
        sub,
        scope,
        ttl,
        None,
        None,
    )
}

fn encode(
    key: &EncodingKey,
    sub: &str,
    scope: &str,
    ttl: Duration,
    iss: Option<String>,
    aud: Option<String>,
) -> String {
    let now = jsonwebtoken::get_current_timestamp();
    let claims = Claims {
        sub: sub.to_string(),
        scope: Some(ScopeClaim::Text(scope.to_string())),
        iat: Some(now),
        exp: now + ttl.as_secs(),
        iss,
        aud: aud.map(serde_json::Value::String),
    };
    jsonwebtoken::encode(&Header::default(), &claims, key).expect("HS256 signing does not fail")
}

/// RSA first, then EC; `None` for anything else.
fn public_key_from_pem(pem: &[u8]) -> Option<DecodingKey> {
    DecodingKey::from_rsa_pem(pem)
        .or_else(|_| DecodingKey::from_ec_pem(pem))
        .ok()
}

fn invalid_token(detail: impl Into<String>) -> ApiError {
    ApiError::unauthorized("invalid_token", detail)
}

fn bearer_token(req: &HttpRequest) -> Result<&str, ApiError> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| invalid_token("No credentials: send `Authorization: Bearer <JWT>`."))?;
    let value = value
        .to_str()
        .map_err(|_| invalid_token("The Authorization header is not valid text."))?;
    match value.split_once(' ') {
        Some((scheme, token))
            if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() =>
        {
            Ok(token.trim())
        }
        _ => Err(invalid_token(
            "The Authorization header is not `Bearer <JWT>`.",
        )),
    }
}

impl FromRequest for Principal {
    type Error = ApiError;
    type Future = Ready<Result<Principal, ApiError>>;

    fn from_request(req: &HttpRequest, _payload: &mut Payload) -> Self::Future {
        let result = match req.app_data::<web::Data<JwtKeys>>() {
            None => Err(ApiError::internal("JwtKeys are not registered as app data")),
            Some(keys) => bearer_token(req).and_then(|token| keys.verify(token)),
        };
        if let Err(e) = &result {
            tracing::debug!(
                error_code = e.error_code(),
                path = req.path(),
                "credential rejected"
            );
        }
        ready(result)
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
            ("messages:send", "messages:send:order placed", true),
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

    fn keys(secret: Option<&str>, issuer: Option<&str>, audience: Option<&str>) -> JwtKeys {
        JwtKeys::from_settings(&JwtSettings {
            secret: secret.map(str::to_string),
            public_key_file: None,
            issuer: issuer.map(str::to_string),
            audience: audience.map(str::to_string),
            ..JwtSettings::default()
        })
        .unwrap()
    }

    #[test]
    fn minted_tokens_verify() {
        let token = mint_token(
            "s3cret",
            "alice",
            "admin messages:send",
            Duration::from_secs(60),
        );
        let p = keys(Some("s3cret"), None, None).verify(&token).unwrap();
        assert_eq!(p.subject, "alice");
        assert_eq!(p.scopes, vec!["admin", "messages:send"]);
    }

    #[test]
    fn issuer_and_audience_are_required_when_configured() {
        let plain = mint_token("s", "a", "admin", Duration::from_secs(60));
        for (issuer, audience, claim) in [
            (Some("https://idp"), None, "`iss`"),
            (None, Some("wf"), "`aud`"),
        ] {
            let err = keys(Some("s"), issuer, audience)
                .verify(&plain)
                .unwrap_err();
            assert_eq!(err.error_code(), "invalid_token");
            assert!(err.detail().contains(claim), "{err}");
        }
        let configured = keys(Some("s"), Some("https://idp"), Some("wf"));
        assert!(configured.verify(&plain).is_err());
        let minted = configured
            .mint("a", "admin", Duration::from_secs(60))
            .unwrap();
        assert!(configured.verify(&minted).is_ok());
        let other = keys(Some("s"), Some("https://other"), Some("wf"));
        assert!(other
            .verify(&minted)
            .unwrap_err()
            .detail()
            .contains("issuer"));
        let other = keys(Some("s"), Some("https://idp"), Some("else"));
        assert!(other
            .verify(&minted)
            .unwrap_err()
            .detail()
            .contains("audience"));
    }

    #[test]
    fn no_key_is_a_config_error_and_mint_needs_the_secret() {
        assert_eq!(
            JwtKeys::from_settings(&JwtSettings::default()).unwrap_err(),
            ConfigError::NoJwtKey
        );
        let msg = ConfigError::NoJwtKey.to_string();
        assert!(
            msg.contains("WORKFLOW_BACKEND_JWT_SECRET")
                && msg.contains("WORKFLOW_BACKEND_JWT_PUBLIC_KEY_FILE")
        );
        let public_only = JwtKeys::from_settings(&JwtSettings {
            public_key_file: Some(
                concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/fixtures/es256-public.pem"
                )
                .into(),
            ),
            ..JwtSettings::default()
        })
        .unwrap();
        let err = public_only
            .mint("a", "admin", Duration::from_secs(1))
            .unwrap_err();
        assert!(err.to_string().starts_with("WORKFLOW_BACKEND_JWT_SECRET:"));
        // An HS256 token is not accepted when only a public key is configured.
        let token = mint_token("s", "a", "admin", Duration::from_secs(60));
        assert_eq!(
            public_only.verify(&token).unwrap_err().error_code(),
            "invalid_token"
        );
    }

    #[test]
    fn unreadable_or_invalid_key_file_names_the_variable() {
        for file in [
            "/nonexistent/key.pem",
            concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml"),
        ] {
            let err = JwtKeys::from_settings(&JwtSettings {
                public_key_file: Some(file.into()),
                ..JwtSettings::default()
            })
            .unwrap_err()
            .to_string();
            assert!(
                err.starts_with("WORKFLOW_BACKEND_JWT_PUBLIC_KEY_FILE: "),
                "{err}"
            );
        }
    }
}
