//! What the CPython fuzz targets check (`fuzz/fuzz_targets/python_memory.rs`,
//! `python_elf.rs`), shared with the regression test `python/tests/fuzz_inputs.rs`. The
//! recorder runs these decoders as root on what a target process and its files hold:
//! nothing may panic, hang, or allocate beyond the caps of `hotspot_python::limits`.
//!
//! A `python_memory` input:
//!
//! | bytes | field                                                               |
//! |-------|---------------------------------------------------------------------|
//! | 0     | the layout: 3.8 + (byte % 5), the table's versions                   |
//! | 1..9  | a frame's `instr` (u64 LE)                                          |
//! | 9..13 | a first line (u32 LE)                                               |
//! | 13..  | target memory at [`BASE`]: a code object, a string, a thread state, a frame chain and `_PyRuntime` all start there; the same bytes are a line table in each format |
//!
//! A `python_elf` input is an ELF file.

use hotspot_python::layout::{Layout, LineFormat};
use hotspot_python::limits::{MAX_COLD_PIECES, MAX_STRING_CHARS};
use hotspot_python::unicode::read_str;
use hotspot_python::{
    CodeCache, DetectOptions, Detection, LineTable, PyVersion, RegionMemory, TsdLayout,
    TypeAddresses, WalkDescription, detect_with, read_code,
};

/// Where the input's memory is mapped.
pub const BASE: u64 = 0x10_0000;

/// Header bytes of a `python_memory` input.
pub const HEADER: usize = 13;

/// glibc 2.36's thread-specific data layout.
const TSD: TsdLayout = TsdLayout {
    specific: 0x510,
    per_block: 32,
    blocks: 32,
    key_data_size: 16,
    key_data_data: 8,
    first_block: Some(0x310),
};

/// Every line table format on `bytes`: decoded ranges are sorted, non-empty and apart,
/// and `line_at` agrees with them.
fn check_line_tables(first_line: u32, bytes: &[u8], offsets: &[u32]) {
    for format in [
        LineFormat::Lnotab,
        LineFormat::Linetable310,
        LineFormat::Locations,
    ] {
        let Ok(t) = LineTable::decode(format, first_line, bytes) else {
            continue;
        };
        let r = t.ranges();
        for w in r.windows(2) {
            assert!(
                w[0].end <= w[1].start,
                "{format:?}: ranges overlap or are unsorted"
            );
        }
        assert!(
            r.iter().all(|x| x.start < x.end),
            "{format:?}: an empty range"
        );
        for &o in offsets {
            let want = r
                .iter()
                .find(|x| x.start <= o && o < x.end)
                .and_then(|x| x.line);
            assert_eq!(t.line_at(o), want, "{format:?} at {o}");
        }
    }
}

/// The `python_memory` check.
pub fn check_memory(input: &[u8]) {
    if input.len() < HEADER {
        return;
    }
    let minor = 8 + input[0] % 5;
    let version = PyVersion::minor(3, minor);
    let layout = Layout::for_version(version).expect("3.8-3.12 are in the table");
    let instr = u64::from_le_bytes(input[1..9].try_into().unwrap());
    let first_line = u32::from_le_bytes(input[9..13].try_into().unwrap());
    let image = &input[HEADER..];
    let mut mem = RegionMemory::new();
    mem.add(BASE, image.to_vec());

    let offsets = [0, 2, (instr as u32) & 0xfffe, u32::MAX - 1];
    check_line_tables(first_line, image, &offsets);

    for types in [
        TypeAddresses::default(),
        TypeAddresses {
            code: Some(BASE),
            str: Some(BASE),
            bytes: Some(BASE),
        },
    ] {
        for at in [BASE, BASE + 8, BASE + 64] {
            if let Ok(code) = read_code(&mem, &layout, &types, at) {
                assert!(code.qualname.chars().count() as u64 <= MAX_STRING_CHARS);
                assert!(code.filename.chars().count() as u64 <= MAX_STRING_CHARS);
                let _ = code.line_at(instr);
                let _ = code.position(instr);
            }
        }
        let mut cache = CodeCache::new(layout, types);
        let a = cache.get(&mem, BASE);
        let b = cache.get(&mem, BASE);
        assert_eq!(a, b, "the cache answers as the decoder did");
    }
    for unicode in [layout.unicode] {
        if let Ok(s) = read_str(&mem, &unicode, layout.ob_type, None, BASE) {
            assert!(s.chars().count() as u64 <= MAX_STRING_CHARS);
        }
    }

    let walk = WalkDescription::new(version, &layout);
    assert_eq!(WalkDescription::from_bytes(&walk.to_bytes()), Some(walk));
    let _ = walk.thread_state(&mem, &TSD, BASE, BASE);
    let _ = walk.thread_state(&mem, &TSD.without_first_block(), BASE, BASE + 16);
    let _ = walk.state_is_threads(&mem, BASE, BASE);
    if let Ok(top) = walk.current_frame(&mem, BASE) {
        let w = walk.walk(&mem, top, 64);
        assert!(w.frames.len() <= 64);
    }
    let w = walk.walk(&mem, BASE, 16);
    assert!(w.frames.len() <= 16);
}

