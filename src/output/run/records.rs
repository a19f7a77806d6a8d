//! The records of a run's files, one type each, used by the writer and by every reader, and
//! each file's format: its name, its record, and the check a record read back must pass.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// The format of one of a run's files of records (one JSON object a line): what a reader needs
/// to know to read it back and check it. The writer writes any value that serialises as the
/// file's [`RecordFile::Record`] (pairs go out borrowing their ids).
pub trait RecordFile {
    /// The file's name in the run's folder.
    const NAME: &'static str;
    /// One line of the file.
    type Record: DeserializeOwned;
    /// What is wrong with a record read back, and the field at fault, if anything.
    fn problem(record: &Self::Record) -> Option<(&'static str, String)>;
}

/// `pairs.jsonl`: the confirmed pairs, `id_a < id_b`, sorted.
pub struct Pairs;

/// `candidates.jsonl`: every scored candidate, laid out as the pairs, where the method scores
/// more pairs than it confirms (MinHash): what `neardup sweep` and the report re-threshold.
pub struct Candidates;

/// Which file holds a run's scored candidates (`--candidates`): `candidates.parquet` (the
/// default where neardup is built with Parquet), `candidates.jsonl`, or none.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum CandidatesFormat {
    /// `candidates.parquet`: a Parquet table, ids in dictionaries (about a tenth of the JSON).
    Parquet,
    /// `candidates.jsonl`: one JSON object a line, laid out as `pairs.jsonl`.
    Jsonl,
    /// No file: `neardup sweep` and the report then see the confirmed pairs alone.
    None,
}

impl Default for CandidatesFormat {
    fn default() -> Self {
        match cfg!(feature = "parquet") {
            true => CandidatesFormat::Parquet,
            false => CandidatesFormat::Jsonl,
        }
    }
}

impl std::fmt::Display for CandidatesFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use clap::ValueEnum;
        let value = self.to_possible_value().expect("no value is skipped");
        f.write_str(value.get_name())
    }
}

impl std::str::FromStr for CandidatesFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        use clap::ValueEnum;
        <CandidatesFormat as ValueEnum>::from_str(s, false)
            .map_err(|_| format!("no candidates format {s:?}: give parquet, jsonl or none"))
    }
}

impl CandidatesFormat {
    /// Every format (as the flag lists them), each with its file or none.
    pub fn all() -> &'static [CandidatesFormat] {
        <CandidatesFormat as clap::ValueEnum>::value_variants()
    }

    /// The file in the run's folder, if any.
    pub fn file(self) -> Option<&'static str> {
        match self {
            CandidatesFormat::Parquet => Some(CANDIDATES_TABLE),
            CandidatesFormat::Jsonl => Some(Candidates::NAME),
            CandidatesFormat::None => None,
        }
    }

    /// The format of a pipeline file's `candidates`: a format's name, or (as before there was
    /// a choice) `true` for the default and `false` for none.
    pub fn deserialize_or_bool<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
    ) -> Result<CandidatesFormat, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Given {
            Named(CandidatesFormat),
            Written(bool),
        }
        Ok(match Given::deserialize(deserializer)? {
            Given::Named(format) => format,
            Given::Written(true) => CandidatesFormat::default(),
            Given::Written(false) => CandidatesFormat::None,
        })
    }
}

/// The run's summary, written last.
pub const SUMMARY: &str = "summary.json";
/// `neardup run`'s scores of the run, when its pipeline asks for them.
pub const EVAL: &str = "eval.json";

/// The name of `candidates.parquet`, also where neardup is built without Parquet (a run folder
/// holding one is then refused by name).
pub const CANDIDATES_TABLE: &str = "candidates.parquet";

/// `groups.jsonl`: one group of two or more a line, members sorted by id, groups by their
/// smallest id.
pub struct Groups;

impl RecordFile for Pairs {
    const NAME: &'static str = "pairs.jsonl";
    type Record = PairRecord;
    fn problem(record: &PairRecord) -> Option<(&'static str, String)> {
        record.problem()
    }
}

impl RecordFile for Candidates {
    const NAME: &'static str = "candidates.jsonl";
    type Record = PairRecord;
    fn problem(record: &PairRecord) -> Option<(&'static str, String)> {
        record.problem()
    }
}

