//! A bounded pool of CPython worker processes (`python/script_worker.py`), each serving one
//! request at a time over JSON lines on its stdin/stdout.
//!
//! Callers are blocking threads (never async ones): a caller takes a free worker, waiting at
//! most the queue timeout (then the pool is busy), writes the request and waits for the
//! answer until the script's deadline. A worker past its deadline is killed (SIGKILL: a
//! script stuck in one C call, `7 ** 20000000`, cannot be interrupted any other way) and
//! replaced; so is one that died or asked to be replaced (after a MemoryError).

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

/// The worker's source, passed with `python3 -c` (nothing to install beside the binary).
const WORKER_SOURCE: &str = include_str!("../../python/script_worker.py");

#[derive(Clone, Debug)]
pub struct PoolSettings {
    /// The interpreter (`python3`).
    pub python: String,
    /// Folder holding RestrictedPython, pytz, dateparser (pip `--target`).
    pub packages: String,
    pub workers: usize,
    pub time_limit: Duration,
    pub memory_limit_mb: u64,
    /// How long a caller waits for a free worker before the pool counts as busy.
    pub queue_timeout: Duration,
}

/// Why a request got no answer from Python.
#[derive(Debug, PartialEq)]
pub enum PoolError {
    /// The script ran past the time limit; its worker was killed.
    TimeLimit,
    /// Every worker stayed busy for the queue timeout.
    Busy,
    /// A worker could not be started, or was gone before it took the request.
    Broken(String),
    /// The worker ended while it ran the request, without answering: what the script did
    /// killed it (no memory left to write its answer, stopped by the OS).
    Died,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The interpreter to start: `python` as given when it is a path, else found on this
/// process's PATH (the worker itself gets no PATH: see [`worker_command`]).
fn resolve_program(python: &str) -> std::path::PathBuf {
    if python.contains('/') {
        return python.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(python))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| python.into())
}

/// The worker's command line and environment. The environment is empty but for `TZ` (the
/// local time zone scripts see, as the server's): the server's own environment holds its
/// secrets (`WORKFLOW_BACKEND_JWT_SECRET`, the database URL), and nothing of it is for
/// scripts. `-X utf8`: the pipes are UTF-8 whatever the locale.
fn worker_command(settings: &PoolSettings) -> Command {
    let mut command = Command::new(resolve_program(&settings.python));
    command
        .env_clear()
        // -I: no environment or user site; -S: no site module (nothing but the stdlib and
        // our packages folder, and no start-up cost from site .pth files)
        .args(["-I", "-S", "-u", "-X", "utf8", "-c", WORKER_SOURCE])
        .arg(&settings.packages)
        .arg(settings.memory_limit_mb.to_string());
    if let Some(zone) = std::env::var_os("TZ") {
        command.env("TZ", zone);
    }
    command
}

impl Worker {
    fn start(settings: &PoolSettings) -> Result<Worker, PoolError> {
        let mut child = worker_command(settings)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| PoolError::Broken(format!("cannot start {}: {e}", settings.python)))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut worker = Worker {
            child,
            stdin,
            stdout,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        match worker.read_line(deadline) {
            Ok(line) if line.contains("\"ready\"") => Ok(worker),
            _ => Err(PoolError::Broken(worker.stop_and_explain())),
        }
    }

