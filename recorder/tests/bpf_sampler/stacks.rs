//! Stack mode: the user registers and the copied user stack of each sample, checked
//! against the target's `/proc/PID/maps` and its stack contents.

use super::*;

/// One line of `/proc/PID/maps`.
#[derive(Debug, Clone)]
pub(crate) struct Mapping {
    pub(crate) start: u64,
    pub(crate) end: u64,
    pub(crate) perms: String,
    pub(crate) path: String,
}

impl Mapping {
    fn contains(&self, addr: u64) -> bool {
        self.start <= addr && addr < self.end
    }
}

pub(crate) fn maps(pid: u32) -> Result<Vec<Mapping>> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/maps"))?;
    text.lines()
        .map(|line| {
            let mut fields = line.split_whitespace();
            let range = fields.next().context("no range")?;
            let perms = fields.next().context("no perms")?.to_owned();
            let path = fields.nth(3).unwrap_or("").to_owned();
            let (start, end) = range.split_once('-').context("bad range")?;
            Ok(Mapping {
                start: u64::from_str_radix(start, 16)?,
                end: u64::from_str_radix(end, 16)?,
                perms,
                path,
            })
        })
        .collect()
}

pub(crate) fn mapping_of(maps: &[Mapping], addr: u64) -> Option<&Mapping> {
    maps.iter().find(|m| m.contains(addr))
}

pub(crate) fn stack_mapping(maps: &[Mapping]) -> Result<&Mapping> {
    maps.iter()
        .find(|m| m.path == "[stack]")
        .context("no [stack] mapping")
}

/// Checks the copy ended by `want`, allowing a copy ended by a fault at a page
/// boundary (a stack page that is not resident, e.g. being migrated) in at most 1% of
/// the samples.
pub(crate) fn check_ends(samples: &[&StackSample], want: StackEnd) -> Result<()> {
    let mut faults = 0;
    for s in samples {
        if s.stack_end == want {
            continue;
        }
        let regs = regs_of(s)?;
        ensure!(
            s.stack_end == StackEnd::Fault && (regs.sp + s.stack.len() as u64).is_multiple_of(4096),
            "copy {:#x}+{} ended by {:?}, not {want:?}",
            regs.sp,
            s.stack.len(),
            s.stack_end
        );
        faults += 1;
    }
    ensure!(
        faults * 100 <= samples.len(),
        "{faults} of {} copies ended by a fault",
        samples.len()
    );
    Ok(())
}

/// Where the main thread's frames end: just above its initial stack pointer
/// (`startstack`, where argc is), below the arguments, environment and auxiliary vector.
pub(crate) fn main_stack_top(pid: u32) -> Result<u64> {
    Ok(stat_field(pid, 28)? + 8)
}

pub(crate) fn regs_of(s: &StackSample) -> Result<UserRegs> {
    s.regs
        .with_context(|| format!("sample without user registers: {s:?}"))
}

/// The 8-byte words of a copied stack, by offset.
pub(crate) fn words(stack: &[u8]) -> impl Iterator<Item = (usize, u64)> + '_ {
    stack.chunks_exact(8).enumerate().map(|(i, w)| {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        (i * 8, u64::from_ne_bytes(word))
    })
}

/// Builds `fixtures/NAME.c` the way tests/common builds fixtures.
pub(crate) fn fixture_binary(name: &str) -> Result<PathBuf> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures");
    let dir = scratch_dir();
    std::fs::create_dir_all(&dir)?;
    let bin = dir.join(name);
    let status = Command::new("gcc")
        .args([
            "-O2",
            "-g",
            "-fno-omit-frame-pointer",
            "-fno-optimize-sibling-calls",
            "-pthread",
            "-I",
        ])
        .arg(&fixtures)
        .arg("-o")
        .arg(&bin)
        .arg(fixtures.join(format!("{name}.c")))
        .status()
        .context("running gcc to build a fixture")?;
    ensure!(status.success(), "gcc failed to build fixture {name}");
    Ok(bin)
}

