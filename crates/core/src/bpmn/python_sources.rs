//! Every piece of Python a model (or one of its files) holds, with where it is (a signal's,
//! error's or escalation's payload expression under its throw events, and, for a file, under
//! the `bpmn:signal`, `bpmn:error` or `bpmn:escalation` itself): the script host
//! checks a file's when it is uploaded (syntax is CPython's to judge), and a model with any
//! that the fast path cannot answer runs its steps where a script may take its whole time
//! limit.

use super::{
    BoundarySpec, BoundaryTrigger, Definitions, ElementKind, ElementSpec, EndKind,
    MessageCatchSpec, MessageThrowSpec, ModelSpec, MultiItems, ProcessSpec, Throw, TimerKind,
    TimerSpec,
};
use crate::expr::{Expression, Script};

/// One expression or script of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonSource<'m> {
    pub file: &'m str,
    /// The element, sequence flow or correlation property it belongs to.
    pub element_id: &'m str,
    /// What it is for: "condition", "script", "preScript", "parameter 'url'", ...
    pub what: String,
    pub source: &'m str,
    /// Statements (a script) rather than an expression.
    pub is_script: bool,
    /// Only Python can answer it (not the fast path's names, literals and subscripts).
    pub needs_python: bool,
}

struct Collector<'m> {
    file: &'m str,
    found: Vec<PythonSource<'m>>,
}

impl<'m> Collector<'m> {
    fn expression(&mut self, element_id: &'m str, what: impl Into<String>, e: &'m Expression) {
        self.found.push(PythonSource {
            file: self.file,
            element_id,
            what: what.into(),
            source: e.source(),
            is_script: false,
            needs_python: e.needs_python(),
        });
    }

    fn script(&mut self, element_id: &'m str, what: &str, script: &'m Script) {
        self.found.push(PythonSource {
            file: self.file,
            element_id,
            what: what.to_string(),
            source: script.source(),
            is_script: true,
            needs_python: true,
        });
    }

    fn message_catch(&mut self, element_id: &'m str, catch: &'m MessageCatchSpec) {
        for (property, e) in &catch.process_correlations {
            self.expression(
                element_id,
                format!("processVariableCorrelation for '{property}'"),
                e,
            );
        }
    }

    fn timer(&mut self, element_id: &'m str, timer: &'m TimerSpec) {
        let what = match timer.kind {
            TimerKind::Date => "timeDate",
            TimerKind::Duration => "timeDuration",
            TimerKind::Cycle => "timeCycle",
        };
        self.expression(element_id, what, &timer.expression);
    }

    fn message_throw(&mut self, element_id: &'m str, throw: &'m MessageThrowSpec) {
        if let Some(payload) = &throw.payload {
            self.expression(element_id, "messagePayload", payload);
        }
    }

    /// A throw's payload expression (SpiffWorkflow's `payloadExpression` of its signal, error
    /// or escalation).
    fn payload(&mut self, element_id: &'m str, payload: &'m Option<Expression>) {
        if let Some(payload) = payload {
            self.expression(element_id, "payloadExpression", payload);
        }
    }

    fn throw(&mut self, element_id: &'m str, throw: &'m Throw) {
        match throw {
            Throw::Message(throw) => self.message_throw(element_id, throw),
            Throw::Signal(signal) => self.payload(element_id, &signal.payload),
            Throw::Escalation(escalation) => self.payload(element_id, &escalation.payload),
        }
    }

    fn trigger(&mut self, element_id: &'m str, trigger: &'m BoundaryTrigger) {
        match trigger {
            BoundaryTrigger::Message(catch) => self.message_catch(element_id, catch),
            BoundaryTrigger::Timer(timer) => self.timer(element_id, timer),
            BoundaryTrigger::Conditional(condition) => {
                self.expression(element_id, "condition", condition)
            }
            BoundaryTrigger::Multiple(set) => {
                for trigger in &set.triggers {
                    self.trigger(element_id, trigger);
                }
            }
            BoundaryTrigger::Error(_)
            | BoundaryTrigger::Signal(_)
            | BoundaryTrigger::Escalation(_)
            | BoundaryTrigger::Cancel => {}
        }
    }

