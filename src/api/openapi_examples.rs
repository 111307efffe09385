//! Every error response of the OpenAPI document gets its own example: the problem answered
//! for the first error code its description names, with that response's status. The example is
//! derived from the text that documents the codes, so it cannot show a status or a code the
//! operation does not have (without this, every error of every operation showed the `Problem`
//! schema's one 404 example).

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
                let example = problem_example(status, &code, explanation.as_deref());
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
    match code {
        "message_not_accepted" => {
            example["reason"] = json!("no_receiver");
            example["message_instance_id"] = json!(17);
        }
        "invalid_process_model" => {
            example["file_name"] = json!("order.bpmn");
            example["element_id"] = json!("ship");
            example["reason"] =
                json!("a sequence flow names 'nowhere', which is no element of this process");
        }
        "not_authorized" => example["required_scope"] = json!("models:write"),
        _ => {}
    }
    example
}

/// What the service says for the common codes; for the others, what the document says.
fn detail_of(code: &str, explanation: Option<&str>) -> String {
    let known = match code {
        "invalid_token" => "The bearer token is missing, malformed or not signed by a trusted key.",
        "token_expired" => "The bearer token has expired.",
        "not_authorized" => "This action needs the scope `models:write`, which the token does not grant.",
        "database_unavailable" => "The database cannot be reached; nothing was done. Try again after Retry-After seconds.",
        "payload_too_large" => "The request body is larger than this endpoint accepts.",
        "request_timeout" => "The request body did not arrive in time.",
        "unsupported_media_type" => "The request body must be application/json.",
        "invalid_json" => "The body is not valid JSON: expected value at line 1 column 1.",
        "invalid_query" => "per_page must be from 1 to 500, got 0",
        "message_not_accepted" => "no process instance waits for message 'payment received' and no process model starts with it",
        "invalid_process_model" => "order.bpmn: element ship: a sequence flow names 'nowhere', which is no element of this process",
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
    fn an_error_response_gets_an_example_with_its_own_status_and_code() {
        let mut doc = json!({"paths": {"/x": {"get": {"responses": {
            "200": {"description": "OK"},
            "409": {"description": "`ambiguous_decision`: several models define it",
                    "content": {"application/problem+json": {"schema": {}}}}
        }}}}});
        add_error_examples(&mut doc);
        let example = &doc["paths"]["/x"]["get"]["responses"]["409"]["content"][PROBLEM]["example"];
        assert_eq!(example["status"], 409);
        assert_eq!(example["title"], "Conflict");
        assert_eq!(example["error_code"], "ambiguous_decision");
        assert_eq!(example["detail"], "Several models define it.");
        assert_eq!(example["detail"], example["message"]);
        assert!(doc["paths"]["/x"]["get"]["responses"]["200"]
            .get("content")
            .is_none());
    }
}
