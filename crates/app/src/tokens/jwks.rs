//! Public keys from an identity provider's JWKS endpoint (`WORKFLOW_BACKEND_JWT_JWKS_URL`, or
//! discovered from `WORKFLOW_BACKEND_OIDC_ISSUER`'s `/.well-known/openid-configuration`).
//!
//! - The set is fetched at start and kept for its HTTP cache lifetime (`Cache-Control:
//!   max-age`, between [`MIN_LIFETIME`] and [`MAX_LIFETIME`], [`DEFAULT_LIFETIME`] without
//!   one); [`run`] refreshes it then, and retries after [`RETRY_AFTER_FAILURE`] while the
//!   provider is down. A failed refresh keeps the keys already held.
//! - A token naming a `kid` the set does not hold makes one refetch at once (a provider that
//!   rotated keys); after such a refetch, another one for an unknown `kid` waits
//!   [`UNKNOWN_KID_COOLDOWN`], so tokens with random kids cannot hammer the provider.
//! - Keys leave when the provider drops them from the set.
//! - Only signing keys: RSA (RS256/384/512, PS256/384/512), EC P-256 (ES256) and P-384 (ES384),
//!   Ed25519 (EdDSA), or the one algorithm a key's `alg` names. Symmetric (`oct`) keys and
//!   `use: enc` keys are ignored: a key fetched over the network never verifies an HMAC.

use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde::Deserialize;

use super::TokenError;

pub const DEFAULT_LIFETIME: Duration = Duration::from_secs(300);
pub const MIN_LIFETIME: Duration = Duration::from_secs(60);
pub const MAX_LIFETIME: Duration = Duration::from_secs(86_400);
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(10);
pub const UNKNOWN_KID_COOLDOWN: Duration = Duration::from_secs(10);
/// A key set or discovery document larger than this is refused.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// Where the key set comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// The JWKS URL itself.
    Url(String),
    /// An OpenID issuer: its discovery document names the JWKS URL.
    Issuer(String),
}

/// One verification key of the set.
#[derive(Clone)]
struct SetKey {
    kid: Option<String>,
    algorithms: Vec<Algorithm>,
    key: DecodingKey,
}

#[derive(Default)]
struct KeySet {
    keys: Vec<SetKey>,
    /// When the set is due for a refresh (`None`: never fetched).
    expires_at: Option<Instant>,
}

#[derive(Default)]
struct FetchState {
    /// The JWKS URL found by discovery (an issuer source), kept while fetches succeed.
    discovered_url: Option<String>,
    /// When a token's unknown `kid` last made a fetch.
    last_unknown_kid_fetch: Option<Instant>,
}

/// Why the set could not be fetched. `Display` is safe to log (no token, no key material).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct JwksError(String);

pub struct Jwks {
    source: JwksSource,
    client: reqwest::Client,
    set: RwLock<Arc<KeySet>>,
    /// Held while fetching: one fetch at a time, and its bookkeeping.
    fetch: tokio::sync::Mutex<FetchState>,
}

impl Jwks {
    pub fn new(source: JwksSource) -> Jwks {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .timeout(Duration::from_secs(10))
            .redirect(reqwest::redirect::Policy::limited(3))
            .build()
            .expect("a reqwest client with timeouts builds");
        Jwks {
            source,
            client,
            set: RwLock::default(),
            fetch: tokio::sync::Mutex::default(),
        }
    }

    pub fn source(&self) -> &JwksSource {
        &self.source
    }

    /// Fetches the set now and replaces the keys held (one-shot: [`run`] calls it when the set
    /// is due; tests call it directly). Returns how many keys the set gave.
    pub async fn refresh(&self) -> Result<usize, JwksError> {
        let mut state = self.fetch.lock().await;
        self.refresh_locked(&mut state).await
    }

    /// How long until the set is due for a refresh (zero when it never loaded).
    pub fn due_in(&self, now: Instant) -> Duration {
        match self.snapshot().expires_at {
            Some(at) => at.saturating_duration_since(now),
            None => Duration::ZERO,
        }
    }

    /// The keys that may have signed a token with this header: the key named by `kid` (every
    /// key when the token names none) that signs with `alg`. An unknown `kid` refetches the set
    /// once (see the module docs). [`TokenError::Unavailable`] when the provider cannot be
    /// reached and the keys held cannot decide.
    pub async fn keys_for(
        &self,
        kid: Option<&str>,
        alg: Algorithm,
    ) -> Result<Vec<DecodingKey>, TokenError> {
        let set = self.snapshot();
        if let Some(keys) = matching(&set, kid, alg)? {
            return Ok(keys);
        }
        let mut state = self.fetch.lock().await;
        // another request may have fetched meanwhile
        let set = self.snapshot();
        if let Some(keys) = matching(&set, kid, alg)? {
            return Ok(keys);
        }
        let cooling = state
            .last_unknown_kid_fetch
            .is_some_and(|at| at.elapsed() < UNKNOWN_KID_COOLDOWN);
        if !cooling {
            state.last_unknown_kid_fetch = Some(Instant::now());
            match self.refresh_locked(&mut state).await {
                Ok(_) => {
                    if let Some(keys) = matching(&self.snapshot(), kid, alg)? {
                        return Ok(keys);
                    }
                }
                Err(e) => return Err(unavailable(&e)),
            }
        } else if set.expires_at.is_none() {
            return Err(TokenError::Unavailable(
                "The identity provider's keys could not be fetched yet; retry shortly.".into(),
            ));
        }
        Err(TokenError::Invalid(match kid {
            Some(kid) => format!("No key with kid `{kid}` in the identity provider's key set."),
            None => format!("No key in the identity provider's key set signs with {alg:?}."),
        }))
    }

