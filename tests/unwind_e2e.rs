//! End-to-end tests of CFI unwinding (`--call-graph dwarf`, the default) with the real BPF
//! program on real processes: programs built without frame pointers, a frameless leaf, a
//! signal handler, Debian's python3, CPython 3.12's perf trampolines, stacks deeper than
//! the copy, CFAs computed from rbx and r11. Root is needed (CAP_BPF + CAP_PERFMON);
//! without it they fail, never skip.

mod common;

use std::path::{Path, PathBuf};

use hotspot_replay::Capture;
use hotspot_replay::profile::{self, Filter};

use hotspot_testkit::e2e::{hotspot, record_cmd, run_ok, tmp};

/// `hotspot record [extra] -o OUT -- argv` and the capture it wrote.
fn record(out: &Path, extra: &[&str], argv: &[&str]) -> Capture {
    record_cmd(out, extra, argv)
}

/// Stacks as function names, root first, with their sample counts.
type Stacks = Vec<(Vec<String>, u64)>;

fn stacks(c: &Capture) -> Stacks {
    profile::fold(c, &Filter::default())
        .stacks
        .into_iter()
        .map(|(k, n)| (k.into_iter().map(|f| f.function.to_string()).collect(), n))
        .collect()
}

fn total(s: &Stacks) -> u64 {
    s.iter().map(|(_, n)| n).sum()
}

/// Samples whose stack satisfies `pred`.
fn count(s: &Stacks, pred: impl Fn(&[String]) -> bool) -> u64 {
    s.iter().filter(|(f, _)| pred(f)).map(|(_, n)| n).sum()
}

fn rooted_at(f: &[String], root: &str) -> bool {
    f.first().is_some_and(|r| r == root)
}

/// `chain` (root to leaf) appears as consecutive frames.
fn has_chain(f: &[String], chain: &[&str]) -> bool {
    f.windows(chain.len())
        .any(|w| w.iter().zip(chain).all(|(a, b)| a == b))
}

fn leaf_is(f: &[String], leaf: &str) -> bool {
    f.last().is_some_and(|l| l == leaf)
}

/// The stacks whose leaf is `leaf`, for failure messages.
fn show(s: &Stacks, leaf: &str) -> String {
    let mut v: Vec<String> = s
        .iter()
        .filter(|(f, _)| leaf_is(f, leaf))
        .take(8)
        .map(|(f, n)| format!("{n:>5} {}", f.join(";")))
        .collect();
    if v.is_empty() {
        v = s
            .iter()
            .take(8)
            .map(|(f, n)| format!("{n:>5} {}", f.join(";")))
            .collect();
    }
    v.join("\n")
}

