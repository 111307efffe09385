//! Gateways and conditional flows: which outgoing flows a completed element takes (all for a
//! parallel gateway, the first true condition for an exclusive one, every true condition
//! otherwise, the default flow when none holds) and when a parallel join lets a token through.

use super::interpreter::{Interpreter, ModelFailure, Token};
use crate::bpmn::{ElementKind, ElementSpec};
use std::collections::{BTreeMap, HashSet};
use uuid::Uuid;

/// Key of a parallel join's arrivals in `EngineInternal::joins`.
pub(super) fn join_key(scope: Option<Uuid>, gateway: &str) -> String {
    match scope {
        Some(s) => format!("{s}/{gateway}"),
        None => format!("-/{gateway}"),
    }
}

impl<'m> Interpreter<'m> {
    /// The first flow whose condition holds, else the default flow.
    pub(super) fn exclusive_choice(
        &self,
        gateway: &'m ElementSpec,
    ) -> Result<&'m str, ModelFailure> {
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
    pub(super) fn conditional_flows(
        &self,
        element: &'m ElementSpec,
    ) -> Result<Vec<&'m str>, ModelFailure> {
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

    /// Whether a token may enter `element`: always, except at a join (a parallel or
    /// inclusive gateway with several incoming flows), which records the arrival. A parallel
    /// join lets one token through at once when every incoming flow has brought one; else the
    /// arrival is held until the tokens in flight have run (`release_waiting_joins`).
    pub fn join_passes(&mut self, element: &ElementSpec, token: &Token) -> bool {
        let inclusive = matches!(element.kind, ElementKind::InclusiveGateway);
        let parallel = matches!(element.kind, ElementKind::ParallelGateway);
        if !((parallel || inclusive) && element.incoming.len() > 1) {
            return true;
        }
        let key = join_key(token.scope, &element.id);
        let arrived = self.state.internal.joins.entry(key.clone()).or_default();
        if let Some(flow) = &token.flow {
            *arrived.entry(flow.clone()).or_insert(0) += 1;
        }
        if inclusive || !every_flow_arrived(&element.incoming, arrived) {
            return false;
        }
        self.consume_parallel_arrivals(&key, &element.incoming);
        true
    }

