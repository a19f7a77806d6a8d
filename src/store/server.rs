//! A Qdrant server or cluster through `qdrant-client` (gRPC). The client is asynchronous; this
//! store owns a small tokio runtime and blocks on each call, so the rest of neardup stays
//! synchronous.
//!
//! Bulk loading follows Qdrant's advice: a new collection is created with its HNSW graph
//! deferred (`m = 0`), so the upload only appends; [`VectorStore::build_index`] then turns the
//! graph on and waits until the collection is green. Searches go through the query API in
//! batches small enough to answer well within [`REQUEST_TIMEOUT`], even while a segment is
//! still scanned in full.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use qdrant_client::Qdrant;
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::vector_output::Vector;
use qdrant_client::qdrant::{
    BinaryQuantizationBuilder, BinaryQuantizationEncoding, BinaryQuantizationQueryEncoding,
    CollectionStatus, CountPointsBuilder, CreateCollectionBuilder, DeletePointsBuilder, Distance,
    GetPointsBuilder, HnswConfigDiffBuilder, OptimizersConfigDiffBuilder, PointId, PointStruct,
    PointsIdsList, QuantizationSearchParamsBuilder, QuantizationType, Query,
    QueryBatchPointsBuilder, QueryPointsBuilder, RetrievedPoint, ScalarQuantizationBuilder,
    ScrollPointsBuilder, SearchParamsBuilder, TurboQuantBitSize, TurboQuantizationBuilder,
    UpdateCollectionBuilder, UpsertPointsBuilder, VectorParamsBuilder, quantization_config,
};
use tokio::runtime::Runtime;

use super::payload::{parse_payload, payload_json};
use super::{
    Fetched, GraphSettings, Neighbour, OpenMode, Page, Quantization, SearchOptions, ServerOptions,
    StoredPoint, VectorStore, unit_cosine,
};
use crate::error::{Error, Result};

/// How long one request may run before the client gives up on it.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// Queries per request: at most a few seconds of work even as exact scans of 100k points.
const QUERY_BATCH: usize = 256;
/// Points per upsert request: Qdrant advises 64-256, and each must stay far below the gRPC
/// message limit (a point with its signature is about 2 KB).
const UPSERT_BATCH: usize = 256;
/// How long [`VectorStore::build_index`] waits for the server to finish indexing.
const INDEXING_WAIT: Duration = Duration::from_secs(3600);

/// A collection on a Qdrant server.
pub struct ServerStore {
    client: Qdrant,
    runtime: Runtime,
    options: ServerOptions,
    /// How a new collection's graph is built, and how every search walks it.
    graph: GraphSettings,
}

impl ServerStore {
    /// Connects to `options.url`. With [`OpenMode::Create`] it creates the cosine collection
    /// (with its shards and replicas, graph deferred) and refuses one that already holds
    /// points; with [`OpenMode::Existing`] the collection must be there. The graph has the
    /// default [`GraphSettings`].
    pub fn open(options: &ServerOptions, dimensions: usize, mode: OpenMode) -> Result<Self> {
        Self::open_with(options, dimensions, mode, GraphSettings::default())
    }

