//! Record framing inside a decompressed payload: `kind · body length · body`, and the
//! postcard bodies of every record kind.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::columns;
use crate::error::{CorruptReason, FormatError, RecordError};
use crate::limits::{self, MAX_BLOCK_RECORDS, MAX_BLOCK_SAMPLES, MAX_UNKNOWN_KINDS};
use crate::records::{
    End, FeatureOff, Index, InterpreterModule, InterpreterProcess, Lost, LostMappings, LostOffCpu,
    Mark, Module, OffCpu, OffCpuBatch, Process, ProcessExit, Record, Sample, SampleBatch, Scrubbed,
    SessionHeader, Stack, StringId, Symbol, Thread, ThreadTimes, Unwinding, kind,
};
use crate::varint;

#[derive(Serialize)]
struct StringBodyRef<'a> {
    id: StringId,
    text: &'a str,
}

#[derive(Deserialize)]
struct StringBody<'a> {
    id: StringId,
    text: &'a str,
}

/// Appends one framed record to `out`. `scratch` is reused to avoid an allocation per record.
pub fn encode_record(
    record: &Record,
    out: &mut Vec<u8>,
    scratch: &mut Vec<u8>,
) -> Result<(), FormatError> {
    scratch.clear();
    let body = std::mem::take(scratch);
    let body = match record {
        Record::Session(s) => postcard::to_extend(s, body),
        Record::String { id, text } => postcard::to_extend(&StringBodyRef { id: *id, text }, body),
        Record::Process(p) => postcard::to_extend(p, body),
        Record::ProcessExit(p) => postcard::to_extend(p, body),
        Record::Thread(t) => postcard::to_extend(t, body),
        Record::Module(m) => postcard::to_extend(m, body),
        Record::Frame(f) => postcard::to_extend(f, body),
        Record::Stack(s) => postcard::to_extend(s, body),
        Record::Samples(b) => {
            let mut body = body;
            columns::encode_batch(&b.samples, &mut body);
            Ok(body)
        }
        Record::Symbol(s) => postcard::to_extend(s, body),
        Record::Lost(l) => postcard::to_extend(l, body),
        Record::Index(i) => postcard::to_extend(i, body),
        Record::End(e) => postcard::to_extend(e, body),
        Record::Unwinding(u) => postcard::to_extend(u, body),
        Record::LostMappings(l) => postcard::to_extend(l, body),
        Record::OffCpuSamples(b) => {
            let mut body = body;
            columns::encode_off_cpu_batch(&b.samples, &mut body);
            Ok(body)
        }
        Record::OffCpu(o) => postcard::to_extend(o, body),
        Record::ThreadTimes(t) => postcard::to_extend(t, body),
        Record::LostOffCpu(l) => postcard::to_extend(l, body),
        Record::FeatureOff(f) => postcard::to_extend(f, body),
        Record::InterpreterModule(m) => postcard::to_extend(m, body),
        Record::InterpreterProcess(p) => postcard::to_extend(p, body),
        Record::Mark(m) => postcard::to_extend(m, body),
        Record::Scrubbed(s) => postcard::to_extend(s, body),
    }
    .map_err(FormatError::Encode)?;
    encode_raw(record.kind(), &body, out);
    *scratch = body;
    Ok(())
}

/// Appends a `Samples` record; returns the offsets in `out` where the writer should end a
/// zstd block (see [`columns::encode_batch`]).
pub fn encode_samples(samples: &[Sample], out: &mut Vec<u8>, scratch: &mut Vec<u8>) -> Vec<usize> {
    scratch.clear();
    let splits = columns::encode_batch(samples, scratch);
    varint::put_u32(out, kind::SAMPLES);
    varint::put_u64(out, scratch.len() as u64);
    let start = out.len();
    out.extend_from_slice(scratch);
    splits.into_iter().map(|s| start + s).collect()
}

