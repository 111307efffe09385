//! Embedded subprocesses: a subprocess task starts its start events inside its own scope,
//! completes when no path inside it is live, and takes everything inside with it when it is
//! cancelled or a terminate end event ends its scope.

use super::interpreter::{Interpreter, Outcome, Token};
use super::TaskState;
use crate::bpmn::ElementSpec;
use uuid::Uuid;

impl<'m> Interpreter<'m> {
    pub fn start_subprocess(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        start_events: &'m [String],
        scope: Option<Uuid>,
    ) -> Outcome {
        self.set_state(guid, TaskState::Started);
        self.start_boundaries(guid, element, scope)?;
        self.arm_event_subprocesses(Some(guid))?;
        for start in start_events {
            self.tokens.push_back(Token {
                element: start.clone(),
                scope: Some(guid),
                flow: None,
                race: None,
                joined: false,
                repeat: false,
            });
        }
        Ok(())
    }

    /// A started subprocess (or event subprocess) none of whose tasks is live any more, but
    /// for the listeners of its own event subprocesses.
    pub fn finished_subprocess(&self) -> Option<Uuid> {
        let tasks = &self.state.tasks;
        tasks
            .iter()
            .find(|task| {
                task.state == TaskState::Started
                    && task.element_type == "subProcess"
                    && !tasks.iter().any(|child| {
                        child.scope == Some(task.guid)
                            && child.state.is_live()
                            && !self.is_listener(child)
                    })
            })
            .map(|task| task.guid)
    }

    pub fn complete_subprocess(&mut self, subprocess: Uuid) -> Outcome {
        // its listeners end with it
        self.cancel_children(subprocess);
        self.clear_joins(subprocess);
        self.current = Some(subprocess);
        self.complete_activity(subprocess)
    }

    /// Cancel every live task inside a subprocess, and the tokens and joins still there.
    pub fn cancel_children(&mut self, scope: Uuid) {
        let children: Vec<Uuid> = self
            .state
            .tasks
            .iter()
            .filter(|task| task.scope == Some(scope) && task.state.is_live())
            .map(|task| task.guid)
            .collect();
        for child in children {
            self.cancel_task(child);
        }
        self.tokens.retain(|token| token.scope != Some(scope));
        self.clear_joins(scope);
    }

    /// Terminate end event: everything in the scope ends (the whole instance at top level).
    pub fn terminate(&mut self, scope: Option<Uuid>) {
        match scope {
            Some(subprocess) => self.cancel_children(subprocess),
            None => {
                let live: Vec<Uuid> = self.state.live_tasks().map(|task| task.guid).collect();
                for guid in live {
                    self.cancel_task(guid);
                }
                self.tokens.clear();
                self.state.internal.joins.clear();
            }
        }
    }
}
