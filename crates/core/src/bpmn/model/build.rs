//! `build_model`: the phases that turn the files of one process model into a `ModelSpec`.
use super::processes::{resolve_processes, Processes};
use super::shared::{merge_correlation_keys, merge_correlation_properties, SharedDefinitions};
use crate::bpmn::*;

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
    // other files (.json form schemas) are kept with the model, not run
    let (dmn_files, bpmn_files): (Vec<_>, Vec<_>) = files
        .iter()
        .filter(|(name, _)| name.ends_with(".dmn") || name.ends_with(".bpmn"))
        .cloned()
        .partition(|(name, _)| name.ends_with(".dmn"));
    let decisions = decisions_of(&dmn_files)?;
    let definitions = parse_in_name_order(&bpmn_files)?;
    let shared = SharedDefinitions::merge(&definitions)?;
    let correlation_properties = merge_correlation_properties(&definitions, &shared.messages)?;
    let correlation_keys = merge_correlation_keys(&definitions);
    let mut processes = resolve_processes(&definitions, &shared)?;
    super::calls::inline_call_activities(&mut processes, &Default::default())?;
    let message_starts = message_starts(&processes)?;
    let timer_starts = triggered_starts(&processes, |kind| {
        matches!(kind, ElementKind::TimerStart(_))
    });
    let signal_starts = triggered_starts(&processes, |kind| {
        matches!(kind, ElementKind::SignalStart(_))
    });
    let data_stores = data_stores_of(&definitions, &processes)?;
    let first_file = &definitions[0].file;
    let primary_process_id = primary_process(primary_process_id, &processes, first_file)?;
    let mut spec = ModelSpec {
        processes: processes.by_id,
        primary_process_id,
        messages: shared.messages,
        errors: shared.errors,
        signals: shared.signals,
        escalations: shared.escalations,
        correlation_properties,
        correlation_keys,
        message_starts,
        timer_starts,
        signal_starts,
        files: definitions.iter().map(|d| d.file.clone()).collect(),
        decisions,
        data_stores,
        needs_python: false,
        uses_secrets: false,
        uses_initiator: false,
        uses_task_lookup: false,
        calls_elsewhere: false,
        unavailable_callees: Default::default(),
        warnings: definitions
            .iter()
            .flat_map(|d| d.warnings.iter().cloned())
            .collect(),
    };
    let sources = spec.python_sources();
    let needs_python = sources.iter().any(|s| s.needs_python);
    let calls = |function: &str| sources.iter().any(|s| s.source.contains(function));
    let (uses_secrets, uses_initiator) = (calls("get_secret"), calls("get_process_initiator_user"));
    let uses_task_lookup =
        calls("get_last_user_completing_task") || calls("get_url_for_task_with_bpmn_identifier");
    drop(sources);
    spec.needs_python = needs_python;
    spec.uses_secrets = uses_secrets;
    spec.uses_initiator = uses_initiator;
    spec.uses_task_lookup = uses_task_lookup;
    spec.calls_elsewhere = spec.has_unresolved_calls();
    Ok(spec)
}

/// The decisions of the model's `.dmn` files; a decision id is defined once in a model.
fn decisions_of(
    files: &[(String, String)],
) -> Result<BTreeMap<String, std::sync::Arc<crate::dmn::Decision>>, ModelError> {
    let mut decisions = BTreeMap::new();
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    for (name, xml) in sorted {
        for decision in crate::dmn::parse_dmn_file(name, xml)? {
            if let Some(other) = decisions.get(&decision.id) {
                let other: &std::sync::Arc<crate::dmn::Decision> = other;
                return Err(ModelError::new(
                    name,
                    Some(&decision.id),
                    format!("the decision id is also defined in {}", other.file),
                ));
            }
            decisions.insert(decision.id.clone(), std::sync::Arc::new(decision));
        }
    }
    Ok(decisions)
}

