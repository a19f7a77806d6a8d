//! The embedded engine: a `qdrant-edge` shard in a folder.

use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use qdrant_edge::{
    BinaryQuantizationConfig, BinaryQuantizationEncoding, BinaryQuantizationQueryEncoding,
    DEFAULT_VECTOR_NAME, Distance, EdgeConfigBuilder, EdgeOptimizersConfig, EdgeShard,
    EdgeVectorParamsBuilder, HnswIndexConfig, NamedQuery, PointId, PointInsertOperations,
    PointOperations, PointStruct, QuantizationConfig, QuantizationSearchParams, QueryEnum, Record,
    ScalarQuantizationConfig, ScalarType, ScrollRequest, SearchParams, SearchRequest,
    UpdateOperation, VectorStructInternal, WithPayloadInterface, WithVector,
};
use rayon::prelude::*;

use super::payload::{parse_payload, payload_json};
use super::{
    Fetched, GraphSettings, Neighbour, OpenMode, Page, Quantization, SearchOptions, StoredPoint,
    VectorStore, unit_cosine,
};
use crate::error::{Error, Result};
use crate::io::FolderLock;

/// Qdrant's embedded engine, persisted in a folder.
pub struct EdgeStore {
    /// Closed by [`EdgeStore`]'s own drop, which keeps the engine's panic on a failed flush
    /// from ending the process.
    shard: ManuallyDrop<EdgeShard>,
    path: PathBuf,
    /// Held while the store is open: one process at a time.
    _lock: FolderLock,
    /// Points upserted since a graph was last built (see [`GraphSettings::segment_points`]).
    unindexed: AtomicUsize,
    /// How searches walk the graph (how it is built is in the shard's config).
    graph: GraphSettings,
    /// Length of every vector.
    dimensions: usize,
}

/// The lock file neardup holds in a store's folder while the store is open.
const LOCK_FILE: &str = "neardup.lock";

/// The engine's write-ahead log, inside a store's folder.
const LOG_DIR: &str = "wal";
/// Room a store needs beyond its points: the engine's write-ahead log (two sparse segments of
/// 32 MB, filled through memory maps) and a margin.
const LOG_ROOM: u64 = 72 << 20;
/// Bytes a point takes on disk beyond its vector: its payload (signature and facts), its graph
/// links and its quantized code, with room to spare.
const POINT_OVERHEAD: u64 = 2048;
/// What to do, besides freeing space, when a store's disk is full.
const FULL_HINT: &str = "give another --index (or, for a run's temporary index, another TMPDIR)";

impl EdgeStore {
    /// Opens the shard in `dir` with the default [`GraphSettings`]. With [`OpenMode::Create`]
    /// a folder without one gets a new shard for cosine vectors of `dimensions`; with
    /// [`OpenMode::Existing`] it is an error. A shard of another size is an error, and so is
    /// one the engine cannot read.
    pub fn open(dir: &Path, dimensions: usize, mode: OpenMode) -> Result<Self> {
        Self::open_with(dir, dimensions, mode, GraphSettings::default())
    }

    /// Fails with [`Error::Busy`], naming the holder, while another process has the store in
    /// `dir` open.
    pub fn check_free(dir: &Path) -> Result<()> {
        FolderLock::take(dir, LOCK_FILE, "use another --index").map(drop)
    }

