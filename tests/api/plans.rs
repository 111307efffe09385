//! Query plans of the hot path. A prepared statement's generic plan is made once per pooled
//! connection and kept; made on a new database, before Postgres has statistics, a bad shape
//! stays for the connection's life. These check the shape on exactly that database.

use crate::helpers::spawn_app;
use serde_json::Value;
use sqlx::AssertSqlSafe;
use workflow_backend::store::messages::LOCK_OLDEST_WAITING_RECEIVE;

/// Every (node type, relation, index) of a plan in `EXPLAIN (FORMAT JSON)`.
fn plan_nodes(node: &Value, found: &mut Vec<(String, String, String)>) {
    let text = |key: &str| node[key].as_str().unwrap_or_default().to_string();
    found.push((text("Node Type"), text("Relation Name"), text("Index Name")));
    for child in node["Plans"].as_array().into_iter().flatten() {
        plan_nodes(child, found);
    }
}

#[tokio::test]
async fn the_correlation_lookup_probes_the_instance_by_key_in_its_generic_plan() {
    let app = spawn_app().await;
    let mut conn = app.pool.acquire().await.unwrap();
    // the statement is this crate's constant
    sqlx::query(AssertSqlSafe(format!(
        "PREPARE lookup(text, text[], int8[]) AS {LOCK_OLDEST_WAITING_RECEIVE}"
    )))
    .execute(&mut *conn)
    .await
    .unwrap();
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .unwrap();
    let (plan,): (Value,) = sqlx::query_as(
        "EXPLAIN (FORMAT JSON) EXECUTE lookup('order paid', ARRAY['{}'], ARRAY[]::int8[])",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap();
    let mut nodes = Vec::new();
    plan_nodes(&plan[0]["Plan"], &mut nodes);

    let on = |relation: &str| {
        nodes
            .iter()
            .filter(|(_, r, _)| r == relation)
            .map(|(t, _, i)| format!("{t} {i}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        on("process_instances"),
        ["Index Scan process_instances_pkey"],
        "{plan:#}"
    );
    assert_eq!(
        on("message_instances"),
        ["Index Scan message_instances_ready_receive"],
        "{plan:#}"
    );
    assert!(
        !nodes.iter().any(|(t, _, _)| t.starts_with("Hash")),
        "{plan:#}"
    );
}
