//! A run, built once from its pipeline: what every front end (the command line, `neardup
//! merge`, Python) holds and asks to find, write, add and score.
//!
//! A [`PipelineSpec`] says what to read, how, with which method, and where the results go.
//! [`Run::new`] opens its inputs once and keeps them with the read options and the models
//! folder, so that no caller passes them along itself. Then:
//! - [`Run::execute`] does what the pipeline asks, start to end, and says what it did
//!   ([`Ran`]): a part of a split run writes its stage's folder, a whole run finds, writes its
//!   files (adding its records to the collection it was checked against, where asked) and is
//!   scored where the pipeline has an `[eval]` table;
//! - [`Run::hold`] finds and keeps the result in memory ([`Held`]), to be read, decided again
//!   at another threshold ([`Run::rethreshold`]) or written later ([`Run::write`]);
//! - [`merge`](super::merge()) rebuilds the run of the parts it joins, to be written the same way.

use std::path::{Path, PathBuf};

use super::dedup::{Dedup, add_where_asked, dedup, dedup_to_rethreshold, lock_collection_to_add};
use super::{Method, OutputSpec, Part, PartWritten, PipelineSpec, embed_part, sign_part};
use crate::error::{Error, Result};
use crate::eval::{Evaluation, Truth, evaluate, load_predictions};
use crate::io::{FolderLock, Input, ReadOptions, SkipReport};
use crate::output::run::{EVAL, RunFolder, RunSummary};
use crate::output::write_json_pretty;

/// A pipeline with its inputs opened: everything a run reads, made once.
pub struct Run {
    spec: PipelineSpec,
    inputs: Vec<Input>,
    read: ReadOptions,
    models: PathBuf,
}

/// What [`Run::execute`] did.
pub enum Ran {
    /// A part of a split MinHash run signed its share of the input.
    Signed(Part, PartWritten),
    /// A part of a split two-stage run signed and embedded its share of the input.
    Embedded(Part, PartWritten),
    /// A part of a two-stage run over a shared index found its share's pairs, for `neardup
    /// merge` to group.
    Part(Part, Finished),
    /// The whole run.
    Whole(Finished),
}

/// A run whose files are written.
pub struct Finished {
    /// The summary written with them.
    pub summary: RunSummary,
    /// What `--skip-invalid` skipped.
    pub skipped: SkipReport,
    /// How many records were added, and to which collection, where the run adds.
    pub added: Option<(usize, PathBuf)>,
    /// The scores against the pipeline's labelled duplicates, where it has an `[eval]` table;
    /// or why the run, whose files are written, could not be scored (for the caller to say
    /// after what the run did).
    pub evaluation: Result<Option<Evaluation>>,
}

/// A run's result kept in memory ([`Run::hold`]).
pub struct Held {
    /// Pairs and groups, with what grouping them again needs.
    pub dedup: Dedup,
    /// The member each group keeps.
    pub kept: Vec<u32>,
    /// How many records were added to the collection the run was checked against, where it
    /// adds.
    pub added: Option<usize>,
}

impl Run {
    /// The run `spec` describes, models looked up under `models`; its inputs are opened.
    pub fn new(spec: PipelineSpec, models: &Path) -> Result<Run> {
        let inputs = spec.input.inputs()?;
        let read = spec.input.read_options();
        Ok(Run::of_inputs(spec, inputs, read, models))
    }

    /// The run of `spec` over `inputs` already opened (a merge's, checked against its parts).
    pub(super) fn of_inputs(
        spec: PipelineSpec,
        inputs: Vec<Input>,
        read: ReadOptions,
        models: &Path,
    ) -> Run {
        Run {
            spec,
            inputs,
            read,
            models: models.to_path_buf(),
        }
    }

    /// The pipeline it runs.
    pub fn spec(&self) -> &PipelineSpec {
        &self.spec
    }

    /// Its inputs.
    pub fn inputs(&self) -> &[Input] {
        &self.inputs
    }

    /// How its records are read.
    pub fn read(&self) -> &ReadOptions {
        &self.read
    }

    /// Where its models are.
    pub(super) fn models(&self) -> &Path {
        &self.models
    }

