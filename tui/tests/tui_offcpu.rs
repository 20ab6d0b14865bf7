//! The views of a capture with off-CPU time (format 1.3): the metric toggle, the state
//! frames and their colours, the per-thread totals and lanes, hiding idle threads, and
//! what a capture without off-CPU data says. The capture is written here with
//! `hotspot_format::Writer`, so every number below follows from the records it holds.

use std::path::PathBuf;
use std::time::Instant;

use hotspot_format::{
    Frame, FrameAddr, Module, ModuleKind, OffCpu, OffCpuSample, Process, Record, Sample,
    SessionHeader, SourceLoc, Stack, Symbol, Thread, ThreadState, ThreadTimes, Writer,
};
use hotspot_replay::Capture;
use hotspot_replay::kind::FrameKind;
use hotspot_replay::metric::{self, Class, Metric};
use hotspot_tui::input::{NO_OFF_CPU, handle_key};
use hotspot_tui::keymap::Key;
use hotspot_tui::model::Data;
use hotspot_tui::palette::{ColorMode, Palette};
use hotspot_tui::render::draw;
use hotspot_tui::{Mode, Options, State, View};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;

const START: u64 = 1_000_000_000;
/// 100 Hz: one period is 10 ms.
const PERIOD: u64 = 10_000_000;
const PID: u32 = 500;

/// Functions (frame id = index) and stacks (leaf first, as the format has them).
const FUNCTIONS: [&str; 9] = [
    "main",
    "work",
    "compute",
    "nanosleep",
    "flush",
    "fsync",
    "pool_loop",
    "futex_wait",
    "spin",
];
const STACKS: [&[u32]; 6] = [
    &[2, 1, 0], // compute
    &[3, 1, 0], // nanosleep
    &[4, 0],    // flush
    &[5, 4, 0], // fsync
    &[7, 6, 0], // futex_wait
    &[8, 0],    // spin
];

/// One sample of the test capture: (time from the start, tid, stack, class, periods).
type S = (u64, u32, u32, Class, u32);

/// A second of a small server: a worker alternating CPU and sleep, a thread writing to
/// disk (D), a spinner kept off the CPU by others (R), and two pool threads that only
/// wait. Thread times are exact (from the kernel) for the worker and the disk thread;
/// the others have none, so the views fall back to their samples.
fn samples() -> Vec<S> {
    let sleep = Class::OffCpu(ThreadState::Sleeping);
    let disk = Class::OffCpu(ThreadState::Uninterruptible);
    let run = Class::OffCpu(ThreadState::Runnable);
    let mut v: Vec<S> = Vec::new();
    for i in 0..100u64 {
        let t = i * PERIOD;
        // Worker 501: 50 ms on, 50 ms asleep.
        if (i / 5) % 2 == 0 {
            v.push((t, 501, 0, Class::OnCpu, 1));
        } else if i % 5 == 4 {
            v.push((t, 501, 1, sleep, 5));
        }
        // Disk 502: runs 10 ms in flush, then 30 ms in fsync, over and over.
        if i % 4 == 0 {
            v.push((t, 502, 2, Class::OnCpu, 1));
        } else if i % 4 == 3 {
            v.push((t, 502, 3, disk, 3));
        }
        // Spinner 505: runs 4 of 5 periods, waits for a CPU the fifth.
        if i % 5 == 4 {
            v.push((t, 505, 5, run, 1));
        } else {
            v.push((t, 505, 5, Class::OnCpu, 1));
        }
    }
    // The pool: each wakes once at the end after a second asleep.
    v.push((99 * PERIOD, 503, 4, sleep, 99));
    v.push((99 * PERIOD + 1, 504, 4, sleep, 99));
    v.sort_by_key(|s| s.0);
    v
}

