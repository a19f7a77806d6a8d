//! Why two documents were, or were not, matched: every piece of evidence the confirm stage
//! weighs (Jaccard exact and estimated, containment both ways, title similarity, differing
//! numbers, cosine), the rule that decided, and a word diff. `neardup explain` prints it; the
//! Python package returns it.

use std::path::Path;

use serde::Serialize;

use super::{DocumentIndex, IndexSettings};
use crate::confirm::{ConfirmSettings, Evidence, Verdict, Weighing};
use crate::diff::{Tokens, diff};
use crate::embed;
use crate::error::{Error, Result};
use crate::io::{Input, ReadOptions, Record, read_corpus};
use crate::similarity::{set_jaccard, shared_count};
use crate::text::{for_each_word, is_number_word};

/// One side of the comparison.
#[derive(Debug, Serialize)]
pub struct Side {
    /// Its id (or `text 1`, `text 2` for texts given as such).
    pub id: String,
    /// Distinct words of the whole text.
    pub words: usize,
    /// Distinct words of the title, notes removed (where the input has a title).
    pub title_words: Option<usize>,
    /// Whether it has a text beside its title.
    pub has_abstract: bool,
    /// Number-like words only this side has.
    pub own_numbers: Vec<String>,
}

/// Everything the confirm stage weighs for two documents, and its verdict.
#[derive(Debug, Serialize)]
pub struct Explanation {
    /// The first document.
    pub a: Side,
    /// The second.
    pub b: Side,
    /// Exact Jaccard of the shingle sets, where the texts are known.
    pub jaccard_exact: Option<f64>,
    /// Exact share of each side's shingles found in the other, where the texts are known.
    pub containment_exact: Option<(f64, f64)>,
    /// The cosine of the two embeddings, where the method embeds.
    pub cosine: Option<f32>,
    /// The figures the rule weighs.
    pub evidence: Evidence,
    /// The rule's verdict.
    pub verdict: Verdict,
    /// How the learned rule weighed the pair, where the rule is learned.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub learned: Option<Weighing>,
    /// What the deciding rule means, in words.
    pub rule_means: &'static str,
    /// The word diff, where the texts are known.
    #[serde(skip)]
    pub diff: Option<String>,
}

/// What decides for a MinHash run with `confirm`: its confirm settings, and no cosine.
pub fn minhash_settings(confirm: ConfirmSettings) -> IndexSettings {
    IndexSettings {
        confirm,
        min_cosine: -1.0,
        ..IndexSettings::default()
    }
}

/// Drops the centring of `settings`, saying whether there was any: the centre is the mean of
/// a corpus's first documents, which two records do not give, so they are compared as made.
pub fn uncentre(settings: &mut IndexSettings) -> bool {
    std::mem::replace(&mut settings.centre, false)
}

/// The records `ids` of `inputs` (the same id twice gives one record twice).
pub fn find_two(inputs: &[Input], read: &ReadOptions, ids: [&str; 2]) -> Result<[Record; 2]> {
    let [a, b] = ids;
    let mut found: [Option<Record>; 2] = [None, None];
    read_corpus(
        inputs,
        read,
        |record| (record.id == a || record.id == b).then(|| record.clone()),
        |record| {
            if let Some(record) = record {
                if record.id == b {
                    found[1] = Some(record.clone());
                }
                if record.id == a {
                    found[0] = Some(record);
                }
            }
        },
    )?;
    let [Some(first), Some(second)] = found else {
        let missing = if found[0].is_none() { a } else { b };
        let files: Vec<String> = inputs
            .iter()
            .map(|i| i.path.display().to_string())
            .collect();
        return Err(Error::Usage(format!(
            "no record {missing:?} in {}; check the id (and the id field)",
            files.join(", ")
        )));
    };
    Ok([first, second])
}

