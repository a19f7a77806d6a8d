//! Request and response bodies, the handlers, and the OpenAPI description.

use std::sync::Arc;

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequestParts, Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{OpenApi, ToSchema};

use super::AppState;
use super::admission::{admit, admit_text, blocking, check_id, durable, permit_for};
use super::errors::{ApiError, ErrorBody, parse};
use crate::index::Match;

/// A new document: an id and either `text`, or `title` and/or `abstract` (joined by a space,
/// as `neardup dedup` joins the CORE fields).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewDocument {
    /// Unique document id.
    #[schema(min_length = 1)]
    pub id: String,
    /// The whole text (may be empty: an empty document matches nothing).
    #[serde(default)]
    pub text: Option<String>,
    /// Title, when `text` is not given.
    #[serde(default)]
    pub title: Option<String>,
    /// Abstract, when `text` is not given.
    #[serde(default, rename = "abstract")]
    pub abstract_text: Option<String>,
}

/// A text to look up.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SimilarRequest {
    /// The text (an empty one matches nothing).
    pub text: String,
}

/// The duplicates of a document or text, with their scores.
#[derive(Debug, Serialize, ToSchema)]
pub struct Duplicates {
    /// The document concerned, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Confirmed duplicates, nearest first.
    pub duplicates: Vec<Match>,
}

/// The document id in a request's path. A path that does not decode to one (`%ff`) is
/// answered with a JSON error, as every other error is.
pub(super) struct DocumentId(String);

impl<S: Send + Sync> FromRequestParts<S> for DocumentId {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        state: &S,
    ) -> Result<Self, ApiError> {
        match Path::<String>::from_request_parts(parts, state).await {
            Ok(Path(id)) => Ok(DocumentId(id)),
            Err(e) => Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                format!(
                    "the document id in the path: {}; percent-encode it as UTF-8",
                    e.body_text()
                ),
            )),
        }
    }
}

/// Server health.
#[derive(Debug, Serialize, ToSchema)]
pub struct Health {
    /// Always `ok` when the server answers.
    pub status: &'static str,
}

/// What the server holds.
#[derive(Debug, Serialize, ToSchema)]
pub struct Stats {
    /// Documents in the index.
    pub documents: usize,
    /// The embedder (kind and model).
    pub embedder: String,
    /// The vector store.
    pub store: String,
    /// Seconds since the server started.
    pub uptime_seconds: f64,
}

fn confirmed(matches: Vec<Match>) -> Vec<Match> {
    matches.into_iter().filter(|m| m.duplicate).collect()
}

/// Add a document, or an array of documents (added in order, each also checked against the
/// ones before it); answers the duplicates of each among the documents already indexed.
#[utoipa::path(post, path = "/documents", request_body = NewDocument,
    responses(
        (status = 201, description = "Added: the duplicates of the document (an array of them for an array)", body = Duplicates),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 401, description = "Missing or wrong bearer token", body = ErrorBody),
        (status = 409, description = "An id exists (nothing of an array is added)", body = ErrorBody),
        (status = 413, description = "Body or text over the limit", body = ErrorBody),
        (status = 422, description = "Missing fields or a bad id", body = ErrorBody),
        (status = 507, description = "The disk is full: nothing was added (nothing of an array)", body = ErrorBody),
        (status = 503, description = "Busy: retry after the Retry-After seconds", body = ErrorBody)))]
