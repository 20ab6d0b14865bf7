//! Takes what unwinding needs out of an ELF file: CFI sections, PLT ranges, bases.
//!
//! Everything is copied (within [`MAX_SECTION_BYTES`]), so the file's bytes may be
//! dropped once the module is built.

use std::io::Read;
use std::ops::Range;

use object::elf::{EM_X86_64, PT_GNU_EH_FRAME, PT_LOAD};
use object::read::elf::{ElfFile64, ProgramHeader};
use object::{CompressionFormat, LittleEndian, Object, ObjectSection, ReadRef, SectionKind};

use crate::UnwindError;
use crate::limits::MAX_SECTION_BYTES;

/// A section's bytes and the address they are mapped at.
#[derive(Debug, Default)]
pub(crate) struct Copied {
    pub(crate) svma: u64,
    pub(crate) data: Vec<u8>,
}

/// The parts of one ELF file the unwinder uses.
#[derive(Debug, Default)]
pub(crate) struct Sections {
    pub(crate) eh_frame: Option<Copied>,
    pub(crate) eh_frame_hdr: Option<Copied>,
    pub(crate) debug_frame: Option<Copied>,
    /// `.plt`, `.plt.sec`, `.plt.got`: the stubs that jump with nothing pushed.
    pub(crate) plt: Vec<Range<u64>>,
    pub(crate) text: Option<u64>,
    pub(crate) got: Option<u64>,
    /// The ELF entry point (`e_entry`), where the first thread starts: its first frame.
    pub(crate) entry: Option<u64>,
}

fn parse<'d, R: ReadRef<'d>>(data: R) -> Result<ElfFile64<'d, LittleEndian, R>, UnwindError> {
    let file = ElfFile64::<LittleEndian, R>::parse(data)?;
    let machine = file.elf_header().e_machine.get(LittleEndian);
    if machine != EM_X86_64 {
        return Err(UnwindError::Architecture { machine: machine.0 });
    }
    Ok(file)
}

fn check_size(section: &'static str, size: u64) -> Result<usize, UnwindError> {
    usize::try_from(size)
        .ok()
        .filter(|&n| n <= MAX_SECTION_BYTES)
        .ok_or(UnwindError::TooLarge {
            section,
            size,
            cap: MAX_SECTION_BYTES,
        })
}

/// The bytes of section `name` (decompressed if need be), or `None` when the file has no
/// such section or it occupies no bytes in this file (`SHT_NOBITS` in a debug file).
fn copy<'d, R: ReadRef<'d>>(
    file: &ElfFile64<'d, LittleEndian, R>,
    name: &'static str,
) -> Result<Option<Copied>, UnwindError> {
    let Some(section) = file.section_by_name(name) else {
        return Ok(None);
    };
    if section.kind() == SectionKind::UninitializedData {
        return Ok(None);
    }
    let compressed = section.compressed_data()?;
    let data = match compressed.format {
        CompressionFormat::None => {
            check_size(name, compressed.data.len() as u64)?;
            compressed.data.to_vec()
        }
        format => {
            let size = check_size(name, compressed.uncompressed_size)?;
            decompress(name, format, compressed.data, size)?
        }
    };
    if data.is_empty() {
        return Ok(None);
    }
    Ok(Some(Copied {
        svma: section.address(),
        data,
    }))
}

/// Decompresses at most `size` bytes (the size the section header claims, already
/// checked against the cap): the output grows with what really decompresses, so a
/// lying header costs no more than the data behind it.
fn decompress(
    section: &'static str,
    format: CompressionFormat,
    data: &[u8],
    size: usize,
) -> Result<Vec<u8>, UnwindError> {
    let fail = |reason: String| UnwindError::Decompress { section, reason };
    let mut out = Vec::new();
    let limit = size as u64;
    match format {
        CompressionFormat::Zlib => flate2::read::ZlibDecoder::new(data)
            .take(limit)
            .read_to_end(&mut out)
            .map_err(|e| fail(e.to_string()))?,
        CompressionFormat::Zstandard => zstd::stream::read::Decoder::new(data)
            .map_err(|e| fail(e.to_string()))?
            .take(limit)
            .read_to_end(&mut out)
            .map_err(|e| fail(e.to_string()))?,
        other => return Err(fail(format!("unsupported format {other:?}"))),
    };
    if out.len() != size {
        return Err(fail(format!("{} bytes, header says {size}", out.len())));
    }
    Ok(out)
}

fn address_range<'d, R: ReadRef<'d>>(
    file: &ElfFile64<'d, LittleEndian, R>,
    name: &str,
) -> Option<Range<u64>> {
    let section = file.section_by_name(name)?;
    let start = section.address();
    let end = start.checked_add(section.size())?;
    (start < end).then_some(start..end)
}

