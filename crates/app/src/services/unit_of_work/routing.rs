//! Routing messages: a send goes to the oldest matching waiting receive, else starts the
//! model whose message start event takes it, else is buffered or refused; a new receive
//! takes a matching buffered send at once. Correlation values come from the retrieval
//! expressions every loaded model declares for the message name.

use super::super::clock::expr_context;
use super::super::message_catalog::Retrievals;
use super::super::{Error, ErrorCode, Result};
use super::starts::StartedBy;
use super::{CatalogSeen, NoMatch, OutgoingMessage, Routed, UnitOfWork, Unmatched, Work};
use crate::correlation::{candidate_keys, canonical_key, CorrelationValues};
use crate::engine::{Event, TaskState};
use crate::expr::{self, ErrorKind, Expression};
use crate::ids::{InstanceId, MessageId, ModelId, TaskGuid};
use crate::store::{
    self,
    messages::{FailureReason, MessageStatus},
};
use anyhow::anyhow;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use uuid::Uuid;

/// A waiting receive with its instance locked (the lock every writer of a receive holds).
pub(super) type LockedReceive = (
    store::messages::WaitingReceive,
    store::instances::LockedInstance,
);

impl<'c> UnitOfWork<'c> {
    /// Delivers a send to the oldest matching receive, else starts the model that owns the
    /// name, else buffers or rejects it. Waits for a receiver that is busy in another
    /// transaction (its instance lock) instead of rejecting the message. The receiving
    /// instance runs on at the next [`UnitOfWork::run_queued`]. An instance it starts goes in
    /// the message's `bucket`.
    pub async fn route_send(
        &mut self,
        name: &str,
        payload: &Value,
        values: &CorrelationValues,
        bucket: Option<i64>,
        unmatched: Unmatched,
    ) -> Result<Routed> {
        let keys = candidate_keys(values);
        if let Some(routed) = self.deliver_to_receive(name, payload, &keys).await? {
            return Ok(routed);
        }
        if let Some(trigger) = self.start_trigger(name).await? {
            let instance_id = self
                .create_instance(
                    &trigger.process_model_identifier,
                    Some(&trigger.process_id),
                    Some(trigger.start_event_id),
                    Map::new(),
                    StartedBy::Message(name.to_string(), payload.clone()),
                    super::starts::NewRow {
                        bucket,
                        current_version: Some(&trigger.model_version),
                    },
                )
                .await?;
            return Ok(Routed::Started { instance_id });
        }
        match unmatched {
            Unmatched::Reject => {
                let (reason, cause) = self.why_unmatched(name, values).await?;
                let early = self.instance_not_waiting_yet(name, values).await?;
                let (cause, early_for) = match early {
                    Some((id, status)) => (
                        format!(
                            "{cause}; process instance {id} ({status}) has these correlation \
                             values but is not waiting for it yet: send it with \
                             time_to_live_in_seconds (and a message_instance_uuid) to have it \
                             kept until the instance waits for it"
                        ),
                        Some(id),
                    ),
                    None => (cause, None),
                };
                Ok(Routed::NotAccepted {
                    cause,
                    reason,
                    early_for,
                })
            }
            Unmatched::Buffer => {
                // A receive created concurrently has committed once we hold the lock.
                store::messages::lock_name(self.db_without_new_rows(), name, true).await?;
                if let Some(routed) = self.deliver_to_receive(name, payload, &keys).await? {
                    return Ok(routed);
                }
                Ok(Routed::Buffered)
            }
        }
    }

    /// The start event that takes message `name`, if a model has one: from the catalog when
    /// it was kept at the version this unit's lookups checked, else read (and kept).
    async fn start_trigger(&mut self, name: &str) -> Result<Option<store::models::TriggerRow>> {
        if let CatalogSeen::At(version) = self.catalog_seen {
            if let Some(trigger) = self.cache.catalog().trigger(version, name) {
                return Ok(Some(trigger));
            }
        }
        let (version, trigger) =
            store::models::versioned_trigger_for(self.db_without_new_rows(), name).await?;
        if let Some(trigger) = &trigger {
            self.cache.catalog().keep_trigger(version, name, trigger);
        }
        Ok(trigger)
    }

