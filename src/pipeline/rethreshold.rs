//! A run's pairs decided again at another threshold, nothing signed or embedded again.
//!
//! A MinHash or two-stage run judges each candidate once, and keeps its Jaccard estimate and
//! its [`Standing`](crate::confirm::Standing): what the evidence rule found of it that the
//! threshold does not change (a text too short to judge, numbers that differ, or the rule
//! that accepts it below the threshold: containment, titles, or none). At a new threshold,
//! each candidate's verdict is its standing at that threshold, and the confirmed pairs are
//! grouped again with the similarity the run grouped by.
//!
//! What the new threshold can reach is what the run proposed. Raised, the pairs are exactly
//! those a run at that threshold confirms among these candidates. Lowered, only these
//! candidates are decided again: MinHash's bands were chosen for the run's threshold, so a
//! run at the lower one may propose, and so find, more. The exact methods (`jaccard`,
//! `resemblance`, `simhash`) keep only the pairs that reached their threshold, so they can
//! raise it and not lower it.

use super::dedup::{Found, group};
use super::{Dedup, Method, Pair, ScoredCandidates};
use crate::confirm::Confirm;
use crate::error::{Error, Result};

/// `dedup`, a run of `method` (made by
/// [`dedup_to_rethreshold`](super::dedup::dedup_to_rethreshold)), with its candidates decided
/// again where the threshold is `threshold`; and the method at that threshold, which the run's
/// settings now name. The rule that confirmed each pair is in [`Dedup::pair_rules`].
pub(super) fn rethreshold(
    dedup: &Dedup,
    method: &Method,
    threshold: f64,
) -> Result<(Dedup, Method)> {
    if !(0.0..=1.0).contains(&threshold) {
        return Err(Error::Usage(format!(
            "threshold {threshold}: give a similarity from 0 to 1"
        )));
    }
    if dedup.part.is_some() {
        return Err(Error::Usage(
            "a part of a split run has no groups to decide again: merge the parts first".into(),
        ));
    }
    let Some(similarity) = &dedup.similarity else {
        return Err(Error::Usage(
            "this run did not keep what grouping again needs: run it to rethreshold".into(),
        ));
    };
    let moved = method.with_threshold(threshold);
    let pairs = match method {
        Method::MinHash(_) | Method::TwoStage(_) => confirmed_again(dedup, method, threshold)?,
        Method::Jaccard(_) | Method::Resemblance(_) | Method::SimHash(_) => {
            raised(dedup, &moved, threshold)?
        }
    };
    let found = Found {
        corpus: dedup.corpus.clone(),
        candidates: dedup.candidates,
        scored_candidates: dedup.scored_candidates.clone(),
        pairs,
        similarity: similarity.clone(),
        probes: dedup.probes,
        cells: dedup.cells,
        collection: dedup.collection,
        model: dedup.model.clone(),
        times: dedup.times.clone(),
    };
    Ok((group(found, &moved, true), moved))
}

/// The candidates of a MinHash or two-stage run confirmed at `threshold`.
fn confirmed_again(dedup: &Dedup, method: &Method, threshold: f64) -> Result<Vec<Pair>> {
    let rule = match method {
        Method::MinHash(c) => c.confirm.rule,
        Method::TwoStage(c) => c.settings.confirm.rule,
        _ => unreachable!("only MinHash and two-stage runs judge candidates"),
    };
    if rule.confirm == Confirm::Band {
        return Err(Error::Usage(
            "under confirm = \"band\" a shared band decides, not a threshold: run again with \
             another confirm rule"
                .into(),
        ));
    }
    dedup
        .scored_candidates
        .as_ref()
        .and_then(ScoredCandidates::held)
        .and_then(|scored| scored.confirmed_at(threshold))
        .map(|(pairs, _)| pairs)
        .ok_or_else(|| {
            Error::Usage("this run kept its verdicts, not its candidates' standings".into())
        })
}

