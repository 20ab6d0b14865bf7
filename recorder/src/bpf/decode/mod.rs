//! Decoding the records the BPF program writes into its ring buffer (layout:
//! `ebpf/sample.h`, through [`super::abi`]) into the recorder's own [`Event`]s. Pure:
//! bytes in, an event or an error out; never panics, whatever the bytes.

mod error;
mod sample;
mod thread;

pub use error::{DecodeError, ThreadTimesError};
pub use thread::parse_thread;

use zerocopy::FromBytes;

use super::abi::{
    HEADER_SIZE, HS_KIND_EXEC, HS_KIND_EXIT, HS_KIND_FORK, HS_KIND_OFF_CPU, HS_KIND_SAMPLE,
    HS_KIND_THREAD_TIMES, HsHeader, HsOffCpu, OFF_CPU_TAIL_SIZE,
};
use crate::event::{BlockedSample, Event};
use sample::parse_sample;
use thread::off_cpu_state;

/// Decodes one ring-buffer record. Every length comes from the kernel (or a fuzzer) and
/// is checked against `bytes` before use.
pub fn parse_event(bytes: &[u8]) -> Result<Event, DecodeError> {
    // read_from_prefix copies, so `bytes` needs no particular alignment.
    let (header, rest) = HsHeader::read_from_prefix(bytes)
        .map_err(|_| DecodeError::TooShort { len: bytes.len() })?;
    match header.kind {
        HS_KIND_SAMPLE => parse_sample(&header, rest, bytes.len()).map(Event::Sample),
        HS_KIND_OFF_CPU => parse_off_cpu(&header, rest, bytes.len()).map(Event::OffCpu),
        HS_KIND_THREAD_TIMES => Ok(Event::ThreadTimes {
            tid: header.tid,
            times: parse_thread(rest)?,
        }),
        HS_KIND_FORK | HS_KIND_EXEC | HS_KIND_EXIT => {
            // Task events are header-only; extra bytes mean the layouts disagree.
            if !rest.is_empty() {
                return Err(DecodeError::LengthMismatch {
                    len: bytes.len(),
                    expected: HEADER_SIZE,
                });
            }
            Ok(match header.kind {
                HS_KIND_FORK => Event::Fork {
                    time_ns: header.time_ns,
                    parent: header.pid,
                    child: header.tid,
                },
                HS_KIND_EXEC => Event::Exec {
                    time_ns: header.time_ns,
                    pid: header.pid,
                    comm: header.comm,
                },
                _ => Event::Exit {
                    time_ns: header.time_ns,
                    pid: header.pid,
                },
            })
        }
        other => Err(DecodeError::UnknownKind(other)),
    }
}

/// A sample record with the off-CPU tail after its last byte.
fn parse_off_cpu(header: &HsHeader, rest: &[u8], len: usize) -> Result<BlockedSample, DecodeError> {
    let Some(cut) = rest.len().checked_sub(OFF_CPU_TAIL_SIZE) else {
        return Err(DecodeError::NoRegisters { len });
    };
    let (body, tail) = rest.split_at(cut);
    let tail = HsOffCpu::read_from_bytes(tail).map_err(|_| DecodeError::NoRegisters { len })?;
    let state = off_cpu_state(tail.state)
        .filter(|_| tail.periods > 0)
        .ok_or(DecodeError::BadOffCpu {
            periods: tail.periods,
            state: tail.state,
        })?;
    let sample = parse_sample(header, body, len - OFF_CPU_TAIL_SIZE)?;
    Ok(BlockedSample {
        sample,
        periods: tail.periods,
        state,
    })
}

#[cfg(test)]
mod tests;
