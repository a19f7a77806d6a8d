//! The rules that turn the [`Evidence`] on a candidate pair into a [`Verdict`]: which rule
//! applies is [`Confirm`], the evidence rule's settings are [`ConfirmRule`].

use serde::{Deserialize, Serialize};

#[cfg(test)]
use super::evidence::Sketch;
use super::evidence::{Evidence, SketchRef, containment};
use crate::sketch::{LshParams, share_band};

/// How a candidate pair is confirmed.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Confirm {
    /// Weigh every piece of evidence: short texts, numbers, Jaccard, containment, titles.
    Evidence,
    /// The design card's rule: the signatures' Jaccard estimate must reach the threshold.
    Estimate,
    /// Sharing one LSH band is enough (datasketch's `MinHashLSH.query`).
    Band,
}

/// What counts as a duplicate: the user's choice between two notions that no one rule serves
/// (the validation suite's leave-one-domain-out figures, docs/evaluation.md).
#[derive(
    Clone,
    Copy,
    Debug,
    Default,
    PartialEq,
    Eq,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Match {
    /// Copies of one text: the same words, give or take edits, truncation, added boilerplate or
    /// a missing abstract; two papers on one topic are not duplicates. `confirm` chooses the
    /// rule.
    #[default]
    Copies,
    /// Two-stage: one meaning in other words. A fitted logistic model weighs the embeddings'
    /// cosine with the copies' evidence (`confirm_model`, else the one fitted on paraphrase
    /// sets); the threshold is then the probability a duplicate reaches.
    Meaning,
}

/// Which numbers the evidence rule compares.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum NumberGuard {
    /// The titles' numbers where both records have a title, else the whole texts': `phase ii`
    /// against `phase iii` is refused, a page or version number in one abstract is not.
    Title,
    /// The whole texts' numbers, abstracts included.
    Text,
    /// None: numbers decide nothing.
    Off,
}

/// The rule a candidate must pass.
///
/// Under [`Confirm::Evidence`] (the default), in this order:
/// 1. a text with fewer than `min_shingles` distinct words is never a duplicate (a title such as
///    `editorial` matches every other `editorial`);
/// 2. a pair where each title has a number the other lacks is not (`phase ii` / `phase iii`;
///    the whole texts' numbers where a side has no title; see [`NumberGuard`]);
/// 3. a pair whose whole texts' Jaccard estimate reaches `threshold` is;
/// 4. so is a pair of two texts with a body (an abstract) where one contains at least
///    `containment` of the other's words (the smaller has at least 10), and whose titles, where
///    both have one, share at least half their words: a truncated abstract against the full
///    one, or the same text with a glued prefix or added boilerplate;
/// 5. so is a pair whose titles (bracketed notes removed, at least 4 words) reach
///    `title_threshold`, where at most one side has an abstract: a record against a copy
///    that has its title only.
///
/// Each rule and threshold was chosen leaving one domain out of the validation suite
/// (eval/domains: bibliographic records, citation strings, CD catalogue entries, two digital
/// libraries' records, generated repository noise): for each domain, the settings best on the
/// others (docs/evaluation.md).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConfirmRule {
    /// Jaccard similarity of the whole texts that makes a duplicate (the design card's rule is
    /// `confirm = "estimate"` with 0.7).
    pub threshold: f64,
    /// How candidates are confirmed.
    pub confirm: Confirm,
    /// What counts as a duplicate: copies (confirmed by `confirm`), or one meaning (the learned
    /// rule).
    #[serde(rename = "match")]
    pub matching: Match,
    /// Evidence rule: never confirm a text with fewer distinct shingles (words).
    pub min_shingles: u32,
    /// Evidence rule: Jaccard of the titles that makes a title-only copy a duplicate.
    pub title_threshold: f64,
    /// Evidence rule: share of the smaller text's words found in the larger that makes two
    /// texts with a body duplicates; 0 turns the rule off.
    pub containment: f64,
    /// Evidence rule: which numbers must agree.
    pub number_guard: NumberGuard,
}

