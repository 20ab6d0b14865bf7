"""Scenario 11 of tools/bench/run (issue 28): the flight recorder, `hotspot record -a --keep
30m -o DIR`, beside perf's `perf record -a --switch-output`, on an "idle" box at the default
rate and on a busy one (two busy loops on the 2 CPUs, -F 4999).

The two recorders run at the same time (side by side: the same load for both), each
started here and stopped with SIGINT at the end. Polled once a second:
- CPU: hotspot's supervisor (utime + stime + cutime + cstime of /proc/PID/stat: the
  segment recorders it has reaped) plus its live segment recorder; perf's own. The totals
  are wait4's after the stop. Each jump of the supervisor's cutime + cstime is one
  finished segment recorder's whole CPU, so CPU per segment pairs with that segment's
  samples (`hotspot info --json SEG`): a least-squares line gives the fixed cost of a
  segment and the cost per sample.
- RSS: the live segment recorder's VmHWM (each segment is a new process), the
  supervisor's and perf's VmRSS; peaks per window (5 minutes in a full run).
- Bytes: every segment file's size (a file the budget removes keeps its last size), so
  bytes per hour count what was written, not what is left.
- The machine: load average and CPU busy (/proc/stat), beside the figures: the box is
  shared, so "idle" is the load of whatever else ran.
After the idle phase the recorders are stopped and a middle window of the history (10 of
30 minutes in a full run) is cut with `hotspot snapshot DIR --from --to -o x.hsp` and
`hotspot report DIR --from --to`, timed (the first round after dropping the page cache).
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import time
from pathlib import Path

from harness import HOTSPOT, NCPU, fresh_dir, log, median
from measure import measure
from procs import LIVE, kill_tree, start_busy, stop_all
from profilers import perf_counts
from tables import med_rng, verdict

TICK = os.sysconf("SC_CLK_TCK")


def _stat(pid: int) -> tuple[float, float] | None:
    """(own CPU, reaped children's CPU) of pid in seconds, from /proc/PID/stat."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            st = f.read()
        v = st[st.rindex(")") + 2:].split()
        return (int(v[11]) + int(v[12])) / TICK, (int(v[13]) + int(v[14])) / TICK
    except (OSError, ValueError, IndexError):
        return None


def _status_kb(pid: int, key: str) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (OSError, ValueError):
        return []


def _cpu_jiffies() -> tuple[int, int]:
    v = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    return sum(v[:8]), v[3] + v[4]


def _sizes(d: Path, seen: dict) -> int:
    """Updates seen (file name → last size) with d's files; returns the bytes now in d."""
    now = 0
    with contextlib.suppress(OSError):
        for e in os.scandir(d):
            with contextlib.suppress(OSError):
                if e.is_file():
                    s = e.stat().st_size
                    seen[e.name] = s
                    now += s
    return now


def _start(argv, d: Path, name: str) -> subprocess.Popen:
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                         stdout=open(d / f"{name}.stdout", "wb"),
                         stderr=open(d / f"{name}.stderr", "wb"))
    LIVE.add(p.pid)
    return p


def _stop(p: subprocess.Popen, timeout: float = 180) -> tuple[int, float]:
    """SIGINT, then wait4: (exit code, CPU of the process and every child it reaped)."""
    p.send_signal(signal.SIGINT)
    t0 = time.monotonic()
    try:
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                p.returncode = os.waitstatus_to_exitcode(status)
                return p.returncode, ru.ru_utime + ru.ru_stime
            if time.monotonic() - t0 > timeout:
                kill_tree(p.pid)
                raise RuntimeError(f"{p.args[0]} did not stop within {timeout:g} s of SIGINT")
            time.sleep(0.05)
    finally:
        LIVE.discard(p.pid)


