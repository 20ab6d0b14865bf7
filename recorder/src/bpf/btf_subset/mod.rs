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

mod loader;
mod scan;

use std::io::{Read, Seek};
use std::path::Path;

use aya::{Btf, Endianness};

pub use loader::loader_without_kernel_btf;
use scan::{Found, find_fields};

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

/// Reads the kernel BTF at `path` and returns the subset, parsed for the loader.
pub fn read(path: &Path) -> Result<Btf, SubsetError> {
    let blob = subset(&mut std::fs::File::open(path)?)?;
    Btf::parse(&blob, Endianness::default()).map_err(|e| SubsetError::Parse(e.to_string()))
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

#[cfg(test)]
mod tests;
