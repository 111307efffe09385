//! Embeds the web console (`console/` at the top of the repository) in the binary: the HTTP
//! layer serves it from itself, so `cargo run` on a fresh machine and a container need nothing
//! beside it.

use std::path::{Path, PathBuf};

fn main() {
    embed_console();
}

/// Lists every file under `console/` (the web console's pages and vendored libraries) in
/// `<OUT_DIR>/console_files.rs` as `(path, include_bytes!(...))`, so the binary serves the
/// console from itself: `cargo run` on a fresh machine and a container need nothing beside it.
fn embed_console() {
    let root = Path::new("../../console");
    println!("cargo:rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    collect_files(root, &mut files);
    files.sort();
    let mut generated = String::from("&[\n");
    for file in &files {
        println!("cargo:rerun-if-changed={}", file.display());
        let served = file
            .strip_prefix(root)
            .expect("under console/")
            .to_string_lossy()
            .replace('\\', "/");
        let absolute = std::fs::canonicalize(file).expect("a console file");
        generated.push_str(&format!(
            "    ({served:?}, include_bytes!({:?}) as &[u8]),\n",
            absolute.display().to_string()
        ));
    }
    generated.push_str("]\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("console_files.rs"), generated).expect("write console_files.rs");
}

fn collect_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            println!("cargo:rerun-if-changed={}", path.display());
            collect_files(&path, files);
        } else {
            files.push(path);
        }
    }
}