#[test]
pub(crate) fn stack_mode_copies_the_registers_and_the_whole_live_stack() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    ensure!(
        sampler.copies_stacks(),
        "the default options copy no stacks"
    );
    // No environment: the stack above main is then small, well under the cap.
    let child = Command::new(busy_binary()?)
        .args(["spin", "5"])
        .env_clear()
        .spawn()?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    let top = main_stack_top(pid)?;
    finish(child)?;

    let stack = stack_mapping(&maps)?;
    let samples = samples(&events);
    ensure!(samples.len() >= 100, "only {} samples", samples.len());
    for s in &samples {
        let regs = regs_of(s)?;
        ensure!(
            stack.contains(regs.sp),
            "sp {:#x} outside [stack] {:#x}-{:#x}",
            regs.sp,
            stack.start,
            stack.end
        );
        let code = mapping_of(&maps, regs.ip)
            .with_context(|| format!("ip {:#x} in no mapping", regs.ip))?;
        ensure!(
            code.perms.contains('x'),
            "ip {:#x} in non-executable {code:?}",
            regs.ip
        );
        ensure!(
            !s.stack.is_empty() && s.stack.len() <= 65536,
            "{} stack bytes",
            s.stack.len()
        );
        if s.stack_end != StackEnd::MappingEnd {
            continue; // checked below
        }
        // A shallow program's stack fits: the copy ends exactly at the top of its
        // frames, the word above the initial stack pointer.
        ensure!(
            regs.sp + s.stack.len() as u64 == top,
            "copy {:#x}+{} does not end at the frames' top {top:#x} (mapping end {:#x})",
            regs.sp,
            s.stack.len(),
            stack.end
        );
        // The copy holds every frame: the frame-pointer walk is not made.
        ensure!(s.user.is_empty(), "frame-pointer chain beside a whole copy");
        // The real stack: its last word is argc ("busy spin 5").
        ensure!(
            words(&s.stack).last().map(|(_, w)| w) == Some(3),
            "the copy does not end in argc"
        );
    }
    check_ends(&samples, StackEnd::MappingEnd)?;
    ensure!(sampler.malformed_records() == 0);
    Ok(())
}

#[test]
pub(crate) fn copied_bytes_hold_the_frame_records_of_the_kernels_walk() -> Result<()> {
    let _serial = serial();
    const CAP: u32 = 2048;
    let mut sampler = sampler(SamplerOptions {
        stack_cap: CAP,
        ..opts()
    })?;
    // A 16 KiB frame in main: the stack is larger than the cap, so the copy is capped and
    // the kernel walks the frame pointers too.
    let child = busy(&["padded", "5"])?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    finish(child)?;

    let bin = busy_binary()?.to_str().context("path")?.to_owned();
    let text: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path == bin && m.perms.contains('x'))
        .collect();
    ensure!(!text.is_empty(), "no executable mapping of {bin}");
    let samples = samples(&events);
    ensure!(samples.len() >= 100, "only {} samples", samples.len());
    let mut checked = 0;
    for s in &samples {
        let regs = regs_of(s)?;
        if s.stack_end != StackEnd::Cap {
            continue; // checked below
        }
        ensure!(s.stack.len() == CAP as usize, "{} bytes", s.stack.len());
        // The walk starts from the same registers the copy does.
        ensure!(
            s.user.first() == Some(&regs.ip),
            "chain {:x?} does not start at ip {:#x}",
            s.user,
            regs.ip
        );
        // Each return address the walk found in the fixture's code is a word of the
        // copy, at increasing offsets: the frame records themselves were copied.
        let mut from = 0;
        for &ret in &s.user[1..] {
            if !text.iter().any(|m| m.contains(ret)) {
                continue;
            }
            let at = words(&s.stack)
                .find(|&(off, w)| off >= from && w == ret)
                .map(|(off, _)| off)
                .with_context(|| {
                    format!(
                        "return address {ret:#x} of chain {:x?} not in the copy above offset {from}",
                        s.user
                    )
                })?;
            from = at + 8;
            checked += 1;
        }
    }
    check_ends(&samples, StackEnd::Cap)?;
    // spin → middle (→ leaf): at least one return address per sample.
    ensure!(
        checked >= samples.len(),
        "only {checked} return addresses checked in {} samples",
        samples.len()
    );
    Ok(())
}

