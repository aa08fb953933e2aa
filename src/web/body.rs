//! Reading a request body in a middleware and handing it back to the handler untouched.

use actix_web::dev::{Payload, ServiceRequest};
use actix_web::web::{Bytes, BytesMut};
use actix_web::HttpMessage;

use super::error::{AppError, Kind};

/// A body the edge read, kept in the request's extensions for error messages that need it.
#[derive(Clone)]
pub struct PeekedBody(pub Bytes);

/// The most a middleware reads of a form or JSON body (the extractors' own limit).
pub const BODY_PEEK_LIMIT: usize = 1024 * 1024;

/// The whole body (at most [`BODY_PEEK_LIMIT`]), put back so the handler reads it as sent.
pub async fn peek_body(req: &mut ServiceRequest) -> Result<Bytes, AppError> {
    use futures_util::StreamExt;
    let mut payload = req.take_payload();
    let mut body = BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| AppError::new(Kind::BadRequest, format!("The body could not be read: {e}")))?;
        if body.len() + chunk.len() > BODY_PEEK_LIMIT {
            return Err(AppError::new(Kind::PayloadTooLarge, "The body is larger than 1 MiB."));
        }
        body.extend_from_slice(&chunk);
    }
    let body = body.freeze();
    let (_, mut again) = actix_http::h1::Payload::create(true);
    again.unread_data(body.clone());
    req.set_payload(Payload::from(again));
    Ok(body)
}
