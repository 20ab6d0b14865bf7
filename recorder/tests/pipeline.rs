//! The recording pipeline without root: a scripted event source stands in for BPF, so
//! normalisation, symbol embedding, lost counts and the stop rules are tested anywhere.

mod scripted;

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use hotspot_format::{FrameAddr, ModuleKind, Record, ThreadState, read_all};
use hotspot_recorder::event::{BlockedSample, Event, Mapping, StackEnd, StackSample, UserRegs};
use hotspot_recorder::{ConvertConfig, RecordConfig, StopReason};
use scripted::{ScriptedSource, comm, fake_proc, record};

#[inline(never)]
fn marker_leaf(x: u64) -> u64 {
    std::hint::black_box(x.wrapping_mul(31))
}

#[inline(never)]
fn marker_caller(x: u64) -> u64 {
    marker_leaf(x) + 1
}

const KALLSYMS: &str =
    "ffffffff81000000 T _stext\nffffffff81000100 t do_thing\nffffffff81000300 T vfs_write\n";

#[test]
fn samples_become_named_machine_independent_frames() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    std::hint::black_box(marker_caller(3));
    let leaf = marker_leaf as *const () as u64;
    // A return address points just after the call; any address inside the caller works.
    let caller = marker_caller as *const () as u64 + 4;
    let sample = |t: u64, name: &str, kernel: Vec<u64>| {
        Event::Sample(StackSample {
            time_ns: t,
            pid: me,
            tid: me,
            cpu: 1,
            comm: comm(name),
            user: vec![leaf, caller],
            kernel,
            regs: None,
            stack: Vec::new(),
            stack_end: StackEnd::Cap,
            python: None,
        })
    };
    let script = vec![
        vec![sample(
            1_000,
            "worker",
            vec![0xffffffff81000110, 0xffffffff81000305],
        )],
        vec![
            sample(2_000, "worker", vec![]),
            sample(3_000, "renamed", vec![]),
        ],
        vec![Event::Exit {
            time_ns: 4_000,
            pid: me,
        }],
    ];
    let mut source = ScriptedSource {
        lost: vec![0, 3],
        ..ScriptedSource::new(script)
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
    let (summary, bytes) = record(&mut source, &cfg, dir.path(), &stop);
    assert_eq!(summary.reason, StopReason::TargetsExited);
    assert_eq!(summary.totals.counts.samples, 3);
    assert_eq!(summary.totals.counts.lost, 3);

    let (records, diag) = read_all(&bytes).expect("reads back");
    assert!(
        diag.truncated.is_none() && diag.corrupt_count == 0,
        "{diag:?}"
    );
    let strings = scripted::strings(&records);
    let modules: Vec<_> = records
        .iter()
        .filter_map(|r| {
            if let Record::Module(m) = r {
                Some(m.clone())
            } else {
                None
            }
        })
        .collect();
    let exe = std::env::current_exe().expect("exe");
    let user_module = modules
        .iter()
        .find(|m| m.kind == ModuleKind::Elf)
        .expect("user module");
    assert_eq!(
        Path::new(&user_module.path),
        exe.as_path(),
        "module is the test binary"
    );
    assert!(
        modules.iter().any(|m| m.kind == ModuleKind::Kernel),
        "kernel module"
    );

    let frames: Vec<_> = records
        .iter()
        .filter_map(|r| {
            if let Record::Frame(f) = r {
                Some(f.clone())
            } else {
                None
            }
        })
        .collect();
    let kernel_names: Vec<(String, u64)> = frames
        .iter()
        .filter_map(|f| match f.addr {
            FrameAddr::KernelSymbol { symbol, offset } => Some((strings[&symbol].clone(), offset)),
            FrameAddr::FileOffset(_) => None,
        })
        .collect();
    assert!(
        kernel_names.contains(&("do_thing".to_string(), 0x10)),
        "{kernel_names:?}"
    );
    assert!(
        kernel_names.contains(&("vfs_write".to_string(), 0x5)),
        "{kernel_names:?}"
    );
    for f in &frames {
        if let FrameAddr::FileOffset(off) = f.addr {
            assert!(
                off < 0xffff_8000_0000_0000,
                "a user frame holds a kernel-range value"
            );
            assert!(
                off < std::fs::metadata(&exe).expect("meta").len(),
                "file offset inside the file"
            );
        }
    }
    let symbol_names: Vec<&str> = records
        .iter()
        .filter_map(|r| {
            if let Record::Symbol(s) = r {
                Some(strings[&s.function].as_str())
            } else {
                None
            }
        })
        .collect();
    assert!(
        symbol_names.iter().any(|n| n.ends_with("marker_leaf")),
        "{symbol_names:?}"
    );
    assert!(
        symbol_names.iter().any(|n| n.ends_with("marker_caller")),
        "{symbol_names:?}"
    );

    let threads: Vec<String> = records
        .iter()
        .filter_map(|r| {
            if let Record::Thread(t) = r {
                Some(t.name.clone())
            } else {
                None
            }
        })
        .collect();
    assert!(
        threads.contains(&"worker".to_string()) && threads.contains(&"renamed".to_string()),
        "{threads:?}"
    );
    let lost: u64 = records
        .iter()
        .filter_map(|r| {
            if let Record::Lost(l) = r {
                Some(l.count)
            } else {
                None
            }
        })
        .sum();
    assert_eq!(lost, 3);
    let samples: Vec<_> = records
        .iter()
        .filter_map(|r| {
            if let Record::Samples(b) = r {
                Some(b.samples.clone())
            } else {
                None
            }
        })
        .flatten()
        .collect();
    assert_eq!(
        samples.iter().map(|s| s.time_ns).collect::<Vec<_>>(),
        vec![1_000, 2_000, 3_000]
    );
    assert_eq!(samples[1].stack, samples[2].stack, "same stack, same id");
    assert_ne!(samples[0].stack, samples[1].stack);
    assert!(
        records
            .iter()
            .any(|r| matches!(r, Record::End(e) if e.samples == 3 && e.lost == 3))
    );
}

