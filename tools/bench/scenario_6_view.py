"""Scenario 6 (issue 7): `hotspot view`, its time to first frame in a pseudo-terminal and
its peak memory, and the terminal views' re-fold after a time-selection change (the model
benchmark, tui/benches/refold.rs, or replay/benches/refold.rs in a tree from before the
views had their own crate). With --baseline, the baseline build's view runs
interleaved with this one's in the same rounds, and so does the refold bench of the source
tree it was built in (TREE/target/release/hotspot)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

from build import baseline_tree, refold_bench
from harness import HOTSPOT, REPO, log, median, out_of, rotate
from measure import measure
from profilers import BASELINE, hotspot_info
from tables import baseline_name, before_after_row, med_rng, verdict
from terminal import first_frame_in_pty


def run(cfg, work: Path, big_capture: str | None) -> dict:
    """Time to first frame of `hotspot view`, and re-fold after a time-selection change:
    measured by what the TUI provides (a benchmark flag of `hotspot view` if there is one,
    else the model benchmark, `refold_bench`). Missing pieces are reported, not
    faked."""
    res = {"ttff": None, "bench": None, "read": None, "notes": [], "commands": {}}
    base = cfg.get("baseline")
    if base:
        res["baseline"], res["baseline_version"] = base, cfg.get("baseline_version")
    help_top = out_of([str(HOTSPOT), "--help"])
    has_view = re.search(r"^\s+view\b", help_top, re.M) is not None
    flag = None
    if has_view:
        # A benchmark flag may be hidden from --help: look for it in the CLI definition too.
        cli = (REPO / "src" / "cli.rs").read_text(errors="replace")
        cands = re.findall(r'long\s*=\s*"([a-z0-9-]*(?:first-frame|ttff)[a-z0-9-]*)"', cli)
        cands += re.findall(r"--((?:[a-z0-9]+-)*(?:first-frame|ttff)(?:-[a-z0-9]+)*)",
                            out_of([str(HOTSPOT), "view", "--help"]))
        flag = cands[0] if cands else None
    if not has_view:
        res["notes"].append("`hotspot view` does not exist in this build")
    elif not flag and big_capture:
        # No flag: time it from outside, in a pseudo-terminal of 160×50, from the start of
        # the process to the first screen showing the capture's whole sample count.
        n = hotspot_info(Path(big_capture))["counts"]["samples"]
        argv = [str(HOTSPOT), "view", big_capture]
        res["commands"]["hotspot view (in a pty)"] = argv
        builds = {"hotspot": argv}
        if base:
            builds[BASELINE] = [base, "view", big_capture]
            res["commands"]["baseline hotspot view (in a pty)"] = builds[BASELINE]
        got = pty_rounds(builds, f"{n:,} samples", cfg["rounds_s6"])
        vals, rss, why = got["hotspot"]
        if why:
            res["notes"].append(f"`hotspot view` in a pty: {why}")
        if vals:
            res["ttff"] = {"ms": vals, "pty": True, "samples": n, "rss_kb": rss}
        if base:
            bvals, brss, why = got[BASELINE]
            if why:
                res["notes"].append(f"the baseline's `hotspot view` in a pty: {why}")
            res["baseline_ttff"] = {"ms": bvals, "rss_kb": brss} if bvals else None
        # Peak memory of the viewer on 1/5 of the samples (same stacks), for the growth.
        fifth = Path(big_capture).with_name("gen-fifth.hsp")
        if vals and fifth.exists():
            nf = hotspot_info(fifth)["counts"]["samples"]
            argv = [str(HOTSPOT), "view", str(fifth)]
            res["commands"]["hotspot view, 1/5 of the samples (in a pty)"] = argv
            kbs = []
            for _ in range(cfg["rounds_s6"]):
                t, why, kb = first_frame_in_pty(argv, f"{nf:,} samples")
                if t is None:
                    res["notes"].append(f"`hotspot view` on {fifth.name}: {why}")
                    kbs = []
                    break
                kbs.append(kb)
            if kbs:
                res["fifth"] = {"samples": nf, "rss_kb": kbs}
        # Diff mode (issue 27): `view BASE NEW` on the two big generated captures, to the
        # first screen showing all of the new capture's samples.
        big2 = Path(big_capture).with_name("gen-big2.hsp")
        if vals and big2.exists():
            n2 = hotspot_info(big2)["counts"]["samples"]
            argv = [str(HOTSPOT), "view", big_capture, str(big2)]
            res["commands"]["hotspot view BASE NEW (in a pty)"] = argv
            got = pty_rounds({"hotspot": argv}, f"{n2:,} samples", cfg["rounds_s6"])
            dvals, drss, why = got["hotspot"]
            if why:
                res["notes"].append(f"`hotspot view BASE NEW` in a pty: {why}")
            if dvals:
                res["diff_ttff"] = {"ms": dvals, "samples": n2, "rss_kb": drss}
    elif big_capture:
        argv = [str(HOTSPOT), "view", big_capture, f"--{flag}"]
        res["commands"]["hotspot view"] = argv
        vals, text = [], ""
        for _ in range(cfg["rounds_s6"]):
            run = measure(argv, workdir=work, timeout=600)
            text = run.stdout + run.stderr
            m = re.search(r"([0-9.]+)\s*(ms|s|us|µs)\b", text)
            if run.rc != 0 or not m:
                res["notes"].append(f"`hotspot view --{flag}` gave rc={run.rc} and no time: "
                                    f"{text.strip()[:200]!r}")
                vals = []
                break
            vals.append(float(m.group(1)) * {"s": 1e3, "ms": 1.0, "us": 1e-3, "µs": 1e-3}[m.group(2)])
        if vals:
            res["ttff"] = {"ms": vals, "raw": text.strip()[:300]}

    # Reading and decoding the whole generated capture (what a viewer that loads the file
    # before drawing adds to the model's first frame): `hotspot info --json` on it.
    if big_capture:
        argv = [str(HOTSPOT), "info", "--json", big_capture]
        res["commands"]["read the capture"] = argv
        walls = []
        for _ in range(cfg["rounds_s6"]):
            run = measure(argv, workdir=work, stdout_to=Path(os.devnull), timeout=600)
            if run.rc == 0:
                walls.append(run.wall * 1000)
        res["read"] = walls or None

    found = refold_bench(REPO)
    src = found[0].read_text(errors="replace") if found else ""
    if not src or "first frame" not in src:
        res["notes"].append("the refold bench (tui/benches/refold.rs) is "
                            + ("missing" if not src else "not a benchmark yet (placeholder)"))
        return res

    def bench_argv(tree: Path) -> list[str]:
        return ["cargo", "bench", "--locked", "-q", "-p", refold_bench(tree)[1],
                "--bench", "refold", "--", str(cfg["s5_samples"])]

    argvs = {"hotspot": bench_argv(REPO)}
    res["commands"]["refold bench"] = argvs["hotspot"]
    res["refold_package"] = found[1]
    trees = {"hotspot": REPO}
    if base:
        tree = baseline_tree(base)
        if tree:
            trees[BASELINE] = tree
            argvs[BASELINE] = bench_argv(tree)
            res["baseline_tree"] = str(tree)
            res["commands"]["baseline refold bench (in the baseline's tree)"] = argvs[BASELINE]
        else:
            res["notes"].append(f"the refold bench has no baseline: {base} is not "
                                f"TREE/target/release/hotspot of a source tree with "
                                f"tui/benches/refold.rs or replay/benches/refold.rs")
    runs = {k: [] for k in trees}
    for i in range(cfg["rounds_s6_bench"]):
        for k in rotate(list(trees), i):
            if k not in trees:
                continue
            log(f"s6: refold bench, round {i + 1}" + (f" ({k})" if base else ""))
            r = subprocess.run(argvs[k], cwd=trees[k], text=True, capture_output=True)
            got = parse_refold(r.stdout)
            if r.returncode != 0 or got["first"] is None or not got["views"]:
                res["notes"].append(f"the {'baseline ' if k == BASELINE else ''}refold bench "
                                    f"failed or printed no figures (rc={r.returncode}): "
                                    f"{(r.stderr or r.stdout).strip()[-300:]!r}")
                if k == "hotspot":
                    return res
                del trees[k]
                runs[k] = []
                continue
            runs[k].append(got)
    res["bench"] = runs["hotspot"]
    if base:
        res["baseline_bench"] = runs.get(BASELINE) or None
    # The views' diff mode on two such captures (issue 27): the bench's --diff.
    argv = bench_argv(REPO) + ["--diff"]
    res["commands"]["refold bench, diff mode"] = argv
    diff_runs = []
    for i in range(cfg["rounds_s6_bench"]):
        log(f"s6: refold bench in diff mode, round {i + 1}")
        r = subprocess.run(argv, cwd=REPO, text=True, capture_output=True)
        got = parse_refold(r.stdout)
        if r.returncode != 0 or got["first"] is None or not got["views"]:
            res["notes"].append(f"the refold bench in diff mode failed or printed no figures "
                                f"(rc={r.returncode}): {(r.stderr or r.stdout).strip()[-300:]!r}")
            diff_runs = []
            break
        diff_runs.append(got)
    res["diff_bench"] = diff_runs or None
    return res


def parse_refold(stdout: str) -> dict:
    """The figures the refold bench prints."""
    got = {"first": None, "views": {}, "select_all": None, "raw": stdout}
    for line in stdout.splitlines():
        m = re.match(r"^first frame: ([0-9.]+) ms", line)
        if m:
            got["first"] = float(m.group(1))
        m = re.match(r"^move selection, (\w+) view: mean ([0-9.]+) ms worst ([0-9.]+) ms",
                     line)
        if m:
            got["views"][m.group(1)] = (float(m.group(2)), float(m.group(3)))
        m = re.match(r"^select all, (\w+) view: ([0-9.]+) ms", line)
        if m:
            got["select_all"] = float(m.group(2))
        m = re.match(r"^synthetic capture: (\d+) samples, (\d+) stacks", line)
        if m:
            got["samples"], got["stacks"] = int(m.group(1)), int(m.group(2))
    return got


def pty_rounds(builds: dict, needle: str, rounds: int) -> dict:
    """Each build's `view` (name → argv) in a pty until its screen shows `needle`, `rounds`
    times, the builds interleaved (the order rotating each round): name → (ms per run, peak
    RSS in kB per run, why it failed or None). A build that fails once is not run again and
    keeps no figures."""
    got = {k: ([], [], None) for k in builds}
    for r in range(rounds):
        for k in rotate(list(builds), r):
            ms, kbs, why = got[k]
            if why:
                continue
            t, why, kb = first_frame_in_pty(builds[k], needle)
            if t is None:
                got[k] = ([], [], why)
                continue
            ms.append(t * 1000)
            kbs.append(kb)
    return got


def s6_samples(runs) -> str:
    n = runs[0].get("samples")
    return f"{n:,} samples" if n else "the bench's size"


def summary_rows(w, s6, cfg) -> None:
    runs = s6["bench"] or []
    if s6["ttff"]:
        v = s6["ttff"]["ms"]
        how = ("from process start to the first screen showing all "
               f"{s6['ttff']['samples']:,} samples, in a 160×50 pty"
               if s6["ttff"].get("pty") else "as its timing flag reports it")
        w(f"| 6 | `hotspot view` time to first frame on the generated capture ({how}) | "
          f"{med_rng(v, '{:.0f}', ' ms')} | — | — | — | < 1 s | {verdict(median(v) < 1000)} |")
        big_kb, fifth = s6["ttff"].get("rss_kb"), s6.get("fifth")
        if big_kb and fifth:
            a, b = median(fifth["rss_kb"]) / 1024, median(big_kb) / 1024
            w(f"| 6 | `hotspot view` peak RSS: {fifth['samples']:,} → "
              f"{s6['ttff']['samples']:,} samples (same stacks) | {a:.0f} → {b:.0f} MB "
              f"(×{b / max(a, 1e-9):.2f}) | — | — | — | memory follows distinct stacks, "
              f"not samples (5× samples: < ×1.25) | {verdict(b / max(a, 1e-9) < 1.25)} |")
    if s6["ttff"] and runs:
        v = [r["first"] for r in runs]
        w(f"| 6 | (model only: first frame of the TUI model on an in-memory capture of "
          f"{s6_samples(runs)}, refold bench) | {med_rng(v, '{:.0f}', ' ms')} | — | — | — | "
          f"(information) | — |")
    elif runs:
        v = [r["first"] for r in runs]
        read = (f"; reading + decoding the generated {s6_samples(runs)} capture file "
                f"(`hotspot info`) takes {med_rng(s6['read'], '{:.0f}', ' ms')} more if the "
                f"viewer loads the whole file first" if s6["read"] else "")
        w(f"| 6 | time to first frame: the TUI model on an in-memory capture of "
          f"{s6_samples(runs)} (index, fold, timeline, draw; refold bench — `hotspot view` "
          f"has no timing flag) | {med_rng(v, '{:.0f}', ' ms')} | — | — | — | < 1 s | "
          f"{verdict(median(v) < 1000, 'the model only' + read)} |")
    else:
        w(f"| 6 | `hotspot view` time to first frame | not measured | — | — | — | < 1 s | "
          f"{verdict(None, '; '.join(s6['notes']))} |")
    if runs:
        views = sorted(runs[0]["views"])
        means = {k: [r["views"][k][0] for r in runs if k in r["views"]] for k in views}
        worsts = {k: max(r["views"][k][1] for r in runs if k in r["views"]) for k in views}
        cell = "; ".join(f"{k}: {med_rng(means[k], '{:.1f}', ' ms')}" for k in views)
        top = max(median(x) for x in means.values())
        worst = max(worsts.values())
        w(f"| 6 | re-fold + redraw after moving a 1/10 time selection, mean of 20 moves per "
          f"view (refold bench) | {cell} | — | — | — | < 100 ms | "
          f"{verdict(top < 100, f'slowest single move {worst:.1f} ms')} |")
    else:
        w(f"| 6 | re-fold after a time-selection change | not measured | — | — | — | < 100 ms | "
          f"{verdict(None, '; '.join(s6['notes']))} |")
    diff_rows(w, s6)
    if s6.get("baseline"):
        baseline_rows(w, s6)


def diff_rows(w, s6) -> None:
    """The views' diff mode (issue 27): `view BASE NEW`'s first frame in a pty, and the
    refold bench's --diff moves."""
    d = s6.get("diff_ttff")
    if d:
        w(f"| 6 | `hotspot view BASE NEW` (diff mode) time to first frame on two generated "
          f"captures (to the first screen showing all {d['samples']:,} samples of the new one, "
          f"160×50 pty) | {med_rng(d['ms'], '{:.0f}', ' ms')}, peak RSS "
          f"{median(d['rss_kb']) / 1024:.0f} MB | — | — | — | < 1 s | "
          f"{verdict(median(d['ms']) < 1000)} |")
    runs = s6.get("diff_bench") or []
    if runs:
        views = sorted(runs[0]["views"])
        means = {k: [r["views"][k][0] for r in runs if k in r["views"]] for k in views}
        worst = max(max(r["views"][k][1] for r in runs if k in r["views"]) for k in views)
        cell = "; ".join(f"{k}: {med_rng(means[k], '{:.1f}', ' ms')}" for k in views)
        top = max(median(x) for x in means.values())
        w(f"| 6 | diff mode: diff + re-fold + redraw after moving a 1/10 time selection of "
          f"the new capture (flat, flame, callers) or of the base (base), mean of 20 moves "
          f"(refold bench --diff, {s6_samples(runs)} each) | {cell} | — | — | — | < 100 ms | "
          f"{verdict(top < 100, f'slowest single move {worst:.1f} ms')} |")
        v = [r["first"] for r in runs]
        w(f"| 6 | diff mode, model only: first frame of two in-memory captures (index both, "
          f"diff, folds, timelines, draw; refold bench --diff) | "
          f"{med_rng(v, '{:.0f}', ' ms')} | — | — | — | (information) | — |")


