//! A flight recorder's segments without root: one recording, a scripted source, and a
//! segment ended after every batch. Each segment must read alone (every process, thread,
//! module, frame, stack and name its samples use defined in it), the source's cumulative
//! lost counts must be split between them, not repeated, and `--off-cpu`'s thread times
//! must be cut at each boundary so that the segments' parts add up to the whole.

mod scripted;

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hotspot_format::{
    ModuleKind, Record, SessionHeader, ThreadState, ThreadTimes, Writer, read_all,
};
use hotspot_recorder::event::{Event, OpenThreadTimes, StackEnd, StackSample};
use hotspot_recorder::host::Host;
use hotspot_recorder::live::ProcHost;
use hotspot_recorder::{
    ConvertConfig, RecordConfig, Recorder, RecorderError, Segments, StopReason, Summary, Totals,
};
use scripted::{ScriptedSource, comm, fake_proc};

#[inline(never)]
fn segment_leaf(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(29))
}

const KALLSYMS: &str = "ffffffff81000000 T _stext\nffffffff81000100 t do_thing\n";

/// Segments kept in memory.
#[derive(Default)]
struct Memory {
    done: Vec<(Vec<u8>, Totals)>,
}

impl Segments<Vec<u8>> for Memory {
    fn length(&self) -> Duration {
        // Shorter than the source's pace: every batch ends in a segment of its own.
        Duration::from_millis(1)
    }
    fn start(&mut self) -> Result<Writer<Vec<u8>>, RecorderError> {
        let header = SessionHeader {
            start_mono_ns: self.done.len() as u64,
            ..SessionHeader::default()
        };
        Ok(Writer::new(Vec::new(), header)?)
    }
    fn ended(&mut self, out: Vec<u8>, totals: &Totals) -> Result<(), RecorderError> {
        self.done.push((out, *totals));
        Ok(())
    }
}

fn sample(t: u64, tid: u32, name: &str) -> Event {
    let me = std::process::id();
    std::hint::black_box(segment_leaf(2));
    Event::Sample(StackSample {
        time_ns: t,
        pid: me,
        tid,
        cpu: 0,
        comm: comm(name),
        user: vec![segment_leaf as *const () as u64],
        kernel: vec![0xffffffff81000110],
        regs: None,
        stack: Vec::new(),
        stack_end: StackEnd::Cap,
        python: None,
    })
}

/// A thread of process `pid` accounted since 500 ns: 400 ns on the CPU, then asleep
/// since 900.
fn asleep_since_900(pid: u32) -> OpenThreadTimes {
    OpenThreadTimes {
        pid,
        first_ns: 500,
        last_ns: 900,
        on_cpu_ns: 400,
        sleeping_ns: 0,
        uninterruptible_ns: 0,
        runnable_ns: 0,
        pending_ns: 0,
        state: Some(ThreadState::Sleeping),
    }
}

/// One recording of this process with `--off-cpu` from `source`, a segment per batch,
/// `/proc` faked under `proc`.
fn record_segments(source: &mut ScriptedSource, proc: &Path) -> (Summary, Memory) {
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![std::process::id()],
            off_cpu_period_ns: Some(1_000_000),
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(2),
        ..RecordConfig::default()
    };
    let host = ProcHost::new(proc, proc.join("sys"));
    let recorder = Recorder::new(cfg, Box::new(host)).expect("set up");
    let mut memory = Memory::default();
    let stop = AtomicBool::new(false);
    let summary = recorder
        .run_segments(source, &mut memory, &stop, &mut |_| {})
        .expect("records");
    (summary, memory)
}

#[test]
fn every_segment_reads_alone_and_the_counts_are_split_not_repeated() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    let script = vec![
        vec![sample(1_000, me, "worker"), sample(1_500, me + 1, "helper")],
        vec![sample(2_000, me, "worker")],
        vec![sample(3_000, me, "worker"), sample(3_500, me + 1, "helper")],
        vec![Event::Exit {
            time_ns: 4_000,
            pid: me,
        }],
    ];
    let live = asleep_since_900(me);
    let mut source = ScriptedSource {
        lost: vec![0, 3],
        live: vec![(me, live)],
        pace: Duration::from_millis(5),
        ..ScriptedSource::new(script)
    };
    let (summary, memory) = record_segments(&mut source, dir.path());
    assert_eq!(summary.reason, StopReason::TargetsExited);
    assert!(memory.done.len() >= 4, "{} segments", memory.done.len());

    let (mut samples, mut lost) = (0, 0);
    let mut times: Vec<ThreadTimes> = Vec::new();
    let mut with_samples = 0;
    for (i, (bytes, totals)) in memory.done.iter().enumerate() {
        let (records, diag) = read_all(bytes).expect("a segment reads alone");
        assert!(
            diag.truncated.is_none() && diag.corrupt_count == 0,
            "{i}: {diag:?}"
        );
        // Each begins as a first capture does: how stacks are unwound comes first.
        let first = records
            .iter()
            .find(|r| !matches!(r, Record::Session(_) | Record::String { .. }));
        assert!(
            matches!(first, Some(Record::Unwinding(_))),
            "segment {i} begins with {first:?}"
        );
        let defined = Defined::of(&records);
        let mut here = 0;
        for r in &records {
            match r {
                Record::Samples(batch) => {
                    for s in &batch.samples {
                        here += 1;
                        defined.check(i, s.tid, s.stack);
                    }
                }
                Record::Lost(l) => lost += l.count,
                Record::ThreadTimes(t) if t.tid == me => times.push(*t),
                _ => {}
            }
        }
        assert_eq!(here, totals.counts.samples, "segment {i}'s totals");
        if here > 0 {
            with_samples += 1;
            // The user frame is named in every segment that has it, not only the first.
            assert!(
                defined.names.iter().any(|n| n.contains("segment_leaf")),
                "segment {i} does not name its user frame: {:?}",
                defined.names
            );
            assert_eq!(totals.processes, 1, "segment {i}");
        }
        samples += here;
    }
    assert_eq!(samples, 5);
    assert!(with_samples >= 3, "samples in {with_samples} segments");
    assert_eq!(lost, 3, "the source's 3 lost samples, once");
    // The thread's times: one part per segment until its end, each from where the last
    // stopped, adding up.
    assert!(times.len() >= 4, "{times:?}");
    assert_eq!(times[0].first_ns, 500);
    for w in times.windows(2) {
        assert_eq!(w[1].first_ns, w[0].last_ns, "{times:?}");
    }
    for t in &times {
        let sum = t.on_cpu_ns + t.sleeping_ns + t.uninterruptible_ns + t.runnable_ns;
        assert_eq!(sum, t.last_ns - t.first_ns, "{t:?}");
    }
    let on: u64 = times.iter().map(|t| t.on_cpu_ns).sum();
    assert_eq!(on, 400, "on-CPU time counted once");
}

