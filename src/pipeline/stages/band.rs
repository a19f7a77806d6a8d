//! Stage 2, band: the candidates the keys routed to one part propose, routed on to the parts
//! that confirm them.

use rayon::prelude::*;

use super::{Routed, StageFolder, TITLE_BAND, keys_file, read_words};
use crate::confirm::title_block_pairs;
use crate::error::Result;
use crate::pipeline::Part;
use crate::sketch::bucket_pairs;

/// The candidates of the keys every signed part routed to `part`, each as one run proposes it
/// and once, routed by the part that signed its first document: entry `I - 1` goes to part
/// `I`.
pub(super) fn band(signed: &[StageFolder], part: Part) -> Result<Vec<Vec<Routed>>> {
    // Band, key, document and the part that signed it.
    let mut keys: Vec<(u32, u64, u32, u32)> = Vec::new();
    for folder in signed {
        let words = read_words(folder, &keys_file(part))?;
        let signer = folder.part.number;
        keys.extend(words.chunks_exact(4).map(|w| {
            let key = u64::from(w[1]) | (u64::from(w[2]) << 32);
            (w[0], key, w[3], signer)
        }));
    }
    keys.par_sort_unstable();
    let mut pairs = Vec::new();
    // The part that signed each document of a bucket that proposes pairs.
    let mut signer_of = std::collections::HashMap::new();
    for bucket in keys.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        if bucket.len() > 1 {
            signer_of.extend(bucket.iter().map(|k| (k.2, k.3)));
        }
        let doc = |k: &(u32, u64, u32, u32)| k.2;
        match bucket[0].0 {
            TITLE_BAND => title_block_pairs(bucket, doc, &mut pairs),
            _ => bucket_pairs(bucket, doc, &mut pairs),
        }
    }
    drop(keys);
    pairs.par_sort_unstable();
    pairs.dedup();
    let mut routed = vec![Vec::new(); part.count as usize];
    for (a, b) in pairs {
        routed[signer_of[&a] as usize - 1].push((a, b, signer_of[&b]));
    }
    tracing::info!(part = %part, candidates = routed.iter().map(Vec::len).sum::<usize>(), "banded");
    Ok(routed)
}
