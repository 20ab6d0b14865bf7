//! Decoding the records of a perf ring buffer that the mapping events write (MMAP2, COMM,
//! LOST): pure, bytes in, events out. The kernel writes them, but a malformed record
//! (a size that runs past the data, a path without its NUL) is skipped, never trusted.

use crate::event::Mapping;

/// `perf_event_header.type` values (`include/uapi/linux/perf_event.h`).
pub const PERF_RECORD_LOST: u32 = 2;
pub const PERF_RECORD_COMM: u32 = 3;
pub const PERF_RECORD_MMAP2: u32 = 10;

/// `perf_event_header.misc` flags.
const MISC_COMM_EXEC: u16 = 1 << 13;
const MISC_MMAP_BUILD_ID: u16 = 1 << 14;

/// The `sample_id` trailer every record carries with `sample_id_all` and a sample type
/// of TID | TIME | CPU: pid, tid (u32 each), time (u64), cpu and a reserved u32.
pub const SAMPLE_ID_BYTES: usize = 24;

/// Bytes of `perf_event_header`: type (u32), misc (u16), size (u16).
pub const HEADER_BYTES: usize = 8;

/// What one record of the mapping events says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PerfRecord {
    /// A new executable mapping (`mmap`, `mprotect` adding PROT_EXEC, the images an exec
    /// maps).
    Mmap {
        time_ns: u64,
        pid: u32,
        mapping: Mapping,
    },
    /// The process replaced its image: its old mappings are gone. Written at the exec's
    /// point of no return, before the new image is mapped.
    Exec { time_ns: u64, pid: u32 },
    /// The kernel dropped this many records: the ring was full.
    Lost { count: u64 },
    /// A record the recorder does not use (a thread rename, a kind it did not ask for).
    Other,
}

/// Why a record could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PerfRecordError {
    #[error("perf record of {0} bytes is shorter than its fields")]
    Short(usize),
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_ne_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// The size a record's header declares (`None` for fewer than 8 bytes).
pub fn record_size(header: &[u8]) -> Option<usize> {
    u16_at(header, 6).map(usize::from)
}

/// Decodes one whole record (header included, exactly its declared size).
pub fn parse(rec: &[u8]) -> Result<PerfRecord, PerfRecordError> {
    let short = || PerfRecordError::Short(rec.len());
    let kind = u32_at(rec, 0).ok_or_else(short)?;
    let misc = u16_at(rec, 4).ok_or_else(short)?;
    match kind {
        PERF_RECORD_LOST => Ok(PerfRecord::Lost {
            count: u64_at(rec, 16).ok_or_else(short)?,
        }),
        PERF_RECORD_COMM if misc & MISC_COMM_EXEC != 0 => {
            let (_, time_ns) = sample_id(rec).ok_or_else(short)?;
            let pid = u32_at(rec, 8).ok_or_else(short)?;
            Ok(PerfRecord::Exec { time_ns, pid })
        }
        PERF_RECORD_MMAP2 => parse_mmap2(rec, misc).ok_or_else(short),
        _ => Ok(PerfRecord::Other),
    }
}

/// The trailer's pid and time.
fn sample_id(rec: &[u8]) -> Option<(u32, u64)> {
    let at = rec.len().checked_sub(SAMPLE_ID_BYTES)?;
    (at >= HEADER_BYTES).then_some(())?;
    Some((u32_at(rec, at)?, u64_at(rec, at + 8)?))
}

