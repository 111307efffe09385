//! process_models, process_model_files, message_triggers, correlation_retrievals.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::{types::Json, PgConnection};
use workflow_types::{instance_status, ModelId};

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ModelRow {
    pub identifier: ModelId,
    pub display_name: String,
    pub primary_file_name: Option<String>,
    pub primary_process_id: String,
    pub summary: Json<Value>,
    pub version_sha: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct FileRow {
    pub file_name: String,
    pub content: String,
    pub sha256: String,
}

pub struct NewModel<'a> {
    pub identifier: &'a ModelId,
    pub display_name: &'a str,
    pub primary_file_name: Option<&'a str>,
    pub primary_process_id: &'a str,
    pub summary: &'a Value,
    pub version_sha: &'a str,
}

pub async fn find(conn: &mut PgConnection, identifier: &ModelId) -> sqlx::Result<Option<ModelRow>> {
    sqlx::query_as(
        "SELECT identifier, display_name, primary_file_name, primary_process_id, summary, \
         version_sha, created_at, updated_at FROM process_models WHERE identifier = $1",
    )
    .bind(identifier)
    .fetch_optional(conn)
    .await
}

/// The key of a model's instances lock (see [`lock_instances_of`]), of the model identifier
/// given as `$param`.
macro_rules! model_instances_lock {
    ($param:literal) => {
        concat!("hashtextextended('model instances:' || ", $param, ", 0)")
    };
}
pub(crate) use model_instances_lock;

/// Serialises starts of a model with its deletion: a start takes this lock shared (starts do
/// not wait for each other, nor for an upload) before it reads the model, a delete takes it
/// exclusively before it counts the live instances; so the delete waits for every start that
/// has read the model to commit, and counts its instance, and a later start finds no model.
/// An advisory lock rather than a row lock on the model: nothing is written per start.
pub async fn lock_instances_of(
    conn: &mut PgConnection,
    identifier: &ModelId,
    exclusive: bool,
) -> sqlx::Result<()> {
    let sql = if exclusive {
        concat!(
            "SELECT pg_advisory_xact_lock(",
            model_instances_lock!("$1"),
            ")"
        )
    } else {
        concat!(
            "SELECT pg_advisory_xact_lock_shared(",
            model_instances_lock!("$1"),
            ")"
        )
    };
    sqlx::query(sql).bind(identifier).execute(conn).await?;
    Ok(())
}

pub async fn list(conn: &mut PgConnection, limit: i64, offset: i64) -> sqlx::Result<Vec<ModelRow>> {
    sqlx::query_as(
        "SELECT identifier, display_name, primary_file_name, primary_process_id, summary, \
         version_sha, created_at, updated_at FROM process_models \
         ORDER BY identifier LIMIT $1 OFFSET $2",
    )
    .bind(limit)
    .bind(offset)
    .fetch_all(conn)
    .await
}

pub async fn count(conn: &mut PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar("SELECT count(*) FROM process_models")
        .fetch_one(conn)
        .await
}

/// Serialises writers of one model (file uploads, startup loading) for the transaction.
pub async fn lock_identifier(conn: &mut PgConnection, identifier: &ModelId) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('model:' || $1, 0))")
        .bind(identifier)
        .execute(conn)
        .await?;
    Ok(())
}

pub async fn files(conn: &mut PgConnection, identifier: &ModelId) -> sqlx::Result<Vec<FileRow>> {
    sqlx::query_as(
        "SELECT file_name, content, sha256 FROM process_model_files \
         WHERE process_model_identifier = $1 ORDER BY file_name",
    )
    .bind(identifier)
    .fetch_all(conn)
    .await
}