    /// [`EdgeStore::open`] with other graph settings. A new shard is built with them; an
    /// existing one keeps how its graph was built and is searched with `graph`'s `ef`.
    pub fn open_with(
        dir: &Path,
        dimensions: usize,
        mode: OpenMode,
        graph: GraphSettings,
    ) -> Result<Self> {
        let existing = dir.join("edge_config.json").is_file();
        if !existing && mode == OpenMode::Existing {
            return Err(damaged(
                dir,
                "its vector store is missing (no edge_config.json)",
            ));
        }
        // Opening fills the holes of the engine's sparse log files (32 MB each); a new store
        // makes its log.
        let needed = match existing {
            true => crate::io::space::unallocated(&dir.join(LOG_DIR)) + (8 << 20),
            false => LOG_ROOM,
        };
        crate::io::space::require(dir, needed, "opening the vector store", FULL_HINT)?;
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let lock = FolderLock::take(dir, LOCK_FILE, "use another --index")?;
        let shard = guarded(dir, || {
            if existing {
                EdgeShard::load(dir, None)
            } else {
                let mut vectors = EdgeVectorParamsBuilder::new(dimensions, Distance::Cosine);
                if let Some(quantized) = graph.quantization {
                    vectors = vectors.quantization_config(compression(quantized.scheme));
                }
                // Full segments are never merged into a larger one, and a segment small
                // enough to be scanned gets no graph.
                let segment_kb = graph.segment_points * dimensions * size_of::<f32>() / 1024;
                let optimizers = EdgeOptimizersConfig {
                    max_segment_size: Some(segment_kb),
                    indexing_threshold: Some(graph.full_scan_kb),
                    ..EdgeOptimizersConfig::default()
                };
                let config = EdgeConfigBuilder::new()
                    .optimizers(optimizers)
                    .vector(DEFAULT_VECTOR_NAME, vectors.build())
                    .hnsw_config(HnswIndexConfig {
                        m: graph.m,
                        ef_construct: graph.ef_construct,
                        full_scan_threshold: graph.full_scan_kb,
                        inline_storage: graph.inline_vectors.then_some(true),
                        ..HnswIndexConfig::default()
                    })
                    .build();
                EdgeShard::new(dir, config)
            }
        })?
        .map_err(|e| {
            if existing {
                // A shard that was written before and cannot be read back is damaged.
                damaged(dir, &e.to_string())
            } else {
                store_error(dir, e)
            }
        })?;
        let stored = shard
            .config()
            .vectors
            .get(DEFAULT_VECTOR_NAME)
            .map(|v| v.size);
        if stored != Some(dimensions) {
            return Err(Error::Usage(format!(
                "the index in {} holds vectors of {} dimensions, this embedder makes {dimensions}; \
                 use the embedder it was built with or a new --index folder",
                dir.display(),
                stored.map_or("unknown".into(), |d| d.to_string())
            )));
        }
        Ok(EdgeStore {
            shard: ManuallyDrop::new(shard),
            path: dir.to_owned(),
            _lock: lock,
            unindexed: AtomicUsize::new(0),
            graph,
            dimensions,
        })
    }

    /// Refuses `what` unless the disk has room for `points` more points and the log.
    fn room_for(&self, points: usize, what: &'static str) -> Result<()> {
        let per_point = (self.dimensions * size_of::<f32>()) as u64 + POINT_OVERHEAD;
        let needed = LOG_ROOM + points as u64 * per_point;
        crate::io::space::require(&self.path, needed, what, FULL_HINT)
    }

    /// Builds the graph of what is unindexed, once the disk has room for a copy of the store:
    /// the engine writes the new segments before it drops the old ones.
    fn optimize(&self) -> Result<bool> {
        self.room_for(self.shard.info().points_count, "building the search graph")?;
        self.shard.optimize().map_err(|e| self.error(e))
    }

    fn error(&self, e: impl std::error::Error + Send + Sync + 'static) -> Error {
        store_error(&self.path, e)
    }

    /// A read of stored data that fails (a truncated payload page, say): the queries neardup
    /// sends are always well formed, so the files are damaged.
    fn unreadable(&self, e: impl std::fmt::Display) -> Error {
        damaged(&self.path, &e.to_string())
    }

    /// A point that neardup did not write this way: the store is damaged.
    fn broken(&self, problem: String) -> Error {
        damaged(&self.path, &problem)
    }

    /// A retrieved point, keyed, as neardup reads it back.
    fn fetched(&self, record: Record) -> Result<(u64, Fetched)> {
        let key = numeric(record.id)?;
        let payload = record
            .payload
            .ok_or_else(|| self.broken(format!("point {key} has no payload")))?;
        let vector = match record.vector {
            Some(VectorStructInternal::Single(v)) => v,
            _ => return Err(self.broken(format!("point {key} has no single dense vector"))),
        };
        let payload = parse_payload(&payload.0)?;
        Ok((key, Fetched { payload, vector }))
    }

