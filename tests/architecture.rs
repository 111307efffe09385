//! The layering rules the compiler cannot hold, checked by reading the sources (no database,
//! no build of the crate needed). The pure core (`crates/core`), the script workers
//! (`crates/scripts`), the SQL (`crates/store`), the service without HTTP (`crates/app`) and
//! the HTTP layer (`crates/http`) are crates of their own: the compiler keeps each from
//! reaching the layers above it, and their manifests are checked here (the core names no IO
//! crate, the workers nothing of the core, the store nothing of ours, the app no HTTP crate,
//! the HTTP layer no SQL crate).
//! The HTTP layer cannot name the store: its manifest has no SQL crate and the app names the
//! store privately (checked here, since one `pub use` would open it again). Within a crate:
//!
//! - `tokens` (JWT keys, verification, minting) sits below both `api/` and `services/`.
//!
//! Every path is checked, not only `use` lines: `use crate::{store::Page}` is expanded, and
//! a path written inline (`crate::store::Page::new(..)`, `sqlx::query(..)`, `#[tokio::test]`)
//! counts as well. `self::` and `super::` are resolved against the file's module. Comments
//! and string literals are ignored.
//!
//! The failure lists every violation as `file:line: path (rule)`.

use std::fs;
use std::path::{Path, PathBuf};

/// One rule: code under `layers` (modules of the crate whose sources are in `sources`) must
/// not name the crates or crate modules listed.
struct Rule {
    sources: &'static str,
    layers: &'static [&'static str],
    /// External crates by name; an entry ending in `_` is a prefix (`actix_` covers
    /// `actix_web` and `actix_web_prom`).
    forbidden_crates: &'static [&'static str],
    /// Top-level modules of this crate (`store` is `crate::store`).
    forbidden_modules: &'static [&'static str],
    why: &'static str,
}

const RULES: &[Rule] = &[Rule {
    sources: "crates/app/src",
    layers: &["tokens"],
    forbidden_crates: &["workflow_store"],
    forbidden_modules: &["services", "store", "workers"],
    why: "token keys sit below api/ and services/, which both use them",
}];

#[test]
fn layers_only_reach_down() {
    let mut violations = Vec::new();
    for rule in RULES {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(rule.sources);
        for layer in rule.layers {
            let files = layer_files(&src, layer);
            // a renamed or moved layer must not make the rule pass on nothing
            assert!(
                !files.is_empty(),
                "no src/{layer}/ nor src/{layer}.rs: update RULES"
            );
            for file in files.into_iter().filter(|f| !is_test_module(f)) {
                let text = fs::read_to_string(&file).expect("a readable source file");
                let module = module_path(&src, &file);
                for reference in references(&text) {
                    let path = resolve(&module, &reference.segments);
                    if breaks(rule, &path) {
                        violations.push(format!(
                            "{}:{}: {} ({})",
                            file.strip_prefix(src.parent().unwrap()).unwrap().display(),
                            reference.line,
                            path.join("::"),
                            rule.why
                        ));
                    }
                }
            }
        }
    }
    assert!(
        violations.is_empty(),
        "{} layering violation(s):\n{}\n",
        violations.len(),
        violations.join("\n")
    );
}

/// Whether an absolute path (`crate::..` or `<extern crate>::..`) is one `rule` forbids.
fn breaks(rule: &Rule, path: &[String]) -> bool {
    match path {
        [root, module, ..] if root == "crate" => rule.forbidden_modules.contains(&module.as_str()),
        [name, ..] => rule.forbidden_crates.iter().any(|forbidden| {
            if forbidden.ends_with('_') {
                name.starts_with(forbidden)
            } else {
                name == forbidden
            }
        }),
        [] => false,
    }
}

/// The files of a layer: `src/<layer>/` (every `.rs` file under it) or `src/<layer>.rs`.
fn layer_files(src: &Path, layer: &str) -> Vec<PathBuf> {
    let single = src.join(format!("{layer}.rs"));
    if single.is_file() {
        vec![single]
    } else {
        rust_files(&src.join(layer))
    }
}

/// Unit tests (`tests.rs`, `tests/`) may use what their layer may not.
fn is_test_module(file: &Path) -> bool {
    file.file_name().is_some_and(|name| name == "tests.rs")
        || file.components().any(|part| part.as_os_str() == "tests")
}

/// Every `.rs` file under `dir`, sorted (so the report reads in a stable order).
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

/// The module a file is: `src/api/mod.rs` is `[api]`, `src/api/auth.rs` is `[api, auth]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).expect("a file under src/");
    let mut module: Vec<String> = relative
        .with_extension("")
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    if matches!(
        module.last().map(String::as_str),
        Some("mod" | "lib" | "main")
    ) {
        module.pop();
    }
    module
}

