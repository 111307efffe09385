//! Several files -> one `ModelSpec`: merge, resolve cross-file references, validate.
use super::*;
use crate::expr::Context;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;

/// A process model = several files; merges them, resolves and validates cross references.
///
/// Files are taken in file-name order. Messages, errors and signals are shared by all files
/// of the model (the same id defined twice must agree); a process id must be unique in the
/// model; correlation properties with the same id are merged. Processes with no flow node at
/// all (empty pools) are skipped.
pub fn build_model(
    files: &[(String, String)],
    primary_process_id: Option<&str>,
) -> Result<ModelSpec, ModelError> {
    if files.is_empty() {
        return Err(ModelError::new(
            "",
            None,
            "a process model needs at least one .bpmn file",
        ));
    }
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    let mut defs = Vec::with_capacity(sorted.len());
    for (name, xml) in sorted {
        defs.push(parse_file(name, xml)?);
    }

    let mut messages: BTreeMap<String, MessageSpec> = BTreeMap::new();
    let mut errors: BTreeMap<String, ErrorSpec> = BTreeMap::new();
    let mut signals: BTreeMap<String, SignalSpec> = BTreeMap::new();
    for d in &defs {
        for m in &d.messages {
            if let Some(prev) = messages.get(&m.id) {
                if prev.name != m.name {
                    return Err(ModelError::new(
                        &d.file,
                        Some(&m.id),
                        format!(
                            "message '{}' is named '{}' here and '{}' in another file of the model",
                            m.id, m.name, prev.name
                        ),
                    ));
                }
            } else {
                messages.insert(m.id.clone(), m.clone());
            }
        }
        for e in &d.errors {
            if let Some(prev) = errors.get(&e.id) {
                if prev.error_code != e.error_code {
                    return Err(ModelError::new(
                        &d.file,
                        Some(&e.id),
                        "this error is defined with another errorCode in another file of the model",
                    ));
                }
            } else {
                errors.insert(e.id.clone(), e.clone());
            }
        }
        for s in &d.signals {
            signals.entry(s.id.clone()).or_insert_with(|| s.clone());
        }
    }

    // Correlation properties: merged by id, retrieval by message name.
    let mut correlation_properties: Vec<CorrelationProperty> = vec![];
    for d in &defs {
        for raw in &d.correlation_properties {
            let idx = match correlation_properties.iter().position(|p| p.id == raw.id) {
                Some(i) => i,
                None => {
                    correlation_properties.push(CorrelationProperty {
                        id: raw.id.clone(),
                        name: raw.name.clone().unwrap_or_else(|| raw.id.clone()),
                        retrieval: BTreeMap::new(),
                    });
                    correlation_properties.len() - 1
                }
            };
            for (message_ref, expr) in &raw.retrieval {
                let Some(m) = messages.get(message_ref) else {
                    return Err(ModelError::new(
                        &d.file,
                        Some(&raw.id),
                        format!("retrieval expression: messageRef '{message_ref}' is not a bpmn:message of this model"),
                    ));
                };
                correlation_properties[idx]
                    .retrieval
                    .entry(m.name.clone())
                    .or_insert_with(|| expr.clone());
            }
        }
    }
    let mut correlation_keys: Vec<CorrelationKeySpec> = vec![];
    for d in &defs {
        for k in &d.correlation_keys {
            if !correlation_keys.contains(k) {
                correlation_keys.push(k.clone());
            }
        }
    }

    // Processes: resolve references.
    let mut processes: BTreeMap<String, ProcessSpec> = BTreeMap::new();
    let mut process_order: Vec<String> = vec![];
    for d in &defs {
        for p in &d.processes {
            if p.elements.is_empty() {
                continue;
            }
            if let Some(prev) = processes.get(&p.id) {
                return Err(ModelError::new(
                    &d.file,
                    Some(&p.id),
                    format!("process id '{}' is also defined in {}", p.id, prev.file),
                ));
            }
            let mut p = p.clone();
            resolve_process(&mut p, &messages, &errors, &signals)?;
            process_order.push(p.id.clone());
            processes.insert(p.id.clone(), p);
        }
    }
    if processes.is_empty() {
        return Err(ModelError::new(
            &defs[0].file,
            None,
            "the model has no process with flow nodes",
        ));
    }

    // Message start events.
    let mut message_starts: Vec<MessageStart> = vec![];
    for pid in &process_order {
        let p = &processes[pid];
        for s in &p.start_events {
            if let ElementKind::StartEvent { message: Some(m) } = &p.elements[s].kind {
                if let Some(prev) = message_starts
                    .iter()
                    .find(|x| x.message_name == m.message_name)
                {
                    return Err(ModelError::new(
                        &p.file,
                        Some(s),
                        format!(
                            "message '{}' already starts process '{}' (start event '{}'); one start event per message name",
                            m.message_name, prev.process_id, prev.start_event_id
                        ),
                    ));
                }
                message_starts.push(MessageStart {
                    message_name: m.message_name.clone(),
                    process_id: pid.clone(),
                    start_event_id: s.clone(),
                });
            }
        }
    }

    let primary_process_id = match primary_process_id {
        Some(id) => {
            if !processes.contains_key(id) {
                return Err(ModelError::new(
                    &defs[0].file,
                    None,
                    format!("primary process '{id}' is not defined in the model's files"),
                ));
            }
            id.to_string()
        }
        None => process_order
            .iter()
            .find(|pid| {
                let p = &processes[pid.as_str()];
                p.start_events.iter().any(|s| {
                    matches!(
                        p.elements[s].kind,
                        ElementKind::StartEvent { message: None }
                    )
                })
            })
            .unwrap_or(&process_order[0])
            .clone(),
    };

    Ok(ModelSpec {
        processes,
        primary_process_id,
        messages,
        errors,
        signals,
        correlation_properties,
        correlation_keys,
        message_starts,
        files: defs.iter().map(|d| d.file.clone()).collect(),
    })
}