fn share(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

fn plain(name: &str) -> String {
    common::plain_fixture(name).to_string_lossy().into_owned()
}

#[test]
fn plain_o2_split_has_its_whole_chains_and_shares() {
    let d = tmp();
    let c = record(&d.path().join("s.hsp"), &[], &[&plain("split7030"), "3"]);
    let s = stacks(&c);
    let all = total(&s);
    assert!(all > 400, "too few samples: {all}");
    let rooted = count(&s, |f| rooted_at(f, "_start"));
    assert!(
        share(rooted, all) >= 0.99,
        "{rooted} of {all} samples reach _start:\n{}",
        show(&s, "hot_leaf")
    );
    let hot = count(&s, |f| leaf_is(f, "hot_leaf"));
    let cold = count(&s, |f| leaf_is(f, "cold_leaf"));
    let hot_chain = count(&s, |f| {
        leaf_is(f, "hot_leaf") && has_chain(f, &["main", "hot_a", "hot_b", "hot_leaf"])
    });
    let cold_chain = count(&s, |f| {
        leaf_is(f, "cold_leaf") && has_chain(f, &["main", "cold_a", "cold_b", "cold_leaf"])
    });
    // Exact: every sample in a leaf carries that leaf's whole chain.
    assert_eq!(
        hot_chain,
        hot,
        "hot_leaf samples without their chain:\n{}",
        show(&s, "hot_leaf")
    );
    assert_eq!(
        cold_chain,
        cold,
        "cold_leaf samples without their chain:\n{}",
        show(&s, "cold_leaf")
    );
    let split = share(hot, hot + cold);
    assert!(
        (0.62..=0.78).contains(&split),
        "hot share {split:.3} ({hot} / {cold})"
    );
}

#[test]
fn plain_o2_threads_reach_clone3() {
    // glibc 2.34+ starts threads with clone3 (its symbol is `__clone3`).
    let clone3 = |f: &[String]| rooted_at(f, "__clone3") || rooted_at(f, "clone3");
    let d = tmp();
    let c = record(&d.path().join("t.hsp"), &[], &[&plain("threads"), "2"]);
    let s = stacks(&c);
    for (thread, work, leaf) in [
        ("alpha_thread", "alpha_work", "alpha_leaf"),
        ("beta_thread", "beta_work", "beta_leaf"),
        ("gamma_thread", "gamma_work", "gamma_leaf"),
    ] {
        let n = count(&s, |f| leaf_is(f, leaf));
        assert!(n > 50, "{leaf}: only {n} samples");
        let whole = count(&s, |f| {
            leaf_is(f, leaf) && clone3(f) && has_chain(f, &["start_thread", thread, work, leaf])
        });
        assert!(
            share(whole, n) >= 0.99,
            "{whole} of {n} {leaf} samples are clone3;start_thread;{thread};{work};{leaf}:\n{}",
            show(&s, leaf)
        );
    }
}

#[test]
fn plain_o2_200_frame_recursion_is_complete() {
    let d = tmp();
    let c = record(
        &d.path().join("r.hsp"),
        &[],
        &[&plain("recurse"), "2", "200"],
    );
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "deep_leaf"));
    assert!(n > 200, "only {n} deep_leaf samples");
    // recurse_deep(200) … recurse_deep(1) are on the stack; recurse_deep(0) tail-calls
    // deep_leaf in a plain -O2 build (sibling calls allowed), so its frame is gone.
    let whole = count(&s, |f| {
        leaf_is(f, "deep_leaf")
            && rooted_at(f, "_start")
            && has_chain(f, &["main", "recurse_deep"])
            && f.iter().filter(|x| *x == "recurse_deep").count() >= 200
    });
    assert!(
        share(whole, n) >= 0.99,
        "{whole} of {n} deep_leaf samples have 200 recurse_deep frames down to _start:\n{}",
        show(&s, "deep_leaf")
    );
}

#[test]
fn a_frameless_leaf_keeps_its_caller() {
    let bin = common::fixture("frameless");
    let bin = bin.to_string_lossy();
    let d = tmp();
    let chain = ["main", "fl_dispatch", "fl_route", "fl_leaf"];
    let c = record(&d.path().join("f.hsp"), &[], &[&bin, "2"]);
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "fl_leaf"));
    assert!(n > 200, "only {n} fl_leaf samples");
    let whole = count(&s, |f| leaf_is(f, "fl_leaf") && has_chain(f, &chain));
    assert_eq!(
        whole,
        n,
        "fl_leaf samples without fl_route:\n{}",
        show(&s, "fl_leaf")
    );
    // The frame-pointer walk is what loses it: the test would see a missing caller.
    let fp = record(
        &d.path().join("fp.hsp"),
        &["--call-graph", "fp"],
        &[&bin, "1"],
    );
    let s = stacks(&fp);
    let lost = count(&s, |f| {
        leaf_is(f, "fl_leaf") && has_chain(f, &["fl_dispatch", "fl_leaf"])
    });
    assert!(
        lost > 0,
        "--call-graph fp kept fl_route after all:\n{}",
        show(&s, "fl_leaf")
    );
}

#[test]
fn time_in_a_signal_handler_unwinds_to_the_interrupted_code_and_main() {
    let d = tmp();
    let c = record(&d.path().join("g.hsp"), &[], &[&plain("sighandler"), "3"]);
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "sig_handler_leaf"));
    assert!(
        n > 50,
        "only {n} samples in the handler:\n{}",
        show(&s, "sig_interrupted")
    );
    let through = count(&s, |f| {
        leaf_is(f, "sig_handler_leaf")
            && rooted_at(f, "_start")
            && has_chain(f, &["main", "sig_driver", "sig_interrupted"])
            && has_chain(f, &["sig_on_alarm", "sig_handler_leaf"])
    });
    assert!(
        share(through, n) >= 0.95,
        "{through} of {n} handler samples go through the signal frame to main and _start:\n{}",
        show(&s, "sig_handler_leaf")
    );
}

