//! What unit tests across the core share.

use crate::conformance::conformance_dir;

/// The corpus folder, for helpers of tests that began with `conformance_or_skip!`.
pub(crate) fn conformance_root() -> std::path::PathBuf {
    conformance_dir("a test")
        .expect("a test that reads the conformance corpus starts with conformance_or_skip!()")
}

/// A file of SpiffWorkflow's test suite (`spiffworkflow-tests/` in the corpus), as
/// (path, text).
pub(crate) fn conformance_file(path: &str) -> (String, String) {
    let file = conformance_root().join("spiffworkflow-tests").join(path);
    let xml = std::fs::read_to_string(&file)
        .unwrap_or_else(|e| panic!("{} is missing ({e})", file.display()));
    (path.to_string(), xml)
}

/// One pool of script workers per test process, for unit tests that run Python (started on
/// first use, in UTC as SpiffArena's servers run).
pub(crate) fn script_host() -> std::sync::Arc<dyn crate::expr::ScriptHost> {
    use crate::expr::python::PythonHost;
    use std::sync::{Arc, OnceLock};
    use workflow_scripts::{default_packages, OsWallMode, PoolSettings, WorkerPool};
    static HOST: OnceLock<Arc<PythonHost>> = OnceLock::new();
    HOST.get_or_init(|| {
        std::env::set_var("TZ", "UTC");
        let workers = WorkerPool::start(PoolSettings {
            python: "python3".into(),
            packages: default_packages(),
            workers: 2,
            time_limit: std::time::Duration::from_secs(5),
            memory_limit_mb: 128,
            queue_timeout: std::time::Duration::from_secs(60),
            os_wall: OsWallMode::Required,
            unguarded_for_tests: false,
        })
        .expect("the script worker starts (python3 and the packages the build installs)");
        Arc::new(PythonHost::new(workers))
    })
    .clone()
}
