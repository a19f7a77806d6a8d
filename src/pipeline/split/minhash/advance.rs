//! `neardup merge STAGE_FOLDERS --part J/N`: a split MinHash run's next stage for one part.

use std::path::PathBuf;
use std::time::Instant;

use super::band::{band, routed_to, write_routed};
use super::judge::{confirm, write_scored};
use crate::error::{Error, Result};
use crate::io::FolderLock;
use crate::output::run::{RunSummary, RunWriter, StageTimes};
use crate::pipeline::split::part::Part;
use crate::pipeline::split::stage::{
    Stage, folders_seen_from, open_stage, signed_of, spec_for, stage_summary,
};

/// `neardup merge FOLDERS --part P`: the stage after the one that wrote `dirs`, for part
/// `part`, into the folder `lock` holds.
pub fn advance(dirs: &[PathBuf], part: Part, lock: FolderLock) -> Result<RunSummary> {
    let folders = open_stage(dirs)?;
    let first = &folders[0];
    if part.count != first.part.count {
        return Err(Error::Usage(format!(
            "--part {part}: the run was signed in {} parts, and each stage has as many",
            first.part.count
        )));
    }
    let signed = signed_of(&folders)?;
    let clock = Instant::now();
    let signed_from_here = folders_seen_from(lock.dir(), &signed.folders);
    let mut run = RunWriter::begin(lock)?;
    let (stage, counts) = match first.stage {
        Stage::Signed => {
            let count = write_routed(&mut run, band(&signed, part)?)?;
            (Stage::Banded, (count, 0))
        }
        Stage::Banded => {
            let routed = routed_to(&folders, part)?;
            let judged = confirm(&signed, part, routed, &first.config)?;
            (Stage::Confirmed, write_scored(&mut run, judged)?)
        }
        Stage::Confirmed => {
            return Err(Error::Usage(
                "these parts are confirmed: join them with `neardup merge CONFIRMED_FOLDERS... \
                 --out DIR`, without --part"
                    .into(),
            ));
        }
        Stage::Embedded => {
            return Err(Error::Usage(
                "these two-stage parts are embedded: learn their cells once with `neardup merge \
                 EMBEDDED_FOLDERS... --learn-cells --out CELLS`, then search them with \
                 `neardup merge CELLS --part J/N`; or search them in one process with \
                 `neardup merge EMBEDDED_FOLDERS... --out DIR`, without --part"
                    .into(),
            ));
        }
        Stage::Searched | Stage::Cells => {
            unreachable!("two-stage's searched parts and cells go on in `two_stage`")
        }
    };
    let seconds = StageTimes {
        candidates: clock.elapsed().as_secs_f64(),
        ..StageTimes::default()
    };
    let summary = stage_summary(
        &spec_for(first, Some(part)),
        stage,
        Some(signed_from_here),
        signed.documents(),
        counts,
        seconds,
    );
    run.finish(summary)
}
