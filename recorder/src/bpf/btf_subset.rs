//! The few kernel types our BPF programs read through CO-RE, cut out of the kernel's BTF
//! into a BTF blob of eleven types for the loader to relocate against.
//!
//! aya's loader relocates CO-RE accesses against a fully parsed kernel BTF: ~130,000 types
//! turned into Rust values, ~30 ms of CPU and ~18 MB at the recorder's start, then a scan
//! of all of them per relocated struct. The programs read thirteen fields. Finding those
//! fields' offsets in the raw BTF is one pass over the type headers without allocating,
//! and relocating against a blob that holds only them gives the same offsets.
//!
//! Every field `ebpf/hotspot.bpf.c` reads through CO-RE (`BPF_CORE_READ`, or a direct
//! load from a `preserve_access_index` struct) must be in [`FIELDS`]: a relocation
//! against a field missing here fails the subset load, and the loader falls back to the
//! slow full parse (a test checks it does not).
//!
//! A field may sit in anonymous structs and unions (`vm_area_struct.vm_end` does since
//! 6.12): the subset flattens it to a direct member at its total offset, which is what
//! a relocation through the anonymous members resolves to.
//!
//! aya 0.14's `EbpfLoader::new()` parses the whole kernel BTF unconditionally, even when
//! the caller then supplies its own with `.btf()`; [`loader_without_kernel_btf`] makes it
//! skip that parse.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

use aya::{Btf, EbpfLoader, Endianness};

/// Where the running kernel publishes its BTF.
pub const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

const MAGIC: u16 = 0xeb9f;
const HEADER_LEN: usize = 24;

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_DECL_TAG: u32 = 17;
const KIND_ENUM64: u32 = 19;

/// The fields read through CO-RE, by struct. `pid`/`tgid` are `pid_t` (an int) and
/// `signal` a pointer to `struct signal_struct` in every kernel with BTF; `live` is an
/// `atomic_t`, whose `counter` is at offset 0; `mm` a pointer to `struct mm_struct`;
/// `thread` an embedded `struct thread_struct`; `vm_start`, `vm_end`, `start_stack` and
/// `fsbase` are `unsigned long`; `flags` (read by `--off-cpu`) is an `unsigned int` and
/// `start_time` a `u64`; `se` an embedded `struct sched_entity`, whose
/// `sum_exec_runtime` is a `u64`; `sched_info` an embedded `struct sched_info`, whose
/// `run_delay` is a `u64`.
const FIELDS: [(&str, &[&str]); 7] = [
    (
        "task_struct",
        &[
            "pid",
            "tgid",
            "signal",
            "mm",
            "thread",
            "flags",
            "start_time",
            "se",
            "sched_info",
        ],
    ),
    ("signal_struct", &["live"]),
    ("vm_area_struct", &["vm_start", "vm_end"]),
    ("mm_struct", &["start_stack"]),
    ("thread_struct", &["fsbase"]),
    ("sched_entity", &["sum_exec_runtime"]),
    ("sched_info", &["run_delay"]),
];

/// Most passes over the type section: a field nested in anonymous members defined
/// before their parent needs one more pass per such level (real BTF needs one).
const MAX_PASSES: usize = 4;

/// Why the subset could not be made; the caller falls back to the full parse.
#[derive(Debug, thiserror::Error)]
pub enum SubsetError {
    #[error("reading {KERNEL_BTF}")]
    Read(#[from] std::io::Error),
    #[error("{KERNEL_BTF}: {0}")]
    Malformed(&'static str),
    #[error("{KERNEL_BTF} has no `{0}`")]
    Missing(String),
    #[error("the BTF subset does not parse: {0}")]
    Parse(String),
}

/// Size and the wanted members of one struct, as found in the kernel BTF.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Found {
    size: u32,
    /// In the order of the struct's entry in [`FIELDS`].
    members: Vec<Option<Member>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Member {
    bit_offset: u32,
    bitfield: bool,
}

/// Reads the kernel BTF at `path` and returns the subset, parsed for the loader.
pub fn read(path: &Path) -> Result<Btf, SubsetError> {
    let blob = subset(&mut std::fs::File::open(path)?)?;
    Btf::parse(&blob, Endianness::default()).map_err(|e| SubsetError::Parse(e.to_string()))
}

/// `EbpfLoader::new()` without its parse of the whole kernel BTF, for a caller that
/// supplies the BTF to relocate against with `.btf()`.
///
/// The loader reads `/sys/kernel/btf/vmlinux` in `new()` and keeps `None` if that fails.
/// So `new()` runs on a short-lived thread that first installs a seccomp filter failing
/// every `open` of that thread (and of it alone: filters and `no_new_privs` are
/// per-thread, and the thread ends right after). Where that cannot be done (no seccomp),
/// this is plain `EbpfLoader::new()`: slower, same result once `.btf()` is set.
pub fn loader_without_kernel_btf<'a>() -> EbpfLoader<'a> {
    std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("hotspot-loader".into())
            .spawn_scoped(scope, || deny_opens_in_this_thread().then(EbpfLoader::new))
            .ok()
            .and_then(|thread| thread.join().ok())
            .flatten()
    })
    .unwrap_or_else(EbpfLoader::new)
}

