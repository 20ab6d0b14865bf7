"""Scenario 9 of tools/bench/run (issue 16): off-CPU recording under a context-switch-heavy
workload.

The `pingpong` fixture (two threads handing a turn over a futex, pinned to one CPU so every
hand-over is a context switch) runs alone, under `hotspot record`, under `hotspot record
--off-cpu` and under libbpf-tools' `offcputime` (bcc's CO-RE build; bcc's Python
`offcputime-bpfcc` needs kernel headers), the order rotating each round. Each hop does a
fixed amount of LCG work, calibrated first so that the unprofiled program switches about
110,000 times a second (the issue's "at 100,000 switches per second"); a flat-out run
(no work, ~1,000,000 switches/s here) is measured too, for information.

Measured per run: the target's throughput (round trips per second, printed by the fixture),
the recorder's CPU (user + system of the recording process minus the target's own CPU,
which the fixture prints: the recorder waits for its child, so wait4 counts both), the BPF
programs' run time and calls (kernel.bpf_stats_enabled), capture bytes per second and the
lost counts `hotspot info --json` reports.

Stdlib only, like the rest of tools/bench (the shared harness: harness.py, measure.py,
bpfstats.py, …).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from bpfstats import BpfProbe, bpf_stats_on
from harness import HOTSPOT, NCPU, fresh_dir, log, median, rotate
from measure import measure
from procs import LIVE
from profilers import hotspot_info
from tables import med_rng, verdict

TOOLS = ["none", "hotspot", "hotspot --off-cpu", "offcputime"]
TARGET_RATE = 110_000.0
OFFCPUTIME = ["/usr/sbin/offcputime", shutil.which("offcputime") or ""]


def parse(stdout: str) -> dict | None:
    """The fixture's `key=value` line."""
    m = re.search(r"round_trips_per_s=\S+.*", stdout)
    if not m:
        return None
    return {k: float(v) for k, v in (w.split("=", 1) for w in m.group(0).split())}


def own_group(argv: list) -> list:
    """argv in a session of its own whose scheduling group (autogroup) is at nice -20:
    with autogroups on, a nice value only ranks a thread within its session, so this is
    what keeps the machine's other work from preempting the measured run. `setsid` does
    not fork here (the child of Popen is no group leader): wait4 still sees argv."""
    return ["setsid", "sh", "-c", 'echo -20 > /proc/self/autogroup && exec "$@"', "sh",
            *argv]


def set_group_nice(pid: int) -> None:
    try:
        Path(f"/proc/{pid}/autogroup").write_text("-20\n")
    except OSError:
        pass


def pingpong(fx, work: Path, secs: float, cpu: int, steps: int) -> dict:
    d = fresh_dir(work / "s9" / "cal")
    argv = own_group([str(fx["pingpong"]), f"{secs:g}", str(cpu), str(steps)])
    run = measure(argv, workdir=d, timeout=secs + 60)
    got = parse(run.stdout)
    if run.rc != 0 or not got:
        raise RuntimeError(f"pingpong: rc={run.rc}\n{run.stdout}\n{run.stderr[-2000:]}")
    return got


def calibrate(fx, work: Path, cpu: int) -> tuple[int, list]:
    """LCG steps per hop for TARGET_RATE switches/s: time per switch is linear in the
    steps (a + b·steps); two points fit it, a third checks it, one more fit if needed."""
    pts = []
    for steps in (0, 4000):
        r = pingpong(fx, work, 1.0, cpu, steps)
        pts.append((steps, r["switches_per_s"]))
    steps = 0
    for _ in range(3):
        (s0, r0), (s1, r1) = pts[-2], pts[-1]
        b = (1 / r1 - 1 / r0) / (s1 - s0) if s1 != s0 else 0.0
        if b <= 0:
            break
        steps = max(0, int(round(s0 + (1 / TARGET_RATE - 1 / r0) / b)))
        r = pingpong(fx, work, 1.0, cpu, steps)
        pts.append((steps, r["switches_per_s"]))
        if abs(r["switches_per_s"] / TARGET_RATE - 1) < 0.1:
            break
    return steps, pts


def offcputime_bin() -> str | None:
    for p in OFFCPUTIME:
        if p and Path(p).is_file() and os.access(p, os.X_OK):
            return p
    return None


