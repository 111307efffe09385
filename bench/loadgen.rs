//! Load generator for the messages API. Against a running server it measures messages/s and
//! latency percentiles, at 1 and 16 concurrent clients, one line per case, for the three front
//! doors: message start that leaves a waiting instance (`wait-start`, an order model waiting for
//! its payment), correlation to those waiting instances (`correlate`) and the service-task round
//! trip (`service`, below); and for message start of a one-step process (`start`) and of one
//! with a script task (`script`). With LOADGEN_CASES=doors only the three doors run; with
//! LOADGEN_CASES=service only the service-task round trip (for profiling it alone). With
//! LOADGEN_CLIENTS=16 (or 1) each case runs at that many clients only.
//!
//! With LOADGEN_PGBENCH_TPS (pgbench's 16-client rate, `bench/pgbench/run`, measured in the same
//! invocation) it ends with each door's share of it against its target, and with
//! LOADGEN_PGBENCH_LATENCY_MS (pgbench's 1-client mean latency) each 1-client latency as a
//! multiple of it.
//!
//! With BUFFERED > 0 it then buffers that many messages of one name (TTL 300 s, none of which
//! match) and measures message start of a model whose instances wait for that name (each new
//! receive looks for a matching buffered message) and correlation to those instances: the
//! figures must stay within 10% of the empty-buffer ones.
//!
//! Then the service-task round trip: a message starts an instance that reaches a service task;
//! the connector (a fake proxy this program serves on 127.0.0.1:$LOADGEN_PROXY_PORT, default
//! 7101, which the server must have as WORKFLOW_BACKEND_CONNECTOR_PROXY_URL) answers 202 and
//! calls back at once; the round trip ends when the callback's answer says the instance
//! completed. It prints the round trips per second at 16 clients and how long after the
//! message's answer the connector was called (the dispatch latency).
//!
//! With LOADGEN_DATABASE_URL (the server's database) and LOADGEN_SERVER_PID set, each line
//! also says what one message cost: WAL bytes written, CPU of every `postgres` process and CPU
//! of the server process, from `pg_current_wal_lsn()` and /proc before and after the case
//! (machine-wide for Postgres: run it on a quiet machine), and the share of the machine's time
//! the hypervisor stole during the case (`steal`: a case with much of it was disturbed).
//!
//! URL may list several servers of one database (`http://a:7100,http://b:7102`): requests go to
//! each in turn.
//!
//! With LOADGEN_CASES=interleaved, URL lists servers of separate databases (the builds to
//! compare, `bench/interleave`): one client sends each start and each correlation of the first
//! two doors to every server in turn, and each server's mean latency is printed. Both see the
//! same moments of the machine, so a difference of 1% shows, where separate runs differ by 10%.
//!
//! cargo run --release --example loadgen -- URL SECRET [MESSAGES_PER_CASE] [BUFFERED]

use reqwest::Client;
use serde_json::json;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use workflow_backend::tokens::mint_token;

/// What a measured case came to, for the closing summary.
struct Measured {
    label: String,
    clients: usize,
    rate: f64,
    mean_ms: f64,
    p99_ms: f64,
    /// The share of the machine's time the hypervisor stole during the case, in percent
    /// (`None` for a figure taken from another case's messages).
    stolen: Option<f64>,
}

/// Steal from which a case that missed a target is called disturbed: on the development
/// machine every case that missed its share by much had 8–30% stolen (docs/performance.md).
const DISTURBED_PERCENT: f64 = 5.0;

/// Every measured case of this run, in order.
static MEASURED: std::sync::Mutex<Vec<Measured>> = std::sync::Mutex::new(Vec::new());

// (each model's process id is its first message's name: process ids are unique across models,
// and a database may hold the models of several runs)
const HEADER: &str = r#"<?xml version="1.0" encoding="UTF-8"?>
<bpmn:definitions xmlns:bpmn="http://www.omg.org/spec/BPMN/20100524/MODEL" xmlns:spiffworkflow="http://spiffworkflow.org/bpmn/schema/1.0/core" id="d" targetNamespace="http://bpmn.io/schema/bpmn">"#;