/// Appends a record with an arbitrary kind and body (for tools and tests that need records
/// this crate does not model, such as an unknown kind).
pub fn encode_raw(kind: u32, body: &[u8], out: &mut Vec<u8>) {
    varint::put_u32(out, kind);
    varint::put_u64(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// The records of one decompressed payload.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decoded {
    pub records: Vec<Record>,
    /// Records of kinds this version does not know, skipped: `(kind, count)`, by first
    /// appearance.
    pub unknown_kinds: Vec<(u32, u32)>,
}

fn body<'a, T: Deserialize<'a>>(bytes: &'a [u8]) -> Result<T, RecordError> {
    // Trailing bytes are ignored on purpose: a newer minor version may append fields.
    postcard::take_from_bytes(bytes)
        .map(|(v, _rest)| v)
        .map_err(RecordError::Body)
}

fn decode_body(
    kind: u32,
    bytes: &[u8],
    sample_budget: &mut u64,
) -> Result<Option<Record>, RecordError> {
    let record = match kind {
        kind::SESSION => Record::Session(body::<SessionHeader>(bytes)?),
        kind::STRING => {
            let s = body::<StringBody>(bytes)?;
            Record::String {
                id: s.id,
                text: s.text.to_owned(),
            }
        }
        kind::PROCESS => Record::Process(body::<Process>(bytes)?),
        kind::PROCESS_EXIT => Record::ProcessExit(body::<ProcessExit>(bytes)?),
        kind::THREAD => Record::Thread(body::<Thread>(bytes)?),
        kind::MODULE => Record::Module(body::<Module>(bytes)?),
        kind::FRAME => Record::Frame(body(bytes)?),
        kind::STACK => Record::Stack(body::<Stack>(bytes)?),
        kind::SAMPLES => {
            let samples = columns::decode_batch(bytes, *sample_budget)?;
            *sample_budget -= samples.len() as u64;
            Record::Samples(SampleBatch { samples })
        }
        kind::SYMBOL => Record::Symbol(body::<Symbol>(bytes)?),
        kind::LOST => Record::Lost(body::<Lost>(bytes)?),
        kind::INDEX => Record::Index(body::<Index>(bytes)?),
        kind::END => Record::End(body::<End>(bytes)?),
        kind::UNWINDING => Record::Unwinding(body::<Unwinding>(bytes)?),
        kind::LOST_MAPPINGS => Record::LostMappings(body::<LostMappings>(bytes)?),
        kind::OFF_CPU_SAMPLES => {
            let samples = columns::decode_off_cpu_batch(bytes, *sample_budget)?;
            *sample_budget -= samples.len() as u64;
            Record::OffCpuSamples(OffCpuBatch { samples })
        }
        kind::OFF_CPU => Record::OffCpu(body::<OffCpu>(bytes)?),
        kind::THREAD_TIMES => Record::ThreadTimes(body::<ThreadTimes>(bytes)?),
        kind::LOST_OFF_CPU => Record::LostOffCpu(body::<LostOffCpu>(bytes)?),
        kind::FEATURE_OFF => Record::FeatureOff(body::<FeatureOff>(bytes)?),
        kind::INTERPRETER_MODULE => Record::InterpreterModule(body::<InterpreterModule>(bytes)?),
        kind::INTERPRETER_PROCESS => Record::InterpreterProcess(body::<InterpreterProcess>(bytes)?),
        kind::MARK => Record::Mark(body::<Mark>(bytes)?),
        kind::SCRUBBED => Record::Scrubbed(body::<Scrubbed>(bytes)?),
        _ => return Ok(None),
    };
    limits::check_record(&record)?;
    Ok(Some(record))
}

/// Decodes every record of a decompressed payload.
///
/// Records of unknown kinds are skipped and counted; anything else that does not decode
/// fails the whole payload, since its checksum verified and only a bug or a crafted file
/// can get here.
pub fn decode_records(raw: &[u8]) -> Result<Decoded, CorruptReason> {
    let mut out = Decoded::default();
    let mut pos = 0usize;
    let mut sample_budget = MAX_BLOCK_SAMPLES;
    // A map, not a scan of the output list: a crafted payload can hold millions of tiny
    // records of distinct unknown kinds.
    let mut unknown: BTreeMap<u32, u32> = BTreeMap::new();
    let mut unknown_order: Vec<u32> = Vec::new();
    let mut records = 0usize;
    while pos < raw.len() {
        let at = pos as u64;
        let framing = |kind| CorruptReason::Record {
            kind,
            at,
            what: RecordError::Framing,
        };
        let kind = varint::get_u32(raw, &mut pos).map_err(|_| framing(0))?;
        let len = varint::get_u64(raw, &mut pos).map_err(|_| framing(kind))?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| pos.checked_add(len))
            .filter(|&end| end <= raw.len())
            .ok_or_else(|| framing(kind))?;
        let bytes = &raw[pos..end];
        pos = end;
        // Every record counts, known or not: a payload of millions of empty records of an
        // unknown kind (a few KiB compressed) must not cost seconds to skip.
        records += 1;
        if records > MAX_BLOCK_RECORDS {
            return Err(CorruptReason::Record {
                kind,
                at,
                what: RecordError::Limit {
                    what: "records in a block",
                    value: records as u64,
                    max: MAX_BLOCK_RECORDS as u64,
                },
            });
        }
        let decoded = decode_body(kind, bytes, &mut sample_budget)
            .map_err(|what| CorruptReason::Record { kind, at, what })?;
        match decoded {
            Some(record) => out.records.push(record),
            None => {
                if let Some(n) = unknown.get_mut(&kind) {
                    *n = n.saturating_add(1);
                } else if unknown.len() >= MAX_UNKNOWN_KINDS {
                    return Err(CorruptReason::Record {
                        kind,
                        at,
                        what: RecordError::Limit {
                            what: "distinct unknown record kinds in a block",
                            value: unknown.len() as u64 + 1,
                            max: MAX_UNKNOWN_KINDS as u64,
                        },
                    });
                } else {
                    unknown.insert(kind, 1);
                    unknown_order.push(kind);
                }
            }
        }
    }
    out.unknown_kinds = unknown_order
        .into_iter()
        .map(|k| (k, unknown.get(&k).copied().unwrap_or(0)))
        .collect();
    Ok(out)
}
