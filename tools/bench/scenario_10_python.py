"""Scenario 10 of tools/bench/run (issue 26): Python frames, side by side with py-spy.

On Debian's /usr/bin/python3 and one pyenv build, two targets (tools/bench/python/): a
CPU-bound 70/30 script and a threaded one whose two other threads sleep half the time, at
100 and 499 Hz. Each round starts the target, waits for its `ready`, and attaches one tool
by pid: nothing, `hotspot record PID`, `py-spy record --pid` (its default: the target
paused per sample) or `py-spy record --nonblocking`, the order rotating each round. The
target works WARMUP seconds unmeasured (the tool attaches meanwhile), then counts its work
for SECONDS and prints the window (CLOCK_MONOTONIC, the samples' clock) and its rate.

Measured: the share of the window's samples (every thread of the target is a Python
thread) whose stack holds a Python frame; the Python-level stacks (the script's frames,
function names, root first) of hotspot against py-spy --nonblocking's, pooled over the
rounds; the target's work per second against the same round's unprofiled run; each
recorder's CPU (wait4 of the recorder alone: it attaches, it starts nothing) per 1,000
samples; bytes on disk per sample. And the BPF time per sample of a 30-deep Python stack
(kernel.bpf_stats_enabled), hotspot with its Python walk against the same binary with the
walk refused at load (HOTSPOT_TEST_REFUSE=python_walk, the loader's test switch: the
samplers without the walk, everything else the same), alternating in each round.

py-spy: the one on PATH, else `pip install py-spy` into a venv under the work directory
(no system packages touched). Stdlib only, like the rest of tools/bench.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bpfstats import BpfProbe, bpf_sample_stats, bpf_stats_on
from harness import HOTSPOT, REPO, fresh_dir, loadavg, log, median, out_of, rotate
from measure import measure
from procs import LIVE, kill_tree
from profilers import hotspot_info
from scenario_7_unwinding import s7_untraced_cost
from scenario_9_offcpu import own_group, set_group_nice
from tables import med_rng, verdict

SCRIPTS = Path(__file__).resolve().parent / "python"
TARGETS = {"cpu 70/30": "cpu_7030.py", "threads, sleeping": "threads_sleepy.py"}
TOOLS = ["none", "hotspot", "py-spy", "py-spy --nonblocking"]
PYSPY_NB = "py-spy --nonblocking"
HZS = [100, 499]
# The root function of the thread that is busy all the time, per target (None: all).
BUSY_ROOT = {"cpu 70/30": None, "threads, sleeping": "cruncher"}
DEPTH = 30
# The same walk on a 3-deep stack: what the walk costs before its frames.
SHALLOW = 3
BPF_LABELS = ["walk", "no walk", f"walk, {SHALLOW} deep"]
BPF_SHALLOW = BPF_LABELS[2]
PYENV = Path.home() / ".pyenv" / "versions"
# The pyenv build measured beside Debian's (the first of these installed).
PYENV_CHOICES = ["3.12.1", "3.11.7"]


def interpreters() -> list[tuple[str, str]]:
    out = []
    if Path("/usr/bin/python3").exists():
        v = out_of(["/usr/bin/python3", "-c", "import platform; print(platform.python_version())"])
        out.append((f"Debian {v}", "/usr/bin/python3"))
    for v in PYENV_CHOICES:
        exe = PYENV / v / "bin" / f"python{v.rsplit('.', 1)[0]}"
        if exe.exists():
            out.append((f"pyenv {v}", str(exe)))
            break
    return out


def ensure_pyspy(work: Path) -> tuple[str, str]:
    """(py-spy's path, how it was found): PATH, else the one tools/test installs for
    python_e2e (target/py-spy), else a venv in the work directory with `pip install
    py-spy` (PyPI's wheel; the system's Python packages untouched)."""
    found = shutil.which("py-spy")
    if found:
        return found, "on PATH"
    tested = REPO / "target" / "py-spy" / "bin" / "py-spy"
    if tested.exists():
        return str(tested), "the one tools/test installs (target/py-spy)"
    venv = work / "py-spy-venv"
    exe = venv / "bin" / "py-spy"
    if not exe.exists():
        log(f"py-spy not found: python3 -m venv {venv} && pip install py-spy")
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "py-spy"], check=True)
    return str(exe), f"`pip install py-spy` in a venv ({venv.name} in the work directory)"


# ---------------------------------------------------------------------------------------
# Reading the profiles: samples, samples with Python frames, Python-level stacks


def _frame_file_is(path, script: str) -> bool:
    return bool(path) and os.path.basename(path) == script


def hotspot_profile(cap: Path, script: str, window: tuple[float, float] | None) -> dict:
    """From `hotspot report --format json` (its call tree, each node's self count): the
    window's samples, those whose stack holds a Python frame, and the Python-level stacks
    (frames of `script`, names, root first)."""
    argv = [str(HOTSPOT), "report", "--format", "json", str(cap)]
    if window:
        argv += ["--from", f"{window[0]:.6f}", "--to", f"{window[1]:.6f}"]
    r = subprocess.run(argv, text=True, capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"hotspot report {cap}: {r.stderr.strip()[-300:]}")
    doc = json.loads(r.stdout)
    nodes = {n["id"]: n for n in doc["tree"]}
    memo: dict[int, tuple[bool, tuple, int]] = {}

    def path_of(nid):
        if nid in memo:
            return memo[nid]
        n = nodes[nid]
        if n["parent"] is None:
            res = (False, (), 0)
        else:
            has, stack, depth = path_of(n["parent"])
            py = n.get("kind") == "python"
            res = (has or py, stack + ((n["name"],) if py and _frame_file_is(n.get("file"), script)
                                       else ()), depth + (1 if py else 0))
        memo[nid] = res
        return res

    total = with_py = 0
    stacks: dict[str, int] = {}
    depths: dict[int, int] = {}
    for n in doc["tree"]:
        c = n.get("self") or 0
        if not c:
            continue
        has, stack, depth = path_of(n["id"])
        total += c
        if has:
            with_py += c
        if stack:
            key = ";".join(stack)
            stacks[key] = stacks.get(key, 0) + c
        depths[depth] = depths.get(depth, 0) + c
    return {"samples": total, "with_python": with_py, "stacks": stacks,
            "python_depths": depths, "report_total": doc["totals"]["samples"]}


_PYSPY_FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")


def pyspy_profile(raw: Path, script: str) -> dict:
    """py-spy's raw output (`frame (file:line);… COUNT`, root first): its samples (every
    line, the empty stacks included), those with a Python frame, the Python-level stacks."""
    total = with_py = 0
    stacks: dict[str, int] = {}
    for line in raw.read_text(errors="replace").splitlines():
        line = line.rstrip()
        if not line:
            continue
        head, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        c = int(count)
        total += c
        frames = [f for f in head.split(";") if f.strip()]
        names = []
        for f in frames:
            m = _PYSPY_FRAME.match(f.strip())
            if m and _frame_file_is(m.group(2), script):
                names.append(m.group(1))
        if frames:
            with_py += c
        if names:
            key = ";".join(names)
            stacks[key] = stacks.get(key, 0) + c
    return {"samples": total, "with_python": with_py, "stacks": stacks}


def share_diff(a: dict, b: dict) -> tuple[float, str]:
    """Largest difference, in points, between two sets of Python-level stack counts (each
    as a share of its own total), and the stack where it is."""
    ta, tb = sum(a.values()), sum(b.values())
    if not ta or not tb:
        return float("nan"), "no Python-level samples"
    worst, where = 0.0, ""
    for k in set(a) | set(b):
        d = 100.0 * abs(a.get(k, 0) / ta - b.get(k, 0) / tb)
        if d >= worst:
            worst, where = d, k
    return worst, where


def busy_only(stacks: dict, target: str) -> dict:
    """The stacks of the thread that never blocks (threads_sleepy.py's cruncher; the whole
    of cpu_7030.py): shares that do not depend on how a profiler counts a thread that
    sleeps or waits for the GIL or a CPU."""
    root = BUSY_ROOT.get(target)
    return {k: v for k, v in stacks.items() if root is None or k.split(";")[0] == root}


def merge_counts(dicts) -> dict:
    out: dict[str, int] = {}
    for d in dicts:
        for k, v in d.items():
            out[k] = out.get(k, 0) + v
    return out


# ---------------------------------------------------------------------------------------
# One run


def start_target(exe: str, script: str, args: list, d: Path) -> tuple[subprocess.Popen, Path]:
    out = d / "target.out"
    p = subprocess.Popen(own_group([exe, str(SCRIPTS / script), *map(str, args)]),
                         stdout=open(out, "w"), stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL)
    LIVE.add(p.pid)
    t0 = time.monotonic()
    while "ready" not in out.read_text():
        if p.poll() is not None or time.monotonic() - t0 > 30:
            kill_tree(p.pid)
            LIVE.discard(p.pid)
            raise RuntimeError(f"{exe} {script}: no `ready` ({out.read_text()[-300:]!r})")
        time.sleep(0.01)
    return p, out


def finish_target(p: subprocess.Popen, timeout: float) -> int:
    try:
        return p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        kill_tree(p.pid)
        return -9
    finally:
        LIVE.discard(p.pid)


def parse_bench(text: str) -> dict | None:
    m = re.search(r"^bench (.*)$", text, re.M)
    if not m:
        return None
    return {k: float(v) for k, v in (w.split("=", 1) for w in m.group(1).split())}


def tool_argv(tool: str, pyspy: str, hz: int, d: Path, pid: int) -> list[str]:
    if tool == "hotspot":
        return [str(HOTSPOT), "record", "-F", str(hz), "-o", str(d / "capture.hsp"), str(pid)]
    argv = [pyspy, "record", "--pid", str(pid), "-r", str(hz), "-f", "raw",
            "-o", str(d / "pyspy.txt")]
    return argv + (["--nonblocking"] if tool == PYSPY_NB else [])


def one_run(tool: str, exe: str, script: str, hz: int, d: Path, cfg, res) -> dict:
    warm, secs = cfg["s10_warmup"], cfg["s10_secs"]
    row = {"tool": tool, "ok": False, "load": loadavg()}
    p, out = start_target(exe, script, [warm, secs], d)
    try:
        if tool != "none":
            argv = own_group(tool_argv(tool, res["pyspy"], hz, d, p.pid))
            res["commands"].setdefault(
                f"{tool} -F/-r {hz}", [a if a != str(p.pid) else "PID" for a in argv])
            # Both recorders stop by themselves when the target exits; SIGINT after it
            # should have, in case one does not.
            run = measure(argv, workdir=d, stop_after=warm + secs + 15,
                          timeout=warm + secs + 120)
            row.update(rc=run.rc, cpu=run.cpu, wall=run.wall, rss_mb=run.rss_mb)
            if run.rc not in (0, 130, -2):
                row["error"] = f"{tool} rc={run.rc}: {run.stderr.strip()[-300:]!r}"
        rc = finish_target(p, warm + secs + 60)
    except BaseException:
        kill_tree(p.pid)
        LIVE.discard(p.pid)
        raise
    got = parse_bench(out.read_text())
    if rc != 0 or not got:
        row["error"] = row.get("error") or f"target rc={rc}: {out.read_text()[-300:]!r}"
    if "error" in row:
        return row
    row.update(ok=True, units_per_s=got["units_per_s"], bench=got)
    if tool == "hotspot":
        cap = d / "capture.hsp"
        info = hotspot_info(cap)
        start_mono = info["session"]["start_mono_ns"]
        window = ((got["start_ns"] - start_mono) / 1e9, (got["end_ns"] - start_mono) / 1e9)
        prof = hotspot_profile(cap, script, window)
        row.update(samples=info["counts"]["samples"], lost=info["counts"].get("lost"),
                   bytes=cap.stat().st_size, window=prof,
                   interp=[{k: x.get(k) for k in ("version", "status", "reason", "samples",
                                                  "merged", "mismatched", "without_frames",
                                                  "unresolved_frames", "cut")}
                           for x in info.get("interpreters", [])])
    elif tool.startswith("py-spy"):
        raw = d / "pyspy.txt"
        prof = pyspy_profile(raw, script)
        row.update(samples=prof["samples"], bytes=raw.stat().st_size, window=prof)
        m = re.search(r"Samples: (\d+) Errors: (\d+)", run.stderr)
        if m:
            row["pyspy_errors"] = int(m.group(2))
    return row


# ---------------------------------------------------------------------------------------
# BPF time per sample: a 30-deep Python stack with and without the walk


def bpf_run(label: str, exe: str, d: Path, cfg, res, untraced_ns) -> dict:
    secs = cfg["s10_bpf_secs"]
    depth = SHALLOW if label == BPF_SHALLOW else DEPTH
    p, _ = start_target(exe, "deep.py", [depth, secs + 30], d)
    env = dict(os.environ)
    if label == "no walk":
        env["HOTSPOT_TEST_REFUSE"] = "python_walk"
    argv = own_group([str(HOTSPOT), "record", "-F", "499", "-o", str(d / "capture.hsp"),
                      str(p.pid)])
    res["commands"].setdefault(f"BPF, {depth}-deep stack, {label}",
                               (["HOTSPOT_TEST_REFUSE=python_walk"] if label == "no walk"
                                else []) + [a if a != str(p.pid) else "PID" for a in argv])
    probe = BpfProbe()
    row = {"label": label, "ok": False, "load": loadavg()}
    try:
        run = measure(argv, workdir=d, stop_after=secs, timeout=secs + 120,
                      on_poll=probe.poll, env=env)
    finally:
        kill_tree(p.pid)
        LIVE.discard(p.pid)
    bpf = probe.finish()
    if run.rc not in (0, 130, -2):
        row["error"] = f"rc={run.rc}: {run.stderr.strip()[-300:]!r}"
        return row
    info = hotspot_info(d / "capture.hsp")
    n, lost = info["counts"]["samples"], info["counts"].get("lost")
    st = bpf_sample_stats(bpf, n, lost, untraced_ns)
    prof = hotspot_profile(d / "capture.hsp", "deep.py", None)
    deep = sum(c for k, c in prof["python_depths"].items() if k >= depth)
    row.update(ok=st is not None and st.get("per_traced") is not None, samples=n, lost=lost,
               bpf=st, python_depths=prof["python_depths"], at_depth=deep,
               bytes=(d / "capture.hsp").stat().st_size)
    return row


# ---------------------------------------------------------------------------------------
# The scenario


def run(cfg, fx, tools, work: Path) -> dict:
    """Python frames: hotspot vs py-spy (default and --nonblocking), CPU-bound and threaded."""
    pyspy, how = ensure_pyspy(work)
    res = {"commands": {}, "pyspy": pyspy, "pyspy_how": how,
           "pyspy_version": out_of([pyspy, "--version"]), "interpreters": [],
           "combos": [], "bpf": {}, "loads": []}
    interps = interpreters()
    if not interps:
        raise RuntimeError("no Python interpreter to measure")
    res["interpreters"] = interps
    rounds = cfg["rounds_s10"]
    for name, exe in interps:
        for target, script in TARGETS.items():
            for hz in HZS:
                combo = {"interp": name, "exe": exe, "target": target, "script": script,
                         "hz": hz, "by_tool": {t: [] for t in TOOLS}}
                for r in range(rounds):
                    for tool in rotate(TOOLS, r + hz):
                        d = fresh_dir(work / "s10" / tool.replace(" ", "_"))
                        row = one_run(tool, exe, script, hz, d, cfg, res)
                        combo["by_tool"][tool].append(row)
                        res["loads"].append(float(row["load"]) if row["load"] != "?" else 0.0)
                        log(f"s10 {name} {target} {hz} Hz {tool} round {r + 1}/{rounds}: "
                            + (f"{row['units_per_s']:.0f} units/s"
                               + (f", {row['samples']} samples, CPU {row['cpu']:.3f} s"
                                  if "samples" in row else "")
                               + (f", with Python {row['window']['with_python']}/"
                                  f"{row['window']['samples']}" if "window" in row else "")
                               if row["ok"] else f"FAILED {row['error']}")
                            + f" (load {row['load']})")
                res["combos"].append(combo)
    with bpf_stats_on(res):
        res["untraced"] = s7_untraced_cost(cfg, tools, work, res["commands"])
        u_ns = res["untraced"].get("per_call")
        for name, exe in interps:
            rows = {label: [] for label in BPF_LABELS}
            for r in range(cfg["rounds_s10_bpf"]):
                for label in rotate(BPF_LABELS, r):
                    d = fresh_dir(work / "s10" / "bpf")
                    row = bpf_run(label, exe, d, cfg, res, u_ns)
                    rows[label].append(row)
                    b = row.get("bpf") or {}
                    log(f"s10 BPF {name} {label} round {r + 1}: "
                        + (f"{b.get('per_traced') or 0:.0f} ns per traced sample, "
                           f"{row['samples']} samples, {row['at_depth']} at full depth"
                           if row["ok"] else f"FAILED {row.get('error')}"))
            res["bpf"][name] = rows
    return res


# ---------------------------------------------------------------------------------------
# Writing the results


def _ok(combo: dict, tool: str) -> list[dict]:
    return [x for x in combo["by_tool"].get(tool, []) if x.get("ok")]


def _slowdown(combo: dict, tool: str) -> list[float]:
    """1 − work per second ÷ the same round's unprofiled run, in %."""
    return [100.0 * (1 - x["units_per_s"] / y["units_per_s"])
            for x, y in zip(combo["by_tool"][tool], combo["by_tool"]["none"])
            if x.get("ok") and y.get("ok")]


def _per1k(rows: list[dict]) -> list[float]:
    """Recorder CPU, ms per 1,000 samples, per run."""
    return [1e6 * x["cpu"] / x["samples"] for x in rows if x.get("samples")]


def _pooled(rows: list[dict]) -> dict:
    return merge_counts(x["window"]["stacks"] for x in rows)


def _with_py(rows: list[dict]) -> tuple[int, int]:
    return (sum(x["window"]["with_python"] for x in rows),
            sum(x["window"]["samples"] for x in rows))


def napper_shares(c: dict, tool: str) -> tuple[float, float] | None:
    """threads_sleepy.py: the nappers' share of the samples of the script's threads
    (pooled over the rounds) and their share of the threads' CPU time over the window, as
    the target measured it itself (time.thread_time) in the same runs; None elsewhere."""
    ok = [x for x in _ok(c, tool) if "cpu_nappers" in x.get("bench", {})]
    if c["target"] != "threads, sleeping" or not ok:
        return None
    st = _pooled(ok)
    nap = sum(v for k, v in st.items() if k.split(";")[0] == "napper")
    both = nap + sum(v for k, v in st.items() if k.split(";")[0] == "cruncher")
    cn = sum(x["bench"]["cpu_nappers"] for x in ok)
    cc = sum(x["bench"]["cpu_cruncher"] for x in ok)
    if not both or not cn + cc:
        return None
    return 100.0 * nap / both, 100.0 * cn / (cn + cc)


def _combo_name(c: dict) -> str:
    return f"{c['interp']}, {c['target']}, {c['hz']} Hz"


def _bpf_delta(rows: dict) -> list[float]:
    """Walk − no walk, ns per traced sample, per round (the two runs of a round side by side)."""
    return [a["bpf"]["per_traced"] - b["bpf"]["per_traced"]
            for a, b in zip(rows["walk"], rows["no walk"]) if a.get("ok") and b.get("ok")]


def summary_rows(w, s10, cfg) -> None:
    combos = s10["combos"]
    if not combos:
        return
    # Share of samples with Python frames.
    shares = []
    for c in combos:
        k, n = _with_py(_ok(c, "hotspot"))
        if n:
            shares.append((100.0 * k / n, _combo_name(c), n))
    pk = []
    for c in combos:
        k, n = _with_py(_ok(c, PYSPY_NB))
        if n:
            pk.append(100.0 * k / n)
    if shares:
        lo = min(shares)
        w(f"| 10 | samples of Python threads with Python frames (lowest of "
          f"{len(shares)} settings: {lo[1]}) | {lo[0]:.2f}% of {lo[2]:,} | — | — | "
          f"py-spy --nonblocking: {min(pk):.2f}% lowest | ≥ 99% | "
          + verdict(lo[0] >= 99.0) + " |")
    # Python-level share difference against py-spy --nonblocking.
    diffs, busy = [], []
    for c in combos:
        a, b = _pooled(_ok(c, "hotspot")), _pooled(_ok(c, PYSPY_NB))
        dv, where = share_diff(a, b)
        diffs.append((dv, _combo_name(c), where))
        dv, where = share_diff(busy_only(a, c["target"]), busy_only(b, c["target"]))
        busy.append((dv, _combo_name(c), where))
    diffs = [x for x in diffs if x[0] == x[0]]
    busy = [x for x in busy if x[0] == x[0]]
    if diffs:
        worst = max(diffs)
        wb = max(busy) if busy else (float("nan"), "", "")
        w(f"| 10 | largest Python-level share difference against `py-spy record "
          f"--nonblocking` (stacks of the script's functions, pooled rounds; worst: "
          f"{worst[1]}, `{worst[2]}`) | {worst[0]:.1f} points | — | — | median over the "
          f"{len(diffs)} settings {median([x[0] for x in diffs]):.1f} points; the busy "
          f"thread's stacks alone: worst {wb[0]:.1f} points ({wb[1]}, `{wb[2]}`)"
          + "".join(f"; {_combo_name(c)}: nappers' share of samples hotspot {h[0]:.1f}% "
                    f"(their CPU time {h[1]:.1f}%), py-spy --nonblocking {n[0]:.1f}% "
                    f"({n[1]:.1f}%)"
                    for c in combos
                    for h, n in [(napper_shares(c, "hotspot"), napper_shares(c, PYSPY_NB))]
                    if h and n)
          + " | ≤ 3 points | "
          + verdict(worst[0] <= 3.0) + " |")
    # Slowdown.
    below, total, cells = 0, 0, []
    for c in combos:
        h, p, nb = (_slowdown(c, t) for t in ("hotspot", "py-spy", PYSPY_NB))
        if h and p and nb:
            total += 1
            ok = median(h) < median(p) and median(h) < median(nb)
            below += ok
            cells.append(f"{median(h):.1f}/{median(p):.1f}/{median(nb):.1f}")
    if total:
        allh = [x for c in combos for x in _slowdown(c, "hotspot")]
        allp = [x for c in combos for x in _slowdown(c, "py-spy")]
        alln = [x for c in combos for x in _slowdown(c, PYSPY_NB)]
        w(f"| 10 | target slowdown (1 − work per second ÷ unprofiled, same round), every "
          f"setting and round | {med_rng(allh, '{:.1f}', '%')} | — | — | py-spy default "
          f"{med_rng(allp, '{:.1f}', '%')}; --nonblocking {med_rng(alln, '{:.1f}', '%')} | "
          f"below both | " + verdict(below == total, f"hotspot's median below both in "
                                                    f"{below} of {total} settings") + " |")
    # BPF time per sample.
    for name, rows in s10.get("bpf", {}).items():
        dl = _bpf_delta(rows)
        walk = [x["bpf"]["per_traced"] for x in rows["walk"] if x.get("ok")]
        nowalk = [x["bpf"]["per_traced"] for x in rows["no walk"] if x.get("ok")]
        shallow = [x["bpf"]["per_traced"] for x in rows.get(BPF_SHALLOW, []) if x.get("ok")]
        if dl:
            w(f"| 10 | BPF time per sample, {DEPTH}-deep Python stack, {name}: with the "
              f"walk − without (same binary, walk refused at load) | "
              f"{med_rng(dl, '{:.0f}', ' ns')} | — | — | with {med_rng(walk, '{:.0f}', ' ns')}, "
              f"without {med_rng(nowalk, '{:.0f}', ' ns')}; the walk on a {SHALLOW}-deep "
              f"stack {med_rng(shallow, '{:.0f}', ' ns')} | ≤ 1,000 ns | "
              + verdict(median(dl) <= 1000, "median") + " |")
    # Recorder CPU per 1,000 samples.
    h = [x for c in combos for x in _per1k(_ok(c, "hotspot"))]
    p = [x for c in combos for x in _per1k(_ok(c, "py-spy"))]
    nb = [x for c in combos for x in _per1k(_ok(c, PYSPY_NB))]
    if h and nb and p:
        worst = 0.0
        for c in combos:
            a, b1, b2 = (_per1k(_ok(c, t)) for t in ("hotspot", "py-spy", PYSPY_NB))
            if a and b1 and b2:
                worst = max(worst, median(a) / min(median(b1), median(b2)))
        w(f"| 10 | recorder CPU per 1,000 samples (attach to exit) | "
          f"{med_rng(h, '{:.0f}', ' ms')} | — | — | ×{median(h) / median(nb):.2f} of "
          f"--nonblocking ({med_rng(nb, '{:.0f}', ' ms')}), ×{median(h) / median(p):.2f} of "
          f"default ({med_rng(p, '{:.0f}', ' ms')}); worst setting ×{worst:.2f} | ≤ 0.5× | "
          + verdict(worst <= 0.5, "worst setting against the cheaper py-spy mode") + " |")
    hb = [x["bytes"] / x["samples"] for c in combos for x in _ok(c, "hotspot") if x.get("samples")]
    pb = [x["bytes"] / x["samples"] for c in combos for x in _ok(c, PYSPY_NB) if x.get("samples")]
    if hb:
        w(f"| 10 | bytes on disk per sample (capture ÷ samples) | {med_rng(hb, '{:.1f}', ' B')} "
          f"| — | — | py-spy's raw text (aggregated, no times): {med_rng(pb, '{:.1f}', ' B')} | "
          f"(information) | — |")


def details(w, s10, cfg, work: Path) -> None:
    w("### 10. Python frames, side by side with py-spy\n")
    loads = [x for x in s10.get("loads", []) if x]
    w(f"Interpreters: " + "; ".join(f"{n} (`{e}`)" for n, e in s10["interpreters"])
      + f". py-spy: {s10['pyspy_version']}, {s10['pyspy_how']}. Targets: "
      f"`tools/bench/python/cpu_7030.py` and `threads_sleepy.py`, {cfg['s10_warmup']:g} s "
      f"unmeasured while the tool attaches, then {cfg['s10_secs']:g} s measured; "
      f"{cfg['rounds_s10']} round(s) per setting, the tools' order rotating. Target and "
      f"recorder each run in a scheduling group of their own at nice −20 (as in scenario "
      f"9). The machine is shared: 1-minute load average at the start of the runs "
      + (f"{med_rng(loads, '{:.2f}')}" if loads else "not read") + " (2 CPUs).\n")
    w("Shares: the samples of the measured window (hotspot: `report --from/--to` on the "
      "window the target printed; py-spy has no times, so all of its samples, which are "
      "the same loop). A Python-level stack is the script's own frames, function names, "
      "root first (threading's and the interpreter's frames left out on both sides); the "
      "difference is taken on the counts pooled over the rounds. *Busy thread* restricts "
      "both sides to the stacks of the thread that never blocks (the cruncher of "
      "threads_sleepy.py; all of cpu_7030.py), renormalised: how each tool counts a thread "
      "that sleeps, waits for the GIL or waits for a CPU does not enter it.\n")
    w("| setting | tool | work/s | slowdown | samples | with Python frames | CPU per 1,000 samples "
      "| bytes/sample | Python-level difference vs --nonblocking | load |")
    w("|---|---|---|---|---|---|---|---|---|---|")
    for c in s10["combos"]:
        nb = _pooled(_ok(c, PYSPY_NB))
        for tool in TOOLS:
            ok = _ok(c, tool)
            bad = [x for x in c["by_tool"][tool] if not x.get("ok")]
            if not ok:
                w(f"| {_combo_name(c)} | {tool} | failed: "
                  f"{(bad[0].get('error') if bad else 'no run')!s:.200} | | | | | | | |")
                continue
            k, n = _with_py(ok) if tool != "none" else (0, 0)
            sd = _slowdown(c, tool) if tool != "none" else []
            dv, where = share_diff(_pooled(ok), nb) if tool not in ("none", PYSPY_NB) else (None, "")
            db, _ = (share_diff(busy_only(_pooled(ok), c["target"]), busy_only(nb, c["target"]))
                     if tool not in ("none", PYSPY_NB) else (None, ""))
            w(f"| {_combo_name(c)} | {tool} | "
              f"{med_rng([x['units_per_s'] for x in ok], '{:,.0f}')} | "
              f"{med_rng(sd, '{:.1f}', '%') if sd else '—'} | "
              f"{med_rng([x['samples'] for x in ok if 'samples' in x], '{:,.0f}')} | "
              f"{f'{100.0 * k / n:.2f}% of {n:,}' if n else '—'} | "
              f"{med_rng(_per1k(ok), '{:.0f}', ' ms') if tool != 'none' else '—'} | "
              f"{med_rng([x['bytes'] / x['samples'] for x in ok if x.get('samples')], '{:.1f}')} | "
              f"{f'{dv:.1f} points (`{where}`); busy thread {db:.1f}' if dv is not None and dv == dv else '—'} | "
              f"{', '.join(x['load'] for x in c['by_tool'][tool])} |")
    w("")
    # The Python-level shares themselves, hotspot against py-spy --nonblocking.
    w("Python-level stacks (pooled over the rounds), hotspot vs py-spy --nonblocking vs "
      "py-spy default:\n")
    for c in s10["combos"]:
        pools = {t: _pooled(_ok(c, t)) for t in ("hotspot", PYSPY_NB, "py-spy")}
        tot = {t: sum(v.values()) or 1 for t, v in pools.items()}
        keys = sorted(set().union(*pools.values()), key=lambda k: -pools["hotspot"].get(k, 0))
        w(f"- {_combo_name(c)}: " + "; ".join(
            f"`{k}` {100 * pools['hotspot'].get(k, 0) / tot['hotspot']:.1f} / "
            f"{100 * pools[PYSPY_NB].get(k, 0) / tot[PYSPY_NB]:.1f} / "
            f"{100 * pools['py-spy'].get(k, 0) / tot['py-spy']:.1f}%" for k in keys[:8]))
        ns = {t: napper_shares(c, t) for t in ("hotspot", PYSPY_NB, "py-spy")}
        if all(ns.values()):
            w("  The nappers' share of the script threads' samples (their share of those "
              "threads' CPU time in the same runs, time.thread_time): " + "; ".join(
                  f"{t} {v[0]:.1f}% ({v[1]:.1f}%)" for t, v in ns.items()))
        interp = [i for x in _ok(c, "hotspot") for i in x.get("interp", [])]
        if interp:
            w(f"  hotspot `info` (round 1): {interp[0]}")
        errs = [x.get("pyspy_errors") for t in ("py-spy", PYSPY_NB) for x in _ok(c, t)
                if x.get("pyspy_errors")]
        if errs:
            w(f"  py-spy reported errors: {errs}")
    w("")
    w(f"BPF time per sample, `deep.py {DEPTH}` (a {DEPTH}-frame Python stack, busy at the "
      f"bottom), `hotspot record -F 499 PID` for {cfg['s10_bpf_secs']:g} s, with the walk, "
      f"with `HOTSPOT_TEST_REFUSE=python_walk`, and with the walk on `deep.py {SHALLOW}` "
      f"(the walk's cost before its frames), in rotation; ns per traced sample = (run time "
      f"− calls for other tasks × the untraced call's cost) ÷ samples (scenario 7's method; "
      f"untraced call: "
      + (f"{s10['untraced']['per_call']:.0f} ns" if s10.get("untraced", {}).get("per_call")
         else "not measured") + ").\n")
    w("| interpreter | run | ns per traced sample | samples | samples with the full Python "
      "stack | bytes/sample | load |")
    w("|---|---|---|---|---|---|---|")
    for name, rows in s10.get("bpf", {}).items():
        for label in BPF_LABELS:
            ok = [x for x in rows.get(label, []) if x.get("ok")]
            if not ok:
                bad = rows[label][0].get("error") if rows.get(label) else "no run"
                w(f"| {name} | {label} | failed: {bad!s:.200} | | | | |")
                continue
            w(f"| {name} | {label} | "
              f"{med_rng([x['bpf']['per_traced'] for x in ok], '{:.0f}')} | "
              f"{med_rng([x['samples'] for x in ok], '{:,.0f}')} | "
              f"{med_rng([100.0 * x['at_depth'] / max(x['samples'], 1) for x in ok], '{:.1f}', '%')} | "
              f"{med_rng([x['bytes'] / max(x['samples'], 1) for x in ok], '{:.1f}')} | "
              f"{', '.join(x['load'] for x in rows[label])} |")
    w("")