/// Makes every later `open`/`openat`/`openat2` of the calling thread fail with ENOENT.
/// Returns whether the filter is in place.
fn deny_opens_in_this_thread() -> bool {
    let stmt = |code: u32, k: u32| libc::sock_filter {
        code: code as u16,
        jt: 0,
        jf: 0,
        k,
    };
    let jump_if = |nr: libc::c_long| libc::sock_filter {
        code: (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16,
        jt: 0,
        jf: 1,
        k: nr as u32,
    };
    let deny = libc::SECCOMP_RET_ERRNO | (libc::ENOENT as u32 & libc::SECCOMP_RET_DATA);
    // seccomp_data.nr is the first word. The architecture is not checked: a foreign
    // calling convention only means an open is not denied, and the loader then parses.
    let mut filter = vec![stmt(libc::BPF_LD | libc::BPF_W | libc::BPF_ABS, 0)];
    #[cfg(target_arch = "x86_64")]
    let denied = [libc::SYS_open, libc::SYS_openat, libc::SYS_openat2];
    #[cfg(not(target_arch = "x86_64"))]
    let denied = [libc::SYS_openat, libc::SYS_openat2];
    for nr in denied {
        filter.push(jump_if(nr));
        filter.push(stmt(libc::BPF_RET | libc::BPF_K, deny));
    }
    filter.push(stmt(libc::BPF_RET | libc::BPF_K, libc::SECCOMP_RET_ALLOW));
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_mut_ptr(),
    };
    // SAFETY: prctl with integer arguments, then with a pointer to `prog`, which points
    // to `filter`; both outlive the call (the kernel copies the program).
    unsafe {
        libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
            && libc::prctl(
                libc::PR_SET_SECCOMP,
                libc::SECCOMP_MODE_FILTER as libc::c_ulong,
                &prog as *const libc::sock_fprog,
            ) == 0
    }
}

