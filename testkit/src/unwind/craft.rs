//! Crafting ELF files and CFI byte by byte, for the hostile-input tests and fuzz seeds:
//! a minimal ELF64 writer (sections only, optionally one program header) and an
//! assembler for `.eh_frame` / `.debug_frame` entries and the `.eh_frame_hdr` table.

/// `SHT_PROGBITS`, `SHT_NOBITS`.
pub const PROGBITS: u32 = 1;
pub const NOBITS: u32 = 8;

/// One section of a crafted file.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: String,
    pub addr: u64,
    pub data: Vec<u8>,
    pub kind: u32,
    /// The size the header claims (the data's length when `None`).
    pub claimed_size: Option<u64>,
    /// `SHF_COMPRESSED` with a zlib header claiming this uncompressed size: `data` is then
    /// the compressed stream.
    pub compressed: Option<u64>,
}

impl Section {
    pub fn new(name: &str, addr: u64, data: Vec<u8>) -> Section {
        Section {
            name: name.to_string(),
            addr,
            data,
            kind: PROGBITS,
            claimed_size: None,
            compressed: None,
        }
    }
}

fn put16(b: &mut Vec<u8>, v: u16) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put32(b: &mut Vec<u8>, v: u32) {
    b.extend_from_slice(&v.to_le_bytes());
}
fn put64(b: &mut Vec<u8>, v: u64) {
    b.extend_from_slice(&v.to_le_bytes());
}

/// An x86_64 ELF64 shared object holding `sections`, plus `PT_GNU_EH_FRAME` over the
/// section named `.eh_frame_hdr` (and a `PT_LOAD` over everything) when `phdrs`.
pub fn elf(sections: &[Section], phdrs: bool) -> Vec<u8> {
    let mut out = vec![0u8; 64];
    let phnum: u16 = if phdrs { 2 } else { 0 };
    let phoff = 64u64;
    out.resize(64 + usize::from(phnum) * 56, 0);
    // Section data, each 16-aligned; file offset == address for PT_LOAD's sake when the
    // caller chose addresses like that (the tests do: addr = 0x1000 * k).
    let mut offsets = Vec::new();
    for s in sections {
        let start = if s.addr >= out.len() as u64 && s.addr < (1 << 24) {
            s.addr as usize
        } else {
            out.len().next_multiple_of(16)
        };
        out.resize(start, 0);
        offsets.push(start as u64);
        if s.kind != NOBITS {
            if let Some(size) = s.compressed {
                put32(&mut out, 1); // ELFCOMPRESS_ZLIB
                put32(&mut out, 0);
                put64(&mut out, size);
                put64(&mut out, 1);
            }
            out.extend_from_slice(&s.data);
        }
    }
    let mut shstrtab = vec![0u8];
    let mut names = Vec::new();
    for s in sections
        .iter()
        .map(|s| s.name.as_str())
        .chain([".shstrtab"])
    {
        names.push(shstrtab.len() as u32);
        shstrtab.extend_from_slice(s.as_bytes());
        shstrtab.push(0);
    }
    let shstrtab_off = out.len() as u64;
    out.extend_from_slice(&shstrtab);
    let shoff = out.len().next_multiple_of(8) as u64;
    out.resize(shoff as usize, 0);
    out.extend_from_slice(&[0u8; 64]); // the null section
    for (i, s) in sections.iter().enumerate() {
        let stored = if s.kind == NOBITS {
            0
        } else {
            s.data.len() as u64 + if s.compressed.is_some() { 24 } else { 0 }
        };
        put32(&mut out, names[i]);
        put32(&mut out, s.kind);
        let mut flags = 0x2u64; // SHF_ALLOC
        if s.name.contains("plt") || s.name == ".text" {
            flags |= 0x4;
        }
        if s.compressed.is_some() {
            flags = 0x800; // SHF_COMPRESSED, not allocated
        }
        put64(&mut out, flags);
        put64(&mut out, s.addr);
        put64(&mut out, offsets[i]);
        put64(
            &mut out,
            s.claimed_size.unwrap_or(if s.kind == NOBITS {
                s.data.len() as u64
            } else {
                stored
            }),
        );
        put32(&mut out, 0);
        put32(&mut out, 0);
        put64(&mut out, 8);
        put64(&mut out, 0);
    }
    // .shstrtab
    put32(&mut out, names[sections.len()]);
    put32(&mut out, 3);
    put64(&mut out, 0);
    put64(&mut out, 0);
    put64(&mut out, shstrtab_off);
    put64(&mut out, shstrtab.len() as u64);
    put32(&mut out, 0);
    put32(&mut out, 0);
    put64(&mut out, 1);
    put64(&mut out, 0);
    let total = out.len() as u64;
    if phdrs {
        let mut ph = Vec::new();
        put32(&mut ph, 1); // PT_LOAD over the whole file at address = offset
        put32(&mut ph, 5);
        put64(&mut ph, 0);
        put64(&mut ph, 0);
        put64(&mut ph, 0);
        put64(&mut ph, total);
        put64(&mut ph, total);
        put64(&mut ph, 0x1000);
        let (hdr_off, hdr_addr, hdr_len) = sections
            .iter()
            .zip(&offsets)
            .find(|(s, _)| s.name == ".eh_frame_hdr")
            .map(|(s, off)| (*off, s.addr, s.data.len() as u64))
            .unwrap_or((0, 0, 0));
        put32(&mut ph, 0x6474_e550); // PT_GNU_EH_FRAME
        put32(&mut ph, 4);
        put64(&mut ph, hdr_off);
        put64(&mut ph, hdr_addr);
        put64(&mut ph, hdr_addr);
        put64(&mut ph, hdr_len);
        put64(&mut ph, hdr_len);
        put64(&mut ph, 4);
        out[phoff as usize..phoff as usize + ph.len()].copy_from_slice(&ph);
    }
    let mut h = Vec::new();
    h.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    h.extend_from_slice(&[0; 8]);
    put16(&mut h, 3); // ET_DYN
    put16(&mut h, 62); // EM_X86_64
    put32(&mut h, 1);
    put64(&mut h, 0);
    put64(&mut h, if phdrs { phoff } else { 0 });
    put64(&mut h, shoff);
    put32(&mut h, 0);
    put16(&mut h, 64);
    put16(&mut h, 56);
    put16(&mut h, phnum);
    put16(&mut h, 64);
    put16(&mut h, sections.len() as u16 + 2);
    put16(&mut h, sections.len() as u16 + 1);
    out[..64].copy_from_slice(&h);
    out
}