pub async fn upsert(conn: &mut PgConnection, model: &NewModel<'_>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO process_models \
         (identifier, display_name, primary_file_name, primary_process_id, summary, version_sha) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (identifier) DO UPDATE SET display_name = EXCLUDED.display_name, \
         primary_file_name = EXCLUDED.primary_file_name, \
         primary_process_id = EXCLUDED.primary_process_id, summary = EXCLUDED.summary, \
         version_sha = EXCLUDED.version_sha, updated_at = EXCLUDED.updated_at",
    )
    .bind(model.identifier)
    .bind(model.display_name)
    .bind(model.primary_file_name)
    .bind(model.primary_process_id)
    .bind(Json(model.summary))
    .bind(model.version_sha)
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn upsert_file(
    conn: &mut PgConnection,
    identifier: &ModelId,
    file_name: &str,
    content: &str,
    sha256: &str,
) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO process_model_files (process_model_identifier, file_name, content, sha256) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (process_model_identifier, file_name) \
         DO UPDATE SET content = EXCLUDED.content, sha256 = EXCLUDED.sha256, \
         updated_at = EXCLUDED.updated_at",
    )
    .bind(identifier)
    .bind(file_name)
    .bind(content)
    .bind(sha256)
    .execute(conn)
    .await?;
    Ok(())
}

/// The model that already owns a start message name, if another one does.
pub async fn trigger_owner(
    conn: &mut PgConnection,
    message_name: &str,
    except_identifier: &ModelId,
) -> sqlx::Result<Option<ModelId>> {
    sqlx::query_scalar(
        "SELECT process_model_identifier FROM message_triggers \
         WHERE message_name = $1 AND process_model_identifier <> $2",
    )
    .bind(message_name)
    .bind(except_identifier)
    .fetch_optional(conn)
    .await
}

pub struct Trigger<'a> {
    pub message_name: &'a str,
    pub process_id: &'a str,
    pub start_event_id: &'a str,
}

pub struct Retrieval<'a> {
    pub message_name: &'a str,
    pub property_id: &'a str,
    pub expression: &'a str,
}

