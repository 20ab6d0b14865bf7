//! Merging segments: what a history of several segments says about its interpreted
//! processes is the sum of what each segment counted, its interpreted frames
//! keep their names, a history spanning a reboot reads on one clock, and a window passes
//! over the segments it misses.
#![allow(clippy::unwrap_used)]

mod common;

use hotspot_format::merge::{Window, merge};
use hotspot_format::records::{
    InterpreterModule, InterpreterProcess, InterpreterRole, InterpreterStatus, Language,
};
use hotspot_format::{
    Frame, FrameAddr, Mark, Module, ModuleKind, Process, Record, Sample, SessionHeader, SourceLoc,
    Stack, Symbol, UnwindMethod, Unwinding, Writer, read_all,
};

/// A segment starting at `start_ns` with one sample of a Python process (pid 7), whose
/// recorder wrote the process's interpreter twice (on recognition, then with its counts).
fn segment(start_ns: u64, samples: u64, merged: u64) -> Vec<u8> {
    booted(common::session(), "python3", &[start_ns], samples, merged)
}

/// A segment recorded under `session`, with samples of pid 7 (named `name`, started at
/// monotonic 1,000 ns of its boot) at `times`.
fn booted(session: SessionHeader, name: &str, times: &[u64], samples: u64, merged: u64) -> Vec<u8> {
    marked(session, name, times, &[], samples, merged)
}

/// [`booted`], with marks taken at `marks`.
fn marked(
    session: SessionHeader,
    name: &str,
    times: &[u64],
    marks: &[u64],
    samples: u64,
    merged: u64,
) -> Vec<u8> {
    let mut w = Writer::new(Vec::new(), session).unwrap();
    let python = InterpreterProcess {
        pid: 7,
        start_ns: 1_000,
        language: Language::default(),
        path: "/usr/bin/python3".into(),
        version: "3.11".into(),
        status: InterpreterStatus::Walked,
        ..InterpreterProcess::default()
    };
    let records = [
        Record::Process(Process {
            pid: 7,
            ppid: 1,
            name: name.into(),
            cmdline: vec!["python3".into()],
            exe: "/usr/bin/python3".into(),
            start_ns: 1_000,
        }),
        Record::InterpreterProcess(python.clone()),
        Record::Module(Module {
            id: 0,
            kind: ModuleKind::Elf,
            path: "/usr/bin/python3".into(),
            build_id: vec![1],
        }),
        Record::Frame(Frame {
            id: 0,
            module: 0,
            addr: FrameAddr::FileOffset(0x10),
        }),
        Record::Stack(Stack {
            id: 0,
            frames: vec![0],
        }),
    ];
    for r in records {
        w.push(r).unwrap();
    }
    for &time_ns in marks {
        w.push(Record::Mark(Mark {
            time_ns,
            text: format!("at {time_ns}"),
        }))
        .unwrap();
    }
    for &time_ns in times {
        w.push_sample(Sample {
            time_ns,
            tid: 7,
            cpu: 0,
            stack: 0,
        })
        .unwrap();
    }
    w.push(Record::InterpreterProcess(InterpreterProcess {
        samples,
        merged,
        mismatched: samples - merged,
        ..python
    }))
    .unwrap();
    let end = times.iter().max().unwrap() + 1;
    w.finish(0, end, 0).unwrap()
}

fn interpreters(data: &[u8]) -> Vec<InterpreterProcess> {
    let (records, _) = read_all(data).unwrap();
    records
        .into_iter()
        .filter_map(|r| match r {
            Record::InterpreterProcess(p) => Some(p),
            _ => None,
        })
        .collect()
}

#[test]
fn a_history_counts_an_interpreted_process_over_every_segment() {
    let segs = [
        segment(10_000, 100, 90),
        segment(20_000, 50, 50),
        segment(30_000, 7, 1),
    ];
    let refs: Vec<&[u8]> = segs.iter().map(|s| s.as_slice()).collect();
    let (out, stats) = merge(&refs, Vec::new(), Window::default(), None).unwrap();
    assert_eq!(stats.used, 3);
    // The last record for the process is the one a reader keeps.
    let last = interpreters(&out).pop().expect("an interpreter record");
    assert_eq!((last.samples, last.merged, last.mismatched), (157, 141, 16));
    assert_eq!(last.version, "3.11");

    // A window of the middle segment counts only the segment it uses.
    let window = Window {
        from_ns: Some(15_000),
        to_ns: Some(25_000),
    };
    let (out, stats) = merge(&refs, Vec::new(), window, None).unwrap();
    assert_eq!(stats.used, 1);
    let last = interpreters(&out).pop().expect("an interpreter record");
    assert_eq!((last.samples, last.merged), (50, 50));
}

