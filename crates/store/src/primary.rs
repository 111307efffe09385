//! A database behind several hosts of which one takes writes (pg_auto_failover, Patroni, a
//! managed service with replicas), named by libpq's multi-host URL
//! (`postgres://h1:p1,h2:p2/db?target_session_attrs=read-write`). sqlx connects to one host, so
//! the pool is pointed at the writable one and kept there:
//!
//! - at start, the hosts are tried in order; the first that accepts a connection and is not
//!   read-only (`transaction_read_only`, libpq's read-write test) is used;
//! - every new pool connection is checked the same way: one opened to a host that has become a
//!   standby is refused (the pool tries again) and wakes the watch;
//! - the watch ([`Primary::check_once`], every [`CHECK_EVERY`] or when woken) asks the current
//!   host on a connection of its own; when it stops answering or turns read-only, the hosts are
//!   tried again in order, the pool's new connections go to the writable one, and pooled
//!   connections opened before the switch are retired when next acquired (their age is
//!   compared with the switch: no IO);
//! - every host must belong to the cluster of the first writable host found at start (the same
//!   `system_identifier`): a host of another cluster is never used, even when it takes writes
//!   (a stale server on a listed port, a list that mixes clusters); writes there would be lost
//!   to this cluster.
//!
//! Until a writable host is found, acquiring a connection fails after the pool's timeout:
//! requests and readiness answer 503 `database_unavailable`. A request whose connection broke
//! mid-transaction got 503 too; retried with the same `message_instance_uuid`, it is delivered
//! once (the uuid is unique in the database, which the standby received synchronously; the
//! answer to the retry waits for the standby too: `services::messages`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::pool::PoolConnectionMetadata;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{ConnectOptions, PgConnection, PgPool};
use tokio::sync::{watch, Notify};

/// How often the watch asks the current host.
pub const CHECK_EVERY: Duration = Duration::from_millis(500);
/// A host that has not connected or answered in this long is taken as down.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// What a check found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// The host the pool uses takes writes (its index in the host list).
    Writable(usize),
    /// The pool now uses another host.
    Switched { from: usize, to: usize },
    /// No host takes writes (a failover under way, or every host down).
    NoWritableHost,
}

pub struct Primary {
    /// One per host, in the URL's order.
    hosts: Vec<PgConnectOptions>,
    /// The host the pool connects to.
    current: AtomicUsize,
    /// When the pool was last pointed at another host: connections older than that are retired.
    switched_at: Mutex<Option<Instant>>,
    /// What the last check found (readiness reports it).
    last: Mutex<Check>,
    /// Why no host took writes at the last check that found none (each host's problem).
    why_none: Mutex<String>,
    /// The `system_identifier` of the cluster the service writes to: the first writable
    /// host's, found at start.
    cluster: Mutex<Option<i64>>,
    /// The watch's own connection to the current host.
    probe: tokio::sync::Mutex<Option<PgConnection>>,
    /// Wakes the watch before its next tick (a new connection found a standby).
    wake: Notify,
}

impl Primary {
    /// `base` with each host of `hosts` in turn; the pool starts on the first until
    /// [`Primary::find_writable`] says otherwise.
    pub fn new(base: &PgConnectOptions, hosts: &[(String, u16)]) -> Arc<Primary> {
        let hosts = hosts
            .iter()
            .map(|(host, port)| base.clone().host(host).port(*port))
            .collect();
        Arc::new(Primary {
            hosts,
            current: AtomicUsize::new(0),
            switched_at: Mutex::new(None),
            last: Mutex::new(Check::Writable(0)),
            why_none: Mutex::new(String::new()),
            cluster: Mutex::new(None),
            probe: tokio::sync::Mutex::new(None),
            wake: Notify::new(),
        })
    }

    /// The options of the host the pool uses.
    pub fn current_options(&self) -> PgConnectOptions {
        self.hosts[self.current.load(Ordering::Acquire)].clone()
    }

    /// The host the pool uses (its index in the URL's list).
    pub fn current(&self) -> usize {
        self.current.load(Ordering::Acquire)
    }

    /// Whether the last check found a host that takes writes.
    pub fn is_writable(&self) -> bool {
        *self.last.lock().expect("not poisoned") != Check::NoWritableHost
    }