/// CFA instructions, encoded.
pub mod op {
    pub fn uleb(mut v: u64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }
    pub fn sleb(mut v: i64, out: &mut Vec<u8>) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            let done = (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0);
            out.push(if done { byte } else { byte | 0x80 });
            if done {
                return;
            }
        }
    }
    pub fn def_cfa(reg: u8, off: u64) -> Vec<u8> {
        let mut b = vec![0x0c, reg];
        uleb(off, &mut b);
        b
    }
    pub fn def_cfa_offset(off: u64) -> Vec<u8> {
        let mut b = vec![0x0e];
        uleb(off, &mut b);
        b
    }
    pub fn def_cfa_register(reg: u8) -> Vec<u8> {
        vec![0x0d, reg]
    }
    /// `DW_CFA_offset reg, n` (saved at CFA + n * data_align, data_align = -8).
    pub fn offset(reg: u8, n: u64) -> Vec<u8> {
        let mut b = vec![0x80 | reg];
        uleb(n, &mut b);
        b
    }
    pub fn advance(delta: u8) -> Vec<u8> {
        assert!(delta < 64);
        vec![0x40 | delta]
    }
    pub fn undefined(reg: u8) -> Vec<u8> {
        vec![0x07, reg]
    }
    pub fn def_cfa_expression(expr: &[u8]) -> Vec<u8> {
        let mut b = vec![0x0f];
        uleb(expr.len() as u64, &mut b);
        b.extend_from_slice(expr);
        b
    }
    pub fn expression(reg: u8, expr: &[u8]) -> Vec<u8> {
        let mut b = vec![0x10, reg];
        uleb(expr.len() as u64, &mut b);
        b.extend_from_slice(expr);
        b
    }
    pub const REMEMBER: u8 = 0x0a;
    pub const RESTORE: u8 = 0x0b;
}

/// An `.eh_frame` section being assembled at address `svma`, and the FDEs it holds.
#[derive(Clone, Debug)]
pub struct EhFrame {
    pub svma: u64,
    pub bytes: Vec<u8>,
    /// (initial location, offset of the FDE)
    pub fdes: Vec<(u64, u32)>,
}

impl EhFrame {
    pub fn new(svma: u64) -> EhFrame {
        EhFrame {
            svma,
            bytes: Vec::new(),
            fdes: Vec::new(),
        }
    }

    fn entry(&mut self, body: &[u8]) -> u32 {
        let at = self.bytes.len() as u32;
        // the length field excludes itself; entries are padded to 8 bytes with nops
        let padded = (4 + body.len()).next_multiple_of(8) - 4;
        put32(&mut self.bytes, padded as u32);
        self.bytes.extend_from_slice(body);
        self.bytes.resize(at as usize + 4 + padded, 0); // DW_CFA_nop padding
        at
    }

    /// A CIE: version 1, "zR" (or "zRS" for a signal trampoline), code alignment 1, data
    /// alignment -8, return address register 16, FDE pointers pcrel|sdata4, and the usual
    /// initial rule (CFA = rsp + 8, return address at CFA - 8) unless `initial` is given.
    pub fn cie(&mut self, signal: bool, initial: Option<&[u8]>) -> u32 {
        let mut b = Vec::new();
        put32(&mut b, 0); // CIE id
        b.push(1);
        b.extend_from_slice(if signal { b"zRS\0" } else { b"zR\0" });
        b.push(1); // code alignment
        b.push(0x78); // data alignment -8
        b.push(16); // return address register
        b.push(1); // augmentation data length
        b.push(0x1b); // pcrel | sdata4
        match initial {
            Some(i) => b.extend_from_slice(i),
            None => {
                b.extend_from_slice(&op::def_cfa(7, 8));
                b.extend_from_slice(&op::offset(16, 1));
            }
        }
        self.entry(&b)
    }

