//! Embedded subprocesses: their kind, and their own start events (their children are
//! walked by `process` into the process's flat element map).
use super::*;

impl Parser<'_> {
    /// Start events are filled in after the walk (`set_subprocess_starts`).
    pub(super) fn subprocess(&self, node: Node, id: &str) -> Result<ElementKind, ModelError> {
        if node.attribute("triggeredByEvent") == Some("true") {
            return Err(self.err(Some(id), "event subprocesses are not supported"));
        }
        Ok(ElementKind::SubProcess {
            start_events: vec![],
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
        for start in &starts {
            if let ElementKind::StartEvent { message: Some(_) } = elements[start].kind {
                return Err(self.err(
                    Some(start),
                    "message start events inside an embedded subprocess are not supported",
                ));
            }
        }
        if let Some(ElementSpec {
            kind: ElementKind::SubProcess { start_events },
            ..
        }) = elements.get_mut(subprocess_id)
        {
            *start_events = starts;
        }
        Ok(())
    }

    /// In element id order: of several, the first by id is the one reported.
    pub(super) fn check_subprocesses_have_starts(
        &self,
        elements: &BTreeMap<String, ElementSpec>,
    ) -> Result<(), ModelError> {
        for element in elements.values() {
            if let ElementKind::SubProcess { start_events } = &element.kind {
                if start_events.is_empty() {
                    return Err(self.err(Some(&element.id), "the subprocess has no start event"));
                }
            }
        }
        Ok(())
    }
}