fn resolve_process(
    p: &mut ProcessSpec,
    messages: &BTreeMap<String, MessageSpec>,
    errors: &BTreeMap<String, ErrorSpec>,
    signals: &BTreeMap<String, SignalSpec>,
) -> Result<(), ModelError> {
    let file = p.file.clone();
    let msg = |id: &str, r: &str| -> Result<String, ModelError> {
        messages.get(r).map(|m| m.name.clone()).ok_or_else(|| {
            ModelError::new(
                &file,
                Some(id),
                format!("messageRef '{r}' is not a bpmn:message of this model"),
            )
        })
    };
    let err = |id: &str, e: &mut ErrorRef| -> Result<(), ModelError> {
        if let Some(r) = &e.error_ref {
            let Some(spec) = errors.get(r) else {
                return Err(ModelError::new(
                    &file,
                    Some(id),
                    format!("errorRef '{r}' is not a bpmn:error of this model"),
                ));
            };
            e.error_code = spec.error_code.clone();
            e.error_name = spec.name.clone();
            if spec.variable.is_some() {
                e.variable = spec.variable.clone();
            }
        }
        Ok(())
    };
    for el in p.elements.values_mut() {
        let id = el.id.clone();
        match &mut el.kind {
            ElementKind::StartEvent { message: Some(m) } | ElementKind::MessageCatch(m) => {
                m.message_name = msg(&id, &m.message_ref)?;
            }
            ElementKind::MessageThrow(m) | ElementKind::EndEvent(EndKind::Message(m)) => {
                m.message_name = msg(&id, &m.message_ref)?;
            }
            ElementKind::EndEvent(EndKind::Error(e)) => err(&id, e)?,
            ElementKind::Boundary(b) => match &mut b.trigger {
                BoundaryTrigger::Error(e) => err(&id, e)?,
                BoundaryTrigger::Message(m) => m.message_name = msg(&id, &m.message_ref)?,
                BoundaryTrigger::Signal {
                    signal_ref,
                    signal_name,
                } => {
                    let Some(s) = signals.get(signal_ref.as_str()) else {
                        return Err(ModelError::new(
                            &file,
                            Some(&id),
                            format!("signalRef '{signal_ref}' is not a bpmn:signal of this model"),
                        ));
                    };
                    *signal_name = s.name.clone();
                }
            },
            _ => {}
        }
    }
    Ok(())
}