#[test]
fn stop_flag_and_duration_end_the_recording() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![std::process::id()],
            ..ConvertConfig::default()
        },
        duration: Some(Duration::from_millis(150)),
        ..RecordConfig::default()
    };
    let mut source = ScriptedSource::default();
    let (s, _) = record(&mut source, &cfg, dir.path(), &AtomicBool::new(false));
    assert_eq!(s.reason, StopReason::Duration);
    let (s, bytes) = record(&mut source, &cfg, dir.path(), &AtomicBool::new(true));
    assert_eq!(s.reason, StopReason::Interrupted);
    let (records, _) = read_all(&bytes).expect("reads");
    assert!(
        records.iter().any(|r| matches!(r, Record::End(_))),
        "finished with an end marker"
    );
}

/// Registers and the live stack of the calling thread, as the BPF program would copy
/// them: the stack from `rsp` to the end of its mapping.
#[inline(never)]
fn snapshot() -> (UserRegs, Vec<u8>) {
    let (ip, sp, bp, rbx, r11): (u64, u64, u64, u64, u64);
    // SAFETY: reads five registers into outputs; touches no memory.
    unsafe {
        std::arch::asm!(
            "lea {ip}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            "mov {bx}, rbx",
            "mov {r11}, r11",
            ip = out(reg) ip,
            sp = out(reg) sp,
            bp = out(reg) bp,
            bx = out(reg) rbx,
            r11 = out(reg) r11,
        );
    }
    let maps = std::fs::read_to_string("/proc/self/maps").expect("maps");
    let end = maps
        .lines()
        .find_map(|l| {
            let (range, _) = l.split_once(' ')?;
            let (s, e) = range.split_once('-')?;
            let (s, e) = (
                u64::from_str_radix(s, 16).ok()?,
                u64::from_str_radix(e, 16).ok()?,
            );
            (s <= sp && sp < e).then_some(e)
        })
        .expect("the stack pointer is in a mapping");
    // SAFETY: `sp..end` is this thread's own mapped stack, above the current frame.
    let stack = unsafe { std::slice::from_raw_parts(sp as *const u8, (end - sp) as usize) };
    (
        UserRegs {
            ip,
            sp,
            bp,
            rbx,
            r11,
        },
        stack.to_vec(),
    )
}

#[inline(never)]
fn cfi_leaf() -> (UserRegs, Vec<u8>) {
    std::hint::black_box(snapshot())
}

#[inline(never)]
fn cfi_middle() -> (UserRegs, Vec<u8>) {
    std::hint::black_box(cfi_leaf())
}