    /// The first host, in order, that connects and takes writes for this service's cluster,
    /// with the connection; or why none does (each host's problem).
    pub async fn find_writable(&self) -> Result<(usize, PgConnection), String> {
        let mut problems = Vec::new();
        for (index, options) in self.hosts.iter().enumerate() {
            let host = format!("{}:{}", options.get_host(), options.get_port());
            let answer = tokio::time::timeout(PROBE_TIMEOUT, async {
                let mut conn = options.connect().await?;
                let answer = ask(&mut conn).await?;
                Ok::<_, sqlx::Error>((conn, answer))
            })
            .await;
            match answer {
                Ok(Ok((conn, answer))) => match self.judge(answer) {
                    Verdict::Use => return Ok((index, conn)),
                    verdict => problems.push(format!("{host} {verdict}")),
                },
                Ok(Err(e)) => problems.push(format!("{host}: {e}")),
                Err(_) => problems.push(format!("{host}: no answer within {PROBE_TIMEOUT:?}")),
            }
        }
        Err(problems.join("; "))
    }

    /// Whether a host that gave `answer` may be used; the first writable host pins the
    /// cluster.
    fn judge(&self, answer: HostAnswer) -> Verdict {
        let mut cluster = self.cluster.lock().expect("not poisoned");
        let verdict = judge(*cluster, answer);
        if verdict == Verdict::Use {
            *cluster = Some(answer.system_identifier);
        }
        verdict
    }

    /// Starts on the host [`Primary::find_writable`] found (before the pool is made).
    pub fn start_on(&self, index: usize, probe: PgConnection) {
        self.current.store(index, Ordering::Release);
        *self.probe.try_lock().expect("not shared yet") = Some(probe);
    }

    /// `options` with the checks that keep the pool on the writable host: a new connection
    /// to a read-only host is refused (and wakes the watch); a pooled connection opened before
    /// the last switch is retired when acquired.
    pub fn guard(self: &Arc<Self>, options: PgPoolOptions) -> PgPoolOptions {
        let on_connect = self.clone();
        let on_acquire = self.clone();
        options
            .after_connect(move |conn, _| {
                let primary = on_connect.clone();
                Box::pin(async move {
                    let verdict = primary.judge(ask(conn).await?);
                    if verdict == Verdict::Use {
                        return Ok(());
                    }
                    primary.wake.notify_one();
                    Err(sqlx::Error::Configuration(
                        format!("the database host {verdict}: looking for the primary").into(),
                    ))
                })
            })
            .before_acquire(move |_, meta: PoolConnectionMetadata| {
                let keep = !on_acquire.opened_before_switch(meta.age);
                Box::pin(async move { Ok(keep) })
            })
    }

    fn opened_before_switch(&self, age: Duration) -> bool {
        let switched_at = *self.switched_at.lock().expect("not poisoned");
        switched_at.is_some_and(|at| age > at.elapsed())
    }

    /// One check: asks the current host whether it takes writes; if it does not answer or is
    /// read-only, finds the writable host and points the pool's new connections at it.
    pub async fn check_once(&self, pool: &PgPool) -> Check {
        let mut probe = self.probe.lock().await;
        let current = self.current();
        if let Some(conn) = probe.as_mut() {
            if let Ok(Ok(answer)) = tokio::time::timeout(PROBE_TIMEOUT, ask(conn)).await {
                if self.judge(answer) == Verdict::Use {
                    return self.found(Check::Writable(current));
                }
            }
        }
        // a broken connection is dropped, not closed: closing may wait on a dead peer
        *probe = None;
        let found = match self.find_writable().await {
            Ok((index, conn)) => {
                *probe = Some(conn);
                if index == current {
                    Check::Writable(current)
                } else {
                    pool.set_connect_options(self.hosts[index].clone());
                    self.current.store(index, Ordering::Release);
                    *self.switched_at.lock().expect("not poisoned") = Some(Instant::now());
                    Check::Switched {
                        from: current,
                        to: index,
                    }
                }
            }
            Err(why) => {
                tracing::debug!(why, "no database host takes writes");
                *self.why_none.lock().expect("not poisoned") = why;
                Check::NoWritableHost
            }
        };
        self.found(found)
    }

    fn found(&self, check: Check) -> Check {
        *self.last.lock().expect("not poisoned") = check;
        check
    }

