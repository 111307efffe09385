//! A cheap lexical scan of Python source: which names it mentions. Over-reporting is
//! harmless (callers treat the list as candidates), so this skips only what certainly is not
//! a variable name: keywords, string literals, comments, numbers and attribute names.

#[rustfmt::skip]
const KEYWORDS: &[&str] = &[
    "False", "None", "True", "and", "as", "assert", "async", "await", "break", "class", "continue",
    "def", "del", "elif", "else", "except", "finally", "for", "from", "global", "if", "import",
    "in", "is", "lambda", "nonlocal", "not", "or", "pass", "raise", "return", "try", "while",
    "with", "yield",
];

/// CPython's builtins (a superset of monty's): a variable in the data with one of these names
/// must shadow the builtin, which monty only does for names bound in the module.
#[rustfmt::skip]
const BUILTINS: &[&str] = &[
    "abs", "aiter", "all", "anext", "any", "ascii", "bin", "bool", "breakpoint", "bytearray",
    "bytes", "callable", "chr", "classmethod", "compile", "complex", "copyright", "credits",
    "delattr", "dict", "dir", "divmod", "enumerate", "eval", "exec", "exit", "filter", "float",
    "format", "frozenset", "getattr", "globals", "hasattr", "hash", "help", "hex", "id", "input",
    "int", "isinstance", "issubclass", "iter", "len", "license", "list", "locals", "map", "max",
    "memoryview", "min", "next", "object", "oct", "open", "ord", "pow", "print", "property",
    "quit", "range", "repr", "reversed", "round", "set", "setattr", "slice", "sorted",
    "staticmethod", "str", "sum", "super", "tuple", "type", "vars", "zip", "Ellipsis",
    "NotImplemented", "ArithmeticError", "AssertionError", "AttributeError", "BaseException",
    "BaseExceptionGroup", "BlockingIOError", "BrokenPipeError", "BufferError", "BytesWarning",
    "ChildProcessError", "ConnectionAbortedError", "ConnectionError", "ConnectionRefusedError",
    "ConnectionResetError", "DeprecationWarning", "EOFError", "EncodingWarning",
    "EnvironmentError", "Exception", "ExceptionGroup", "FileExistsError", "FileNotFoundError",
    "FloatingPointError", "FutureWarning", "GeneratorExit", "IOError", "ImportError",
    "ImportWarning", "IndentationError", "IndexError", "InterruptedError", "IsADirectoryError",
    "KeyError", "KeyboardInterrupt", "LookupError", "MemoryError", "ModuleNotFoundError",
    "NameError", "NotADirectoryError", "NotImplementedError", "OSError", "OverflowError",
    "PendingDeprecationWarning", "PermissionError", "ProcessLookupError", "RecursionError",
    "ReferenceError", "ResourceWarning", "RuntimeError", "RuntimeWarning", "StopAsyncIteration",
    "StopIteration", "SyntaxError", "SyntaxWarning", "SystemError", "SystemExit", "TabError",
    "TimeoutError", "TypeError", "UnboundLocalError", "UnicodeDecodeError", "UnicodeEncodeError",
    "UnicodeError", "UnicodeTranslateError", "UnicodeWarning", "UserWarning", "ValueError",
    "Warning", "ZeroDivisionError",
];

/// The module the host provides without an import (SpiffArena scripts call `time.sleep`).
pub(super) const TIME_MODULE: &str = "time";

pub(super) fn is_keyword(name: &str) -> bool {
    KEYWORDS.contains(&name)
}

pub(super) fn is_builtin(name: &str) -> bool {
    BUILTINS.contains(&name)
}

/// Names Python resolves even when the data lacks them.
pub(super) fn is_predefined(name: &str) -> bool {
    is_builtin(name) || name == TIME_MODULE
}

/// Every name the source mentions, once, in order of first appearance.
pub(super) fn names(source: &str) -> Vec<String> {
    let chars: Vec<char> = source.chars().collect();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    // Last significant character: a name right after `.` is an attribute.
    let mut previous = ' ';
    while i < chars.len() {
        let c = chars[i];
        if c == '#' {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '"' || c == '\'' {
            i = skip_string(&chars, i);
            previous = c;
        } else if c.is_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            let is_string_prefix = matches!(chars.get(i), Some('"' | '\''))
                && word.len() <= 2
                && word.chars().all(|c| "rRbBfFuUtT".contains(c));
            if is_string_prefix {
                i = skip_string(&chars, i);
            } else if previous != '.' && !is_keyword(&word) && !found.contains(&word) {
                found.push(word);
            }
            previous = 'a';
        } else if c.is_ascii_digit() {
            // Numbers, including `1e5`, `0x1f`, `1_000`, `1.5`.
            while i < chars.len()
                && (chars[i].is_alphanumeric() || chars[i] == '_' || chars[i] == '.')
            {
                i += 1;
            }
            previous = '0';
        } else {
            if !c.is_whitespace() && c != '\\' {
                previous = c;
            }
            i += 1;
        }
    }
    found
}

/// Returns the index just past the string literal whose opening quote is at `start`.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let triple = chars.get(start + 1) == Some(&quote) && chars.get(start + 2) == Some(&quote);
    let mut i = start + if triple { 3 } else { 1 };
    while i < chars.len() {
        match chars[i] {
            '\\' => i += 2,
            c if c == quote => {
                if !triple {
                    return i + 1;
                }
                if chars.get(i + 1) == Some(&quote) && chars.get(i + 2) == Some(&quote) {
                    return i + 3;
                }
                i += 1;
            }
            '\n' if !triple => return i + 1,
            _ => i += 1,
        }
    }
    chars.len()
}
