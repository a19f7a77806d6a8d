//! Which member of a duplicate group is kept.
//!
//! Grouping picks a representative by similarity: the member closest to the others. A curator
//! often wants another: the first record seen (the original upload), the longest (the full
//! abstract rather than a truncated copy), or the one with the largest or smallest value of a
//! field (the latest `year`, the lowest `price`). A [`KeepPolicy`] says which; ties go to the
//! representative, then to the record read first.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which member of each group `unique.*` keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KeepPolicy {
    /// The member most similar to the others (the group's representative).
    #[default]
    Representative,
    /// The member read first.
    First,
    /// The member with the longest text.
    Longest,
    /// The member whose field `name` holds the largest (or smallest) value. Numbers (and
    /// texts that read as one) compare as numbers and come before any other value, whichever
    /// the direction; a group with no number compares its texts as text (ISO dates order
    /// so); a member without the field, or with null, comes last.
    Field {
        /// The field (JSON key or column).
        name: String,
        /// Largest (`max`) or smallest (`min`).
        largest: bool,
    },
}

impl KeepPolicy {
    /// Whether choosing needs each member's text length or field, read again from the inputs.
    pub fn reads_records(&self) -> bool {
        matches!(self, KeepPolicy::Longest | KeepPolicy::Field { .. })
    }
}

const POLICY_HINT: &str =
    "write representative, first, longest, or field:NAME:max / field:NAME:min";

impl FromStr for KeepPolicy {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text {
            "representative" => return Ok(KeepPolicy::Representative),
            "first" => return Ok(KeepPolicy::First),
            "longest" => return Ok(KeepPolicy::Longest),
            _ => {}
        }
        let Some(rest) = text.strip_prefix("field:") else {
            return Err(format!("unknown keep policy {text:?}; {POLICY_HINT}"));
        };
        let (name, order) = match rest.rsplit_once(':') {
            Some((name, "max")) => (name, true),
            Some((name, "min")) => (name, false),
            _ => {
                return Err(format!(
                    "{text:?} does not end in :max or :min; {POLICY_HINT}"
                ));
            }
        };
        if name.is_empty() {
            return Err(format!("{text:?} names no field; {POLICY_HINT}"));
        }
        Ok(KeepPolicy::Field {
            name: name.to_owned(),
            largest: order,
        })
    }
}

impl fmt::Display for KeepPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeepPolicy::Representative => f.write_str("representative"),
            KeepPolicy::First => f.write_str("first"),
            KeepPolicy::Longest => f.write_str("longest"),
            KeepPolicy::Field { name, largest } => {
                write!(f, "field:{name}:{}", if *largest { "max" } else { "min" })
            }
        }
    }
}

impl Serialize for KeepPolicy {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for KeepPolicy {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a member is judged by: a number, a text, or nothing (the field is missing or null).
#[derive(Clone, Debug, PartialEq)]
pub enum KeepValue {
    /// Missing or null: kept last.
    Missing,
    /// A number, or a text that reads as one (CSV cells are text).
    Number(f64),
    /// Any other value, compared as its text.
    Text(String),
}

impl KeepValue {
    /// The value of a JSON field.
    pub fn of_json(value: Option<&serde_json::Value>) -> KeepValue {
        use serde_json::Value;
        match value {
            None | Some(Value::Null) => KeepValue::Missing,
            Some(Value::Number(n)) => n.as_f64().map_or(KeepValue::Missing, KeepValue::Number),
            Some(Value::String(s)) => match s.trim().parse::<f64>() {
                Ok(n) if n.is_finite() => KeepValue::Number(n),
                _ if s.is_empty() => KeepValue::Missing,
                _ => KeepValue::Text(s.clone()),
            },
            Some(other) => KeepValue::Text(other.to_string()),
        }
    }

    /// Orders values so that the better one for `largest` comes first. Numbers come before
    /// values that are not numbers whichever the direction (`max` of 2019 and `n/a` is 2019),
    /// and missing values come last.
    fn better(&self, other: &KeepValue, largest: bool) -> Ordering {
        use KeepValue::*;
        let ascending = match (self, other) {
            (Number(a), Number(b)) => a.total_cmp(b),
            (Text(a), Text(b)) => a.cmp(b),
            _ => return self.kind().cmp(&other.kind()),
        };
        if largest {
            ascending.reverse()
        } else {
            ascending
        }
    }

