//! One BPMN file -> `Definitions`.
use super::*;
use roxmltree::{Document, Node};

/// Flow nodes the engine runs.
const FLOW_NODES: &[&str] = &[
    "startEvent",
    "endEvent",
    "intermediateThrowEvent",
    "intermediateCatchEvent",
    "boundaryEvent",
    "task",
    "scriptTask",
    "userTask",
    "manualTask",
    "serviceTask",
    "sendTask",
    "receiveTask",
    "exclusiveGateway",
    "parallelGateway",
    "subProcess",
];

/// BPMN children of a process/subprocess that carry no execution semantics here.
const IGNORED_IN_PROCESS: &[&str] = &[
    "laneSet",
    "textAnnotation",
    "association",
    "documentation",
    "dataObject",
    "dataObjectReference",
    "dataStoreReference",
    "extensionElements",
    "ioSpecification",
    "property",
    "group",
    "category",
    "auditing",
    "monitoring",
    "correlationSubscription",
    // a subprocess's own children that are not flow elements
    "incoming",
    "outgoing",
    "dataInputAssociation",
    "dataOutputAssociation",
];

fn unsupported_reason(name: &str) -> String {
    let what = match name {
        "callActivity" => "call activities are not supported",
        "inclusiveGateway" => "inclusive gateways are not supported",
        "eventBasedGateway" => "event-based gateways are not supported",
        "complexGateway" => "complex gateways are not supported",
        "businessRuleTask" => "business rule (DMN) tasks are not supported",
        "transaction" => "transactions are not supported",
        "adHocSubProcess" => "ad-hoc subprocesses are not supported",
        _ => "",
    };
    if what.is_empty() {
        format!("bpmn:{name} is not supported by this engine")
    } else {
        format!("bpmn:{name}: {what}")
    }
}

fn is_bpmn(n: &Node, name: &str) -> bool {
    n.is_element() && n.tag_name().namespace() == Some(BPMN_NS) && n.tag_name().name() == name
}

fn is_spiff(n: &Node, name: &str) -> bool {
    n.is_element() && n.tag_name().namespace() == Some(SPIFF_NS) && n.tag_name().name() == name
}

fn bpmn_children<'a, 'i>(n: Node<'a, 'i>) -> impl Iterator<Item = Node<'a, 'i>> {
    n.children()
        .filter(|c| c.is_element() && c.tag_name().namespace() == Some(BPMN_NS))
}

fn bpmn_child<'a, 'i>(n: Node<'a, 'i>, name: &str) -> Option<Node<'a, 'i>> {
    n.children().find(|c| is_bpmn(c, name))
}

