//! Word-level (or line- or character-level) differences between two documents, with each
//! side's overlap ratio: the share of its tokens that the other side has in the same order.
//!
//! The diff itself comes from the `similar` crate (Myers' algorithm); this module groups its
//! output into runs that a person reads as "in both", "only in A", "only in B" and "replaced",
//! and renders them in colour on a terminal or with `[-…-]` / `{+…+}` markers elsewhere.

use std::fmt::Write;

use similar::{ChangeTag, TextDiff};

/// The unit a diff compares.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Tokens {
    /// Words (whitespace kept as separators).
    #[default]
    Words,
    /// Whole lines.
    Lines,
    /// Characters.
    Chars,
}

/// One run of the diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Run {
    /// Text in both documents.
    Both(String),
    /// Text only in the first.
    OnlyA(String),
    /// Text only in the second.
    OnlyB(String),
    /// Text of the first replaced by text of the second.
    Replaced(String, String),
}

/// A diff of two documents.
#[derive(Clone, Debug, PartialEq)]
pub struct DocumentDiff {
    /// The runs, in order.
    pub runs: Vec<Run>,
    /// Shared tokens / tokens of the first document (1 when it has none).
    pub overlap_a: f64,
    /// Shared tokens / tokens of the second document (1 when it has none).
    pub overlap_b: f64,
}

/// Compares `a` and `b` token by token.
pub fn diff(a: &str, b: &str, tokens: Tokens) -> DocumentDiff {
    let text_diff = match tokens {
        Tokens::Words => TextDiff::from_words(a, b),
        Tokens::Lines => TextDiff::from_lines(a, b),
        Tokens::Chars => TextDiff::from_chars(a, b),
    };
    let counts = |t: &str| !t.trim().is_empty();
    let (mut shared, mut total_a, mut total_b) = (0usize, 0usize, 0usize);
    let mut runs: Vec<Run> = Vec::new();
    for change in text_diff.iter_all_changes() {
        let value = change.value().to_owned();
        let real = counts(&value);
        match change.tag() {
            ChangeTag::Equal => {
                if real {
                    shared += 1;
                    total_a += 1;
                    total_b += 1;
                }
                match runs.last_mut() {
                    Some(Run::Both(s)) => s.push_str(&value),
                    _ => runs.push(Run::Both(value)),
                }
            }
            ChangeTag::Delete => {
                total_a += usize::from(real);
                match runs.last_mut() {
                    Some(Run::OnlyA(s)) => s.push_str(&value),
                    _ => runs.push(Run::OnlyA(value)),
                }
            }
            ChangeTag::Insert => {
                total_b += usize::from(real);
                match runs.last_mut() {
                    Some(Run::OnlyB(s)) => s.push_str(&value),
                    Some(Run::Replaced(_, s)) => s.push_str(&value),
                    Some(last @ Run::OnlyA(_)) => {
                        let Run::OnlyA(old) = std::mem::replace(last, Run::Both(String::new()))
                        else {
                            unreachable!("matched OnlyA")
                        };
                        *last = Run::Replaced(old, value);
                    }
                    _ => runs.push(Run::OnlyB(value)),
                }
            }
        }
    }
    let ratio = |shared: usize, total: usize| {
        if total == 0 {
            1.0
        } else {
            shared as f64 / total as f64
        }
    };
    DocumentDiff {
        runs,
        overlap_a: ratio(shared, total_a),
        overlap_b: ratio(shared, total_b),
    }
}

impl DocumentDiff {
    /// The diff as text: with `color`, ANSI colours (red only in A, green only in B, yellow
    /// replaced); without, `[-only in A-]`, `{+only in B+}` and `[-old-]{+new+}` markers.
    pub fn render(&self, color: bool) -> String {
        let red = anstyle::AnsiColor::Red.on_default();
        let green = anstyle::AnsiColor::Green.on_default();
        let yellow = anstyle::AnsiColor::Yellow.on_default().bold();
        let mut out = String::new();
        let paint =
            |out: &mut String, style: anstyle::Style, text: &str, open: &str, close: &str| {
                if color {
                    let _ = write!(out, "{style}{text}{style:#}");
                } else {
                    let _ = write!(out, "{open}{text}{close}");
                }
            };
        for run in &self.runs {
            match run {
                Run::Both(t) => out.push_str(t),
                Run::OnlyA(t) => paint(&mut out, red, t, "[-", "-]"),
                Run::OnlyB(t) => paint(&mut out, green, t, "{+", "+}"),
                Run::Replaced(old, new) => {
                    paint(
                        &mut out,
                        yellow.fg_color(Some(anstyle::AnsiColor::Red.into())),
                        old,
                        "[-",
                        "-]",
                    );
                    paint(
                        &mut out,
                        yellow.fg_color(Some(anstyle::AnsiColor::Green.into())),
                        new,
                        "{+",
                        "+}",
                    );
                }
            }
        }
        out
    }

    /// The diff as HTML: `<del>` only in A, `<ins>` only in B, both inside
    /// `<span class="replaced">` for a replacement; text escaped.
    pub fn render_html(&self) -> String {
        let mut out = String::new();
        for run in &self.runs {
            match run {
                Run::Both(t) => out.push_str(&escape_html(t)),
                Run::OnlyA(t) => {
                    let _ = write!(out, "<del>{}</del>", escape_html(t));
                }
                Run::OnlyB(t) => {
                    let _ = write!(out, "<ins>{}</ins>", escape_html(t));
                }
                Run::Replaced(old, new) => {
                    let _ = write!(
                        out,
                        "<span class=\"replaced\"><del>{}</del><ins>{}</ins></span>",
                        escape_html(old),
                        escape_html(new)
                    );
                }
            }
        }
        out
    }
}

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_diff_marks_each_kind_of_run_and_overlaps() {
        let d = diff(
            "Brexit talks resume in Brussels today",
            "Brexit talks resume in Luxembourg today again",
            Tokens::Words,
        );
        assert_eq!(
            d.render(false),
            "Brexit talks resume in [-Brussels-]{+Luxembourg+} today{+ again+}"
        );
        // A: 6 words, 5 shared; B: 7 words, 5 shared.
        assert!((d.overlap_a - 5.0 / 6.0).abs() < 1e-12);
        assert!((d.overlap_b - 5.0 / 7.0).abs() < 1e-12);
        assert!(d.render(true).contains("\u{1b}["));
        let html = diff("a <b> c", "a <b> d", Tokens::Words).render_html();
        assert_eq!(
            html,
            "a &lt;b&gt; <span class=\"replaced\"><del>c</del><ins>d</ins></span>"
        );
    }

    #[test]
    fn polish_text_and_other_token_units() {
        let d = diff("Zażółć gęślą jaźń", "Zażółć gęślą", Tokens::Words);
        assert_eq!(d.overlap_b, 1.0);
        assert!((d.overlap_a - 2.0 / 3.0).abs() < 1e-12);
        let lines = diff("a\nb\nc\n", "a\nc\n", Tokens::Lines);
        assert_eq!(
            lines.runs,
            vec![
                Run::Both("a\n".into()),
                Run::OnlyA("b\n".into()),
                Run::Both("c\n".into())
            ]
        );
        let chars = diff("łódź", "lodz", Tokens::Chars);
        assert!(chars.overlap_a < 1.0 && chars.overlap_a > 0.0);
        assert_eq!(diff("", "", Tokens::Words).overlap_a, 1.0);
    }
}