    async fn deliver_to_receive(
        &mut self,
        name: &str,
        payload: &Value,
        keys: &[String],
    ) -> Result<Option<Routed>> {
        // receives of instances suspended while this lookup waited for their lock
        let mut passed: Vec<MessageId> = Vec::new();
        loop {
            let excluded = [self.claimed_receives.as_slice(), &passed].concat();
            let Some((receive, locked)) = self.lock_waiting_receive(name, keys, &excluded).await?
            else {
                return Ok(None);
            };
            if !self.instances.contains_key(&receive.process_instance_id) {
                self.insert_locked(locked).await?;
            }
            if self.is_suspended(receive.process_instance_id) {
                // The receive was read waiting, then its instance was suspended before the lock
                // was granted: it takes no message now, as if it were not there (the documented
                // rule); it stays open, for the resume to look in the buffer.
                passed.push(receive.id);
                continue;
            }
            let waiting = self.state(receive.process_instance_id).is_some_and(|s| {
                !s.status.is_final()
                    && s.tasks.iter().any(|t| {
                        t.guid == receive.task_guid.0
                            && matches!(t.state, TaskState::Waiting | TaskState::Ready)
                    })
            });
            if !waiting {
                // The task stopped waiting without its receive being closed: close it now.
                store::messages::cancel_receives_of_task(
                    self.db_with_receives().await?,
                    receive.process_instance_id,
                    receive.task_guid,
                )
                .await?;
                continue;
            }
            if self.deliveries_in_flight.contains(&receive.task_guid.0) {
                // Another of the task's messages is on its way: whether it still waits for this
                // one is known once that has stepped; this message goes elsewhere (or to the
                // buffer, where the receive looks for it then).
                self.claimed_receives.push(receive.id);
                self.queue.push_back(Work::MatchBuffer {
                    id: receive.process_instance_id,
                    task_guid: receive.task_guid.0,
                    receive_id: receive.id,
                    name: name.to_string(),
                    key: None,
                });
                continue;
            }
            // The instance is locked and its task still waits: the receive is this message's.
            self.claimed_receives.push(receive.id);
            self.deliveries_in_flight.insert(receive.task_guid.0);
            self.queue.push_back(Work::Step(
                receive.process_instance_id,
                Event::MessageDelivered {
                    task_guid: receive.task_guid.0,
                    name: name.to_string(),
                    payload: payload.clone(),
                },
            ));
            return Ok(Some(Routed::Delivered {
                instance_id: receive.process_instance_id,
                receive_id: receive.id,
            }));
        }
    }

    /// The oldest receive waiting under one of `keys` (but `excluded`), with its instance
    /// locked: the lock every writer of a receive holds, taken before its message rows on every
    /// path. Looked up in the buckets of the keys (one on plain PostgreSQL); on Citus, a receive
    /// whose instance is in another bucket is found through its route in the key's bucket, and
    /// locked in its own.
    async fn lock_waiting_receive(
        &mut self,
        name: &str,
        keys: &[String],
        excluded: &[MessageId],
    ) -> Result<Option<LockedReceive>> {
        let mut looked: Vec<store::shards::ShardKey> = Vec::new();
        for key in keys {
            let shard = store::shards::of_value(key);
            if looked.contains(&shard) {
                continue;
            }
            looked.push(shard);
            if let Some(found) = self
                .lock_waiting_receive_in(name, keys, excluded, shard)
                .await?
            {
                return Ok(Some(found));
            }
            if !store::shards::distributed() {
                continue;
            }
            let routes =
                store::messages::receive_routes(self.db().await?, name, keys, excluded, shard)
                    .await?;
            for route in routes {
                let target = route.receive_shard_key;
                if let Some(found) = self
                    .lock_waiting_receive_in(name, keys, excluded, target)
                    .await?
                {
                    return Ok(Some(found));
                }
                // nothing waits there any more under these keys: the route is stale
                store::messages::drop_receive_route(
                    self.db().await?,
                    name,
                    route.receive_id,
                    shard,
                )
                .await?;
            }
        }
        Ok(None)
    }

