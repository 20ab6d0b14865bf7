//! The subset against kernel-like BTF, nested anonymous members, garbage, and the
//! running kernel's own.

use super::loader::deny_opens_in_this_thread;
use super::scan::{Blocks, MAX_PASSES};
use super::*;
use std::io::Cursor;

fn fields(raw: &[u8]) -> Result<Vec<Found>, SubsetError> {
    find_fields(&mut Cursor::new(raw))
}

fn sub(raw: &[u8]) -> Result<Vec<u8>, SubsetError> {
    subset(&mut Cursor::new(raw))
}

#[test]
fn blocks_take_and_skip_across_reads() {
    let data: Vec<u8> = (0..700_000u32).map(|i| (i % 251) as u8).collect();
    let mut src = Cursor::new(&data);
    src.set_position(10);
    let mut b = Blocks::new(&mut src, 690_000);
    assert_eq!(b.take(12).expect("take"), &data[10..22]);
    // Within the buffer, then past it (a seek).
    b.skip(100).expect("skip");
    assert_eq!(b.take(4).expect("take"), &data[122..126]);
    b.skip(300_000).expect("skip");
    assert_eq!(b.take(3).expect("take"), &data[300_126..300_129]);
    // Bigger than the buffer: it grows.
    let big = b.take(300_000).expect("take").to_vec();
    assert_eq!(big, &data[300_129..600_129]);
    assert_eq!(b.left(), 690_000 - 600_119);
    assert!(b.take(100_000).is_err(), "past the section's end");
}

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
    // Every task_struct here also has mm, thread, flags, start_time, se and
    // sched_info (the tests vary the others).
    let vlen = task_members.len() as u32 + 6;
    let name = strings.add("task_struct");
    types.extend_from_slice(&name.to_ne_bytes());
    types.extend_from_slice(&((KIND_STRUCT << 24) | flag | vlen).to_ne_bytes());
    types.extend_from_slice(&9000u32.to_ne_bytes());
    for &(m, off) in task_members.iter().chain(&[
        ("mm", 1136 * 8),
        ("thread", 3088 * 8),
        ("flags", 44 * 8),
        ("start_time", 2800 * 8),
        ("se", 192 * 8),
        ("sched_info", 900 * 8),
    ]) {
        push_member(&mut types, strings.add(m), 1, off);
    }
    // [6] vm_area_struct as 6.12+ has it: vm_end in a struct in a union, both
    // anonymous and defined after it ([7], [8]), behind an anonymous member
    // that holds nothing wanted ([9]).
    push_type(
        &mut types,
        strings.add("vm_area_struct"),
        KIND_STRUCT,
        3,
        192,
    );
    push_member(&mut types, 0, 9, 0);
    push_member(&mut types, 0, 7, 128);
    push_member(&mut types, strings.add("vm_mm"), 1, 384);
    push_type(&mut types, 0, KIND_UNION, 2, 16);
    push_member(&mut types, 0, 8, 0);
    push_member(&mut types, strings.add("vm_freeptr"), 1, 0);
    push_type(&mut types, 0, KIND_STRUCT, 2, 16);
    push_member(&mut types, strings.add("vm_start"), 1, 0);
    push_member(&mut types, strings.add("vm_end"), 1, 64);
    push_type(&mut types, 0, KIND_STRUCT, 1, 16);
    push_member(&mut types, strings.add("vm_flags"), 1, 0);
    // [10] mm_struct with start_stack in an anonymous struct defined before it, [11].
    push_type(&mut types, 0, KIND_STRUCT, 2, 1400);
    push_member(&mut types, strings.add("mmap_base"), 1, 0);
    push_member(&mut types, strings.add("start_stack"), 1, 3840);
    push_type(&mut types, strings.add("mm_struct"), KIND_STRUCT, 2, 1472);
    push_member(&mut types, 0, 10, 0);
    push_member(&mut types, strings.add("cpu_bitmap"), 1, 11776);
    // [12] thread_struct
    push_type(
        &mut types,
        strings.add("thread_struct"),
        KIND_STRUCT,
        2,
        152,
    );
    push_member(&mut types, strings.add("sp"), 1, 256);
    push_member(&mut types, strings.add("fsbase"), 1, 320);
    // [13] sched_entity
    push_type(&mut types, strings.add("sched_entity"), KIND_STRUCT, 2, 256);
    push_member(&mut types, strings.add("load"), 1, 0);
    push_member(&mut types, strings.add("sum_exec_runtime"), 1, 96 * 8);
    // [14] sched_info
    push_type(&mut types, strings.add("sched_info"), KIND_STRUCT, 2, 32);
    push_member(&mut types, strings.add("pcount"), 1, 0);
    push_member(&mut types, strings.add("run_delay"), 1, 64);
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
    let found = fields(&raw).expect("found");
    let offsets = |f: &Found| -> Vec<Option<u32>> {
        f.members.iter().map(|m| m.map(|m| m.bit_offset)).collect()
    };
    assert_eq!(found[0].size, 9000);
    assert_eq!(
        offsets(&found[0]),
        vec![
            Some(2432 * 8),
            Some(2436 * 8),
            Some(3000 * 8),
            Some(1136 * 8),
            Some(3088 * 8),
            Some(44 * 8),
            Some(2800 * 8),
            Some(192 * 8),
            Some(900 * 8)
        ]
    );
    assert_eq!((found[1].size, offsets(&found[1])), (1024, vec![Some(32)]));
    // 128 (the union) + 0 (the struct in it) + 0 and 64.
    assert_eq!(
        (found[2].size, offsets(&found[2])),
        (192, vec![Some(128), Some(192)])
    );
    assert_eq!(
        (found[3].size, offsets(&found[3])),
        (1472, vec![Some(3840)])
    );
    assert_eq!((found[4].size, offsets(&found[4])), (152, vec![Some(320)]));
    assert_eq!(
        (found[5].size, offsets(&found[5])),
        (256, vec![Some(96 * 8)])
    );
    assert_eq!((found[6].size, offsets(&found[6])), (32, vec![Some(64)]));
    // The subset is BTF with the same structs: read back, it gives the same answers,
    // and the loader's parser takes it.
    let blob = sub(&raw).expect("subset");
    assert_eq!(fields(&blob).expect("found again"), found);
    Btf::parse(&blob, Endianness::default()).expect("parses");
}

