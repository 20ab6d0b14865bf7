//! Measures the terminal views' model on a synthetic capture held in memory: time to the
//! first frame (index, fold, timeline, draw) and the refold after moving the time
//! selection, in each view.
//!
//! `cargo bench -p hotspot-tui --bench refold [-- SAMPLES] [--off-cpu] [--diff]` (default
//! 5,000,000). `--off-cpu` adds an off-CPU sample (1–8 periods, a random state, the same
//! stacks) after every 8th CPU sample, and times the metric toggle. `--diff` times the
//! views' diff mode instead: two such captures, the second with its phases drawing from
//! other stacks, compared (first frame, then moves of either capture's selection).

use std::time::{Duration, Instant};

use hotspot_format::{
    Frame, FrameAddr, Module, ModuleKind, Sample, SessionHeader, SourceLoc, Symbol,
};
use hotspot_replay::Capture;
use hotspot_testkit::Rng;
use hotspot_tui::input::apply;
use hotspot_tui::keymap::Cmd;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::{Mode, Options, State};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

/// 300 functions in two modules, 3,000 stacks 8–40 frames deep, `samples` samples on 8
/// threads over 100 s in phases, with idle gaps.
fn synthetic(samples: usize) -> Capture {
    synthetic_shifted(samples, 0)
}

/// [`synthetic`] with each phase's stacks shifted by `shift` (a changed program: the same
/// functions and stacks, sampled in other proportions).
fn synthetic_shifted(samples: usize, shift: u32) -> Capture {
    let mut rng = Rng(0x5eed);
    let mut c = Capture::default();
    c.session = Some(SessionHeader {
        host: "bench".into(),
        freq_hz: 499,
        targets: vec![1000],
        start_mono_ns: 1_000_000_000,
        ..SessionHeader::default()
    });
    for (id, path, kind) in [
        (0, "/usr/bin/app", ModuleKind::Elf),
        (1, "/usr/lib/libc.so.6", ModuleKind::Elf),
        (2, "[kernel.kallsyms]", ModuleKind::Kernel),
    ] {
        c.modules.insert(
            id,
            Module {
                id,
                kind,
                path: path.into(),
                build_id: vec![],
            },
        );
    }
    c.strings.insert(0, "app.rs".into());
    let functions = 300u32;
    for f in 0..functions {
        let sid = 1 + f;
        c.strings
            .insert(sid, format!("app::module_{}::function_{f}", f % 17).into());
        let module = match f % 10 {
            0 => 1,
            1 => 2,
            _ => 0,
        };
        c.frames.insert(
            f,
            Frame {
                id: f,
                module,
                addr: FrameAddr::FileOffset(u64::from(f) * 64),
            },
        );
        c.symbols.insert(
            f,
            Symbol {
                frame: f,
                function: sid,
                loc: SourceLoc {
                    file: Some(0),
                    line: f,
                },
                inlined: vec![],
            },
        );
    }
    let stacks = 3_000u32;
    for s in 0..stacks {
        let depth = 8 + rng.below(33) as usize;
        // Leaf first; a few shared roots so the tree has a shape.
        let mut frames: Vec<u32> = (0..depth)
            .map(|_| rng.below(u64::from(functions)) as u32)
            .collect();
        frames[depth - 1] = 2 + (s % 3);
        c.stacks.insert(s, frames);
    }
    for tid in 0..8u32 {
        c.threads.insert(
            1000 + tid,
            hotspot_replay::capture::ThreadInfo {
                tid: 1000 + tid,
                pid: 1000,
                names: vec![(0, format!("worker-{tid}"))],
            },
        );
    }
    let span = 100_000_000_000u64;
    let mut t = 1_000_000_000u64;
    let step = span * 9 / 10 / samples as u64;
    c.samples.reserve(samples);
    for i in 0..samples {
        t += step;
        // Idle for the last second of every ten: a gap on the timeline.
        if (t / 1_000_000_000) % 10 == 9 {
            t += 1_000_000_000;
        }
        let phase = (t / 5_000_000_000) as u32 % 4;
        let stack = (phase * 700 + shift + rng.below(1000) as u32) % stacks;
        c.samples.push(Sample {
            time_ns: t,
            tid: 1000 + (i as u32 % 8),
            cpu: 0,
            stack,
        });
    }
    c
}

