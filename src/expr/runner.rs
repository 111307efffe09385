//! Running compiled code in monty: resource bounds, names answered lazily from the data,
//! and the few host functions scripts may call (`time.sleep`, `datetime.now()`).
use super::convert::{py_str_repr, to_monty, type_name};
use super::scan::{self, TIME_MODULE};
use super::{Context, ExprError, Map};
use chrono::{Datelike, Timelike};
use monty::{FunctionCall, MontyRun, NameLookup, RunProgress};
use monty_types::{
    CompileOptions, ExcType, ExtFunctionResult, MontyClassInstance, MontyClassType, MontyDate,
    MontyDateTime, MontyException, MontyObject, MontyTimeZone, MontyUuid, NameLookupResult,
    OsFunctionCall, PrintWriter, ResourceLimits, ResourceTracker,
};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Wall-clock budget of one evaluation or script run.
pub(super) const TIME_LIMIT: Duration = Duration::from_secs(1);
/// Python function-call depth. Monty's frames live on the heap, so this is about runaway
/// recursion, not the native stack.
pub(super) const MAX_RECURSION_DEPTH: usize = 500;
/// Monty cannot see live memory unless `monty-alloc` is the global allocator (it is not), but
/// with a limit set it still refuses any single allocation above it (`"x" * 10**10`).
const MAX_ALLOCATION_BYTES: usize = 64 << 20;
/// Name lookups and host calls per run; each costs a snapshot of the interpreter.
const MAX_SUSPENSIONS: usize = 10_000;

/// File name in monty's tracebacks.
const FILE_NAME: &str = "<expr>";
/// Host function a script's epilogue calls first: from then on unbound names are answered
/// with `...` (see `Script`), so reading them back does not fail.
pub(super) const EPILOGUE_MARKER: &str = "__expr_epilogue__";
/// Names used by the builtin-shadowing prologue (see `Program`).
const SHADOWS_PREFIX: &str = "__expr_shadows_";
const VALUE_PREFIX: &str = "__expr_value_";
const SLEEP: &str = "time.sleep";

/// Code compiled once, run many times.
#[derive(Clone, Debug)]
pub(super) struct Program {
    plain: Compiled,
    /// Monty binds builtin names (`id`, `type`, `max`) at compile time unless the module
    /// assigns them, so data variables with those names would be invisible. When the source
    /// mentions any, a second version starts with `if <data has n>: n = <data[n]>` for each,
    /// and runs whenever the data does define one of them.
    shadowing: Option<(Vec<String>, Compiled)>,
}

/// A `MontyRun` behind a mutex: monty's compiled code is `Send` but not `Sync` (it caches
/// in `OnceCell`s), and models are shared between threads. Each run clones it (cheap: the
/// bytecode is an `Arc`) under the lock.
#[derive(Debug)]
struct Compiled(Mutex<MontyRun>);

impl Compiled {
    fn new(code: &str) -> Result<Compiled, ExprError> {
        compile(code).map(|run| Compiled(Mutex::new(run)))
    }