    async fn lock_waiting_receive_in(
        &mut self,
        name: &str,
        keys: &[String],
        excluded: &[MessageId],
        shard: store::shards::ShardKey,
    ) -> Result<Option<LockedReceive>> {
        if let Some(found) = self.take_looked_ahead(name, keys, excluded, shard) {
            return Ok(found);
        }
        let start_model = self.model_started_by(name);
        let lock_model = start_model
            .clone()
            .filter(|model| !self.models_locked.contains(model));
        // an id for the instance the send may start, unless one drawn before is unused
        let draw_id = start_model.is_some() && self.next_instance_id.is_none();
        if self.unwritten_receives.iter().any(|r| r.name == name) {
            self.write_unwritten_receives().await?;
        }
        if self
            .new_rows_awaited_names
            .iter()
            .any(|awaited| awaited == name)
        {
            // the lookup finds a receive's instance by its row
            self.write_new_rows().await?;
        }
        let catalog_version = self.catalog_seen.expected();
        let found = store::messages::lock_oldest_waiting_receive(
            self.db_without_new_rows(),
            name,
            keys,
            excluded,
            catalog_version,
            shard,
            store::messages::StartPrepared {
                lock_model: lock_model.as_ref(),
                draw_id,
            },
        )
        .await;
        let lookup = self.catalog_checked(found)?;
        if let Some(model) = lock_model {
            self.models_locked.insert(model);
        }
        if lookup.next_instance_id.is_some() {
            self.next_instance_id = lookup.next_instance_id;
        }
        Ok(lookup.found)
    }

    /// The model a send of `name` starts when no receive takes it, as the catalog version this
    /// unit's lookups check says: the lookup takes its instances lock unless held already
    /// (which the start would take in a statement of its own) and draws the new instance's id.
    /// (Plain PostgreSQL only: on Citus the lookup runs on a worker, and the lock must be the
    /// coordinator's.)
    pub(super) fn model_started_by(&self, name: &str) -> Option<ModelId> {
        let CatalogSeen::At(version) = self.catalog_seen else {
            return None;
        };
        if store::shards::distributed() {
            return None;
        }
        let trigger = self.cache.catalog().trigger(version, name)?;
        Some(trigger.process_model_identifier)
    }

    async fn why_unmatched(
        &mut self,
        name: &str,
        values: &CorrelationValues,
    ) -> Result<(NoMatch, String)> {
        if store::shards::distributed()
            && store::citus::in_doubt_transactions(self.db().await?).await? > 0
        {
            // not a verdict yet: the receive may be a row of a commit a node has not finished
            return Err(Error::refused(
                ErrorCode::DatabaseUnavailable,
                "no waiting receive was found, but a node of the database is still finishing                  a commit after a failure: the message was neither taken nor refused; send it                  again shortly",
            ));
        }
        let waiting =
            store::messages::count_waiting_receives(self.db_with_receives().await?, name).await?;
        Ok(if waiting == 0 {
            (
                NoMatch::NoReceiver,
                format!("no process instance waits for message '{name}' and no process model starts with it"),
            )
        } else {
            (
                NoMatch::CorrelationMismatch,
                format!(
                    "{waiting} process instance(s) wait for message '{name}', but none with the \
                     correlation values computed from the payload: {}",
                    canonical_key(values)
                ),
            )
        })
    }

    /// The live instance a refused message is early for: one of a model that uses the message
    /// and has established every one of its correlation values. A message without values
    /// names none (any instance could be meant).
    async fn instance_not_waiting_yet(
        &mut self,
        name: &str,
        values: &CorrelationValues,
    ) -> Result<Option<(InstanceId, String)>> {
        if values.is_empty() {
            return Ok(None);
        }
        Ok(store::messages::instance_with_values(self.db().await?, name, &json!(values)).await?)
    }

