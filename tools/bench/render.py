"""The output file (BENCHMARKS.md or --out): the header, each scenario's summary rows and
details in scenario order, the machine and every command run. Each scenario module writes
its own rows (summary_rows) and section (details); this module orders them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import scenario_1_overhead
import scenario_2_recorder_cost
import scenario_3_size
import scenario_4_loss
import scenario_5_open
import scenario_6_view
import scenario_7_render
import scenario_8_build_like
import scenario_9_offcpu
import scenario_10_python
import scenario_11_flight
from harness import CFLAGS, REPO
from tables import shorten

# Scenario number → the module that writes its rows and its section.
WRITERS = [(1, scenario_1_overhead), (2, scenario_2_recorder_cost), (3, scenario_3_size),
           (4, scenario_4_loss), (5, scenario_5_open), (6, scenario_6_view),
           (7, scenario_7_render), (8, scenario_8_build_like), (9, scenario_9_offcpu),
           (10, scenario_10_python), (11, scenario_11_flight)]


def load_results(path: Path) -> tuple:
    """A run's saved results.json, as write_md takes them (JSON turned the scenarios'
    numbers and scenarios 1 and 2's frequencies into strings)."""
    saved = json.loads(path.read_text())
    R = {int(k): v for k, v in saved["R"].items()}
    for n in (1, 2):
        if n in R:
            R[n]["by_hz"] = {int(k): v for k, v in R[n]["by_hz"].items()}
    return (saved["cfg"], saved["machine"], R, Path(saved["work"]),
            dt.datetime.fromisoformat(saved["started"]), saved["took"])


def write_md(path: Path, cfg, machine, R, work: Path, started, took) -> None:
    L = []
    w = L.append
    mode = "QUICK" if cfg["quick"] else "full"
    w("# Benchmarks: hotspot vs perf vs samply\n")
    w(f"Written by `tools/bench/run{' --quick' if cfg['quick'] else ''}` on "
      f"{started.strftime('%Y-%m-%d %H:%M UTC')} in {took / 60:.1f} min. **This is a {mode} run**"
      + (" (short durations, few rounds): indicative only." if cfg["quick"] else ".")
      + f" Other work on the machine (measured while nothing of the benchmark ran) kept "
      f"{machine['bg_start']:.0f}% of its CPU busy before the run and {machine['bg_end']:.0f}% "
      f"after it"
      + (": **a noisy machine**, so absolute figures and small differences are noise."
         if machine["noisy"] else "."))
    w("")
    w("Same workload binary, same frequency, same duration, same machine; the tools run in "
      "alternation, the order rotating each round. Figures are **median [min–max]** over "
      "the rounds. A difference whose ranges overlap is called *within noise*. Goals are "
      + ("issue 16's (scenario 9)" if set(R) == {9} else
         "issue 26's (scenario 10)" if set(R) == {10} else
         "issue 28's (scenario 11)" if set(R) == {11} else
         "issue 7's (scenarios 1–6), issue 13's (scenario 7) and issue 14's (scenario 8)"
         if 8 in R else "issue 7's (scenarios 1–6) and issue 13's (scenario 7)" if 7 in R
         else "issue 7's")
      + "; a goal hotspot misses says **goal missed**.\n")
    w("Re-run: `tools/bench/run` (full) or `tools/bench/run --quick`; it builds the fixtures "
      "and hotspot, installs samply if missing, and rewrites this file.\n")

    # ---- summary
    w("## Summary (ratios first)\n")
    w("| # | measure | hotspot | perf | samply | ratio | goal | verdict |")
    w("|---|---|---|---|---|---|---|---|")
    for n, writer in WRITERS:
        if R.get(n):
            writer.summary_rows(w, R[n], cfg)
    w("")

    # ---- details
    w("## Details\n")
    for n, writer in WRITERS:
        if R.get(n):
            writer.details(w, R[n], cfg, work)

    # ---- machine and commands
    s7 = R.get(7)
    w("## Machine\n")
    keys = ["cpu", "cores", "kernel", "memory", "virtualisation", "hotspot", "perf", "samply",
            "gcc", "rustc", "date", "mode"]
    if s7:
        keys[-2:-2] = ["python3", "bpftool"]
        machine = dict(machine, python3=f"/usr/bin/python3: {s7['build']['python_version']}",
                       bpftool=machine.get("bpftool") or "?")
    for k in keys:
        w(f"- {k}: {machine[k]}")
    w("")
    if machine.get("samply_note"):
        w(f"Note: {machine['samply_note']}.\n")
    w("## Commands\n")
    wd = str(work.relative_to(REPO)) if work.is_relative_to(REPO) else str(work)
    w(f"`$W` is the work directory (`{wd}`). "
      f"Fixtures: `gcc {' '.join(CFLAGS)} -o $W/fixtures/NAME fixtures/NAME.c`; "
      f"hotspot: `cargo build --release --locked`. A profiler stopped with SIGINT is noted.\n")
    w("```")
    for sc in sorted(R):
        for tool, argv in (R[sc].get("commands") or {}).items():
            if not argv:
                continue
            note = "   # SIGINT after the duration" if sc == 2 else ""
            w(f"[{sc}] {tool}: {shorten(argv, work)}{note}")
    w("```")
    path.write_text("\n".join(L) + "\n")
