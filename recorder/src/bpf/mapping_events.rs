//! The kernel's mapping events, as perf records them: one software dummy event per CPU
//! that counts nothing and writes an MMAP2 record for every executable mapping made on
//! the machine and a COMM record for every exec, timed on the samples' clock, into a
//! ring this module drains. A process's mappings are then known from the moment they
//! are made, whether or not it still lives when its samples are read.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use super::perf_records::{self, HEADER_BYTES, PerfRecord};

/// Data pages of each CPU's ring (a power of two): 256 KiB, about 2,000 mapping records,
/// the mappings of ~100 process starts, between two drains. A build starting 300
/// processes a second writes ~6,000 a second; the reader drains at least every 100 ms.
const DATA_PAGES: usize = 64;

/// `perf_event_attr` up to `sig_data` (PERF_ATTR_SIZE_VER7): a kernel that knows less
/// accepts it while the fields it does not know are zero.
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_watermark: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved_2: u16,
    aux_sample_size: u32,
    reserved_3: u32,
    sig_data: u64,
}

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_DUMMY: u64 = 9;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_CPU: u64 = 1 << 7;
// Bits of `flags` (the attr's bitfield).
const FLAG_MMAP: u64 = 1 << 8;
const FLAG_COMM: u64 = 1 << 9;
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
const FLAG_MMAP2: u64 = 1 << 23;
const FLAG_COMM_EXEC: u64 = 1 << 24;
const FLAG_USE_CLOCKID: u64 = 1 << 25;

/// Offsets in the ring's first page (`struct perf_event_mmap_page`).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// One CPU's ring.
struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    len: usize,
    page: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by the ring and only touched through `&mut self`.
unsafe impl Send for Ring {}

impl Ring {
    fn open(cpu: u32, page: usize) -> io::Result<Ring> {
        let attr = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_DUMMY,
            sample_type: SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU,
            // Exec mappings only (no FLAG_MMAP_DATA); no counting, no samples.
            flags: FLAG_MMAP
                | FLAG_COMM
                | FLAG_WATERMARK
                | FLAG_SAMPLE_ID_ALL
                | FLAG_MMAP2
                | FLAG_COMM_EXEC
                | FLAG_USE_CLOCKID,
            // Wake the reader when a quarter is full.
            wakeup_watermark: (DATA_PAGES * page / 4) as u32,
            // The clock of the samples' bpf_ktime_get_ns, so the two streams merge.
            clockid: libc::CLOCK_MONOTONIC,
            ..PerfEventAttr::default()
        };
        // SAFETY: `attr` is a valid perf_event_attr of the size it declares; pid -1 with a
        // CPU is a system-wide event on that CPU; no group, close-on-exec.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                &raw const attr,
                -1 as libc::pid_t,
                cpu as libc::c_int,
                -1 as libc::c_int,
                libc::c_ulong::from(PERF_FLAG_FD_CLOEXEC),
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: perf_event_open returned a new fd nobody else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let len = (1 + DATA_PAGES) * page;
        // SAFETY: mapping a perf fd as the kernel documents (one metadata page and a
        // power-of-two number of data pages), read-write so that data_tail can be
        // written; checked for failure below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            fd,
            base: base.cast(),
            len,
            page,
            data_size: DATA_PAGES * page,
        })
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: offset 1024 of the metadata page is the u64 `data_head`, 8-byte aligned
        // (the mapping is page aligned); the kernel writes it, we only load it.
        unsafe { &*self.base.add(DATA_HEAD).cast::<AtomicU64>() }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: as for `head`; `data_tail` is ours to write.
        unsafe { &*self.base.add(DATA_TAIL).cast::<AtomicU64>() }
    }

    /// Decodes every record written since the last call into `out`; returns the records
    /// that could not be decoded.
    fn drain(&mut self, out: &mut Vec<PerfRecord>, scratch: &mut Vec<u8>) -> u64 {
        let head = self.head().load(Ordering::Acquire);
        let mut tail = self.tail().load(Ordering::Relaxed);
        let mut malformed = 0;
        // SAFETY: the data area follows the metadata page, `data_size` bytes long.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(self.page), self.data_size) };
        while head.wrapping_sub(tail) >= HEADER_BYTES as u64 {
            let avail = head.wrapping_sub(tail) as usize;
            copy_wrapped(data, tail, HEADER_BYTES, scratch);
            let size = perf_records::record_size(scratch).unwrap_or(0);
            if size < HEADER_BYTES || size > avail {
                // Not a record boundary: resynchronise at the head.
                malformed += 1;
                tail = head;
                break;
            }
            copy_wrapped(data, tail, size, scratch);
            match perf_records::parse(scratch) {
                Ok(PerfRecord::Other) => {}
                Ok(r) => out.push(r),
                Err(_) => malformed += 1,
            }
            tail = tail.wrapping_add(size as u64);
        }
        // Everything up to `tail` is read: the kernel may reuse it.
        self.tail().store(tail, Ordering::Release);
        malformed
    }
}

