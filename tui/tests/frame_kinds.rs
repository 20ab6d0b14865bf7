//! Every kind of frame a capture can hold reaches every output — text, JSON, folded, SVG,
//! pprof, speedscope, each diff format, and the views — with what that output says of a
//! kind: the JSON `kernel` and `kind` fields, the SVG's and the views' colours, pprof's
//! kernel mapping and state labels; `--no-kernel` (the views' `K`) drops the kernel's
//! frames from every one of them and nothing else; `--no-interpreter` (the views' `P`)
//! drops the interpreter's own frames from stacks with Python frames, and nothing else,
//! their samples going to the Python frame that called them.
//!
//! The test walks [`FrameKind::ALL`] through [`frame_of`], whose `match` has no catch-all:
//! a new kind does not compile until it says which frame of the synthetic capture stands
//! for it (and [`capture_bytes`] holds one), so it cannot reach some outputs unchecked.

use std::path::PathBuf;
use std::time::Instant;

use hotspot_format::{
    Frame, FrameAddr, InterpreterModule, InterpreterProcess, InterpreterRole, InterpreterStatus,
    Language, Module, ModuleKind, OffCpu, OffCpuSample, Process, Record, Sample, SessionHeader,
    SourceLoc, Stack, Symbol, Thread, ThreadState, UnwindMethod, Unwinding, Writer,
};
use hotspot_replay::Capture;
use hotspot_replay::export::{
    DiffFormat, ExportOptions, Format, Scan, Selection, Slice, pprof, svg,
};
use hotspot_replay::kind::FrameKind;
use hotspot_replay::metric::{Metric, state_frame};
use hotspot_replay::model::Hide;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::{Mode, Options, State, View};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use serde_json::Value;

const START: u64 = 1_000_000_000;
const PERIOD: u64 = 10_000_000;
const PID: u32 = 300;
const TID: u32 = 301;

/// The frame of the synthetic capture that stands for `kind`: its function's name and its
/// module as the outputs name it; `None` for a kind no capture can hold yet.
fn frame_of(kind: FrameKind) -> Option<(&'static str, &'static str)> {
    match kind {
        FrameKind::User => Some(("user_leaf", "app")),
        FrameKind::Jit => Some(("jit_compiled", "[jit:300]")),
        FrameKind::Python => Some(("Worker.run", "[python]")),
        FrameKind::Interpreter => Some(("_PyEval_Vector", "libpython3.11.so.1.0")),
        FrameKind::Marker => Some(("[truncated: stack larger than --stack-cap]", "[unwind]")),
        FrameKind::OffCpu(state) => Some((state_frame(state), "[off-cpu]")),
        FrameKind::Kernel => Some(("kernel_entry", "[kernel]")),
    }
}

/// The kinds the capture holds, with their frames.
fn kinds() -> Vec<(FrameKind, &'static str, &'static str)> {
    FrameKind::ALL
        .into_iter()
        .filter_map(|k| frame_of(k).map(|(name, module)| (k, name, module)))
        .collect()
}

/// The Python frame's source file.
const PY_FILE: &str = "/srv/app.py";
/// The interpreter's frame in a stack without Python frames (the interpreter starting):
/// `--no-interpreter` keeps it.
const STARTING: &str = "Py_RunMain";
/// Samples on the stack whose leaf is the interpreter's frame under the Python one.
const INTERPRETER_LEAF: u64 = 3;