fn one_step(name: &str) -> String {
    format!(
        r#"{HEADER}<bpmn:message id="m" name="{name}" />
<bpmn:process id="process_{name}" isExecutable="true">
  <bpmn:startEvent id="start"><bpmn:messageEventDefinition id="e" messageRef="m"><bpmn:extensionElements><spiffworkflow:messageVariable>payload</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
  <bpmn:sequenceFlow id="f" sourceRef="start" targetRef="done" /><bpmn:endEvent id="done" />
</bpmn:process></bpmn:definitions>"#
    )
}

/// Message start -> a script task (CPython, behind the script workers' walls) -> end.
fn with_script(name: &str) -> String {
    format!(
        r#"{HEADER}<bpmn:message id="m" name="{name}" />
<bpmn:process id="process_{name}" isExecutable="true">
  <bpmn:startEvent id="start"><bpmn:messageEventDefinition id="e" messageRef="m"><bpmn:extensionElements><spiffworkflow:messageVariable>payload</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
  <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="script" />
  <bpmn:scriptTask id="script"><bpmn:script>total = payload["n"] * 2</bpmn:script></bpmn:scriptTask>
  <bpmn:sequenceFlow id="f2" sourceRef="script" targetRef="done" /><bpmn:endEvent id="done" />
</bpmn:process></bpmn:definitions>"#
    )
}

/// Message start `{placed}`, then waits for `{paid}` correlated by `order_id`.
fn order(placed: &str, paid: &str) -> String {
    format!(
        r#"{HEADER}<bpmn:correlationProperty id="order_id" name="order_id">
  <bpmn:correlationPropertyRetrievalExpression messageRef="mp"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
  <bpmn:correlationPropertyRetrievalExpression messageRef="mq"><bpmn:formalExpression>order_id</bpmn:formalExpression></bpmn:correlationPropertyRetrievalExpression>
</bpmn:correlationProperty>
<bpmn:message id="mp" name="{placed}" /><bpmn:message id="mq" name="{paid}" />
<bpmn:process id="process_{placed}" isExecutable="true">
  <bpmn:startEvent id="start"><bpmn:messageEventDefinition id="e1" messageRef="mp"><bpmn:extensionElements><spiffworkflow:messageVariable>order</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
  <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="wait" />
  <bpmn:intermediateCatchEvent id="wait"><bpmn:messageEventDefinition id="e2" messageRef="mq"><bpmn:extensionElements><spiffworkflow:messageVariable>payment</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:intermediateCatchEvent>
  <bpmn:sequenceFlow id="f2" sourceRef="wait" targetRef="done" /><bpmn:endEvent id="done" />
</bpmn:process></bpmn:definitions>"#
    )
}

struct Target {
    client: Client,
    /// The servers (replicas of one database): requests go to each in turn.
    bases: Vec<String>,
    next: AtomicUsize,
    token: String,
}

impl Target {
    async fn upload(&self, model: &str, xml: String) {
        self.upload_to(&self.bases[0], model, xml).await
    }

    async fn upload_to(&self, base: &str, model: &str, xml: String) {
        let response = self
            .client
            .put(format!(
                "{base}/v1.0/process-models/{model}/files/model.bpmn"
            ))
            .bearer_auth(&self.token)
            .header("Content-Type", "application/xml")
            .body(xml)
            .send()
            .await
            .expect("upload");
        assert!(
            response.status().is_success(),
            "upload {model}: {}",
            response.text().await.unwrap_or_default()
        );
    }

    fn base(&self) -> &str {
        &self.bases[self.next.fetch_add(1, Ordering::Relaxed) % self.bases.len()]
    }

    async fn post(&self, path: &str, body: serde_json::Value, expected: u16) -> Duration {
        self.post_to(self.base(), path, body, expected).await
    }

    async fn post_to(
        &self,
        base: &str,
        path: &str,
        body: serde_json::Value,
        expected: u16,
    ) -> Duration {
        let started = Instant::now();
        let response = self
            .client
            .post(format!("{base}{path}"))
            .bearer_auth(&self.token)
            .json(&body)
            .send()
            .await
            .expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        assert_eq!(status, expected, "{path}: {text}");
        started.elapsed()
    }
}