/// `len` bytes of the ring's data from position `at`, wrapping at its end, into `out`.
fn copy_wrapped(data: &[u8], at: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    let size = data.len();
    let start = (at % size as u64) as usize;
    let first = len.min(size - start);
    out.extend_from_slice(&data[start..start + first]);
    out.extend_from_slice(&data[..len - first]);
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what `open` mapped; the fd closes after.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

const PERF_FLAG_FD_CLOEXEC: u32 = 1 << 3;

/// The mapping events of every CPU.
pub struct MappingEvents {
    rings: Vec<Ring>,
    scratch: Vec<u8>,
    /// Records the kernel dropped (its rings were full), cumulative.
    lost: u64,
    /// Records that did not decode, cumulative.
    malformed: u64,
}

impl std::fmt::Debug for MappingEvents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MappingEvents")
            .field("cpus", &self.rings.len())
            .field("lost", &self.lost)
            .finish()
    }
}

impl MappingEvents {
    /// Opens the events on every CPU in `cpus` (the online ones); on failure, the CPU
    /// whose event failed and why.
    pub fn open(cpus: &[u32]) -> Result<MappingEvents, (u32, io::Error)> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
        let rings = cpus
            .iter()
            .map(|&cpu| Ring::open(cpu, page).map_err(|e| (cpu, e)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(MappingEvents {
            rings,
            scratch: Vec::with_capacity(4096),
            lost: 0,
            malformed: 0,
        })
    }

    /// The rings' descriptors, to wait on (readable at a quarter full).
    pub fn fds(&self) -> impl Iterator<Item = RawFd> + '_ {
        self.rings.iter().map(|r| r.fd.as_raw_fd())
    }

    /// Appends every mapping and exec record written since the last call (each CPU's in
    /// time order; not merged across CPUs).
    pub fn drain(&mut self, out: &mut Vec<PerfRecord>) {
        let mut records = Vec::new();
        for ring in &mut self.rings {
            self.malformed += ring.drain(&mut records, &mut self.scratch);
        }
        for r in records {
            match r {
                PerfRecord::Lost { count } => self.lost += count,
                r => out.push(r),
            }
        }
    }

    /// Records the kernel dropped so far.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Records that could not be decoded so far.
    pub fn malformed(&self) -> u64 {
        self.malformed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attr_has_the_size_of_version_7() {
        assert_eq!(size_of::<PerfEventAttr>(), 128);
    }

    #[test]
    fn wrapped_copies_join_the_two_ends() {
        let data: Vec<u8> = (0..16).collect();
        let mut out = Vec::new();
        copy_wrapped(&data, 14, 4, &mut out);
        assert_eq!(out, [14, 15, 0, 1]);
        copy_wrapped(&data, 16 + 3, 2, &mut out);
        assert_eq!(out, [3, 4]);
    }
}
