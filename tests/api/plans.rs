//! Query plans of the hot path. A prepared statement's generic plan is made once per pooled
//! connection and kept; made on a new database, before Postgres has statistics, a bad shape
//! stays for the connection's life. These check the shape on exactly that database.

use crate::helpers::spawn_app;
use serde_json::Value;
use sqlx::AssertSqlSafe;
use workflow_backend::store::instances::LOCK_ALL;
use workflow_backend::store::jobs::RECORD_ACCEPTANCE;
use workflow_backend::store::messages::{
    CLAIM_BUFFERED_SEND_BY_KEY, EXPIRE_DUE, LOCK_OLDEST_WAITING_RECEIVE,
    LOCK_OLDEST_WAITING_RECEIVE_WITH_NEXT_ID,
};
use workflow_backend::store::stats::{
    sends_per_minute_sql, BUFFERED_SENDS, ELEMENT_COUNTS, ERROR_GROUPS, OTHER_VERSIONS,
    STATUS_COUNTS,
};

/// Every (node type, relation, index) of a plan in `EXPLAIN (FORMAT JSON)`.
fn plan_nodes(node: &Value, found: &mut Vec<(String, String, String)>) {
    let text = |key: &str| node[key].as_str().unwrap_or_default().to_string();
    found.push((text("Node Type"), text("Relation Name"), text("Index Name")));
    for child in node["Plans"].as_array().into_iter().flatten() {
        plan_nodes(child, found);
    }
}