/// Titles shorter than this (in distinct words, notes removed) are too common to match on.
pub(super) const MIN_TITLE_WORDS: usize = 4;
/// Titles that differ need this many: four words and a fifth is another title ("letter to
/// the editor" and its "reply"), where the four are common words it is a title of many records.
const MIN_DIFFERING_TITLE_WORDS: usize = 5;
/// The containment rule needs a smaller text of at least this many distinct words: fewer are
/// contained in too many unrelated texts (catalogue entries made of a few common tokens).
const MIN_CONTAINED_WORDS: u32 = 10;
/// The containment rule needs titles (where both records have one) that share at least this
/// share of their words: two papers may share most of a boilerplate-heavy abstract.
const CONTAINED_TITLE_JACCARD: f64 = 0.5;

impl Default for ConfirmRule {
    /// The evidence rule at the values chosen on the validation suite (the type's doc).
    fn default() -> Self {
        ConfirmRule {
            threshold: 0.8,
            confirm: Confirm::Evidence,
            matching: Match::Copies,
            min_shingles: 4,
            title_threshold: 0.8,
            containment: 0.7,
            number_guard: NumberGuard::Title,
        }
    }
}

impl ConfirmRule {
    /// Whether the learned rule decides (`match = meaning`).
    pub fn is_learned(&self) -> bool {
        self.matching == Match::Meaning
    }

    /// Whether a record and a copy of its title alone are decided by their titles' words
    /// alone, beyond the whole texts' Jaccard estimate ([`ConfirmRule::titles_match`]): so
    /// under the evidence rule, unless the learned rule decides.
    pub fn matches_title_only_by_words(&self) -> bool {
        self.confirm == Confirm::Evidence && !self.is_learned()
    }

    /// Whether two titles whose words' Jaccard is `jaccard`, the shorter with `words` words,
    /// make a record and a copy of its title alone duplicates (the evidence rule's fifth).
    pub fn titles_match(&self, jaccard: f64, words: usize) -> bool {
        let least = if jaccard < 1.0 {
            MIN_DIFFERING_TITLE_WORDS
        } else {
            MIN_TITLE_WORDS
        };
        jaccard >= self.title_threshold && words >= least
    }

    /// The verdict on two sketches under `banding`, and the evidence it rests on.
    pub fn decide(
        &self,
        a: SketchRef<'_>,
        b: SketchRef<'_>,
        banding: LshParams,
    ) -> (Evidence, Verdict) {
        let evidence = Evidence::of(a, b);
        let verdict = self
            .standing(&evidence, a, b, banding, || evidence.containment)
            .at(evidence.jaccard, self.threshold);
        (evidence, verdict)
    }

    /// [`ConfirmRule::decide`]'s Jaccard estimate, and the pair's [`Standing`]: its verdict at
    /// any threshold. The two texts' samples are read only where the verdict may turn on their
    /// containment, which most candidates of a large run never reach (their titles disagree,
    /// or one has no body).
    pub fn judge(&self, a: SketchRef<'_>, b: SketchRef<'_>, banding: LshParams) -> (f64, Standing) {
        let evidence = Evidence::without_containment(a, b);
        let standing = self.standing(&evidence, a, b, banding, || {
            containment(a, b, evidence.jaccard).0
        });
        (evidence.jaccard, standing)
    }

    /// What decides `a` and `b` whatever the threshold, given their `evidence`.
    fn standing(
        &self,
        evidence: &Evidence,
        a: SketchRef<'_>,
        b: SketchRef<'_>,
        banding: LshParams,
        containment: impl FnOnce() -> f64,
    ) -> Standing {
        match self.confirm {
            Confirm::Estimate => Standing::JaccardOrBelow,
            Confirm::Band
                if evidence.jaccard > 0.0 && share_band(a.signature, b.signature, banding) =>
            {
                Standing::Banded
            }
            Confirm::Band => Standing::Unbanded,
            // A pair judged here has no cosine for the learned rule to weigh: `match = meaning`
            // is refused without one (`MinHashConfig::validate`), so this is the evidence rule.
            Confirm::Evidence => self.weigh(evidence, containment),
        }
    }

