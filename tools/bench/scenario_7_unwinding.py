"""Scenario 7 (issue 13): unwinding without frame pointers. Each target recorded by each
profiler with its DWARF/CFI unwinding, in rotating rounds: how many stacks are complete,
the recorder's CPU and memory, the BPF program's time per sample, bytes per sample; then
the fixed cost of a recording, loss at 4999 Hz and the slowdown of a plain-built program.
With --baseline, the baseline hotspot build records each target in every round too."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from bpfstats import BpfProbe, bpf_sample_stats, bpf_stats_on, find_ring_report
from harness import NCPU, die, fresh_dir, loadavg, log, median, rotate
from measure import measure
from procs import LIVE, reap_orphans, start_busy, stop_all
from profilers import BASELINE, Tools, hotspot_info, perf_counts, samply_samples
from scenario_7_targets import (S7_EXTRAS, S7_HI_RUNS, S7_TARGETS, S7_TOOLS, hotspot_roots,
                                is_hotspot, perf_script_roots, read_cpu_log, roots_tally, s7_build,
                                s7_env, s7_record_argv, s7_target_argv, s7_target_exe,
                                samply_roots)


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """Unwinding without frame pointers: a plain -O2 C program, Debian's python3, rustc."""
    if not shutil.which("bpftool"):
        die("scenario 7: bpftool not found (apt-get install bpftool)")
    b = s7_build(work)
    hz, secs, rounds = 499, cfg["s7_secs"], cfg["rounds_s7"]
    res = {"hz": hz, "secs": secs, "rounds": rounds, "commands": {}, "presym": tools.presym,
           "build": {k: b[k] for k in ("cflags", "build_cmds", "python_version",
                                       "rustc_version", "crate")},
           "targets": {}, "load": {"start": loadavg()}}
    with bpf_stats_on(res):
        res["untraced"] = s7_untraced_cost(cfg, tools, work, res["commands"])
        u_ns = res["untraced"].get("per_call")
        every = ["none", *S7_TOOLS]
        if tools.baseline:
            # The baseline build in every round, beside this one; its untraced-tick cost is
            # its own BPF program's.
            every.append(BASELINE)
            res["baseline"], res["baseline_version"] = tools.baseline, cfg.get("baseline_version")
            res["untraced_baseline"] = s7_untraced_cost(cfg, tools, work, res["commands"],
                                                        BASELINE)
        for target in S7_TARGETS:
            runs = {t: [] for t in [*every, *S7_EXTRAS, *S7_HI_RUNS]}
            for r in range(rounds):
                names = every + (S7_EXTRAS + S7_HI_RUNS if r == 0 else [])
                for tool in rotate(names, r):
                    d = fresh_dir(work / "s7" / "runs" / target / tool.replace(" ", "_")
                                  .replace("@", ""))
                    base, _, hi = tool.partition(" @")
                    u = (res["untraced_baseline"].get("per_call") if tool == BASELINE
                         else u_ns)
                    row = s7_one(base, target, int(hi) if hi else hz, d, b, tools, secs,
                                 res["commands"], u, label=tool)
                    runs[tool].append(row)
                    if row["ok"] and tool == "none":
                        log(f"s7 {target} alone round {r + 1}/{rounds}: {row['target_cpu']:.3f} s "
                            f"CPU, {row['wall']:.2f} s wall; wait4 − reported "
                            f"{1000 * row['residual']:+.1f} ms")
                    elif row["ok"]:
                        log(f"s7 {target} {tool} round {r + 1}/{rounds}: {row['samples']} samples, "
                            f"{row['share']:.1f}% complete, recorder {row['rec_cpu']:.3f} s CPU, "
                            f"{row['rss_mb']:.1f} MB, {row['bps_disk']:.1f} B/sample on disk")
                    else:
                        log(f"s7 {target} {tool} round {r + 1}/{rounds}: FAILED {row['error'][:300]}")
            res["targets"][target] = {"runs": runs}
        res["fixed"] = s7_fixed(cfg, tools, work, res["commands"])
        res["lost"] = s7_lost(cfg, b, tools, work, res["commands"], u_ns)
        res["slow"] = s7_slowdown(cfg, b, tools, work, res["commands"])
    res["load"]["end"] = loadavg()
    return res


