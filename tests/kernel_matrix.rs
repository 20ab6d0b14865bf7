//! The kernel matrix's checks: what `tools/kernel-matrix` recorded inside each kernel's
//! VM (Debian's 6.1 and 6.12 by default), read back here with the end-to-end tests'
//! assertions and tolerances. The script boots the VMs and then runs these tests with
//! `--ignored` and `HOTSPOT_KERNEL_MATRIX` naming its results directory (one directory
//! per kernel, the guest's outputs under `out/`, see `tools/kernel-matrix-init`). Plain
//! `cargo test` lists them as ignored: there is nothing to read without the VMs. Run
//! without the variable they fail, never skip.
//!
//! Each check runs on every kernel and reports every kernel it failed on.

#[allow(dead_code)]
#[path = "offcpu_e2e/support.rs"]
mod support;

#[path = "offcpu_e2e/checks.rs"]
mod checks;

#[path = "mapping_e2e/leaves.rs"]
mod leaves;

use std::fs;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use hotspot_replay::Capture;
use hotspot_replay::metric::Metric;
use hotspot_replay::profile::{self, Filter};
use hotspot_testkit::e2e::{hotspot, run_ok};
use serde_json::Value;
use support::{Recorded, steal_ns_in};

/// One kernel's results.
struct Vm {
    kernel: String,
    out: PathBuf,
}

impl Vm {
    fn read(&self, name: &str) -> String {
        let path = self.out.join(name);
        fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: cannot read {}: {e}", self.kernel, path.display()))
    }

    fn capture(&self, case: &str) -> Capture {
        let path = self.out.join(format!("{case}.hsp"));
        Capture::open(&path).unwrap_or_else(|e| panic!("{}: {case}.hsp: {e}", self.kernel))
    }

    fn info(&self, case: &str) -> Value {
        serde_json::from_str(&self.read(&format!("{case}.info-json.out")))
            .unwrap_or_else(|e| panic!("{}: {case}: info --json: {e}", self.kernel))
    }

    /// The accelerator the VM ran with (`kvm` or `tcg`), as the script wrote it.
    fn accel(&self) -> String {
        let path = self.out.join("../accel");
        let accel = fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("{}: cannot read {}: {e}", self.kernel, path.display()));
        accel.trim().to_owned()
    }

    /// An off-CPU recording as the off-CPU checks take it: the capture, the fixture's
    /// thread lines (its stderr, passed through by the recorder) and the steal time the
    /// guest's /proc/stat counted around it.
    fn recorded(&self, case: &str, prog: &str) -> Recorded {
        let steal = steal_ns_in(&self.read(&format!("{case}.stat1")))
            .saturating_sub(steal_ns_in(&self.read(&format!("{case}.stat0"))));
        Recorded::load(
            prog,
            &self.out.join(format!("{case}.hsp")),
            &self.read(&format!("{case}.err")),
            steal,
        )
    }
}

/// `$HOTSPOT_KERNEL_MATRIX`: the script's results directory.
fn results() -> PathBuf {
    std::env::var_os("HOTSPOT_KERNEL_MATRIX")
        .map(PathBuf::from)
        .expect(
            "HOTSPOT_KERNEL_MATRIX is not set: this target checks what tools/kernel-matrix \
             recorded; run that script",
        )
}

/// The kernels the script booted, in its order, from `$HOTSPOT_KERNEL_MATRIX/kernels`.
fn vms() -> &'static [Vm] {
    static VMS: OnceLock<Vec<Vm>> = OnceLock::new();
    VMS.get_or_init(|| {
        let dir = results();
        let list = fs::read_to_string(dir.join("kernels"))
            .unwrap_or_else(|e| panic!("{}/kernels: {e}", dir.display()));
        let vms: Vec<Vm> = list
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|k| Vm {
                kernel: k.trim().to_owned(),
                out: dir.join(k.trim()).join("out"),
            })
            .collect();
        assert!(!vms.is_empty(), "{}/kernels names no kernel", dir.display());
        vms
    })
}