def phase(name: str, cfg, fx, work: Path, hz: int, secs: float, window: float,
          busy: int, res: dict) -> dict:
    """Both recorders side by side for secs; polled every second."""
    base = fresh_dir(work / "s11" / name)
    hdir, pdir = base / "history", base / "perf"
    pdir.mkdir()
    seg = cfg["s11_segment"]
    keep_files = max(1, round(cfg["s11_keep_secs"] / seg))
    h_argv = [str(HOTSPOT), "record", "-a", "-F", str(hz), "--keep", f"{cfg['s11_keep_secs']:g}s",
              "--segment", f"{seg:g}s", "-o", str(hdir)]
    # -N: no copies of the binaries into ~/.debug (the build-id cache); the build-ids
    # still go into each file's header. -g: frame pointers, perf's default call graph.
    p_argv = ["perf", "record", "-a", "-e", "cpu-clock", "-g", "-F", str(hz), "-N",
              f"--switch-output={seg:g}s", f"--switch-max-files={keep_files}",
              "-o", str(pdir / "perf.data")]
    res["commands"].setdefault(f"hotspot ({name})", h_argv)
    res["commands"].setdefault(f"perf ({name})", p_argv)
    loops = start_busy(fx, secs + 600, n=busy) if busy else []
    polls, jumps = [], []
    h_seen, p_seen = {}, {}
    try:
        time.sleep(0.5 if busy else 0)
        t0 = time.monotonic()
        hs = _start(h_argv, base, "hotspot")
        pf = _start(p_argv, base, "perf")
        j0 = _cpu_jiffies()
        last_reaped = 0.0
        while True:
            now = time.monotonic() - t0
            if hs.poll() is not None or pf.poll() is not None:
                raise RuntimeError(f"s11 {name}: a recorder ended early: hotspot "
                                   f"{hs.returncode}, perf {pf.returncode}; see {base}")
            sup = _stat(hs.pid) or (0.0, 0.0)
            kids = _children(hs.pid)
            kid_cpu = sum((_stat(k) or (0.0, 0.0))[0] for k in kids)
            if sup[1] > last_reaped:
                jumps.append({"t": now, "cpu": sup[1] - last_reaped})
                last_reaped = sup[1]
            pstat = _stat(pf.pid) or (0.0, 0.0)
            j = _cpu_jiffies()
            polls.append({
                "t": now,
                "h_cpu": sup[0] + sup[1] + kid_cpu, "h_sup_cpu": sup[0],
                "h_seg_hwm": max([_status_kb(k, "VmHWM:") for k in kids] or [0]),
                "h_sup_rss": _status_kb(hs.pid, "VmRSS:"),
                "p_cpu": pstat[0] + pstat[1], "p_rss": _status_kb(pf.pid, "VmRSS:"),
                "h_bytes": _sizes(hdir, h_seen), "p_bytes": _sizes(pdir, p_seen),
                "load1": float(Path("/proc/loadavg").read_text().split()[0]),
                "busy": 100.0 * (1 - (j[1] - j0[1]) / max(j[0] - j0[0], 1)),
            })
            j0 = j
            if now >= secs:
                break
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0 - now)))
        wall = time.monotonic() - t0
        h_rc, h_total = _stop(hs)
        p_rc, p_total = _stop(pf)
    finally:
        stop_all(loops)
    _sizes(hdir, h_seen)
    _sizes(pdir, p_seen)
    written = [n for n in h_seen if n.startswith("seg-")]
    # The segment recorder the stop ended was reaped after the last poll: its CPU is what
    # wait4's total holds beyond the supervisor's own and the children seen reaped.
    if len(jumps) < len(written):
        jumps.append({"t": wall, "cpu": h_total - polls[-1]["h_sup_cpu"] - last_reaped})
    segs = []
    for f in sorted(hdir.glob("seg-*.hsp")):
        info = _info(f)
        segs.append({"file": f.name, "bytes": f.stat().st_size,
                     "samples": info["counts"]["samples"], "lost": info["counts"].get("lost", 0),
                     "seconds": info["duration_s"], "start_wall_ns": info["session"]["start_wall_ns"]})
    p_samples = p_lost = 0
    for f in sorted(pdir.glob("perf.data*")):
        with contextlib.suppress(RuntimeError):
            n, lost = perf_counts(f)
            p_samples += n
            p_lost += lost or 0
    out = {
        "name": name, "hz": hz, "secs": secs, "wall": wall, "busy_loops": busy,
        "window": window, "h_rc": h_rc, "p_rc": p_rc, "h_cpu": h_total, "p_cpu": p_total,
        "h_sup_cpu": polls[-1]["h_sup_cpu"],
        "h_written": sum(h_seen.values()), "p_written": sum(p_seen.values()),
        "h_files": len(written), "p_files": len(p_seen),
        "h_left": sum(s["bytes"] for s in segs), "segments": segs,
        "h_samples": sum(s["samples"] for s in segs), "h_lost": sum(s["lost"] for s in segs),
        "p_samples": p_samples, "p_lost": p_lost, "jumps": jumps,
        "windows": _windows(polls, window, wall),
        "load1_mean": sum(p["load1"] for p in polls) / len(polls),
        "busy_mean": sum(p["busy"] for p in polls[1:]) / max(len(polls) - 1, 1),
        "dir": str(hdir), "first_utc_ns": min((s["start_wall_ns"] for s in segs), default=0),
    }
    # Segments that the budget removed have no samples to pair: the pairs are the last ones.
    if len(segs) < len(written):
        out["jumps"] = jumps[len(written) - len(segs):]
    log(f"s11 {name}: exit status hotspot {h_rc}, perf {p_rc}; hotspot {out['h_cpu']:.2f} s CPU, {out['h_samples']} samples, "
        f"{out['h_written'] / 1e6:.1f} MB in {len(written)} segments; perf "
        f"{out['p_cpu']:.2f} s CPU, {p_samples} samples, {out['p_written'] / 1e6:.1f} MB; "
        f"load {out['load1_mean']:.2f}")
    return out


