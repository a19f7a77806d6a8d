//! `neardup serve`: the two-stage index behind a JSON HTTP API, for documents that arrive one
//! at a time (a repository ingest, a crawler).
//!
//! - `POST /documents` adds a document and answers the duplicates found at insert time; 409 if
//!   the id exists. A write is answered only once it is durable (in the index's journal, synced
//!   after it was written: see [`crate::index`]), so a crash right after an answer loses
//!   nothing that was acknowledged. Writes that arrive during a sync share the next one
//!   (`commit`).
//! - `POST /similar` answers the duplicates of a text and adds nothing.
//! - `GET /documents/{id}/duplicates`, `DELETE /documents/{id}`, `GET /health`, `GET /stats`,
//!   `GET /openapi.json`.
//!
//! Reads run in parallel on tokio's blocking pool; writes are applied one at a time, under one
//! lock, and made durable in groups. The
//! work a client can cause is bounded: texts over `--max-text-bytes` get 413, and at most
//! `--max-concurrent` requests embed and search at once (more get 503 with `Retry-After`).
//! An empty text is a document like any other and matches nothing, as in `neardup dedup`. Client
//! mistakes get a 4xx with a JSON body naming the problem (see [`ApiError`]); requests are
//! logged by method, path, status and time, never with document text. With a token, every
//! request but `GET /health` needs `Authorization: Bearer TOKEN` (reads may be opened with
//! `--public-reads`).
//!
//! Connections are bounded too: a client has [`HEADER_TIMEOUT`] to send a request's headers
//! (an idle keep-alive connection is closed after as long) and [`BODY_TIMEOUT`] for its body
//! (408), and at most [`max_connections`] are open at once, below the process's file limit,
//! so that idle ones cannot starve the index of files: the next ones get 503 and are closed.

mod admission;
mod api;
mod commit;
mod errors;
mod state;

pub use api::ApiDoc;
pub use errors::ApiError;
pub(crate) use state::AppState;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::error::{Error, Result};
use crate::index::DocumentIndex;

/// How the server runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Address to listen on (loopback by default).
    pub addr: SocketAddr,
    /// Bearer token every request but `GET /health` must carry, if set.
    pub token: Option<String>,
    /// With a token, let reads through without it (writes still need it).
    pub public_reads: bool,
    /// Largest request body in bytes.
    pub max_body: usize,
    /// Longest document or query text in bytes (413 above).
    pub max_text_bytes: usize,
    /// Requests that embed and search at once; more get 503 with `Retry-After`.
    pub max_concurrent: usize,
    /// Neighbours looked at per query.
    pub top_k: usize,
}

/// The application: routes, body limit, auth and request logging over `index`.
pub fn router(index: DocumentIndex, options: &ServeOptions) -> Router {
    app(index, options).0
}

/// The router, and the state its handlers share.
fn app(index: DocumentIndex, options: &ServeOptions) -> (Router, Arc<AppState>) {
    let state = Arc::new(AppState {
        index,
        writes: Mutex::new(()),
        commits: commit::GroupCommit::default(),
        token: options.token.clone(),
        top_k: options.top_k,
        max_text_bytes: options.max_text_bytes,
        max_body: options.max_body,
        heavy: Arc::new(tokio::sync::Semaphore::new(options.max_concurrent.max(1))),
        started: Instant::now(),
    });
    // Routes are grouped by who may call them, and the token check is a layer of the group:
    // a new write route cannot be left open by forgetting a path in a list.
    let auth = middleware::from_fn_with_state(state.clone(), authorize);
    let writes = Router::new()
        .route("/documents", post(api::add_document))
        .route(
            "/documents/{id}",
            axum::routing::delete(api::delete_document),
        )
        .route_layer(auth.clone());
    let mut reads = Router::new()
        .route("/similar", post(api::similar))
        .route("/documents/{id}", get(api::get_document))
        .route("/documents/{id}/duplicates", get(api::duplicates_of))
        .route("/stats", get(api::stats))
        .route("/openapi.json", get(api::openapi));
    if !options.public_reads {
        reads = reads.route_layer(auth);
    }
    let router = Router::new()
        .route("/health", get(api::health))
        .merge(writes)
        .merge(reads)
        .fallback(api::not_found)
        .method_not_allowed_fallback(api::method_not_allowed)
        .layer(middleware::from_fn_with_state(state.clone(), body_in_time))
        .layer(middleware::from_fn(log_request))
        .layer(DefaultBodyLimit::max(options.max_body))
        .with_state(state.clone());
    (router, state)
}

/// Takes the address before any other work, so that a busy port is reported before an index is
/// opened or made.
pub fn listen(addr: SocketAddr) -> Result<std::net::TcpListener> {
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| Error::Listen { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| Error::Listen { addr, source })?;
    Ok(listener)
}