/// One off-CPU sample after every 8th CPU sample of each thread (what `--off-cpu` adds).
fn add_off_cpu(c: &mut Capture) {
    use hotspot_format::{OffCpu, OffCpuSample, ThreadState};
    let mut rng = Rng(0x0ff);
    c.off_cpu = Some(OffCpu {
        period_ns: 1_000_000_000 / 499,
    });
    let off: Vec<OffCpuSample> = c
        .samples
        .iter()
        .enumerate()
        .filter(|(i, _)| i % 64 < 8)
        .map(|(_, s)| OffCpuSample {
            sample: Sample {
                time_ns: s.time_ns + 1,
                ..*s
            },
            periods: 1 + rng.below(8) as u32,
            state: ThreadState::ALL[rng.below(3) as usize],
        })
        .collect();
    c.off_cpu_samples = off;
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(5_000_000);
    let off_cpu = std::env::args().any(|a| a == "--off-cpu");
    if std::env::args().any(|a| a == "--diff") {
        return diff_mode(n);
    }
    let t = Instant::now();
    let mut capture = synthetic(n);
    if off_cpu {
        add_off_cpu(&mut capture);
    }
    println!(
        "synthetic capture: {} samples + {} off-CPU, {} stacks, built in {}",
        capture.samples.len(),
        capture.off_cpu_samples.len(),
        capture.stacks.len(),
        ms(t.elapsed())
    );
    let size = Rect::new(0, 0, 160, 50);
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::True),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let file = std::env::temp_dir().join(format!("hotspot-refold-{}.hsp", std::process::id()));
    write_file(&capture, &file);
    open_file(&file);
    let _ = std::fs::remove_file(&file);
    let start = Instant::now();
    let data = Data::new(capture);
    let indexed = start.elapsed();
    let mut state = State::new(data, opts, size);
    state.refresh();
    let mut buf = Buffer::empty(size);
    draw(&state, &mut buf, Instant::now());
    println!(
        "first frame: {} (index {}, fold + timeline + draw {})",
        ms(start.elapsed()),
        ms(indexed),
        ms(start.elapsed() - indexed)
    );
    pieces(&mut state);
    // Narrow the selection to a tenth, then move it across.
    for _ in 0..140 {
        apply(&mut state, Cmd::SelectShrink, Instant::now());
    }
    state.refresh();
    for (name, cmd) in [
        ("flat", Cmd::ShowFlat),
        ("flame", Cmd::ShowFlame),
        ("stream", Cmd::ShowStream),
    ] {
        apply(&mut state, cmd, Instant::now());
        state.refresh();
        let mut worst = Duration::ZERO;
        let mut total = Duration::ZERO;
        let moves = 20;
        for _ in 0..moves {
            let t = Instant::now();
            apply(&mut state, Cmd::SelectRight, Instant::now());
            state.refresh();
            draw(&state, &mut buf, Instant::now());
            let d = t.elapsed();
            worst = worst.max(d);
            total += d;
        }
        println!(
            "move selection, {name} view: mean {} worst {} (refold + draw)",
            ms(total / moves),
            ms(worst)
        );
    }
    // The whole capture selected again: the widest refold.
    let t = Instant::now();
    apply(&mut state, Cmd::SelectAll, Instant::now());
    state.refresh();
    draw(&state, &mut buf, Instant::now());
    println!("select all, stream view: {}", ms(t.elapsed()));
    if off_cpu {
        apply(&mut state, Cmd::ShowFlame, Instant::now());
        for _ in 0..3 {
            let t = Instant::now();
            apply(&mut state, Cmd::Metric, Instant::now());
            state.refresh();
            draw(&state, &mut buf, Instant::now());
            println!(
                "metric to {}, flame view, whole capture: {} (refold + tree + timeline + draw)",
                state.metric,
                ms(t.elapsed())
            );
        }
    }
    println!(
        "model: {} cells, {} dense stacks",
        state.data.buckets.cells(),
        state.data.stack_ids.len()
    );
}

/// Writes the synthetic capture as a capture file, one block per second of samples (as
/// the recorder does).
fn write_file(c: &Capture, path: &std::path::Path) {
    use hotspot_format::{Record, Stack, Thread, Writer};
    let file = std::fs::File::create(path).expect("create");
    let mut w = Writer::new(
        std::io::BufWriter::new(file),
        c.session.clone().unwrap_or_default(),
    )
    .expect("writer");
    let mut strings: Vec<_> = c.strings.iter().collect();
    strings.sort();
    for (&id, text) in strings {
        w.push(Record::String {
            id,
            text: text.to_string(),
        })
        .expect("push");
    }
    for m in c.modules.values() {
        w.push(Record::Module(m.clone())).expect("push");
    }
    let mut frames: Vec<_> = c.frames.values().collect();
    frames.sort_by_key(|f| f.id);
    for f in frames {
        w.push(Record::Frame(f.clone())).expect("push");
        if let Some(s) = c.symbols.get(&f.id) {
            w.push(Record::Symbol(s.clone())).expect("push");
        }
    }
    let mut stacks: Vec<_> = c.stacks.iter().collect();
    stacks.sort();
    for (&id, frames) in stacks {
        w.push(Record::Stack(Stack {
            id,
            frames: frames.clone(),
        }))
        .expect("push");
    }
    for t in c.threads.values() {
        w.push(Record::Thread(Thread {
            tid: t.tid,
            pid: t.pid,
            name: t.name().to_string(),
            time_ns: 0,
        }))
        .expect("push");
    }
    let mut second = 0;
    for s in &c.samples {
        if s.time_ns / 1_000_000_000 != second {
            second = s.time_ns / 1_000_000_000;
            w.flush_block().expect("flush");
        }
        w.push_sample(*s).expect("sample");
    }
    if let Some(o) = &c.off_cpu {
        w.push(Record::OffCpu(*o)).expect("push");
        for s in &c.off_cpu_samples {
            w.push_off_cpu_sample(*s).expect("sample");
        }
    }
    let last = c.samples.last().map_or(0, |s| s.time_ns);
    w.finish(0, last, 0).expect("finish");
}