/// The UTC time (ns) of each sample of a capture, by its session header's anchor, and the
/// names of its processes.
fn utc_samples_and_names(data: &[u8]) -> (Vec<u64>, Vec<String>) {
    let (records, _) = read_all(data).unwrap();
    let mut anchor = None;
    let (mut times, mut names) = (Vec::new(), Vec::new());
    for r in records {
        match r {
            Record::Session(s) => anchor = Some((s.start_wall_ns, s.start_mono_ns)),
            Record::Process(p) => names.push(p.name),
            Record::Samples(b) => {
                let (wall, mono) = anchor.expect("the session comes first");
                times.extend(b.samples.iter().map(|s| wall + s.time_ns - mono));
            }
            _ => {}
        }
    }
    (times, names)
}

const S: u64 = 1_000_000_000;

#[test]
fn a_history_across_a_reboot_reads_on_the_oldest_segments_clock() {
    // Before the reboot: up 5 s at the segment's start, samples 1 and 2 s later.
    let before = common::session();
    let wall0 = before.start_wall_ns;
    let a = booted(before.clone(), "before", &[6 * S, 7 * S], 2, 2);
    // 100 s later, after a reboot: up 2 s, so its monotonic times are smaller than the
    // first boot's; and the same pid with the same start.
    let after = SessionHeader {
        start_wall_ns: wall0 + 100 * S,
        start_mono_ns: 2 * S,
        ..before.clone()
    };
    let b = booted(after, "after", &[3 * S, 4 * S], 2, 2);
    let (utc_a, _) = utc_samples_and_names(&a);
    let (utc_b, _) = utc_samples_and_names(&b);
    let (out, stats) = merge(&[&a, &b], Vec::new(), Window::default(), None).unwrap();
    assert_eq!(stats.samples, 4);
    let (utc, names) = utc_samples_and_names(&out);
    // Every sample keeps its UTC time, in order; the two boots' pid 7 are two processes.
    assert_eq!(utc, [utc_a, utc_b].concat());
    assert_eq!(names, ["before", "after"]);
    let shifts = hotspot_format::merge::clock_shifts(&[&a, &b]).unwrap();
    assert_eq!(shifts, [0, 103 * S]);

    // A wall clock set back across the reboot still keeps the later boot after the first.
    let back = SessionHeader {
        start_wall_ns: wall0 - 1000 * S,
        start_mono_ns: 2 * S,
        ..before
    };
    let c = booted(back, "after", &[3 * S], 1, 1);
    let (out, _) = merge(&[&a, &c], Vec::new(), Window::default(), None).unwrap();
    let (utc, _) = utc_samples_and_names(&out);
    assert!(utc.windows(2).all(|w| w[0] < w[1]), "{utc:?}");
}

/// The marks of a capture, by time.
fn marks(data: &[u8]) -> Vec<u64> {
    let (records, _) = read_all(data).unwrap();
    records
        .into_iter()
        .filter_map(|r| match r {
            Record::Mark(m) => Some(m.time_ns),
            _ => None,
        })
        .collect()
}

#[test]
fn a_window_passes_over_the_finished_segments_it_misses_undecoded() {
    // Segments starting at 10, 20 and 30 s, two samples each; the third took a mark
    // dropped at 25 s, while no segment was being written.
    let at = |start: u64| SessionHeader {
        start_mono_ns: start * S,
        ..common::session()
    };
    let segs = [
        booted(at(10), "a", &[11 * S, 12 * S], 2, 2),
        booted(at(20), "b", &[21 * S, 22 * S], 2, 2),
        marked(at(30), "c", &[31 * S, 32 * S], &[25 * S], 2, 2),
    ];
    let refs: Vec<&[u8]> = segs.iter().map(|s| s.as_slice()).collect();
    let window = |from: u64, to: u64| Window {
        from_ns: Some(from),
        to_ns: Some(to),
    };
    // Inside the middle segment: the first is neither used nor decoded; the third is
    // decoded for a mark it may have taken (dropped after the second started), not used.
    let (out, stats) = merge(
        &refs,
        Vec::new(),
        window(20 * S + S / 2, 22 * S + S / 2),
        None,
    )
    .unwrap();
    assert_eq!(
        (stats.segments, stats.used, stats.decoded, stats.samples),
        (3, 1, 2, 2)
    );
    assert_eq!(utc_samples_and_names(&out).1, ["b"]);
    // The gap before the third segment: decoded for the mark it may hold, which it does.
    let (out, stats) = merge(&refs, Vec::new(), window(24 * S, 26 * S), None).unwrap();
    assert_eq!((stats.used, stats.decoded, stats.samples), (1, 1, 0));
    assert_eq!(marks(&out), [25 * S]);
    // Without a window every segment is decoded; a cut segment (no index, no end) always.
    let (_, stats) = merge(&refs, Vec::new(), Window::default(), None).unwrap();
    assert_eq!((stats.used, stats.decoded), (3, 3));
    let cut = &segs[0][..segs[0].len() - 1];
    let (_, stats) = merge(&[cut, refs[1]], Vec::new(), window(21 * S, 21 * S), None).unwrap();
    assert_eq!((stats.used, stats.decoded), (1, 2));
    // The clock shifts read from the spans are those of decoding whole.
    assert_eq!(
        hotspot_format::merge::clock_shifts(&refs).unwrap(),
        [0, 0, 0]
    );
}

