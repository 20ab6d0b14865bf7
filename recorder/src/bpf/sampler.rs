//! The real, aya-backed event source: loads `ebpf/hotspot.bpf.o`, attaches it, drains its ring buffer.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use aya::maps::{HashMap, MapData, MapError, PerCpuArray, RingBuf};
use aya::programs::perf_event::{
    PerfEventConfig, PerfEventLinkId, PerfEventScope, SamplePolicy, SoftwareEvent,
};
use aya::programs::raw_trace_point::RawTracePointLinkId;

use aya::{Ebpf, EbpfError, EbpfLoader};

use super::btf_subset;
use super::caps;
use super::error::{BpfError, chain, kernel_release};
use super::mapping_events::MappingEvents;
use super::off_cpu::{OffCpu, ProgramStats, THREADS_MAX};
use super::off_cpu_attach::OffCpuAttach;
use super::perf_records::PerfRecord;
use super::programs::{
    FP_SAMPLE_PROGRAM, LoadFailure, STACK_SAMPLE_PROGRAM, TASK_PROGRAMS, attach_reason, load_error,
    load_kernel_symbols, load_programs, map_error, perf_program, take_map, tracepoint_program,
};
use super::raw::{HEADER_SIZE, MAX_STACK, RawEvent, parse_event};
use super::ring_size::max_record_bytes;
use super::thread_times::RawThread;
use super::time_order::{self, TimeOrder};
use crate::kernel_names::BpfKernelSymbols;

/// Built by `tools/build-bpf`; committed so that building the recorder needs no clang.
static OBJECT: &[u8] = aya::include_bytes_aligned!("../../../ebpf/hotspot.bpf.o");

/// Its per-CPU scratch, sized by the loader, and the off-CPU sampler's.
const STACK_SCRATCH_MAP: &str = "stack_scratch";
const OFF_STACK_SCRATCH_MAP: &str = "off_stack_scratch";

// Indices into the `lost` per-CPU array (HS_LOST_* in ebpf/sample.h).
const LOST_SAMPLES: u32 = 0;
const LOST_TASK_EVENTS: u32 = 1;
const LOST_OFF_CPU: u32 = 2;
const LOST_SWITCHES: u32 = 3;

/// How to sample. Everything here is fixed once [`BpfSampler::load`] returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerOptions {
    /// Samples per second per CPU (cpu_clock frequency mode).
    pub freq_hz: u64,
    /// Sample every process instead of only the targets (the recorder itself excepted).
    pub all_processes: bool,
    /// When a target forks a new process, make the child a target too (in the kernel,
    /// before the child runs).
    pub follow_children: bool,
    /// The recorder's own tgid, never sampled.
    pub self_tgid: u32,
    /// Ring-buffer size in bytes: a power of two and a multiple of the page size, and
    /// room for the largest record `stack_cap` allows.
    pub ring_bytes: u32,
    /// Most bytes of user stack each sample copies, from the stack pointer to the top of
    /// its frames, for the recorder to unwind (at most 65536). 0 is frame-pointer mode:
    /// no registers, no copy, only the kernel's frame-pointer walk (the program every
    /// kernel from 5.8 runs; the copying one needs 5.17).
    pub stack_cap: u32,
    /// Also record off-CPU time (`--off-cpu`): every traced thread's exact times at
    /// each context switch, and a sample of the stack it blocked in each time its
    /// blocked time crosses a period (1 / `freq_hz`). Needs 5.18 (sched_switch's
    /// `prev_state`), and the `sched_exit_tp` tracepoint (6.16) or kprobes for the stacks
    /// (see `recorder/src/bpf/off_cpu_attach.rs`).
    pub off_cpu: bool,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        Self {
            // Prime, so the tick does not beat against periodic work at round rates.
            freq_hz: 499,
            all_processes: false,
            follow_children: false,
            self_tgid: std::process::id(),
            ring_bytes: 8 << 20,
            stack_cap: MAX_STACK as u32,
            off_cpu: false,
        }
    }
}