/// Every sample's stack as function names, leaf first.
fn named_stacks(records: &[Record]) -> Vec<Vec<String>> {
    let strings = scripted::strings(records);
    let mut symbols = std::collections::HashMap::new();
    let mut stacks = std::collections::HashMap::new();
    let mut samples = Vec::new();
    for r in records {
        match r {
            Record::Symbol(s) => {
                symbols.insert(s.frame, s.function);
            }
            Record::Stack(s) => {
                stacks.insert(s.id, s.frames.clone());
            }
            Record::Samples(b) => samples.extend(b.samples.iter().map(|s| s.stack)),
            _ => {}
        }
    }
    samples
        .iter()
        .map(|id| {
            stacks[id]
                .iter()
                .map(|f| {
                    symbols
                        .get(f)
                        .and_then(|s| strings.get(s))
                        .cloned()
                        .unwrap_or_else(|| "??".into())
                })
                .collect()
        })
        .collect()
}

/// A copied stack is unwound with call-frame information in the recorder, without root:
/// registers and stack bytes of one of our own threads, handed over as the BPF program
/// hands them over. A copy cut short ends in the truncation marker.
#[test]
fn copied_stacks_are_unwound_with_cfi() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    let (regs, stack) = std::thread::spawn(cfi_middle).join().expect("thread");
    let sample = |t: u64, bytes: Vec<u8>, end: StackEnd| {
        Event::Sample(StackSample {
            time_ns: t,
            pid: me,
            tid: me,
            cpu: 0,
            comm: comm("cfi"),
            user: Vec::new(),
            kernel: Vec::new(),
            regs: Some(regs),
            stack: bytes,
            stack_end: end,
            python: None,
        })
    };
    let short = stack[..stack.len().min(256)].to_vec();
    let mut source = ScriptedSource::new(vec![
        vec![sample(1_000, stack.clone(), StackEnd::MappingEnd)],
        vec![sample(2_000, short, StackEnd::Cap)],
        vec![Event::Exit {
            time_ns: 3_000,
            pid: me,
        }],
    ]);
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![me],
            stack_cap: 65536,
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(20),
        ..RecordConfig::default()
    };
    let (_, bytes) = record(&mut source, &cfg, dir.path(), &AtomicBool::new(false));
    let (records, _) = read_all(&bytes).expect("reads back");
    let unwinding = records
        .iter()
        .find_map(|r| match r {
            Record::Unwinding(u) => Some(*u),
            _ => None,
        })
        .expect("an Unwinding record");
    assert_eq!(unwinding.method, hotspot_format::UnwindMethod::Cfi);
    assert_eq!(unwinding.stack_cap, 65536);
    let stacks = named_stacks(&records);
    assert_eq!(stacks.len(), 2);
    let whole = &stacks[0];
    let at = |name: &str| whole.iter().position(|f| f.ends_with(name));
    let (leaf, middle) = (at("::cfi_leaf"), at("::cfi_middle"));
    assert!(
        leaf.is_some() && middle.is_some() && leaf < middle,
        "the whole copy unwinds through cfi_leaf and cfi_middle: {whole:?}"
    );
    assert!(
        whole
            .last()
            .is_some_and(|f| f == "__clone3" || f == "clone3"),
        "a thread's stack ends at clone3: {whole:?}"
    );
    let cut = &stacks[1];
    assert_eq!(
        cut.last().map(String::as_str),
        Some("[truncated: stack larger than --stack-cap]"),
        "{cut:?}"
    );
    assert!(cut.len() < whole.len());
}

/// The module path of each sample's leaf frame, in sample order.
fn leaf_modules(records: &[Record]) -> Vec<String> {
    let mut modules = std::collections::HashMap::new();
    let mut frames = std::collections::HashMap::new();
    let mut stacks = std::collections::HashMap::new();
    let mut out = Vec::new();
    for r in records {
        match r {
            Record::Module(m) => {
                modules.insert(m.id, m.path.clone());
            }
            Record::Frame(f) => {
                frames.insert(f.id, f.module);
            }
            Record::Stack(s) => {
                stacks.insert(s.id, s.frames.clone());
            }
            Record::Samples(b) => out.extend(b.samples.iter().map(|s| {
                let leaf = stacks[&s.stack][0];
                modules[&frames[&leaf]].clone()
            })),
            _ => {}
        }
    }
    out
}

/// Our own executable's code mapping, as /proc/self/maps shows it.
fn own_code_mapping() -> Mapping {
    let exe = std::fs::read_link("/proc/self/exe").expect("exe");
    let maps = hotspot_recorder::live::proc_maps::read_maps(Path::new("/proc"), std::process::id())
        .expect("our maps");
    maps.into_iter()
        .find(|m| Path::new(&m.path) == exe)
        .expect("a code mapping of our executable")
}

