//! A Qdrant server or cluster through `qdrant-client` (gRPC). The client is asynchronous; this
//! store owns a small tokio runtime and blocks on each call, so the rest of neardup stays
//! synchronous.

use std::collections::HashMap;

use qdrant_client::Qdrant;
use qdrant_client::qdrant::point_id::PointIdOptions;
use qdrant_client::qdrant::vector_output::Vector;
use qdrant_client::qdrant::{
    CountPointsBuilder, CreateCollectionBuilder, DeletePointsBuilder, Distance, GetPointsBuilder,
    PointId, PointStruct, PointsIdsList, SearchBatchPointsBuilder, SearchPointsBuilder,
    UpsertPointsBuilder, VectorParamsBuilder,
};
use tokio::runtime::Runtime;

use super::{
    Fetched, Neighbour, ServerOptions, StoredPoint, VectorStore, parse_payload, payload_json,
    unit_cosine,
};
use crate::error::{Error, Result};

/// A collection on a Qdrant server.
pub struct ServerStore {
    client: Qdrant,
    runtime: Runtime,
    options: ServerOptions,
}

impl ServerStore {
    /// Connects to `options.url` and creates the cosine collection (with its shards and
    /// replicas) if it does not exist yet.
    pub fn open(options: &ServerOptions, dimensions: usize) -> Result<Self> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .map_err(|e| Error::store_from("cannot start the client runtime", e))?;
        let client = Qdrant::from_url(&options.url)
            .skip_compatibility_check()
            .build()
            .map_err(|e| server_error(options, e))?;
        let store = ServerStore {
            client,
            runtime,
            options: options.clone(),
        };
        let name = &options.collection;
        let exists = store
            .runtime
            .block_on(store.client.collection_exists(name))
            .map_err(|e| store.error(e))?;
        if !exists {
            store
                .runtime
                .block_on(
                    store.client.create_collection(
                        CreateCollectionBuilder::new(name)
                            .vectors_config(VectorParamsBuilder::new(
                                dimensions as u64,
                                Distance::Cosine,
                            ))
                            .shard_number(options.shards)
                            .replication_factor(options.replicas),
                    ),
                )
                .map_err(|e| store.error(e))?;
        }
        Ok(store)
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
        let points: Vec<PointStruct> = points
            .iter()
            .map(|p| {
                let payload = serde_json::Map::from_iter(
                    payload_json(p)
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), v.clone())),
                );
                PointStruct::new(p.key, p.vector.to_vec(), payload)
            })
            .collect();
        self.runtime
            .block_on(self.client.upsert_points(
                UpsertPointsBuilder::new(&self.options.collection, points).wait(true),
            ))
            .map(|_| ())
            .map_err(|e| self.error(e))
    }

    fn build_index(&self) -> Result<bool> {
        // The server builds its HNSW graph in the background by itself.
        Ok(false)
    }

    #[allow(deprecated)]
    fn search(
        &self,
        queries: &[&[f32]],
        k: usize,
        with_payload: bool,
    ) -> Result<Vec<Vec<Neighbour>>> {
        let name = &self.options.collection;
        let searches: Vec<_> = queries
            .iter()
            .map(|q| {
                SearchPointsBuilder::new(name, q.to_vec(), k as u64)
                    .with_payload(with_payload)
                    .build()
            })
            .collect();
        let response = self
            .runtime
            .block_on(
                self.client
                    .search_batch_points(SearchBatchPointsBuilder::new(name, searches)),
            )
            .map_err(|e| self.error(e))?;
        response
            .result
            .into_iter()
            .map(|batch| {
                batch
                    .result
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
                    .collect()
            })
            .collect()
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
        let mut found = HashMap::new();
        for point in response.result {
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
            found.insert(
                key,
                Fetched {
                    payload: payload_of(point.payload)?,
                    vector,
                },
            );
        }
        Ok(keys.iter().map(|k| found.remove(k)).collect())
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
}
