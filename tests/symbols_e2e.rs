//! End-to-end tests of self-contained captures: names recorded on this machine, reports
//! that do not depend on the binaries afterwards, and `--symbols` re-symbolisation.
//! Real BPF: run as root; they fail (never skip) without it.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use hotspot_format::{FrameAddr, Record, read_all};
use hotspot_testkit::e2e::{hotspot, run_ok as ok};

static SERIAL: Mutex<()> = Mutex::new(());

fn record(out: &Path, argv: &[&Path], args: &[&str]) {
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    ok(hotspot()
        .arg("record")
        .arg("-o")
        .arg(out)
        .arg("--")
        .args(argv)
        .args(args));
}

fn report(capture: &Path, extra: &[&str]) -> String {
    let out = ok(hotspot().arg("report").arg(capture).args(extra));
    String::from_utf8(out.stdout).expect("utf-8 report")
}

/// Copies a fixture binary into `dir` so the test can move or delete it.
fn copy_into(bin: &Path, dir: &Path) -> PathBuf {
    let dst = dir.join(bin.file_name().expect("file name"));
    std::fs::copy(bin, &dst).expect("copy fixture");
    dst
}

#[test]
fn reports_are_identical_after_the_binary_is_gone() {
    let d = tempfile::tempdir().expect("tempdir");
    let bin = copy_into(&common::fixture("split7030"), d.path());
    let cap = d.path().join("s.hsp");
    record(&cap, &[&bin], &["1.5"]);
    let text = report(&cap, &[]);
    let folded = report(&cap, &["--format", "folded"]);
    let json = report(&cap, &["--format", "json"]);
    assert!(
        json.contains("\"hot_leaf\"") && json.contains("split7030.c"),
        "names and files in JSON"
    );
    assert!(
        text.contains("hot_leaf") && text.contains("split7030.c:"),
        "names and file:line: {text}"
    );
    std::fs::remove_file(&bin).expect("remove the binary");
    assert_eq!(
        report(&cap, &[]),
        text,
        "text report changed once the binary was gone"
    );
    assert_eq!(report(&cap, &["--format", "folded"]), folded);
    assert_eq!(
        report(&cap, &["--format", "json"]),
        json,
        "JSON report changed"
    );
    assert_eq!(
        report(&cap, &["--format", "folded"]),
        folded,
        "second run differs"
    );
}

#[test]
fn inlined_function_is_its_own_frame() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("i.hsp");
    record(&cap, &[&common::fixture("inlined")], &["1"]);
    let folded = report(&cap, &["--format", "folded"]);
    assert!(
        folded.contains("outer_fn;inl_helper"),
        "no outer_fn;inl_helper chain:\n{folded}"
    );
}

fn named_hot_leaf(report: &str) -> bool {
    report
        .lines()
        .any(|l| l.ends_with(" hot_leaf") || l.contains(" hot_leaf "))
}