/// Processes that are gone before their samples are read keep their names: their
/// mappings come from the mapping events, in time order with the samples (a /proc with
/// no process in it stands in for processes that have exited). A fork inherits, an exec
/// starts over, ELF code is never JIT, and a file no longer at its path is marked deleted.
#[test]
fn mapping_events_name_the_code_of_processes_already_gone() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("kallsyms"), KALLSYMS).expect("kallsyms");
    std::hint::black_box(marker_caller(3));
    let code = own_code_mapping();
    let leaf = marker_leaf as *const () as u64;
    // The same file mapped elsewhere in another process.
    const SHIFT: u64 = 0x1000_0000_0000;
    let shifted = Mapping {
        start: code.start + SHIFT,
        end: code.end + SHIFT,
        ..code.clone()
    };
    // An inode the path no longer holds: the file was replaced since it was mapped.
    let replaced = Mapping {
        start: code.start + 2 * SHIFT,
        end: code.end + 2 * SHIFT,
        inode: code.inode + 1,
        ..code.clone()
    };
    let (parent, child) = (4_100_001, 4_100_002);
    let sample = |t: u64, pid: u32, ip: u64| {
        Event::Sample(StackSample {
            time_ns: t,
            pid,
            tid: pid,
            cpu: 0,
            comm: comm("short"),
            user: vec![ip],
            kernel: vec![],
            regs: None,
            stack: Vec::new(),
            stack_end: StackEnd::Cap,
            python: None,
        })
    };
    let mmap = |t: u64, pid: u32, mapping: &Mapping| Event::Mmap {
        time_ns: t,
        pid,
        mapping: mapping.clone(),
    };
    let script = vec![
        vec![
            Event::NewImage {
                time_ns: 10,
                pid: parent,
            },
            mmap(11, parent, &code),
            // Another process's mapping: not traced, so not its business.
            mmap(11, 4_100_009, &code),
            mmap(12, parent, &replaced),
            Event::Fork {
                time_ns: 13,
                parent,
                child,
            },
            sample(14, child, leaf),
            Event::NewImage {
                time_ns: 15,
                pid: child,
            },
            mmap(16, child, &shifted),
        ],
        vec![
            sample(17, parent, leaf),
            sample(18, child, leaf + SHIFT),
            // The child's old image is gone after its exec.
            sample(19, child, leaf),
            sample(20, parent, leaf + 2 * SHIFT),
            Event::Exit {
                time_ns: 21,
                pid: child,
            },
            Event::Exit {
                time_ns: 22,
                pid: parent,
            },
        ],
    ];
    let mut source = ScriptedSource {
        lost: vec![0],
        ..ScriptedSource::new(script)
    };
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![parent],
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(20),
        ..RecordConfig::default()
    };
    let (summary, bytes) = record(&mut source, &cfg, dir.path(), &AtomicBool::new(false));
    assert_eq!(summary.reason, StopReason::TargetsExited);
    let (records, _) = read_all(&bytes).expect("reads back");
    let names: Vec<String> = named_stacks(&records)
        .into_iter()
        .map(|s| s[0].clone())
        .collect();
    let modules = leaf_modules(&records);
    let exe = &code.path;
    let deleted = format!("{exe} (deleted)");
    assert_eq!(
        modules,
        [exe, exe, exe, "[unknown]", &deleted],
        "names: {names:?}"
    );
    assert!(
        names[..3].iter().all(|n| n.contains("marker_leaf")),
        "inherited, own and re-mapped code is named: {names:?}"
    );
    assert!(
        records
            .iter()
            .all(|r| !matches!(r, Record::Module(m) if m.kind == ModuleKind::Jit)),
        "no JIT module"
    );
}