/// The raw subset blob built from raw kernel BTF.
fn subset<R: Read + Seek>(src: &mut R) -> Result<Vec<u8>, SubsetError> {
    let found = find_fields(src)?;
    let task = &found[0];
    let signal = &found[1];
    let byte_offset = |f: &Found, i: usize, name: &str| -> Result<u32, SubsetError> {
        match f.members[i] {
            Some(m) if !m.bitfield && m.bit_offset % 8 == 0 => Ok(m.bit_offset),
            Some(_) => Err(SubsetError::Malformed("a CO-RE field is a bitfield")),
            None => Err(SubsetError::Missing(name.to_owned())),
        }
    };
    let vma = &found[2];
    let pid = byte_offset(task, 0, "task_struct.pid")?;
    let tgid = byte_offset(task, 1, "task_struct.tgid")?;
    let signal_ptr = byte_offset(task, 2, "task_struct.signal")?;
    let live = byte_offset(signal, 0, "signal_struct.live")?;
    let vm_start = byte_offset(vma, 0, "vm_area_struct.vm_start")?;
    let vm_end = byte_offset(vma, 1, "vm_area_struct.vm_end")?;
    let (mm, thread) = (&found[3], &found[4]);
    let mm_ptr = byte_offset(task, 3, "task_struct.mm")?;
    let thread_at = byte_offset(task, 4, "task_struct.thread")?;
    let start_stack = byte_offset(mm, 0, "mm_struct.start_stack")?;
    let fsbase = byte_offset(thread, 0, "thread_struct.fsbase")?;
    let flags = byte_offset(task, 5, "task_struct.flags")?;
    let start_time = byte_offset(task, 6, "task_struct.start_time")?;
    let se = byte_offset(task, 7, "task_struct.se")?;
    let sched = &found[5];
    let sum_exec = byte_offset(sched, 0, "sched_entity.sum_exec_runtime")?;
    let info_at = byte_offset(task, 8, "task_struct.sched_info")?;
    let info = &found[6];
    let run_delay = byte_offset(info, 0, "sched_info.run_delay")?;

    let mut strings = Strings::default();
    let mut types = Vec::new();
    // [1] int
    let int = strings.add("int");
    push_type(&mut types, int, KIND_INT, 0, 4);
    types.extend_from_slice(&((1u32 << 24) | 32).to_ne_bytes()); // signed, 32 bits
    // [2] struct signal_struct { atomic_t live; }
    let name = strings.add("signal_struct");
    push_type(&mut types, name, KIND_STRUCT, 1, signal.size);
    push_member(&mut types, strings.add("live"), 4, live);
    // [3] struct signal_struct *
    push_type(&mut types, 0, KIND_PTR, 0, 2);
    // [4] typedef struct { int counter; } atomic_t
    push_type(&mut types, strings.add("atomic_t"), KIND_TYPEDEF, 0, 5);
    // [5] struct { int counter; }
    push_type(&mut types, 0, KIND_STRUCT, 1, 4);
    push_member(&mut types, strings.add("counter"), 1, 0);
    // [6] struct task_struct { pid_t pid; pid_t tgid; struct signal_struct *signal;
    //     struct mm_struct *mm; struct thread_struct thread; int flags;
    //     unsigned long start_time; struct sched_entity se; struct sched_info
    //     sched_info; } (CO-RE takes any int for an int: the reads are the BPF
    //     side's own sizes)
    let name = strings.add("task_struct");
    push_type(&mut types, name, KIND_STRUCT, 9, task.size);
    push_member(&mut types, strings.add("pid"), 1, pid);
    push_member(&mut types, strings.add("tgid"), 1, tgid);
    push_member(&mut types, strings.add("signal"), 3, signal_ptr);
    push_member(&mut types, strings.add("mm"), 10, mm_ptr);
    push_member(&mut types, strings.add("thread"), 11, thread_at);
    push_member(&mut types, strings.add("flags"), 1, flags);
    push_member(&mut types, strings.add("start_time"), 7, start_time);
    push_member(&mut types, strings.add("se"), 12, se);
    push_member(&mut types, strings.add("sched_info"), 13, info_at);
    // [7] unsigned long
    push_type(&mut types, strings.add("long unsigned int"), KIND_INT, 0, 8);
    types.extend_from_slice(&64u32.to_ne_bytes()); // unsigned, 64 bits
    // [8] struct vm_area_struct { unsigned long vm_start, vm_end; }, flattened
    let name = strings.add("vm_area_struct");
    push_type(&mut types, name, KIND_STRUCT, 2, vma.size);
    push_member(&mut types, strings.add("vm_start"), 7, vm_start);
    push_member(&mut types, strings.add("vm_end"), 7, vm_end);
    // [9] struct mm_struct { unsigned long start_stack; }, flattened
    let name = strings.add("mm_struct");
    push_type(&mut types, name, KIND_STRUCT, 1, mm.size);
    push_member(&mut types, strings.add("start_stack"), 7, start_stack);
    // [10] struct mm_struct *
    push_type(&mut types, 0, KIND_PTR, 0, 9);
    // [11] struct thread_struct { unsigned long fsbase; }
    let name = strings.add("thread_struct");
    push_type(&mut types, name, KIND_STRUCT, 1, thread.size);
    push_member(&mut types, strings.add("fsbase"), 7, fsbase);
    // [12] struct sched_entity { unsigned long sum_exec_runtime; }
    let name = strings.add("sched_entity");
    push_type(&mut types, name, KIND_STRUCT, 1, sched.size);
    push_member(&mut types, strings.add("sum_exec_runtime"), 7, sum_exec);
    // [13] struct sched_info { unsigned long run_delay; }
    let name = strings.add("sched_info");
    push_type(&mut types, name, KIND_STRUCT, 1, info.size);
    push_member(&mut types, strings.add("run_delay"), 7, run_delay);

    let type_len = u32::try_from(types.len()).map_err(|_| SubsetError::Malformed("size"))?;
    let str_len = u32::try_from(strings.0.len()).map_err(|_| SubsetError::Malformed("size"))?;
    let mut blob = Vec::with_capacity(HEADER_LEN + types.len() + strings.0.len());
    blob.extend_from_slice(&MAGIC.to_ne_bytes());
    blob.push(1); // version
    blob.push(0); // flags
    blob.extend_from_slice(&(HEADER_LEN as u32).to_ne_bytes());
    blob.extend_from_slice(&0u32.to_ne_bytes()); // type_off
    blob.extend_from_slice(&type_len.to_ne_bytes());
    blob.extend_from_slice(&type_len.to_ne_bytes()); // str_off
    blob.extend_from_slice(&str_len.to_ne_bytes());
    blob.extend_from_slice(&types);
    blob.extend_from_slice(&strings.0);
    Ok(blob)
}

