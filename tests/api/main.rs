//! Integration tests over HTTP: one binary (linked once), one module per area.

#[macro_use]
#[path = "../support/conformance.rs"]
mod conformance;

mod accept;
mod auth;
mod batches;
mod calls;
mod cli;
mod console;
mod correlation_gaps;
mod data;
mod data_stores;
mod decisions;
mod domain;
mod errors;
mod event_payloads;
mod events;
mod examples;
mod failover;
mod fix_and_retry;
mod hardening;
mod hardening_http;
mod health;
mod helpers;
mod identity;
mod instances;
mod lifecycle;
mod message_catalog;
mod messages;
mod models;
mod openapi;
mod openapi_examples;
mod overview;
mod plans;
mod races;
mod script_output;
mod scripts;
mod secrets;
mod service_tasks;
mod structure;
mod traces;
mod upload_bombs;
mod versions;
mod workers;