/// Runs `total` requests from `clients` concurrent workers; request `i` is made by `make(i)`.
async fn run_case<F, Fut>(label: &str, clients: usize, total: usize, make: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Duration> + Send,
{
    let make = Arc::new(make);
    let next = Arc::new(AtomicUsize::new(0));
    let meter = Cost::start().await;
    let machine = MachineTicks::now();
    let started = Instant::now();
    let workers: Vec<_> = (0..clients)
        .map(|_| {
            let make = make.clone();
            let next = next.clone();
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= total {
                        return latencies;
                    }
                    latencies.push(make(i).await);
                }
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(total);
    for worker in workers {
        latencies.extend(worker.await.expect("worker"));
    }
    let elapsed = started.elapsed();
    let stolen = MachineTicks::now().stolen_since(machine);
    let cost = match meter {
        Some(before) => before.per_message(total, stolen).await,
        None => String::new(),
    };
    latencies.sort();
    let pct = |p: f64| {
        latencies[((latencies.len() as f64 * p).ceil() as usize).saturating_sub(1)].as_secs_f64()
            * 1e3
    };
    let rate = total as f64 / elapsed.as_secs_f64();
    println!(
        "{label:<12} clients={clients:<3} messages={total:<6} rate={rate:>8.1}/s  p50={:>6.2}ms  p95={:>6.2}ms  p99={:>6.2}ms  max={:>7.2}ms{cost}",
        pct(0.50),
        pct(0.95),
        pct(0.99),
        latencies.last().map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0),
    );
    let mean_ms =
        latencies.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3 / latencies.len() as f64;
    MEASURED.lock().unwrap().push(Measured {
        label: label.to_string(),
        clients,
        rate,
        mean_ms,
        p99_ms: pct(0.99),
        stolen: Some(stolen),
    });
}

/// WAL position and CPU times at one moment, to say what the messages between two samples cost.
struct Cost {
    wal_lsn: String,
    postgres_ticks: u64,
    server_ticks: u64,
}

/// The machine's CPU ticks since boot, all of them and those stolen by the hypervisor (the
/// time its virtual cores wanted to run and did not): a case with much steal was disturbed.
#[derive(Default, Clone, Copy)]
struct MachineTicks {
    all: u64,
    stolen: u64,
}

impl MachineTicks {
    /// The first line of /proc/stat: `cpu user nice system idle iowait irq softirq steal ...`
    /// (guest time is counted within user time, so it is not added again).
    fn now() -> MachineTicks {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .take(8)
            .filter_map(|field| field.parse().ok())
            .collect();
        MachineTicks {
            all: ticks.iter().sum(),
            stolen: ticks.get(7).copied().unwrap_or(0),
        }
    }

    /// The share of the machine's time stolen since `before`, in percent.
    fn stolen_since(self, before: MachineTicks) -> f64 {
        let all = self.all.saturating_sub(before.all).max(1);
        100.0 * self.stolen.saturating_sub(before.stolen) as f64 / all as f64
    }
}

impl Cost {
    /// `None` unless LOADGEN_DATABASE_URL and LOADGEN_SERVER_PID are set.
    async fn sample() -> Option<Cost> {
        let url = std::env::var("LOADGEN_DATABASE_URL").ok()?;
        let server: u32 = std::env::var("LOADGEN_SERVER_PID").ok()?.parse().ok()?;
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
            .await
            .expect("LOADGEN_DATABASE_URL connects");
        let (wal_lsn,): (String,) = sqlx::query_as("SELECT pg_current_wal_lsn()::text")
            .fetch_one(&mut conn)
            .await
            .expect("WAL position");
        Some(Cost {
            wal_lsn,
            postgres_ticks: postgres_ticks(),
            server_ticks: process_ticks(server).unwrap_or(0),
        })
    }

    /// [`Cost::sample`], with the statement counts reset first when they are wanted.
    async fn start() -> Option<Cost> {
        if let (Ok(url), true) = (std::env::var("LOADGEN_DATABASE_URL"), statements_wanted()) {
            let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
                .await
                .expect("LOADGEN_DATABASE_URL connects");
            sqlx::query("SELECT pg_stat_statements_reset()")
                .execute(&mut conn)
                .await
                .expect("LOADGEN_STATEMENTS needs pg_stat_statements in shared_preload_libraries");
        }
        Cost::sample().await
    }

    /// `  wal=… B/msg  pg_cpu=… ms/msg  server_cpu=… ms/msg  steal=…%` since this sample, with
    /// the case's `stolen` share.
    async fn per_message(self, messages: usize, stolen: f64) -> String {
        let Some(now) = Cost::sample().await else {
            return String::new();
        };
        let url = std::env::var("LOADGEN_DATABASE_URL").expect("set when sampled");
        let mut conn = <sqlx::PgConnection as sqlx::Connection>::connect(&url)
            .await
            .expect("LOADGEN_DATABASE_URL connects");
        let (wal_bytes,): (f64,) =
            sqlx::query_as("SELECT pg_wal_lsn_diff($1::text::pg_lsn, $2::text::pg_lsn)::float8")
                .bind(&now.wal_lsn)
                .bind(&self.wal_lsn)
                .fetch_one(&mut conn)
                .await
                .expect("WAL difference");
        // /proc counts CPU time in USER_HZ ticks, 100 per second on Linux
        let ms = |ticks: u64| ticks as f64 * 10.0 / messages as f64;
        let statements = if statements_wanted() {
            statements_per_message(&mut conn, messages).await
        } else {
            String::new()
        };
        format!(
            "  wal={:>6.0}B/msg  pg_cpu={:>5.3}ms/msg  server_cpu={:>5.3}ms/msg  steal={:>4.1}%{statements}",
            wal_bytes / messages as f64,
            ms(now.postgres_ticks.saturating_sub(self.postgres_ticks)),
            ms(now.server_ticks.saturating_sub(self.server_ticks)),
            stolen,
        )
    }
}

/// LOADGEN_STATEMENTS=1: each line also says how many statements (BEGIN and COMMIT included)
/// a message took, from `pg_stat_statements` (reset before each case); =verbose also lists them.
fn statements_wanted() -> bool {
    std::env::var("LOADGEN_STATEMENTS").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `  stmts=…/msg` since the last reset, every statement of the database (the workers' too);
/// with LOADGEN_STATEMENTS=verbose, then each statement's calls and time per message.
async fn statements_per_message(conn: &mut sqlx::PgConnection, messages: usize) -> String {
    let rows: Vec<(i64, f64, f64, String)> = sqlx::query_as(
        "SELECT calls, total_exec_time, total_plan_time, query FROM pg_stat_statements \
         WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database()) \
           AND query NOT LIKE '%pg_stat_statements%' AND query NOT LIKE '%pg_current_wal_lsn%' \
         ORDER BY calls DESC, total_exec_time DESC",
    )
    .fetch_all(conn)
    .await
    .expect("pg_stat_statements");
    let per = |n: f64| n / messages as f64;
    let calls: i64 = rows.iter().map(|r| r.0).sum();
    let mut text = format!("  stmts={:.1}/msg", per(calls as f64));
    if std::env::var("LOADGEN_STATEMENTS").is_ok_and(|v| v == "verbose") {
        for (calls, exec_ms, plan_ms, query) in
            rows.iter().filter(|r| r.0 as usize * 20 >= messages)
        {
            let query: String = query.split_whitespace().collect::<Vec<_>>().join(" ");
            text += &format!(
                "\n      {:>5.2}/msg exec={:>6.3}ms plan={:>6.3}ms  {}",
                per(*calls as f64),
                exec_ms / *calls as f64,
                plan_ms / *calls as f64,
                query.chars().take(150).collect::<String>()
            );
        }
    }
    text
}

/// utime + stime of one process, in ticks.
fn process_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // the command name may hold spaces: the fields after it start at the last ')'
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    Some(fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?)
}

/// CPU ticks of every process named `postgres` (backends, WAL writer, checkpointer...).
fn postgres_ticks() -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == "postgres")
        })
        .filter_map(process_ticks)
        .sum()
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: loadgen URL JWT_SECRET [MESSAGES_PER_CASE]");
        std::process::exit(2);
    }
    let total: usize = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(2_000);
    let buffered: usize = args.get(4).and_then(|n| n.parse().ok()).unwrap_or(0);
    let run = uuid::Uuid::new_v4().simple().to_string()[..8].to_string();
    let target = Arc::new(Target {
        client: Client::builder()
            .pool_max_idle_per_host(64)
            // under the server's keep-alive (5 s): a connection it closed between two cases
            // is not taken for the next request (which then fails: "dispatch task gone")
            .pool_idle_timeout(Duration::from_secs(2))
            .build()
            .expect("client"),
        bases: args[1]
            .split(',')
            .map(|url| url.trim_end_matches('/').to_string())
            .collect(),
        next: AtomicUsize::new(0),
        token: mint_token(&args[2], "loadgen", "admin", Duration::from_secs(3600)),
    });
    // the three front doors first, each on tables only the doors before it filled
    let cases = std::env::var("LOADGEN_CASES").unwrap_or_default();
    if cases == "interleaved" {
        interleaved_doors(&target, &run, total).await;
        return;
    }
    if cases != "service" {
        start_to_wait_then_correlate(&target, &run, total).await;
    }
    service_task_round_trips(&target, &run, total).await;
    if cases != "doors" && cases != "service" {
        let start_name = format!("bench_start_{run}");
        target
            .upload(&format!("bench:start_{run}"), one_step(&start_name))
            .await;
        one_step_starts(&target, "start", &start_name, total).await;
        // a message start whose step runs one script: the script round trip
        let script_name = format!("bench_script_{run}");
        target
            .upload(&format!("bench:script_{run}"), with_script(&script_name))
            .await;
        one_step_starts(&target, "script", &script_name, total).await;
    }
    if buffered > 0 {
        full_buffer(&target, &run, total, buffered).await;
    }
    print_shares();
}

