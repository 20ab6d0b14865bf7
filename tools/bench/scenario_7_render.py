"""Scenario 7's rows in the summary and its details section: completeness to the root,
recorder CPU, BPF time, ring and disk bytes per sample, peak RSS, loss and slowdown."""

from __future__ import annotations

from pathlib import Path

from harness import NCPU, median, ranges_overlap
from profilers import BASELINE
from scenario_7_targets import S7_EXTRAS, S7_HI, S7_HI_RUNS, S7_TARGETS, S7_TOOLS
from tables import baseline_name, before_after_row, med_rng, shorten, verdict


S7_GOAL_COMPLETE = {"C": 99.5, "python3": 99.5, "rustc": 92.0}


def s7_label(target: str, long: bool = False) -> str:
    return {"C": "plain -O2 C (`split7030`)" if not long else
            "C: `split7030`, gcc -O2 -g without frame-pointer flags",
            "python3": "Debian's python3", "rustc": "rustc"}[target]


def s7_ok(runs: dict, tool: str) -> list[dict]:
    return [x for x in runs.get(tool, []) if x.get("ok")]


def s7_fail_note(runs: dict, tool: str) -> str:
    bad = [x for x in runs.get(tool, []) if not x.get("ok")]
    return f"{len(bad)} run(s) failed: {bad[0]['error'][:200]}" if bad else ""


def s7_method_note(runs: dict) -> str:
    methods = sorted({x.get("method", "?") for x in s7_ok(runs, "hotspot")})
    if methods and methods != ["cfi"]:
        return (f"hotspot's captures say unwinding `{'/'.join(methods)}`: CFI unwinding was not "
                f"in effect in this build, whatever `--call-graph dwarf` asked")
    return ""


def s7_ratio(a, b, fmt="{:.2f}") -> str:
    if not a or not b or median(b) == 0:
        return "—"
    return fmt.format(median(a) / median(b)) + "×"


def s7_marginal(runs: dict) -> dict:
    """Per tool: recorder CPU (ms) and disk bytes per extra sample between the base
    frequency's median and the first-round run at S7_HI."""
    out = {}
    for t in S7_TOOLS:
        lo, hi = s7_ok(runs, t), s7_ok(runs, f"{t} @{S7_HI}")
        if not lo or not hi:
            continue
        dn = hi[0]["samples"] - median([x["samples"] for x in lo])
        if dn <= 0:
            continue
        out[t] = {"cpu": 1e6 * (hi[0]["rec_cpu"] - median([x["rec_cpu"] for x in lo])) / dn,
                  "disk": (hi[0]["disk"] - median([x["disk"] for x in lo])) / dn}
        if "post_cpu" in hi[0]:
            out[t]["post"] = 1e6 * (hi[0]["post_cpu"] - median([x["post_cpu"] for x in lo])) / dn
    return out