/// The pairs of an exact method's run that reach `threshold`, at or above its own.
/// `raised` is the run's method at `threshold`.
fn raised(dedup: &Dedup, raised: &Method, threshold: f64) -> Result<Vec<Pair>> {
    if raised.threshold() < dedup.threshold {
        return Err(Error::Usage(format!(
            "this {} run kept only the pairs that reached its threshold {}: run it again at \
             {threshold} to find more",
            raised.name().as_str(),
            dedup.threshold
        )));
    }
    let keeps = |score: f64| match raised {
        Method::Resemblance(_) => score > threshold,
        _ => score >= raised.threshold(),
    };
    Ok(dedup
        .pairs
        .iter()
        .filter(|p| keeps(p.score))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec, Input, ReadOptions};
    use crate::pipeline::dedup::{dedup, dedup_to_rethreshold};
    use crate::settings::MethodName;

    /// Families of records whose members share more or fewer words with the first: their
    /// Jaccard similarities spread from about 0.5 to 1.
    fn corpus(dir: &std::path::Path) -> (Vec<Input>, ReadOptions) {
        let mut lines = String::new();
        for family in 0..12 {
            let words: Vec<String> = (0..40).map(|w| format!("f{family}w{w}")).collect();
            for member in 0..6 {
                let mut text = words.clone();
                for changed in text.iter_mut().take(member * 3) {
                    changed.push('x');
                }
                lines.push_str(&format!(
                    "{{\"core_id\":\"{family}-{member}\",\"processed_title\":\"\",\
                     \"processed_abstract\":\"{}\"}}\n",
                    text.join(" ")
                ));
            }
        }
        let path = dir.join("in.jsonl");
        std::fs::write(&path, lines).unwrap();
        let read = ReadOptions {
            fields: FieldSpec::default(),
            skip_invalid: false,
            max_doc_bytes: DEFAULT_MAX_DOC_BYTES,
        };
        (vec![Input::new(path, None).unwrap()], read)
    }

    /// A method of `name` at `threshold`, its banding fixed so that every threshold proposes
    /// the same candidates.
    fn method(name: MethodName, threshold: f64) -> Method {
        let mut settings = serde_json::Map::new();
        settings.insert("threshold".into(), threshold.into());
        if name == MethodName::Minhash {
            settings.insert("bands".into(), 32.into());
            settings.insert("rows".into(), 4.into());
            // The members of a family contain one another's words: the containment rule would
            // confirm them at every threshold, and the thresholds would part nothing.
            settings.insert("containment".into(), 0.0.into());
        }
        Method::from_settings(name, settings).unwrap()
    }

    /// A run's pairs, and its groups' members and representatives.
    type Findings = (Vec<(u32, u32)>, Vec<(Vec<u32>, u32)>);

    fn pairs_and_groups(dedup: &Dedup) -> Findings {
        let pairs = dedup.pairs.iter().map(|p| (p.a, p.b)).collect();
        let groups = dedup
            .groups
            .iter()
            .map(|g| (g.members.clone(), g.representative))
            .collect();
        (pairs, groups)
    }

    #[test]
    fn a_run_decided_again_finds_what_a_run_at_that_threshold_finds() {
        let dir = tempfile::tempdir().unwrap();
        let (inputs, read) = corpus(dir.path());
        let run_at = |name, threshold| {
            dedup_to_rethreshold(&inputs, &read, &method(name, threshold), dir.path()).unwrap()
        };
        let first = run_at(MethodName::Minhash, 0.8);
        let mut counts = Vec::new();
        for threshold in [0.5, 0.65, 0.9, 0.8] {
            let (again, moved) =
                rethreshold(&first, &method(MethodName::Minhash, 0.8), threshold).unwrap();
            let fresh = run_at(MethodName::Minhash, threshold);
            assert_eq!(moved, method(MethodName::Minhash, threshold));
            assert_eq!(again.threshold, threshold);
            assert_eq!(
                pairs_and_groups(&again),
                pairs_and_groups(&fresh),
                "at {threshold}"
            );
            let rules = again.pair_rules().unwrap();
            assert_eq!(rules, fresh.pair_rules().unwrap());
            assert_eq!(rules.len(), again.pairs.len());
            counts.push(again.pairs.len());
        }
        // The thresholds tried part the pairs differently.
        assert!(counts[0] > counts[1] && counts[1] > counts[3] && counts[3] > counts[2]);

        // The exact methods raise their threshold, and refuse to lower it.
        let exact = run_at(MethodName::Jaccard, 0.6);
        let (raised, _) = rethreshold(&exact, &method(MethodName::Jaccard, 0.6), 0.8).unwrap();
        let fresh = run_at(MethodName::Jaccard, 0.8);
        assert_eq!(pairs_and_groups(&raised), pairs_and_groups(&fresh));
        assert!(raised.pairs.len() < exact.pairs.len());
        let lowered = rethreshold(&exact, &method(MethodName::Jaccard, 0.6), 0.5);
        let message = lowered.err().unwrap().to_string();
        assert!(message.contains("run it again at 0.5"), "{message}");
    }

    #[test]
    fn a_run_that_did_not_keep_its_similarity_or_a_threshold_out_of_range_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (inputs, read) = corpus(dir.path());
        let minhash = method(MethodName::Minhash, 0.8);
        let plain = dedup(&inputs, &read, &minhash, dir.path()).unwrap();
        let message = rethreshold(&plain, &minhash, 0.9)
            .err()
            .unwrap()
            .to_string();
        assert!(message.contains("did not keep"), "{message}");
        let kept = dedup_to_rethreshold(&inputs, &read, &minhash, dir.path()).unwrap();
        for threshold in [1.5, -0.1, f64::NAN] {
            let message = rethreshold(&kept, &minhash, threshold)
                .err()
                .unwrap()
                .to_string();
            assert!(message.contains("from 0 to 1"), "{message}");
        }
    }
}