/// The client counts each case runs at: 1 and 16, or the one LOADGEN_CLIENTS names.
fn client_counts() -> Vec<usize> {
    match std::env::var("LOADGEN_CLIENTS").ok().as_deref() {
        None | Some("") => vec![1, 16],
        Some(n) => vec![n.parse().expect("LOADGEN_CLIENTS is a number of clients")],
    }
}

/// `total` message starts of `name`, whose process ends in its first step, at 1 and 16 clients.
async fn one_step_starts(target: &Arc<Target>, label: &str, name: &str, total: usize) {
    for clients in client_counts() {
        let (t, name) = (target.clone(), name.to_string());
        run_case(label, clients, total, move |i| {
            let (t, name) = (t.clone(), name.clone());
            async move {
                t.post(&format!("/v1.0/messages/{name}"), json!({"n": i}), 200)
                    .await
            }
        })
        .await;
    }
}

/// The first two front doors, at 1 and 16 clients: message starts of an order model, each
/// leaving an instance that waits for its payment (`wait-start`), then the payments, each
/// correlated by `order_id` to one of those instances (`correlate`).
async fn start_to_wait_then_correlate(target: &Arc<Target>, run: &str, total: usize) {
    let placed = format!("bench_placed_{run}");
    let paid = format!("bench_paid_{run}");
    target
        .upload(&format!("bench:doors_{run}"), order(&placed, &paid))
        .await;
    for clients in client_counts() {
        let prefix = format!("w{clients}_");
        keyed_messages(
            target.clone(),
            "wait-start",
            clients,
            total,
            &placed,
            "order_id",
            &prefix,
        )
        .await;
    }
    for clients in client_counts() {
        let prefix = format!("w{clients}_");
        keyed_messages(
            target.clone(),
            "correlate",
            clients,
            total,
            &paid,
            "order_id",
            &prefix,
        )
        .await;
    }
}