pub(super) async fn add_document(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let bytes = body.map_err(|r| ApiError::new(r.status(), r.body_text()))?;
    let is_array = bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
    let docs: Vec<NewDocument> = match is_array {
        true => parse(Ok(bytes))?,
        false => vec![parse(Ok(bytes))?],
    };
    let docs = docs
        .into_iter()
        .enumerate()
        .map(|(i, doc)| {
            doc.into_text().map_err(|e| match is_array {
                true => ApiError::new(e.status, format!("document {i}: {}", e.message)),
                false => e,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut seen = std::collections::HashSet::new();
    if let Some((id, _)) = docs.iter().find(|(id, _)| !seen.insert(id.as_str())) {
        return Err(ApiError::unprocessable(format!(
            "document {id:?} is given twice"
        )));
    }
    for (_, text) in &docs {
        admit_text(&state, text)?;
    }
    let permit = permit_for(&state)?;
    let added = blocking(move || {
        // Held while texts are embedded and searched; given back before the last insert waits
        // for the write lock and a flush, as one document's insert always did.
        let mut permit = Some(permit);
        let count = docs.len();
        {
            let _write = state.writes.lock().unwrap_or_else(|e| e.into_inner());
            for (id, _) in &docs {
                if state.index.contains(id)? {
                    return Err(ApiError::new(
                        StatusCode::CONFLICT,
                        format!("document {id:?} exists; DELETE it first to replace it"),
                    ));
                }
            }
        }
        // An array counts only whole: its inserts form a batch, undone on any failure here
        // and, after a crash, when the index next opens.
        let batch = match is_array {
            true => Some(state.index.begin_batch()?),
            false => None,
        };
        let mut inserted = Vec::with_capacity(count);
        let mut last = None;
        let insert_all = || -> Result<Vec<Duplicates>, ApiError> {
            let mut added = Vec::with_capacity(count);
            for (i, (id, text)) in docs.into_iter().enumerate() {
                // Embedding and searching need no lock, so concurrent writes do them in
                // parallel; the write lock is held for the insert alone.
                let new = state.index.prepare(&text, state.top_k)?;
                if i + 1 == count {
                    drop(permit.take());
                }
                let arrival = state.commits.arrive();
                let found = {
                    let _write = state.writes.lock().unwrap_or_else(|e| e.into_inner());
                    if state.index.contains(&id)? {
                        return Err(ApiError::new(
                            StatusCode::CONFLICT,
                            format!("document {id:?} was added by another request meanwhile"),
                        ));
                    }
                    let found = state.index.insert_in(&id, new, batch)?;
                    inserted.push(id.clone());
                    last = Some(arrival.applied());
                    found
                };
                added.push(Duplicates {
                    id: Some(id),
                    duplicates: confirmed(found),
                });
            }
            Ok(added)
        };
        let outcome = insert_all();
        if let Some(batch) = batch {
            // The batch's end is a write of its own, so that the flush below covers it.
            let arrival = state.commits.arrive();
            let _write = state.writes.lock().unwrap_or_else(|e| e.into_inner());
            if outcome.is_err() {
                for id in &inserted {
                    state.index.remove(id)?;
                }
            }
            state.index.end_batch(batch)?;
            last = Some(arrival.applied());
        }
        let added = match (outcome, batch) {
            (Ok(added), _) => added,
            (Err(e), None) => return Err(e),
            (Err(e), Some(_)) => {
                return Err(ApiError {
                    message: format!("{}; nothing of the array was added", e.message),
                    ..e
                });
            }
        };
        if let Some(seq) = last {
            durable(&state, seq)?;
        }
        Ok(added)
    })
    .await?;
    Ok(match is_array {
        true => (StatusCode::CREATED, Json(added)).into_response(),
        false => (StatusCode::CREATED, Json(added.into_iter().next())).into_response(),
    })
}

impl NewDocument {
    /// The document's id, checked, and its text.
    fn into_text(self) -> Result<(String, String), ApiError> {
        check_id(&self.id)?;
        let text = match (self.text, self.title, self.abstract_text) {
            (Some(text), None, None) => text,
            (None, title, abstract_text) if title.is_some() || abstract_text.is_some() => {
                [title, abstract_text]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" ")
            }
            (None, _, _) => {
                return Err(ApiError::unprocessable(
                    "give `text`, or `title` and/or `abstract`",
                ));
            }
            _ => {
                return Err(ApiError::unprocessable(
                    "give either `text` or `title`/`abstract`, not both",
                ));
            }
        };
        Ok((self.id, text))
    }
}

/// What the index holds of a document: its id and the size of its sketch (the text itself is
/// not stored).
#[derive(Debug, Serialize, ToSchema)]
pub struct IndexedDocument {
    /// The document id.
    pub id: String,
    /// Distinct shingles (words, by default) behind its MinHash signature.
    pub shingles: u32,
}

/// An indexed document.
#[utoipa::path(get, path = "/documents/{id}",
    params(("id" = String, Path, description = "Document id (percent-encode `/`)")),
    responses(
        (status = 200, description = "Indexed", body = IndexedDocument),
        (status = 404, description = "No such document", body = ErrorBody)))]
pub(super) async fn get_document(
    State(state): State<Arc<AppState>>,
    DocumentId(id): DocumentId,
) -> Result<Json<IndexedDocument>, ApiError> {
    blocking(move || {
        if !state.index.contains(&id)? {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no document {id:?}"),
            ));
        }
        let fetched = state.index.document(&id)?;
        Ok(Json(IndexedDocument {
            id,
            shingles: fetched.payload.shingles,
        }))
    })
    .await
}

