//! Gateways and conditional flows: which outgoing flows a completed element takes (all for a
//! parallel gateway, the first true condition for an exclusive one, every true condition
//! otherwise, the default flow when none holds) and when a parallel join lets a token through.

use super::interpreter::{Interpreter, ModelFailure, Token};
use crate::bpmn::{ElementKind, ElementSpec};
use std::collections::BTreeMap;
use uuid::Uuid;

/// Key of a parallel join's arrivals in `EngineInternal::joins`.
pub(super) fn join_key(scope: Option<Uuid>, gateway: &str) -> String {
    match scope {
        Some(s) => format!("{s}/{gateway}"),
        None => format!("-/{gateway}"),
    }
}

impl<'m> Interpreter<'m> {
    /// The flows to follow when `element` completes (none: an implicit end).
    pub fn outgoing_flows(&self, element: &'m ElementSpec) -> Result<Vec<&'m str>, ModelFailure> {
        if element.outgoing.is_empty() {
            return Ok(vec![]);
        }
        match &element.kind {
            ElementKind::ParallelGateway | ElementKind::EventGateway => {
                Ok(element.outgoing.iter().map(String::as_str).collect())
            }
            ElementKind::ExclusiveGateway => self.exclusive_choice(element).map(|f| vec![f]),
            _ => self.conditional_flows(element),
        }
    }

    /// The first flow whose condition holds, else the default flow.
    fn exclusive_choice(&self, gateway: &'m ElementSpec) -> Result<&'m str, ModelFailure> {
        for flow in non_default_flows(gateway) {
            if self.condition_holds(gateway, flow)? {
                return Ok(flow);
            }
        }
        gateway.default_flow.as_deref().ok_or_else(|| {
            ModelFailure::new(
                &gateway.id,
                "no outgoing flow matched: every condition is false and the gateway has no default flow",
            )
        })
    }

    /// Every flow whose condition holds (a flow without one always does), else the default.
    fn conditional_flows(&self, element: &'m ElementSpec) -> Result<Vec<&'m str>, ModelFailure> {
        let mut taken = vec![];
        for flow in non_default_flows(element) {
            if self.condition_holds(element, flow)? {
                taken.push(flow);
            }
        }
        if taken.is_empty() {
            let default = element.default_flow.as_deref().ok_or_else(|| {
                ModelFailure::new(
                    &element.id,
                    "no outgoing flow matched: every condition is false and there is no default flow",
                )
            })?;
            taken.push(default);
        }
        Ok(taken)
    }

    /// A flow's condition (true when it has none).
    fn condition_holds(&self, element: &ElementSpec, flow_id: &str) -> Result<bool, ModelFailure> {
        match &self.process.flows[flow_id].condition {
            None => Ok(true),
            Some(condition) => self.eval_bool(
                element,
                condition,
                &format!("the condition of sequence flow {flow_id}"),
            ),
        }
    }

    /// Whether a token may enter `element`: always, except at a parallel join, which records
    /// the arrival and lets one token through once every incoming flow has brought one.
    pub fn join_passes(&mut self, element: &ElementSpec, token: &Token) -> bool {
        if !(matches!(element.kind, ElementKind::ParallelGateway) && element.incoming.len() > 1) {
            return true;
        }
        let key = join_key(token.scope, &element.id);
        let arrived = self.state.internal.joins.entry(key.clone()).or_default();
        if let Some(flow) = &token.flow {
            *arrived.entry(flow.clone()).or_insert(0) += 1;
        }
        if !every_flow_arrived(&element.incoming, arrived) {
            return false;
        }
        consume_one_of_each(&element.incoming, arrived);
        if arrived.is_empty() {
            self.state.internal.joins.remove(&key);
        }
        true
    }

    /// A catch event after an event-based gateway completed: it won, and the other catch
    /// events of that gateway are cancelled (in the same step, so a rival's message or timer
    /// that comes later finds nothing waiting).
    pub fn win_race(&mut self, guid: Uuid) {
        let Some(race) = self.state.internal.races.remove(&guid) else {
            return;
        };
        let rivals: Vec<Uuid> = self
            .state
            .internal
            .races
            .iter()
            .filter(|(_, r)| **r == race)
            .map(|(rival, _)| *rival)
            .collect();
        for rival in rivals {
            self.cancel_task(rival);
        }
    }

    /// Forget the joins waiting inside a subprocess (it completed or was cancelled).
    pub fn clear_joins(&mut self, scope: Uuid) {
        let prefix = format!("{scope}/");
        self.state
            .internal
            .joins
            .retain(|key, _| !key.starts_with(&prefix));
    }
}

fn non_default_flows(element: &ElementSpec) -> impl Iterator<Item = &str> {
    element
        .outgoing
        .iter()
        .filter(move |f| Some(*f) != element.default_flow.as_ref())
        .map(String::as_str)
}

fn every_flow_arrived(incoming: &[String], arrived: &BTreeMap<String, u32>) -> bool {
    incoming
        .iter()
        .all(|f| arrived.get(f).is_some_and(|n| *n > 0))
}

fn consume_one_of_each(incoming: &[String], arrived: &mut BTreeMap<String, u32>) {
    for flow in incoming {
        if let Some(n) = arrived.get_mut(flow) {
            *n -= 1;
        }
    }
    arrived.retain(|_, n| *n > 0);
}