/// The first two doors from one client, each message sent to every server (of its own
/// database) in turn, the first of them alternating: `total` starts that leave an instance
/// waiting, then as many correlations to them; each server's mean and median latency.
async fn interleaved_doors(target: &Target, run: &str, total: usize) {
    let placed = format!("bench_placed_{run}");
    let paid = format!("bench_paid_{run}");
    for base in &target.bases {
        let model = format!("bench:doors_{run}");
        target.upload_to(base, &model, order(&placed, &paid)).await;
    }
    for (label, name) in [("wait-start", &placed), ("correlate", &paid)] {
        let mut latencies = vec![Vec::with_capacity(total); target.bases.len()];
        for i in 0..total {
            let mut order: Vec<usize> = (0..target.bases.len()).collect();
            if i % 2 == 1 {
                order.reverse();
            }
            for server in order {
                let body = json!({ "order_id": format!("i{i}") });
                let path = format!("/v1.0/messages/{name}");
                let took = target
                    .post_to(&target.bases[server], &path, body, 200)
                    .await;
                latencies[server].push(took);
            }
        }
        let ms = |d: &Duration| d.as_secs_f64() * 1e3;
        let mut line = format!("{label:<12} clients=1   messages={total:<6}");
        let mut first_mean = None;
        for (base, mut taken) in target.bases.iter().zip(latencies) {
            taken.sort();
            let mean = taken.iter().map(ms).sum::<f64>() / taken.len() as f64;
            let against = first_mean.map_or(String::new(), |first: f64| {
                format!(" ({:+.1}%)", 100.0 * (mean - first) / first)
            });
            first_mean.get_or_insert(mean);
            line += &format!(
                "  {base}: mean={mean:.3}ms{against} p50={:.3}ms",
                ms(&taken[taken.len() / 2])
            );
        }
        println!("{line}");
    }
}

