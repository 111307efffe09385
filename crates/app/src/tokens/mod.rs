//! Bearer JWT key material: verifying a token's signature and claims, and minting tokens.
//!
//! This sits below `api` so that every part that needs tokens can reach it without reaching
//! HTTP: `api` verifies bearer tokens (and answers a [`TokenError`] with 401), `services`
//! mints the callback token a connector proxy sends back, `main` mints tokens for the `token`
//! command, and the load generator mints its own. What a token's scopes allow is decided in
//! `api::auth`.

pub mod jwks;

use std::collections::HashMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::config::{ConfigError, JwtSettings};
pub use jwks::{Jwks, JwksSource};

/// Who a verified token speaks for, and the scopes it grants (in the order it lists them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifiedToken {
    pub subject: String,
    pub scopes: Vec<String>,
}

/// Why a token is refused. `Display` is the detail a caller is shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// `exp` has passed (beyond the configured leeway).
    #[error("The bearer token has expired.")]
    Expired,
    /// Anything else: not a JWT, a key or algorithm not accepted here, a bad signature, a
    /// missing or wrong claim.
    #[error("{0}")]
    Invalid(String),
    /// The token may be good, but the identity provider's keys that would tell cannot be
    /// fetched now (503: retry).
    #[error("{0}")]
    Unavailable(String),
}