/// The duplicates of a text; adds nothing.
#[utoipa::path(post, path = "/similar", request_body = SimilarRequest,
    responses(
        (status = 200, description = "Duplicates", body = Duplicates),
        (status = 400, description = "Malformed JSON", body = ErrorBody),
        (status = 413, description = "Body or text over the limit", body = ErrorBody),
        (status = 422, description = "Missing text", body = ErrorBody),
        (status = 503, description = "Busy: retry after the Retry-After seconds", body = ErrorBody)))]
pub(super) async fn similar(
    State(state): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Duplicates>, ApiError> {
    let request: SimilarRequest = parse(body)?;
    let permit = admit(&state, &request.text)?;
    blocking(move || {
        let _permit = permit;
        let found = state.index.similar_to_text(&request.text, state.top_k)?;
        Ok(Json(Duplicates {
            id: None,
            duplicates: confirmed(found),
        }))
    })
    .await
}

/// The duplicates of an indexed document.
#[utoipa::path(get, path = "/documents/{id}/duplicates",
    params(("id" = String, Path, description = "Document id (percent-encode `/`)")),
    responses(
        (status = 200, description = "Duplicates", body = Duplicates),
        (status = 404, description = "No such document", body = ErrorBody),
        (status = 503, description = "Busy: retry after the Retry-After seconds", body = ErrorBody)))]
pub(super) async fn duplicates_of(
    State(state): State<Arc<AppState>>,
    DocumentId(id): DocumentId,
) -> Result<Json<Duplicates>, ApiError> {
    let permit = permit_for(&state)?;
    blocking(move || {
        let _permit = permit;
        if !state.index.contains(&id)? {
            return Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no document {id:?}"),
            ));
        }
        let found = state.index.similar_to_id(&id, state.top_k)?;
        Ok(Json(Duplicates {
            id: Some(id),
            duplicates: confirmed(found),
        }))
    })
    .await
}

/// Remove a document.
#[utoipa::path(delete, path = "/documents/{id}",
    params(("id" = String, Path, description = "Document id (percent-encode `/`)")),
    responses(
        (status = 204, description = "Removed"),
        (status = 401, description = "Missing or wrong bearer token", body = ErrorBody),
        (status = 404, description = "No such document", body = ErrorBody)))]
pub(super) async fn delete_document(
    State(state): State<Arc<AppState>>,
    DocumentId(id): DocumentId,
) -> Result<StatusCode, ApiError> {
    blocking(move || {
        let arrival = state.commits.arrive();
        let removed = {
            let _write = state.writes.lock().unwrap_or_else(|e| e.into_inner());
            state.index.remove(&id)?.then(|| arrival.applied())
        };
        if let Some(seq) = removed {
            durable(&state, seq)?;
            Ok(StatusCode::NO_CONTENT)
        } else {
            Err(ApiError::new(
                StatusCode::NOT_FOUND,
                format!("no document {id:?}"),
            ))
        }
    })
    .await
}

/// Whether the server is up.
#[utoipa::path(get, path = "/health", responses((status = 200, body = Health)))]
pub(super) async fn health() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// What the server holds.
#[utoipa::path(get, path = "/stats", responses((status = 200, body = Stats)))]
pub(super) async fn stats(State(state): State<Arc<AppState>>) -> Result<Json<Stats>, ApiError> {
    blocking(move || {
        Ok(Json(Stats {
            documents: state.index.store().len()?,
            embedder: state.index.embedder().describe(),
            store: state.index.store().describe(),
            uptime_seconds: state.started.elapsed().as_secs_f64(),
        }))
    })
    .await
}

/// This description.
pub(super) async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(ApiDoc::openapi())
}

pub(super) async fn not_found() -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "no such route; see /openapi.json for the API",
    )
}

pub(super) async fn method_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        "this route does not take that method; see /openapi.json",
    )
}

/// The OpenAPI description served at `/openapi.json`.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "neardup",
        description = "Near-duplicate detection over a two-stage index"
    ),
    paths(
        add_document,
        get_document,
        similar,
        duplicates_of,
        delete_document,
        health,
        stats
    ),
    components(schemas(
        NewDocument,
        IndexedDocument,
        SimilarRequest,
        Duplicates,
        Match,
        Health,
        Stats,
        ErrorBody
    ))
)]
pub struct ApiDoc;