    /// Records a waiting receive; a buffered send that matches is delivered: at once, or, for a
    /// receive written with the instances, when they are written.
    pub(super) async fn wait_for_message(
        &mut self,
        id: InstanceId,
        task_guid: Uuid,
        name: &str,
        expected: &CorrelationValues,
    ) -> Result<()> {
        // (a receive has no foreign key to its instance: a new instance's row stays unwritten,
        // until a lookup of the receive's name, which finds receives' instances by their rows)
        if self.new_rows.contains(&id) {
            self.new_rows_awaited_names.push(name.to_string());
        }
        self.note_receive_added(name);
        let receive = store::messages::NewReceive {
            name: name.to_string(),
            correlation_keys: json!(expected),
            correlation_key: canonical_key(expected),
            process_instance_id: id,
            task_guid: TaskGuid(task_guid),
            shard_key: store::shards::of_instance(id),
        };
        if store::shards::distributed() || self.deliveries_in_flight.contains(&task_guid) {
            return self.write_receive(receive).await;
        }
        // written, and the buffer looked at for it, in the write-back's statement (or before a
        // statement that may see it): two statements fewer for a start that leaves its
        // instance waiting
        self.unwritten_receives.push(receive);
        Ok(())
    }

    /// Writes the receives this unit left waiting that are not written yet, each as it would
    /// have been written when it came, for a statement that may see them.
    pub(super) async fn write_unwritten_receives(&mut self) -> Result<()> {
        for receive in std::mem::take(&mut self.unwritten_receives) {
            self.write_receive(receive).await?;
        }
        Ok(())
    }

    /// The transaction, for a statement on receives by instance, task or name: the receives
    /// not written yet (and the new instances' rows) are written first.
    pub(super) async fn db_with_receives(&mut self) -> Result<&mut sqlx::PgConnection> {
        self.write_unwritten_receives().await?;
        self.db().await
    }

    /// Inserts a waiting receive in a statement of its own, and looks in the buffer for it.
    async fn write_receive(&mut self, receive: store::messages::NewReceive) -> Result<()> {
        let store::messages::NewReceive {
            name,
            correlation_keys,
            correlation_key: key,
            process_instance_id: id,
            task_guid: TaskGuid(task_guid),
            ..
        } = receive;
        let receive_id = store::messages::insert_waiting_receive(
            self.db_without_new_rows(),
            &name,
            &correlation_keys,
            &key,
            id,
            TaskGuid(task_guid),
        )
        .await?;
        self.match_new_receive(id, task_guid, receive_id, name, key)
            .await
    }

    /// Delivers a buffered send that matches a receive just written, if one is buffered and
    /// no other message is on its way to the task.
    pub(super) async fn match_new_receive(
        &mut self,
        id: InstanceId,
        task_guid: Uuid,
        receive_id: MessageId,
        name: String,
        key: String,
    ) -> Result<()> {
        if self.deliveries_in_flight.contains(&task_guid) {
            // another of the task's messages is on its way: whether it still waits for this
            // one is known once that has stepped
            self.queue.push_back(Work::MatchBuffer {
                id,
                task_guid,
                receive_id,
                name,
                key: Some(key),
            });
            return Ok(());
        }
        self.match_buffer(id, task_guid, receive_id, &name, &key)
            .await
    }

    /// Delivers a buffered send that matches a new receive, if one is buffered.
    pub(super) async fn match_buffer(
        &mut self,
        id: InstanceId,
        task_guid: Uuid,
        receive_id: MessageId,
        name: &str,
        key: &str,
    ) -> Result<()> {
        let buffered = self.claim_buffered_send(id, receive_id, name, key).await?;
        if let Some(send) = buffered {
            store::messages::complete_receive(self.db_without_new_rows(), id, receive_id, send.id)
                .await?;
            let payload = send.payload.map(|p| p.0).unwrap_or(Value::Null);
            self.deliveries_in_flight.insert(task_guid);
            self.queue.push_back(Work::Step(
                id,
                Event::MessageDelivered {
                    task_guid,
                    name: name.to_string(),
                    payload,
                },
            ));
        }
        Ok(())
    }