impl ModelSpec {
    pub fn process(&self, id: &str) -> Option<&ProcessSpec> {
        self.processes.get(id)
    }

    /// Property id -> value for every correlation property with a retrieval expression for
    /// this message name that evaluates successfully on the payload (payload top-level keys are
    /// variables). A value that evaluates to null is left out (not established).
    pub fn correlation_values(
        &self,
        message_name: &str,
        payload: &Value,
        cx: &Context,
    ) -> BTreeMap<String, Value> {
        let empty = Map::new();
        let vars = payload.as_object().unwrap_or(&empty);
        let mut out = BTreeMap::new();
        for p in &self.correlation_properties {
            if let Some(e) = p.retrieval.get(message_name) {
                if let Ok(v) = e.eval(vars, cx) {
                    if !v.is_null() {
                        out.insert(p.id.clone(), v);
                    }
                }
            }
        }
        out
    }

    /// Correlation property ids that have a retrieval expression for this message name.
    pub fn correlation_properties_for(&self, message_name: &str) -> Vec<&str> {
        self.correlation_properties
            .iter()
            .filter(|p| p.retrieval.contains_key(message_name))
            .map(|p| p.id.as_str())
            .collect()
    }

    /// The message start event for this message name, if the model starts with it.
    pub fn message_start(&self, message_name: &str) -> Option<&MessageStart> {
        self.message_starts
            .iter()
            .find(|m| m.message_name == message_name)
    }

    /// JSON overview for the API:
    /// `{primary_process_id, files, processes: [{id, name, file, is_primary, start_events:
    /// [{id, name, kind: "none"|"message", message_name}]}], start_messages: [..],
    /// waits_for_messages: [..], sends_messages: [..], service_operators: [..],
    /// correlation_properties: [{id, name, messages: [..]}]}` (name lists sorted, unique).
    pub fn summary(&self) -> Value {
        let mut waits = BTreeSet::new();
        let mut sends = BTreeSet::new();
        let mut operators = BTreeSet::new();
        let mut processes = vec![];
        for p in self.processes.values() {
            for el in p.elements.values() {
                match &el.kind {
                    ElementKind::MessageCatch(m) => {
                        waits.insert(m.message_name.clone());
                    }
                    ElementKind::Boundary(BoundarySpec {
                        trigger: BoundaryTrigger::Message(m),
                        ..
                    }) => {
                        waits.insert(m.message_name.clone());
                    }
                    ElementKind::MessageThrow(m) | ElementKind::EndEvent(EndKind::Message(m)) => {
                        sends.insert(m.message_name.clone());
                    }
                    ElementKind::ServiceTask(s) => {
                        operators.insert(s.operator_id.clone());
                    }
                    _ => {}
                }
            }
            let starts: Vec<Value> = p
                .start_events
                .iter()
                .map(|s| {
                    let el = &p.elements[s];
                    let m = match &el.kind {
                        ElementKind::StartEvent { message: Some(m) } => {
                            Some(m.message_name.clone())
                        }
                        _ => None,
                    };
                    json!({
                        "id": el.id,
                        "name": el.name,
                        "kind": if m.is_some() { "message" } else { "none" },
                        "message_name": m,
                    })
                })
                .collect();
            processes.push(json!({
                "id": p.id,
                "name": p.name,
                "file": p.file,
                "is_primary": p.id == self.primary_process_id,
                "start_events": starts,
            }));
        }
        let start_messages: BTreeSet<&str> = self
            .message_starts
            .iter()
            .map(|m| m.message_name.as_str())
            .collect();
        let props: Vec<Value> = self
            .correlation_properties
            .iter()
            .map(|p| json!({"id": p.id, "name": p.name, "messages": p.retrieval.keys().collect::<Vec<_>>()}))
            .collect();
        json!({
            "primary_process_id": self.primary_process_id,
            "files": self.files,
            "processes": processes,
            "start_messages": start_messages,
            "waits_for_messages": waits,
            "sends_messages": sends,
            "service_operators": operators,
            "correlation_properties": props,
        })
    }
}