/// Runs `check` on every kernel, then fails naming each kernel it failed on (the
/// failures are gathered quietly and told once, together).
fn each(check: impl Fn(&Vm)) {
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let failed: Vec<String> = vms()
        .iter()
        .filter_map(|vm| {
            catch_unwind(AssertUnwindSafe(|| check(vm))).err().map(|e| {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default();
                format!("{}: {msg}", vm.kernel)
            })
        })
        .collect();
    std::panic::set_hook(hook);
    assert!(failed.is_empty(), "failed on:\n{}", failed.join("\n"));
}

/// Every case the guest runs (`tools/kernel-matrix-init`) that writes a capture.
const RECORDINGS: [&str; 10] = [
    "default",
    "fp",
    "all",
    "offcpu",
    "contend",
    "offcpu-fp",
    "python",
    "python-fp",
    "mapping",
    "demo",
];

/// Stacks as function names, root first, with their sample counts.
fn folded(c: &Capture) -> Vec<(Vec<String>, u64)> {
    profile::fold(c, &Filter::default())
        .stacks
        .into_iter()
        .map(|(k, n)| (k.into_iter().map(|f| f.function.to_string()).collect(), n))
        .collect()
}

fn samples_where(s: &[(Vec<String>, u64)], pred: impl Fn(&[String]) -> bool) -> u64 {
    s.iter().filter(|(f, _)| pred(f)).map(|(_, n)| n).sum()
}

fn has_chain(f: &[String], chain: &[&str]) -> bool {
    f.windows(chain.len())
        .any(|w| w.iter().zip(chain).all(|(a, b)| a == b))
}

fn leaf_is(f: &[String], leaf: &str) -> bool {
    f.last().is_some_and(|l| l == leaf)
}

#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn every_kernel_booted_and_ran_every_case() {
    each(|vm| {
        let env = vm.read("env");
        assert!(
            env.lines().any(|l| l == format!("kernel={}", vm.kernel)),
            "the guest ran another kernel: {env}"
        );
        // The off-CPU fixture's disk thread needs the guest's disk.
        assert!(
            env.lines().any(|l| l == "disk=/mnt"),
            "the guest had no disk: {env}"
        );
        for case in RECORDINGS {
            for step in ["", ".info", ".info-json", ".report"] {
                let name = format!("{case}{step}");
                let rc = vm.read(&format!("{name}.rc"));
                assert_eq!(
                    rc.trim(),
                    "0",
                    "{name} exited {}: {}",
                    rc.trim(),
                    vm.read(&format!("{name}.err")).trim()
                );
            }
        }
    });
}

#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn default_record_unwinds_a_program_without_frame_pointers_completely() {
    each(|vm| {
        let info = vm.info("default");
        let unwinding = &info["unwinding"];
        assert_eq!(unwinding["method"], "cfi", "{unwinding}");
        let p = &unwinding["processes"][0];
        assert_eq!(p["name"], "frameless", "{unwinding}");
        let (complete, samples) = (p["complete"].as_f64(), p["samples"].as_f64());
        let (complete, samples) = (complete.unwrap_or(0.0), samples.unwrap_or(0.0));
        // 3 s at 499 Hz is ~1500.
        assert!(samples >= 1000.0, "{samples} samples: {unwinding}");
        assert!(
            complete >= 0.99 * samples,
            "{complete} of {samples} stacks complete: {unwinding}"
        );
        // Every sample in the frameless leaf has the whole chain, its caller included
        // (a frame-pointer walk skips fl_route: tests/unwind_e2e.rs).
        let s = folded(&vm.capture("default"));
        let chain = ["main", "fl_dispatch", "fl_route", "fl_leaf"];
        let n = samples_where(&s, |f| leaf_is(f, "fl_leaf"));
        let whole = samples_where(&s, |f| leaf_is(f, "fl_leaf") && has_chain(f, &chain));
        assert!(n >= 900, "only {n} fl_leaf samples");
        assert_eq!(whole, n, "fl_leaf samples without the whole chain");
    });
}

