"""BPF run-time statistics of the recorder's programs and the bytes through its ring
buffers, read by opening the recorder's own BPF objects by id (kernel.bpf_stats_enabled)."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import struct
from pathlib import Path

from harness import out_of

BPF_STATS = Path("/proc/sys/kernel/bpf_stats_enabled")
BPF_MAP_TYPE_RINGBUF = 27

# The bpf(2) syscall, for opening the recorder's programs and ring buffers by id.
_SYS_BPF = {"x86_64": 321, "aarch64": 280}.get(platform.machine())


def bpf_fd_by_id(cmd: int, obj_id: int) -> int:
    """BPF_PROG_GET_FD_BY_ID (13) / BPF_MAP_GET_FD_BY_ID (14): a new fd on that object."""
    import ctypes
    if _SYS_BPF is None:
        raise OSError(f"bpf(2) syscall number unknown on {platform.machine()}")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = ctypes.create_string_buffer(struct.pack("<III", obj_id, 0, 0), 16)
    fd = libc.syscall(_SYS_BPF, cmd, attr, 16)
    if fd < 0:
        e = ctypes.get_errno()
        raise OSError(e, f"bpf cmd {cmd} id {obj_id}: {os.strerror(e)}")
    return int(fd)


class BpfProbe:
    """Finds the BPF programs and ring buffers a hotspot recorder holds (/proc/PID/fdinfo:
    prog_id, map_id, map_type) while it runs and opens its own fds on them, so that after
    the recorder exits the programs' run_time_ns / run_cnt (kernel.bpf_stats_enabled) and
    each ring buffer's producer position (bytes reserved since the ring was created, 8-byte
    record headers included) can still be read, whole."""

    def __init__(self):
        self.progs: dict[int, int] = {}
        self.rings: dict[int, int] = {}
        self.errors: list[str] = []
        self.last = -1.0

    def poll(self, pid: int, now: float) -> None:
        if now - self.last < 0.1:
            return
        self.last = now
        try:
            fds = os.listdir(f"/proc/{pid}/fdinfo")
        except OSError:
            return
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    txt = f.read()
            except OSError:
                continue
            m = re.search(r"^prog_id:\s*(\d+)", txt, re.M)
            if m and int(m.group(1)) not in self.progs and "map_type" not in txt:
                self._open(self.progs, 13, int(m.group(1)))
            m = re.search(r"^map_id:\s*(\d+)", txt, re.M)
            t = re.search(r"^map_type:\s*(\d+)", txt, re.M)
            if m and t and int(t.group(1)) == BPF_MAP_TYPE_RINGBUF and int(m.group(1)) not in self.rings:
                self._open(self.rings, 14, int(m.group(1)))

    def _open(self, into: dict, cmd: int, obj_id: int) -> None:
        try:
            into[obj_id] = bpf_fd_by_id(cmd, obj_id)
        except OSError as e:
            into[obj_id] = -1
            if len(self.errors) < 3:
                self.errors.append(str(e))

    def finish(self) -> dict:
        """Reads the counters and closes the fds."""
        import mmap
        res = {"progs": [], "ring_bytes": None, "rings": 0, "errors": self.errors}
        ids = {i for i, fd in self.progs.items() if fd >= 0}
        if ids:
            try:
                for p in json.loads(out_of(["bpftool", "-j", "prog", "show"], "[]")):
                    if p.get("id") in ids:
                        res["progs"].append({"id": p["id"], "name": p.get("name", "?"),
                                             "run_time_ns": p.get("run_time_ns"),
                                             "run_cnt": p.get("run_cnt")})
            except ValueError as e:
                res["errors"].append(f"bpftool -j prog show: {e}")
        page = mmap.PAGESIZE
        total = None
        for obj_id, fd in self.rings.items():
            if fd < 0:
                continue
            try:
                with mmap.mmap(fd, page, mmap.MAP_SHARED, mmap.PROT_READ, offset=page) as mm:
                    total = (total or 0) + struct.unpack_from("<Q", mm, 0)[0]
                    res["rings"] += 1
            except (OSError, ValueError) as e:
                res["errors"].append(f"ring {obj_id}: mmap: {e}")
        res["ring_bytes"] = total
        for fd in [*self.progs.values(), *self.rings.values()]:
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.progs, self.rings = {}, {}
        return res


def bpf_sample_stats(probe_res: dict, samples: int, lost: int | None = 0,
                     untraced_ns: float | None = None) -> dict | None:
    """The sampling program(s) (names starting hs_sample): total run time, calls, ns per
    call, ns per recorded sample (an upper bound: it also charges the calls that found an
    untraced task on the CPU), and, given the cost of an untraced call (measured apart),
    the estimated ns per traced sample:
    (run_time_ns − untraced calls × untraced_ns) ÷ (samples + lost)."""
    progs = [p for p in probe_res.get("progs", []) if p["name"].startswith("hs_sample")]
    if not progs:
        return None
    ns = sum(p.get("run_time_ns") or 0 for p in progs)
    cnt = sum(p.get("run_cnt") or 0 for p in progs)
    out = {"names": sorted({p["name"] for p in progs}), "ns": ns, "cnt": cnt,
           "per_call": None, "per_sample": None, "per_traced": None}
    if not cnt:
        return out
    traced = samples + (lost or 0)
    out.update(per_call=ns / cnt, per_sample=ns / max(samples, 1))
    if untraced_ns is not None and traced:
        out["per_traced"] = max(ns - max(cnt - traced, 0) * untraced_ns, 0) / traced
    return out


def find_ring_report(info: dict, stderr: str) -> float | None:
    """Ring-buffer bytes per sample if the recorder reports them itself (a key holding
    `ring` in `info --json`, or a `ring … bytes per sample` line on its stderr)."""
    def walk(x, path=""):
        if isinstance(x, dict):
            for k, v in x.items():
                yield from walk(v, f"{path}.{k}")
        elif isinstance(x, (int, float)) and "ring" in path.lower():
            yield path, x
    for path, v in walk(info):
        if "per_sample" in path:
            return float(v)
    m = re.search(r"ring[^\n]*?([0-9][0-9,.]*)\s*(?:B|bytes)\s*(?:/|per)\s*sample", stderr, re.I)
    return float(m.group(1).replace(",", "")) if m else None


def bpf_enable_stats_fd() -> int:
    """bpf(BPF_ENABLE_STATS, BPF_STATS_RUN_TIME): run-time stats stay on while the fd is
    open, whatever else writes to the sysctl meanwhile (the kernel counts enablers)."""
    import ctypes
    if _SYS_BPF is None:
        raise OSError("bpf(2) syscall number unknown")
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    attr = ctypes.create_string_buffer(struct.pack("<I", 0), 16)
    fd = libc.syscall(_SYS_BPF, 32, attr, 16)
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return int(fd)


@contextlib.contextmanager
def bpf_stats_on(res: dict):
    """kernel.bpf_stats_enabled = 1 for the scenario, the previous value put back after;
    a BPF_ENABLE_STATS fd is held as well, so that another user of the machine writing 0
    to the sysctl meanwhile does not stop the counters."""
    old, fd = None, -1
    try:
        old = BPF_STATS.read_text().strip()
        if old != "1":
            BPF_STATS.write_text("1\n")
        res["bpf_stats"] = {"was": old, "set": True}
    except OSError as e:
        res["bpf_stats"] = {"was": old, "set": False, "error": str(e)}
    try:
        fd = bpf_enable_stats_fd()
        res["bpf_stats"]["fd"] = True
    except OSError as e:
        res["bpf_stats"]["fd"] = False
        res["bpf_stats"]["fd_error"] = str(e)
    try:
        yield
    finally:
        if fd >= 0:
            os.close(fd)
        if old is not None and old != "1":
            with contextlib.suppress(OSError):
                BPF_STATS.write_text(old + "\n")
