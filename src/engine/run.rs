//! The interpreter: tokens over the flat element map of one process.
use super::*;
use crate::bpmn::{
    BoundaryTrigger, ElementKind, ElementSpec, EndKind, MessageCatchSpec, MessageThrowSpec,
    ProcessSpec,
};
use crate::expr::{Expression, Script};
use serde_json::json;
use std::collections::{HashMap, HashSet, VecDeque};

/// A failure inside the model: the instance goes to `Error`.
#[derive(Debug)]
struct Fail {
    element_id: String,
    message: String,
    error_code: Option<String>,
}

impl Fail {
    fn new(element_id: &str, message: impl Into<String>) -> Self {
        Fail {
            element_id: element_id.to_string(),
            message: message.into(),
            error_code: None,
        }
    }
}

/// A token about to enter an element.
struct Token {
    element: String,
    scope: Option<Uuid>,
    flow: Option<String>,
}

struct Run<'m> {
    model: &'m ModelSpec,
    process: &'m ProcessSpec,
    st: InstanceState,
    effects: Vec<Effect>,
    queue: VecDeque<Token>,
    executions: usize,
    /// The task being executed (marked ERROR when the step fails).
    current: Option<Uuid>,
    /// Live tasks when the step began (their waits are cancelled if the step fails).
    before: HashSet<Uuid>,
    /// guid -> index in st.tasks (tasks are only appended during a run).
    index: HashMap<Uuid, usize>,
}

fn join_key(scope: Option<Uuid>, gateway: &str) -> String {
    match scope {
        Some(s) => format!("{s}/{gateway}"),
        None => format!("-/{gateway}"),
    }
}

fn task_waits_for_message(el: &ElementSpec, t: &Task) -> bool {
    t.state == TaskState::Waiting
        && el.message_catch().is_some()
        && !matches!(el.kind, ElementKind::StartEvent { .. })
}

fn task_has_service_call(el: &ElementSpec, t: &Task) -> bool {
    matches!(el.kind, ElementKind::ServiceTask(_))
        && matches!(t.state, TaskState::Ready | TaskState::Started)
}

