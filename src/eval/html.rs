//! The evaluation as one self-contained HTML page: tables, inline SVG plots (drawn with
//! plotters), and the worst errors with a word diff of each. No scripts, no network: it opens
//! in any browser and can be mailed as a single file.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::path::Path;

use plotters::prelude::*;

use super::metrics::{ClassMetrics, Evaluation, Scores};
use super::predictions::Predictions;
use super::sweep::{SweepPoint, sweep, thresholds};
use super::truth::{Predicted, Truth};
use crate::diff::{Tokens, diff, escape_html};
use crate::error::{Error, Result};
use crate::io::{DEFAULT_MAX_DOC_BYTES, FieldSpec, Input, InputFormat, record_limit};
use crate::output::AtomicFile;
use crate::output::run::{PairRecord, RunPairs};

/// How many false and missed pairs the report lists.
const WORST_SHOWN: usize = 10;

/// Everything the report is drawn from.
pub struct ReportInput<'a> {
    /// The ground-truth file (its texts are shown in the diffs).
    pub truth_path: &'a Path,
    /// Fields of the truth file that make a document's text.
    pub fields: &'a FieldSpec,
    /// The labels.
    pub truth: &'a Truth,
    /// The run folder.
    pub run_dir: &'a Path,
    /// The scores.
    pub evaluation: &'a Evaluation,
    /// Predicted duplicates per document.
    pub predicted: &'a Predictions,
    /// How predictions were formed.
    pub mode: Predicted,
    /// The run's confirmed pairs.
    pub confirmed: &'a [PairRecord],
    /// Every scored pair of the run (candidates where kept, else the confirmed pairs).
    pub scored: &'a RunPairs,
    /// The run's score name and threshold, from its summary.
    pub threshold: (String, f64),
    /// Whether the run confirmed by the evidence rule rather than the threshold alone.
    pub evidence: bool,
}

/// Writes the report to `path`, atomically.
pub fn write_report(path: &Path, input: &ReportInput) -> Result<()> {
    let html = render(input)?;
    let mut file = AtomicFile::create(path)?;
    std::io::Write::write_all(&mut file, html.as_bytes()).map_err(|e| Error::io(path, e))?;
    file.commit()
}

