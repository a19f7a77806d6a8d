//! Files sealed with a digest of their bytes, for the files an index keeps beside its store
//! (the snapshot of every document, the cells) that a later run trusts without building them
//! again.
//!
//! A damaged byte in such a file (a disk fault, a copy cut short, a stray write) would
//! otherwise be read as data: a vector or a sketch silently other than the one stored, and a
//! run's candidates with it. So the writer ([`SealWriter`]) appends a digest of everything
//! written before it, and a reader checks it ([`check_seal`]) before it uses any of the file.
//!
//! The digest is XXH3-64 over the XXH3-64 of each [`SEAL_BLOCK`] of the content: the blocks
//! are checked on every core, so a file of gigabytes costs a fraction of the time it takes
//! to read.

use std::fs::File;
use std::io::{self, Write};

use memmap2::Mmap;
use rayon::prelude::*;
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

/// Bytes of content each block digest covers.
pub const SEAL_BLOCK: usize = 16 << 20;
/// Bytes the seal takes at the end of a file.
const SEAL_BYTES: usize = 8;

/// Writes content through to `inner`, digesting it, and the seal after it
/// ([`SealWriter::finish`]).
pub struct SealWriter<W: Write> {
    inner: W,
    block: Xxh3,
    in_block: usize,
    blocks: Vec<u8>,
}

impl<W: Write> SealWriter<W> {
    pub fn new(inner: W) -> Self {
        SealWriter {
            inner,
            block: Xxh3::new(),
            in_block: 0,
            blocks: Vec::new(),
        }
    }

    /// Appends the seal of everything written, and hands back the writer it went to.
    pub fn finish(mut self) -> io::Result<W> {
        if self.in_block > 0 {
            self.blocks.extend(self.block.digest().to_le_bytes());
        }
        self.inner.write_all(&xxh3_64(&self.blocks).to_le_bytes())?;
        Ok(self.inner)
    }
}

impl<W: Write> Write for SealWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let room = SEAL_BLOCK - self.in_block;
        let n = self.inner.write(&buf[..buf.len().min(room)])?;
        self.block.update(&buf[..n]);
        self.in_block += n;
        if self.in_block == SEAL_BLOCK {
            self.blocks.extend(self.block.digest().to_le_bytes());
            self.block.reset();
            self.in_block = 0;
        }
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Checks the seal of `file` (written by a [`SealWriter`]); returns the length of its
/// content, the bytes before the seal. A file too short to hold one, or whose bytes are not
/// those sealed, is [`io::ErrorKind::InvalidData`].
pub fn check_seal(file: &File) -> io::Result<u64> {
    let damaged = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_owned());
    let length = file.metadata()?.len();
    if length < SEAL_BYTES as u64 {
        return Err(damaged("it is too short to be whole"));
    }
    // SAFETY: the files sealed are replaced by renaming a new one over them, never written
    // in place, so the mapped bytes do not change while they are read.
    let map = unsafe { Mmap::map(file)? };
    let (content, seal) = map.split_at(map.len() - SEAL_BYTES);
    check_bytes(content, seal.try_into().expect("eight bytes"))?;
    Ok(content.len() as u64)
}

/// Checks `content` against the seal `seal`.
fn check_bytes(content: &[u8], seal: [u8; SEAL_BYTES]) -> io::Result<()> {
    let blocks: Vec<u8> = content
        .par_chunks(SEAL_BLOCK)
        .flat_map_iter(|block| xxh3_64(block).to_le_bytes())
        .collect();
    if xxh3_64(&blocks) != u64::from_le_bytes(seal) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "its bytes are not those written (the file is damaged or was cut short)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(content: &[u8], pieces: usize) -> Vec<u8> {
        let mut writer = SealWriter::new(Vec::new());
        for piece in content.chunks(pieces.max(1)) {
            writer.write_all(piece).unwrap();
        }
        writer.finish().unwrap()
    }

    fn check(bytes: &[u8]) -> io::Result<u64> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        check_seal(&file)
    }

    #[test]
    fn a_sealed_file_checks_and_any_damage_is_found() {
        // Across a block boundary, written in pieces that straddle it.
        let content: Vec<u8> = (0..SEAL_BLOCK + 1000)
            .map(|i| (i * 7 % 251) as u8)
            .collect();
        let whole = sealed(&content, 4099);
        assert_eq!(
            whole,
            sealed(&content, SEAL_BLOCK + 1000),
            "pieces do not matter"
        );
        assert_eq!(check(&whole).unwrap(), content.len() as u64);
        assert_eq!(check(&sealed(&[], 1)).unwrap(), 0);

        let flipped = |at: usize| {
            let mut bytes = whole.clone();
            bytes[at] ^= 1;
            bytes
        };
        let mut zeroed = whole.clone();
        zeroed[100..4196].fill(0);
        let damaged = [
            flipped(0),
            flipped(SEAL_BLOCK + 10),
            flipped(whole.len() - 1),
            zeroed,
            whole[..whole.len() - 1].to_vec(),
            whole[..SEAL_BLOCK].to_vec(),
            [whole.clone(), b"tail".to_vec()].concat(),
            vec![1, 2, 3],
        ];
        for (i, bytes) in damaged.iter().enumerate() {
            let err = check(bytes).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{i}: {err}");
        }
    }

    proptest::proptest! {
        /// Any content, written in any pieces: the seal checks, and a byte changed anywhere or
        /// the file cut anywhere is found.
        #[test]
        fn any_change_to_a_sealed_file_is_found(
            content in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..20_000),
            pieces in 1usize..5_000,
            at in proptest::prelude::any::<proptest::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let whole = sealed(&content, pieces);
            proptest::prop_assert_eq!(check(&whole).unwrap(), content.len() as u64);
            let mut changed = whole.clone();
            let at = at.index(whole.len());
            changed[at] ^= flip;
            proptest::prop_assert!(check(&changed).is_err());
            proptest::prop_assert!(check(&whole[..at]).is_err());
        }
    }
}
