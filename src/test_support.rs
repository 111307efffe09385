//! What unit tests across the core share.

/// A file of SpiffWorkflow's test suite (`../shared/conformance/spiffworkflow-tests`), as
/// (path, text).
pub(crate) fn conformance_file(path: &str) -> (String, String) {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../shared/conformance/spiffworkflow-tests")
        .join(path);
    let xml = std::fs::read_to_string(&file).unwrap_or_else(|e| {
        panic!(
            "{} is missing ({e}): ../shared must be beside the checkout",
            file.display()
        )
    });
    (path.to_string(), xml)
}