    fn element(&mut self, element: &'m ElementSpec) {
        let id = element.id.as_str();
        if let Some(script) = &element.pre_script {
            self.script(id, "preScript", script);
        }
        if let Some(script) = &element.post_script {
            self.script(id, "postScript", script);
        }
        if let Some(condition) = element
            .standard_loop
            .as_ref()
            .and_then(|l| l.condition.as_ref())
        {
            self.expression(id, "loopCondition", condition);
        }
        if let Some(multi) = &element.multi_instance {
            if let MultiItems::Cardinality(cardinality) = &multi.items {
                self.expression(id, "loopCardinality", cardinality);
            }
            if let Some(condition) = &multi.completion_condition {
                self.expression(id, "completionCondition", condition);
            }
        }
        match &element.kind {
            ElementKind::ScriptTask {
                script: Some(script),
            } => self.script(id, "script", script),
            ElementKind::ServiceTask(service) => {
                for parameter in &service.parameters {
                    if let Some(value) = &parameter.value {
                        self.expression(id, format!("parameter '{}'", parameter.id), value);
                    }
                }
            }
            ElementKind::MessageThrow(throw) | ElementKind::EndEvent(EndKind::Message(throw)) => {
                self.message_throw(id, throw)
            }
            ElementKind::MultipleThrow(throws)
            | ElementKind::EndEvent(EndKind::Multiple(throws)) => {
                for throw in throws {
                    self.throw(id, throw);
                }
            }
            ElementKind::SignalThrow(signal) | ElementKind::EndEvent(EndKind::Signal(signal)) => {
                self.payload(id, &signal.payload)
            }
            ElementKind::EscalationThrow(escalation)
            | ElementKind::EndEvent(EndKind::Escalation(escalation)) => {
                self.payload(id, &escalation.payload)
            }
            ElementKind::EndEvent(EndKind::Error(error)) => self.payload(id, &error.payload),
            ElementKind::MultipleCatch(set) | ElementKind::MultipleStart(set) => {
                for trigger in &set.triggers {
                    self.trigger(id, trigger);
                }
            }
            ElementKind::MessageCatch(catch)
            | ElementKind::StartEvent {
                message: Some(catch),
            } => self.message_catch(id, catch),
            ElementKind::Boundary(BoundarySpec { trigger, .. })
            | ElementKind::EventSubProcessStart { trigger, .. } => self.trigger(id, trigger),
            ElementKind::TimerCatch(timer) | ElementKind::TimerStart(timer) => {
                self.timer(id, timer)
            }
            ElementKind::ConditionalCatch(condition) => self.expression(id, "condition", condition),
            _ => {}
        }
    }
}

impl<'m> Collector<'m> {
    fn process(&mut self, process: &'m ProcessSpec) {
        for element in process.elements.values() {
            self.element(element);
        }
        for flow in process.flows.values() {
            if let Some(condition) = &flow.condition {
                self.expression(&flow.id, "condition", condition);
            }
        }
    }

    fn retrievals(
        &mut self,
        property: &'m str,
        retrieval: impl Iterator<Item = (&'m String, &'m Expression)>,
    ) {
        for (message, e) in retrieval {
            let what = format!("retrieval expression for message '{message}'");
            self.expression(property, what, e);
        }
    }
}

impl ModelSpec {
    /// Every expression and script, process by process, then the correlation properties'
    /// retrieval expressions (which belong to no file in particular: their file is "").
    pub fn python_sources(&self) -> Vec<PythonSource<'_>> {
        let mut found = Vec::new();
        for process in self.processes.values() {
            let mut collector = Collector {
                file: &process.file,
                found: Vec::new(),
            };
            collector.process(process);
            found.append(&mut collector.found);
        }
        let mut collector = Collector {
            file: "",
            found: Vec::new(),
        };
        for property in &self.correlation_properties {
            collector.retrievals(&property.id, property.retrieval.iter());
        }
        found.append(&mut collector.found);
        found
    }
}

impl Definitions {
    /// Every expression and script of one file (retrieval expressions named by message id):
    /// what an upload of this file must have CPython check.
    pub fn python_sources(&self) -> Vec<PythonSource<'_>> {
        let mut collector = Collector {
            file: &self.file,
            found: Vec::new(),
        };
        for process in &self.processes {
            collector.process(process);
        }
        for property in &self.correlation_properties {
            let retrieval = property.retrieval.iter().map(|(message, e)| (message, e));
            collector.retrievals(&property.id, retrieval);
        }
        let payloads = (self.signals.iter().map(|s| (&s.id, &s.payload)))
            .chain(self.errors.iter().map(|e| (&e.id, &e.payload)))
            .chain(self.escalations.iter().map(|e| (&e.id, &e.payload)));
        for (id, payload) in payloads {
            collector.payload(id, payload);
        }
        collector.found
    }
}
