//! Embedded subprocesses: their kind, and their own start events (their children are
//! walked by `process` into the process's flat element map).
use super::*;

/// A `bpmn:subProcess` with `triggeredByEvent="true"`.
pub(super) fn is_event_subprocess(node: Node) -> bool {
    node.tag_name().name() == "subProcess" && node.attribute("triggeredByEvent") == Some("true")
}

impl Parser<'_> {
    /// Start events are filled in after the walk (`set_subprocess_starts`).
    pub(super) fn subprocess(&self, node: Node, id: &str) -> Result<ElementKind, ModelError> {
        if is_event_subprocess(node) {
            if !node
                .children()
                .any(|c| c.is_element() && c.tag_name().name() == "startEvent")
            {
                return Err(self.err(Some(id), "the event subprocess has no start event"));
            }
            return Ok(ElementKind::EventSubProcess {
                start_event: String::new(),
            });
        }
        let form = match node.tag_name().name() {
            "transaction" => SubProcessForm::Transaction,
            _ => SubProcessForm::Embedded,
        };
        Ok(ElementKind::SubProcess {
            form,
            start_events: vec![],
            io: None,
        })
    }

    /// A subprocess is entered from its parent's token, never by a message: only none
    /// start events make sense inside one.
    pub(super) fn set_subprocess_starts(
        &self,
        subprocess_id: &str,
        starts: Vec<String>,
        elements: &mut BTreeMap<String, ElementSpec>,
    ) -> Result<(), ModelError> {
        if let Some(ElementSpec {
            kind: ElementKind::EventSubProcess { start_event },
            ..
        }) = elements.get_mut(subprocess_id)
        {
            let [start] = starts.as_slice() else {
                return Err(self.err(
                    Some(subprocess_id),
                    "an event subprocess has exactly one start event",
                ));
            };
            *start_event = start.clone();
            return Ok(());
        }
        for start in &starts {
            match elements[start].kind {
                ElementKind::StartEvent { message: Some(_) } => {
                    return Err(self.err(
                        Some(start),
                        "message start events inside an embedded subprocess are not supported",
                    ))
                }
                ElementKind::StartEvent { .. } => {}
                _ => {
                    return Err(self.err(
                        Some(start),
                        "a start event with a trigger inside an embedded subprocess is not supported (use an event subprocess)",
                    ))
                }
            }
        }
        if let Some(ElementSpec {
            kind: ElementKind::SubProcess { start_events, .. },
            ..
        }) = elements.get_mut(subprocess_id)
        {
            *start_events = starts;
        }
        Ok(())
    }

    /// The start event of an event subprocess: its trigger (message, signal, timer, error,
    /// escalation or condition) and whether it interrupts (`isInterrupting`, default true).
    pub(super) fn event_subprocess_start(
        &self,
        node: Node,
        id: &str,
        definition: super::events::EventDefinition,
    ) -> Result<ElementKind, ModelError> {
        if !definition.is_present() {
            return Err(self.err(
                Some(id),
                "the start event of an event subprocess needs a trigger (message, signal, timer, error, escalation or condition)",
            ));
        }
        let trigger = self.boundary_trigger(node, id, definition)?;
        if matches!(trigger, BoundaryTrigger::Cancel) {
            return Err(self.err(
                Some(id),
                "an event subprocess cannot start with a cancel event",
            ));
        }
        let interrupting = node.attribute("isInterrupting").map(str::trim) != Some("false");
        if !interrupting && matches!(trigger, BoundaryTrigger::Error(_)) {
            return Err(self.err(
                Some(id),
                "an error start event always interrupts: isInterrupting=\"false\" is not allowed",
            ));
        }
        Ok(ElementKind::EventSubProcessStart {
            trigger,
            interrupting,
        })
    }

    /// In element id order: of several, the first by id is the one reported.
    pub(super) fn check_subprocesses_have_starts(
        &self,
        elements: &BTreeMap<String, ElementSpec>,
    ) -> Result<(), ModelError> {
        for element in elements.values() {
            if let ElementKind::SubProcess { start_events, .. } = &element.kind {
                if start_events.is_empty() {
                    return Err(self.err(Some(&element.id), "the subprocess has no start event"));
                }
            }
        }
        Ok(())
    }
}
