//! The recorder's side of `--off-cpu` without root: a scripted event source hands it
//! off-CPU samples, exit times and the threads left at the end, and the capture must
//! hold them as format 1.3 says.

mod scripted;

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hotspot_format::{FrameAddr, Record, ThreadState, ThreadTimes, read_all};
use hotspot_recorder::event::{BlockedSample, Event, OpenThreadTimes, StackEnd, StackSample};
use hotspot_recorder::{ConvertConfig, RecordConfig, StopReason};
use scripted::{ScriptedSource, comm, fake_proc, record};

const PERIOD_NS: u64 = 2_004_008;
/// When the fake kernel stopped accounting.
const END_NS: u64 = 50_000;

#[inline(never)]
fn blocked_here(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(17))
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\nffffffff81000100 t bpf_trace_run1\n\
     ffffffff81000200 T __schedule\nffffffff81000300 T do_nanosleep\n\
     ffffffffa0000000 t bpf_prog_0123456789abcdef_hs_off_cpu_stack\n";

fn sample(time_ns: u64, tid: u32, kernel: Vec<u64>) -> StackSample {
    let me = std::process::id();
    std::hint::black_box(blocked_here(1));
    StackSample {
        time_ns,
        pid: me,
        tid,
        cpu: 0,
        comm: comm("waiter"),
        user: vec![blocked_here as *const () as u64],
        kernel,
        regs: None,
        stack: Vec::new(),
        stack_end: StackEnd::Cap,
        python: None,
    }
}

/// Times that add up, as the kernel keeps them.
fn times(
    first_ns: u64,
    last_ns: u64,
    on_cpu_ns: u64,
    state: Option<ThreadState>,
) -> OpenThreadTimes {
    OpenThreadTimes {
        pid: std::process::id(),
        first_ns,
        last_ns,
        on_cpu_ns,
        sleeping_ns: last_ns - first_ns - on_cpu_ns,
        uninterruptible_ns: 0,
        runnable_ns: 0,
        pending_ns: 5,
        state,
    }
}

