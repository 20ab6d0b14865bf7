//! Encode → decode property: what goes into a `Writer` comes out of a `Reader` unchanged.
//!
//! "Unchanged" precisely: (1) the samples, concatenated over all blocks, equal every sample
//! pushed, in push order; (2) each block's records are exactly
//! `[Session if seq % 64 == 0 && seq > 0] ++ repeats ++ [partial Index if due] ++ own ++
//! [Samples if any] ++ [complete Index, End if last]`, where `repeats` are the definitions
//! among the previous block's `own` records, in order, and the concatenation of all `own`
//! lists is the session followed by every non-sample record pushed, in push order; (3)
//! `read_all` returns the first occurrence of every definition key, in that order.

// Tests and tools: a failed unwrap is a test failure with a backtrace.
#![allow(clippy::unwrap_used)]

mod common;

use hotspot_format::definitions::def_key;
use hotspot_format::writer::INDEX_EVERY;
use hotspot_format::*;
use proptest::prelude::*;

#[derive(Debug, Clone)]
enum Op {
    Record(Record),
    Sample(Sample),
    OffCpu(OffCpuSample),
    Batch(Vec<Sample>),
    Intern(String),
    Flush,
}

fn small_string() -> impl Strategy<Value = String> {
    prop_oneof![".{0,12}", "[a-z]{0,3}"]
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        prop_oneof![
            any::<u64>(),
            0u64..10_000,
            (1u64 << 40)..(1u64 << 40) + 1_000_000
        ],
        prop_oneof![any::<u32>(), 0u32..4],
        prop_oneof![any::<u32>(), 0u32..4],
        prop_oneof![any::<u32>(), 0u32..600],
    )
        .prop_map(|(time_ns, tid, cpu, stack)| Sample {
            time_ns,
            tid,
            cpu,
            stack,
        })
}

fn module_kind() -> impl Strategy<Value = ModuleKind> {
    prop_oneof![
        Just(ModuleKind::Elf),
        Just(ModuleKind::Kernel),
        Just(ModuleKind::KernelModule),
        Just(ModuleKind::Vdso),
        Just(ModuleKind::Jit)
    ]
}

fn record() -> impl Strategy<Value = Record> {
    let id = 0u32..8;
    prop_oneof![
        (id.clone(), small_string()).prop_map(|(id, text)| Record::String { id, text }),
        (
            0u32..5,
            any::<u32>(),
            small_string(),
            prop::collection::vec(small_string(), 0..3),
            small_string(),
            0u64..3
        )
            .prop_map(|(pid, ppid, name, cmdline, exe, start_ns)| Record::Process(
                Process {
                    pid,
                    ppid,
                    name,
                    cmdline,
                    exe,
                    start_ns
                }
            )),
        (any::<u32>(), any::<u64>())
            .prop_map(|(pid, time_ns)| Record::ProcessExit(ProcessExit { pid, time_ns })),
        (0u32..5, any::<u32>(), small_string(), 0u64..3).prop_map(|(tid, pid, name, time_ns)| {
            Record::Thread(Thread {
                tid,
                pid,
                name,
                time_ns,
            })
        }),
        (
            id.clone(),
            module_kind(),
            small_string(),
            prop::collection::vec(any::<u8>(), 0..21)
        )
            .prop_map(|(id, kind, path, build_id)| Record::Module(Module {
                id,
                kind,
                path,
                build_id
            })),
        (
            id.clone(),
            any::<u32>(),
            prop_oneof![
                any::<u64>().prop_map(FrameAddr::FileOffset),
                (any::<u32>(), any::<u64>())
                    .prop_map(|(symbol, offset)| FrameAddr::KernelSymbol { symbol, offset })
            ]
        )
            .prop_map(|(id, module, addr)| Record::Frame(Frame { id, module, addr })),
        (id.clone(), prop::collection::vec(any::<u32>(), 0..40))
            .prop_map(|(id, frames)| Record::Stack(Stack { id, frames })),
        (
            id,
            any::<u32>(),
            prop::option::of(any::<u32>()),
            any::<u32>(),
            prop::collection::vec(
                (any::<u32>(), prop::option::of(any::<u32>()), any::<u32>()),
                0..3
            )
        )
            .prop_map(|(frame, function, file, line, inl)| Record::Symbol(Symbol {
                frame,
                function,
                loc: SourceLoc { file, line },
                inlined: inl
                    .into_iter()
                    .map(|(function, file, line)| InlinedFn {
                        function,
                        loc: SourceLoc { file, line }
                    })
                    .collect(),
            })),
        (any::<u64>(), any::<u32>(), any::<u64>()).prop_map(|(time_ns, cpu, count)| Record::Lost(
            Lost {
                time_ns,
                cpu,
                count
            }
        )),
        (
            prop_oneof![Just(UnwindMethod::FramePointers), Just(UnwindMethod::Cfi)],
            any::<u32>(),
            prop::option::of(any::<u32>())
        )
            .prop_map(|(method, stack_cap, markers)| Record::Unwinding(Unwinding {
                method,
                stack_cap,
                markers
            })),
        any::<u64>().prop_map(|period_ns| Record::OffCpu(OffCpu { period_ns })),
        (
            any::<(u32, u32, u64, u64, u64)>(),
            any::<(u64, u64, bool)>()
        )
            .prop_map(
                |((tid, pid, first_ns, last_ns, on_cpu_ns), (sleeping_ns, runnable_ns, exited))| {
                    Record::ThreadTimes(ThreadTimes {
                        tid,
                        pid,
                        first_ns,
                        last_ns,
                        on_cpu_ns,
                        sleeping_ns,
                        uninterruptible_ns: sleeping_ns / 3,
                        runnable_ns,
                        exited,
                    })
                }
            ),
        (any::<u64>(), any::<u64>())
            .prop_map(|(time_ns, count)| Record::LostOffCpu(LostOffCpu { time_ns, count })),
        (0u32..8, any::<bool>()).prop_map(|(module, runtime)| {
            Record::InterpreterModule(InterpreterModule {
                module,
                language: Language::Python,
                role: if runtime {
                    InterpreterRole::Runtime
                } else {
                    InterpreterRole::Frames
                },
            })
        }),
        (
            any::<(u32, u64)>(),
            small_string(),
            small_string(),
            prop::option::of(small_string()),
            any::<(u64, u64, u64, u64, u64, u64)>()
        )
            .prop_map(
                |(
                    (pid, start_ns),
                    path,
                    version,
                    reason,
                    (samples, merged, mismatched, without_frames, unresolved_frames, cut),
                )| {
                    Record::InterpreterProcess(InterpreterProcess {
                        pid,
                        start_ns,
                        language: Language::Python,
                        path,
                        version,
                        status: match reason {
                            Some(reason) => InterpreterStatus::Unsupported { reason },
                            None => InterpreterStatus::Walked,
                        },
                        samples,
                        merged,
                        mismatched,
                        without_frames,
                        unresolved_frames,
                        cut,
                    })
                }
            ),
        (any::<u32>(), small_string(), small_string()).prop_map(|(feature, instead, reason)| {
            Record::FeatureOff(FeatureOff {
                feature,
                instead,
                reason,
            })
        }),
        (any::<u64>(), small_string())
            .prop_map(|(time_ns, text)| Record::Mark(Mark { time_ns, text })),
        any::<(bool, bool, bool)>().prop_map(|(arguments, host, user_paths)| Record::Scrubbed(
            Scrubbed {
                arguments,
                host,
                user_paths
            }
        )),
    ]
}