/// A BTF string section under construction (offset 0 is the empty name).
struct Strings(Vec<u8>);

impl Default for Strings {
    fn default() -> Self {
        Strings(vec![0])
    }
}

impl Strings {
    fn add(&mut self, s: &str) -> u32 {
        let at = self.0.len() as u32;
        self.0.extend_from_slice(s.as_bytes());
        self.0.push(0);
        at
    }
}

fn push_type(out: &mut Vec<u8>, name: u32, kind: u32, vlen: u32, size_or_type: u32) {
    out.extend_from_slice(&name.to_ne_bytes());
    out.extend_from_slice(&((kind << 24) | vlen).to_ne_bytes());
    out.extend_from_slice(&size_or_type.to_ne_bytes());
}

fn push_member(out: &mut Vec<u8>, name: u32, type_id: u32, bit_offset: u32) {
    out.extend_from_slice(&name.to_ne_bytes());
    out.extend_from_slice(&type_id.to_ne_bytes());
    out.extend_from_slice(&bit_offset.to_ne_bytes());
}

/// An anonymous struct or union member of a wanted struct whose members are still to be
/// searched for the struct's missing fields.
#[derive(Debug, Clone, Copy)]
struct Anonymous {
    type_id: u32,
    /// The wanted struct it belongs to (index into [`FIELDS`]).
    slot: usize,
    /// Its bit offset within that struct.
    bit_offset: u32,
}

/// The size and member offsets of each struct in [`FIELDS`], in that order, from raw
/// (native-endian) BTF. The string section (~2.5 MB) is read whole, so that a struct's
/// name is one comparison away; the type section is read a block at a time and every
/// type but the structs wanted (and the anonymous members they hold) is skipped. One
/// pass, unless a wanted field is in an anonymous member defined before its parent.
fn find_fields<R: Read + Seek>(src: &mut R) -> Result<Vec<Found>, SubsetError> {
    let mut head = [0u8; HEADER_LEN];
    src.read_exact(&mut head)
        .map_err(|_| SubsetError::Malformed("short header"))?;
    if u16::from_ne_bytes([head[0], head[1]]) != MAGIC {
        return Err(SubsetError::Malformed("not native-endian BTF"));
    }
    let [hdr_len, type_off, type_len, str_off, str_len] =
        [4, 8, 12, 16, 20].map(|at| u64::from(word(&head, at)));
    if hdr_len < HEADER_LEN as u64 {
        return Err(SubsetError::Malformed("short header"));
    }

    src.seek(SeekFrom::Start(hdr_len + str_off))?;
    let mut strings = Vec::new();
    src.take(str_len).read_to_end(&mut strings)?;
    if strings.len() as u64 != str_len {
        return Err(SubsetError::Malformed("truncated strings"));
    }
    let name_is = |off: u32, want: &str| {
        strings
            .get(off as usize..)
            .and_then(|s| s.strip_prefix(want.as_bytes()))
            .is_some_and(|rest| rest.first() == Some(&0))
    };

    let mut found: Vec<Option<Found>> = vec![None; FIELDS.len()];
    // Anonymous members to search, and those seen (by id) before they were wanted.
    let mut pending: Vec<Anonymous> = Vec::new();
    for pass in 0..MAX_PASSES {
        src.seek(SeekFrom::Start(hdr_len + type_off))?;
        let mut types = Blocks::new(src, type_len);
        let mut id = 0u32;
        while types.left() > 0 {
            id += 1;
            let t = types.take(12)?;
            let (name, info, size) = (word(t, 0), word(t, 4), word(t, 8));
            let kind = (info >> 24) & 0x1f;
            let vlen = info & 0xffff;
            let kind_flag = info >> 31 != 0;
            let extra = match kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
                KIND_ARRAY => 12,
                KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen as usize,
                KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen as usize,
                // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG.
                2 | 7..=12 | 16 | 18 => 0,
                _ => return Err(SubsetError::Malformed("unknown type kind")),
            };
            let composite = (kind == KIND_STRUCT || kind == KIND_UNION) && vlen > 0;
            // A wanted struct by name (first pass only), or an anonymous member of one.
            let target = if !composite {
                None
            } else if let Some(at) = pending.iter().position(|a| a.type_id == id) {
                let a = pending.swap_remove(at);
                Some((a.slot, a.bit_offset))
            } else if pass == 0 && kind == KIND_STRUCT {
                found
                    .iter()
                    .zip(FIELDS)
                    .position(|(slot, (s, _))| slot.is_none() && name_is(name, s))
                    .map(|slot| (slot, 0))
            } else {
                None
            };
            let Some((slot, base)) = target else {
                types.skip(extra)?;
                continue;
            };
            let fields = FIELDS[slot].1;
            let entry = found[slot].get_or_insert_with(|| Found {
                size,
                members: vec![None; fields.len()],
            });
            let mut anonymous = Vec::new();
            for m in types.take(extra)?.chunks_exact(12) {
                let (m_name, m_type, m_off) = (word(m, 0), word(m, 4), word(m, 8));
                // With kind_flag the top 8 bits are a bitfield size.
                let (bit_offset, bitfield) = if kind_flag {
                    (m_off & 0x00ff_ffff, m_off >> 24 != 0)
                } else {
                    (m_off, false)
                };
                let bit_offset = base
                    .checked_add(bit_offset)
                    .ok_or(SubsetError::Malformed("member offset"))?;
                if m_name == 0 {
                    anonymous.push(Anonymous {
                        type_id: m_type,
                        slot,
                        bit_offset,
                    });
                } else if let Some(i) = fields.iter().position(|f| name_is(m_name, f)) {
                    entry.members[i].get_or_insert(Member {
                        bit_offset,
                        bitfield,
                    });
                }
            }
            // Only a struct still missing fields has its anonymous members searched
            // (task_struct has a dozen, none needed).
            if entry.members.iter().any(Option::is_none) {
                pending.extend(anonymous);
            }
        }
        // Whatever is still pending was defined before it was wanted (or does not
        // exist): another pass finds it.
        let complete = found.iter().all(|f| {
            f.as_ref()
                .is_some_and(|f| f.members.iter().all(Option::is_some))
        });
        if complete || pending.is_empty() {
            break;
        }
    }
    found
        .into_iter()
        .zip(FIELDS)
        .map(|(f, (name, _))| f.ok_or_else(|| SubsetError::Missing(format!("struct {name}"))))
        .collect()
}