fn thread_names() -> [(u32, &'static str); 5] {
    [
        (501, "worker"),
        (502, "disk"),
        (503, "pool-1"),
        (504, "pool-2"),
        (505, "spinner"),
    ]
}

/// The capture as bytes: written by the format's writer, as the recorder would.
fn capture_bytes(off_cpu: bool) -> Vec<u8> {
    let session = SessionHeader {
        host: "vm".into(),
        freq_hz: 100,
        targets: vec![PID],
        start_mono_ns: START,
        start_wall_ns: 1_795_000_000_000_000_000,
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).expect("writer");
    w.push(Record::String {
        id: 0,
        text: "server.c".into(),
    })
    .expect("push");
    for (i, f) in FUNCTIONS.iter().enumerate() {
        w.push(Record::String {
            id: 1 + i as u32,
            text: (*f).into(),
        })
        .expect("push");
    }
    w.push(Record::Module(Module {
        id: 0,
        kind: ModuleKind::Elf,
        path: "/usr/bin/server".into(),
        build_id: vec![],
    }))
    .expect("push");
    for i in 0..FUNCTIONS.len() as u32 {
        w.push(Record::Frame(Frame {
            id: i,
            module: 0,
            addr: FrameAddr::FileOffset(u64::from(i) * 64),
        }))
        .expect("push");
        w.push(Record::Symbol(Symbol {
            frame: i,
            function: 1 + i,
            loc: SourceLoc {
                file: Some(0),
                line: 10 + i,
            },
            inlined: vec![],
        }))
        .expect("push");
    }
    for (id, frames) in STACKS.iter().enumerate() {
        w.push(Record::Stack(Stack {
            id: id as u32,
            frames: frames.to_vec(),
        }))
        .expect("push");
    }
    w.push(Record::Process(Process {
        pid: PID,
        name: "server".into(),
        start_ns: START,
        ..Process::default()
    }))
    .expect("push");
    for (tid, name) in thread_names() {
        w.push(Record::Thread(Thread {
            tid,
            pid: PID,
            name: name.into(),
            time_ns: START,
        }))
        .expect("push");
    }
    if off_cpu {
        w.push(Record::OffCpu(OffCpu { period_ns: PERIOD }))
            .expect("push");
    }
    for (t, tid, stack, class, periods) in samples() {
        let sample = Sample {
            time_ns: START + t,
            tid,
            cpu: 0,
            stack,
        };
        match class {
            Class::OnCpu => w.push_sample(sample).expect("sample"),
            Class::OffCpu(state) if off_cpu => w
                .push_off_cpu_sample(OffCpuSample {
                    sample,
                    periods,
                    state,
                })
                .expect("sample"),
            Class::OffCpu(_) => {}
        }
    }
    if off_cpu {
        // Exact times for two threads: the worker ran 0.50 s and slept 0.50 s; the disk
        // thread's kernel accounting differs a little from its samples (as it would).
        for t in [
            ThreadTimes {
                tid: 501,
                pid: PID,
                first_ns: START,
                last_ns: START + 1_000_000_000,
                on_cpu_ns: 500_000_000,
                sleeping_ns: 500_000_000,
                ..ThreadTimes::default()
            },
            ThreadTimes {
                tid: 502,
                pid: PID,
                first_ns: START,
                last_ns: START + 1_000_000_000,
                on_cpu_ns: 240_000_000,
                sleeping_ns: 10_000_000,
                uninterruptible_ns: 740_000_000,
                runnable_ns: 10_000_000,
                ..ThreadTimes::default()
            },
        ] {
            w.push(Record::ThreadTimes(t)).expect("push");
        }
    }
    w.finish(0, START + 1_000_000_000, 0).expect("finish")
}

fn state_of(off_cpu: bool, w: u16, h: u16) -> State {
    let mut c = Capture::from_bytes(&capture_bytes(off_cpu)).expect("capture reads");
    c.path = PathBuf::from("server.hsp");
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, w, h));
    s.finished = true;
    s.refresh();
    s
}