    /// Does what the pipeline asks into the folder `lock` holds (its `[output]` folder).
    pub fn execute(&self, lock: FolderLock) -> Result<Ran> {
        let spec = &self.spec;
        // A format the inputs cannot be written in is refused before the work.
        spec.output.format(&self.inputs)?;
        let part = spec.method.part();
        if let Some(part) = part {
            if spec.eval.is_some() {
                return Err(Error::Usage(
                    "a part of a split run is scored once the parts are merged: drop [eval], \
                     and run `neardup eval` on the folder `neardup merge` writes"
                        .into(),
                ));
            }
            match &spec.method {
                Method::MinHash(_) => return Ok(Ran::Signed(part, sign_part(self, lock)?)),
                Method::TwoStage(config) if config.index_dir.is_none() => {
                    return Ok(Ran::Embedded(part, embed_part(self, lock)?));
                }
                _ => {}
            }
        }
        // A run that adds to its collection holds it from before reading it until it has added.
        let _adding = lock_collection_to_add(&spec.method)?;
        let dedup = dedup(&self.inputs, &self.read, &spec.method, &self.models)?;
        let mut added = None;
        let summary = self.write_then(lock, &dedup, &spec.output, || {
            added = self.add(&dedup)?;
            Ok(())
        })?;
        let evaluation = match part {
            Some(_) => Ok(None),
            None => self.evaluate(),
        };
        let finished = Finished {
            summary,
            skipped: dedup.corpus.skipped,
            added,
            evaluation,
        };
        Ok(match part {
            Some(part) => Ran::Part(part, finished),
            None => Ran::Whole(finished),
        })
    }

    /// Finds the pairs and groups, keeping what grouping them again needs, and adds the kept
    /// records to the collection the run is checked against, where it asks to.
    pub fn hold(&self) -> Result<Held> {
        let _adding = lock_collection_to_add(&self.spec.method)?;
        let dedup =
            dedup_to_rethreshold(&self.inputs, &self.read, &self.spec.method, &self.models)?;
        let kept = self.kept(&dedup)?;
        let added = self.add(&dedup)?.map(|(added, _)| added);
        Ok(Held { dedup, kept, added })
    }

    /// The run that decides `held`'s candidates again where the threshold is `threshold`, and
    /// what it finds: nothing signed or embedded again.
    pub fn rethreshold(&self, held: &Held, threshold: f64) -> Result<(Run, Held)> {
        let (dedup, method) = super::rethreshold(&held.dedup, &self.spec.method, threshold)?;
        let run = Run {
            spec: PipelineSpec {
                method,
                ..self.spec.clone()
            },
            inputs: self.inputs.clone(),
            read: self.read.clone(),
            models: self.models.clone(),
        };
        let kept = run.kept(&dedup)?;
        Ok((
            run,
            Held {
                dedup,
                kept,
                added: None,
            },
        ))
    }

    /// Writes `dedup`'s files into the folder `lock` holds, as `output` asks; returns the
    /// summary.
    pub fn write(
        &self,
        lock: FolderLock,
        dedup: &Dedup,
        output: &OutputSpec,
    ) -> Result<RunSummary> {
        self.write_then(lock, dedup, output, || Ok(()))
    }

    /// [`Run::write`], running `before_summary` once the other files are in place
    /// ([`write_results`](super::write::write_results)).
    fn write_then(
        &self,
        lock: FolderLock,
        dedup: &Dedup,
        output: &OutputSpec,
        before_summary: impl FnOnce() -> Result<()>,
    ) -> Result<RunSummary> {
        let settings = serde_json::to_value(&self.spec).expect("settings serialise");
        super::write::write_results(
            lock,
            &self.inputs,
            &self.read,
            dedup,
            output,
            settings,
            before_summary,
        )
    }

    /// The member each of `dedup`'s groups keeps under the pipeline's keep policy.
    pub fn kept(&self, dedup: &Dedup) -> Result<Vec<u32>> {
        super::write::kept_members(&self.inputs, &self.read, dedup, &self.spec.output.keep)
    }

    /// Adds the records `dedup` keeps to the collection the run was checked against, where it
    /// asks to: how many, and to which collection.
    fn add(&self, dedup: &Dedup) -> Result<Option<(usize, PathBuf)>> {
        let keep = &self.spec.output.keep;
        let added = add_where_asked(
            &self.spec.method,
            &self.inputs,
            &self.read,
            dedup,
            keep,
            &self.models,
        )?;
        Ok(added.map(|(added, collection)| (added, collection.to_path_buf())))
    }

    /// Scores the written run against the labelled duplicates of the pipeline's `[eval]`
    /// table, if it has one, and writes the scores beside the run's files.
    fn evaluate(&self) -> Result<Option<Evaluation>> {
        let Some(eval) = &self.spec.eval else {
            return Ok(None);
        };
        let dir = &self.spec.output.dir;
        let truth = Truth::load(&eval.truth, &self.read.fields.id)?;
        let run = RunFolder::open(dir)?;
        let predicted = load_predictions(&run, eval.predicted)?;
        truth.check_run(&eval.truth, &run, &predicted)?;
        let evaluation = evaluate(&truth, &predicted);
        write_json_pretty(&dir.join(EVAL), &evaluation)?;
        Ok(Some(evaluation))
    }
}