    /// An FDE of `cie` for `start..start + len` with `instructions`.
    pub fn fde(&mut self, cie: u32, start: u64, len: u32, instructions: &[u8]) -> u32 {
        let at = self.bytes.len() as u32;
        let mut b = Vec::new();
        // the CIE pointer: from this field back to the CIE
        put32(&mut b, at + 4 - cie);
        let field = self.svma + u64::from(at) + 8;
        put32(&mut b, start.wrapping_sub(field) as u32);
        put32(&mut b, len);
        b.push(0); // augmentation data length
        b.extend_from_slice(instructions);
        let at = self.entry(&b);
        self.fdes.push((start, at));
        at
    }

    /// Appends the zero terminator.
    pub fn terminate(&mut self) {
        put32(&mut self.bytes, 0);
    }

    /// The matching `.eh_frame_hdr` at `hdr_svma`, its table sorted.
    pub fn hdr(&self, hdr_svma: u64) -> Vec<u8> {
        let mut fdes = self.fdes.clone();
        fdes.sort();
        hdr_table(hdr_svma, self.svma, &fdes, fdes.len() as u32)
    }
}

/// An `.eh_frame_hdr` with the given entries (initial location, FDE offset) and count.
pub fn hdr_table(hdr_svma: u64, eh_frame_svma: u64, fdes: &[(u64, u32)], count: u32) -> Vec<u8> {
    let mut b = vec![1, 0x1b, 0x03, 0x3b];
    put32(&mut b, eh_frame_svma.wrapping_sub(hdr_svma + 4) as u32);
    put32(&mut b, count);
    for (start, off) in fdes {
        put32(&mut b, start.wrapping_sub(hdr_svma) as u32);
        put32(
            &mut b,
            (eh_frame_svma + u64::from(*off)).wrapping_sub(hdr_svma) as u32,
        );
    }
    b
}

/// A module with one function per `(start, len, instructions)` in `.eh_frame` (CIE with
/// the usual initial rule), with `.eh_frame_hdr` when `hdr`.
pub fn module(functions: &[(u64, u32, Vec<u8>)], hdr: bool) -> Vec<u8> {
    let mut eh = EhFrame::new(0x3000);
    let cie = eh.cie(false, None);
    for (start, len, ins) in functions {
        eh.fde(cie, *start, *len, ins);
    }
    eh.terminate();
    let mut sections = vec![Section::new(".text", 0x1000, vec![0xcc; 0x1000])];
    if hdr {
        sections.push(Section::new(".eh_frame_hdr", 0x2000, eh.hdr(0x2000)));
    }
    sections.push(Section::new(".eh_frame", 0x3000, eh.bytes.clone()));
    elf(&sections, false)
}

/// A `.debug_frame` section being assembled: absolute addresses, CIE id 0xffffffff.
#[derive(Clone, Debug, Default)]
pub struct DebugFrame {
    pub bytes: Vec<u8>,
}

impl DebugFrame {
    fn entry(&mut self, body: &[u8]) -> u32 {
        let at = self.bytes.len() as u32;
        let padded = (4 + body.len()).next_multiple_of(8) - 4;
        put32(&mut self.bytes, padded as u32);
        self.bytes.extend_from_slice(body);
        self.bytes.resize(at as usize + 4 + padded, 0);
        at
    }

    /// A CIE with the usual initial rule (CFA = rsp + 8, return address at CFA - 8).
    pub fn cie(&mut self) -> u32 {
        let mut b = Vec::new();
        put32(&mut b, 0xffff_ffff);
        b.push(1);
        b.push(0); // no augmentation
        b.push(1);
        b.push(0x78);
        b.push(16);
        b.extend_from_slice(&op::def_cfa(7, 8));
        b.extend_from_slice(&op::offset(16, 1));
        self.entry(&b)
    }

    /// An FDE whose CIE pointer is `cie` (any offset: the tests point it anywhere).
    pub fn fde(&mut self, cie: u32, start: u64, len: u64, instructions: &[u8]) -> u32 {
        let mut b = Vec::new();
        put32(&mut b, cie);
        put64(&mut b, start);
        put64(&mut b, len);
        b.extend_from_slice(instructions);
        self.entry(&b)
    }
}

/// `data` without its section headers (e_shoff, e_shnum, e_shstrndx zeroed): what remains
/// is the program headers.
pub fn strip_section_headers(mut data: Vec<u8>) -> Vec<u8> {
    data[0x28..0x30].fill(0);
    data[0x3c..0x40].fill(0);
    data
}