#[test]
fn stripped_binary_names_from_debug_files() {
    let d = tempfile::tempdir().expect("tempdir");
    let (stripped, debug) = common::stripped_fixture("split7030");

    // Debug file beside the binary at record time (found through .gnu_debuglink).
    let with = d.path().join("with");
    std::fs::create_dir(&with).expect("mkdir");
    let bin = copy_into(&stripped, &with);
    copy_into(&debug, &with);
    let cap = d.path().join("with.hsp");
    record(&cap, &[&bin], &["1"]);
    let r = report(&cap, &[]);
    assert!(
        named_hot_leaf(&r),
        "names from the debug file at record time:\n{r}"
    );

    // No debug file at record time: unnamed; with --symbols DIR on replay: named.
    let without = d.path().join("without");
    std::fs::create_dir(&without).expect("mkdir");
    let bin = copy_into(&stripped, &without);
    let cap = d.path().join("without.hsp");
    record(&cap, &[&bin], &["1"]);
    let plain = report(&cap, &[]);
    assert!(
        !named_hot_leaf(&plain),
        "a stripped binary cannot name hot_leaf by itself:\n{plain}"
    );
    // Its functions are told apart by their module and CFI entry (split7030+0xADDR), one
    // row each, rather than lumped into one `??`.
    let placeholders: std::collections::BTreeSet<&str> = plain
        .split_whitespace()
        .filter(|w| w.starts_with("split7030+0x"))
        .collect();
    assert!(
        placeholders.len() >= 2,
        "the unnamed leaves have a name each:\n{plain}"
    );
    let root = common::stripped_fixture_debug_root("split7030");
    let resolved = report(&cap, &["--symbols", root.to_str().expect("utf-8")]);
    assert!(
        named_hot_leaf(&resolved),
        "--symbols with the right build-id names frames:\n{resolved}"
    );
    assert!(
        !resolved.contains("split7030+0x"),
        "--symbols replaces the placeholder names:\n{resolved}"
    );
    assert!(
        resolved.contains("split7030.c:"),
        "file:line from the debug file"
    );

    // A debug file of another build is never used, and the mismatch is reported.
    let other = common::fixture_with("split7030", &["-O1"], "otherbuild");
    assert_ne!(
        common::build_id(&other),
        common::build_id(&stripped),
        "the variant must differ"
    );
    let wrong = d.path().join("wrong");
    std::fs::create_dir(&wrong).expect("mkdir");
    common::run_tool(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&other)
            .arg(wrong.join("split7030.debug")),
    );
    let out = ok(hotspot()
        .arg("report")
        .arg(&cap)
        .arg("--symbols")
        .arg(&wrong));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !named_hot_leaf(&stdout),
        "a mismatched debug file was used:\n{stdout}"
    );
    assert!(
        stderr.contains("does not match"),
        "mismatch not reported: {stderr}"
    );
    assert_eq!(
        stderr.matches("does not match").count(),
        1,
        "reported once: {stderr}"
    );
}

#[test]
fn libc_frames_are_named() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("m.hsp");
    record(&cap, &[&common::fixture("memwork")], &["1.5"]);
    let text = report(&cap, &["--top", "10"]);
    let libc_rows: Vec<&str> = text.lines().filter(|l| l.contains("libc.so.6")).collect();
    assert!(!libc_rows.is_empty(), "no libc rows:\n{text}");
    assert!(
        libc_rows
            .iter()
            .take(3)
            .all(|l| !l.contains(" ?? ") && !l.ends_with(" ??")),
        "unnamed libc frames:\n{text}"
    );
    assert!(
        libc_rows.iter().any(|l| l.contains("mem")),
        "memset/memcpy-class names:\n{text}"
    );
}

#[test]
fn jit_frames_are_named_from_the_perf_map() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("j.hsp");
    record(&cap, &[&common::fixture("jit")], &["1.5"]);
    let folded = report(&cap, &["--format", "folded"]);
    assert!(
        folded.contains("jit_driver;jitted_hotloop"),
        "JIT frame unnamed:\n{folded}"
    );
}

#[test]
fn hostile_names_never_reach_the_output_raw() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("h.hsp");
    let evil = "\x1b[31mevil\x07\u{202e}gnp.exe\x1b]8;;http://x\x1b\\";
    record(&cap, &[&common::fixture("jit")], &["1", evil]);
    for args in [&[][..], &["--format", "folded"][..]] {
        let out = report(&cap, args);
        assert!(
            out.contains("evil"),
            "the JIT name should still show, escaped:\n{out}"
        );
        for (i, c) in out.chars().enumerate() {
            assert!(
                c == '\n' || !(c.is_control() || c == '\u{202e}'),
                "raw control char {c:?} at {i} in {args:?} output"
            );
        }
    }
    let info = ok(hotspot().arg("info").arg(&cap));
    assert!(!info.stdout.contains(&0x1b), "info leaked an escape");
}

