//! Process model identifiers (`group:sub:model` in URLs, `group/sub/model` stored) and model
//! file names, checked segment by segment.

use super::ModelId;
use crate::services::{Error, ErrorCode, Result};

/// The longest process model identifier (bytes).
pub const MAX_IDENTIFIER_BYTES: usize = 255;
/// The longest segment of an identifier, and the longest file name (bytes).
pub const MAX_SEGMENT_BYTES: usize = 100;

/// A segment of an identifier, or a file name's stem: a letter or digit, then letters, digits,
/// `-`, `_` and `.` (so no hidden `.name`, no `..`, no spaces or control characters).
fn is_plain_name(segment: &str) -> bool {
    let mut chars = segment.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && segment.len() <= MAX_SEGMENT_BYTES
}

/// `group:sub:model` (URL form) -> `group/sub/model`, checked segment by segment.
pub fn identifier_from_url(modified: &str) -> Result<ModelId> {
    let identifier = modified.replace(':', "/");
    let valid =
        identifier.len() <= MAX_IDENTIFIER_BYTES && identifier.split('/').all(is_plain_name);
    if !valid {
        return Err(Error::refused(
            ErrorCode::InvalidProcessModelIdentifier,
            format!(
                "'{}' is not a process model identifier: segments separated by ':', each a \
                 letter or digit followed by letters, digits, '-', '_' and '.' (at most \
                 {MAX_SEGMENT_BYTES} bytes a segment, {MAX_IDENTIFIER_BYTES} in all)",
                cut(modified)
            ),
        ));
    }
    Ok(ModelId::checked(identifier))
}

/// A model file name: a plain name (see [`is_plain_name`]) ending in `.bpmn` or `.dmn`.
pub fn check_file_name(file_name: &str) -> Result<()> {
    let valid = [".bpmn", ".dmn"].iter().any(|suffix| {
        file_name
            .strip_suffix(suffix)
            .is_some_and(|stem| !stem.is_empty() && is_plain_name(file_name))
    });
    if valid {
        Ok(())
    } else {
        Err(Error::refused(
            ErrorCode::InvalidFileName,
            format!(
                "'{}' is not a model file name: a letter or digit, then letters, digits, '-', \
                 '_' and '.', ending in .bpmn or .dmn (at most {MAX_SEGMENT_BYTES} bytes)",
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
    fn file_names_are_plain() {
        for good in ["a.bpmn", "Order-Flow_2.v1.bpmn", "rules.dmn"] {
            assert!(check_file_name(good).is_ok(), "{good}");
        }
        for bad in [
            ".bpmn",
            ".hidden.bpmn",
            "a\n.bpmn",
            "a b.bpmn",
            "a.xml",
            ".dmn",
            "a/b.bpmn",
        ] {
            assert!(check_file_name(bad).is_err(), "{bad}");
        }
        assert!(check_file_name(&format!("{}.bpmn", "a".repeat(100))).is_err());
    }
}