/// BTF whose vm_area_struct has vm_end nested `depth` anonymous structs and unions
/// deep, every one defined before its parent: the worst order for a single pass.
fn nested_before(depth: u32) -> Vec<u8> {
    let mut strings = Strings::default();
    let mut types = Vec::new();
    push_type(&mut types, strings.add("long"), KIND_INT, 0, 8);
    types.extend_from_slice(&64u32.to_ne_bytes());
    // [2] the innermost: { long vm_start @ 0, vm_end @ 64 }
    push_type(&mut types, 0, KIND_STRUCT, 2, 16);
    push_member(&mut types, strings.add("vm_start"), 1, 0);
    push_member(&mut types, strings.add("vm_end"), 1, 64);
    // [3..=depth + 1]: each wraps the one before at bit offset 8.
    for level in 1..depth {
        push_type(&mut types, 0, KIND_UNION, 1, 16);
        push_member(&mut types, 0, 1 + level, 8);
    }
    push_type(
        &mut types,
        strings.add("vm_area_struct"),
        KIND_STRUCT,
        1,
        200,
    );
    push_member(&mut types, 0, depth + 1, 32);
    push_type(&mut types, strings.add("signal_struct"), KIND_STRUCT, 1, 64);
    push_member(&mut types, strings.add("live"), 1, 0);
    push_type(&mut types, strings.add("task_struct"), KIND_STRUCT, 9, 256);
    for (m, off) in [
        ("pid", 64),
        ("tgid", 96),
        ("signal", 128),
        ("mm", 192),
        ("thread", 256),
        ("flags", 32),
        ("start_time", 320),
        ("se", 384),
        ("sched_info", 448),
    ] {
        push_member(&mut types, strings.add(m), 1, off);
    }
    push_type(&mut types, strings.add("mm_struct"), KIND_STRUCT, 1, 64);
    push_member(&mut types, strings.add("start_stack"), 1, 0);
    push_type(&mut types, strings.add("thread_struct"), KIND_STRUCT, 1, 64);
    push_member(&mut types, strings.add("fsbase"), 1, 0);
    push_type(&mut types, strings.add("sched_entity"), KIND_STRUCT, 1, 64);
    push_member(&mut types, strings.add("sum_exec_runtime"), 1, 0);
    push_type(&mut types, strings.add("sched_info"), KIND_STRUCT, 1, 32);
    push_member(&mut types, strings.add("run_delay"), 1, 64);
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
fn fields_in_anonymous_members_defined_first_take_more_passes() {
    // Each level defined before its parent costs one more pass.
    for depth in 1..MAX_PASSES as u32 {
        let found = fields(&nested_before(depth)).expect("found");
        let offsets: Vec<_> = found[2]
            .members
            .iter()
            .map(|m| m.map(|m| m.bit_offset))
            .collect();
        let base = 32 + 8 * (depth - 1);
        assert_eq!(offsets, vec![Some(base), Some(base + 64)], "depth {depth}");
        assert_eq!(found[2].size, 200);
        sub(&nested_before(depth)).expect("subset");
    }
    // Past the pass limit: missing, not a hang.
    let deep = fields(&nested_before(MAX_PASSES as u32 + 1));
    assert!(matches!(deep, Ok(f) if f[2].members.iter().all(Option::is_none)));
    assert!(
        matches!(sub(&nested_before(MAX_PASSES as u32 + 1)), Err(SubsetError::Missing(m)) if m.contains("vm_start"))
    );
}

#[test]
fn missing_fields_and_bitfields_are_refused() {
    let no_tgid = kernel_like(&[("pid", 64), ("signal", 128)], false);
    assert!(matches!(sub(&no_tgid), Err(SubsetError::Missing(m)) if m.contains("tgid")));
    // kind_flag: the top byte is a bitfield size.
    let bitfield = kernel_like(
        &[("pid", (3 << 24) | 64), ("tgid", 96), ("signal", 128)],
        true,
    );
    assert!(matches!(sub(&bitfield), Err(SubsetError::Malformed(_))));
    let plain_flagged = kernel_like(&[("pid", 64), ("tgid", 96), ("signal", 128)], true);
    assert!(sub(&plain_flagged).is_ok(), "kind_flag without bitfields");
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    let raw = kernel_like(&[("pid", 64), ("tgid", 96), ("signal", 128)], false);
    for cut in [0, 3, 23, 30, raw.len() - 1] {
        assert!(fields(&raw[..cut]).is_err(), "cut at {cut}");
    }
    let mut bad = raw.clone();
    bad[8..12].copy_from_slice(&u32::MAX.to_ne_bytes());
    assert!(fields(&bad).is_err());
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
    let mut file = std::fs::File::open(KERNEL_BTF).expect("kernel BTF");
    let found = find_fields(&mut file).expect("fields");
    assert!(found.iter().all(|f| f.members.iter().all(Option::is_some)));
    // pid and tgid are adjacent ints in every kernel since 2.6.
    let (pid, tgid) = (found[0].members[0], found[0].members[1]);
    assert_eq!(pid.map(|m| m.bit_offset + 32), tgid.map(|m| m.bit_offset));
    read(Path::new(KERNEL_BTF)).expect("subset of the running kernel's BTF");
}