#[test]
pub(crate) fn a_small_cap_copies_exactly_the_cap() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(SamplerOptions {
        stack_cap: 256,
        ..opts()
    })?;
    let child = busy(&["spin", "5"])?;
    settle();
    sampler.add_target(child.id())?;
    let events = collect(&mut sampler, Duration::from_millis(500))?;
    finish(child)?;
    let samples = samples(&events);
    ensure!(samples.len() >= 50, "only {} samples", samples.len());
    check_ends(&samples, StackEnd::Cap)?;
    for s in samples.iter().filter(|s| s.stack_end == StackEnd::Cap) {
        ensure!(
            s.stack.len() == 256,
            "{} bytes under a 256-byte cap",
            s.stack.len()
        );
    }
    Ok(())
}

#[test]
pub(crate) fn a_page_never_faulted_in_ends_the_copy_and_keeps_what_precedes_it() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    let child = busy(&["hole", "5"])?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_millis(500))?;
    let maps = maps(pid)?;
    finish(child)?;

    let bin = busy_binary()?.to_str().context("path")?.to_owned();
    let text: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path == bin && m.perms.contains('x'))
        .collect();
    let samples = samples(&events);
    ensure!(samples.len() >= 50, "only {} samples", samples.len());
    for s in &samples {
        let regs = regs_of(s)?;
        ensure!(
            s.stack_end == StackEnd::Fault && !s.stack.is_empty(),
            "copy of {} bytes ended by {:?}",
            s.stack.len(),
            s.stack_end
        );
        // Page by page: everything up to the hole is kept, and the hole starts a page.
        let end = regs.sp + s.stack.len() as u64;
        ensure!(
            end.is_multiple_of(4096),
            "the copy ends mid-page at {end:#x}"
        );
        ensure!(
            s.stack.len() < 16384,
            "{} bytes copied across the hole",
            s.stack.len()
        );
        // The copy could not hold the whole stack: the frame-pointer walk is there to
        // go on past the hole, and spin's call into main is in the bytes kept.
        ensure!(
            s.user.first() == Some(&regs.ip),
            "no frame-pointer walk: {:x?}",
            s.user
        );
        let beyond: Vec<u64> = s.user[1..]
            .iter()
            .copied()
            .filter(|&a| text.iter().any(|m| m.contains(a)))
            .collect();
        ensure!(
            beyond
                .iter()
                .any(|&ret| words(&s.stack).any(|(_, w)| w == ret)),
            "none of the chain's return addresses {beyond:x?} is in the copy"
        );
    }
    Ok(())
}

#[test]
pub(crate) fn thread_stacks_end_at_their_own_mapping() -> Result<()> {
    let _serial = serial();
    let mut sampler = sampler(opts())?;
    let mut child = Command::new(busy_binary()?)
        .args(["threads", "5"])
        .env("BUSY_PRINT_TCB", "1")
        .stdout(std::process::Stdio::piped())
        .spawn()?;
    let pid = child.id();
    let mut tcbs = Vec::new();
    let mut out = std::io::BufReader::new(child.stdout.take().context("stdout")?);
    for _ in 0..3 {
        let mut line = String::new();
        std::io::BufRead::read_line(&mut out, &mut line)?;
        tcbs.push(u64::from_str_radix(line.trim(), 16).context("thread pointer")?);
    }
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    finish(child)?;

    let workers: Vec<_> = samples(&events)
        .into_iter()
        .filter(|s| s.tid != pid)
        .collect();
    ensure!(
        workers.len() >= 100,
        "only {} worker samples",
        workers.len()
    );
    for s in &workers {
        let regs = regs_of(s)?;
        let mapping = mapping_of(&maps, regs.sp)
            .with_context(|| format!("sp {:#x} in no mapping", regs.sp))?;
        // glibc's thread stacks are anonymous mappings of their own.
        ensure!(mapping.path.is_empty(), "thread stack in {mapping:?}");
        if s.stack_end != StackEnd::MappingEnd {
            continue; // checked below
        }
        // glibc puts the thread's control block (the thread pointer) and TLS at the
        // top of the mapping, above every frame: the copy ends at the thread pointer.
        let end = regs.sp + s.stack.len() as u64;
        ensure!(
            tcbs.contains(&end) && mapping.contains(end),
            "copy {:#x}+{} ends at none of the thread pointers {tcbs:x?} (mapping ends at {:#x})",
            regs.sp,
            s.stack.len(),
            mapping.end
        );
    }
    check_ends(&workers, StackEnd::MappingEnd)?;
    Ok(())
}

