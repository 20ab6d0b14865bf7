"""Scenario 11 of tools/bench/run (issue 28): the flight recorder, `hotspot record -a --keep
30m -o DIR`, beside perf's `perf record -a --switch-output`, on an "idle" box at the default
rate and on a busy one (two busy loops on the 2 CPUs, -F 4999).

The two recorders run at the same time (side by side: the same load for both), each
started here and stopped with SIGINT at the end. Polled once a second:
- CPU: each recorder's utime + stime (/proc/PID/stat; hotspot is one process for the
  whole history, as perf is). The totals are wait4's after the stop. hotspot's CPU
  between the polls at which two successive segment files appeared is that segment's
  (to a poll, a second), so CPU per segment pairs with that segment's samples
  (`hotspot info --json SEG`): a least-squares line gives the fixed cost of a segment
  and the cost per sample.
- RSS: each recorder's VmRSS; peaks per window (5 minutes in a full run).
- Bytes: every segment file's size (a file the budget removes keeps its last size), so
  bytes per hour count what was written, not what is left.
- The machine: load average and CPU busy (/proc/stat), beside the figures: the box is
  shared, so "idle" is the load of whatever else ran.
Then each recorder alone on the idle box at 499 Hz (hotspot, then perf, the same
options), its CPU counted after its first minute: side by side each records the other,
and perf recording every CPU (idle ones too) writes ~600 MB an hour, so beside it the
box is not idle for hotspot (whose symboliser keeps naming perf's new frames).
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
        # hotspot's CPU when each segment file was first seen: a segment's CPU is what
        # it used until the next one appeared.
        starts: dict[str, float] = {}
        while True:
            now = time.monotonic() - t0
            if hs.poll() is not None or pf.poll() is not None:
                raise RuntimeError(f"s11 {name}: a recorder ended early: hotspot "
                                   f"{hs.returncode}, perf {pf.returncode}; see {base}")
            own = _stat(hs.pid) or (0.0, 0.0)
            h_cpu = own[0] + own[1]
            for f in sorted(hdir.glob("seg-*.hsp")):
                starts.setdefault(f.name, h_cpu)
            pstat = _stat(pf.pid) or (0.0, 0.0)
            j = _cpu_jiffies()
            polls.append({
                "t": now,
                "h_cpu": h_cpu, "h_rss": _status_kb(hs.pid, "VmRSS:"),
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
    # Each segment's CPU: from its file's first sight to the next's (the last: to wait4's
    # total, which holds the end of the recording).
    names = sorted(starts)
    for i, n in enumerate(names):
        upto = starts[names[i + 1]] if i + 1 < len(names) else h_total
        jumps.append({"file": n, "cpu": upto - starts[n]})
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
    # Segments that the budget removed have no samples to pair.
    kept = {s["file"] for s in segs}
    out["jumps"] = [j for j in jumps if j["file"] in kept]
    log(f"s11 {name}: exit status hotspot {h_rc}, perf {p_rc}; hotspot {out['h_cpu']:.2f} s CPU, {out['h_samples']} samples, "
        f"{out['h_written'] / 1e6:.1f} MB in {len(written)} segments; perf "
        f"{out['p_cpu']:.2f} s CPU, {p_samples} samples, {out['p_written'] / 1e6:.1f} MB; "
        f"load {out['load1_mean']:.2f}")
    return out


def alone(tool: str, cfg, work: Path, res: dict) -> dict:
    """One recorder alone on the idle box at 499 Hz for s11_alone_secs: its CPU over the
    run and after its first s11_alone_warm seconds (the set-up and first names done),
    polled every second, and the box's load."""
    base = fresh_dir(work / "s11" / f"alone-{tool}")
    seg = cfg["s11_segment"]
    if tool == "hotspot":
        argv = [str(HOTSPOT), "record", "-a", "--keep", f"{cfg['s11_keep_secs']:g}s",
                "--segment", f"{seg:g}s", "-o", str(base / "history")]
    else:
        (base / "perf").mkdir()
        argv = ["perf", "record", "-a", "-e", "cpu-clock", "-g", "-F", "499", "-N",
                f"--switch-output={seg:g}s",
                f"--switch-max-files={max(1, round(cfg['s11_keep_secs'] / seg))}",
                "-o", str(base / "perf" / "perf.data")]
    res["commands"].setdefault(f"{tool} (alone)", argv)
    secs, warm = cfg["s11_alone_secs"], cfg["s11_alone_warm"]
    t0 = time.monotonic()
    p = _start(argv, base, tool)
    j0 = _cpu_jiffies()
    polls = []
    at_warm = None
    while True:
        now = time.monotonic() - t0
        if p.poll() is not None:
            raise RuntimeError(f"s11 alone: {tool} ended early ({p.returncode}); see {base}")
        st = _stat(p.pid) or (0.0, 0.0)
        j = _cpu_jiffies()
        polls.append({"t": now, "cpu": st[0] + st[1],
                      "load1": float(Path("/proc/loadavg").read_text().split()[0]),
                      "busy": 100.0 * (1 - (j[1] - j0[1]) / max(j[0] - j0[0], 1))})
        j0 = j
        if at_warm is None and now >= warm:
            at_warm = polls[-1]
        if now >= secs:
            break
        time.sleep(max(0.0, 1.0 - (time.monotonic() - t0 - now)))
    rc, total = _stop(p)
    last = polls[-1]
    steady = 100 * (last["cpu"] - at_warm["cpu"]) / max(last["t"] - at_warm["t"], 1e-9)
    out = {"tool": tool, "secs": last["t"], "rc": rc, "cpu": total,
           "pct": 100 * total / last["t"], "steady_pct": steady,
           "steady_cpu": last["cpu"] - at_warm["cpu"], "steady_secs": last["t"] - at_warm["t"],
           "load1_mean": sum(x["load1"] for x in polls) / len(polls),
           "busy_mean": sum(x["busy"] for x in polls[1:]) / max(len(polls) - 1, 1)}
    log(f"s11 alone {tool}: exit {rc}, {total:.2f} s CPU in {last['t']:.0f} s "
        f"({out['pct']:.3f}%), after the first {warm} s {steady:.3f}% of a CPU; "
        f"load {out['load1_mean']:.2f}")
    return out


