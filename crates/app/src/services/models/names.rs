//! Process model identifiers (`group:sub:model` in URLs, `group/sub/model` stored) and model
//! file names, checked segment by segment.

use super::ModelId;
use crate::services::{Error, ErrorCode, Result};

/// The longest process model identifier (bytes).
pub const MAX_IDENTIFIER_BYTES: usize = ModelId::MAX_BYTES;
/// The longest segment of an identifier (bytes).
pub const MAX_SEGMENT_BYTES: usize = ModelId::MAX_SEGMENT_BYTES;

/// `group:sub:model` (URL form) -> `group/sub/model`, checked segment by segment.
pub fn identifier_from_url(modified: &str) -> Result<ModelId> {
    ModelId::parse(&modified.replace(':', "/")).ok_or_else(|| {
        Error::refused(
            ErrorCode::InvalidProcessModelIdentifier,
            format!(
                "'{}' is not a process model identifier: segments separated by ':', each a \
                 letter or digit followed by letters, digits, '-', '_' and '.' (at most \
                 {MAX_SEGMENT_BYTES} bytes a segment, {MAX_IDENTIFIER_BYTES} in all)",
                cut(modified)
            ),
        )
    })
}

/// The longest model file name (bytes), as most file systems allow.
pub const MAX_FILE_NAME_BYTES: usize = 255;

/// The kinds of file a model holds: BPMN diagrams, DMN decisions, and JSON files (form
/// schemas and the like, kept with the model as SpiffArena keeps them, not run).
const FILE_SUFFIXES: [&str; 3] = [".bpmn", ".dmn", ".json"];

/// A model file name as SpiffArena allows them (`Sub process.bpmn`, `TC-1.0 - Send message
/// (v2).bpmn`): anything but a path separator (`/`, `\`), a NUL or other control character,
/// `..`, or more than [`MAX_FILE_NAME_BYTES`] bytes, with a name before its `.bpmn`, `.dmn` or
/// `.json`.
pub fn check_file_name(file_name: &str) -> Result<()> {
    let has_suffix = FILE_SUFFIXES.iter().any(|suffix| {
        file_name
            .strip_suffix(suffix)
            .is_some_and(|stem| !stem.trim().is_empty())
    });
    let valid = has_suffix
        && file_name.len() <= MAX_FILE_NAME_BYTES
        && !file_name.contains("..")
        && !file_name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control());
    if valid {
        Ok(())
    } else {
        Err(Error::refused(
            ErrorCode::InvalidFileName,
            format!(
                "'{}' is not a model file name: a name ending in .bpmn, .dmn or .json, without \
                 '/', '\\', '..' or control characters (at most {MAX_FILE_NAME_BYTES} bytes)",
                cut(file_name)
            ),
        ))
    }
}

/// The start of a long name, for an error message (control characters escaped).
fn cut(text: &str) -> String {
    let shown: String = text.chars().take(80).collect();
    let shown = shown.escape_default().to_string();
    if text.chars().count() > 80 {
        format!("{shown}...")
    } else {
        shown
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_use_colons_in_urls() {
        assert_eq!(
            identifier_from_url("finance:invoices:approve")
                .unwrap()
                .as_str(),
            "finance/invoices/approve"
        );
        assert_eq!(identifier_from_url("single").unwrap().as_str(), "single");
        let long = "a".repeat(5_000);
        for bad in [
            "",
            "a::b",
            "a:..:b",
            "a:b c",
            "a:/b",
            "a:.hidden",
            "a:b\nc",
            &long,
        ] {
            assert!(identifier_from_url(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn file_names_are_as_spiffarena_allows_them() {
        let longest = format!("{}.bpmn", "a".repeat(MAX_FILE_NAME_BYTES - 5));
        for good in [
            "a.bpmn",
            "Order-Flow_2.v1.bpmn",
            "rules.dmn",
            "Sub process.bpmn",
            "TC-1.0 - Send message (v2).bpmn",
            "form schema.json",
            ".hidden.bpmn",
            "Übersicht, 'draft' & more!.bpmn",
            &longest,
        ] {
            assert!(check_file_name(good).is_ok(), "{good}");
        }
        for bad in [
            ".bpmn",
            " .bpmn",
            "a\n.bpmn",
            "a\0b.bpmn",
            "a\tb.bpmn",
            "a.xml",
            "a.bpmn.txt",
            ".dmn",
            "a/b.bpmn",
            "a\\b.bpmn",
            "..bpmn",
            "a..b.bpmn",
            &format!("a{longest}"),
        ] {
            assert!(check_file_name(bad).is_err(), "{bad:?}");
        }
    }
}