def summary_rows(w, s7, cfg) -> None:
    T = s7["targets"]
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        h = [x["share"] for x in s7_ok(runs, "hotspot")]
        p = [x["share"] for x in s7_ok(runs, "perf")]
        s = [x["share"] for x in s7_ok(runs, "samply")]
        fp = [x["share"] for x in s7_ok(runs, "hotspot fp")]
        p64 = [x["share"] for x in s7_ok(runs, "perf 65528")]
        goal = S7_GOAL_COMPLETE[tg]
        hc = med_rng(h, "{:.1f}", "%") + (f" (`fp`: {median(fp):.1f}%)" if fp else "")
        pc = med_rng(p, "{:.1f}", "%") + (f" (`dwarf,65528`: {median(p64):.1f}%)" if p64 else "")
        notes = [x for x in (s7_method_note(runs), s7_fail_note(runs, "hotspot")) if x]
        if not h:
            v = verdict(None, "; ".join(notes) or "no hotspot run")
        elif min(h) >= goal:
            v = verdict(True, "; ".join(["every round", *notes]))
        elif median(h) >= goal:
            v = verdict(True, "; ".join([f"median; a round reached only {min(h):.1f}%", *notes]))
        else:
            v = verdict(False, "; ".join(notes))
        ratio = f"hotspot ÷ samply = {s7_ratio(h, s)}; ÷ perf = {s7_ratio(h, p)}"
        w(f"| 7 | share of samples complete to their root (`_start`, `clone3`/`start_thread`), "
          f"{s7_label(tg)}, {s7['hz']} Hz | {hc} | {pc} | {med_rng(s, '{:.1f}', '%')} | {ratio} | "
          f"≥ {goal:g}% | {v} |")
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        c = {t: [x["per1k_ms"] for x in s7_ok(runs, t)] for t in S7_TOOLS}
        post = [1e6 * x["post_cpu"] / max(x["samples"], 1) for x in s7_ok(runs, "perf")]
        pc = med_rng(c["perf"], "{:.1f}", " ms") + (
            f", + {median(post):.1f} ms to unwind afterwards (`perf script`)" if post else "")
        if c["hotspot"] and c["samply"]:
            ratio = median(c["hotspot"]) / median(c["samply"])
            noise = (" (within noise: ranges overlap with half of samply's)"
                     if ranges_overlap(c["hotspot"], [0.5 * x for x in c["samply"]]) else "")
            v = verdict(ratio <= 0.5) + noise
            rt = f"{ratio:.2f}× samply's"
        else:
            v, rt = verdict(None, s7_fail_note(runs, "hotspot") or s7_fail_note(runs, "samply")), "—"
        w(f"| 7 | recorder CPU per 1000 samples, {s7_label(tg)} (hotspot and samply unwind and "
          f"name frames while recording; perf records, then unwinds in `perf script`) | "
          f"{med_rng(c['hotspot'], '{:.1f}', ' ms')} | {pc} | "
          f"{med_rng(c['samply'], '{:.1f}', ' ms')} | {rt} | ≤ 0.5× samply's | {v} |")
    fx = (s7.get("fixed") or {}).get("rows")
    if fx:
        def fcell(t):
            xs = [x for x in fx.get(t, []) if x.get("ok")]
            if not xs:
                return "failed" if fx.get(t) else "—"
            return (med_rng([x["cpu"] for x in xs], "{:.3f}", " s") + " (sys "
                    + f"{median([x['stime'] for x in xs]):.3f} s)")
        w(f"| 7 | recorder CPU to record `/bin/true` (the fixed cost per recording: start-up, "
          f"loading and verifying BPF programs, finishing the file; in the row above it is "
          f"spread over the samples) | {fcell('hotspot')}; `fp`: {fcell('hotspot fp')} | "
          f"{fcell('perf')} | {fcell('samply')} | — | (information) | — |")
    cells = {t: [] for t in S7_TOOLS}
    dcells = {t: [] for t in S7_TOOLS}
    for tg in S7_TARGETS:
        m = s7_marginal(T[tg]["runs"])
        for t in S7_TOOLS:
            cells[t].append((f"{tg} {m[t]['cpu']:.1f} ms" + (
                f" + {m[t]['post']:.1f} ms `perf script`" if "post" in m[t] else ""))
                if m.get(t) else f"{tg} —")
            dcells[t].append(f"{tg} {m[t]['disk']:,.1f} B" if m.get(t) else f"{tg} —")
    hs = [s7_marginal(T[tg]["runs"]) for tg in S7_TARGETS]
    ratios = "; ".join(f"{tg} {h['hotspot']['cpu'] / h['samply']['cpu']:.2f}×"
                       for tg, h in zip(S7_TARGETS, hs)
                       if h.get("hotspot") and h.get("samply") and h["samply"]["cpu"] > 0)
    w(f"| 7 | recorder CPU per 1000 extra samples (marginal: {s7['hz']} → {S7_HI} Hz, "
      f"first round; fixed costs such as start-up, loading unwind tables and writing the file "
      f"cancel out) | {'; '.join(cells['hotspot'])} | {'; '.join(cells['perf'])} | "
      f"{'; '.join(cells['samply'])} | hotspot ÷ samply: {ratios or '—'} | "
      f"(information) | — |")
    ratios = "; ".join(f"{tg} {h['hotspot']['disk'] / h['samply']['disk']:.2f}×"
                       for tg, h in zip(S7_TARGETS, hs)
                       if h.get("hotspot") and h.get("samply") and h["samply"]["disk"] > 0)
    w(f"| 7 | bytes on disk per extra sample (marginal: {s7['hz']} → {S7_HI} Hz, first round) | "
      f"{'; '.join(dcells['hotspot'])} | {'; '.join(dcells['perf'])} | "
      f"{'; '.join(dcells['samply'])} | hotspot ÷ samply: {ratios or '—'} | (information) | — |")
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        rs = [x for x in s7_ok(runs, "hotspot") if x.get("bpf") and x["bpf"].get("per_sample")]
        ring = [x["ring_bps"] for x in s7_ok(runs, "hotspot") if x.get("ring_bps")]
        qualifies = tg == "C" or (ring and median(ring) <= 8192 + 64)
        goal = "≤ 1.5 µs (stacks up to 8 KiB)" if qualifies else "(information: deeper stacks)"
        if not rs:
            errs = "; ".join(e for x in s7_ok(runs, "hotspot") for e in (x.get("bpf_errors") or []))
            w(f"| 7 | BPF time per sample, {s7_label(tg)} | not measured | — | — | — | {goal} | "
              f"{verdict(None, errs or 'no hs_sample* program found with run counts (kernel.bpf_stats_enabled?)')} |")
            continue
        per_s = [x["bpf"]["per_sample"] / 1000 for x in rs]
        per_c = [x["bpf"]["per_call"] / 1000 for x in rs]
        per_t = [x["bpf"]["per_traced"] / 1000 for x in rs if x["bpf"].get("per_traced") is not None]
        names = sorted({n for x in rs for n in x["bpf"]["names"]})
        cell = ((f"{med_rng(per_t, '{:.2f}', ' µs')} per traced sample (est.); " if per_t else "")
                + f"{med_rng(per_s, '{:.2f}', ' µs')} per recorded sample (upper bound); "
                f"{med_rng(per_c, '{:.2f}', ' µs')} per call; `{'`, `'.join(names)}`")
        if not qualifies:
            v = "—"
        elif max(per_s) <= 1.5:
            v = verdict(True, "even the upper bound, every round")
        elif per_t:
            v = verdict(max(per_t) <= 1.5, "the estimate, every round" if max(per_t) <= 1.5
                        else f"the estimate reached {max(per_t):.2f} µs")
        else:
            v = verdict(False, "upper bound; the untraced-call cost was not measured")
        w(f"| 7 | BPF time per sample of the sampling program (`kernel.bpf_stats_enabled`; "
          f"the estimate is explained under 7), {s7_label(tg)}, {s7['hz']} Hz | {cell} | — | — | "
          f"— | {goal} | {v} |")
    cells = {"hotspot": [], "perf": []}
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        for t in cells:
            xs = [x["ring_bps"] for x in s7_ok(runs, t) if x.get("ring_bps")]
            cells[t].append(f"{tg} {med_rng(xs, '{:,.0f}', ' B')}" if xs else f"{tg} not measured")
    w(f"| 7 | ring-buffer bytes per sample (hotspot: bytes reserved in its BPF ring buffers ÷ "
      f"samples; perf: perf.data ÷ samples, the records as the kernel wrote them) | "
      f"{'; '.join(cells['hotspot'])} | {'; '.join(cells['perf'])} | 32,000 B of stack + "
      f"registers per sample (fixed window; not measured) | — | (information) | — |")
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        b = {t: [x["bps_disk"] for x in s7_ok(runs, t)] for t in S7_TOOLS}
        p64 = [x["bps_disk"] for x in s7_ok(runs, "perf 65528")]
        if b["hotspot"] and b["samply"]:
            ratio = median(b["hotspot"]) / median(b["samply"])
            v = verdict(median(b["hotspot"]) <= 4 and ratio <= 0.5,
                        f"{median(b['hotspot']):.2f} B {'≤' if median(b['hotspot']) <= 4 else '>'} 4 B; "
                        f"{ratio:.2f}× samply's")
            rt = f"{ratio:.2f}× samply's"
        else:
            v, rt = verdict(None, s7_fail_note(runs, "hotspot")), "—"
        pc = med_rng(b["perf"], "{:,.0f}", " B") + (f" (`dwarf,65528`: {median(p64):,.0f} B)" if p64 else "")
        w(f"| 7 | bytes on disk per sample, {s7_label(tg)} (names included for hotspot and "
          f"samply's sidecar; perf.data holds none) | {med_rng(b['hotspot'], '{:.2f}', ' B')} | "
          f"{pc} | {med_rng(b['samply'], '{:.1f}', ' B')} | {rt} | ≤ 4 B and ≤ 0.5× samply's | {v} |")
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        m = {t: [x["rss_mb"] for x in s7_ok(runs, t)] for t in S7_TOOLS}
        if tg == "python3":
            goal = "< 30 MB"
            v = (verdict(max(m["hotspot"]) < 30, "every round" if max(m["hotspot"]) < 30
                         else "in at least one round") if m["hotspot"]
                 else verdict(None, s7_fail_note(runs, "hotspot")))
        else:
            goal, v = "(information)", "—"
        w(f"| 7 | recorder peak RSS, {s7_label(tg)} | {med_rng(m['hotspot'], '{:.1f}', ' MB')} | "
          f"{med_rng(m['perf'], '{:.1f}', ' MB')} | {med_rng(m['samply'], '{:.1f}', ' MB')} | "
          f"{s7_ratio(m['hotspot'], m['samply'])} samply's | {goal} | {v} |")
    lo = s7.get("lost")
    if lo:
        h = [x for x in lo["rows"]["hotspot"] if x.get("ok")]
        p = [x for x in lo["rows"]["perf"] if x.get("ok")]
        hc = (f"{med_rng([x['lost'] for x in h], '{:.0f}')} of "
              f"{med_rng([x['samples'] for x in h], '{:.0f}')}" if h else "failed")
        pc = (f"{med_rng([x['lost'] for x in p], '{:.0f}')} lost, "
              f"{med_rng([x['samples'] for x in p], '{:.0f}')} written" if p else "failed")
        v = (verdict(max(x["lost"] for x in h) == 0) if h else
             verdict(None, lo["rows"]["hotspot"][0].get("error", "") if lo["rows"]["hotspot"] else ""))
        w(f"| 7 | lost samples @ {lo['hz']} Hz, every CPU busy (one `split7030` per CPU, both "
          f"pids recorded, {lo['secs']:g} s), `--call-graph dwarf` | {hc} | {pc} | not run "
          f"(samply reports no lost count) | — | 0 | {v} |")
    sl = s7.get("slow")
    if sl:
        for hz in ("499", "4999"):
            d = sl["by_hz"][hz]
            sd, rel, base = d["slowdown"], d["rel"], d["rates"]["none"]
            h = sd["hotspot"]
            noise_pct = 100.0 * (max(base) / min(base) - 1)
            cs = d.get("cpu_slowdown") or {}
            by_cpu = ("; per CPU second of the program (immune to other work's competition): "
                      + ", ".join(f"{t} {median(cs[t]):.2f}%" for t in S7_TOOLS if cs.get(t))
                      if any(cs.get(t) for t in S7_TOOLS) else "")
            if hz == "499":
                m = median(h)
                if noise_pct >= 1.0:
                    v = (f"not resolvable: the unprofiled runs alone vary by {noise_pct:.1f}% "
                         f"(median slowdown {m:.2f}%)")
                elif m < 1.0 and max(h) < 1.0:
                    v = verdict(True, f"median {m:.2f}%, every round < 1%")
                elif m < 1.0:
                    v = f"within noise: median {m:.2f}% < 1%, but a round reached {max(h):.2f}%"
                elif min(h) < 1.0:
                    v = f"within noise: median {m:.2f}% ≥ 1%, but a round was at {min(h):.2f}%"
                else:
                    v = verdict(False, f"median {m:.2f}% ≥ 1%")
                goal = "slowdown < 1%"
            else:
                goal, v = "(information)", ""
            v = (v + by_cpu).lstrip("; ") or "—"
            w(f"| 7 | throughput of a plain -O2 C program (`throughput`, no frame-pointer flags) "
              f"relative to no profiler @ {hz} Hz, `--call-graph dwarf` (slowdown = 1 − this) | "
              f"{med_rng(rel['hotspot'], '{:.4f}')} | {med_rng(rel['perf'], '{:.4f}')} | "
              f"{med_rng(rel['samply'], '{:.4f}')} | hotspot ÷ perf = "
              f"{median(rel['hotspot']) / median(rel['perf']):.4f} | {goal} | {v} |")
    if s7.get("baseline"):
        baseline_rows(w, s7)