impl<'m> Run<'m> {
    fn new(model: &'m ModelSpec, process: &'m ProcessSpec, mut st: InstanceState) -> Self {
        for t in &mut st.tasks {
            t.dirty = false;
        }
        let before = st.live_tasks().map(|t| t.guid).collect();
        let index = st
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.guid, i))
            .collect();
        Run {
            model,
            process,
            st,
            effects: vec![],
            queue: VecDeque::new(),
            executions: 0,
            current: None,
            before,
            index,
        }
    }

    // ----- tasks -----

    fn el(&self, id: &str) -> &'m ElementSpec {
        &self.process.elements[id]
    }

    fn task(&self, guid: Uuid) -> &Task {
        &self.st.tasks[self.index[&guid]]
    }

    fn task_mut(&mut self, guid: Uuid) -> &mut Task {
        let i = self.index[&guid];
        let t = &mut self.st.tasks[i];
        t.dirty = true;
        t
    }

    fn task_el(&self, guid: Uuid) -> &'m ElementSpec {
        let id = self.task(guid).element_id.clone();
        self.el(&id)
    }

    fn is_live(&self, guid: Uuid) -> bool {
        self.index
            .get(&guid)
            .is_some_and(|i| self.st.tasks[*i].state.is_live())
    }

    fn new_task(&mut self, el: &ElementSpec, scope: Option<Uuid>, state: TaskState) -> Uuid {
        let guid = Uuid::new_v4();
        self.index.insert(guid, self.st.tasks.len());
        self.st.tasks.push(Task {
            guid,
            element_id: el.id.clone(),
            element_type: el.element_type.clone(),
            name: el.name.clone(),
            state,
            scope,
            data: None,
            dirty: true,
        });
        guid
    }

    fn set_state(&mut self, guid: Uuid, state: TaskState) {
        self.task_mut(guid).state = state;
    }

    // ----- expressions -----

    fn tick(&mut self, element_id: &str) -> Result<(), Fail> {
        self.executions += 1;
        if self.executions > MAX_EXECUTIONS_PER_STEP {
            return Err(Fail::new(
                element_id,
                format!(
                    "more than {MAX_EXECUTIONS_PER_STEP} element executions in one step: the model loops without reaching a wait state"
                ),
            ));
        }
        Ok(())
    }

    fn run_script(&mut self, el: &ElementSpec, script: &Script, what: &str) -> Result<(), Fail> {
        script
            .run(&mut self.st.data)
            .map_err(|e| Fail::new(&el.id, format!("{e} (in the {what})")))
    }

    fn eval(&self, el: &ElementSpec, e: &Expression, what: &str) -> Result<Value, Fail> {
        e.eval(&self.st.data)
            .map_err(|err| Fail::new(&el.id, format!("{err} (in the {what})")))
    }

    fn pre_script(&mut self, el: &'m ElementSpec) -> Result<(), Fail> {
        if let Some(s) = &el.pre_script {
            self.run_script(el, s, "preScript")?;
        }
        Ok(())
    }

    fn post_script(&mut self, el: &'m ElementSpec) -> Result<(), Fail> {
        if let Some(s) = &el.post_script {
            self.run_script(el, s, "postScript")?;
        }
        Ok(())
    }

    // ----- token flow -----

    /// Choose the outgoing flows and queue tokens for their targets.
    fn leave(&mut self, el: &'m ElementSpec, scope: Option<Uuid>) -> Result<(), Fail> {
        if el.outgoing.is_empty() {
            return Ok(()); // implicit end
        }
        let flows: Vec<&str> = match &el.kind {
            ElementKind::ParallelGateway => el.outgoing.iter().map(String::as_str).collect(),
            ElementKind::ExclusiveGateway => {
                let mut chosen = None;
                for f in &el.outgoing {
                    if Some(f) == el.default_flow.as_ref() {
                        continue;
                    }
                    if self.condition(el, f)? {
                        chosen = Some(f.as_str());
                        break;
                    }
                }
                match chosen.or(el.default_flow.as_deref()) {
                    Some(f) => vec![f],
                    None => {
                        return Err(Fail::new(
                            &el.id,
                            "no outgoing flow matched: every condition is false and the gateway has no default flow",
                        ))
                    }
                }
            }
            _ => {
                let mut taken = vec![];
                for f in &el.outgoing {
                    if Some(f) == el.default_flow.as_ref() {
                        continue;
                    }
                    if self.condition(el, f)? {
                        taken.push(f.as_str());
                    }
                }
                if taken.is_empty() {
                    match el.default_flow.as_deref() {
                        Some(d) => taken.push(d),
                        None => {
                            return Err(Fail::new(
                                &el.id,
                                "no outgoing flow matched: every condition is false and there is no default flow",
                            ))
                        }
                    }
                }
                taken
            }
        };
        for f in flows {
            let flow = &self.process.flows[f];
            self.queue.push_back(Token {
                element: flow.target.clone(),
                scope,
                flow: Some(f.to_string()),
            });
        }
        Ok(())
    }

    /// A flow's condition (true when it has none).
    fn condition(&self, el: &ElementSpec, flow_id: &str) -> Result<bool, Fail> {
        match &self.process.flows[flow_id].condition {
            None => Ok(true),
            Some(c) => c.eval_bool(&self.st.data).map_err(|e| {
                Fail::new(
                    &el.id,
                    format!("{e} (in the condition of sequence flow {flow_id})"),
                )
            }),
        }
    }

    /// Run tokens until every path waits or ends; complete subprocesses whose paths all ended.
    fn drain(&mut self) -> Result<(), Fail> {
        loop {
            while let Some(tok) = self.queue.pop_front() {
                self.execute(tok)?;
            }
            let done = self
                .st
                .tasks
                .iter()
                .find(|t| {
                    t.state == TaskState::Started
                        && t.element_type == "subProcess"
                        && !self
                            .st
                            .tasks
                            .iter()
                            .any(|c| c.scope == Some(t.guid) && c.state.is_live())
                })
                .map(|t| t.guid);
            match done {
                Some(sub) => {
                    self.clear_joins(sub);
                    self.current = Some(sub);
                    self.complete_activity(sub)?;
                }
                None => return Ok(()),
            }
        }
    }

    fn clear_joins(&mut self, scope: Uuid) {
        let prefix = format!("{scope}/");
        self.st
            .internal
            .joins
            .retain(|k, _| !k.starts_with(&prefix));
    }

    fn execute(&mut self, tok: Token) -> Result<(), Fail> {
        if let Some(s) = tok.scope {
            if !self.is_live(s) {
                return Ok(()); // its subprocess was cancelled
            }
        }
        self.current = None;
        self.tick(&tok.element)?;
        let el = self.el(&tok.element);
        let scope = tok.scope;

        if matches!(el.kind, ElementKind::ParallelGateway) && el.incoming.len() > 1 {
            let key = join_key(scope, &el.id);
            let arrived = self.st.internal.joins.entry(key.clone()).or_default();
            if let Some(f) = &tok.flow {
                *arrived.entry(f.clone()).or_insert(0) += 1;
            }
            if !el
                .incoming
                .iter()
                .all(|f| arrived.get(f).is_some_and(|n| *n > 0))
            {
                return Ok(()); // wait for the other branches
            }
            for f in &el.incoming {
                if let Some(n) = arrived.get_mut(f) {
                    *n -= 1;
                }
            }
            arrived.retain(|_, n| *n > 0);
            if arrived.is_empty() {
                self.st.internal.joins.remove(&key);
            }
        }

        let guid = self.new_task(el, scope, TaskState::Ready);
        self.current = Some(guid);
        self.pre_script(el)?;
        match &el.kind {
            ElementKind::StartEvent { .. }
            | ElementKind::PassThrough
            | ElementKind::Boundary(_)
            | ElementKind::ExclusiveGateway
            | ElementKind::ParallelGateway => self.complete_activity(guid)?,
            ElementKind::ScriptTask { script } => {
                if let Some(s) = script {
                    self.run_script(el, s, "script")?;
                }
                self.complete_activity(guid)?;
            }
            ElementKind::MessageThrow(m) => {
                self.send(guid, el, m)?;
                self.complete_activity(guid)?;
            }
            ElementKind::EndEvent(kind) => {
                if let EndKind::Message(m) = kind {
                    self.send(guid, el, m)?;
                }
                self.post_script(el)?;
                self.set_state(guid, TaskState::Completed);
                match kind {
                    EndKind::Terminate => self.terminate(scope),
                    EndKind::Error(e) => {
                        let message = e
                            .error_name
                            .clone()
                            .or_else(|| e.error_code.clone())
                            .unwrap_or_else(|| "error end event".to_string());
                        self.throw_error(None, scope, &el.id, e.error_code.clone(), message)?;
                    }
                    EndKind::None | EndKind::Message(_) => {}
                }
            }
            ElementKind::UserTask | ElementKind::ManualTask => {
                self.set_state(guid, TaskState::Waiting);
                self.start_boundaries(guid, el, scope)?;
            }
            ElementKind::ServiceTask(_) => {
                self.effects.push(Effect::CallService { task_guid: guid });
                self.start_boundaries(guid, el, scope)?;
            }
            ElementKind::MessageCatch(m) => {
                let expected = self.expected(el, m)?;
                self.set_state(guid, TaskState::Waiting);
                self.effects.push(Effect::WaitForMessage {
                    task_guid: guid,
                    name: m.message_name.clone(),
                    expected,
                });
                self.start_boundaries(guid, el, scope)?;
            }
            ElementKind::SubProcess { start_events } => {
                self.set_state(guid, TaskState::Started);
                self.start_boundaries(guid, el, scope)?;
                for s in start_events {
                    self.queue.push_back(Token {
                        element: s.clone(),
                        scope: Some(guid),
                        flow: None,
                    });
                }
            }
        }
        Ok(())
    }

    /// Post-script, COMPLETED, cancel the boundary events, follow the outgoing flows.
    fn complete_activity(&mut self, guid: Uuid) -> Result<(), Fail> {
        let el = self.task_el(guid);
        let scope = self.task(guid).scope;
        self.post_script(el)?;
        self.set_state(guid, TaskState::Completed);
        self.cancel_boundaries(guid);
        self.leave(el, scope)
    }

    // ----- messages -----

    fn send(
        &mut self,
        guid: Uuid,
        el: &'m ElementSpec,
        m: &'m MessageThrowSpec,
    ) -> Result<(), Fail> {
        let payload = match &m.payload {
            Some(e) => self.eval(el, e, "messagePayload")?,
            None => Value::Object(self.st.data.clone()),
        };
        let correlation_values = self.model.correlation_values(&m.message_name, &payload);
        for (k, v) in &correlation_values {
            self.st.correlations.insert(k.clone(), v.clone());
        }
        self.effects.push(Effect::SendMessage {
            task_guid: guid,
            name: m.message_name.clone(),
            payload,
            correlation_values,
        });
        Ok(())
    }

    /// Established values restricted to the properties the message can carry, overridden by
    /// `processVariableCorrelation` expressions over data (a null result constrains nothing).
    fn expected(
        &self,
        el: &ElementSpec,
        m: &MessageCatchSpec,
    ) -> Result<BTreeMap<String, Value>, Fail> {
        let props = self.model.correlation_properties_for(&m.message_name);
        let mut out = BTreeMap::new();
        for p in &props {
            if let Some(v) = self.st.correlations.get(*p) {
                out.insert(p.to_string(), v.clone());
            }
        }
        for (pid, e) in &m.process_correlations {
            if !props.contains(&pid.as_str()) {
                continue;
            }
            let v = self.eval(el, e, &format!("processVariableCorrelation for '{pid}'"))?;
            if !v.is_null() {
                out.insert(pid.clone(), v);
            }
        }
        Ok(out)
    }

    fn receive(&mut self, m: &MessageCatchSpec, name: &str, payload: &Value) {
        if let Some(var) = &m.variable {
            self.st.data.insert(var.clone(), payload.clone());
        }
        for (k, v) in self.model.correlation_values(name, payload) {
            self.st.correlations.insert(k, v);
        }
    }

    // ----- boundaries, cancellation, errors -----

    /// The attached task starts waiting: message and signal boundaries wait with it.
    fn start_boundaries(
        &mut self,
        attached: Uuid,
        el: &'m ElementSpec,
        scope: Option<Uuid>,
    ) -> Result<(), Fail> {
        for b_id in &el.boundaries {
            let b = self.el(b_id);
            let ElementKind::Boundary(spec) = &b.kind else {
                continue;
            };
            match &spec.trigger {
                BoundaryTrigger::Error(_) => {}
                BoundaryTrigger::Message(m) => {
                    let expected = self.expected(b, m)?;
                    let g = self.new_task(b, scope, TaskState::Waiting);
                    self.st.internal.boundaries.insert(g, attached);
                    self.effects.push(Effect::WaitForMessage {
                        task_guid: g,
                        name: m.message_name.clone(),
                        expected,
                    });
                }
                BoundaryTrigger::Signal { .. } => {
                    let g = self.new_task(b, scope, TaskState::Waiting);
                    self.st.internal.boundaries.insert(g, attached);
                }
            }
        }
        Ok(())
    }

    fn cancel_boundaries(&mut self, attached: Uuid) {
        let bs: Vec<Uuid> = self
            .st
            .internal
            .boundaries
            .iter()
            .filter(|(_, a)| **a == attached)
            .map(|(b, _)| *b)
            .collect();
        for b in bs {
            self.st.internal.boundaries.remove(&b);
            self.cancel_task(b);
        }
    }

    /// Cancel a live task: its wait effects, its boundaries, and (subprocess) everything inside.
    fn cancel_task(&mut self, guid: Uuid) {
        if !self.is_live(guid) {
            return;
        }
        let el = self.task_el(guid);
        let t = self.task(guid);
        let (msg, svc) = (task_waits_for_message(el, t), task_has_service_call(el, t));
        if msg {
            self.effects
                .push(Effect::CancelMessageWait { task_guid: guid });
        }
        if svc {
            self.effects
                .push(Effect::CancelServiceCall { task_guid: guid });
        }
        self.set_state(guid, TaskState::Cancelled);
        if matches!(el.kind, ElementKind::SubProcess { .. }) {
            self.cancel_children(guid);
        }
        self.cancel_boundaries(guid);
        self.st.internal.boundaries.remove(&guid);
    }

    fn cancel_children(&mut self, scope: Uuid) {
        let children: Vec<Uuid> = self
            .st
            .tasks
            .iter()
            .filter(|t| t.scope == Some(scope) && t.state.is_live())
            .map(|t| t.guid)
            .collect();
        for c in children {
            self.cancel_task(c);
        }
        self.queue.retain(|t| t.scope != Some(scope));
        self.clear_joins(scope);
    }

    /// Terminate end event: everything in the scope ends (the whole instance at top level).
    fn terminate(&mut self, scope: Option<Uuid>) {
        match scope {
            Some(s) => self.cancel_children(s),
            None => {
                let live: Vec<Uuid> = self.st.live_tasks().map(|t| t.guid).collect();
                for g in live {
                    self.cancel_task(g);
                }
                self.queue.clear();
                self.st.internal.joins.clear();
            }
        }
    }

    /// Offer an error to the error boundaries of `origin` (a failed task), then of the
    /// enclosing subprocesses from `scope` outwards. Uncaught: instance error.
    fn throw_error(
        &mut self,
        origin: Option<Uuid>,
        scope: Option<Uuid>,
        element_id: &str,
        code: Option<String>,
        message: String,
    ) -> Result<(), Fail> {
        let value = json!({"error_code": code, "message": message});
        let mut candidate = origin.or(scope);
        while let Some(t) = candidate {
            let el = self.task_el(t);
            if let Some(b) = self.find_error_boundary(el, code.as_deref()) {
                if Some(t) == origin {
                    // the failed task is already ERROR; its other boundaries go.
                    self.cancel_boundaries(t);
                } else {
                    self.cancel_task(t);
                }
                let attached_scope = self.task(t).scope;
                return self.fire_error_boundary(b, attached_scope, value);
            }
            candidate = self.task(t).scope;
        }
        Err(Fail {
            element_id: element_id.to_string(),
            message,
            error_code: code,
        })
    }

    fn find_error_boundary(
        &self,
        el: &'m ElementSpec,
        code: Option<&str>,
    ) -> Option<&'m ElementSpec> {
        let errors = el
            .boundaries
            .iter()
            .map(|b| self.el(b))
            .filter_map(|b| match &b.kind {
                ElementKind::Boundary(s) => match &s.trigger {
                    BoundaryTrigger::Error(e) => Some((b, e)),
                    _ => None,
                },
                _ => None,
            });
        let errors: Vec<_> = errors.collect();
        if let Some(code) = code {
            if let Some((b, _)) = errors
                .iter()
                .find(|(_, e)| e.error_code.as_deref() == Some(code))
            {
                return Some(b);
            }
        }
        errors
            .iter()
            .find(|(_, e)| e.error_code.is_none())
            .map(|(b, _)| *b)
    }

    fn fire_error_boundary(
        &mut self,
        b: &'m ElementSpec,
        scope: Option<Uuid>,
        value: Value,
    ) -> Result<(), Fail> {
        self.tick(&b.id)?;
        let var = match &b.kind {
            ElementKind::Boundary(s) => match &s.trigger {
                BoundaryTrigger::Error(e) => e.variable.clone(),
                _ => None,
            },
            _ => None,
        };
        let g = self.new_task(b, scope, TaskState::Ready);
        self.current = Some(g);
        self.task_mut(g).data = Some(value.clone());
        self.st
            .data
            .insert(var.unwrap_or_else(|| "error".to_string()), value);
        self.pre_script(b)?;
        self.complete_activity(g)
    }

    /// A waiting message/signal boundary fires: the attached task is interrupted.
    fn fire_boundary(&mut self, g: Uuid) -> Result<(), Fail> {
        let b = self.task_el(g);
        self.tick(&b.id)?;
        if let Some(attached) = self.st.internal.boundaries.remove(&g) {
            self.cancel_task(attached);
        }
        self.current = Some(g);
        self.pre_script(b)?;
        self.complete_activity(g)
    }

    // ----- step outcome -----

    fn finish(mut self, result: Result<(), Fail>) -> (InstanceState, Vec<Effect>) {
        match result {
            Ok(()) => {
                let live: Vec<&Task> = self.st.live_tasks().collect();
                self.st.status = if live.is_empty() {
                    self.st.internal = EngineInternal::default();
                    InstanceStatus::Complete
                } else if live.iter().any(|t| {
                    t.state == TaskState::Waiting
                        && self.process.elements[&t.element_id].is_human_task()
                }) {
                    InstanceStatus::UserInputRequired
                } else {
                    InstanceStatus::Waiting
                };
                (self.st, self.effects)
            }
            Err(f) => {
                let err_value = json!({"error_code": f.error_code, "message": f.message});
                if let Some(c) = self.current {
                    let t = self.task_mut(c);
                    t.state = TaskState::Error;
                    t.data = Some(err_value);
                }
                // Keep only what undoes waits the shell already knows about.
                let mut effects: Vec<Effect> = self
                    .effects
                    .drain(..)
                    .filter(|e| match e {
                        Effect::CancelMessageWait { task_guid }
                        | Effect::CancelServiceCall { task_guid } => {
                            self.before.contains(task_guid)
                        }
                        _ => false,
                    })
                    .collect();
                for t in self
                    .st
                    .tasks
                    .iter()
                    .filter(|t| self.before.contains(&t.guid))
                {
                    let el = &self.process.elements[&t.element_id];
                    if task_waits_for_message(el, t) {
                        effects.push(Effect::CancelMessageWait { task_guid: t.guid });
                    }
                    if task_has_service_call(el, t) {
                        effects.push(Effect::CancelServiceCall { task_guid: t.guid });
                    }
                }
                self.st.status = InstanceStatus::Error;
                self.st.error = Some(InstanceError {
                    element_id: f.element_id,
                    message: f.message,
                    error_code: f.error_code,
                });
                (self.st, effects)
            }
        }
    }

    // ----- entry points -----

    fn fire_start(
        &mut self,
        start_id: &str,
        message: Option<&(String, Value)>,
    ) -> Result<(), Fail> {
        self.tick(start_id)?;
        let el = self.el(start_id);
        let guid = self.new_task(el, None, TaskState::Ready);
        self.current = Some(guid);
        self.pre_script(el)?;
        if let (ElementKind::StartEvent { message: Some(m) }, Some((name, payload))) =
            (&el.kind, message)
        {
            self.receive(m, name, payload);
        }
        self.complete_activity(guid)
    }
}

