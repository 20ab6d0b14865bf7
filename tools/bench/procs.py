"""Process control: what the benchmark started and still runs, killed whole on an
interrupted run (the script is a child subreaper, so orphans of a profiler that died first
come back to it instead of escaping to init)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from pathlib import Path

# Processes started by this script that are still running.
LIVE: set[int] = set()


def descendants(pid: int) -> list[int]:
    """Every live process below pid (from /proc/*/stat's ppid)."""
    children: dict[int, list[int]] = {}
    for e in os.listdir("/proc"):
        if not e.isdigit():
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(e))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL to pid and all its descendants, collected first (a dead parent's children
    are reparented), then reaps pid if it is this script's child."""
    for x in [pid, *descendants(pid)]:
        with contextlib.suppress(OSError):
            os.kill(x, signal.SIGKILL)
    with contextlib.suppress(OSError):
        os.waitpid(pid, 0)


def reap_orphans() -> None:
    """Reaps zombies reparented to this script (the subreaper) that it did not start, e.g.
    the addr2line helpers a finished `perf script` left behind."""
    me = os.getpid()
    for e in os.listdir("/proc"):
        if not e.isdigit() or int(e) in LIVE:
            continue
        try:
            with open(f"/proc/{e}/stat") as f:
                st = f.read()
            rest = st[st.rindex(")") + 2:].split()
        except (OSError, ValueError):
            continue
        if rest[0] == "Z" and int(rest[1]) == me:
            with contextlib.suppress(OSError):
                os.waitpid(int(e), os.WNOHANG)


def kill_leftovers() -> None:
    """Kills whatever this script started that still runs (its whole subtree), and reaps."""
    for x in descendants(os.getpid()):
        with contextlib.suppress(OSError):
            os.kill(x, signal.SIGKILL)
    while True:
        try:
            if os.waitpid(-1, os.WNOHANG)[0] == 0:
                break
        except ChildProcessError:
            break


def become_subreaper() -> None:
    """prctl(PR_SET_CHILD_SUBREAPER): orphans of our children are reparented to us."""
    import ctypes
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def start_busy(fx: dict, seconds: float, n: int = 1, binary: Path | None = None
               ) -> list[subprocess.Popen]:
    procs = [subprocess.Popen([str(binary or fx["busy"]), f"{seconds:g}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
             for _ in range(n)]
    LIVE.update(p.pid for p in procs)
    return procs


def stop_all(procs) -> None:
    for p in procs:
        if p.poll() is None:
            p.kill()
    for p in procs:
        p.wait()
        LIVE.discard(p.pid)
