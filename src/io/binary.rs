//! 32-bit words in and out of binary files, little-endian: how a run sets large arrays aside
//! on disk while it needs the memory for something else.

use std::io::{self, Read, Write};

/// Words converted at a time.
const CHUNK: usize = 1 << 14;

/// Writes `words` as little-endian bytes, with nothing around them.
pub fn write_words(w: &mut impl Write, words: &[u32]) -> io::Result<()> {
    let mut bytes = Vec::with_capacity(CHUNK.min(words.len()) * 4);
    for chunk in words.chunks(CHUNK) {
        bytes.clear();
        bytes.extend(chunk.iter().flat_map(|x| x.to_le_bytes()));
        w.write_all(&bytes)?;
    }
    Ok(())
}

/// Reads `count` words that [`write_words`] wrote. The words grow as they are read: a count
/// from a damaged file ends in an error at the end of the input, not in asking for more memory
/// than the machine has.
pub fn read_words(r: &mut impl Read, count: usize) -> io::Result<Vec<u32>> {
    let mut words = Vec::with_capacity(count.min(1 << 24));
    read_words_into(r, count, &mut words)?;
    Ok(words)
}

/// Reads `count` words that [`write_words`] wrote onto the end of `words`.
pub fn read_words_into(r: &mut impl Read, count: usize, words: &mut Vec<u32>) -> io::Result<()> {
    // Short lists (a record's title, its numbers) are most of a file of sketches: they are
    // read through the stack, not a buffer made for each.
    const SHORT: usize = 64;
    let mut short = [0u8; SHORT * 4];
    let mut long = Vec::new();
    let bytes: &mut [u8] = match count <= SHORT {
        true => &mut short,
        false => {
            long.resize(CHUNK.min(count) * 4, 0);
            &mut long
        }
    };
    let mut left = count;
    while left > 0 {
        let n = (bytes.len() / 4).min(left);
        r.read_exact(&mut bytes[..n * 4])?;
        words.extend(
            bytes[..n * 4]
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        );
        left -= n;
    }
    Ok(())
}

/// Writes `floats` as little-endian bytes, with nothing around them.
pub fn write_floats(w: &mut impl Write, floats: &[f32]) -> io::Result<()> {
    if cfg!(target_endian = "little") {
        return w.write_all(bytemuck::cast_slice(floats));
    }
    let words: Vec<u32> = floats.iter().map(|x| x.to_bits()).collect();
    write_words(w, &words)
}

/// Reads `count` floats that [`write_floats`] wrote, straight into their memory.
pub fn read_floats(r: &mut impl Read, count: usize) -> io::Result<Vec<f32>> {
    let mut floats = vec![0f32; count];
    r.read_exact(bytemuck::cast_slice_mut(&mut floats))?;
    if cfg!(target_endian = "big") {
        for x in &mut floats {
            *x = f32::from_bits(u32::from_le(x.to_bits()));
        }
    }
    Ok(floats)
}

/// Writes a count (a length), as 8 bytes.
pub fn write_count(w: &mut impl Write, count: usize) -> io::Result<()> {
    w.write_all(&(count as u64).to_le_bytes())
}

/// Reads a count [`write_count`] wrote.
pub fn read_count(r: &mut impl Read) -> io::Result<usize> {
    let mut bytes = [0u8; 8];
    r.read_exact(&mut bytes)?;
    usize::try_from(u64::from_le_bytes(bytes))
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "a count past this machine's"))
}

/// Writes `words` after their count, so that [`read_list`] needs nothing else.
pub fn write_list(w: &mut impl Write, words: &[u32]) -> io::Result<()> {
    write_count(w, words.len())?;
    write_words(w, words)
}

/// Reads a list [`write_list`] wrote.
pub fn read_list(r: &mut impl Read) -> io::Result<Vec<u32>> {
    let count = read_count(r)?;
    read_words(r, count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_lists_read_back_as_written() {
        let long: Vec<u32> = (0..(CHUNK as u32 * 2 + 7))
            .map(|i| i.wrapping_mul(2_654_435_761))
            .collect();
        let mut bytes = Vec::new();
        write_words(&mut bytes, &long).unwrap();
        write_list(&mut bytes, &[]).unwrap();
        write_list(&mut bytes, &[u32::MAX, 0, 1]).unwrap();
        assert_eq!(bytes.len(), long.len() * 4 + 8 + 8 + 12);
        let mut r = bytes.as_slice();
        assert_eq!(read_words(&mut r, long.len()).unwrap(), long);
        assert_eq!(read_list(&mut r).unwrap(), Vec::<u32>::new());
        assert_eq!(read_list(&mut r).unwrap(), [u32::MAX, 0, 1]);
        assert!(r.is_empty());
        assert_eq!(
            read_list(&mut r).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        // A damaged count is an error, not an allocation of 2^56 words.
        let mut damaged = Vec::new();
        write_count(&mut damaged, 1 << 56).unwrap();
        write_words(&mut damaged, &[1, 2, 3]).unwrap();
        let err = read_list(&mut damaged.as_slice()).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    }
}