fn process<'m>(model: &'m ModelSpec, id: &str) -> Result<&'m ProcessSpec, EngineError> {
    model
        .process(id)
        .ok_or_else(|| EngineError::Invalid(format!("process '{id}' is not in this model")))
}

/// Create an instance and run it until every path waits or ends.
pub fn start(
    model: &ModelSpec,
    process_id: &str,
    event: Event,
) -> Result<(InstanceState, Vec<Effect>), EngineError> {
    let Event::Start {
        start_event_id,
        data,
        message,
    } = event
    else {
        return Err(EngineError::Invalid("start needs an Event::Start".into()));
    };
    let proc_ = process(model, process_id)?;
    let is_message_start = |id: &String| {
        matches!(
            proc_.elements[id].kind,
            ElementKind::StartEvent { message: Some(_) }
        )
    };
    let starts: Vec<String> = match (&start_event_id, &message) {
        (Some(id), _) => {
            if !proc_.start_events.contains(id) {
                return Err(EngineError::Invalid(format!(
                    "'{id}' is not a start event of process '{process_id}'"
                )));
            }
            if let (ElementKind::StartEvent { message: Some(m) }, Some((name, _))) =
                (&proc_.elements[id].kind, &message)
            {
                if &m.message_name != name {
                    return Err(EngineError::Invalid(format!(
                        "start event '{id}' waits for message '{}', not '{name}'",
                        m.message_name
                    )));
                }
            }
            vec![id.clone()]
        }
        (None, Some((name, _))) => {
            let found = proc_.start_events.iter().find(|s| {
                matches!(&proc_.elements[*s].kind, ElementKind::StartEvent { message: Some(m) } if &m.message_name == name)
            });
            match found {
                Some(s) => vec![s.clone()],
                None => {
                    return Err(EngineError::Invalid(format!(
                        "process '{process_id}' has no start event for message '{name}'"
                    )))
                }
            }
        }
        (None, None) => {
            let v: Vec<String> = proc_
                .start_events
                .iter()
                .filter(|s| !is_message_start(s))
                .cloned()
                .collect();
            if v.is_empty() {
                return Err(EngineError::Invalid(format!(
                    "process '{process_id}' only starts with a message"
                )));
            }
            v
        }
    };
    let st = InstanceState {
        process_id: process_id.to_string(),
        status: InstanceStatus::Running,
        data,
        correlations: BTreeMap::new(),
        error: None,
        tasks: vec![],
        internal: EngineInternal::default(),
    };
    let mut run = Run::new(model, proc_, st);
    let res = (|| {
        for s in &starts {
            run.fire_start(s, message.as_ref())?;
        }
        run.drain()
    })();
    Ok(run.finish(res))
}

