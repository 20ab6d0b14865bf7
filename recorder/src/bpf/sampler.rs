//! The real, aya-backed event source: loads `ebpf/hotspot.bpf.o`, attaches it, drains its ring buffer.

use std::io;
use std::os::fd::{AsFd, AsRawFd, FromRawFd, OwnedFd};
use std::time::Duration;

use aya::maps::{HashMap, MapData, MapError, PerCpuArray, RingBuf};
use aya::programs::perf_event::{
    PerfEventConfig, PerfEventLinkId, PerfEventScope, SamplePolicy, SoftwareEvent,
};
use aya::programs::raw_trace_point::RawTracePointLinkId;

use aya::Ebpf;
use hotspot_format::FeatureOff;

use super::abi::{
    HEADER_SIZE, HS_LOST_OFF_CPU, HS_LOST_SAMPLES, HS_LOST_SWITCHES, HS_LOST_TASK_EVENTS,
};
use super::decode::parse_event;
use super::error::{BpfError, chain};
use super::load::{self, Loaded, SamplerOptions};
use super::mapping_events::MappingEvents;
use super::off_cpu::{OffCpu, ProgramStats};
use super::perf_records::PerfRecord;
use super::programs::{
    STACK_SAMPLE_PROGRAM, TASK_PROGRAMS, attach_reason, map_error, perf_program, take_map,
    tracepoint_program,
};
use super::time_order::{self, TimeOrder};
use crate::error::RecorderError;
use crate::event::{Event, OpenThreadTimes};
use crate::live::kernel_names::BpfKernelSymbols;
use crate::live::machine;
use crate::source::EventSource;