#[test]
fn no_kernel_address_in_any_record() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("k.hsp");
    record(&cap, &[&common::fixture("syscalls")], &["1"]);
    let bytes = std::fs::read(&cap).expect("read");
    let (records, _) = read_all(&bytes).expect("decode");
    const KERNEL: u64 = 0xffff_8000_0000_0000;
    let mut kernel_frames = 0;
    for r in &records {
        let values: Vec<u64> = match r {
            Record::Frame(f) => match f.addr {
                FrameAddr::FileOffset(o) => vec![o],
                FrameAddr::KernelSymbol { offset, .. } => {
                    kernel_frames += 1;
                    vec![offset]
                }
            },
            Record::Samples(b) => b
                .samples
                .iter()
                .flat_map(|s| {
                    [
                        s.time_ns,
                        u64::from(s.tid),
                        u64::from(s.cpu),
                        u64::from(s.stack),
                    ]
                })
                .collect(),
            Record::Index(i) => i
                .entries
                .iter()
                .flat_map(|e| [e.offset, e.first_ns, e.last_ns])
                .collect(),
            Record::Lost(l) => vec![l.time_ns, l.count],
            Record::Process(p) => vec![p.start_ns],
            Record::Thread(t) => vec![t.time_ns],
            Record::String { text, .. } => {
                assert!(
                    !text.to_ascii_lowercase().contains("ffffffff8"),
                    "a string holds a kernel address: {text}"
                );
                vec![]
            }
            _ => vec![],
        };
        for v in values {
            assert!(v < KERNEL, "kernel-range value {v:#x} in {r:?}");
        }
    }
    assert!(
        kernel_frames > 0,
        "the syscall fixture must produce kernel frames"
    );
}

/// (file offset, virtual address) of the executable `PT_LOAD` of `bin`, from readelf.
fn code_segment(bin: &Path) -> (u64, u64) {
    let out = common::run_tool(Command::new("readelf").arg("-lW").arg(bin));
    let line = out
        .lines()
        .find(|l| l.trim_start().starts_with("LOAD") && l.contains(" R E "))
        .unwrap_or_else(|| panic!("no executable LOAD in {}:\n{out}", bin.display()));
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("hex");
    let fields: Vec<&str> = line.split_whitespace().collect();
    (hex(fields[1]), hex(fields[2]))
}

