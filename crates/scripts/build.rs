//! Prepares the folder of the script worker beside the binary: `<target>/<profile>/python-packages`
//! holds the worker (`python/script_worker.py` of this crate, copied) and its pinned Python packages
//! (`python/requirements.txt`, installed with pip once per change of the requirements). The
//! service finds the folder beside its executable (or where `WORKFLOW_BACKEND_PYTHON_PACKAGES`
//! says), so a copied binary with its folder runs scripts. Nothing is written outside the
//! target directory, and no path of this machine is compiled into the binary. Without network
//! or pip the build goes on with a warning (and tries again on the next build); the service
//! then refuses to start with a message saying what is missing.

use std::path::{Path, PathBuf};
use std::process::Command;

const REQUIREMENTS: &str = "python/requirements.txt";
const WORKER: &str = "python/script_worker.py";
/// The folder's name, and the worker's file name inside it: written here once and handed to
/// the crate (`WORKFLOW_BACKEND_PACKAGES_FOLDER`, `WORKFLOW_BACKEND_WORKER_FILE`), which looks
/// for them by these names.
const PACKAGES_FOLDER: &str = "python-packages";
const WORKER_FILE: &str = "script_worker.py";

fn main() {
    println!("cargo:rerun-if-changed={REQUIREMENTS}");
    println!("cargo:rerun-if-changed={WORKER}");
    println!("cargo:rerun-if-env-changed=WORKFLOW_BACKEND_PYTHON");
    println!("cargo:rustc-env=WORKFLOW_BACKEND_PACKAGES_FOLDER={PACKAGES_FOLDER}");
    println!("cargo:rustc-env=WORKFLOW_BACKEND_WORKER_FILE={WORKER_FILE}");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/<profile>/build/<crate>-<hash>/out: the folder goes beside the
    // binaries of <profile>
    let profile = out
        .ancestors()
        .nth(3)
        .expect("OUT_DIR is inside the target dir");
    let packages = profile.join(PACKAGES_FOLDER);
    std::fs::create_dir_all(&packages).expect("create the python-packages folder");
    std::fs::copy(WORKER, packages.join(WORKER_FILE)).expect("copy the script worker");
    install_requirements(&packages);
}

/// pip installs the requirements into `packages` unless its stamp says they already are. The
/// stamp is not watched once written (watching it would make the next build run this script
/// again, and so recompile the crate); a failed install watches the missing stamp, so the next
/// build tries again.
fn install_requirements(packages: &Path) {
    let stamp = packages.join(".requirements");
    let wanted = std::fs::read_to_string(REQUIREMENTS).expect("python/requirements.txt");
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
        .arg(packages)
        .arg("-r")
        .arg(REQUIREMENTS)
        .status();
    match installed {
        Ok(status) if status.success() => {
            std::fs::write(&stamp, wanted).expect("write the requirements stamp");
        }
        other => {
            println!("cargo:rerun-if-changed={}", stamp.display());
            println!(
                "cargo:warning=could not install {REQUIREMENTS} with {python} -m pip \
                 ({other:?}): scripts will not run until they are installed"
            )
        }
    }
}