#[test]
fn off_cpu_events_become_format_1_3_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    let (exited, alive, late) = (me + 1, me + 2, me + 3);
    // The tracing frames at the leaf of an off-CPU kernel stack, then the blocked path.
    let off_kernel = vec![
        0xffffffffa0000010,
        0xffffffff81000110,
        0xffffffff81000210,
        0xffffffff81000310,
    ];
    let off = |t, periods, state| {
        Event::OffCpu(BlockedSample {
            sample: sample(t, exited, off_kernel.clone()),
            periods,
            state,
        })
    };
    let script = vec![
        vec![
            Event::Sample(sample(1_000, exited, vec![0xffffffff81000210])),
            off(2_000, 3, ThreadState::Sleeping),
        ],
        vec![
            off(3_000, 1, ThreadState::Runnable),
            Event::ThreadTimes {
                tid: exited,
                times: times(100, 4_000, 1_000, None),
            },
        ],
        vec![Event::Exit {
            time_ns: 45_000,
            pid: me,
        }],
        // Drained after sampling stopped: an exit the kernel wrote after it stopped
        // accounting at END_NS, cut back to it.
        vec![Event::ThreadTimes {
            tid: late,
            times: times(100, END_NS + 10_000, 20_000, None),
        }],
    ];
    let mut source = ScriptedSource {
        lost: vec![0],
        lost_off_cpu: [2, 5],
        accounting_end: Some(END_NS),
        // Asleep since 30_000; the late thread is left in the map too, and must not be
        // written twice.
        live: vec![
            (
                alive,
                times(200, 30_000, 10_000, Some(ThreadState::Sleeping)),
            ),
            (late, times(100, END_NS, 20_000, None)),
        ],
        ..ScriptedSource::new(script)
    };
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![me],
            off_cpu_period_ns: Some(PERIOD_NS),
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(20),
        ..RecordConfig::default()
    };
    let stop = AtomicBool::new(false);
    let (summary, bytes) = record(&mut source, &cfg, dir.path(), &stop);
    assert_eq!(summary.reason, StopReason::TargetsExited);
    assert_eq!(summary.totals.counts.samples, 1);
    assert_eq!(summary.totals.counts.off_cpu_samples, 2);
    assert_eq!(summary.totals.counts.lost_off_cpu, 5);

    let (records, diag) = read_all(&bytes).expect("reads back");
    assert!(
        diag.corrupt_count == 0 && diag.unknown_kinds.is_empty(),
        "{diag:?}"
    );
    let defs: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::OffCpu(o) => Some(o.period_ns),
            _ => None,
        })
        .collect();
    assert!(
        !defs.is_empty() && defs.iter().all(|&p| p == PERIOD_NS),
        "{defs:?}"
    );

    let strings = scripted::strings(&records);
    let frame_names: HashMap<u32, String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Frame(f) => match f.addr {
                FrameAddr::KernelSymbol { symbol, .. } => Some((f.id, strings[&symbol].clone())),
                FrameAddr::FileOffset(_) => None,
            },
            _ => None,
        })
        .collect();
    let stacks: HashMap<u32, Vec<u32>> = records
        .iter()
        .filter_map(|r| match r {
            Record::Stack(s) => Some((s.id, s.frames.clone())),
            _ => None,
        })
        .collect();
    let off_cpu: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::OffCpuSamples(b) => Some(b.samples.clone()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        off_cpu
            .iter()
            .map(|s| (s.sample.time_ns, s.sample.tid, s.periods, s.state))
            .collect::<Vec<_>>(),
        vec![
            (2_000, exited, 3, ThreadState::Sleeping),
            (3_000, exited, 1, ThreadState::Runnable)
        ]
    );
    // The stack it blocked in, kernel leaf first, without the program that took it; the
    // user frame is normalised as in a CPU sample.
    let frames = &stacks[&off_cpu[0].sample.stack];
    let kernel: Vec<&str> = frames
        .iter()
        .filter_map(|f| frame_names.get(f).map(String::as_str))
        .collect();
    assert_eq!(kernel, ["__schedule", "do_nanosleep"]);
    assert_eq!(frames.len(), 3, "two kernel frames and the user one");

    let thread_times: Vec<ThreadTimes> = records
        .iter()
        .filter_map(|r| match r {
            Record::ThreadTimes(t) => Some(*t),
            _ => None,
        })
        .collect();
    let by_tid = |tid| -> Vec<ThreadTimes> {
        thread_times
            .iter()
            .filter(|t| t.tid == tid)
            .copied()
            .collect()
    };
    assert_eq!(
        by_tid(exited),
        vec![ThreadTimes {
            tid: exited,
            pid: me,
            first_ns: 100,
            last_ns: 4_000,
            on_cpu_ns: 1_000,
            sleeping_ns: 2_900,
            uninterruptible_ns: 0,
            runnable_ns: 0,
            exited: true,
        }]
    );
    // Asleep from 30_000 to the end of accounting.
    let a = by_tid(alive);
    assert_eq!(a.len(), 1);
    assert_eq!(
        (a[0].last_ns, a[0].on_cpu_ns, a[0].sleeping_ns, a[0].exited),
        (END_NS, 10_000, END_NS - 200 - 10_000, false)
    );
    // Its record ran on the CPU to END_NS + 10_000: cut back to END_NS, and written once.
    let l = by_tid(late);
    assert_eq!(l.len(), 1, "{l:?}");
    assert_eq!(
        (l[0].last_ns, l[0].on_cpu_ns, l[0].exited),
        (END_NS, 20_000 - 10_000, false)
    );
    for t in &thread_times {
        assert_eq!(t.wall_ns(), t.last_ns - t.first_ns, "{t:?}");
    }

    let lost: u64 = records
        .iter()
        .filter_map(|r| match r {
            Record::LostOffCpu(l) => Some(l.count),
            _ => None,
        })
        .sum();
    assert_eq!(lost, 5);
}

#[test]
fn a_capture_without_off_cpu_has_no_off_cpu_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    let mut source = ScriptedSource {
        lost: vec![0],
        ..ScriptedSource::new(vec![
            vec![Event::Sample(sample(1_000, me, vec![]))],
            vec![Event::Exit {
                time_ns: 2_000,
                pid: me,
            }],
        ])
    };
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![me],
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(20),
        ..RecordConfig::default()
    };
    let stop = AtomicBool::new(false);
    let (_, bytes) = record(&mut source, &cfg, dir.path(), &stop);
    let (records, _) = read_all(&bytes).expect("reads back");
    assert!(records.iter().all(|r| !matches!(
        r,
        Record::OffCpu(_)
            | Record::OffCpuSamples(_)
            | Record::ThreadTimes(_)
            | Record::LostOffCpu(_)
    )));
}
