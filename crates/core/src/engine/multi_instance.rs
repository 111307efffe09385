//! Multi-instance activities, with SpiffWorkflow's semantics: the activity's task starts one
//! instance per item (all at once, or one after the other when sequential). Each instance is
//! a task of the same element inside the activity's task (its scope), and works on its own
//! copy of the task data with its item in the input item. When an instance completes, its
//! output item goes into the output collection (at its key for a map or an in-place update,
//! else in item order), or, without an output, its data is merged back. A completion condition
//! that holds on a completed instance's data ends the activity, cancelling the others.
//! Boundary events belong to the activity's task, not to its instances.

use super::interpreter::{Interpreter, ModelFailure, Outcome};
use super::{Map, MultiItem, MultiRun, TaskState};
use crate::bpmn::{ElementSpec, MultiInstance, MultiItems};
use serde_json::Value;
use uuid::Uuid;

/// More instances than this for one activity is the model's error (checked before any is
/// made: a cardinality is a number, and could ask for billions). A step runs at most
/// `MAX_EXECUTIONS_PER_STEP` elements, so a parallel activity's instances must fit in it.
const MAX_INSTANCES: usize = 5_000;

impl<'m> Interpreter<'m> {
    /// The activity's task started (its pre-script has run unless the scripts run on the
    /// instances): the items are read, the output prepared, and the first instances started.
    pub fn start_multi_instance(
        &mut self,
        guid: Uuid,
        element: &'m ElementSpec,
        multi: &'m MultiInstance,
        scope: Option<Uuid>,
    ) -> Outcome {
        let items = self.items_of(element, multi)?;
        self.prepare_output(element, multi)?;
        self.set_state(guid, TaskState::Started);
        self.start_boundaries(guid, element, scope)?;
        let run = MultiRun {
            items,
            started: Default::default(),
            results: Default::default(),
            completed: 0,
        };
        let count = run.items.len();
        self.state.internal.multi.insert(guid, run);
        if count == 0 {
            return self.finish_multi_instance(guid);
        }
        let first_batch = if multi.sequential { 1 } else { count };
        for index in 0..first_batch {
            // an instance that completed at once may have ended the activity
            if !self.state.internal.multi.contains_key(&guid) {
                break;
            }
            self.start_instance(guid, element, multi, index)?;
        }
        Ok(())
    }

    /// The items: `0..cardinality`, or the input collection's (list index or map key, value).
    fn items_of(
        &self,
        element: &ElementSpec,
        multi: &MultiInstance,
    ) -> Result<Vec<MultiItem>, ModelFailure> {
        let fail = |message: String| ModelFailure::new(&element.id, message);
        for name in [&multi.input_item, &multi.output_item]
            .into_iter()
            .flatten()
        {
            if self.data().contains_key(name) {
                return Err(fail(format!(
                    "the multi-instance item '{name}' already exists in the task data"
                )));
            }
        }
        let indexed = |index: usize, value: Value| MultiItem {
            key: Value::from(index),
            value,
        };
        let items: Vec<MultiItem> = match &multi.items {
            MultiItems::Cardinality(expression) => {
                let value = self.eval(element, expression, "loopCardinality")?;
                let count = value.as_i64().ok_or_else(|| {
                    fail(format!(
                        "the loopCardinality evaluated to {value}, not a whole number"
                    ))
                })?;
                let count = usize::try_from(count).unwrap_or(0);
                if count > MAX_INSTANCES {
                    return Err(fail(format!(
                        "the loopCardinality {count} is more than {MAX_INSTANCES} instances"
                    )));
                }
                (0..count).map(|i| indexed(i, Value::from(i))).collect()
            }
            MultiItems::Collection(input) => match self.data().get(input) {
                None => {
                    return Err(fail(format!(
                        "the multi-instance input '{input}' is missing from the task data"
                    )))
                }
                Some(Value::Array(list)) => list
                    .iter()
                    .enumerate()
                    .map(|(i, value)| indexed(i, value.clone()))
                    .collect(),
                Some(Value::Object(map)) => map
                    .iter()
                    .map(|(key, value)| MultiItem {
                        key: Value::String(key.clone()),
                        value: value.clone(),
                    })
                    .collect(),
                // Python iterates a string's characters
                Some(Value::String(text)) => text
                    .chars()
                    .enumerate()
                    .map(|(i, c)| indexed(i, Value::String(c.to_string())))
                    .collect(),
                Some(other) => {
                    return Err(fail(format!(
                        "the multi-instance input '{input}' must be a list or a map, not {other}"
                    )))
                }
            },
        };
        if items.len() > MAX_INSTANCES {
            return Err(fail(format!(
                "{} items are more than {MAX_INSTANCES} instances",
                items.len()
            )));
        }
        Ok(items)
    }

