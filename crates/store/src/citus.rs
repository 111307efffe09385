//! Citus (`WORKFLOW_BACKEND_CITUS=true`): the checks that the database is a Citus cluster's,
//! and where each of the service's tables is placed on it (ADR 0014). Models, secrets, keys
//! and data stores are reference tables (a copy on every node); the tables of instances are
//! distributed by their `shard_key` over [`shards::BUCKETS`] shards, co-located, so that an
//! instance's rows are on one node and its statements single-shard.

use crate::shards;
use sqlx::PgPool;

/// The session lock under which replicas starting together place the tables in turn.
const PLACEMENT_LOCK: &str = "workflow-backend citus placement";

/// Tables with a copy on every node: small, read on every step, written by administration.
pub const REFERENCE_TABLES: &[&str] = &[
    "process_models",
    "process_model_versions",
    "process_model_files",
    "process_definitions",
    "decision_definitions",
    "correlation_retrievals",
    "message_triggers",
    "message_catalog_version",
    "start_timers",
    "signal_starts",
    "secrets",
    "api_keys",
    "data_stores",
    "kkv_data_store_entries",
    "typeahead_entries",
];

/// Tables of instances and their messages, distributed by `shard_key` and co-located with the
/// first, in this order (a table before those whose foreign keys reference it).
pub const INSTANCE_TABLES: &[&str] = &[
    "process_instances",
    "tasks",
    "message_instances",
    "buffered_send_keys",
    "jobs",
    "timers",
    "connector_logs",
    "signal_waits",
    "receive_routes",
];

/// The keys of the instance tables as Citus wants them, before they are distributed: the
/// distribution column in every primary key, unique constraint and foreign key (last, so that
/// a lookup by id alone still finds its index). Plain PostgreSQL keeps the narrower keys of
/// the migrations; the constraints keep their names, which the upserts name.
const KEYS_WITH_SHARD: &str = "
ALTER TABLE timers DROP CONSTRAINT timers_process_instance_id_fkey;
ALTER TABLE connector_logs DROP CONSTRAINT connector_logs_process_instance_id_fkey;
ALTER TABLE signal_waits DROP CONSTRAINT signal_waits_process_instance_id_fkey;
ALTER TABLE process_instances DROP CONSTRAINT process_instances_pkey,
    ADD CONSTRAINT process_instances_pkey PRIMARY KEY (id, shard_key);
ALTER TABLE tasks DROP CONSTRAINT tasks_pkey,
    ADD CONSTRAINT tasks_pkey PRIMARY KEY (guid, shard_key);
ALTER TABLE message_instances DROP CONSTRAINT message_instances_pkey,
    ADD CONSTRAINT message_instances_pkey PRIMARY KEY (id, shard_key),
    DROP CONSTRAINT message_instances_message_instance_uuid_key,
    ADD CONSTRAINT message_instances_message_instance_uuid_key
        UNIQUE (message_instance_uuid, shard_key);
ALTER TABLE buffered_send_keys DROP CONSTRAINT buffered_send_keys_pkey,
    ADD CONSTRAINT buffered_send_keys_pkey PRIMARY KEY (name, correlation_key, send_id, shard_key);
ALTER TABLE jobs DROP CONSTRAINT jobs_pkey, ADD CONSTRAINT jobs_pkey PRIMARY KEY (id, shard_key),
    DROP CONSTRAINT jobs_one_per_task,
    ADD CONSTRAINT jobs_one_per_task UNIQUE (task_guid, kind, shard_key);
ALTER TABLE timers DROP CONSTRAINT timers_pkey,
    ADD CONSTRAINT timers_pkey PRIMARY KEY (id, shard_key),
    DROP CONSTRAINT timers_task_guid_key,
    ADD CONSTRAINT timers_task_guid_key UNIQUE (task_guid, shard_key);
ALTER TABLE connector_logs DROP CONSTRAINT connector_logs_pkey,
    ADD CONSTRAINT connector_logs_pkey PRIMARY KEY (id, shard_key);
