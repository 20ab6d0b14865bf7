//! The one way off-CPU samples come in (format 1.3): a capture read into memory keeps them
//! with their weight and state, a tally counts exactly what its metric counts, and the
//! model ends each off-CPU stack in its state's frame, with and without kernel frames.

use hotspot_format::{
    Frame, FrameAddr, Module, ModuleKind, OffCpu, OffCpuSample, Record, Sample, SessionHeader,
    Stack, Symbol, ThreadState, ThreadTimes, Writer,
};
use hotspot_replay::Capture;
use hotspot_replay::kind::FrameKind;
use hotspot_replay::metric::{self, Class, Metric};
use hotspot_replay::model::{Hide, Profile};
use hotspot_replay::tally::Tally;

const PERIOD: u64 = 1_000_000_000 / 250;

/// A capture at 250 Hz: 100 CPU samples on stack 0 (main → spin), off-CPU samples on
/// stack 1 (main → wait → a kernel frame): 3 × 5 periods S, 2 × 1 period D, 1 × 4 R; and
/// two thread-times records for tid 7 (reused after an exit).
fn capture() -> Vec<u8> {
    let session = SessionHeader {
        freq_hz: 250,
        start_mono_ns: 1_000,
        ..SessionHeader::default()
    };
    let mut w = Writer::new(Vec::new(), session).expect("writer");
    let mut push = |r| w.push(r).expect("record");
    push(Record::OffCpu(OffCpu { period_ns: PERIOD }));
    for (id, kind, path) in [
        (0, ModuleKind::Elf, "/bin/app"),
        (1, ModuleKind::Kernel, "[kernel.kallsyms]"),
    ] {
        push(Record::Module(Module {
            id,
            kind,
            path: path.into(),
            build_id: vec![],
        }));
    }
    let names = ["main", "spin", "wait", "schedule"];
    for (i, name) in names.iter().enumerate() {
        let id = i as u32;
        push(Record::String {
            id,
            text: name.to_string(),
        });
        let (module, addr) = if *name == "schedule" {
            (
                1,
                FrameAddr::KernelSymbol {
                    symbol: id,
                    offset: 4,
                },
            )
        } else {
            (0, FrameAddr::FileOffset(0x1000 * (u64::from(id) + 1)))
        };
        push(Record::Frame(Frame { id, module, addr }));
        push(Record::Symbol(Symbol {
            frame: id,
            function: id,
            ..Symbol::default()
        }));
    }
    // Leaf first.
    push(Record::Stack(Stack {
        id: 0,
        frames: vec![1, 0],
    }));
    push(Record::Stack(Stack {
        id: 1,
        frames: vec![3, 2, 0],
    }));
    for t in [(7, 10, 1_000, 20, 3), (7, 10, 2_000, 30, 0)] {
        push(Record::ThreadTimes(ThreadTimes {
            tid: t.0,
            pid: t.1,
            first_ns: t.2,
            last_ns: t.2 + 500,
            on_cpu_ns: t.3,
            sleeping_ns: 400,
            uninterruptible_ns: t.4,
            runnable_ns: 1,
            exited: t.2 == 1_000,
        }));
    }
    for i in 0..100u64 {
        w.push_sample(Sample {
            time_ns: 10_000 + i * PERIOD,
            tid: 7,
            cpu: 0,
            stack: 0,
        })
        .expect("sample");
    }
    let waits = [
        (5, ThreadState::Sleeping),
        (5, ThreadState::Sleeping),
        (5, ThreadState::Sleeping),
        (1, ThreadState::Uninterruptible),
        (1, ThreadState::Uninterruptible),
        (4, ThreadState::Runnable),
    ];
    for (i, (periods, state)) in waits.into_iter().enumerate() {
        w.push_off_cpu_sample(OffCpuSample {
            sample: Sample {
                time_ns: 20_000 + i as u64 * PERIOD,
                tid: 7,
                cpu: 1,
                stack: 1,
            },
            periods,
            state,
        })
        .expect("off-cpu sample");
    }
    w.finish(0, 99 * PERIOD, 0).expect("finish")
}

