//! Aggregates for the console's overview and a model's diagram. Each statement reads a bounded
//! number of rows through an index (one model's instances of one status up to a cap, live
//! instances, the newest messages), never the whole history: the overview is read every few
//! seconds by every open console, and the history grows without end.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;
use workflow_types::{
    instance_status, message_status, message_type, task_state, InstanceStatus, MessageState,
    ModelId,
};

/// Instances of one model in one status, counted up to the cap.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct StatusCount {
    pub process_model_identifier: ModelId,
    pub status: InstanceStatus,
    pub count: i64,
}

/// [`status_counts`]: `$1` models, `$2` statuses, `$3` the cap.
pub const STATUS_COUNTS: &str = "SELECT m.model AS process_model_identifier, s.status, \
        (SELECT count(*) FROM (SELECT 1 FROM process_instances pi \
            WHERE pi.process_model_identifier = m.model AND pi.status = s.status \
            LIMIT $3) AS counted) AS count \
     FROM unnest($1::text[]) AS m(model), unnest($2::text[]) AS s(status)";

/// Instances of each of `models` in each status, each count stopped at `cap` (a count that
/// reached it says "at least"). One index probe per model and status on
/// `process_instances_model_status`.
pub async fn status_counts(
    conn: &mut PgConnection,
    models: &[ModelId],
    cap: i64,
) -> sqlx::Result<Vec<StatusCount>> {
    sqlx::query_as(STATUS_COUNTS)
        .bind(models)
        .bind(InstanceStatus::LABELS)
        .bind(cap)
        .fetch_all(conn)
        .await
}

/// Instances in error with the same model, element and message.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ErrorGroup {
    pub process_model_identifier: ModelId,
    pub element_id: Option<String>,
    pub message: Option<String>,
    pub count: i64,
}

/// [`error_groups`]: `$1` models, `$2` instances read, `$3` groups.
pub const ERROR_GROUPS: &str = concat!(
    "SELECT process_model_identifier, error->>'element_id' AS element_id, \
                left(error->>'message', 500) AS message, count(*) AS count \
         FROM (SELECT process_model_identifier, error FROM process_instances \
               WHERE process_model_identifier = ANY($1) AND status = '",
    instance_status!(Error),
    "' LIMIT $2) AS failed \
         GROUP BY 1, 2, 3 ORDER BY count DESC, 1, 2, 3 LIMIT $3"
);

/// The instances in error of `models` (up to `cap` of them), grouped by the element that failed
/// and the error's message; the largest groups first, at most `groups`.
pub async fn error_groups(
    conn: &mut PgConnection,
    models: &[ModelId],
    cap: i64,
    groups: i64,
) -> sqlx::Result<Vec<ErrorGroup>> {
    sqlx::query_as(ERROR_GROUPS)
        .bind(models)
        .bind(cap)
        .bind(groups)
        .fetch_all(conn)
        .await
}

/// [`buffered_sends`]: `$1` the cap.
pub const BUFFERED_SENDS: &str = concat!(
    "SELECT count(*) FROM (SELECT 1 FROM message_instances WHERE status = '",
    message_status!(Ready),
    "' AND message_type = '",
    message_type!(Send),
    "' LIMIT $1) AS buffered"
);

/// Sends waiting in the buffer for a receive, counted up to `cap` (the buffer's partial index).
pub async fn buffered_sends(conn: &mut PgConnection, cap: i64) -> sqlx::Result<i64> {
    sqlx::query_scalar(BUFFERED_SENDS)
        .bind(cap)
        .fetch_one(conn)
        .await
}

/// Sends that arrived in one minute and are in one state now.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct MinuteCount {
    pub minute: DateTime<Utc>,
    pub state: MessageState,
    pub count: i64,
}

/// The sends of a window, per minute of arrival and state, read from the newest `cap`
/// messages (sends and receives) backwards.
#[derive(Debug, Clone)]
pub struct SendsPerMinute {
    pub counts: Vec<MinuteCount>,
    /// The arrival of the oldest message read when the cap stopped the read before the
    /// window's start: the counts cover only what came after it.
    pub cut_at: Option<DateTime<Utc>>,
}

/// Sends that arrived since `since`, per minute and state label: the newest `cap` messages
/// are read backwards on the primary key, so a busy window is cut (and says where) instead of
/// read whole.
pub async fn sends_per_minute(
    conn: &mut PgConnection,
    since: DateTime<Utc>,
    cap: i64,
) -> sqlx::Result<SendsPerMinute> {
    let rows: Vec<MinuteRow> = sqlx::query_as(sqlx::AssertSqlSafe(sends_per_minute_sql()))
        .bind(since)
        .bind(cap)
        .fetch_all(conn)
        .await?;
    Ok(SendsPerMinute {
        cut_at: rows.first().and_then(|row| row.cut_at),
        counts: rows.into_iter().map(|row| row.counted).collect(),
    })
}

/// A row of [`sends_per_minute_sql`]: the count, and where the read was cut (on every row).
#[derive(sqlx::FromRow)]
struct MinuteRow {
    #[sqlx(flatten)]
    counted: MinuteCount,
    cut_at: Option<DateTime<Utc>>,
}