    fn snapshot(&self) -> Arc<KeySet> {
        self.set.read().expect("key set lock").clone()
    }

    async fn refresh_locked(&self, state: &mut FetchState) -> Result<usize, JwksError> {
        let url = match (&self.source, &state.discovered_url) {
            (JwksSource::Url(url), _) => url.clone(),
            (JwksSource::Issuer(_), Some(url)) => url.clone(),
            (JwksSource::Issuer(issuer), None) => {
                let url = self.discover(issuer).await?;
                state.discovered_url = Some(url.clone());
                url
            }
        };
        let fetched = self.get(&url).await;
        let (body, lifetime) = match fetched {
            Ok(found) => found,
            Err(e) => {
                // the issuer may have moved its keys: discover again next time
                state.discovered_url = None;
                return Err(e);
            }
        };
        let keys = parse_key_set(&body)?;
        let count = keys.len();
        *self.set.write().expect("key set lock") = Arc::new(KeySet {
            keys,
            expires_at: Some(Instant::now() + lifetime),
        });
        tracing::info!(keys = count, url = %url, lifetime_s = lifetime.as_secs(), "JWKS fetched");
        Ok(count)
    }

    async fn discover(&self, issuer: &str) -> Result<String, JwksError> {
        #[derive(Deserialize)]
        struct Discovery {
            jwks_uri: String,
        }
        let url = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let (body, _) = self.get(&url).await?;
        let discovery: Discovery = serde_json::from_slice(&body)
            .map_err(|e| JwksError(format!("{url}: not an OpenID discovery document: {e}")))?;
        let jwks_uri = reqwest::Url::parse(&discovery.jwks_uri)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| JwksError(format!("{url}: jwks_uri is not an http(s) URL")))?;
        Ok(jwks_uri.to_string())
    }

    /// The body (at most [`MAX_DOCUMENT_BYTES`]) and its cache lifetime.
    async fn get(&self, url: &str) -> Result<(Vec<u8>, Duration), JwksError> {
        let unreachable = |e: reqwest::Error| JwksError(format!("{url}: {e}"));
        let mut response = self.client.get(url).send().await.map_err(unreachable)?;
        if !response.status().is_success() {
            return Err(JwksError(format!("{url}: answered {}", response.status())));
        }
        let lifetime = cache_lifetime(
            response
                .headers()
                .get(reqwest::header::CACHE_CONTROL)
                .and_then(|v| v.to_str().ok()),
        );
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(JwksError(format!(
                    "{url}: larger than {MAX_DOCUMENT_BYTES} bytes"
                )));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((body, lifetime))
    }
}

fn unavailable(e: &JwksError) -> TokenError {
    tracing::warn!(error = %e, "the identity provider's keys could not be fetched");
    TokenError::Unavailable(
        "The identity provider's keys could not be fetched; retry shortly.".into(),
    )
}

/// `Some(keys)` when the set decides: the keys to try. `None` when it cannot (the `kid` is not
/// in the set, or nothing was fetched yet).
fn matching(
    set: &KeySet,
    kid: Option<&str>,
    alg: Algorithm,
) -> Result<Option<Vec<DecodingKey>>, TokenError> {
    let named: Vec<&SetKey> = set
        .keys
        .iter()
        .filter(|k| kid.is_none() || k.kid.as_deref() == kid)
        .collect();
    if named.is_empty() {
        return Ok(None);
    }
    let keys: Vec<DecodingKey> = named
        .iter()
        .filter(|k| k.algorithms.contains(&alg))
        .map(|k| k.key.clone())
        .collect();
    if keys.is_empty() {
        return Err(TokenError::Invalid(format!(
            "The identity provider's key does not sign with {alg:?}."
        )));
    }
    Ok(Some(keys))
}

/// The signing keys of a JWKS document; keys this service cannot use are skipped (and logged),
/// a document without a `keys` array is refused.
fn parse_key_set(body: &[u8]) -> Result<Vec<SetKey>, JwksError> {
    #[derive(Deserialize)]
    struct RawSet {
        keys: Vec<serde_json::Value>,
    }
    let raw: RawSet =
        serde_json::from_slice(body).map_err(|e| JwksError(format!("not a JWK set: {e}")))?;
    Ok(raw
        .keys
        .into_iter()
        .filter_map(|value| {
            let jwk: Jwk = serde_json::from_value(value).ok()?;
            let key = signing_key(&jwk);
            if key.is_none() {
                tracing::debug!(kid = ?jwk.common.key_id, "JWK skipped: not a supported signing key");
            }
            key
        })
        .collect())
}