    /// Runs an engine call, turning a panic inside the engine into an error.
    fn guarded<T>(&self, call: impl FnOnce() -> Result<T>) -> Result<T> {
        guarded(&self.path, call)?
    }
}

impl Drop for EdgeStore {
    /// The engine flushes a shard as it closes it, and panics where it cannot (its folder
    /// deleted under it, the disk gone): here that is a warning. What a writer was told is
    /// durable went through a flush, or the index's journal, before.
    fn drop(&mut self) {
        // SAFETY: the shard is taken once, here, and not used again.
        let shard = unsafe { ManuallyDrop::take(&mut self.shard) };
        if let Err(cause) = crate::foreign::catch(|| drop(shard)) {
            // A store whose folder is gone was reported by the write that failed first.
            match self.path.exists() {
                true => tracing::warn!(
                    store = %self.path.display(),
                    "the vector store could not be flushed as it closed: {cause}"
                ),
                false => {
                    tracing::debug!(store = %self.path.display(), "closed without its folder: {cause}")
                }
            }
        }
    }
}

/// Runs `call`; a panic inside the engine (qdrant-edge panics on some damaged files, and its
/// write-ahead log `expect`s its flushes) becomes a "damaged" error naming `dir`.
fn guarded<T>(dir: &Path, call: impl FnOnce() -> T) -> Result<T> {
    crate::foreign::catch(call).map_err(|cause| {
        damaged(
            dir,
            &format!("the vector engine failed reading it: {cause}"),
        )
    })
}

fn damaged(dir: &Path, problem: &str) -> Error {
    Error::Damaged {
        path: dir.to_owned(),
        problem: problem.to_owned(),
        fix: None,
    }
}

fn store_error(path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::store_from(path.display().to_string(), e)
}

impl VectorStore for EdgeStore {
    fn describe(&self) -> String {
        format!("edge {}", self.path.display())
    }

