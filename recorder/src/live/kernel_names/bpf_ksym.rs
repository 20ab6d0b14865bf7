//! Kernel symbol names from the kernel itself: `hs_ksym`, a BPF program that is never
//! attached, formats one address with `"%pS"` each time the recorder runs it through
//! `BPF_PROG_TEST_RUN`. A profile holds a few dozen to a few thousand distinct kernel
//! addresses; naming them this way costs microseconds each, where reading
//! `/proc/kallsyms` costs ~60 ms of CPU and ~10 MB at start for ~120,000 symbols.

use std::io;
use std::os::fd::{AsFd, AsRawFd};

use aya::maps::{Array, Map, MapData, MapError};
use aya::programs::ProgramFd;

use super::KernelName;
use crate::bpf::abi::{HS_KSYM_LEN, HsKsym};

/// Most bytes of a name (`HS_KSYM_LEN`).
const KSYM_LEN: usize = HS_KSYM_LEN as usize;

// SAFETY: an integer and a byte array with no padding between or after them (its size,
// asserted by the generated layout, is their sum); every bit pattern is a valid value.
unsafe impl aya::Pod for HsKsym {}

/// `BPF_PROG_TEST_RUN`'s part of `union bpf_attr` (`linux/bpf.h`), up to `batch_size`.
/// Passing only this much is allowed: the kernel zero-fills the rest of the union.
#[repr(C)]
#[derive(Default)]
struct TestRunAttr {
    prog_fd: u32,
    retval: u32,
    data_size_in: u32,
    data_size_out: u32,
    data_in: u64,
    data_out: u64,
    repeat: u32,
    duration: u32,
    ctx_size_in: u32,
    ctx_size_out: u32,
    ctx_in: u64,
    ctx_out: u64,
    flags: u32,
    cpu: u32,
    batch_size: u32,
    /// Explicit, so it is zeroed: the kernel rejects (EINVAL) any non-zero byte after
    /// the last field it knows, and implicit padding would hold whatever was on the stack.
    _pad: u32,
}

// No implicit padding anywhere (see `_pad`).
const _: () = assert!(size_of::<TestRunAttr>() == 80);

const BPF_PROG_TEST_RUN: libc::c_long = 10;

/// The loaded `hs_ksym` program and the map it writes into. Holds its own descriptors,
/// so it outlives the [`BpfSampler`](crate::bpf::BpfSampler) it came from.
pub struct BpfKernelSymbols {
    prog: ProgramFd,
    out: Array<MapData, HsKsym>,
}

impl std::fmt::Debug for BpfKernelSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfKernelSymbols").finish_non_exhaustive()
    }
}

impl BpfKernelSymbols {
    /// From the loaded `hs_ksym` program and the `ksym_out` map taken from the object.
    pub(crate) fn new(prog: ProgramFd, out: Map) -> Result<Self, MapError> {
        Ok(BpfKernelSymbols {
            prog,
            out: Array::try_from(out)?,
        })
    }

    /// The kernel symbol containing `addr`. `Ok(None)` when the kernel knows no symbol
    /// there; `Err` when the program could not run (the caller falls back to
    /// /proc/kallsyms).
    pub fn resolve(&self, addr: u64) -> io::Result<Option<KernelName>> {
        let ctx = [addr];
        let mut attr = TestRunAttr {
            prog_fd: u32::try_from(self.prog.as_fd().as_raw_fd()).map_err(io::Error::other)?,
            ctx_size_in: size_of_val(&ctx) as u32,
            ctx_in: ctx.as_ptr() as u64,
            ..TestRunAttr::default()
        };
        // SAFETY: bpf(2) with a test-run attribute block of the size we pass; the only
        // pointer in it (`ctx_in`) refers to `ctx`, alive for the call, of `ctx_size_in`
        // bytes. The kernel writes back into `attr` only (retval, duration, sizes).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                BPF_PROG_TEST_RUN,
                &mut attr as *mut TestRunAttr,
                size_of::<TestRunAttr>(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        let raw = self.out.get(&0, 0).map_err(io::Error::other)?;
        let Ok(len) = usize::try_from(raw.len) else {
            return Err(io::Error::other(format!(
                "bpf_snprintf failed: {}",
                raw.len
            )));
        };
        if len > KSYM_LEN {
            // Truncated: the offset, and with it the frame, would be wrong.
            return Ok(None);
        }
        let end = raw.name.iter().position(|&b| b == 0).unwrap_or(KSYM_LEN);
        Ok(std::str::from_utf8(&raw.name[..end])
            .ok()
            .and_then(parse_symbol_text))
    }
}

/// Parses the kernel's `%pS` text: `name+0xOFF/0xSIZE`, then ` [module]` for module
/// symbols. An address with no symbol comes out as plain hex (`0xffff…`): that is a raw
/// kernel address, which must never reach a capture, so it gives `None`.
pub fn parse_symbol_text(text: &str) -> Option<KernelName> {
    let (symbol, module) = match text.strip_suffix(']').and_then(|t| t.rsplit_once(" [")) {
        // A build-id may follow the module name (`%pSb`); only the name is kept.
        Some((s, m)) => (s, m.split_whitespace().next().map(str::to_owned)),
        None => (text, None),
    };
    let (name, rest) = symbol.rsplit_once('+')?;
    let (offset, _size) = rest.split_once('/')?;
    let offset = u64::from_str_radix(offset.strip_prefix("0x")?, 16).ok()?;
    if name.is_empty() || name.starts_with("0x") {
        return None;
    }
    Some(KernelName {
        name: name.to_owned(),
        offset,
        module,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kernel_and_module_symbols() {
        let k = parse_symbol_text("vfs_write+0x1a/0x3c0").expect("kernel symbol");
        assert_eq!(
            (k.name.as_str(), k.offset, k.module),
            ("vfs_write", 0x1a, None)
        );
        let m = parse_symbol_text("ext4_file_write_iter+0x0/0x90 [ext4]").expect("module");
        assert_eq!(m.name, "ext4_file_write_iter");
        assert_eq!((m.offset, m.module.as_deref()), (0, Some("ext4")));
        let b = parse_symbol_text("f+0x4/0x8 [mod 0123abcd]").expect("with build-id");
        assert_eq!(b.module.as_deref(), Some("mod"));
        // A '+' inside a name is kept: only the last one starts the offset.
        let p = parse_symbol_text("a+b+0x10/0x20").expect("plus in name");
        assert_eq!((p.name.as_str(), p.offset), ("a+b", 0x10));
    }

    #[test]
    fn raw_addresses_and_garbage_never_become_names() {
        for text in [
            "0xffffffff81234567",
            "",
            "no_offset",
            "name+zz/0x10",
            "+0x1/0x2",
            "0xffffffff81000000+0x1/0x2",
        ] {
            assert!(parse_symbol_text(text).is_none(), "{text:?}");
        }
    }
}