fn fixture(name: &str, w: u16, h: u16) -> State {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/captures")
        .join(format!("{name}.hsp"));
    let mut c = Capture::open(&path).expect("fixture capture opens");
    c.path = PathBuf::from(format!("{name}.hsp"));
    let opts = Options {
        mode: Mode::Replay,
        palette: Palette::new(ColorMode::Ansi),
        links: None,
        symbol_dirs: Vec::new(),
        no_interpreter: false,
    };
    let mut s = State::new(Data::new(c), opts, Rect::new(0, 0, w, h));
    s.finished = true;
    s.refresh();
    s
}

/// The screen drawn at `now` (the clock notices are measured against).
fn buffer(s: &mut State, now: Instant) -> Buffer {
    s.refresh();
    let mut t = Terminal::new(TestBackend::new(s.size.width, s.size.height)).expect("terminal");
    t.draw(|f| draw(s, f.buffer_mut(), now)).expect("draw");
    t.backend().buffer().clone()
}

fn screen(s: &mut State, now: Instant) -> String {
    s.refresh();
    let mut t = Terminal::new(TestBackend::new(s.size.width, s.size.height)).expect("terminal");
    t.draw(|f| draw(s, f.buffer_mut(), now)).expect("draw");
    t.backend().to_string()
}

fn press(s: &mut State, keys: &[Key], now: Instant) {
    for &k in keys {
        handle_key(s, k, now);
    }
}

/// What `metric` weighs the capture's samples to, from the records and `Metric::periods`
/// alone: in total, and per thread.
fn expected(metric: Metric, tids: &[u32]) -> (u64, Vec<(u32, u64)>) {
    let mut total = 0;
    let mut per = Vec::new();
    for &tid in tids {
        let n: u64 = samples()
            .iter()
            .filter(|s| s.1 == tid)
            .map(|s| metric.periods(s.3, u64::from(s.4)))
            .sum();
        per.push((tid, n));
        total += n;
    }
    (total, per)
}

fn all_tids() -> Vec<u32> {
    thread_names().iter().map(|t| t.0).collect()
}

#[test]
fn toggling_the_metric_weighs_every_total_as_metric_periods_says() {
    let now = Instant::now();
    let mut s = state_of(true, 140, 30);
    for (i, want) in [Metric::Cpu, Metric::OffCpu, Metric::Wall, Metric::Cpu]
        .into_iter()
        .enumerate()
    {
        if i > 0 {
            press(&mut s, &[Key::Char('m')], now);
        }
        assert_eq!(s.metric, want);
        let (total, per) = expected(want, &all_tids());
        let f = s.fold().expect("fold");
        assert_eq!(f.total, total, "{want}");
        for (tid, n) in per {
            let idx = s
                .data
                .threads
                .iter()
                .position(|t| t.tid == tid)
                .expect("tid");
            assert_eq!(f.per_thread[idx], n, "{want} tid {tid}");
        }
        // The timeline strip and the flat rows weigh the same way.
        let strip: u64 = s.cache.timeline.buckets.iter().map(|b| b.samples).sum();
        assert_eq!(strip, total, "{want}");
        let flat_self: u64 = f.flat.iter().map(|r| r.self_samples).sum();
        assert_eq!(flat_self, total, "{want}");
    }
    // Under off-CPU, every leaf is a state frame, and each state's frame holds exactly
    // the periods of that state.
    press(&mut s, &[Key::Char('m')], now);
    let f = s.fold().expect("fold");
    for st in ThreadState::ALL {
        let want: u64 = samples()
            .iter()
            .filter(|x| x.3 == Class::OffCpu(st))
            .map(|x| u64::from(x.4))
            .sum();
        let row = f
            .flat
            .iter()
            .find(|r| &*r.key.function == metric::state_frame(st))
            .expect("state frame row");
        assert_eq!(
            (&*row.key.module, row.self_samples),
            (metric::OFF_CPU_MODULE, want)
        );
    }
}

