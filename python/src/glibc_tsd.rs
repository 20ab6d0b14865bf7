//! Where glibc keeps a thread's pthread-key values (thread-specific data), read from the
//! glibc the target uses (`libc.so.6`, or `libpthread.so.0` before glibc 2.34): what turns
//! the interpreter's key into the thread's `PyThreadState *`, for any thread, holding the
//! GIL or not.
//!
//! glibc describes its `struct pthread` for debuggers in `_thread_db_*` symbols (each three
//! `uint32_t`: size in bits, element count, byte offset), which libthread_db reads to
//! implement `td_thr_tsd`; hotspot reads the same ones. On x86-64 the thread pointer (the
//! FS base) is the address of the thread's `struct pthread`, and for a key `k`:
//!
//! ```text
//! block = *(u64 *)(fs_base + specific + 8 * (k / per_block))            // specific[k / 32]
//! value = *(u64 *)(block + key_data_size * (k % per_block) + key_data_data)
//! ```
//!
//! `specific[0]` points at the first block, kept inside `struct pthread` itself
//! (`specific_1stblock`), so for keys below `per_block` one read does, at an offset the
//! descriptors do not give but `pthread_getspecific`'s code does:
//!
//! ```text
//! value = *(u64 *)(fs_base + first_block + key_data_size * k + key_data_data)      // k < 32
//! ```
//!
//! glibc 2.36 (Debian 12): `specific` 0x510, 32 keys per block, 16-byte entries with the
//! value at +8, `first_block` 0x310; checked by `tests/glibc_tsd.rs` and on live threads by
//! `tests/live_process.rs`. What varies between glibc builds is the offsets inside `struct
//! pthread`; the scheme has been the same since glibc 2.3 (NPTL).

use iced_x86::{Mnemonic, OpKind, Register};
use thiserror::Error;

use crate::disasm::instructions;
use crate::elf::{ElfError, ElfImage, Sym};
use crate::limits::MAX_PROLOGUE_INSNS;

