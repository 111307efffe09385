//! The OS wall alone (Landlock and seccomp, crates/scripts/src/wall.rs): scripts run by a worker's
//! test-only `exec_unguarded` request, with every builtin and no Python guard, as a script
//! that escaped the guards would run. Each must fail with the kernel's refusal; the same
//! scripts in a worker without the wall succeed, so the refusals are the wall's.

use std::time::Duration;

use serde_json::{json, Value};
use workflow_backend::python::{default_packages, OsWallMode, PoolSettings, WorkerPool};

fn pool(os_wall: OsWallMode, unguarded: bool) -> WorkerPool {
    WorkerPool::start(PoolSettings {
        python: "python3".into(),
        packages: default_packages(),
        workers: 1,
        time_limit: Duration::from_secs(10),
        memory_limit_mb: 256,
        queue_timeout: Duration::from_secs(60),
        os_wall,
        unguarded_for_tests: unguarded,
    })
    .expect("the script worker starts (python3 and the packages build.rs installs)")
}

fn unguarded(pool: &WorkerPool, source: &str) -> Value {
    pool.call(&json!({"op": "exec_unguarded", "source": source}))
        .unwrap_or_else(|e| panic!("{source}: {e:?}"))
}

/// What an escaped script tries, each with the error classes the refusal may surface as.
const ATTEMPTS: &[(&str, &str, &[&str])] = &[
    (
        "read a file outside the allowlist",
        "x = open('/etc/passwd').read()",
        &["PermissionError"],
    ),
    (
        "read the parent's environment (the JWT secret, the database URL)",
        "import os\nx = open(f'/proc/{os.getppid()}/environ', 'rb').read().decode()",
        &["PermissionError"],
    ),
    (
        "write a file",
        "x = str(open('/tmp/workflow-backend-os-wall-test', 'w'))",
        &["PermissionError"],
    ),
    (
        "open a socket",
        "import socket\nx = str(socket.socket(socket.AF_INET, socket.SOCK_STREAM))",
        &["PermissionError"],
    ),
    (
        "open a unix socket",
        "import socket\nx = str(socket.socket(socket.AF_UNIX, socket.SOCK_STREAM))",
        &["PermissionError"],
    ),
    (
        "fork",
        "import os\nx = str(os.fork())",
        &["PermissionError"],
    ),
    (
        "exec a program",
        // a program that does not exist: without the wall the worker survives the attempt
        "import os\nos.execv('/bin/workflow-backend-no-such-program', ['x'])",
        &["PermissionError"],
    ),
    (
        "run a subprocess",
        "import subprocess\nx = str(subprocess.run(['/bin/true']))",
        &["PermissionError"],
    ),
    (
        "signal the server",
        "import os\nos.kill(os.getppid(), 0)\nx = 'sent'",
        &["PermissionError"],
    ),
    (
        "raise the memory limit",
        "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nx = 'raised'",
        &["ValueError", "PermissionError", "OSError"],
    ),
    (
        "start a thread",
        "import threading\nt = threading.Thread(target=print)\nt.start()\nx = 'started'",
        &["RuntimeError", "PermissionError"],
    ),
    (
        "list the root folder",
        "import os\nx = str(os.listdir('/'))",
        &["PermissionError"],
    ),
];

#[test]
fn the_os_wall_alone_refuses_files_sockets_processes_and_signals() {
    let walled = pool(OsWallMode::Required, true);
    let open = pool(OsWallMode::Off, true);
    let mut failures = Vec::new();
    for (what, source, refusals) in ATTEMPTS {
        let answer = unguarded(&walled, source);
        let class = answer["error"]["class"].as_str().unwrap_or_default();
        if answer["ok"] != false || !refusals.contains(&class) {
            failures.push(format!("{what}: behind the wall answered {answer}"));
        }
        // the control: without the wall the same script is not refused (it succeeds, or fails
        // for another reason: the program to exec does not exist)
        if what.starts_with("raise") {
            continue; // without CAP_SYS_RESOURCE the kernel refuses it anyway: no control
        }
        let control = unguarded(&open, source);
        let control_class = control["error"]["class"].as_str().unwrap_or_default();
        if control["ok"] != true && refusals.contains(&control_class) {
            failures.push(format!("{what}: without the wall answered {control}"));
        }
    }
    let _ = std::fs::remove_file("/tmp/workflow-backend-os-wall-test");
    assert!(failures.is_empty(), "{failures:#?}");
}

/// Lazily loaded data stays readable behind the wall: pytz zones, dateparser's languages,
/// the standard library.
#[test]
fn the_os_wall_lets_scripts_load_zones_languages_and_the_standard_library() {
    let walled = pool(OsWallMode::Required, true);
    let answer = unguarded(
        &walled,
        "import pytz, dateparser, fractions\n\
         zone = str(pytz.timezone('Pacific/Chatham'))\n\
         parsed = str(dateparser.parse('12 de mayo de 2020', languages=['es']))\n\
         half = str(fractions.Fraction(1, 2))",
    );
    assert_eq!(
        answer["data"],
        json!({"zone": "Pacific/Chatham", "parsed": "2020-05-12 00:00:00", "half": "1/2"}),
        "{answer}"
    );
}

/// A worker started without the test switch knows no `exec_unguarded`.
#[test]
fn production_workers_refuse_unguarded_requests() {
    let production = pool(OsWallMode::Required, false);
    let answer = unguarded(&production, "x = open('/etc/hostname').read()");
    assert_eq!(answer["ok"], false, "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("unknown op"),
        "{answer}"
    );
}

/// Where the service runs as root and the interpreter and packages are readable by others
/// (Debian's /usr/bin/python3 here; a pyenv interpreter under /root is not), the workers run
/// as `nobody`.
#[test]
fn workers_of_a_root_service_run_as_nobody_when_they_can() {
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let system_python = std::path::Path::new("/usr/bin/python3");
    if !root || !system_python.exists() {
        println!("skipped: not root, or no /usr/bin/python3");
        return;
    }
    let pool = WorkerPool::start(PoolSettings {
        python: system_python.display().to_string(),
        ..settings_of(&pool(OsWallMode::Required, true))
    })
    .expect("the system interpreter starts a worker");
    assert!(pool.drops_privileges());
    let answer = unguarded(
        &pool,
        "import os\nuid = str(os.getuid())\ngid = str(os.getgid())",
    );
    assert_eq!(answer["data"]["uid"], "65534", "{answer}");
    assert_eq!(answer["data"]["gid"], "65534", "{answer}");
}

fn settings_of(pool: &WorkerPool) -> PoolSettings {
    pool.settings().clone()
}
