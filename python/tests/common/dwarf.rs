//! The test oracle for struct offsets: a build's own DWARF, read with gimli. Structs and
//! typedefs are found by name among the top-level entries of every unit; member paths
//! (`gilstate.autoTSSkey`) follow member types through typedefs and qualifiers. Sections
//! compressed with zlib (distribution debug files) are inflated.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use gimli::{AttributeValue, DebugInfoOffset, EndianSlice, RunTimeEndian, UnitOffset};
use object::{Object, ObjectSection};

type R = EndianSlice<'static, RunTimeEndian>;

/// A type definition: its unit and its entry.
#[derive(Debug, Clone, Copy)]
struct Def {
    unit: DebugInfoOffset,
    entry: UnitOffset,
}

pub struct Dwarf {
    dwarf: gimli::Dwarf<R>,
    structs: HashMap<String, Def>,
    typedefs: HashMap<String, Def>,
    enumerators: HashMap<String, i64>,
    units: std::cell::RefCell<HashMap<DebugInfoOffset, std::rc::Rc<gimli::Unit<R>>>>,
}

/// A section's bytes, inflated when `SHF_COMPRESSED` (zlib); leaked, as the file is:
/// tests read a few files once.
fn section(file: &object::File<'static>, bytes: &'static [u8], name: &str) -> &'static [u8] {
    let Some(s) = file.section_by_name(name) else {
        return &[];
    };
    let range = s.compressed_file_range().unwrap();
    let raw = &bytes[range.offset as usize..(range.offset + range.compressed_size) as usize];
    match range.format {
        object::CompressionFormat::None => raw,
        object::CompressionFormat::Zlib => {
            let mut out = Vec::with_capacity(range.uncompressed_size as usize);
            flate2::read::ZlibDecoder::new(raw)
                .read_to_end(&mut out)
                .unwrap();
            Box::leak(out.into_boxed_slice())
        }
        other => panic!("{name}: compressed with {other:?}"),
    }
}

impl Dwarf {
    pub fn load(path: &Path) -> Dwarf {
        let bytes: &'static [u8] = Box::leak(std::fs::read(path).unwrap().into_boxed_slice());
        let file = object::File::parse(bytes).unwrap();
        let dwarf = gimli::Dwarf::load(|id| -> Result<R, gimli::Error> {
            Ok(EndianSlice::new(
                section(&file, bytes, id.name()),
                RunTimeEndian::Little,
            ))
        })
        .unwrap();
        let mut d = Dwarf {
            dwarf,
            structs: HashMap::new(),
            typedefs: HashMap::new(),
            enumerators: HashMap::new(),
            units: Default::default(),
        };
        d.index();
        assert!(
            !d.structs.is_empty(),
            "{}: no DWARF structs",
            path.display()
        );
        d
    }

    fn index(&mut self) {
        let mut headers = self.dwarf.units();
        while let Some(header) = headers.next().unwrap() {
            let unit_offset = DebugInfoOffset(header.offset().0);
            let unit = self.dwarf.unit(header).unwrap();
            let mut tree = unit.entries_tree(None).unwrap();
            let root = tree.root().unwrap();
            let mut children = root.children();
            while let Some(child) = children.next().unwrap() {
                let e = child.entry();
                let tag = e.tag();
                if tag == gimli::DW_TAG_enumeration_type {
                    let mut items = child.children();
                    while let Some(item) = items.next().unwrap() {
                        let ie = item.entry();
                        let (Some(name), Some(value)) = (
                            ie.attr_value(gimli::DW_AT_name),
                            ie.attr_value(gimli::DW_AT_const_value),
                        ) else {
                            continue;
                        };
                        let name = self.string(&unit, name);
                        let value = value
                            .sdata_value()
                            .or(value.udata_value().map(|v| v as i64));
                        if let Some(v) = value {
                            self.enumerators.entry(name).or_insert(v);
                        }
                    }
                    continue;
                }
                let map = match tag {
                    gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type => {
                        if e.attr_value(gimli::DW_AT_declaration).is_some()
                            || e.attr_value(gimli::DW_AT_byte_size).is_none()
                        {
                            continue;
                        }
                        &mut self.structs
                    }
                    gimli::DW_TAG_typedef => &mut self.typedefs,
                    _ => continue,
                };
                let Some(name) = e.attr_value(gimli::DW_AT_name) else {
                    continue;
                };
                let name = self
                    .dwarf
                    .attr_string(&unit, name)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                map.entry(name).or_insert(Def {
                    unit: unit_offset,
                    entry: e.offset(),
                });
            }
        }
    }

    fn string(&self, unit: &gimli::Unit<R>, v: AttributeValue<R>) -> String {
        self.dwarf
            .attr_string(unit, v)
            .unwrap()
            .to_string_lossy()
            .into_owned()
    }

