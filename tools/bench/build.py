"""What a run needs built (the C fixtures, hotspot, the generated-capture example, the
refold bench) and the machine it ran on."""

from __future__ import annotations

import datetime as dt
import platform
import subprocess
from pathlib import Path

from harness import CFLAGS, FIXTURES, GEN, HOTSPOT, NCPU, REPO, die, log, out_of, sh


def build(args, work: Path) -> dict:
    fx_dir = work / "fixtures"
    fx_dir.mkdir(parents=True, exist_ok=True)
    fx = {}
    for name in FIXTURES:
        out = fx_dir / name
        fx[name] = out
        if args.no_build and out.exists():
            continue
        sh(["gcc", *CFLAGS, "-o", str(out), str(REPO / "fixtures" / f"{name}.c")])
    only = getattr(args, "only_set", {1, 2, 3, 4, 5, 6, 7, 8})
    if not args.no_build:
        log("cargo build --release (hotspot)" + (" and the gen_capture example" if 5 in only else ""))
        sh(["cargo", "build", "--release", "--locked"], cwd=REPO)
        if 5 in only:
            sh(["cargo", "build", "--release", "--locked", "-p", "hotspot-format",
                "--example", "gen_capture"], cwd=REPO)
        if 6 in only and (REPO / "replay" / "benches" / "refold.rs").exists():
            # Compiled now so that scenario 6 times the bench, not the compiler; a failure
            # here is reported by scenario 6.
            subprocess.run(["cargo", "bench", "--locked", "--no-run", "-p", "hotspot-replay",
                            "--bench", "refold"], cwd=REPO)
        tree = baseline_tree(args.baseline) if args.baseline and 6 in only else None
        if tree:
            log(f"cargo bench --no-run (the refold bench of the baseline's tree, {tree})")
            subprocess.run(["cargo", "bench", "--locked", "--no-run", "-p", "hotspot-replay",
                            "--bench", "refold"], cwd=tree)
    for p in (HOTSPOT, GEN) if 5 in only else (HOTSPOT,):
        if not p.exists():
            die(f"{p} missing (build failed?)")
    return fx


def baseline_tree(binary) -> Path | None:
    """The source tree a --baseline binary was built in (TREE/target/release/hotspot), if it
    holds the refold bench: scenario 6 runs that tree's bench as the baseline's."""
    p = Path(binary).resolve()
    if p.parent.name != "release" or p.parent.parent.name != "target":
        return None
    tree = p.parents[2]
    return tree if (tree / "replay" / "benches" / "refold.rs").exists() else None


def machine_info(samply: str) -> dict:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem = "?"
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    virt = out_of(["systemd-detect-virt"], "unknown")
    rev = out_of(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"])
    dirty = out_of(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"], "")
    return {
        "cpu": cpu,
        "cores": f"{NCPU} online CPUs",
        "kernel": f"{platform.release()} ({platform.machine()})",
        "memory": mem,
        "virtualisation": virt,
        "hotspot": out_of([str(HOTSPOT), "--version"]) + f" (git {rev}"
        + (", with uncommitted changes in the tree" if dirty else "") + ")",
        "perf": out_of(["perf", "--version"]),
        "samply": out_of([samply, "--version"]),
        "gcc": out_of(["gcc", "--version"]).splitlines()[0],
        "rustc": out_of(["rustc", "--version"]),
        "bpftool": out_of(["bpftool", "--version"]).splitlines()[0],
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
