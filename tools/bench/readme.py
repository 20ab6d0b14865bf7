"""README.md's benchmark summary: the goal rows of every BENCHMARKS*.md at the root."""

from __future__ import annotations

import re

from harness import REPO, log


README_BEGIN = "<!-- benchmark summary: written by tools/bench/run -->"
README_END = "<!-- end of benchmark summary -->"


def write_readme_summary() -> None:
    """README.md's short benchmark summary: every goal row (not the information rows) of
    the summary tables in the BENCHMARKS*.md files at the repository root, with the run
    each comes from; the detail stays in those files."""
    readme = REPO / "README.md"
    text = readme.read_text()
    if README_BEGIN not in text or README_END not in text:
        log("README.md has no benchmark summary markers; not rewritten")
        return
    out = [README_BEGIN, ""]
    for path in sorted(REPO.glob("BENCHMARKS*.md"), key=lambda p: (p.name != "BENCHMARKS.md", p.name)):
        lines = path.read_text().splitlines()
        when = next((l for l in lines if l.startswith("Written by")), "")
        m = re.search(r"on (\d{4}-\d\d-\d\d \d\d:\d\d UTC) in ([\d.]+ min)", when)
        run = f"{m.group(1)}, {m.group(2)}" if m else "date unknown"
        kind = "full run" if "full run" in when else "quick run"
        rows = []
        for l in lines:
            if not l.startswith("| ") or l.startswith("| # ") or l.startswith("|---"):
                continue
            cells = [c.strip() for c in l.strip("|").split(" | ")]
            if len(cells) != 8 or not cells[0].isdigit():
                continue
            n, measure, hot, _perf, _samply, ratio, goal, verdict_ = cells
            if goal.startswith("(information") or goal == "—":
                continue
            rows.append(f"| {n} | {measure} | {hot} | {ratio} | {goal} | {verdict_} |")
        if not rows:
            continue
        out.append(f"From [`{path.name}`]({path.name}) ({kind}, {run}):")
        out.append("")
        out.append("| # | measure | hotspot | ratio | goal | verdict |")
        out.append("|---|---|---|---|---|---|")
        out.extend(rows)
        out.append("")
    out.append(README_END)
    a, b = text.index(README_BEGIN), text.index(README_END) + len(README_END)
    readme.write_text(text[:a] + "\n".join(out) + text[b:])
    log("rewrote README.md's benchmark summary")
