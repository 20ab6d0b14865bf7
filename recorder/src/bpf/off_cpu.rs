//! `--off-cpu`'s kernel side as the sampler holds it: the switch programs' links, the
//! session start they account from, the `threads` map read at the end, their statistics.
//! Where the off-CPU sampler attaches is [`OffCpuAttach`]'s.

use std::time::Duration;

use aya::Ebpf;
use aya::maps::{Array, HashMap, MapData, MapError};
use aya::programs::raw_trace_point::RawTracePointLinkId;

use super::abi::THREAD_SIZE;
use super::decode::parse_thread;
use super::error::{BpfError, chain};
use super::off_cpu_attach::{OffCpuAttach, OffCpuLink};
use super::programs::{SWITCH_PROGRAM, map_error, missing_program, take_map, tracepoint_program};
use crate::event::OpenThreadTimes;
use crate::live::machine;

/// Most threads the kernel keeps times for at once (a preallocated hash of ~100 bytes an
/// entry, ~3 MiB); a thread past it is counted lost at each switch.
pub(super) const THREADS_MAX: u32 = 32768;

/// One loaded program's kernel statistics.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgramStats {
    pub name: &'static str,
    /// Total run time and runs while statistics were enabled.
    pub run_time: Duration,
    pub run_count: u64,
    /// Instructions the verifier processed to accept it (5.16+).
    pub verified_insns: Option<u32>,
}

/// The off-CPU programs and maps of a loaded object.
pub(super) struct OffCpu {
    /// Where the off-CPU sampler attaches.
    attach: OffCpuAttach,
    /// The off-CPU sampler ([`OffCpuAttach::program`]).
    program: &'static str,
    threads: HashMap<MapData, u32, [u8; THREAD_SIZE]>,
    session: Array<MapData, u64>,
    links: Option<(RawTracePointLinkId, OffCpuLink)>,
    /// Set by the caller; else when attached.
    pub(super) session_start_ns: Option<u64>,
    /// When the switch programs were detached.
    pub(super) end_ns: Option<u64>,
}

impl OffCpu {
    /// Takes the maps out of a loaded object whose `program` was loaded for `attach`.
    pub(super) fn new(
        ebpf: &mut Ebpf,
        attach: OffCpuAttach,
        program: &'static str,
    ) -> Result<Self, BpfError> {
        Ok(OffCpu {
            attach,
            program,
            threads: HashMap::try_from(take_map(ebpf, "threads")?)
                .map_err(|e| map_error("threads", "open", &e))?,
            session: Array::try_from(take_map(ebpf, "session")?)
                .map_err(|e| map_error("session", "open", &e))?,
            links: None,
            session_start_ns: None,
            end_ns: None,
        })
    }

    /// Writes the session start, then attaches the off-CPU sampler before the switch
    /// program (a sample the switch program makes due is then always taken).
    pub(super) fn attach(&mut self, ebpf: &mut Ebpf) -> Result<(), BpfError> {
        let start = self.session_start_ns.unwrap_or_else(machine::monotonic_ns);
        self.session
            .set(0, start, 0)
            .map_err(|e| map_error("session", "write", &e))?;
        let sampler = self.attach.attach(ebpf, self.program)?;
        let (switch_program, tracepoint) = SWITCH_PROGRAM;
        let attached = tracepoint_program(ebpf, switch_program).and_then(|p| {
            p.attach(tracepoint)
                .map_err(|e| BpfError::AttachTracepoint {
                    program: switch_program,
                    tracepoint,
                    reason: format!("{} (--off-cpu needs Linux 5.18)", chain(&e)),
                })
        });
        match attached {
            Ok(switch) => {
                self.links = Some((switch, sampler));
                Ok(())
            }
            Err(e) => {
                let _ = self.attach.detach(ebpf, self.program, sampler);
                Err(e)
            }
        }
    }

    /// Detaches the switch programs, if attached: thread times stop moving.
    pub(super) fn detach(&mut self, ebpf: &mut Ebpf) -> Result<(), BpfError> {
        let Some((switch, sampler)) = self.links.take() else {
            return Ok(());
        };
        let switch = tracepoint_program(ebpf, SWITCH_PROGRAM.0)?
            .detach(switch)
            .map_err(|e| BpfError::Detach { reason: chain(&e) });
        let sampler = self.attach.detach(ebpf, self.program, sampler);
        self.end_ns = Some(machine::monotonic_ns());
        switch.and(sampler)
    }

    /// The threads still in the map, taken out of it (so that an exit from now on writes
    /// no second record of one), and how many values did not decode.
    pub(super) fn take_threads(&mut self) -> Result<(Vec<(u32, OpenThreadTimes)>, u64), BpfError> {
        self.threads_now(true)
    }

    /// The threads in the map, left in it (`take`: taken out of it), and how many values
    /// did not decode.
    pub(super) fn threads_now(
        &mut self,
        take: bool,
    ) -> Result<(Vec<(u32, OpenThreadTimes)>, u64), BpfError> {
        let tids = self
            .threads
            .keys()
            .collect::<Result<Vec<u32>, MapError>>()
            .map_err(|e| map_error("threads", "list", &e))?;
        let (mut out, mut malformed) = (Vec::with_capacity(tids.len()), 0);
        for tid in tids {
            let Ok(value) = self.threads.get(&tid, 0) else {
                continue; // it exited meanwhile: its exit record has it
            };
            if take && self.threads.remove(&tid).is_err() {
                continue;
            }
            match parse_thread(&value) {
                Ok(t) => out.push((tid, t)),
                Err(_) => malformed += 1,
            }
        }
        Ok((out, malformed))
    }

    /// `[sched_switch, the off-CPU sampler]`.
    pub(super) fn stats(&self, ebpf: &mut Ebpf) -> Result<[ProgramStats; 2], BpfError> {
        let stats = |name: &'static str| {
            ebpf.program(name)
                .ok_or_else(|| missing_program(name))?
                .info()
                .map(|i| ProgramStats {
                    name,
                    run_time: i.run_time(),
                    run_count: i.run_count(),
                    verified_insns: i.verified_instruction_count(),
                })
                .map_err(|e| BpfError::ProgramLoad {
                    program: name,
                    reason: chain(&e),
                })
        };
        Ok([stats(SWITCH_PROGRAM.0)?, stats(self.program)?])
    }
}