    /// [`ServerStore::open`] with other graph settings. A new collection is built with them;
    /// an existing one keeps how it was built and is searched with `graph`'s `ef` and
    /// rescoring.
    pub fn open_with(
        options: &ServerOptions,
        dimensions: usize,
        mode: OpenMode,
        graph: GraphSettings,
    ) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::store_from("cannot start the client runtime", e))?;
        let client = Qdrant::from_url(&options.url)
            .skip_compatibility_check()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| server_error(options, e))?;
        let store = ServerStore {
            client,
            runtime,
            options: options.clone(),
            graph,
        };
        let name = &options.collection;
        let exists = store
            .runtime
            .block_on(store.client.collection_exists(name))
            .map_err(|e| store.error(e))?;
        match (mode, exists) {
            (OpenMode::Existing, false) => {
                return Err(Error::store(format!(
                    "Qdrant at {} has no collection {name}: the index was deleted on the \
                     server; build it again with `neardup index`",
                    options.url
                )));
            }
            (OpenMode::Create, true) => {
                let points = store.len()?;
                if points > 0 {
                    return Err(Error::Usage(format!(
                        "collection {name} at {} already holds {points} points; name a new one \
                         with --collection, or delete it (curl -X DELETE \
                         http://HOST:6333/collections/{name})",
                        options.url
                    )));
                }
            }
            (OpenMode::Create, false) => store.create(dimensions)?,
            (OpenMode::Existing, true) => {}
        }
        Ok(store)
    }

    fn create(&self, dimensions: usize) -> Result<()> {
        let mut vectors = VectorParamsBuilder::new(dimensions as u64, Distance::Cosine);
        if let Some(quantized) = self.graph.quantization {
            vectors = vectors.quantization_config(compression(quantized.scheme));
        }
        let create = CreateCollectionBuilder::new(&self.options.collection)
            .vectors_config(vectors)
            .hnsw_config(HnswConfigDiffBuilder::default().m(0))
            // As in the embedded store: a segment this small is scanned and gets no graph.
            .optimizers_config(
                OptimizersConfigDiffBuilder::default()
                    .indexing_threshold(self.graph.full_scan_kb as u64),
            )
            .shard_number(self.options.shards)
            .replication_factor(self.options.replicas);
        self.runtime
            .block_on(self.client.create_collection(create))
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    /// The collection's status and how many of its vectors are in a graph.
    fn status(&self) -> Result<(CollectionStatus, u64)> {
        let info = self
            .runtime
            .block_on(self.client.collection_info(&self.options.collection))
            .map_err(|e| self.error(e))?
            .result
            .ok_or_else(|| self.error(std::io::Error::other("no collection info")))?;
        Ok((
            CollectionStatus::try_from(info.status)
                .unwrap_or(CollectionStatus::UnknownCollectionStatus),
            info.indexed_vectors_count.unwrap_or(0),
        ))
    }

    /// Deletes the whole collection.
    pub fn drop_collection(&self) -> Result<()> {
        self.runtime
            .block_on(self.client.delete_collection(&self.options.collection))
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    fn error(&self, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        server_error(&self.options, e)
    }
}

fn server_error(
    options: &ServerOptions,
    e: impl std::error::Error + Send + Sync + 'static,
) -> Error {
    Error::store_from(
        format!(
            "Qdrant at {} (collection {}; is the server up? `docker compose up -d`)",
            options.url, options.collection
        ),
        e,
    )
}

/// Qdrant's config for `scheme`, as the embedded store builds it.
fn compression(scheme: Quantization) -> quantization_config::Quantization {
    let binary = |encoding: BinaryQuantizationEncoding| {
        BinaryQuantizationBuilder::default()
            .encoding(encoding)
            .query_encoding(BinaryQuantizationQueryEncoding::scalar8bits())
            .into()
    };
    let turbo = |bits: TurboQuantBitSize| TurboQuantizationBuilder::default().bits(bits).into();
    match scheme {
        Quantization::Int8 => ScalarQuantizationBuilder::default()
            .r#type(QuantizationType::Int8.into())
            .into(),
        Quantization::Turbo4 => turbo(TurboQuantBitSize::Bits4),
        Quantization::Turbo2 => turbo(TurboQuantBitSize::Bits2),
        Quantization::Binary2 => binary(BinaryQuantizationEncoding::TwoBits),
        Quantization::Binary1 => binary(BinaryQuantizationEncoding::OneBit),
    }
}

impl ServerStore {
    /// A retrieved point, keyed, as neardup reads it back.
    fn fetched(&self, point: RetrievedPoint) -> Result<(u64, Fetched)> {
        let key = key_of(point.id)?;
        let vector = match point.vectors.and_then(|v| v.get_vector()) {
            Some(Vector::Dense(dense)) => dense.data,
            _ => {
                return Err(Error::store(format!(
                    "Qdrant at {} (collection {}): point {key} has no dense vector; \
                     the collection was not written by neardup",
                    self.options.url, self.options.collection
                )));
            }
        };
        let payload = payload_of(point.payload)?;
        Ok((key, Fetched { payload, vector }))
    }
}

fn key_of(id: Option<PointId>) -> Result<u64> {
    match id.and_then(|id| id.point_id_options) {
        Some(PointIdOptions::Num(key)) => Ok(key),
        other => Err(Error::store(format!(
            "point {other:?} has no numeric id; this collection was not written by neardup"
        ))),
    }
}

fn payload_of(payload: HashMap<String, qdrant_client::qdrant::Value>) -> Result<super::Payload> {
    let map: serde_json::Map<String, serde_json::Value> = payload
        .into_iter()
        .map(|(k, v)| (k, v.into_json()))
        .collect();
    parse_payload(&map)
}

impl VectorStore for ServerStore {
    fn describe(&self) -> String {
        format!("qdrant {} {}", self.options.url, self.options.collection)
    }

    fn upsert(&self, points: &[StoredPoint<'_>]) -> Result<()> {
        for chunk in points.chunks(UPSERT_BATCH) {
            let chunk: Vec<PointStruct> = chunk
                .iter()
                .map(|p| PointStruct::new(p.key, p.vector.to_vec(), payload_json(p)))
                .collect();
            self.runtime
                .block_on(self.client.upsert_points(
                    UpsertPointsBuilder::new(&self.options.collection, chunk).wait(true),
                ))
                .map_err(|e| self.error(e))?;
        }
        Ok(())
    }

    fn build_index(&self) -> Result<bool> {
        // The same graph as the embedded store's, so that both engines give the same answers.
        let graph = self.graph;
        let enable = UpdateCollectionBuilder::new(&self.options.collection).hnsw_config(
            HnswConfigDiffBuilder::default()
                .m(graph.m as u64)
                .ef_construct(graph.ef_construct as u64)
                .full_scan_threshold(graph.full_scan_kb as u64),
        );
        self.runtime
            .block_on(self.client.update_collection(enable))
            .map_err(|e| self.error(e))?;
        // The optimiser starts on its own; wait until every segment it wants indexed is.
        let started = Instant::now();
        loop {
            let (status, indexed) = self.status()?;
            match status {
                CollectionStatus::Green => {
                    tracing::info!(
                        indexed,
                        seconds = started.elapsed().as_secs_f64(),
                        "server collection green"
                    );
                    return Ok(indexed > 0);
                }
                CollectionStatus::Red => {
                    return Err(Error::store(format!(
                        "Qdrant at {}: collection {} is red (an optimisation failed); see the \
                         server's log",
                        self.options.url, self.options.collection
                    )));
                }
                _ if started.elapsed() > INDEXING_WAIT => {
                    return Err(Error::store(format!(
                        "Qdrant at {}: collection {} is still indexing after {} s",
                        self.options.url,
                        self.options.collection,
                        INDEXING_WAIT.as_secs()
                    )));
                }
                _ => std::thread::sleep(Duration::from_millis(250)),
            }
        }
    }

    fn search(&self, queries: &[&[f32]], options: SearchOptions) -> Result<Vec<Vec<Neighbour>>> {
        let SearchOptions {
            k,
            with_payload,
            exact,
        } = options;
        let name = &self.options.collection;
        let mut found = Vec::with_capacity(queries.len());
        for batch in queries.chunks(QUERY_BATCH) {
            let requests: Vec<_> = batch
                .iter()
                .map(|q| {
                    let mut params = SearchParamsBuilder::default()
                        .exact(exact)
                        .hnsw_ef(self.graph.ef.max(k) as u64);
                    if let Some(quantized) = self.graph.quantization {
                        params = params.quantization(
                            QuantizationSearchParamsBuilder::default()
                                .rescore(true)
                                .oversampling(f64::from(quantized.oversampling)),
                        );
                    }
                    QueryPointsBuilder::new(name)
                        .query(Query::new_nearest(q.to_vec()))
                        .limit(k as u64)
                        .with_payload(with_payload)
                        .params(params)
                        .build()
                })
                .collect();
            let response = self
                .runtime
                .block_on(self.client.query_batch(
                    QueryBatchPointsBuilder::new(name, requests).timeout(REQUEST_TIMEOUT.as_secs()),
                ))
                .map_err(|e| self.error(e))?;
            for hits in response.result {
                found.push(
                    hits.result
                        .into_iter()
                        .map(|hit| {
                            Ok(Neighbour {
                                key: key_of(hit.id)?,
                                cosine: unit_cosine(hit.score),
                                payload: if with_payload {
                                    Some(payload_of(hit.payload)?)
                                } else {
                                    None
                                },
                            })
                        })
                        .collect::<Result<Vec<_>>>()?,
                );
            }
        }
        Ok(found)
    }

    fn fetch(&self, keys: &[u64]) -> Result<Vec<Option<Fetched>>> {
        let ids: Vec<PointId> = keys.iter().map(|&k| k.into()).collect();
        let response = self
            .runtime
            .block_on(
                self.client.get_points(
                    GetPointsBuilder::new(&self.options.collection, ids)
                        .with_payload(true)
                        .with_vectors(true),
                ),
            )
            .map_err(|e| self.error(e))?;
        let mut found: HashMap<u64, Fetched> = response
            .result
            .into_iter()
            .map(|point| self.fetched(point))
            .collect::<Result<_>>()?;
        Ok(keys.iter().map(|k| found.remove(k)).collect())
    }

    fn scroll(&self, from: Option<u64>, limit: usize) -> Result<Page> {
        let mut request = ScrollPointsBuilder::new(&self.options.collection)
            .limit(u32::try_from(limit).unwrap_or(u32::MAX))
            .with_payload(true)
            .with_vectors(true);
        if let Some(from) = from {
            request = request.offset(from);
        }
        let response = self
            .runtime
            .block_on(self.client.scroll(request))
            .map_err(|e| self.error(e))?;
        let points = response
            .result
            .into_iter()
            .map(|point| self.fetched(point))
            .collect::<Result<_>>()?;
        let next = response
            .next_page_offset
            .map(|id| key_of(Some(id)))
            .transpose()?;
        Ok((points, next))
    }

    fn delete(&self, keys: &[u64]) -> Result<()> {
        let ids = keys.iter().map(|&k| k.into()).collect();
        self.runtime
            .block_on(
                self.client.delete_points(
                    DeletePointsBuilder::new(&self.options.collection)
                        .points(PointsIdsList { ids })
                        .wait(true),
                ),
            )
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    fn len(&self) -> Result<usize> {
        let response = self
            .runtime
            .block_on(
                self.client
                    .count(CountPointsBuilder::new(&self.options.collection).exact(true)),
            )
            .map_err(|e| self.error(e))?;
        Ok(response.result.map_or(0, |r| r.count as usize))
    }

    fn flush(&self) -> Result<()> {
        // Writes are sent with `wait`: the server has applied them when they return.
        Ok(())
    }

    fn discard(&self) -> Result<()> {
        self.drop_collection()
    }
}
