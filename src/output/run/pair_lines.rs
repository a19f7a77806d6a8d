//! Scored pairs as a run writes them: each pair borrowing its ids ([`PairLine`]), and the
//! files they go into, one per format behind [`PairSink`]: JSON lines here (`pairs.jsonl`,
//! and `candidates.jsonl` on request), a Parquet table in [`super::pair_table`]
//! (`candidates.parquet`, the default for candidates).

use serde::Serialize;

use super::{RunFile, RunWriter};
use crate::error::Result;

/// A [`super::PairRecord`] as it is written, borrowing the ids: tens of millions of
/// candidates are written without allocating.
#[derive(Clone, Copy, Debug)]
pub struct PairLine<'a> {
    /// The smaller id.
    pub a: &'a str,
    /// The larger id.
    pub b: &'a str,
    /// The method's score's name (`jaccard_estimate`, ...).
    pub score_name: &'static str,
    /// The method's score.
    pub score: f64,
    /// The cosine of the two documents' embeddings, for methods that embed.
    pub cosine: Option<f32>,
    /// The two ids' places among the run's ids sorted ([`SortedIds`]).
    pub places: (u32, u32),
}

/// A run's ids in sorted order, by place: what a [`PairLine`]'s places index.
#[derive(Clone, Copy)]
pub struct SortedIds<'a> {
    /// The ids, in the run's order.
    pub ids: &'a [String],
    /// The index in `ids` of each place's id.
    pub by_place: &'a [u32],
}

impl<'a> SortedIds<'a> {
    /// The id at `place`.
    pub fn get(&self, place: u32) -> &'a str {
        &self.ids[self.by_place[place as usize] as usize]
    }

    /// How many ids there are.
    pub fn len(&self) -> usize {
        self.by_place.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.by_place.is_empty()
    }
}

/// A file of scored pairs of the ids `'a` being written, in its format.
pub trait PairSink<'a> {
    /// Appends `count` pairs, the `i`th made by `pair(i)`, in order.
    fn append(&mut self, count: usize, pair: &(dyn Fn(usize) -> PairLine<'a> + Sync))
    -> Result<()>;
    /// Puts the file in place and records its digest.
    fn commit(self: Box<Self>, run: &mut RunWriter) -> Result<()>;
}

/// JSON lines, made on every core ([`RunFile::write_lines_in_parallel`]).
impl<'a> PairSink<'a> for RunFile {
    fn append(
        &mut self,
        count: usize,
        pair: &(dyn Fn(usize) -> PairLine<'a> + Sync),
    ) -> Result<()> {
        self.write_lines_in_parallel(count, pair)
    }

    fn commit(self: Box<Self>, run: &mut RunWriter) -> Result<()> {
        run.commit(*self)
    }
}

/// The `f64` a reader of a written cosine gets: that of its shortest decimal form as an `f32`
/// (`0.9123`, not the `f64` `0.9122999906539917`). A cosine read from any format is this.
pub fn cosine_as_read(x: f32) -> f64 {
    x.to_string().parse().unwrap_or(f64::from(x))
}

/// A cosine as it is written: its shortest decimal form as an `f32`, in the notation the `f64`
/// of that form takes ([`cosine_as_read`]), so that a reader's `f64` writes it back the same.
pub(super) struct Cosine(pub f32);

impl Serialize for Cosine {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        // The `f32` is written at once where its shortest form cannot differ from the one
        // `Display` gives, which the `f64` was made from: where the two notations agree, and
        // where the value has more than 13 bits after the binary point, so that its decimal
        // digits run past the 10th and no two shortest forms lie equally near it (0.439453125:
        // `Display` 0.43945313, the writer's own shortest form 0.43945312).
        let x = self.0;
        if (1e-3..=1e3).contains(&x.abs()) && (x * 8192.0).fract() != 0.0 {
            x.serialize(serializer)
        } else {
            cosine_as_read(x).serialize(serializer)
        }
    }
}

impl Serialize for PairLine<'_> {
    fn serialize<S: serde::Serializer>(
        &self,
        serializer: S,
    ) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("id_a", self.a)?;
        map.serialize_entry("id_b", self.b)?;
        // The scores in the order of their names, as a `PairRecord`'s map writes them.
        let cosine_first = "cosine" < self.score_name;
        let cosine = |map: &mut S::SerializeMap| match self.cosine {
            Some(cosine) => map.serialize_entry("cosine", &Cosine(cosine)),
            None => Ok(()),
        };
        if cosine_first {
            cosine(&mut map)?;
        }
        map.serialize_entry(self.score_name, &self.score)?;
        if !cosine_first {
            cosine(&mut map)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cosine written as an `f32` reads the same as the `f64` of its shortest decimal form,
    /// which is how it was written before: byte for byte, down to the smallest `f32`.
    #[test]
    fn a_cosine_is_written_as_the_f64_of_its_shortest_form() {
        use rand::{RngExt, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let special = [
            0.0f32, -0.0, 1.0, 1.0000002, -1.0, 0.25, 1e-8, 1.17e-38, 1e-45,
        ];
        let random = (0..200_000).map(|_| match rng.random_range(0..3) {
            0 => rng.random::<f32>() * 2.0 - 1.0,
            1 => 1.0 + (rng.random::<f32>() - 0.5) * 1e-5,
            _ => f32::from_bits(rng.random::<u32>()),
        });
        // Values of few binary digits, whose shortest forms may tie.
        let short =
            (0..1u32 << 14).flat_map(|m| (0..40).map(move |k| m as f32 / (1u64 << k) as f32));
        // Cosines, a little above 1 at most.
        let cosines = (special.into_iter().chain(random).chain(short)).filter(|x| x.abs() <= 1.01);
        for x in cosines {
            let written = serde_json::to_string(&Cosine(x)).unwrap();
            assert_eq!(
                written,
                serde_json::to_string(&cosine_as_read(x)).unwrap(),
                "{x:e}"
            );
            assert_eq!(written.parse::<f64>().unwrap(), cosine_as_read(x), "{x:e}");
        }
    }
}