    /// Claims the oldest buffered send of `name` that matches `key`, for a receive of instance
    /// `id`: on plain PostgreSQL in one statement; on Citus, the key's bucket names the sends
    /// and each is claimed in its own bucket.
    async fn claim_buffered_send(
        &mut self,
        id: InstanceId,
        receive_id: MessageId,
        name: &str,
        key: &str,
    ) -> Result<Option<store::messages::BufferedSend>> {
        let claimed = if store::shards::distributed() {
            store::messages::claim_buffered_send_across(
                self.db_without_new_rows(),
                name,
                key,
                receive_id,
                id,
            )
            .await?
        } else {
            store::messages::claim_buffered_send(
                self.db_without_new_rows(),
                name,
                key,
                receive_id,
                id,
            )
            .await?
        };
        Ok(claimed)
    }

    /// Property id -> value of a payload, by the retrieval expressions every loaded model
    /// declares for this message name, and the properties whose expression gave no value
    /// (raised, does not compile, or gave null): those are left out of the values. If no Python
    /// was free to evaluate one, nothing is decided (503).
    ///
    /// The expressions come from the replica's catalog when it keeps them; the correlation
    /// lookup then checks they are current. A failure is checked before it is reported (the
    /// caller refuses the message on it, before any lookup): with expressions read afresh
    /// when the kept ones were stale.
    pub async fn correlation_values(
        &mut self,
        name: &str,
        payload: &Value,
    ) -> Result<(CorrelationValues, Vec<RetrievalFailure>)> {
        if let Some(computed) = self.take_computed_ahead(name, payload) {
            return Ok(computed);
        }
        let kept = self.cache.catalog().retrievals(name);
        let from_catalog = kept.is_some();
        let (mut version, mut retrievals) = match kept {
            Some(kept) => kept,
            None => self.read_retrievals(name).await?,
        };
        let mut evaluated = self.evaluate_retrievals(&retrievals, payload).await?;
        if from_catalog && !evaluated.1.is_empty() {
            let (current, read) = self.read_retrievals(name).await?;
            if current != version {
                (version, retrievals) = (current, read);
                evaluated = self.evaluate_retrievals(&retrievals, payload).await?;
            }
        }
        self.catalog_seen = self.catalog_seen.and(version);
        Ok(evaluated)
    }

    /// The retrievals of message `name` read from the database (and kept), with the
    /// catalog's version.
    async fn read_retrievals(&mut self, name: &str) -> Result<(i64, Retrievals)> {
        let (version, read) =
            store::models::versioned_retrievals_for(self.db_without_new_rows(), name).await?;
        Ok((
            version,
            self.cache.catalog().keep_retrievals(version, name, read),
        ))
    }

    async fn evaluate_retrievals(
        &self,
        retrievals: &Retrievals,
        payload: &Value,
    ) -> Result<(CorrelationValues, Vec<RetrievalFailure>)> {
        let vars = match payload {
            Value::Object(map) => map.clone(),
            _ => Map::new(),
        };
        let mut values = CorrelationValues::new();
        let mut failures = Vec::new();
        for (property_id, source) in retrievals.iter().cloned() {
            if values.contains_key(&property_id) {
                continue;
            }
            let evaluated = match self.cache.expression(&source) {
                Some(expression) => retrieve(expression, &vars, expr_context(self.cache)).await?,
                None => Err("it is not a valid Python expression".to_string()),
            };
            match evaluated {
                Ok(value) => {
                    // another model's expression for the property may have failed first
                    failures.retain(|f: &RetrievalFailure| f.property_id != property_id);
                    values.insert(property_id, value);
                }
                Err(error) => failures.push(RetrievalFailure {
                    property_id,
                    expression: source,
                    error,
                }),
            }
        }
        Ok((values, failures))
    }