/// The seam the recorder codes against; a fake implements it in tests.
pub trait EventSource {
    /// Starts sampling process `tgid` (and, with `follow_children`, its future children).
    fn add_target(&mut self, tgid: u32) -> Result<(), BpfError>;
    /// Stops sampling process `tgid`; not an error if it is not a target (e.g. it already exited).
    fn remove_target(&mut self, tgid: u32) -> Result<(), BpfError>;
    /// Wait (epoll on the ring buffer fd, no busy loop) up to `timeout`, then drain every available event into `out`.
    fn poll(&mut self, timeout: Duration, out: &mut Vec<RawEvent>) -> Result<(), BpfError>;
    /// Samples the kernel dropped, per CPU, cumulative since start.
    fn lost_per_cpu(&mut self) -> Result<Vec<u64>, BpfError>;
    /// Stops taking samples; what is already buffered can still be drained. After it the
    /// lost counters no longer move, so a final read of them is exact.
    fn stop_sampling(&mut self) -> Result<(), BpfError> {
        Ok(())
    }
    /// Mapping events the kernel dropped, cumulative since start.
    fn lost_mapping_events(&mut self) -> u64 {
        0
    }
    /// `--off-cpu`: off-CPU samples and thread-times records the kernel dropped, summed
    /// over CPUs, cumulative since start.
    fn lost_off_cpu(&mut self) -> Result<u64, BpfError> {
        Ok(0)
    }
    /// `--off-cpu`: when the kernel stopped accounting thread times (monotonic ns; set by
    /// [`EventSource::stop_sampling`]).
    fn accounting_end(&self) -> Option<u64> {
        None
    }
    /// `--off-cpu`: the times of the threads still alive (tid, times as the kernel kept
    /// them), taken out of the kernel: call once, after `stop_sampling`.
    fn take_thread_times(&mut self) -> Result<Vec<(u32, RawThread)>, BpfError> {
        Ok(Vec::new())
    }
}

/// The BPF program loaded into the running kernel.
pub struct BpfSampler {
    /// Owns the programs and, once started, their links: dropping it detaches everything.
    ebpf: Ebpf,
    events: RingBuf<MapData>,
    targets: HashMap<MapData, u32, u8>,
    lost: PerCpuArray<MapData, u64>,
    epoll: OwnedFd,
    freq_hz: u64,
    /// Bounds one drain so a producer faster than us cannot keep `poll` from returning.
    max_drain: usize,
    started: bool,
    /// Until taken by the recorder; `None` where the kernel cannot run `hs_ksym`.
    kernel_symbols: Option<BpfKernelSymbols>,
    /// Relocated against the BTF subset rather than the whole kernel BTF.
    btf_subset: bool,
    /// The perf_event links, one per CPU, while sampling.
    cpu_links: Vec<PerfEventLinkId>,
    malformed: u64,
    /// Which sampling program is loaded: [`FP_SAMPLE_PROGRAM`] or [`STACK_SAMPLE_PROGRAM`].
    sample_program: &'static str,
    /// The kernel's mapping events, from `start` on.
    mapping_events: Option<MappingEvents>,
    /// Both streams, merged into one time order.
    order: TimeOrder,
    perf_records: Vec<PerfRecord>,
    /// `--off-cpu`'s programs and maps.
    off_cpu: Option<OffCpu>,
}

impl std::fmt::Debug for BpfSampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfSampler")
            .field("freq_hz", &self.freq_hz)
            .field("started", &self.started)
            .field("malformed", &self.malformed)
            .field("sample_program", &self.sample_program)
            .finish_non_exhaustive()
    }
}