#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn frame_pointer_record_has_the_fixture_shares() {
    each(|vm| {
        assert_eq!(vm.info("fp")["unwinding"]["method"], "frame-pointers");
        let s = folded(&vm.capture("fp"));
        let hot = samples_where(&s, |f| leaf_is(f, "hot_leaf")) as f64;
        let cold = samples_where(&s, |f| leaf_is(f, "cold_leaf")) as f64;
        // As tests/record_e2e.rs asks of split7030.
        assert!(
            hot + cold > 400.0,
            "too few samples: hot {hot}, cold {cold}"
        );
        let share = hot / (hot + cold);
        assert!(
            (0.62..=0.78).contains(&share),
            "hot share {share:.3} (hot {hot}, cold {cold})"
        );
        for chain in [
            ["main", "hot_a", "hot_b", "hot_leaf"],
            ["main", "cold_a", "cold_b", "cold_leaf"],
        ] {
            assert!(
                s.iter().any(|(f, _)| has_chain(f, &chain)),
                "no {chain:?} stack"
            );
        }
    });
}

#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn system_wide_record_holds_the_busy_process() {
    each(|vm| {
        let busy: u32 = vm.read("all.busy-pid").trim().parse().expect("busy's pid");
        let c = vm.capture("all");
        let p = c
            .processes
            .get(&busy)
            .expect("busy's process in the capture");
        assert_eq!(p.name, "busy");
        let of_busy = c
            .samples
            .iter()
            .filter(|s| c.threads.get(&s.tid).is_some_and(|t| t.pid == busy))
            .count();
        // busy runs through the 3 s recording on one CPU: ~1500 samples at 499 Hz; half
        // of that leaves room for the recording's start.
        assert!(of_busy >= 700, "{of_busy} samples of busy");
        let s = folded(&c);
        assert!(
            s.iter()
                .any(|(f, _)| has_chain(f, &["main", "busy_loop", "busy_leaf"])),
            "no main;busy_loop;busy_leaf stack"
        );
    });
}

/// The off-CPU recording of `offcpu` (its disk thread on the guest's disk, its
/// alternating thread in 50 ms phases: see `fixtures/offcpu.c`), with the stack copy.
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn off_cpu_shares_and_states_as_on_the_host() {
    each(|vm| {
        assert_eq!(vm.info("offcpu")["unwinding"]["method"], "cfi");
        off_cpu_checks(vm, &vm.recorded("offcpu", "offcpu"));
    });
}

/// Every check `tests/offcpu_e2e.rs` makes of its `offcpu` recording.
fn off_cpu_checks(vm: &Vm, rec: &Recorded) {
    checks::alternating_thread_is_half_off_cpu_in_its_sleep(rec);
    checks::pipe_reader_is_off_cpu_in_its_read(rec);
    checks::spinning_thread_is_on_cpu(rec);
    checks::disk_writer_waits_in_d_state_in_its_fsync(rec);
    checks::wall_is_cpu_plus_off_cpu_and_the_lifetime(rec);
    checks::cpu_and_run_queue_match_schedstat(rec, switch_clocks(vm, rec));
    checks::nothing_lost_and_off_cpu_defined(rec);
}

/// How far apart schedstat's run time and the switch programs' on-CPU time may be per
/// voluntary switch under qemu's emulation (see `checks::cpu_and_run_queue_match_schedstat`),
/// where the host's kernel paths take a few µs. Measured with the disk's 20 ms
/// completions: oc-disk's on-CPU time 10.6 ms over its run time in 66 waits on 6.1, 8.5
/// ms over in 118 waits and, in another run, 15.8 ms under in ~150 on 6.12; oc-piperead's
/// 1.7 ms under in 15: up to 160 µs a switch, either way. Twice that.
const SWITCH_NS: u64 = 320_000;

/// The VMs' clocks at a switch: `SWITCH_NS` per wake-up, and the vCPUs' turns under
/// single-threaded TCG, none longer than the recording's sampling period (each vCPU's
/// CPU-clock timer ends the other's turn; see `checks::cpu_and_run_queue_match_schedstat`
/// for the measurements). Under KVM both vCPUs run at once and there are no turns.
fn switch_clocks(vm: &Vm, rec: &Recorded) -> checks::SwitchClocks {
    checks::SwitchClocks {
        per_wakeup_ns: SWITCH_NS,
        turn_ns: match vm.accel().as_str() {
            "kvm" => 0,
            _ => rec.capture.period_ns(Metric::Cpu),
        },
    }
}

