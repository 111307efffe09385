//! Integration tests over HTTP: one binary (linked once), one module per area.

mod auth;
mod cli;
mod console;
mod data;
mod data_stores;
mod decisions;
mod domain;
mod errors;
mod events;
mod examples;
mod hardening;
mod health;
mod helpers;
mod identity;
mod instances;
mod lifecycle;
mod messages;
mod models;
mod openapi;
mod plans;
mod scripts;
mod secrets;
mod service_tasks;
mod structure;
mod versions;
mod workers;