/// What is missing to find thread-specific data in a C library.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TsdError {
    #[error(transparent)]
    Elf(#[from] ElfError),
    #[error("no glibc thread_db descriptor {0} (not glibc's libc.so.6 or libpthread.so.0)")]
    NoDescriptor(&'static str),
    #[error("glibc's thread_db descriptor {name} is implausible: {value:?}")]
    Implausible { name: &'static str, value: [u32; 3] },
}

/// glibc's thread-specific data layout: the parameters of the formulas above.
///
/// Binary layout (`to_bytes`, little-endian, 8 bytes), for the BPF program:
///
/// | offset | type | field            |
/// |--------|------|------------------|
/// | 0      | u16  | `specific`       |
/// | 2      | u8   | `per_block`      |
/// | 3      | u8   | `key_data_size`  |
/// | 4      | u16  | `first_block`, 0 when unknown (use the two-read way) |
/// | 6      | u8   | `key_data_data`  |
/// | 7      | u8   | `blocks`         |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TsdLayout {
    /// Offset in `struct pthread` of `specific`, the array of pointers to key blocks.
    pub specific: u16,
    /// Keys per block (`PTHREAD_KEY_2NDLEVEL_SIZE`, 32).
    pub per_block: u8,
    /// Entries of `specific` (`PTHREAD_KEY_1STLEVEL_SIZE`, 32): keys from
    /// `blocks * per_block` on (glibc's `PTHREAD_KEYS_MAX`, 1024) do not exist.
    pub blocks: u8,
    /// Bytes of one `struct pthread_key_data` (`seq`, `data`).
    pub key_data_size: u8,
    /// Offset of `data` in `struct pthread_key_data`.
    pub key_data_data: u8,
    /// Offset in `struct pthread` of `specific_1stblock`, from `pthread_getspecific`'s
    /// code; `None` when its code has no shape seen before.
    pub first_block: Option<u16>,
}

/// The thread_db descriptor names.
const SPECIFIC: &str = "_thread_db_pthread_specific";
const KEY_DATA_DATA: &str = "_thread_db_pthread_key_data_data";
const LEVEL2: &str = "_thread_db_pthread_key_data_level2_data";
const SIZEOF_KEY_DATA: &str = "_thread_db_sizeof_pthread_key_data";
const GETSPECIFIC: &str = "pthread_getspecific";

impl TsdLayout {
    /// Reads the layout from a glibc (`libc.so.6` ≥ 2.34, else `libpthread.so.0`).
    pub fn from_elf(data: &[u8]) -> Result<TsdLayout, TsdError> {
        let elf = ElfImage::parse(data)?;
        let exports = elf.exports(&[
            SPECIFIC,
            KEY_DATA_DATA,
            LEVEL2,
            SIZEOF_KEY_DATA,
            GETSPECIFIC,
        ]);
        let desc = |name: &'static str, words: usize| -> Result<[u32; 3], TsdError> {
            let sym = exports.get(name).ok_or(TsdError::NoDescriptor(name))?;
            let bytes = elf
                .bytes_at(sym.address, 4 * words as u64)
                .ok_or(TsdError::NoDescriptor(name))?;
            let mut v = [0u32; 3];
            for (w, c) in v.iter_mut().zip(bytes.chunks_exact(4)) {
                *w = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
            }
            Ok(v)
        };
        let specific = desc(SPECIFIC, 3)?;
        let data = desc(KEY_DATA_DATA, 3)?;
        let level2 = desc(LEVEL2, 3)?;
        let size = desc(SIZEOF_KEY_DATA, 1)?;
        let bad = |name, value| TsdError::Implausible { name, value };
        // `specific` is an array of pointers, offset below 64 KiB.
        let specific_off = u16::try_from(specific[2]).map_err(|_| bad(SPECIFIC, specific))?;
        // The whole array is one descriptor field: its size in bits is 64 per entry.
        let blocks = u8::try_from(specific[0] / 64).map_err(|_| bad(SPECIFIC, specific))?;
        if blocks == 0 || !specific[0].is_multiple_of(64) {
            return Err(bad(SPECIFIC, specific));
        }
        // `data` is a pointer inside the entry; the level-2 block has `per_block` entries
        // of `size` bytes.
        let key_data_size = u8::try_from(size[0]).map_err(|_| bad(SIZEOF_KEY_DATA, size))?;
        let key_data_data = u8::try_from(data[2]).map_err(|_| bad(KEY_DATA_DATA, data))?;
        if data[0] != 64 || u32::from(key_data_data) + 8 > u32::from(key_data_size) {
            return Err(bad(KEY_DATA_DATA, data));
        }
        let per_block = u8::try_from(level2[1]).map_err(|_| bad(LEVEL2, level2))?;
        if per_block == 0 || level2[0] != 8 * u32::from(key_data_size) {
            return Err(bad(LEVEL2, level2));
        }
        let first_block = exports
            .get(GETSPECIFIC)
            .and_then(|f| first_block_in_code(&elf, *f, key_data_size, key_data_data));
        Ok(TsdLayout {
            specific: specific_off,
            per_block,
            blocks,
            key_data_size,
            key_data_data,
            first_block,
        })
    }

    /// The 8 bytes of the table above.
    pub fn to_bytes(&self) -> [u8; 8] {
        let s = self.specific.to_le_bytes();
        let f = self.first_block.unwrap_or(0).to_le_bytes();
        [
            s[0],
            s[1],
            self.per_block,
            self.key_data_size,
            f[0],
            f[1],
            self.key_data_data,
            self.blocks,
        ]
    }

    /// The addresses a thread's value for `key` is read through, given the thread's FS
    /// base: one address (first block) or a pointer's address and the offset to add to
    /// the pointer read there; `None` for a key glibc cannot have made. What the BPF
    /// program computes; [`crate::WalkDescription::thread_state`] reads.
    pub fn slot(&self, fs_base: u64, key: u32) -> Option<TsdSlot> {
        let per = u32::from(self.per_block.max(1));
        if key >= per * u32::from(self.blocks) {
            return None;
        }
        let size = u64::from(self.key_data_size);
        let data = u64::from(self.key_data_data);
        if let Some(first) = self.first_block
            && key < per
        {
            return Some(TsdSlot::Direct(
                fs_base
                    .wrapping_add(u64::from(first))
                    .wrapping_add(size * u64::from(key))
                    .wrapping_add(data),
            ));
        }
        Some(TsdSlot::Indirect {
            block_pointer: fs_base
                .wrapping_add(u64::from(self.specific))
                .wrapping_add(8 * u64::from(key / per)),
            offset: size * u64::from(key % per) + data,
        })
    }

    /// The same layout without the one-read way (tests check both ways agree).
    pub fn without_first_block(mut self) -> Self {
        self.first_block = None;
        self
    }
}

/// Where a thread's value for a key is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TsdSlot {
    /// The value is the 8 bytes here.
    Direct(u64),
    /// Read the block pointer here (NULL: the thread never set a key of that block), then
    /// the value at the pointer plus `offset`.
    Indirect { block_pointer: u64, offset: u64 },
}

