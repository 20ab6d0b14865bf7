//! Bytes handed from a writer to a follower in memory: a growing history is merged into
//! one capture's bytes ([`crate::history::Growing`]) that the views read through the same
//! [`hotspot_format::Follower`] as a growing file. Bytes the follower has read are dropped,
//! so the pipe holds only what is not read yet, not the whole history.

use std::collections::VecDeque;
use std::io::{Read, Seek, SeekFrom, Write};
use std::sync::{Arc, Mutex, MutexGuard};

/// One end of a pipe; clones share it (one writes, one reads).
#[derive(Debug, Clone, Default)]
pub struct Pipe {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Bytes written and not read yet.
    bytes: VecDeque<u8>,
    /// Bytes read (and dropped) so far: the reading position.
    read: u64,
}

impl Pipe {
    pub fn new() -> Pipe {
        Pipe::default()
    }

    /// Bytes written and not read yet.
    pub fn unread(&self) -> usize {
        self.lock().bytes.len()
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves plain bytes, still consistent.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Write for Pipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.lock().bytes.extend(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut inner = self.lock();
        // The first of the deque's two slices: a read may return less than is there.
        let (front, _) = inner.bytes.as_slices();
        let n = front.len().min(buf.len());
        buf[..n].copy_from_slice(&front[..n]);
        inner.bytes.drain(..n);
        inner.read += n as u64;
        Ok(n)
    }
}

/// Only forward: to the reading position (where a follower seeks before each read), or
/// past unread bytes, which are dropped. Going back is an error: those bytes are gone.
impl Seek for Pipe {
    fn seek(&mut self, pos: SeekFrom) -> std::io::Result<u64> {
        let mut inner = self.lock();
        let to = match pos {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::Current(d) => inner.read.checked_add_signed(d),
            SeekFrom::End(d) => (inner.read + inner.bytes.len() as u64).checked_add_signed(d),
        };
        let end = inner.read + inner.bytes.len() as u64;
        match to {
            Some(p) if p >= inner.read && p <= end => {
                let skip = (p - inner.read) as usize;
                inner.bytes.drain(..skip);
                inner.read = p;
                Ok(p)
            }
            _ => Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a pipe is read forward only, within what was written",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn reads_what_was_written_once_and_drops_it() {
        let mut w = Pipe::new();
        let mut r = w.clone();
        w.write_all(b"hello ").unwrap();
        let mut buf = [0u8; 4];
        assert_eq!(r.read(&mut buf).unwrap(), 4);
        assert_eq!(&buf, b"hell");
        assert_eq!(r.unread(), 2);
        w.write_all(b"world").unwrap();
        assert_eq!(r.seek(SeekFrom::Start(4)).unwrap(), 4);
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).unwrap();
        assert_eq!(rest, b"o world");
        assert_eq!(r.unread(), 0);
        // Read bytes are gone: no going back, nor past what was written.
        assert!(r.seek(SeekFrom::Start(3)).is_err());
        assert!(r.seek(SeekFrom::Start(12)).is_err());
        assert_eq!(r.stream_position().unwrap(), 11);
    }
}