def _info(path: Path) -> dict:
    r = subprocess.run([str(HOTSPOT), "info", "--json", str(path)], text=True,
                       capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"hotspot info {path}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def _windows(polls, window: float, wall: float) -> list[dict]:
    """Per window of the run: CPU of each recorder (% of one CPU), peak RSS (hotspot's
    segment recorder and supervisor, perf), bytes written, mean load and machine busy."""
    out = []
    start = 0.0
    prev = {"h_cpu": 0.0, "p_cpu": 0.0, "h_bytes": 0, "p_bytes": 0, "t": 0.0}
    while start < wall - 1:
        end = min(start + window, wall)
        ps = [p for p in polls if start <= p["t"] < end] or polls[-1:]
        last = ps[-1]
        dt_ = max(last["t"] - prev["t"], 1e-9)
        out.append({
            "from": start, "to": end,
            "h_cpu_pct": 100 * (last["h_cpu"] - prev["h_cpu"]) / dt_,
            "p_cpu_pct": 100 * (last["p_cpu"] - prev["p_cpu"]) / dt_,
            "h_seg_hwm_mb": max(p["h_seg_hwm"] for p in ps) * 1024 / 1e6,
            "h_sup_rss_mb": max(p["h_sup_rss"] for p in ps) * 1024 / 1e6,
            "p_rss_mb": max(p["p_rss"] for p in ps) * 1024 / 1e6,
            "load1": sum(p["load1"] for p in ps) / len(ps),
            "busy": sum(p["busy"] for p in ps) / len(ps),
        })
        prev = last
        start = end
    return out


def fit(pairs) -> tuple[float, float] | None:
    """Least squares cpu = a + b·samples over (samples, cpu) pairs: (a seconds per
    segment, b seconds per sample)."""
    if len(pairs) < 3:
        return None
    n = len(pairs)
    mx = sum(x for x, _ in pairs) / n
    my = sum(y for _, y in pairs) / n
    sxx = sum((x - mx) ** 2 for x, _ in pairs)
    if sxx <= 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in pairs) / sxx
    return my - b * mx, b


