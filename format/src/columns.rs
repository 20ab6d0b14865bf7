//! The columnar body of a `Samples` record: per-batch tid and cpu tables, then one byte
//! column per field, laid out so that zstd finds the regularity of timer-driven sampling
//! (see `SPEC.md`, "Sample batches").

use std::collections::HashMap;

use crate::error::RecordError;
use crate::limits::MAX_BATCH_SAMPLES;
use crate::records::{OffCpuSample, Sample, ThreadState};
use crate::varint::{self, BadVarint};

/// Per-CPU predictor state; both sides run the same one.
#[derive(Clone, Copy)]
struct CpuState {
    last_time: u64,
    last_delta: i64,
    /// `NO_TID` until the CPU's first sample in the batch.
    last_tid: u64,
    cpu: u32,
}

const NO_TID: u64 = u64::MAX;

impl CpuState {
    fn new(base: u64, cpu: u32) -> Self {
        CpuState {
            last_time: base,
            last_delta: 0,
            last_tid: NO_TID,
            cpu,
        }
    }

    /// Applies a tid column value: 0 repeats this CPU's previous tid, `v` is `tids[v - 1]`.
    #[inline(always)]
    fn take_tid(&mut self, v: u32, tids: &[u32]) -> Result<(), RecordError> {
        if v != 0 {
            let Some(&tid) = tids.get(v as usize - 1) else {
                return Err(RecordError::Columns("tid index outside the tid table"));
            };
            self.last_tid = u64::from(tid);
        } else if self.last_tid == NO_TID {
            return Err(RecordError::Columns(
                "tid repeat before any tid on this cpu",
            ));
        }
        Ok(())
    }

    /// Applies a zigzagged delta-of-delta, returning the sample's time.
    #[inline(always)]
    fn take_time(&mut self, z: u64) -> u64 {
        let delta = self.last_delta.wrapping_add(varint::unzigzag(z));
        self.last_time = self.last_time.wrapping_add(delta as u64);
        self.last_delta = delta;
        self.last_time
    }
}

/// Maps values to dense indices in order of first appearance.
struct Table {
    values: Vec<u32>,
    index: HashMap<u32, u32>,
    last: Option<(u32, u32)>,
}

impl Table {
    fn new() -> Self {
        Table {
            values: Vec::new(),
            index: HashMap::new(),
            last: None,
        }
    }

    fn index_of(&mut self, v: u32) -> u32 {
        // Consecutive samples mostly repeat a value, so a one-entry cache skips the hash.
        if let Some((lv, li)) = self.last
            && lv == v
        {
            return li;
        }
        let next = self.values.len() as u32;
        let i = *self.index.entry(v).or_insert(next);
        if i == next {
            self.values.push(v);
        }
        self.last = Some((v, i));
        i
    }
}

