//! Decisions as the API shows and tries them: found by id (in a named model, or the one model
//! that defines it), and evaluated on given data without running a process.

use super::{Error, ModelCache, Result};
use crate::dmn::{Decision, Evaluation};
use crate::expr::{Context, ErrorKind, Map};
use crate::ids::ModelId;
use crate::services::ErrorCode;
use crate::store;
use anyhow::anyhow;
use serde_json::json;
use sqlx::PgPool;
use std::sync::Arc;

/// The longest decision id accepted in a path (bytes).
pub const MAX_DECISION_ID_BYTES: usize = 255;

/// A decision, and the model whose current version defines it.
pub struct FoundDecision {
    pub process_model_identifier: ModelId,
    pub decision: Arc<Decision>,
}

/// `decision_id` in the current version of `model`, or, without a model, of the one model
/// that defines it (several: 409 `ambiguous_decision`, naming them).
pub async fn find(
    pool: &PgPool,
    cache: &ModelCache,
    decision_id: &str,
    model: Option<&ModelId>,
) -> Result<FoundDecision> {
    super::input::check_text(
        decision_id,
        ErrorCode::InvalidDecisionId,
        "the decision id",
        MAX_DECISION_ID_BYTES,
    )?;
    let mut conn = pool.acquire().await?;
    let (identifier, version) = match model {
        Some(identifier) => {
            let row = store::models::find(&mut conn, identifier)
                .await?
                .ok_or_else(|| super::models::model_not_found(identifier))?;
            (row.identifier, row.version_sha)
        }
        None => {
            let mut definers = store::models::decision_definers(&mut conn, decision_id).await?;
            if definers.len() > 1 {
                let models: Vec<&str> = definers.iter().map(|(m, _)| m.as_str()).collect();
                return Err(Error::refused(
                    ErrorCode::AmbiguousDecision,
                    format!(
                        "decision '{decision_id}' is defined by several process models ({}): name one with process_model_identifier",
                        models.join(", ")
                    ),
                )
                .with_extra(json!({ "process_model_identifiers": models })));
            }
            definers.pop().ok_or_else(|| not_found(decision_id, None))?
        }
    };
    let spec = cache.spec(&mut conn, &identifier, &version).await?;
    let decision = spec
        .decisions
        .get(decision_id)
        .cloned()
        .ok_or_else(|| not_found(decision_id, Some(identifier.as_str())))?;
    Ok(FoundDecision {
        process_model_identifier: identifier,
        decision,
    })
}

fn not_found(decision_id: &str, model: Option<&str>) -> Error {
    let where_ = match model {
        Some(model) => format!("process model '{model}' defines no decision '{decision_id}'"),
        None => format!("no process model defines a decision '{decision_id}'"),
    };
    Error::refused(ErrorCode::DecisionNotFound, where_)
}

/// Evaluates the decision on `data` as a business rule task would (on a blocking thread: the
/// script host may take its time limit). A rule that fails is 400 `decision_failed`.
pub async fn evaluate(
    pool: &PgPool,
    cache: &ModelCache,
    decision_id: &str,
    model: Option<&ModelId>,
    data: Map,
) -> Result<(FoundDecision, Evaluation)> {
    let found = find(pool, cache, decision_id, model).await?;
    let decision = found.decision.clone();
    let scripts = cache.scripts();
    let now = cache.clock().now();
    let evaluated = tokio::task::spawn_blocking(move || {
        let cx = Context::new(now, scripts);
        crate::dmn::evaluate(&decision, &data, &cx)
    })
    .await
    .map_err(|e| Error::Internal(anyhow!("the decision's thread failed: {e}")))?;
    match evaluated {
        Ok(evaluation) => Ok((found, evaluation)),
        Err(error) if error.kind == ErrorKind::Unavailable => {
            Err(Error::ScriptsUnavailable(error.message))
        }
        Err(error) => Err(Error::refused(
            ErrorCode::DecisionFailed,
            format!("decision '{decision_id}': {}", error.message),
        )),
    }
}