    fn fresh(&self) -> MontyRun {
        // A panic cannot leave a `MontyRun` half-cloned, so a poisoned lock is still usable.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

impl Clone for Compiled {
    fn clone(&self) -> Compiled {
        Compiled(Mutex::new(self.fresh()))
    }
}

impl Program {
    /// `names` are the names `code` mentions (see `scan::names`).
    pub(super) fn compile(code: &str, names: &[String]) -> Result<Program, ExprError> {
        let plain = Compiled::new(code)?;
        let builtins: Vec<String> = names
            .iter()
            .filter(|n| scan::is_builtin(n))
            .cloned()
            .collect();
        let shadowing = if builtins.is_empty() {
            None
        } else {
            let prologue: String = builtins
                .iter()
                .map(|n| format!("if {SHADOWS_PREFIX}{n}: {n} = {VALUE_PREFIX}{n}\n"))
                .collect();
            Some((builtins, Compiled::new(&(prologue + code))?))
        };
        Ok(Program { plain, shadowing })
    }

    pub(super) fn run(&self, vars: &Map, cx: &Context) -> Result<MontyObject, ExprError> {
        let code = match &self.shadowing {
            Some((names, code)) if names.iter().any(|n| vars.contains_key(n)) => code,
            _ => &self.plain,
        };
        Session {
            vars,
            cx,
            in_epilogue: false,
        }
        .drive(code.fresh())
    }
}

/// Compiles a module; syntax errors become `SyntaxError: ...`.
pub(super) fn compile(code: &str) -> Result<MontyRun, ExprError> {
    MontyRun::new(
        code.to_owned(),
        FILE_NAME,
        Vec::new(),
        CompileOptions::default(),
    )
    .map_err(error_from)
}

/// One run: answers the interpreter's questions from `vars`.
struct Session<'a> {
    vars: &'a Map,
    cx: &'a Context,
    in_epilogue: bool,
}

impl Session<'_> {
    fn drive(mut self, code: MontyRun) -> Result<MontyObject, ExprError> {
        let started = Instant::now();
        let limits = ResourceLimits::default()
            .max_duration(TIME_LIMIT)
            .max_recursion_depth(MAX_RECURSION_DEPTH)
            .max_memory(MAX_ALLOCATION_BYTES);
        let mut progress = code.start(
            Vec::new(),
            ResourceTracker::new(limits),
            PrintWriter::Disabled,
        );
        let mut suspensions = 0;
        loop {
            let step = progress.map_err(error_from)?;
            if let RunProgress::Complete(result) = step {
                return Ok(result);
            }
            // Monty's clock stops while we answer, so bound the wall clock here too.
            suspensions += 1;
            let elapsed = started.elapsed();
            if elapsed > TIME_LIMIT {
                return Err(ExprError::new(format!(
                    "TimeoutError: time limit exceeded: {elapsed:?} > {TIME_LIMIT:?}"
                )));
            }
            if suspensions > MAX_SUSPENSIONS {
                return Err(ExprError::new(format!(
                    "RuntimeError: more than {MAX_SUSPENSIONS} name lookups or host calls"
                )));
            }
            progress = match step {
                RunProgress::NameLookup(lookup) => {
                    let answer = self.lookup(&lookup);
                    lookup.resume(answer, PrintWriter::Disabled)
                }
                RunProgress::FunctionCall(call) => {
                    let result = self.call(&call);
                    call.resume(result, PrintWriter::Disabled)
                }
                RunProgress::OsCall(call) => {
                    let now = self.cx.now;
                    call.resume_with(PrintWriter::Disabled, |call| os_call(call, now))
                }
                RunProgress::ResolveFutures(_) => {
                    return Err(ExprError::new("RuntimeError: async code is not supported"))
                }
                RunProgress::Complete(_) => unreachable!("returned above"),
            };
        }
    }

    fn lookup(&self, lookup: &NameLookup) -> NameLookupResult {
        let name = lookup.name.as_str();
        if lookup.object_id().is_some() {
            // An attribute missing on the only host object, the `time` module.
            return no_such_attribute(name).into();
        }
        if self.in_epilogue {
            // Unbound at the end of the script: `...` is not JSON, so it is not written back.
            return MontyObject::Ellipsis.into();
        }
        if let Some(value) = self.vars.get(name) {
            return to_monty(value).into();
        }
        if let Some(shadowed) = name.strip_prefix(SHADOWS_PREFIX) {
            return MontyObject::Bool(self.vars.contains_key(shadowed)).into();
        }
        if let Some(shadowed) = name.strip_prefix(VALUE_PREFIX) {
            return self.vars.get(shadowed).map(to_monty).into();
        }
        if name == TIME_MODULE {
            return time_module().into();
        }
        NameLookupResult::Undefined
    }

    /// A call of an unbound name (monty does not look up names in call position) or of a
    /// method of the `time` module.
    fn call(&mut self, call: &FunctionCall) -> ExtFunctionResult {
        let name = call.function_name.as_str();
        if call.object_id.is_some() {
            return no_such_attribute(name).into();
        }
        match name {
            SLEEP => sleep(&call.args, call.kwargs.len()),
            EPILOGUE_MARKER => {
                self.in_epilogue = true;
                MontyObject::None.into()
            }
            _ => match self.vars.get(name) {
                Some(value) => exception(
                    ExcType::TypeError,
                    format!("'{}' object is not callable", type_name(value)),
                ),
                None => ExtFunctionResult::NotFound(name.to_owned()),
            },
        }
    }
}