def baseline_rows(w, s7) -> None:
    """With --baseline: recorder CPU and BPF time per sample of this build against the
    baseline build's, both recording each target in every round."""
    name = baseline_name(s7)
    for tg in S7_TARGETS:
        runs = s7["targets"][tg]["runs"]
        now, before = s7_ok(runs, "hotspot"), s7_ok(runs, BASELINE)
        before_after_row(w, 7, f"recorder CPU per 1000 samples, {s7_label(tg)}",
                         [x["per1k_ms"] for x in now], [x["per1k_ms"] for x in before], name,
                         "{:.1f}", " ms")
    for tg in S7_TARGETS:
        runs = s7["targets"][tg]["runs"]
        bpf = {t: [x["bpf"] for x in s7_ok(runs, t)
                   if x.get("bpf") and x["bpf"].get("per_sample")]
               for t in ("hotspot", BASELINE)}
        # Per recorded sample (run time ÷ samples), not the estimate per traced sample: the
        # estimate subtracts the untraced calls at each build's own calibrated cost, and in
        # an A/A run (one build as both) the two calibrations alone moved it by ×1.7.
        calls = (f"; per call {median([x['per_call'] for x in bpf['hotspot']]):.0f} ns, "
                 f"baseline {median([x['per_call'] for x in bpf[BASELINE]]):.0f} ns"
                 if bpf["hotspot"] and bpf[BASELINE] else "")
        before_after_row(w, 7, f"BPF time per recorded sample of the sampling program "
                               f"(`run_time_ns` ÷ samples), {s7_label(tg)}",
                         [x["per_sample"] / 1000 for x in bpf["hotspot"]],
                         [x["per_sample"] / 1000 for x in bpf[BASELINE]], name, "{:.2f}", " µs",
                         calls)


