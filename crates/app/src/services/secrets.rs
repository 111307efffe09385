//! Secrets: the values scripts read with `get_secret(name)`, managed by the admin API and the
//! `secret` command. Nothing here returns a value except [`all_values`], which is for the script
//! runtime; whatever holds a value shows `<redacted>` in its `Debug` output.

use super::{input, Error, Page, Result};
use crate::services::ErrorCode;
use crate::store;
use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};
use std::collections::BTreeMap;

/// The longest secret name (bytes).
pub const MAX_NAME_BYTES: usize = input::MAX_IDENTIFIER_BYTES;
/// The longest secret value (bytes of UTF-8).
pub const MAX_VALUE_BYTES: usize = 64 * 1024;

/// A secret as listings show it: never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secret {
    pub name: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<store::secrets::SecretRow> for Secret {
    fn from(row: store::secrets::SecretRow) -> Secret {
        Secret {
            name: row.name,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A secret name (see [`input::check_identifier`]); otherwise 400 `invalid_secret_name`.
pub fn check_name(name: &str) -> Result<()> {
    input::check_identifier(name, "a secret name", ErrorCode::InvalidSecretName)
}

/// A value: not empty, at most [`MAX_VALUE_BYTES`], no NUL character (Postgres `text` cannot
/// hold it); otherwise 400 `invalid_secret_value`. The refusal never quotes the value.
pub fn check_value(value: &str) -> Result<()> {
    let problem = if value.is_empty() {
        "the value is empty".to_string()
    } else if value.len() > MAX_VALUE_BYTES {
        format!(
            "the value is {} bytes long; the limit is {MAX_VALUE_BYTES} bytes",
            value.len()
        )
    } else if value.contains('\0') {
        "the value contains a NUL character, which cannot be stored".to_string()
    } else {
        return Ok(());
    };
    Err(Error::refused(ErrorCode::InvalidSecretValue, problem))
}

/// Creates or replaces a secret (one transaction). `Ok((true, _))` when it was created.
pub async fn set(pool: &PgPool, name: &str, value: &str) -> Result<(bool, Secret)> {
    check_name(name)?;
    check_value(value)?;
    let mut tx = pool.begin().await?;
    store::secrets::lock_name(&mut tx, name).await?;
    let answer = match store::secrets::replace(&mut tx, name, value).await? {
        Some(row) => (false, row.into()),
        None => (
            true,
            store::secrets::insert(&mut tx, name, value).await?.into(),
        ),
    };
    tx.commit().await?;
    Ok(answer)
}

/// One page of secrets by name, and its `pagination`.
pub async fn list(pool: &PgPool, page: Page) -> Result<(Vec<Secret>, super::Pagination)> {
    let mut conn = pool.acquire().await?;
    let rows = store::secrets::list(&mut conn, page.limit(), page.offset()).await?;
    let total = store::secrets::count(&mut conn, page.count_up_to()).await?;
    let pagination = page.pagination_of(total, rows.len());
    Ok((rows.into_iter().map(Secret::from).collect(), pagination))
}

/// Every secret by name, without values (the `secret list` command).
pub async fn list_all(pool: &PgPool) -> Result<Vec<Secret>> {
    let mut conn = pool.acquire().await?;
    let rows = store::secrets::list(&mut conn, i64::MAX, 0).await?;
    Ok(rows.into_iter().map(Secret::from).collect())
}

/// Deletes a secret: 404 `secret_not_found` when there is none of this name.
pub async fn delete(pool: &PgPool, name: &str) -> Result<()> {
    check_name(name)?;
    let mut conn = pool.acquire().await?;
    if store::secrets::delete(&mut conn, name).await? {
        Ok(())
    } else {
        Err(secret_not_found(name))
    }
}

fn secret_not_found(name: &str) -> Error {
    Error::refused(
        ErrorCode::SecretNotFound,
        format!("secret '{name}' does not exist"),
    )
}

/// Every secret's value by name: what the script runtime answers `get_secret(name)` from.
/// Takes a connection, so it can read inside the caller's transaction (`&mut tx`) or on its
/// own (`&mut *pool.acquire().await?`).
pub async fn all_values(conn: &mut PgConnection) -> Result<SecretValues> {
    let rows = store::secrets::all_values(conn).await?;
    Ok(SecretValues(
        rows.into_iter().map(|row| (row.name, row.value)).collect(),
    ))
}

/// Secret values by name. `Debug` shows the names only.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct SecretValues(BTreeMap<String, String>);

impl SecretValues {
    /// The value of one secret.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// The map itself (for handing to the script runtime; do not log it).
    pub fn into_map(self) -> BTreeMap<String, String> {
        self.0
    }
}

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map()
            .entries(self.0.keys().map(|name| (name, "<redacted>")))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(result: Result<()>) -> &'static str {
        match result {
            Err(Error::Client { code, .. }) => code.as_str(),
            other => panic!("not a client error: {other:?}"),
        }
    }

    #[test]
    fn names_follow_the_pattern() {
        let longest = format!("a{}", "b".repeat(MAX_NAME_BYTES - 1));
        for good in ["a", "_", "API_KEY", "smtp.password", "x-1_y.z", &longest] {
            assert!(check_name(good).is_ok(), "{good}");
        }
        let too_long = format!("{longest}c");
        for bad in [
            "", "1abc", ".env", "-x", "a b", "a/b", "a:b", "a\nb", "ä", "a\0", &too_long,
        ] {
            assert_eq!(code(check_name(bad)), "invalid_secret_name", "{bad:?}");
        }
    }

    #[test]
    fn values_are_bounded_text_and_never_quoted() {
        assert!(check_value("s3cr3t").is_ok());
        assert!(check_value("line 1\nline 2\r\n\ttabbed ✓").is_ok());
        assert!(check_value(&"x".repeat(MAX_VALUE_BYTES)).is_ok());
        for bad in [
            String::new(),
            "x".repeat(MAX_VALUE_BYTES + 1),
            "hunter2\0".to_string(),
        ] {
            let err = check_value(&bad).unwrap_err();
            assert!(matches!(
                &err,
                Error::Client {
                    code: ErrorCode::InvalidSecretValue,
                    ..
                }
            ));
            if !bad.is_empty() {
                assert!(!err.to_string().contains(&bad[..7]), "{err}");
            }
        }
    }

    #[test]
    fn debug_shows_names_not_values() {
        let values = SecretValues(BTreeMap::from([("API_KEY".to_string(), "hunter2".into())]));
        let shown = format!("{values:?}");
        assert!(
            shown.contains("API_KEY") && !shown.contains("hunter2"),
            "{shown}"
        );
        assert_eq!(values.get("API_KEY"), Some("hunter2"));
        let row = store::secrets::SecretValueRow {
            name: "API_KEY".into(),
            value: "hunter2".into(),
        };
        assert!(!format!("{row:?}").contains("hunter2"));
    }
}