/// Records `script` with our own process standing in for a command the recorder started
/// (tracked right after its exec, as `record -- CMD` does); returns the CPU and off-CPU
/// samples written and the names its thread was given, in order.
fn record_command(script: impl FnOnce(u64) -> Vec<Vec<Event>>) -> (u64, u64, Vec<String>) {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    let me = std::process::id();
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![me],
            off_cpu_period_ns: Some(1_000_000),
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(20),
        ..RecordConfig::default()
    };
    let host = hotspot_recorder::live::ProcHost::new(dir.path(), dir.path().join("sys"));
    let mut recorder = hotspot_recorder::Recorder::new(cfg, Box::new(host)).expect("recorder");
    let before_track = hotspot_recorder::live::machine::monotonic_ns();
    recorder.track_command(me);
    let mut source = ScriptedSource {
        lost: vec![0],
        ..ScriptedSource::new(script(before_track))
    };
    let writer = hotspot_format::Writer::new(Vec::new(), Default::default()).expect("writer");
    let (summary, bytes) = recorder
        .run(&mut source, writer, &AtomicBool::new(false), &mut |_| {})
        .expect("records");
    assert_eq!(summary.reason, StopReason::TargetsExited);
    let (records, _) = read_all(&bytes).expect("reads back");
    let names = records
        .iter()
        .filter_map(|r| match r {
            Record::Thread(t) if t.tid == me => Some(t.name.clone()),
            _ => None,
        })
        .collect();
    let c = summary.totals.counts;
    (c.samples, c.off_cpu_samples, names)
}

/// A command the recorder starts is in the kernel's target set before its exec, so that
/// its first instruction is sampled. The ticks that land in the exec before the kernel
/// renames the process (mostly the exec freeing the child's copy of the recorder's memory)
/// are the recorder's own fork, named after the recorder, and so is, with `--off-cpu`, the
/// fork's wait at the gate (an off-CPU sample when it is let through): they are not the
/// command's, so its thread is named from its exec on (issue 23: `hotspot`, the fork's
/// name, came first).
#[test]
fn a_command_is_recorded_from_its_exec_not_from_the_recorders_fork() {
    let me = std::process::id();
    let leaf = marker_leaf as *const () as u64;
    let raw = |t: u64, name: &str| StackSample {
        time_ns: t,
        pid: me,
        tid: me,
        cpu: 0,
        comm: comm(name),
        user: vec![leaf],
        kernel: vec![0xffffffff81000110],
        regs: None,
        stack: Vec::new(),
        stack_end: StackEnd::Cap,
        python: None,
    };
    let sample = |t: u64, name: &str| Event::Sample(raw(t, name));
    let off_cpu = |t: u64, name: &str| {
        Event::OffCpu(BlockedSample {
            sample: raw(t, name),
            periods: 2,
            state: ThreadState::Sleeping,
        })
    };
    let exit = |time_ns| Event::Exit { time_ns, pid: me };
    let exec = |time_ns, name: &str| Event::Exec {
        time_ns,
        pid: me,
        comm: comm(name),
    };
    let new_image = |time_ns| Event::NewImage { time_ns, pid: me };
    // The kernel's two exec events mark the end of the fork: the perf ring's (at the
    // rename) or the BPF ring's (once the new image is mapped), whichever comes first.
    for first_event in [new_image(2_000), exec(2_000, "execer")] {
        let (samples, off_cpu_samples, names) = record_command(|_| {
            vec![
                vec![
                    off_cpu(500, "hotspot"),
                    sample(1_000, "hotspot"),
                    first_event,
                ],
                vec![
                    exec(2_100, "execer"),
                    sample(3_000, "execer"),
                    off_cpu(3_500, "execer"),
                    // A second exec is the command's own: both names are kept.
                    new_image(4_000),
                    exec(4_100, "busy"),
                    sample(5_000, "busy"),
                ],
                vec![exit(6_000)],
            ]
        });
        assert_eq!(names, ["execer", "busy"]);
        assert_eq!(samples, 2, "the fork's sample is not the command's");
        assert_eq!(off_cpu_samples, 1, "nor is its wait at the gate");
    }
    // Both exec events lost: the exec was over when the recorder saw its command start,
    // so what is sampled after that is the command's.
    let (samples, _, names) = record_command(|tracked| {
        vec![
            vec![sample(tracked - 1_000_000, "hotspot")],
            vec![sample(tracked + 10_000_000_000, "execer")],
            vec![exit(tracked + 20_000_000_000)],
        ]
    });
    assert_eq!(names, ["execer"]);
    assert_eq!(samples, 1);
}

