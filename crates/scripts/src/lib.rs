//! The script workers: SpiffArena-dialect Python run by CPython in a pool of worker processes
//! (`pool`), each behind the OS wall (`wall`). Worker processes, not an interpreter in this
//! process, because only a process can be stopped in the middle of one long C call and held to
//! an address-space limit (docs/adr/0003-script-runtime.md has the measurements). The core
//! reaches them through `workflow_script_port::ScriptWorkers`.
//!
//! Calls block: the service runs every engine step on a blocking thread, never on the async
//! ones, so a runaway script holds up only its own request.

mod pool;
mod wall;

pub use pool::{PoolError, PoolSettings, WorkerPool};
pub use wall::OsWallMode;

/// The name of the folder the build fills with the script worker and its pinned packages,
/// beside the binary (see this crate's build.rs).
const PACKAGES_FOLDER: &str = env!("WORKFLOW_BACKEND_PACKAGES_FOLDER");

/// Where the script worker's folder is when no setting names it: `python-packages` beside the
/// executable, or one level up (where the build puts it for test binaries in `deps/`). Found
/// at run time, so a copied binary with its folder beside it runs scripts; when neither
/// exists, the first (the folder the pool then reports missing).
pub fn default_packages() -> String {
    let executable = std::env::current_exe().ok();
    let beside = executable.as_deref().and_then(std::path::Path::parent);
    let candidates: Vec<_> = beside
        .into_iter()
        .flat_map(|dir| {
            [
                dir.join(PACKAGES_FOLDER),
                dir.join("..").join(PACKAGES_FOLDER),
            ]
        })
        .collect();
    let found = candidates
        .iter()
        .find_map(|folder| std::fs::canonicalize(folder).ok())
        .or_else(|| candidates.first().cloned())
        .unwrap_or_else(|| PACKAGES_FOLDER.into());
    found.to_string_lossy().into_owned()
}
impl workflow_script_port::ScriptWorkers for WorkerPool {
    fn call_for(
        &self,
        tenant: &str,
        request: &serde_json::Value,
    ) -> Result<serde_json::Value, PoolError> {
        WorkerPool::call_for(self, tenant, request)
    }

    fn time_limit(&self) -> std::time::Duration {
        self.settings().time_limit
    }
}