/// Serves `index` on `listener` (from [`listen`]) until Ctrl-C or SIGTERM.
pub fn serve(
    index: DocumentIndex,
    listener: std::net::TcpListener,
    options: &ServeOptions,
) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::store_from("cannot start the server runtime", e))?;
    let (app, state) = app(index, options);
    let listen_error = |source| Error::Listen {
        addr: options.addr,
        source,
    };
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(listen_error)?;
        let local = listener.local_addr().map_err(listen_error)?;
        // The address goes to stdout so that scripts (and tests) can start on port 0.
        println!("listening on http://{local}");
        tracing::info!(%local, "serving");
        accept_until_shutdown(listener, app).await;
        Ok::<(), Error>(())
    })?;
    // Every connection has ended, so no write is under way: the store takes in the journal,
    // and the next start has nothing to redo.
    let _write = state.writes.lock().unwrap_or_else(|e| e.into_inner());
    state.index.close()
}

/// How long a client has to send a request's headers; an idle keep-alive connection is closed
/// after as long.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a client has to send a request's body once its headers are in.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// Files kept for the index and the process itself under the file limit.
const FILES_RESERVED: u64 = 128;

/// The most connections open at once: below the soft limit on open files, less
/// `FILES_RESERVED` for the index's own files, and never above 4,096.
pub fn max_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given and nothing else.
    let files = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        // rlim_t is u64 here, not on every platform.
        #[allow(clippy::unnecessary_cast)]
        let soft = limit.rlim_cur as u64;
        soft
    } else {
        1024
    };
    files.saturating_sub(FILES_RESERVED).clamp(16, 4096) as usize
}

/// Accepts connections and serves `app` on each until Ctrl-C or SIGTERM, then lets the
/// requests under way finish (idle connections are closed at once).
async fn accept_until_shutdown(listener: tokio::net::TcpListener, app: Router) {
    let most = max_connections();
    let open = Arc::new(tokio::sync::Semaphore::new(most));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let shutdown = shutdown();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of files, most likely: wait for connections to close.
                    tracing::warn!(error = %e, "cannot accept a connection");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = &mut shutdown => break,
        };
        let Ok(permit) = open.clone().try_acquire_owned() else {
            tokio::spawn(refuse(stream));
            continue;
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = http.serve_connection(hyper_util::rt::TokioIo::new(stream), service);
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            tokio::pin!(connection);
            let ended = tokio::select! {
                ended = connection.as_mut() => ended,
                () = async {
                    let _ = stopping.wait_for(|stop| *stop).await;
                } => {
                    // Closes an idle connection now, a busy one after its response.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended");
            }
            drop(permit);
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection holds a permit until it ends.
    let _all = open.acquire_many(most as u32).await;
}

/// Answers a connection over [`max_connections`] with 503 and closes it.
async fn refuse(mut stream: tokio::net::TcpStream) {
    use tokio::io::AsyncWriteExt;
    let body = r#"{"error":"the server has as many connections open as it takes; retry shortly"}"#;
    let response = format!(
        "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(
        Duration::from_secs(1),
        stream.write_all(response.as_bytes()),
    )
    .await;
}

/// The answer to a body over `max_body` bytes.
fn too_large(max_body: usize) -> Response {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("the request body is over {max_body} bytes (--max-body)"),
    )
    .into_response()
}

/// Reads the request body within [`BODY_TIMEOUT`] (408 past it) and up to the body limit (413
/// above it), before any handler runs: a client sending slowly holds no handler.
async fn body_in_time(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    // A body declared too large is refused at once, before the client sends it.
    let declared = parts
        .headers
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|length| length > state.max_body as u64) {
        return too_large(state.max_body);
    }
    match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, state.max_body)).await {
        Err(_) => ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} s",
                BODY_TIMEOUT.as_secs()
            ),
        )
        .into_response(),
        Ok(Err(e))
            if std::error::Error::source(&e)
                .is_some_and(|e| e.is::<http_body_util::LengthLimitError>()) =>
        {
            too_large(state.max_body)
        }
        Ok(Err(e)) => ApiError::new(
            StatusCode::BAD_REQUEST,
            format!("the request body could not be read: {e}"),
        )
        .into_response(),
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    }
}

async fn shutdown() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// With a token set, the request must carry `Authorization: Bearer TOKEN` (the scheme in any
/// case, as RFC 7235 has it).
async fn authorize(
    State(state): State<Arc<AppState>>,
    headers: HeaderMap,
    request: Request,
    next: Next,
) -> Response {
    if let Some(token) = &state.token {
        let given = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, given)| given.trim());
        if given != Some(token.as_str()) {
            return ApiError::new(
                StatusCode::UNAUTHORIZED,
                "this request needs `Authorization: Bearer TOKEN` with the server's token",
            )
            .into_response();
        }
    }
    next.run(request).await
}

/// One log line per request: method, path, status, milliseconds. Never the body.
async fn log_request(request: Request, next: Next) -> Response {
    let (method, path) = (request.method().clone(), request.uri().path().to_owned());
    let clock = Instant::now();
    let response = next.run(request).await;
    tracing::info!(
        %method,
        path,
        status = response.status().as_u16(),
        ms = clock.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
}