impl BpfSampler {
    /// Loads the program (targets must be added before `start`), does not attach yet.
    pub fn load(opts: &SamplerOptions) -> Result<Self, BpfError> {
        validate(opts)?;
        caps::check()?;
        raise_memlock_limit();

        // The fork/exec/exit programs read task_struct through CO-RE: the loader
        // relocates them with the kernel's BTF.
        let kernel_btf = std::path::Path::new(btf_subset::KERNEL_BTF);
        if !kernel_btf.exists() {
            return Err(BpfError::Unsupported {
                kernel: kernel_release(),
                feature: "BTF type information (/sys/kernel/btf/vmlinux)",
                needs: "5.5 with CONFIG_DEBUG_INFO_BTF=y",
            });
        }

        let all_processes = u8::from(opts.all_processes);
        let follow_children = u8::from(opts.follow_children);
        // The copy's scratch is indexed by CPU number; without the copy one slot is
        // enough (its 72 KiB per CPU are kernel memory).
        let stack_scratch_entries = if opts.stack_cap == 0 {
            1
        } else {
            let cpus = aya::util::nr_cpus()
                .map_err(|(path, source)| BpfError::OnlineCpus { path, source })?;
            u32::try_from(cpus).unwrap_or(u32::MAX)
        };
        // Relocated against the few kernel types the programs read (see btf_subset),
        // not the whole kernel BTF: parsing that took ~30 ms of CPU and ~18 MB. Should
        // the subset fail, the loader parses the kernel's BTF itself, as it does by
        // default. Either way there is one source: the task programs are raw
        // tracepoints, which attach by name, not by BTF id as tp_btf ones would.
        let off_cpu = u8::from(opts.off_cpu);
        let period_ns = 1_000_000_000 / opts.freq_hz;
        let globals = Globals {
            all_processes: &all_processes,
            follow_children: &follow_children,
            self_tgid: &opts.self_tgid,
            stack_cap: &opts.stack_cap,
            off_cpu: &off_cpu,
            period_ns: &period_ns,
            ring_bytes: opts.ring_bytes,
            stack_scratch_entries,
            off_stack_scratch_entries: if opts.off_cpu {
                stack_scratch_entries
            } else {
                1
            },
            // Without --off-cpu the map is never used: one entry, not ~3 MiB.
            threads_entries: if opts.off_cpu { THREADS_MAX } else { 1 },
        };
        let subset = btf_subset::read(kernel_btf).ok();
        let loaded = match &subset {
            Some(btf) => load_object(
                btf_subset::loader_without_kernel_btf().btf(Some(btf)),
                &globals,
            ),
            None => load_object(&mut EbpfLoader::new(), &globals),
        };
        let (mut ebpf, btf_subset) = match loaded {
            Ok(ebpf) => (ebpf, subset.is_some()),
            // A kernel whose types the subset models wrongly still gets a recorder.
            Err(_) if subset.is_some() => (
                load_object(&mut EbpfLoader::new(), &globals).map_err(load_error)?,
                false,
            ),
            Err(e) => return Err(load_error(e)),
        };

        let sample_program = if opts.stack_cap == 0 {
            FP_SAMPLE_PROGRAM
        } else {
            STACK_SAMPLE_PROGRAM
        };
        let off_cpu_program = if opts.off_cpu {
            let attach = OffCpuAttach::choose(kernel_btf)?;
            Some((attach, attach.program(opts.stack_cap > 0)))
        } else {
            None
        };
        // aya does not fail the object's load on a CO-RE field it cannot find: it
        // poisons the instruction, and the verifier then refuses the program. A subset
        // that lacks a field the programs read is such a case: parse the whole BTF.
        let mut loaded = load_programs(&mut ebpf, sample_program, off_cpu_program);
        let mut btf_subset = btf_subset;
        if btf_subset && matches!(&loaded, Err(f) if f.poisoned_relocation()) {
            ebpf = load_object(&mut EbpfLoader::new(), &globals).map_err(load_error)?;
            btf_subset = false;
            loaded = load_programs(&mut ebpf, sample_program, off_cpu_program);
        }
        loaded.map_err(LoadFailure::into_error)?;
        // Optional: without it (bpf_snprintf needs 5.13) kernel frames are named from
        // /proc/kallsyms instead.
        let kernel_symbols = load_kernel_symbols(&mut ebpf);

        let events = RingBuf::try_from(take_map(&mut ebpf, "events")?)
            .map_err(|e| map_error("events", "open", &e))?;
        let targets = HashMap::try_from(take_map(&mut ebpf, "targets")?)
            .map_err(|e| map_error("targets", "open", &e))?;
        let lost = PerCpuArray::try_from(take_map(&mut ebpf, "lost")?)
            .map_err(|e| map_error("lost", "open", &e))?;
        let epoll = epoll_for(&events).map_err(BpfError::Poll)?;
        let off_cpu = match off_cpu_program {
            Some((attach, program)) => Some(OffCpu::new(&mut ebpf, attach, program)?),
            None => None,
        };

        Ok(Self {
            ebpf,
            events,
            targets,
            lost,
            epoll,
            freq_hz: opts.freq_hz,
            max_drain: opts.ring_bytes as usize / HEADER_SIZE,
            started: false,
            kernel_symbols,
            btf_subset,
            cpu_links: Vec::new(),
            malformed: 0,
            sample_program,
            mapping_events: None,
            order: TimeOrder::default(),
            perf_records: Vec::new(),
            off_cpu,
        })
    }

