//! The few kernel types our BPF programs read through CO-RE, cut out of the kernel's BTF
//! into a BTF blob of six types for the loader to relocate against.
//!
//! aya's loader relocates CO-RE accesses against a fully parsed kernel BTF: ~130,000 types
//! turned into Rust values, ~30 ms of CPU and ~18 MB at the recorder's start, then a scan
//! of all of them per relocated struct. The programs read five fields. Finding those
//! fields' offsets in the raw BTF is one pass over the type headers without allocating,
//! and relocating against a blob that holds only them gives the same offsets.
//!
//! Every field `ebpf/hotspot.bpf.c` reads with `BPF_CORE_READ` must be in [`FIELDS`]:
//! a relocation against a field missing here fails the load, loudly.
//!
//! aya 0.14's `EbpfLoader::new()` parses the whole kernel BTF unconditionally, even when
//! the caller then supplies its own with `.btf()`; [`loader_without_kernel_btf`] makes it
//! skip that parse.

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
/// `atomic_t`, whose `counter` is at offset 0.
const FIELDS: [(&str, &[&str]); 2] = [
    ("task_struct", &["pid", "tgid", "signal"]),
    ("signal_struct", &["live"]),
];

/// Why the subset could not be made; the caller falls back to the full parse.
#[derive(Debug, thiserror::Error)]
pub enum SubsetError {
    #[error("reading {KERNEL_BTF}: {0}")]
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
    let raw = std::fs::read(path)?;
    let blob = subset(&raw)?;
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
fn subset(raw: &[u8]) -> Result<Vec<u8>, SubsetError> {
    let found = find_fields(raw)?;
    let task = &found[0];
    let signal = &found[1];
    let byte_offset = |f: &Found, i: usize, name: &str| -> Result<u32, SubsetError> {
        match f.members[i] {
            Some(m) if !m.bitfield && m.bit_offset % 8 == 0 => Ok(m.bit_offset),
            Some(_) => Err(SubsetError::Malformed("a CO-RE field is a bitfield")),
            None => Err(SubsetError::Missing(name.to_owned())),
        }
    };
    let pid = byte_offset(task, 0, "task_struct.pid")?;
    let tgid = byte_offset(task, 1, "task_struct.tgid")?;
    let signal_ptr = byte_offset(task, 2, "task_struct.signal")?;
    let live = byte_offset(signal, 0, "signal_struct.live")?;

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
    // [6] struct task_struct { pid_t pid; pid_t tgid; struct signal_struct *signal; }
    let name = strings.add("task_struct");
    push_type(&mut types, name, KIND_STRUCT, 3, task.size);
    push_member(&mut types, strings.add("pid"), 1, pid);
    push_member(&mut types, strings.add("tgid"), 1, tgid);
    push_member(&mut types, strings.add("signal"), 3, signal_ptr);

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

/// One pass over the type section of raw (native-endian) BTF: the size and member offsets
/// of each struct in [`FIELDS`], in that order.
fn find_fields(raw: &[u8]) -> Result<Vec<Found>, SubsetError> {
    let u16_at = |at: usize| {
        raw.get(at..at + 2)
            .map(|b| u16::from_ne_bytes([b[0], b[1]]))
    };
    let u32_at = |at: usize| {
        raw.get(at..at + 4)
            .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let header = |at| u32_at(at).map(|v| v as usize);
    if u16_at(0) != Some(MAGIC) {
        return Err(SubsetError::Malformed("not native-endian BTF"));
    }
    let (Some(hdr_len), Some(type_off), Some(type_len), Some(str_off), Some(str_len)) =
        (header(4), header(8), header(12), header(16), header(20))
    else {
        return Err(SubsetError::Malformed("short header"));
    };
    let types_start = hdr_len.checked_add(type_off);
    let types_end = types_start.and_then(|s| s.checked_add(type_len));
    let strs_start = hdr_len.checked_add(str_off);
    let strs_end = strs_start.and_then(|s| s.checked_add(str_len));
    let (Some(mut at), Some(types_end), Some(strs_start), Some(strs_end)) =
        (types_start, types_end, strs_start, strs_end)
    else {
        return Err(SubsetError::Malformed("section bounds"));
    };
    if hdr_len < HEADER_LEN || types_end > raw.len() || strs_end > raw.len() {
        return Err(SubsetError::Malformed("section bounds"));
    }
    let strings = &raw[strs_start..strs_end];
    let name_is = |off: u32, want: &str| {
        let Some(s) = strings.get(off as usize..) else {
            return false;
        };
        s.len() > want.len() && s.starts_with(want.as_bytes()) && s[want.len()] == 0
    };

    let mut found: Vec<Option<Found>> = vec![None; FIELDS.len()];
    while at < types_end {
        let (Some(name), Some(info), Some(size)) = (u32_at(at), u32_at(at + 4), u32_at(at + 8))
        else {
            return Err(SubsetError::Malformed("truncated type"));
        };
        let kind = (info >> 24) & 0x1f;
        let vlen = (info & 0xffff) as usize;
        let kind_flag = info >> 31 != 0;
        let members = at + 12;
        let extra = match kind {
            KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
            KIND_ARRAY => 12,
            KIND_STRUCT | KIND_UNION | KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
            KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
            // PTR, FWD, TYPEDEF, VOLATILE, CONST, RESTRICT, FUNC, FLOAT, TYPE_TAG.
            2 | 7..=12 | 16 | 18 => 0,
            _ => return Err(SubsetError::Malformed("unknown type kind")),
        };
        if kind == KIND_STRUCT && vlen > 0 {
            for (slot, (struct_name, fields)) in found.iter_mut().zip(FIELDS) {
                if slot.is_some() || !name_is(name, struct_name) {
                    continue;
                }
                let mut wanted = vec![None; fields.len()];
                for m in 0..vlen {
                    let base = members + 12 * m;
                    let (Some(m_name), Some(m_off)) = (u32_at(base), u32_at(base + 8)) else {
                        return Err(SubsetError::Malformed("truncated member"));
                    };
                    if let Some(i) = fields.iter().position(|f| name_is(m_name, f)) {
                        // With kind_flag the top 8 bits are a bitfield size.
                        wanted[i] = Some(Member {
                            bit_offset: if kind_flag {
                                m_off & 0x00ff_ffff
                            } else {
                                m_off
                            },
                            bitfield: kind_flag && m_off >> 24 != 0,
                        });
                    }
                }
                *slot = Some(Found {
                    size,
                    members: wanted,
                });
            }
        }
        at = members
            .checked_add(extra)
            .ok_or(SubsetError::Malformed("type size"))?;
    }
    found
        .into_iter()
        .zip(FIELDS)
        .map(|(f, (name, _))| f.ok_or_else(|| SubsetError::Missing(format!("struct {name}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let vlen = task_members.len() as u32;
        let name = strings.add("task_struct");
        types.extend_from_slice(&name.to_ne_bytes());
        types.extend_from_slice(&((KIND_STRUCT << 24) | flag | vlen).to_ne_bytes());
        types.extend_from_slice(&9000u32.to_ne_bytes());
        for &(m, off) in task_members {
            push_member(&mut types, strings.add(m), 1, off);
        }
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
        let found = find_fields(&raw).expect("found");
        let offsets = |f: &Found| -> Vec<Option<u32>> {
            f.members.iter().map(|m| m.map(|m| m.bit_offset)).collect()
        };
        assert_eq!(found[0].size, 9000);
        assert_eq!(
            offsets(&found[0]),
            vec![Some(2432 * 8), Some(2436 * 8), Some(3000 * 8)]
        );
        assert_eq!((found[1].size, offsets(&found[1])), (1024, vec![Some(32)]));
        // The subset is BTF with the same structs: read back, it gives the same answers,
        // and the loader's parser takes it.
        let blob = subset(&raw).expect("subset");
        assert_eq!(find_fields(&blob).expect("found again"), found);
        Btf::parse(&blob, Endianness::default()).expect("parses");
    }

    #[test]
    fn missing_fields_and_bitfields_are_refused() {
        let no_tgid = kernel_like(&[("pid", 64), ("signal", 128)], false);
        assert!(matches!(subset(&no_tgid), Err(SubsetError::Missing(m)) if m.contains("tgid")));
        // kind_flag: the top byte is a bitfield size.
        let bitfield = kernel_like(
            &[("pid", (3 << 24) | 64), ("tgid", 96), ("signal", 128)],
            true,
        );
        assert!(matches!(subset(&bitfield), Err(SubsetError::Malformed(_))));
        let plain_flagged = kernel_like(&[("pid", 64), ("tgid", 96), ("signal", 128)], true);
        assert!(
            subset(&plain_flagged).is_ok(),
            "kind_flag without bitfields"
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let raw = kernel_like(&[("pid", 64), ("tgid", 96), ("signal", 128)], false);
        for cut in [0, 3, 23, 30, raw.len() - 1] {
            assert!(find_fields(&raw[..cut]).is_err(), "cut at {cut}");
        }
        let mut bad = raw.clone();
        bad[8..12].copy_from_slice(&u32::MAX.to_ne_bytes());
        assert!(find_fields(&bad).is_err());
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
        let raw = std::fs::read(KERNEL_BTF).expect("kernel BTF");
        let found = find_fields(&raw).expect("fields");
        assert!(found.iter().all(|f| f.members.iter().all(Option::is_some)));
        // pid and tgid are adjacent ints in every kernel since 2.6.
        let (pid, tgid) = (found[0].members[0], found[0].members[1]);
        assert_eq!(pid.map(|m| m.bit_offset + 32), tgid.map(|m| m.bit_offset));
        read(Path::new(KERNEL_BTF)).expect("subset of the running kernel's BTF");
    }
}
