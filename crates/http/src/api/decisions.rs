//! DMN decisions: show a decision table, and try it on data without running a process.

use super::auth::Principal;
use super::display;
use super::error::{ApiError, Problem};
use crate::dmn::{Decision, Evaluation};
use crate::services::ErrorCode;
use crate::services::{self, decisions::FoundDecision, input};
use crate::App;
use actix_web::{web, HttpResponse};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};

/// A decision table, as its `.dmn` file defines it.
#[derive(Serialize, ToSchema)]
pub struct DecisionAnswer {
    decision_id: String,
    name: Option<String>,
    /// The model whose current version defines it.
    process_model_identifier: String,
    file_name: String,
    /// `UNIQUE`, `FIRST`, `PRIORITY`, `ANY`, `COLLECT`, `RULE ORDER` or `OUTPUT ORDER`.
    hit_policy: String,
    /// `COLLECT` only: `SUM`, `MIN`, `MAX` or `COUNT`.
    aggregation: Option<String>,
    inputs: Vec<DecisionInput>,
    outputs: Vec<DecisionOutput>,
    rules: Vec<DecisionRule>,
}

#[derive(Serialize, ToSchema)]
pub struct DecisionInput {
    id: String,
    label: Option<String>,
    /// The Python expression the rules test.
    expression: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct DecisionOutput {
    id: String,
    label: Option<String>,
    /// Where the value goes in the task data (dots nest dictionaries).
    name: String,
    /// `outputValues`, highest priority first (PRIORITY and OUTPUT ORDER rank by them).
    output_values: Vec<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct DecisionRule {
    id: String,
    /// 1-based row number.
    row: usize,
    description: Option<String>,
    /// One per input, as written; `null` matches anything (empty or `-`).
    input_entries: Vec<Option<String>>,
    /// One per output: the Python expression of its value (`null` writes `""`).
    output_entries: Vec<Option<String>>,
}

/// What to evaluate a decision with.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EvaluateRequest {
    /// The task data the decision sees (its variables).
    #[serde(default)]
    #[schema(value_type = Object)]
    data: Option<Map<String, Value>>,
    /// The model whose decision to use (`group/model`); needed only when several define it.
    #[schema(
        max_length = 255,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}([/:][A-Za-z0-9][A-Za-z0-9._-]{0,99})*$"
    )]
    process_model_identifier: Option<String>,
}

/// A rule of the table.
#[derive(Serialize, ToSchema)]
pub struct RuleRef {
    id: String,
    row: usize,
    description: Option<String>,
}

/// What the decision gave.
#[derive(Serialize, ToSchema)]
pub struct EvaluationAnswer {
    decision_id: String,
    process_model_identifier: String,
    hit_policy: String,
    /// Every rule that matched, in table order (under UNIQUE, only the first: evaluation
    /// stops there, as in SpiffWorkflow).
    matched_rules: Vec<RuleRef>,
    /// The rules whose outputs the result holds, in the order the hit policy gives.
    selected_rules: Vec<RuleRef>,
    /// What a business rule task would merge into its task data.
    #[schema(value_type = Object)]
    result: Value,
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DecisionQuery {
    /// The model whose decision to show (`group/model` or `group:model`); needed only when
    /// several models define the id.
    #[param(
        max_length = 255,
        pattern = "^[A-Za-z0-9][A-Za-z0-9._-]{0,99}([/:][A-Za-z0-9][A-Za-z0-9._-]{0,99})*$"
    )]
    process_model_identifier: Option<String>,
}