/// Modules: 0 the program, 1 the kernel, 2 a JIT's anonymous memory (named by its perf
/// map), 3 the unwinder's markers, 4 `[python]` (an interpreter's frames), 5 the walked
/// interpreter's libpython. Strings 1.. name the functions. One CPU stack holds a frame
/// of each native code kind (leaf first: kernel, JIT, user, and the marker at the root,
/// where an unwind that stopped short leaves it); off-CPU samples in each state block in
/// the user code. Python: a stack `main → Worker.run → _PyEval_Vector → user_leaf →
/// kernel_entry` (a C function called from Python, through the interpreter), one whose
/// leaf is the interpreter's frame under the Python one, and one of the interpreter alone
/// (`main → Py_RunMain`).
fn capture_bytes() -> Vec<u8> {
    let session = SessionHeader {
        host: "vm".into(),
        freq_hz: 100,
        targets: vec![PID],
        start_mono_ns: START,
        start_wall_ns: 1_795_000_000_000_000_000,
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).expect("writer");
    let mut push = |r: Record| w.push(r).expect("push");
    push(Record::Unwinding(Unwinding {
        method: UnwindMethod::Cfi,
        stack_cap: 4096,
        markers: Some(3),
    }));
    push(Record::OffCpu(OffCpu { period_ns: PERIOD }));
    for (id, kind, path) in [
        (0, ModuleKind::Elf, "/usr/bin/app"),
        (1, ModuleKind::Kernel, "[kernel.kallsyms]"),
        (2, ModuleKind::Jit, "[jit:300]"),
        (3, ModuleKind::Elf, "[unwind]"),
        (4, ModuleKind::Elf, "[python]"),
        (5, ModuleKind::Elf, "/usr/lib/libpython3.11.so.1.0"),
    ] {
        push(Record::Module(Module {
            id,
            kind,
            path: path.into(),
            build_id: vec![],
        }));
    }
    let names = [
        "main",
        "user_leaf",
        "jit_compiled",
        "kernel_entry",
        "[truncated: stack larger than --stack-cap]",
        "Worker.run",
        "_PyEval_Vector",
        STARTING,
        PY_FILE,
    ];
    for (i, n) in names.iter().enumerate() {
        push(Record::String {
            id: 1 + i as u32,
            text: (*n).into(),
        });
    }
    // (frame, module, address, symbol string): the kernel's frame carries its symbol.
    push(Record::InterpreterModule(InterpreterModule {
        module: 4,
        language: Language::Python,
        role: InterpreterRole::Frames,
    }));
    push(Record::InterpreterProcess(InterpreterProcess {
        pid: PID,
        start_ns: START,
        language: Language::Python,
        path: "/usr/lib/libpython3.11.so.1.0".into(),
        version: "3.11".into(),
        status: InterpreterStatus::Walked,
        ..InterpreterProcess::default()
    }));
    for (id, module, string) in [
        (0, 0, 1),
        (1, 0, 2),
        (2, 2, 3),
        (3, 1, 4),
        (4, 3, 5),
        (5, 4, 6),
        (6, 5, 7),
        (7, 5, 8),
    ] {
        let addr = if module == 1 {
            FrameAddr::KernelSymbol {
                symbol: string,
                offset: 0x10,
            }
        } else {
            FrameAddr::FileOffset(0x1000 + u64::from(id) * 16)
        };
        push(Record::Frame(Frame { id, module, addr }));
        if module != 1 {
            // The Python frame at its line of its file.
            let loc = if module == 4 {
                SourceLoc {
                    file: Some(9),
                    line: 12,
                }
            } else {
                SourceLoc::default()
            };
            push(Record::Symbol(Symbol {
                frame: id,
                function: string,
                loc,
                ..Symbol::default()
            }));
        }
    }
    push(Record::Stack(Stack {
        id: 0,
        frames: vec![3, 2, 1, 0, 4],
    }));
    push(Record::Stack(Stack {
        id: 1,
        frames: vec![1, 0],
    }));
    for (id, frames) in [
        (2, vec![3, 1, 6, 5, 0]),
        (3, vec![6, 5, 0]),
        (4, vec![7, 0]),
    ] {
        push(Record::Stack(Stack { id, frames }));
    }
    push(Record::Process(Process {
        pid: PID,
        name: "app".into(),
        exe: "/usr/bin/app".into(),
        start_ns: START,
        ..Process::default()
    }));
    push(Record::Thread(Thread {
        tid: TID,
        pid: PID,
        name: "app".into(),
        time_ns: START,
    }));
    let sample = |i: u64, stack| Sample {
        time_ns: START + i * PERIOD,
        tid: TID,
        cpu: 0,
        stack,
    };
    for i in 0..10 {
        w.push_sample(sample(i, 0)).expect("sample");
    }
    for (i, stack) in [(20, 2), (21, 2), (22, 4), (23, 4)] {
        w.push_sample(sample(i, stack)).expect("sample");
    }
    for i in 0..INTERPRETER_LEAF {
        w.push_sample(sample(24 + i, 3)).expect("sample");
    }
    for (i, (state, periods)) in [
        (ThreadState::Sleeping, 4),
        (ThreadState::Uninterruptible, 3),
        (ThreadState::Runnable, 2),
    ]
    .into_iter()
    .enumerate()
    {
        w.push_off_cpu_sample(OffCpuSample {
            sample: sample(11 + i as u64, 1),
            periods,
            state,
        })
        .expect("sample");
    }
    w.finish(0, START + 30 * PERIOD, 0).expect("finish")
}

