//! What a request must pass before the index works on it: an id that prints, a text under the
//! limit, a free permit to embed and search; and the waits on the index's threads and on
//! durability.

use axum::http::StatusCode;

use super::AppState;
use super::errors::ApiError;

/// Runs index work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
}

/// Waits until write `seq` is durable (see [`super::commit`]).
pub(super) fn durable(state: &AppState, seq: u64) -> Result<(), ApiError> {
    Ok(state
        .commits
        .durable(seq, &state.writes, || state.index.flush())?)
}

/// The longest id accepted, in bytes.
const MAX_ID_BYTES: usize = 1024;

/// An id must say something and print: not blank, no control characters (NUL included), at
/// most [`MAX_ID_BYTES`].
pub(super) fn check_id(id: &str) -> Result<(), ApiError> {
    if id.trim().is_empty() {
        return Err(ApiError::unprocessable("`id` is empty"));
    }
    if id.chars().any(char::is_control) {
        return Err(ApiError::unprocessable(
            "`id` holds a control character; use printable characters",
        ));
    }
    if id.len() > MAX_ID_BYTES {
        return Err(ApiError::unprocessable(format!(
            "`id` is {} bytes long, the limit is {MAX_ID_BYTES}",
            id.len()
        )));
    }
    Ok(())
}

/// Seconds a client is asked to wait when the server is full.
const RETRY_AFTER_SECONDS: u64 = 1;

/// A permit to embed and search one text, if the text fits and a permit is free.
pub(super) fn admit(
    state: &AppState,
    text: &str,
) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    admit_text(state, text)?;
    permit_for(state)
}

/// Refuses a text over `--max-text-bytes` (413).
pub(super) fn admit_text(state: &AppState, text: &str) -> Result<(), ApiError> {
    if text.len() > state.max_text_bytes {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "the text is {} bytes, the limit is {} (--max-text-bytes)",
                text.len(),
                state.max_text_bytes
            ),
        ));
    }
    Ok(())
}

/// A permit to search, if one is free; 503 with `Retry-After` otherwise.
pub(super) fn permit_for(state: &AppState) -> Result<tokio::sync::OwnedSemaphorePermit, ApiError> {
    state
        .heavy
        .clone()
        .try_acquire_owned()
        .map_err(|_| ApiError {
            status: StatusCode::SERVICE_UNAVAILABLE,
            message: "the server is busy with other texts; retry shortly".into(),
            retry_after: Some(RETRY_AFTER_SECONDS),
        })
}