ALTER TABLE signal_waits DROP CONSTRAINT signal_waits_pkey,
    ADD CONSTRAINT signal_waits_pkey PRIMARY KEY (task_guid, shard_key);
ALTER TABLE timers ADD CONSTRAINT timers_process_instance_id_fkey
    FOREIGN KEY (process_instance_id, shard_key) REFERENCES process_instances (id, shard_key)
    ON DELETE CASCADE;
ALTER TABLE connector_logs ADD CONSTRAINT connector_logs_process_instance_id_fkey
    FOREIGN KEY (process_instance_id, shard_key) REFERENCES process_instances (id, shard_key)
    ON DELETE CASCADE;
ALTER TABLE signal_waits ADD CONSTRAINT signal_waits_process_instance_id_fkey
    FOREIGN KEY (process_instance_id, shard_key) REFERENCES process_instances (id, shard_key)
    ON DELETE CASCADE;
";

/// Tables that stay on the coordinator alone.
pub const COORDINATOR_TABLES: &[&str] = &["_sqlx_migrations"];

/// What a database lacks to be used as a Citus cluster's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotReady {
    /// The `citus` extension is not created in this database.
    NoExtension,
    /// No worker node is active in the coordinator's metadata.
    NoWorkers,
}

/// Whether the database is a Citus coordinator's with at least one active worker.
pub async fn readiness(pool: &PgPool) -> sqlx::Result<Result<(), NotReady>> {
    let installed: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus')")
            .fetch_one(pool)
            .await?;
    if !installed {
        return Ok(Err(NotReady::NoExtension));
    }
    let workers: i64 = sqlx::query_scalar("SELECT count(*) FROM citus_get_active_worker_nodes()")
        .fetch_one(pool)
        .await?;
    Ok(if workers == 0 {
        Err(NotReady::NoWorkers)
    } else {
        Ok(())
    })
}

/// What placing the tables did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Placement {
    /// Tables made reference tables now (empty once the database has been placed).
    pub made_reference: Vec<String>,
    /// Tables distributed now (empty once the database has been placed).
    pub distributed: Vec<String>,
    /// Instances stored before the tables were distributed: their rows carry no bucket's key,
    /// so they are left where they are and the service does not start.
    pub undistributable: i64,
    /// Buckets whose key Citus does not hash into a shard of their own: the shards of the
    /// instance tables are not the [`shards::BUCKETS`] this build expects.
    pub misplaced_buckets: Vec<i32>,
    /// Tables of the schema this service does not know where to place: a migration added a
    /// table without placing it here.
    pub unplaced: Vec<String>,
}