fn put_table(out: &mut Vec<u8>, values: &[u32]) {
    varint::put_u64(out, values.len() as u64);
    for &v in values {
        varint::put_u32(out, v);
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    varint::put_u64(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Batches smaller than this are compressed as one zstd block: for them a Huffman table per
/// column costs more than mixing the columns' byte statistics.
const SPLIT_MIN_SAMPLES: usize = 4096;

/// Appends the body of a `Samples` record holding `samples` (at most
/// [`MAX_BATCH_SAMPLES`]; the writer splits larger ones).
///
/// Returns the offsets in `out` where a column plane starts, for the writer to end a zstd
/// block at each so that every plane gets its own entropy table (empty for small batches).
pub fn encode_batch(samples: &[Sample], out: &mut Vec<u8>) -> Vec<usize> {
    let base = samples.first().map_or(0, |s| s.time_ns);
    let mut cpus = Table::new();
    let mut tids = Table::new();
    let mut state: Vec<CpuState> = Vec::new();
    let n = samples.len();
    let mut time_lo = Vec::with_capacity(n);
    let mut time_hi = Vec::with_capacity(n);
    let mut tid_col = Vec::with_capacity(n);
    let mut cpu_col = Vec::with_capacity(n);
    let mut stack_lo = Vec::with_capacity(n);
    let mut stack_hi = Vec::with_capacity(n);
    for s in samples {
        let ci = cpus.index_of(s.cpu);
        varint::put_u32(&mut cpu_col, ci);
        if ci as usize == state.len() {
            state.push(CpuState::new(base, s.cpu));
        }
        let st = &mut state[ci as usize];
        if st.last_tid == u64::from(s.tid) {
            tid_col.push(0);
        } else {
            varint::put_u32(&mut tid_col, tids.index_of(s.tid) + 1);
            st.last_tid = u64::from(s.tid);
        }
        let delta = s.time_ns.wrapping_sub(st.last_time) as i64;
        let z = varint::zigzag(delta.wrapping_sub(st.last_delta));
        time_lo.push(z as u8);
        varint::put_u64(&mut time_hi, z >> 8);
        st.last_time = s.time_ns;
        st.last_delta = delta;
        stack_lo.push(s.stack as u8);
        varint::put_u32(&mut stack_hi, s.stack >> 8);
    }
    varint::put_u64(out, n as u64);
    varint::put_u64(out, base);
    put_table(out, &tids.values);
    put_table(out, &cpus.values);
    let mut splits = Vec::new();
    varint::put_u64(out, (time_lo.len() + time_hi.len()) as u64);
    splits.push(out.len());
    out.extend_from_slice(&time_lo);
    splits.push(out.len());
    out.extend_from_slice(&time_hi);
    splits.push(out.len());
    put_bytes(out, &tid_col);
    put_bytes(out, &cpu_col);
    varint::put_u64(out, (stack_lo.len() + stack_hi.len()) as u64);
    splits.push(out.len());
    out.extend_from_slice(&stack_lo);
    splits.push(out.len());
    out.extend_from_slice(&stack_hi);
    splits.push(out.len());
    if n < SPLIT_MIN_SAMPLES {
        splits.clear();
    }
    splits
}

fn col(_: BadVarint) -> RecordError {
    RecordError::Columns("bad varint")
}

fn get_table(body: &[u8], pos: &mut usize, count: u32) -> Result<Vec<u32>, RecordError> {
    let len = varint::get_u64(body, pos).map_err(col)?;
    // Each entry takes at least one byte, and a table never holds more values than samples.
    if len > (body.len() - *pos) as u64 || len > u64::from(count) {
        return Err(RecordError::Columns(
            "table longer than its bytes or the batch",
        ));
    }
    let mut values = Vec::with_capacity(len as usize);
    for _ in 0..len {
        values.push(varint::get_u32(body, pos).map_err(col)?);
    }
    Ok(values)
}

fn get_bytes<'a>(body: &'a [u8], pos: &mut usize) -> Result<&'a [u8], RecordError> {
    let len = varint::get_u64(body, pos).map_err(col)?;
    let end = usize::try_from(len)
        .ok()
        .and_then(|l| pos.checked_add(l))
        .filter(|&e| e <= body.len())
        .ok_or(RecordError::Columns("column runs past the body"))?;
    let bytes = &body[*pos..end];
    *pos = end;
    Ok(bytes)
}

/// Decodes the body of a `Samples` record. `budget` is how many more samples the enclosing
/// block may still produce; a batch claiming more is rejected before anything is allocated.
pub fn decode_batch(body: &[u8], budget: u64) -> Result<Vec<Sample>, RecordError> {
    decode_batch_prefix(body, budget).map(|(samples, _)| samples)
}

/// [`decode_batch`], and where in `body` the stack column ended.
fn decode_batch_prefix(body: &[u8], budget: u64) -> Result<(Vec<Sample>, usize), RecordError> {
    let mut pos = 0;
    let count = varint::get_u32(body, &mut pos).map_err(col)?;
    if count > MAX_BATCH_SAMPLES || u64::from(count) > budget {
        return Err(RecordError::Limit {
            what: "samples in a batch",
            value: u64::from(count),
            max: u64::from(MAX_BATCH_SAMPLES).min(budget),
        });
    }
    let base = varint::get_u64(body, &mut pos).map_err(col)?;
    let tids = get_table(body, &mut pos, count)?;
    let cpus = get_table(body, &mut pos, count)?;
    let time_col = get_bytes(body, &mut pos)?;
    let tid_col = get_bytes(body, &mut pos)?;
    let cpu_col = get_bytes(body, &mut pos)?;
    let stack_col = get_bytes(body, &mut pos)?;
    let n = count as usize;
    // Every value takes at least one byte per plane, so this bounds the allocation by the
    // input size.
    if n.saturating_mul(2) > time_col.len()
        || n > tid_col.len()
        || n > cpu_col.len()
        || n.saturating_mul(2) > stack_col.len()
    {
        return Err(RecordError::Columns("column shorter than the sample count"));
    }
    let (time_lo, time_hi) = time_col.split_at(n);
    let (stack_lo, stack_hi) = stack_col.split_at(n);
    let mut state: Vec<CpuState> = cpus.iter().map(|&cpu| CpuState::new(base, cpu)).collect();
    let mut out = Vec::with_capacity(n);
    if time_hi.len() == n && tid_col.len() == n && cpu_col.len() == n && stack_hi.len() == n {
        decode_one_byte_values(
            &mut out, &mut state, &tids, cpu_col, tid_col, time_lo, time_hi, stack_lo, stack_hi,
        )?;
        return Ok((out, pos));
    }
    let (mut pt, mut pd, mut pc, mut ps) = (0usize, 0usize, 0usize, 0usize);
    for i in 0..n {
        let ci = varint::get_u32(cpu_col, &mut pc).map_err(col)? as usize;
        let Some(st) = state.get_mut(ci) else {
            return Err(RecordError::Columns("cpu index outside the cpu table"));
        };
        let tv = varint::get_u32(tid_col, &mut pd).map_err(col)?;
        st.take_tid(tv, &tids)?;
        let hi = varint::get_u64(time_hi, &mut pt).map_err(col)?;
        if hi >> 56 != 0 {
            return Err(RecordError::Columns("time high plane value over 56 bits"));
        }
        let time_ns = st.take_time((hi << 8) | u64::from(time_lo[i]));
        let shi = varint::get_u32(stack_hi, &mut ps).map_err(col)?;
        if shi >> 24 != 0 {
            return Err(RecordError::Columns("stack high plane value over 24 bits"));
        }
        out.push(Sample {
            time_ns,
            tid: st.last_tid as u32,
            cpu: st.cpu,
            stack: (shi << 8) | u32::from(stack_lo[i]),
        });
    }
    if pt != time_hi.len() || pd != tid_col.len() || pc != cpu_col.len() || ps != stack_hi.len() {
        return Err(RecordError::Columns("column longer than the sample count"));
    }
    Ok((out, pos))
}

/// Appends the body of an `OffCpuSamples` record (1.3): the columns of a `Samples` body,
/// then a periods column (`n` u32 varints) and a state column (`n` bytes), each
/// length-prefixed (SPEC.md §6.1). Off-CPU samples are few (one per period of blocked
/// time at most), so the planes are not split into zstd blocks of their own.
pub fn encode_off_cpu_batch(samples: &[OffCpuSample], out: &mut Vec<u8>) {
    let plain: Vec<Sample> = samples.iter().map(|s| s.sample).collect();
    encode_batch(&plain, out);
    let mut periods = Vec::with_capacity(samples.len());
    for s in samples {
        varint::put_u32(&mut periods, s.periods);
    }
    put_bytes(out, &periods);
    let states: Vec<u8> = samples.iter().map(|s| s.state.code()).collect();
    put_bytes(out, &states);
}

/// Decodes the body of an `OffCpuSamples` record; `budget` as for [`decode_batch`].
pub fn decode_off_cpu_batch(body: &[u8], budget: u64) -> Result<Vec<OffCpuSample>, RecordError> {
    let (samples, mut pos) = decode_batch_prefix(body, budget)?;
    let periods_col = get_bytes(body, &mut pos)?;
    let state_col = get_bytes(body, &mut pos)?;
    if state_col.len() != samples.len() {
        return Err(RecordError::Columns(
            "state column length differs from the sample count",
        ));
    }
    let mut at = 0;
    let mut out = Vec::with_capacity(samples.len());
    for (sample, &code) in samples.into_iter().zip(state_col) {
        let periods = varint::get_u32(periods_col, &mut at).map_err(col)?;
        if periods == 0 {
            return Err(RecordError::Columns("off-CPU sample of 0 periods"));
        }
        let state = ThreadState::from_code(code).ok_or(RecordError::Columns(
            "unknown thread state in the state column",
        ))?;
        out.push(OffCpuSample {
            sample,
            periods,
            state,
        });
    }
    if at != periods_col.len() {
        return Err(RecordError::Columns("column longer than the sample count"));
    }
    Ok(out)
}

/// The common case: every varint in the batch is a single byte (each column holds exactly
/// one byte per sample), so the planes are walked as plain bytes, in lockstep, without
/// bounds checks or varint branches. A byte with the continuation bit set would make the
/// column inconsistent; the bits are collected and checked once at the end.
#[allow(clippy::too_many_arguments)]
#[inline(never)]
fn decode_one_byte_values(
    out: &mut Vec<Sample>,
    state: &mut [CpuState],
    tids: &[u32],
    cpu_col: &[u8],
    tid_col: &[u8],
    time_lo: &[u8],
    time_hi: &[u8],
    stack_lo: &[u8],
    stack_hi: &[u8],
) -> Result<(), RecordError> {
    let mut high_bits = 0u8;
    let columns = cpu_col
        .iter()
        .zip(tid_col)
        .zip(time_lo.iter().zip(time_hi))
        .zip(stack_lo.iter().zip(stack_hi));
    for (((&c, &t), (&tlo, &thi)), (&slo, &shi)) in columns {
        high_bits |= c | t | thi | shi;
        let Some(st) = state.get_mut(usize::from(c)) else {
            return Err(RecordError::Columns("cpu index outside the cpu table"));
        };
        if t != 0 || st.last_tid == NO_TID {
            st.take_tid(u32::from(t), tids)?;
        }
        let time_ns = st.take_time((u64::from(thi) << 8) | u64::from(tlo));
        out.push(Sample {
            time_ns,
            tid: st.last_tid as u32,
            cpu: st.cpu,
            stack: (u32::from(shi) << 8) | u32::from(slo),
        });
    }
    if high_bits & 0x80 != 0 {
        return Err(RecordError::Columns("column longer than the sample count"));
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// The body as SPEC.md describes it, decoded by postcard itself.
    #[derive(Deserialize)]
    struct Body {
        count: u32,
        base_time: u64,
        tid_table: Vec<u32>,
        cpu_table: Vec<u32>,
        time: Vec<u8>,
        tid: Vec<u8>,
        cpu: Vec<u8>,
        stack: Vec<u8>,
    }

    #[test]
    fn body_is_the_postcard_struct_of_the_spec() {
        let samples: Vec<Sample> = (0..5000u64)
            .map(|i| Sample {
                time_ns: 1_000_000 + i * 2_004_008 + (i * 7919) % 5000,
                tid: 10 + (i % 3) as u32,
                cpu: (i % 2) as u32 * 5,
                stack: (i * 31 % 700) as u32,
            })
            .collect();
        let mut out = Vec::new();
        let splits = encode_batch(&samples, &mut out);
        assert_eq!(splits.len(), 6);
        let body: Body = postcard::from_bytes(&out).unwrap();
        assert_eq!(body.count, 5000);
        assert_eq!(body.base_time, 1_000_000);
        assert_eq!(body.tid_table, vec![10, 11, 12]);
        assert_eq!(body.cpu_table, vec![0, 5]);
        assert!(body.time.len() >= 10_000);
        assert_eq!((body.tid.len(), body.cpu.len()), (5000, 5000));
        assert!(body.stack.len() >= 10_000);
        assert_eq!(decode_batch(&out, u64::MAX).unwrap(), samples);
    }

    /// The off-CPU body as SPEC.md §6.1 describes it, decoded by postcard itself.
    #[derive(Deserialize)]
    struct OffCpuBody {
        count: u32,
        _base_time: u64,
        _tid_table: Vec<u32>,
        _cpu_table: Vec<u32>,
        _time: Vec<u8>,
        _tid: Vec<u8>,
        _cpu: Vec<u8>,
        _stack: Vec<u8>,
        periods: Vec<u8>,
        state: Vec<u8>,
    }

    fn off_cpu_samples() -> Vec<OffCpuSample> {
        (0..300u64)
            .map(|i| OffCpuSample {
                sample: Sample {
                    time_ns: 5_000_000 + i * 1_234_567,
                    tid: 7 + (i % 2) as u32,
                    cpu: (i % 3) as u32,
                    stack: (i * 17 % 90) as u32,
                },
                periods: 1 + (i * i % 400) as u32,
                state: ThreadState::ALL[(i % 3) as usize],
            })
            .collect()
    }

    #[test]
    fn off_cpu_body_is_the_postcard_struct_of_the_spec() {
        let samples = off_cpu_samples();
        let mut out = Vec::new();
        encode_off_cpu_batch(&samples, &mut out);
        let body: OffCpuBody = postcard::from_bytes(&out).unwrap();
        assert_eq!(body.count, 300);
        assert_eq!(body.state.len(), 300);
        assert_eq!(&body.state[..3], &[1, 2, 3]);
        let mut at = 0;
        let periods: Vec<u32> = (0..300)
            .map(|_| varint::get_u32(&body.periods, &mut at).unwrap())
            .collect();
        assert_eq!(at, body.periods.len());
        assert_eq!((periods[20], periods[21]), (1, 1 + 441 % 400));
        assert_eq!(decode_off_cpu_batch(&out, u64::MAX).unwrap(), samples);
        // A `Samples` reader sees the same samples, without the weights.
        let plain: Vec<Sample> = samples.iter().map(|s| s.sample).collect();
        assert_eq!(decode_batch(&out, u64::MAX).unwrap(), plain);
    }

    #[test]
    fn rejects_bad_off_cpu_columns() {
        let samples = off_cpu_samples();
        let mut out = Vec::new();
        encode_off_cpu_batch(&samples[..2], &mut out);
        for cut in 0..out.len() {
            assert!(decode_off_cpu_batch(&out[..cut], u64::MAX).is_err());
        }
        let last = out.len() - 1;
        let mut bad = out.clone();
        bad[last] = 9;
        assert_eq!(
            decode_off_cpu_batch(&bad, u64::MAX),
            Err(RecordError::Columns(
                "unknown thread state in the state column"
            ))
        );
        // The periods column is the 2 bytes before the state column's length and bytes.
        let mut zero = out.clone();
        zero[last - 4] = 0;
        assert_eq!(
            decode_off_cpu_batch(&zero, u64::MAX),
            Err(RecordError::Columns("off-CPU sample of 0 periods"))
        );
    }

    #[test]
    fn rejects_inconsistent_columns() {
        let samples = [Sample {
            time_ns: 5,
            tid: 1,
            cpu: 0,
            stack: 3,
        }];
        let mut out = Vec::new();
        encode_batch(&samples, &mut out);
        assert!(decode_batch(&out, 0).is_err(), "over budget");
        for cut in 0..out.len() {
            assert!(decode_batch(&out[..cut], u64::MAX).is_err());
        }
        // A tid "repeat" as a CPU's first value.
        let mut bad = out.clone();
        let tid_col = bad.len() - 6;
        assert_eq!(bad[tid_col], 1);
        bad[tid_col] = 0;
        assert_eq!(
            decode_batch(&bad, u64::MAX),
            Err(RecordError::Columns(
                "tid repeat before any tid on this cpu"
            ))
        );
    }
}