/// Opening the file as `hotspot view` does: the first poll of the follower, folded and
/// drawn (the first frame), then everything read.
fn open_file(path: &std::path::Path) {
    use hotspot_replay::file::Tail;
    let size = Rect::new(0, 0, 160, 50);
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::True),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let start = Instant::now();
    let mut tail = Tail::open(path).expect("open");
    let mut state = State::new(Data::default(), opts, size);
    let events = tail.poll().expect("poll");
    state.data.apply(events);
    state.refresh();
    let mut buf = Buffer::empty(size);
    draw(&state, &mut buf, Instant::now());
    let first = start.elapsed();
    let first_samples = state.data.samples() as usize;
    loop {
        let events = tail.poll().expect("poll");
        if events.is_empty() {
            break;
        }
        state.data.apply(events);
    }
    state.refresh();
    draw(&state, &mut buf, Instant::now());
    println!(
        "file of {} MB: first frame {} ({} samples in the first read), all {} samples read, folded and drawn {}",
        std::fs::metadata(path).map_or(0, |m| m.len()) >> 20,
        ms(first),
        first_samples,
        state.data.samples() as usize,
        ms(start.elapsed())
    );
}

/// The model's parts alone: fold (flat rows), call tree, timeline.
fn pieces(state: &mut State) {
    use hotspot_tui::model::{ensure_tree, fold, timeline};
    let q = state.query();
    let t = Instant::now();
    let mut f = fold(&mut state.data, &q);
    println!(
        "  fold of everything (flat rows): {} ({} stacks, {} functions)",
        ms(t.elapsed()),
        f.selected.sampled.len(),
        f.flat.len()
    );
    let t = Instant::now();
    ensure_tree(&mut f, &state.data);
    println!(
        "  call tree: {} ({} nodes)",
        ms(t.elapsed()),
        f.tree.nodes.len()
    );
    let t = Instant::now();
    let _ = timeline(
        &mut state.data,
        &Default::default(),
        hotspot_replay::model::Hide::NOTHING,
        hotspot_replay::metric::Metric::Cpu,
        160,
    );
    println!("  timeline: {}", ms(t.elapsed()));
}

/// The views' diff mode on two synthetic captures of `n` samples each: the first frame
/// (both models, the diff, its flat rows, the timelines, drawn), then moves of a tenth-wide
/// selection of the new capture in each diff view, and of the base's.
fn diff_mode(n: usize) {
    use hotspot_replay::export::diff::DiffOptions;
    use hotspot_tui::diff::Compare;
    let t = Instant::now();
    let (base, new) = (synthetic(n), synthetic_shifted(n, 150));
    println!(
        "synthetic captures: {} + {} samples, {} stacks each, built in {}",
        base.samples.len(),
        new.samples.len(),
        new.stacks.len(),
        ms(t.elapsed())
    );
    let size = Rect::new(0, 0, 160, 50);
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::True),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let start = Instant::now();
    let (base, new) = (Data::new(base), Data::new(new));
    let indexed = start.elapsed();
    let mut state = State::new(new, opts, size);
    state.diff = Some(Compare::new(base, DiffOptions::default()));
    state.refresh();
    let mut buf = Buffer::empty(size);
    draw(&state, &mut buf, Instant::now());
    println!(
        "first frame: {} (index both {}, diff + fold + timelines + draw {})",
        ms(start.elapsed()),
        ms(indexed),
        ms(start.elapsed() - indexed)
    );
    for _ in 0..140 {
        apply(&mut state, Cmd::SelectShrink, Instant::now());
    }
    state.refresh();
    let mut time_moves = |state: &mut State, name: &str| {
        let (mut worst, mut total) = (Duration::ZERO, Duration::ZERO);
        let moves = 20;
        for _ in 0..moves {
            let t = Instant::now();
            apply(state, Cmd::SelectRight, Instant::now());
            state.refresh();
            draw(state, &mut buf, Instant::now());
            let d = t.elapsed();
            worst = worst.max(d);
            total += d;
        }
        println!(
            "move selection, {name} view: mean {} worst {} (diff + refold + draw)",
            ms(total / moves),
            ms(worst)
        );
    };
    for (name, cmd) in [("flat", Cmd::ShowFlat), ("flame", Cmd::ShowFlame)] {
        apply(&mut state, cmd, Instant::now());
        state.refresh();
        time_moves(&mut state, name);
    }
    apply(&mut state, Cmd::ShowFlat, Instant::now());
    apply(&mut state, Cmd::Open, Instant::now());
    state.refresh();
    time_moves(&mut state, "callers");
    // The base's own selection, a tenth wide, moved in the flat view.
    apply(&mut state, Cmd::ShowFlat, Instant::now());
    apply(&mut state, Cmd::DiffSide, Instant::now());
    for _ in 0..140 {
        apply(&mut state, Cmd::SelectShrink, Instant::now());
    }
    state.refresh();
    time_moves(&mut state, "base");
}