fn selection(hide: Hide) -> Selection {
    Selection {
        no_kernel: hide.kernel,
        no_interpreter: hide.interpreter,
        metric: Metric::Wall,
        ..Selection::default()
    }
}

fn render(format: Format, slice: &Slice) -> Vec<u8> {
    format
        .render(
            slice,
            &ExportOptions {
                top: Some(100),
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{}: {e}", format.name()))
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

/// Whether `hide` keeps the synthetic capture's frame of `kind`: every frame of the kind is
/// on a stack with Python frames, but for [`STARTING`].
fn shown(hide: Hide, kind: FrameKind) -> bool {
    !(hide.kernel && kind.is_kernel() || hide.interpreter && kind == FrameKind::Interpreter)
}

/// What each output shows of each kind, with or without the kernel's and the
/// interpreter's frames.
fn check_exports(hide: Hide) {
    let scan = Scan::from_bytes(
        &capture_bytes(),
        selection(hide).scan_options(false),
        &mut |_, _| {},
    )
    .expect("scan");
    let slice = Slice::new(&scan, &selection(hide)).expect("slice");
    let report = text(&render(Format::Text, &slice));
    let json: Value = serde_json::from_slice(&render(Format::Json, &slice)).expect("json");
    let folded = text(&render(Format::Folded, &slice));
    let flame = text(&render(Format::Svg, &slice));
    let speedscope: Value =
        serde_json::from_slice(&render(Format::Speedscope, &slice)).expect("speedscope");
    let profile = pprof::profile(&slice);
    let pstr = |i: i64| profile.string_table[i as usize].as_str();
    let diffs: Vec<(DiffFormat, String)> = DiffFormat::ALL
        .into_iter()
        .map(|f| {
            let out = f
                .render(
                    &slice,
                    &slice,
                    &ExportOptions {
                        top: Some(100),
                        ..Default::default()
                    },
                )
                .expect("diff");
            (f, text(&out))
        })
        .collect();
    let diff_json: Value = serde_json::from_str(&diffs[1].1).expect("diff json");
    // The interpreter starting (no Python frame on its stack) is kept everywhere.
    assert!(folded.contains(STARTING), "folded, {hide:?}:\n{folded}");
    assert!(report.contains(STARTING), "text, {hide:?}:\n{report}");
    // The interpreter's frame under the Python one: its samples go to the Python frame.
    let self_of = |name: &str| {
        json["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["self"].as_u64().expect("self"))
    };
    let python_self = if hide.interpreter {
        INTERPRETER_LEAF
    } else {
        0
    };
    assert_eq!(self_of("Worker.run"), Some(python_self), "{hide:?}");
    assert_eq!(json["selection"]["no_interpreter"], hide.interpreter);
    for (kind, name, module) in kinds() {
        let want = shown(hide, kind);
        let what = format!("{} frame {name} ({hide:?})", kind.name());
        // Text: a row naming the function in its module.
        let row = report
            .lines()
            .any(|l| l.contains(name) && l.contains(module));
        assert_eq!(row, want, "text, {what}:\n{report}");
        // JSON: the function and a tree node, with the kernel flag the kind gives.
        for list in ["functions", "tree"] {
            let node = json[list]
                .as_array()
                .expect("an array")
                .iter()
                .find(|f| f["name"] == name);
            assert_eq!(node.is_some(), want, "json {list}, {what}");
            if let Some(f) = node {
                assert_eq!(f["module"], module, "json {list}, {what}");
                assert_eq!(f["kernel"], kind.is_kernel(), "json {list}, {what}");
                assert_eq!(f["kind"], kind.name(), "json {list}, {what}");
            }
        }
        // Folded: on a stack, as a whole name between separators.
        let on_stack = folded.lines().any(|l| {
            let stack = l.rsplit_once(' ').map_or(l, |(stack, _)| stack);
            stack.split(';').any(|part| part == name)
        });
        assert_eq!(on_stack, want, "folded, {what}");
        // SVG: a box, in the kind's own colour where it has one.
        let title = format!("<title>{} (", xml(name));
        let boxed = flame.split("<g>").find(|g| g.starts_with(&title));
        assert_eq!(boxed.is_some(), want, "svg, {what}");
        if let (Some(g), Some(c)) = (boxed, svg::kind_color(kind, name)) {
            let fill = format!("fill=\"rgb({},{},{})\"", c.r, c.g, c.b);
            assert!(g.contains(&fill), "svg colour, {what}: {g}");
        }
        // speedscope: a frame, its file the module where no source file is known.
        let frame = speedscope["shared"]["frames"]
            .as_array()
            .expect("frames")
            .iter()
            .find(|f| f["name"] == name);
        assert_eq!(frame.is_some(), want, "speedscope, {what}");
        if let Some(f) = frame {
            let file = if kind == FrameKind::Python {
                PY_FILE
            } else {
                module
            };
            assert_eq!(f["file"], file, "speedscope, {what}");
        }
        // pprof: a function at a location; a kernel frame in the kernel's mapping, the
        // off-CPU states labelled on their samples.
        let function = profile.function.iter().find(|f| pstr(f.name) == name);
        assert_eq!(function.is_some(), want, "pprof, {what}");
        if let Some(f) = function {
            let location = profile
                .location
                .iter()
                .find(|l| l.line.iter().any(|line| line.function_id == f.id))
                .expect("a location");
            let mapping = profile.mapping.iter().find(|m| m.id == location.mapping_id);
            let kernel_mapping = mapping.is_some_and(|m| pstr(m.filename) == "[kernel.kallsyms]");
            assert_eq!(kernel_mapping, kind.is_kernel(), "pprof mapping, {what}");
            if let FrameKind::OffCpu(state) = kind {
                let labelled = profile.sample.iter().any(|s| {
                    s.location_id.first() == Some(&location.id)
                        && s.label
                            .iter()
                            .any(|l| pstr(l.str) == state.letter().to_string())
                });
                assert!(labelled, "pprof state label, {what}");
            }
        }
        // Every diff format: the function on both sides (of the capture against itself).
        for (f, out) in &diffs {
            assert_eq!(out.contains(name), want, "diff {}, {what}", f.name());
        }
        let change = diff_json["changes"]
            .as_array()
            .expect("changes")
            .iter()
            .find(|c| c["name"] == name);
        if let Some(c) = change {
            assert_eq!(c["kernel"], kind.is_kernel(), "diff json, {what}");
            assert_eq!(c["kind"], kind.name(), "diff json, {what}");
        }
    }
}

/// `name` as the SVG's text escapes it.
fn xml(name: &str) -> String {
    name.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[test]
fn every_kind_reaches_every_export() {
    assert_eq!(
        kinds().len(),
        FrameKind::ALL.len(),
        "every kind has a frame"
    );
    check_exports(Hide::NOTHING);
}

#[test]
fn no_kernel_drops_the_kernel_kind_from_every_export_and_nothing_else() {
    check_exports(Hide::kernel(true));
}

#[test]
fn no_interpreter_drops_the_interpreters_frames_under_python_from_every_export() {
    for kernel in [false, true] {
        check_exports(Hide {
            kernel,
            interpreter: true,
        });
    }
}

/// The views over the capture under the wall metric, 24-bit colour.
fn views(hide: Hide, view: View) -> (State, Buffer) {
    let mut c = Capture::from_bytes(&capture_bytes()).expect("capture");
    c.path = PathBuf::from("kinds.hsp");
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::True),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, 240, 40));
    s.finished = true;
    s.metric = Metric::Wall;
    s.no_kernel = hide.kernel;
    s.no_interpreter = hide.interpreter;
    s.view = view;
    s.refresh();
    let mut t = Terminal::new(TestBackend::new(240, 40)).expect("terminal");
    t.draw(|f| draw(&s, f.buffer_mut(), Instant::now()))
        .expect("draw");
    let buf = t.backend().buffer().clone();
    (s, buf)
}

/// Where `text` starts on screen, if drawn.
fn find(buf: &Buffer, text: &str) -> Option<(u16, u16)> {
    (0..buf.area.height).find_map(|y| {
        let line: String = (0..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        line.find(text)
            .map(|at| (line[..at].chars().count() as u16, y))
    })
}

#[test]
fn every_kind_reaches_the_views_in_its_colour() {
    for hide in Hide::ALL {
        let (s, flat) = views(hide, View::Flat);
        let (_, flame) = views(hide, View::Flame);
        let pal = s.opts.palette;
        assert!(find(&flame, STARTING).is_some(), "{hide:?}");
        for (kind, name, _) in kinds() {
            let want = shown(hide, kind);
            let what = format!("{} frame {name} ({hide:?})", kind.name());
            let row = s.flat_rows().iter().any(|r| &*r.key.function == name);
            assert_eq!(row, want, "flat rows, {what}");
            // Drawn names may be cut to their bar: the first eleven characters (which
            // tell the states apart).
            let short: String = name.chars().take(11).collect();
            assert_eq!(find(&flat, &short).is_some(), want, "flat view, {what}");
            let at = find(&flame, &short);
            assert_eq!(at.is_some(), want, "flame view, {what}");
            if let Some((x, y)) = at {
                assert_eq!(
                    flame[(x, y)].bg,
                    pal.frame_color(kind, name),
                    "flame colour, {what}"
                );
            }
        }
    }
}

/// The views over the capture, `w`×`h`, no colour; a capture without Python frames when
/// `python` is false (the fixture `phased.hsp`).
fn state(python: bool, w: u16, h: u16) -> State {
    let mut c = if python {
        Capture::from_bytes(&capture_bytes()).expect("capture")
    } else {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/captures/phased.hsp");
        Capture::open(&path).expect("fixture")
    };
    c.path = PathBuf::from("kinds.hsp");
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::None),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, w, h));
    s.finished = true;
    s.refresh();
    s
}