def offcputime_works(exe: str) -> str | None:
    """None if `offcputime 1` runs here, else its first error line."""
    r = subprocess.run([exe, "1"], text=True, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, timeout=60)
    if r.returncode == 0:
        return None
    lines = [l.strip() for l in r.stdout.splitlines() if l.strip()]
    telling = [l for l in lines if "kernel headers" in l or "rror" in l]
    return (telling or lines or [f"exit status {r.returncode}"])[0]


def one_run(tool: str, fx, d: Path, secs: float, cpu: int, steps: int, res: dict) -> dict:
    target = [str(fx["pingpong"]), f"{secs:g}", str(cpu), str(steps)]
    probe = BpfProbe()
    tracer = None
    if tool == "none":
        argv = target
    elif tool.startswith("hotspot"):
        argv = [str(HOTSPOT), "record", "-F", "499", "-o", str(d / "capture.hsp")]
        argv += ["--off-cpu"] if tool.endswith("--off-cpu") else []
        argv += ["--", *target]
    else:
        # offcputime needs the pid first: a shell that waits 1 s (offcputime loads in
        # well under that here), then execs the target under the same pid.
        argv = ["sh", "-c", 'sleep 1; exec "$@"', "sh", *target]
    # Every tool alike: the recorder and its target (offcputime: each) in a scheduling
    # group of their own at nice -20, so their figures are theirs, not the neighbours'.
    argv = own_group(argv)
    if tool == "offcputime":
        res["commands"].setdefault("offcputime", [res["offcputime"], "-p", "PID",
                                                  f"{secs + 3:g}", "  # SIGINT at the end"])
        res["commands"].setdefault("offcputime's target (PID)", argv)
    else:
        res["commands"].setdefault(tool, argv)
    if tool == "offcputime":
        # The shell is started by measure(); offcputime attaches to it from on_poll.
        def on_poll(pid, now):
            nonlocal tracer
            if tracer is None:
                tracer = subprocess.Popen([res["offcputime"], "-p", str(pid), f"{secs + 3:g}"],
                                          stdout=open(d / "offcputime.out", "w"),
                                          stderr=subprocess.STDOUT, start_new_session=True)
                set_group_nice(tracer.pid)
                LIVE.add(tracer.pid)
            probe.poll(tracer.pid, now)
    else:
        def on_poll(pid, now):
            if tool != "none":
                probe.poll(pid, now)
    ctxt0 = ctxt()
    run = measure(argv, workdir=d, timeout=secs + 120, on_poll=on_poll)
    ctxt1 = ctxt()
    row = {"tool": tool, "rc": run.rc}
    extra_cpu = 0.0
    if tracer is not None:
        tracer.send_signal(signal.SIGINT)
        try:
            t0 = time.monotonic()
            _, status, ru = os.wait4(tracer.pid, 0)
            extra_cpu = ru.ru_utime + ru.ru_stime
            row["tracer_wall"] = time.monotonic() - t0
        finally:
            LIVE.discard(tracer.pid)
    got = parse(run.stdout)
    if run.rc != 0 or not got:
        err = (run.stderr.strip() or run.stdout.strip()).splitlines()
        row.update(ok=False, error=(err[0] if err else f"exit status {run.rc}")[:300])
        probe.finish()
        return row
    bpf = probe.finish()
    row.update(ok=True, **got, machine_switches=ctxt1 - ctxt0, bpf=bpf["progs"],
               bpf_errors=bpf["errors"])
    if tool.startswith("hotspot"):
        row["recorder_cpu"] = max(run.cpu - got["cpu_s"], 0.0)
        cap = d / "capture.hsp"
        row["bytes"] = cap.stat().st_size
        info = hotspot_info(cap)
        row["lost"] = {k: v for k, v in info.get("counts", {}).items() if "lost" in k}
        # Until `info --json` counts lost off-CPU records itself: a LostOffCpu record is
        # only written when the kernel dropped some (each counts at least one).
        size = info.get("size") or {}
        kinds = {x["kind"]: x.get("records", 0) for x in size.get("records", [])}
        if "lost_off_cpu" not in row["lost"]:
            row["lost"]["LostOffCpu records"] = kinds.get("LostOffCpu", 0)
        row["samples"] = info.get("counts", {}).get("samples")
    elif tool == "offcputime":
        row["recorder_cpu"] = extra_cpu
        row["bytes"] = (d / "offcputime.out").stat().st_size
    return row