/// `time`, answered only when the data has no variable of that name. Its `sleep` is a host
/// function; other attributes raise AttributeError.
fn time_module() -> MontyObject {
    let sleep = MontyObject::Function {
        name: SLEEP.to_owned(),
        docstring: None,
    };
    MontyObject::ClassInstance(Box::new(MontyClassInstance {
        class_type: MontyClassType {
            name: "module".to_owned(),
            id: MontyUuid::from_u128(0x7133),
            host_defined: true,
            is_dataclass: false,
            attrs: Vec::new().into(),
        },
        instance_id: MontyUuid::from_u128(0x7134),
        attrs: vec![(MontyObject::String("sleep".to_owned()), sleep)].into(),
    }))
}

fn no_such_attribute(name: &str) -> MontyException {
    MontyException::new(
        ExcType::AttributeError,
        Some(format!("module '{TIME_MODULE}' has no attribute '{name}'")),
    )
}

/// `time.sleep(seconds)` checks its argument like Python but does not sleep: a script task
/// runs inside the engine, where waiting only holds up the caller (and the time budget).
fn sleep(args: &[MontyObject], kwargs: usize) -> ExtFunctionResult {
    match args {
        _ if kwargs > 0 => exception(
            ExcType::TypeError,
            "time.sleep() takes no keyword arguments",
        ),
        [MontyObject::Int(i)] if *i >= 0 => MontyObject::None.into(),
        [MontyObject::Float(f)] if *f >= 0.0 => MontyObject::None.into(),
        [MontyObject::Int(_) | MontyObject::Float(_)] => {
            exception(ExcType::ValueError, "sleep length must be non-negative")
        }
        [other] => exception(
            ExcType::TypeError,
            format!(
                "'{}' object cannot be interpreted as an integer",
                other.type_name()
            ),
        ),
        _ => exception(
            ExcType::TypeError,
            format!(
                "time.sleep() takes exactly one argument ({} given)",
                args.len()
            ),
        ),
    }
}

/// `datetime.now()` and `date.today()` answer the context's time (UTC, with the given zone's
/// offset); files and the environment are not available.
fn os_call(call: OsFunctionCall, now: chrono::DateTime<chrono::Utc>) -> ExtFunctionResult {
    let now = now.naive_utc();
    match call {
        OsFunctionCall::DateTimeNow(zone) => {
            let offset = zone.as_ref().map(|z: &MontyTimeZone| z.offset_seconds);
            let local = now + chrono::TimeDelta::seconds(offset.unwrap_or(0).into());
            MontyObject::DateTime(MontyDateTime {
                year: local.year(),
                month: local.month() as u8,
                day: local.day() as u8,
                hour: local.hour() as u8,
                minute: local.minute() as u8,
                second: local.second() as u8,
                // A leap second shows as nanosecond >= 1e9.
                microsecond: (local.nanosecond() / 1000).min(999_999),
                offset_seconds: offset,
                timezone_name: zone.and_then(|z| z.name),
            })
            .into()
        }
        OsFunctionCall::DateToday => MontyObject::Date(MontyDate {
            year: now.year(),
            month: now.month() as u8,
            day: now.day() as u8,
        })
        .into(),
        other => {
            let what: &'static str = other.into();
            exception(
                ExcType::PermissionError,
                format!("{what} is not available in expressions"),
            )
        }
    }
}

fn exception(exc_type: ExcType, message: impl Into<String>) -> ExtFunctionResult {
    MontyException::new(exc_type, Some(message.into())).into()
}

/// Python's one-line summary, e.g. `NameError: name 'x' is not defined`.
fn error_from(exception: MontyException) -> ExprError {
    // Monty's KeyError carries str(key) where Python shows repr(key): quote it back unless
    // the key reads as a number, bool, None or tuple.
    if matches!(exception.exc_type(), ExcType::KeyError) {
        if let Some(key) = exception.message() {
            let is_non_str_key = matches!(key, "True" | "False" | "None")
                || key.starts_with('(')
                || (key.parse::<f64>().is_ok()
                    && key
                        .chars()
                        .all(|c| c.is_ascii_digit() || "+-.e".contains(c)));
            if !is_non_str_key {
                return ExprError::new(format!("KeyError: {}", py_str_repr(key)));
            }
        }
    }
    ExprError::new(exception.summary())
}