/// Each front door's share of pgbench's rate (LOADGEN_PGBENCH_TPS) at 16 clients, its p99 and
/// its 1-client latency as a multiple of pgbench's (LOADGEN_PGBENCH_LATENCY_MS), against the
/// targets; nothing without pgbench's figure.
fn print_shares() {
    let env = |name: &str| std::env::var(name).ok()?.parse::<f64>().ok();
    let Some(tps) = env("LOADGEN_PGBENCH_TPS") else {
        return;
    };
    let pgbench_latency = env("LOADGEN_PGBENCH_LATENCY_MS");
    let measured = MEASURED.lock().unwrap();
    let find = |label: &str, clients: usize| {
        measured
            .iter()
            .find(|m| m.label == label && m.clients == clients)
    };
    // a miss in a case the hypervisor disturbed says so
    let verdict = |met: bool, case: &Measured| match (met, case.stolen) {
        (true, _) => "met".to_string(),
        (false, Some(stolen)) if stolen >= DISTURBED_PERCENT => {
            format!("MISSED, disturbed: {stolen:.0}% stolen")
        }
        (false, _) => "MISSED".to_string(),
    };
    println!("front doors against pgbench ({tps:.0} tps at 16 clients):");
    // (door, share target, p99 target at 16 clients, 1-client latency target as pgbench multiple)
    let doors = [
        ("wait-start", 0.35, Some(50.0), Some(2.0)),
        ("correlate", 0.5, Some(30.0), Some(2.0)),
        ("service", 0.25, None, None),
    ];
    for (door, share_target, p99_target, latency_target) in doors {
        let Some(at16) = find(door, 16) else {
            continue;
        };
        let share = at16.rate / tps;
        let mut line = format!(
            "  {door:<11} share={share:.2} (>= {share_target}: {})",
            verdict(share >= share_target, at16)
        );
        if let Some(target) = p99_target {
            line += &format!(
                "  p99={:.1}ms (< {target}: {})",
                at16.p99_ms,
                verdict(at16.p99_ms < target, at16)
            );
        }
        if let (Some(target), Some(at1), Some(base)) =
            (latency_target, find(door, 1), pgbench_latency)
        {
            let multiple = at1.mean_ms / base;
            line += &format!(
                "  1-client mean={:.2}ms = {multiple:.1}x pgbench's {base:.2}ms (<= {target}: {})",
                at1.mean_ms,
                verdict(multiple <= target, at1)
            );
        }
        if door == "service" {
            if let Some(dispatch) = find("(dispatch)", 1) {
                line += &format!(
                    "  1-client dispatch p99={:.2}ms (<= 5: {})",
                    dispatch.p99_ms,
                    verdict(dispatch.p99_ms <= 5.0, dispatch)
                );
            }
        }
        println!("{line}");
    }
}

/// Message start -> service task `bench/Echo` (parameter `key` from the payload) -> end.
fn service_task(name: &str) -> String {
    format!(
        r#"{HEADER}<bpmn:message id="m" name="{name}" />
<bpmn:process id="process_{name}" isExecutable="true">
  <bpmn:startEvent id="start"><bpmn:messageEventDefinition id="e" messageRef="m"><bpmn:extensionElements><spiffworkflow:messageVariable>payload</spiffworkflow:messageVariable></bpmn:extensionElements></bpmn:messageEventDefinition></bpmn:startEvent>
  <bpmn:sequenceFlow id="f1" sourceRef="start" targetRef="call" />
  <bpmn:serviceTask id="call"><bpmn:extensionElements><spiffworkflow:serviceTaskOperator id="bench/Echo" resultVariable="result"><spiffworkflow:parameters><spiffworkflow:parameter id="key" type="str" value="payload[&quot;key&quot;]" /></spiffworkflow:parameters></spiffworkflow:serviceTaskOperator></bpmn:extensionElements></bpmn:serviceTask>
  <bpmn:sequenceFlow id="f2" sourceRef="call" targetRef="done" /><bpmn:endEvent id="done" />
</bpmn:process></bpmn:definitions>"#
    )
}