/// A CPU-bound Python loop for `python` to run for `secs`.
fn python_loop(secs: f64) -> String {
    format!(
        "import time\n\
         def leaf(n):\n    s = 0\n    for i in range(n):\n        s += i * i\n    return s\n\
         def middle(n):\n    return leaf(n) + 1\n\
         def outer(end):\n    while time.monotonic() < end:\n        middle(20000)\n\
         outer(time.monotonic() + {secs})\n"
    )
}

#[test]
fn debian_python3_stacks_reach_start() {
    let python = Path::new("/usr/bin/python3");
    assert!(
        python.exists(),
        "Debian's /usr/bin/python3 is not installed"
    );
    let d = tmp();
    let c = record(
        &d.path().join("p.hsp"),
        &[],
        &[&python.to_string_lossy(), "-c", &python_loop(3.0)],
    );
    let s = stacks(&c);
    let all = total(&s);
    assert!(all > 400, "too few samples: {all}");
    let rooted = count(&s, |f| rooted_at(f, "_start"));
    assert!(
        share(rooted, all) >= 0.99,
        "{rooted} of {all} python3 samples reach _start:\n{}",
        show(&s, "_PyEval_EvalFrameDefault")
    );
}

/// pyenv's CPython 3.12 (installed on these machines, see README).
fn python312() -> PathBuf {
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pyenv")))
        .unwrap_or_else(|| PathBuf::from("/root/.pyenv"));
    let versions = root.join("versions");
    let mut found: Vec<PathBuf> = std::fs::read_dir(&versions)
        .unwrap_or_else(|e| panic!("no pyenv versions in {}: {e}", versions.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("3.12"))
        })
        .map(|p| p.join("bin/python3.12"))
        .filter(|p| p.exists())
        .collect();
    found.sort();
    found
        .pop()
        .unwrap_or_else(|| panic!("no CPython 3.12 under {}", versions.display()))
}

#[test]
fn cpython_312_perf_trampolines_give_python_frames_on_rooted_stacks() {
    let python = python312();
    let d = tmp();
    let c = record(
        &d.path().join("x.hsp"),
        &[],
        &[
            &python.to_string_lossy(),
            "-X",
            "perf",
            "-c",
            &python_loop(3.0),
        ],
    );
    let s = stacks(&c);
    let all = total(&s);
    assert!(all > 400, "too few samples: {all}");
    let with_py = count(&s, |f| f.iter().any(|x| x.starts_with("py::")));
    let rooted = count(&s, |f| rooted_at(f, "_start"));
    let both = count(&s, |f| {
        rooted_at(f, "_start") && f.iter().any(|x| x.starts_with("py::middle"))
    });
    let shown = show(&s, "_PyEval_EvalFrameDefault");
    assert!(
        share(with_py, all) >= 0.95,
        "{with_py} of {all} carry py:: frames:\n{shown}"
    );
    assert!(
        share(rooted, all) >= 0.95,
        "{rooted} of {all} reach _start:\n{shown}"
    );
    assert!(
        share(both, all) >= 0.90,
        "{both} of {all} are rooted and show py::middle:\n{shown}"
    );
}

#[test]
fn a_stack_deeper_than_the_cap_ends_in_its_reason_or_goes_on_by_frame_pointers() {
    let d = tmp();
    // Without frame pointers past the copy: the marker says why the stack is short.
    let c = record(
        &d.path().join("cut.hsp"),
        &["--stack-cap", "2048"],
        &[&plain("recurse"), "2", "200"],
    );
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "deep_leaf"));
    assert!(n > 200, "only {n} deep_leaf samples");
    let cut = count(&s, |f| {
        leaf_is(f, "deep_leaf") && rooted_at(f, "[truncated: stack larger than --stack-cap]")
    });
    assert!(
        share(cut, n) >= 0.99,
        "{cut} of {n} end in the truncation marker:\n{}",
        show(&s, "deep_leaf")
    );
    let info = run_ok(hotspot().arg("info").arg(d.path().join("cut.hsp")));
    let text = String::from_utf8_lossy(&info.stdout);
    assert!(
        text.contains("[truncated: stack larger than --stack-cap]")
            && text.contains("of stacks complete"),
        "info does not report the truncation:\n{text}"
    );

    // With frame pointers past the copy: the kernel's chain completes it.
    let fp_built = common::fixture("recurse");
    let c = record(
        &d.path().join("splice.hsp"),
        &["--stack-cap", "2048"],
        &[&fp_built.to_string_lossy(), "2", "100"],
    );
    let s = stacks(&c);
    let n = count(&s, |f| leaf_is(f, "deep_leaf"));
    assert!(n > 200, "only {n} deep_leaf samples");
    let spliced = count(&s, |f| {
        leaf_is(f, "deep_leaf")
            && f.iter().any(|x| x == "main")
            && f.iter().filter(|x| *x == "recurse_deep").count() == 101
            && !f.iter().any(|x| x.starts_with("[truncated"))
    });
    assert!(
        share(spliced, n) >= 0.99,
        "{spliced} of {n} have all 101 frames and main, spliced from frame pointers:\n{}",
        show(&s, "deep_leaf")
    );
}