#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn off_cpu_run_queue_waits_as_on_the_host() {
    each(|vm| {
        let rec = vm.recorded("contend", "contend");
        checks::pinned_threads_wait_runnable(&rec);
        checks::wall_is_cpu_plus_off_cpu_and_the_lifetime(&rec);
        checks::cpu_and_run_queue_match_schedstat(&rec, switch_clocks(vm, &rec));
        checks::nothing_lost_and_off_cpu_defined(&rec);
    });
}

/// `--off-cpu --call-graph fp`: the frame-pointer off-CPU sampler, the same checks.
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn off_cpu_with_frame_pointers() {
    each(|vm| {
        assert_eq!(
            vm.info("offcpu-fp")["unwinding"]["method"],
            "frame-pointers"
        );
        off_cpu_checks(vm, &vm.recorded("offcpu-fp", "offcpu"));
    });
}

/// What the off-CPU sampler attached to: these kernels predate sched_exit_tp (6.16), so
/// the recordings above went through the kprobe on finish_task_switch, whatever the
/// kernel's build named it.
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn off_cpu_stacks_came_from_finish_task_switch() {
    each(|vm| {
        let syms = vm.read("kallsyms");
        if syms.contains("__traceiter_sched_exit_tp") {
            return; // a 6.16+ kernel: the tracepoint, as on the host
        }
        assert!(
            syms.lines().any(|l| {
                l.split_whitespace().nth(1).is_some_and(|n| {
                    n == "finish_task_switch" || n.starts_with("finish_task_switch.")
                })
            }),
            "no finish_task_switch in the guest's kallsyms: {syms}"
        );
        let c = vm.capture("offcpu");
        let probed = c.off_cpu_samples.iter().filter(|s| {
            c.stacks.get(&s.sample.stack).is_some_and(|frames| {
                frames
                    .first()
                    .and_then(|f| c.symbols.get(f))
                    .is_some_and(|sym| {
                        c.string(sym.function)
                            .is_some_and(|n| n.starts_with("finish_task_switch"))
                    })
            })
        });
        // The kernel stack of a sample taken by the kprobe starts in the probed function.
        assert!(
            probed.count() as f64 >= 0.9 * c.off_cpu_samples.len() as f64,
            "off-CPU samples whose kernel stack does not start in finish_task_switch"
        );
    });
}

#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn mapping_events_name_short_lived_programs() {
    each(|vm| {
        leaves::short_programs_are_named(&vm.capture("mapping"), Path::new("/fx/busy"));
    });
}

/// `demo --no-tui` records its workload and prints what it captured; the frames are
/// named from the static binary's debug file (`--symbols`, by build-id), which the script
/// keeps beside its results (`dist/`).
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn demo_records_its_workload() {
    let dist = results().join("../dist");
    each(|vm| {
        let out = vm.read("demo.out");
        assert!(
            out.contains("samples:") && out.contains("ending:     clean"),
            "demo printed: {out}"
        );
        let report = run_ok(
            hotspot()
                .args(["report", "--format", "json", "--symbols"])
                .arg(&dist)
                .arg(vm.out.join("demo.hsp")),
        );
        let report: Value = serde_json::from_slice(&report.stdout).expect("report JSON");
        let names: Vec<&str> = report["functions"]
            .as_array()
            .expect("functions")
            .iter()
            .filter_map(|f| f["name"].as_str())
            .collect();
        assert!(
            names.iter().take(10).any(|n| n.contains("hotspot::demo::")),
            "no hotspot::demo:: function among the top ten: {names:?}"
        );
    });
}