/// A round trip under way: when the connector was called, and who waits for its end.
#[derive(Default)]
struct Pending {
    called: Option<Instant>,
    done: Option<tokio::sync::oneshot::Sender<Instant>>,
}

type PendingCalls = Arc<std::sync::Mutex<std::collections::HashMap<String, Pending>>>;

/// The fake connector proxy: every call is answered 202 and called back at once.
async fn fake_proxy_call(
    body: actix_web::web::Json<serde_json::Value>,
    pending: actix_web::web::Data<PendingCalls>,
    client: actix_web::web::Data<Client>,
) -> actix_web::HttpResponse {
    let called = Instant::now();
    let key = body["key"].as_str().unwrap_or_default().to_string();
    if let Some(slot) = pending.lock().unwrap().get_mut(&key) {
        slot.called = Some(called);
    }
    let url = body["wf__callback_url"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let token = body["wf__callback_token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (pending, client) = (pending.get_ref().clone(), client.get_ref().clone());
    tokio::spawn(async move {
        let envelope = json!({
            "command_response": {"body": {"echo": key}, "mimetype": "application/json", "http_status": 200},
            "command_response_version": 2,
            "error": null,
        });
        let answer = client
            .put(&url)
            .bearer_auth(&token)
            .json(&envelope)
            .send()
            .await
            .expect("callback");
        let status = answer.status().as_u16();
        let text = answer.text().await.unwrap_or_default();
        assert_eq!(status, 200, "callback: {text}");
        let slot = pending.lock().unwrap().remove(&key);
        if let Some(Pending {
            called: Some(called),
            done: Some(done),
        }) = slot
        {
            let _ = done.send(called);
        }
    });
    actix_web::HttpResponse::Accepted().json(json!({
        "command_response": {"body": {}, "mimetype": "application/json", "http_status": 202},
        "command_response_version": 2,
        "error": null,
    }))
}

/// The service-task round trip at 16 clients (see the module's comment).
async fn service_task_round_trips(target: &Arc<Target>, run: &str, total: usize) {
    let port: u16 = std::env::var("LOADGEN_PROXY_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(7101);
    let pending: PendingCalls = Arc::default();
    // The proxy's callbacks go through a client of their own: a connection opened on the
    // proxy's runtime dies with it, and one left in the cases' client's pool failed the next
    // case's first request ("runtime dropped the dispatch task").
    let callbacks = Client::builder()
        .pool_max_idle_per_host(64)
        .build()
        .expect("client");
    let proxy_state = (
        actix_web::web::Data::new(pending.clone()),
        actix_web::web::Data::new(callbacks),
    );
    let server = actix_web::HttpServer::new(move || {
        actix_web::App::new()
            .app_data(proxy_state.0.clone())
            .app_data(proxy_state.1.clone())
            .route(
                "/v1/do/bench/Echo",
                actix_web::web::post().to(fake_proxy_call),
            )
    })
    .workers(1)
    .bind(("127.0.0.1", port))
    .unwrap_or_else(|e| panic!("the fake connector proxy cannot listen on port {port}: {e}"))
    .run();
    let proxy = server.handle();
    tokio::spawn(server);

    let name = format!("bench_service_{run}");
    target
        .upload(&format!("bench:service_{run}"), service_task(&name))
        .await;
    for clients in client_counts() {
        service_case(target, &name, run, &pending, clients, total).await;
    }
    proxy.stop(true).await;
}

/// Start (of a model whose instances then wait) and correlation, first with an empty buffer,
/// then with `buffered` unmatched messages of the awaited name in it.
async fn full_buffer(target: &Arc<Target>, run: &str, total: usize, buffered: usize) {
    let placed = format!("bench_buffer_placed_{run}");
    let paid = format!("bench_buffer_paid_{run}");
    target
        .upload(&format!("bench:order_{run}"), order(&placed, &paid))
        .await;
    start_then_correlate(target, &placed, &paid, total, "empty").await;
    let (t, name) = (target.clone(), paid.clone());
    run_case("(buffer)", 16, buffered, move |i| {
        let (t, name) = (t.clone(), name.clone());
        async move {
            let uuid = uuid::Uuid::new_v4();
            t.post(
                &format!("/v1.0/messages/{name}?time_to_live_in_seconds=300&message_instance_uuid={uuid}"),
                json!({"order_id": format!("buffered_{i}")}),
                202,
            )
            .await
        }
    })
    .await;
    start_then_correlate(target, &placed, &paid, total, "full").await;
}

/// Message start of the waiting model, then correlation to the instances it made, at 1 and 16
/// clients; `label` names the buffer's state.
async fn start_then_correlate(
    target: &Arc<Target>,
    placed: &str,
    paid: &str,
    total: usize,
    label: &str,
) {
    for clients in client_counts() {
        let prefix = format!("{label}{clients}_");
        let start = format!("start/{label}");
        keyed_messages(
            target.clone(),
            &start,
            clients,
            total,
            placed,
            "order_id",
            &prefix,
        )
        .await;
        let correlate = format!("correl/{label}");
        keyed_messages(
            target.clone(),
            &correlate,
            clients,
            total,
            paid,
            "order_id",
            &prefix,
        )
        .await;
    }
}

/// A case of `total` messages `name` with `{key: "<prefix><i>"}`, each answered 200.
async fn keyed_messages(
    target: Arc<Target>,
    label: &str,
    clients: usize,
    total: usize,
    name: &str,
    key: &str,
    prefix: &str,
) {
    let (name, key, prefix) = (name.to_string(), key.to_string(), prefix.to_string());
    run_case(label, clients, total, move |i| {
        let (t, name, key, prefix) = (target.clone(), name.clone(), key.clone(), prefix.clone());
        async move {
            t.post(
                &format!("/v1.0/messages/{name}"),
                json!({ key: format!("{prefix}{i}") }),
                200,
            )
            .await
        }
    })
    .await;
}

/// One service-task case: `total` round trips from `clients` clients, then the dispatch
/// latency's percentiles.
async fn service_case(
    target: &Arc<Target>,
    name: &str,
    run: &str,
    pending: &PendingCalls,
    clients: usize,
    total: usize,
) {
    let dispatch = Arc::new(std::sync::Mutex::new(Vec::with_capacity(total)));
    let (t, n, p, d, run) = (
        target.clone(),
        name.to_string(),
        pending.clone(),
        dispatch.clone(),
        format!("{run}_c{clients}"),
    );
    run_case("service", clients, total, move |i| {
        let (t, name, pending, dispatch) = (t.clone(), n.clone(), p.clone(), d.clone());
        let key = format!("{run}_{i}");
        async move {
            let started = Instant::now();
            let (done, finished) = tokio::sync::oneshot::channel();
            pending.lock().unwrap().insert(
                key.clone(),
                Pending {
                    called: None,
                    done: Some(done),
                },
            );
            t.post(&format!("/v1.0/messages/{name}"), json!({ "key": key }), 200)
                .await;
            let answered = Instant::now();
            let called = tokio::time::timeout(Duration::from_secs(30), finished)
                .await
                .expect("the round trip ended within 30 s (is the server's connector proxy URL this program's fake proxy?)")
                .expect("the callback was made");
            dispatch
                .lock()
                .unwrap()
                .push(called.saturating_duration_since(answered));
            started.elapsed()
        }
    })
    .await;
    let mut dispatch = std::mem::take(&mut *dispatch.lock().unwrap());
    dispatch.sort();
    let pct = |q: f64| {
        dispatch[((dispatch.len() as f64 * q).ceil() as usize).saturating_sub(1)].as_secs_f64()
            * 1e3
    };
    println!(
        "{:<12} clients={:<3} messages={:<6} {:>15}  p50={:>6.2}ms  p95={:>6.2}ms  p99={:>6.2}ms  max={:>7.2}ms",
        "(dispatch)",
        clients,
        total,
        "",
        pct(0.50),
        pct(0.95),
        pct(0.99),
        dispatch.last().map(|d| d.as_secs_f64() * 1e3).unwrap_or(0.0),
    );
    MEASURED.lock().unwrap().push(Measured {
        label: "(dispatch)".to_string(),
        clients,
        rate: 0.0,
        mean_ms: dispatch.iter().map(Duration::as_secs_f64).sum::<f64>() * 1e3
            / dispatch.len() as f64,
        p99_ms: pct(0.99),
        stolen: None,
    });
}
