//! Installs the script worker's pinned Python packages (python/requirements.txt) into
//! `<target dir>/python-packages` with pip, once per change of the requirements, and tells the
//! crate where they are (`WORKFLOW_BACKEND_PYTHON_PACKAGES`, the default of the setting of the
//! same name). Without network or pip the build goes on with a warning; the service then
//! refuses to start with a message saying what is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    embed_console();
    let requirements = Path::new("python/requirements.txt");
    println!("cargo:rerun-if-changed={}", requirements.display());
    println!("cargo:rerun-if-env-changed=WORKFLOW_BACKEND_PYTHON");
    // `sqlx::migrate!` embeds migrations/ at compile time: a new migration must rebuild
    println!("cargo:rerun-if-changed=migrations");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out
    let target = out
        .ancestors()
        .nth(4)
        .expect("OUT_DIR is inside the target dir");
    let packages = target.join("python-packages");
    let stamp = packages.join(".requirements");
    println!("cargo:rerun-if-changed={}", stamp.display());
    println!(
        "cargo:rustc-env=WORKFLOW_BACKEND_PYTHON_PACKAGES={}",
        packages.display()
    );
    let wanted = std::fs::read_to_string(requirements).expect("python/requirements.txt");
    if std::fs::read_to_string(&stamp).ok().as_deref() == Some(wanted.as_str()) {
        return;
    }
    let python = std::env::var("WORKFLOW_BACKEND_PYTHON").unwrap_or_else(|_| "python3".into());
    let installed = Command::new(&python)
        .args(["-m", "pip", "install", "--quiet", "--no-deps", "--upgrade"])
        .args(["--disable-pip-version-check", "--no-warn-script-location"])
        // a --target folder is ours, not the system's (Debian's pip refuses otherwise)
        .env("PIP_BREAK_SYSTEM_PACKAGES", "1")
        .arg("--target")
        .arg(&packages)
        .arg("-r")
        .arg(requirements)
        .status();
    match installed {
        Ok(status) if status.success() => {
            std::fs::write(&stamp, wanted).expect("write the requirements stamp");
        }
        other => println!(
            "cargo:warning=could not install python/requirements.txt with {python} -m pip \
             ({other:?}): scripts will not run until they are installed"
        ),
    }
}

/// Lists every file under `console/` (the web console's pages and vendored libraries) in
/// `<OUT_DIR>/console_files.rs` as `(path, include_bytes!(...))`, so the binary serves the
/// console from itself: `cargo run` on a fresh machine and a container need nothing beside it.
fn embed_console() {
    let root = Path::new("console");
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