/// A thread that exited before a segment's end read the live threads (its exit record
/// still on its way, handled in the next segment) goes on from where the segment before
/// left it: its exit holds only what came after that boundary, not its whole life again.
#[test]
fn a_thread_gone_when_a_segment_ends_goes_on_from_the_last_boundary() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    let helper = me + 1;
    // It exits an hour from now (later than any segment's end here), having slept since.
    let asleep = asleep_since_900(me);
    let exit_ns = ProcHost::new(dir.path(), dir.path().join("sys")).now_ns() + 3_600_000_000_000;
    let exited = OpenThreadTimes {
        last_ns: exit_ns,
        sleeping_ns: exit_ns - 900,
        state: None,
        ..asleep
    };
    let script = vec![
        vec![sample(1_000, me, "worker"), sample(1_100, helper, "helper")],
        vec![sample(2_000, me, "worker")],
        vec![
            sample(3_000, me, "worker"),
            Event::ThreadTimes {
                tid: helper,
                times: exited,
            },
        ],
        vec![Event::Exit {
            time_ns: 4_000,
            pid: me,
        }],
    ];
    let mut source = ScriptedSource {
        live: vec![(me, asleep)],
        // The first segment's end finds both; every later one the worker alone.
        live_reads: vec![vec![(me, asleep), (helper, asleep)]].into(),
        pace: Duration::from_millis(5),
        ..ScriptedSource::new(script)
    };
    let (_, memory) = record_segments(&mut source, dir.path());
    assert!(memory.done.len() >= 3, "{} segments", memory.done.len());
    let mut times: Vec<ThreadTimes> = Vec::new();
    for (bytes, _) in &memory.done {
        let (records, _) = read_all(bytes).expect("a segment reads alone");
        times.extend(records.iter().filter_map(|r| match r {
            Record::ThreadTimes(t) if t.tid == helper => Some(*t),
            _ => None,
        }));
    }
    assert_eq!(times.len(), 2, "{times:?}");
    assert_eq!(times[0].first_ns, 500);
    assert_eq!(times[1].first_ns, times[0].last_ns, "{times:?}");
    assert!(times[1].exited && times[1].last_ns == exit_ns, "{times:?}");
    let on: u64 = times.iter().map(|t| t.on_cpu_ns).sum();
    let wall: u64 = times.iter().map(ThreadTimes::wall_ns).sum();
    assert_eq!((on, wall), (400, exit_ns - 500), "{times:?}");
}

/// What a segment defines.
struct Defined {
    threads: HashMap<u32, u32>,
    processes: HashSet<u32>,
    stacks: HashMap<u32, Vec<u32>>,
    frames: HashMap<u32, u32>,
    modules: HashSet<u32>,
    names: Vec<String>,
}

impl Defined {
    fn of(records: &[Record]) -> Defined {
        let strings = scripted::strings(records);
        let mut d = Defined {
            threads: HashMap::new(),
            processes: HashSet::new(),
            stacks: HashMap::new(),
            frames: HashMap::new(),
            modules: HashSet::new(),
            names: Vec::new(),
        };
        for r in records {
            match r {
                Record::Thread(t) => {
                    d.threads.insert(t.tid, t.pid);
                }
                Record::Process(p) => {
                    d.processes.insert(p.pid);
                }
                Record::Stack(s) => {
                    d.stacks.insert(s.id, s.frames.clone());
                }
                Record::Frame(f) => {
                    d.frames.insert(f.id, f.module);
                }
                Record::Module(m) => {
                    assert!(m.kind != ModuleKind::Jit);
                    d.modules.insert(m.id);
                }
                Record::Symbol(s) => {
                    d.names.extend(strings.get(&s.function).cloned());
                }
                _ => {}
            }
        }
        d
    }

    fn check(&self, seg: usize, tid: u32, stack: u32) {
        let pid = self.threads.get(&tid);
        let pid = pid.unwrap_or_else(|| panic!("segment {seg}: thread {tid} undefined"));
        assert!(self.processes.contains(pid), "segment {seg}: process {pid}");
        let frames = self.stacks.get(&stack);
        let frames = frames.unwrap_or_else(|| panic!("segment {seg}: stack {stack} undefined"));
        for f in frames {
            let m = self.frames.get(f);
            let m = m.unwrap_or_else(|| panic!("segment {seg}: frame {f} undefined"));
            assert!(
                self.modules.contains(m),
                "segment {seg}: module {m} undefined"
            );
        }
    }
}
