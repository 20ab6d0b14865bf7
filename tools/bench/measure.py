"""Measuring one process: wall time, CPU (user + system from wait4), peak RSS (its own
VmHWM, polled) and its output; stopped with SIGINT after a given time, as Ctrl-C stops a
profiler."""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import time
from pathlib import Path

from procs import LIVE, kill_tree


class Run:
    """One measured process: exit status, wall time, rusage of that process (and of the
    children it waited for), its output."""

    anon_mb = file_mb = 0.0

    def __init__(self, argv, rc, wall, utime, stime, maxrss_kb, stdout, stderr):
        self.argv, self.rc, self.wall = argv, rc, wall
        self.utime, self.stime, self.maxrss_kb = utime, stime, maxrss_kb
        self.stdout, self.stderr = stdout, stderr

    @property
    def cpu(self) -> float:
        return self.utime + self.stime

    @property
    def rss_mb(self) -> float:
        """Peak RSS in MB (10^6 bytes; ru_maxrss is in KiB)."""
        return self.maxrss_kb * 1024 / 1e6


def measure(argv, *, workdir: Path, stop_after: float | None = None, timeout: float = 900,
            stdout_to: Path | None = None, cwd: Path | None = None,
            mem_limit: int | None = None, on_poll=None, env: dict | None = None) -> Run:
    """Runs argv; after stop_after seconds sends SIGINT (the profilers' Ctrl-C: each one
    stops and writes its file). Per-process rusage comes from os.wait4 on that pid.
    on_poll(pid, seconds) is called on every ~5 ms poll while it runs. If the script is
    interrupted (Ctrl-C, SIGTERM) the process and everything it started are killed."""
    out_path = stdout_to or (workdir / "last.stdout")
    err_path = workdir / "last.stderr"
    with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
        t0 = time.monotonic()
        def limit():
            if mem_limit:
                resource.setrlimit(resource.RLIMIT_AS, (mem_limit, mem_limit))

        p = subprocess.Popen(argv, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                             cwd=cwd or workdir, preexec_fn=limit if mem_limit else None,
                             env=env)
        status_path = f"/proc/{p.pid}/status"
        LIVE.add(p.pid)
        try:
            status, ru = _poll_until_exit(p, t0, status_path, stop_after, timeout, on_poll)
        except BaseException:
            kill_tree(p.pid)
            raise
        finally:
            LIVE.discard(p.pid)
        status, _signalled, killed, anon, file_, hwm = status
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
    stdout = "" if stdout_to else out_path.read_text(errors="replace")
    stderr = err_path.read_text(errors="replace")
    if killed:
        stderr += f"\n(killed after {timeout} s)"
    # Peak RSS is the process's own VmHWM (its mm after exec), polled: ru_maxrss also
    # counts the pages of this Python parent the child had between fork and exec, a
    # floor of 14+ MB whatever the tool.
    run = Run(argv, p.returncode, wall, ru.ru_utime, ru.ru_stime, hwm or ru.ru_maxrss,
              stdout, stderr)
    run.anon_mb, run.file_mb = anon * 1024 / 1e6, file_ * 1024 / 1e6
    return run


def _poll_until_exit(p, t0, status_path, stop_after, timeout, on_poll):
    """measure's loop: polls the process's peak memory every ~5 ms until it exits; returns
    ((wait status, signalled, killed, peak RssAnon, peak RssFile, peak VmHWM), rusage)."""
    signalled = killed = False
    anon = file_ = hwm = 0
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid == p.pid:
            return (status, signalled, killed, anon, file_, hwm), ru
        # Peak anonymous and file-backed RSS, polled (ru_maxrss counts both).
        try:
            with open(status_path) as st:
                for line in st:
                    if line.startswith("RssAnon:"):
                        anon = max(anon, int(line.split()[1]))
                    elif line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
                    elif line.startswith("RssFile:"):
                        file_ = max(file_, int(line.split()[1]))
        except (OSError, ValueError):
            pass
        now = time.monotonic() - t0
        if on_poll is not None:
            on_poll(p.pid, now)
        if stop_after is not None and not signalled and now >= stop_after:
            p.send_signal(signal.SIGINT)
            signalled = True
        if not killed and now >= timeout:
            p.kill()
            killed = True
        time.sleep(0.005)