/// Apply one event to a running instance. Err only for caller mistakes (state untouched).
pub fn step(
    model: &ModelSpec,
    state: &mut InstanceState,
    event: Event,
) -> Result<Vec<Effect>, EngineError> {
    if state.status.is_final() || state.status == InstanceStatus::Suspended {
        return Err(EngineError::Invalid(format!(
            "the process instance is {}",
            state.status.as_str()
        )));
    }
    let proc_ = process(model, &state.process_id)?;
    let target = |guid: Uuid| -> Result<(&Task, &ElementSpec), EngineError> {
        let t = state
            .task(guid)
            .ok_or(EngineError::UnknownTask { task_guid: guid })?;
        let el = proc_.elements.get(&t.element_id).ok_or_else(|| {
            EngineError::Invalid(format!(
                "task {guid}: element '{}' is not in the model",
                t.element_id
            ))
        })?;
        Ok((t, el))
    };
    let not_waiting = |guid| Err(EngineError::NotWaiting { task_guid: guid });

    // Validate before touching anything.
    match &event {
        Event::Start { .. } => {
            return Err(EngineError::Invalid(
                "the instance is already started".into(),
            ))
        }
        Event::CompleteTask { task_guid, .. } => {
            let (t, el) = target(*task_guid)?;
            if !(el.is_human_task() && t.state == TaskState::Waiting) {
                return not_waiting(*task_guid);
            }
        }
        Event::MessageDelivered {
            task_guid, name, ..
        } => {
            let (t, el) = target(*task_guid)?;
            if !task_waits_for_message(el, t) {
                return not_waiting(*task_guid);
            }
            let m = el.message_catch().expect("checked");
            if &m.message_name != name {
                return Err(EngineError::Invalid(format!(
                    "task {task_guid} waits for message '{}', not '{name}'",
                    m.message_name
                )));
            }
        }
        Event::ServiceAccepted { task_guid } => {
            let (t, el) = target(*task_guid)?;
            if !task_has_service_call(el, t) {
                return not_waiting(*task_guid);
            }
            if t.state == TaskState::Started {
                return Ok(vec![]);
            }
        }
        Event::ServiceSucceeded { task_guid, .. } | Event::ServiceFailed { task_guid, .. } => {
            let (t, el) = target(*task_guid)?;
            if !task_has_service_call(el, t) {
                return not_waiting(*task_guid);
            }
        }
        Event::Signal { .. } => {}
    }

    let mut run = Run::new(model, proc_, state.clone());
    let res = (|| match event {
        Event::Start { .. } => unreachable!(),
        Event::CompleteTask { task_guid, data } => {
            run.current = Some(task_guid);
            for (k, v) in data {
                run.st.data.insert(k, v);
            }
            run.complete_activity(task_guid)?;
            run.drain()
        }
        Event::MessageDelivered {
            task_guid,
            name,
            payload,
        } => {
            run.current = Some(task_guid);
            let el = run.task_el(task_guid);
            let m = el.message_catch().expect("validated");
            run.receive(m, &name, &payload);
            if matches!(el.kind, ElementKind::Boundary(_)) {
                run.fire_boundary(task_guid)?;
            } else {
                run.complete_activity(task_guid)?;
            }
            run.drain()
        }
        Event::ServiceAccepted { task_guid } => {
            run.set_state(task_guid, TaskState::Started);
            Ok(())
        }
        Event::ServiceSucceeded { task_guid, result } => {
            run.current = Some(task_guid);
            if let ElementKind::ServiceTask(s) = &run.task_el(task_guid).kind {
                if let Some(v) = &s.result_variable {
                    run.st.data.insert(v.clone(), result);
                }
            }
            run.complete_activity(task_guid)?;
            run.drain()
        }
        Event::ServiceFailed {
            task_guid,
            error_code,
            message,
        } => {
            run.current = Some(task_guid);
            let element_id = run.task(task_guid).element_id.clone();
            let t = run.task_mut(task_guid);
            t.state = TaskState::Error;
            t.data = Some(json!({"error_code": error_code, "message": message}));
            let scope = t.scope;
            run.throw_error(
                Some(task_guid),
                scope,
                &element_id,
                Some(error_code),
                message,
            )?;
            run.drain()
        }
        Event::Signal { name } => {
            let waiting: Vec<Uuid> = run
                .st
                .live_tasks()
                .filter(|t| {
                    matches!(&proc_.elements[&t.element_id].kind,
                        ElementKind::Boundary(b) if matches!(&b.trigger,
                            BoundaryTrigger::Signal { signal_name, .. } if *signal_name == name))
                })
                .map(|t| t.guid)
                .collect();
            for g in waiting {
                if run.is_live(g) {
                    run.fire_boundary(g)?;
                }
            }
            run.drain()
        }
    })();
    let (new_state, effects) = run.finish(res);
    *state = new_state;
    Ok(effects)
}