impl RecordFile for Groups {
    const NAME: &'static str = "groups.jsonl";
    type Record = GroupRecord;
    fn problem(record: &GroupRecord) -> Option<(&'static str, String)> {
        record.problem()
    }
}

/// A line of `pairs.jsonl` or `candidates.jsonl`: two document ids and their scores.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PairRecord {
    /// The smaller id.
    #[serde(rename = "id_a")]
    pub a: String,
    /// The larger id.
    #[serde(rename = "id_b")]
    pub b: String,
    /// Every score of the pair, under its name: the method's (`jaccard_estimate`, `jaccard`,
    /// `resemblance`, `simhash_similarity`) and, for methods that embed, `cosine`.
    #[serde(flatten)]
    pub scores: BTreeMap<String, f64>,
}

/// How far past ±1 a cosine computed in 32-bit floats may lie.
const COSINE_ROUNDING: f64 = 1e-5;

impl PairRecord {
    /// What is wrong with a record read back, if anything.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if self.a.is_empty() || self.b.is_empty() {
            return Some(("id_a", "an id is empty".into()));
        }
        if self.a >= self.b {
            return Some((
                "id_b",
                format!("must sort after `id_a` ({:?} >= {:?})", self.a, self.b),
            ));
        }
        if self.scores.is_empty() {
            return Some(("id_b", "the pair has no score".into()));
        }
        // A cosine of two copies, summed in 32-bit floats, can pass 1 by a rounding
        // (1.0000001): the run wrote what it computed.
        let within = |name: &str, s: f64| match name {
            "cosine" => s.abs() <= 1.0 + COSINE_ROUNDING,
            _ => (-1.0..=1.0).contains(&s),
        };
        self.scores
            .iter()
            .find(|(name, s)| !(s.is_finite() && within(name, **s)))
            .map(|(name, s)| ("score", format!("`{name}` is {s}, outside [-1, 1]")))
    }
}

/// A line of `groups.jsonl` (and of `neardup groups --json`): a group of two or more documents
/// with its representative.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GroupRecord {
    /// The group's number, from 0.
    pub group: usize,
    /// The member most similar to the others (highest mean similarity).
    pub representative: String,
    /// The representative's mean similarity to the others.
    pub representative_similarity: f64,
    /// The member kept in `unique.*`, chosen by the run's keep policy (the representative by
    /// default).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kept: String,
    /// Number of members.
    pub size: usize,
    /// Member ids, sorted.
    pub members: Vec<String>,
    /// Pairwise similarities of the members, in `members` order (`groups --matrix`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matrix: Option<Vec<Vec<f64>>>,
}

impl GroupRecord {
    /// What is wrong with a record read back, if anything.
    pub fn problem(&self) -> Option<(&'static str, String)> {
        if self.members.len() < 2 {
            return Some(("members", "a group needs two members or more".into()));
        }
        if self.size != self.members.len() {
            return Some((
                "size",
                format!(
                    "{} but {} members are listed",
                    self.size,
                    self.members.len()
                ),
            ));
        }
        let distinct: BTreeSet<&String> = self.members.iter().collect();
        if distinct.len() != self.members.len() {
            return Some(("members", "an id is listed twice".into()));
        }
        if !distinct.contains(&self.representative) {
            return Some((
                "representative",
                format!("{:?} is not a member", self.representative),
            ));
        }
        if !self.kept.is_empty() && !distinct.contains(&self.kept) {
            return Some(("kept", format!("{:?} is not a member", self.kept)));
        }
        None
    }
}

/// Seconds spent in each stage.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct StageTimes {
    /// Reading, parsing, shingling and sketching.
    pub sketch: f64,
    /// Embedding (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub embed: f64,
    /// Adding vectors to the store (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub upsert: f64,
    /// Building the store's search graph (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub index: f64,
    /// Searching every document's neighbours (two-stage).
    #[serde(skip_serializing_if = "is_zero")]
    pub search: f64,
    /// Finding candidate pairs.
    pub candidates: f64,
    /// Confirming candidates.
    pub confirm: f64,
    /// Building groups and choosing representatives.
    pub group: f64,
}