fn render(input: &ReportInput) -> Result<String> {
    let labelled: HashMap<&str, HashSet<&str>> = input
        .truth
        .docs
        .iter()
        .map(|d| {
            (
                d.id.as_str(),
                d.duplicates.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let is_labelled = |a: &str, b: &str| labelled.get(a).is_some_and(|l| l.contains(b));

    let mut out = String::new();
    let e = input.evaluation;
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>neardup evaluation</title>\
         <style>{STYLE}</style></head><body>\n<h1>neardup evaluation</h1>\n<p class=\"meta\">run <code>{}</code> · truth <code>{}</code> · \
         predicted duplicates = {} · {} documents scored · {}</p>\n",
        escape_html(&input.run_dir.display().to_string()),
        escape_html(&input.truth_path.display().to_string()),
        match input.mode {
            Predicted::Groups => "the rest of each document's group",
            Predicted::Pairs => "each document's confirmed pair partners",
        },
        e.overall.documents,
        escape_html(&rule_line(input)),
    );

    out.push_str("<h2>Scores</h2>\n");
    let o = &e.overall;
    let _ = writeln!(
        out,
        "<div class=\"cards\">{}{}{}{}</div>",
        card("accuracy", o.accuracy),
        card("macro-F1", o.macro_f1),
        card("precision (dup)", o.dup.precision),
        card("recall (dup)", o.dup.recall)
    );
    out.push_str("<table><tr><th>class</th><th>precision</th><th>recall</th><th>F1</th><th>TP</th><th>FP</th><th>TN</th><th>FN</th></tr>\n");
    class_row(&mut out, "duplicate", &o.dup);
    class_row(&mut out, "non-duplicate", &o.non_dup);
    out.push_str("</table>\n<p class=\"note\">Macro-F1 is the mean of the two classes' F1 (not the mean of their precisions).</p>\n");

    out.push_str("<h2>Per <code>cat</code></h2>\n<table><tr><th>cat</th><th>documents</th><th>accuracy</th><th>P dup</th><th>R dup</th><th>mean precision</th><th>mean recall</th></tr>\n");
    for (cat, s) in &e.by_cat {
        cat_row(&mut out, cat, s);
    }
    out.push_str("</table>\n<h2>Per number of labelled duplicates</h2>\n<table><tr><th>labelled duplicates</th><th>correct</th><th>false</th><th>accuracy</th></tr>\n");
    for (n, cf) in &e.by_num_duplicates {
        let total = (cf.correct + cf.r#false).max(1);
        let _ = writeln!(
            out,
            "<tr><td>{n}</td><td>{}</td><td>{}</td><td>{:.3}</td></tr>",
            cf.correct,
            cf.r#false,
            cf.correct as f64 / total as f64
        );
    }
    out.push_str("</table>\n");

    out.push_str("<h2>Similarity of confirmed pairs</h2>\n");
    {
        let name = &input.threshold.0;
        let (mut true_scores, mut false_scores) = (Vec::new(), Vec::new());
        for p in input.confirmed {
            if let Some(&s) = p.scores.get(name) {
                if is_labelled(&p.a, &p.b) {
                    true_scores.push(s);
                } else {
                    false_scores.push(s);
                }
            }
        }
        out.push_str(&histogram(name, &true_scores, &false_scores)?);
    }

    out.push_str("<h2>Precision, recall and F1 against the threshold</h2>\n");
    for name in input.scored.names() {
        let points = sweep(
            input.truth,
            input.scored,
            name,
            &thresholds(0.0, 1.0, 0.02),
            input.mode,
        );
        let marked = (input.threshold.0 == *name).then_some(input.threshold.1);
        out.push_str(&curves(name, &points, marked)?);
    }
    out.push_str("<p class=\"note\">Below the run's threshold only pairs the run scored (its LSH candidates, for MinHash) can be counted.</p>\n");

    worst_errors(&mut out, input, &is_labelled)?;
    out.push_str("</body></html>\n");
    Ok(out)
}

fn card(label: &str, value: f64) -> String {
    format!(
        "<div class=\"card\"><div class=\"value\">{value:.4}</div><div class=\"label\">{label}</div></div>"
    )
}

fn class_row(out: &mut String, name: &str, c: &ClassMetrics) {
    let _ = writeln!(
        out,
        "<tr><td>{name}</td><td>{:.4}</td><td>{:.4}</td><td>{:.4}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
        c.precision, c.recall, c.f1, c.tp, c.fp, c.tn, c.fn_
    );
}

fn cat_row(out: &mut String, cat: &str, s: &Scores) {
    let _ = writeln!(
        out,
        "<tr><td>{}</td><td>{}</td><td>{:.4}</td><td>{:.4}</td><td>{:.4}</td><td>{:.4}</td><td>{:.4}</td></tr>",
        escape_html(cat),
        s.documents,
        s.accuracy,
        s.dup.precision,
        s.dup.recall,
        s.mean_precision,
        s.mean_recall
    );
}

fn plot_error(e: impl std::fmt::Display) -> Error {
    Error::Plot(e.to_string())
}

/// The series labels in a framed box at `position`.
fn draw_legend<'a, CT: plotters::coord::CoordTranslate>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, CT>,
    position: SeriesLabelPosition,
) -> Result<()> {
    chart
        .configure_series_labels()
        .position(position)
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK.mix(0.3))
        .draw()
        .map_err(plot_error)
}

/// How the run confirmed a pair, for the report's header: a threshold alone, or the evidence
/// rule, under which pairs below the threshold can be confirmed and pairs above it refused.
fn rule_line(input: &ReportInput) -> String {
    let (name, threshold) = &input.threshold;
    match input.evidence {
        true => format!(
            "confirmed by the evidence rule: {name} ≥ {threshold:.3}, or a truncated copy, or \
             the same title (so confirmed pairs can score below {threshold:.3}); never texts of \
             under 4 words or titles whose numbers differ"
        ),
        false => format!("confirmed at {name} ≥ {threshold:.3}"),
    }
}

/// Overlaid histograms of the scores of labelled-duplicate and other confirmed pairs. The
/// counts are drawn on a log scale: near-copies pile up at 1.0 and would flatten the rest.
fn histogram(name: &str, duplicates: &[f64], others: &[f64]) -> Result<String> {
    const BINS: usize = 40;
    let low = duplicates
        .iter()
        .chain(others)
        .copied()
        .fold(1.0f64, f64::min)
        .min(0.95);
    let low = (low * 20.0).floor() / 20.0;
    let width = (1.0 - low) / BINS as f64;
    let count = |scores: &[f64]| {
        let mut bins = vec![0u32; BINS];
        for &s in scores {
            let i = (((s - low) / width) as usize).min(BINS - 1);
            bins[i] += 1;
        }
        bins
    };
    let (dup_bins, other_bins) = (count(duplicates), count(others));
    let top = f64::from(
        dup_bins
            .iter()
            .chain(&other_bins)
            .copied()
            .max()
            .unwrap_or(1)
            .max(1),
    );
    // A bar of one pair still shows above the floor of the log scale.
    const FLOOR: f64 = 0.5;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 320)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(low..1.0f64, (FLOOR..top * 2.0).log_scale())
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(name)
            .y_desc("confirmed pairs (log scale)")
            .y_label_formatter(&|count| format!("{count:.0}"))
            .light_line_style(WHITE)
            .draw()
            .map_err(plot_error)?;
        let bars = |bins: Vec<u32>, color: RGBColor| {
            bins.into_iter()
                .enumerate()
                .filter(|(_, c)| *c > 0)
                .map(move |(i, c)| {
                    let x0 = low + i as f64 * width;
                    Rectangle::new(
                        [(x0, FLOOR), (x0 + width, f64::from(c))],
                        color.mix(0.55).filled(),
                    )
                })
        };
        let blue = RGBColor(31, 119, 180);
        let orange = RGBColor(230, 85, 13);
        chart
            .draw_series(bars(dup_bins, blue))
            .map_err(plot_error)?
            .label(format!("labelled duplicate ({})", duplicates.len()))
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], blue.mix(0.55).filled())
            });
        chart
            .draw_series(bars(other_bins, orange))
            .map_err(plot_error)?
            .label(format!("not labelled ({})", others.len()))
            .legend(move |(x, y)| {
                Rectangle::new([(x, y - 5), (x + 12, y + 5)], orange.mix(0.55).filled())
            });
        draw_legend(&mut chart, SeriesLabelPosition::UpperLeft)?;
        root.present().map_err(plot_error)?;
    }
    Ok(format!("<figure>{svg}</figure>\n"))
}

