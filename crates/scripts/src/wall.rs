//! The operating-system wall around a script worker: what a script that got past the Python
//! guards (`python/script_worker.py`) can still do is bounded by the kernel.
//!
//! - **Files** (Landlock): read-only access beneath the interpreter's import path, the pinned
//!   packages, the time-zone and locale data, nothing else: no writes anywhere, no `/proc` of
//!   another process, no `/etc`. pytz zones and dateparser's language data load lazily, so reading
//!   those folders must stay possible.
//! - **Network and signals** (Landlock, where the kernel offers it): no TCP bind or connect, no
//!   signal to a process outside the worker.
//! - **System calls** (seccomp-bpf, built here with `seccompiler`): an allowlist of what the
//!   interpreter needs once it has imported its modules (pipes, memory, futex, clocks,
//!   getrandom, file reads that Landlock then checks, exit). No sockets, no
//!   `fork`/`clone`/`execve`, no `ptrace`, no `kill`, no raising a resource limit, no `open`
//!   for writing. Anything else fails with `EPERM`, which Python raises as `PermissionError`.
//! - **The process** (before `execve`): no file descriptor but its pipes and the Landlock
//!   ruleset, `RLIMIT_NOFILE`, `RLIMIT_FSIZE` and `RLIMIT_CORE` tight, a network namespace of
//!   its own where `unshare` is allowed, and an unprivileged user where the service runs as
//!   root and the interpreter is readable by that user.
//!
//! Landlock and seccomp are applied by the worker itself, after its imports and before it reads
//! its first request (imports open many files and map shared libraries; a script needs none of
//! that): the server creates the Landlock ruleset (the worker gets it as file descriptor 3)
//! and the seccomp program, and sends the program and the two system-call numbers as the
//! worker's first line. `PR_SET_NO_NEW_PRIVS` comes first, as both require.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use landlock::{
    make_bitflags, path_beneath_rules, Access, AccessFs, AccessNet, CompatLevel, Compatible,
    Ruleset, RulesetAttr, RulesetCreatedAttr, Scope, ABI,
};
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule,
};
use serde_json::{json, Value};

/// Whether script workers run behind the OS wall (`SCRIPT_OS_WALL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OsWallMode {
    /// Landlock (file system) and seccomp must both be enforced, or no worker starts.
    Required,
    /// No OS wall: only the Python guards. For kernels without Landlock, and for measuring.
    Off,
}

impl OsWallMode {
    pub const SETTING_VALUES: &'static str = "required, off";

    pub fn parse(value: &str) -> Option<OsWallMode> {
        match value {
            "required" => Some(OsWallMode::Required),
            "off" => Some(OsWallMode::Off),
            _ => None,
        }
    }
}

/// The descriptor number the worker finds its Landlock ruleset at.
const RULESET_FD: RawFd = 3;
/// Open files a worker needs: its three standard streams, the copy of stdout its answers go
/// out on, /dev/null, the ruleset, and one file read at a time (a zone, language data).
const MAX_OPEN_FILES: libc::rlim_t = 32;

/// What one pool's workers are started with.
pub struct OsWall {
    /// The Landlock ruleset, created once (`None` when the wall is off).
    ruleset: Option<OwnedFd>,
    /// The seccomp program, as the bytes of `struct sock_filter[]`.
    seccomp: Vec<u8>,
    /// The unprivileged user and group the workers run as (when the service is root).
    user: Option<(libc::uid_t, libc::gid_t)>,
}

/// Why the wall cannot be built.
#[derive(Debug, thiserror::Error)]
#[error("the script workers' OS wall cannot be built: {0} (set WORKFLOW_BACKEND_SCRIPT_OS_WALL=off to run scripts behind the Python guards only)")]
pub struct WallError(String);

impl OsWall {
    /// No wall: the worker is told so in its first line.
    pub fn off() -> OsWall {
        OsWall {
            ruleset: None,
            seccomp: Vec::new(),
            user: None,
        }
    }

    /// The wall for workers of `interpreter` that read `readable` (the interpreter's import
    /// path and the packages folder; time-zone data is added here).
    pub fn build(interpreter: &Path, readable: &[PathBuf]) -> Result<OsWall, WallError> {
        let mut paths: Vec<PathBuf> = readable.to_vec();
        // glibc reads the TZ file lazily; zoneinfo (stdlib) and dateutil read the system's zones
        paths.extend(["/usr/share/zoneinfo", "/etc/localtime"].map(PathBuf::from));
        // compiled locales, for a script that sets one (the locale is put back afterwards)
        paths.push(PathBuf::from("/usr/lib/locale"));
        paths.retain(|path| path.exists());
        let ruleset = landlock_ruleset(&paths)?;
        let seccomp = seccomp_program()?;
        let user = unprivileged_user(interpreter, readable);
        Ok(OsWall {
            ruleset: Some(ruleset),
            seccomp,
            user,
        })
    }

