//! Signing records and judging candidate pairs under one set of [`ConfirmSettings`].

use rayon::prelude::*;

use crate::error::Result;
use crate::io::Record;
use crate::sketch::{LshParams, MinHasher, Signatures};
use crate::text::Shingler;

use super::{
    ConfirmSettings, Evidence, LearnedModel, Rule, Sketch, SketchFacts, SketchRef, Standing,
    Verdict, Weighing, features,
};

/// Signs records and confirms candidates exactly as a run or an index with these settings
/// does. The `minhash` method and the two-stage index hold one; `neardup merge` builds one to
/// confirm the candidates that parts searched on other machines, and `neardup explain` one to
/// show a single verdict.
pub struct Confirmer {
    settings: ConfirmSettings,
    shingler: Shingler,
    hasher: MinHasher,
    banding: LshParams,
    min_cosine: f32,
    /// The learned rule's model, where the rule is learned.
    learned: Option<LearnedModel>,
}

impl Confirmer {
    /// The confirmer of `settings`; a two-stage candidate whose embeddings' cosine is below
    /// `min_cosine` is refused (-1 refuses none).
    pub fn new(settings: &ConfirmSettings, min_cosine: f32) -> Result<Self> {
        Ok(Confirmer {
            shingler: settings.shingler()?,
            hasher: settings.minhash.hasher(),
            banding: settings.banding(),
            learned: settings.learned_model()?,
            settings: settings.clone(),
            min_cosine,
        })
    }

    /// The learned rule's model, where the rule is learned.
    pub fn learned(&self) -> Option<&LearnedModel> {
        self.learned.as_ref()
    }

    /// How the learned rule weighs two sketches whose embeddings' cosine is `cosine`, where the
    /// rule is learned.
    pub fn weighing(&self, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> Option<Weighing> {
        let model = self.learned.as_ref()?;
        Some(model.weighing(&features(&Evidence::of(a, b), a, b, cosine)))
    }

    /// The learned model's probability that two sketches whose embeddings' cosine is `cosine`
    /// are duplicates, with the evidence it weighed.
    fn weigh_learned(
        &self,
        model: &LearnedModel,
        a: SketchRef<'_>,
        b: SketchRef<'_>,
        cosine: f32,
    ) -> (Evidence, f64) {
        let evidence = Evidence::of(a, b);
        let probability = model.probability(&features(&evidence, a, b, cosine));
        (evidence, probability)
    }

    /// What the confirm stage needs of a record: its MinHash signature, distinct shingle
    /// count and facts.
    pub fn sign(&self, record: &Record) -> Sketch {
        self.sign_with_shingles(record).0
    }

    /// [`Confirmer::sign`], also returning the record's shingle set (sorted hashes).
    pub fn sign_with_shingles(&self, record: &Record) -> (Sketch, Vec<u64>) {
        Sketch::of(record, &self.shingler, &self.hasher)
    }

    /// The signature length.
    pub fn num_perm(&self) -> usize {
        self.hasher.num_perm()
    }

    /// The LSH banding of these settings (the one given, or the one chosen for the rule).
    pub fn banding(&self) -> LshParams {
        self.banding
    }

    /// The verdict of the rule on two sketches, with the evidence it rests on.
    pub fn decide(&self, a: SketchRef<'_>, b: SketchRef<'_>) -> (Evidence, Verdict) {
        self.settings.rule.decide(a, b, self.banding)
    }

    /// [`Confirmer::decide`]'s Jaccard estimate and the pair's [`Standing`], without the rest
    /// of the evidence ([`ConfirmRule::judge`](super::ConfirmRule::judge)): what a run over
    /// every candidate needs.
    pub fn judge(&self, a: SketchRef<'_>, b: SketchRef<'_>) -> (f64, Standing) {
        self.settings.rule.judge(a, b, self.banding)
    }

    /// [`Confirmer::confirm`]'s score (the Jaccard estimate, or the learned rule's
    /// probability) and the candidate's standing, without the rest of the evidence.
    pub fn judge_candidate(
        &self,
        a: SketchRef<'_>,
        b: SketchRef<'_>,
        cosine: f32,
    ) -> (f64, Standing) {
        let (score, standing) = match &self.learned {
            Some(model) => (self.weigh_learned(model, a, b, cosine).1, Standing::Learned),
            None => self.judge(a, b),
        };
        match cosine >= self.min_cosine {
            true => (score, standing),
            false => (score, Standing::Distant),
        }
    }

    /// The score a candidate must reach, where its standing turns on it: a Jaccard estimate,
    /// or the learned rule's probability.
    pub fn threshold(&self) -> f64 {
        self.settings.rule.threshold
    }

    /// Judges `count` candidates in parallel, the `i`th being `candidate(i)`: its two documents
    /// (numbers into `signatures` and `sketches`) and, for a two-stage candidate, the cosine of
    /// their embeddings. Returns each one's Jaccard estimate and standing, in order (a
    /// duplicate is one whose standing [`at`](Standing::at) [`Confirmer::threshold`] says
    /// so). Every method's confirm stage is this loop.
    pub fn judge_all(
        &self,
        signatures: &Signatures,
        sketches: &SketchFacts,
        count: usize,
        candidate: impl Fn(usize) -> (u32, u32, Option<f32>) + Sync,
    ) -> (Vec<f64>, Vec<Standing>) {
        self.judge_each(count, |i| {
            sketches.prefetch_ahead(signatures, i, |j| {
                (j < count).then(|| candidate(j)).map(|(a, b, _)| (a, b))
            });
            let (a, b, cosine) = candidate(i);
            (
                sketches.get(signatures, a as usize),
                sketches.get(signatures, b as usize),
                cosine,
            )
        })
    }

    /// [`Confirmer::judge_all`] over sketches wherever they are: the `i`th candidate's two
    /// sketches and cosine are `candidate(i)`.
    pub fn judge_each<'a>(
        &self,
        count: usize,
        candidate: impl Fn(usize) -> (SketchRef<'a>, SketchRef<'a>, Option<f32>) + Sync,
    ) -> (Vec<f64>, Vec<Standing>) {
        (0..count)
            .into_par_iter()
            .map(|i| match candidate(i) {
                (a, b, Some(cosine)) => self.judge_candidate(a, b, cosine),
                (a, b, None) => self.judge(a, b),
            })
            .unzip()
    }

    /// The verdict on a two-stage candidate (two documents' sketches and the cosine of their
    /// embeddings), with the evidence it rests on. A neighbour below `min_cosine` is no
    /// candidate at all.
    pub fn confirm(&self, a: SketchRef<'_>, b: SketchRef<'_>, cosine: f32) -> (Evidence, Verdict) {
        let (evidence, verdict) = match &self.learned {
            Some(model) => {
                let (evidence, probability) = self.weigh_learned(model, a, b, cosine);
                (
                    evidence,
                    Standing::Learned.at(probability, self.threshold()),
                )
            }
            None => self.decide(a, b),
        };
        if cosine < self.min_cosine {
            let distant = Verdict {
                duplicate: false,
                rule: Rule::Distant,
            };
            return (evidence, distant);
        }
        (evidence, verdict)
    }
}
