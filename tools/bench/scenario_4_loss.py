"""Scenario 4 (issue 7): lost samples of `hotspot record -a` at 4999 Hz with every CPU
busy."""

from __future__ import annotations

import time
from pathlib import Path

from harness import HOTSPOT, NCPU, fresh_dir, log
from measure import measure
from procs import start_busy, stop_all
from profilers import Tools, hotspot_info
from tables import med_rng, verdict


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """Lost samples at 4999 Hz on every CPU with every CPU busy."""
    secs, rounds, hz = cfg["s4_secs"], cfg["rounds_s4"], 4999
    rows = []
    argv = None
    for r in range(rounds):
        d = fresh_dir(work / "s4")
        busy = start_busy(fx, secs + 30, NCPU)
        try:
            time.sleep(0.3)
            argv = [str(HOTSPOT), "record", "-a", "-F", str(hz), "-d", f"{secs:g}",
                    "-o", str(d / "capture.hsp")]
            run = measure(argv, workdir=d, timeout=secs + 300)
        finally:
            stop_all(busy)
        if run.rc != 0:
            raise RuntimeError(f"hotspot -a: rc={run.rc}\n{run.stderr[-3000:]}")
        info = hotspot_info(d / "capture.hsp")
        c = info["counts"]
        rows.append({"samples": c["samples"], "lost": c.get("lost", 0),
                     "expected": NCPU * hz * secs, "cpu": run.cpu, "rss_mb": run.rss_mb})
        log(f"s4 round {r + 1}: {c['samples']} samples, lost {c.get('lost')}")
    return {"secs": secs, "hz": hz, "rounds": rounds, "rows": rows, "commands": {"hotspot": argv}}


def summary_rows(w, s4, cfg) -> None:
    lost = [x["lost"] for x in s4["rows"]]
    w(f"| 4 | lost samples @ {s4['hz']} Hz, every CPU busy, `-a`, {s4['secs']:g} s | "
      f"{med_rng(lost, '{:.0f}')} of {med_rng([x['samples'] for x in s4['rows']], '{:.0f}')} | "
      f"— | — | — | 0 | {verdict(max(lost) == 0)} |")


def details(w, s4, cfg, work: Path) -> None:
    w("### 4. Loss\n")
    w(f"One `busy` per CPU ({NCPU}), `hotspot record -a -F {s4['hz']} -d {s4['secs']:g}`; "
      f"`lost` from `hotspot info --json`. Expected ≈ CPUs × Hz × seconds "
      f"= {NCPU * s4['hz'] * s4['secs']:,}.\n")
    w("| round | samples | lost | recorder CPU | recorder peak RSS |")
    w("|---|---|---|---|---|")
    for i, x in enumerate(s4["rows"]):
        w(f"| {i + 1} | {x['samples']:,} | {x['lost']} | {x['cpu']:.2f} s | {x['rss_mb']:.1f} MB |")
    w("")