/// A segment of one Python process whose one interpreted frame, numbered 0 as the
/// recorder numbers each segment's, is the function `function`; one sample in it.
fn python_segment(start_s: u64, function: &str) -> Vec<u8> {
    numbered_segment(
        start_s,
        "[python]",
        Record::InterpreterModule(InterpreterModule {
            module: 0,
            language: Language::Python,
            role: InterpreterRole::Frames,
        }),
        function,
    )
}

/// A segment whose module 0 (`path`, made a numbered one by `says`) has one frame,
/// numbered 0, named `function`; one sample in it.
fn numbered_segment(start_s: u64, path: &str, says: Record, function: &str) -> Vec<u8> {
    let session = SessionHeader {
        start_mono_ns: start_s * S,
        ..common::session()
    };
    let mut w = Writer::new(Vec::new(), session).unwrap();
    let name = w.intern(function);
    let file = w.intern("app.py");
    for r in [
        Record::Module(Module {
            id: 0,
            kind: ModuleKind::Elf,
            path: path.into(),
            build_id: Vec::new(),
        }),
        says,
        Record::Frame(Frame {
            id: 0,
            module: 0,
            addr: FrameAddr::FileOffset(0),
        }),
        Record::Symbol(Symbol {
            frame: 0,
            function: name,
            loc: SourceLoc {
                file: Some(file),
                line: 3,
            },
            inlined: Vec::new(),
        }),
        Record::Stack(Stack {
            id: 0,
            frames: vec![0],
        }),
    ] {
        w.push(r).unwrap();
    }
    w.push_sample(Sample {
        time_ns: (start_s + 1) * S,
        tid: 7,
        cpu: 0,
        stack: 0,
    })
    .unwrap();
    w.finish(0, (start_s + 2) * S, 0).unwrap()
}

/// The function each sample's leaf frame is, in order.
fn leaf_functions(data: &[u8]) -> Vec<String> {
    let (records, _) = read_all(data).unwrap();
    let mut strings = std::collections::HashMap::new();
    let mut symbols = std::collections::HashMap::new();
    let mut stacks = std::collections::HashMap::new();
    let mut leaves = Vec::new();
    for r in records {
        match r {
            Record::String { id, text } => {
                strings.insert(id, text);
            }
            Record::Symbol(s) => {
                symbols.entry(s.frame).or_insert(s.function);
            }
            Record::Stack(s) => {
                stacks.entry(s.id).or_insert(s.frames[0]);
            }
            Record::Samples(b) => leaves.extend(b.samples.iter().map(|s| stacks[&s.stack])),
            _ => {}
        }
    }
    leaves
        .into_iter()
        .map(|f| strings[&symbols[&f]].clone())
        .collect()
}

#[test]
fn interpreted_frames_and_markers_numbered_alike_in_two_segments_stay_two() {
    let a = python_segment(10, "startup");
    let b = python_segment(20, "work");
    let (out, _) = merge(&[&a, &b], Vec::new(), Window::default(), None).unwrap();
    assert_eq!(leaf_functions(&out), ["startup", "work"]);
    // Unwind markers likewise: the marker numbered 0 is another reason in each segment.
    let marker = |start_s, reason| {
        let unwinding = Record::Unwinding(Unwinding {
            method: UnwindMethod::Cfi,
            stack_cap: 8192,
            markers: Some(0),
        });
        numbered_segment(start_s, "[unwind]", unwinding, reason)
    };
    let (a, b) = (
        marker(10, "[unreadable stack page]"),
        marker(20, "[no unwind info: x]"),
    );
    let (out, _) = merge(&[&a, &b], Vec::new(), Window::default(), None).unwrap();
    assert_eq!(
        leaf_functions(&out),
        ["[unreadable stack page]", "[no unwind info: x]"]
    );
    let (records, _) = read_all(&out).unwrap();
    let modules = records
        .iter()
        .filter(|r| matches!(r, Record::Module(_)))
        .count();
    assert_eq!(modules, 1, "the [unwind] module is one module of the copy");
}