def baseline_rows(w, s6) -> None:
    """With --baseline: the view's first frame and the refold bench's figures, this build
    against the baseline's, measured interleaved in the same rounds."""
    name = baseline_name(s6)
    now, before = s6["ttff"] or {}, s6.get("baseline_ttff") or {}
    extra = ""
    if now.get("rss_kb") and before.get("rss_kb"):
        extra = (f"; peak RSS {median(now['rss_kb']) / 1024:.0f} MB, baseline "
                 f"{median(before['rss_kb']) / 1024:.0f} MB")
    before_after_row(w, 6, "`hotspot view` time to first frame in a pty", now.get("ms"),
                     before.get("ms"), name, "{:.0f}", " ms", extra)
    runs, bruns = s6["bench"] or [], s6.get("baseline_bench") or []
    before_after_row(w, 6, "refold bench: first frame of the model", [r["first"] for r in runs],
                     [r["first"] for r in bruns], name, "{:.0f}", " ms")
    views = sorted(set(runs[0]["views"]) & set(bruns[0]["views"])) if runs and bruns else []
    for k in views:
        before_after_row(w, 6, f"refold bench: re-fold + redraw after moving a 1/10 time "
                               f"selection, {k} view, mean of 20 moves",
                         [r["views"][k][0] for r in runs if k in r["views"]],
                         [r["views"][k][0] for r in bruns if k in r["views"]], name,
                         "{:.1f}", " ms")


