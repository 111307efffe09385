//! Every error response of the OpenAPI document gets its own example: the problem answered
//! for the first error code its description names, with that response's status. The example is
//! derived from the text that documents the codes, so it cannot show a status or a code the
//! operation does not have (without this, every error of every operation showed the `Problem`
//! schema's one 404 example). A 403 is the refusal of the scope check the operation's handler
//! makes ([`needs`]), written by that check itself.
//!
//! `tests/api/openapi_examples.rs` provokes these errors and compares each with its example.

use crate::api::auth::Principal;
use crate::api::{api_keys, secrets};
use crate::services::ErrorCode;
use actix_web::http::StatusCode;
use serde_json::{json, Value};

const PROBLEM: &str = "application/problem+json";

/// Adds an example to each `application/problem+json` response of `doc` (a serialised
/// OpenAPI document) that names an error code in its description.
pub fn add_error_examples(doc: &mut Value) {
    let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
        return;
    };
    for item in paths.values_mut().filter_map(Value::as_object_mut) {
        for operation in item.values_mut() {
            let id = operation["operationId"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let Some(responses) = operation
                .get_mut("responses")
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            for (status, response) in responses.iter_mut() {
                let Ok(status) = status.parse::<u16>() else {
                    continue;
                };
                let description = response["description"].as_str().unwrap_or_default();
                let Some((code, explanation)) = first_code(description) else {
                    continue;
                };
                let example = match (status, needs(&id)) {
                    (403, Some(needed)) => refusal(needed),
                    _ => problem_example(status, &code, explanation.as_deref()),
                };
                if let Some(media) = response
                    .get_mut("content")
                    .and_then(|content| content.get_mut(PROBLEM))
                {
                    media["example"] = example;
                }
            }
        }
    }
}

/// What an operation's handler checks before it answers 403, for the names of the examples'
/// world (see [`super::answer_examples`]): the scope it requires, one of several, or (a
/// callback) update rights on the instance or the task's own token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    Scope(&'static str),
    OneOf(&'static [&'static str]),
    Callback,
}

/// What `operation` (an `operationId`) needs; `None` for an operation that never answers 403.
pub fn needs(operation: &str) -> Option<Needs> {
    const READ_MODELS: &[&str] = &["models:read", "models:write"];
    const READ_STORES: &[&str] = &["data-stores:read", "data-stores:write"];
    Some(match operation {
        "send_message" => Needs::Scope("messages:send:order%20placed"),
        "list_messages" | "show_message" => Needs::Scope("instances:read:*"),
        "put_file" | "delete_model" => Needs::Scope("models:write"),
        "list_models" | "show_model" | "get_file" | "service_tasks" | "authentications"
        | "show_decision" | "evaluate_decision" => Needs::OneOf(READ_MODELS),
        "start_instance" => Needs::Scope("instances:create:finance/invoices"),
        "list_instances" | "element_counts" => Needs::Scope("instances:read:finance/invoices"),
        "overview" | "message_chart" => Needs::Scope("instances:read:*"),
        "complete_task" | "suspend" | "resume" | "terminate" | "retry" | "migrate_instance" => {
            Needs::Scope("instances:update:finance/invoices")
        }
        "callback" => Needs::Callback,
        "put_secret" | "list_secrets" | "delete_secret" => Needs::Scope(secrets::SCOPE),
        "create_api_key" | "revoke_api_key" => Needs::Scope(api_keys::WRITE_SCOPE),
        "list_api_keys" => Needs::Scope(api_keys::READ_SCOPE),
        "send_signal" => Needs::Scope("signals:send:quarter%20closed"),
        "list_data_stores" | "show_data_store" => Needs::OneOf(READ_STORES),
        "put_data_store" | "delete_data_store" => Needs::Scope("data-stores:write"),
        _ => return None,
    })
}

/// The 403 a token without any scope gets: written by the check the handlers make.
fn refusal(needed: Needs) -> Value {
    let nobody = Principal {
        subject: "alice".into(),
        scopes: Vec::new(),
    };
    let refused = match needed {
        Needs::Scope(scope) => nobody.require(scope),
        Needs::OneOf(scopes) => nobody.require_any(scopes),
        Needs::Callback => Err(crate::api::error::ApiError::forbidden(
            "A callback needs `instances:update:<model>` for the instance's model, or the \
             task's own token (`callback:<process_instance_id>/<task_guid>`).",
        )),
    };
    refused.map_or_else(|e| e.body(), |()| Value::Null)
}

/// The error codes a response description names: every `` `code` `` of the registry
/// ([`ErrorCode`]; other quoted words are members or values).
pub fn codes_in(description: &str) -> Vec<String> {
    description
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| ErrorCode::parse(word).is_some())
        .map(str::to_string)
        .collect()
}

/// The first code of a description, with what the description says of it: the text in the
/// parentheses or after the colon that follows it.
fn first_code(description: &str) -> Option<(String, Option<String>)> {
    let code = codes_in(description).into_iter().next()?;
    let after = description.split_once(&format!("`{code}`"))?.1;
    let explanation = if let Some(rest) = after.strip_prefix(" (") {
        rest.split_once(')').map(|(inside, _)| inside.to_string())
    } else {
        after
            .strip_prefix(": ")
            .map(|rest| rest.split([';', '\n']).next().unwrap_or(rest).to_string())
    };
    Some((code, explanation.filter(|e| e.len() < 300)))
}

