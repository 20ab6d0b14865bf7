"""Scenario 5 (issue 7): opening a big capture, `hotspot report` against
`perf report --stdio`, and how the report's memory grows with samples and with stacks."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from harness import GEN, HOTSPOT, NCPU, fresh_dir, log, median, ranges_overlap, rotate, sh
from measure import measure
from procs import start_busy, stop_all
from profilers import Tools, hotspot_info, perf_counts
from tables import med_rng, verdict


def run(cfg, fx, tools: Tools, work: Path) -> dict:
    """Opening a big capture: `hotspot report` vs `perf report --stdio`."""
    d = work / "s5"
    d.mkdir(parents=True, exist_ok=True)
    res = {"commands": {}}
    # Generated captures: the big one, one with 1/5 of the samples (same stacks) and one
    # with 4x the distinct stacks, to see what memory follows; and a second big one (another
    # seed) for `hotspot diff` of two big captures (issue 27).
    n = cfg["s5_samples"]
    gens = {"big": (n, 2000, 1), "fifth": (n // 5, 2000, 1), "stacks4x": (n, 8000, 1),
            "big2": (n, 2000, 2)}
    res["gen"] = {}
    for key, (ns, stacks, seed) in gens.items():
        path = d / f"gen-{key}.hsp"
        argv = [str(GEN), "-o", str(path), "--samples", str(ns), "--stacks", str(stacks),
                "--seed", str(seed)]
        if key == "big":
            res["commands"]["gen_capture"] = argv
        r = sh(argv, capture_output=True)
        res["gen"][key] = json.loads(r.stdout.strip().splitlines()[-1])
    res["big_capture"] = str(d / "gen-big.hsp")
    res["big_capture2"] = str(d / "gen-big2.hsp")

    # Real recordings with perf (and hotspot at the same time, same workload): -a -F 4999
    # on busy CPUs, long enough for the generated capture's sample count (full mode; or as
    # long as the quick budget allows), and a 10 s one, which perf report can open even
    # when it cannot open the long one.
    full_secs = cfg["s5_perf_secs"] or -(-n // (NCPU * 4999)) + 2
    res["recs"] = {}
    targets = {
        "hotspot (generated)": ([str(HOTSPOT), "report", str(d / "gen-big.hsp")],
                                res["gen"]["big"]["samples"]),
        "hotspot (generated, 1/5 samples)": ([str(HOTSPOT), "report", str(d / "gen-fifth.hsp")],
                                             res["gen"]["fifth"]["samples"]),
        "hotspot (generated, 4x stacks)": ([str(HOTSPOT), "report", str(d / "gen-stacks4x.hsp")],
                                           res["gen"]["stacks4x"]["samples"]),
        "hotspot (generated, seed 2)": ([str(HOTSPOT), "report", str(d / "gen-big2.hsp")],
                                        res["gen"]["big2"]["samples"]),
        "hotspot diff (generated, seed 1 vs seed 2)": (
            [str(HOTSPOT), "diff", str(d / "gen-big.hsp"), str(d / "gen-big2.hsp")],
            res["gen"]["big"]["samples"] + res["gen"]["big2"]["samples"]),
    }
    res["commands"]["hotspot diff"] = targets["hotspot diff (generated, seed 1 vs seed 2)"][0]
    res["commands"]["hotspot report"] = targets["hotspot (generated)"][0]
    # --baseline BIN: the same reports by another hotspot build (the one before a change),
    # interleaved with this one's in every round, so before and after share the machine.
    base = cfg.get("baseline")
    if base:
        res["baseline"], res["baseline_version"] = base, cfg.get("baseline_version")
        for key in list(targets):
            argv, ns = targets[key]
            targets["baseline " + key] = ([base] + argv[1:], ns)
    for secs in sorted({full_secs, 10}, reverse=True):
        pdir = fresh_dir(d / f"perf-{secs}s")
        hdir = fresh_dir(d / f"hotspot-{secs}s")
        busy = start_busy(fx, secs + 60, NCPU)
        try:
            time.sleep(0.3)
            perf_argv = ["perf", "record", "-e", "cpu-clock", "-g", "-a", "-F", "4999",
                         "-o", str(pdir / "perf.data"), "--", "sleep", f"{secs:g}"]
            hs_argv = [str(HOTSPOT), "record", "-a", "-F", "4999", "-d", f"{secs:g}",
                       "-o", str(hdir / "capture.hsp")]
            res["commands"].setdefault("perf record", perf_argv)
            res["commands"].setdefault("hotspot record", hs_argv)
            log(f"s5: recording {secs} s with perf and hotspot (-a -F 4999, every CPU busy)")
            with open(pdir / "record.log", "wb") as pl, open(hdir / "record.log", "wb") as hl:
                pp = subprocess.Popen(perf_argv, stdout=pl, stderr=pl, cwd=pdir)
                hp = subprocess.Popen(hs_argv, stdout=hl, stderr=hl, cwd=hdir)
                pp.wait(timeout=secs + 900)
                hp.wait(timeout=secs + 900)
        finally:
            stop_all(busy)
        perf_n, perf_lost = perf_counts(pdir / "perf.data")
        hs_n = hotspot_info(hdir / "capture.hsp")["counts"]["samples"]
        res["recs"][secs] = {"perf_samples": perf_n, "perf_lost": perf_lost,
                             "perf_bytes": (pdir / "perf.data").stat().st_size,
                             "hotspot_samples": hs_n,
                             "hotspot_bytes": (hdir / "capture.hsp").stat().st_size}
        targets[f"hotspot (real -a recording, {secs:g} s)"] = (
            [str(HOTSPOT), "report", str(hdir / "capture.hsp")], hs_n)
        if base:
            targets[f"baseline hotspot (real -a recording, {secs:g} s)"] = (
                [base, "report", str(hdir / "capture.hsp")], hs_n)
        targets[f"perf (real -a recording, {secs:g} s)"] = (
            ["perf", "report", "--stdio", "-i", str(pdir / "perf.data")], perf_n)
        res["commands"].setdefault("perf report", targets[f"perf (real -a recording, {secs:g} s)"][0])

    # Reports run under an address-space limit of 3/4 of the machine's memory, so that a
    # report that cannot fit fails on its own instead of pushing the machine into the OOM
    # killer.
    limit = int(0.75 * os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    res["mem_limit_gb"] = limit / 1e9
    rows = {k: [] for k in targets}
    failed = res.setdefault("failed", {})
    for r in range(cfg["rounds_s5"]):
        for key in rotate(list(targets), r):
            if key in failed:
                continue
            argv, ns = targets[key]
            run = measure(argv, workdir=d, stdout_to=Path(os.devnull), timeout=3600,
                          mem_limit=limit)
            if run.rc != 0:
                failed[key] = (f"rc={run.rc} after {run.wall:.0f} s, peak RSS "
                               f"{run.rss_mb:.0f} MB (address-space limit "
                               f"{limit / 1e9:.0f} GB): {run.stderr.strip()[-300:]}")
                log(f"s5 {key}: FAILED rc={run.rc}")
                continue
            rows[key].append({"wall": run.wall, "cpu": run.cpu, "rss_mb": run.rss_mb,
                              "anon_mb": run.anon_mb, "file_mb": run.file_mb,
                              "samples": ns, "us_per_sample": 1e6 * run.wall / max(ns, 1)})
            log(f"s5 {key}: {run.wall:.2f} s, {run.rss_mb:.0f} MB, {ns} samples")
    res["rows"] = rows
    return res


def baseline_rows(w, s5) -> None:
    """Scenario 5 with --baseline: each report of this build against the baseline build's,
    run interleaved in the same rounds (wall time and peak RSS, medians)."""
    rows, base = s5["rows"], s5.get("baseline_version") or Path(s5["baseline"]).name
    for key in sorted(k for k in rows if not k.startswith("baseline ")):
        now, before = rows.get(key) or [], rows.get("baseline " + key) or []
        if not now or not before:
            continue
        t_now, t_before = median([x["wall"] for x in now]), median([x["wall"] for x in before])
        m_now, m_before = median([x["rss_mb"] for x in now]), median([x["rss_mb"] for x in before])
        noise = ranges_overlap([x["wall"] for x in now], [x["wall"] for x in before])
        ok = (t_now <= t_before or noise) and m_now <= m_before * 1.02
        why = "within noise: ranges overlap" if noise and t_now > t_before else ""
        w(f"| 5 | `report` before/after: {key} (this build vs `{base}`) | "
          f"{med_rng([x['wall'] for x in now], '{:.3f}', ' s')}, {m_now:.1f} MB | — | — | "
          f"time ×{t_now / max(t_before, 1e-9):.2f}, RSS ×{m_now / max(m_before, 1e-9):.2f} "
          f"(baseline {med_rng([x['wall'] for x in before], '{:.3f}', ' s')}, {m_before:.1f} MB) | "
          f"no slower, no larger than before | {verdict(ok, why)} |")


def summary_rows(w, s5, cfg) -> None:
    rows, failed = s5["rows"], s5.get("failed", {})
    hg = rows["hotspot (generated)"]
    ups = lambda rs: [x["us_per_sample"] for x in rs]  # noqa: E731
    rss = lambda rs: median([x["rss_mb"] for x in rs])  # noqa: E731
    recs = sorted(((float(k), v) for k, v in s5["recs"].items()), reverse=True)
    # The longest perf recording perf report could open is the reference.
    ref = next((secs for secs, _ in recs if rows.get(f"perf (real -a recording, {secs:g} s)")),
               None)
    pr = rows.get(f"perf (real -a recording, {ref:g} s)", []) if ref is not None else []
    perf_note = "; ".join(f"{k} failed: {v}" for k, v in failed.items() if k.startswith("perf"))

    def vs_perf(hot, label, note=""):
        if not hot or not pr:
            bad = "; ".join(f"{k}: {v}" for k, v in failed.items())
            w(f"| 5 | {label} | — | — | — | — | hotspot ≥ 10× faster | "
              f"{verdict(None, 'a report failed: ' + bad)} |")
            return
        ratio = median(ups(pr)) / median(ups(hot))
        noise = ranges_overlap(ups(hot), [x / 10 for x in ups(pr)])
        why = "; ".join(x for x in (note, "within noise of 10×" if noise else "") if x)
        w(f"| 5 | {label} | {med_rng(ups(hot), '{:.3f}', ' µs')} | "
          f"{med_rng(ups(pr), '{:.2f}', ' µs')} | — | perf is {ratio:.1f}× slower per "
          f"sample | hotspot ≥ 10× faster | {verdict(ratio >= 10, why)} |")

    if ref is not None:
        ng = s5["gen"]["big"]["samples"]
        np_ = pr[0]["samples"] if pr else 0
        notes = ["" if ng == np_ else "sample counts differ: compared per sample"]
        if perf_note:
            notes.append(perf_note)
        vs_perf(hg, f"opening a big capture: `report` time per sample (hotspot: {ng:,} "
                    f"generated samples; perf: {np_:,} recorded in {ref:g} s)",
                "; ".join(x for x in notes if x))
        hr = rows.get(f"hotspot (real -a recording, {ref:g} s)", [])
        vs_perf(hr, f"same, hotspot on its own recording of the same {ref:g} s as perf "
                    f"({hr[0]['samples'] if hr else 0:,} samples)")
    else:
        w(f"| 5 | opening a big capture | — | — | — | — | hotspot ≥ 10× faster | "
          f"{verdict(None, 'perf report failed on every recording: ' + perf_note)} |")
    fifth = rows["hotspot (generated, 1/5 samples)"]
    s4x = rows["hotspot (generated, 4x stacks)"]
    if hg and fifth and s4x:
        g = s5["gen"]
        grow_samples = rss(hg) / rss(fifth)
        grow_stacks = rss(s4x) / rss(hg)
        per_sample = (rss(hg) - rss(fifth)) * 1e6 / (g["big"]["samples"] - g["fifth"]["samples"])
        per_stack = ((rss(s4x) - rss(hg)) * 1e6
                     / max(g["stacks4x"]["distinct_stacks"] - g["big"]["distinct_stacks"], 1))
        ok_mem = grow_samples < 1.25
        w(f"| 5 | `hotspot report` peak RSS: 5× the samples (same stacks) / 4× the distinct "
          f"stacks (same samples) | {rss(fifth):.0f} → {rss(hg):.0f} MB (×{grow_samples:.2f}, "
          f"{per_sample:+.1f} B per extra sample) / {rss(hg):.0f} → {rss(s4x):.0f} MB "
          f"(×{grow_stacks:.2f}, {per_stack / 1000:+.1f} kB per extra stack) | "
          f"perf report: {f'{rss(pr):.0f} MB' if pr else '—'} | — | — | memory follows "
          f"distinct stacks, not samples (5× samples: < ×1.25) | {verdict(ok_mem)} |")
    diff_row(w, rows)
    if s5.get("baseline"):
        baseline_rows(w, s5)


def diff_row(w, rows) -> None:
    """`hotspot diff` of the two big generated captures against `report` on each (issue 27):
    its time and peak RSS, against the sum of the two reports' (it reads both)."""
    d = rows.get("hotspot diff (generated, seed 1 vs seed 2)") or []
    a = rows.get("hotspot (generated)") or []
    b = rows.get("hotspot (generated, seed 2)") or []
    if not (d and a and b):
        w("| 5 | `hotspot diff` of two 5M-sample captures | not measured | — | — | — | no more "
          "than `report` on both | " + verdict(None, "a run failed") + " |")
        return
    walls = lambda rs: [x["wall"] for x in rs]  # noqa: E731
    t_d, t_ab = median(walls(d)), median(walls(a)) + median(walls(b))
    m_d = median([x["rss_mb"] for x in d])
    m_ab = median([x["rss_mb"] for x in a]) + median([x["rss_mb"] for x in b])
    w(f"| 5 | `hotspot diff` of two generated captures ({d[0]['samples'] // 2:,} samples "
      f"each) against `report` on each | {med_rng(walls(d), '{:.2f}', ' s')}, {m_d:.0f} MB "
      f"| — | — | reports: {median(walls(a)):.2f} s + {median(walls(b)):.2f} s = "
      f"{t_ab:.2f} s, {m_ab:.0f} MB | time and peak RSS no more than `report` on both | "
      f"{verdict(t_d <= t_ab and m_d <= m_ab)} |")


