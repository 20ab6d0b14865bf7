//! The recorder's side of `--off-cpu` without root: a scripted event source hands it
//! off-CPU samples, exit times and the threads left at the end, and the capture must
//! hold them as format 1.3 says.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hotspot_format::{FrameAddr, Record, ThreadState, ThreadTimes, read_all};
use hotspot_recorder::bpf::{
    BpfError, EventSource, RawEvent, RawOffCpu, RawSample, RawThread, StackEnd,
};
use hotspot_recorder::{RecordConfig, StopReason};

const PERIOD_NS: u64 = 2_004_008;
/// When the fake kernel stopped accounting.
const END_NS: u64 = 50_000;

struct FakeSource {
    script: VecDeque<Vec<RawEvent>>,
    lost_off_cpu: Vec<u64>,
    live: Vec<(u32, RawThread)>,
    stopped: bool,
}

impl EventSource for FakeSource {
    fn add_target(&mut self, _: u32) -> Result<(), BpfError> {
        Ok(())
    }
    fn remove_target(&mut self, _: u32) -> Result<(), BpfError> {
        Ok(())
    }
    fn poll(&mut self, timeout: Duration, out: &mut Vec<RawEvent>) -> Result<(), BpfError> {
        match self.script.pop_front() {
            Some(batch) => out.extend(batch),
            None => std::thread::sleep(timeout.min(Duration::from_millis(10))),
        }
        Ok(())
    }
    fn lost_per_cpu(&mut self) -> Result<Vec<u64>, BpfError> {
        Ok(vec![0])
    }
    fn stop_sampling(&mut self) -> Result<(), BpfError> {
        self.stopped = true;
        Ok(())
    }
    fn lost_off_cpu(&mut self) -> Result<u64, BpfError> {
        // Cumulative: the first while sampling, the second once stopped (the last flush).
        Ok(self.lost_off_cpu[usize::from(self.stopped)])
    }
    fn accounting_end(&self) -> Option<u64> {
        self.stopped.then_some(END_NS)
    }
    fn take_thread_times(&mut self) -> Result<Vec<(u32, RawThread)>, BpfError> {
        assert!(self.stopped, "thread times taken before sampling stopped");
        Ok(std::mem::take(&mut self.live))
    }
}

#[inline(never)]
fn blocked_here(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(17))
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\nffffffff81000100 t bpf_trace_run1\n\
     ffffffff81000200 T __schedule\nffffffff81000300 T do_nanosleep\n\
     ffffffffa0000000 t bpf_prog_0123456789abcdef_hs_off_cpu_stack\n";

fn fake_proc(dir: &Path) {
    let me = std::process::id();
    std::os::unix::fs::symlink(format!("/proc/{me}"), dir.join(me.to_string()))
        .expect("symlink pid");
    std::os::unix::fs::symlink("/proc/self", dir.join("self")).expect("symlink self");
    std::fs::write(dir.join("kallsyms"), KALLSYMS).expect("kallsyms");
}

fn sample(time_ns: u64, tid: u32, kernel: Vec<u64>) -> RawSample {
    let me = std::process::id();
    std::hint::black_box(blocked_here(1));
    let mut comm = [0u8; 16];
    comm[..6].copy_from_slice(b"waiter");
    RawSample {
        time_ns,
        pid: me,
        tid,
        cpu: 0,
        comm,
        user: vec![blocked_here as *const () as u64],
        kernel,
        regs: None,
        stack: Vec::new(),
        stack_end: StackEnd::Cap,
    }
}

/// Times that add up, as the kernel keeps them.
fn times(first_ns: u64, last_ns: u64, on_cpu_ns: u64, state: u32) -> RawThread {
    RawThread {
        first_ns,
        last_ns,
        on_cpu_ns,
        sleeping_ns: last_ns - first_ns - on_cpu_ns,
        uninterruptible_ns: 0,
        runnable_ns: 0,
        pending_ns: 5,
        tgid: std::process::id(),
        state,
        total_ns: 0,
    }
}

#[test]
fn off_cpu_events_become_format_1_3_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path());
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
        RawEvent::OffCpu(RawOffCpu {
            sample: sample(t, exited, off_kernel.clone()),
            periods,
            state,
        })
    };
    let script = VecDeque::from(vec![
        vec![
            RawEvent::Sample(sample(1_000, exited, vec![0xffffffff81000210])),
            off(2_000, 3, ThreadState::Sleeping),
        ],
        vec![
            off(3_000, 1, ThreadState::Runnable),
            RawEvent::ThreadTimes {
                tid: exited,
                times: times(100, 4_000, 1_000, 0),
            },
        ],
        vec![RawEvent::Exit {
            time_ns: 45_000,
            pid: me,
        }],
        // Drained after sampling stopped: an exit the kernel wrote after it stopped
        // accounting at END_NS, cut back to it.
        vec![RawEvent::ThreadTimes {
            tid: late,
            times: times(100, END_NS + 10_000, 20_000, 0),
        }],
    ]);
    let mut source = FakeSource {
        script,
        lost_off_cpu: vec![2, 5],
        // Asleep since 30_000; the late thread is left in the map too, and must not be
        // written twice.
        live: vec![
            (alive, times(200, 30_000, 10_000, 1)),
            (late, times(100, END_NS, 20_000, 0)),
        ],
        stopped: false,
    };
    let writer = hotspot_format::Writer::new(Vec::new(), Default::default()).expect("writer");
    let cfg = RecordConfig {
        targets: vec![me],
        flush_every: Duration::from_millis(20),
        proc_root: dir.path().to_path_buf(),
        sys_root: dir.path().join("sys"),
        off_cpu_period_ns: Some(PERIOD_NS),
        ..RecordConfig::default()
    };
    let stop = AtomicBool::new(false);
    let (summary, bytes) =
        hotspot_recorder::run(&mut source, writer, &cfg, &stop, &mut |_| {}).expect("records");
    assert_eq!(summary.reason, StopReason::TargetsExited);
    assert_eq!(summary.progress.samples, 1);
    assert_eq!(summary.progress.off_cpu_samples, 2);
    assert_eq!(summary.progress.lost_off_cpu, 5);

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

    let strings: HashMap<u32, String> = records
        .iter()
        .filter_map(|r| match r {
            Record::String { id, text } => Some((*id, text.clone())),
            _ => None,
        })
        .collect();
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
    fake_proc(dir.path());
    let me = std::process::id();
    let mut source = FakeSource {
        script: VecDeque::from(vec![
            vec![RawEvent::Sample(sample(1_000, me, vec![]))],
            vec![RawEvent::Exit {
                time_ns: 2_000,
                pid: me,
            }],
        ]),
        lost_off_cpu: vec![0, 0],
        live: Vec::new(),
        stopped: false,
    };
    let writer = hotspot_format::Writer::new(Vec::new(), Default::default()).expect("writer");
    let cfg = RecordConfig {
        targets: vec![me],
        flush_every: Duration::from_millis(20),
        proc_root: dir.path().to_path_buf(),
        sys_root: dir.path().join("sys"),
        ..RecordConfig::default()
    };
    let stop = AtomicBool::new(false);
    let (_, bytes) =
        hotspot_recorder::run(&mut source, writer, &cfg, &stop, &mut |_| {}).expect("records");
    let (records, _) = read_all(&bytes).expect("reads back");
    assert!(records.iter().all(|r| !matches!(
        r,
        Record::OffCpu(_)
            | Record::OffCpuSamples(_)
            | Record::ThreadTimes(_)
            | Record::LostOffCpu(_)
    )));
}