fn off_cpu_sample() -> impl Strategy<Value = OffCpuSample> {
    (sample(), 1u32.., 0usize..3).prop_map(|(sample, periods, state)| OffCpuSample {
        sample,
        periods,
        state: ThreadState::ALL[state],
    })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => record().prop_map(Op::Record),
        6 => sample().prop_map(Op::Sample),
        2 => off_cpu_sample().prop_map(Op::OffCpu),
        1 => prop::collection::vec(sample(), 0..50).prop_map(Op::Batch),
        1 => small_string().prop_map(Op::Intern),
        1 => Just(Op::Flush),
    ]
}

/// Runs `ops` through a writer; returns the bytes, the samples and the non-sample records
/// the writer was given (String records made by `intern` included), in order.
fn write(ops: &[Op]) -> (Vec<u8>, Vec<Sample>, Vec<OffCpuSample>, Vec<Record>) {
    let session = common::session();
    let mut w = Writer::new(Vec::new(), session.clone()).unwrap();
    let mut samples = Vec::new();
    let mut off_cpu = Vec::new();
    let mut records = vec![Record::Session(session)];
    let mut interned = std::collections::HashMap::new();
    for op in ops {
        match op {
            Op::Record(r) => {
                if let Record::String { id, text } = r {
                    interned.entry(text.clone()).or_insert(*id);
                }
                w.push(r.clone()).unwrap();
                records.push(r.clone());
            }
            Op::Sample(s) => {
                w.push_sample(*s).unwrap();
                samples.push(*s);
            }
            Op::OffCpu(s) => {
                w.push_off_cpu_sample(*s).unwrap();
                off_cpu.push(*s);
            }
            Op::Batch(b) => {
                w.push(Record::Samples(SampleBatch { samples: b.clone() }))
                    .unwrap();
                samples.extend_from_slice(b);
            }
            Op::Intern(text) => {
                let id = w.intern(text);
                if !interned.contains_key(text) {
                    interned.insert(text.clone(), id);
                    records.push(Record::String {
                        id,
                        text: text.clone(),
                    });
                } else {
                    assert_eq!(interned[text], id, "intern is stable");
                }
            }
            Op::Flush => w.flush_block().unwrap(),
        }
    }
    let pending = w.pending_samples() as u64;
    assert_eq!(w.samples_written() + pending, samples.len() as u64);
    let out = w.finish(7, 8, 9).unwrap();
    (out, samples, off_cpu, records)
}

