//! What every flow node has (id, name, scripts, default flow), and which element family
//! reads the rest of it: events, tasks, gateways, subprocesses.
use super::nodes::{nonempty_attr, spiff_ext};
use super::*;

impl Parser<'_> {
    /// One flow node; `parent` is the enclosing embedded subprocess. Flows and boundary
    /// events are added to it later, by `links`.
    pub(super) fn element(
        &self,
        node: Node,
        parent: Option<&str>,
    ) -> Result<ElementSpec, ModelError> {
        let id = self.required_id(node)?;
        let element_type = node.tag_name().name().to_string();
        if node.attribute("isForCompensation") == Some("true") {
            return Err(self.err(Some(&id), "compensation activities are not supported"));
        }
        let standard_loop = self.standard_loop(node, &id)?;
        let multi_instance = self.multi_instance(node, &id)?;
        let io = self.task_io(node, &id, &element_type, multi_instance.is_some())?;
        let (reads, writes) = data_associations(node);
        let pre_script = self.opt_script(&id, "preScript", spiff_ext(node, "preScript").next())?;
        let post_script =
            self.opt_script(&id, "postScript", spiff_ext(node, "postScript").next())?;
        let kind = match self.kind(node, &id, &element_type) {
            Ok(kind) => kind,
            // SpiffWorkflow loads it, SpiffArena fails when it runs: so does the engine
            Err(fault) if self.is_fault(&fault) => ElementKind::Faulty {
                reason: fault.reason,
            },
            Err(error) => return Err(error),
        };
        Ok(ElementSpec {
            name: nonempty_attr(node, "name"),
            element_type,
            kind,
            parent: parent.map(str::to_string),
            process: String::new(), // set when the process is walked
            incoming: vec![],
            outgoing: vec![],
            default_flow: nonempty_attr(node, "default"),
            boundaries: vec![],
            pre_script,
            post_script,
            standard_loop,
            multi_instance,
            io,
            reads,
            writes,
            store_reads: vec![], // sorted out of reads and writes with the process
            store_writes: vec![],
            id,
        })
    }

    /// A task's `ioSpecification` (a process's is read with the process).
    fn task_io(
        &self,
        node: Node,
        id: &str,
        element_type: &str,
        multi_instance: bool,
    ) -> Result<Option<IoSpec>, ModelError> {
        let Some(io) = self.io_specification(node) else {
            return Ok(None);
        };
        if matches!(element_type, "subProcess" | "transaction" | "callActivity") {
            return Err(self.err(
                Some(id),
                "an ioSpecification on a subprocess or call activity is not supported (declare it on the called process)",
            ));
        }
        if multi_instance {
            return Err(self.err(
                Some(id),
                "an ioSpecification on a multi-instance task is not supported",
            ));
        }
        Ok(Some(io))
    }

    fn kind(&self, node: Node, id: &str, element_type: &str) -> Result<ElementKind, ModelError> {
        let definition = self.event_definition(node);
        match element_type {
            "startEvent" => self.start_event(node, id, definition),
            "endEvent" => self.end_event(node, id, definition),
            "intermediateThrowEvent" => self.intermediate_throw_event(node, id, definition),
            "intermediateCatchEvent" => self.intermediate_catch_event(node, id, definition),
            "boundaryEvent" => self.boundary_event(node, id, definition),
            // Only events have event definitions.
            _ if definition.is_present() => {
                Err(self.unsupported_definition(id, element_type, definition))
            }
            _ => self.activity_or_gateway(node, id, element_type),
        }
    }

    fn activity_or_gateway(
        &self,
        node: Node,
        id: &str,
        element_type: &str,
    ) -> Result<ElementKind, ModelError> {
        Ok(match element_type {
            "task" => ElementKind::PassThrough,
            "scriptTask" => self.script_task(node, id)?,
            "businessRuleTask" => self.business_rule_task(node, id)?,
            "userTask" => ElementKind::UserTask,
            "manualTask" => ElementKind::ManualTask,
            "serviceTask" => ElementKind::ServiceTask(self.service_task(node, id)?),
            "sendTask" => ElementKind::MessageThrow(self.message_throw(node, node, id)?),
            "receiveTask" => ElementKind::MessageCatch(self.message_catch(node, node, id)?),
            "exclusiveGateway" => ElementKind::ExclusiveGateway,
            "parallelGateway" => ElementKind::ParallelGateway,
            "eventBasedGateway" => ElementKind::EventGateway,
            "inclusiveGateway" => ElementKind::InclusiveGateway,
            "subProcess" | "transaction" => self.subprocess(node, id)?,
            "callActivity" => ElementKind::CallActivity {
                called_element: nonempty_attr(node, "calledElement").ok_or_else(|| {
                    self.err(
                        Some(id),
                        "a call activity needs a calledElement (a process id)",
                    )
                })?,
            },
            _ => return Err(self.err(Some(id), unsupported_reason(element_type))),
        })
    }
}

/// Why an element is refused, for elements the engine does not run at all.
pub(super) fn unsupported_reason(name: &str) -> String {
    let what = match name {
        "complexGateway" => "complex gateways are not supported",
        "adHocSubProcess" => "ad-hoc subprocesses are not supported",
        _ => "",
    };
    if what.is_empty() {
        format!("bpmn:{name} is not supported by this engine")
    } else {
        format!("bpmn:{name}: {what}")
    }
}

/// What a boundary event can be attached to.
pub(super) fn is_activity(element_type: &str) -> bool {
    matches!(
        element_type,
        "task"
            | "scriptTask"
            | "businessRuleTask"
            | "userTask"
            | "manualTask"
            | "serviceTask"
            | "sendTask"
            | "receiveTask"
            | "subProcess"
            | "transaction"
            | "callActivity"
    )
}

/// The references a flow node reads (`dataInputAssociation/sourceRef`) and writes
/// (`dataOutputAssociation/targetRef`): data object or data store reference ids, resolved
/// with the process.
fn data_associations(node: Node) -> (Vec<String>, Vec<String>) {
    let refs = |association: &str, end: &str| -> Vec<String> {
        node.children()
            .filter(|c| c.is_element() && c.tag_name().name() == association)
            .flat_map(|a| {
                a.children()
                    .filter(move |c| c.is_element() && c.tag_name().name() == end)
            })
            .filter_map(super::nodes::nonempty_text)
            .collect()
    };
    (
        refs("dataInputAssociation", "sourceRef"),
        refs("dataOutputAssociation", "targetRef"),
    )
}
