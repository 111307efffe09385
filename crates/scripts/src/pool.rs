//! A bounded pool of CPython worker processes (`python/script_worker.py`), each serving one
//! request at a time over JSON lines on its stdin/stdout, each behind the OS wall (`wall`).
//!
//! Callers are blocking threads (never async ones): a caller takes a free worker, waiting at
//! most the queue timeout (then the pool is busy), writes the request and waits for the
//! answer until the script's deadline. A worker past its deadline is killed (SIGKILL: a
//! script stuck in one C call, `7 ** 20000000`, cannot be interrupted any other way) and
//! replaced; so is one that died or asked to be replaced (after a MemoryError).
//!
//! Waiting callers are served fairly by model ("tenant"): a freed worker goes to the waiting
//! tenant that holds the fewest workers (the longest-waiting caller on a tie), so one model's
//! runaway scripts delay another model's by at most one time limit. Once every worker is lent
//! out, a spare process is started in the background, so that a killed worker is replaced at
//! once rather than after an interpreter start-up.

use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::wall::{OsWall, OsWallMode};
pub use workflow_script_port::PoolError;

/// The worker this binary was built with: the worker run is the file of this name in the
/// packages folder (build.rs copies it there), and must be this one.
const WORKER_SOURCE: &str = include_str!("../python/script_worker.py");
const WORKER_FILE: &str = env!("WORKFLOW_BACKEND_WORKER_FILE");

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
    /// Whether workers run behind Landlock and seccomp (`SCRIPT_OS_WALL`).
    pub os_wall: OsWallMode,
    /// Tests of the OS wall only: the workers also run `exec_unguarded` requests, plain
    /// `exec` without the Python guards, to show what the OS wall alone refuses. No setting
    /// reaches it.
    #[doc(hidden)]
    pub unguarded_for_tests: bool,
}

struct Worker {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// Where a program is looked for when this process has no PATH (execvp's default).
const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The interpreter to start: `python` as given when it is a path, else found on this
/// process's PATH, or the default one when there is none (the worker itself gets no PATH:
/// see [`bare_command`]).
fn resolve_program(python: &str) -> PathBuf {
    if python.contains('/') {
        return python.into();
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| DEFAULT_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(python))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| python.into())
}

/// A command with the worker's environment: empty but for `TZ` (the local time zone scripts
/// see, as the server's). The server's own environment holds its secrets
/// (`WORKFLOW_BACKEND_JWT_SECRET`, the database URL), and nothing of it is for scripts.
fn bare_command(program: &Path) -> Command {
    let mut command = Command::new(program);
    command.env_clear();
    if let Some(zone) = std::env::var_os("TZ") {
        command.env("TZ", zone);
    }
    command
}

/// What an interpreter is: asked once per process (asking starts a Python), as every pool of
/// the process (tests start many) runs the same one.
fn interpreter_of(program: &Path) -> Result<(PathBuf, Vec<PathBuf>), PoolError> {
    static KNOWN: Mutex<BTreeMap<PathBuf, (PathBuf, Vec<PathBuf>)>> = Mutex::new(BTreeMap::new());
    let mut known = KNOWN.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(found) = known.get(program) {
        return Ok(found.clone());
    }
    let found = inspect_interpreter(program)?;
    known.insert(program.to_path_buf(), found.clone());
    Ok(found)
}