    fn unit(&self, offset: DebugInfoOffset) -> std::rc::Rc<gimli::Unit<R>> {
        self.units
            .borrow_mut()
            .entry(offset)
            .or_insert_with(|| {
                let header = self.dwarf.debug_info.header_from_offset(offset).unwrap();
                std::rc::Rc::new(self.dwarf.unit(header).unwrap())
            })
            .clone()
    }

    /// The struct a type name stands for (a struct tag or a typedef of one), following
    /// typedefs and qualifiers.
    fn resolve_name(&self, name: &str) -> Def {
        if let Some(d) = self.structs.get(name) {
            return *d;
        }
        let d = *self
            .typedefs
            .get(name)
            .unwrap_or_else(|| panic!("no struct or typedef {name} in the DWARF"));
        self.strip(d)
    }

    /// Follows typedefs and qualifiers from `d` to the type they name; a declaration is
    /// replaced by the definition of the same name.
    fn strip(&self, mut d: Def) -> Def {
        loop {
            let unit = self.unit(d.unit);
            let e = unit.entry(d.entry).unwrap();
            match e.tag() {
                gimli::DW_TAG_typedef
                | gimli::DW_TAG_const_type
                | gimli::DW_TAG_volatile_type
                | gimli::DW_TAG_atomic_type => {
                    let Some(AttributeValue::UnitRef(t)) = e.attr_value(gimli::DW_AT_type) else {
                        panic!("a typedef without a type");
                    };
                    d.entry = t;
                }
                gimli::DW_TAG_structure_type | gimli::DW_TAG_union_type
                    if e.attr_value(gimli::DW_AT_declaration).is_some() =>
                {
                    let name = self.string(&unit, e.attr_value(gimli::DW_AT_name).unwrap());
                    return self.resolve_name(&name);
                }
                _ => return d,
            }
        }
    }

    /// The member `name` of struct `d`: its byte offset, bit offset within the struct
    /// (for bit-fields) and type.
    fn member(&self, d: Def, name: &str) -> (u64, Option<u64>, Def) {
        let unit = self.unit(d.unit);
        let mut tree = unit.entries_tree(Some(d.entry)).unwrap();
        let root = tree.root().unwrap();
        let mut children = root.children();
        while let Some(child) = children.next().unwrap() {
            let e = child.entry();
            if e.tag() != gimli::DW_TAG_member {
                continue;
            }
            let Some(n) = e.attr_value(gimli::DW_AT_name) else {
                continue;
            };
            if self.string(&unit, n) != name {
                continue;
            }
            let byte = e
                .attr_value(gimli::DW_AT_data_member_location)
                .and_then(|v| v.udata_value())
                .unwrap_or(0);
            let bit = e
                .attr_value(gimli::DW_AT_data_bit_offset)
                .and_then(|v| v.udata_value());
            let Some(AttributeValue::UnitRef(t)) = e.attr_value(gimli::DW_AT_type) else {
                panic!("member {name} without a type");
            };
            return (
                byte,
                bit,
                Def {
                    unit: d.unit,
                    entry: t,
                },
            );
        }
        panic!("no member {name}");
    }

    /// The byte offset of `path` (`a.b.c`) in the struct `ty`.
    pub fn offset_of(&self, ty: &str, path: &str) -> u64 {
        let mut d = self.resolve_name(ty);
        let mut total = 0;
        for part in path.split('.') {
            let (byte, _, t) = self.member(d, part);
            total += byte;
            d = self.strip(t);
        }
        total
    }

    /// The bit offset of the bit-field `path` from the start of the struct `ty`.
    pub fn bit_offset_of(&self, ty: &str, path: &str) -> u64 {
        let (parent, last) = match path.rsplit_once('.') {
            Some((p, l)) => (Some(p), l),
            None => (None, path),
        };
        let mut d = self.resolve_name(ty);
        let mut base = 0;
        if let Some(p) = parent {
            for part in p.split('.') {
                let (byte, _, t) = self.member(d, part);
                base += byte;
                d = self.strip(t);
            }
        }
        let (byte, bit, _) = self.member(d, last);
        base * 8 + bit.unwrap_or(byte * 8)
    }

    /// `sizeof` the struct `ty`.
    pub fn size_of(&self, ty: &str) -> u64 {
        let d = self.resolve_name(ty);
        let unit = self.unit(d.unit);
        let e = unit.entry(d.entry).unwrap();
        e.attr_value(gimli::DW_AT_byte_size)
            .and_then(|v| v.udata_value())
            .unwrap()
    }

    /// The value of the enumerator `name`.
    pub fn enumerator(&self, name: &str) -> i64 {
        *self
            .enumerators
            .get(name)
            .unwrap_or_else(|| panic!("no enumerator {name}"))
    }
}