/// `path` made absolute: `crate::..` for this crate, else it starts with a crate's name.
/// `self` and `super` are taken relative to the file's module (a `mod tests { use super::*; }`
/// inside a file thus resolves one level too high, which stays within the same layer).
fn resolve(module: &[String], path: &[String]) -> Vec<String> {
    let mut base: Vec<String> = module.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => return path.to_vec(),
        Some("self") => rest = &rest[1..],
        Some("super") => {
            while rest.first().is_some_and(|s| s == "super") {
                base.pop();
                rest = &rest[1..];
            }
        }
        _ => return path.to_vec(),
    }
    let mut absolute = vec!["crate".to_string()];
    absolute.extend(base);
    absolute.extend(rest.iter().cloned());
    absolute
}

/// A path named in the source, as written (`super::store::Page`), and where.
#[derive(Debug, PartialEq)]
struct Reference {
    segments: Vec<String>,
    line: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Ident(String),
    PathSep,
    Punct(char),
}

/// Every path in `text`: each leaf of a `use` tree, each `extern crate`, and each path of
/// two or more segments elsewhere (one segment is a local name or a prelude item).
fn references(text: &str) -> Vec<Reference> {
    let tokens = tokenize(&code_only(text));
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let (token, line) = &tokens[i];
        match token {
            // `use<'a>` is precise capturing in `impl Trait + use<'a>`, not an import
            Token::Ident(word)
                if word == "use" && tokens.get(i + 1).map(|t| &t.0) != Some(&Token::Punct('<')) =>
            {
                i = use_tree(&tokens, i + 1, Vec::new(), &mut found);
            }
            Token::Ident(word)
                if word == "extern"
                    && tokens.get(i + 1).map(|t| &t.0) == Some(&Token::Ident("crate".into())) =>
            {
                if let Some((Token::Ident(name), line)) = tokens.get(i + 2) {
                    found.push(Reference {
                        segments: vec![name.clone()],
                        line: *line,
                    });
                }
                i += 3;
            }
            Token::Ident(_) | Token::PathSep => {
                // a field or method (`x.store`) is no path
                let after_dot = i > 0 && tokens[i - 1].0 == Token::Punct('.');
                let (segments, next) = path_at(&tokens, i);
                if segments.len() >= 2 && !after_dot {
                    found.push(Reference {
                        segments,
                        line: *line,
                    });
                }
                i = next;
            }
            Token::Punct(_) => i += 1,
        }
    }
    found
}

/// `a::b::c` (or `::a::b`) from `start`; returns its segments and the index after it.
fn path_at(tokens: &[(Token, usize)], start: usize) -> (Vec<String>, usize) {
    let mut segments = Vec::new();
    let mut i = start;
    if tokens[i].0 == Token::PathSep {
        i += 1;
    }
    while let Some((Token::Ident(name), _)) = tokens.get(i) {
        segments.push(name.clone());
        i += 1;
        match (tokens.get(i), tokens.get(i + 1)) {
            (Some((Token::PathSep, _)), Some((Token::Ident(_), _))) => i += 1,
            _ => break,
        }
    }
    (segments, i.max(start + 1))
}

/// Reads one `use` tree from `start` with the segments above it in `prefix`, adds each leaf
/// to `found`, and returns the index after the tree.
fn use_tree(
    tokens: &[(Token, usize)],
    start: usize,
    prefix: Vec<String>,
    found: &mut Vec<Reference>,
) -> usize {
    let mut segments = prefix;
    let mut i = start;
    let mut line = tokens.get(i).map_or(0, |t| t.1);
    loop {
        match tokens.get(i) {
            Some((Token::PathSep, _)) => i += 1,
            Some((Token::Ident(name), at)) => {
                line = *at;
                // `{self, ..}` names the prefix itself
                if name != "self" || segments.is_empty() {
                    segments.push(name.clone());
                }
                i += 1;
                if tokens.get(i).map(|t| &t.0) != Some(&Token::PathSep) {
                    if tokens.get(i).map(|t| &t.0) == Some(&Token::Ident("as".into())) {
                        i += 2;
                    }
                    found.push(Reference { segments, line });
                    return i;
                }
            }
            Some((Token::Punct('*'), at)) => {
                found.push(Reference {
                    segments,
                    line: *at,
                });
                return i + 1;
            }
            Some((Token::Punct('{'), _)) => {
                i += 1;
                loop {
                    match tokens.get(i) {
                        Some((Token::Punct('}'), _)) => return i + 1,
                        Some((Token::Punct(','), _)) => i += 1,
                        Some(_) => i = use_tree(tokens, i, segments.clone(), found),
                        None => return i,
                    }
                }
            }
            _ => {
                if !segments.is_empty() {
                    found.push(Reference { segments, line });
                }
                return i;
            }
        }
    }
}