    /// Stores where a send went (and points the receive it completed at it); returns its id,
    /// or `None` for a send of the API (without an idempotency row) that a receive or a new
    /// instance took: that one is stored with the instances when they are written back.
    pub async fn record_send(
        &mut self,
        sent: &OutgoingMessage<'_>,
        values: &CorrelationValues,
        routed: &Routed,
        ttl_seconds: Option<i64>,
    ) -> Result<Option<MessageId>> {
        let (status, target, receive, (cause, reason), ttl) = match routed {
            Routed::Delivered {
                instance_id,
                receive_id,
            } => (
                MessageStatus::Completed,
                Some(*instance_id),
                Some((*receive_id, *instance_id)),
                (None, None),
                None,
            ),
            Routed::Started { instance_id } => (
                MessageStatus::Completed,
                Some(*instance_id),
                None,
                (None, None),
                None,
            ),
            Routed::Buffered => (MessageStatus::Ready, None, None, (None, None), ttl_seconds),
            Routed::NotAccepted { cause, reason, .. } => (
                MessageStatus::NotAccepted,
                None,
                None,
                (Some(cause.as_str()), Some(FailureReason::from(*reason))),
                None,
            ),
        };
        // a buffered send is found by any subset of its values (the empty one: by name, which on
        // Citus is a key too: its sends are in every bucket)
        let buffer_keys: Vec<String> = match routed {
            Routed::Buffered => candidate_keys(values)
                .into_iter()
                .filter(|key| key != "{}" || store::shards::distributed())
                .collect(),
            _ => Vec::new(),
        };
        // its bucket's, else (it may go anywhere) with the instance it went to
        let shard_key = match (sent.bucket, target) {
            (Some(bucket), _) => store::shards::of_bucket(bucket),
            (None, Some(instance)) => store::shards::of_instance(instance),
            (None, None) => store::shards::of_value(&canonical_key(values)),
        };
        let (sender, task_guid) = match sent.sender {
            Some((instance, task)) => (Some(instance), Some(TaskGuid(task))),
            None => (None, None),
        };
        let record = store::messages::SendRecord {
            id: sent.id,
            shard_key,
            name: sent.name,
            payload: sent.payload,
            status,
            correlation_keys: &json!(values),
            correlation_key: &canonical_key(values),
            // an engine-thrown message belongs to its sender; an API one to its target
            process_instance_id: sender.or(target),
            task_guid,
            receive,
            failure_cause: cause,
            failure_reason: reason,
            ttl_seconds: ttl,
            created_by: sent.created_by,
            buffer_keys: &buffer_keys,
        };
        // a message the API sent, taken by a receive or a new instance, is the last write of
        // its part of the unit: stored with the instances (one statement fewer per message).
        // One an instance throws is stored when routed, so that messages thrown in one step
        // keep their order (their ids), whichever of them a receive took.
        let took_it = matches!(routed, Routed::Delivered { .. } | Routed::Started { .. });
        if took_it && sent.id.is_none() && sent.sender.is_none() {
            self.routed_sends
                .push(store::messages::RoutedSend::from(&record));
            return Ok(None);
        }
        let id = store::messages::record_send(self.db_without_new_rows(), &record).await?;
        self.recorded_sends.insert(id, shard_key);
        Ok(Some(id))
    }
}

/// A correlation property a message's payload gave no value for: its retrieval expression
/// and why.
#[derive(Debug, Clone, PartialEq)]
pub struct RetrievalFailure {
    pub property_id: String,
    pub expression: String,
    pub error: String,
}

/// A retrieval expression's value: a name or subscript on this thread, anything that needs
/// Python on a blocking one (the worker may take its whole time limit). `Err` (why, in words)
/// when it fails or gives null (the message has no value for the property); no Python being
/// free is `Error::ScriptsUnavailable`.
async fn retrieve(
    expression: Arc<Expression>,
    vars: &Map<String, Value>,
    cx: expr::Context,
) -> Result<std::result::Result<Value, String>> {
    let evaluated = if expression.needs_python() {
        let vars = vars.clone();
        tokio::task::spawn_blocking(move || expression.eval(&vars, &cx))
            .await
            .map_err(|e| Error::Internal(anyhow!("a retrieval expression's thread failed: {e}")))?
    } else {
        expression.eval(vars, &cx)
    };
    match evaluated {
        Ok(value) if !value.is_null() => Ok(Ok(value)),
        Ok(_) => Ok(Err("it gave None (null)".to_string())),
        Err(e) if e.kind == ErrorKind::Unavailable => Err(Error::ScriptsUnavailable(e.message)),
        Err(e) => Ok(Err(e.message)),
    }
}