fn is_none_reached(documents: &usize) -> bool {
    *documents == 0
}

fn is_zero(seconds: &f64) -> bool {
    *seconds == 0.0
}

/// How a file of the run is recognised: its length and XXH3-64 digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// Length in bytes.
    pub bytes: u64,
    /// XXH3-64 of the content, in hex.
    #[serde(with = "hex_u64")]
    pub xxh3: u64,
}

/// What a run did, as written to `summary.json`, the file written last.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// This run's id; it names the run the other files belong to.
    pub run: String,
    /// The other files of the run, by name, with the digest each must have.
    pub files: BTreeMap<String, FileDigest>,
    /// The pipeline: inputs, method and settings (defaults filled in), output.
    pub settings: serde_json::Value,
    /// The name of the pairs' score.
    pub score: String,
    /// The score a pair had to reach.
    pub threshold: f64,
    /// Documents read (valid ones).
    pub documents: usize,
    /// Which documents those were, as an [`IdsDigest`]: `eval` checks it against the labels'.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ids_digest: Option<IdsDigest>,
    /// The records those were, as read, as a [`RecordsDigest`]: a split run's join checks
    /// that the input still holds them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub records_digest: Option<RecordsDigest>,
    /// Records skipped under `--skip-invalid`.
    pub skipped: usize,
    /// The first few skipped records' problems.
    pub skipped_first: Vec<String>,
    /// Candidate pairs compared.
    pub candidates: usize,
    /// Confirmed pairs.
    pub pairs: usize,
    /// Groups of two or more.
    pub groups: usize,
    /// Documents that belong to a group.
    pub documents_in_groups: usize,
    /// Documents of the collection a batch was checked against (`against`) that a search
    /// reached: they are named in pairs and groups, and have no record here.
    #[serde(default, skip_serializing_if = "is_none_reached")]
    pub collection_reached: usize,
    /// Records written to `unique.jsonl`.
    pub unique: usize,
    /// Probes spent by SimHash's probing search, if used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probes: Option<usize>,
    /// The k-means cells two-stage searched within, if it did (chosen from the corpus size
    /// unless told).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cells: Option<usize>,
    /// Seconds per stage.
    pub seconds: StageTimes,
    /// Seconds spent writing the outputs.
    pub write_seconds: f64,
}

impl RunSummary {
    /// Whether the run confirmed pairs by the evidence rule (containment, titles, numbers,
    /// short texts) rather than by its score's threshold alone.
    pub fn confirmed_by_evidence(&self) -> bool {
        self.settings["method"]["confirm"] == "evidence"
    }

    /// Whether the run was asked not to write its candidates (`--candidates none`, or
    /// `--no-candidates` before there was a choice of format): its scored pairs are then the
    /// confirmed ones alone.
    pub fn left_out_candidates(&self) -> bool {
        let asked = &self.settings["output"]["candidates"];
        *asked == false || *asked == "none"
    }
}

/// A fingerprint of a set of document ids that does not depend on their order: the wrapping
/// sum of each id's XXH3-128. Two sets that differ have the same one with odds of 2^-128.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdsDigest(#[serde(with = "hex_u128")] u128);

impl IdsDigest {
    /// The digest of `ids`, which are distinct.
    pub fn of<'a>(ids: impl IntoIterator<Item = &'a str>) -> IdsDigest {
        IdsDigest(ids.into_iter().fold(0u128, |sum, id| {
            sum.wrapping_add(xxhash_rust::xxh3::xxh3_128(id.as_bytes()))
        }))
    }
}

/// A fingerprint of a sequence of records as read, in order: XXH3 over each record's own
/// fingerprint ([`crate::io::RawRecord::fingerprint`], which covers every byte of the record),
/// so that a record edited in place, its id kept, changes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordsDigest(#[serde(with = "hex_u64")] u64);

impl RecordsDigest {
    /// The digest of the records whose fingerprints are `fingerprints`, in order.
    pub fn of(fingerprints: &[u64]) -> RecordsDigest {
        let mut hasher = xxhash_rust::xxh3::Xxh3::new();
        for fingerprint in fingerprints {
            hasher.update(&fingerprint.to_le_bytes());
        }
        RecordsDigest(hasher.digest())
    }
}