/// The interpreter's own executable (not a wrapper such as a pyenv shim) and its import path.
fn inspect_interpreter(program: &Path) -> Result<(PathBuf, Vec<PathBuf>), PoolError> {
    let out = bare_command(program)
        .args(["-I", "-S", "-c"])
        .arg("import json, sys; print(json.dumps([sys.executable, sys.path]))")
        .output()
        .map_err(|e| PoolError::Broken(format!("cannot start {}: {e}", program.display())))?;
    let (executable, path): (PathBuf, Vec<PathBuf>) =
        serde_json::from_slice(&out.stdout).map_err(|_| {
            PoolError::Broken(format!(
                "{} did not say where it is: {}",
                program.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        })?;
    let path = path.into_iter().filter(|p| p.is_absolute()).collect();
    // Python cannot always tell where it is (no PATH, started by a bare name): then the
    // program as found is the interpreter
    if executable.as_os_str().is_empty() {
        return Ok((program.to_path_buf(), path));
    }
    Ok((executable, path))
}

/// What starts a worker: the interpreter, the settings and the wall.
struct Launcher {
    program: PathBuf,
    settings: PoolSettings,
    wall: OsWall,
    /// The worker's file, in the packages folder.
    worker: PathBuf,
}

impl Launcher {
    fn new(settings: PoolSettings) -> Result<Launcher, PoolError> {
        let worker = worker_file(Path::new(&settings.packages))?;
        let (program, mut readable) = interpreter_of(&resolve_program(&settings.python))?;
        readable.push(PathBuf::from(&settings.packages));
        let wall = match settings.os_wall {
            OsWallMode::Required => {
                OsWall::build(&program, &readable).map_err(|e| PoolError::Broken(e.to_string()))?
            }
            OsWallMode::Off => OsWall::off(),
        };
        Ok(Launcher {
            program,
            settings,
            wall,
            worker,
        })
    }

    /// The worker's command line: `-I` no environment or user site; `-S` no site module
    /// (nothing but the stdlib and our packages folder, and no start-up cost from site .pth
    /// files); `-X utf8`: the pipes are UTF-8 whatever the locale. The worker runs from its
    /// file, so that `ps` shows a path, not the source.
    fn command(&self) -> Command {
        let mut command = bare_command(&self.program);
        command
            .args(["-I", "-S", "-u", "-X", "utf8"])
            .arg(&self.worker)
            .arg(&self.settings.packages)
            .arg(self.settings.memory_limit_mb.to_string());
        if self.settings.unguarded_for_tests {
            command.arg("--unguarded-for-tests");
        }
        self.wall.prepare(&mut command);
        command
    }

    fn start(&self) -> Result<Worker, PoolError> {
        let mut child = self
            .command()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                PoolError::Broken(format!("cannot start {}: {e}", self.program.display()))
            })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut worker = Worker {
            child,
            stdin,
            stdout,
        };
        // the worker imports, then reads what to seal itself with, then says it is ready
        let deadline = Instant::now() + Duration::from_secs(30);
        match worker.ask(&self.wall.seal_line(), deadline) {
            Ok(line) => match serde_json::from_str::<Value>(&line) {
                Ok(answer) if answer["ready"] == Value::Bool(true) => Ok(worker),
                Ok(answer) => {
                    worker.kill();
                    let why = answer["error"].as_str().unwrap_or("no reason given");
                    Err(PoolError::Broken(format!(
                        "the script worker did not start: {why}"
                    )))
                }
                Err(_) => Err(PoolError::Broken(worker.stop_and_explain())),
            },
            Err(_) => Err(PoolError::Broken(worker.stop_and_explain())),
        }
    }
}

/// The worker file in `packages`, checked to be the one this binary was built with: a folder
/// of another build would run a worker that speaks another protocol.
fn worker_file(packages: &Path) -> Result<PathBuf, PoolError> {
    let file = packages.join(WORKER_FILE);
    match std::fs::read_to_string(&file) {
        Ok(source) if source == WORKER_SOURCE => Ok(file),
        Ok(_) => Err(PoolError::Broken(format!(
            "{} is not the script worker of this build: use the python-packages folder built \
             with this binary",
            file.display()
        ))),
        Err(e) => Err(PoolError::Broken(format!(
            "no script worker at {} ({e}): put the python-packages folder built with this \
             binary beside it, or name it with WORKFLOW_BACKEND_PYTHON_PACKAGES",
            file.display()
        ))),
    }
}

