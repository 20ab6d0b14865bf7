"""A terminal program in a pseudo-terminal: the time until its screen shows some text, and
its peak memory (scenario 6's time to first frame of `hotspot view`)."""

from __future__ import annotations

import fcntl
import os
import re
import select
import struct
import subprocess
import termios
import time


class Screen:
    """Just enough of a terminal to read what a ratatui program shows: it redraws only the
    cells that changed, so a needle such as "5,000,000 samples" need not appear as one
    run in the byte stream. Handles cursor moves (CSI H) and text; other escapes ignored."""

    def __init__(self, rows: int, cols: int):
        import codecs
        self.rows, self.cols = rows, cols
        self.cells = [[" "] * cols for _ in range(rows)]
        self.y = self.x = 0
        self.dec = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.esc = ""  # an escape sequence in progress

    def feed(self, data: bytes) -> None:
        for ch in self.dec.decode(data):
            if self.esc:
                self.esc += ch
                e = self.esc
                if e == "\x1b[" or (len(e) == 2 and e[1] in "]P_^"):
                    continue
                if e[1] == "[":
                    if "@" <= ch <= "~":
                        if ch == "H":
                            parts = (e[2:-1].split(";") + ["", ""])[:2]
                            self.y = max(int(parts[0] or 1) - 1, 0)
                            self.x = max(int(parts[1] or 1) - 1, 0)
                        self.esc = ""
                elif e[1] in "]P_^":
                    if ch == "\x07" or e.endswith("\x1b\\"):
                        self.esc = ""
                else:
                    self.esc = ""
                continue
            if ch == "\x1b":
                self.esc = ch
            elif ch == "\r":
                self.x = 0
            elif ch == "\n":
                self.y += 1
            elif ch >= " " and self.y < self.rows and self.x < self.cols:
                self.cells[self.y][self.x] = ch
                self.x += 1

    def contains(self, needle: str) -> bool:
        return any(needle in "".join(row) for row in self.cells)


def first_frame_in_pty(argv, needle: str, timeout: float = 60.0):
    """Runs a terminal program in a 160×50 pseudo-terminal; returns (seconds from start
    until its screen shows `needle`, None, peak RSS in kB)
    or (None, why, peak RSS). Then sends `q` and waits for it to quit (SIGTERM to that pid
    after 5 s). The child is reaped with wait4, so its own peak RSS is known."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 160, 0, 0))
    env = dict(os.environ, TERM="xterm-256color")
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env,
                         start_new_session=True)
    os.close(slave)
    buf, found, rss = b"", None, None
    screen = Screen(50, 160)
    hwm = 0

    def poll_hwm() -> None:
        nonlocal hwm
        try:
            with open(f"/proc/{p.pid}/status") as st:
                for line in st:
                    if line.startswith("VmHWM:"):
                        hwm = max(hwm, int(line.split()[1]))
        except (OSError, ValueError):
            pass

    def exited() -> bool:
        # Without reaping it: wait4 below collects the rusage.
        return os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    def reap(flags) -> bool:
        nonlocal rss
        pid, _, ru = os.wait4(p.pid, flags)
        if pid:
            # Its own high-water mark (see `measure`), else what wait4 says.
            rss = hwm or ru.ru_maxrss
            p.returncode = 0
        return bool(pid)

    strip = re.compile(rb"\x1b(\[[0-9;?<=>]*[ -/]*[@-~]|\][^\x07]*\x07|[()][0-9A-Za-z]|[=>])")
    try:
        while time.monotonic() - t0 < timeout:
            poll_hwm()
            r, _, _ = select.select([master], [], [], 0.01)
            if not r:
                if exited():
                    break
                continue
            try:
                d = os.read(master, 1 << 16)
            except OSError:
                break
            if not d:
                break
            buf += d
            screen.feed(d)
            if screen.contains(needle):
                found = time.monotonic() - t0
                break
        try:
            os.write(master, b"q")
        except OSError:
            pass
        deadline = time.monotonic() + 5
        done = False
        while not done and time.monotonic() < deadline:
            poll_hwm()
            done = reap(os.WNOHANG)
            if not done:
                try:
                    select.select([master], [], [], 0.05)
                    os.read(master, 1 << 16)
                except OSError:
                    time.sleep(0.05)
        if not done:
            p.terminate()
            reap(0)
    finally:
        os.close(master)
    if found is None:
        tail = strip.sub(b"", buf)[-200:].decode(errors="replace")
        return None, f"no screen showed {needle!r} within {timeout:g} s (rc={p.returncode}; {tail!r})", rss
    return found, None, rss