/// For the dispatcher: operator id, evaluated parameters, result variable, retry config.
/// A parameter expression that fails, or a `required="true"` parameter that evaluates to
/// None, is an `InstanceError` naming the parameter (pass it to [`fail`]).
pub fn service_call(
    model: &ModelSpec,
    state: &InstanceState,
    task_guid: Uuid,
) -> Result<ServiceCall, InstanceError> {
    let err = |element_id: &str, message: String| InstanceError {
        element_id: element_id.to_string(),
        message,
        error_code: None,
    };
    let task = state
        .task(task_guid)
        .ok_or_else(|| err("", format!("task {task_guid} does not exist")))?;
    let el = model
        .process(&state.process_id)
        .and_then(|p| p.elements.get(&task.element_id))
        .ok_or_else(|| {
            err(
                &task.element_id,
                "the task's element is not in the model".into(),
            )
        })?;
    let ElementKind::ServiceTask(spec) = &el.kind else {
        return Err(err(&el.id, format!("{} is not a service task", el.id)));
    };
    let mut params = Map::new();
    for p in &spec.parameters {
        let v = match &p.value {
            Some(e) => e
                .eval(&state.data)
                .map_err(|e| err(&el.id, format!("{e} (in parameter '{}')", p.id)))?,
            None => Value::Null,
        };
        if p.required && v.is_null() {
            return Err(err(
                &el.id,
                format!("required parameter '{}' evaluated to None", p.id),
            ));
        }
        params.insert(p.id.clone(), v);
    }
    Ok(ServiceCall {
        operator_id: spec.operator_id.clone(),
        params,
        result_variable: spec.result_variable.clone(),
        retries: spec.retries,
        backoff_base: spec.backoff_base,
    })
}

/// Put the instance in `Error` from outside a step (e.g. `service_call` failed): the task (if
/// given) goes ERROR, and the effects cancel the instance's pending message waits and service
/// calls. No-op (no effects) when the instance is already final.
pub fn fail(
    model: &ModelSpec,
    state: &mut InstanceState,
    task_guid: Option<Uuid>,
    error: InstanceError,
) -> Vec<Effect> {
    if state.status.is_final() {
        return vec![];
    }
    let Some(proc_) = model.process(&state.process_id) else {
        state.status = InstanceStatus::Error;
        state.error = Some(error);
        return vec![];
    };
    let mut run = Run::new(model, proc_, state.clone());
    run.current = task_guid.filter(|g| run.index.contains_key(g));
    let (new_state, effects) = run.finish(Err(Fail {
        element_id: error.element_id,
        message: error.message,
        error_code: error.error_code,
    }));
    *state = new_state;
    effects
}