def details(w, s5, cfg, work: Path) -> None:
    w("### 5. Opening a big capture\n")
    g = s5["gen"]["big"]
    recs_txt = "; ".join(
        f"{float(k):g} s: perf {v['perf_samples']:,} samples in {v['perf_bytes']:,} bytes "
        f"({v['perf_lost']} lost), hotspot {v['hotspot_samples']:,} samples in "
        f"{v['hotspot_bytes']:,} bytes" for k, v in s5["recs"].items())
    w(f"The hotspot capture is generated by `format/examples/gen_capture/` (seed 1): "
      f"{g['samples']:,} samples, {g['distinct_stacks']:,} distinct stacks (Zipf), "
      f"{g['frames']:,} frames with symbols, {g['threads']} threads on {g['cpus']} CPUs "
      f"at {g['hz']} Hz ({g['seconds']:.0f} s of timestamps), {g['bytes']:,} bytes. perf "
      f"cannot read it, so perf's captures are real `perf record -g -a -F 4999` "
      f"recordings of every CPU busy (one `busy` per CPU), each recorded together with "
      f"`hotspot record -a -F 4999` of the same run ({recs_txt}). With `-a` the "
      f"recordings hold whatever else ran on the machine too. The contents differ from "
      f"the generated capture, so the comparison is **time per sample**. Each tool's "
      f"default text report, output to /dev/null: `hotspot report` (top 30 functions), "
      f"`perf report --stdio` (functions with call graphs); each report runs under an "
      f"address-space limit of {s5['mem_limit_gb']:.0f} GB (3/4 of the memory), a report "
      f"that fails is shown as failed. {cfg['rounds_s5']} round(s).\n")
    w("| capture | samples | wall | µs per sample | CPU | peak RSS | of which anonymous / "
      "file-backed (polled peaks) |")
    w("|---|---|---|---|---|---|---|")
    for key, rs in s5["rows"].items():
        if not rs:
            w(f"| {key} | — | failed: {s5.get('failed', {}).get(key, '?')} | | | | |")
            continue
        w(f"| {key} | {rs[0]['samples']:,} | {med_rng([x['wall'] for x in rs], '{:.2f}', ' s')} | "
          f"{med_rng([x['us_per_sample'] for x in rs], '{:.3f}')} | "
          f"{med_rng([x['cpu'] for x in rs], '{:.2f}', ' s')} | "
          f"{med_rng([x['rss_mb'] for x in rs], '{:.0f}', ' MB')} | "
          f"{median([x['anon_mb'] for x in rs]):.0f} / {median([x['file_mb'] for x in rs]):.0f} MB |")
    w("")
    w("Peak RSS is the process's `VmHWM` (its own high-water mark since exec, polled every "
      "~5 ms; `ru_maxrss` would also count the benchmark script's pages the child held "
      "between fork and exec); the split into anonymous memory (heap) and file-backed "
      "pages (the binary, mapped files) is the peak of `RssAnon`/`RssFile` in "
      "/proc/PID/status polled the same way.\n")