/// A line of the threshold plot: label, colour, and the value it draws.
type Curve = (&'static str, RGBColor, fn(&SweepPoint) -> f64);

/// Duplicate-class precision, recall, F1 and macro-F1 against the threshold of one score.
fn curves(name: &str, points: &[SweepPoint], marked: Option<f64>) -> Result<String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, 340)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_error)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(name, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..1.0f64, 0.0..1.02f64)
            .map_err(plot_error)?;
        chart
            .configure_mesh()
            .x_desc(format!("{name} threshold"))
            .y_desc("score")
            .light_line_style(WHITE)
            .draw()
            .map_err(plot_error)?;
        let lines: [Curve; 4] = [
            ("precision (dup)", RGBColor(31, 119, 180), |p| {
                p.dup_precision
            }),
            ("recall (dup)", RGBColor(230, 85, 13), |p| p.dup_recall),
            ("F1 (dup)", RGBColor(44, 160, 44), |p| p.dup_f1),
            ("macro-F1", RGBColor(90, 90, 90), |p| p.macro_f1),
        ];
        for (label, color, value) in lines {
            chart
                .draw_series(LineSeries::new(
                    points.iter().map(|p| (p.threshold, value(p))),
                    color.stroke_width(2),
                ))
                .map_err(plot_error)?
                .label(label)
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 16, y)], color.stroke_width(2))
                });
        }
        if let Some(t) = marked {
            chart
                .draw_series(LineSeries::new(
                    vec![(t, 0.0), (t, 1.02)],
                    BLACK.mix(0.6).stroke_width(1),
                ))
                .map_err(plot_error)?
                .label(format!("run threshold {t:.2}"))
                .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], BLACK.mix(0.6)));
        }
        draw_legend(&mut chart, SeriesLabelPosition::LowerLeft)?;
        root.present().map_err(plot_error)?;
    }
    Ok(format!("<figure>{svg}</figure>\n"))
}