fn check(ops: &[Op]) {
    let (bytes, samples, off_cpu, records) = write(ops);
    let blocks: Vec<Block> = Reader::new(&bytes)
        .unwrap()
        .map(|e| match e {
            Event::Block(b) => b,
            other => panic!("clean capture produced {other:?}"),
        })
        .collect();
    // (1) samples
    let got: Vec<Sample> = blocks
        .iter()
        .flat_map(|b| b.records.iter())
        .filter_map(|r| match r {
            Record::Samples(b) => Some(b.samples.iter().copied()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(got, samples);
    let got: Vec<OffCpuSample> = blocks
        .iter()
        .flat_map(|b| b.records.iter())
        .filter_map(|r| match r {
            Record::OffCpuSamples(b) => Some(b.samples.iter().copied()),
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(got, off_cpu);
    // (2) block structure
    let n = blocks.len();
    let mut own_all = Vec::new();
    let mut prev_defs: Vec<Record> = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        assert_eq!(b.seq, i as u64);
        assert!(b.unknown_kinds.is_empty());
        let mut rest: &[Record] = &b.records;
        let last = i + 1 == n;
        if i > 0 && (i as u64).is_multiple_of(INDEX_EVERY) {
            assert_eq!(rest[0], Record::Session(common::session()));
            rest = &rest[1..];
        }
        assert_eq!(
            &rest[..prev_defs.len()],
            &prev_defs[..],
            "block {i} repeats"
        );
        rest = &rest[prev_defs.len()..];
        if last {
            let Record::End(end) = rest[rest.len() - 1] else {
                panic!("no End in the last block")
            };
            assert_eq!(end.samples, samples.len() as u64);
            assert_eq!(end.blocks, n as u64);
            assert_eq!((end.end_wall_ns, end.end_mono_ns, end.lost), (7, 8, 9));
            let Record::Index(index) = &rest[0] else {
                panic!("no complete Index in the last block")
            };
            assert!(index.complete);
            assert_eq!(index.entries.len(), n - 1);
            for (e, b) in index.entries.iter().zip(&blocks) {
                assert_eq!((e.offset, e.seq), (b.offset, b.seq));
            }
            assert_eq!(find_index(&bytes).as_ref(), Some(index));
            rest = &rest[1..rest.len() - 1];
        } else if i > 0 && (i as u64).is_multiple_of(INDEX_EVERY) {
            let Record::Index(index) = &rest[0] else {
                panic!("no partial Index in block {i}")
            };
            assert!(!index.complete);
            assert_eq!(index.entries.len(), INDEX_EVERY as usize);
            rest = &rest[1..];
        }
        if let Some(Record::OffCpuSamples(_)) = rest.last() {
            rest = &rest[..rest.len() - 1];
        }
        if let Some(Record::Samples(_)) = rest.last() {
            rest = &rest[..rest.len() - 1];
        }
        assert!(
            !rest
                .iter()
                .any(|r| matches!(r, Record::Samples(_) | Record::OffCpuSamples(_)))
        );
        prev_defs = rest
            .iter()
            .filter(|r| def_key(r).is_some())
            .cloned()
            .collect();
        own_all.extend_from_slice(rest);
    }
    assert_eq!(own_all, records);
    // (3) read_all deduplicates definitions, first one wins
    let (all, diag) = read_all(&bytes).unwrap();
    assert!(diag.finished && diag.corrupt_count == 0 && diag.truncated.is_none());
    let mut dedup = definitions::Dedup::new();
    let want: Vec<&Record> = records.iter().filter(|r| dedup.keep(r)).collect();
    let got: Vec<&Record> = all
        .iter()
        .filter(|r| {
            !matches!(
                r,
                Record::Samples(_) | Record::OffCpuSamples(_) | Record::Index(_) | Record::End(_)
            )
        })
        .collect();
    assert_eq!(got, want);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn records_survive_encode_decode(ops in prop::collection::vec(op(), 0..120)) {
        check(&ops);
    }
}

#[test]
fn many_blocks_repeat_session_and_write_partial_indexes() {
    let mut ops = Vec::new();
    for i in 0..200u32 {
        ops.push(Op::Record(Record::Stack(Stack {
            id: i,
            frames: vec![i],
        })));
        ops.push(Op::Sample(Sample {
            time_ns: u64::from(i) * 1000,
            tid: 1,
            cpu: 0,
            stack: i,
        }));
        ops.push(Op::Flush);
    }
    check(&ops);
}

#[test]
fn large_batches_are_split_into_blocks() {
    let batch: Vec<Sample> = (0..200_000u64)
        .map(|i| Sample {
            time_ns: i * 2_004_008,
            tid: 7,
            cpu: (i % 3) as u32,
            stack: (i % 1000) as u32,
        })
        .collect();
    check(&[Op::Batch(batch)]);
}