    /// `--off-cpu`: the monotonic ns to account threads from (a thread already running
    /// or blocked is accounted from here): the session header's start. Before `start`.
    pub fn set_session_start(&mut self, ns: u64) {
        if let Some(o) = &mut self.off_cpu {
            o.session_start_ns = Some(ns);
        }
    }

    /// Attaches the perf_event program on every online CPU and the tracepoints.
    ///
    /// All or nothing: on failure whatever was attached is detached again, so a
    /// failed `start` leaves nothing running and a retry cannot double events.
    pub fn start(&mut self) -> Result<(), BpfError> {
        if self.started {
            return Err(BpfError::AlreadyStarted);
        }
        let mut tracepoint_links = Vec::new();
        let mut cpu_links = Vec::new();
        let result = self.attach_all(&mut tracepoint_links, &mut cpu_links);
        if result.is_err() {
            // Closing the rings' descriptors also takes them out of the epoll set.
            self.mapping_events = None;
            // Best effort: a link that cannot be detached goes when `self` is dropped.
            for (program, link) in tracepoint_links {
                if let Ok(prog) = tracepoint_program(&mut self.ebpf, program) {
                    let _ = prog.detach(link);
                }
            }
            if let Ok(prog) = perf_program(&mut self.ebpf, self.sample_program) {
                for link in cpu_links.drain(..) {
                    let _ = prog.detach(link);
                }
            }
            let _ = self.detach_switch();
        }
        result?;
        self.cpu_links = cpu_links;
        self.started = true;
        Ok(())
    }