    /// The output starts as an empty collection of the input's kind (a list for a
    /// cardinality); one that exists must be a map, or an empty list, or the input itself.
    fn prepare_output(&mut self, element: &ElementSpec, multi: &MultiInstance) -> Outcome {
        let Some(output) = &multi.output else {
            return Ok(());
        };
        let input = match &multi.items {
            MultiItems::Collection(input) => Some(input),
            MultiItems::Cardinality(_) => None,
        };
        let in_place = input == Some(output);
        let fail = |message: &str| Err(ModelFailure::new(&element.id, message));
        match self.data().get(output) {
            None => {
                let empty = match input.and_then(|input| self.data().get(input)) {
                    Some(Value::Object(_)) => Value::Object(Map::new()),
                    _ => Value::Array(vec![]),
                };
                self.data_mut().insert(output.clone(), empty);
                Ok(())
            }
            Some(Value::Object(_)) => Ok(()),
            Some(Value::Array(list)) if list.is_empty() || in_place => Ok(()),
            Some(Value::Array(_)) if input.is_some() => fail(
                "If the input is not being updated in place, the output must be empty or it must be a map (dict)",
            ),
            Some(Value::Array(_)) => fail(
                "If loop cardinality is specified, the output must be a map (dict) or empty sequence (list)",
            ),
            Some(_) => fail("Only a mutable map (dict) or sequence (list) can be used for output"),
        }
    }

    /// The instance for item `index`: a task of the element inside the activity's task, on a
    /// copy of the data with the item in the input item.
    fn start_instance(
        &mut self,
        activity: Uuid,
        element: &'m ElementSpec,
        multi: &'m MultiInstance,
        index: usize,
    ) -> Outcome {
        self.count_execution(&element.id)?;
        let item = self.state.internal.multi[&activity].items[index]
            .value
            .clone();
        let mut data = self
            .state
            .data_of(self.state.data_owner(Some(activity)))
            .clone();
        if let Some(name) = &multi.input_item {
            data.insert(name.clone(), item);
        }
        let guid = self.new_task(element, Some(activity), TaskState::Ready);
        self.state.internal.local_data.insert(guid, data);
        if let Some(run) = self.state.internal.multi.get_mut(&activity) {
            run.started.insert(guid, index);
        }
        self.current = Some(guid);
        if multi.scripts_on_instances {
            self.pre_script(element)?;
        }
        self.execute(guid, element, Some(activity))
    }

    /// The task is an instance of a multi-instance activity (its scope is the activity's task).
    pub fn is_instance(&self, guid: Uuid) -> bool {
        self.task(guid)
            .scope
            .is_some_and(|scope| self.state.internal.multi.contains_key(&scope))
    }

    /// The task is a multi-instance activity's own task (not one of its instances).
    pub fn is_multi_activity(&self, guid: Uuid) -> bool {
        self.state.internal.multi.contains_key(&guid)
    }

    /// Whether the element's pre- and post-scripts run for this task: on a multi-instance
    /// activity either on its task or on its instances, elsewhere always.
    pub fn runs_scripts_of(&self, guid: Uuid, element: &ElementSpec) -> bool {
        match &element.multi_instance {
            Some(multi) => multi.scripts_on_instances == self.is_instance(guid),
            None => true,
        }
    }

    /// An instance completed: its result is collected, and the activity completes, goes on
    /// with the next item, or waits for the other instances.
    pub fn instance_completed(&mut self, instance: Uuid) -> Outcome {
        let activity = self.task(instance).scope.expect("an instance has a scope");
        let element = self.element_of(activity);
        let multi = element
            .multi_instance
            .as_ref()
            .expect("an instance's element is multi-instance");
        self.collect(activity, instance, element, multi)?;
        let condition_met = match &multi.completion_condition {
            Some(condition) => {
                self.current = Some(instance);
                self.eval_bool(element, condition, "the completionCondition")?
            }
            None => false,
        };
        self.state.internal.local_data.remove(&instance);
        let run = &self.state.internal.multi[&activity];
        let (started, completed, total) = (run.started.len(), run.completed, run.items.len());
        if condition_met {
            let others: Vec<Uuid> = run.started.keys().copied().collect();
            for other in others {
                self.cancel_task(other);
            }
            return self.finish_multi_instance(activity);
        }
        if multi.sequential && started < total {
            return self.start_instance(activity, element, multi, started);
        }
        if completed == total {
            return self.finish_multi_instance(activity);
        }
        Ok(())
    }

