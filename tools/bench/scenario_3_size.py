"""Scenario 3 (issue 7): bytes per sample on disk, symbols included, of a recording of the
`phased` fixture."""

from __future__ import annotations

from pathlib import Path

from harness import fresh_dir, log, median, rotate
from measure import measure
from profilers import Tools, hotspot_info
from tables import med_rng, verdict


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """Bytes per sample of a recording of `phased` (three phases), symbols included."""
    per_phase, rounds, hz = cfg["s3_phase_secs"], cfg["rounds_s3"], 499
    names = ["hotspot", "perf", "perf -z", "samply"]
    rows = {t: [] for t in names}
    res = {"secs": 3 * per_phase, "hz": hz, "rounds": rounds, "commands": {}}
    for r in range(rounds):
        for tool in rotate(names, r):
            d = fresh_dir(work / "s3" / tool.replace(" ", "_"))
            extra = ["--presymbolicate"] if tool == "samply" else []
            argv = tools.record_cmd(tool, hz, d, cmd=[str(fx["phased"]), f"{per_phase:g}"],
                                    extra=extra)
            res["commands"].setdefault(tool, argv)
            with tools.running(tool):
                run = measure(argv, workdir=d, timeout=3 * per_phase + 300)
            if run.rc != 0:
                raise RuntimeError(f"{tool}: rc={run.rc}\n{run.stderr[-3000:]}")
            n, _ = tools.samples(tool, d)
            files = {f.name: f.stat().st_size for f in d.iterdir()
                     if f.is_file() and not f.name.startswith("last.")}
            size = sum(files.values())
            row = {"bytes": size, "samples": n, "bps": size / max(n, 1), "files": files}
            if tool == "hotspot":
                info = hotspot_info(d / "capture.hsp")
                recs = {x["kind"]: x for x in (info.get("size") or {}).get("records", [])}
                if recs and all(x.get("disk_bytes") is not None for x in recs.values()):
                    sym = sum(recs[k]["disk_bytes"] for k in ("String", "Symbol") if k in recs)
                    row["symbol_bytes"] = sym
                    row["symbol_share"] = sym / size
                    row["kinds"] = {k: v["disk_bytes"] for k, v in recs.items()}
            rows[tool].append(row)
            log(f"s3 {tool}: {size} bytes, {n} samples, {size / max(n, 1):.2f} B/sample")
    res["rows"] = rows
    return res


def summary_rows(w, s3, cfg) -> None:
    rows = s3["rows"]
    b = {t: [x["bps"] for x in rows[t]] for t in rows}
    peers = {t: median(b[t]) for t in ("perf", "perf -z", "samply")}
    best = min(peers, key=peers.get)
    ratio = median(b["hotspot"]) / peers[best]
    w(f"| 3 | bytes per sample on disk, symbols included ({s3['secs']:g} s of `phased` @ "
      f"{s3['hz']} Hz) | {med_rng(b['hotspot'], '{:.2f}', ' B')} | "
      f"{med_rng(b['perf'], '{:.1f}', ' B')} (`-z`: {med_rng(b['perf -z'], '{:.1f}', ' B')}) | "
      f"{med_rng(b['samply'], '{:.1f}', ' B')} | {ratio:.3f}× the smallest peer's "
      f"(`{best}`) | ≤ 0.5× | {verdict(ratio <= 0.5)} |")
    sh_ = [x["symbol_share"] for x in rows["hotspot"] if "symbol_share" in x]
    w(f"| 3 | share of hotspot's capture taken by symbols (String + Symbol records) | "
      f"{med_rng([100 * x for x in sh_], '{:.1f}', '%') if sh_ else 'not reported'} | — | — | — | "
      f"(information) | — |")


def details(w, s3, cfg, work: Path) -> None:
    w("### 3. Capture size\n")
    w(f"`phased {s3['secs'] / 3:g}` ({s3['secs']:g} s, three phases) launched by each "
      f"profiler at {s3['hz']} Hz, {s3['rounds']} round(s). Bytes = every file the tool "
      f"wrote: hotspot's capture (names embedded); samply's `profile.json.gz` plus its "
      f"`--presymbolicate` sidecar (`profile.json.syms.json`); perf's `perf.data`. **perf.data "
      f"holds no symbols** (perf reads the binaries and debug info again when opening it), "
      f"so its figure flatters perf. The symbol share is the disk bytes that "
      f"`hotspot info --json` attributes to String and Symbol records (each block's "
      f"bytes split by its records' raw shares).\n")
    w("| tool | files | bytes | samples | bytes/sample |")
    w("|---|---|---|---|---|")
    for t, rs in s3["rows"].items():
        files = ", ".join(f"{k} {v:,}" for k, v in rs[0]["files"].items())
        w(f"| {t} | {files} | {med_rng([x['bytes'] for x in rs], '{:,.0f}')} | "
          f"{med_rng([x['samples'] for x in rs], '{:.0f}')} | "
          f"{med_rng([x['bps'] for x in rs], '{:.2f}')} |")
    k = s3["rows"]["hotspot"][0].get("kinds")
    if k:
        tot = sum(k.values())
        w("")
        w("hotspot's capture by record kind (first round, disk bytes): " + ", ".join(
            f"{n} {v:,} ({100 * v / max(tot, 1):.1f}%)" for n, v in
            sorted(k.items(), key=lambda kv: -kv[1]) if v) + ".")
    w("")