/// Everything [`crate::ModuleUnwind::from_elf`] keeps.
pub(crate) fn read_module<'d, R: ReadRef<'d>>(data: R) -> Result<Sections, UnwindError> {
    let file = parse(data)?;
    let mut sections = Sections {
        eh_frame: copy(&file, ".eh_frame")?,
        eh_frame_hdr: copy(&file, ".eh_frame_hdr")?,
        debug_frame: copy(&file, ".debug_frame")?,
        plt: [".plt", ".plt.sec", ".plt.got"]
            .iter()
            .filter_map(|name| address_range(&file, name))
            .collect(),
        text: file.section_by_name(".text").map(|s| s.address()),
        got: file.section_by_name(".got").map(|s| s.address()),
        entry: Some(file.entry()).filter(|&e| e != 0),
    };
    if sections.eh_frame.is_none() && sections.eh_frame_hdr.is_none() {
        from_program_headers(&file, data, &mut sections)?;
    }
    Ok(sections)
}

/// The `.debug_frame` of a separate debug file, if it has one.
pub(crate) fn read_debug_frame<'d, R: ReadRef<'d>>(data: R) -> Result<Option<Copied>, UnwindError> {
    copy(&parse(data)?, ".debug_frame")
}

/// A file without section headers (stripped of them, or built that way) still has
/// `PT_GNU_EH_FRAME`, the `.eh_frame_hdr` the runtime unwinder uses: take it, and the
/// `.eh_frame` it points to up to the end of the loaded segment holding it (the CFI
/// ends at its zero terminator before that).
fn from_program_headers<'d, R: ReadRef<'d>>(
    file: &ElfFile64<'d, LittleEndian, R>,
    data: R,
    sections: &mut Sections,
) -> Result<(), UnwindError> {
    let endian = LittleEndian;
    let headers = file.elf_program_headers();
    let Some(hdr) = headers.iter().find(|p| p.p_type(endian) == PT_GNU_EH_FRAME) else {
        return Ok(());
    };
    let Ok(hdr_bytes) = hdr.data(endian, data) else {
        return Ok(());
    };
    check_size(".eh_frame_hdr", hdr_bytes.len() as u64)?;
    let hdr_svma = hdr.p_vaddr(endian);
    // version 1, eh_frame_ptr encoded pcrel|sdata4: the only form linkers write.
    let Some(eh_frame_svma) = (match hdr_bytes {
        [1, 0x1b, _, _, a, b, c, d, ..] => {
            let rel = i64::from(i32::from_le_bytes([*a, *b, *c, *d]));
            hdr_svma.checked_add(4).map(|p| p.wrapping_add_signed(rel))
        }
        _ => None,
    }) else {
        return Ok(());
    };
    sections.eh_frame_hdr = Some(Copied {
        svma: hdr_svma,
        data: hdr_bytes.to_vec(),
    });
    for load in headers.iter().filter(|p| p.p_type(endian) == PT_LOAD) {
        let start = load.p_vaddr(endian);
        let Ok(bytes) = load.data(endian, data) else {
            continue;
        };
        let Some(skip) = eh_frame_svma.checked_sub(start) else {
            continue;
        };
        let Some(rest) = usize::try_from(skip).ok().and_then(|s| bytes.get(s..)) else {
            continue;
        };
        if rest.is_empty() {
            continue;
        }
        let rest = &rest[..cfi_extent(rest).min(MAX_SECTION_BYTES)];
        sections.eh_frame = Some(Copied {
            svma: eh_frame_svma,
            data: rest.to_vec(),
        });
        break;
    }
    Ok(())
}

/// The length of the CFI entries at the start of `bytes`, up to and with the zero
/// terminator (or all of `bytes` when an entry runs past them). One step per entry, each
/// at least 4 bytes: bounded by the length.
fn cfi_extent(bytes: &[u8]) -> usize {
    let word = |at: usize, n: usize| -> Option<u64> {
        let b = bytes.get(at..at.checked_add(n)?)?;
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(b);
        Some(u64::from_le_bytes(v))
    };
    let mut at = 0usize;
    loop {
        let (len, header) = match word(at, 4) {
            None => return bytes.len(),
            Some(0) => return at + 4,
            Some(0xffff_ffff) => match word(at + 4, 8) {
                None => return bytes.len(),
                Some(len) => (len, 12),
            },
            Some(len) => (len, 4),
        };
        match usize::try_from(len)
            .ok()
            .and_then(|len| at.checked_add(header)?.checked_add(len))
        {
            Some(next) if next <= bytes.len() => at = next,
            _ => return bytes.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cfi_extent_stops_at_the_terminator() {
        let mut b = Vec::new();
        b.extend_from_slice(&8u32.to_le_bytes());
        b.extend_from_slice(&[0; 8]);
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&[0xaa; 100]);
        assert_eq!(cfi_extent(&b), 16);
        assert_eq!(cfi_extent(&b[..10]), 10);
        let lying = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
        ];
        assert_eq!(cfi_extent(&lying), lying.len());
        assert_eq!(cfi_extent(&[]), 0);
    }
}
