"""The profilers compared: how each records (attached to a pid or launching a command) and
how many samples each wrote and lost."""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import shutil
import subprocess
from pathlib import Path

from harness import HOTSPOT, die, log, out_of, sh

# The tools scenarios 1 and 2 compare.
PEERS_RUN = ["hotspot", "perf", "samply"]
# With --baseline: another hotspot build (the one before a change), run like "hotspot".
BASELINE = "baseline hotspot"

PARANOID = Path("/proc/sys/kernel/perf_event_paranoid")


class Tools:
    def __init__(self, samply: str, baseline: str | None = None):
        self.samply = samply
        # The hotspot binary that BASELINE runs (--baseline), or None.
        self.baseline = baseline
        help_ = out_of([samply, "record", "--help"], "")
        # `--presymbolicate` is still `--unstable-presymbolicate` in samply 0.13.
        self.presym = ("--presymbolicate" if re.search(r"\s--presymbolicate\b", help_)
                       else "--unstable-presymbolicate")
        self.paranoid_note = None

    @contextlib.contextmanager
    def running(self, tool: str):
        """samply (0.13) exits when perf_event_paranoid > 1, even as root, instead of falling
        back to the cpu-clock event (there is no hardware cycles event in a VM); the other
        tools do not care. For samply's runs only, the level is set to 1 and put back."""
        old = None
        if tool == "samply":
            try:
                level = PARANOID.read_text().strip()
                if int(level) > 1:
                    old = level
                    PARANOID.write_text("1\n")
                    self.paranoid_note = (
                        f"{out_of([self.samply, '--version'])} refuses to run when "
                        f"`kernel.perf_event_paranoid` > 1 (here {level}) even as root, rather "
                        f"than fall back to the cpu-clock event (this VM has no hardware cycles "
                        f"event); the script sets it to 1 while samply runs and puts {level} back "
                        f"after each run")
            except (OSError, ValueError):
                pass
        try:
            yield
        finally:
            if old is not None:
                PARANOID.write_text(old + "\n")

    def hotspot(self, tool: str) -> str:
        """The binary of "hotspot" (this build) or of BASELINE."""
        if tool == BASELINE:
            if not self.baseline:
                raise ValueError("no --baseline")
            return self.baseline
        return str(HOTSPOT)

    def record_cmd(self, tool: str, hz: int, out: Path, *, cmd=None, pid=None,
                   extra=()) -> list[str]:
        """The recording command of each profiler: either launching cmd or attaching to pid."""
        if tool in ("hotspot", BASELINE):
            argv = [self.hotspot(tool), "record", "-F", str(hz), "-o", str(out / "capture.hsp")]
            argv += list(extra)
            return argv + ([str(pid)] if pid else ["--", *cmd])
        if tool.startswith("perf"):
            # cpu-clock: the event hotspot samples (and what perf falls back to in VMs).
            argv = ["perf", "record", "-e", "cpu-clock", "-g", "-F", str(hz),
                    "-o", str(out / "perf.data")]
            if tool == "perf -z":
                argv.append("-z")
            argv += list(extra)
            return argv + (["-p", str(pid)] if pid else ["--", *cmd])
        if tool == "samply":
            extra = [self.presym if a == "--presymbolicate" else a for a in extra]
            argv = [self.samply, "record", "--save-only", "-r", str(hz),
                    "-o", str(out / "profile.json.gz"), *extra]
            return argv + (["-p", str(pid)] if pid else ["--", *cmd])
        raise ValueError(tool)

    def samples(self, tool: str, out: Path) -> tuple[int, int | None]:
        """(samples written, samples lost as the tool reports them)."""
        if tool in ("hotspot", BASELINE):
            info = hotspot_info(out / "capture.hsp")
            return info["counts"]["samples"], info["counts"].get("lost")
        if tool.startswith("perf"):
            return perf_counts(out / "perf.data")
        if tool == "samply":
            return samply_samples(out), None
        raise ValueError(tool)


def hotspot_info(path: Path) -> dict:
    r = subprocess.run([str(HOTSPOT), "info", "--json", str(path)], text=True,
                       capture_output=True)
    if r.returncode != 0:
        raise RuntimeError(f"hotspot info {path}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def perf_counts(path: Path) -> tuple[int, int]:
    """SAMPLE events (`perf report --stats`, the same count as
    `perf report -D | grep -c PERF_RECORD_SAMPLE`), and samples lost (LOST events' counts,
    from LOST_SAMPLES / LOST records when present)."""
    r = subprocess.run(["perf", "report", "--stats", "-i", str(path)], text=True,
                       capture_output=True)
    m = re.search(r"^\s*SAMPLE events:\s+(\d+)", r.stdout, re.M)
    if not m:
        raise RuntimeError(f"perf report --stats {path}: no SAMPLE line\n{r.stderr[-2000:]}")
    lost = 0
    for kind in ("LOST", "LOST_SAMPLES"):
        m2 = re.search(rf"^\s*{kind} events:\s+(\d+)", r.stdout, re.M)
        if m2:
            lost += int(m2.group(1))
    return int(m.group(1)), lost


def samply_samples(out: Path) -> int:
    """Sums the sample counts of every thread of samply's (processed-format) profile."""
    files = [f for f in out.iterdir() if f.name.startswith("profile.json")]
    if not files:
        raise RuntimeError(f"samply wrote no profile in {out}")
    f = files[0]
    raw = f.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw)

    def threads(d):
        yield from d.get("threads", [])
        for p in d.get("processes", []):
            yield from threads(p)

    total = 0
    for t in threads(doc):
        s = t.get("samples", {})
        if "length" in s:
            total += s["length"]
        elif "data" in s:
            total += len(s["data"])
        elif "stack" in s:
            total += len(s["stack"])
    return total


def ensure_bpftool() -> None:
    """bpftool, which reads the kernel's BPF run time per program (scenarios 7, 9, 10):
    Debian's package, installed with apt-get when missing (the bench runs as root)."""
    if shutil.which("bpftool"):
        return
    log("bpftool not found: apt-get update && apt-get install -y bpftool")
    sh(["apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-qq"])
    sh(["apt-get", "-o", "DPkg::Lock::Timeout=600", "install", "-y", "-qq",
        "--no-install-recommends", "bpftool"])
    if not shutil.which("bpftool"):
        die("bpftool did not install: BPF time per sample (scenarios 7, 9, 10) needs it")


def ensure_samply() -> str:
    found = shutil.which("samply") or str(Path.home() / ".cargo/bin/samply")
    if Path(found).exists():
        return found
    log("samply not found: cargo install samply --locked")
    sh(["cargo", "install", "samply", "--locked"])
    found = shutil.which("samply") or str(Path.home() / ".cargo/bin/samply")
    if not Path(found).exists():
        die("samply did not install")
    return found
