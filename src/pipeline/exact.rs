//! The exact set methods: `jaccard` (pairs at or above the threshold) and `resemblance`
//! (pairs above it), both through the prefix-filtered join.

use std::time::Instant;

use super::{Found, Pair, ReadOptions, SetConfig, StageTimes, read_corpus};
use crate::error::Result;
use crate::io::Input;
use crate::similarity::SetJoin;

pub(super) fn run(
    inputs: &[Input],
    read: &ReadOptions,
    config: &SetConfig,
    strictly_above: bool,
) -> Result<Found> {
    let shingler = config.shingling.shingler();
    let mut times = StageTimes::default();

    let clock = Instant::now();
    let mut sets = Vec::new();
    let corpus = read_corpus(
        inputs,
        read,
        |text| shingler.shingle_set(text),
        |set| sets.push(set),
    )?;
    times.sketch = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let join = SetJoin::new(&sets);
    drop(sets);
    // A join threshold of 0 would pair everything; resemblance "above 0" means sharing one
    // shingle, which the smallest positive threshold finds.
    let floor = config.threshold.max(f64::MIN_POSITIVE);
    let found = join.pairs(floor);
    times.candidates = clock.elapsed().as_secs_f64();

    let clock = Instant::now();
    let candidates = found.len();
    let pairs: Vec<Pair> = found
        .into_iter()
        .filter(|&(_, _, score)| !strictly_above || score > config.threshold)
        .map(|(a, b, score)| Pair {
            a,
            b,
            score,
            cosine: None,
        })
        .collect();
    times.confirm = clock.elapsed().as_secs_f64();

    Ok(Found {
        corpus,
        candidates,
        scored_candidates: None,
        pairs,
        similarity: Box::new(move |x, y| join.similarity(x as usize, y as usize)),
        probes: None,
        times,
    })
}