    /// A parallel join fires: one token of each incoming flow that brought one is used up.
    fn consume_parallel_arrivals(&mut self, key: &str, incoming: &[String]) {
        let internal = &mut self.state.internal;
        let Some(arrived) = internal.joins.get_mut(key) else {
            return;
        };
        internal
            .joined_flows
            .entry(key.to_string())
            .or_default()
            .extend(arrived.keys().cloned());
        consume_one_of_each(incoming, arrived);
        if arrived.is_empty() {
            internal.joins.remove(key);
        }
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

    /// Joins holding arrivals fire once the tokens in flight have run, if they may (see
    /// `inclusive_join_may_fire`, `parallel_join_may_fire`). Whether one fired.
    pub fn release_waiting_joins(&mut self) -> bool {
        let waiting: Vec<(String, String)> = self
            .state
            .internal
            .joins
            .keys()
            .filter_map(|key| {
                let (scope, gateway) = key.split_once('/')?;
                Some((scope.to_string(), gateway.to_string()))
            })
            .collect();
        for (scope, gateway) in waiting {
            let scope = Uuid::parse_str(&scope).ok();
            let key = join_key(scope, &gateway);
            let element = self.element(&gateway);
            match element.kind {
                ElementKind::InclusiveGateway if self.inclusive_join_may_fire(scope, &gateway) => {
                    self.state.internal.joins.remove(&key);
                }
                ElementKind::ParallelGateway if self.parallel_join_may_fire(scope, &gateway) => {
                    self.consume_parallel_arrivals(&key, &element.incoming);
                }
                _ => continue,
            }
            self.tokens.push_back(Token {
                element: gateway,
                scope,
                flow: None,
                race: None,
                joined: true,
                repeat: false,
                branch: None,
            });
            return true;
        }
        false
    }

    /// The sources of the join's incoming flows that have brought no token yet.
    fn missing_sources(&self, scope: Option<Uuid>, gateway: &str) -> Vec<(&'m str, &'m str)> {
        let process = self.process;
        let arrived = &self.state.internal.joins[&join_key(scope, gateway)];
        process.elements[gateway]
            .incoming
            .iter()
            .filter(|flow| !arrived.contains_key(*flow))
            .map(|flow| (flow.as_str(), process.flows[flow].source.as_str()))
            .collect()
    }

    /// What can still bring a token to `gateway` in `scope`: the elements its live tasks and
    /// the other joins holding arrivals there reach, not through `gateway`.
    fn reachable_in_scope(&self, scope: Option<Uuid>, gateway: &str) -> HashSet<&str> {
        let process = self.process;
        let mut starts: Vec<&str> = self
            .state
            .live_tasks()
            .filter(|task| task.scope == scope)
            .filter_map(|task| process.elements.get_key_value(&task.element_id))
            .map(|(id, _)| id.as_str())
            .collect();
        starts.extend(self.state.internal.joins.keys().filter_map(|key| {
            let (_, other) = key.split_once('/')?;
            let (id, _) = process.elements.get_key_value(other)?;
            (other != gateway && *key == join_key(scope, other)).then_some(id.as_str())
        }));
        self.reachable_from(&starts, gateway)
    }

    /// Inclusive joins with arrivals fire once no token can still come by an incoming flow
    /// that has none: no live task of their (sub)process can reach that flow (SpiffWorkflow's
    /// reachability rule).
    fn inclusive_join_may_fire(&self, scope: Option<Uuid>, gateway: &str) -> bool {
        let missing = self.missing_sources(scope, gateway);
        if missing.is_empty() {
            return true;
        }
        let reachable = self.reachable_in_scope(scope, gateway);
        !missing.iter().any(|(_, source)| reachable.contains(source))
    }

    /// A parallel join with some incoming flows still missing fires as SpiffWorkflow's does:
    /// it does not wait for a flow that nothing can still bring a token by, when that flow
    /// either loops back from the join itself (it comes only after the join has fired) or has
    /// brought a token before (a later round of a loop through the join). A flow that simply
    /// will never come (its branch took another way) is waited for, for ever, as there.
    fn parallel_join_may_fire(&self, scope: Option<Uuid>, gateway: &str) -> bool {
        let missing = self.missing_sources(scope, gateway);
        let reachable = self.reachable_in_scope(scope, gateway);
        let join = self.element(gateway);
        let starts: Vec<&str> = join
            .outgoing
            .iter()
            .map(|flow| self.process.flows[flow].target.as_str())
            .collect();
        let after_join = self.reachable_from(&starts, gateway);
        let joined_before = self
            .state
            .internal
            .joined_flows
            .get(&join_key(scope, gateway));
        missing.iter().all(|(flow, source)| {
            !reachable.contains(source)
                && (after_join.contains(source)
                    || joined_before.is_some_and(|flows| flows.contains(*flow)))
        })
    }

    /// Elements reachable from `starts` by sequence flows and boundary events, not through
    /// `stop`.
    fn reachable_from<'a>(&'a self, starts: &[&'a str], stop: &str) -> HashSet<&'a str> {
        let mut seen: HashSet<&str> = starts.iter().copied().collect();
        let mut frontier: Vec<&str> = starts.to_vec();
        while let Some(id) = frontier.pop() {
            if id == stop {
                continue;
            }
            let element = self.element(id);
            let next = element
                .outgoing
                .iter()
                .map(|flow| self.process.flows[flow].target.as_str())
                .chain(element.boundaries.iter().map(String::as_str));
            for target in next {
                if seen.insert(target) {
                    frontier.push(target);
                }
            }
        }
        seen
    }

    /// Forget the joins waiting inside a subprocess (it completed or was cancelled).
    pub fn clear_joins(&mut self, scope: Uuid) {
        let prefix = format!("{scope}/");
        self.forget_joins(&prefix);
        self.state
            .internal
            .loops
            .retain(|key, _| !key.starts_with(&prefix));
    }
}

impl Interpreter<'_> {
    /// Forget the arrivals held at joins whose key starts with `prefix`, and the flows that
    /// joined them before.
    pub fn forget_joins(&mut self, prefix: &str) {
        let internal = &mut self.state.internal;
        internal.joins.retain(|key, _| !key.starts_with(prefix));
        internal
            .joined_flows
            .retain(|key, _| !key.starts_with(prefix));
    }

    /// Whether a join in `scope` holds a token (an instance or subprocess with one is not
    /// finished).
    pub fn holds_join_arrivals(&self, scope: Option<Uuid>) -> bool {
        let prefix = join_key(scope, "");
        self.state
            .internal
            .joins
            .keys()
            .any(|key| key.starts_with(&prefix))
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
