//! Signals sent from outside (the API): every instance waiting for the signal catches it, in
//! one transaction with the steps it causes. Each waiting instance is delivered to under its
//! row lock, with its signal waits taken in the same transaction: concurrent throws and
//! replicas reach each waiting task once.

use super::{retry_transaction, ModelCache, Result, UnitOfWork};
use crate::ids::InstanceId;
use serde_json::Value;
use sqlx::PgPool;

/// Which instances a signal reached (caught it in a waiting task) and which it started, in
/// id order.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SignalAnswer {
    pub signal_name: String,
    pub delivered_to: Vec<InstanceId>,
    pub started: Vec<InstanceId>,
}

/// Sends the signal with its payload (null for none): a catch whose signal names a
/// `variableName` stores it there.
pub async fn send(
    pool: &PgPool,
    cache: &ModelCache,
    name: &str,
    payload: &Value,
    sent_by: &str,
) -> Result<SignalAnswer> {
    retry_transaction!(send_once(pool, cache, name, payload, sent_by))
}

async fn send_once(
    pool: &PgPool,
    cache: &ModelCache,
    name: &str,
    payload: &Value,
    sent_by: &str,
) -> Result<SignalAnswer> {
    let mut unit = UnitOfWork::begin(pool, cache).await?;
    unit.act_as(sent_by);
    unit.broadcast_signal(None, name, payload).await?;
    unit.run_queued().await?;
    let mut delivered_to = unit.signal_deliveries(name);
    delivered_to.sort_unstable();
    delivered_to.dedup();
    let mut started = unit.signal_starts(name);
    started.sort_unstable();
    unit.commit().await?;
    Ok(SignalAnswer {
        signal_name: name.to_string(),
        delivered_to,
        started,
    })
}
