//! Writing large files at the disk's pace instead of the page cache's.
//!
//! Left to itself, Linux keeps a file's written pages in memory until gigabytes are dirty, then
//! throttles the writer and reclaims memory a page at a time. On a 2-core machine, writing 6 GB
//! so cost 6 to 15 s of system time; started on disk a window at a time and dropped from the
//! cache once there, the same 6 GB took 2.5 s. Databases do the same (RocksDB's
//! `bytes_per_sync`). The file's [`std::fs::File::sync_all`] at the end stays the promise that it
//! is on disk; these calls only start that work early, and where they are refused (another
//! system, a file system without them) the file is written as before. A disk error they meet
//! is the write's error: once reported here, Linux would not report it again to the final
//! `sync_all`.

use std::fs::File;
use std::io::{self, Write};

/// A file that is pushed to disk, and out of the page cache, a window at a time.
pub struct WrittenBack<W> {
    file: W,
    window: u64,
    written: u64,
    /// Where the window not yet sent to disk starts.
    sent: u64,
    /// False once the system refused a call as unsupported: the rest is written plainly.
    enabled: bool,
}

/// A file whose pages can be sent to disk and dropped from the cache by range.
pub trait Writeback {
    /// Starts writing `[offset, offset + len)` to disk; waits for it too if `wait`.
    fn send(&self, offset: u64, len: u64, wait: bool) -> io::Result<()>;
    /// Drops `[offset, offset + len)`, already on disk, from the page cache.
    fn forget(&self, offset: u64, len: u64);
}

impl<W: Writeback + Write> WrittenBack<W> {
    /// Bytes sent to disk at a time: large enough that the calls cost nothing, small enough
    /// that little is dirty at once.
    pub const WINDOW: u64 = 16 << 20;

    /// Writes through to `file`, sending it to disk every [`Self::WINDOW`] bytes.
    pub fn new(file: W) -> Self {
        Self::with_window(file, Self::WINDOW)
    }

    fn with_window(file: W, window: u64) -> Self {
        WrittenBack {
            file,
            window,
            written: 0,
            sent: 0,
            enabled: true,
        }
    }

    /// The file written to.
    pub fn into_inner(self) -> W {
        self.file
    }

    /// Sends each full window to disk, and waits for and forgets the window before it, so
    /// that at most two windows are dirty while the disk writes one.
    fn send_full_windows(&mut self) -> io::Result<()> {
        while self.enabled && self.written - self.sent >= self.window {
            let (start, len) = (self.sent, self.window);
            let sent = self.file.send(start, len, false).and_then(|()| {
                if start >= len {
                    self.file.send(start - len, len, true)?;
                    self.file.forget(start - len, len);
                }
                Ok(())
            });
            match sent {
                Ok(()) => {}
                Err(e) if unsupported(&e) => self.enabled = false,
                Err(e) => return Err(e),
            }
            self.sent += len;
        }
        Ok(())
    }
}

/// Whether `e` says that the calls do not apply to this file (not a regular file, a system
/// without them), rather than that the disk failed.
fn unsupported(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::Unsupported | io::ErrorKind::InvalidInput | io::ErrorKind::NotSeekable
    )
}

impl<W: Writeback + Write> Write for WrittenBack<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        self.send_full_windows()?;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

#[cfg(target_os = "linux")]
impl Writeback for File {
    fn send(&self, offset: u64, len: u64, wait: bool) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        let flags = match wait {
            true => {
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER
            }
            false => libc::SYNC_FILE_RANGE_WRITE,
        };
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return Err(io::ErrorKind::InvalidInput.into());
        };
        // SAFETY: a plain system call on a descriptor this file owns; no memory is passed.
        match unsafe { libc::sync_file_range(self.as_raw_fd(), offset, len, flags) } {
            0 => Ok(()),
            _ => Err(io::Error::last_os_error()),
        }
    }

    fn forget(&self, offset: u64, len: u64) {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (i64::try_from(offset), i64::try_from(len)) else {
            return;
        };
        // SAFETY: as above. Advice only: a refusal leaves the pages cached, nothing else.
        unsafe { libc::posix_fadvise(self.as_raw_fd(), offset, len, libc::POSIX_FADV_DONTNEED) };
    }
}

#[cfg(not(target_os = "linux"))]
impl Writeback for File {
    fn send(&self, _: u64, _: u64, _: bool) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }

    fn forget(&self, _: u64, _: u64) {}
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::io::Read;

    /// Records the calls a [`WrittenBack`] makes, and holds the bytes; with `failure`
    /// `(calls, kind)`, a send fails with `kind` once `calls` calls are recorded.
    #[derive(Default)]
    struct Recorder {
        bytes: Vec<u8>,
        calls: RefCell<Vec<(&'static str, u64, u64)>>,
        failure: Option<(usize, io::ErrorKind)>,
    }

    impl Write for Recorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            // Short writes, as a real file may make.
            let n = buf.len().min(7);
            self.bytes.extend_from_slice(&buf[..n]);
            Ok(n)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Writeback for Recorder {
        fn send(&self, offset: u64, len: u64, wait: bool) -> io::Result<()> {
            let mut calls = self.calls.borrow_mut();
            if let Some((from, kind)) = self.failure
                && calls.len() >= from
            {
                return Err(kind.into());
            }
            calls.push((if wait { "wait" } else { "send" }, offset, len));
            Ok(())
        }
        fn forget(&self, offset: u64, len: u64) {
            self.calls.borrow_mut().push(("forget", offset, len));
        }
    }

    #[test]
    fn each_full_window_is_sent_and_the_one_before_it_waited_for_and_forgotten() {
        let mut file = WrittenBack::with_window(Recorder::default(), 10);
        let data: Vec<u8> = (0..35u8).collect();
        file.write_all(&data).unwrap();
        let file = file.into_inner();
        assert_eq!(file.bytes, data);
        let calls = file.calls.into_inner();
        assert_eq!(
            calls,
            [
                ("send", 0, 10),
                ("send", 10, 10),
                ("wait", 0, 10),
                ("forget", 0, 10),
                ("send", 20, 10),
                ("wait", 10, 10),
                ("forget", 10, 10),
            ]
        );
    }

    #[test]
    fn a_refused_call_leaves_the_file_written_plainly_and_a_disk_error_fails_the_write() {
        let data: Vec<u8> = (0..95u8).collect();
        let refusing = Recorder {
            failure: Some((1, io::ErrorKind::Unsupported)),
            ..Recorder::default()
        };
        let mut file = WrittenBack::with_window(refusing, 10);
        file.write_all(&data).unwrap();
        assert!(!file.enabled);
        let file = file.into_inner();
        assert_eq!(file.bytes, data);
        assert_eq!(file.calls.into_inner(), [("send", 0, 10)]);

        let failing = Recorder {
            failure: Some((2, io::ErrorKind::Other)),
            ..Recorder::default()
        };
        let mut file = WrittenBack::with_window(failing, 10);
        let err = file.write_all(&data).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Other);
    }

    #[test]
    fn a_real_file_written_back_reads_back_as_written() {
        let mut temp = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut file = WrittenBack::with_window(temp.try_clone().unwrap(), 4096);
        for chunk in data.chunks(1000) {
            file.write_all(chunk).unwrap();
        }
        #[cfg(target_os = "linux")]
        assert!(
            file.enabled,
            "the system refused sync_file_range on a temporary file"
        );
        file.into_inner().sync_all().unwrap();
        use std::io::Seek;
        temp.rewind().unwrap();
        let mut back = Vec::new();
        temp.read_to_end(&mut back).unwrap();
        assert_eq!(back, data);
    }
}