/// The generic plan of `statement` (this crate's constant, prepared with `types`), executed
/// with `arguments`: its plan JSON and its nodes.
async fn generic_plan(
    pool: &sqlx::PgPool,
    types: &str,
    statement: &str,
    arguments: &str,
) -> (Value, Vec<(String, String, String)>) {
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query(AssertSqlSafe(format!(
        "PREPARE statement({types}) AS {statement}"
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    let (plan,): (Value,) = sqlx::query_as(AssertSqlSafe(format!(
        "EXPLAIN (FORMAT JSON) EXECUTE statement({arguments})"
    )))
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    sqlx::query("DEALLOCATE statement")
        .execute(&mut *conn)
        .await
        .unwrap();
    let mut nodes = Vec::new();
    plan_nodes(&plan[0]["Plan"], &mut nodes);
    (plan, nodes)
}

/// How a plan reads `relation`: "node type index" for each node reading it (not the nodes
/// writing it).
fn reads_of(nodes: &[(String, String, String)], relation: &str) -> Vec<String> {
    nodes
        .iter()
        .filter(|(t, r, _)| r == relation && t != "ModifyTable")
        .map(|(t, _, i)| format!("{t} {i}"))
        .collect()
}

#[tokio::test]
async fn the_correlation_lookup_probes_the_instance_by_key_in_its_generic_plan() {
    let app = spawn_app().await;
    // (and its form for a send that may start a model, which also draws an instance id)
    for lookup in [
        LOCK_OLDEST_WAITING_RECEIVE,
        LOCK_OLDEST_WAITING_RECEIVE_WITH_NEXT_ID,
    ] {
        let (plan, nodes) = generic_plan(
            &app.pool,
            "text, text[], int8[], int8, int4, text",
            lookup,
            "'order paid', ARRAY['{}'], ARRAY[]::int8[], 1, 0, 'shop/orders'",
        )
        .await;
        assert_eq!(
            reads_of(&nodes, "process_instances"),
            ["Index Scan process_instances_pkey"],
            "{plan:#}"
        );
        assert_eq!(
            reads_of(&nodes, "message_instances"),
            ["Index Scan message_instances_ready_receive"],
            "{plan:#}"
        );
        // the instance's accepted calls: a probe of the partial index, not a scan of the outbox
        assert!(
            !reads_of(&nodes, "jobs")
                .iter()
                .any(|r| r.starts_with("Seq Scan"))
                && nodes.iter().any(|(_, _, index)| index == "jobs_accepted"),
            "{plan:#}"
        );
        assert!(
            !nodes.iter().any(|(t, _, _)| t.starts_with("Hash")),
            "{plan:#}"
        );
    }
}

/// Fills the buffer with `sends` buffered sends of `order paid` (each keyed by its `order_id`,
/// due to expire in five minutes) and analyses the tables: the plans below are then the ones a
/// server holding a full buffer makes.
async fn fill_buffer(pool: &sqlx::PgPool, sends: i32) {
    sqlx::query(
        "WITH sends AS ( \
             INSERT INTO message_instances (name, message_type, status, payload, \
                 correlation_keys, correlation_key, expires_at) \
             SELECT 'order paid', 'send', 'ready', jsonb_build_object('order_id', i::text), \
                 jsonb_build_object('order_id', i::text), \
                 jsonb_build_object('order_id', i::text)::text, now() + interval '5 minutes' \
             FROM generate_series(1, $1) AS i \
             RETURNING id, correlation_key) \
         INSERT INTO buffered_send_keys (name, correlation_key, send_id) \
         SELECT 'order paid', correlation_key, id FROM sends",
    )
    .bind(sends)
    .execute(pool)
    .await
    .unwrap();
    sqlx::query("ANALYZE message_instances, buffered_send_keys")
        .execute(pool)
        .await
        .unwrap();
}

/// The buffered-send claim's generic plan, which must take the sends by primary key only.
async fn buffered_send_claim_plan(pool: &sqlx::PgPool) -> (Value, Vec<(String, String, String)>) {
    let (plan, nodes) = generic_plan(
        pool,
        "text, text, int8, int8",
        CLAIM_BUFFERED_SEND_BY_KEY,
        "'order paid', '{\"order_id\":\"1\"}', 1, 1",
    )
    .await;
    let reads = reads_of(&nodes, "message_instances");
    assert!(!reads.is_empty(), "{plan:#}");
    assert!(
        reads.iter().all(|r| r.ends_with(" message_instances_pkey")),
        "{reads:?}\n{plan:#}"
    );
    (plan, nodes)
}

/// Issue 8, defect 11: a new receive's lookup of a matching buffered send ran as a generic plan
/// scanning every buffered send of the name (`message_instances_ready_send`) and filtering on
/// `correlation_keys @>` row by row; start fell from ~1,100/s to 46/s with 100,000 buffered.
/// It must probe the key table and take the sends by primary key.
#[tokio::test]
async fn the_buffered_send_claim_probes_its_key_whatever_the_buffer_holds() {
    let app = spawn_app().await;
    fill_buffer(&app.pool, 20_000).await;
    let (plan, nodes) = buffered_send_claim_plan(&app.pool).await;
    // the key probe, then the claimed send's keys dropped by their send
    assert_eq!(
        reads_of(&nodes, "buffered_send_keys"),
        [
            "Index Only Scan buffered_send_keys_pkey",
            "Index Scan buffered_send_keys_send"
        ],
        "{plan:#}"
    );
}

/// Issue 8, defect 12: the expiry sweep compared with the volatile `clock_timestamp()`, which is
/// no index condition, so every sweep read the whole expiry index. With `now` a parameter, the
/// sweep is a bounded range scan of that index.
#[tokio::test]
async fn the_expiry_sweep_is_a_bounded_range_scan_of_the_expiry_index() {
    let app = spawn_app().await;
    fill_buffer(&app.pool, 20_000).await;
    let (plan, nodes) = generic_plan(
        &app.pool,
        "timestamptz, int8, int4",
        EXPIRE_DUE,
        "now(), 1000, 0",
    )
    .await;
    let reads = reads_of(&nodes, "message_instances");
    assert!(
        reads.contains(&"Index Scan message_instances_expiry".to_string()),
        "{reads:?}\n{plan:#}"
    );
    assert!(
        !reads.iter().any(|r| r.starts_with("Seq Scan")),
        "{reads:?}\n{plan:#}"
    );
    assert!(
        !reads_of(&nodes, "buffered_send_keys")
            .iter()
            .any(|r| r.starts_with("Seq Scan")),
        "{plan:#}"
    );
    let text = plan.to_string();
    assert!(text.contains("\"Node Type\":\"Limit\""), "{plan:#}");
    assert!(
        text.contains("(expires_at <= $1)"),
        "the deadline is an index condition: {plan:#}"
    );
}

/// Issue 35: on a new database nothing has statistics yet (and with autovacuum off, nothing
/// ever will), so the generic plan each pooled connection keeps is made for empty tables. The
/// claim chose the sends by `id = ANY(array)` and that plan scanned every message on every
/// start of a waiting instance; it must probe by primary key whatever the statistics say.
#[tokio::test]
async fn the_buffered_send_claim_probes_by_key_on_a_database_without_statistics() {
    let app = spawn_app().await;
    let (plan, nodes) = buffered_send_claim_plan(&app.pool).await;
    assert!(
        !reads_of(&nodes, "buffered_send_keys")
            .iter()
            .any(|r| r.starts_with("Seq Scan")),
        "{plan:#}"
    );
}

/// Issue 35: a proxy's 202, recorded on its job and its task. Its generic plan, made on a new
/// database, joined the task to the updated job by a sequential scan of every task: a service
/// whose plans were made while it was empty read its whole history of tasks for each 202.
#[tokio::test]
async fn the_acceptance_of_a_202_probes_its_job_and_task_on_a_database_without_statistics() {
    let app = spawn_app().await;
    let (plan, nodes) = generic_plan(
        &app.pool,
        "int8, int8, uuid, text[], int4",
        RECORD_ACCEPTANCE,
        "1, 1, gen_random_uuid(), ARRAY['a line'], 0",
    )
    .await;
    for relation in ["tasks", "jobs", "process_instances"] {
        let reads = reads_of(&nodes, relation);
        assert!(
            !reads.is_empty() && reads.iter().all(|r| r.starts_with("Index")),
            "{relation}: {reads:?} {plan:#}"
        );
    }
}

/// Issue 35: a batch of callbacks locks its instances in one statement; on a new database each
/// is still one probe of the primary key (and its accepted calls one of the jobs' index), never
/// a scan of every instance.
#[tokio::test]
async fn the_lock_of_a_batch_of_instances_probes_each_on_a_database_without_statistics() {
    let app = spawn_app().await;
    let (plan, nodes) = generic_plan(
        &app.pool,
        "int8[], int4[]",
        LOCK_ALL,
        "ARRAY[1, 2, 3]::int8[], ARRAY[0, 0, 0]::int4[]",
    )
    .await;
    for relation in ["process_instances", "jobs"] {
        let reads = reads_of(&nodes, relation);
        assert!(
            !reads.is_empty() && reads.iter().all(|r| !r.starts_with("Seq Scan")),
            "{relation}: {reads:?} {plan:#}"
        );
    }
}

/// 100,000 instances of five models (1% waiting, 0.1% in error, the rest complete: the
/// history) and 100,000 messages, as a busy service holds them.
async fn fill_history(pool: &sqlx::PgPool) {
    sqlx::query(
        "INSERT INTO process_instances (process_model_identifier, process_id, status, \
             model_version, data, correlations, error, live_tasks) \
         SELECT 'shop/m' || (i % 5), 'p', \
             CASE WHEN i % 100 = 0 THEN 'waiting' WHEN i % 1000 = 1 THEN 'error' \
                  ELSE 'complete' END, 'v1', jsonb_build_object('n', i), \
             jsonb_build_object('order_id', 'O-' || i), \
             CASE WHEN i % 1000 = 1 THEN '{\"element_id\": \"pay\", \"message\": \"boom\"}'::jsonb END, \
             CASE WHEN i % 100 = 0 THEN '[{\"element_id\": \"paid\", \"state\": \"WAITING\"}]'::jsonb \
                  ELSE '[]'::jsonb END \
         FROM generate_series(1, 100000) AS i",
    )
    .execute(pool)
    .await
    .unwrap();
    sqlx::query(
        "INSERT INTO message_instances (name, message_type, status, payload, created_at) \
         SELECT 'order placed', CASE WHEN i % 2 = 0 THEN 'send' ELSE 'receive' END, 'completed', \
             jsonb_build_object('n', i), now() - make_interval(secs => 100000 - i) \
         FROM generate_series(1, 100000) AS i",
    )
    .execute(pool)
    .await
    .unwrap();
}

/// Issue 37: the overview's and the element counts' statements never read the history whole:
/// with 100,000 instances and messages, on a database without statistics and after ANALYZE,
/// no generic plan of theirs scans `process_instances` or `message_instances` sequentially.
#[tokio::test]
async fn the_overview_reads_no_history_sequentially() {
    let app = spawn_app().await;
    fill_history(&app.pool).await;
    let statements = [
        (
            "status counts",
            "text[], text[], int8",
            STATUS_COUNTS,
            "ARRAY['shop/m1', 'shop/m2'], ARRAY['complete', 'waiting', 'error'], 10000",
        ),
        (
            "error groups",
            "text[], int8, int8",
            ERROR_GROUPS,
            "ARRAY['shop/m1', 'shop/m2'], 10000, 50",
        ),
        ("buffered sends", "int8", BUFFERED_SENDS, "100000"),
        (
            "sends per minute",
            "timestamptz, int8",
            sends_per_minute_sql(),
            "now() - interval '1 hour', 50000",
        ),
        (
            "element counts",
            "text, text, int8",
            ELEMENT_COUNTS,
            "'shop/m1', 'v1', 100000",
        ),
        (
            "other versions",
            "text, text, int8",
            OTHER_VERSIONS,
            "'shop/m1', 'v1', 100000",
        ),
    ];
    for analysed in [false, true] {
        if analysed {
            sqlx::query("ANALYZE process_instances, message_instances")
                .execute(&app.pool)
                .await
                .unwrap();
        }
        for (what, types, statement, arguments) in statements {
            let (plan, nodes) = generic_plan(&app.pool, types, statement, arguments).await;
            if std::env::var("SHOW_PLANS").is_ok() {
                eprintln!(
                    "{what} (analysed: {analysed}): {:?}",
                    reads_of(&nodes, "process_instances")
                );
                eprintln!("  messages: {:?}", reads_of(&nodes, "message_instances"));
            }
            for table in ["process_instances", "message_instances"] {
                let reads = reads_of(&nodes, table);
                assert!(
                    !reads.iter().any(|r| r.starts_with("Seq Scan")),
                    "{what} (analysed: {analysed}) scans {table}: {reads:?}\n{plan:#}"
                );
            }
        }
    }
}

/// A connection whose statements are planned once, generically, as a pooled connection's
/// prepared statements and PL/pgSQL functions' are once Postgres stops replanning them.
async fn planning_generically(pool: &sqlx::PgPool) -> sqlx::pool::PoolConnection<sqlx::Postgres> {
    let mut conn = pool.acquire().await.unwrap();
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    conn
}

/// Issue 35: the write-back on plain PostgreSQL (`workflow_write_instances_together`) writes
/// each kind of row in one statement, joined to the rows given; its plans, made once per
/// connection (here while the tables are empty, as on a new database), still probe by key once
/// the tables are full: none of its statements scans a table.
#[tokio::test]
async fn the_write_back_probes_by_key_with_plans_made_on_empty_tables() {
    let app = spawn_app().await;
    let mut conn = planning_generically(&app.pool).await;
    let written = serde_json::json!([{
        "id": 1, "shard_key": 0, "status": "complete", "data": {"n": 1}, "correlations": {},
        "internal": {}, "error": null, "live_tasks": [], "tasks": []
    }]);
    let sends = serde_json::json!([{
        "shard_key": 0, "name": "order placed", "message_type": "send", "status": "completed",
        "payload": {}, "correlation_keys": {}, "correlation_key": "{}",
        "process_instance_id": 1, "task_guid": null, "receive_id": 2, "receive_shard_key": 0,
        "created_by": null
    }]);
    let write_back = || {
        sqlx::query("SELECT count(*) FROM workflow_write_instances_together($1, $2, $3, $4, $5)")
            .bind(sqlx::types::Json(written.clone()))
            .bind(vec![uuid::Uuid::nil()])
            .bind(vec![0i32])
            .bind(sqlx::types::Json(sends.clone()))
            .bind(sqlx::types::Json(serde_json::json!([])))
    };
    // planned now, on empty tables
    write_back().execute(&mut *conn).await.unwrap();
    fill_history(&app.pool).await;

    sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
    write_back().execute(&mut *conn).await.unwrap();
    let scans: Vec<(String, i64)> = sqlx::query_as(
        "SELECT relname::text, seq_scan FROM pg_stat_xact_user_tables \
         WHERE relname IN ('process_instances', 'message_instances', 'jobs', 'tasks') \
         ORDER BY relname",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    sqlx::query("ROLLBACK").execute(&mut *conn).await.unwrap();
    assert!(scans.iter().all(|(_, scans)| *scans == 0), "{scans:?}");
    assert_eq!(scans.len(), 4, "{scans:?}");
}

/// Issue 35: every step writes task rows, and every connector call a job row. A trigger on
/// either table runs once for each row written, in the step's transaction: the foreign keys'
/// checks against the instance (a statement and a lock of the instance's row each) were up to
/// a tenth of Postgres's time per message. The write-back writes an instance's row before its tasks
/// and jobs, or holds the instance's lock while it writes them.
#[tokio::test]
async fn the_rows_every_step_writes_fire_no_trigger() {
    let app = spawn_app().await;
    let triggers: Vec<String> = sqlx::query_scalar(
        "SELECT tgrelid::regclass::text || ': ' || tgname FROM pg_trigger \
         WHERE tgrelid IN ('tasks'::regclass, 'jobs'::regclass) ORDER BY 1",
    )
    .fetch_all(&app.pool)
    .await
    .unwrap();
    assert!(triggers.is_empty(), "{triggers:?}");
}

/// `workflow_wait_for_messages(receives)`: the receives that may have a buffered send.
async fn wait_for_messages(conn: &mut sqlx::PgConnection, receives: &Value) -> Vec<(i64, i32)> {
    sqlx::query_as("SELECT receive_id, receive_n FROM workflow_wait_for_messages($1)")
        .bind(sqlx::types::Json(receives))
        .fetch_all(conn)
        .await
        .unwrap()
}

/// Issue 35: the receives a unit of work leaves waiting are written by its write-back's
/// statement (`workflow_wait_for_messages`), which looks in the buffer for each: it gives
/// back, by their place among those given, exactly the receives that a buffered send may
/// match (by key, or any send of the name for a receive that expects nothing), with their
/// ids drawn in that order; and its plans, made while the tables were empty, probe by key once
/// they are full.
#[tokio::test]
async fn the_receives_a_write_back_leaves_waiting_look_in_the_buffer_by_key() {
    let app = spawn_app().await;
    let mut conn = planning_generically(&app.pool).await;
    let receive = |name: &str, key: &str| {
        serde_json::json!({
            "name": name, "correlation_keys": serde_json::from_str::<Value>(key).unwrap(),
            "correlation_key": key, "process_instance_id": 7,
            "task_guid": uuid::Uuid::new_v4(), "shard_key": 0
        })
    };
    let receives = serde_json::json!([
        receive("paid", r#"{"order_id":3}"#),
        receive("paid", r#"{"order_id":2}"#),
        receive("shipped", "{}"),
        receive("order placed", "{}"),
    ]);
    // planned now, on empty tables (and nothing buffered: nothing comes back)
    sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
    assert_eq!(wait_for_messages(&mut conn, &receives).await, []);
    sqlx::query("ROLLBACK").execute(&mut *conn).await.unwrap();
    fill_history(&app.pool).await;
    // buffered: a send of `paid` under the key {"order_id":2}, and a send of `shipped`
    sqlx::query(
        "WITH sent AS (INSERT INTO message_instances (name, message_type, status, payload, \
             correlation_keys, correlation_key) \
         VALUES ('paid', 'send', 'ready', '{\"order_id\": 2}', '{\"order_id\": 2}', \
                 '{\"order_id\":2}'), \
                ('shipped', 'send', 'ready', '{}', '{}', '{}') RETURNING id, name) \
         INSERT INTO buffered_send_keys (name, correlation_key, send_id) \
         SELECT name, '{\"order_id\":2}', id FROM sent WHERE name = 'paid'",
    )
    .execute(&app.pool)
    .await
    .unwrap();

    sqlx::query("BEGIN").execute(&mut *conn).await.unwrap();
    let maybe_buffered = wait_for_messages(&mut conn, &receives).await;
    let written: Vec<(i64, String, String)> = sqlx::query_as(
        "SELECT id, name, correlation_key FROM message_instances \
         WHERE message_type = 'receive' AND status = 'ready' AND process_instance_id = 7 \
         ORDER BY id",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    let scans: Vec<(String, i64)> = sqlx::query_as(
        "SELECT relname::text, seq_scan FROM pg_stat_xact_user_tables \
         WHERE relname IN ('message_instances', 'buffered_send_keys') ORDER BY relname",
    )
    .fetch_all(&mut *conn)
    .await
    .unwrap();
    sqlx::query("ROLLBACK").execute(&mut *conn).await.unwrap();

    let in_order: Vec<(&str, &str)> = (written.iter())
        .map(|(_, name, key)| (name.as_str(), key.as_str()))
        .collect();
    assert_eq!(
        in_order,
        [
            ("paid", r#"{"order_id":3}"#),
            ("paid", r#"{"order_id":2}"#),
            ("shipped", "{}"),
            ("order placed", "{}"),
        ]
    );
    assert_eq!(maybe_buffered, [(written[1].0, 2), (written[2].0, 3)]);
    assert_eq!(
        scans,
        [
            ("buffered_send_keys".to_string(), 0),
            ("message_instances".to_string(), 0)
        ],
    );
}