fn invalid(detail: impl Into<String>) -> TokenError {
    TokenError::Invalid(detail.into())
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

/// `scope` as minted: a space-separated string (verification also reads a JSON array).
#[derive(Debug, Serialize, Deserialize)]
#[serde(untagged)]
enum ScopeClaim {
    Text(String),
    List(Vec<String>),
}

/// The keys bearer tokens are verified with, from [`JwtSettings`]: an HS256 secret, one PEM
/// public key (RSA or EC, detected from the PEM) and/or an identity provider's JWKS. `exp` and
/// `sub` are required; `iss` and `aud` are required and checked when configured. Scopes come
/// from the configured claim, provider roles mapped to scopes by the optional scope map.
pub struct JwtKeys {
    hmac: Option<(DecodingKey, EncodingKey)>,
    public: Option<DecodingKey>,
    jwks: Option<Arc<Jwks>>,
    issuer: Option<String>,
    audience: Option<String>,
    leeway_seconds: u64,
    /// Dotted path of the claim holding scopes (`scope`, `realm_access.roles`).
    scope_claim: Vec<String>,
    /// Provider role or group -> the scopes it grants here.
    scope_map: HashMap<String, Vec<String>>,
}

impl fmt::Debug for JwtKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtKeys")
            .field("hs256", &self.hmac.is_some())
            .field("public_key", &self.public.as_ref().map(|k| k.family()))
            .field("jwks", &self.jwks.as_ref().map(|j| j.source().clone()))
            .field("scope_claim", &self.scope_claim.join("."))
            .field("scope_map_entries", &self.scope_map.len())
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
        if jwt.secret.is_none()
            && jwt.public_key_file.is_none()
            && jwt.jwks_url.is_none()
            && jwt.oidc_issuer.is_none()
        {
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
        let jwks = match (&jwt.jwks_url, &jwt.oidc_issuer) {
            (Some(url), _) => Some(JwksSource::Url(url.clone())),
            (None, Some(issuer)) => Some(JwksSource::Issuer(issuer.clone())),
            (None, None) => None,
        }
        .map(|source| Arc::new(Jwks::new(source)));
        let scope_map = match &jwt.scope_map_file {
            Some(path) => read_scope_map(path)?,
            None => HashMap::new(),
        };
        Ok(JwtKeys {
            hmac,
            public,
            jwks,
            // an OpenID issuer is the issuer its tokens must name, unless told otherwise
            issuer: jwt.issuer.clone().or_else(|| jwt.oidc_issuer.clone()),
            audience: jwt.audience.clone(),
            leeway_seconds: jwt.leeway_seconds,
            scope_claim: jwt.scope_claim.split('.').map(str::to_string).collect(),
            scope_map,
        })
    }

    /// The identity provider's key set, when one is configured (its refresher runs on it).
    pub fn jwks(&self) -> Option<Arc<Jwks>> {
        self.jwks.clone()
    }

    /// Verifies a bearer token: its signature, `exp`, `nbf`, and `iss`/`aud` when configured.
    pub async fn verify(&self, token: &str) -> Result<VerifiedToken, TokenError> {
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| invalid("The bearer token is not a JWT."))?;
        // RFC 7515 4.1.11: extensions listed in `crit` must be understood; none are here.
        if header.crit.is_some() {
            return Err(invalid(
                "The bearer token's header lists critical extensions (crit), which are not supported.",
            ));
        }
        let keys = self.keys_for(&header).await?;
        let validation = self.validation(header.alg);
        let mut last = None;
        for key in &keys {
            match jsonwebtoken::decode::<serde_json::Map<String, serde_json::Value>>(
                token,
                key,
                &validation,
            ) {
                Ok(data) => return self.verified(data.claims),
                Err(e) => last = Some(e),
            }
        }
        Err(match last {
            Some(e) => refusal(e),
            None => invalid(format!(
                "Tokens signed with {:?} are not accepted here.",
                header.alg
            )),
        })
    }

    /// The keys that may have signed a token with this header.
    async fn keys_for(&self, header: &Header) -> Result<Vec<DecodingKey>, TokenError> {
        let family = header.alg.family();
        if family == AlgorithmFamily::Hmac {
            return Ok(self
                .hmac
                .iter()
                .filter(|_| header.alg == Algorithm::HS256)
                .map(|(decoding, _)| decoding.clone())
                .collect());
        }
        let mut keys: Vec<DecodingKey> = self
            .public
            .iter()
            .filter(|key| key.family() == family && header.alg == accepted_algorithm(family))
            .cloned()
            .collect();
        if let Some(jwks) = &self.jwks {
            match jwks.keys_for(header.kid.as_deref(), header.alg).await {
                Ok(found) => keys.extend(found),
                // the configured PEM key may still verify it
                Err(_) if !keys.is_empty() => {}
                Err(e) => return Err(e),
            }
        }
        Ok(keys)
    }

    fn validation(&self, alg: Algorithm) -> Validation {
        let mut validation = Validation::new(alg);
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
        validation
    }

    /// Subject and scopes of verified claims.
    fn verified(
        &self,
        claims: serde_json::Map<String, serde_json::Value>,
    ) -> Result<VerifiedToken, TokenError> {
        let claims = serde_json::Value::Object(claims);
        let subject = claims["sub"]
            .as_str()
            .map(str::trim)
            .filter(|sub| !sub.is_empty())
            .ok_or_else(|| invalid("The bearer token's subject (sub) is empty."))?
            .to_string();
        let mut found = &claims;
        for part in &self.scope_claim {
            found = &found[part.as_str()];
        }
        let granted: Vec<String> = match found {
            serde_json::Value::String(text) => {
                text.split_whitespace().map(str::to_string).collect()
            }
            serde_json::Value::Array(items) => items
                .iter()
                .filter_map(|item| item.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        let mut scopes = Vec::new();
        for value in granted {
            if let Some(mapped) = self.scope_map.get(&value) {
                scopes.extend(mapped.iter().cloned());
            }
            scopes.push(value);
        }
        scopes.dedup();
        Ok(VerifiedToken { subject, scopes })
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

/// Why jsonwebtoken refused a token, as the caller is told.
fn refusal(e: jsonwebtoken::errors::Error) -> TokenError {
    match e.kind() {
        ErrorKind::ExpiredSignature => TokenError::Expired,
        ErrorKind::InvalidSignature => invalid("The bearer token's signature does not verify."),
        ErrorKind::InvalidIssuer => invalid("The bearer token's issuer (iss) is not accepted."),
        ErrorKind::InvalidAudience => invalid("The bearer token's audience (aud) is not accepted."),
        ErrorKind::MissingRequiredClaim(claim) => {
            invalid(format!("The bearer token has no `{claim}` claim."))
        }
        ErrorKind::ImmatureSignature => {
            invalid("The bearer token is not valid yet (nbf is in the future).")
        }
        _ => invalid("The bearer token is malformed."),
    }
}

/// `WORKFLOW_BACKEND_JWT_SCOPE_MAP_FILE`: a JSON object from a provider role or group to the
/// scopes it grants, as a space-separated string or a list
/// (`{"workflow-operators": "instances:read:* instances:update:*"}`).
fn read_scope_map(path: &Path) -> Result<HashMap<String, Vec<String>>, ConfigError> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Scopes {
        Text(String),
        List(Vec<String>),
    }
    let problem = |detail: String| ConfigError::invalid("JWT_SCOPE_MAP_FILE", detail);
    let text = std::fs::read_to_string(path)
        .map_err(|e| problem(format!("cannot read {}: {e}", path.display())))?;
    let map: HashMap<String, Scopes> = serde_json::from_str(&text).map_err(|e| {
        problem(format!(
            "{} is not a JSON object of role -> scopes: {e}",
            path.display()
        ))
    })?;
    Ok(map
        .into_iter()
        .map(|(role, scopes)| {
            let scopes = match scopes {
                Scopes::Text(text) => text.split_whitespace().map(str::to_string).collect(),
                Scopes::List(list) => list,
            };
            (role, scopes)
        })
        .collect())
}

/// RSA first, then EC; `None` for anything else.
fn public_key_from_pem(pem: &[u8]) -> Option<DecodingKey> {
    DecodingKey::from_rsa_pem(pem)
        .or_else(|_| DecodingKey::from_ec_pem(pem))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn detail(err: TokenError) -> String {
        err.to_string()
    }

    #[tokio::test]
    async fn minted_tokens_verify() {
        let token = mint_token(
            "s3cret",
            "alice",
            "admin messages:send",
            Duration::from_secs(60),
        );
        let verified = keys(Some("s3cret"), None, None)
            .verify(&token)
            .await
            .unwrap();
        assert_eq!(verified.subject, "alice");
        assert_eq!(verified.scopes, vec!["admin", "messages:send"]);
    }

    #[tokio::test]
    async fn an_expired_token_is_told_apart() {
        let mut keys = keys(Some("s"), None, None);
        keys.leeway_seconds = 0;
        let claims = Claims {
            sub: "a".into(),
            scope: None,
            exp: jsonwebtoken::get_current_timestamp() - 60,
            iat: None,
            iss: None,
            aud: None,
        };
        let token =
            jsonwebtoken::encode(&Header::default(), &claims, &EncodingKey::from_secret(b"s"))
                .unwrap();
        assert_eq!(keys.verify(&token).await.unwrap_err(), TokenError::Expired);
        assert!(matches!(
            keys.verify("not a token").await.unwrap_err(),
            TokenError::Invalid(_)
        ));
    }

    #[tokio::test]
    async fn issuer_and_audience_are_required_when_configured() {
        let plain = mint_token("s", "a", "admin", Duration::from_secs(60));
        for (issuer, audience, claim) in [
            (Some("https://idp"), None, "`iss`"),
            (None, Some("wf"), "`aud`"),
        ] {
            let err = keys(Some("s"), issuer, audience)
                .verify(&plain)
                .await
                .unwrap_err();
            assert!(matches!(err, TokenError::Invalid(_)));
            assert!(detail(err).contains(claim));
        }
        let configured = keys(Some("s"), Some("https://idp"), Some("wf"));
        assert!(configured.verify(&plain).await.is_err());
        let minted = configured
            .mint("a", "admin", Duration::from_secs(60))
            .unwrap();
        assert!(configured.verify(&minted).await.is_ok());
        let other = keys(Some("s"), Some("https://other"), Some("wf"));
        assert!(detail(other.verify(&minted).await.unwrap_err()).contains("issuer"));
        let other = keys(Some("s"), Some("https://idp"), Some("else"));
        assert!(detail(other.verify(&minted).await.unwrap_err()).contains("audience"));
    }

    #[tokio::test]
    async fn no_key_is_a_config_error_and_mint_needs_the_secret() {
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
                    "/../../tests/fixtures/es256-public.pem"
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
        assert!(matches!(
            public_only.verify(&token).await.unwrap_err(),
            TokenError::Invalid(_)
        ));
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
