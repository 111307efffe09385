//! Python expressions and scripts over JSON task data, run by monty (a sandboxed Python
//! interpreter), with a pure-Rust fast path for names, literals and `name["key"]` chains.
//!
//! Variables are the top-level keys of the data map. The interpreter asks for each name the
//! code reads as it reads it, so only those values are converted. Every run is bounded in
//! time, recursion depth and single-allocation size (see `runner`).
mod convert;
mod fast;
mod runner;
mod scan;
#[cfg(test)]
mod tests;

use chrono::{DateTime, Utc};
use convert::{is_truthy, to_json};
use fast::FastExpr;
use monty_types::MontyObject;
use runner::{Program, EPILOGUE_MARKER};
use serde_json::{Map as JsonMap, Value};
use std::fmt;

pub type Map = JsonMap<String, Value>;

/// What code may read from outside its variables: today the time (`datetime.now()`,
/// `date.today()`). Passed in rather than read from the system so that the same code over the
/// same data gives the same result, and tests can pin it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Context {
    pub now: DateTime<Utc>,
}

impl Context {
    pub fn at(now: DateTime<Utc>) -> Context {
        Context { now }
    }
}

/// A Python-style error: `NameError: name 'x' is not defined`, `KeyError: 'k'`, ...
#[derive(Debug, Clone, PartialEq)]
pub struct ExprError {
    pub message: String,
}

impl ExprError {
    fn new(message: impl Into<String>) -> ExprError {
        ExprError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExprError {}

/// A compiled Python expression (compiled once at model load).
#[derive(Clone, Debug)]
pub struct Expression {
    source: String,
    fast: Option<FastExpr>,
    /// Always compiled: it checks the syntax, and the fast path defers to it for builtins.
    program: Program,
}

/// A result still in interpreter form, so truthiness works for non-JSON values too.
enum Outcome {
    Json(Value),
    Object(MontyObject),
}

impl Expression {
    pub fn compile(source: &str) -> Result<Expression, ExprError> {
        let trimmed = source.trim();
        if trimmed.is_empty() {
            return Err(ExprError::new("SyntaxError: empty expression"));
        }
        // Parentheses make statements (`x = 1`) a syntax error, as in Python's eval(), and let
        // the expression span lines freely.
        let program = Program::compile(&format!("(\n{trimmed}\n)"), &scan::names(trimmed))?;
        Ok(Expression {
            source: source.to_owned(),
            fast: FastExpr::parse(trimmed),
            program,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Evaluate with the top-level keys of `vars` as Python variables.
    pub fn eval(&self, vars: &Map, cx: &Context) -> Result<Value, ExprError> {
        match self.evaluate(vars, cx)? {
            Outcome::Json(value) => Ok(value),
            Outcome::Object(object) => to_json(object),
        }
    }

    /// Python truthiness of the result (None, False, 0, 0.0, "", [], {} are false).
    pub fn eval_bool(&self, vars: &Map, cx: &Context) -> Result<bool, ExprError> {
        Ok(match self.evaluate(vars, cx)? {
            Outcome::Json(value) => is_truthy(&value),
            Outcome::Object(object) => object.is_truthy(),
        })
    }

    fn evaluate(&self, vars: &Map, cx: &Context) -> Result<Outcome, ExprError> {
        if let Some(result) = self.fast.as_ref().and_then(|fast| fast.eval(vars)) {
            return result.map(Outcome::Json);
        }
        self.program.run(vars, cx).map(Outcome::Object)
    }
}

/// A compiled Python script (statements). Assignments to top-level names write back.
#[derive(Clone, Debug)]
pub struct Script {
    source: String,
    /// The script followed by an epilogue that returns `{"name": name, ...}` for every name
    /// the source mentions; names still unbound then come back as `...` and are skipped.
    program: Program,
}

/// Dunders (`__name__`) belong to the module, `__expr_*` to us: never written back.
fn is_reserved(name: &str) -> bool {
    (name.starts_with("__") && name.ends_with("__")) || name.starts_with("__expr_")
}

impl Script {
    pub fn compile(source: &str) -> Result<Script, ExprError> {
        // Compiled alone first so syntax errors describe the script, not the epilogue.
        runner::compile(source)?;
        let names = scan::names(source);
        let read_back: Vec<String> = names
            .iter()
            .filter(|n| !is_reserved(n))
            .map(|n| format!("'{n}': {n}"))
            .collect();
        let code = format!(
            "{source}\n{EPILOGUE_MARKER}()\n{{{}}}\n",
            read_back.join(", ")
        );
        Ok(Script {
            source: source.to_owned(),
            program: Program::compile(&code, &names)?,
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Runs with `data`'s keys as variables. Afterwards every top-level name the script bound
    /// or read (so in-place changes such as `d["k"] = 1` are kept) is written into `data` if
    /// its value is JSON; functions, modules and other non-JSON values are skipped. On error
    /// `data` is left untouched.
    pub fn run(&self, data: &mut Map, cx: &Context) -> Result<(), ExprError> {
        let MontyObject::Dict(values) = self.program.run(data, cx)? else {
            return Err(ExprError::new(
                "RuntimeError: script epilogue did not return a dict",
            ));
        };
        for (name, value) in values {
            if let (MontyObject::String(name), Ok(value)) = (name, to_json(value)) {
                data.insert(name, value);
            }
        }
        Ok(())
    }
}
