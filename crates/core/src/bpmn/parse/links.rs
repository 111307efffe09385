//! After the walk of a process: check and join what refers to other elements (sequence
//! flows, default flows, boundary events, start events).
//!
//! Each phase goes in document order, so the first offending element in the file is the
//! one reported.
use super::element::is_activity;
use super::process::ProcessContents;
use super::*;

impl Parser<'_> {
    /// Checks every flow's ends and records it on them (`outgoing`/`incoming` in the
    /// document order of the flows). Returns the flows by id.
    pub(super) fn link_flows(
        &self,
        contents: &mut ProcessContents,
    ) -> Result<BTreeMap<String, FlowSpec>, ModelError> {
        let mut flows = BTreeMap::new();
        for (flow, container) in &contents.flows {
            self.check_flow_ends(flow, container, &contents.elements)?;
            // Flows and elements share one id space.
            if flows.insert(flow.id.clone(), flow.clone()).is_some()
                || contents.elements.contains_key(&flow.id)
            {
                return Err(self.err(Some(&flow.id), "duplicate element id"));
            }
            // Both ends exist: checked above.
            if let Some(source) = contents.elements.get_mut(&flow.source) {
                source.outgoing.push(flow.id.clone());
            }
            if let Some(target) = contents.elements.get_mut(&flow.target) {
                target.incoming.push(flow.id.clone());
            }
        }
        Ok(flows)
    }

    /// A flow stays inside its container: a token never jumps into or out of a subprocess.
    fn check_flow_ends(
        &self,
        flow: &FlowSpec,
        container: &Option<String>,
        elements: &BTreeMap<String, ElementSpec>,
    ) -> Result<(), ModelError> {
        for (what, end) in [("source", &flow.source), ("target", &flow.target)] {
            let Some(element) = elements.get(end) else {
                return Err(self.err(
                    Some(&flow.id),
                    format!("sequence flow {what} '{end}' does not exist"),
                ));
            };
            if &element.parent != container {
                return Err(self.err(
                    Some(&flow.id),
                    format!(
                        "sequence flow {what} '{end}' is not in the same (sub)process as the flow"
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Both checks in one pass per element, so that errors come in document order.
    pub(super) fn check_defaults_and_attach_boundaries(
        &self,
        contents: &mut ProcessContents,
    ) -> Result<(), ModelError> {
        for id in &contents.order {
            let element = &contents.elements[id];
            self.check_default_flow(element)?;
            if matches!(element.kind, ElementKind::EventGateway) {
                self.check_event_gateway(element, contents)?;
            }
            if let ElementKind::Boundary(boundary) = &element.kind {
                self.check_boundary(element, boundary, &contents.elements)?;
                let host = boundary.attached_to.clone();
                if let Some(host) = contents.elements.get_mut(&host) {
                    host.boundaries.push(id.clone());
                }
            }
        }
        Ok(())
    }

    /// What follows an event-based gateway races: only events that wait can.
    fn check_event_gateway(
        &self,
        gateway: &ElementSpec,
        contents: &ProcessContents,
    ) -> Result<(), ModelError> {
        if gateway.outgoing.is_empty() {
            return Err(self.err(
                Some(&gateway.id),
                "an event-based gateway needs outgoing sequence flows to catch events",
            ));
        }
        for (flow, _) in contents
            .flows
            .iter()
            .filter(|(f, _)| f.source == gateway.id)
        {
            let target = &contents.elements[&flow.target];
            let waits = matches!(
                target.kind,
                ElementKind::MessageCatch(_)
                    | ElementKind::TimerCatch(_)
                    | ElementKind::SignalCatch(_)
            );
            if !waits {
                return Err(self.err(
                    Some(&gateway.id),
                    format!(
                        "an event-based gateway leads only to message, timer or signal catch events or receive tasks; '{}' is a {}",
                        target.id, target.element_type
                    ),
                ));
            }
            if flow.condition.is_some() {
                return Err(self.err(
                    Some(&flow.id),
                    "a sequence flow out of an event-based gateway has no condition",
                ));
            }
        }
        Ok(())
    }

    /// Each link throw event goes on at the link catch event of its name in its own
    /// (sub)process; a name is caught in one place only.
    pub(super) fn resolve_links(&self, contents: &mut ProcessContents) -> Result<(), ModelError> {
        let mut catches: BTreeMap<(Option<String>, String), String> = BTreeMap::new();
        for id in &contents.order {
            let element = &contents.elements[id];
            if let ElementKind::LinkCatch { name } = &element.kind {
                let key = (element.parent.clone(), name.clone());
                if catches.insert(key, id.clone()).is_some() {
                    return Err(self.err(
                        Some(id),
                        format!("another link catch event in this (sub)process is named '{name}'"),
                    ));
                }
            }
        }
        for id in &contents.order {
            let element = contents.elements.get_mut(id).expect("ordered ids exist");
            if let ElementKind::LinkThrow { name, target } = &mut element.kind {
                let key = (element.parent.clone(), name.clone());
                let Some(catch) = catches.get(&key) else {
                    return Err(self.err(
                        Some(id),
                        format!("no link catch event named '{name}' in this (sub)process"),
                    ));
                };
                *target = catch.clone();
            }
        }
        Ok(())
    }

    fn check_default_flow(&self, element: &ElementSpec) -> Result<(), ModelError> {
        match &element.default_flow {
            Some(default) if !element.outgoing.contains(default) => Err(self.err(
                Some(&element.id),
                format!(
                    "default flow '{default}' is not an outgoing sequence flow of this element"
                ),
            )),
            _ => Ok(()),
        }
    }

    /// A boundary event is entered only through the activity it is attached to.
    fn check_boundary(
        &self,
        boundary_event: &ElementSpec,
        boundary: &BoundarySpec,
        elements: &BTreeMap<String, ElementSpec>,
    ) -> Result<(), ModelError> {
        let id = Some(boundary_event.id.as_str());
        let attached_to = &boundary.attached_to;
        if !boundary_event.incoming.is_empty() {
            return Err(self.err(id, "a boundary event cannot have incoming sequence flows"));
        }
        let Some(host) = elements.get(attached_to) else {
            return Err(self.err(id, format!("attachedToRef '{attached_to}' does not exist")));
        };
        if host.parent != boundary_event.parent {
            return Err(self.err(
                id,
                format!("attachedToRef '{attached_to}' is not in the same (sub)process"),
            ));
        }
        let on_a_transaction = matches!(
            host.kind,
            ElementKind::SubProcess {
                form: SubProcessForm::Transaction,
                ..
            }
        );
        if matches!(boundary.trigger, BoundaryTrigger::Cancel) && !on_a_transaction {
            return Err(self.err(
                id,
                format!(
                    "a cancel boundary event attaches to a transaction; '{attached_to}' is a {}",
                    host.element_type
                ),
            ));
        }
        if !is_activity(&host.element_type) {
            return Err(self.err(
                id,
                format!(
                    "attachedToRef '{attached_to}' is a {}; boundary events attach to tasks and subprocesses",
                    host.element_type
                ),
            ));
        }
        Ok(())
    }

    /// Gives each subprocess its start events and returns the process's own. A process
    /// with flow nodes needs a start event; so does each subprocess.
    pub(super) fn assign_start_events(
        &self,
        process_id: &str,
        contents: &mut ProcessContents,
    ) -> Result<Vec<String>, ModelError> {
        let has_top_level_node = contents.elements.values().any(|e| e.parent.is_none());
        let mut process_starts = vec![];
        for (container, starts) in std::mem::take(&mut contents.starts) {
            match container {
                None => process_starts = starts,
                Some(subprocess) => {
                    self.set_subprocess_starts(&subprocess, starts, &mut contents.elements)?
                }
            }
        }
        self.check_subprocesses_have_starts(&contents.elements)?;
        if has_top_level_node && process_starts.is_empty() {
            return Err(self.err(Some(process_id), "the process has no start event"));
        }
        Ok(process_starts)
    }
}