#[test]
fn views_of_a_capture_with_off_cpu_time() {
    let now = Instant::now();
    let mut s = state_of(true, 140, 28);
    let out = screen(&mut s, now);
    assert!(
        out.contains("metric CPU") && !out.contains("[off-CPU"),
        "{out}"
    );
    insta::assert_snapshot!("offcpu_flat_cpu", out);
    press(&mut s, &[Key::Char('m')], now);
    let out = screen(&mut s, now);
    assert!(out.contains("weighing by off-CPU time"), "{out}");
    assert!(out.contains("[off-CPU: D uninterruptible]"), "{out}");
    insta::assert_snapshot!("offcpu_flat_off_cpu", out);
    press(&mut s, &[Key::Char('m'), Key::Char('f')], now);
    let out = screen(&mut s, now);
    assert!(out.contains("metric wall-clock"), "{out}");
    insta::assert_snapshot!("offcpu_flame_wall", out);
    press(&mut s, &[Key::Char('T')], now);
    let out = screen(&mut s, now);
    insta::assert_snapshot!("offcpu_threads", out);
}

#[test]
fn state_frames_are_drawn_in_their_states_colours() {
    let now = Instant::now();
    // Wide enough for the narrowest state's bar (R: 20 of 343 periods) to show its name.
    let mut s = state_of(true, 300, 28);
    press(&mut s, &[Key::Char('m'), Key::Char('f')], now);
    let buf = buffer(&mut s, now);
    let pal = s.opts.palette;
    let mut seen = Vec::new();
    for st in ThreadState::ALL {
        // Bars narrower than their names show a prefix.
        let name = &metric::state_frame(st)[..11];
        let at = (0..buf.area.height).find_map(|y| {
            let line: String = (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect();
            line.find(name)
                .map(|x| (line[..x].chars().count() as u16, y))
        });
        let (x, y) = at.unwrap_or_else(|| panic!("{name} drawn"));
        let bg = buf[(x + 1, y)].bg;
        assert_eq!(bg, pal.state_color(st), "{name}");
        seen.push(bg);
    }
    assert!(seen[0] != seen[1] && seen[1] != seen[2] && seen[0] != seen[2]);
    // Code keeps the function colours.
    let y = (0..buf.area.height)
        .find(|&y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol().to_string())
                .collect::<String>()
                .contains("futex_wait")
        })
        .expect("futex_wait drawn");
    let x = (0..buf.area.width)
        .find(|&x| buf[(x, y)].symbol() == "f" && buf[(x + 1, y)].symbol() == "u")
        .expect("its cell");
    assert_eq!(
        buf[(x, y)].bg,
        pal.frame_color(FrameKind::User, "futex_wait")
    );
}

#[test]
fn threads_show_exact_times_when_the_capture_has_them_and_lanes_by_state() {
    let now = Instant::now();
    let mut s = state_of(true, 140, 28);
    press(&mut s, &[Key::Char('T')], now);
    let d = &s.data;
    let at = |tid: u32| d.threads.iter().position(|t| t.tid == tid).expect("tid");
    // Exact: the kernel's numbers, not the samples'.
    let disk = d.thread_totals(at(502));
    assert!(disk.exact);
    assert_eq!(
        (disk.on_cpu_ns, disk.off_cpu_ns, disk.wall_ns()),
        (
            240_000_000,
            [10_000_000, 740_000_000, 10_000_000],
            1_000_000_000
        )
    );
    // From samples: 80 CPU periods and 20 R periods of 10 ms.
    let spin = d.thread_totals(at(505));
    assert!(!spin.exact);
    assert_eq!(
        (spin.on_cpu_ns, spin.off_cpu_ns),
        (800_000_000, [0, 0, 200_000_000])
    );
    // The disk thread's lane is mostly D; a pool thread's is S across the capture, since
    // its one sample (at the end) stands for 0.99 s of sleep.
    let mut lane = |tid: u32| -> String {
        let buf = buffer(&mut s, now);
        let y = (0..buf.area.height)
            .find(|&y| {
                (0..buf.area.width)
                    .map(|x| buf[(x, y)].symbol().to_string())
                    .collect::<String>()
                    .contains(&format!(" {tid} "))
            })
            .expect("thread row");
        (hotspot_replay_lane_x()..buf.area.width)
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect()
    };
    let disk_lane = lane(502);
    let d_cols = disk_lane.matches('D').count();
    assert!(
        d_cols * 2 > disk_lane.chars().count(),
        "disk lane {disk_lane:?}"
    );
    let pool = lane(503);
    assert!(
        pool.trim_end().chars().all(|c| c == 'S'),
        "pool lane {pool:?}"
    );
    assert!(
        pool.matches('S').count() >= pool.chars().count() - 2,
        "{pool:?}"
    );
    let spinner = lane(505);
    assert!(
        spinner.contains('█') || spinner.contains('▓'),
        "{spinner:?}"
    );
}