/// The data stores the model's tasks use. A store is declared once per id (a second
/// declaration in another file must agree on the kind); every store a task names is declared;
/// a typeahead store is only written (SpiffArena's cannot be read).
fn data_stores_of(
    definitions: &[Definitions],
    processes: &Processes,
) -> Result<BTreeMap<String, DataStoreUse>, ModelError> {
    let mut declared: BTreeMap<String, (DataStoreKind, &str)> = BTreeMap::new();
    for file in definitions {
        for (id, kind) in &file.data_stores {
            match declared.get(id) {
                Some((other, other_file)) if other != kind => {
                    return Err(ModelError::new(
                        &file.file,
                        Some(id),
                        format!(
                            "the data store is a {} here and a {} in {other_file}",
                            kind.class_name(),
                            other.class_name()
                        ),
                    ))
                }
                Some(_) => {}
                None => {
                    declared.insert(id.clone(), (*kind, &file.file));
                }
            }
        }
    }
    let mut used: BTreeMap<String, DataStoreUse> = BTreeMap::new();
    for process_id in &processes.order {
        let process = &processes.by_id[process_id];
        for element in process.elements.values() {
            let reads = element.store_reads.iter().map(|s| (s, true));
            for (store, read) in reads.chain(element.store_writes.iter().map(|s| (s, false))) {
                let Some((kind, _)) = declared.get(store) else {
                    return Err(ModelError::new(
                        &process.file,
                        Some(&element.id),
                        format!("the data store reference names '{store}', which no bpmn:dataStore of the model declares"),
                    ));
                };
                if read && *kind == DataStoreKind::Typeahead {
                    return Err(ModelError::new(
                        &process.file,
                        Some(&element.id),
                        format!("it reads the data store '{store}', a TypeaheadDataStore, which can only be written"),
                    ));
                }
                let kind = *kind;
                used.entry(store.clone())
                    .or_insert(DataStoreUse {
                        kind,
                        written: false,
                    })
                    .written |= !read;
            }
        }
    }
    Ok(used)
}

/// Name order makes the result independent of the order the files were uploaded in.
fn parse_in_name_order(files: &[(String, String)]) -> Result<Vec<Definitions>, ModelError> {
    if files.is_empty() {
        return Err(ModelError::new(
            "",
            None,
            "a process model needs at least one .bpmn file (upload it before the model's .dmn files)",
        ));
    }
    let mut sorted: Vec<&(String, String)> = files.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));
    sorted
        .into_iter()
        .map(|(name, xml)| parse_file(name, xml))
        .collect()
}

/// A message name starts at most one process: an incoming message must say unambiguously
/// what to start.
fn message_starts(processes: &Processes) -> Result<Vec<MessageStart>, ModelError> {
    let mut starts: Vec<MessageStart> = vec![];
    for process_id in &processes.order {
        let process = &processes.by_id[process_id];
        for start_event_id in &process.start_events {
            let start = &process.elements[start_event_id];
            if !matches!(
                start.kind,
                ElementKind::StartEvent { .. } | ElementKind::MultipleStart(_)
            ) {
                continue;
            }
            for catch in start.message_catches() {
                if let Some(first) = starts.iter().find(|s| s.message_name == catch.message_name) {
                    return Err(ModelError::new(
                    &process.file,
                    Some(start_event_id),
                    format!(
                        "message '{}' already starts process '{}' (start event '{}'); one start event per message name",
                        catch.message_name, first.process_id, first.start_event_id
                    ),
                ));
                }
                starts.push(MessageStart {
                    message_name: catch.message_name.clone(),
                    process_id: process_id.clone(),
                    start_event_id: start_event_id.clone(),
                });
            }
        }
    }
    Ok(starts)
}

/// The timer or signal start events of every process, in process order.
fn triggered_starts(
    processes: &Processes,
    wanted: fn(&ElementKind) -> bool,
) -> Vec<TriggeredStart> {
    let mut starts = vec![];
    for process_id in &processes.order {
        let process = &processes.by_id[process_id];
        for start_event_id in &process.start_events {
            let kind = &process.elements[start_event_id].kind;
            if !wanted(kind) {
                continue;
            }
            starts.push(TriggeredStart {
                process_id: process_id.clone(),
                start_event_id: start_event_id.clone(),
                signal_name: match kind {
                    ElementKind::SignalStart(signal) => Some(signal.signal_name.clone()),
                    _ => None,
                },
                timer: match kind {
                    ElementKind::TimerStart(timer) => Some(timer.clone()),
                    _ => None,
                },
            });
        }
    }
    starts
}

/// The one asked for; else the first process (file order) that a plain start can start,
/// i.e. with a none start event; else the first process.
fn primary_process(
    asked: Option<&str>,
    processes: &Processes,
    first_file: &str,
) -> Result<String, ModelError> {
    if let Some(id) = asked {
        if !processes.by_id.contains_key(id) {
            return Err(ModelError::new(
                first_file,
                None,
                format!("primary process '{id}' is not defined in the model's files"),
            ));
        }
        return Ok(id.to_string());
    }
    let has_none_start = |process: &ProcessSpec| {
        process.start_events.iter().any(|s| {
            matches!(
                process.elements[s].kind,
                ElementKind::StartEvent { message: None }
            )
        })
    };
    let first_startable = processes
        .order
        .iter()
        .find(|id| has_none_start(&processes.by_id[id.as_str()]));
    Ok(first_startable.unwrap_or(&processes.order[0]).clone())
}
