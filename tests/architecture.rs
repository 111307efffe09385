//! What the compiler cannot see about the layers. The crates are the layers, so the compiler
//! keeps each from reaching the layers above it — given its manifest, which is checked here: the
//! core names no IO crate, the shared types nothing of ours, the script workers nothing of the
//! core, the store nothing of the service, the app no HTTP crate, the HTTP layer no SQL crate.
//! Beside the manifests, two rules no manifest can hold:
//!
//! - the app hands out no store (one `pub use` would open the wall the manifests close);
//! - within the app, `tokens` (JWT keys, verification, minting) names nothing of the crate but
//!   its settings: it sits below the use cases and workers that both use it.
//!
//! Comments and string literals are ignored (a doc comment may name anything).

use std::fs;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted (so a report reads in a stable order).
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return files;
    };
    for entry in entries {
        let path = entry.expect("a readable directory entry").path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files.sort();
    files
}

/// The top-level modules of the crate a text names (`crate::config::X` and each item of
/// `crate::{config, services::Y}`), with their lines.
fn crate_modules_named(code: &str) -> Vec<(String, usize)> {
    let mut named = vec![];
    let line_of = |at: usize| code[..at].matches('\n').count() + 1;
    let mut from = 0;
    while let Some(found) = code[from..].find("crate") {
        let at = from + found;
        from = at + "crate".len();
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `workflow_crate`, `krate`
        }
        let rest = code[from..].trim_start();
        let Some(rest) = rest.strip_prefix("::") else {
            continue;
        };
        let rest = rest.trim_start();
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && c == ',') {
                    named.extend(first_segment(&item).map(|m| (m, line_of(at))));
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else {
                    item.push(c);
                }
            }
        } else {
            named.extend(first_segment(rest).map(|m| (m, line_of(at))));
        }
    }
    named
}

/// The first path segment of `text` (`config` of `config::JwtSettings`).
fn first_segment(text: &str) -> Option<String> {
    let segment: String = text
        .trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    (!segment.is_empty()).then_some(segment)
}

#[test]
fn tokens_name_nothing_of_the_app_but_its_settings() {
    let tokens = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/app/src/tokens");
    let files = rust_files(&tokens);
    assert!(
        !files.is_empty(),
        "crates/app/src/tokens/ is gone: update this test"
    );
    let mut violations = vec![];
    for file in files {
        let code = code_only(&fs::read_to_string(&file).expect("a readable source file"));
        for (module, line) in crate_modules_named(&code) {
            if module != "config" {
                violations.push(format!("{}:{line}: crate::{module}", file.display()));
            }
        }
        if code.contains("super::super") {
            violations.push(format!("{}: super::super", file.display()));
        }
    }
    assert!(
        violations.is_empty(),
        "tokens reach above themselves:\n{}",
        violations.join("\n")
    );
}

#[test]
fn crate_paths_are_read_whole_and_in_groups() {
    let code = code_only(
        "use crate::config::X;\nuse crate::{services::Y, config};\nfn f() { crate :: store::z(); }\n// crate::workers\nlet s = \"crate::api\";",
    );
    let named: Vec<String> = crate_modules_named(&code)
        .into_iter()
        .map(|(m, _)| m)
        .collect();
    assert_eq!(named, ["config", "services", "config", "store"]);
}

/// The `[dependencies]` of a workspace crate's manifest, by name.
fn dependencies_of(manifest: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest);
    let text = fs::read_to_string(&path).expect("a crate manifest");
    let mut names = vec![];
    let mut in_dependencies = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]";
        } else if in_dependencies && !line.is_empty() && !line.starts_with('#') {
            let name = line.split(['=', ' ']).next().unwrap_or_default();
            names.push(name.to_string());
        }
    }
    names
}