/// The explanation of two records under `settings`, with the cosine of their embeddings where
/// the method `embeds` (the embedder's models under `models`).
pub fn explain_records(
    settings: &IndexSettings,
    embeds: bool,
    records: [Record; 2],
    models: &Path,
) -> Result<Explanation> {
    let embedder = embeds
        .then(|| embed::load(&settings.embedder, models))
        .transpose()?;
    let confirmer = match &embedder {
        Some(embedder) => settings.confirmer_for(embedder.identity())?,
        None => settings.confirmer()?,
    };
    let (sketches, sets): (Vec<_>, Vec<Vec<u64>>) = records
        .iter()
        .map(|record| confirmer.sign_with_shingles(record))
        .unzip();
    let cosine = match &embedder {
        Some(embedder) => {
            let vectors = embedder.embed(&[&records[0].text, &records[1].text])?;
            Some(embed::cosine(&vectors[0], &vectors[1]))
        }
        None => None,
    };
    let (evidence, verdict) = confirmer.confirm(
        sketches[0].as_ref(),
        sketches[1].as_ref(),
        cosine.unwrap_or(1.0),
    );
    let learned = cosine
        .and_then(|cosine| confirmer.weighing(sketches[0].as_ref(), sketches[1].as_ref(), cosine));
    let shared = shared_count(&sets[0], &sets[1]) as f64;
    let share = |set: &Vec<u64>| {
        if set.is_empty() {
            0.0
        } else {
            shared / set.len() as f64
        }
    };
    let numbers = records.each_ref().map(|r| number_words(&r.text));
    let side = |i: usize| Side {
        id: records[i].id.clone(),
        words: sets[i].len(),
        title_words: sketches[i].facts.title.as_ref().map(Vec::len),
        has_abstract: sketches[i].facts.body,
        own_numbers: numbers[i]
            .iter()
            .filter(|n| !numbers[1 - i].contains(n))
            .cloned()
            .collect(),
    };
    Ok(Explanation {
        a: side(0),
        b: side(1),
        jaccard_exact: Some(set_jaccard(&sets[0], &sets[1])),
        containment_exact: Some((share(&sets[0]), share(&sets[1]))),
        cosine,
        evidence,
        verdict,
        learned,
        rule_means: verdict.rule.describe(),
        diff: Some(
            diff(&records[0].text, &records[1].text, Tokens::Words)
                .render(false)
                .trim_end()
                .to_owned(),
        ),
    })
}

/// The explanation of the documents `ids` of the index in `dir`, from what it keeps: their
/// sketches and vectors (no text, so no exact figures and no diff).
pub fn explain_indexed(dir: &Path, ids: [&str; 2], models: &Path) -> Result<Explanation> {
    let [a, b] = ids;
    let index = DocumentIndex::open(dir, models, None)?;
    let docs = [index.document(a)?, index.document(b)?];
    let cosine = embed::cosine(&docs[0].vector, &docs[1].vector);
    let sketches = [docs[0].payload.sketch(), docs[1].payload.sketch()];
    let (evidence, verdict) = index.confirm(sketches[0], sketches[1], cosine);
    let learned = index.weighing(sketches[0], sketches[1], cosine);
    let side = |i: usize| Side {
        id: docs[i].payload.id.clone(),
        words: docs[i].payload.shingles as usize,
        title_words: docs[i].payload.facts.title.as_ref().map(Vec::len),
        has_abstract: docs[i].payload.facts.body,
        // The index keeps hashes of the numbers, not the words.
        own_numbers: Vec::new(),
    };
    Ok(Explanation {
        a: side(0),
        b: side(1),
        jaccard_exact: None,
        containment_exact: None,
        cosine: Some(cosine),
        evidence,
        verdict,
        learned,
        rule_means: verdict.rule.describe(),
        diff: None,
    })
}

fn number_words(text: &str) -> Vec<String> {
    let mut numbers = Vec::new();
    for_each_word(text, |w| {
        if is_number_word(w) && !numbers.iter().any(|n| n == w) {
            numbers.push(w.to_owned());
        }
    });
    numbers
}
