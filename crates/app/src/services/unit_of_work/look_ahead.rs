//! The lookups of a batch of sends made ahead, in one statement. Routed one after the other,
//! each send of a batch (group commit) would look up its receive in a statement of its own,
//! and those round trips, one after the other, were most of a batch's time (eight
//! correlations: 4.5 of 7 ms). Looked up together before the first is routed, each send then
//! takes its lookup from here when it is routed, if it still holds, and otherwise looks again.
//!
//! A lookup made ahead still holds when it is taken:
//! - one that found a receive, unless that receive is excluded by then (another send of this
//!   unit took it): receives added since are younger, so it is still the oldest;
//! - one that found none, unless this unit has added a receive of the name since.
//!
//! The instances found are locked by the statement ahead (in the order of the sends), as each
//! send's own lookup would have locked them; one whose send goes elsewhere stays locked until
//! the commit, as a receive a send passes over does.

use super::super::Result;
use super::routing::{LockedReceive, RetrievalFailure};
use super::UnitOfWork;
use crate::correlation::{candidate_keys, CorrelationValues};
use crate::ids::{InstanceId, MessageId, ModelId};
use crate::store::{self, messages::SendLookup, shards::ShardKey};
use serde_json::Value;

/// A send's lookup made ahead with its batch's.
pub(super) struct LookedAhead {
    name: String,
    keys: Vec<String>,
    shard: ShardKey,
    found: Option<LockedReceive>,
    /// The id drawn for the instance the send may start.
    next_instance_id: Option<InstanceId>,
}

/// A send's correlation values computed for its lookup ahead, for when it is routed.
pub(super) struct ComputedAhead {
    name: String,
    payload: Value,
    computed: (CorrelationValues, Vec<RetrievalFailure>),
}

impl<'c> UnitOfWork<'c> {
    /// Looks up the receives of these sends (name, payload) in one statement, before any of
    /// them is routed (plain PostgreSQL; more than one send). A send whose correlation values
    /// cannot all be computed is left to its own lookup (its refusal).
    pub async fn look_up_ahead(&mut self, sends: &[(&str, &Value)]) -> Result<()> {
        if sends.len() < 2 || store::shards::distributed() {
            return Ok(());
        }
        let mut looked: Vec<(&str, Vec<String>)> = Vec::with_capacity(sends.len());
        for &(name, payload) in sends {
            let computed = self.correlation_values(name, payload).await?;
            if computed.1.is_empty() {
                looked.push((name, candidate_keys(&computed.0)));
            }
            self.computed_ahead.push(ComputedAhead {
                name: name.to_string(),
                payload: payload.clone(),
                computed,
            });
        }
        looked.retain(|(_, keys)| !keys.is_empty());
        // (one bucket on plain PostgreSQL: the first key's is every key's)
        let Some(shard) = looked
            .first()
            .map(|(_, keys)| store::shards::of_value(&keys[0]))
        else {
            return Ok(());
        };
        let starts: Vec<Option<ModelId>> = (looked.iter())
            .map(|(name, _)| self.model_started_by(name))
            .collect();
        let lock_models: Vec<&ModelId> = (starts.iter().flatten())
            .filter(|model| !self.models_locked.contains(*model))
            .collect();
        let lookups: Vec<SendLookup<'_>> = (looked.iter().zip(&starts))
            .map(|((name, keys), start)| SendLookup {
                name,
                keys,
                draw_id: start.is_some(),
            })
            .collect();
        if (self.unwritten_receives.iter()).any(|r| looked.iter().any(|(name, _)| *name == r.name))
        {
            self.write_unwritten_receives().await?;
        }
        let catalog_version = self.catalog_seen.expected();
        let found = store::messages::lock_oldest_waiting_receives(
            &mut self.tx,
            &lookups,
            &self.claimed_receives,
            catalog_version,
            shard,
            &lock_models,
        )
        .await;
        let found = self.catalog_checked(found)?;
        let locked: Vec<ModelId> = lock_models.into_iter().cloned().collect();
        self.models_locked.extend(locked);
        self.looked_ahead = (looked.into_iter().zip(found))
            .map(|((name, keys), lookup)| LookedAhead {
                name: name.to_string(),
                keys,
                shard,
                found: lookup.found,
                next_instance_id: lookup.next_instance_id,
            })
            .collect();
        Ok(())
    }

    /// The lookup made ahead for this send's lookup, if one was and it still holds (the
    /// module's doc); taken, so that a second lookup of the send is made in full.
    pub(super) fn take_looked_ahead(
        &mut self,
        name: &str,
        keys: &[String],
        excluded: &[MessageId],
        shard: ShardKey,
    ) -> Option<Option<LockedReceive>> {
        let at = (self.looked_ahead.iter())
            .position(|ahead| ahead.name == name && ahead.keys == keys && ahead.shard == shard)?;
        let ahead = self.looked_ahead.remove(at);
        let holds = match &ahead.found {
            Some((receive, _)) => !excluded.contains(&receive.id),
            None => !self.names_waited_since_ahead.iter().any(|n| n == name),
        };
        if !holds {
            return None;
        }
        if self.next_instance_id.is_none() {
            self.next_instance_id = ahead.next_instance_id;
        }
        Some(ahead.found)
    }

    /// Notes a receive of `name` added by this unit: a lookup ahead that found none of the
    /// name no longer holds.
    pub(super) fn note_receive_added(&mut self, name: &str) {
        if !self.looked_ahead.is_empty() {
            self.names_waited_since_ahead.push(name.to_string());
        }
    }

    /// A send's correlation values as its lookup ahead computed them, taken.
    pub(super) fn take_computed_ahead(
        &mut self,
        name: &str,
        payload: &Value,
    ) -> Option<(CorrelationValues, Vec<RetrievalFailure>)> {
        let at = (self.computed_ahead.iter())
            .position(|ahead| ahead.name == name && &ahead.payload == payload)?;
        Some(self.computed_ahead.remove(at).computed)
    }
}