/// The core does no IO: only these crates may it depend on (its tests may use more). A new
/// dependency is a decision about the core, made here on purpose.
#[test]
fn the_core_depends_on_no_io_crate() {
    let allowed = [
        "workflow-script-port",
        "workflow-types",
        "serde",
        "serde_json",
        "chrono",
        "uuid",
        "roxmltree",
    ];
    let dependencies = dependencies_of("crates/core/Cargo.toml");
    assert!(!dependencies.is_empty(), "no [dependencies] read");
    let surprises: Vec<_> = dependencies
        .iter()
        .filter(|name| !allowed.contains(&name.as_str()))
        .collect();
    assert!(surprises.is_empty(), "crates/core depends on {surprises:?}");
    // the shared types, but not their database encodings
    let manifest =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/core/Cargo.toml"))
            .expect("the core's manifest");
    let types_line = manifest
        .lines()
        .find(|line| line.trim_start().starts_with("workflow-types"))
        .expect("the core names workflow-types");
    assert!(
        !types_line.contains("features"),
        "the core turns on features of workflow-types: {types_line}"
    );
}

/// The shared types name nothing of ours and no IO crate but sqlx, which only the store turns
/// on (a feature, for the column encodings).
#[test]
fn the_shared_types_stand_alone() {
    let dependencies = dependencies_of("crates/types/Cargo.toml");
    let allowed = ["serde", "uuid", "sqlx"];
    let surprises: Vec<_> = dependencies
        .iter()
        .filter(|name| !allowed.contains(&name.as_str()))
        .collect();
    assert!(
        surprises.is_empty(),
        "crates/types depends on {surprises:?}"
    );
    let manifest =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/types/Cargo.toml"))
            .expect("the types' manifest");
    assert!(
        manifest.contains("optional = true"),
        "sqlx is an optional dependency of crates/types"
    );
}

/// The service without its HTTP layer: no HTTP server or OpenAPI crate in the app's manifest,
/// so its use cases and workers cannot reach for actix (handlers receive the `App` from it).
#[test]
fn the_app_knows_nothing_of_http() {
    let dependencies = dependencies_of("crates/app/Cargo.toml");
    assert!(dependencies.contains(&"workflow-core".to_string()));
    for forbidden in [
        "actix-web",
        "actix-web-prom",
        "utoipa",
        "utoipa-swagger-ui",
        "workflow-backend",
    ] {
        assert!(
            !dependencies.iter().any(|name| name == forbidden),
            "crates/app depends on {forbidden}"
        );
    }
}

/// The HTTP layer only translates: no SQL crate in its manifest (its tests may build database
/// errors); readiness asks the app, which asks the store.
#[test]
fn the_http_layer_runs_no_sql() {
    let dependencies = dependencies_of("crates/http/Cargo.toml");
    assert!(dependencies.contains(&"workflow-app".to_string()));
    assert!(
        !dependencies
            .iter()
            .any(|name| name == "sqlx" || name == "workflow-store"),
        "crates/http depends on {dependencies:?}"
    );
}

/// The app keeps the store to itself: no `pub use` of it (nor of its rows) anywhere in the
/// app, so the HTTP layer, which cannot depend on it, cannot reach it through the app either.
#[test]
fn the_app_does_not_hand_out_the_store() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/app/src");
    let mut reexports = vec![];
    for file in rust_files(&src) {
        let text = code_only(&fs::read_to_string(&file).expect("a readable source file"));
        for (n, line) in text.lines().enumerate() {
            let line = line.trim_start();
            let public = line.starts_with("pub use") || line.starts_with("pub type");
            if public && (line.contains("store::") || line.contains("workflow_store")) {
                reexports.push(format!("{}:{}: {line}", file.display(), n + 1));
            }
        }
    }
    assert!(
        reexports.is_empty(),
        "the app hands out the store:\n{}",
        reexports.join("\n")
    );
}

/// The store is the bottom layer: SQL, and nothing of the service or its core above it (only
/// the shared ids and states it stores).
#[test]
fn the_store_depends_on_nothing_of_the_service() {
    let dependencies = dependencies_of("crates/store/Cargo.toml");
    assert!(dependencies.contains(&"sqlx".to_string()));
    let ours: Vec<_> = dependencies
        .iter()
        .filter(|name| name.starts_with("workflow") && *name != "workflow-types")
        .collect();
    assert!(ours.is_empty(), "crates/store depends on {ours:?}");
}

