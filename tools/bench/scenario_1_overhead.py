"""Scenario 1 (issue 7): overhead on the profiled program, the `throughput` fixture's rate
alone and under each profiler launching it."""

from __future__ import annotations

import re
from pathlib import Path

from harness import fresh_dir, log, median, ranges_overlap, rotate
from measure import measure
from profilers import PEERS_RUN, Tools
from tables import med_rng, verdict


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """Throughput of the `throughput` fixture alone and under each profiler."""
    secs, rounds = cfg["s1_secs"], cfg["rounds"]
    names = ["none", *PEERS_RUN]
    res = {"secs": secs, "rounds": rounds, "by_hz": {}, "commands": {}}
    for hz in (499, 4999):
        rates = {n: [] for n in names}
        rel = {n: [] for n in PEERS_RUN}
        for r in range(rounds):
            this = {}
            for tool in rotate(names, r):
                d = fresh_dir(work / "s1" / tool.replace(" ", "_"))
                cmd = [str(fx["throughput"]), f"{secs:g}"]
                argv = cmd if tool == "none" else tools.record_cmd(tool, hz, d, cmd=cmd)
                res["commands"].setdefault(tool, argv)
                with tools.running(tool):
                    run = measure(argv, workdir=d, timeout=secs * 10 + 120)
                m = re.search(r"units_per_s=([0-9.]+)", run.stdout)
                if run.rc != 0 or not m:
                    raise RuntimeError(f"{tool}: rc={run.rc}\n{run.stdout}\n{run.stderr[-3000:]}")
                this[tool] = float(m.group(1))
                rates[tool].append(this[tool])
            for tool in PEERS_RUN:
                rel[tool].append(this[tool] / this["none"])
            log(f"s1 {hz} Hz round {r + 1}/{rounds}: " + ", ".join(
                f"{t} {this[t]:.0f}" for t in names))
        res["by_hz"][hz] = {
            "rates": rates,
            # Throughput relative to the same round's own unprofiled run, and the slowdown
            # in percent.
            "rel": rel,
            "slowdown": {t: [100.0 * (1 - x) for x in rel[t]] for t in PEERS_RUN},
        }
    return res


def summary_rows(w, s1, cfg) -> None:
    for hz in (499, 4999):
        sd, rel = s1["by_hz"][hz]["slowdown"], s1["by_hz"][hz]["rel"]
        h, p = sd["hotspot"], sd["perf"]
        base = s1["by_hz"][hz]["rates"]["none"]
        # How much the unprofiled runs alone vary: below this, nothing is resolved.
        noise_pct = 100.0 * (max(base) / min(base) - 1)
        overlap = ranges_overlap(h, p)
        if median(h) <= median(p):
            vs = ("≤ perf's" + (" (not distinguishable: ranges overlap)" if overlap else ""))
            vs_ok = True
        else:
            vs = "> perf's" + (" (within noise: ranges overlap)" if overlap else "")
            vs_ok = None if overlap else False
        parts = [f"slowdown {vs}"]
        ok = vs_ok
        if hz == 499:
            m = median(h)
            if noise_pct >= 1.0:
                parts.append(f"< 1% not resolvable: the unprofiled runs alone vary by "
                             f"{noise_pct:.1f}% (median slowdown {m:.2f}%)")
                ok = None
            elif m < 1.0 and max(h) < 1.0:
                parts.append(f"median {m:.2f}%, every round < 1%")
            elif m < 1.0:
                parts.append(f"median {m:.2f}% < 1%, but a round reached {max(h):.2f}% "
                             f"(within noise)")
                ok = None if ok is not False else False
            else:
                parts.append(f"median {m:.2f}% ≥ 1%" + (
                    f"; a round was at {min(h):.2f}% (within noise)" if min(h) < 1.0 else ""))
                ok = False
        if ok is None:
            v = "within noise: " + "; ".join(parts)
        else:
            v = verdict(ok, "; ".join(parts))
        ratio = median(rel["hotspot"]) / median(rel["perf"])
        w(f"| 1 | throughput of the profiled program relative to no profiler @ {hz} Hz "
          f"(slowdown = 1 − this) | {med_rng(rel['hotspot'], '{:.4f}')} | "
          f"{med_rng(rel['perf'], '{:.4f}')} | {med_rng(rel['samply'], '{:.4f}')} | "
          f"hotspot ÷ perf = {ratio:.4f} | slowdown ≤ perf's"
          f"{', and < 1%' if hz == 499 else ''} | {v} |")


def details(w, s1, cfg, work: Path) -> None:
    w(f"### 1. Overhead on the profiled program\n")
    w(f"`throughput {s1['secs']:g}` (a 5-deep call chain, counting fixed work units) alone "
      f"and under each profiler launching it, {s1['rounds']} rounds per frequency. Slowdown "
      f"= 1 − (units/s under the profiler ÷ units/s of the same round's unprofiled run). "
      f"The profilers run on the other CPU, so this is the cost inside the profiled "
      f"program (interrupts, stack walks, page faults), not the profiler's own CPU (→ 2).\n")
    w("| Hz | tool | units/s | slowdown |")
    w("|---|---|---|---|")
    for hz in (499, 4999):
        d = s1["by_hz"][hz]
        for t in ["none", *PEERS_RUN]:
            sd = med_rng(d["slowdown"][t], "{:.2f}", "%") if t != "none" else "—"
            w(f"| {hz} | {t} | {med_rng(d['rates'][t], '{:.0f}')} | {sd} |")
    w("")