def s7_fixed(cfg, tools: Tools, work: Path, commands: dict) -> dict:
    """The recorders' fixed cost: CPU to record `/bin/true` (start-up, loading and verifying
    BPF programs, attaching, finishing the file), which short recordings do not amortise."""
    names = ["hotspot", "hotspot fp", "perf", "samply"]
    rows = {t: [] for t in names}
    true = shutil.which("true") or "/bin/true"
    for r in range(cfg["rounds_s7"]):
        for tool in rotate(names, r):
            d = fresh_dir(work / "s7" / "fixed" / tool.replace(" ", "_"))
            argv = s7_record_argv(tools, tool, 499, d, cmd=[true])
            commands.setdefault(f"fixed cost: {tool}", argv)
            with tools.running(tool):
                run = measure(argv, workdir=d, timeout=300)
            if run.rc != 0:
                rows[tool].append({"ok": False, "error": f"rc={run.rc}: {run.stderr.strip()[-200:]!r}"})
                continue
            rows[tool].append({"ok": True, "cpu": run.cpu, "utime": run.utime,
                               "stime": run.stime, "wall": run.wall, "rss_mb": run.rss_mb})
    for t in names:
        ok = [x["cpu"] for x in rows[t] if x.get("ok")]
        if ok:
            log(f"s7 fixed cost {t}: {median(ok):.3f} s CPU recording /bin/true")
    return {"rows": rows}


def s7_lost(cfg, b: dict, tools: Tools, work: Path, commands: dict,
            untraced_ns: float | None) -> dict:
    """Lost samples at 4999 Hz, one copy of the C target per CPU, both pids recorded."""
    hz, secs, rounds = 4999, cfg["s7_lost_secs"], cfg["rounds_s7_lost"]
    names = ["hotspot", "perf"]
    rows = {t: [] for t in names}
    for r in range(rounds):
        for tool in rotate(names, r):
            d = fresh_dir(work / "s7" / "lost" / tool)
            busy = start_busy({}, secs + 60, NCPU, binary=Path(b["split7030"]))
            try:
                time.sleep(0.3)
                pids = [p.pid for p in busy]
                argv = s7_record_argv(tools, tool, hz, d, pids=pids)
                commands.setdefault(f"lost: {tool} (SIGINT after the duration)",
                                    [a for a in argv if a not in {str(p) for p in pids}
                                     ] if tool == "hotspot" else
                                    [a if a != ",".join(map(str, pids)) else "PID1,PID2"
                                     for a in argv])
                probe = BpfProbe() if tool == "hotspot" else None
                with tools.running(tool):
                    run = measure(argv, workdir=d, stop_after=secs, timeout=secs + 600,
                                  on_poll=probe.poll if probe else None)
                bpf = probe.finish() if probe else None
            finally:
                stop_all(busy)
            if run.rc not in (0, 130, -2):
                rows[tool].append({"ok": False, "error": f"rc={run.rc}: {run.stderr.strip()[-300:]!r}"})
                log(f"s7 lost {tool}: FAILED rc={run.rc}")
                continue
            if tool == "hotspot":
                info = hotspot_info(d / "capture.hsp")
                n, lost = info["counts"]["samples"], info["counts"].get("lost", 0)
                row = {"bpf": bpf_sample_stats(bpf, n, lost, untraced_ns) if bpf else None,
                       "ring_bps": (bpf["ring_bytes"] / max(n, 1)
                                    if bpf and bpf.get("ring_bytes") is not None else None)}
            else:
                n, lost = perf_counts(d / "perf.data")
                row = {"bytes": (d / "perf.data").stat().st_size}
                (d / "perf.data").unlink()
            row.update(ok=True, samples=n, lost=lost, expected=NCPU * hz * secs,
                       cpu=run.cpu, rss_mb=run.rss_mb)
            rows[tool].append(row)
            log(f"s7 lost {tool}: {n} samples, lost {lost}, cpu {run.cpu:.2f} s")
    return {"hz": hz, "secs": secs, "rounds": rounds, "rows": rows}


