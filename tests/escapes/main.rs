//! Escapes: a hostile model author's scripts against the script worker's Python wall
//! (issue 31). One module per family of techniques; each test runs one technique and asserts
//! that the script errs with the sandbox's refusal and that nothing leaks: the answer holds
//! neither the secret the request carries (`support::SECRET`) nor the canary file's content
//! (`support::MARKER`), which every payload tries to read once it is out.
//!
//! The bulk drives the worker pool directly (`support`), not the HTTP API: the wall under test
//! is the worker's, a technique is one request, and a pool answers in milliseconds where an
//! upload and a start cost a database per test; the pool's answer also shows what HTTP hides
//! (the error class, "fatal" when a worker asks to be replaced). `http` drives a sample of
//! them end to end (upload a model with the script, start it, the instance is in `error`, the
//! answer holds no server secret), so the API's path to the worker is covered too.
//!
//! The OS wall around the workers (Landlock, seccomp) is tested elsewhere; with the Python
//! guards off, it alone must hold. These tests show the first wall holds on its own.

#[allow(dead_code)]
#[path = "../api/helpers.rs"]
mod helpers;

mod formats;
mod frames;
mod http;
mod imports;
mod introspection;
mod reexports;
mod shared_state;
mod support;
