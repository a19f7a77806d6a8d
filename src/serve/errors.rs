//! The API's errors: a status and a message for a person to read, as JSON; a request body
//! that cannot be read is answered with where it went wrong.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::Error;

/// An error: what went wrong, for a person to read.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// The problem and, where possible, the fix.
    pub error: String,
}

/// An HTTP error with a JSON body.
#[derive(Debug)]
pub struct ApiError {
    pub(super) status: StatusCode,
    pub(super) message: String,
    /// Seconds for a `Retry-After` header (a full server).
    pub(super) retry_after: Option<u64>,
}

impl ApiError {
    /// An error with this status and message.
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            retry_after: None,
        }
    }

    /// A 422: the request reads, and asks for something that cannot be.
    pub(super) fn unprocessable(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNPROCESSABLE_ENTITY, message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = Json(ErrorBody {
            error: self.message,
        });
        let mut response = (self.status, body).into_response();
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(axum::http::header::RETRY_AFTER, seconds.into());
        }
        response
    }
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        tracing::error!(error = %e, "request failed");
        let status = match e {
            Error::Input(_) | Error::Usage(_) | Error::Setting { .. } => {
                StatusCode::UNPROCESSABLE_ENTITY
            }
            Error::IdCollision { .. } => StatusCode::CONFLICT,
            Error::Busy { .. } | Error::Store { .. } => StatusCode::SERVICE_UNAVAILABLE,
            // Nothing of the write was done: reads go on, and the write may be retried once
            // space is freed.
            Error::DiskFull { .. } => StatusCode::INSUFFICIENT_STORAGE,
            Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::StorageFull => {
                StatusCode::INSUFFICIENT_STORAGE
            }
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        };
        ApiError::new(status, e.to_string())
    }
}

/// The body as JSON of type `T`, or a 4xx naming what is wrong with it.
pub(super) fn parse<T: for<'de> Deserialize<'de>>(
    body: Result<Bytes, BytesRejection>,
) -> Result<T, ApiError> {
    let bytes = body.map_err(|r| ApiError::new(r.status(), r.body_text()))?;
    let malformed = |e: serde_json::Error, place: String| {
        let status = if e.is_data() {
            StatusCode::UNPROCESSABLE_ENTITY
        } else {
            StatusCode::BAD_REQUEST
        };
        ApiError::new(status, format!("request body{place}: {e}"))
    };
    let mut json = serde_json::Deserializer::from_slice(&bytes);
    let value = serde_path_to_error::deserialize(&mut json).map_err(|e| {
        let place = describe_path(e.path());
        malformed(e.into_inner(), place)
    })?;
    // Bytes after the value make the body as malformed as a bad value does.
    json.end().map_err(|e| malformed(e, String::new()))?;
    Ok(value)
}

/// Where in a body a value was refused, in the words of the API's other errors (`, document
/// 3, field text`); empty at the top.
pub(super) fn describe_path(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    path.iter()
        .map(|segment| match segment {
            Segment::Seq { index } => format!(", document {index}"),
            Segment::Map { key } => format!(", field {key}"),
            Segment::Enum { variant } => format!(", {variant}"),
            Segment::Unknown => String::new(),
        })
        .collect()
}