/// Where the lanes start in the off-CPU layout of the threads view.
fn hotspot_replay_lane_x() -> u16 {
    140 - hotspot_tui::layout::lane_width(140)
}

#[test]
fn the_idle_key_hides_threads_that_only_wait() {
    let now = Instant::now();
    let mut s = state_of(true, 140, 28);
    press(&mut s, &[Key::Char('m')], now);
    let before = s.fold().expect("fold").total;
    press(&mut s, &[Key::Char('i')], now);
    assert!(s.threads.hide_idle);
    let busy = [501, 502, 505];
    let (want, _) = expected(Metric::OffCpu, &busy);
    assert_eq!(s.fold().expect("fold").total, want);
    assert_eq!(before - want, 2 * 99, "the two pool threads' sleep");
    assert_eq!(s.excluded().into_iter().collect::<Vec<_>>(), vec![503, 504]);
    let rows: Vec<u32> = s
        .thread_rows()
        .iter()
        .map(|&i| s.data.threads[i].tid)
        .collect();
    assert_eq!(rows, busy);
    press(&mut s, &[Key::Char('T')], now);
    let out = screen(&mut s, now);
    assert!(
        out.contains("2 idle threads hidden (under 1% on a CPU)"),
        "{out}"
    );
    assert!(out.contains("2 idle hidden (i shows)"), "{out}");
    assert!(!out.contains("pool-1") && out.contains("spinner"), "{out}");
    insta::assert_snapshot!("offcpu_threads_idle_hidden", out);
    // The hidden threads are not toggled by the rows that took their place.
    press(&mut s, &[Key::Down, Key::Down, Key::Enter], now);
    assert_eq!(
        s.threads.excluded.iter().copied().collect::<Vec<_>>(),
        vec![505]
    );
    press(&mut s, &[Key::Char('i')], now);
    assert!(!s.threads.hide_idle);
    assert_eq!(s.excluded().into_iter().collect::<Vec<_>>(), vec![505]);
}

#[test]
fn a_capture_without_off_cpu_data_says_so_and_nothing_else_changes() {
    let now = Instant::now();
    for mut s in [state_of(false, 110, 24), fixture("phased", 110, 24)] {
        let before = screen(&mut s, now);
        let total = s.fold().expect("fold").total;
        let refolds = s.cache.refolds;
        press(&mut s, &[Key::Char('m')], now);
        assert_eq!(s.metric, Metric::Cpu);
        assert_eq!(s.notice.as_ref().map(|n| n.0.as_str()), Some(NO_OFF_CPU));
        assert_eq!(s.fold().expect("fold").total, total);
        assert_eq!(s.cache.refolds, refolds, "no refold");
        let after = screen(&mut s, now);
        // Only the footer (where what a key did shows) differs.
        let (b, a): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
        let last = a.len() - 1;
        assert_eq!(b[..last], a[..last]);
        assert!(a[last].contains(NO_OFF_CPU), "{}", a[last]);
        assert!(!a[1].contains("metric"), "{}", a[1]);
    }
    // The same capture without its off-CPU records folds to the CPU profile of the one
    // with them.
    let mut with = state_of(true, 110, 24);
    let mut without = state_of(false, 110, 24);
    assert_eq!(
        with.fold().expect("fold").flat,
        without.fold().expect("fold").flat
    );
    assert!(!screen(&mut without, Instant::now()).contains("off-CPU"));
    let _ = screen(&mut with, Instant::now());
    assert_eq!(with.view, View::Flat);
}