def _info(path: Path) -> dict:
    r = subprocess.run([str(HOTSPOT), "info", "--json", str(path)], text=True,
                       capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"hotspot info {path}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def _windows(polls, window: float, wall: float) -> list[dict]:
    """Per window of the run: CPU of each recorder (% of one CPU), peak RSS of each,
    bytes written, mean load and machine busy."""
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
            "h_rss_mb": max(p["h_rss"] for p in ps) * 1024 / 1e6,
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
    """(samples, CPU) of each segment whose file was seen appear."""
    cpu = {j["file"]: j["cpu"] for j in ph["jumps"]}
    return [(s["samples"], cpu[s["file"]]) for s in ph["segments"] if s["file"] in cpu]


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
    res["alone"] = [alone(t, cfg, work, res) for t in ("hotspot", "perf")]
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
    """Flat: no later window's peak recorder RSS above the second window's by more than
    10% (the churn test's bound). The first window holds the start, which names every
    module of the box's processes once (102.6 MB against 45.3 MB in the second window of
    the 2026-12-06 run): measured from it, any growth below that peak would pass."""
    ws = [w["h_rss_mb"] for w in ph["windows"] if w["h_rss_mb"] > 0]
    if len(ws) < 2:
        return False, float("nan")
    growth = max(ws[1:]) / ws[1] - 1
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
    if s.get("alone"):
        ha, pa = s["alone"]
        q = ha["load1_mean"] < 0.5 and ha["busy_mean"] < 5
        w(f"| 11 | flight recorder CPU alone on the idle box @ 499 Hz, after its first "
          f"minute (load average {ha['load1_mean']:.2f}, machine {ha['busy_mean']:.0f}% busy"
          f"{'' if q else ': **not idle**'}) | {ha['steady_pct']:.3f}% of a CPU | "
          f"{pa['steady_pct']:.3f}% (alone, after) | — | "
          f"{ha['steady_pct'] / max(pa['steady_pct'], 1e-9):.2f}× perf's | "
          f"< 0.1% of a CPU on an idle box | "
          f"{verdict(ha['steady_pct'] < 0.1, 'each alone' if q else 'on this box, which was not idle')} |")
    w(f"| 11 | flight recorder CPU beside perf, \"idle\" box @ 499 Hz ({_load(idle)}"
      f"{'' if quiet else ': **not idle**'}) | "
      f"{hp:.3f}% of a CPU | {pp:.3f}% | — | {hp / max(pp, 1e-9):.2f}× perf's | "
      f"(information: each records the other) | — |")
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
    peak = max(x["h_rss_mb"] for x in idle["windows"])
    w(f"| 11 | flight recorder peak RSS over {_dur(idle['wall'])}, per "
      f"{_dur(idle['window'])} window (max after the first ÷ the second − 1) | {peak:.1f} MB "
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
    w("CPU = user + system time of each recorder, one process for the whole run (wait4 "
      "after the stop). The kernel's side of sampling (perf events, BPF programs) runs in the "
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
    w(f"Exit status after SIGINT: hotspot {idle['h_rc']} and {busy['h_rc']}, perf {idle['p_rc']} and {busy['p_rc']} (idle, "
      f"busy).\n")
    for a in s.get("alone", []):
        w(f"**{a['tool']} alone** on the idle box at 499 Hz ({a['secs'] / 60:.0f} min; "
          f"load average {a['load1_mean']:.2f}, machine {a['busy_mean']:.0f}% busy): "
          f"{a['cpu']:.2f} s CPU in all ({a['pct']:.3f}% of a CPU), {a['steady_cpu']:.2f} s "
          f"after its first minute ({a['steady_pct']:.3f}% over {a['steady_secs']:.0f} s); "
          f"exit status {a['rc']}.\n")
    if s.get("fit"):
        a, b = s["fit"]
        n = len(pairs_of(idle)) + len(pairs_of(busy))
        w(f"Per segment: the recorder's CPU from one segment file's appearance to the next's "
          f"(to a poll: a second) against the segment's samples, over {n} segments of both "
          f"phases: CPU ≈ {1000 * a:.0f} ms + {1e6 * b:.2f} ms per 1000 samples. The fixed "
          f"part is what a segment costs besides its samples (its end and the next's start: "
          f"names, definitions written again, the idle wake-ups); on a box with no samples at all it alone is {100 * a / s['segment']:.3f}% of a CPU "
          f"(an estimate from the fit, not a measurement on an idle box). It is rough: "
          f"the idle phase's segments, with nearly the same samples each "
          f"({_span([p[0] for p in pairs_of(idle)], '{:,}')}), took "
          f"{_span([p[1] for p in pairs_of(idle)], '{:.2f}')} s of CPU each, so a segment's "
          f"cost also follows what runs on the box (its processes and modules), which the "
          f"line does not separate from the fixed part.\n")
    else:
        w("Per segment: fewer than 3 segments paired with their CPU, so no fit.\n")
    for ph in (idle, busy):
        w(f"**{ph['name']}, per {_dur(ph['window'])} window** (RSS: peaks of VmRSS, read "
          f"once a second):\n")
        w("| window (m:ss) | hotspot CPU | perf CPU | hotspot RSS | "
          "perf RSS | load average | machine busy |")
        w("|---|---|---|---|---|---|---|")
        for x in ph["windows"]:
            w(f"| {_at(x['from'])}–{_at(x['to'])} | {x['h_cpu_pct']:.3f}% | "
              f"{x['p_cpu_pct']:.3f}% | {x['h_rss_mb']:.1f} MB | "
              f"{x['p_rss_mb']:.1f} MB | {x['load1']:.2f} | {x['busy']:.0f}% |")
        w("")
    hw = [x["h_rss_mb"] for x in idle["windows"]]
    pw = [x["p_rss_mb"] for x in idle["windows"]]
    w(f"RSS: hotspot, one process writing every segment, went "
      f"{' → '.join(f'{x:.0f}' for x in hw)} MB by window in the idle phase (the symboliser's "
      f"parsed debug information comes and goes within a window). perf went {' → '.join(f'{x:.0f}' for x in pw)} MB.\n")
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