#[test]
fn a_capture_in_memory_keeps_off_cpu_samples_and_thread_times() {
    let c = Capture::from_bytes(&capture()).expect("capture");
    // Written by this writer: the current version.
    assert_eq!(
        c.version,
        (hotspot_format::header::MAJOR, hotspot_format::header::MINOR)
    );
    assert_eq!(c.off_cpu, Some(OffCpu { period_ns: PERIOD }));
    assert_eq!(c.period_ns(Metric::OffCpu), PERIOD);
    assert_eq!(c.period_ns(Metric::Wall), PERIOD);
    assert_eq!(c.samples.len(), 100, "CPU samples only");
    assert_eq!(c.off_cpu_samples.len(), 6);
    assert_eq!(c.off_cpu_samples[5].periods, 4);
    assert_eq!(c.off_cpu_samples[5].state, ThreadState::Runnable);
    // The two lifetimes of tid 7, summed.
    let t = c.thread_times[&7];
    assert_eq!((t.first_ns, t.last_ns), (1_000, 2_500));
    assert_eq!(
        (t.on_cpu_ns, t.sleeping_ns, t.uninterruptible_ns),
        (50, 800, 3)
    );
    assert_eq!(t.runnable_ns, 2);
    assert!(!t.exited, "the later record's");
    assert_eq!(t.wall_ns(), 50 + 800 + 3 + 2);
}

#[test]
fn each_metric_tallies_its_own_periods() {
    let c = Capture::from_bytes(&capture()).expect("capture");
    let cpu = Tally::of_capture(&c, Metric::Cpu);
    let off = Tally::of_capture(&c, Metric::OffCpu);
    let wall = Tally::of_capture(&c, Metric::Wall);
    assert_eq!(cpu.samples, 100);
    assert_eq!(off.samples, 15 + 2 + 4);
    assert_eq!(wall.samples, 121);
    assert_eq!(
        cpu.span,
        Some((10_000, 10_000 + 99 * PERIOD)),
        "no off-CPU time"
    );
    assert_eq!(off.span, Some((20_000, 20_000 + 5 * PERIOD)));
    let by_class = |t: &Tally, class| {
        t.tally
            .iter()
            .filter(|((_, _, c), _)| *c == class)
            .map(|(_, n)| n)
            .sum::<u64>()
    };
    assert_eq!(by_class(&wall, Class::OffCpu(ThreadState::Sleeping)), 15);
    assert_eq!(
        by_class(&wall, Class::OffCpu(ThreadState::Uninterruptible)),
        2
    );
    assert_eq!(by_class(&wall, Class::OffCpu(ThreadState::Runnable)), 4);
    assert_eq!(by_class(&off, Class::OnCpu), 0);
    assert_eq!(by_class(&cpu, Class::OffCpu(ThreadState::Sleeping)), 0);
    // The CPU tally of this capture is the tally of its CPU samples alone.
    assert_eq!(cpu.tally.len(), 1);
    assert_eq!(cpu.tally.get(&(7, 0, Class::OnCpu)), Some(&100));
}

#[test]
fn an_off_cpu_stack_ends_in_its_state_frame() {
    let c = Capture::from_bytes(&capture()).expect("capture");
    let mut p = Profile::default();
    let names = |p: &mut Profile, class, no_kernel| {
        let s = p
            .stack_of_class(&c, 1, class, Hide::kernel(no_kernel))
            .expect("stack");
        let mut frames = Vec::new();
        p.path(s, &mut frames);
        frames
            .iter()
            .map(|&f| p.frame_name(f).function.to_string())
            .collect::<Vec<_>>()
    };
    let d = Class::OffCpu(ThreadState::Uninterruptible);
    assert_eq!(
        names(&mut p, d, false),
        ["main", "wait", "schedule", "[off-CPU: D uninterruptible]"]
    );
    assert_eq!(
        names(&mut p, d, true),
        ["main", "wait", "[off-CPU: D uninterruptible]"]
    );
    assert_eq!(
        names(&mut p, Class::OnCpu, false),
        ["main", "wait", "schedule"]
    );
    let s = p.stack_of_class(&c, 1, d, Hide::NOTHING).expect("stack");
    let mut frames = Vec::new();
    p.path(s, &mut frames);
    let leaf = p.frame_name(*frames.last().expect("leaf"));
    assert_eq!(&*leaf.module, metric::OFF_CPU_MODULE);
    assert_eq!(leaf.kind, FrameKind::OffCpu(ThreadState::Uninterruptible));
    assert_eq!(
        metric::state_of_frame(&leaf.module, &leaf.function),
        Some(ThreadState::Uninterruptible)
    );
}