    /// Checks every [`CHECK_EVERY`], or at once when a new connection met a standby, until
    /// shutdown; logs each change.
    pub async fn run(self: Arc<Self>, pool: PgPool, mut shutdown: watch::Receiver<bool>) {
        let mut writable = true;
        loop {
            tokio::select! {
                _ = tokio::time::sleep(CHECK_EVERY) => {}
                _ = self.wake.notified() => {}
                _ = shutdown.changed() => {}
            }
            if *shutdown.borrow() {
                break;
            }
            match self.check_once(&pool).await {
                Check::Switched { from, to } => {
                    let host = |i: usize| {
                        format!("{}:{}", self.hosts[i].get_host(), self.hosts[i].get_port())
                    };
                    tracing::warn!(from = %host(from), to = %host(to), "the database primary moved: new connections go to it");
                    writable = true;
                }
                Check::Writable(_) if !writable => {
                    tracing::info!("the database takes writes again");
                    writable = true;
                }
                Check::NoWritableHost if writable => {
                    let why = self.why_none.lock().expect("not poisoned").clone();
                    tracing::warn!(
                        why,
                        "no database host takes writes: requests get 503 until one does"
                    );
                    writable = false;
                }
                _ => {}
            }
        }
    }
}

/// What a host says about itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HostAnswer {
    /// libpq's read-write test: `transaction_read_only` is off on a primary, on on a standby
    /// (and on a primary that pg_auto_failover is promoting or draining).
    takes_writes: bool,
    /// Which cluster the host belongs to: a standby has its primary's.
    system_identifier: i64,
}

async fn ask(conn: &mut PgConnection) -> Result<HostAnswer, sqlx::Error> {
    let (read_only, system_identifier): (String, i64) = sqlx::query_as(
        "SELECT current_setting('transaction_read_only'), system_identifier \
         FROM pg_control_system()",
    )
    .fetch_one(conn)
    .await?;
    Ok(HostAnswer {
        takes_writes: read_only == "off",
        system_identifier,
    })
}

/// Whether a host may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Use,
    ReadOnly,
    /// It takes writes for another cluster than the service's (whose identifier is given).
    OtherCluster {
        host: i64,
        ours: i64,
    },
}

impl std::fmt::Display for Verdict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Verdict::Use => write!(f, "takes writes"),
            Verdict::ReadOnly => write!(f, "is read-only (a standby)"),
            Verdict::OtherCluster { host, ours } => write!(
                f,
                "belongs to another cluster (system identifier {host}, this service's is {ours})"
            ),
        }
    }
}

/// A host is used when it takes writes and belongs to `cluster` (any, before the first).
fn judge(cluster: Option<i64>, answer: HostAnswer) -> Verdict {
    match cluster {
        _ if !answer.takes_writes => Verdict::ReadOnly,
        Some(ours) if ours != answer.system_identifier => Verdict::OtherCluster {
            host: answer.system_identifier,
            ours,
        },
        _ => Verdict::Use,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(takes_writes: bool, system_identifier: i64) -> HostAnswer {
        HostAnswer {
            takes_writes,
            system_identifier,
        }
    }

    #[test]
    fn the_first_writable_host_is_used_whatever_its_cluster() {
        assert_eq!(judge(None, answer(true, 7)), Verdict::Use);
        assert_eq!(judge(None, answer(false, 7)), Verdict::ReadOnly);
    }

    #[test]
    fn later_hosts_must_take_writes_for_the_same_cluster() {
        assert_eq!(judge(Some(7), answer(true, 7)), Verdict::Use);
        assert_eq!(judge(Some(7), answer(false, 7)), Verdict::ReadOnly);
        assert_eq!(
            judge(Some(7), answer(true, 8)),
            Verdict::OtherCluster { host: 8, ours: 7 }
        );
        assert_eq!(
            Verdict::OtherCluster { host: 8, ours: 7 }.to_string(),
            "belongs to another cluster (system identifier 8, this service's is 7)"
        );
    }

    #[test]
    fn the_cluster_is_pinned_by_the_first_host_used() {
        let primary = Primary::new(&PgConnectOptions::new(), &[("127.0.0.1".into(), 1)]);
        assert_eq!(primary.judge(answer(false, 7)), Verdict::ReadOnly);
        assert_eq!(primary.judge(answer(true, 7)), Verdict::Use);
        assert_eq!(
            primary.judge(answer(true, 8)),
            Verdict::OtherCluster { host: 8, ours: 7 }
        );
        assert_eq!(primary.judge(answer(true, 7)), Verdict::Use);
    }
}