def details(w, s6, cfg, work: Path) -> None:
    w("### 6. `hotspot view`\n")
    if s6["ttff"] and s6["ttff"].get("pty"):
        w(f"Time to first frame: `hotspot view` runs in a pseudo-terminal of 160×50 "
          f"(TERM=xterm-256color) on the generated capture; the time is from starting the "
          f"process to the first output in which the screen shows "
          f"\"{s6['ttff']['samples']:,} samples\" (the whole capture read), so it includes "
          f"start-up, reading and decoding the file, folding and drawing. Then `q`. "
          f"{len(s6['ttff']['ms'])} runs.\n")
    elif s6["ttff"]:
        w(f"Time to first frame, as `hotspot view` reports it: {s6['ttff']['raw']!r}.\n")
    if s6["bench"]:
        w(f"Re-fold: `cargo bench -p {s6.get('refold_package', 'hotspot-tui')} --bench refold "
          f"-- {cfg['s5_samples']}` "
          f"(the TUI's own benchmark): it builds a synthetic capture in memory "
          f"(300 functions, 3,000 stacks, 8 threads, 100 s with phases) and times the "
          f"terminal views' model: the first frame (index + fold + timeline + draw into a "
          f"160×50 buffer), then 20 moves of a selection one tenth of the capture wide in "
          f"each view (re-fold + redraw). It reads no file (for scale: `hotspot info --json` "
          f"reads and decodes the generated capture in "
          f"{med_rng(s6['read'] or [], '{:.0f}', ' ms')}). {len(s6['bench'])} run(s); "
          f"output of the first:\n")
        w("```")
        w(s6["bench"][0]["raw"].rstrip())
        w("```")
        w("")
    if s6.get("diff_bench"):
        w("Diff mode: `hotspot view BASE NEW` in the same pty setup on the two generated "
          "captures (seeds 1 and 2); the refold bench with `--diff` compares two synthetic "
          "captures of that size (the second's phases drawing from other stacks); output of "
          "its first run:\n")
        w("```")
        w(s6["diff_bench"][0]["raw"].rstrip())
        w("```")
        w("")
    if s6.get("baseline"):
        b = s6.get("baseline_ttff")
        w(f"Before/after (`--baseline {s6['baseline']}`, {baseline_name(s6)}): the baseline "
          f"build's `hotspot view` ran in the same pty setup, interleaved with this build's "
          f"in every round (the order rotating), "
          + (f"{len(b['ms'])} runs" if b else "no figures")
          + (f"; the refold bench of its source tree (`{s6['baseline_tree']}`) likewise, "
             if s6.get("baseline_tree") else "; the refold bench had no baseline, ")
          + ("output of its first run:\n" if s6.get("baseline_bench") else "see the notes.\n"))
        if s6.get("baseline_bench"):
            w("```")
            w(s6["baseline_bench"][0]["raw"].rstrip())
            w("```")
            w("")
    for n in s6["notes"]:
        w(f"- {n}.")
    w("")