def details(w, s7, cfg, work: Path) -> None:
    b = s7["build"]
    T = s7["targets"]
    w("### 7. Unwinding without frame pointers\n")
    cr = b["crate"]
    w(f"Goals are issue 13's. Three targets without frame pointers, each launched by each "
      f"profiler at {s7['hz']} Hz (the whole process tree: threads and children followed), "
      f"{s7['rounds']} round(s), the order rotating each round; `hotspot --call-graph fp`, "
      f"`perf --call-graph dwarf,65528` and each tool at {S7_HI} Hz (`@{S7_HI}`, for the "
      f"marginal cost per sample) ran in the first round only:\n")
    w(f"- **C**: `fixtures/split7030.c` built as `tests/common/mod.rs::plain_fixture` does "
      f"(`gcc {' '.join(b['cflags'])}`), run for {s7['secs']:g} s.")
    w(f"- **python3**: Debian's `/usr/bin/python3` ({b['python_version']}; no frame pointers, "
      f"stripped) running a pure-Python loop (recursive `fib`, a generator sum) for {s7['secs']:g} s "
      f"(`$W/s7/bin/py7.py`, written by the script).")
    w(f"- **rustc**: rustup's `{b['rustc_version']}` (the toolchain's own binary, not the rustup "
      f"proxy) compiling a generated single-file library crate ({cr['modules']} modules of generic "
      f"code instantiated for 8 integer types, {cr['lines']:,} lines, deterministic) with "
      f"`-C opt-level=2` (16 codegen units: LLVM runs on several threads).\n")
    w("Each profiler launches the target itself (no launcher in between: a fork or an extra "
      "exec before the target makes perf's DWARF unwinding stop at `__libc_start_call_main` in "
      "about half the runs, its maps model keeping the image from before the exec). The "
      "target's CPU comes from `tools/bench/cpu_at_exit.so`, an `LD_PRELOAD` library built by "
      "the script whose destructor appends each process's `getrusage(RUSAGE_SELF)` to a file "
      "(lines told apart by executable); the **recorder's CPU** is the profiler's `wait4` "
      "user+sys (which counts the command it launched) minus the target's. Each round also runs "
      "the target alone (`none`): its `wait4` minus its report is the part of its exit that "
      f"the subtraction leaves in the recorder's figure ({s7_residual_note(s7)}). The "
      "kernel-side cost (the BPF program, perf's stack copy) runs in the sampled task and is "
      "part of the target's time, not the recorder's: it has its own row. **Complete to the "
      "root**: the outermost frame is `_start` (the executable's or ld.so's entry point) or "
      "glibc's thread start (`clone3`, `clone`, `start_thread`, with or without underscores). "
      "The unwound stacks are read from `hotspot report --format folded` (root first), from "
      "`perf script` (its DWARF unwinding of the copied 8 KiB), and from samply's processed "
      "profile (each sample's stack followed to its root frame, named from the "
      f"`{s7.get('presym', '--presymbolicate')}` sidecar). samply symbolises while recording because of that flag, "
      "as hotspot does; perf's `perf script` time is the unwinding and naming it defers. "
      "**BPF time**: `kernel.bpf_stats_enabled=1` for the scenario "
      f"({s7_bpf_stats_note(s7)}); the script opens its own fds on the recorder's programs "
      "and ring buffers by id (found in `/proc/PID/fdinfo`), so it reads `run_time_ns` and "
      "`run_cnt` of the `hs_sample*` programs (`bpftool -j prog show`) after the recorder has "
      "finished, whole. The program runs on every sampling tick of every CPU and returns "
      "early when the task is not traced, so: per call = `run_time_ns` ÷ `run_cnt` (untraced "
      "ticks dilute it); per recorded sample = `run_time_ns` ÷ samples in the capture (an upper "
      "bound: untraced ticks are charged to the samples); per traced sample (est.) = "
      "(`run_time_ns` − untraced calls × the cost of an untraced call) ÷ (samples + lost), "
      f"the untraced cost measured by hotspot recording a pid that only sleeps "
      f"({s7_untraced_note(s7)}). "
      "**Ring bytes**: each hotspot ring buffer's producer position (read from its mmapped "
      "producer page: every byte reserved since the ring was made, 8-byte record headers "
      "included) ÷ samples.\n")
    if s7.get("baseline"):
        w(f"Before/after (`--baseline {s7['baseline']}`, {baseline_name(s7)}): the baseline "
          f"build recorded each target in every round too, as `{BASELINE}` "
          f"(`--call-graph dwarf`), its untraced-tick cost measured the same way "
          f"({s7_untraced_note(s7, 'untraced_baseline')}).\n")
    w("| target | tool | samples | complete to root | roots of the stacks (top) | target CPU | "
      "recorder CPU | per 1000 samples | perf script (CPU) | peak RSS | disk B/sample | ring "
      "B/sample | BPF "
      "µs per traced sample (est.) / per recorded sample / per call |")
    w("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for tg in S7_TARGETS:
        runs = T[tg]["runs"]
        for t in ["none", *S7_TOOLS, *([BASELINE] if BASELINE in runs else []), *S7_EXTRAS,
                  *S7_HI_RUNS]:
            rs = s7_ok(runs, t)
            if not rs:
                if runs.get(t):
                    w(f"| {tg} | {t} | failed: {runs[t][0].get('error', '?')[:300]} | | | | | | | | | | |")
                continue
            tcpu = med_rng([x["target_cpu"] for x in rs], "{:.2f}", " s")
            if t == "none":
                w(f"| {tg} | none (target alone) | — | — | — | {tcpu} | — | — | — | — | — | — | — |")
                continue
            top = ", ".join(f"{k} {v}" for k, v in list(rs[0]["roots"].items())[:4])
            post = (med_rng([x["post_cpu"] for x in rs], "{:.2f}", " s") if t.startswith("perf")
                    else "—")
            ring = [x["ring_bps"] for x in rs if x.get("ring_bps")]
            bp = [x["bpf"] for x in rs if x.get("bpf") and x["bpf"].get("per_sample")]
            pt = [x["per_traced"] / 1000 for x in bp if x.get("per_traced") is not None]
            bpf = ((med_rng(pt, '{:.2f}') if pt else "—") + " / "
                   f"{med_rng([x['per_sample'] / 1000 for x in bp], '{:.2f}')} / "
                   f"{med_rng([x['per_call'] / 1000 for x in bp], '{:.2f}')}" if bp else "—")
            w(f"| {tg} | {t} | {med_rng([x['samples'] for x in rs], '{:.0f}')} | "
              f"{med_rng([x['share'] for x in rs], '{:.1f}', '%')} | {top} (round 1) | {tcpu} | "
              f"{med_rng([x['rec_cpu'] for x in rs], '{:.3f}', ' s')} | "
              f"{med_rng([x['per1k_ms'] for x in rs], '{:.1f}', ' ms')} | {post} | "
              f"{med_rng([x['rss_mb'] for x in rs], '{:.1f}', ' MB')} | "
              f"{med_rng([x['bps_disk'] for x in rs], '{:,.1f}')} | "
              f"{med_rng(ring, '{:,.0f}') if ring else '—'} | {bpf} |")
    w("")
    w("What hotspot's own captures say (`hotspot info --json`, first round): " + "; ".join(
        s7_info_note(tg, T[tg]["runs"]) for tg in S7_TARGETS) + ".\n")
    reported = [x.get("ring_reported") for tg in S7_TARGETS for x in s7_ok(T[tg]["runs"], "hotspot")]
    if any(r is not None for r in reported):
        w(f"The recorder also reports its ring-buffer bytes per sample itself: "
          f"{', '.join(f'{r:,.0f}' for r in reported if r is not None)} B.\n")
    lo = s7.get("lost")
    if lo:
        w(f"Loss: one plain-built `split7030` per CPU ({NCPU}), both pids recorded at "
          f"{lo['hz']} Hz with `--call-graph dwarf` (hotspot's default cap, perf's 8 KiB), "
          f"stopped with SIGINT after {lo['secs']:g} s, {lo['rounds']} round(s). Expected ≈ CPUs "
          f"× Hz × seconds = {NCPU * lo['hz'] * lo['secs']:,} if both copies get a whole CPU.\n")
        w("| tool | round | samples | lost | recorder CPU | peak RSS | BPF µs per traced sample (est.) / per recorded sample / per call | ring B/sample |")
        w("|---|---|---|---|---|---|---|---|")
        for t, rows in lo["rows"].items():
            for i, x in enumerate(rows):
                if not x.get("ok"):
                    w(f"| {t} | {i + 1} | failed: {x.get('error', '?')[:300]} | | | | | |")
                    continue
                bp = x.get("bpf")
                bpf = ((f"{bp['per_traced'] / 1000:.2f}" if bp.get("per_traced") is not None
                        else "—") + f" / {bp['per_sample'] / 1000:.2f} / {bp['per_call'] / 1000:.2f}"
                       if bp and bp.get("per_sample") else "—")
                ring = (f"{x['ring_bps']:,.0f}" if x.get("ring_bps") else
                        f"{x['bytes'] / max(x['samples'], 1):,.0f} (perf.data)" if x.get("bytes") else "—")
                w(f"| {t} | {i + 1} | {x['samples']:,} | {x['lost']:,} | {x['cpu']:.2f} s | "
                  f"{x['rss_mb']:.1f} MB | {bpf} | {ring} |")
        w("")
    sl = s7.get("slow")
    if sl:
        w(f"Slowdown: `split7030` prints no rate, so this uses `fixtures/throughput.c` built with "
          f"the same plain flags (its two middle functions force a frame with "
          f"`__builtin_frame_address`, the rest has none), {sl['secs']:g} s alone and under each "
          f"profiler launching it with its DWARF/CFI unwinding, {sl['rounds']} round(s) per "
          f"frequency, as scenario 1 measures (units per wall second, the verdict's figure), "
          f"and also per CPU second of the program (its CPU from `cpu_at_exit.so`): the "
          f"profiler's cost inside the program (interrupts, BPF, stack copies are charged to "
          f"it) without the wall-clock effect of other work competing for the CPUs.\n")
        w("| Hz | tool | units/s | slowdown | units per CPU second | slowdown per CPU second |")
        w("|---|---|---|---|---|---|")
        for hz in ("499", "4999"):
            d = sl["by_hz"][hz]
            cr, cs = d.get("cpu_rates") or {}, d.get("cpu_slowdown") or {}
            for t in ["none", *S7_TOOLS]:
                sd = med_rng(d["slowdown"][t], "{:.2f}", "%") if t != "none" else "—"
                csd = med_rng(cs.get(t, []), "{:.2f}", "%") if t != "none" else "—"
                w(f"| {hz} | {t} | {med_rng(d['rates'][t], '{:.0f}')} | {sd} | "
                  f"{med_rng(cr.get(t, []), '{:.0f}')} | {csd} |")
        w("")
    ld = s7.get("load", {})
    w(f"Load average (1 min) when scenario 7 started: {ld.get('start', '?')}; when it ended: "
      f"{ld.get('end', '?')} (on {NCPU} CPUs).\n")
    w("Builds of scenario 7 (`$W/s7/bin`):\n")
    w("```")
    for argv in b["build_cmds"]:
        w(shorten(argv, work))
    w("```\n")


def s7_residual_note(s7) -> str:
    parts = []
    for tg in S7_TARGETS:
        xs = [1000 * x["residual"] for x in s7_ok(s7["targets"][tg]["runs"], "none")]
        if xs:
            parts.append(f"{tg} {med_rng(xs, '{:+.1f}', ' ms')}")
    return "; ".join(parts) or "not measured"


def s7_untraced_note(s7, key: str = "untraced") -> str:
    u = s7.get(key) or {}
    if u.get("per_call") is None:
        return f"not measured: {u.get('error', '?')}"
    return f"{u['per_call']:.0f} ns per call over {u['cnt']:,} calls in {u['secs']:g} s"


def s7_bpf_stats_note(s7) -> str:
    st = s7.get("bpf_stats") or {}
    if not st.get("set"):
        return f"could not be set: {st.get('error', '?')}"
    held = ("; the script also held a `BPF_ENABLE_STATS` fd, so writes to the sysctl by "
            "others meanwhile could not stop the counters" if st.get("fd") else
            f"; no `BPF_ENABLE_STATS` fd ({st.get('fd_error', '?')}): a write of 0 to the "
            f"sysctl by someone else during the run would stop the counters")
    if st.get("was") == "1":
        return "it was already 1 on this machine and was left so" + held
    return f"it was {st.get('was')} and was put back after" + held


def s7_info_note(tg: str, runs: dict) -> str:
    rs = s7_ok(runs, "hotspot")
    if not rs:
        return f"{tg}: no capture"
    x = rs[0]
    comp, n, checked = x.get("info_complete") or (0, 0, None)
    reasons = ", ".join(f"{k} {v}" for k, v in sorted((x.get("info_reasons") or {}).items(),
                                                       key=lambda kv: -kv[1])[:3])
    cap = x.get("stack_cap")
    return (f"{tg}: unwinding `{x.get('method')}`" + (f", stack cap {cap:,} B" if cap else "")
            + (f", {comp:,} of {n:,} samples complete by its own check" if checked else
               ", stacks not checked for completeness")
            + (f" (reasons: {reasons})" if reasons else ""))