    fn attach_all(
        &mut self,
        tracepoint_links: &mut Vec<(&'static str, RawTracePointLinkId)>,
        cpu_links: &mut Vec<PerfEventLinkId>,
    ) -> Result<(), BpfError> {
        let cpus = aya::util::online_cpus()
            .map_err(|(path, source)| BpfError::OnlineCpus { path, source })?;
        // Mapping events before anything else: every mapping a sample can land in is
        // then made either before recording (the /proc snapshot) or under the events.
        if self.mapping_events.is_none() {
            let events = MappingEvents::open(&cpus)
                .map_err(|(cpu, source)| BpfError::MappingEvents { cpu, source })?;
            for fd in events.fds() {
                watch(&self.epoll, fd).map_err(BpfError::Poll)?;
            }
            self.mapping_events = Some(events);
        }
        // Tracepoints first: a fork or exit during the CPU loop below must not be missed.
        for (program, tracepoint) in TASK_PROGRAMS {
            let link = tracepoint_program(&mut self.ebpf, program)?
                .attach(tracepoint)
                .map_err(|e| BpfError::AttachTracepoint {
                    program,
                    tracepoint,
                    reason: chain(&e),
                })?;
            tracepoint_links.push((program, link));
        }
        if let Some(o) = &mut self.off_cpu {
            o.attach(&mut self.ebpf)?;
        }

        let freq_hz = self.freq_hz;
        let prog = perf_program(&mut self.ebpf, self.sample_program)?;
        for cpu in cpus {
            let link = prog
                .attach(
                    PerfEventConfig::Software(SoftwareEvent::CpuClock),
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Frequency(freq_hz),
                    false,
                )
                .map_err(|e| BpfError::AttachCpu {
                    cpu,
                    reason: attach_reason(&e, freq_hz),
                })?;
            cpu_links.push(link);
        }
        Ok(())
    }

    /// `--off-cpu`: switches out of a thread whose switch back in the kernel program did
    /// not see (summed over CPUs): each puts that interval, time on the CPU included, in
    /// the state the thread left in. Not yet explained; rare (see `switched_out` in
    /// `ebpf/hotspot.bpf.c`).
    pub fn unseen_switches(&mut self) -> Result<u64, BpfError> {
        Ok(self.read_lost(LOST_SWITCHES)?.iter().sum())
    }

    /// `--off-cpu`: the statistics of the switch programs, `[sched_switch, the sampler]`
    /// (run time and runs count while the kernel keeps statistics: see
    /// [`BpfSampler::sample_program_run_time`]). `None` without `--off-cpu`.
    pub fn off_cpu_program_stats(&mut self) -> Result<Option<[ProgramStats; 2]>, BpfError> {
        match &self.off_cpu {
            Some(o) => o.stats(&mut self.ebpf).map(Some),
            None => Ok(None),
        }
    }

    /// Detaches the switch programs, if attached: thread times stop moving.
    fn detach_switch(&mut self) -> Result<(), BpfError> {
        match &mut self.off_cpu {
            Some(o) => o.detach(&mut self.ebpf),
            None => Ok(()),
        }
    }

    /// Fork/exec/exit records the kernel dropped (ring full) plus children it could not
    /// follow (`targets` map full), summed over CPUs.
    pub fn lost_task_events(&mut self) -> Result<u64, BpfError> {
        Ok(self.read_lost(LOST_TASK_EVENTS)?.iter().sum())
    }

    /// The processes currently in the kernel's target set (added by us or by fork
    /// following, minus those that exited).
    pub fn targets(&self) -> Result<Vec<u32>, BpfError> {
        self.targets
            .keys()
            .collect::<Result<Vec<u32>, MapError>>()
            .map_err(|e| map_error("targets", "list", &e))
    }

    /// Names kernel addresses through the kernel itself, for the recorder to keep (it
    /// holds its own descriptors). `None` once taken, or where the kernel cannot do it.
    pub fn take_kernel_symbols(&mut self) -> Option<BpfKernelSymbols> {
        self.kernel_symbols.take()
    }

    /// Whether the programs were relocated against the few kernel types they read (the
    /// fast start) rather than the whole kernel BTF (the fallback).
    pub fn relocated_with_btf_subset(&self) -> bool {
        self.btf_subset
    }

    /// Whether samples carry user registers and a stack copy (`stack_cap > 0`) rather
    /// than only the kernel's frame-pointer walk.
    pub fn copies_stacks(&self) -> bool {
        self.sample_program == STACK_SAMPLE_PROGRAM
    }

    /// The kernel's id of the loaded sampling program (for `bpftool prog show id`).
    pub fn sample_program_id(&mut self) -> Result<u32, BpfError> {
        Ok(self.sample_program_info()?.id())
    }

    /// The sampling program's total run time and number of runs (every tick on every
    /// CPU, traced or not) while the kernel kept statistics: they count only while
    /// `kernel.bpf_stats_enabled` is 1 or a `BPF_ENABLE_STATS` descriptor is open.
    pub fn sample_program_run_time(&mut self) -> Result<(Duration, u64), BpfError> {
        let info = self.sample_program_info()?;
        Ok((info.run_time(), info.run_count()))
    }

    /// How many instructions the kernel's verifier processed to accept the sampling
    /// program: the main cost of loading it (~0.4 µs each here), which grows with the
    /// paths it walks, not with the program's size. `None` before 5.16, which does not
    /// report it.
    pub fn sample_program_verified_insns(&mut self) -> Result<Option<u32>, BpfError> {
        Ok(self.sample_program_info()?.verified_instruction_count())
    }

    fn sample_program_info(&mut self) -> Result<aya::programs::ProgramInfo, BpfError> {
        let program = self.sample_program;
        perf_program(&mut self.ebpf, program)?
            .info()
            .map_err(|e| BpfError::ProgramLoad {
                program,
                reason: chain(&e),
            })
    }

    /// Ring-buffer records that did not decode (a BPF object out of step with `raw.rs`).
    pub fn malformed_records(&self) -> u64 {
        self.malformed
    }

    fn read_lost(&self, index: u32) -> Result<Vec<u64>, BpfError> {
        let values = self
            .lost
            .get(&index, 0)
            .map_err(|e| map_error("lost", &format!("read {index}"), &e))?;
        Ok(values.iter().copied().collect())
    }

    /// Reads both streams into the time order.
    fn drain(&mut self) {
        for _ in 0..self.max_drain {
            let Some(item) = self.events.next() else {
                break;
            };
            match parse_event(&item) {
                Ok(event) => self.order.push(event),
                Err(_) => self.malformed += 1,
            }
        }
        // After the BPF ring: every mapping a sample just read depends on was made
        // before that sample, so it is in a perf ring by now.
        if let Some(m) = &mut self.mapping_events {
            m.drain(&mut self.perf_records);
            for r in self.perf_records.drain(..) {
                match r {
                    PerfRecord::Mmap {
                        time_ns,
                        pid,
                        mapping,
                    } => self.order.push(RawEvent::Mmap {
                        time_ns,
                        pid,
                        mapping,
                    }),
                    PerfRecord::Exec { time_ns, pid } => {
                        self.order.push(RawEvent::NewImage { time_ns, pid });
                    }
                    PerfRecord::Lost { .. } | PerfRecord::Other => {}
                }
            }
        }
    }

    /// Events timed at or before this are all in the rings once they are read next:
    /// everything once sampling stopped.
    fn cutoff(&self) -> u64 {
        if self.cpu_links.is_empty() {
            u64::MAX
        } else {
            crate::session::monotonic_ns().saturating_sub(time_order::MARGIN_NS)
        }
    }

    /// Records of the mapping events that did not decode, so far (a kernel writing
    /// what `perf_records` does not expect).
    pub fn mapping_events_malformed(&self) -> u64 {
        self.mapping_events
            .as_ref()
            .map_or(0, MappingEvents::malformed)
    }

    fn wait(&self, timeout: Duration) -> Result<(), BpfError> {
        // Round up: a 0.5 ms timeout must not become a non-blocking spin.
        let ms = timeout.as_nanos().div_ceil(1_000_000);
        let ms = i32::try_from(ms).unwrap_or(i32::MAX);
        let mut ready = [libc::epoll_event { events: 0, u64: 0 }; 1];
        // SAFETY: the epoll fd is open for our lifetime and `ready` has room for 1 event.
        let rc = unsafe { libc::epoll_wait(self.epoll.as_raw_fd(), ready.as_mut_ptr(), 1, ms) };
        if rc < 0 {
            let error = io::Error::last_os_error();
            // A signal (e.g. SIGCHLD from the target) just ends the wait early.
            if error.kind() != io::ErrorKind::Interrupted {
                return Err(BpfError::Poll(error));
            }
        }
        Ok(())
    }
}

impl EventSource for BpfSampler {
    fn add_target(&mut self, tgid: u32) -> Result<(), BpfError> {
        self.targets
            .insert(tgid, 1, 0)
            .map_err(|e| map_error("targets", &format!("insert {tgid}"), &e))
    }