/// `--symbols` names frames by the recorder's rule (issue 15). A non-PIE binary's code
/// sits at a virtual address other than its file offset (0x401000 against 0x1000), and
/// its separate debug file keeps no file ranges in its program headers. The former
/// `--symbols` mapped offsets through the debug file's segments with a raw-offset
/// fallback, so it looked names up at the file offset and named nothing; now the binary
/// is named as the recorder names it, from the same library.
#[test]
fn symbols_name_a_non_pie_binary_as_the_recorder_does() {
    let d = tempfile::tempdir().expect("tempdir");
    let built = common::fixture_with("split7030", &["-fno-pie", "-no-pie"], "nopie");
    let (offset, vaddr) = code_segment(&built);
    assert_ne!(
        offset, vaddr,
        "the test needs code whose offset is not its address"
    );
    let debug_dir = d.path().join("debug");
    let with = d.path().join("with");
    let without = d.path().join("without");
    for dir in [&debug_dir, &with, &without] {
        std::fs::create_dir(dir).expect("mkdir");
    }
    let debug = debug_dir.join("split7030.debug");
    common::run_tool(
        Command::new("objcopy")
            .arg("--only-keep-debug")
            .arg(&built)
            .arg(&debug),
    );
    // Beside the binary, where the recorder finds it by the debug link.
    std::fs::copy(&debug, with.join("split7030.debug")).expect("copy");
    let stripped = with.join("split7030");
    common::run_tool(
        Command::new("objcopy")
            .arg("--strip-all")
            .arg("--add-gnu-debuglink")
            .arg(with.join("split7030.debug"))
            .arg(&built)
            .arg(&stripped),
    );
    let bare = without.join("split7030");
    std::fs::copy(&stripped, &bare).expect("copy");
    let symbols = ["--symbols", debug_dir.to_str().expect("utf-8")];

    // Named by the recorder (the debug file beside the binary): `--symbols` with the
    // same debug file gives every frame the name the recorder gave it.
    let cap = d.path().join("with.hsp");
    record(&cap, &[&stripped], &["1"]);
    let recorded = report(&cap, &["--format", "folded"]);
    assert!(
        recorded.contains("hot_leaf"),
        "the recorder names a non-PIE binary:\n{recorded}"
    );
    assert_eq!(report(&cap, &["--format", "folded"]), recorded);
    for format in ["folded", "text", "json"] {
        assert_eq!(
            report(&cap, &["--format", format, symbols[0], symbols[1]]),
            report(&cap, &["--format", format]),
            "--symbols renamed frames the recorder had named ({format})"
        );
    }

    // Not named at record time: `--symbols` names every frame of the binary, the
    // binary's own program headers giving the addresses.
    let cap = d.path().join("without.hsp");
    record(&cap, &[&bare], &["1"]);
    let plain = report(&cap, &[]);
    assert!(
        plain.contains("split7030+0x"),
        "unnamed without debug file:\n{plain}"
    );
    let named = report(&cap, &symbols);
    assert!(
        named_hot_leaf(&named),
        "--symbols names a non-PIE binary:\n{named}"
    );
    assert!(
        !named.contains("split7030+0x"),
        "a frame was left unnamed:\n{named}"
    );
    assert!(
        named.contains("split7030.c:"),
        "file:line from the debug file:\n{named}"
    );

    // The binary gone too: only the debug file's headers are left, and the layout they
    // imply names the same frames.
    std::fs::remove_file(&bare).expect("rm");
    assert_eq!(
        report(&cap, &symbols),
        named,
        "named differently without the binary"
    );
}

/// libc named again from its distribution debug file (libc6-dbg: compressed DWARF, the
/// fast path's case) gets exactly the names and lines the recorder gave it, in every
/// report format. (memwork's hot frames are named alike by the former `--symbols` too;
/// the frames it named differently are pinned by the next test.)
#[test]
fn symbols_from_libc6_dbg_match_the_recorder() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("m.hsp");
    record(&cap, &[&common::fixture("memwork")], &["1"]);
    let bytes = std::fs::read(&cap).expect("read");
    let (records, _) = read_all(&bytes).expect("decode");
    let libc = records
        .iter()
        .find_map(|r| match r {
            Record::Module(m) if m.path.ends_with("/libc.so.6") => Some(m.clone()),
            _ => None,
        })
        .expect("memwork maps libc");
    let hex: String = libc.build_id.iter().map(|b| format!("{b:02x}")).collect();
    let debug_root = Path::new("/usr/lib/debug");
    let debug = debug_root
        .join(".build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    assert!(
        debug.is_file(),
        "{} missing: install libc6-dbg for this test",
        debug.display()
    );
    let sections = common::run_tool(Command::new("readelf").arg("-SW").arg(&debug));
    assert!(
        sections
            .lines()
            .any(|l| l.contains(" .debug_line ") && l.contains(" C ")),
        "libc's debug file is expected to be compressed:\n{sections}"
    );
    let symbols = ["--symbols", "/usr/lib/debug"];
    for format in ["text", "folded", "json"] {
        let top: &[&str] = match format {
            "folded" => &["--format", "folded"],
            _ => &["--format", format, "--top", "1000"],
        };
        let recorded = report(&cap, top);
        assert!(recorded.contains("memset") || recorded.contains("memcpy"));
        let again = report(&cap, &[top, &symbols[..]].concat());
        assert_eq!(again, recorded, "--symbols renamed libc frames ({format})");
    }
}

/// The libc this test process maps (the one libc6-dbg has the debug file of).
fn our_libc() -> PathBuf {
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.ends_with("/libc.so.6"))
        .map(PathBuf::from)
        .expect("this test links libc")
}

