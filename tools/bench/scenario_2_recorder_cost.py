"""Scenario 2 (issue 7): the recorder's own cost, CPU and peak RSS of each profiler attached
by pid to the `busy` fixture. With --baseline, the baseline hotspot build is one more tool
in every round, and the summary compares the two builds' CPU per sample."""

from __future__ import annotations

import time
from pathlib import Path

from harness import fresh_dir, log, median, ranges_overlap, rotate
from measure import measure
from procs import start_busy, stop_all
from profilers import BASELINE, PEERS_RUN, Tools
from tables import baseline_name, before_after_row, med_rng, verdict


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """CPU (user+sys) and peak RSS of the recording process, attached by pid to `busy`."""
    secs, rounds = cfg["s2_secs"], cfg["rounds_s2"]
    res = {"secs": secs, "rounds": rounds, "by_hz": {}, "commands": {}}
    names = list(PEERS_RUN)
    if tools.baseline:
        names.append(BASELINE)
        res["baseline"], res["baseline_version"] = tools.baseline, cfg.get("baseline_version")
    for hz in (499, 4999):
        rows = {t: [] for t in names}
        for r in range(rounds):
            for tool in rotate(names, r):
                d = fresh_dir(work / "s2" / tool.replace(" ", "_"))
                busy = start_busy(fx, secs + 30)
                try:
                    time.sleep(0.3)
                    argv = tools.record_cmd(tool, hz, d, pid=busy[0].pid)
                    res["commands"].setdefault(tool, [a if a != str(busy[0].pid) else "PID"
                                                      for a in argv])
                    with tools.running(tool):
                        run = measure(argv, workdir=d, stop_after=secs, timeout=secs + 300)
                finally:
                    stop_all(busy)
                if run.rc not in (0, 130, -2):
                    raise RuntimeError(f"{tool}: rc={run.rc}\n{run.stderr[-3000:]}")
                n, _ = tools.samples(tool, d)
                rows[tool].append({"cpu": run.cpu, "utime": run.utime, "stime": run.stime,
                                   "rss_mb": run.rss_mb, "anon_mb": run.anon_mb,
                                   "file_mb": run.file_mb, "samples": n, "wall": run.wall,
                                   "cpu_per_1k_ms": 1000.0 * run.cpu / max(n, 1) * 1000.0})
                log(f"s2 {hz} Hz {tool}: {n} samples, cpu {run.cpu:.3f} s, "
                    f"rss {run.rss_mb:.1f} MB")
        res["by_hz"][hz] = rows
    return res


def tools_of(s2) -> list[str]:
    """The tools of the run: the peers, and the baseline build if there was one."""
    return PEERS_RUN + ([BASELINE] if s2.get("baseline") else [])


def marginal(s2, tool) -> float:
    lo, hi = s2["by_hz"][499][tool], s2["by_hz"][4999][tool]
    dc = median([x["cpu"] for x in hi]) - median([x["cpu"] for x in lo])
    dn = median([x["samples"] for x in hi]) - median([x["samples"] for x in lo])
    return 1e6 * dc / dn if dn > 0 else float("nan")