fn problem_example(status: u16, code: &str, explanation: Option<&str>) -> Value {
    let title = StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error");
    let detail = detail_of(code, explanation);
    let mut example = json!({
        "type": "about:blank",
        "title": title,
        "status": status,
        "detail": detail,
        "error_code": code,
        "message": detail,
    });
    // the members the answers with these codes carry
    let says = |member: &str| explanation.is_some_and(|e| e.contains(&format!("`{member}`")));
    match code {
        "message_not_accepted" => {
            example["reason"] = json!("no_receiver");
            example["message_instance_id"] = json!(8415);
        }
        "invalid_process_model" => {
            example["file_name"] = json!("returns.bpmn");
            example["element_id"] = json!("ship");
            example["reason"] = json!("sequence flow target 'nowhere' does not exist");
        }
        "process_model_in_use" => example["live_instances"] = json!(2),
        "ambiguous_decision" => {
            example["process_model_identifiers"] = json!(["finance/archive", "finance/invoices"]);
        }
        "payload_too_large" if says("limit_bytes") => {
            example["limit_bytes"] = json!(1_048_576);
        }
        "invalid_query" if says("allowed") => {
            example["parameter"] = json!("kind");
            example["allowed"] = json!(["json", "json_file", "kkv", "typeahead"]);
        }
        _ => {}
    }
    example
}

/// What the service says for the common codes; for the others, what the document says.
fn detail_of(code: &str, explanation: Option<&str>) -> String {
    let known = match code {
        "invalid_token" => "No credentials: send `Authorization: Bearer <JWT or API key>` or `SpiffWorkflow-Api-Key: <API key>`.",
        "token_expired" => "The bearer token has expired.",
        "database_unavailable" => "The database is unavailable or busy; try again shortly.",
        "identity_provider_unavailable" => "The identity provider's keys could not be fetched; retry shortly.",
        "payload_too_large" if explanation.is_some_and(|e| e.contains("`limit_bytes`")) => {
            "The request body is larger than the limit of 1048576 bytes."
        }
        "payload_too_large" => "payload reached size limit.",
        "request_timeout" => "The request body did not arrive in time.",
        "unsupported_media_type" => "Expected a JSON body with Content-Type: application/json.",
        "invalid_query" if explanation.is_some_and(|e| e.contains("`allowed`")) => {
            "kind must be one of json, json_file, kkv, typeahead; got 'bogus'"
        }
        "invalid_json" => "The body is not valid JSON: expected value at line 1 column 1.",
        "invalid_query" => "per_page must be from 1 to 500, got 0",
        "message_not_accepted" => "no process instance waits for message 'payment received' and no process model starts with it",
        "invalid_process_model" => "returns.bpmn: element ship: sequence flow target 'nowhere' does not exist",
        "process_model_in_use" => "process model 'finance/invoices' has 2 live instance(s) (not complete or terminated): terminate them or let them finish first",
        "ambiguous_decision" => "decision 'discount' is defined by several process models (finance/archive, finance/invoices): name one with process_model_identifier",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    if let Some(thing) = code.strip_suffix("_not_found") {
        return format!("The {} does not exist.", thing.replace('_', " "));
    }
    match explanation {
        Some(explanation) => {
            let mut text = explanation.replace('`', "");
            if let Some(first) = text.get(..1) {
                text.replace_range(..1, &first.to_uppercase());
            }
            format!("{text}.")
        }
        None => format!("The request was refused: {}.", code.replace('_', " ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_code_and_what_the_description_says_of_it() {
        assert_eq!(
            first_code("`decision_failed` (a rule failed), `invalid_json`"),
            Some(("decision_failed".into(), Some("a rule failed".into())))
        );
        assert_eq!(
            first_code("`not_authorized`: needs `models:write`"),
            Some(("not_authorized".into(), Some("needs `models:write`".into())))
        );
        assert_eq!(
            codes_in("`invalid_json`, `models:write`, `element_id`, `not_found`"),
            ["invalid_json", "not_found"]
        );
        assert_eq!(first_code("Deleted"), None);
    }

    #[test]
    fn the_operations_that_answer_403_are_those_that_say_what_they_need() {
        use utoipa::OpenApi;
        let doc = serde_json::to_value(crate::api::ApiDoc::openapi()).unwrap();
        for item in doc["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                let id = operation["operationId"].as_str().unwrap();
                let forbids = operation["responses"].get("403").is_some();
                assert_eq!(forbids, needs(id).is_some(), "{id}");
            }
        }
        let refused = refusal(Needs::OneOf(&["models:read", "models:write"]));
        assert_eq!(refused["status"], 403);
        assert_eq!(refused["error_code"], "not_authorized");
        assert_eq!(
            refused["required_scopes"],
            json!(["models:read", "models:write"])
        );
        assert_eq!(refusal(Needs::Scope("admin"))["required_scope"], "admin");
    }

    #[test]
    fn an_error_response_gets_an_example_with_its_own_status_and_code() {
        let mut doc = json!({"paths": {"/x": {"get": {"responses": {
            "200": {"description": "OK"},
            "409": {"description": "`nothing_to_retry`: its error came from outside a task",
                    "content": {"application/problem+json": {"schema": {}}}}
        }}}}});
        add_error_examples(&mut doc);
        let example = &doc["paths"]["/x"]["get"]["responses"]["409"]["content"][PROBLEM]["example"];
        assert_eq!(example["status"], 409);
        assert_eq!(example["title"], "Conflict");
        assert_eq!(example["error_code"], "nothing_to_retry");
        assert_eq!(example["detail"], "Its error came from outside a task.");
        assert_eq!(example["detail"], example["message"]);
        assert!(doc["paths"]["/x"]["get"]["responses"]["200"]
            .get("content")
            .is_none());
    }
}