/// `info` and `report` read every capture, each ended cleanly, lost nothing and went
/// without nothing (no feature of these kernels is refused: a default recording that fell
/// back to frame pointers would say so in `features_off`).
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn every_capture_reads_back_whole_with_nothing_lost() {
    each(|vm| {
        for case in RECORDINGS {
            let info = vm.info(case);
            assert_eq!(info["capture"]["ending"], "clean", "{case}");
            let counts = &info["counts"];
            assert_eq!(counts["lost"], 0, "{case}: {counts}");
            assert_eq!(counts["lost_mappings"], 0, "{case}: {counts}");
            assert!(info.get("features_off").is_none(), "{case}: {info}");
            assert!(counts["samples"].as_u64() > Some(0), "{case}: {counts}");
            let report: Value = serde_json::from_str(&vm.read(&format!("{case}.report.out")))
                .unwrap_or_else(|e| panic!("{case}: report JSON: {e}"));
            assert_eq!(report["schema"], "hotspot-report", "{case}");
            let text = vm.read(&format!("{case}.info.out"));
            assert!(text.contains("lost:       0"), "{case}: {text}");
        }
        // The kernel's own counters at the end of the off-CPU recordings (--flush-log).
        for case in ["offcpu", "contend", "offcpu-fp"] {
            let log = vm.read(&format!("{case}.flush"));
            for counter in ["bpf-lost", "bpf-lost-task-events", "bpf-lost-off-cpu"] {
                let line = format!("{counter} 0");
                assert!(log.lines().any(|l| l == line), "{case}: no {line:?}: {log}");
            }
        }
    });
}

/// Every program of the object loads on every kernel, alone (tools/kernel-matrix-programs):
/// with the Python walk as recorded by default, at `--python-frames 1024`, and without it.
/// hotspot only loads the programs a recording asks for; with the walk, Debian 12's 6.1
/// refused every sampler ("R7 unbounded memory access"), which the guest prints in full.
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn every_program_loads_with_and_without_the_python_walk() {
    each(|vm| {
        let out = vm.read("programs.out");
        let mut by_frames: Vec<(String, Vec<String>)> = Vec::new();
        let mut refused = Vec::new();
        for line in out.lines().filter(|l| l.starts_with("hs-prog")) {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert!(words.len() >= 4 && words[0] == "hs-prog", "{line}");
            let (name, frames, verdict) = (words[1], words[2], words[3]);
            if verdict != "ok" {
                refused.push(line.to_owned());
            }
            match by_frames.iter_mut().find(|(f, _)| f == frames) {
                Some((_, names)) => names.push(name.to_owned()),
                None => by_frames.push((frames.to_owned(), vec![name.to_owned()])),
            }
        }
        let log_at = out.find("hs-log-begin").unwrap_or(out.len());
        assert!(
            refused.is_empty(),
            "refused: {refused:?}\n{}",
            &out[log_at..out.len().min(log_at + 4000)]
        );
        let frames: Vec<&str> = by_frames.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            frames,
            ["python_frames=128", "python_frames=1024", "python_frames=0"],
            "{out}"
        );
        let names = &by_frames[0].1;
        for needed in [
            "hs_sample",
            "hs_sample_stack",
            "hs_off_kp",
            "hs_off_stack_kp",
        ] {
            assert!(names.iter().any(|n| n == needed), "no {needed}: {out}");
        }
        for (f, other) in &by_frames[1..] {
            assert_eq!(other, names, "{f}: other programs");
        }
    });
}