/// Makes each of [`REFERENCE_TABLES`] a reference table and distributes each of
/// [`INSTANCE_TABLES`] unless it is already, under a lock that replicas starting together take
/// in turn; reports the tables of the schema that are neither, instances stored before the
/// distribution, and buckets whose keys do not fall in shards of their own.
pub async fn place_tables(pool: &PgPool) -> sqlx::Result<Placement> {
    let mut conn = pool.acquire().await?;
    // a session lock: `create_reference_table` commits its own work
    sqlx::query("SELECT pg_advisory_lock(hashtextextended($1, 0))")
        .bind(PLACEMENT_LOCK)
        .execute(&mut *conn)
        .await?;
    let placed = async {
        let mut placement = Placement::default();
        for table in REFERENCE_TABLES {
            // a table whose foreign key references one made a reference table before it is
            // already in Citus' metadata, as a table local to the coordinator: it is made a
            // reference table all the same
            let reference: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_dist_partition \
                                WHERE logicalrelid = to_regclass($1) AND repmodel = 't')",
            )
            .bind(table)
            .fetch_one(&mut *conn)
            .await?;
            if !reference {
                sqlx::query("SELECT create_reference_table($1::regclass)")
                    .bind(table)
                    .execute(&mut *conn)
                    .await?;
                placement.made_reference.push(table.to_string());
            }
        }
        let distributed: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM pg_dist_partition \
                            WHERE logicalrelid = 'process_instances'::regclass)",
        )
        .fetch_one(&mut *conn)
        .await?;
        if !distributed {
            placement.undistributable =
                sqlx::query_scalar("SELECT count(*) FROM process_instances")
                    .fetch_one(&mut *conn)
                    .await?;
            if placement.undistributable > 0 {
                return Ok(placement);
            }
            // in one transaction: a start that stops half-way leaves the keys as they were
            let mut tx = sqlx::Acquire::begin(&mut *conn).await?;
            sqlx::raw_sql(KEYS_WITH_SHARD).execute(&mut *tx).await?;
            tx.commit().await?;
        }
        for (at, table) in INSTANCE_TABLES.iter().enumerate() {
            let placed: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM pg_dist_partition \
                                WHERE logicalrelid = to_regclass($1) AND partmethod = 'h')",
            )
            .bind(table)
            .fetch_one(&mut *conn)
            .await?;
            if placed {
                continue;
            }
            // the first makes the shards, the others go with it
            let distribute = if at == 0 {
                sqlx::query(
                    "SELECT create_distributed_table($1::regclass, 'shard_key', \
                         shard_count => $2, colocate_with => 'none')",
                )
                .bind(table)
                .bind(shards::BUCKETS as i32)
            } else {
                sqlx::query(
                    "SELECT create_distributed_table($1::regclass, 'shard_key', \
                         colocate_with => $2)",
                )
                .bind(table)
                .bind(INSTANCE_TABLES[0])
            };
            distribute.execute(&mut *conn).await?;
            placement.distributed.push(table.to_string());
        }
        placement.misplaced_buckets = sqlx::query_scalar(
            "SELECT k FROM unnest($1::int[]) AS k \
             WHERE (SELECT count(*) FROM unnest($1::int[]) AS other \
                    WHERE get_shard_id_for_distribution_column('process_instances', other) \
                        = get_shard_id_for_distribution_column('process_instances', k)) > 1",
        )
        .bind(shards::REPRESENTATIVES.to_vec())
        .fetch_all(&mut *conn)
        .await?;
        placement.unplaced = sqlx::query_scalar(
            "SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
             WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') \
               AND NOT relation_is_a_known_shard(c.oid) AND NOT c.relname::text = ANY ($1) \
             ORDER BY 1",
        )
        .bind(
            REFERENCE_TABLES
                .iter()
                .chain(INSTANCE_TABLES)
                .chain(COORDINATOR_TABLES)
                .copied()
                .collect::<Vec<_>>(),
        )
        .fetch_all(&mut *conn)
        .await?;
        Ok::<_, sqlx::Error>(placement)
    }
    .await;
    let unlocked = sqlx::query("SELECT pg_advisory_unlock(hashtextextended($1, 0))")
        .bind(PLACEMENT_LOCK)
        .execute(&mut *conn)
        .await;
    let placement = placed?;
    unlocked?;
    Ok(placement)
}

/// Distributed transactions prepared on a node over a second ago and neither committed nor
/// rolled back there: what a node that failed during a two-phase commit leaves behind until the
/// coordinator's recovery (`citus.recover_2pc_interval`) finishes them. Until then the rows
/// they wrote on that node are not seen, though their commit was acknowledged: a message that
/// finds no waiting receive may be early for one of those rows.
pub async fn in_doubt_transactions(conn: &mut sqlx::PgConnection) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM pg_prepared_xacts \
                 WHERE prepared < now() - interval '1 second') \
              + coalesce((SELECT sum(result::bigint) FROM run_command_on_workers( \
                   $$SELECT count(*) FROM pg_prepared_xacts \
                     WHERE prepared < now() - interval '1 second'$$) WHERE success), 0)::bigint",
    )
    .fetch_one(conn)
    .await
}