def ctxt() -> int:
    """Context switches of the whole machine so far (/proc/stat)."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("ctxt "):
            return int(line.split()[1])
    return 0


def run(cfg, fx, tools, work: Path) -> dict:
    """Context switches: pingpong with and without --off-cpu, and libbpf-tools' offcputime."""
    secs, rounds = cfg["s9_secs"], cfg["rounds_s9"]
    cpu = NCPU - 1
    res = {"secs": secs, "rounds": rounds, "cpu": cpu, "commands": {}, "rows": {},
           "offcputime": offcputime_bin(), "bcc_python": None}
    py = Path("/usr/sbin/offcputime-bpfcc")
    if py.exists():
        res["bcc_python"] = offcputime_works(str(py)) or "runs"
    if res["offcputime"]:
        why = offcputime_works(res["offcputime"])
        if why:
            res["offcputime_error"] = why
            res["offcputime"] = None
    names = [t for t in TOOLS if t != "offcputime" or res["offcputime"]]
    steps, pts = calibrate(fx, work, cpu)
    res["calibration"] = {"steps": steps, "points": pts}
    log(f"s9: {steps} LCG steps per hop for ~{TARGET_RATE:.0f} switches/s ({pts})")
    with bpf_stats_on(res):
        for setting, st in (("paced", steps), ("flat-out", 0)):
            rows = {t: [] for t in names}
            n_rounds = rounds if setting == "paced" else max(1, rounds // 2)
            for r in range(n_rounds):
                for tool in rotate(names, r):
                    d = fresh_dir(work / "s9" / tool.replace(" ", "_"))
                    row = one_run(tool, fx, d, secs, cpu, st, res)
                    rows[tool].append(row)
                    log(f"s9 {setting} {tool} round {r + 1}/{n_rounds}: " + (
                        f"{row['switches_per_s']:.0f} switches/s"
                        + (f", recorder {row['recorder_cpu']:.3f} s CPU"
                           if "recorder_cpu" in row else "")
                        + (f", {row['bytes']} B" if "bytes" in row else "")
                        + (f", lost {row['lost']}" if "lost" in row else "")
                        if row["ok"] else f"FAILED {row['error']}"))
            res["rows"][setting] = {"steps": st, "by_tool": rows}
    return res


# ---------------------------------------------------------------------------------------
# Writing the results


def _ok(rows: dict, tool: str) -> list[dict]:
    return [x for x in rows.get(tool, []) if x.get("ok")]


def _rel(rows: dict, tool: str, base: str = "none") -> list[float]:
    """Throughput relative to the same round's `base` run."""
    a, b = rows.get(tool, []), rows.get(base, [])
    return [x["round_trips_per_s"] / y["round_trips_per_s"] for x, y in zip(a, b)
            if x.get("ok") and y.get("ok")]


def _bpf_off(row: dict, plain: set) -> tuple[int, int]:
    """(run_time_ns, run_cnt) of the programs a run loaded that plain `hotspot record`
    does not load (`plain`: their names): what --off-cpu adds, or all of offcputime's."""
    progs = [p for p in row.get("bpf", []) if p["name"] not in plain]
    return (sum(p.get("run_time_ns") or 0 for p in progs),
            sum(p.get("run_cnt") or 0 for p in progs))


def _plain_progs(rows: dict) -> set:
    return {p["name"] for x in _ok(rows, "hotspot") for p in x.get("bpf", [])}


def _per_switch(row: dict, plain: set) -> float | None:
    ns, _ = _bpf_off(row, plain)
    sw = row.get("switches") or 0
    return ns / sw if sw and ns else None


def _lost(row: dict) -> int:
    return sum(v for v in (row.get("lost") or {}).values() if isinstance(v, int))


def _slowdown_verdict(sd: list, alone: list) -> str:
    """Met when the median and every round are under 5%; when the unprofiled runs alone
    vary by 5% or more, a miss is not resolvable and says so."""
    noise = 100.0 * (max(alone) / min(alone) - 1) if alone else 0.0
    m = median(sd)
    if m < 5 and max(sd) < 5:
        return verdict(True, "median and every round")
    if noise >= 5:
        return (f"within noise: the unprofiled runs alone vary by {noise:.1f}% "
                f"(median slowdown {m:.1f}%)")
    return verdict(False, f"median {m:.1f}%, a round reached {max(sd):.1f}%")


def summary_rows(w, s9, cfg) -> None:
    paced = s9["rows"].get("paced")
    if not paced:
        return
    rows = paced["by_tool"]
    hot = "hotspot --off-cpu"
    rate = median([x["switches_per_s"] for x in _ok(rows, "none")])
    sd = [100 * (1 - x) for x in _rel(rows, hot)]
    sd_plain = [100 * (1 - x) for x in _rel(rows, "hotspot")]
    sd_vs = [100 * (1 - x) for x in _rel(rows, hot, "hotspot")]
    oct_ = [100 * (1 - x) for x in _rel(rows, "offcputime")] if "offcputime" in rows else []
    if sd:
        m = median(sd)
        w(f"| 9 | target slowdown from `--off-cpu`, ping-pong at {rate:,.0f} switches/s "
          f"(1 − throughput ÷ unprofiled; plain `record`: {med_rng(sd_plain, '{:.1f}', '%')}, "
          f"`--off-cpu` ÷ plain: {med_rng(sd_vs, '{:.1f}', '%')}) | "
          f"{med_rng(sd, '{:.1f}', '%')} | — | — | "
          + (f"offcputime: {med_rng(oct_, '{:.1f}', '%')}" if oct_ else
             "offcputime: did not run") + " | < 5% | "
          + _slowdown_verdict(sd, [x["round_trips_per_s"] for x in _ok(rows, "none")])
          + " |")
    hr = _ok(rows, hot)
    if hr:
        lost = [_lost(x) for x in hr]
        w(f"| 9 | lost events with `--off-cpu` (ping-pong, {rate:,.0f} switches/s) | "
          f"{max(lost)} (most in a round) | — | — | — | 0 | "
          + verdict(max(lost) == 0) + " |")
        bps = [x["bytes"] / x["seconds"] / 1000 for x in hr]
        plain = [x["bytes"] / x["seconds"] / 1000 for x in _ok(rows, "hotspot")]
        w(f"| 9 | capture growth with `--off-cpu` (ping-pong, {rate:,.0f} switches/s) | "
          f"{med_rng(bps, '{:.1f}', ' KB/s')} | — | — | "
          f"without `--off-cpu`: {med_rng(plain, '{:.1f}', ' KB/s')} | < 50 KB/s | "
          + verdict(max(bps) < 50) + " |")
        plain = _plain_progs(rows)
        per = [p for p in (_per_switch(x, plain) for x in hr) if p is not None]
        ot = [p for p in (_per_switch(x, plain) for x in _ok(rows, "offcputime"))
              if p is not None]
        cpu = [100 * x["recorder_cpu"] / x["seconds"] for x in hr]
        w(f"| 9 | BPF time per target switch / recorder CPU with `--off-cpu` | "
          f"{med_rng(per, '{:.0f}', ' ns') if per else 'not measured'} / "
          f"{med_rng(cpu, '{:.1f}', '% of a CPU')} | — | — | offcputime: "
          + (f"{med_rng(ot, '{:.0f}', ' ns')}" if ot else "did not run")
          + " | (information) | — |")


def details(w, s9, cfg, work: Path) -> None:
    w("### 9. Off-CPU recording under 100,000+ context switches a second\n")
    cal = s9.get("calibration", {})
    w(f"`pingpong` (two threads handing a turn over a futex, both pinned to CPU {s9['cpu']} "
      f"so that every hand-over is a context switch) runs {s9['secs']:g} s alone, under "
      f"`hotspot record -F 499`, under `hotspot record -F 499 --off-cpu` and under "
      f"libbpf-tools' `offcputime -p PID`, the order rotating each round ({s9['rounds']} "
      f"round(s); flat-out: fewer). *Paced*: each hop first does {cal.get('steps', '?')} LCG "
      f"steps, calibrated so the unprofiled program switches about {TARGET_RATE:,.0f} times "
      f"a second (calibration points, steps → switches/s: "
      + ", ".join(f"{s} → {r:,.0f}" for s, r in cal.get("points", [])) + "). "
      "*Flat-out*: no work, as fast as the futex goes. Throughput = the fixture's round "
      "trips per second; switches = its threads' voluntary context switches "
      "(`getrusage`). Recorder CPU = user + system time of the recording process minus "
      "the target's own (the recorder waits for its child, so `wait4` counts both); for "
      "offcputime, its own `wait4`. BPF = `kernel.bpf_stats_enabled` run time of the "
      "programs `--off-cpu` adds (those plain `hotspot record` does not load; for "
      "offcputime all of its own), divided by the target's switches; per call = that run "
      "time ÷ its calls (a sched_switch program runs on every switch of the machine, "
      "traced or not). Every run (the recorder with its target; offcputime and the target "
      "each) is in a session whose scheduling group is at nice -20 (`setsid`, "
      "`/proc/self/autogroup`: with autogroups a nice value only counts within a "
      "session), so the machine's other work hardly preempts it. Lost = every `lost*` count of "
      "`hotspot info --json` (CPU samples, mapping events) plus, for off-CPU records, the "
      "number of `LostOffCpu` records (each stands for at least one record the kernel had "
      "no ring room for). Bytes = the capture "
      "(hotspot) or the printed report (offcputime), per second of the target's run.\n")
    why = s9.get("offcputime_error")
    if why or not s9.get("offcputime"):
        w(f"**offcputime did not run here**: {why or 'not installed (apt-get install libbpf-tools)'}.\n")
    if s9.get("bcc_python"):
        w(f"bcc's Python `offcputime-bpfcc` (bpfcc-tools): "
          + ("runs." if s9["bcc_python"] == "runs" else
             f"**does not run here**: `{s9['bcc_python']}` (it compiles its BPF program at "
             f"start and needs the running kernel's headers, which this VM's kernel "
             f"does not ship); the CO-RE build of the same tool is measured instead.") + "\n")
    for setting, block in s9["rows"].items():
        rows = block["by_tool"]
        w(f"**{setting}** ({block['steps']} LCG steps per hop):\n")
        w("| tool | switches/s | throughput vs alone | recorder CPU | BPF ns per switch | "
          "BPF ns per call (calls) | bytes/s | samples | lost |")
        w("|---|---|---|---|---|---|---|---|---|")
        for tool, xs in rows.items():
            ok = [x for x in xs if x.get("ok")]
            if not ok:
                err = next((x.get("error") for x in xs), "")
                w(f"| {tool} | failed: {err} | | | | | | | |")
                continue
            rel = _rel(rows, tool) if tool != "none" else []
            plain = _plain_progs(rows) if tool != "hotspot" else set()
            per = [p for p in (_per_switch(x, plain) for x in ok) if p is not None
                   and tool != "hotspot"]
            calls = [(_bpf_off(x, plain)[0] / _bpf_off(x, plain)[1], _bpf_off(x, plain)[1])
                     for x in ok if _bpf_off(x, plain)[1] and tool != "hotspot"]
            def c(vals, fmt, unit=""):
                return med_rng(vals, fmt, unit) if vals else "—"
            w(f"| {tool} | {c([x['switches_per_s'] for x in ok], '{:,.0f}')} | "
              f"{c(rel, '{:.4f}')} | "
              f"{c([x['recorder_cpu'] for x in ok if 'recorder_cpu' in x], '{:.3f}', ' s')} | "
              f"{c(per, '{:.0f}')} | "
              + (f"{median([a for a, _ in calls]):.0f} ({median([b for _, b in calls]):,.0f})"
                 if calls else "—") + " | "
              f"{c([x['bytes'] / x['seconds'] for x in ok if 'bytes' in x], '{:,.0f}')} | "
              f"{c([x['samples'] for x in ok if x.get('samples') is not None], '{:,.0f}')} | "
              f"{c([_lost(x) for x in ok if 'lost' in x], '{:.0f}')} |")
        w("")
        progs = {}
        for x in _ok(rows, "hotspot --off-cpu")[:1] + _ok(rows, "offcputime")[:1]:
            for p in x.get("bpf", []):
                progs[f"{x['tool']}: {p['name']}"] = p
        if progs:
            w("BPF programs, round 1: " + "; ".join(
                f"{k} {p.get('run_cnt') or 0:,} calls, "
                f"{(p.get('run_time_ns') or 0) / max(p.get('run_cnt') or 1, 1):.0f} ns/call"
                for k, p in progs.items()) + ".\n")