impl Worker {
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
                    // at start-up this is Broken (see `Launcher::start`), after a request Died
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

/// The pool: its launcher and the state callers share.
pub struct WorkerPool {
    shared: Arc<Shared>,
}

struct Shared {
    launcher: Launcher,
    state: Mutex<State>,
    changed: Condvar,
}

/// A waiting caller's place in the queue.
type Ticket = u64;

/// What a waiting caller is handed.
enum Grant {
    Worker(Worker),
    /// Room for one more worker: the caller starts it.
    Start,
}

#[derive(Default)]
struct State {
    idle: Vec<Worker>,
    /// Workers lent out plus idle ones (and ones being started); a killed worker is not
    /// counted until replaced. The spare is not counted.
    alive: usize,
    /// A started worker that replaces the next killed one at once.
    spare: Option<Worker>,
    spare_starting: bool,
    /// Workers each tenant holds now.
    lent: BTreeMap<String, usize>,
    /// Waiting callers by tenant, in arrival order.
    waiting: BTreeMap<String, VecDeque<Ticket>>,
    granted: BTreeMap<Ticket, Grant>,
    next_ticket: Ticket,
}

impl State {
    /// The next caller to serve: of the tenant that holds the fewest workers, the one that
    /// has waited longest (tickets grow).
    fn next_waiting(&mut self) -> Option<Ticket> {
        let tenant = self
            .waiting
            .iter()
            .min_by_key(|(tenant, tickets)| {
                (self.lent.get(*tenant).copied().unwrap_or(0), tickets[0])
            })
            .map(|(tenant, _)| tenant.clone())?;
        let tickets = self.waiting.get_mut(&tenant).expect("chosen above");
        let ticket = tickets.pop_front().expect("queues are never empty");
        if tickets.is_empty() {
            self.waiting.remove(&tenant);
        }
        Some(ticket)
    }

    /// Hands free workers (or room for new ones) to waiting callers.
    fn dispatch(&mut self, limit: usize) {
        while !self.waiting.is_empty() {
            let grant = if let Some(worker) = self.idle.pop() {
                Grant::Worker(worker)
            } else if self.alive < limit {
                self.alive += 1;
                Grant::Start
            } else {
                break;
            };
            let ticket = self.next_waiting().expect("someone waits");
            self.granted.insert(ticket, grant);
        }
    }

    fn forget(&mut self, ticket: Ticket) {
        self.waiting.retain(|_, tickets| {
            tickets.retain(|t| *t != ticket);
            !tickets.is_empty()
        });
    }
}

/// A worker lent to a caller of `tenant`.
struct Lent {
    worker: Worker,
    tenant: String,
}

impl WorkerPool {
    /// Starts one worker at once, so a missing interpreter or package (or a kernel that
    /// cannot hold the OS wall) shows at start-up.
    pub fn start(settings: PoolSettings) -> Result<WorkerPool, PoolError> {
        let launcher = Launcher::new(settings)?;
        let first = launcher.start()?;
        Ok(WorkerPool {
            shared: Arc::new(Shared {
                launcher,
                state: Mutex::new(State {
                    idle: vec![first],
                    alive: 1,
                    ..State::default()
                }),
                changed: Condvar::new(),
            }),
        })
    }

    pub fn settings(&self) -> &PoolSettings {
        &self.shared.launcher.settings
    }

    /// Whether the workers run as an unprivileged user (the service is root).
    pub fn drops_privileges(&self) -> bool {
        self.shared.launcher.wall.drops_privileges()
    }

    /// Callers waiting for a worker now.
    pub fn waiting(&self) -> usize {
        self.lock().waiting.values().map(VecDeque::len).sum()
    }

    /// Sends one request (a JSON object) and returns the answer object.
    pub fn call(&self, request: &Value) -> Result<Value, PoolError> {
        self.call_for("", request)
    }