/// Processes come and go (issue 28: a flight recorder runs for days): what the recorder
/// holds per process stays bounded by the processes alive and those that exited within
/// the last second, however many there were. 3000 short children of one target, one
/// every 10 ms of event time: every other one on a pid of its own, the others on 20 pids
/// reused again and again (every 400 ms, so a pid is reused while its last process waits
/// to be forgotten). Each child is written as a process of its own, and its samples
/// taken after its exit event (the exiting thread's last ticks) still find its mappings.
#[test]
fn exited_processes_leave_the_recorder_and_reused_pids_are_new_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    fake_proc(dir.path(), KALLSYMS);
    std::hint::black_box(marker_caller(3));
    let code = own_code_mapping();
    let leaf = marker_leaf as *const () as u64;
    const CHILDREN: u64 = 3000;
    const PIDS: u64 = 20;
    const EVERY_NS: u64 = 10_000_000;
    // Our own process is the target (alive, as the recorder checks once a flush); its
    // children are made up, gone from the (stand-in) /proc.
    let parent = std::process::id();
    let first_child = 4_300_000;
    let sample = |t: u64, pid: u32| {
        Event::Sample(StackSample {
            time_ns: t,
            pid,
            tid: pid,
            cpu: 0,
            comm: comm("short"),
            user: vec![leaf],
            kernel: vec![],
            regs: None,
            stack: Vec::new(),
            stack_end: StackEnd::Cap,
            python: None,
        })
    };
    let mut script = vec![vec![
        Event::NewImage {
            time_ns: 1,
            pid: parent,
        },
        Event::Mmap {
            time_ns: 2,
            pid: parent,
            mapping: code.clone(),
        },
    ]];
    for i in 0..CHILDREN {
        let t = 10 + i * EVERY_NS;
        let child = if i % 2 == 0 {
            first_child + i as u32
        } else {
            first_child + CHILDREN as u32 + (i / 2 % PIDS) as u32
        };
        script.push(vec![
            Event::Fork {
                time_ns: t,
                parent,
                child,
            },
            Event::NewImage {
                time_ns: t + 1,
                pid: child,
            },
            Event::Mmap {
                time_ns: t + 2,
                pid: child,
                mapping: code.clone(),
            },
            sample(t + 3, child),
            Event::Exit {
                time_ns: t + 4,
                pid: child,
            },
            // Its last tick, after its exit event.
            sample(t + 5, child),
        ]);
    }
    let end = 10 + CHILDREN * EVERY_NS;
    script.push(vec![
        sample(end, parent),
        Event::Exit {
            time_ns: end + 1,
            pid: parent,
        },
    ]);
    let mut source = ScriptedSource {
        lost: vec![0],
        ..ScriptedSource::new(script)
    };
    let cfg = RecordConfig {
        convert: ConvertConfig {
            targets: vec![parent],
            ..ConvertConfig::default()
        },
        flush_every: Duration::from_millis(20),
        ..RecordConfig::default()
    };
    let (summary, bytes) = record(&mut source, &cfg, dir.path(), &AtomicBool::new(false));
    assert_eq!(summary.reason, StopReason::TargetsExited);
    let t = summary.totals;
    // The children that exited within a second of event time (100; fewer, as a reuse
    // forgets the last process of that pid at once) and the one alive, plus the parent.
    let bound = (1_000_000_000 / EVERY_NS) as usize + 2;
    let held = t.held_peak;
    assert!(
        held.processes <= bound && held.threads <= bound && held.spaces <= bound,
        "held at most {held:?} for {CHILDREN} processes"
    );
    assert!(held.departed <= bound, "{held:?}");
    assert_eq!(t.processes, CHILDREN as usize + 1, "every child counts");
    assert_eq!(t.counts.samples, 2 * CHILDREN + 1);
    let (records, _) = read_all(&bytes).expect("reads back");
    // Every child, on whichever pid, is a process of its own in the capture.
    let processes = records
        .iter()
        .filter(|r| matches!(r, Record::Process(p) if p.pid != parent))
        .count();
    assert_eq!(processes, CHILDREN as usize, "one Process record per child");
    let threads = records
        .iter()
        .filter(|r| matches!(r, Record::Thread(th) if th.pid != parent))
        .count();
    assert_eq!(threads, CHILDREN as usize, "one Thread record per child");
    // Each child's last tick, after its exit, is in its code as its first is; and one
    // module serves them all.
    let modules = leaf_modules(&records);
    assert!(
        modules.iter().all(|m| *m == code.path),
        "{:?}",
        modules.iter().find(|m| **m != code.path)
    );
    let module_records = records
        .iter()
        .filter(|r| matches!(r, Record::Module(_)))
        .count();
    assert!(module_records <= 2, "{module_records} modules");
}