    fn remove_target(&mut self, tgid: u32) -> Result<(), BpfError> {
        match self.targets.remove(&tgid) {
            // The exit program removes exited processes itself; a late remove is fine.
            Err(MapError::KeyNotFound) | Ok(()) => Ok(()),
            Err(MapError::SyscallError(e)) if e.io_error.raw_os_error() == Some(libc::ENOENT) => {
                Ok(())
            }
            Err(e) => Err(map_error("targets", &format!("remove {tgid}"), &e)),
        }
    }

    fn poll(&mut self, timeout: Duration, out: &mut Vec<RawEvent>) -> Result<(), BpfError> {
        let mut through = self.cutoff();
        self.drain();
        if !self.order.has_through(through) {
            self.wait(timeout)?;
            through = self.cutoff();
            self.drain();
        }
        self.order.release(through, out);
        Ok(())
    }

    fn lost_mapping_events(&mut self) -> u64 {
        self.mapping_events.as_ref().map_or(0, MappingEvents::lost)
    }

    fn lost_per_cpu(&mut self) -> Result<Vec<u64>, BpfError> {
        self.read_lost(LOST_SAMPLES)
    }

    fn stop_sampling(&mut self) -> Result<(), BpfError> {
        let switch = self.detach_switch();
        let links = std::mem::take(&mut self.cpu_links);
        if !links.is_empty() {
            let prog = perf_program(&mut self.ebpf, self.sample_program)?;
            for link in links {
                prog.detach(link)
                    .map_err(|e| BpfError::Detach { reason: chain(&e) })?;
            }
        }
        switch
    }