/// [`sends_per_minute`]: `$1` the window's start, `$2` messages read.
pub fn sends_per_minute_sql() -> &'static str {
    static SQL: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    SQL.get_or_init(|| {
        format!(
            "WITH newest AS MATERIALIZED ( \
                 SELECT created_at, message_type, status FROM message_instances \
                 ORDER BY id DESC LIMIT $2), \
             edge AS (SELECT count(*) AS read, min(created_at) AS oldest FROM newest) \
             SELECT date_trunc('minute', m.created_at) AS minute, {} AS state, \
                    count(*) AS count, \
                    CASE WHEN edge.read >= $2 AND edge.oldest > $1 THEN edge.oldest END AS cut_at \
             FROM newest m CROSS JOIN edge \
             WHERE m.message_type = '{}' AND m.created_at >= $1 \
             GROUP BY 1, 2, 4 ORDER BY 1, 2",
            crate::messages::state_sql(),
            message_type!(Send),
        )
    })
}

/// Instances of a model at one element of its diagram.
#[derive(Debug, Clone, Default, sqlx::FromRow)]
pub struct ElementCount {
    pub element_id: String,
    /// Instances with a live task (ready, waiting, started) there.
    pub waiting: i64,
    /// Instances in error whose failure happened there.
    pub error: i64,
}

/// Where the live and failed instances of a model stand.
#[derive(Debug, Clone, Default)]
pub struct ElementCounts {
    /// Per element of `version`, only elements with an instance.
    pub elements: Vec<ElementCount>,
    /// Live instances on other versions of the model.
    pub other_versions_waiting: i64,
    /// Instances in error on other versions of the model.
    pub other_versions_error: i64,
}

/// The condition of the instances that can still move on from a task (the predicate of the
/// `process_instances_live_versions` index): neither finished nor in error.
macro_rules! live_on_a_version {
    () => {
        concat!(
            "status NOT IN ('",
            instance_status!(Complete),
            "', '",
            instance_status!(Error),
            "', '",
            instance_status!(Terminated),
            "')"
        )
    };
}

/// [`element_counts`] per element: `$1` model, `$2` version, `$3` instances read.
pub const ELEMENT_COUNTS: &str = concat!(
    "WITH live AS ( \
             SELECT id, live_tasks FROM process_instances \
             WHERE process_model_identifier = $1 AND model_version = $2 \
               AND ",
    live_on_a_version!(),
    " LIMIT $3), \
         waiting AS ( \
             SELECT t.element_id, count(DISTINCT live.id) AS waiting \
             FROM live, jsonb_to_recordset(live.live_tasks) AS t(element_id text, state text) \
             WHERE t.state IN ('",
    task_state!(Ready),
    "', '",
    task_state!(Waiting),
    "', '",
    task_state!(Started),
    "') GROUP BY 1), \
         failed AS ( \
             SELECT error->>'element_id' AS element_id, count(*) AS error \
             FROM (SELECT error FROM process_instances \
                   WHERE process_model_identifier = $1 AND status = '",
    instance_status!(Error),
    "' AND model_version = $2 LIMIT $3) AS e \
             WHERE error->>'element_id' IS NOT NULL GROUP BY 1) \
         SELECT coalesce(w.element_id, f.element_id) AS element_id, \
                coalesce(w.waiting, 0) AS waiting, coalesce(f.error, 0) AS error \
         FROM waiting w FULL JOIN failed f ON f.element_id = w.element_id \
         ORDER BY 1"
);

/// [`element_counts`] on other versions: `$1` model, `$2` version, `$3` instances read.
pub const OTHER_VERSIONS: &str = concat!(
    "SELECT \
             (SELECT count(*) FROM (SELECT 1 FROM process_instances \
                 WHERE process_model_identifier = $1 AND model_version <> $2 \
                   AND ",
    live_on_a_version!(),
    " LIMIT $3) AS l), \
             (SELECT count(*) FROM (SELECT 1 FROM process_instances \
                 WHERE process_model_identifier = $1 AND status = '",
    instance_status!(Error),
    "' AND model_version <> $2 LIMIT $3) AS e)"
);

/// The instances of `model` per element of `version` (up to `cap` live ones and `cap` failed
/// ones are read, through the live-versions and model-status indexes).
pub async fn element_counts(
    conn: &mut PgConnection,
    model: &ModelId,
    version: &str,
    cap: i64,
) -> sqlx::Result<ElementCounts> {
    let elements: Vec<ElementCount> = sqlx::query_as(ELEMENT_COUNTS)
        .bind(model)
        .bind(version)
        .bind(cap)
        .fetch_all(&mut *conn)
        .await?;
    let (other_versions_waiting, other_versions_error): (i64, i64) = sqlx::query_as(OTHER_VERSIONS)
        .bind(model)
        .bind(version)
        .bind(cap)
        .fetch_one(conn)
        .await?;
    Ok(ElementCounts {
        elements,
        other_versions_waiting,
        other_versions_error,
    })
}
