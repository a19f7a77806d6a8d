//! A point's payload in Qdrant: the document's id and, where the index keeps them, its
//! signature, shingle count and facts, and its title's vector, as JSON both engines store.

use serde::Deserialize;

use super::{Payload, StoredPoint};
use crate::confirm::{Facts, base64_words};
use crate::error::{Error, Result};

/// Reads a payload written by [`payload_json`].
pub(super) fn parse_payload(map: &serde_json::Map<String, serde_json::Value>) -> Result<Payload> {
    let id = map
        .get("id")
        .and_then(|v| v.as_str())
        .ok_or_else(|| Error::store("a point without an `id` payload"))?;
    let signature = map
        .get("signature")
        .ok_or_else(|| Error::store(format!("point {id:?} has no `signature` payload")))
        .and_then(|value| {
            decode_signature(value).ok_or_else(|| {
                Error::store(format!(
                    "point {id:?}: `signature` is neither base64 of 32-bit words nor a list of integers"
                ))
            })
        })?;
    let shingles = map
        .get("shingles")
        .and_then(|v| v.as_u64())
        .ok_or_else(|| Error::store(format!("point {id:?} has no `shingles` count")))?;
    let facts = map
        .get("facts")
        .ok_or_else(|| Error::store(format!("point {id:?} has no `facts` payload")))
        .and_then(|facts| {
            Facts::deserialize(facts)
                .map_err(|e| Error::store(format!("point {id:?}: bad `facts`: {e}")))
        })?;
    let title = map
        .get(TITLE)
        .map(|value| {
            value
                .as_str()
                .and_then(base64_words::decode)
                .map(|words| words.into_iter().map(f32::from_bits).collect())
                .ok_or_else(|| {
                    Error::store(format!(
                        "point {id:?}: `{TITLE}` is not base64 of 32-bit floats"
                    ))
                })
        })
        .transpose()?;
    Ok(Payload {
        id: id.to_owned(),
        signature,
        shingles: shingles as u32,
        facts,
        title,
    })
}

/// The payload field of a title's vector.
const TITLE: &str = "title_vector";

/// The payload of `point`: its id, and its signature, shingle count and facts where it has them.
pub(super) fn payload_json(point: &StoredPoint<'_>) -> serde_json::Map<String, serde_json::Value> {
    let mut payload = serde_json::Map::from_iter([("id".to_owned(), point.id.into())]);
    if let Some(sketch) = point.sketch {
        payload.insert(
            "signature".to_owned(),
            encode_signature(sketch.signature).into(),
        );
        payload.insert("shingles".to_owned(), sketch.shingles.into());
        payload.insert(
            "facts".to_owned(),
            serde_json::json!(sketch.facts.to_facts()),
        );
    }
    if let Some(title) = point.title {
        let bits: Vec<u32> = title.iter().map(|x| x.to_bits()).collect();
        payload.insert(TITLE.to_owned(), base64_words::encode(&bits).into());
    }
    payload
}

/// A signature as a payload value: base64 of its little-endian words. Search hits carry their
/// payloads, and a JSON list of 128 integers cost a quarter of a `serve` write's CPU to parse
/// back; one string is copied.
pub(super) fn encode_signature(signature: &[u32]) -> String {
    base64_words::encode(signature)
}

/// Reads [`encode_signature`]'s string, or the list of integers that indexes of format 4 hold.
pub(super) fn decode_signature(value: &serde_json::Value) -> Option<Vec<u32>> {
    match value {
        serde_json::Value::String(text) => base64_words::decode(text),
        serde_json::Value::Array(items) => items
            .iter()
            .map(|x| x.as_u64().and_then(|x| u32::try_from(x).ok()))
            .collect(),
        _ => None,
    }
}