    fn weigh(&self, e: &Evidence, containment: impl FnOnce() -> f64) -> Standing {
        let numbers_differ = match self.number_guard {
            NumberGuard::Title => e.title_numbers_differ.unwrap_or(e.numbers_differ),
            NumberGuard::Text => e.numbers_differ,
            NumberGuard::Off => false,
        };
        let titles_agree = e.title_jaccard.is_none_or(|t| t >= CONTAINED_TITLE_JACCARD);
        if e.smaller < self.min_shingles {
            Standing::ShortText
        } else if numbers_differ {
            Standing::Numbers
        } else if self.containment > 0.0
            && e.both_bodies
            && e.smaller >= MIN_CONTAINED_WORDS
            && titles_agree
            && containment() >= self.containment
        {
            Standing::JaccardOrContainment
        } else if !e.both_bodies
            && e.title_jaccard
                .is_some_and(|t| self.titles_match(t, e.title_words))
        {
            Standing::JaccardOrTitle
        } else {
            Standing::JaccardOrBelow
        }
    }
}

/// A candidate's verdict at any Jaccard threshold: what the rule found of it that the
/// threshold does not change. A run keeps it for every candidate (one byte), so that its pairs
/// can be decided again at another threshold without their sketches (`rethreshold`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Refused: a text has fewer distinct words than `min_shingles`.
    ShortText,
    /// Refused: each side has a number the other lacks.
    Numbers,
    /// Refused: the embeddings' cosine is below `min_cosine`.
    Distant,
    /// Accepted: the signatures share an LSH band (`--confirm band`).
    Banded,
    /// Refused: they share no band (`--confirm band`).
    Unbanded,
    /// Accepted where the Jaccard estimate reaches the threshold, else by containment.
    JaccardOrContainment,
    /// Accepted where the Jaccard estimate reaches the threshold, else by the titles.
    JaccardOrTitle,
    /// Accepted where the Jaccard estimate reaches the threshold, else refused.
    JaccardOrBelow,
    /// Accepted where the learned model's probability (the pair's score) reaches the threshold.
    Learned,
}

impl Standing {
    /// The verdict on a pair of this standing, whose Jaccard estimate (its probability, where
    /// the standing is [`Standing::Learned`]) is `jaccard`, where the threshold is `threshold`.
    pub fn at(self, jaccard: f64, threshold: f64) -> Verdict {
        let (duplicate, rule) = match self {
            Standing::ShortText => (false, Rule::ShortText),
            Standing::Numbers => (false, Rule::Numbers),
            Standing::Distant => (false, Rule::Distant),
            Standing::Banded => (true, Rule::Band),
            Standing::Unbanded => (false, Rule::Below),
            Standing::Learned => (jaccard >= threshold, Rule::Learned),
            _ if jaccard >= threshold => (true, Rule::Jaccard),
            Standing::JaccardOrContainment => (true, Rule::Containment),
            Standing::JaccardOrTitle => (true, Rule::Title),
            Standing::JaccardOrBelow => (false, Rule::Below),
        };
        Verdict { duplicate, rule }
    }
}

/// The rule that decided a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, utoipa::ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Rule {
    /// Accepted: the whole texts' Jaccard estimate reached the threshold.
    Jaccard,
    /// Accepted: a shared LSH band (`--confirm band`).
    Band,
    /// Accepted: the titles (notes removed) agree, and at most one side has a body.
    Title,
    /// Accepted: both texts have a body, one contains most of the other's words, and their
    /// titles do not disagree.
    Containment,
    /// Decided by the learned model: accepted where its probability reached the threshold.
    Learned,
    /// Refused: a text has fewer distinct words than `min_shingles`.
    ShortText,
    /// Refused: each side has a number the other lacks.
    Numbers,
    /// Refused: no rule reached its threshold.
    Below,
    /// Refused: the embeddings' cosine is below `min_cosine`, so the pair is no candidate.
    Distant,
}