/// Two functions whose CFA is computed from a register the unwinder only knows from the
/// sample (see `hotspot_unwind::Regs`), written as the code that has them: `r11_frame`
/// probes a 32 KiB frame a page at a time as LLVM's inline stack probe does (CFA = r11 +
/// frame size while rsp walks down to r11), touching a page of `buf` at each step, which
/// faults (the pages are dropped after each round): kernel-mode samples with the CFA in
/// the task's saved r11. `rbx_frame` keeps its entry rsp in rbx and realigns rsp, as
/// ld.so's `_dl_runtime_resolve` does (CFA = rbx + 16), spins, makes system calls
/// (kernel-mode samples: the saved rbx) and calls `rbx_callee`, which saves rbx and
/// reuses it (its callers' rbx comes from its CFI, as `_dl_fixup`'s).
const CFA_REGISTERS_C: &str = r#"
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

long r11_frame(long rounds, char *buf);
long rbx_frame(long rounds);

__asm__(
    ".text\n"
    ".globl r11_frame\n"
    ".type r11_frame, @function\n"
    "r11_frame:\n"
    ".cfi_startproc\n"
    "  mov %rdi, %r8\n"
    "  mov %rsi, %r9\n"
    "1:\n"
    "  mov %rsp, %r11\n"
    "  sub $32768, %r11\n"
    ".cfi_def_cfa %r11, 32776\n"
    "2:\n"
    "  sub $4096, %rsp\n"
    "  movq $0, (%rsp)\n"
    "  mov %rsp, %rax\n"
    "  sub %r11, %rax\n"
    "  movb $1, (%r9, %rax)\n"
    "  mov $3000, %ecx\n"
    "3:\n"
    "  dec %ecx\n"
    "  jnz 3b\n"
    "  cmp %r11, %rsp\n"
    "  jne 2b\n"
    ".cfi_def_cfa %rsp, 32776\n"
    "  mov %r9, %rdi\n"
    "  mov $32768, %esi\n"
    "  mov $4, %edx\n"   /* MADV_DONTNEED */
    "  mov $28, %eax\n"  /* SYS_madvise */
    "  syscall\n"
    "  add $32768, %rsp\n"
    ".cfi_def_cfa_offset 8\n"
    "  dec %r8\n"
    "  jnz 1b\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size r11_frame, .-r11_frame\n"

    ".globl rbx_frame\n"
    ".type rbx_frame, @function\n"
    "rbx_frame:\n"
    ".cfi_startproc\n"
    "  push %rbx\n"
    ".cfi_def_cfa_offset 16\n"
    ".cfi_offset %rbx, -16\n"
    "  mov %rsp, %rbx\n"
    ".cfi_def_cfa_register %rbx\n"
    "  and $-64, %rsp\n"
    "  sub $64, %rsp\n"
    "  mov %rdi, (%rsp)\n"
    "1:\n"
    "  mov $10000, %ecx\n"
    "2:\n"
    "  dec %ecx\n"
    "  jnz 2b\n"
    "  mov $20, %r8d\n"
    "3:\n"
    "  mov $110, %eax\n" /* SYS_getppid */
    "  syscall\n"
    "  dec %r8d\n"
    "  jnz 3b\n"
    "  mov $20, %edi\n"
    "  call rbx_callee\n"
    "  decq (%rsp)\n"
    "  jnz 1b\n"
    "  mov %rbx, %rsp\n"
    ".cfi_def_cfa_register %rsp\n"
    "  pop %rbx\n"
    ".cfi_def_cfa_offset 8\n"
    ".cfi_restore %rbx\n"
    "  ret\n"
    ".cfi_endproc\n"
    ".size rbx_frame, .-rbx_frame\n");