/// Direct `bpmn:extensionElements` children in the spiffworkflow namespace with this name.
fn spiff_ext<'a, 'i>(n: Node<'a, 'i>, name: &'a str) -> impl Iterator<Item = Node<'a, 'i>> + 'a {
    n.children()
        .filter(|c| is_bpmn(c, "extensionElements"))
        .flat_map(move |e| e.children().filter(move |c| is_spiff(c, name)))
}

/// All text below a node (text and CDATA), not trimmed.
fn text_of(n: Node) -> String {
    n.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect()
}

/// Trimmed text, None when empty.
fn nonempty_text(n: Node) -> Option<String> {
    let t = text_of(n);
    let t = t.trim();
    (!t.is_empty()).then(|| t.to_string())
}

fn nonempty_attr(n: Node, name: &str) -> Option<String> {
    n.attribute(name)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

struct Parser<'f> {
    file: &'f str,
}

impl<'f> Parser<'f> {
    fn err(&self, id: Option<&str>, reason: impl Into<String>) -> ModelError {
        ModelError::new(self.file, id, reason)
    }

    fn expr(&self, id: &str, what: &str, source: &str) -> Result<Expression, ModelError> {
        Expression::compile(source)
            .map_err(|e| self.err(Some(id), format!("{what}: invalid Python expression: {e}")))
    }

    fn script(&self, id: &str, what: &str, source: &str) -> Result<Script, ModelError> {
        Script::compile(source)
            .map_err(|e| self.err(Some(id), format!("{what}: invalid Python script: {e}")))
    }

    fn opt_script(
        &self,
        id: &str,
        what: &str,
        node: Option<Node>,
    ) -> Result<Option<Script>, ModelError> {
        match node.and_then(nonempty_text) {
            Some(src) => Ok(Some(self.script(id, what, &src)?)),
            None => Ok(None),
        }
    }

    fn required_id(&self, n: Node) -> Result<String, ModelError> {
        nonempty_attr(n, "id").ok_or_else(|| {
            self.err(
                None,
                format!("a bpmn:{} has no id attribute", n.tag_name().name()),
            )
        })
    }
}

pub fn parse_file(file_name: &str, xml: &str) -> Result<Definitions, ModelError> {
    let p = Parser { file: file_name };
    let doc = Document::parse(xml)
        .map_err(|e| p.err(None, format!("the file is not well-formed XML: {e}")))?;
    let root = doc.root_element();
    if !is_bpmn(&root, "definitions") {
        let ns = root.tag_name().namespace().unwrap_or("no namespace");
        return Err(p.err(
            None,
            format!(
                "not a BPMN file: the root element is {{{ns}}}{}, expected bpmn:definitions in namespace {BPMN_NS}",
                root.tag_name().name()
            ),
        ));
    }
    let mut defs = Definitions {
        file: file_name.to_string(),
        processes: vec![],
        messages: vec![],
        errors: vec![],
        signals: vec![],
        correlation_properties: vec![],
        correlation_keys: vec![],
    };
    for child in bpmn_children(root) {
        match child.tag_name().name() {
            "process" => defs.processes.push(p.process(child)?),
            "message" => {
                let id = p.required_id(child)?;
                let name = nonempty_attr(child, "name").unwrap_or_else(|| id.clone());
                defs.messages.push(MessageSpec { id, name });
            }
            "error" => {
                let id = p.required_id(child)?;
                defs.errors.push(ErrorSpec {
                    name: nonempty_attr(child, "name"),
                    error_code: nonempty_attr(child, "errorCode"),
                    variable: spiff_ext(child, "variableName").find_map(nonempty_text),
                    id,
                });
            }
            "signal" => {
                let id = p.required_id(child)?;
                let name = nonempty_attr(child, "name").unwrap_or_else(|| id.clone());
                defs.signals.push(SignalSpec { id, name });
            }
            "correlationProperty" => defs
                .correlation_properties
                .push(p.correlation_property(child)?),
            "collaboration" => {
                for c in bpmn_children(child).filter(|c| c.tag_name().name() == "correlationKey") {
                    defs.correlation_keys.push(correlation_key(c));
                }
            }
            "correlationKey" => defs.correlation_keys.push(correlation_key(child)),
            _ => {} // itemDefinition, dataStore, interface, escalation, ...: not executable
        }
    }
    Ok(defs)
}

fn correlation_key(n: Node) -> CorrelationKeySpec {
    CorrelationKeySpec {
        name: nonempty_attr(n, "name")
            .or_else(|| nonempty_attr(n, "id"))
            .unwrap_or_else(|| "MainCorrelationKey".to_string()),
        property_refs: n
            .children()
            .filter(|c| is_bpmn(c, "correlationPropertyRef"))
            .filter_map(nonempty_text)
            .collect(),
    }
}

/// Everything collected while walking one process.
#[derive(Default)]
struct ProcAcc {
    elements: BTreeMap<String, ElementSpec>,
    /// (flow, container subprocess id), document order.
    flows: Vec<(FlowSpec, Option<String>)>,
    /// Start events by container (None = process level), document order.
    starts: BTreeMap<Option<String>, Vec<String>>,
    /// Element ids in document order (for boundary resolution order).
    order: Vec<String>,
}

impl<'f> Parser<'f> {
    fn correlation_property(&self, n: Node) -> Result<RawCorrelationProperty, ModelError> {
        let id = self.required_id(n)?;
        let mut retrieval = vec![];
        for r in n
            .children()
            .filter(|c| is_bpmn(c, "correlationPropertyRetrievalExpression"))
        {
            let Some(message_ref) = nonempty_attr(r, "messageRef") else {
                return Err(self.err(
                    Some(&id),
                    "a correlationPropertyRetrievalExpression has no messageRef",
                ));
            };
            let source = r
                .children()
                .find(|c| is_bpmn(c, "messagePath") || is_bpmn(c, "formalExpression"))
                .and_then(nonempty_text);
            let Some(source) = source else {
                return Err(self.err(
                    Some(&id),
                    format!("the retrieval expression for message '{message_ref}' is empty"),
                ));
            };
            let expr = self.expr(
                &id,
                &format!("retrieval expression for message '{message_ref}'"),
                &source,
            )?;
            retrieval.push((message_ref, expr));
        }
        Ok(RawCorrelationProperty {
            name: nonempty_attr(n, "name"),
            id,
            retrieval,
        })
    }

    fn process(&self, n: Node) -> Result<ProcessSpec, ModelError> {
        let id = self.required_id(n)?;
        let mut acc = ProcAcc::default();
        self.container(n, None, &mut acc)?;

        // Sequence flows: endpoints exist, in the same container.
        let mut flows = BTreeMap::new();
        for (flow, container) in &acc.flows {
            for (what, end) in [("source", &flow.source), ("target", &flow.target)] {
                let Some(el) = acc.elements.get(end) else {
                    return Err(self.err(
                        Some(&flow.id),
                        format!("sequence flow {what} '{end}' does not exist"),
                    ));
                };
                if &el.parent != container {
                    return Err(self.err(
                        Some(&flow.id),
                        format!("sequence flow {what} '{end}' is not in the same (sub)process as the flow"),
                    ));
                }
            }
            if flows.insert(flow.id.clone(), flow.clone()).is_some() {
                return Err(self.err(Some(&flow.id), "duplicate element id"));
            }
            if acc.elements.contains_key(&flow.id) {
                return Err(self.err(Some(&flow.id), "duplicate element id"));
            }
        }
        for (flow, _) in &acc.flows {
            acc.elements
                .get_mut(&flow.source)
                .unwrap()
                .outgoing
                .push(flow.id.clone());
            acc.elements
                .get_mut(&flow.target)
                .unwrap()
                .incoming
                .push(flow.id.clone());
        }

        // default flows, boundary attachment.
        for el_id in &acc.order {
            let el = &acc.elements[el_id];
            if let Some(d) = &el.default_flow {
                if !el.outgoing.contains(d) {
                    return Err(self.err(
                        Some(el_id),
                        format!(
                            "default flow '{d}' is not an outgoing sequence flow of this element"
                        ),
                    ));
                }
            }
            if let ElementKind::Boundary(b) = &el.kind {
                if !el.incoming.is_empty() {
                    return Err(self.err(
                        Some(el_id),
                        "a boundary event cannot have incoming sequence flows",
                    ));
                }
                let Some(target) = acc.elements.get(&b.attached_to) else {
                    return Err(self.err(
                        Some(el_id),
                        format!("attachedToRef '{}' does not exist", b.attached_to),
                    ));
                };
                if target.parent != el.parent {
                    return Err(self.err(
                        Some(el_id),
                        format!(
                            "attachedToRef '{}' is not in the same (sub)process",
                            b.attached_to
                        ),
                    ));
                }
                if !is_activity(&target.element_type) {
                    return Err(self.err(
                        Some(el_id),
                        format!(
                            "attachedToRef '{}' is a {}; boundary events attach to tasks and subprocesses",
                            b.attached_to, target.element_type
                        ),
                    ));
                }
                let (target_id, el_id) = (b.attached_to.clone(), el_id.clone());
                acc.elements
                    .get_mut(&target_id)
                    .unwrap()
                    .boundaries
                    .push(el_id);
            }
        }

        // start events per container.
        let mut start_events = vec![];
        let mut any_node_top = false;
        for el in acc.elements.values() {
            if el.parent.is_none() {
                any_node_top = true;
            }
        }
        for (container, starts) in std::mem::take(&mut acc.starts) {
            match container {
                None => start_events = starts,
                Some(sub) => {
                    for s in &starts {
                        if let ElementKind::StartEvent { message: Some(_) } = acc.elements[s].kind {
                            return Err(self.err(
                                Some(s),
                                "message start events inside an embedded subprocess are not supported",
                            ));
                        }
                    }
                    if let ElementKind::SubProcess { start_events } =
                        &mut acc.elements.get_mut(&sub).unwrap().kind
                    {
                        *start_events = starts;
                    }
                }
            }
        }
        for el in acc.elements.values() {
            if let ElementKind::SubProcess { start_events } = &el.kind {
                if start_events.is_empty() {
                    return Err(self.err(Some(&el.id), "the subprocess has no start event"));
                }
            }
        }
        if any_node_top && start_events.is_empty() {
            return Err(self.err(Some(&id), "the process has no start event"));
        }

        Ok(ProcessSpec {
            name: nonempty_attr(n, "name"),
            file: self.file.to_string(),
            is_executable: n.attribute("isExecutable") != Some("false"),
            elements: acc.elements,
            flows,
            start_events,
            id,
        })
    }

    /// Walk the children of a process or subprocess.
    fn container(
        &self,
        n: Node,
        parent: Option<&str>,
        acc: &mut ProcAcc,
    ) -> Result<(), ModelError> {
        for child in bpmn_children(n) {
            let name = child.tag_name().name();
            if name == "sequenceFlow" {
                let id = self.required_id(child)?;
                let source = nonempty_attr(child, "sourceRef")
                    .ok_or_else(|| self.err(Some(&id), "sequence flow without sourceRef"))?;
                let target = nonempty_attr(child, "targetRef")
                    .ok_or_else(|| self.err(Some(&id), "sequence flow without targetRef"))?;
                let condition =
                    match bpmn_child(child, "conditionExpression").and_then(nonempty_text) {
                        Some(src) => Some(self.expr(&id, "condition", &src)?),
                        None => None,
                    };
                acc.flows.push((
                    FlowSpec {
                        name: nonempty_attr(child, "name"),
                        id,
                        source,
                        target,
                        condition,
                    },
                    parent.map(str::to_string),
                ));
            } else if FLOW_NODES.contains(&name) {
                let el = self.element(child, parent)?;
                let id = el.id.clone();
                if matches!(el.kind, ElementKind::StartEvent { .. }) {
                    acc.starts
                        .entry(parent.map(str::to_string))
                        .or_default()
                        .push(id.clone());
                }
                let is_sub = matches!(el.kind, ElementKind::SubProcess { .. });
                if acc.elements.insert(id.clone(), el).is_some() {
                    return Err(self.err(Some(&id), "duplicate element id"));
                }
                acc.order.push(id.clone());
                if is_sub {
                    self.container(child, Some(&id), acc)?;
                }
            } else if IGNORED_IN_PROCESS.contains(&name) {
                continue;
            } else {
                let id = nonempty_attr(child, "id");
                return Err(self.err(id.as_deref(), unsupported_reason(name)));
            }
        }
        Ok(())
    }

    fn element(&self, n: Node, parent: Option<&str>) -> Result<ElementSpec, ModelError> {
        let id = self.required_id(n)?;
        let element_type = n.tag_name().name().to_string();
        for c in bpmn_children(n) {
            let cname = c.tag_name().name();
            if cname == "multiInstanceLoopCharacteristics" || cname == "standardLoopCharacteristics"
            {
                return Err(self.err(
                    Some(&id),
                    format!("loops and multi-instance activities (bpmn:{cname}) are not supported"),
                ));
            }
        }
        if n.attribute("isForCompensation") == Some("true") {
            return Err(self.err(Some(&id), "compensation activities are not supported"));
        }
        let pre_script = self.opt_script(&id, "preScript", spiff_ext(n, "preScript").next())?;
        let post_script = self.opt_script(&id, "postScript", spiff_ext(n, "postScript").next())?;
        let kind = self.kind(n, &id, &element_type)?;
        Ok(ElementSpec {
            name: nonempty_attr(n, "name"),
            element_type,
            kind,
            parent: parent.map(str::to_string),
            incoming: vec![],
            outgoing: vec![],
            default_flow: nonempty_attr(n, "default"),
            boundaries: vec![],
            pre_script,
            post_script,
            id,
        })
    }

    fn kind(&self, n: Node, id: &str, t: &str) -> Result<ElementKind, ModelError> {
        let defs: Vec<Node> = bpmn_children(n)
            .filter(|c| {
                let name = c.tag_name().name();
                name.ends_with("EventDefinition") || name == "eventDefinitionRef"
            })
            .collect();
        if defs.len() > 1 {
            return Err(self.err(
                Some(id),
                "events with several event definitions are not supported",
            ));
        }
        let def = defs.first().copied();
        let def_name = def.map(|d| d.tag_name().name()).unwrap_or("");
        let unsupported_def = || {
            let what = def_name.trim_end_matches("EventDefinition");
            let what = if what == "timer" {
                "timer events are not supported".to_string()
            } else {
                format!("a {t} with a {def_name} is not supported")
            };
            Err(self.err(Some(id), what))
        };
        Ok(match t {
            "startEvent" => match def_name {
                "" => ElementKind::StartEvent { message: None },
                "messageEventDefinition" => ElementKind::StartEvent {
                    message: Some(self.message_catch(n, def.unwrap(), id)?),
                },
                _ => return unsupported_def(),
            },
            "endEvent" => ElementKind::EndEvent(match def_name {
                "" => EndKind::None,
                "terminateEventDefinition" => EndKind::Terminate,
                "errorEventDefinition" => EndKind::Error(error_ref(def.unwrap())),
                "messageEventDefinition" => {
                    EndKind::Message(self.message_throw(n, def.unwrap(), id)?)
                }
                _ => return unsupported_def(),
            }),
            "intermediateThrowEvent" => match def_name {
                "" => ElementKind::PassThrough,
                "messageEventDefinition" => {
                    ElementKind::MessageThrow(self.message_throw(n, def.unwrap(), id)?)
                }
                _ => return unsupported_def(),
            },
            "intermediateCatchEvent" => match def_name {
                "messageEventDefinition" => {
                    ElementKind::MessageCatch(self.message_catch(n, def.unwrap(), id)?)
                }
                "" => {
                    return Err(self.err(
                        Some(id),
                        "an intermediate catch event needs an event definition (message)",
                    ))
                }
                _ => return unsupported_def(),
            },
            "boundaryEvent" => {
                let attached_to = nonempty_attr(n, "attachedToRef")
                    .ok_or_else(|| self.err(Some(id), "boundary event without attachedToRef"))?;
                let cancel_activity = n.attribute("cancelActivity").map(str::trim) != Some("false");
                let trigger =
                    match def_name {
                        "errorEventDefinition" => BoundaryTrigger::Error(error_ref(def.unwrap())),
                        "messageEventDefinition" => {
                            BoundaryTrigger::Message(self.message_catch(n, def.unwrap(), id)?)
                        }
                        "signalEventDefinition" => {
                            let signal_ref =
                                nonempty_attr(def.unwrap(), "signalRef").ok_or_else(|| {
                                    self.err(Some(id), "signal boundary event without signalRef")
                                })?;
                            BoundaryTrigger::Signal {
                                signal_ref,
                                signal_name: String::new(),
                            }
                        }
                        "" => return Err(self.err(
                            Some(id),
                            "a boundary event needs an event definition (error, message or signal)",
                        )),
                        _ => return unsupported_def(),
                    };
                if !cancel_activity {
                    return Err(self.err(
                        Some(id),
                        "non-interrupting boundary events (cancelActivity=\"false\") are not supported",
                    ));
                }
                ElementKind::Boundary(BoundarySpec {
                    attached_to,
                    cancel_activity,
                    trigger,
                })
            }
            _ if def.is_some() => return unsupported_def(),
            "task" => ElementKind::PassThrough,
            "scriptTask" => ElementKind::ScriptTask {
                script: self.opt_script(id, "script", bpmn_child(n, "script"))?,
            },
            "userTask" => ElementKind::UserTask,
            "manualTask" => ElementKind::ManualTask,
            "serviceTask" => ElementKind::ServiceTask(self.service_task(n, id)?),
            "sendTask" => ElementKind::MessageThrow(self.message_throw(n, n, id)?),
            "receiveTask" => ElementKind::MessageCatch(self.message_catch(n, n, id)?),
            "exclusiveGateway" => ElementKind::ExclusiveGateway,
            "parallelGateway" => ElementKind::ParallelGateway,
            "subProcess" => {
                if n.attribute("triggeredByEvent") == Some("true") {
                    return Err(self.err(Some(id), "event subprocesses are not supported"));
                }
                ElementKind::SubProcess {
                    start_events: vec![],
                }
            }
            _ => return Err(self.err(Some(id), unsupported_reason(t))),
        })
    }

    fn message_throw(&self, el: Node, def: Node, id: &str) -> Result<MessageThrowSpec, ModelError> {
        let def = task_message_def(el, def);
        let message_ref = nonempty_attr(def, "messageRef")
            .ok_or_else(|| self.err(Some(id), "the message element has no messageRef"))?;
        let src = spiff_ext(def, "messagePayload")
            .chain(spiff_ext(el, "messagePayload"))
            .find_map(nonempty_text);
        let payload = match src {
            Some(s) => Some(self.expr(id, "messagePayload", &s)?),
            None => None,
        };
        Ok(MessageThrowSpec {
            message_ref,
            message_name: String::new(),
            payload,
        })
    }

    fn message_catch(&self, el: Node, def: Node, id: &str) -> Result<MessageCatchSpec, ModelError> {
        let def = task_message_def(el, def);
        let message_ref = nonempty_attr(def, "messageRef")
            .ok_or_else(|| self.err(Some(id), "the message element has no messageRef"))?;
        let variable = spiff_ext(def, "messageVariable")
            .chain(spiff_ext(el, "messageVariable"))
            .find_map(nonempty_text);
        let mut process_correlations = vec![];
        let same = def == el;
        let pvcs: Vec<Node> = if same {
            spiff_ext(el, "processVariableCorrelation").collect()
        } else {
            spiff_ext(def, "processVariableCorrelation")
                .chain(spiff_ext(el, "processVariableCorrelation"))
                .collect()
        };
        for pvc in pvcs {
            let child = |name: &str| {
                pvc.children()
                    .find(|c| is_spiff(c, name))
                    .and_then(nonempty_text)
                    .or_else(|| nonempty_attr(pvc, name))
            };
            let Some(prop) = child("propertyId") else {
                return Err(self.err(Some(id), "processVariableCorrelation without propertyId"));
            };
            let Some(src) = child("expression") else {
                return Err(self.err(
                    Some(id),
                    format!("processVariableCorrelation for '{prop}' has no expression"),
                ));
            };
            let e = self.expr(
                id,
                &format!("processVariableCorrelation for '{prop}'"),
                &src,
            )?;
            process_correlations.push((prop, e));
        }
        Ok(MessageCatchSpec {
            message_ref,
            message_name: String::new(),
            variable,
            process_correlations,
        })
    }

    fn service_task(&self, n: Node, id: &str) -> Result<ServiceTaskSpec, ModelError> {
        let Some(op) = spiff_ext(n, "serviceTaskOperator").next() else {
            return Err(self.err(
                Some(id),
                "service task without spiffworkflow:serviceTaskOperator (choose a connector command)",
            ));
        };
        let operator_id = nonempty_attr(op, "id")
            .ok_or_else(|| self.err(Some(id), "spiffworkflow:serviceTaskOperator without id"))?;
        let mut parameters = vec![];
        for params in op.children().filter(|c| is_spiff(c, "parameters")) {
            for p in params.children().filter(|c| is_spiff(c, "parameter")) {
                let pid = nonempty_attr(p, "id")
                    .ok_or_else(|| self.err(Some(id), "a spiffworkflow:parameter has no id"))?;
                let value = match nonempty_attr(p, "value") {
                    Some(src) => Some(self.expr(id, &format!("parameter '{pid}'"), &src)?),
                    None => None,
                };
                parameters.push(ServiceParameter {
                    type_name: nonempty_attr(p, "type"),
                    required: p.attribute("required").map(str::trim) == Some("true"),
                    value,
                    id: pid,
                });
            }
        }
        let mut retries = 0;
        let mut backoff_base = 2.0;
        if let Some(r) = op.children().find(|c| is_spiff(c, "retry")) {
            if let Some(v) = nonempty_attr(r, "retries") {
                retries = v.parse::<u32>().map_err(|_| {
                    self.err(
                        Some(id),
                        format!("retry retries=\"{v}\" is not a non-negative integer"),
                    )
                })?;
            }
            if let Some(v) = nonempty_attr(r, "backoff_base") {
                backoff_base = v
                    .parse::<f64>()
                    .ok()
                    .filter(|b| b.is_finite() && *b >= 0.0)
                    .ok_or_else(|| {
                        self.err(
                            Some(id),
                            format!("retry backoff_base=\"{v}\" is not a non-negative number"),
                        )
                    })?;
            }
        }
        Ok(ServiceTaskSpec {
            operator_id,
            result_variable: nonempty_attr(op, "resultVariable"),
            parameters,
            retries,
            backoff_base,
        })
    }
}

/// For send/receive tasks the message is on the task; SpiffWorkflow also accepts a child
/// messageEventDefinition when the task has no messageRef.
fn task_message_def<'a, 'i>(el: Node<'a, 'i>, def: Node<'a, 'i>) -> Node<'a, 'i> {
    if def == el && el.attribute("messageRef").is_none() {
        if let Some(d) = bpmn_child(el, "messageEventDefinition") {
            return d;
        }
    }
    def
}

fn error_ref(def: Node) -> ErrorRef {
    ErrorRef {
        error_ref: nonempty_attr(def, "errorRef"),
        error_code: None,
        error_name: None,
        variable: spiff_ext(def, "variableName").find_map(nonempty_text),
    }
}

fn is_activity(element_type: &str) -> bool {
    matches!(
        element_type,
        "task"
            | "scriptTask"
            | "userTask"
            | "manualTask"
            | "serviceTask"
            | "sendTask"
            | "receiveTask"
            | "subProcess"
    )
}