    /// The instance's output item goes into the output collection; without an output (or
    /// output item) its data is merged into the data around the activity.
    fn collect(
        &mut self,
        activity: Uuid,
        instance: Uuid,
        element: &ElementSpec,
        multi: &MultiInstance,
    ) -> Outcome {
        let local = self
            .state
            .internal
            .local_data
            .get(&instance)
            .cloned()
            .unwrap_or_default();
        let run = &self.state.internal.multi[&activity];
        let index = run.started[&instance];
        let key = run.items[index].key.clone();
        let owner = self.state.data_owner(Some(activity));
        let (Some(output), Some(output_item)) = (&multi.output, &multi.output_item) else {
            deep_merge(self.state.data_of_mut(owner), local);
            self.count_completed(activity, None, index);
            return Ok(());
        };
        let Some(result) = local.get(output_item).cloned() else {
            return Err(ModelFailure::new(
                &element.id,
                format!("the multi-instance output item '{output_item}' is missing from the instance's task data"),
            ));
        };
        self.count_completed(activity, Some(result.clone()), index);
        let in_place = matches!(&multi.items, MultiItems::Collection(input) if input == output);
        let results = self.state.internal.multi[&activity].results.clone();
        let data = self.state.data_of_mut(owner);
        match data.get_mut(output) {
            Some(Value::Object(map)) => {
                let key = match key {
                    Value::String(key) => key,
                    other => other.to_string(),
                };
                map.insert(key, result);
            }
            Some(Value::Array(list)) if in_place && index < list.len() => list[index] = result,
            _ => {
                // in item order, whatever order the instances complete in
                data.insert(
                    output.clone(),
                    Value::Array(results.into_values().collect()),
                );
            }
        }
        Ok(())
    }

    fn count_completed(&mut self, activity: Uuid, result: Option<Value>, index: usize) {
        if let Some(run) = self.state.internal.multi.get_mut(&activity) {
            run.completed += 1;
            if let Some(result) = result {
                run.results.insert(index, result);
            }
        }
    }

    /// Every instance is done (or the completion condition held): the activity's task
    /// completes (its post-script runs unless the scripts ran on the instances).
    fn finish_multi_instance(&mut self, activity: Uuid) -> Outcome {
        self.state.internal.multi.remove(&activity);
        self.current = Some(activity);
        self.complete_activity(activity)
    }

    /// The activity's task was cancelled: its instances go with it.
    pub fn cancel_instances(&mut self, activity: Uuid) {
        let Some(run) = self.state.internal.multi.remove(&activity) else {
            return;
        };
        for instance in run.started.keys() {
            self.state.internal.local_data.remove(instance);
        }
        // the instances are no longer recognisable as such: cancel them as plain tasks
        let live: Vec<Uuid> = run
            .started
            .keys()
            .copied()
            .filter(|guid| self.is_live(*guid))
            .collect();
        for instance in live {
            self.cancel_task(instance);
        }
    }
}

/// SpiffWorkflow's merge of an instance's data into the data around it: maps merge key by
/// key, lists element by element (then cut to the instance's length), anything else is
/// replaced.
pub(super) fn deep_merge(into: &mut Map, from: Map) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => deep_merge(mine, theirs),
            (Some(Value::Array(mine)), Value::Array(theirs)) => merge_lists(mine, theirs),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

fn merge_lists(into: &mut Vec<Value>, from: Vec<Value>) {
    let length = from.len();
    for (index, value) in from.into_iter().enumerate() {
        match (into.get_mut(index), value) {
            (Some(Value::Object(mine)), Value::Object(theirs)) => deep_merge(mine, theirs),
            (Some(slot), value) => *slot = value,
            (None, value) => into.push(value),
        }
    }
    into.truncate(length);
}
