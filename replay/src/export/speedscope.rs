//! `report --format speedscope`: speedscope's file format
//! (`https://www.speedscope.app/file-format-schema.json`), one sampled profile per thread.
//!
//! Samples keep their time order, consecutive samples of the same stack merged into one
//! weighted entry, so speedscope's "Time Order" view is a real timeline; weights are
//! nanoseconds (periods × period: a CPU sample is one period, an off-CPU sample its
//! periods, placed at the end of its wait). Frames are functions (name + module), their file the
//! source file when known, else the module.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

use hotspot_format::StackId;

use crate::metric::{Class, Metric};

/// A stack as a sample of one class stands on it (off-CPU ones end in their state).
type Key = (StackId, Class);
use serde::Serialize;

use super::slice::{LOST_STACK, NO_FRAMES, Slice};
use super::{ExportError, ExportOptions};
use crate::names::FrameName;
use crate::names::FunctionKey;
use crate::sanitize::display;

/// The `$schema` value speedscope checks.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

#[derive(Serialize)]
struct File<'a> {
    #[serde(rename = "$schema")]
    schema: &'static str,
    shared: Shared,
    profiles: Vec<Profile<'a>>,
    name: String,
    #[serde(rename = "activeProfileIndex")]
    active_profile_index: usize,
    exporter: String,
}

#[derive(Serialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Serialize)]
struct Frame {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    file: Option<String>,
}

#[derive(Serialize)]
struct Profile<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    name: String,
    unit: &'static str,
    #[serde(rename = "startValue")]
    start_value: u64,
    #[serde(rename = "endValue")]
    end_value: u64,
    samples: Samples<'a>,
    weights: Vec<u64>,
}

/// The `samples` array: each entry a stack of frame indices, root first. Entries name
/// their stack by id, so a stack sampled a million times is held once.
struct Samples<'a> {
    ids: Vec<Key>,
    stacks: &'a HashMap<Key, Vec<usize>>,
}

impl Serialize for Samples<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        let mut seq = serializer.serialize_seq(Some(self.ids.len()))?;
        for id in &self.ids {
            seq.serialize_element(self.stacks.get(id).map_or(&[][..], Vec::as_slice))?;
        }
        seq.end()
    }
}

#[derive(Default)]
struct Frames {
    list: Vec<Frame>,
    index: HashMap<FunctionKey, usize>,
}

impl Frames {
    fn get(&mut self, f: &FrameName) -> usize {
        let key = f.key();
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.list.len();
        let file = f.file.as_deref().unwrap_or(&f.module);
        self.list.push(Frame {
            name: display(&f.function),
            file: (!file.is_empty()).then(|| display(file)),
        });
        self.index.insert(key, i);
        i
    }
}

/// Writes the speedscope JSON document, newline-terminated. Its samples list every frame
/// of every sample, so it is written as it is produced, never held as text.
pub fn write(slice: &Slice, _: &ExportOptions, w: &mut dyn Write) -> Result<(), ExportError> {
    let period = slice.period_ns();
    let (unit, weight) = if period > 0 {
        ("nanoseconds", period)
    } else {
        ("none", 1)
    };
    // Each thread's samples in time order; without the order (not kept while reading),
    // one entry per distinct stack.
    let mut per_thread: BTreeMap<u32, Vec<(u64, Key, u64)>> = BTreeMap::new();
    match slice.order {
        Some(order) => {
            for &(time, tid, stack, class, n) in order {
                if slice.keeps(tid) {
                    per_thread
                        .entry(tid)
                        .or_default()
                        .push((time, (stack, class), n));
                }
            }
        }
        None => {
            for (tid, stack, class, n) in slice.tally() {
                per_thread
                    .entry(tid)
                    .or_default()
                    .push((0, (stack, class), n));
            }
        }
    }
    let mut frames = Frames::default();
    let mut stacks: HashMap<Key, Vec<usize>> = HashMap::new();
    // (name, stack ids, weights, end value) per thread.
    let mut runs = Vec::new();
    for (tid, mut samples) in per_thread {
        samples.sort_by_key(|s| s.0);
        let (mut ids, mut weights, mut end) = (Vec::new(), Vec::<u64>::new(), 0u64);
        for (_, stack, n) in samples {
            // Saturating: an off-CPU record's period is the capture's word.
            let w = n.saturating_mul(weight);
            end = end.saturating_add(w);
            if ids.last() == Some(&stack) {
                if let Some(x) = weights.last_mut() {
                    *x = x.saturating_add(w);
                }
                continue;
            }
            stacks.entry(stack).or_insert_with(|| {
                let names = match slice.names(stack.0, stack.1) {
                    Some(n) if n.is_empty() => vec![FrameName::placeholder(NO_FRAMES)],
                    Some(n) => n,
                    None => vec![FrameName::placeholder(LOST_STACK)],
                };
                names.iter().map(|f| frames.get(f)).collect()
            });
            ids.push(stack);
            weights.push(w);
        }
        runs.push((slice.thread_label(tid), ids, weights, end));
    }
    let profiles: Vec<Profile> = runs
        .into_iter()
        .map(|(name, ids, weights, end)| Profile {
            kind: "sampled",
            name,
            unit,
            start_value: 0,
            end_value: end,
            samples: Samples {
                ids,
                stacks: &stacks,
            },
            weights,
        })
        .collect();
    let active = profiles
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.end_value.cmp(&b.1.end_value).then(b.0.cmp(&a.0)))
        .map_or(0, |(i, _)| i);
    let file = File {
        schema: SCHEMA_URL,
        shared: Shared {
            frames: frames.list,
        },
        profiles,
        name: match slice.metric() {
            Metric::Cpu => slice.file_name(),
            m => format!("{} ({} time)", slice.file_name(), m.label()),
        },
        active_profile_index: active,
        exporter: format!("hotspot {}", env!("CARGO_PKG_VERSION")),
    };
    // An I/O failure comes back as the `io::Error` itself (a closed pipe stays one).
    serde_json::to_writer(&mut *w, &file).map_err(io::Error::from)?;
    w.write_all(b"\n")?;
    Ok(())
}