impl Rule {
    /// The rule's name, as JSON writes it.
    pub fn name(self) -> &'static str {
        match self {
            Rule::Jaccard => "jaccard",
            Rule::Band => "band",
            Rule::Title => "title",
            Rule::Containment => "containment",
            Rule::Learned => "learned",
            Rule::ShortText => "short-text",
            Rule::Numbers => "numbers",
            Rule::Below => "below",
            Rule::Distant => "distant",
        }
    }

    /// What the rule means, for `explain`.
    pub fn describe(self) -> &'static str {
        match self {
            Rule::Jaccard => "the whole texts' Jaccard estimate reached the threshold",
            Rule::Band => "the signatures share an LSH band",
            Rule::Title => {
                "the titles agree (notes removed) and at most one record has an abstract"
            }
            Rule::Containment => {
                "one text contains the other's words (both have an abstract; titles, where both have one, share half their words)"
            }
            Rule::Learned => {
                "the learned model weighed every piece of evidence and the cosine: a duplicate where its probability reaches the threshold"
            }
            Rule::ShortText => "a text is too short to judge (fewer words than min_shingles)",
            Rule::Numbers => {
                "each record has a number the other lacks (phase ii / phase iii; in the titles where both have one)"
            }
            Rule::Below => "no rule reached its threshold",
            Rule::Distant => "the embeddings' cosine is below min_cosine: not a candidate",
        }
    }

    /// What the rule decided on in `evidence`, for `explain`: the figures it weighed, with the
    /// pair's exact Jaccard beside the estimate where the texts are known.
    pub fn grounds(self, evidence: &Evidence, exact_jaccard: Option<f64>) -> String {
        let exact = exact_jaccard.map_or(String::new(), |j| format!(" (exact {j:.3})"));
        let jaccard = format!(
            "the Jaccard estimate {:.3} from the signatures{exact}",
            evidence.jaccard
        );
        let containment = format!(
            "the containment {:.3} {}",
            evidence.containment,
            if evidence.containment_sampled {
                "from the word samples (exact up to 128 words)"
            } else {
                "estimated from the signatures"
            }
        );
        match self {
            Rule::Jaccard => jaccard,
            Rule::Containment => format!("{containment}, with {jaccard} below the threshold"),
            Rule::Learned => {
                "the learned model's weights on every piece of evidence and the cosine".into()
            }
            Rule::Below => format!("{jaccard} and {containment}, both below their thresholds"),
            Rule::Title => "the titles' exact words".into(),
            Rule::Numbers => "the exact number words".into(),
            Rule::ShortText => "the exact count of distinct words".into(),
            Rule::Band => "the signatures' LSH bands".into(),
            Rule::Distant => "the embeddings' cosine".into(),
        }
    }
}

