"""Scenario 8 (issue 14): a build-like run of short-lived processes, a shell loop starting a
few hundred processes a second: how many user samples each profiler names."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from harness import fresh_dir, log, median, ranges_overlap, rotate
from measure import measure
from procs import LIVE
from profilers import Tools, hotspot_info
from tables import med_rng

S8_TOOLS = ["hotspot", "perf"]


def s8_workload(fx: dict, runs: int) -> list[str]:
    """A shell that waits for the recorder to attach, then starts `runs` pairs of short
    processes: `busy` for 3 ms (a program with symbols) and Debian's stripped
    `sha256sum` on a small file, a few hundred processes a second."""
    loop = (f"sleep 1; i=0; while [ $i -lt {runs} ]; do {fx['busy']} 0.003; "
            f"sha256sum /etc/services >/dev/null; i=$((i+1)); done")
    return ["sh", "-c", loop]


def s8_hotspot_named(cap: Path) -> tuple[int, int, dict]:
    """(user-mode samples, of them with a named leaf, unnamed ones by module), from
    `info --json`'s coverage: a name is a real function name (not a `module+0x…`
    placeholder)."""
    cov = hotspot_info(cap)["coverage"]
    user = [m for m in cov["modules"] if m["kind"] not in ("kernel", "kernel-module")]
    unnamed = {m["module"]: m["samples"] - m["named"] for m in user
               if m["samples"] > m["named"]}
    return sum(m["samples"] for m in user), sum(m["named"] for m in user), unnamed


def s8_perf_named(data: Path) -> tuple[int, int, dict]:
    """(user-mode samples, of them with a named leaf, unnamed ones by DSO) from
    `perf script`: one line per sample (call graphs hidden), the leaf's symbol and DSO."""
    r = subprocess.run(["perf", "script", "-i", str(data), "-F", "ip,sym,dso", "-G"],
                       text=True, capture_output=True)
    user = named = 0
    unnamed: dict[str, int] = {}
    for line in r.stdout.splitlines():
        line = line.strip()
        if not line or "[kernel" in line:
            continue
        user += 1
        parts = line.split(None, 1)
        rest = parts[1] if len(parts) > 1 else "[unknown] ([unknown])"
        sym, _, dso = rest.rpartition(" (")
        if sym and not sym.startswith("[unknown]"):
            named += 1
        else:
            name = Path(dso.rstrip(")")).name or "[unknown]"
            unnamed[name] = unnamed.get(name, 0) + 1
    return user, named, unnamed


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """Short-lived processes: a shell loop starting a few hundred processes a second."""
    hz, runs, rounds = 499, cfg["s8_runs"], cfg["rounds_s8"]
    res = {"hz": hz, "runs": runs, "processes": 2 * runs, "rounds": rounds,
           "commands": {}, "rows": {t: [] for t in S8_TOOLS}}
    for r in range(rounds):
        for tool in rotate(S8_TOOLS, r):
            d = fresh_dir(work / "s8" / tool)
            target = subprocess.Popen(s8_workload(fx, runs), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
            LIVE.add(target.pid)
            argv = tools.record_cmd(tool, hz, d, pid=target.pid)
            res["commands"].setdefault(tool, argv + ["   # PID: " + " ".join(
                s8_workload({"busy": "$W/fixtures/busy"}, runs))])
            t0 = time.monotonic()
            try:
                with tools.running(tool):
                    run = measure(argv, workdir=d, timeout=600)
            finally:
                target.wait()
                LIVE.discard(target.pid)
            wall = time.monotonic() - t0
            if run.rc != 0:
                res["rows"][tool].append({"ok": False, "error": run.stderr.strip()[-300:]})
                log(f"s8 {tool} round {r + 1}/{rounds}: FAILED {run.stderr.strip()[-300:]}")
                continue
            samples, lost = tools.samples(tool, d)
            if tool == "hotspot":
                info = hotspot_info(d / "capture.hsp")
                lost_maps = info["counts"].get("lost_mappings", 0)
                user, named, unnamed = s8_hotspot_named(d / "capture.hsp")
            else:
                lost_maps = None
                user, named, unnamed = s8_perf_named(d / "perf.data")
            row = {"ok": True, "samples": samples, "lost": lost, "lost_maps": lost_maps,
                   "user": user, "named": named, "unnamed": unnamed,
                   "share": 100.0 * named / user if user else 0.0,
                   "cpu": run.cpu, "wall": wall, "rss_mb": run.rss_mb,
                   "per1k_samples_ms": 1e6 * run.cpu / max(samples, 1),
                   "per1k_procs_ms": 1e6 * run.cpu / res["processes"],
                   "procs_per_s": res["processes"] / max(wall - 1.0, 0.1)}
            res["rows"][tool].append(row)
            log(f"s8 {tool} round {r + 1}/{rounds}: {samples} samples ({lost} lost"
                + (f", {lost_maps} mapping events lost" if lost_maps is not None else "")
                + f"), {named}/{user} user samples named ({row['share']:.1f}%), "
                f"recorder {run.cpu:.3f} s CPU, {row['procs_per_s']:.0f} processes/s")
    return res


def summary_rows(w, s8, cfg) -> None:
    ok = {t: [x for x in s8["rows"][t] if x.get("ok")] for t in S8_TOOLS}
    if not ok["hotspot"] or not ok["perf"]:
        w(f"| 8 | build-like run | " + "; ".join(
            f"{t}: failed" for t in S8_TOOLS if not ok[t]) + " | — | — | — | — | — | **goal missed** |")
        return
    h, p = ok["hotspot"], ok["perf"]
    hs, ps = [x["share"] for x in h], [x["share"] for x in p]
    met = min(hs) >= max(ps) or median(hs) >= median(ps)
    w(f"| 8 | user samples with a named leaf, build-like run ({s8['processes']} short "
      f"processes, ~{median([x['procs_per_s'] for x in h]):.0f}/s, @ {s8['hz']} Hz) | "
      f"{med_rng(hs, '{:.1f}', '%')} | {med_rng(ps, '{:.1f}', '%')} (`-g`) | — | "
      f"hotspot − perf = {median(hs) - median(ps):+.1f} points | ≥ perf's | "
      + ("met" if met else "**goal missed**")
      + ("" if not ranges_overlap(hs, ps) else " (within noise)") + " |")
    w(f"| 8 | recorder CPU per 1000 samples / per 1000 processes (build-like) | "
      f"{med_rng([x['per1k_samples_ms'] for x in h], '{:.1f}', ' ms')} / "
      f"{med_rng([x['per1k_procs_ms'] for x in h], '{:.1f}', ' ms')} | "
      f"{med_rng([x['per1k_samples_ms'] for x in p], '{:.1f}', ' ms')} / "
      f"{med_rng([x['per1k_procs_ms'] for x in p], '{:.1f}', ' ms')} | — | "
      f"{median([x['per1k_samples_ms'] for x in h]) / max(median([x['per1k_samples_ms'] for x in p]), 1e-9):.2f}× perf's | "
      f"(information) | — |")
    lost = [x["lost"] or 0 for x in h]
    maps = [x["lost_maps"] or 0 for x in h]
    w(f"| 8 | lost samples / lost mapping events (build-like) | {max(lost)} / {max(maps)} "
      f"(most in a round) | {max(x['lost'] or 0 for x in p)} / — | — | — | 0 | "
      + ("met" if max(lost) == 0 and max(maps) == 0 else "**goal missed**") + " |")


def details(w, s8, cfg, work: Path) -> None:
    w("### 8. Short-lived processes (build-like)\n")
    w(f"A shell started alone waits 1 s, then runs `busy 0.003` (a fixture with symbols) and "
      f"Debian's stripped `sha256sum /etc/services`, {s8['runs']} times each: "
      f"{s8['processes']} processes that live for milliseconds. Each profiler attaches to the "
      f"shell's pid (following its children) at {s8['hz']} Hz and stops when it exits. "
      f"*Named* = a user-mode sample whose leaf has a real function name: hotspot's "
      f"`info --json` coverage (a `module+0x…` placeholder does not count), perf's "
      f"`perf script -F ip,sym,dso -G` (anything but `[unknown]`). CPU = user + system time "
      f"of the profiler process from `wait4`. {s8['rounds']} round(s). The two sample "
      f"differently: hotspot takes every CPU's timer tick that hits a traced task, perf "
      f"(`-p`, inherited per-task `cpu-clock` counters in frequency mode) samples each "
      f"process on its own clock, so a process living about 1 ms (`sha256sum` here) is "
      f"rarely sampled by perf at all; the shares are over different sets of samples.\n")
    w("| tool | samples | user samples | named | lost | lost mapping events | recorder CPU | "
      "per 1000 samples | per 1000 processes | processes/s | peak RSS |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    for t in S8_TOOLS:
        ok = [x for x in s8["rows"][t] if x.get("ok")]
        if not ok:
            w(f"| {t} | failed | | | | | | | | | |")
            continue
        def col(k, fmt="{:.0f}", unit=""):
            return med_rng([x[k] for x in ok], fmt, unit)
        w(f"| {t} | {col('samples')} | {col('user')} | {col('share', '{:.1f}', '%')} | "
          f"{col('lost')} | " + (col('lost_maps') if t == "hotspot" else "—") + " | "
          f"{col('cpu', '{:.3f}', ' s')} | {col('per1k_samples_ms', '{:.1f}', ' ms')} | "
          f"{col('per1k_procs_ms', '{:.1f}', ' ms')} | {col('procs_per_s')} | "
          f"{col('rss_mb', '{:.1f}', ' MB')} |")
    w("")
    w("Unnamed user samples by module, round 1 (a stripped binary has no names for either "
      "tool; a module missing from a tool's list had all its samples named, or none taken):\n")
    for t in S8_TOOLS:
        ok = [x for x in s8["rows"][t] if x.get("ok")]
        if ok:
            un = ok[0].get("unnamed") or {}
            w(f"- {t}: " + (", ".join(f"{m} {n}" for m, n in
                                       sorted(un.items(), key=lambda kv: -kv[1]))
                            or "none"))
    w("")