/// Debian's python3 running the 70/30 split: its Python frames are walked by each sampler
/// (the stack copy's and the frame-pointer one). With the copy, the shares and lines of
/// tests/python_e2e.rs. With frame pointers the walk is as whole, but Debian's python3 has
/// no frame pointers, so about half its native stacks lack the eval loop's frame the
/// Python frames go in place of (kept native and marked as mismatched, on the host too:
/// 310 of 571 samples): there the walk is checked, and the shares of the merged stacks.
#[test]
#[ignore = "reads tools/kernel-matrix's VM results: run by that script"]
fn python_frames_are_walked_by_each_sampler() {
    each(|vm| {
        for case in ["python", "python-fp"] {
            let c = vm.capture(case);
            let interps: Vec<_> = c.interpreters.values().collect();
            assert_eq!(interps.len(), 1, "{case}: {interps:?}");
            let p = interps[0];
            assert_eq!(
                p.status,
                hotspot_format::InterpreterStatus::Walked,
                "{case}: {p:?}"
            );
            assert!(p.samples > 1000, "{case}: {p:?}");
            // While the script's Python code ran, once the recorder had registered the
            // process, the walk found its frames in (nearly) every sample. Registration
            // comes after the recorder has read the interpreter's file, which under TCG
            // takes ~20 times the host's 36 ms: measured 0.4 s (6.12) and 0.7 s (6.1) of
            // main's samples before it, where the host's python_e2e bounds it tightly (its
            // 0.2 s script); the interpreter's own start runs no Python code at all (0.53
            // s of one 6.1 recording). So: samples from main's start_ns to its end_ns (the
            // script prints them on the samples' clock), from the first with Python frames
            // on, and that first one at most 1.5 s into main.
            let err = vm.read(&format!("{case}.err"));
            let at = |key: &str| -> u64 {
                err.lines()
                    .find_map(|l| l.strip_prefix(&format!("split.py: main {key}=")))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or_else(|| panic!("{case}: no '{key}' line in its stderr: {err}"))
            };
            let (start, end) = (at("start_ns"), at("end_ns"));
            let python_frames = |stack: &hotspot_format::StackId| -> bool {
                let mut names = Vec::new();
                for &frame in c.stacks.get(stack).map(Vec::as_slice).unwrap_or(&[]) {
                    hotspot_replay::names::expand(&c, frame, &mut names);
                }
                names.iter().any(|f| &*f.module == "[python]")
            };
            let mut in_main: Vec<_> = c
                .samples
                .iter()
                .filter(|s| (start..=end).contains(&s.time_ns))
                .map(|s| (s.time_ns, python_frames(&s.stack)))
                .collect();
            in_main.sort_unstable();
            let first = in_main
                .iter()
                .position(|&(_, walked)| walked)
                .unwrap_or_else(|| panic!("{case}: no sample of main has Python frames"));
            let late_s = (in_main[first].0 - start) as f64 / 1e9;
            let after = &in_main[first..];
            let walked = after.iter().filter(|&&(_, w)| w).count();
            assert!(
                late_s <= 1.5 && walked as f64 >= 0.95 * after.len() as f64 && walked > 1000,
                "{case}: the first Python frames {late_s:.2} s into main; then {walked} of {} \
                 samples have them ({p:?})",
                after.len()
            );
            // The shares below, over the same samples.
            let walked_window = Filter {
                from_ns: Some(in_main[first].0),
                to_ns: Some(end),
                ..Filter::default()
            };
            let stacks = profile::fold(&c, &walked_window).stacks;
            let count = |pred: &dyn Fn(&[hotspot_replay::names::FrameName]) -> bool| -> f64 {
                stacks
                    .iter()
                    .filter(|(s, _)| pred(s))
                    .map(|(_, n)| *n as f64)
                    .sum()
            };
            let py = |s: &[hotspot_replay::names::FrameName], function: &str| {
                s.iter()
                    .any(|f| &*f.module == "[python]" && &*f.function == function)
            };
            let seventy = count(&|s| py(s, "seventy"));
            let thirty = count(&|s| py(s, "thirty"));
            let in_main = count(&|s| py(s, "main"));
            let total = count(&|_| true);
            let share = seventy / (seventy + thirty).max(1.0);
            let line = format!(
                "{case}: seventy {seventy} thirty {thirty} share {share:.3}, main {in_main} of {total}"
            );
            assert!((share - 0.7).abs() <= 0.05, "{line}");
            if case == "python" {
                assert!(seventy + thirty > 300.0, "{line}");
                assert!(p.mismatched == 0, "{case}: {p:?}");
                assert!(in_main / total >= 0.85, "{line}");
            } else {
                assert!(seventy + thirty > 150.0, "{line}");
            }
            let at_line = stacks.keys().any(|s| {
                s.iter().any(|f| {
                    &*f.module == "[python]"
                        && &*f.function == "work"
                        && f.file.as_deref().is_some_and(|p| p.ends_with("split.py"))
                        && (5..=7).contains(&f.line)
                })
            });
            assert!(at_line, "{case}: no work frame at split.py:5-7");
        }
    });
}
