//! Conditional GETs: every JSON answer to a GET carries a strong `ETag` (a hash of its body),
//! and a GET whose `If-None-Match` names the answer's tag gets 304 Not Modified without the
//! body. The console polls its lists and the instance page this way: an unchanged page costs
//! no transfer, and the page knows there is nothing to draw again.

use actix_web::body::{self, BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{HeaderValue, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use actix_web::http::{Method, StatusCode};
use actix_web::middleware::Next;
use actix_web::HttpResponse;
use sha2::{Digest, Sha256};

/// Tags a GET's JSON answer, or answers 304 when the request already holds it.
pub async fn conditional_get(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, actix_web::Error> {
    if req.method() != Method::GET {
        return Ok(next.call(req).await?.map_into_boxed_body());
    }
    let held = req
        .headers()
        .get(IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let response = next.call(req).await?;
    let is_json = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.starts_with("application/json"));
    if response.status() != StatusCode::OK || !is_json {
        return Ok(response.map_into_boxed_body());
    }
    let (request, response) = response.into_parts();
    let (head, answer) = response.into_parts();
    let bytes = body::to_bytes(answer)
        .await
        .map_err(|e| actix_web::error::ErrorInternalServerError(e.into()))?;
    let tag = tag_of(&bytes);
    if held.as_deref().is_some_and(|held| names(held, &tag)) {
        let not_modified = HttpResponse::NotModified()
            .insert_header((ETAG, tag))
            .finish();
        return Ok(ServiceResponse::new(request, not_modified));
    }
    let mut response = head.set_body(BoxBody::new(bytes));
    if let Ok(value) = HeaderValue::from_str(&tag) {
        response.headers_mut().insert(ETAG, value);
    }
    Ok(ServiceResponse::new(request, response))
}

/// A strong entity tag of a body: the first 128 bits of its SHA-256, quoted.
fn tag_of(body: &[u8]) -> String {
    let digest = Sha256::digest(body);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}

/// Whether an `If-None-Match` value names `tag` (`*`, or one of its comma-separated tags,
/// compared weakly as RFC 9110 says for this header: a `W/` prefix does not matter).
fn names(held: &str, tag: &str) -> bool {
    held.split(',').map(str::trim).any(|candidate| {
        candidate == "*" || candidate.strip_prefix("W/").unwrap_or(candidate) == tag
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_tag_is_recognised_weak_or_strong_in_a_list() {
        let tag = tag_of(b"{}");
        assert!(names(&tag, &tag));
        assert!(names(&format!("W/{tag}"), &tag));
        assert!(names(&format!("\"other\", {tag}"), &tag));
        assert!(names("*", &tag));
        assert!(!names("\"other\"", &tag));
        assert_ne!(tag_of(b"{}"), tag_of(b"[]"));
    }
}