    fn lost_off_cpu(&mut self) -> Result<u64, BpfError> {
        Ok(self.read_lost(LOST_OFF_CPU)?.iter().sum())
    }

    fn accounting_end(&self) -> Option<u64> {
        self.off_cpu.as_ref().and_then(|o| o.end_ns)
    }

    fn take_thread_times(&mut self) -> Result<Vec<(u32, RawThread)>, BpfError> {
        let Some(o) = &mut self.off_cpu else {
            return Ok(Vec::new());
        };
        let (threads, malformed) = o.take_threads()?;
        self.malformed += malformed;
        Ok(threads)
    }
}

/// What the loader writes into the object before the verifier sees it.
struct Globals<'a> {
    all_processes: &'a u8,
    follow_children: &'a u8,
    self_tgid: &'a u32,
    stack_cap: &'a u32,
    off_cpu: &'a u8,
    period_ns: &'a u64,
    ring_bytes: u32,
    stack_scratch_entries: u32,
    off_stack_scratch_entries: u32,
    threads_entries: u32,
}

fn load_object<'a>(loader: &mut EbpfLoader<'a>, g: &Globals<'a>) -> Result<Ebpf, EbpfError> {
    loader
        .override_global("all_processes", g.all_processes, true)
        .override_global("follow_children", g.follow_children, true)
        .override_global("self_tgid", g.self_tgid, true)
        .override_global("stack_cap", g.stack_cap, true)
        .override_global("off_cpu", g.off_cpu, true)
        .override_global("period_ns", g.period_ns, true)
        .map_max_entries("events", g.ring_bytes)
        .map_max_entries(STACK_SCRATCH_MAP, g.stack_scratch_entries)
        .map_max_entries(OFF_STACK_SCRATCH_MAP, g.off_stack_scratch_entries)
        .map_max_entries("threads", g.threads_entries)
        .load(OBJECT)
}

pub(super) fn validate(opts: &SamplerOptions) -> Result<(), BpfError> {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    let page = u32::try_from(page).unwrap_or(4096);
    if !opts.ring_bytes.is_power_of_two() || opts.ring_bytes < page {
        return Err(BpfError::InvalidOptions(format!(
            "ring_bytes {} must be a power of two of at least the page size ({page})",
            opts.ring_bytes
        )));
    }
    if opts.freq_hz == 0 {
        return Err(BpfError::InvalidOptions(
            "freq_hz must be at least 1".to_owned(),
        ));
    }
    if opts.stack_cap as usize > MAX_STACK {
        return Err(BpfError::InvalidOptions(format!(
            "stack_cap {} is above the {MAX_STACK} bytes the BPF program can copy",
            opts.stack_cap
        )));
    }
    // A ring that cannot hold the largest record would drop every deep sample. The
    // kernel adds an 8-byte header to each record.
    let largest = max_record_bytes(opts.stack_cap) + 8;
    if opts.ring_bytes < largest {
        return Err(BpfError::InvalidOptions(format!(
            "ring_bytes {} cannot hold a {largest}-byte sample (stack_cap {}): use a larger ring or a smaller cap",
            opts.ring_bytes, opts.stack_cap
        )));
    }
    Ok(())
}