/// A value as the symbolic tracking of `pthread_getspecific` sees it: `key * k + c`, plus
/// the thread pointer when `tp`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lin {
    k: i64,
    c: i64,
    tp: bool,
}

impl Lin {
    fn add(self, o: Lin) -> Option<Lin> {
        if self.tp && o.tp {
            return None;
        }
        Some(Lin {
            k: self.k.checked_add(o.k)?,
            c: self.c.checked_add(o.c)?,
            tp: self.tp || o.tp,
        })
    }
    fn scale(self, by: i64) -> Option<Lin> {
        (!self.tp).then_some(())?;
        Some(Lin {
            k: self.k.checked_mul(by)?,
            c: self.c.checked_mul(by)?,
            tp: false,
        })
    }
}

/// `specific_1stblock`'s offset, from the first load of `pthread_getspecific` whose
/// address is `thread pointer + key_data_size * key + c`: then `c - key_data_data`.
fn first_block_in_code(elf: &ElfImage<'_>, func: Sym, size: u8, data: u8) -> Option<u16> {
    let code = elf.bytes_at(func.address, func.size.clamp(1, 256))?;
    let mut regs: std::collections::HashMap<Register, Lin> = Default::default();
    let key = Lin {
        k: 1,
        c: 0,
        tp: false,
    };
    regs.insert(Register::RDI, key);
    let tp_load = |insn: &iced_x86::Instruction| {
        insn.memory_segment() == Register::FS
            && insn.memory_base() == Register::None
            && insn.memory_index() == Register::None
            && insn.memory_displacement64() == 0x10
    };
    for insn in instructions(code, func.address).take(MAX_PROLOGUE_INSNS) {
        let m = insn.mnemonic();
        if matches!(m, Mnemonic::Ret | Mnemonic::Call) || insn.is_jmp_short_or_near() {
            return None;
        }
        if insn.op_count() < 2 || insn.op0_kind() != OpKind::Register {
            continue;
        }
        let dst = insn.op0_register().full_register();
        let get = |r: Register| regs.get(&r.full_register()).copied();
        // The address of the memory operand, symbolically.
        let address = || -> Option<Lin> {
            if tp_load(&insn) {
                return Some(Lin {
                    k: 0,
                    c: 0,
                    tp: true,
                });
            }
            if insn.memory_segment() != Register::DS || insn.is_ip_rel_memory_operand() {
                return None;
            }
            let mut a = Lin {
                k: 0,
                c: insn.memory_displacement64() as i64,
                tp: false,
            };
            if insn.memory_base() != Register::None {
                a = a.add(get(insn.memory_base())?)?;
            }
            if insn.memory_index() != Register::None {
                a =
                    a.add(get(insn.memory_index())?.scale(i64::from(insn.memory_index_scale()))?)?;
            }
            Some(a)
        };
        let src = || -> Option<Lin> {
            match insn.op1_kind() {
                OpKind::Register => get(insn.op1_register()),
                OpKind::Immediate8
                | OpKind::Immediate8to32
                | OpKind::Immediate8to64
                | OpKind::Immediate32
                | OpKind::Immediate32to64 => Some(Lin {
                    k: 0,
                    c: insn.immediate(1) as i64,
                    tp: false,
                }),
                OpKind::Memory if tp_load(&insn) => Some(Lin {
                    k: 0,
                    c: 0,
                    tp: true,
                }),
                _ => None,
            }
        };
        let value = match m {
            Mnemonic::Mov if insn.op1_kind() == OpKind::Memory && !tp_load(&insn) => {
                // The load of the key's value; any other load leaves its register unknown.
                if let Some(a) = address()
                    && a.tp
                    && a.k == i64::from(size)
                {
                    let first = a.c.checked_sub(i64::from(data))?;
                    return u16::try_from(first).ok();
                }
                None
            }
            Mnemonic::Mov | Mnemonic::Movzx => src(),
            Mnemonic::Lea => address(),
            Mnemonic::Add => get(dst).zip(src()).and_then(|(a, b)| a.add(b)),
            Mnemonic::Shl => match insn.op1_kind() {
                OpKind::Immediate8 => {
                    get(dst).and_then(|a| a.scale(1i64 << (insn.immediate8() & 31)))
                }
                _ => None,
            },
            Mnemonic::Cmp | Mnemonic::Test => continue,
            _ => None,
        };
        match value {
            Some(v) => regs.insert(dst, v),
            None => regs.remove(&dst),
        };
    }
    None
}
