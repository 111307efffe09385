//! A `bpmn:process`: walk it and its embedded subprocesses, then link what was found.
//!
//! The walk collects elements and sequence flows of every container (process or embedded
//! subprocess) into one flat map; links between them are checked only afterwards (`links`),
//! because a flow may name an element that comes later in the document.
use super::element::unsupported_reason;
use super::nodes::{bpmn_child, bpmn_children, nonempty_attr, nonempty_text};
use super::*;

/// Flow nodes the engine runs.
const FLOW_NODES: &[&str] = &[
    "startEvent",
    "endEvent",
    "intermediateThrowEvent",
    "intermediateCatchEvent",
    "boundaryEvent",
    "task",
    "scriptTask",
    "businessRuleTask",
    "userTask",
    "manualTask",
    "serviceTask",
    "sendTask",
    "receiveTask",
    "exclusiveGateway",
    "parallelGateway",
    "eventBasedGateway",
    "inclusiveGateway",
    "subProcess",
    "transaction",
    "callActivity",
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
    // read by `loops`
    "standardLoopCharacteristics",
    "multiInstanceLoopCharacteristics",
];

/// Everything collected while walking one process.
#[derive(Default)]
pub(super) struct ProcessContents {
    pub(super) elements: BTreeMap<String, ElementSpec>,
    /// (flow, container subprocess id), document order.
    pub(super) flows: Vec<(FlowSpec, Option<String>)>,
    /// Start events by container (None = process level), document order.
    pub(super) starts: BTreeMap<Option<String>, Vec<String>>,
    /// Element ids in document order (for boundary resolution order).
    pub(super) order: Vec<String>,
    /// `dataObject` ids, document order.
    pub(super) data_objects: Vec<String>,
    /// Data references by id.
    pub(super) data_references: BTreeMap<String, DataReference>,
}

/// A `dataObjectReference` or `dataStoreReference`, with the object or store it names.
pub(super) enum DataReference {
    Object(Option<String>),
    Store(Option<String>),
}