    /// The worker failed to start: stop it and say why (its stderr's last line).
    fn stop_and_explain(&mut self) -> String {
        let _ = self.child.kill();
        let mut err = String::new();
        if let Some(mut stderr) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut stderr, &mut err);
        }
        let _ = self.child.wait();
        let last = err.lines().last().unwrap_or("it exited without a word");
        format!("the script worker did not start: {last}")
    }

    fn ask(&mut self, request: &str, deadline: Instant) -> Result<String, PoolError> {
        self.stdin
            .write_all(request.as_bytes())
            .and_then(|()| self.stdin.write_all(b"\n"))
            .and_then(|()| self.stdin.flush())
            .map_err(|e| PoolError::Broken(format!("the script worker is gone: {e}")))?;
        self.read_line(deadline)
    }

    /// One answer line, or TimeLimit once `deadline` passes.
    fn read_line(&mut self, deadline: Instant) -> Result<String, PoolError> {
        let mut line = String::new();
        loop {
            if self.stdout.buffer().contains(&b'\n') || self.wait_readable(deadline)? {
                let read = self
                    .stdout
                    .read_line(&mut line)
                    .map_err(|e| PoolError::Broken(format!("reading the script worker: {e}")))?;
                if read == 0 {
                    // at start-up this is Broken (see `Worker::start`), after a request Died
                    return Err(PoolError::Died);
                }
                if line.ends_with('\n') {
                    return Ok(line);
                }
            }
        }
    }

    /// Waits until stdout has data (true) or the deadline passes (TimeLimit).
    fn wait_readable(&self, deadline: Instant) -> Result<bool, PoolError> {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(PoolError::TimeLimit);
        }
        let mut poll = libc::pollfd {
            fd: self.stdout.get_ref().as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = left.as_millis().clamp(1, i32::MAX as u128) as i32;
        // SAFETY: one valid pollfd, owned by this frame, for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        Ok(ready > 0)
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The pool: idle workers, and how many exist (idle or lent out).
pub struct WorkerPool {
    settings: PoolSettings,
    idle: Mutex<Idle>,
    returned: Condvar,
}

struct Idle {
    workers: Vec<Worker>,
    /// Workers lent out plus idle ones; a killed worker is not counted until replaced.
    alive: usize,
}

impl WorkerPool {
    /// Starts one worker at once, so a missing interpreter or package shows at start-up.
    pub fn start(settings: PoolSettings) -> Result<WorkerPool, PoolError> {
        let first = Worker::start(&settings)?;
        Ok(WorkerPool {
            settings,
            idle: Mutex::new(Idle {
                workers: vec![first],
                alive: 1,
            }),
            returned: Condvar::new(),
        })
    }

    pub fn settings(&self) -> &PoolSettings {
        &self.settings
    }

    /// Sends one request (a JSON object) and returns the answer object.
    pub fn call(&self, request: &Value) -> Result<Value, PoolError> {
        let mut worker = self.take()?;
        let deadline = Instant::now() + self.settings.time_limit;
        match worker.ask(&request.to_string(), deadline) {
            Ok(line) => {
                let answer: Value = serde_json::from_str(&line)
                    .map_err(|e| PoolError::Broken(format!("unreadable answer: {e}")))?;
                if answer["fatal"] == Value::Bool(true) {
                    self.replace(worker);
                } else {
                    self.give_back(worker);
                }
                Ok(answer)
            }
            Err(error) => {
                self.replace(worker);
                Err(error)
            }
        }
    }

    fn take(&self) -> Result<Worker, PoolError> {
        let deadline = Instant::now() + self.settings.queue_timeout;
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        loop {
            if let Some(worker) = idle.workers.pop() {
                return Ok(worker);
            }
            if idle.alive < self.settings.workers {
                idle.alive += 1;
                drop(idle);
                return Worker::start(&self.settings).inspect_err(|_| {
                    self.idle.lock().unwrap_or_else(|p| p.into_inner()).alive -= 1;
                });
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(PoolError::Busy);
            }
            idle = self
                .returned
                .wait_timeout(idle, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn give_back(&self, worker: Worker) {
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.workers.push(worker);
        self.returned.notify_one();
    }

    /// Kills a worker; the next caller that finds no idle one starts a fresh process.
    fn replace(&self, worker: Worker) {
        worker.kill();
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        idle.alive -= 1;
        self.returned.notify_one();
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let idle = self.idle.get_mut().unwrap_or_else(|p| p.into_inner());
        for worker in idle.workers.drain(..) {
            worker.kill();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interpreter itself, not a wrapper that would add variables of its own (a pyenv
    /// shim is a shell script that sets PYENV_* and PATH before it runs Python).
    fn interpreter() -> String {
        let out = Command::new("python3")
            .args(["-c", "import sys; print(sys.executable)"])
            .output()
            .expect("python3 runs");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    fn settings() -> PoolSettings {
        PoolSettings {
            python: interpreter(),
            packages: crate::python::DEFAULT_PACKAGES.into(),
            workers: 1,
            time_limit: Duration::from_secs(5),
            memory_limit_mb: 64,
            queue_timeout: Duration::from_secs(5),
        }
    }

    /// The worker process inherits nothing of the server's environment (which holds the JWT
    /// secret and the database URL): at most `TZ`, as the server's.
    #[test]
    fn the_worker_environment_is_empty_but_for_the_time_zone() {
        assert!(
            std::env::var_os("PATH").is_some(),
            "the test process has a PATH"
        );
        let worker = Worker::start(&settings()).expect("the worker starts");
        let environ = std::fs::read(format!("/proc/{}/environ", worker.child.id())).unwrap();
        let names: Vec<String> = environ
            .split(|b| *b == 0)
            .filter(|entry| !entry.is_empty())
            .map(|entry| String::from_utf8_lossy(entry).into_owned())
            .collect();
        let expected: Vec<String> = std::env::var("TZ")
            .map(|zone| vec![format!("TZ={zone}")])
            .unwrap_or_default();
        assert_eq!(names, expected);
        worker.kill();
    }
}
