//! Every struct offset hotspot uses, against the DWARF of pyenv's builds: the table of
//! 3.8–3.12 and, for 3.13, the layout read from the interpreter's own `_Py_DebugOffsets`
//! (whose field positions are checked against the DWARF of `_Py_DebugOffsets` too). The
//! layouts checked are the ones [`detect`] returns for each library, so a wrong table
//! entry or a misread `_Py_DebugOffsets` fails here.

#![allow(clippy::unwrap_used)]

mod common;

use hotspot_python::layout::{CodeSize, EntryRule, FRAME_OWNED_BY_CSTACK, InstrField, LineFormat};
use hotspot_python::{Detection, Layout, detect};

use common::dwarf::Dwarf;

fn layout_of(py: &common::Python) -> Layout {
    let data = std::fs::read(&py.elf).unwrap();
    match detect(&data, Some(&py.elf.to_string_lossy())).unwrap() {
        Detection::Supported(i) => i.layout,
        other => panic!("{}: {other:?}", py.label),
    }
}

#[test]
fn every_offset_matches_the_dwarf() {
    let pythons = common::pyenv(&[(3, 8), (3, 9), (3, 10), (3, 11), (3, 12), (3, 13)]);
    for py in &pythons {
        let l = layout_of(py);
        let d = Dwarf::load(&py.elf);
        let minor = py.minor.1;
        let at = |ty: &str, path: &str| d.offset_of(ty, path);
        let ctx = &py.label;

        // The key: `_PyRuntime.(gilstate.)autoTSSkey`, the key at +4 of a Py_tss_t.
        let tss = if minor <= 11 {
            "gilstate.autoTSSkey"
        } else {
            "autoTSSkey"
        };
        assert_eq!(
            u64::from(l.runtime_tss),
            at("pyruntimestate", tss),
            "{ctx}: {tss}"
        );
        assert_eq!(at("_Py_tss_t", "_is_initialized"), 0, "{ctx}");
        assert_eq!(at("_Py_tss_t", "_key"), 4, "{ctx}");

        // The thread state.
        let frame_field = match minor {
            8..=10 => "frame",
            11 | 12 => "cframe",
            _ => "current_frame",
        };
        assert_eq!(
            u64::from(l.thread.frame),
            at("_ts", frame_field),
            "{ctx}: tstate {frame_field}"
        );
        assert_eq!(
            u64::from(l.thread.thread_id),
            at("_ts", "thread_id"),
            "{ctx}"
        );
        match minor {
            11 | 12 => assert_eq!(
                l.thread.cframe_frame.map(u64::from),
                Some(at("_PyCFrame", "current_frame")),
                "{ctx}"
            ),
            _ => assert_eq!(l.thread.cframe_frame, None, "{ctx}"),
        }

        // The frame.
        let f = &l.frame;
        if minor <= 10 {
            assert_eq!(u64::from(f.previous), at("_frame", "f_back"), "{ctx}");
            assert_eq!(u64::from(f.code), at("_frame", "f_code"), "{ctx}");
            assert_eq!(u64::from(f.instr), at("_frame", "f_lasti"), "{ctx}");
            let scale = if minor == 10 { 2 } else { 1 };
            assert_eq!(f.instr_field, InstrField::Lasti { scale }, "{ctx}");
            assert_eq!(f.entry, EntryRule::EveryFrame, "{ctx}");
        } else {
            let fr = "_PyInterpreterFrame";
            assert_eq!(u64::from(f.previous), at(fr, "previous"), "{ctx}");
            let code = if minor >= 13 {
                "f_executable"
            } else {
                "f_code"
            };
            assert_eq!(u64::from(f.code), at(fr, code), "{ctx}");
            let instr = if minor >= 13 {
                "instr_ptr"
            } else {
                "prev_instr"
            };
            assert_eq!(u64::from(f.instr), at(fr, instr), "{ctx}");
            assert_eq!(f.instr_field, InstrField::Pointer, "{ctx}");
            match minor {
                11 => assert_eq!(
                    f.entry,
                    EntryRule::FlagByte {
                        offset: at(fr, "is_entry") as u16
                    },
                    "{ctx}"
                ),
                _ => {
                    assert_eq!(
                        d.enumerator("FRAME_OWNED_BY_CSTACK"),
                        i64::from(FRAME_OWNED_BY_CSTACK),
                        "{ctx}"
                    );
                    assert_eq!(
                        f.entry,
                        EntryRule::ShimOwner {
                            offset: at(fr, "owner") as u16,
                            value: FRAME_OWNED_BY_CSTACK
                        },
                        "{ctx}"
                    );
                }
            }
        }

        // The code object.
        let c = &l.code;
        let co = "PyCodeObject";
        assert_eq!(u64::from(c.filename), at(co, "co_filename"), "{ctx}");
        assert_eq!(u64::from(c.name), at(co, "co_name"), "{ctx}");
        assert_eq!(u64::from(c.first_line), at(co, "co_firstlineno"), "{ctx}");
        assert_eq!(u64::from(c.arg_count), at(co, "co_argcount"), "{ctx}");
        let (table, format) = match minor {
            8 | 9 => ("co_lnotab", LineFormat::Lnotab),
            10 => ("co_linetable", LineFormat::Linetable310),
            _ => ("co_linetable", LineFormat::Locations),
        };
        assert_eq!(u64::from(c.line_table), at(co, table), "{ctx}: {table}");
        assert_eq!(c.line_format, format, "{ctx}");
        if minor <= 10 {
            assert_eq!(c.qualname, None, "{ctx}");
            assert_eq!(
                c.size,
                CodeSize::BytesObject {
                    co_code: at(co, "co_code") as u16
                },
                "{ctx}"
            );
            assert_eq!(c.bytecode, None, "{ctx}");
        } else {
            assert_eq!(
                c.qualname.map(u64::from),
                Some(at(co, "co_qualname")),
                "{ctx}"
            );
            assert_eq!(
                c.size,
                CodeSize::Units {
                    ob_size: at(co, "ob_base.ob_size") as u16
                },
                "{ctx}"
            );
            assert_eq!(
                c.bytecode.map(u64::from),
                Some(at(co, "co_code_adaptive")),
                "{ctx}"
            );
        }

        // Objects, strings, bytes.
        assert_eq!(u64::from(l.ob_type), at("_object", "ob_type"), "{ctx}");
        let u = &l.unicode;
        assert_eq!(u64::from(u.length), at("PyASCIIObject", "length"), "{ctx}");
        let state = at("PyASCIIObject", "state");
        assert_eq!(u64::from(u.state), state, "{ctx}");
        let bit =
            |name: &str| d.bit_offset_of("PyASCIIObject", &format!("state.{name}")) - 8 * state;
        assert_eq!(
            bit("kind"),
            2,
            "{ctx}: the decoder reads kind from bits 2-4"
        );
        assert_eq!(bit("compact"), 5, "{ctx}");
        assert_eq!(bit("ascii"), 6, "{ctx}");
        match u.ready_bit {
            Some(b) => assert_eq!(bit("ready"), u64::from(b), "{ctx}"),
            None => assert!(minor >= 12, "{ctx}: `ready` went in 3.12"),
        }
        assert_eq!(u64::from(u.ascii_data), d.size_of("PyASCIIObject"), "{ctx}");
        assert_eq!(
            u64::from(u.compact_data),
            d.size_of("PyCompactUnicodeObject"),
            "{ctx}"
        );
        assert_eq!(
            u64::from(l.bytes.size),
            at("PyBytesObject", "ob_base.ob_size"),
            "{ctx}"
        );
        assert_eq!(
            u64::from(l.bytes.data),
            at("PyBytesObject", "ob_sval"),
            "{ctx}"
        );

        // 3.13: where the parser reads each field of `_Py_DebugOffsets`.
        if minor >= 13 {
            let fields = hotspot_python::debug_offsets::FIELDS.iter();
            for (name, position) in fields.chain(&hotspot_python::debug_offsets::SIZES) {
                assert_eq!(
                    at("_Py_DebugOffsets", name) as usize,
                    *position,
                    "{ctx}: _Py_DebugOffsets.{name}"
                );
            }
            assert_eq!(
                d.size_of("_Py_DebugOffsets") as usize,
                hotspot_python::debug_offsets::SIZE_3_13,
                "{ctx}"
            );
        }
        println!("{}: every offset matches the DWARF", py.label);
    }
}
