//! Call activities whose called process is in the model become embedded subprocesses holding
//! a copy of the callee's elements, their ids prefixed with the call activity's id
//! (`call_1/task_a`): the child then runs inside the instance like any subprocess (one lock,
//! its waits, timers and service tasks the instance's own), errors and escalations reach the
//! call activity's boundary events, and the task list shows which call each task belongs to.
//! The child runs on a copy of the caller's task data, merged back when it ends
//! (SpiffWorkflow's copy-in, merge-back rule without an ioSpecification; with one, only its
//! inputs go in and its outputs come back). A callee that is not in the model is left as a
//! call activity, linked when reached (or failing then). So is a recursive call (a process
//! calling itself, directly or through others): it is copied in when an instance reaches it,
//! at most `MAX_CALL_DEPTH` calls deep (the services check the depth, `call_depth`).

use super::processes::Processes;
use crate::bpmn::limits::{MAX_ELEMENTS_PER_FILE, MAX_NESTING_DEPTH};
use crate::bpmn::*;
use std::collections::{BTreeSet, HashMap};

/// Copies the callee into every call activity whose callee is in `processes`, except a
/// recursive call (one of a process it is already inside: itself, or a process that called
/// it): that is copied in only when `unrolled` names it (the instance reached it, see
/// `Callee::Recursion`), so a process calling itself is unrolled lazily, one level per call
/// an instance makes, up to `MAX_CALL_DEPTH`.
pub(super) fn inline_call_activities(
    processes: &mut Processes,
    unrolled: &BTreeSet<String>,
) -> Result<(), ModelError> {
    let originals = processes.by_id.clone();
    for process in processes.by_id.values_mut() {
        // call activity copied in -> the process it calls
        let mut callee_of: HashMap<String, String> = HashMap::new();
        loop {
            let calls: Vec<(String, String)> = process
                .elements
                .values()
                .filter_map(|element| match &element.kind {
                    ElementKind::CallActivity { called_element }
                        if originals.contains_key(called_element) =>
                    {
                        Some((element.id.clone(), called_element.clone()))
                    }
                    _ => None,
                })
                .filter(|(call, callee)| {
                    !is_recursive(&process.id, &callee_of, call, callee) || unrolled.contains(call)
                })
                .collect();
            if calls.is_empty() {
                break;
            }
            for (call, callee) in calls {
                inline(process, &call, &originals[&callee])?;
                callee_of.insert(call, callee);
            }
        }
        check_subprocess_nesting(process)?;
    }
    Ok(())
}

/// The call activity `call` (an id prefixed with the calls it was copied in for, `a/b/call`)
/// calls a process it is already inside: the top-level process, or the callee of one of the
/// calls around it.
fn is_recursive(
    process_id: &str,
    callee_of: &HashMap<String, String>,
    call: &str,
    callee: &str,
) -> bool {
    callee == process_id
        || call
            .match_indices('/')
            .any(|(end, _)| callee_of.get(&call[..end]).is_some_and(|c| c == callee))
}

/// How many call activities deep `call` is (`a/b/call`: 3): a recursive call deeper than
/// `MAX_CALL_DEPTH` is not run.
pub fn call_depth(call: &str) -> usize {
    call.matches('/').count() + 1
}