/// A native-endian 32-bit word at `at` (callers checked the length).
fn word(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A section read a block at a time into one reused buffer, taken in pieces: a read or a
/// copy per type record cost more than the scan itself.
struct Blocks<'a, R> {
    src: &'a mut R,
    buf: Vec<u8>,
    /// The unconsumed bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    /// Bytes of the section not read into `buf` yet.
    unread: u64,
}

impl<'a, R: Read + Seek> Blocks<'a, R> {
    fn new(src: &'a mut R, len: u64) -> Self {
        Blocks {
            src,
            buf: vec![0; 256 << 10],
            start: 0,
            end: 0,
            unread: len,
        }
    }

    /// Bytes of the section not consumed yet.
    fn left(&self) -> u64 {
        self.unread + (self.end - self.start) as u64
    }

    /// The next `n` bytes.
    fn take(&mut self, n: usize) -> Result<&[u8], SubsetError> {
        if self.end - self.start < n {
            if n as u64 > self.left() {
                return Err(SubsetError::Malformed("truncated type"));
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
            if self.buf.len() < n {
                self.buf.resize(n, 0);
            }
            while self.end < n {
                let want = usize::try_from(self.unread)
                    .unwrap_or(usize::MAX)
                    .min(self.buf.len() - self.end);
                let got = self.src.read(&mut self.buf[self.end..self.end + want])?;
                if got == 0 {
                    return Err(SubsetError::Malformed("truncated type"));
                }
                self.end += got;
                self.unread -= got as u64;
            }
        }
        let piece = &self.buf[self.start..self.start + n];
        self.start += n;
        Ok(piece)
    }

    /// Passes over the next `n` bytes.
    fn skip(&mut self, n: usize) -> Result<(), SubsetError> {
        let buffered = self.end - self.start;
        if n <= buffered {
            self.start += n;
            return Ok(());
        }
        let beyond = (n - buffered) as u64;
        if beyond > self.unread {
            return Err(SubsetError::Malformed("truncated type"));
        }
        self.src.seek(SeekFrom::Current(beyond as i64))?;
        self.unread -= beyond;
        (self.start, self.end) = (0, 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn fields(raw: &[u8]) -> Result<Vec<Found>, SubsetError> {
        find_fields(&mut Cursor::new(raw))
    }

    fn sub(raw: &[u8]) -> Result<Vec<u8>, SubsetError> {
        subset(&mut Cursor::new(raw))
    }

    #[test]
    fn blocks_take_and_skip_across_reads() {
        let data: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
        let mut src = Cursor::new(&data);
        src.set_position(10);
        let mut b = Blocks::new(&mut src, 690_000);
        assert_eq!(b.take(12).expect("take"), &data[10..22]);
        // Within the buffer, then past it (a seek).
        b.skip(100).expect("skip");
        assert_eq!(b.take(4).expect("take"), &data[122..126]);
        b.skip(300_000).expect("skip");
        assert_eq!(b.take(3).expect("take"), &data[300_126..300_129]);
        // Bigger than the buffer: it grows.
        let big = b.take(300_000).expect("take").to_vec();
        assert_eq!(big, &data[300_129..600_129]);
        assert_eq!(b.left(), 690_000 - 600_119);
        assert!(b.take(100_000).is_err(), "past the section's end");
    }

    /// A raw BTF blob the way the kernel lays one out, with a few types around the two
    /// structs (a forward declaration of the same name first, as real BTF has).
    fn kernel_like(task_members: &[(&str, u32)], kind_flag: bool) -> Vec<u8> {
        let mut strings = Strings::default();
        let mut types = Vec::new();
        let int = strings.add("int");
        push_type(&mut types, int, KIND_INT, 0, 4);
        types.extend_from_slice(&((1u32 << 24) | 32).to_ne_bytes());
        // A forward declaration named like the struct: skipped (no members).
        push_type(&mut types, strings.add("task_struct"), 7, 0, 0);
        push_type(&mut types, strings.add("some_enum"), KIND_ENUM, 2, 4);
        types.extend_from_slice(&[0; 16]);
        push_type(
            &mut types,
            strings.add("signal_struct"),
            KIND_STRUCT,
            2,
            1024,
        );
        push_member(&mut types, strings.add("sigcnt"), 1, 0);
        push_member(&mut types, strings.add("live"), 1, 32);
        let flag = if kind_flag { 1u32 << 31 } else { 0 };
        // Every task_struct here also has mm, thread, flags, start_time, se and
        // sched_info (the tests vary the others).
        let vlen = task_members.len() as u32 + 6;
        let name = strings.add("task_struct");
        types.extend_from_slice(&name.to_ne_bytes());
        types.extend_from_slice(&((KIND_STRUCT << 24) | flag | vlen).to_ne_bytes());
        types.extend_from_slice(&9000u32.to_ne_bytes());
        for &(m, off) in task_members.iter().chain(&[
            ("mm", 1136 * 8),
            ("thread", 3088 * 8),
            ("flags", 44 * 8),
            ("start_time", 2800 * 8),
            ("se", 192 * 8),
            ("sched_info", 900 * 8),
        ]) {
            push_member(&mut types, strings.add(m), 1, off);
        }
        // [6] vm_area_struct as 6.12+ has it: vm_end in a struct in a union, both
        // anonymous and defined after it ([7], [8]), behind an anonymous member
        // that holds nothing wanted ([9]).
        push_type(
            &mut types,
            strings.add("vm_area_struct"),
            KIND_STRUCT,
            3,
            192,
        );
        push_member(&mut types, 0, 9, 0);
        push_member(&mut types, 0, 7, 128);
        push_member(&mut types, strings.add("vm_mm"), 1, 384);
        push_type(&mut types, 0, KIND_UNION, 2, 16);
        push_member(&mut types, 0, 8, 0);
        push_member(&mut types, strings.add("vm_freeptr"), 1, 0);
        push_type(&mut types, 0, KIND_STRUCT, 2, 16);
        push_member(&mut types, strings.add("vm_start"), 1, 0);
        push_member(&mut types, strings.add("vm_end"), 1, 64);
        push_type(&mut types, 0, KIND_STRUCT, 1, 16);
        push_member(&mut types, strings.add("vm_flags"), 1, 0);
        // [10] mm_struct with start_stack in an anonymous struct defined before it, [11].
        push_type(&mut types, 0, KIND_STRUCT, 2, 1400);
        push_member(&mut types, strings.add("mmap_base"), 1, 0);
        push_member(&mut types, strings.add("start_stack"), 1, 3840);
        push_type(&mut types, strings.add("mm_struct"), KIND_STRUCT, 2, 1472);
        push_member(&mut types, 0, 10, 0);
        push_member(&mut types, strings.add("cpu_bitmap"), 1, 11776);
        // [12] thread_struct
        push_type(
            &mut types,
            strings.add("thread_struct"),
            KIND_STRUCT,
            2,
            152,
        );
        push_member(&mut types, strings.add("sp"), 1, 256);
        push_member(&mut types, strings.add("fsbase"), 1, 320);
        // [13] sched_entity
        push_type(&mut types, strings.add("sched_entity"), KIND_STRUCT, 2, 256);
        push_member(&mut types, strings.add("load"), 1, 0);
        push_member(&mut types, strings.add("sum_exec_runtime"), 1, 96 * 8);
        // [14] sched_info
        push_type(&mut types, strings.add("sched_info"), KIND_STRUCT, 2, 32);
        push_member(&mut types, strings.add("pcount"), 1, 0);
        push_member(&mut types, strings.add("run_delay"), 1, 64);
        let mut blob = Vec::new();
        blob.extend_from_slice(&MAGIC.to_ne_bytes());
        blob.extend_from_slice(&[1, 0]);
        for v in [24, 0, types.len(), types.len(), strings.0.len()] {
            blob.extend_from_slice(&(v as u32).to_ne_bytes());
        }
        blob.extend_from_slice(&types);
        blob.extend_from_slice(&strings.0);
        blob
    }

    #[test]
    fn finds_offsets_and_sizes() {
        let raw = kernel_like(
            &[
                ("state", 0),
                ("pid", 2432 * 8),
                ("tgid", 2436 * 8),
                ("signal", 3000 * 8),
            ],
            false,
        );
        let found = fields(&raw).expect("found");
        let offsets = |f: &Found| -> Vec<Option<u32>> {
            f.members.iter().map(|m| m.map(|m| m.bit_offset)).collect()
        };
        assert_eq!(found[0].size, 9000);
        assert_eq!(
            offsets(&found[0]),
            vec![
                Some(2432 * 8),
                Some(2436 * 8),
                Some(3000 * 8),
                Some(1136 * 8),
                Some(3088 * 8),
                Some(44 * 8),
                Some(2800 * 8),
                Some(192 * 8),
                Some(900 * 8)
            ]
        );
        assert_eq!((found[1].size, offsets(&found[1])), (1024, vec![Some(32)]));
        // 128 (the union) + 0 (the struct in it) + 0 and 64.
        assert_eq!(
            (found[2].size, offsets(&found[2])),
            (192, vec![Some(128), Some(192)])
        );
        assert_eq!(
            (found[3].size, offsets(&found[3])),
            (1472, vec![Some(3840)])
        );
        assert_eq!((found[4].size, offsets(&found[4])), (152, vec![Some(320)]));
        assert_eq!(
            (found[5].size, offsets(&found[5])),
            (256, vec![Some(96 * 8)])
        );
        assert_eq!((found[6].size, offsets(&found[6])), (32, vec![Some(64)]));
        // The subset is BTF with the same structs: read back, it gives the same answers,
        // and the loader's parser takes it.
        let blob = sub(&raw).expect("subset");
        assert_eq!(fields(&blob).expect("found again"), found);
        Btf::parse(&blob, Endianness::default()).expect("parses");
    }

    /// BTF whose vm_area_struct has vm_end nested `depth` anonymous structs and unions
    /// deep, every one defined before its parent: the worst order for a single pass.
    fn nested_before(depth: u32) -> Vec<u8> {
        let mut strings = Strings::default();
        let mut types = Vec::new();
        push_type(&mut types, strings.add("long"), KIND_INT, 0, 8);
        types.extend_from_slice(&64u32.to_ne_bytes());
        // [2] the innermost: { long vm_start @ 0, vm_end @ 64 }
        push_type(&mut types, 0, KIND_STRUCT, 2, 16);
        push_member(&mut types, strings.add("vm_start"), 1, 0);
        push_member(&mut types, strings.add("vm_end"), 1, 64);
        // [3..=depth + 1]: each wraps the one before at bit offset 8.
        for level in 1..depth {
            push_type(&mut types, 0, KIND_UNION, 1, 16);
            push_member(&mut types, 0, 1 + level, 8);
        }
        push_type(
            &mut types,
            strings.add("vm_area_struct"),
            KIND_STRUCT,
            1,
            200,
        );
        push_member(&mut types, 0, depth + 1, 32);
        push_type(&mut types, strings.add("signal_struct"), KIND_STRUCT, 1, 64);
        push_member(&mut types, strings.add("live"), 1, 0);
        push_type(&mut types, strings.add("task_struct"), KIND_STRUCT, 9, 256);
        for (m, off) in [
            ("pid", 64),
            ("tgid", 96),
            ("signal", 128),
            ("mm", 192),
            ("thread", 256),
            ("flags", 32),
            ("start_time", 320),
            ("se", 384),
            ("sched_info", 448),
        ] {
            push_member(&mut types, strings.add(m), 1, off);
        }
        push_type(&mut types, strings.add("mm_struct"), KIND_STRUCT, 1, 64);
        push_member(&mut types, strings.add("start_stack"), 1, 0);
        push_type(&mut types, strings.add("thread_struct"), KIND_STRUCT, 1, 64);
        push_member(&mut types, strings.add("fsbase"), 1, 0);
        push_type(&mut types, strings.add("sched_entity"), KIND_STRUCT, 1, 64);
        push_member(&mut types, strings.add("sum_exec_runtime"), 1, 0);
        push_type(&mut types, strings.add("sched_info"), KIND_STRUCT, 1, 32);
        push_member(&mut types, strings.add("run_delay"), 1, 64);
        let mut blob = Vec::new();
        blob.extend_from_slice(&MAGIC.to_ne_bytes());
        blob.extend_from_slice(&[1, 0]);
        for v in [24, 0, types.len(), types.len(), strings.0.len()] {
            blob.extend_from_slice(&(v as u32).to_ne_bytes());
        }
        blob.extend_from_slice(&types);
        blob.extend_from_slice(&strings.0);
        blob
    }

    #[test]
    fn fields_in_anonymous_members_defined_first_take_more_passes() {
        // Each level defined before its parent costs one more pass.
        for depth in 1..MAX_PASSES as u32 {
            let found = fields(&nested_before(depth)).expect("found");
            let offsets: Vec<_> = found[2]
                .members
                .iter()
                .map(|m| m.map(|m| m.bit_offset))
                .collect();
            let base = 32 + 8 * (depth - 1);
            assert_eq!(offsets, vec![Some(base), Some(base + 64)], "depth {depth}");
            assert_eq!(found[2].size, 200);
            sub(&nested_before(depth)).expect("subset");
        }
        // Past the pass limit: missing, not a hang.
        let deep = fields(&nested_before(MAX_PASSES as u32 + 1));
        assert!(matches!(deep, Ok(f) if f[2].members.iter().all(Option::is_none)));
        assert!(
            matches!(sub(&nested_before(MAX_PASSES as u32 + 1)), Err(SubsetError::Missing(m)) if m.contains("vm_start"))
        );
    }

    #[test]
    fn missing_fields_and_bitfields_are_refused() {
        let no_tgid = kernel_like(&[("pid", 64), ("signal", 128)], false);
        assert!(matches!(sub(&no_tgid), Err(SubsetError::Missing(m)) if m.contains("tgid")));
        // kind_flag: the top byte is a bitfield size.
        let bitfield = kernel_like(
            &[("pid", (3 << 24) | 64), ("tgid", 96), ("signal", 128)],
            true,
        );
        assert!(matches!(sub(&bitfield), Err(SubsetError::Malformed(_))));
        let plain_flagged = kernel_like(&[("pid", 64), ("tgid", 96), ("signal", 128)], true);
        assert!(sub(&plain_flagged).is_ok(), "kind_flag without bitfields");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let raw = kernel_like(&[("pid", 64), ("tgid", 96), ("signal", 128)], false);
        for cut in [0, 3, 23, 30, raw.len() - 1] {
            assert!(fields(&raw[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = raw.clone();
        bad[8..12].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(fields(&bad).is_err());
    }

    #[test]
    fn opens_fail_in_the_filtered_thread_only() {
        let path = Path::new(KERNEL_BTF);
        let in_thread = std::thread::spawn(move || {
            let filtered = deny_opens_in_this_thread();
            (filtered, std::fs::File::open(path).map_err(|e| e.kind()))
        })
        .join()
        .expect("thread");
        assert!(in_thread.0, "seccomp filter not installed");
        assert_eq!(
            in_thread.1.err(),
            Some(std::io::ErrorKind::NotFound),
            "open in the filtered thread"
        );
        // This thread, and any other, still opens files.
        assert!(std::fs::File::open(path).is_ok());
        assert!(
            std::thread::spawn(move || std::fs::File::open(path).is_ok())
                .join()
                .expect("thread")
        );
    }

    #[test]
    fn the_running_kernel_has_the_fields() {
        // Every machine this project records on has BTF (the recorder refuses to start
        // without it); an offset the scan got wrong shows in the BPF tests (fork/exit).
        let mut file = std::fs::File::open(KERNEL_BTF).expect("kernel BTF");
        let found = find_fields(&mut file).expect("fields");
        assert!(found.iter().all(|f| f.members.iter().all(Option::is_some)));
        // pid and tgid are adjacent ints in every kernel since 2.6.
        let (pid, tgid) = (found[0].members[0], found[0].members[1]);
        assert_eq!(pid.map(|m| m.bit_offset + 32), tgid.map(|m| m.bit_offset));
        read(Path::new(KERNEL_BTF)).expect("subset of the running kernel's BTF");
    }
}
