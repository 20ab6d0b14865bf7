"""The benchmark's shared ground: where things are, logging, small statistics, work
directories and how busy the machine is. Every other module of tools/bench imports it."""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HOTSPOT = REPO / "target" / "release" / "hotspot"
GEN = REPO / "target" / "release" / "examples" / "gen_capture"
CFLAGS = ["-O2", "-g", "-fno-omit-frame-pointer", "-fno-optimize-sibling-calls",
          "-Wall", "-Wextra", "-pthread", "-Wl,--build-id=sha1"]
FIXTURES = ["throughput", "busy", "phased", "pingpong"]
NCPU = os.cpu_count() or 1


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def die(msg: str) -> None:
    print(f"tools/bench/run: {msg}", file=sys.stderr)
    sys.exit(1)


def sh(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, check=True, text=True, **kw)


def out_of(argv, default="?") -> str:
    try:
        r = subprocess.run(argv, text=True, capture_output=True, timeout=60)
        return (r.stdout or r.stderr).strip() or default
    except (OSError, subprocess.SubprocessError):
        return default


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return (min(xs), max(xs)) if xs else (float("nan"), float("nan"))


def ranges_overlap(a, b) -> bool:
    (a0, a1), (b0, b1) = spread(a), spread(b)
    return a0 <= b1 and b0 <= a1


def rotate(xs, r):
    r %= len(xs)
    return xs[r:] + xs[:r]


def fresh_dir(d: Path) -> Path:
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    return d


def loadavg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def background_cpu(seconds: float = 3.0) -> float:
    """Percent of all CPUs busy over `seconds` while the benchmark runs nothing: how noisy
    the machine is."""
    def snap():
        f = Path("/proc/stat").read_text().splitlines()[0].split()[1:]
        v = [int(x) for x in f]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return sum(v[:8]), idle
    t1, i1 = snap()
    time.sleep(seconds)
    t2, i2 = snap()
    return 100.0 * (1 - (i2 - i1) / max(t2 - t1, 1))