/// Subprocesses, embedded or copied in for call activities, nest at most `MAX_NESTING_DEPTH`
/// deep: the engine's walks through nested scopes recurse. One file cannot nest them deeper
/// (its elements nest at most as deep); calls of processes nested in their callers can.
fn check_subprocess_nesting(process: &ProcessSpec) -> Result<(), ModelError> {
    // enclosing subprocesses of each element, each element's computed once
    let mut depths: HashMap<&str, usize> = HashMap::with_capacity(process.elements.len());
    for element in process.elements.values() {
        let mut unknown = vec![];
        let mut cursor = Some(element);
        let mut depth = 0;
        while let Some(current) = cursor {
            if let Some(known) = depths.get(current.id.as_str()) {
                depth = *known;
                break;
            }
            unknown.push(current);
            cursor = current
                .parent
                .as_deref()
                .and_then(|parent| process.elements.get(parent));
        }
        for current in unknown.into_iter().rev() {
            // `depth` is the parent's: the top level's parent is the process, at -1
            depth = if current.parent.is_some() {
                depth + 1
            } else {
                0
            };
            if depth > MAX_NESTING_DEPTH {
                let own_id = current.id.rsplit('/').next().unwrap_or(&current.id);
                return Err(ModelError::new(
                    &process.file,
                    Some(own_id),
                    format!(
                        "subprocesses nest more than {MAX_NESTING_DEPTH} deep here (the limit; embedded subprocesses and the processes call activities call count together)"
                    ),
                ));
            }
            depths.insert(&current.id, depth);
        }
    }
    Ok(())
}

/// The callee's elements and flows go into `process` under the call activity `call`.
fn inline(process: &mut ProcessSpec, call: &str, callee: &ProcessSpec) -> Result<(), ModelError> {
    let prefixed = |id: &str| format!("{call}/{id}");
    let starts: Vec<String> = callee
        .start_events
        .iter()
        .filter(|id| {
            matches!(
                callee.elements[*id].kind,
                ElementKind::StartEvent { message: None }
            )
        })
        .map(|id| prefixed(id))
        .collect();
    if starts.is_empty() {
        return Err(ModelError::new(
            &process.file,
            Some(call),
            format!("the called process '{}' has no none start event", callee.id),
        ));
    }
    refuse_multi_instance_io(process, call, callee)?;
    if process.elements.len() + callee.elements.len() > MAX_ELEMENTS_PER_FILE {
        return Err(ModelError::new(
            &process.file,
            Some(call.rsplit('/').next().unwrap_or(call)),
            format!(
                "with the process '{}' copied in for this call activity, process '{}' would have more than {MAX_ELEMENTS_PER_FILE} elements (the limit)",
                callee.id, process.id
            ),
        ));
    }
    for element in callee.elements.values() {
        let copy = element_copy(call, element);
        process.elements.insert(copy.id.clone(), copy);
    }
    for flow in callee.flows.values() {
        let mut copy = flow.clone();
        copy.id = prefixed(&flow.id);
        copy.source = prefixed(&flow.source);
        copy.target = prefixed(&flow.target);
        process.flows.insert(copy.id.clone(), copy);
    }
    if let Some(element) = process.elements.get_mut(call) {
        element.kind = ElementKind::SubProcess {
            form: SubProcessForm::Call,
            start_events: starts,
            io: callee.io.clone(),
        };
    }
    Ok(())
}

/// A multi-instance call activity may not call a process with an ioSpecification: each
/// instance already works on a copy of the data, which its inputs would replace.
fn refuse_multi_instance_io(
    process: &ProcessSpec,
    call: &str,
    callee: &ProcessSpec,
) -> Result<(), ModelError> {
    let multi = process
        .elements
        .get(call)
        .is_some_and(|element| element.multi_instance.is_some());
    if multi && callee.io.is_some() {
        return Err(ModelError::new(
            &process.file,
            Some(call),
            format!(
                "a multi-instance call activity calling a process with an ioSpecification ('{}') is not supported",
                callee.id
            ),
        ));
    }
    Ok(())
}