def s7_slowdown(cfg, b: dict, tools: Tools, work: Path, commands: dict) -> dict:
    """Throughput of the plain-built `throughput` fixture alone and under each profiler."""
    secs, rounds = cfg["s7_slow_secs"], cfg["rounds_s7_slow"]
    names = ["none", *S7_TOOLS]
    res = {"secs": secs, "rounds": rounds, "by_hz": {}}
    for hz in (499, 4999):
        rates = {n: [] for n in names}
        cpu_rates = {n: [] for n in names}
        rel = {n: [] for n in S7_TOOLS}
        cpu_rel = {n: [] for n in S7_TOOLS}
        exe = os.path.realpath(b["throughput"])
        for r in range(rounds):
            this, this_cpu = {}, {}
            for tool in rotate(names, r):
                d = fresh_dir(work / "s7" / "slow" / tool)
                cmd = [b["throughput"], f"{secs:g}"]
                argv = cmd if tool == "none" else s7_record_argv(tools, tool, hz, d, cmd=cmd)
                if tool == "samply":
                    argv = [a for a in argv if a != tools.presym]
                commands.setdefault(f"slowdown: {tool}", argv)
                with tools.running(tool):
                    run = measure(argv, workdir=d, timeout=secs * 10 + 300,
                                  env=s7_env(b, d / "cpu.log"))
                m = re.search(r"units_per_s=([0-9.]+) units=(\d+)", run.stdout)
                if run.rc != 0 or not m:
                    raise RuntimeError(f"s7 slowdown {tool}: rc={run.rc}\n{run.stdout}\n"
                                       f"{run.stderr[-3000:]}")
                this[tool] = float(m.group(1))
                rates[tool].append(this[tool])
                # Units per CPU second of the program: what the profiler costs inside it
                # (interrupts, BPF, stack copies are charged to it) without the wall-clock
                # noise of other work competing for the CPUs.
                got = read_cpu_log(d / "cpu.log", exe)
                this_cpu[tool] = int(m.group(2)) / got[0] if got and got[0] > 0 else None
                cpu_rates[tool].append(this_cpu[tool])
            for tool in S7_TOOLS:
                rel[tool].append(this[tool] / this["none"])
                if this_cpu.get(tool) and this_cpu.get("none"):
                    cpu_rel[tool].append(this_cpu[tool] / this_cpu["none"])
            log(f"s7 slowdown {hz} Hz round {r + 1}/{rounds}: " + ", ".join(
                f"{t} {this[t]:.0f}" for t in names))
        res["by_hz"][str(hz)] = {
            "rates": rates, "rel": rel,
            "slowdown": {t: [100.0 * (1 - x) for x in rel[t]] for t in S7_TOOLS},
            "cpu_rates": {t: [x for x in v if x] for t, v in cpu_rates.items()},
            "cpu_slowdown": {t: [100.0 * (1 - x) for x in cpu_rel[t]] for t in S7_TOOLS}}
    return res


def s7_untraced_cost(cfg, tools: Tools, work: Path, commands: dict,
                     tool: str = "hotspot") -> dict:
    """BPF time of a sampling tick that finds no traced task: hotspot records a process
    that only sleeps, so every call of its sampling program is for some other task
    (`tool`: this build, "hotspot", or the --baseline one)."""
    secs = cfg["s7_cal_secs"]
    d = fresh_dir(work / "s7" / ("untraced" if tool == "hotspot" else "untraced-baseline"))
    sleeper = subprocess.Popen(["sleep", f"{secs + 120:g}"])
    LIVE.add(sleeper.pid)
    try:
        argv = s7_record_argv(tools, tool, 499, d, pids=[sleeper.pid])
        commands.setdefault(f"untraced BPF cost: {tool} (a sleeping pid; SIGINT after the "
                            "duration)", [a if a != str(sleeper.pid) else "PID" for a in argv])
        probe = BpfProbe()
        run = measure(argv, workdir=d, stop_after=secs, timeout=secs + 300, on_poll=probe.poll)
        res = probe.finish()
    finally:
        stop_all([sleeper])
    st = bpf_sample_stats(res, 0)
    if run.rc not in (0, 130, -2) or not st or not st.get("cnt"):
        return {"per_call": None, "error": f"rc={run.rc}; {res.get('errors')}; "
                                           f"{run.stderr.strip()[-200:]!r}"}
    log(f"s7 untraced tick ({tool}): {st['per_call']:.0f} ns per call ({st['cnt']} calls)")
    return {"per_call": st["per_call"], "cnt": st["cnt"], "secs": secs}


