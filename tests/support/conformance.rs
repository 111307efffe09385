//! Where the conformance corpus is: SpiffWorkflow's own test suite (`spiffworkflow-tests/`) and
//! SpiffArena's fixtures (`spiffarena-fixtures/`), kept outside this repository. Its folder is
//! the setting `WORKFLOW_BACKEND_CONFORMANCE_DIR`; a test that reads it skips, saying so on
//! the terminal, when the setting is unset, so that a clone alone passes `cargo test`. CI sets
//! it (and requires the folder). Shared by the core's unit tests and the integration tests,
//! each of which includes this file as its crate's `conformance` module, with `#[macro_use]`.

use std::io::Write;
use std::path::PathBuf;

pub const CONFORMANCE_SETTING: &str = "WORKFLOW_BACKEND_CONFORMANCE_DIR";

/// The corpus folder; `None`, after a line on the terminal naming `test`, when the setting is
/// unset. A setting that names no folder fails the test: it was meant to run.
pub fn conformance_dir(test: &str) -> Option<PathBuf> {
    let Some(dir) = std::env::var_os(CONFORMANCE_SETTING).filter(|dir| !dir.is_empty()) else {
        // straight to the terminal: the test harness captures print!/eprint! of passing tests
        let _ = writeln!(
            std::io::stderr(),
            "skipped {test}: {CONFORMANCE_SETTING} is not set (the conformance corpus)"
        );
        return None;
    };
    let dir = PathBuf::from(dir);
    assert!(
        dir.is_dir(),
        "{CONFORMANCE_SETTING}={} is not a folder",
        dir.display()
    );
    Some(dir)
}

/// The corpus folder, or a return from the calling test, after a line naming it, when the
/// setting is unset.
macro_rules! conformance_or_skip {
    () => {{
        fn here() {}
        let name = std::any::type_name_of_val(&here);
        match crate::conformance::conformance_dir(
            name.trim_end_matches("::here")
                .trim_end_matches("::{{closure}}"),
        ) {
            Some(dir) => dir,
            None => return,
        }
    }};
}