/// A callee's element as it goes under the call activity `call`: its id and every id it
/// refers to prefixed with `call/`, and its top-level elements children of the call.
fn element_copy(call: &str, element: &ElementSpec) -> ElementSpec {
    let prefixed = |id: &str| format!("{call}/{id}");
    let mut copy = element.clone();
    copy.id = prefixed(&element.id);
    copy.parent = Some(match &element.parent {
        Some(parent) => prefixed(parent),
        None => call.to_string(),
    });
    for list in [&mut copy.incoming, &mut copy.outgoing, &mut copy.boundaries] {
        for id in list.iter_mut() {
            *id = prefixed(id);
        }
    }
    copy.default_flow = element.default_flow.as_deref().map(prefixed);
    match &mut copy.kind {
        ElementKind::Boundary(boundary) => boundary.attached_to = prefixed(&boundary.attached_to),
        ElementKind::SubProcess { start_events, .. } => {
            for id in start_events.iter_mut() {
                *id = prefixed(id);
            }
        }
        ElementKind::EventSubProcess { start_event } => *start_event = prefixed(start_event),
        ElementKind::LinkThrow { target, .. } => *target = prefixed(target),
        _ => {}
    }
    copy
}

impl ModelSpec {
    /// This model linked with what it uses of other models: for a called process, the
    /// callee model's processes (and decisions, for its business rule tasks) are added (an id
    /// this model defines stays its own), and every call activity that can now be resolved
    /// gets a copy of its callee, as at load; for a decision, that decision. `unavailable`
    /// names (by `Callee::key`) what cannot be used, with the reason.
    pub fn with_callees(
        &self,
        callees: &[(Callee, &ModelSpec)],
        unavailable: BTreeMap<String, String>,
    ) -> Result<ModelSpec, ModelError> {
        self.with_callees_unrolled(callees, unavailable, &BTreeSet::new())
    }

    /// `with_callees`, with the recursive call activities `unrolled` names (by element id)
    /// copied in too.
    pub fn with_callees_unrolled(
        &self,
        callees: &[(Callee, &ModelSpec)],
        unavailable: BTreeMap<String, String>,
        unrolled: &BTreeSet<String>,
    ) -> Result<ModelSpec, ModelError> {
        let mut linked = self.clone();
        let mut processes = Processes {
            by_id: std::mem::take(&mut linked.processes),
            order: vec![],
        };
        for (what, callee) in callees {
            if let Callee::Recursion(_) = what {
                continue;
            }
            if let Callee::Decision(id) = what {
                if let Some(decision) = callee.decisions.get(id) {
                    linked
                        .decisions
                        .entry(id.clone())
                        .or_insert_with(|| decision.clone());
                }
                continue;
            }
            for (id, decision) in &callee.decisions {
                linked
                    .decisions
                    .entry(id.clone())
                    .or_insert_with(|| decision.clone());
            }
            for (id, process) in &callee.processes {
                processes
                    .by_id
                    .entry(id.clone())
                    .or_insert_with(|| process.clone());
            }
            for property in &callee.correlation_properties {
                if !linked
                    .correlation_properties
                    .iter()
                    .any(|own| own.id == property.id)
                {
                    linked.correlation_properties.push(property.clone());
                }
            }
            for (id, kind) in &callee.data_stores {
                linked.data_stores.entry(id.clone()).or_insert(*kind);
            }
            linked.needs_python |= callee.needs_python;
            linked.uses_secrets |= callee.uses_secrets;
            linked.uses_initiator |= callee.uses_initiator;
            linked.uses_task_lookup |= callee.uses_task_lookup;
        }
        inline_call_activities(&mut processes, unrolled)?;
        linked.processes = processes.by_id;
        linked.unavailable_callees = unavailable;
        linked.calls_elsewhere = linked.has_unresolved_calls();
        Ok(linked)
    }

    /// Some call activity's process, or some business rule task's decision, is still not in
    /// the model.
    pub(crate) fn has_unresolved_calls(&self) -> bool {
        self.processes.values().any(|process| {
            process
                .elements
                .values()
                .any(|element| match &element.kind {
                    ElementKind::CallActivity { .. } => true,
                    ElementKind::BusinessRuleTask { decision_id } => {
                        !self.decisions.contains_key(decision_id)
                    }
                    _ => false,
                })
        })
    }
}