/// Identifiers, `::` and single punctuation characters, each with its 1-based line.
fn tokenize(code: &str) -> Vec<(Token, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let mut tokens = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < chars.len() {
        let c = chars[i];
        if c == '\n' {
            line += 1;
            i += 1;
        } else if c.is_whitespace() {
            i += 1;
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            tokens.push((Token::PathSep, line));
            i += 2;
        } else if c.is_alphabetic() || c == '_' {
            // `r#type` is the identifier `type`
            if c == 'r' && chars.get(i + 1) == Some(&'#') {
                i += 2;
            }
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            tokens.push((Token::Ident(chars[start..i].iter().collect()), line));
        } else if c.is_ascii_digit() {
            // a number with its suffix (`10u8`) is no identifier
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
        } else {
            tokens.push((Token::Punct(c), line));
            i += 1;
        }
    }
    tokens
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

// The scanner itself: what it must see, and what it must not mistake for a path.

fn paths(text: &str, module: &[&str]) -> Vec<(String, usize)> {
    let module: Vec<String> = module.iter().map(|s| s.to_string()).collect();
    references(text)
        .into_iter()
        .map(|r| (resolve(&module, &r.segments).join("::"), r.line))
        .collect()
}

#[test]
fn use_trees_are_expanded_and_relative_paths_resolved() {
    let text = "use crate::{\n    services,\n    store::{self, Page as P},\n};\nuse super::super::store::*;\nuse ::sqlx::PgPool;\n";
    assert_eq!(
        paths(text, &["api", "messages"]),
        [
            ("crate::services".to_string(), 2),
            ("crate::store".to_string(), 3),
            ("crate::store::Page".to_string(), 3),
            ("crate::store".to_string(), 5),
            ("sqlx::PgPool".to_string(), 6),
        ]
    );
}

#[test]
fn inline_paths_attributes_and_extern_crates_count() {
    let text = "#[tokio::test]\nasync fn t() {\n    let p = crate::store::Page::new(None, None);\n    super::store::x(sqlx::query(\"SELECT 1\"));\n}\nextern crate reqwest;\n";
    assert_eq!(
        paths(text, &["api"]),
        [
            ("tokio::test".to_string(), 1),
            ("crate::store::Page::new".to_string(), 3),
            ("crate::store::x".to_string(), 4),
            ("sqlx::query".to_string(), 4),
            ("reqwest".to_string(), 6),
        ]
    );
}

#[test]
fn comments_strings_chars_and_lifetimes_are_not_paths() {
    let text = concat!(
        "//! tokio::select! in a doc comment\n",
        "/* crate::store /* nested */ sqlx::x */\n",
        "fn f<'a>(s: &'a str) -> char {\n",
        "    let _ = \"crate::store::Page \\\" sqlx::y\";\n",
        "    let _ = r#\"tokio::spawn \"quoted\" \"#;\n",
        "    let _ = b\"reqwest::get\";\n",
        "    let _ = ('\"', '\\'', s.len());\n",
        "    'outer: loop { break 'outer; }\n",
        "    x.store; 1u8; use_count::get(); serde_json::json!({})\n",
        "}\n",
    );
    assert_eq!(
        paths(text, &["engine"]),
        [
            ("use_count::get".to_string(), 9),
            ("serde_json::json".to_string(), 9)
        ]
    );
}

#[test]
fn rules_match_crates_by_name_and_prefix() {
    let core = &Rule {
        sources: "",
        layers: &[],
        forbidden_crates: &["sqlx", "tokio", "reqwest", "actix", "actix_"],
        forbidden_modules: &["store"],
        why: "an example",
    };
    let path = |p: &str| p.split("::").map(str::to_string).collect::<Vec<_>>();
    for forbidden in [
        "actix_web::web",
        "actix_web_prom::X",
        "tokio::spawn",
        "sqlx",
        "crate::store::Page",
    ] {
        assert!(breaks(core, &path(forbidden)), "{forbidden}");
    }
    for allowed in [
        "serde_json::Value",
        "tokio_like::x",
        "crate::expr::eval",
        "monty::MontyRun",
    ] {
        assert!(!breaks(core, &path(allowed)), "{allowed}");
    }
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