    /// As [`call`](Self::call), queued fairly among the callers of other tenants (models).
    pub fn call_for(&self, tenant: &str, request: &Value) -> Result<Value, PoolError> {
        let mut lent = self.take(tenant)?;
        let deadline = Instant::now() + self.settings().time_limit;
        match lent.worker.ask(&request.to_string(), deadline) {
            Ok(line) => {
                let answer: Value = match serde_json::from_str(&line) {
                    Ok(answer) => answer,
                    Err(e) => {
                        self.replace(lent);
                        return Err(PoolError::Broken(format!("unreadable answer: {e}")));
                    }
                };
                if answer["fatal"] == Value::Bool(true) {
                    self.replace(lent);
                } else {
                    self.give_back(lent);
                }
                Ok(answer)
            }
            Err(error) => {
                self.replace(lent);
                Err(error)
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn take(&self, tenant: &str) -> Result<Lent, PoolError> {
        let limit = self.settings().workers;
        let deadline = Instant::now() + self.settings().queue_timeout;
        let mut state = self.lock();
        let grant = if !state.waiting.is_empty() {
            None
        } else if let Some(worker) = state.idle.pop() {
            Some(Grant::Worker(worker))
        } else if state.alive < limit {
            state.alive += 1;
            Some(Grant::Start)
        } else {
            None
        };
        let grant = match grant {
            Some(grant) => grant,
            None => {
                let ticket = state.next_ticket;
                state.next_ticket += 1;
                state
                    .waiting
                    .entry(tenant.to_string())
                    .or_default()
                    .push_back(ticket);
                self.start_spare_if_full(&mut state);
                loop {
                    if let Some(grant) = state.granted.remove(&ticket) {
                        break grant;
                    }
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        state.forget(ticket);
                        return Err(PoolError::Busy);
                    }
                    state = self
                        .shared
                        .changed
                        .wait_timeout(state, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0;
                }
            }
        };
        *state.lent.entry(tenant.to_string()).or_default() += 1;
        drop(state);
        let worker = match grant {
            Grant::Worker(worker) => worker,
            Grant::Start => self.shared.launcher.start().inspect_err(|_| {
                let mut state = self.lock();
                state.alive -= 1;
                Self::unlend(&mut state, tenant);
                state.dispatch(limit);
                self.shared.changed.notify_all();
            })?,
        };
        Ok(Lent {
            worker,
            tenant: tenant.to_string(),
        })
    }

    fn unlend(state: &mut State, tenant: &str) {
        if let Some(count) = state.lent.get_mut(tenant) {
            *count -= 1;
            if *count == 0 {
                state.lent.remove(tenant);
            }
        }
    }

    fn give_back(&self, lent: Lent) {
        let mut state = self.lock();
        Self::unlend(&mut state, &lent.tenant);
        state.idle.push(lent.worker);
        state.dispatch(self.settings().workers);
        self.shared.changed.notify_all();
    }

    /// Kills a worker; the spare (if started) takes its place, else the next caller that finds
    /// no idle one starts a fresh process.
    fn replace(&self, lent: Lent) {
        lent.worker.kill();
        let mut state = self.lock();
        Self::unlend(&mut state, &lent.tenant);
        match state.spare.take() {
            Some(spare) => state.idle.push(spare),
            None => state.alive -= 1,
        }
        state.dispatch(self.settings().workers);
        self.shared.changed.notify_all();
        self.start_spare_if_full(&mut state);
    }

    /// Callers wait and every worker is lent out: a runaway may soon be killed, so a spare
    /// is started now (in the background) to take its place at once.
    fn start_spare_if_full(&self, state: &mut State) {
        let full = state.idle.is_empty() && state.alive >= self.settings().workers;
        if !full || state.spare.is_some() || state.spare_starting {
            return;
        }
        state.spare_starting = true;
        let shared = Arc::clone(&self.shared);
        std::thread::spawn(move || {
            let started = shared.launcher.start();
            let mut state = shared.state.lock().unwrap_or_else(|p| p.into_inner());
            state.spare_starting = false;
            match started {
                Ok(worker) => state.spare = Some(worker),
                Err(error) => tracing::warn!(?error, "the spare script worker did not start"),
            }
        });
    }
}

impl Drop for WorkerPool {
    fn drop(&mut self) {
        let mut state = self.lock();
        let spare = state.spare.take();
        let workers: Vec<Worker> = state.idle.drain(..).chain(spare).collect();
        drop(state);
        for worker in workers {
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
            packages: crate::default_packages(),
            workers: 1,
            time_limit: Duration::from_secs(5),
            memory_limit_mb: 64,
            queue_timeout: Duration::from_secs(5),
            os_wall: OsWallMode::Required,
            unguarded_for_tests: false,
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
        let worker = Launcher::new(settings())
            .and_then(|launcher| launcher.start())
            .expect("the worker starts");
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

    /// The worker runs from its file in the packages folder: its command line names the
    /// file, not the worker's source (which `ps` would show to anyone on the machine).
    #[test]
    fn the_worker_runs_from_its_file() {
        let worker = Launcher::new(settings())
            .and_then(|launcher| launcher.start())
            .expect("the worker starts");
        let cmdline = std::fs::read(format!("/proc/{}/cmdline", worker.child.id())).unwrap();
        let args: Vec<String> = cmdline
            .split(|b| *b == 0)
            .map(|arg| String::from_utf8_lossy(arg).into_owned())
            .collect();
        let file = Path::new(&settings().packages).join(WORKER_FILE);
        assert!(
            args.contains(&file.to_string_lossy().into_owned()),
            "{args:?}"
        );
        assert!(args.iter().all(|arg| arg.len() < 4096), "{args:?}");
        worker.kill();
    }

    /// A packages folder without the worker, or with another build's, is refused at start
    /// with what to do, rather than running a worker that speaks another protocol.
    #[test]
    fn a_packages_folder_of_another_build_is_refused() {
        let folder = std::env::temp_dir().join(format!("wb-packages-{}", std::process::id()));
        std::fs::create_dir_all(&folder).unwrap();
        let with = |packages: &Path| PoolSettings {
            packages: packages.to_string_lossy().into_owned(),
            ..settings()
        };
        let missing = Launcher::new(with(&folder)).err().expect("refused");
        assert!(
            format!("{missing:?}").contains("no script worker at"),
            "{missing:?}"
        );
        std::fs::write(folder.join(WORKER_FILE), "print('another build')\n").unwrap();
        let other = Launcher::new(with(&folder)).err().expect("refused");
        assert!(
            format!("{other:?}").contains("not the script worker of this build"),
            "{other:?}"
        );
        std::fs::remove_dir_all(&folder).unwrap();
    }

    /// One model's runaways hold both workers and two more wait: another model's one-line
    /// script is served by the first worker freed (the runaway's, killed at its time limit,
    /// replaced at once by the spare), not behind the waiting runaways.
    #[test]
    fn a_model_waits_at_most_one_time_limit_behind_another_models_runaways() {
        let pool = std::sync::Arc::new(
            WorkerPool::start(PoolSettings {
                workers: 2,
                time_limit: Duration::from_secs(1),
                ..settings()
            })
            .expect("the pool starts"),
        );
        let runaways: Vec<_> = (0..4)
            .map(|_| {
                let pool = std::sync::Arc::clone(&pool);
                std::thread::spawn(move || {
                    let runaway = serde_json::json!({"op": "exec", "source": "while True:\n    pass", "data": {}});
                    pool.call_for("runaway", &runaway)
                })
            })
            .collect();
        // two run, two wait (polled: the threads need a moment to reach the queue)
        let queued = Instant::now();
        while pool.waiting() < 2 {
            assert!(
                queued.elapsed() < Duration::from_secs(10),
                "the runaways never queued"
            );
            std::thread::yield_now();
        }
        let asked = Instant::now();
        let answer = pool
            .call_for(
                "other",
                &serde_json::json!({"op": "exec", "source": "x = 1", "data": {}}),
            )
            .expect("an answer");
        let waited = asked.elapsed();
        assert_eq!(answer["data"]["x"], 1, "{answer}");
        assert!(waited < Duration::from_millis(1200), "waited {waited:?}");
        for runaway in runaways {
            assert_eq!(runaway.join().unwrap(), Err(PoolError::TimeLimit));
        }
    }
}