    /// Whether workers drop to an unprivileged user (the service runs as root).
    pub fn drops_privileges(&self) -> bool {
        self.user.is_some()
    }

    /// The worker's first line: what it applies after its imports (`null`: nothing).
    pub fn seal_line(&self) -> String {
        let wall = match &self.ruleset {
            None => Value::Null,
            Some(_) => json!({
                "landlock_fd": RULESET_FD,
                "sys_landlock_restrict_self": libc::SYS_landlock_restrict_self,
                "seccomp": hex::encode(&self.seccomp),
            }),
        };
        json!({ "wall": wall }).to_string()
    }

    /// Sets up the worker process between `fork` and `execve`: the ruleset at descriptor 3,
    /// resource limits, a network namespace of its own, the unprivileged user.
    pub fn prepare(&self, command: &mut Command) {
        let Some(ruleset) = &self.ruleset else {
            return;
        };
        let ruleset = ruleset.as_raw_fd();
        let user = self.user;
        // SAFETY: the closure runs in the forked child before execve and calls only
        // async-signal-safe system calls (dup2, setrlimit, unshare, setgroups, setgid,
        // setuid) on values copied in; it allocates nothing.
        unsafe {
            command.pre_exec(move || {
                // dup2 leaves the copy without close-on-exec, so the worker inherits it; when
                // the ruleset already is descriptor 3, dup2 does nothing and the flag is
                // cleared by hand
                let inherited = if ruleset == RULESET_FD {
                    libc::fcntl(RULESET_FD, libc::F_SETFD, 0)
                } else {
                    libc::dup2(ruleset, RULESET_FD)
                };
                if inherited < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limit(libc::RLIMIT_NOFILE, MAX_OPEN_FILES)?;
                limit(libc::RLIMIT_FSIZE, 0)?;
                limit(libc::RLIMIT_CORE, 0)?;
                // Only root (or a user namespace) may; seccomp refuses sockets anyway.
                let _ = libc::unshare(libc::CLONE_NEWNET);
                if let Some((uid, gid)) = user {
                    if libc::setgroups(0, std::ptr::null()) != 0
                        || libc::setgid(gid) != 0
                        || libc::setuid(uid) != 0
                    {
                        return Err(std::io::Error::last_os_error());
                    }
                }
                Ok(())
            });
        }
    }
}

