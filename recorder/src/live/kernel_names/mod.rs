//! Names for kernel frames, resolved at record time so no raw kernel address reaches
//! the capture: from the kernel itself through BPF when it can ([`bpf_ksym`]),
//! otherwise from a snapshot of `/proc/kallsyms` ([`kallsyms`]), read only once a kernel
//! frame needs a name. Both give a [`KernelName`]; [`KernelSymbols`] picks the source.

pub mod bpf_ksym;
pub mod kallsyms;

use std::path::PathBuf;

pub use bpf_ksym::BpfKernelSymbols;
pub use kallsyms::{Kallsyms, KernelSymbol};

pub use crate::host::KernelName;

/// Where kernel frames get their names.
#[derive(Debug)]
pub struct KernelSymbols {
    bpf: Option<BpfKernelSymbols>,
    path: PathBuf,
    /// `/proc/kallsyms`, read the first time it is needed: many recordings of user-space
    /// work never need it, and with BPF naming none do.
    table: Option<Kallsyms>,
}

impl KernelSymbols {
    /// Names from the kallsyms file at `path`, read on first use.
    pub fn from_file(path: impl Into<PathBuf>) -> Self {
        KernelSymbols {
            bpf: None,
            path: path.into(),
            table: None,
        }
    }

    /// Names from the kernel itself, with the file as the fallback should that fail.
    pub fn use_bpf(&mut self, bpf: BpfKernelSymbols) {
        self.bpf = Some(bpf);
    }

    /// Reads the file now if it has not been read yet: for when it will be needed and
    /// may not be readable later (it shows no addresses once privileges are dropped).
    pub fn read_now(&mut self) -> &Kallsyms {
        let path = &self.path;
        self.table.get_or_insert_with(|| {
            let table = Kallsyms::read(path).unwrap_or_default();
            // Parsing leaves freed buffers behind; give them back.
            // SAFETY: malloc_trim only returns free heap pages to the kernel.
            unsafe { libc::malloc_trim(0) };
            table
        })
    }

    /// The symbol containing `addr`, or `None` when no source knows one.
    pub fn resolve(&mut self, addr: u64) -> Option<KernelName> {
        if let Some(bpf) = &self.bpf {
            match bpf.resolve(addr) {
                Ok(name) => return name,
                // The program cannot run (it loaded, so this is unexpected): the file
                // names the rest of the recording's frames.
                Err(_) => self.bpf = None,
            }
        }
        self.read_now()
            .resolve(addr)
            .map(|(sym, offset)| KernelName {
                name: sym.name.to_owned(),
                offset,
                module: sym.module.map(str::to_owned),
            })
    }

    /// Kernel frames needed names from `/proc/kallsyms` and it gave none (no privilege
    /// to see addresses: kptr_restrict).
    pub fn missing(&self) -> bool {
        self.table.as_ref().is_some_and(Kallsyms::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "\
ffffffff81000300 T vfs_write
";

    #[test]
    fn the_file_is_read_only_when_a_name_is_needed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("kallsyms");
        let mut k = KernelSymbols::from_file(&path);
        // Nothing read yet, so nothing is missing, even though the file does not exist.
        assert!(!k.missing());
        std::fs::write(&path, TEXT).expect("write");
        let name = k.resolve(0xffffffff81000304).expect("named");
        assert_eq!((name.name.as_str(), name.offset), ("vfs_write", 4));
        assert!(!k.missing());

        let unprivileged = dir.path().join("zeros");
        std::fs::write(&unprivileged, "0000000000000000 T a\n").expect("write");
        let mut k = KernelSymbols::from_file(&unprivileged);
        assert_eq!(k.resolve(0xffffffff81000304), None);
        assert!(
            k.missing(),
            "names were needed and the file had no addresses"
        );
    }
}