fn screen(s: &mut State) -> String {
    s.refresh();
    let mut t = Terminal::new(TestBackend::new(s.size.width, s.size.height)).expect("terminal");
    t.draw(|f| draw(s, f.buffer_mut(), Instant::now()))
        .expect("draw");
    t.backend().to_string()
}

/// `P` (the one keymap table): offered in the footer and the `?` help of a capture with
/// Python frames, where the header says whether the interpreter's frames are shown; it
/// hides them from the views (their samples go to the Python frame that called them) and
/// shows them again; a capture without Python frames neither offers nor binds it.
#[test]
fn p_toggles_the_interpreters_frames_where_the_capture_has_python() {
    use hotspot_tui::input::handle_key;
    use hotspot_tui::keymap::Key;
    let mut s = state(true, 150, 50);
    let before = screen(&mut s);
    assert!(before.contains("P interp"), "footer:\n{before}");
    assert!(before.contains("interpreter shown"), "header:\n{before}");
    assert!(before.contains("_PyEval_Vector"), "{before}");
    let self_of = |s: &State, name: &str| {
        s.flat_rows()
            .iter()
            .find(|r| &*r.key.function == name)
            .map(|r| r.self_samples)
    };
    assert_eq!(self_of(&s, "Worker.run"), Some(0));
    handle_key(&mut s, Key::Char('P'), Instant::now());
    assert!(s.no_interpreter);
    let hidden = screen(&mut s);
    insta::assert_snapshot!("python_flat_interpreter_hidden", hidden);
    assert!(hidden.contains("interpreter hidden"), "{hidden}");
    assert!(!hidden.contains("_PyEval_Vector"), "{hidden}");
    assert!(hidden.contains(STARTING), "{hidden}");
    assert_eq!(self_of(&s, "Worker.run"), Some(INTERPRETER_LEAF));
    handle_key(&mut s, Key::Char('?'), Instant::now());
    let help = screen(&mut s);
    insta::assert_snapshot!("python_help_lists_p", help);
    assert!(
        help.contains("hide or show Python interpreter frames"),
        "{help}"
    );
    handle_key(&mut s, Key::Esc, Instant::now());
    handle_key(&mut s, Key::Char('P'), Instant::now());
    assert!(!s.no_interpreter);
    assert!(screen(&mut s).contains("_PyEval_Vector"));

    let mut plain = state(false, 120, 30);
    let out = screen(&mut plain);
    assert!(
        !out.contains("P interp") && !out.contains("interpreter "),
        "{out}"
    );
    handle_key(&mut plain, Key::Char('P'), Instant::now());
    assert!(
        !plain.no_interpreter,
        "P is bound only where the capture has Python frames"
    );
    handle_key(&mut plain, Key::Char('?'), Instant::now());
    assert!(!screen(&mut plain).contains("Python interpreter frames"));
}