def s7_one(tool: str, target: str, hz: int, d: Path, b: dict, tools: Tools, secs: float,
           commands: dict, untraced_ns: float | None = None, label: str = "") -> dict:
    """One recording of one target by one tool, and what can be read from it."""
    label = label or tool
    cmd = s7_target_argv(b, target, secs, d)
    argv = cmd if tool == "none" else s7_record_argv(tools, tool, hz, d, cmd=cmd)
    commands.setdefault(f"{target}: {label}", argv)
    probe = BpfProbe() if is_hotspot(tool) else None
    with tools.running(tool):
        run = measure(argv, workdir=d, timeout=max(secs * 20, 600),
                      on_poll=probe.poll if probe else None, env=s7_env(b, d / "cpu.log"))
    bpf = probe.finish() if probe else None
    row = {"ok": False, "wall": run.wall, "rc": run.rc, "hz": hz}
    got = read_cpu_log(d / "cpu.log", s7_target_exe(b, target))
    if run.rc != 0 or got is None:
        row["error"] = (f"rc={run.rc}" + ("" if got else ", the target reported no CPU time")
                        + f": {run.stderr.strip()[-400:]!r}")
        return row
    target_cpu, nproc = got
    row.update(ok=True, cpu_total=run.cpu, target_cpu=target_cpu, target_procs=nproc,
               rec_cpu=max(run.cpu - target_cpu, 0.0), rss_mb=run.rss_mb,
               anon_mb=run.anon_mb, file_mb=run.file_mb)
    if tool == "none":
        # What wait4 counts beyond what the target reported at exit (its teardown after the
        # library's destructor): the error the subtraction leaves in the recorders' CPU.
        row["residual"] = run.cpu - target_cpu
        return row
    files = {f.name: f.stat().st_size for f in d.iterdir()
             if f.is_file() and (f.name.startswith(("capture.hsp", "perf.data", "profile.json")))}
    row["files"] = files
    row["disk"] = sum(files.values())
    if is_hotspot(tool):
        info = hotspot_info(d / "capture.hsp")
        row["samples"], row["lost"] = info["counts"]["samples"], info["counts"].get("lost")
        unw = info.get("unwinding") or {}
        row["method"] = unw.get("method", "not reported")
        row["stack_cap"] = unw.get("stack_cap")
        procs = unw.get("processes") or []
        row["info_complete"] = (sum(p.get("complete", 0) for p in procs),
                                sum(p.get("samples", 0) for p in procs), unw.get("checked"))
        row["info_reasons"] = {}
        for p in procs:
            for r in p.get("reasons", []):
                row["info_reasons"][r["reason"]] = row["info_reasons"].get(r["reason"], 0) + r["samples"]
        roots = hotspot_roots(d / "capture.hsp")
        row["bpf"] = (bpf_sample_stats(bpf, row["samples"], row["lost"], untraced_ns)
                      if bpf else None)
        row["bpf_errors"] = (bpf or {}).get("errors")
        rb = (bpf or {}).get("ring_bytes")
        row["ring_bps"] = rb / max(row["samples"], 1) if rb is not None else None
        row["ring_reported"] = find_ring_report(info, run.stderr)
    elif tool.startswith("perf"):
        row["samples"], row["lost"] = perf_counts(d / "perf.data")
        # perf unwinds afterwards: `perf script` does the DWARF unwinding (and names frames).
        sargv = ["perf", "script", "--no-inline", "-i", str(d / "perf.data")]
        commands.setdefault(f"{target}: {label} (post-processing)", sargv)
        srun = measure(sargv, workdir=d, stdout_to=d / "script.txt", timeout=3600)
        if srun.rc != 0:
            row.update(ok=False, error=f"perf script rc={srun.rc}: {srun.stderr.strip()[-300:]!r}")
            return row
        row["post_cpu"], row["post_wall"] = srun.cpu, srun.wall
        row["post_rss_mb"] = srun.rss_mb
        roots = perf_script_roots(d / "script.txt")
        (d / "script.txt").unlink()
        # The kernel writes each sample whole into perf's ring and perf copies the ring to
        # perf.data as it is: bytes through the ring ≈ the file's size.
        row["ring_bps"] = row["disk"] / max(row["samples"], 1)
    else:
        row["samples"], row["lost"] = samply_samples(d), None
        roots = samply_roots(d)
        row["ring_bps"] = None
    reap_orphans()
    n, complete = roots_tally(roots)
    row["unwound"], row["complete"] = n, complete
    row["share"] = 100.0 * complete / n if n else 0.0
    row["roots"] = dict(sorted(roots.items(), key=lambda kv: -kv[1])[:8])
    row["per1k_ms"] = 1e6 * row["rec_cpu"] / max(row["samples"], 1)
    row["bps_disk"] = row["disk"] / max(row["samples"], 1)
    return row
