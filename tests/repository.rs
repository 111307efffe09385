//! The repository stands alone (no database, no build of the crate needed): a clone is all a
//! newcomer has, so nothing in it may point outside it.
//!
//! - no file names a path of one machine (`/work/...`, `/home/...`, `/root/...`) or the team's
//!   files beside the checkout (`../shared`, `DESIGN.md`), except CI's own scripts (`.ci/`),
//!   which are where the conformance corpus is found;
//! - every relative link of a Markdown file leads to a file or folder of the repository;
//! - the README stays a front page (at most ~10 KB); the rest is the book in `docs/`;
//! - every migration keeps the text its checksum was recorded for
//!   (`tests/fixtures/migration-checksums.txt`).

use sha2::{Digest, Sha384};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path, PathBuf};

/// Folders that are not ours to check: build output and vendored third-party files. Hidden
/// folders are skipped too: git, tools' state, and CI's scripts (`.ci/`, which run with the
/// team's folder beside the clone).
const SKIPPED: &[&str] = &["target", "vendor", "node_modules"];

const README_LIMIT_BYTES: u64 = 10 * 1024;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every file of the repository worth reading as text, relative to its root.
fn files() -> Vec<PathBuf> {
    let mut found = vec![];
    let mut folders = vec![PathBuf::new()];
    while let Some(folder) = folders.pop() {
        for entry in fs::read_dir(root().join(&folder)).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = folder.join(&name);
            if name == ".git" {
                continue; // a folder, or in a worktree a file naming where git keeps it
            }
            if entry.file_type().unwrap().is_dir() {
                // hidden folders hold tools' state (venvs, caches such as .hypothesis), not ours
                let hidden = name.starts_with('.');
                if !SKIPPED.contains(&name.as_str()) && !hidden {
                    folders.push(path);
                }
            } else {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn text_of(path: &Path) -> Option<String> {
    fs::read_to_string(root().join(path)).ok()
}

#[test]
fn nothing_points_outside_the_repository() {
    let forbidden = ["/work/", "/home/", "/root/", "../shared", "DESIGN.md"];
    let mut found = vec![];
    for path in files() {
        if path == Path::new("tests/repository.rs") {
            continue;
        }
        let Some(text) = text_of(&path) else {
            continue; // not text
        };
        for (number, line) in text.lines().enumerate() {
            for needle in forbidden.iter().filter(|needle| line.contains(*needle)) {
                found.push(format!("{}:{}: {needle}", path.display(), number + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// The targets of `[text](target)` links in Markdown, without anchors; web and mail links
/// and pure anchors are left out.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = vec![];
    let mut rest = markdown;
    while let Some(start) = rest.find("](") {
        rest = &rest[start + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split_whitespace().next().unwrap_or("");
        let target = target.split('#').next().unwrap_or("");
        let external = target.contains("://") || target.starts_with("mailto:");
        if !target.is_empty() && !external {
            links.push(target.to_string());
        }
        rest = &rest[end..];
    }
    links
}

/// `base/link` with `.` and `..` resolved, or `None` when it climbs out of the repository.
fn resolve(base: &Path, link: &str) -> Option<PathBuf> {
    let mut resolved = PathBuf::new();
    for component in base.join(link).components() {
        match component {
            Component::ParentDir => {
                if !resolved.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => resolved.push(other),
        }
    }
    Some(resolved)
}

#[test]
fn markdown_links_lead_to_files_of_the_repository() {
    let mut broken = vec![];
    for path in files() {
        if path.extension().is_none_or(|extension| extension != "md") {
            continue;
        }
        let text = text_of(&path).unwrap();
        let base = path.parent().unwrap_or(Path::new(""));
        for link in relative_links(&text) {
            match resolve(base, &link) {
                Some(target) if root().join(&target).exists() => {}
                Some(_) => broken.push(format!("{}: {link} does not exist", path.display())),
                None => broken.push(format!("{}: {link} is outside", path.display())),
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}

#[test]
fn the_readme_is_a_front_page() {
    let size = fs::metadata(root().join("README.md")).unwrap().len();
    assert!(
        size <= README_LIMIT_BYTES,
        "README.md is {size} bytes; keep it under {README_LIMIT_BYTES} and move detail to docs/"
    );
}

#[test]
fn links_are_found_and_resolved() {
    assert_eq!(
        relative_links("[a](docs/x.md#y) [b](https://e.org) [c](#top) [d](../up.md)"),
        ["docs/x.md", "../up.md"]
    );
    assert_eq!(
        resolve(Path::new("docs"), "../README.md"),
        Some("README.md".into())
    );
    assert_eq!(
        resolve(Path::new("examples/a"), "../../../shared/x.md"),
        None
    );
}

/// A database refuses to start the service (sqlx) once a migration it applied has changed
/// its text, comments included: each migration's checksum is recorded when it is written, and
/// a change to its text fails here until the record changes too, in the same diff.
#[test]
fn migrations_keep_their_text() {
    let recorded: BTreeMap<String, String> =
        fs::read_to_string(root().join("tests/fixtures/migration-checksums.txt"))
            .unwrap()
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
            .map(|line| {
                let (name, checksum) = line.split_once(' ').expect("`name checksum`");
                (name.to_string(), checksum.to_string())
            })
            .collect();
    let mut current = BTreeMap::new();
    for entry in fs::read_dir(root().join("migrations")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "sql") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let checksum = format!("{:x}", Sha384::digest(fs::read(&path).unwrap()));
            current.insert(name, checksum);
        }
    }
    let changed: Vec<String> = (current.iter())
        .filter(|(name, checksum)| recorded.get(*name) != Some(*checksum))
        .map(|(name, checksum)| {
            format!("{name}: now {checksum}, recorded {:?}", recorded.get(name))
        })
        .chain(
            (recorded.keys())
                .filter(|name| !current.contains_key(*name))
                .map(|name| format!("{name}: recorded, no such migration")),
        )
        .collect();
    assert!(
        changed.is_empty(),
        "migrations whose text is not the one recorded (a released migration's text never \
         changes; see the file's header):\n{}",
        changed.join("\n")
    );
}