/// The BPF program loaded into the running kernel.
pub struct BpfSampler {
    /// Owns the programs and, once started, their links: dropping it detaches everything.
    ebpf: Ebpf,
    events: RingBuf<MapData>,
    targets: HashMap<MapData, u32, u8>,
    /// The processes whose Python frames are walked (`hs_python_proc` by tgid).
    python_procs: HashMap<MapData, u32, [u8; 48]>,
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
    /// The recorder's own tgid, whose mapping events are dropped.
    self_tgid: u32,
    /// Bytes of user stack each sample copies (0 after a fallback to frame pointers).
    stack_cap: u32,
    /// What the kernel refused and the recording goes without.
    features_off: Vec<FeatureOff>,
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
        let Loaded {
            mut ebpf,
            btf_subset,
            sample_program,
            off_cpu_program,
            kernel_symbols,
            stack_cap,
            features_off,
        } = load::load(opts)?;
        let events = RingBuf::try_from(take_map(&mut ebpf, "events")?)
            .map_err(|e| map_error("events", "open", &e))?;
        let targets = HashMap::try_from(take_map(&mut ebpf, "targets")?)
            .map_err(|e| map_error("targets", "open", &e))?;
        let python_procs = HashMap::try_from(take_map(&mut ebpf, "python_procs")?)
            .map_err(|e| map_error("python_procs", "open", &e))?;
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
            python_procs,
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
            self_tgid: opts.self_tgid,
            stack_cap,
            features_off,
        })
    }

    /// Bytes of user stack each sample copies: the options' `stack_cap`, or 0 where the
    /// kernel refused the copy and [`SamplerOptions::stack_fallback`] let frame pointers
    /// take its place.
    pub fn stack_cap(&self) -> u32 {
        self.stack_cap
    }

    /// What the kernel refused and the recording goes without (one entry per feature,
    /// for the capture's `FeatureOff` records).
    pub fn features_off(&self) -> &[FeatureOff] {
        &self.features_off
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
        Ok(self.read_lost(HS_LOST_SWITCHES)?.iter().sum())
    }

    /// `--off-cpu`: the statistics of the switch programs, `[sched_switch, sched_exit_tp]`
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
        Ok(self.read_lost(HS_LOST_TASK_EVENTS)?.iter().sum())
    }

    /// The processes currently in the kernel's target set (added by us or by fork
    /// following, minus those that exited).
    pub fn targets(&self) -> Result<Vec<u32>, BpfError> {
        self.targets
            .keys()
            .collect::<Result<Vec<u32>, MapError>>()
            .map_err(|e| map_error("targets", "list", &e))
    }

    /// Starts sampling process `tgid` (and, with `follow_children`, its future children).
    pub fn add_target(&mut self, tgid: u32) -> Result<(), BpfError> {
        self.targets
            .insert(tgid, 1, 0)
            .map_err(|e| map_error("targets", &format!("insert {tgid}"), &e))
    }

    /// Stops sampling process `tgid`; not an error if it is not a target (e.g. it
    /// already exited).
    pub fn remove_target(&mut self, tgid: u32) -> Result<(), BpfError> {
        match self.targets.remove(&tgid) {
            // The exit program removes exited processes itself; a late remove is fine.
            Err(MapError::KeyNotFound) | Ok(()) => Ok(()),
            Err(MapError::SyscallError(e)) if e.io_error.raw_os_error() == Some(libc::ENOENT) => {
                Ok(())
            }
            Err(e) => Err(map_error("targets", &format!("remove {tgid}"), &e)),
        }
    }

    /// Walks `tgid`'s Python frames as `entry` says (an `hs_python_proc`), or no longer.
    pub fn walk_python(&mut self, tgid: u32, entry: Option<&[u8; 48]>) -> Result<(), BpfError> {
        let result = match entry {
            Some(e) => self.python_procs.insert(tgid, *e, 0),
            None => self.python_procs.remove(&tgid),
        };
        match result {
            Ok(()) | Err(MapError::KeyNotFound) => Ok(()),
            Err(MapError::SyscallError(e)) if e.io_error.raw_os_error() == Some(libc::ENOENT) => {
                Ok(())
            }
            Err(e) => Err(map_error("python_procs", &format!("update {tgid}"), &e)),
        }
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
                    } if pid != self.self_tgid => self.order.push(Event::Mmap {
                        time_ns,
                        pid,
                        mapping,
                    }),
                    PerfRecord::Exec { time_ns, pid } if pid != self.self_tgid => {
                        self.order.push(Event::NewImage { time_ns, pid });
                    }
                    // The recorder's own mappings are none of its business.
                    PerfRecord::Mmap { .. }
                    | PerfRecord::Exec { .. }
                    | PerfRecord::Lost { .. }
                    | PerfRecord::Other => {}
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
            machine::monotonic_ns().saturating_sub(time_order::MARGIN_NS)
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
    fn poll(&mut self, timeout: Duration, out: &mut Vec<Event>) -> Result<(), RecorderError> {
        let mut through = self.cutoff();
        self.drain();
        if !self.order.has_through(through) {
            // An exec or exit woke the recorder but is held for the margin: wait no
            // longer than that, or it would wait for the next wakeup (a quarter of
            // the ring, or the next flush) and a script exec'd by a busy shell would be
            // walked only after it ended.
            let timeout = match self.order.oldest_prompt() {
                Some(t) if self.cutoff() != u64::MAX => {
                    let due = t.saturating_add(time_order::MARGIN_NS + 1_000_000);
                    timeout.min(Duration::from_nanos(
                        due.saturating_sub(machine::monotonic_ns()),
                    ))
                }
                _ => timeout,
            };
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

    fn walk_python(&mut self, pid: u32, entry: Option<&[u8; 48]>) -> Result<(), RecorderError> {
        Ok(BpfSampler::walk_python(self, pid, entry)?)
    }

    fn lost_per_cpu(&mut self) -> Result<Vec<u64>, RecorderError> {
        Ok(self.read_lost(HS_LOST_SAMPLES)?)
    }

    fn stop_sampling(&mut self) -> Result<(), RecorderError> {
        let switch = self.detach_switch();
        let links = std::mem::take(&mut self.cpu_links);
        if !links.is_empty() {
            let prog = perf_program(&mut self.ebpf, self.sample_program)?;
            for link in links {
                prog.detach(link)
                    .map_err(|e| BpfError::Detach { reason: chain(&e) })?;
            }
        }
        Ok(switch?)
    }

    fn lost_off_cpu(&mut self) -> Result<u64, RecorderError> {
        Ok(self.read_lost(HS_LOST_OFF_CPU)?.iter().sum())
    }

    fn accounting_end(&self) -> Option<u64> {
        self.off_cpu.as_ref().and_then(|o| o.end_ns)
    }

    fn take_thread_times(&mut self) -> Result<Vec<(u32, OpenThreadTimes)>, RecorderError> {
        let Some(o) = &mut self.off_cpu else {
            return Ok(Vec::new());
        };
        let (threads, malformed) = o.take_threads()?;
        self.malformed += malformed;
        Ok(threads)
    }

    fn thread_times_now(&mut self) -> Result<Vec<(u32, OpenThreadTimes)>, RecorderError> {
        let Some(o) = &mut self.off_cpu else {
            return Ok(Vec::new());
        };
        let (threads, malformed) = o.threads_now(false)?;
        self.malformed += malformed;
        Ok(threads)
    }
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
