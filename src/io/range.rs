//! A contiguous share of a corpus, by bytes: what one part of a split run reads.
//!
//! Lay the inputs end to end and cut the bytes into `N` ranges; part `I` holds the records
//! that *start* in range `I`. Every record starts in exactly one range, so the parts together
//! hold each record once, and in input order: part `I`'s documents follow part `I - 1`'s, and
//! a document's number in the whole run is its number in its part plus the documents of the
//! parts before. A part reads its range and not the rest: JSON Lines seeks to the first line
//! that starts in it; the other formats cannot be entered mid-file (a CSV field may hold a
//! newline, a Parquet row lives in a column chunk), so they are framed from the start of each
//! input the range touches and the records before it passed over.

use super::{RawRecord, RawRecords};
use crate::error::Result;

/// The records that start within `start..end`, in bytes of the inputs laid end to end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRange {
    /// The first byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl ByteRange {
    /// Every record.
    pub const ALL: ByteRange = ByteRange {
        start: 0,
        end: u64::MAX,
    };

    /// Range `number` (from 1) of `count` equal ranges of `total` bytes. The last one reaches
    /// past the end, so that no record is left without a range.
    pub fn share(number: u32, count: u32, total: u64) -> ByteRange {
        let cut = |i: u32| (u128::from(total) * u128::from(i) / u128::from(count)) as u64;
        ByteRange {
            start: cut(number - 1),
            end: if number == count {
                u64::MAX
            } else {
                cut(number)
            },
        }
    }

    /// Whether a record starting at byte `at` is in the range.
    pub fn holds(&self, at: u64) -> bool {
        self.start <= at && at < self.end
    }

    /// The part of this range within an input of `size` bytes that starts at byte `base`,
    /// in that input's own bytes; `None` if the range holds none of it.
    pub fn within(&self, base: u64, size: u64) -> Option<ByteRange> {
        let input_end = base.saturating_add(size);
        let overlaps = self.start < input_end.max(base + 1) && base < self.end;
        overlaps.then(|| ByteRange {
            start: self.start.saturating_sub(base),
            end: self.end.saturating_sub(base),
        })
    }
}

/// The records of `records` (an input of `size` bytes, framed from its start) that start
/// within `range`: each record starts where the bytes of those before it end (a record is
/// placed no further than the input's last byte, so that every record has a place).
pub(super) fn records_within(records: RawRecords, size: u64, range: ByteRange) -> RawRecords {
    if range.start == 0 && range.end >= size {
        return records;
    }
    let mut at = 0u64;
    Box::new(
        records
            .map(move |record: Result<RawRecord>| {
                record.map(|record| {
                    let start = at.min(size.saturating_sub(1));
                    at += record.input_bytes;
                    (start, record)
                })
            })
            .take_while(move |placed| !matches!(placed, Ok((start, _)) if *start >= range.end))
            .filter_map(move |placed| match placed {
                Ok((start, record)) => range.holds(start).then_some(Ok(record)),
                Err(e) => Some(Err(e)),
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::super::{FieldSpec, Input};
    use super::*;

    /// The records of `input` in `count` shares, each as (share, location, id).
    fn read_in_shares(input: &Input, count: u32) -> Vec<(u32, String, String)> {
        let fields = FieldSpec {
            id: "id".into(),
            text: vec!["text".into()],
        };
        let mut read = Vec::new();
        for number in 1..=count {
            let range = ByteRange::share(number, count, input.size());
            for raw in input.open_range(&fields, 1 << 20, range).unwrap() {
                let raw = raw.unwrap();
                let id = raw.parse(&fields).unwrap().id;
                read.push((number, raw.location.to_string(), id));
            }
        }
        read
    }

    #[test]
    fn shares_of_a_file_read_each_record_once_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let ids: Vec<String> = (0..50).map(|i| format!("d{i}")).collect();
        let jsonl = dir.path().join("in.jsonl");
        let mut text = String::from("\u{feff}");
        let mut starts = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            starts.push(text.len());
            // Lines of different lengths, and a blank line now and then.
            let words = "word ".repeat(i % 7);
            text.push_str(&format!("{{\"id\":\"{id}\",\"text\":\"{words}x\"}}\n"));
            if i % 9 == 0 {
                text.push('\n');
            }
        }
        std::fs::write(&jsonl, &text).unwrap();
        let input = Input::new(&jsonl, None).unwrap();
        // CSV, with a field that holds a newline: framed from the start, records passed over.
        let csv = dir.path().join("in.csv");
        let mut rows = String::from("id,text\n");
        for (i, id) in ids.iter().enumerate() {
            rows.push_str(&format!("{id},\"line one\nline {i}\"\n"));
        }
        std::fs::write(&csv, rows).unwrap();
        let csv = Input::new(&csv, None).unwrap();
        for count in [1, 2, 3, 7, 60] {
            for input in [&input, &csv] {
                let read = read_in_shares(input, count);
                let got: Vec<&String> = read.iter().map(|r| &r.2).collect();
                assert_eq!(got, ids.iter().collect::<Vec<_>>(), "{count} shares");
                assert!(read.windows(2).all(|w| w[0].0 <= w[1].0), "{read:?}");
            }
        }
        // A share that starts mid-file names a line by the byte it starts at.
        let read = read_in_shares(&input, 2);
        let second = read.iter().find(|r| r.0 == 2).unwrap();
        let i: usize = second.2[1..].parse().unwrap();
        assert!(
            second
                .1
                .ends_with(&format!("in.jsonl (the line at byte {})", starts[i]))
        );
        assert!(read[0].1.ends_with("in.jsonl:1"), "{read:?}");
    }

    #[test]
    fn shares_cover_every_byte_once() {
        for total in [0, 1, 7, 1000, u64::MAX / 3] {
            for count in 1..=5 {
                let shares: Vec<ByteRange> = (1..=count)
                    .map(|i| ByteRange::share(i, count, total))
                    .collect();
                assert_eq!(shares[0].start, 0);
                assert_eq!(shares.last().unwrap().end, u64::MAX);
                for pair in shares.windows(2) {
                    assert_eq!(pair[0].end, pair[1].start, "{total} in {count}");
                }
            }
        }
    }

    #[test]
    fn a_range_within_an_input_is_in_its_own_bytes() {
        let range = ByteRange {
            start: 150,
            end: 250,
        };
        assert_eq!(range.within(0, 100), None);
        assert_eq!(
            range.within(100, 100),
            Some(ByteRange {
                start: 50,
                end: 150
            })
        );
        assert_eq!(
            range.within(200, 100),
            Some(ByteRange { start: 0, end: 50 })
        );
        assert_eq!(range.within(250, 100), None);
        // An empty input at the range's start is in it: its records (none) are read.
        assert_eq!(range.within(150, 0), Some(ByteRange { start: 0, end: 100 }));
    }
}