/// Kernels before 5.11 charge BPF maps to RLIMIT_MEMLOCK, whose default (64 KiB) is far
/// below an 8 MiB ring. Newer kernels ignore it, so failing to raise it is not an error:
/// if it mattered, map creation reports EPERM.
fn raise_memlock_limit() {
    let unlimited = libc::rlimit {
        rlim_cur: libc::RLIM_INFINITY,
        rlim_max: libc::RLIM_INFINITY,
    };
    // SAFETY: setrlimit only reads the struct we pass.
    let _ = unsafe { libc::setrlimit(libc::RLIMIT_MEMLOCK, &unlimited) };
}

/// Adds `fd` to the epoll set, readable-level.
fn watch(epoll: &OwnedFd, fd: std::os::fd::RawFd) -> io::Result<()> {
    let mut interest = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: fd as u64,
    };
    // SAFETY: both fds are open; `fd` is owned by `BpfSampler` next to the epoll set.
    let rc = unsafe { libc::epoll_ctl(epoll.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut interest) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn epoll_for(events: &RingBuf<MapData>) -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 has no preconditions; we take ownership of the fd it returns.
    let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a fresh fd that nothing else owns.
    let epoll = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut interest = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: 0,
    };
    let ring_fd = events.as_fd().as_raw_fd();
    // SAFETY: both fds are open; the ring fd outlives the epoll set (same owner, `BpfSampler`).
    let rc = unsafe {
        libc::epoll_ctl(
            epoll.as_raw_fd(),
            libc::EPOLL_CTL_ADD,
            ring_fd,
            &mut interest,
        )
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(epoll)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_ring_sizes_and_frequencies() {
        let bad_ring = SamplerOptions {
            ring_bytes: 3 << 20,
            ..SamplerOptions::default()
        };
        assert!(matches!(
            validate(&bad_ring),
            Err(BpfError::InvalidOptions(_))
        ));
        let tiny_ring = SamplerOptions {
            ring_bytes: 1024,
            ..SamplerOptions::default()
        };
        assert!(validate(&tiny_ring).is_err());
        let no_freq = SamplerOptions {
            freq_hz: 0,
            ..SamplerOptions::default()
        };
        assert!(validate(&no_freq).is_err());
        assert!(validate(&SamplerOptions::default()).is_ok());
    }

    #[test]
    fn stack_cap_is_bounded_and_must_fit_the_ring() {
        let over = SamplerOptions {
            stack_cap: 65537,
            ..SamplerOptions::default()
        };
        assert!(matches!(validate(&over), Err(BpfError::InvalidOptions(m)) if m.contains("65536")));
        // A page of ring holds any frame-pointer record, not a 64 KiB stack.
        let page_ring = |stack_cap| SamplerOptions {
            ring_bytes: 4096,
            stack_cap,
            ..SamplerOptions::default()
        };
        assert!(validate(&page_ring(0)).is_ok());
        assert!(validate(&page_ring(1024)).is_ok());
        assert!(matches!(
            validate(&page_ring(65536)),
            Err(BpfError::InvalidOptions(m)) if m.contains("stack_cap 65536")
        ));
        assert_eq!(max_record_bytes(0), 48 + 48 + 254 * 8 + 8);
        assert_eq!(max_record_bytes(65536), 48 + 48 + 254 * 8 + 8 + 65536);
    }
}
