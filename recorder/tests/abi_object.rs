//! The committed BPF object agrees with the layout the decoder was generated from: every
//! struct `recorder/build.rs` generated from `ebpf/sample.h` has, in the BTF of
//! `ebpf/hotspot.bpf.o` (which describes every struct the programs use), the same size
//! and the same fields in the same order at the same offsets with the same sizes. A header
//! edited without rebuilding the object fails here, without root or clang (`tools/check-bpf`
//! says the same with clang).

use hotspot_recorder::bpf::abi::STRUCTS;
use object::{Object, ObjectSection};

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// One BTF type, as much of it as sizes and struct members need.
#[derive(Debug, Default, Clone)]
struct Type {
    kind: u32,
    name: String,
    /// Size (int, struct, union, enum, float) or referenced type id (the others).
    size_or_type: u32,
    /// Struct members: name, type id, bit offset.
    members: Vec<(String, u32, u32)>,
    /// Array: element type id and count.
    array: Option<(u32, u32)>,
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

/// The types of a `.BTF` section, by id (0 is void).
fn parse_btf(btf: &[u8]) -> Vec<Type> {
    assert_eq!(u16::from_ne_bytes([btf[0], btf[1]]), 0xeb9f, "BTF magic");
    let (hdr_len, type_off, type_len, str_off, str_len) = (
        word(btf, 4) as usize,
        word(btf, 8) as usize,
        word(btf, 12) as usize,
        word(btf, 16) as usize,
        word(btf, 20) as usize,
    );
    let types = &btf[hdr_len + type_off..hdr_len + type_off + type_len];
    let strings = &btf[hdr_len + str_off..hdr_len + str_off + str_len];
    let name = |off: u32| {
        let s = &strings[off as usize..];
        String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).expect("NUL")]).into_owned()
    };
    let mut out = vec![Type::default()];
    let mut at = 0;
    while at < types.len() {
        let info = word(types, at + 4);
        let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
        let mut t = Type {
            kind,
            name: name(word(types, at)),
            size_or_type: word(types, at + 8),
            ..Type::default()
        };
        at += 12;
        let extra = match kind {
            KIND_INT | KIND_VAR | KIND_DECL_TAG => 4,
            KIND_ARRAY => {
                t.array = Some((word(types, at), word(types, at + 8)));
                12
            }
            KIND_STRUCT | KIND_UNION => {
                let bitfields = info >> 31 != 0;
                for m in types[at..at + 12 * vlen].chunks_exact(12) {
                    let off = word(m, 8);
                    let off = if bitfields { off & 0x00ff_ffff } else { off };
                    t.members.push((name(word(m, 0)), word(m, 4), off));
                }
                12 * vlen
            }
            KIND_DATASEC | KIND_ENUM64 => 12 * vlen,
            KIND_ENUM | KIND_FUNC_PROTO => 8 * vlen,
            _ => 0,
        };
        at += extra;
        out.push(t);
    }
    out
}

/// The size in bytes of type `id`.
fn size_of_type(types: &[Type], id: u32) -> usize {
    let t = &types[id as usize];
    match t.kind {
        KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_FLOAT => {
            t.size_or_type as usize
        }
        KIND_PTR => 8,
        KIND_ARRAY => {
            let (elem, n) = t.array.expect("array");
            size_of_type(types, elem) * n as usize
        }
        KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
            size_of_type(types, t.size_or_type)
        }
        other => panic!("type {id} of kind {other} has no size"),
    }
}

/// Every difference between the generated structs and the object's BTF, one per line.
fn differences(object_bytes: &[u8]) -> Vec<String> {
    let file = object::File::parse(object_bytes).expect("an ELF object");
    let btf = file
        .section_by_name(".BTF")
        .expect("a .BTF section")
        .data()
        .expect("its bytes");
    let types = parse_btf(btf);
    let mut found = Vec::new();
    for s in STRUCTS {
        let (c_name, size) = (s.c_name, s.size);
        let Some(t) = types
            .iter()
            .find(|t| t.kind == KIND_STRUCT && t.name == c_name)
        else {
            found.push(format!("struct {c_name}: not in the object's BTF"));
            continue;
        };
        if t.size_or_type as usize != size {
            found.push(format!(
                "struct {c_name}: {} bytes in the object, {size} generated",
                t.size_or_type
            ));
        }
        let object_fields: Vec<(String, usize, usize)> = t
            .members
            .iter()
            .map(|(name, ty, bits)| (name.clone(), *bits as usize / 8, size_of_type(&types, *ty)))
            .collect();
        let generated: Vec<(String, usize, usize)> = s
            .fields
            .iter()
            .map(|&(name, off, size)| (name.to_string(), off, size))
            .collect();
        if object_fields != generated {
            found.push(format!(
                "struct {c_name}: fields (name, offset, size) in the object {object_fields:?}, generated {generated:?}"
            ));
        }
    }
    found
}

fn committed_object() -> Vec<u8> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../ebpf/hotspot.bpf.o");
    std::fs::read(path).expect("ebpf/hotspot.bpf.o")
}

#[test]
fn the_committed_object_has_the_generated_layout() {
    assert!(
        STRUCTS.len() >= 5,
        "the generated structs: {:?}",
        STRUCTS.iter().map(|s| s.c_name).collect::<Vec<_>>()
    );
    let found = differences(&committed_object());
    assert!(
        found.is_empty(),
        "ebpf/hotspot.bpf.o disagrees with ebpf/sample.h (rebuild it with tools/build-bpf):\n{}",
        found.join("\n")
    );
}

/// The check sees a change of one field: a field's name, and its type, patched in the
/// object's BTF (the string table and the member's type id).
#[test]
fn the_check_finds_a_field_out_of_step() {
    let mut obj = committed_object();
    let (start, len) = object::File::parse(&*obj)
        .expect("an ELF object")
        .section_by_name(".BTF")
        .and_then(|s| s.file_range())
        .expect("a .BTF section in the file");
    let btf = &mut obj[start as usize..(start + len) as usize];
    // Rename `user_depth` (hs_header) in the BTF's string table, same length.
    let at = btf
        .windows(11)
        .position(|w| w == b"user_depth\0")
        .expect("the name in the BTF");
    btf[at..at + 10].copy_from_slice(b"user_delta");
    let found = differences(&obj);
    assert!(
        found.len() == 1
            && found[0].starts_with("struct hs_header:")
            && found[0].contains("user_delta"),
        "{found:?}"
    );
}