/// Replaces the model's start triggers and retrieval expressions.
pub async fn replace_routing(
    conn: &mut PgConnection,
    identifier: &ModelId,
    triggers: &[Trigger<'_>],
    retrievals: &[Retrieval<'_>],
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM message_triggers WHERE process_model_identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    sqlx::query("DELETE FROM correlation_retrievals WHERE process_model_identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    for trigger in triggers {
        sqlx::query(
            "INSERT INTO message_triggers \
             (message_name, process_model_identifier, process_id, start_event_id) \
             VALUES ($1, $2, $3, $4)",
        )
        .bind(trigger.message_name)
        .bind(identifier)
        .bind(trigger.process_id)
        .bind(trigger.start_event_id)
        .execute(&mut *conn)
        .await?;
    }
    for retrieval in retrievals {
        sqlx::query(
            "INSERT INTO correlation_retrievals \
             (message_name, property_id, process_model_identifier, expression) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
        )
        .bind(retrieval.message_name)
        .bind(retrieval.property_id)
        .bind(identifier)
        .bind(retrieval.expression)
        .execute(&mut *conn)
        .await?;
    }
    bump_catalog_version(conn).await
}

/// Moves the message catalog's version on, in the transaction that changed the catalog: every
/// replica's cached retrievals and start triggers of an older version are then refused by the
/// correlation lookup, which reads them again.
async fn bump_catalog_version(conn: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("UPDATE message_catalog_version SET version = version + 1")
        .execute(conn)
        .await?;
    Ok(())
}

#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TriggerRow {
    pub process_model_identifier: ModelId,
    pub process_id: String,
    pub start_event_id: String,
    /// The model's current version as read with the trigger: a start may write its instance
    /// at this version without reading the model again, as long as the write checks that it
    /// is still current (`workflow_write_instances`).
    pub model_version: String,
}

/// The message catalog's version (`message_catalog_version`) with the start trigger of a
/// message name, if a model has one: what a cache keeps, and checks in
/// [`crate::messages::lock_oldest_waiting_receive`].
pub async fn versioned_trigger_for(
    conn: &mut PgConnection,
    message_name: &str,
) -> sqlx::Result<(i64, Option<TriggerRow>)> {
    let (version, model, process_id, start_event_id, model_version): (
        i64,
        Option<ModelId>,
        Option<String>,
        Option<String>,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT v.version, t.process_model_identifier, t.process_id, t.start_event_id, \
             m.version_sha \
         FROM message_catalog_version v \
         LEFT JOIN message_triggers t ON t.message_name = $1 \
         LEFT JOIN process_models m ON m.identifier = t.process_model_identifier LIMIT 1",
    )
    .bind(message_name)
    .fetch_one(conn)
    .await?;
    let trigger = match (model, process_id, start_event_id, model_version) {
        (
            Some(process_model_identifier),
            Some(process_id),
            Some(start_event_id),
            Some(model_version),
        ) => Some(TriggerRow {
            process_model_identifier,
            process_id,
            start_event_id,
            model_version,
        }),
        _ => None,
    };
    Ok((version, trigger))
}

/// The message catalog's version with (property id, expression) for every model that knows
/// this message name: what a cache keeps (see [`versioned_trigger_for`]).
pub async fn versioned_retrievals_for(
    conn: &mut PgConnection,
    message_name: &str,
) -> sqlx::Result<(i64, Vec<(String, String)>)> {
    let rows: Vec<(i64, Option<String>, Option<String>)> = sqlx::query_as(
        "SELECT v.version, r.property_id, r.expression FROM message_catalog_version v \
         LEFT JOIN correlation_retrievals r ON r.message_name = $1 \
         ORDER BY r.property_id, r.process_model_identifier",
    )
    .bind(message_name)
    .fetch_all(conn)
    .await?;
    let version = rows.first().map_or(0, |row| row.0);
    let retrievals = rows
        .into_iter()
        .filter_map(|(_, property, expression)| Some((property?, expression?)))
        .collect();
    Ok((version, retrievals))
}

/// One immutable version of a model: what an instance that started on it steps against.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionRow {
    pub version_sha: String,
    pub primary_process_id: String,
    /// `[{"name", "content"}]`
    pub files: Json<Vec<VersionFile>>,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct VersionFile {
    pub name: String,
    pub content: String,
}

impl VersionRow {
    /// (file name, content) pairs, as the model builder takes them.
    pub fn files(&self) -> Vec<(String, String)> {
        self.files
            .0
            .iter()
            .map(|f| (f.name.clone(), f.content.clone()))
            .collect()
    }
}

/// Records a version (idempotent: the same files make the same version).
pub async fn insert_version(
    conn: &mut PgConnection,
    identifier: &ModelId,
    version_sha: &str,
    primary_process_id: &str,
    files: &[(String, String)],
) -> sqlx::Result<()> {
    let files: Vec<VersionFile> = files
        .iter()
        .map(|(name, content)| VersionFile {
            name: name.clone(),
            content: content.clone(),
        })
        .collect();
    sqlx::query(
        "INSERT INTO process_model_versions \
         (process_model_identifier, version_sha, primary_process_id, files) \
         VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING",
    )
    .bind(identifier)
    .bind(version_sha)
    .bind(primary_process_id)
    .bind(Json(files))
    .execute(conn)
    .await?;
    Ok(())
}

pub async fn version(
    conn: &mut PgConnection,
    identifier: &ModelId,
    version_sha: &str,
) -> sqlx::Result<Option<VersionRow>> {
    sqlx::query_as(
        "SELECT version_sha, primary_process_id, files, created_at FROM process_model_versions \
         WHERE process_model_identifier = $1 AND version_sha = $2",
    )
    .bind(identifier)
    .bind(version_sha)
    .fetch_optional(conn)
    .await
}

/// A version still used by live instances, and how many use it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct VersionInUse {
    pub version_sha: String,
    pub live_instances: i64,
    pub created_at: Option<DateTime<Utc>>,
}

/// The versions live instances of a model run on: every instance not complete or terminated
/// (one in error may be retried, on its version).
pub async fn versions_in_use(
    conn: &mut PgConnection,
    identifier: &ModelId,
) -> sqlx::Result<Vec<VersionInUse>> {
    sqlx::query_as(
        concat!("SELECT pi.model_version AS version_sha, count(*) AS live_instances, \
             min(v.created_at) AS created_at \
         FROM process_instances pi \
         LEFT JOIN process_model_versions v ON v.process_model_identifier = pi.process_model_identifier \
             AND v.version_sha = pi.model_version \
         WHERE pi.process_model_identifier = $1 \
           AND pi.status NOT IN ('", instance_status!(Complete), "', '", instance_status!(Terminated), "') \
         GROUP BY pi.model_version ORDER BY min(v.created_at) NULLS FIRST"),
    )
    .bind(identifier)
    .fetch_all(conn)
    .await
}