fn limit(resource: libc::__rlimit_resource_t, value: libc::rlim_t) -> std::io::Result<()> {
    let limit = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: a valid rlimit owned by this frame.
    if unsafe { libc::setrlimit(resource, &limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Read-only access beneath `paths`; every other file-system access, TCP bind and connect,
/// and signals out of the worker are denied. The file-system part is required (the kernel
/// must offer Landlock); the network and scope parts apply where the kernel has them.
fn landlock_ruleset(paths: &[PathBuf]) -> Result<OwnedFd, WallError> {
    let refused = |e: landlock::RulesetError| WallError(format!("Landlock: {e}"));
    let read = make_bitflags!(AccessFs::{ReadFile | ReadDir});
    let created = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .map_err(refused)?
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(ABI::V6))
        .map_err(refused)?
        .handle_access(AccessNet::from_all(ABI::V6))
        .map_err(refused)?
        .scope(Scope::from_all(ABI::V6))
        .map_err(refused)?
        .create()
        .map_err(refused)?
        .add_rules(path_beneath_rules(paths, read))
        .map_err(refused)?;
    Option::<OwnedFd>::from(created)
        .ok_or_else(|| WallError("this kernel does not enforce Landlock".into()))
}

/// System calls a worker makes once its imports are done (found with strace over the
/// script corpus), each allowed as a whole but `openat` (read-only) and `prlimit64`
/// (reading a limit only).
fn allowed_syscalls() -> Vec<i64> {
    let mut calls = vec![
        libc::SYS_read,
        libc::SYS_readv,
        libc::SYS_pread64,
        libc::SYS_write,
        libc::SYS_writev,
        libc::SYS_close,
        libc::SYS_lseek,
        libc::SYS_fstat,
        libc::SYS_newfstatat,
        libc::SYS_statx,
        libc::SYS_faccessat,
        libc::SYS_faccessat2,
        libc::SYS_readlinkat,
        libc::SYS_getdents64,
        libc::SYS_getcwd,
        libc::SYS_fcntl,
        libc::SYS_mmap,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_mprotect,
        libc::SYS_madvise,
        libc::SYS_brk,
        libc::SYS_futex,
        libc::SYS_rt_sigaction,
        libc::SYS_rt_sigprocmask,
        libc::SYS_rt_sigreturn,
        libc::SYS_sigaltstack,
        libc::SYS_restart_syscall,
        libc::SYS_clock_gettime,
        libc::SYS_clock_getres,
        libc::SYS_clock_nanosleep,
        libc::SYS_nanosleep,
        libc::SYS_gettimeofday,
        libc::SYS_getrandom,
        libc::SYS_getpid,
        libc::SYS_gettid,
        libc::SYS_getppid,
        libc::SYS_getuid,
        libc::SYS_geteuid,
        libc::SYS_getgid,
        libc::SYS_getegid,
        libc::SYS_sched_getaffinity,
        libc::SYS_sched_yield,
        libc::SYS_sysinfo,
        libc::SYS_uname,
        libc::SYS_exit,
        libc::SYS_exit_group,
    ];
    #[cfg(target_arch = "x86_64")]
    calls.extend([
        libc::SYS_stat,
        libc::SYS_lstat,
        libc::SYS_access,
        libc::SYS_readlink,
        libc::SYS_getrlimit,
        libc::SYS_time,
    ]);
    calls
}

fn seccomp_program() -> Result<Vec<u8>, WallError> {
    let invalid = |e: seccompiler::BackendError| WallError(format!("seccomp: {e}"));
    let condition = |arg, op, value| {
        SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value).map_err(invalid)
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = allowed_syscalls()
        .into_iter()
        .map(|call| (call, Vec::new()))
        .collect();
    // openat(dirfd, path, flags, mode): only without a flag that writes or creates (O_TMPFILE
    // includes O_DIRECTORY, which reading a folder needs: only its own bit counts)
    let writes = (libc::O_WRONLY
        | libc::O_RDWR
        | libc::O_CREAT
        | libc::O_TRUNC
        | libc::O_APPEND
        | (libc::O_TMPFILE & !libc::O_DIRECTORY)) as u64;
    rules.insert(
        libc::SYS_openat,
        vec![
            SeccompRule::new(vec![condition(2, SeccompCmpOp::MaskedEq(writes), 0)?])
                .map_err(invalid)?,
        ],
    );
    // prlimit64(pid, resource, new, old): reading a limit, never setting one (root could
    // raise the address-space limit)
    rules.insert(
        libc::SYS_prlimit64,
        vec![SeccompRule::new(vec![SeccompCondition::new(
            2,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::Eq,
            0,
        )
        .map_err(invalid)?])
        .map_err(invalid)?],
    );
    let arch = std::env::consts::ARCH
        .try_into()
        .map_err(|e: seccompiler::BackendError| invalid(e))?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Errno(libc::EPERM as u32),
        SeccompAction::Allow,
        arch,
    )
    .map_err(invalid)?;
    let program: BpfProgram = filter.try_into().map_err(invalid)?;
    Ok(program
        .iter()
        .flat_map(|instruction| {
            let mut bytes = Vec::with_capacity(8);
            bytes.extend_from_slice(&instruction.code.to_ne_bytes());
            bytes.push(instruction.jt);
            bytes.push(instruction.jf);
            bytes.extend_from_slice(&instruction.k.to_ne_bytes());
            bytes
        })
        .collect())
}

/// `nobody`, when this process is root and `nobody` can read the interpreter and every folder
/// the worker imports from (else the workers stay root, still behind Landlock and seccomp).
fn unprivileged_user(
    interpreter: &Path,
    readable: &[PathBuf],
) -> Option<(libc::uid_t, libc::gid_t)> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let reachable = std::iter::once(interpreter)
        .chain(readable.iter().map(PathBuf::as_path))
        .filter(|path| path.exists())
        .all(readable_by_others);
    if !reachable {
        static SAID: std::sync::Once = std::sync::Once::new();
        SAID.call_once(|| {
            tracing::warn!(
                interpreter = %interpreter.display(),
                "script workers run as root (behind Landlock and seccomp): the interpreter or its \
                 packages are not readable by other users"
            )
        });
        return None;
    }
    // SAFETY: a NUL-terminated name; the entry is copied out before any other getpw* call.
    let entry = unsafe { libc::getpwnam(c"nobody".as_ptr()) };
    if entry.is_null() {
        return None;
    }
    // SAFETY: non-null, from getpwnam.
    let entry = unsafe { &*entry };
    Some((entry.pw_uid, entry.pw_gid))
}

/// Every folder above `path` lets others through, and `path` lets others read it.
fn readable_by_others(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let Ok(path) = path.canonicalize() else {
        return false;
    };
    let mode = |p: &Path| {
        std::fs::metadata(p)
            .map(|m| m.permissions().mode())
            .unwrap_or(0)
    };
    path.ancestors().skip(1).all(|dir| mode(dir) & 0o001 != 0) && mode(&path) & 0o004 != 0
}