/// Show a decision table: its hit policy, inputs, outputs and rules.
#[utoipa::path(
    get,
    path = "/v1.0/decisions/{decision_id}",
    tag = "decisions",
    params(
        ("decision_id" = String, Path, max_length = 255, description = "The decision's id in its `.dmn` file"),
        DecisionQuery,
    ),
    responses(
        (status = 200, description = "The decision", body = DecisionAnswer),
        (status = 400, description = "`invalid_decision_id`, `invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`decision_not_found`, `process_model_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`ambiguous_decision`: several models define it (with `process_model_identifiers`); name one", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable` (with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn show_decision(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
    query: web::Query<DecisionQuery>,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    let model = model_of(query.process_model_identifier.as_deref())?;
    let found =
        services::decisions::find(&state.pool, &state.models, &path, model.as_ref()).await?;
    Ok(HttpResponse::Ok().json(decision_answer(&found)))
}

/// Evaluate a decision on data, as a business rule task would, without running a process:
/// the rules that matched and the result (a dry run, to test a table).
#[utoipa::path(
    post,
    path = "/v1.0/decisions/{decision_id}/evaluate",
    tag = "decisions",
    params(("decision_id" = String, Path, max_length = 255, description = "The decision's id in its `.dmn` file")),
    request_body(content = Option<EvaluateRequest>, description = "The data the decision sees (no body: no data)", content_type = "application/json"),
    responses(
        (status = 200, description = "What the decision gave", body = EvaluationAnswer),
        (status = 400, description = "`decision_failed` (a rule's Python failed, or the hit policy's rule was broken: the row and the error), `invalid_payload`, `invalid_json`, `invalid_decision_id`, `invalid_process_model_identifier`", body = Problem, content_type = "application/problem+json"),
        (status = 401, description = "`invalid_token` or `token_expired`", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "`not_authorized`: needs `models:read` or `models:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "`decision_not_found`, `process_model_not_found`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "`ambiguous_decision`: several models define it (with `process_model_identifiers`); name one", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "`database_unavailable`, or `scripts_unavailable` when every script worker stayed busy (both with `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = []))
)]
pub async fn evaluate_decision(
    principal: Principal,
    state: web::Data<App>,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, ApiError> {
    principal.require_any(&["models:read", "models:write"])?;
    // no body: no data
    let body: &[u8] = if body.iter().all(u8::is_ascii_whitespace) {
        b"{}"
    } else {
        &body
    };
    let request: EvaluateRequest = serde_json::from_slice(body).map_err(|e| {
        ApiError::refused(
            ErrorCode::InvalidJson,
            format!("the body is not an evaluation request: {e}"),
        )
    })?;
    let data = request.data.unwrap_or_default();
    input::check_json(
        &Value::Object(data.clone()),
        ErrorCode::InvalidPayload,
        "the data",
    )?;
    let model = model_of(request.process_model_identifier.as_deref())?;
    let (found, evaluation) =
        services::decisions::evaluate(&state.pool, &state.models, &path, model.as_ref(), data)
            .await?;
    Ok(HttpResponse::Ok().json(evaluation_answer(&found, evaluation)))
}

fn model_of(identifier: Option<&str>) -> Result<Option<services::models::ModelId>, ApiError> {
    Ok(match identifier {
        Some(identifier) => Some(services::models::identifier_from_url(identifier)?),
        None => None,
    })
}

fn decision_answer(found: &FoundDecision) -> DecisionAnswer {
    let decision: &Decision = &found.decision;
    let table = &decision.table;
    DecisionAnswer {
        decision_id: decision.id.clone(),
        name: decision.name.clone(),
        process_model_identifier: found.process_model_identifier.to_string(),
        file_name: decision.file.clone(),
        hit_policy: table.hit_policy.as_dmn().to_string(),
        aggregation: table.aggregation.map(|a| a.as_dmn().to_string()),
        inputs: table
            .inputs
            .iter()
            .map(|input| DecisionInput {
                id: input.id.clone(),
                label: input.label.clone(),
                expression: input.expression.clone(),
            })
            .collect(),
        outputs: table
            .outputs
            .iter()
            .map(|output| DecisionOutput {
                id: output.id.clone(),
                label: output.label.clone(),
                name: output.name.clone(),
                output_values: output.priorities.clone(),
            })
            .collect(),
        rules: table
            .rules
            .iter()
            .map(|rule| DecisionRule {
                id: rule.id.clone(),
                row: rule.row,
                description: rule.description.clone(),
                input_entries: rule.input_entries.clone(),
                output_entries: rule
                    .outputs
                    .iter()
                    .map(|o| o.as_ref().map(|e| e.source().to_string()))
                    .collect(),
            })
            .collect(),
    }
}

fn evaluation_answer(found: &FoundDecision, evaluation: Evaluation) -> EvaluationAnswer {
    let table = &found.decision.table;
    let rules = |indices: &[usize]| -> Vec<RuleRef> {
        indices
            .iter()
            .map(|&i| {
                let rule = &table.rules[i];
                RuleRef {
                    id: rule.id.clone(),
                    row: rule.row,
                    description: rule.description.clone(),
                }
            })
            .collect()
    };
    let mut result = Value::Object(evaluation.result);
    display::untag(&mut result);
    EvaluationAnswer {
        decision_id: found.decision.id.clone(),
        process_model_identifier: found.process_model_identifier.to_string(),
        hit_policy: table.hit_policy.as_dmn().to_string(),
        matched_rules: rules(&evaluation.matched),
        selected_rules: rules(&evaluation.selected),
        result,
    }
}
