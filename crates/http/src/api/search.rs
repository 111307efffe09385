//! The search filters lists take in their query strings.

use super::error::ApiError;
use crate::services::{input, ErrorCode};
use serde_json::Value;

/// The longest `correlation` filter, and the longest property name in it.
const MAX_CORRELATION_BYTES: usize = 1000;
const MAX_PROPERTY_BYTES: usize = 255;
/// The longest JSON object a filter takes (`data`, `payload`): what the OpenAPI document says.
const MAX_JSON_FILTER_BYTES: usize = 4000;

/// `property=value` (`order_id=A-17`): split at the first `=`; 400 `invalid_query` without
/// one or with an empty property.
pub fn correlation(text: &str) -> Result<(&str, &str), ApiError> {
    let refused = |why: &str| {
        ApiError::refused(
            ErrorCode::InvalidQuery,
            format!("correlation must be `property=value` (`order_id=A-17`): {why}"),
        )
        .with_extra("parameter", "correlation")
    };
    input::check_text(
        text,
        ErrorCode::InvalidQuery,
        "correlation",
        MAX_CORRELATION_BYTES,
    )?;
    let Some((property, value)) = text.split_once('=') else {
        return Err(refused("there is no `=`"));
    };
    let property = property.trim();
    if property.is_empty() {
        return Err(refused("the property is empty"));
    }
    input::check_text(
        property,
        ErrorCode::InvalidQuery,
        "correlation",
        MAX_PROPERTY_BYTES,
    )?;
    input::check_text(
        value,
        ErrorCode::InvalidQuery,
        "correlation",
        input::MAX_NAME_BYTES * 4,
    )?;
    Ok((property, value.trim()))
}

/// A JSON object given as a query parameter (`data={"customer_id":"C-7"}`): 400
/// `invalid_query` when it is not one, or nests too deep.
pub fn json_object(text: &str, parameter: &'static str) -> Result<Value, ApiError> {
    let refused = |why: String| {
        ApiError::refused(
            ErrorCode::InvalidQuery,
            format!("{parameter} must be a JSON object: {why}"),
        )
        .with_extra("parameter", parameter)
    };
    if text.len() > MAX_JSON_FILTER_BYTES {
        return Err(refused(format!(
            "it is {} bytes long; the limit is {MAX_JSON_FILTER_BYTES}",
            text.len()
        )));
    }
    let value: Value = serde_json::from_str(text).map_err(|e| refused(e.to_string()))?;
    if !value.is_object() {
        return Err(refused("it is not an object".into()));
    }
    input::check_json(&value, ErrorCode::InvalidQuery, parameter)?;
    Ok(value)
}
