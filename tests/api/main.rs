//! Integration tests over HTTP: one binary (linked once), one module per area.

mod auth;
mod cli;
mod errors;
mod health;
mod helpers;
mod openapi;