/// The script workers know nothing of the core or the service: they answer the port's JSON.
#[test]
fn the_script_workers_know_nothing_of_the_service() {
    let dependencies = dependencies_of("crates/scripts/Cargo.toml");
    assert!(dependencies.contains(&"workflow-script-port".to_string()));
    for forbidden in [
        "workflow-core",
        "workflow-backend",
        "sqlx",
        "tokio",
        "actix-web",
        "reqwest",
    ] {
        assert!(
            !dependencies.iter().any(|name| name == forbidden),
            "crates/scripts depends on {forbidden}"
        );
    }
}

/// `text` with comments and string, byte-string and char literals blanked out (newlines are
/// kept, so lines still count): doc comments and SQL name crates without importing them.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, slice: &[char]| {
        out.extend(slice.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let ident_before = i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_');
        let end = if rest.starts_with(&['/', '/']) {
            i + rest.iter().position(|&c| c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            block_comment_end(&chars, i)
        } else if rest[0] == '"' {
            string_end(&chars, i + 1)
        } else if !ident_before && raw_string_start(rest).is_some() {
            let (prefix, hashes) = raw_string_start(rest).unwrap();
            raw_string_end(&chars, i + prefix, hashes)
        } else if !ident_before && rest.starts_with(&['b', '"']) {
            string_end(&chars, i + 2)
        } else if rest[0] == '\'' {
            match char_literal_end(&chars, i) {
                Some(end) => end,
                None => {
                    out.push('\''); // a lifetime or a label
                    i += 1;
                    continue;
                }
            }
        } else {
            out.push(rest[0]);
            i += 1;
            continue;
        };
        let end = end.min(chars.len());
        blank(&mut out, &chars[i..end]);
        i = end;
    }
    out
}

/// The index after a (possibly nested) block comment starting at `start`.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let (mut depth, mut i) = (0, start);
    while i + 1 < chars.len() {
        match (chars[i], chars[i + 1]) {
            ('/', '*') => {
                depth += 1;
                i += 2;
            }
            ('*', '/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    chars.len()
}

/// The index after the closing `"` of a string whose text starts at `from`.
fn string_end(chars: &[char], from: usize) -> usize {
    let mut i = from;
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            '"' => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}

/// For `r"`, `r#"`, `br##"`..: the length up to and including the `"`, and the `#` count.
fn raw_string_start(rest: &[char]) -> Option<(usize, usize)> {
    let after_b = usize::from(rest.first() == Some(&'b'));
    if rest.get(after_b) != Some(&'r') {
        return None;
    }
    let hashes = rest[after_b + 1..]
        .iter()
        .take_while(|&&c| c == '#')
        .count();
    (rest.get(after_b + 1 + hashes) == Some(&'"')).then_some((after_b + 2 + hashes, hashes))
}

/// The index after a raw string's closing `"` followed by `hashes` `#`.
fn raw_string_end(chars: &[char], from: usize, hashes: usize) -> usize {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '"'
            && chars[i + 1..]
                .iter()
                .take(hashes)
                .filter(|&&c| c == '#')
                .count()
                == hashes
        {
            return i + 1 + hashes;
        }
        i += 1;
    }
    chars.len()
}

/// The index after a char literal at `start` (`'x'`, `'"'`, `'\''`, `'\u{1F600}'`), or `None`
/// for a lifetime or label (`'a`, `'static`, `'outer:`).
fn char_literal_end(chars: &[char], start: usize) -> Option<usize> {
    match chars.get(start + 1) {
        Some('\\') => {
            let close = chars.get(start + 3..)?.iter().position(|&c| c == '\'')?;
            Some(start + 3 + close + 1)
        }
        Some(_) if chars.get(start + 2) == Some(&'\'') => Some(start + 3),
        _ => None,
    }
}