def pairs_of(ph: dict) -> list[tuple[int, float]]:
    """(samples, CPU) of each segment, when every segment's recorder was seen to end."""
    segs, jumps = ph["segments"], ph["jumps"]
    if len(segs) != len(jumps):
        return []
    return [(s["samples"], j["cpu"]) for s, j in zip(segs, jumps)]


def _span(xs, fmt: str) -> str:
    return f"{fmt.format(min(xs))}–{fmt.format(max(xs))}" if xs else "—"


def utc(ns: int) -> str:
    t = dt.datetime.fromtimestamp(ns / 1e9, dt.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def cut(cfg, work: Path, idle: dict, res: dict) -> dict:
    """Times `snapshot` and `report` of a middle window of the idle phase's history."""
    hdir = Path(idle["dir"])
    first = idle["first_utc_ns"]
    span = sum(s["seconds"] for s in idle["segments"])
    length = cfg["s11_window_secs"] or span / 3
    a = first + int((span - length) / 2 * 1e9)
    frm, to = utc(a), utc(a + int(length * 1e9))
    d = fresh_dir(work / "s11" / "cut")
    snap = [str(HOTSPOT), "snapshot", str(hdir), "--from", frm, "--to", to, "-o",
            str(d / "x.hsp")]
    rep = [str(HOTSPOT), "report", str(hdir), "--from", frm, "--to", to]
    res["commands"]["snapshot"], res["commands"]["report"] = snap, rep
    out = {"from": frm, "to": to, "length": length, "history": span,
           "history_bytes": idle["h_left"], "snapshot": [], "report": [],
           "load1": float(Path("/proc/loadavg").read_text().split()[0])}
    for r in range(cfg["s11_cut_rounds"]):
        for kind, argv in (("snapshot", snap), ("report", rep)):
            if kind == "snapshot":
                with contextlib.suppress(FileNotFoundError):
                    (d / "x.hsp").unlink()
            cold = r == 0
            if cold:
                # The first round reads the history from disk, as after an incident.
                os.sync()
                Path("/proc/sys/vm/drop_caches").write_text("1\n")
            run = measure(argv, workdir=d, timeout=600,
                          stdout_to=d / "report.txt" if kind == "report" else None)
            if run.rc != 0:
                raise RuntimeError(f"{kind}: rc={run.rc}\n{run.stderr[-2000:]}")
            out[kind].append({"wall": run.wall, "cpu": run.cpu, "rss_mb": run.rss_mb,
                              "cold": cold})
            log(f"s11 {kind} {'cold' if cold else 'warm'}: {run.wall:.2f} s, "
                f"rss {run.rss_mb:.1f} MB")
    info = _info(d / "x.hsp")
    out["snapshot_samples"] = info["counts"]["samples"]
    out["snapshot_bytes"] = (d / "x.hsp").stat().st_size
    return out


def run(cfg, fx, _tools, work: Path) -> dict:
    """The flight recorder (record -a --keep) beside perf --switch-output.

    CPU, bytes per hour, RSS over the run, the time to cut a window."""
    res = {"commands": {}, "segment": cfg["s11_segment"], "keep": cfg["s11_keep_secs"]}
    res["idle"] = phase("idle", cfg, fx, work, 499, cfg["s11_idle_secs"],
                        cfg["s11_idle_window"], 0, res)
    res["cut"] = cut(cfg, work, res["idle"], res)
    res["busy"] = phase("busy", cfg, fx, work, 4999, cfg["s11_busy_secs"],
                        cfg["s11_busy_window"], NCPU, res)
    f = fit(pairs_of(res["idle"]) + pairs_of(res["busy"]))
    res["fit"] = list(f) if f else None
    return res


# ---- output


def _dur(secs: float) -> str:
    """A length as the output says it: `10 min`, `45 s`."""
    return f"{secs / 60:.0f} min" if secs >= 120 else f"{secs:.0f} s"


def _at(secs: float) -> str:
    """A time into the run: `m:ss`."""
    return f"{int(secs // 60)}:{int(secs % 60):02d}"


def _pct(ph, tool) -> float:
    return 100 * ph[f"{tool}_cpu"] / ph["wall"]


def _per_k(ph, tool) -> float:
    """CPU ms per 1000 samples."""
    return 1e6 * ph[f"{tool}_cpu"] / max(ph[f"{tool}_samples"], 1)


def _lost_pct(ph, tool) -> float:
    lost = ph[f"{tool}_lost"]
    return 100 * lost / max(ph[f"{tool}_samples"] + lost, 1)


def _mb_h(ph, tool) -> float:
    return ph[f"{tool}_written"] / 1e6 / (ph["wall"] / 3600)


def _flat(ph) -> tuple[bool, float]:
    """Flat: no window's peak segment-recorder RSS above the first window's by more than
    10% (the churn test's bound)."""
    ws = [w["h_seg_hwm_mb"] for w in ph["windows"] if w["h_seg_hwm_mb"] > 0]
    if not ws:
        return False, float("nan")
    growth = max(ws) / ws[0] - 1
    return growth <= 0.10, growth


def _load(ph) -> str:
    return (f"load average {ph['load1_mean']:.2f}, machine {ph['busy_mean']:.0f}% busy")


def _quiet(ph) -> bool:
    """Nothing but the two recorders and this script ran in the phase."""
    return ph["load1_mean"] < 0.5 and ph["busy_mean"] < 5


def summary_rows(w, s, cfg) -> None:
    idle, busy, c = s["idle"], s["busy"], s["cut"]
    hp, pp = _pct(idle, "h"), _pct(idle, "p")
    quiet = _quiet(idle)
    w(f"| 11 | flight recorder CPU, \"idle\" box @ 499 Hz ({_load(idle)}"
      f"{'' if quiet else ': **not idle**'}) | "
      f"{hp:.3f}% of a CPU | {pp:.3f}% | — | {hp / max(pp, 1e-9):.2f}× perf's | "
      f"< 0.1% of a CPU on an idle box | "
      f"{verdict(hp < 0.1, 'beside perf, whose samples it records' if quiet else 'on this box, which was not idle')} |")
    if s.get("fit"):
        a, b = s["fit"]
        est = 100 * a / s["segment"]
        w(f"| 11 | flight recorder cost per segment (fixed) and per 1000 samples (least squares "
          f"over every segment) | {1000 * a:.0f} ms per {s['segment']:g} s segment + "
          f"{1e6 * b:.1f} ms per 1000 samples | — | — | a box with no samples: "
          f"≈ {est:.3f}% of a CPU | (information: what transfers to an idle box) | — |")
    for ph in (idle, busy):
        hk, pk = _per_k(ph, "h"), _per_k(ph, "p")
        w(f"| 11 | recorder CPU per 1000 samples, {ph['name']} @ {ph['hz']} Hz | "
          f"{hk:.1f} ms | {pk:.1f} ms | — | {hk / max(pk, 1e-9):.2f}× perf's | "
          f"(information) | — |")
    w(f"| 11 | flight recorder CPU, busy box @ 4999 Hz ({_load(busy)}) | "
      f"{_pct(busy, 'h'):.2f}% of a CPU | {_pct(busy, 'p'):.2f}% | — | "
      f"{_pct(busy, 'h') / max(_pct(busy, 'p'), 1e-9):.2f}× perf's | (information) | — |")
    for ph in (idle, busy):
        hl, pl = _lost_pct(ph, "h"), _lost_pct(ph, "p")
        w(f"| 11 | samples lost (of written + lost), {ph['name']} @ {ph['hz']} Hz | "
          f"{hl:.2f}% | {pl:.2f}% | — | — | (information) | — |")
    for ph in (idle, busy):
        hb, pb = _mb_h(ph, "h"), _mb_h(ph, "p")
        w(f"| 11 | disk bytes per hour, {ph['name']} @ {ph['hz']} Hz | {hb:,.0f} MB/h | "
          f"{pb:,.0f} MB/h | — | {hb / max(pb, 1e-9):.2f}× perf's | (information) | — |")
    ok, growth = _flat(idle)
    peak = max(x["h_seg_hwm_mb"] for x in idle["windows"])
    w(f"| 11 | segment recorder peak RSS over {_dur(idle['wall'])}, per "
      f"{_dur(idle['window'])} window (max ÷ first − 1) | {peak:.1f} MB "
      f"(growth {100 * growth:+.0f}%) | {max(x['p_rss_mb'] for x in idle['windows']):.1f} MB | — | "
      f"— | flat (≤ +10%) | {verdict(ok)} |")
    for kind in ("snapshot", "report"):
        xs = c[kind]
        warm = [x["wall"] for x in xs if not x["cold"]]
        cold = [x["wall"] for x in xs if x["cold"]]
        worst = max(x["wall"] for x in xs)
        w(f"| 11 | `{kind}` of a {_dur(c['length'])} window of a "
          f"{_dur(c['history'])} history | {med_rng(warm, '{:.2f}', ' s')} warm, "
          f"{cold[0]:.2f} s cold | — | — | — | < 2 s | {verdict(worst < 2, 'every round')} |")


def details(w, s, cfg, work: Path) -> None:
    idle, busy, c = s["idle"], s["busy"], s["cut"]
    w("### 11. The flight recorder (record -a --keep)\n")
    w(f"`hotspot record -a --keep {s['keep']:g}s --segment {s['segment']:g}s -o DIR` and "
      f"`perf record -a -e cpu-clock -g -N --switch-output={s['segment']:g}s "
      f"--switch-max-files=N` run side by side (at the same time, so under the same load), "
      f"{_dur(idle['secs'])} at 499 Hz (the default rate) with nothing of the "
      f"benchmark running, then {_dur(busy['secs'])} at 4999 Hz with {busy['busy_loops']} "
      f"`busy` loops on the {NCPU} CPUs; each is stopped with SIGINT. "
      + (f"The idle box ran nothing else ({_load(idle)} on average in the idle phase) but "
         f"the two recorders and this script's look once a second: each recorder records "
         f"the other, so hotspot's segments hold perf's samples (perf writes all the time) "
         f"and hotspot names their frames while recording.\n" if _quiet(idle) else
         f"**The \"idle\" box was not idle**: other work ran on it throughout "
         f"({_load(idle)} on average in the idle phase), so its CPU and bytes are those of "
         f"a box with that load; the CPU per sample and the fixed cost per segment are what "
         f"transfer to an idle box.\n"))
    w("CPU = user + system time: hotspot's supervisor and every segment recorder it started "
      "(wait4 of the supervisor after the stop, which counts its reaped children), perf's "
      "own (wait4). The kernel's side of sampling (perf events, BPF programs) runs in the "
      "interrupted tasks and is in neither. Samples: each segment's `hotspot info --json`; "
      "`perf report --stats` of each perf file. Bytes = every file each wrote, at its last "
      "size (files a budget removed included), per hour of the run. perf -N skips the "
      "build-id cache copies (~/.debug) but still reads the build-ids at each switch.\n")
    w("| phase | tool | CPU | % of a CPU | samples (lost) | CPU per 1000 samples | files | "
      "bytes written | MB per hour |")
    w("|---|---|---|---|---|---|---|---|---|")
    for ph in (idle, busy):
        for t, name in (("h", "hotspot"), ("p", "perf")):
            w(f"| {ph['name']} @ {ph['hz']} Hz, {_dur(ph['wall'])} | {name} | "
              f"{ph[f'{t}_cpu']:.2f} s | {_pct(ph, t):.3f}% | "
              f"{ph[f'{t}_samples']:,} ({ph[f'{t}_lost']:,}) | {_per_k(ph, t):.1f} ms | "
              f"{ph[f'{t}_files']} | {ph[f'{t}_written'] / 1e6:,.1f} MB | "
              f"{_mb_h(ph, t):,.0f} |")
    w("")
    w(f"hotspot's supervisor alone: {idle['h_sup_cpu']:.2f} s CPU in the idle phase, "
      f"{busy['h_sup_cpu']:.2f} s in the busy one. Exit status after SIGINT: hotspot "
      f"{idle['h_rc']} and {busy['h_rc']}, perf {idle['p_rc']} and {busy['p_rc']} (idle, "
      f"busy).\n")
    if s.get("fit"):
        a, b = s["fit"]
        n = len(pairs_of(idle)) + len(pairs_of(busy))
        w(f"Per segment: each segment recorder's CPU (the jump of the supervisor's cutime + "
          f"cstime when it is reaped) against its samples, over {n} segments of both phases: "
          f"CPU ≈ {1000 * a:.0f} ms + {1e6 * b:.2f} ms per 1000 samples. The fixed part is a "
          f"segment recorder's start (BPF load, reading every process's maps) and end; on a "
          f"box with no samples at all it alone is {100 * a / s['segment']:.3f}% of a CPU "
          f"(an estimate from the fit, not a measurement on an idle box). It is rough: "
          f"the idle phase's segments, with nearly the same samples each "
          f"({_span([p[0] for p in pairs_of(idle)], '{:,}')}), took "
          f"{_span([p[1] for p in pairs_of(idle)], '{:.2f}')} s of CPU each, so a segment's "
          f"cost also follows what runs on the box (its processes and modules), which the "
          f"line does not separate from the fixed part.\n")
    else:
        w("Per segment: the reaped segment recorders and the segments did not pair up "
          "(a segment's end was not seen), so no fit.\n")
    for ph in (idle, busy):
        w(f"**{ph['name']}, per {_dur(ph['window'])} window** (RSS: peaks; the segment "
          f"recorder's is its VmHWM, a new process each segment):\n")
        w("| window (m:ss) | hotspot CPU | perf CPU | segment recorder RSS | supervisor RSS | "
          "perf RSS | load average | machine busy |")
        w("|---|---|---|---|---|---|---|---|")
        for x in ph["windows"]:
            w(f"| {_at(x['from'])}–{_at(x['to'])} | {x['h_cpu_pct']:.3f}% | "
              f"{x['p_cpu_pct']:.3f}% | {x['h_seg_hwm_mb']:.1f} MB | {x['h_sup_rss_mb']:.1f} MB | "
              f"{x['p_rss_mb']:.1f} MB | {x['load1']:.2f} | {x['busy']:.0f}% |")
        w("")
    hw = [x["h_seg_hwm_mb"] for x in idle["windows"]]
    pw = [x["p_rss_mb"] for x in idle["windows"]]
    w(f"RSS: each segment is a new recorder process, so a window's peak is that of the "
      f"segments in it: it can follow what ran on the box then (the processes and modules a "
      f"segment reads) rather than one process growing across windows; in the idle phase it went "
      f"{' → '.join(f'{x:.0f}' for x in hw)} MB by window. perf, one process for the whole "
      f"run, went {' → '.join(f'{x:.0f}' for x in pw)} MB.\n")
    w(f"**Cutting a window**: {_dur(c['length'])} ({c['from']} to {c['to']}) from "
      f"the idle phase's history of {_dur(c['history'])} "
      f"({c['history_bytes'] / 1e6:.1f} MB); the snapshot holds {c['snapshot_samples']:,} "
      f"samples in {c['snapshot_bytes'] / 1e6:.1f} MB. The first round after dropping the "
      f"page cache (cold), then warm rounds; wall time, CPU, peak RSS (load average "
      f"{c.get('load1', float('nan')):.2f} when the cuts began; wall time above CPU time is "
      f"time spent waiting, for a CPU or the disk):\n")
    w("| command | round | wall | CPU | peak RSS |")
    w("|---|---|---|---|---|")
    for kind in ("snapshot", "report"):
        for i, x in enumerate(c[kind]):
            w(f"| {kind} | {i + 1}{' (cold)' if x['cold'] else ''} | {x['wall']:.2f} s | "
              f"{x['cpu']:.2f} s | {x['rss_mb']:.1f} MB |")
    w("")