/// The process ids among `process_ids` that another model defines, with that model.
pub async fn process_owners(
    conn: &mut PgConnection,
    process_ids: &[&str],
    except_identifier: &ModelId,
) -> sqlx::Result<Vec<(String, ModelId)>> {
    sqlx::query_as(
        "SELECT process_id, process_model_identifier FROM process_definitions \
         WHERE process_id = ANY($1) AND process_model_identifier <> $2 ORDER BY process_id",
    )
    .bind(process_ids)
    .bind(except_identifier)
    .fetch_all(conn)
    .await
}

/// The processes a model defines become `process_ids` (its current version's). A process id
/// another model took in the meantime is a unique violation.
pub async fn replace_process_definitions(
    conn: &mut PgConnection,
    identifier: &ModelId,
    process_ids: &[&str],
) -> sqlx::Result<()> {
    // two statements: within one, the unique index would still see the rows being deleted
    sqlx::query("DELETE FROM process_definitions WHERE process_model_identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO process_definitions (process_id, process_model_identifier) \
         SELECT unnest($2::text[]), $1",
    )
    .bind(identifier)
    .bind(process_ids)
    .execute(conn)
    .await
    .map(|_| ())
}

/// The model defining a process, at its current version.
pub async fn process_definer(
    conn: &mut PgConnection,
    process_id: &str,
) -> sqlx::Result<Option<(ModelId, String)>> {
    sqlx::query_as(
        "SELECT pm.identifier, pm.version_sha FROM process_definitions d \
         JOIN process_models pm ON pm.identifier = d.process_model_identifier \
         WHERE d.process_id = $1",
    )
    .bind(process_id)
    .fetch_optional(conn)
    .await
}

/// The decisions a model defines become `decision_ids` (its current version's).
pub async fn replace_decision_definitions(
    conn: &mut PgConnection,
    identifier: &ModelId,
    decision_ids: &[&str],
) -> sqlx::Result<()> {
    sqlx::query("DELETE FROM decision_definitions WHERE process_model_identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "INSERT INTO decision_definitions (decision_id, process_model_identifier) \
         SELECT unnest($2::text[]), $1",
    )
    .bind(identifier)
    .bind(decision_ids)
    .execute(conn)
    .await
    .map(|_| ())
}

/// The models defining a decision, at their current versions, by identifier.
pub async fn decision_definers(
    conn: &mut PgConnection,
    decision_id: &str,
) -> sqlx::Result<Vec<(ModelId, String)>> {
    sqlx::query_as(
        "SELECT pm.identifier, pm.version_sha FROM decision_definitions d \
         JOIN process_models pm ON pm.identifier = d.process_model_identifier \
         WHERE d.decision_id = $1 ORDER BY pm.identifier",
    )
    .bind(decision_id)
    .fetch_all(conn)
    .await
}

/// Models whose processes are not indexed yet (stored before `process_definitions` existed).
pub async fn without_process_definitions(
    conn: &mut PgConnection,
) -> sqlx::Result<Vec<(ModelId, String)>> {
    sqlx::query_as(
        "SELECT pm.identifier, pm.version_sha FROM process_models pm \
         WHERE NOT EXISTS (SELECT 1 FROM process_definitions d \
                           WHERE d.process_model_identifier = pm.identifier) \
         ORDER BY pm.identifier",
    )
    .fetch_all(conn)
    .await
}

/// How many instances of a model are not complete or terminated (an instance in error may be
/// retried, a suspended one resumed: both still need the model).
pub async fn count_live_instances(
    conn: &mut PgConnection,
    identifier: &ModelId,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(concat!(
        "SELECT count(*) FROM process_instances \
         WHERE process_model_identifier = $1 AND status NOT IN ('",
        instance_status!(Complete),
        "', '",
        instance_status!(Terminated),
        "')"
    ))
    .bind(identifier)
    .fetch_one(conn)
    .await
}

/// Deletes a model with its files, versions, triggers and definitions (their rows cascade);
/// whether it existed.
pub async fn delete(conn: &mut PgConnection, identifier: &ModelId) -> sqlx::Result<bool> {
    let deleted = sqlx::query("DELETE FROM process_models WHERE identifier = $1")
        .bind(identifier)
        .execute(&mut *conn)
        .await?;
    if deleted.rows_affected() == 0 {
        return Ok(false);
    }
    // its start triggers and retrievals went with it
    bump_catalog_version(conn).await?;
    Ok(true)
}
