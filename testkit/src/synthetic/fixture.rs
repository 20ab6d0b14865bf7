//! The committed fixture `fixtures/captures/synthetic-v1.hsp`: how it is built, so that the
//! fixture test can compare what it decodes with what went in. Deterministic: fixed seed,
//! fixed times. Changing anything here means regenerating the fixture (see its README).

use hotspot_format::{Lost, Process, ProcessExit, Record, Sample, SampleBatch, Thread, Writer};

use crate::synthetic::{self, Config};

/// What the fixture holds: its bytes, and the records and samples given to the writer.
#[derive(Debug)]
pub struct Fixture {
    pub bytes: Vec<u8>,
    /// Every non-sample record given to the writer, session first, in order.
    pub records: Vec<Record>,
    pub samples: Vec<Sample>,
}

pub fn config() -> Config {
    Config {
        seed: 0xf1c5_0001,
        seconds: 2.0,
        stacks: 12,
        ..Config::default()
    }
}

pub fn build() -> Fixture {
    let cfg = config();
    let session = synthetic::session(&cfg);
    let mut w = Writer::new(Vec::new(), session.clone()).unwrap();
    let mut records = vec![Record::Session(session)];
    let mut interned = Vec::new();
    let defs = synthetic::definitions(&cfg, &mut |s| {
        let id = w.intern(s);
        if id as usize == interned.len() {
            interned.push(Record::String {
                id,
                text: s.to_owned(),
            });
        }
        id
    });
    records.extend(interned);
    let mut push = |w: &mut Writer<Vec<u8>>, r: Record| {
        w.push(r.clone()).unwrap();
        records.push(r);
    };
    for d in defs {
        push(&mut w, d);
    }
    let samples = synthetic::samples(&cfg);
    let t0 = cfg.start_mono_ns;
    // Four blocks of samples, with the events a recording has between them.
    for (i, chunk) in samples.chunks(samples.len().div_ceil(4)).enumerate() {
        let t = chunk[0].time_ns;
        match i {
            1 => {
                push(
                    &mut w,
                    Record::Process(Process {
                        pid: 5000,
                        ppid: synthetic::PID,
                        name: "sh".into(),
                        cmdline: vec!["sh".into(), "-c".into(), "ls".into()],
                        exe: "/bin/sh".into(),
                        start_ns: t,
                    }),
                );
                push(
                    &mut w,
                    Record::Thread(Thread {
                        tid: 5000,
                        pid: 5000,
                        name: "sh".into(),
                        time_ns: t,
                    }),
                );
            }
            2 => {
                // exec: same pid, new image.
                push(
                    &mut w,
                    Record::Process(Process {
                        pid: 5000,
                        ppid: synthetic::PID,
                        name: "ls".into(),
                        cmdline: vec!["ls".into()],
                        exe: "/bin/ls".into(),
                        start_ns: t + 1,
                    }),
                );
                push(
                    &mut w,
                    Record::Lost(Lost {
                        time_ns: t,
                        cpu: 1,
                        count: 17,
                    }),
                );
                // A rename.
                push(
                    &mut w,
                    Record::Thread(Thread {
                        tid: synthetic::TIDS[1],
                        pid: synthetic::PID,
                        name: "worker-1-renamed".into(),
                        time_ns: t,
                    }),
                );
            }
            3 => push(
                &mut w,
                Record::ProcessExit(ProcessExit {
                    pid: 5000,
                    time_ns: t,
                }),
            ),
            _ => {}
        }
        if i % 2 == 0 {
            for &s in chunk {
                w.push_sample(s).unwrap();
            }
        } else {
            w.push(Record::Samples(SampleBatch {
                samples: chunk.to_vec(),
            }))
            .unwrap();
        }
        w.flush_block().unwrap();
    }
    let end = samples.last().map_or(t0, |s| s.time_ns) + 1;
    let bytes = w.finish(1_700_000_002_000_000_000, end, 17).unwrap();
    Fixture {
        bytes,
        records,
        samples,
    }
}