    fn upsert(&self, points: &[StoredPoint<'_>]) -> Result<()> {
        let count = points.len();
        self.room_for(count, "adding documents to the vector store")?;
        let points = points
            .iter()
            .map(|p| PointStruct::new(p.key, p.vector.to_vec(), payload_json(p).into()).into())
            .collect();
        self.guarded(|| {
            self.shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
                ))
                .map_err(|e| self.error(e))?;
            if self.unindexed.fetch_add(count, Ordering::Relaxed) + count
                >= self.graph.segment_points
            {
                self.unindexed.store(0, Ordering::Relaxed);
                self.optimize()?;
            }
            Ok(())
        })
    }

    fn build_index(&self) -> Result<bool> {
        self.unindexed.store(0, Ordering::Relaxed);
        self.guarded(|| self.optimize())
    }

    fn search(&self, queries: &[&[f32]], options: SearchOptions) -> Result<Vec<Vec<Neighbour>>> {
        let SearchOptions {
            k,
            with_payload,
            exact,
        } = options;
        let search_one = |query: &&[f32]| -> Result<Vec<Neighbour>> {
            let request = SearchRequest {
                query: QueryEnum::Nearest(NamedQuery::default_dense(query.to_vec())),
                filter: None,
                params: Some(SearchParams {
                    hnsw_ef: Some(self.graph.ef.max(k)),
                    exact,
                    quantization: self.graph.quantization.map(|quantized| {
                        QuantizationSearchParams {
                            ignore: false,
                            rescore: Some(true),
                            oversampling: Some(f64::from(quantized.oversampling)),
                        }
                    }),
                    ..SearchParams::default()
                }),
                limit: k,
                offset: 0,
                with_payload: Some(WithPayloadInterface::Bool(with_payload)),
                with_vector: None,
                score_threshold: None,
            };
            let hits = self.shard.search(request).map_err(|e| self.unreadable(e))?;
            hits.into_iter()
                .map(|hit| {
                    Ok(Neighbour {
                        key: numeric(hit.id)?,
                        cosine: unit_cosine(hit.score),
                        payload: hit.payload.map(|p| parse_payload(&p.0)).transpose()?,
                    })
                })
                .collect()
        };
        self.guarded(|| {
            // One query (a served request) runs on this thread: handing it to the pool and
            // back costs two thread wake-ups, more than the graph search itself.
            if let [query] = queries {
                Ok(vec![search_one(query)?])
            } else {
                queries.par_iter().map(search_one).collect()
            }
        })
    }

    fn fetch(&self, keys: &[u64]) -> Result<Vec<Option<Fetched>>> {
        let ids: Vec<PointId> = keys.iter().map(|&k| PointId::NumId(k)).collect();
        let records = self.guarded(|| {
            self.shard
                .retrieve(
                    &ids,
                    Some(WithPayloadInterface::Bool(true)),
                    Some(WithVector::Bool(true)),
                )
                .map_err(|e| self.unreadable(e))
        })?;
        let mut found: std::collections::HashMap<u64, Fetched> = records
            .into_iter()
            .map(|record| self.fetched(record))
            .collect::<Result<_>>()?;
        Ok(keys.iter().map(|k| found.remove(k)).collect())
    }

    fn scroll(&self, from: Option<u64>, limit: usize) -> Result<Page> {
        let request = ScrollRequest {
            offset: from.map(PointId::NumId),
            limit: Some(limit),
            filter: None,
            with_payload: Some(WithPayloadInterface::Bool(true)),
            with_vector: WithVector::Bool(true),
            order_by: None,
        };
        let (records, next) =
            self.guarded(|| self.shard.scroll(request).map_err(|e| self.unreadable(e)))?;
        let points = records
            .into_par_iter()
            .map(|record| self.fetched(record))
            .collect::<Result<_>>()?;
        Ok((points, next.map(numeric).transpose()?))
    }

    fn delete(&self, keys: &[u64]) -> Result<()> {
        let ids = keys.iter().map(|&k| PointId::NumId(k)).collect();
        self.guarded(|| {
            self.shard
                .update(UpdateOperation::PointOperation(
                    PointOperations::DeletePoints { ids },
                ))
                .map_err(|e| self.error(e))
        })
    }

    fn len(&self) -> Result<usize> {
        self.guarded(|| Ok(self.shard.info().points_count))
    }

    fn flush(&self) -> Result<()> {
        // The engine `expect`s its flushes: a failed write (a full disk) panics there. That is
        // a failure to retry, not damage.
        guarded(&self.path, || self.shard.flush()).map_err(|e| match e {
            Error::Damaged { problem, .. } => {
                Error::store(format!("{}: flush failed: {problem}", self.path.display()))
            }
            other => other,
        })
    }
}

/// The engine's config for a compression, kept in memory.
fn compression(scheme: Quantization) -> QuantizationConfig {
    let binary = |encoding| {
        BinaryQuantizationConfig {
            always_ram: Some(true),
            encoding: Some(encoding),
            query_encoding: Some(BinaryQuantizationQueryEncoding::Scalar8Bits),
        }
        .into()
    };
    // qdrant-edge does not re-export TurboQuant's config types; the config reads from JSON.
    let turbo = |bits: &str| {
        serde_json::from_value(serde_json::json!({"turbo": {"always_ram": true, "bits": bits}}))
            .expect("TurboQuant's config as Qdrant documents it")
    };
    match scheme {
        Quantization::Int8 => ScalarQuantizationConfig {
            r#type: ScalarType::Int8,
            quantile: None,
            always_ram: Some(true),
        }
        .into(),
        Quantization::Turbo4 => turbo("bits4"),
        Quantization::Turbo2 => turbo("bits2"),
        Quantization::Binary2 => binary(BinaryQuantizationEncoding::TwoBits),
        Quantization::Binary1 => binary(BinaryQuantizationEncoding::OneBit),
    }
}

fn numeric(id: PointId) -> Result<u64> {
    match id {
        PointId::NumId(k) => Ok(k),
        PointId::Uuid(u) => Err(Error::store(format!(
            "point {u} has a UUID id; this index was not written by neardup"
        ))),
    }
}