impl Parser<'_> {
    pub(super) fn process(&self, node: Node) -> Result<ProcessSpec, ModelError> {
        let id = self.required_id(node)?;
        let mut contents = ProcessContents::default();
        self.walk_container(node, None, &mut contents)?;
        let flows = self.link_flows(&mut contents)?;
        self.check_defaults_and_attach_boundaries(&mut contents)?;
        self.resolve_links(&mut contents)?;
        let start_events = self.assign_start_events(&id, &mut contents)?;
        self.resolve_data_references(&mut contents)?;
        for element in contents.elements.values_mut() {
            element.process = id.clone();
        }
        Ok(ProcessSpec {
            name: nonempty_attr(node, "name"),
            file: self.file.to_string(),
            is_executable: node.attribute("isExecutable") != Some("false"),
            elements: contents.elements,
            flows,
            start_events,
            io: self.io_specification(node),
            id,
        })
    }

    /// Each element's data associations name data objects or data stores (through their
    /// references): data object ids stay in `reads`/`writes`, data store ids move to
    /// `store_reads`/`store_writes` (the stores themselves are checked by `build_model`: they
    /// may be declared in another file).
    fn resolve_data_references(&self, contents: &mut ProcessContents) -> Result<(), ModelError> {
        let known = (&contents.data_references, &contents.data_objects);
        for element in contents.elements.values_mut() {
            let (objects, stores) = self.resolve_references(&element.id, &element.reads, known)?;
            (element.reads, element.store_reads) = (objects, stores);
            let (objects, stores) = self.resolve_references(&element.id, &element.writes, known)?;
            (element.writes, element.store_writes) = (objects, stores);
        }
        Ok(())
    }

    /// (data object ids, data store ids) the references name.
    fn resolve_references(
        &self,
        element_id: &str,
        references: &[String],
        (data_references, data_objects): (&BTreeMap<String, DataReference>, &Vec<String>),
    ) -> Result<(Vec<String>, Vec<String>), ModelError> {
        let (mut objects, mut stores) = (vec![], vec![]);
        for reference in references {
            match data_references.get(reference.as_str()) {
                Some(DataReference::Object(Some(object)))
                    if data_objects.contains(object) =>
                {
                    objects.push(object.clone())
                }
                Some(DataReference::Object(Some(object))) => {
                    return Err(self.err(
                        Some(element_id),
                        format!("data object reference '{reference}' names '{object}', which is no data object of this process"),
                    ))
                }
                Some(DataReference::Object(None)) => {
                    return Err(self.err(
                        Some(element_id),
                        format!("data object reference '{reference}' has no dataObjectRef"),
                    ))
                }
                Some(DataReference::Store(Some(store))) => stores.push(store.clone()),
                Some(DataReference::Store(None)) => {
                    return Err(self.err(
                        Some(element_id),
                        format!("data store reference '{reference}' has no dataStoreRef"),
                    ))
                }
                None => {
                    return Err(self.err(
                        Some(element_id),
                        format!("a data association names '{reference}', which is neither a data object reference nor a data store reference of this process"),
                    ))
                }
            }
        }
        Ok((objects, stores))
    }

    /// The process's `ioSpecification`: the ids of its data inputs and outputs.
    pub(super) fn io_specification(&self, node: Node) -> Option<IoSpec> {
        let io = bpmn_child(node, "ioSpecification")?;
        let ids = |name: &str| {
            bpmn_children(io)
                .filter(|c| c.tag_name().name() == name)
                .filter_map(|c| nonempty_attr(c, "id"))
                .collect()
        };
        Some(IoSpec {
            inputs: ids("dataInput"),
            outputs: ids("dataOutput"),
        })
    }

    /// Walk the children of a process or subprocess (`parent`: the subprocess id).
    fn walk_container(
        &self,
        container: Node,
        parent: Option<&str>,
        contents: &mut ProcessContents,
    ) -> Result<(), ModelError> {
        for child in bpmn_children(container) {
            let name = child.tag_name().name();
            if name == "sequenceFlow" {
                let flow = self.sequence_flow(child)?;
                contents.flows.push((flow, parent.map(str::to_string)));
            } else if FLOW_NODES.contains(&name) {
                self.add_flow_node(child, parent, contents)?;
            } else if let Some(id) = nonempty_attr(child, "id").filter(|_| name == "dataObject") {
                contents.data_objects.push(id);
            } else if let (Some(id), "dataObjectReference" | "dataStoreReference") =
                (nonempty_attr(child, "id"), name)
            {
                let reference = if name == "dataObjectReference" {
                    DataReference::Object(nonempty_attr(child, "dataObjectRef"))
                } else {
                    DataReference::Store(nonempty_attr(child, "dataStoreRef"))
                };
                contents.data_references.insert(id, reference);
            } else if !IGNORED_IN_PROCESS.contains(&name) {
                let id = nonempty_attr(child, "id");
                return Err(self.err(id.as_deref(), unsupported_reason(name)));
            }
        }
        Ok(())
    }

    fn sequence_flow(&self, node: Node) -> Result<FlowSpec, ModelError> {
        let id = self.required_id(node)?;
        let source = nonempty_attr(node, "sourceRef")
            .ok_or_else(|| self.err(Some(&id), "sequence flow without sourceRef"))?;
        let target = nonempty_attr(node, "targetRef")
            .ok_or_else(|| self.err(Some(&id), "sequence flow without targetRef"))?;
        let condition = match bpmn_child(node, "conditionExpression").and_then(nonempty_text) {
            Some(expression) => Some(self.expr(&id, "condition", &expression)?),
            None => None,
        };
        Ok(FlowSpec {
            name: nonempty_attr(node, "name"),
            id,
            source,
            target,
            condition,
        })
    }

    /// Reads one flow node; a subprocess is walked right after it, so that document order
    /// (`contents.order`) has a subprocess before its children.
    fn add_flow_node(
        &self,
        node: Node,
        parent: Option<&str>,
        contents: &mut ProcessContents,
    ) -> Result<(), ModelError> {
        let element = self.element(node, parent)?;
        let id = element.id.clone();
        // a faulty start event (a message start without messageRef) is still where its
        // process starts: an instance errs there
        let faulty_start = matches!(element.kind, ElementKind::Faulty { .. })
            && element.element_type == "startEvent";
        if faulty_start
            || matches!(
                element.kind,
                ElementKind::StartEvent { .. }
                    | ElementKind::EventSubProcessStart { .. }
                    | ElementKind::TimerStart(_)
                    | ElementKind::SignalStart(_)
                    | ElementKind::MultipleStart(_)
            )
        {
            contents
                .starts
                .entry(parent.map(str::to_string))
                .or_default()
                .push(id.clone());
        }
        let is_subprocess = matches!(
            element.kind,
            ElementKind::SubProcess { .. } | ElementKind::EventSubProcess { .. }
        );
        if contents.elements.insert(id.clone(), element).is_some() {
            return Err(self.err(Some(&id), "duplicate element id"));
        }
        contents.order.push(id.clone());
        if is_subprocess {
            self.walk_container(node, Some(&id), contents)?;
        }
        Ok(())
    }
}