#[test]
pub(crate) fn kernel_mode_samples_carry_the_tasks_user_registers() -> Result<()> {
    let _serial = serial();
    let bin = fixture_binary("syscalls")?;
    let mut sampler = sampler(opts())?;
    let child = Command::new(&bin).arg("5").spawn()?;
    let pid = child.id();
    settle();
    sampler.add_target(pid)?;
    let events = collect(&mut sampler, Duration::from_secs(1))?;
    let maps = maps(pid)?;
    let top = main_stack_top(pid)?;
    finish(child)?;

    let stack = stack_mapping(&maps)?;
    let bin = bin.to_str().context("path")?.to_owned();
    let text: Vec<&Mapping> = maps
        .iter()
        .filter(|m| m.path == bin && m.perms.contains('x'))
        .collect();
    let samples = samples(&events);
    let in_kernel: Vec<&StackSample> = samples
        .iter()
        .copied()
        .filter(|s| !s.kernel.is_empty())
        .collect();
    // How each entered the kernel, by its outermost kernel frame: the fixture's write()
    // (entry_SYSCALL_64...), or an interrupt or fault that came while it ran its own
    // code (asm_sysvec_..., asm_exc_...: CI once sampled one, its ip in the fixture).
    let kallsyms =
        hotspot_recorder::live::kernel_names::Kallsyms::read(Path::new("/proc/kallsyms"))?;
    let by_syscall = |s: &StackSample| {
        s.kernel
            .last()
            .and_then(|&a| kallsyms.resolve(a))
            .is_some_and(|(sym, _)| sym.name.starts_with("entry_SYSCALL"))
    };
    let syscalls = in_kernel.iter().filter(|s| by_syscall(s)).count();
    ensure!(
        syscalls * 5 > samples.len() && samples.len() >= 100,
        "only {syscalls}/{} samples in the kernel through a syscall ({} in it in all)",
        samples.len(),
        in_kernel.len()
    );
    for s in &in_kernel {
        // Saved on entry to the kernel: the user side of a syscall is in glibc's
        // write(); of an interrupt, wherever the fixture was (its own code or libc's).
        let regs = regs_of(s)?;
        let code = mapping_of(&maps, regs.ip)
            .with_context(|| format!("ip {:#x} in no mapping", regs.ip))?;
        let in_libc = code.path.contains("libc") && code.perms.contains('x');
        let in_fixture = text.iter().any(|m| m.contains(regs.ip));
        ensure!(
            in_libc || (!by_syscall(s) && in_fixture),
            "ip {:#x} in {code:?}, not libc's code (entered the kernel by {})",
            regs.ip,
            if by_syscall(s) {
                "a syscall"
            } else {
                "an interrupt or fault"
            }
        );
        ensure!(stack.contains(regs.sp), "sp {:#x} outside [stack]", regs.sp);
        if s.stack_end != StackEnd::MappingEnd {
            continue; // checked below
        }
        ensure!(
            regs.sp + s.stack.len() as u64 == top,
            "copy {:#x}+{} does not end at the frames' top {top:#x}",
            regs.sp,
            s.stack.len()
        );
        // The stack above write() holds its callers' return addresses.
        ensure!(
            words(&s.stack[..s.stack.len().min(512)])
                .any(|(_, w)| text.iter().any(|m| m.contains(w))),
            "no return address into the fixture near sp"
        );
    }
    check_ends(&in_kernel, StackEnd::MappingEnd)?;
    Ok(())
}