fn signing_key(jwk: &Jwk) -> Option<SetKey> {
    if matches!(
        jwk.common.public_key_use,
        Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
    ) {
        return None;
    }
    let by_type: Vec<Algorithm> = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => vec![
            Algorithm::RS256,
            Algorithm::RS384,
            Algorithm::RS512,
            Algorithm::PS256,
            Algorithm::PS384,
            Algorithm::PS512,
        ],
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => vec![Algorithm::ES256],
            EllipticCurve::P384 => vec![Algorithm::ES384],
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            vec![Algorithm::EdDSA]
        }
        // `oct` (a shared secret) and anything else: never from a URL
        _ => return None,
    };
    let algorithms = match &jwk.common.key_algorithm {
        None => by_type,
        Some(named) => {
            let named = Algorithm::from_str(&named.to_string()).ok()?;
            if !by_type.contains(&named) {
                return None;
            }
            vec![named]
        }
    };
    Some(SetKey {
        kid: jwk.common.key_id.clone(),
        algorithms,
        key: DecodingKey::from_jwk(jwk).ok()?,
    })
}

/// The lifetime a `Cache-Control` header gives a fetched set (see the module docs).
pub fn cache_lifetime(cache_control: Option<&str>) -> Duration {
    let max_age = cache_control.and_then(|value| {
        value.split(',').find_map(|directive| {
            let (name, seconds) = directive.trim().split_once('=')?;
            name.trim()
                .eq_ignore_ascii_case("max-age")
                .then(|| seconds.trim().trim_matches('"').parse::<u64>().ok())
                .flatten()
        })
    });
    match max_age {
        Some(seconds) => Duration::from_secs(seconds).clamp(MIN_LIFETIME, MAX_LIFETIME),
        None => DEFAULT_LIFETIME,
    }
}

/// Keeps the set fresh: refreshes it when due, retries while the provider is down. Runs until
/// the server stops.
pub async fn run(jwks: Arc<Jwks>) {
    loop {
        tokio::time::sleep(jwks.due_in(Instant::now())).await;
        if let Err(e) = jwks.refresh().await {
            tracing::warn!(error = %e, "the identity provider's keys could not be refreshed");
            tokio::time::sleep(RETRY_AFTER_FAILURE).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_lifetime_comes_from_max_age_within_bounds() {
        assert_eq!(cache_lifetime(None), DEFAULT_LIFETIME);
        assert_eq!(cache_lifetime(Some("no-cache")), DEFAULT_LIFETIME);
        assert_eq!(
            cache_lifetime(Some("public, max-age=3600, must-revalidate")),
            Duration::from_secs(3600)
        );
        assert_eq!(cache_lifetime(Some("max-age=5")), MIN_LIFETIME);
        assert_eq!(cache_lifetime(Some("max-age=99999999")), MAX_LIFETIME);
        assert_eq!(cache_lifetime(Some("max-age=x")), DEFAULT_LIFETIME);
    }

    fn jwk(value: serde_json::Value) -> Option<Vec<Algorithm>> {
        let body = serde_json::to_vec(&serde_json::json!({ "keys": [value] })).unwrap();
        parse_key_set(&body)
            .unwrap()
            .pop()
            .map(|key| key.algorithms)
    }

    #[test]
    fn only_signing_keys_are_taken_with_the_algorithms_they_allow() {
        let rsa: serde_json::Value =
            serde_json::from_str(include_str!("../../../../tests/fixtures/rs256.jwk.json"))
                .unwrap();
        assert_eq!(jwk(rsa.clone()).unwrap().len(), 6);
        let mut named = rsa.clone();
        named["alg"] = "PS256".into();
        assert_eq!(jwk(named).unwrap(), [Algorithm::PS256]);
        let mut wrong = rsa.clone();
        wrong["alg"] = "ES256".into();
        assert_eq!(jwk(wrong), None);
        let mut encryption = rsa;
        encryption["use"] = "enc".into();
        assert_eq!(jwk(encryption), None);
        let ec: serde_json::Value =
            serde_json::from_str(include_str!("../../../../tests/fixtures/es256.jwk.json"))
                .unwrap();
        assert_eq!(jwk(ec).unwrap(), [Algorithm::ES256]);
        // a shared secret from a URL would let anyone who can read the set sign tokens
        assert_eq!(
            jwk(serde_json::json!({"kty": "oct", "k": "c2VjcmV0", "kid": "h"})),
            None
        );
        assert_eq!(jwk(serde_json::json!({"kty": "unknown"})), None);
        assert!(parse_key_set(b"{\"nokeys\": 1}").is_err());
    }
}