/// The most confident false pairs and the labelled pairs the run missed, each with a diff.
fn worst_errors(
    out: &mut String,
    input: &ReportInput,
    is_labelled: &dyn Fn(&str, &str) -> bool,
) -> Result<()> {
    let in_truth: HashSet<&str> = input.truth.docs.iter().map(|d| d.id.as_str()).collect();
    let score_of = |p: &PairRecord| p.scores.values().next().copied().unwrap_or(0.0);
    let mut false_pairs: Vec<&PairRecord> = input
        .confirmed
        .iter()
        .filter(|p| {
            in_truth.contains(p.a.as_str())
                && in_truth.contains(p.b.as_str())
                && !is_labelled(&p.a, &p.b)
        })
        .collect();
    false_pairs.sort_by(|x, y| {
        score_of(y)
            .total_cmp(&score_of(x))
            .then_with(|| (&x.a, &x.b).cmp(&(&y.a, &y.b)))
    });
    false_pairs.truncate(WORST_SHOWN);

    let scored: HashMap<(&str, &str), f64> = (0..input.scored.len())
        .map(|i| {
            (
                input.scored.pair(i),
                input.scored.first_score(i).unwrap_or(0.0),
            )
        })
        .collect();
    let mut missed: Vec<(&str, &str, Option<f64>)> = Vec::new();
    for d in &input.truth.docs {
        for other in &d.duplicates {
            if d.id < *other
                && in_truth.contains(other.as_str())
                && !input.predicted.contains(&d.id, other)
            {
                missed.push((
                    d.id.as_str(),
                    other.as_str(),
                    scored.get(&(d.id.as_str(), other.as_str())).copied(),
                ));
            }
        }
    }
    let total_missed = missed.len();
    missed.sort_by(|x, y| {
        y.2.unwrap_or(-1.0)
            .total_cmp(&x.2.unwrap_or(-1.0))
            .then_with(|| (x.0, x.1).cmp(&(y.0, y.1)))
    });
    missed.truncate(WORST_SHOWN);

    let wanted: HashSet<String> = false_pairs
        .iter()
        .flat_map(|p| [p.a.clone(), p.b.clone()])
        .chain(missed.iter().flat_map(|m| [m.0.to_owned(), m.1.to_owned()]))
        .collect();
    let texts = load_texts(input.truth_path, input.fields, &wanted)?;
    let text = |id: &str| texts.get(id).map(String::as_str).unwrap_or("");

    let _ = writeln!(
        out,
        "<h2>Worst errors</h2>\n<h3>False pairs: confirmed, not labelled duplicates (highest score first)</h3>"
    );
    if false_pairs.is_empty() {
        out.push_str("<p>None.</p>\n");
    }
    for p in &false_pairs {
        error_block(out, &p.a, &p.b, Some(score_of(p)), text(&p.a), text(&p.b));
    }
    let _ = writeln!(
        out,
        "<h3>Missed pairs: labelled duplicates the run did not join ({total_missed} in all; nearest misses first)</h3>"
    );
    if missed.is_empty() {
        out.push_str("<p>None.</p>\n");
    }
    for (a, b, s) in &missed {
        error_block(out, a, b, *s, text(a), text(b));
    }
    Ok(())
}

fn error_block(out: &mut String, a: &str, b: &str, score: Option<f64>, text_a: &str, text_b: &str) {
    let d = diff(text_a, text_b, Tokens::Words);
    let _ = writeln!(
        out,
        "<div class=\"error\"><div class=\"ids\"><code>{}</code> · <code>{}</code> · score {} · overlap {:.2} / {:.2}</div><div class=\"diff\">{}</div></div>",
        escape_html(a),
        escape_html(b),
        score.map_or_else(
            || "not scored (no candidate)".to_owned(),
            |s| format!("{s:.3}")
        ),
        d.overlap_a,
        d.overlap_b,
        d.render_html()
    );
}

/// The texts of the `wanted` ids in a JSONL file.
fn load_texts(
    path: &Path,
    fields: &FieldSpec,
    wanted: &HashSet<String>,
) -> Result<HashMap<String, String>> {
    let mut texts = HashMap::new();
    if wanted.is_empty() {
        return Ok(texts);
    }
    let limit = record_limit(DEFAULT_MAX_DOC_BYTES);
    for raw in Input::new(path, Some(InputFormat::JSONL))?.open(fields, limit)? {
        // Records that do not parse with these fields have no text to show; the metrics
        // were computed from the labels alone.
        if let Ok(record) = raw?.parse(fields)
            && wanted.contains(&record.id)
        {
            texts.insert(record.id, record.text);
        }
    }
    Ok(texts)
}

const STYLE: &str = "body{font:15px/1.45 system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#222}\
h1{margin-bottom:.2em}h2{margin-top:1.6em;border-bottom:1px solid #ddd}.meta,.note{color:#666;font-size:.9em}\
table{border-collapse:collapse;margin:.6em 0}td,th{padding:.25em .7em;border-bottom:1px solid #eee;text-align:right}\
td:first-child,th:first-child{text-align:left}.cards{display:flex;gap:1em;flex-wrap:wrap}\
.card{border:1px solid #ddd;border-radius:6px;padding:.6em 1.1em}.card .value{font-size:1.6em;font-weight:600}\
.card .label{color:#666}figure{margin:.8em 0}.error{border:1px solid #eee;border-radius:6px;padding:.5em .8em;margin:.6em 0}\
.ids{color:#555;font-size:.9em;margin-bottom:.3em}del{background:#fdd;text-decoration:line-through}ins{background:#dfd;text-decoration:none}\
.replaced del{background:#fec}.replaced ins{background:#efc}";