/// The `python_elf` check.
pub fn check_elf(input: &[u8]) {
    let _ = TsdLayout::from_elf(input);
    // What the recorder leaves unread of the file: sorted, apart, inside it.
    let len = input.len() as u64;
    let skipped = hotspot_python::elf::debug_ranges(input, len);
    assert!(skipped.iter().all(|r| r.start < r.end && r.end <= len));
    assert!(skipped.windows(2).all(|w| w[0].end < w[1].start));
    let _ = hotspot_python::debug_offsets::DebugOffsets::parse(input);
    for (name, options) in [
        (None, DetectOptions::default()),
        (
            Some("libpython3.12.so.1.0"),
            DetectOptions {
                cold_from_symbols: false,
                version_from_names: true,
            },
        ),
    ] {
        let Ok(Detection::Supported(i)) = detect_with(input, name, options) else {
            continue;
        };
        // What a supported verdict promises.
        assert!((8..=13).contains(&i.version.minor), "{}", i.version);
        assert!(i.eval_loop.cold.len() <= MAX_COLD_PIECES);
        assert!(i.eval_loop.cold.iter().all(|r| !r.is_empty()));
        let walk = i.walk();
        assert!(usize::from(walk.frame_size) >= 16);
        assert_eq!(WalkDescription::from_bytes(&walk.to_bytes()), Some(walk));
    }
}

/// A `python_memory` input of the given minor version (3.8–3.12) whose memory holds a
/// code object `f` in `a.py` (first line 5, 8 bytes of bytecode, a line table for them)
/// with its strings and table, a frame at [`BASE`] naming it, and the frame's `instr`
/// on its second instruction: a seed from which mutations reach every decoder.
pub fn seed_memory(minor: u8) -> Vec<u8> {
    use hotspot_python::layout::{CodeSize, InstrField};
    let layout = Layout::for_version(PyVersion::minor(3, minor)).expect("3.8-3.12");
    let mut img = vec![0u8; 0x400];
    let mut put = |at: usize, v: &[u8]| img[at..at + v.len()].copy_from_slice(v);
    let c = layout.code;
    let u = layout.unicode;
    // Strings at 0x200 ("f") and 0x280 ("a.py"), the table at 0x300, co_code at 0x380.
    for (at, s) in [(0x200usize, "f"), (0x280, "a.py")] {
        put(at + usize::from(u.length), &(s.len() as u64).to_le_bytes());
        let state: u32 = (1 << 2) | (1 << 5) | (1 << 6) | u.ready_bit.map_or(0, |b| 1 << b);
        put(at + usize::from(u.state), &state.to_le_bytes());
        put(at + usize::from(u.ascii_data), s.as_bytes());
    }
    let table: &[u8] = match c.line_format {
        LineFormat::Lnotab => &[2, 1, 4, 1],
        LineFormat::Linetable310 => &[2, 0, 4, 1, 2, 1],
        LineFormat::Locations => &[
            0x80 | (13 << 3),
            0,
            0x80 | (11 << 3) | 2,
            1,
            2,
            0x80 | (15 << 3),
        ],
    };
    put(
        0x300 + usize::from(layout.bytes.size),
        &(table.len() as u64).to_le_bytes(),
    );
    put(0x300 + usize::from(layout.bytes.data), table);
    put(0x380 + usize::from(layout.bytes.size), &8u64.to_le_bytes());
    // The code object at 0x100.
    let code = 0x100usize;
    put(code + usize::from(c.name), &(BASE + 0x200).to_le_bytes());
    if let Some(q) = c.qualname {
        put(code + usize::from(q), &(BASE + 0x200).to_le_bytes());
    }
    put(
        code + usize::from(c.filename),
        &(BASE + 0x280).to_le_bytes(),
    );
    put(
        code + usize::from(c.line_table),
        &(BASE + 0x300).to_le_bytes(),
    );
    put(code + usize::from(c.first_line), &5u32.to_le_bytes());
    match c.size {
        CodeSize::BytesObject { co_code } => {
            put(code + usize::from(co_code), &(BASE + 0x380).to_le_bytes())
        }
        CodeSize::Units { ob_size } => put(code + usize::from(ob_size), &4u64.to_le_bytes()),
    }
    // The frame at 0 naming it, on its second instruction.
    let f = layout.frame;
    put(usize::from(f.code), &(BASE + code as u64).to_le_bytes());
    let instr = match f.instr_field {
        InstrField::Lasti { scale } => 2 / u64::from(scale),
        InstrField::Pointer => BASE + code as u64 + u64::from(c.bytecode.unwrap_or(0)) + 2,
    };
    let mut input = vec![minor - 8];
    input.extend_from_slice(&instr.to_le_bytes());
    input.extend_from_slice(&5u32.to_le_bytes());
    input.extend_from_slice(&img);
    input
}