def summary_rows(w, s2, cfg) -> None:
    for hz in (499, 4999):
        rows = s2["by_hz"][hz]
        c = {t: [x["cpu_per_1k_ms"] for x in rows[t]] for t in PEERS_RUN}
        ratio = median(c["hotspot"]) / median(c["samply"])
        ok = ratio <= 0.5
        half = [0.5 * x for x in c["samply"]]
        noise = (" (within noise: ranges overlap with half of samply's)"
                 if ranges_overlap(c["hotspot"], half) else "")
        w(f"| 2 | recorder CPU per 1000 samples @ {hz} Hz | {med_rng(c['hotspot'], '{:.1f}', ' ms')} | "
          f"{med_rng(c['perf'], '{:.1f}', ' ms')} | {med_rng(c['samply'], '{:.1f}', ' ms')} | "
          f"{ratio:.2f}× samply's | ≤ 0.5× samply's | {verdict(ok)}{noise} |")
    for hz in (499, 4999):
        rows = s2["by_hz"][hz]
        m = {t: [x["rss_mb"] for x in rows[t]] for t in PEERS_RUN}
        ok = max(m["hotspot"]) < 30
        when = ("every round" if ok or min(m["hotspot"]) >= 30 else "in at least one round")
        w(f"| 2 | recorder peak RSS @ {hz} Hz | {med_rng(m['hotspot'], '{:.1f}', ' MB')} | "
          f"{med_rng(m['perf'], '{:.1f}', ' MB')} | {med_rng(m['samply'], '{:.1f}', ' MB')} | "
          f"{median(m['hotspot']) / median(m['samply']):.2f}× samply's | < 30 MB | "
          f"{verdict(ok, when)} |")
    if s2.get("baseline"):
        for hz in (499, 4999):
            now, before = s2["by_hz"][hz]["hotspot"], s2["by_hz"][hz][BASELINE]
            extra = (f"; peak RSS {median([x['rss_mb'] for x in now]):.1f} MB, baseline "
                     f"{median([x['rss_mb'] for x in before]):.1f} MB")
            if hz == 4999:
                extra += (f"; marginal {marginal(s2, 'hotspot'):.1f} ms per 1000 extra samples, "
                          f"baseline {marginal(s2, BASELINE):.1f} ms")
            before_after_row(w, 2, f"recorder CPU per 1000 samples @ {hz} Hz",
                             [x["cpu_per_1k_ms"] for x in now],
                             [x["cpu_per_1k_ms"] for x in before], baseline_name(s2),
                             "{:.1f}", " ms", extra)


def details(w, s2, cfg, work: Path) -> None:
    w("### 2. Recorder cost\n")
    w(f"`busy` runs alone; each profiler attaches to its pid, records {s2['secs']:g} s and "
      f"is stopped with SIGINT (Ctrl-C). CPU = user + system time of the profiler process "
      f"(and any child it waited for), from `wait4`; peak RSS = its `VmHWM`. Samples = "
      f"what each wrote: `hotspot info --json` (`samples`), `perf report --stats` "
      f"(SAMPLE events), samply's profile (sum of its threads' sample counts). hotspot "
      f"names frames (DWARF) while recording and embeds the names, so its CPU includes "
      f"symbolisation; perf and samply (without `--presymbolicate`) leave it for later. "
      f"{s2['rounds']} rounds.\n")
    w("| Hz | tool | samples | CPU (user+sys) | CPU per 1000 samples | peak RSS | "
      "of which anonymous / file-backed (polled peaks) |")
    w("|---|---|---|---|---|---|---|")
    for hz in (499, 4999):
        for t in tools_of(s2):
            rs = s2["by_hz"][hz][t]
            w(f"| {hz} | {t} | {med_rng([x['samples'] for x in rs], '{:.0f}')} | "
              f"{med_rng([x['cpu'] for x in rs], '{:.3f}', ' s')} | "
              f"{med_rng([x['cpu_per_1k_ms'] for x in rs], '{:.1f}', ' ms')} | "
              f"{med_rng([x['rss_mb'] for x in rs], '{:.1f}', ' MB')} | "
              f"{median([x['anon_mb'] for x in rs]):.1f} / "
              f"{median([x['file_mb'] for x in rs]):.1f} MB |")
    w("")
    w("CPU per 1000 samples includes each tool's fixed costs (start-up, attach, "
      "finishing the file), which a short recording does not amortise. The marginal cost, "
      "(median CPU @ 4999 Hz − median CPU @ 499 Hz) ÷ (median samples @ 4999 Hz − median "
      "samples @ 499 Hz), separates the two (information, not a goal): " + "; ".join(
          f"{t} {marginal(s2, t):.1f} ms per 1000 samples" for t in tools_of(s2)) + ".\n")
