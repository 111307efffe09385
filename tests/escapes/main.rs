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
//! The workers run behind the OS wall (Landlock, seccomp), as the server runs them; it is
//! tested on its own in tests/os_wall.rs. Here each technique must be refused by the Python
//! wall, with its message: one that got past it and was stopped by the kernel would answer a
//! `PermissionError` instead, and fail its test.

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
