//! Rows of 32-bit floats held in memory, or mapped from a file that holds them little-endian.
//!
//! A collection's vectors (1.5 GB at a million documents) are read by every batch checked
//! against it. Read into fresh memory, most of that time is the kernel clearing the pages
//! before the copy lands in them; mapped, the pages are the file's own, already in the page
//! cache after the first batch, and nothing is copied.

use std::fs::File;
use std::io;
use std::ops::Deref;

use memmap2::Mmap;

/// Floats, owned or mapped; changed only once owned ([`Floats::to_mut`]).
pub enum Floats {
    Owned(Vec<f32>),
    Mapped {
        map: Mmap,
        /// Where the floats start in the file, in bytes (a multiple of 4).
        start: usize,
        count: usize,
    },
}

impl Floats {
    /// The `count` floats at byte `start` of `file` (written little-endian, `start` a multiple
    /// of 4), mapped. Where the machine is big-endian, or the map cannot be made aligned, they
    /// are read instead.
    pub fn map(file: &File, start: u64, count: usize) -> io::Result<Floats> {
        let start = usize::try_from(start).map_err(io::Error::other)?;
        let end = start + count * 4;
        // SAFETY: neardup replaces the files it maps by renaming a new one over them, never by
        // writing into them, so the mapped bytes do not change while they are read; another
        // program truncating the file would, as it would for any reader of it.
        let map = unsafe { Mmap::map(file)? };
        if map.len() < end {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the file is shorter than its floats",
            ));
        }
        let fits = bytemuck::try_cast_slice::<u8, f32>(&map[start..end]).is_ok();
        if cfg!(target_endian = "little") && fits {
            return Ok(Floats::Mapped { map, start, count });
        }
        Ok(Floats::Owned(super::read_floats(
            &mut &map[start..end],
            count,
        )?))
    }

    /// The floats, to change: copied out of the file first where they are mapped.
    pub fn to_mut(&mut self) -> &mut Vec<f32> {
        if let Floats::Mapped { .. } = self {
            *self = Floats::Owned(self.to_vec());
        }
        match self {
            Floats::Owned(floats) => floats,
            Floats::Mapped { .. } => unreachable!("copied just above"),
        }
    }
}

impl Default for Floats {
    fn default() -> Self {
        Floats::Owned(Vec::new())
    }
}

impl Deref for Floats {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            Floats::Owned(floats) => floats,
            Floats::Mapped { map, start, count } => {
                bytemuck::cast_slice(&map[*start..*start + *count * 4])
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn mapped_floats_read_as_written_and_copy_out_to_change() {
        let floats: Vec<f32> = (0..1000).map(|i| i as f32 / 7.0).collect();
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(b"head").unwrap();
        super::super::write_floats(&mut file, &floats).unwrap();
        let mut mapped = Floats::map(&file, 4, floats.len()).unwrap();
        assert!(matches!(mapped, Floats::Mapped { .. }) == cfg!(target_endian = "little"));
        assert_eq!(&mapped[..], &floats[..]);
        mapped.to_mut().push(1.5);
        assert!(matches!(mapped, Floats::Owned(_)));
        assert_eq!(mapped.len(), 1001);
        assert_eq!(&mapped[..1000], &floats[..]);
        let short = Floats::map(&file, 4, floats.len() + 1);
        assert_eq!(
            short.err().map(|e| e.kind()),
            Some(io::ErrorKind::UnexpectedEof)
        );
    }
}