/// MMAP2: pid, tid, addr, len, pgoff (bytes), then maj, min (u32), ino, ino_generation
/// (u64), or with `build_id` set a build-id in the same 24 bytes, then prot, flags (u32)
/// and the NUL-terminated file name padded to 8 bytes.
fn parse_mmap2(rec: &[u8], misc: u16) -> Option<PerfRecord> {
    let (_, time_ns) = sample_id(rec)?;
    let pid = u32_at(rec, 8)?;
    let start = u64_at(rec, 16)?;
    let len = u64_at(rec, 24)?;
    let offset = u64_at(rec, 32)?;
    let inode = if misc & MISC_MMAP_BUILD_ID != 0 {
        0
    } else {
        u64_at(rec, 48)?
    };
    let name = rec.get(72..rec.len().checked_sub(SAMPLE_ID_BYTES)?)?;
    let name = &name[..name.iter().position(|&b| b == 0)?];
    let path = String::from_utf8_lossy(name);
    // The kernel's d_path marks a file unlinked before it was mapped; the mapping is
    // still the file's (see `ModuleFile` for how a deleted file is told apart).
    let path = path.strip_suffix(" (deleted)").unwrap_or(&path);
    // Anonymous executable memory: JIT code.
    let path = if path == "//anon" { "" } else { path };
    Some(PerfRecord::Mmap {
        time_ns,
        pid,
        mapping: Mapping {
            start,
            end: start.checked_add(len)?,
            offset,
            inode,
            path: path.to_string(),
        },
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A record as the kernel lays it out: header, body, sample_id trailer.
    pub(crate) fn record(kind: u32, misc: u16, body: &[u8], pid: u32, time_ns: u64) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&kind.to_ne_bytes());
        r.extend_from_slice(&misc.to_ne_bytes());
        let size = (HEADER_BYTES + body.len() + SAMPLE_ID_BYTES) as u16;
        r.extend_from_slice(&size.to_ne_bytes());
        r.extend_from_slice(body);
        r.extend_from_slice(&pid.to_ne_bytes());
        r.extend_from_slice(&pid.to_ne_bytes());
        r.extend_from_slice(&time_ns.to_ne_bytes());
        r.extend_from_slice(&[0; 8]);
        r
    }

    pub(crate) fn mmap2_body(
        pid: u32,
        start: u64,
        len: u64,
        pgoff: u64,
        ino: u64,
        path: &str,
    ) -> Vec<u8> {
        let mut b = Vec::new();
        for v in [pid, pid] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        for v in [start, len, pgoff] {
            b.extend_from_slice(&v.to_ne_bytes());
        }
        b.extend_from_slice(&[8, 0, 0, 0, 1, 0, 0, 0]); // maj, min
        b.extend_from_slice(&ino.to_ne_bytes());
        b.extend_from_slice(&0u64.to_ne_bytes()); // ino_generation
        b.extend_from_slice(&5u32.to_ne_bytes()); // PROT_READ | PROT_EXEC
        b.extend_from_slice(&2u32.to_ne_bytes()); // MAP_PRIVATE
        b.extend_from_slice(path.as_bytes());
        b.push(0);
        while b.len() % 8 != 0 {
            b.push(0);
        }
        b
    }

    #[test]
    fn mmap2_gives_the_mapping_and_its_time() {
        let rec = record(
            PERF_RECORD_MMAP2,
            2,
            &mmap2_body(
                42,
                0x7f00_0000_1000,
                0x3000,
                0x1000,
                77,
                "/usr/lib/libz.so.1",
            ),
            42,
            123,
        );
        assert_eq!(
            parse(&rec),
            Ok(PerfRecord::Mmap {
                time_ns: 123,
                pid: 42,
                mapping: Mapping {
                    start: 0x7f00_0000_1000,
                    end: 0x7f00_0000_4000,
                    offset: 0x1000,
                    inode: 77,
                    path: "/usr/lib/libz.so.1".into(),
                },
            })
        );
        let anon = record(
            PERF_RECORD_MMAP2,
            2,
            &mmap2_body(42, 0x1000, 0x1000, 0, 0, "//anon"),
            42,
            1,
        );
        let Ok(PerfRecord::Mmap { mapping, .. }) = parse(&anon) else {
            panic!("anon mmap");
        };
        assert_eq!(
            (mapping.path.as_str(), mapping.kind()),
            ("", crate::event::MappingKind::Anonymous)
        );
        let deleted = record(
            PERF_RECORD_MMAP2,
            2,
            &mmap2_body(42, 0x1000, 0x1000, 0, 9, "/tmp/x (deleted)"),
            42,
            1,
        );
        let Ok(PerfRecord::Mmap { mapping, .. }) = parse(&deleted) else {
            panic!("deleted mmap");
        };
        assert_eq!(mapping.path, "/tmp/x");
    }

    #[test]
    fn only_an_exec_comm_counts() {
        let mut body = Vec::new();
        body.extend_from_slice(&7u32.to_ne_bytes());
        body.extend_from_slice(&7u32.to_ne_bytes());
        body.extend_from_slice(b"sha256sum\0\0\0\0\0\0\0");
        let exec = record(PERF_RECORD_COMM, MISC_COMM_EXEC, &body, 7, 99);
        assert_eq!(
            parse(&exec),
            Ok(PerfRecord::Exec {
                time_ns: 99,
                pid: 7
            })
        );
        let rename = record(PERF_RECORD_COMM, 0, &body, 7, 99);
        assert_eq!(parse(&rename), Ok(PerfRecord::Other));
    }

    #[test]
    fn truncated_records_are_errors_not_panics() {
        let rec = record(
            PERF_RECORD_MMAP2,
            2,
            &mmap2_body(1, 0x1000, 0x1000, 0, 1, "/bin/x"),
            1,
            1,
        );
        for n in 0..rec.len() {
            let _ = parse(&rec[..n]);
        }
        // A name without its NUL, and a length that wraps the address space.
        let mut body = mmap2_body(1, 0x1000, 0x1000, 0, 1, "/bin/x");
        let last = body.len() - 1;
        body[last - 1] = b'y';
        body[last] = b'z';
        body[last - 2] = b'w';
        let _ = parse(&record(PERF_RECORD_MMAP2, 2, &body, 1, 1));
        let wraps = record(
            PERF_RECORD_MMAP2,
            2,
            &mmap2_body(1, u64::MAX - 10, 0x1000, 0, 1, "/bin/x"),
            1,
            1,
        );
        assert!(parse(&wraps).is_err());
        let mut lost = Vec::new();
        lost.extend_from_slice(&1u64.to_ne_bytes());
        lost.extend_from_slice(&17u64.to_ne_bytes());
        assert_eq!(
            parse(&record(PERF_RECORD_LOST, 0, &lost, 0, 0)),
            Ok(PerfRecord::Lost { count: 17 })
        );
    }
}