static volatile long sink;

__attribute__((noinline, used)) long rbx_callee(long n)
{
    long s = 0;
    for (long i = 0; i < n; i++)
        s += getppid() + sink;
    sink = s;
    return s;
}

int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 2;
    char *buf = mmap(0, 32768, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct timespec t0, t;
    if (buf == MAP_FAILED)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        sink += r11_frame(20, buf);
        sink += rbx_frame(20);
        clock_gettime(CLOCK_MONOTONIC, &t);
    } while ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
    return 0;
}
"#;

/// A sample's user frames (root first) and kernel frames, with its count.
struct ModeStack {
    user: Vec<String>,
    kernel: Vec<String>,
    n: u64,
}

fn mode_stacks(c: &Capture) -> Vec<ModeStack> {
    profile::fold(c, &Filter::default())
        .stacks
        .into_iter()
        .map(|(k, n)| {
            let (kernel, user): (Vec<_>, Vec<_>) = k.into_iter().partition(|f| f.kind.is_kernel());
            let names = |v: Vec<hotspot_replay::names::FrameName>| {
                v.into_iter().map(|f| f.function.to_string()).collect()
            };
            ModeStack {
                user: names(user),
                kernel: names(kernel),
                n,
            }
        })
        .collect()
}

#[test]
fn a_cfa_in_r11_or_rbx_unwinds_in_user_and_kernel_mode_samples() {
    let d = tmp();
    let src = d.path().join("cfa_registers.c");
    std::fs::write(&src, CFA_REGISTERS_C).expect("write the source");
    let bin = d.path().join("cfa_registers");
    let gcc = std::process::Command::new("gcc")
        .args(["-O2", "-g", "-Wall", "-Werror", "-o"])
        .arg(&bin)
        .arg(&src)
        .status()
        .expect("gcc runs");
    assert!(gcc.success(), "gcc failed");
    let c = record(
        &d.path().join("c.hsp"),
        &["-F", "1999"],
        &[&bin.to_string_lossy(), "3"],
    );
    let s = mode_stacks(&c);
    let shown = |func: &str| {
        s.iter()
            .filter(|m| m.user.iter().any(|x| x == func))
            .take(10)
            .map(|m| format!("{:>5} {} | {}", m.n, m.user.join(";"), m.kernel.join(";")))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let in_user = |m: &ModeStack| m.kernel.is_empty();
    let page_fault = |m: &ModeStack| m.kernel.iter().any(|k| k.contains("page_fault"));
    let in_kernel = |m: &ModeStack| !m.kernel.is_empty();
    let anywhere = |_: &ModeStack| true;
    type Kind<'a> = (&'a str, &'a dyn Fn(&ModeStack) -> bool, &'a [&'a str], bool);
    // (function, which of its samples, the chain from main, whether it must be the last
    // user frame): at least 10 such samples, 99% of them whole from _start
    let kinds: [Kind; 5] = [
        // the timer tick's registers
        ("r11_frame", &in_user, &["main", "r11_frame"], true),
        // the task's registers saved by the fault on buf
        ("r11_frame", &page_fault, &["main", "r11_frame"], true),
        ("rbx_frame", &in_user, &["main", "rbx_frame"], true),
        // the task's registers saved by its system call
        ("rbx_frame", &in_kernel, &["main", "rbx_frame"], true),
        // rbx restored from rbx_callee's CFI (mostly in getppid)
        (
            "rbx_callee",
            &anywhere,
            &["main", "rbx_frame", "rbx_callee"],
            false,
        ),
    ];
    for (func, which, chain, last) in kinds {
        let of_kind = |m: &ModeStack| {
            which(m)
                && if last {
                    leaf_is(&m.user, func)
                } else {
                    m.user.iter().any(|f| f == func)
                }
        };
        let n: u64 = s.iter().filter(|m| of_kind(m)).map(|m| m.n).sum();
        let whole: u64 = s
            .iter()
            .filter(|m| of_kind(m) && rooted_at(&m.user, "_start") && has_chain(&m.user, chain))
            .map(|m| m.n)
            .sum();
        assert!(n >= 10, "only {n} such samples in {func}:\n{}", shown(func));
        assert!(
            share(whole, n) >= 0.99,
            "{whole} of {n} samples in {func} are _start..{}:\n{}",
            chain.join(";"),
            shown(func)
        );
    }
}
