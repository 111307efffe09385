//! workflow-store: the sqlx queries of workflow-backend, one module per table group. Functions take a connection so the caller
//! decides the transaction; nothing here knows HTTP.

pub mod api_keys;
pub mod citus;
pub mod connector_logs;
pub mod data_stores;
pub mod instances;
pub mod jobs;
pub mod messages;
pub mod migrations;
pub mod models;
pub mod primary;
pub mod secrets;
pub mod shards;
pub mod stats;
pub mod timers;

/// Whether Postgres vacuums and analyses the service's tables by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Autovacuum {
    /// The cluster's `autovacuum` is on, with the `track_counts` it needs.
    pub runs: bool,
    /// Tables of the service's schema where it is turned off (`autovacuum_enabled = false`).
    pub off_for: Vec<String>,
}

/// One round trip to the database: whether it answers, and its [`Autovacuum`].
pub async fn autovacuum(pool: &sqlx::PgPool) -> sqlx::Result<Autovacuum> {
    let (runs, off_for): (bool, Vec<String>) = sqlx::query_as(
        "SELECT current_setting('autovacuum') = 'on' AND current_setting('track_counts') = 'on', \
                COALESCE((SELECT array_agg(c.relname::text ORDER BY c.relname) \
                          FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                          WHERE n.nspname = current_schema() AND c.relkind = 'r' \
                            AND 'autovacuum_enabled=false' = ANY (c.reloptions)), '{}')",
    )
    .fetch_one(pool)
    .await?;
    Ok(Autovacuum { runs, off_for })
}

/// Wakes the listeners of `channel` once the transaction commits. Plain PostgreSQL notifies in
/// the statement that writes what the listeners look for; on Citus such a statement runs on the
/// worker that holds the rows, whose notifications reach only that worker's listeners, so the
/// service sends them from the coordinator (where its replicas listen), by themselves.
pub(crate) async fn notify(conn: &mut sqlx::PgConnection, channel: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, '')")
        .bind(channel)
        .execute(conn)
        .await?;
    Ok(())
}

/// Makes the (just begun) transaction read from one snapshot: reads that belong together.
pub async fn read_only_snapshot(conn: &mut sqlx::PgConnection) -> sqlx::Result<()> {
    sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        .execute(conn)
        .await?;
    Ok(())
}

/// Gives the transaction an id, so that its commit is written to the WAL and waits, like any
/// commit, for the synchronous standbys (`synchronous_commit`): once it has committed, every row
/// the transaction read is on them too. A row can be visible on the primary before they have
/// it: after the primary restarted from a crash (recovery replays commits its standby never
/// confirmed), or when a commit's wait for them was cancelled.
pub async fn commit_waits_for_standbys(conn: &mut sqlx::PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_current_xact_id()")
        .execute(conn)
        .await?;
    Ok(())
}

/// A SQLSTATE for which the whole transaction may simply be run again.
/// The SQLSTATE `workflow_catalog_is` raises when the message catalog is not at the version a
/// caller read it at.
pub const CATALOG_CHANGED: &str = "WFCAT";

/// The message catalog changed under a version the caller cached: read it afresh.
pub fn is_catalog_changed(err: &sqlx::Error) -> bool {
    matches!(err, sqlx::Error::Database(db) if db.code().as_deref() == Some(CATALOG_CHANGED))
}

pub fn is_retryable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => matches!(
            db.code().as_deref(),
            // serialization_failure, deadlock_detected, and the message catalog changed under
            // a cached version (`workflow_catalog_is`)
            Some("40001") | Some("40P01") | Some(CATALOG_CHANGED)
        ),
        _ => false,
    }
}

/// The transaction lost a lock conflict: it waited longer than its `lock_timeout`
/// (lock_not_available), deadlocked, or could not serialize. Postgres raises these before a
/// commit is recorded, in a statement or in the `COMMIT` itself (a lock taken at commit), so
/// nothing of the transaction was written.
pub fn is_lock_conflict(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::Database(db) => {
            matches!(
                db.code().as_deref(),
                Some("55P03") | Some("40P01") | Some("40001")
            )
        }
        _ => false,
    }
}

/// Citus relays a connection to a node that broke during a statement as an internal error
/// (`XX000`) carrying libpq's words, or its own when the connection was one the transaction
/// needed, or as an I/O error (`58030`) when a copy to a shard broke off: the node is down or
/// restarting, as a connection exception would say.
fn is_lost_node(code: Option<&str>, message: &str) -> bool {
    const LOST: &[&str] = &[
        "server closed the connection unexpectedly",
        "SSL SYSCALL error",
        "SSL connection has been closed unexpectedly",
        "failure on connection marked as essential",
        "connection to the remote node",
        "connection not open",
        "failed to COPY to shard",
        "failed to complete COPY on",
        "connection establishment for node",
        "could not establish any connections to the node",
        "lost connection",
        "could not connect to",
        "could not receive query results",
        "failed to commit transaction on",
        "could not commit transaction",
        "failed to execute task",
        "the database system is",
    ];
    matches!(code, Some("XX000") | Some("58030")) && LOST.iter().any(|lost| message.contains(lost))
}

/// The database cannot be reached, is shutting down or refuses connections, or every pool
/// connection stayed busy: nothing was done, and the same request may succeed shortly.
pub fn is_unavailable(err: &sqlx::Error) -> bool {
    match err {
        sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::WorkerCrashed => true,
        sqlx::Error::Database(e) => {
            e.code().is_some_and(|code| {
                // 08: connection exception; 57P01-03: admin or crash shutdown, cannot connect
                // now; 53300: too many connections; 25006: a write reached a host that has just
                // become a standby (a failover: the pool moves to the new primary)
                code.starts_with("08")
                    || matches!(&*code, "57P01" | "57P02" | "57P03" | "53300" | "25006")
            }) || is_lost_node(e.code().as_deref(), e.message())
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::is_lost_node;

    #[test]
    fn a_node_lost_under_citus_is_unavailability_not_an_internal_error() {
        assert!(is_lost_node(
            Some("XX000"),
            "SSL SYSCALL error: EOF detected"
        ));
        assert!(is_lost_node(
            Some("XX000"),
            "failure on connection marked as essential: 127.0.0.1:6601"
        ));
        assert!(!is_lost_node(
            Some("XX000"),
            "cannot push down this subquery"
        ));
        assert!(!is_lost_node(
            Some("23505"),
            "server closed the connection unexpectedly"
        ));
    }
}