    /// Numbers first, then other values, then missing ones.
    fn kind(&self) -> u8 {
        match self {
            KeepValue::Number(_) => 0,
            KeepValue::Text(_) => 1,
            KeepValue::Missing => 2,
        }
    }
}

/// One member as the policy sees it.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// The document.
    pub doc: u32,
    /// Its position in the input (smaller: read first).
    pub ordinal: u64,
    /// What the policy compares ([`KeepValue::Missing`] for representative and first).
    pub value: KeepValue,
}

/// The member to keep among `members` (not empty), under `policy`.
pub fn choose_kept(policy: &KeepPolicy, members: &[Candidate], representative: u32) -> u32 {
    let largest = match policy {
        KeepPolicy::Representative => return representative,
        KeepPolicy::Field { largest, .. } => *largest,
        KeepPolicy::Longest => true,
        KeepPolicy::First => false,
    };
    let rank = |c: &Candidate| (c.doc != representative, c.ordinal);
    members
        .iter()
        .min_by(|x, y| match policy {
            KeepPolicy::First => x.ordinal.cmp(&y.ordinal),
            _ => x
                .value
                .better(&y.value, largest)
                .then_with(|| rank(x).cmp(&rank(y))),
        })
        .map_or(representative, |c| c.doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(doc: u32, ordinal: u64, value: KeepValue) -> Candidate {
        Candidate {
            doc,
            ordinal,
            value,
        }
    }

    #[test]
    fn policies_read_and_print_the_same() {
        for text in [
            "representative",
            "first",
            "longest",
            "field:year:max",
            "field:a:b:min",
        ] {
            assert_eq!(text.parse::<KeepPolicy>().unwrap().to_string(), text);
        }
        for bad in ["newest", "field:year", "field::max", "field:year:largest"] {
            let err = bad.parse::<KeepPolicy>().unwrap_err();
            assert!(err.contains("field:NAME:max"), "{bad}: {err}");
        }
    }

    #[test]
    fn each_policy_keeps_its_member() {
        let members = [
            member(0, 5, KeepValue::Number(2001.0)),
            member(1, 2, KeepValue::Missing),
            member(2, 9, KeepValue::Number(2019.0)),
            member(3, 7, KeepValue::Number(1999.0)),
        ];
        let max = KeepPolicy::Field {
            name: "year".into(),
            largest: true,
        };
        let min = KeepPolicy::Field {
            name: "year".into(),
            largest: false,
        };
        assert_eq!(choose_kept(&KeepPolicy::Representative, &members, 3), 3);
        assert_eq!(choose_kept(&KeepPolicy::First, &members, 3), 1);
        assert_eq!(choose_kept(&max, &members, 3), 2);
        assert_eq!(
            choose_kept(&min, &members, 0),
            3,
            "a missing value never wins"
        );
    }

    #[test]
    fn numbers_beat_other_values_in_either_direction() {
        let text = |t: &str| KeepValue::Text(t.into());
        let members = [
            member(0, 0, KeepValue::Number(2001.0)),
            member(1, 1, text("n/a")),
            member(2, 2, KeepValue::Number(2019.0)),
            member(3, 3, text("[1]")),
            member(4, 4, KeepValue::Missing),
        ];
        for (largest, kept) in [(true, 2), (false, 0)] {
            let policy = KeepPolicy::Field {
                name: "year".into(),
                largest,
            };
            assert_eq!(choose_kept(&policy, &members, 1), kept, "largest {largest}");
            // Without numbers, texts compare as text; still before a missing value.
            assert_eq!(choose_kept(&policy, &members[3..], 4), 3);
        }
        let dates = [
            member(0, 0, text("2019-05-01")),
            member(1, 1, text("2021-01-30")),
        ];
        let latest = KeepPolicy::Field {
            name: "date".into(),
            largest: true,
        };
        assert_eq!(choose_kept(&latest, &dates, 0), 1);
    }

    #[test]
    fn ties_go_to_the_representative_then_the_first_read() {
        let tied = [
            member(0, 5, KeepValue::Number(10.0)),
            member(1, 2, KeepValue::Number(10.0)),
            member(2, 1, KeepValue::Number(10.0)),
        ];
        assert_eq!(choose_kept(&KeepPolicy::Longest, &tied, 1), 1);
        assert_eq!(choose_kept(&KeepPolicy::Longest, &tied, 9), 2);
    }

    #[test]
    fn csv_cells_compare_as_numbers() {
        let cell = |s: &str| KeepValue::of_json(Some(&serde_json::json!(s)));
        assert_eq!(cell("2019"), KeepValue::Number(2019.0));
        assert_eq!(cell(""), KeepValue::Missing);
        assert_eq!(cell("n/a"), KeepValue::Text("n/a".into()));
        // "10" beats "9" as numbers, not as text.
        let members = [member(0, 0, cell("9")), member(1, 1, cell("10"))];
        let max = KeepPolicy::Field {
            name: "n".into(),
            largest: true,
        };
        assert_eq!(choose_kept(&max, &members, 0), 1);
    }
}
