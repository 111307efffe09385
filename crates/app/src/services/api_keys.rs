//! API keys for machine clients: created by the `api-key` command or the admin API, shown once,
//! accepted as `Authorization: Bearer <key>` or in SpiffArena's `SpiffWorkflow-Api-Key` header,
//! with scopes exactly as a token's. Only a SHA-256 of a key is stored; revocation is a row
//! update, so every replica refuses the key from its next request on.

use super::{input, Error, ErrorCode, Result};
use crate::store;
use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};
use sqlx::PgPool;

/// Every key starts with this: it tells a key from a JWT in a bearer header, and secret
/// scanners can find keys pasted where they should not be.
pub const KEY_PREFIX: &str = "wbk_";
/// The longest validity a key may be given.
pub const MAX_EXPIRES_IN_DAYS: u32 = 3650;
/// The longest scope list (bytes).
pub const MAX_SCOPES_BYTES: usize = 4096;

/// A key as listings show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub name: String,
    /// The key's first characters (`wbk_` and 8 more).
    pub prefix: String,
    pub scopes: Vec<String>,
    pub created_by: Option<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub last_used_at: Option<DateTime<Utc>>,
}

impl From<store::api_keys::ApiKeyRow> for ApiKey {
    fn from(row: store::api_keys::ApiKeyRow) -> ApiKey {
        ApiKey {
            name: row.name,
            prefix: row.prefix,
            scopes: row.scopes.split_whitespace().map(str::to_string).collect(),
            created_by: row.created_by,
            created_at: row.created_at,
            expires_at: row.expires_at,
            revoked_at: row.revoked_at,
            last_used_at: row.last_used_at,
        }
    }
}

/// A new key: the token, shown this once, and the key as listed.
pub struct Created {
    pub token: String,
    pub key: ApiKey,
}

impl std::fmt::Debug for Created {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Created")
            .field("token", &"<redacted>")
            .field("key", &self.key)
            .finish()
    }
}

/// Names follow the secret names' rule (400 `invalid_api_key_name` otherwise).
pub fn check_name(name: &str) -> Result<()> {
    input::check_identifier(name, "an API key name", ErrorCode::InvalidApiKeyName)
}

/// Space-separated scopes: at least one, printable, at most [`MAX_SCOPES_BYTES`] (400
/// `invalid_scope` otherwise).
pub fn parse_scopes(scopes: &str) -> Result<Vec<String>> {
    let list: Vec<String> = scopes.split_whitespace().map(str::to_string).collect();
    let problem = if list.is_empty() {
        "give at least one scope (space-separated, e.g. \"messages:send instances:read:*\")"
    } else if scopes.len() > MAX_SCOPES_BYTES {
        "the scopes are longer than 4096 bytes"
    } else if scopes.chars().any(|c| c.is_control() && !c.is_whitespace()) {
        "the scopes contain a control character"
    } else {
        return Ok(list);
    };
    Err(Error::refused(ErrorCode::InvalidScope, problem))
}

/// 1 to [`MAX_EXPIRES_IN_DAYS`] days (400 `invalid_expiry` otherwise).
pub fn check_expiry(days: Option<u32>) -> Result<()> {
    match days {
        Some(d) if d == 0 || d > MAX_EXPIRES_IN_DAYS => Err(Error::refused(
            ErrorCode::InvalidExpiry,
            format!("expires_in_days must be between 1 and {MAX_EXPIRES_IN_DAYS}"),
        )),
        _ => Ok(()),
    }
}

/// Creates a key (409 `api_key_name_conflict` when an active key has the name).
pub async fn create(
    pool: &PgPool,
    name: &str,
    scopes: &[String],
    expires_in_days: Option<u32>,
    created_by: Option<&str>,
) -> Result<Created> {
    check_name(name)?;
    check_expiry(expires_in_days)?;
    let scopes = parse_scopes(&scopes.join(" "))?.join(" ");
    let token = new_token();
    let key_hash = hash(&token);
    let prefix: String = token.chars().take(KEY_PREFIX.len() + 8).collect();
    let mut conn = pool.acquire().await?;
    let row = store::api_keys::insert(
        &mut conn,
        &store::api_keys::NewApiKey {
            name,
            key_hash: &key_hash,
            prefix: &prefix,
            scopes: &scopes,
            created_by,
            expires_in_days,
        },
    )
    .await?
    .ok_or_else(|| {
        Error::refused(
            ErrorCode::ApiKeyNameConflict,
            format!("an active API key is named '{name}'; revoke it first or choose another name"),
        )
    })?;
    Ok(Created {
        token,
        key: row.into(),
    })
}

pub async fn list(pool: &PgPool) -> Result<Vec<ApiKey>> {
    Ok(store::api_keys::list(pool)
        .await?
        .into_iter()
        .map(ApiKey::from)
        .collect())
}

/// Revokes the active key of this name (404 `api_key_not_found` when there is none).
pub async fn revoke(pool: &PgPool, name: &str) -> Result<ApiKey> {
    check_name(name)?;
    store::api_keys::revoke(pool, name)
        .await?
        .map(ApiKey::from)
        .ok_or_else(|| {
            Error::refused(
                ErrorCode::ApiKeyNotFound,
                format!("no active API key is named '{name}'"),
            )
        })
}

/// The name and scopes of a usable key; `None` for an unknown, revoked or expired one.
pub async fn authenticate(pool: &PgPool, token: &str) -> Result<Option<(String, Vec<String>)>> {
    if !token.starts_with(KEY_PREFIX) || token.len() > 200 {
        return Ok(None);
    }
    Ok(store::api_keys::authenticate(pool, &hash(token))
        .await?
        .map(|(name, scopes)| {
            (
                name,
                scopes.split_whitespace().map(str::to_string).collect(),
            )
        }))
}

/// `wbk_` and 60 hex digits from two version-4 UUIDs: 240 bits from the OS's random source.
fn new_token() -> String {
    let random = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    // drop the version and variant digits, which are not random
    let digits: String = random
        .char_indices()
        .filter(|(i, _)| !matches!(i % 32, 12 | 16))
        .map(|(_, c)| c)
        .collect();
    format!("{KEY_PREFIX}{digits}")
}

fn hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_distinct_and_hashed() {
        let (a, b) = (new_token(), new_token());
        assert!(a.starts_with(KEY_PREFIX));
        assert_eq!(a.len(), KEY_PREFIX.len() + 60);
        assert_ne!(a, b);
        assert_eq!(hash(&a).len(), 64);
        assert_ne!(hash(&a), hash(&b));
    }

    #[test]
    fn scopes_names_and_expiry_are_checked() {
        assert_eq!(
            parse_scopes(" messages:send  instances:read:* ").unwrap(),
            ["messages:send", "instances:read:*"]
        );
        assert!(parse_scopes("  ").is_err());
        assert!(parse_scopes("a\u{0}b").is_err());
        assert!(check_name("order-service").is_ok());
        assert!(check_name("no spaces").is_err());
        assert!(check_expiry(Some(0)).is_err());
        assert!(check_expiry(Some(MAX_EXPIRES_IN_DAYS + 1)).is_err());
        assert!(check_expiry(Some(30)).is_ok());
        assert!(check_expiry(None).is_ok());
    }
}