/// A decision and the rule behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Verdict {
    /// Whether the pair is a duplicate.
    pub duplicate: bool,
    /// The rule that decided.
    pub rule: Rule,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::DEFAULT_MIN_COSINE;
    use crate::sketch::MinHashParams;

    /// The sketch of a record with a title and a body, as the pipelines make it.
    fn sketch_of(title: &str, body: &str) -> Sketch {
        let record = crate::io::Record::from_fields(String::new(), &[title, body]);
        let shingler = crate::text::ShinglingSpec::default()
            .shingler(crate::text::UNIGRAMS)
            .unwrap();
        Sketch::of(&record, &shingler, &MinHashParams::default().hasher()).0
    }

    /// One pair for each rule, decided by it, with what `explain` says it rests on. The match
    /// has no wildcard: a new rule does not compile here until it has its case.
    #[test]
    fn every_rule_decides_a_pair_of_its_own() {
        let abstract_ = "we studied the effect of early mobilisation on recovery after stroke in \
            a randomised trial of two hundred patients across four hospitals and found that \
            walking within two days shortened the stay and improved independence";
        let title = "early mobilisation after stroke: a randomised trial";
        let cut: String = abstract_
            .split_whitespace()
            .take(16)
            .collect::<Vec<_>>()
            .join(" ");
        let full = sketch_of(title, abstract_);
        let evidence_rule = ConfirmRule::default();
        let settings = |rule: ConfirmRule| super::super::ConfirmSettings {
            rule,
            ..Default::default()
        };
        for rule in [
            Rule::Jaccard,
            Rule::Band,
            Rule::Title,
            Rule::Containment,
            Rule::Learned,
            Rule::ShortText,
            Rule::Numbers,
            Rule::Below,
            Rule::Distant,
        ] {
            let (confirm_rule, a, b, cosine) = match rule {
                Rule::Jaccard => (evidence_rule, full.clone(), full.clone(), 1.0),
                Rule::Band => {
                    let band = ConfirmRule {
                        confirm: Confirm::Band,
                        ..evidence_rule
                    };
                    let edited = sketch_of(title, &format!("{abstract_} at three months"));
                    (band, full.clone(), edited, 1.0)
                }
                Rule::Title => (evidence_rule, full.clone(), sketch_of(title, ""), 1.0),
                Rule::Containment => (evidence_rule, full.clone(), sketch_of(title, &cut), 1.0),
                Rule::Learned => {
                    let learned = ConfirmRule {
                        matching: Match::Meaning,
                        threshold: super::super::LEARNED_THRESHOLD,
                        ..evidence_rule
                    };
                    (learned, full.clone(), sketch_of(title, &cut), 0.95)
                }
                Rule::ShortText => {
                    let short = sketch_of("erratum", "");
                    (evidence_rule, short.clone(), short, 1.0)
                }
                Rule::Numbers => (
                    evidence_rule,
                    sketch_of(&format!("{title} phase ii"), abstract_),
                    sketch_of(&format!("{title} phase iii"), abstract_),
                    1.0,
                ),
                Rule::Below => (
                    evidence_rule,
                    full.clone(),
                    sketch_of(
                        "hip fracture surgery within a day: a cohort study",
                        "we followed nine hundred older adults after hip fracture",
                    ),
                    1.0,
                ),
                Rule::Distant => (evidence_rule, full.clone(), full.clone(), -0.5),
            };
            let confirmer =
                super::super::Confirmer::new(&settings(confirm_rule), DEFAULT_MIN_COSINE).unwrap();
            let (evidence, verdict) = confirmer.confirm(a.as_ref(), b.as_ref(), cosine);
            assert_eq!(verdict.rule, rule, "{evidence:?}");
            assert_eq!(
                verdict.duplicate,
                matches!(
                    rule,
                    Rule::Jaccard | Rule::Band | Rule::Title | Rule::Containment | Rule::Learned
                ),
                "{rule:?}"
            );
            assert!(!rule.describe().is_empty() && !rule.grounds(&evidence, None).is_empty());
        }
    }

    #[test]
    fn judging_without_the_evidence_gives_the_verdicts_and_estimates_of_deciding() {
        let rule = ConfirmRule::default();
        let banding = super::super::ConfirmSettings {
            rule,
            ..Default::default()
        }
        .banding();
        let words = |from: usize, count: usize| -> String {
            (from..from + count)
                .map(|i| format!("w{}", i * 7 % 101))
                .collect::<Vec<_>>()
                .join(" ")
        };
        // Records, their truncated and title-only copies, retitled and renumbered ones.
        let mut sketches = Vec::new();
        for paper in 0..6 {
            let title = format!(
                "study {} of gait training after stroke",
                words(paper * 3, 4)
            );
            let body = words(paper * 11, 60 + paper * 20);
            sketches.push(sketch_of(&title, &body));
            sketches.push(sketch_of(&title, &body[..body.len() / 2]));
            sketches.push(sketch_of(&title, ""));
            sketches.push(sketch_of(&format!("another {title} entirely"), &body));
            sketches.push(sketch_of(&format!("{title} phase {paper}"), &body));
        }
        let mut rules = Vec::new();
        for a in &sketches {
            for b in &sketches {
                let (evidence, verdict) = rule.decide(a.as_ref(), b.as_ref(), banding);
                let (jaccard, standing) = rule.judge(a.as_ref(), b.as_ref(), banding);
                assert_eq!(jaccard, evidence.jaccard, "{evidence:?}");
                assert_eq!(
                    standing.at(jaccard, rule.threshold),
                    verdict,
                    "{evidence:?}"
                );
                // At another threshold, the verdict of a rule set at that threshold.
                for threshold in [0.5, 0.9] {
                    let moved = ConfirmRule { threshold, ..rule };
                    let (_, verdict) = moved.decide(a.as_ref(), b.as_ref(), banding);
                    assert_eq!(standing.at(jaccard, threshold), verdict, "{evidence:?}");
                }
                rules.push(verdict.rule);
            }
        }
        for rule in [Rule::Jaccard, Rule::Containment, Rule::Title, Rule::Below] {
            assert!(
                rules.contains(&rule),
                "no pair decided by {rule:?}: {rules:?}"
            );
        }
    }

    #[test]
    fn a_title_only_copy_passes_and_a_short_title_with_a_word_more_is_another() {
        let rule = ConfirmRule::default();
        let banding = super::super::ConfirmSettings {
            rule,
            ..Default::default()
        }
        .banding();
        let body = "we asked the editors of forty journals how they handle the letters readers \
            send about published trials and what share of them reach print";
        let decide = |a: &Sketch, b: &Sketch| rule.decide(a.as_ref(), b.as_ref(), banding).1;
        let record = sketch_of("letter to the editor", body);
        // The same four words, a note aside: a copy of the title.
        let copy = sketch_of("Letter to the editor [erratum]", "");
        assert_eq!(decide(&copy, &record).rule, Rule::Title);
        // Four words and a fifth: title Jaccard 0.8, but another title.
        let reply = sketch_of("letter to the editor reply", "");
        assert!(!decide(&reply, &record).duplicate);
        // Longer titles may differ by a word (a prefix glued to the first one).
        let long = "robot assisted gait training after stroke in older adults";
        let glued = sketch_of(&format!("abstractobjectives{long}"), "");
        let verdict = decide(&glued, &sketch_of(long, body));
        assert_eq!(verdict.rule, Rule::Title);
    }

    #[test]
    fn versions_of_one_paper_pass_and_a_different_phase_is_refused() {
        let rule = ConfirmRule::default();
        let banding = super::super::ConfirmSettings {
            rule,
            ..Default::default()
        }
        .banding();
        let abstract_ = "we studied the effect of early mobilisation on recovery after stroke in \
            a randomised trial of two hundred patients across four hospitals and found that \
            walking within two days shortened the stay and improved independence at three months \
            without more falls or other adverse events in either group";
        let title = "early mobilisation after stroke: a randomised trial";
        let full = sketch_of(title, abstract_);
        let decide = |a: &Sketch, b: &Sketch| rule.decide(a.as_ref(), b.as_ref(), banding);
        // A harvester's cut: the first third of the abstract.
        let cut: String = abstract_
            .split_whitespace()
            .take(16)
            .collect::<Vec<_>>()
            .join(" ");
        let (evidence, verdict) = decide(&sketch_of(title, &cut), &full);
        assert!(evidence.jaccard < rule.threshold, "{evidence:?}");
        assert!(
            evidence.containment_sampled && evidence.containment == 1.0,
            "{evidence:?}"
        );
        assert_eq!(verdict.rule, Rule::Containment, "{evidence:?}");
        // A page number in one version's abstract is not a different paper.
        let paged = sketch_of(title, &format!("{abstract_} pages 12 28"));
        let other = sketch_of(title, &format!("{abstract_} page 30"));
        let (evidence, verdict) = decide(&paged, &other);
        assert!(evidence.numbers_differ && evidence.title_numbers_differ == Some(false));
        assert!(verdict.duplicate, "{evidence:?}");
        let text_guard = ConfirmRule {
            number_guard: NumberGuard::Text,
            ..rule
        };
        let (_, verdict) = text_guard.decide(paged.as_ref(), other.as_ref(), banding);
        assert_eq!(verdict.rule, Rule::Numbers);
        // The same abstract under another phase in the title is another trial.
        let (_, verdict) = decide(
            &sketch_of(
                "early mobilisation after stroke: a phase ii trial",
                abstract_,
            ),
            &sketch_of(
                "early mobilisation after stroke: a phase iii trial",
                abstract_,
            ),
        );
        assert_eq!(verdict.rule, Rule::Numbers);
        // Containment needs titles that agree: two papers sharing a boilerplate abstract are not one.
        let (evidence, verdict) = decide(
            &sketch_of("gait training with robots in chronic stroke", &cut),
            &sketch_of("a survey of hospital pharmacy staffing", abstract_),
        );
        assert!(
            evidence.containment >= rule.containment && !verdict.duplicate,
            "{evidence:?}"
        );
        let off = ConfirmRule {
            containment: 0.0,
            ..rule
        };
        let (_, verdict) = off.decide(sketch_of(title, &cut).as_ref(), full.as_ref(), banding);
        assert!(!verdict.duplicate, "containment 0 turns the rule off");
    }
}