/// A capture with one frame per libc function of `functions` (by their file offsets)
/// and no names, as a recording whose symboliser was killed before naming any.
fn unnamed_libc_capture(libc: &Path, functions: &[&str]) -> Vec<u8> {
    use hotspot_format::{
        Frame, Module, ModuleKind, Process, Sample, SessionHeader, Stack, Thread, Writer,
    };
    let id = common::build_id(libc).expect("libc has a build-id");
    let build_id: Vec<u8> = (0..id.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&id[i..i + 2], 16).expect("hex"))
        .collect();
    let (seg_offset, seg_vaddr) = code_segment(libc);
    let symbols = common::run_tool(Command::new("nm").args(["-D", "--defined-only"]).arg(libc));
    let session = SessionHeader {
        arch: "x86_64".into(),
        freq_hz: 499,
        targets: vec![7],
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).expect("writer");
    let defs = [
        Record::Process(Process {
            pid: 7,
            ppid: 1,
            name: "t".into(),
            cmdline: vec![],
            exe: String::new(),
            start_ns: 0,
        }),
        Record::Thread(Thread {
            tid: 7,
            pid: 7,
            name: "t".into(),
            time_ns: 0,
        }),
        Record::Module(Module {
            id: 0,
            kind: ModuleKind::Elf,
            path: libc.to_string_lossy().into_owned(),
            build_id,
        }),
    ];
    for r in defs {
        w.push(r).expect("push");
    }
    for (i, name) in functions.iter().enumerate() {
        let vaddr = symbols
            .lines()
            .find_map(|l| {
                let mut f = l.split_whitespace();
                let addr = f.next()?;
                let sym = f.nth(1)?;
                (sym.split('@').next() == Some(*name))
                    .then(|| u64::from_str_radix(addr, 16).expect("hex"))
            })
            .unwrap_or_else(|| panic!("{name} not in libc's dynamic symbols"));
        let i = i as u32;
        w.push(Record::Frame(Frame {
            id: i,
            module: 0,
            // Inside the function, as a sampled address is.
            addr: FrameAddr::FileOffset(vaddr + 4 - seg_vaddr + seg_offset),
        }))
        .expect("push");
        w.push(Record::Stack(Stack {
            id: i,
            frames: vec![i],
        }))
        .expect("push");
        w.push_sample(Sample {
            time_ns: 1_000 + u64::from(i),
            tid: 7,
            cpu: 0,
            stack: i,
        })
        .expect("sample");
    }
    w.finish(0, 10_000, 0).expect("finish")
}

/// libc named again from its distribution debug file takes the fast path, as the
/// recorder does: names from the symbol table (`__errno_location`, `munmap`), never the
/// DWARF reader's internal aliases (`__GI___errno_location`, `__GI_munmap`), which the
/// former `--symbols` gave for exactly these frames.
#[test]
fn symbols_from_libc6_dbg_use_the_symbol_table_names() {
    let d = tempfile::tempdir().expect("tempdir");
    let cap = d.path().join("libc.hsp");
    let functions = ["__errno_location", "munmap", "free"];
    std::fs::write(&cap, unnamed_libc_capture(&our_libc(), &functions)).expect("write");
    let folded = report(&cap, &["--format", "folded", "--symbols", "/usr/lib/debug"]);
    let names: Vec<&str> = folded
        .lines()
        .map(|l| l.rsplit_once(' ').expect("stack count").0)
        .collect();
    assert_eq!(
        names.len(),
        functions.len(),
        "one stack per frame:\n{folded}"
    );
    for want in ["__errno_location", "munmap"] {
        assert!(names.contains(&want), "{want} not named so:\n{folded}");
    }
    assert!(
        names
            .iter()
            .all(|n| !n.starts_with("__GI_") && !n.contains("+0x")),
        "a DWARF alias or an unnamed frame:\n{folded}"
    );
}
