//! Stage 2, band: the candidates the keys routed to one part propose, routed on to the parts
//! that confirm them.

use rayon::prelude::*;

use super::sign::{TITLE_BAND, keys_file, read_keys};
use crate::confirm::title_block_pairs;
use crate::error::Result;
use crate::io::{read_list, write_list};
use crate::output::run::RunWriter;
use crate::pipeline::split::part::Part;
use crate::pipeline::split::stage::{SignedParts, StageFolder};
use crate::sketch::bucket_pairs;

/// The candidates of the keys every signed part routed to `part`, each as one run proposes it
/// and once, routed to the part that signed one of its documents: entry `I - 1` goes to part
/// `I`.
pub(in crate::pipeline) fn band(signed: &SignedParts, part: Part) -> Result<Vec<Vec<Routed>>> {
    // Band, key, and the run's number of the document.
    let mut keys: Vec<(u32, u64, u32)> = Vec::new();
    for folder in &signed.folders {
        let words = read_keys(folder, &keys_file(part))?;
        let first = signed.docs_of(folder.part.number).start;
        keys.extend(words.chunks_exact(4).map(|w| {
            let key = u64::from(w[1]) | (u64::from(w[2]) << 32);
            (w[0], key, first + w[3])
        }));
    }
    keys.par_sort_unstable();
    let mut pairs = Vec::new();
    for bucket in keys.chunk_by(|x, y| (x.0, x.1) == (y.0, y.1)) {
        let doc = |k: &(u32, u64, u32)| k.2;
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
        let (of_a, of_b) = (signed.signer_of(a), signed.signer_of(b));
        // The part of either document, by a hash of the pair: by the first document's
        // alone, the first parts would get most (the lower of two numbers is more often
        // in the first shares).
        let to = match (u64::from(a) << 32 | u64::from(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 63
        {
            0 => of_a,
            _ => of_b,
        };
        routed[to as usize - 1].push((a, b));
    }
    tracing::info!(part = %part, candidates = routed.iter().map(Vec::len).sum::<usize>(), "banded");
    Ok(routed)
}

/// A candidate on its way to the part that confirms it, which signed one of its documents: its
/// documents.
pub(in crate::pipeline) type Routed = (u32, u32);

/// The file of candidates a banded part routes to `part`.
fn candidates_file(part: Part) -> String {
    format!("candidates-{}.bin", part.number)
}

/// A file of 32-bit words a stage wrote, read back checked.
fn read_words(folder: &StageFolder, name: &str) -> Result<Vec<u32>> {
    folder.folder.read_with(name, read_list)
}

/// The candidates every banded part in `banded` routed to `part`.
pub(in crate::pipeline) fn routed_to(banded: &[StageFolder], part: Part) -> Result<Vec<Routed>> {
    let mut routed = Vec::new();
    for folder in banded {
        let words = read_words(folder, &candidates_file(part))?;
        routed.extend(words.chunks_exact(2).map(|w| (w[0], w[1])));
    }
    Ok(routed)
}

/// Writes the candidates `routed` to each part (entry `I - 1` to part `I`) into their files
/// in the folder `run` writes; returns how many.
pub(in crate::pipeline) fn write_routed(
    run: &mut RunWriter,
    routed: Vec<Vec<Routed>>,
) -> Result<usize> {
    let count = routed.iter().map(Vec::len).sum();
    let parts = routed.len() as u32;
    for (number, routed) in (1..=parts).zip(routed) {
        let words: Vec<u32> = routed.iter().flat_map(|&(a, b)| [a, b]).collect();
        let to = Part {
            number,
            count: parts,
        };
        write_words(run, &candidates_file(to), &words)?;
    }
    Ok(count)
}

/// Writes `words` to the file `name` of `run`.
fn write_words(run: &mut RunWriter, name: &str, words: &[u32]) -> Result<()> {
    run.write_with(name, |file| write_list(file, words))
}