/// A `u128` as 32 hex digits.
mod hex_u128 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(value: &u128, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{value:032x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u128, D::Error> {
        let text = String::deserialize(deserializer)?;
        u128::from_str_radix(&text, 16).map_err(D::Error::custom)
    }
}

/// A `u64` as 16 hex digits, which JSON readers in other languages keep exact.
mod hex_u64 {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{value:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16)
            .map_err(|_| D::Error::custom(format!("{text:?} is not 16 hex digits")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(a: &str, b: &str, score: f64) -> PairRecord {
        PairRecord {
            a: a.into(),
            b: b.into(),
            scores: [("jaccard".to_string(), score)].into(),
        }
    }

    #[test]
    fn pairs_must_be_ordered_and_scored_in_range() {
        assert_eq!(pair("1", "2", 0.5).problem(), None);
        assert_eq!(pair("2", "1", 0.5).problem().unwrap().0, "id_b");
        assert_eq!(pair("1", "1", 0.5).problem().unwrap().0, "id_b");
        assert_eq!(pair("", "1", 0.5).problem().unwrap().0, "id_a");
        assert_eq!(pair("1", "2", 7.0).problem().unwrap().0, "score");
        assert_eq!(pair("1", "2", f64::NAN).problem().unwrap().0, "score");
        // A cosine of copies may pass 1 by a rounding; no other score may.
        let mut copies = pair("1", "2", 1.0000001);
        assert_eq!(copies.problem().unwrap().0, "score");
        copies.scores.insert("cosine".into(), 1.0000001);
        copies.scores.insert("jaccard".into(), 1.0);
        assert_eq!(copies.problem(), None);
        copies.scores.insert("cosine".into(), 1.01);
        assert_eq!(copies.problem().unwrap().0, "score");
        let mut unscored = pair("1", "2", 0.5);
        unscored.scores.clear();
        assert!(unscored.problem().is_some());
    }

    #[test]
    fn groups_must_list_their_representative_once_and_their_size() {
        let group = GroupRecord {
            group: 0,
            representative: "a".into(),
            representative_similarity: 0.9,
            kept: String::new(),
            size: 2,
            members: vec!["a".into(), "b".into()],
            matrix: None,
        };
        assert_eq!(group.problem(), None);
        let broken = [
            GroupRecord {
                size: 3,
                ..group.clone()
            },
            GroupRecord {
                representative: "z".into(),
                ..group.clone()
            },
            GroupRecord {
                members: vec!["a".into(), "a".into()],
                ..group.clone()
            },
            GroupRecord {
                members: vec!["a".into()],
                size: 1,
                ..group.clone()
            },
        ];
        let fields: Vec<&str> = broken.iter().map(|g| g.problem().unwrap().0).collect();
        assert_eq!(fields, ["size", "representative", "members", "members"]);
    }

    #[test]
    fn a_summary_reads_back_as_written() {
        let summary = RunSummary {
            run: "r".into(),
            files: [(
                "pairs.jsonl".to_string(),
                FileDigest {
                    bytes: 3,
                    xxh3: u64::MAX - 1,
                },
            )]
            .into(),
            settings: serde_json::json!({"method": {"name": "minhash"}}),
            score: "jaccard_estimate".into(),
            threshold: 0.7,
            documents: 3,
            ids_digest: Some(IdsDigest::of(["a", "b", "c"])),
            records_digest: Some(RecordsDigest::of(&[1, 2, 3])),
            skipped: 0,
            skipped_first: vec![],
            candidates: 1,
            pairs: 1,
            groups: 1,
            documents_in_groups: 2,
            collection_reached: 0,
            unique: 2,
            probes: None,
            cells: None,
            seconds: StageTimes::default(),
            write_seconds: 0.0,
        };
        let text = serde_json::to_string(&summary).unwrap();
        assert!(text.contains("\"fffffffffffffffe\""), "{text}");
        assert_eq!(serde_json::from_str::<RunSummary>(&text).unwrap(), summary);
    }
}
