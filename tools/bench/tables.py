"""Cells of the output's tables: a median with its range, a verdict, a shortened command."""

from __future__ import annotations

import shlex
from pathlib import Path

from harness import REPO, median, ranges_overlap, spread


def med_rng(xs, fmt="{:.2f}", unit=""):
    if not xs:
        return "—"
    lo, hi = spread(xs)
    return f"{fmt.format(median(xs))}{unit} [{fmt.format(lo)}–{fmt.format(hi)}]"


def shorten(argv, work: Path) -> str:
    s = " ".join(shlex.quote(str(a)) for a in argv)
    s = s.replace(str(work), "$W").replace(str(REPO) + "/", "").replace(str(Path.home()), "~")
    return s


def verdict(ok: bool | None, why: str = "") -> str:
    if ok is None:
        return "not measured" + (f" ({why})" if why else "")
    return ("met" if ok else "**goal missed**") + (f" ({why})" if why else "")


def before_after_row(w, n: int, label: str, now, before, baseline: str, fmt: str,
                     unit: str, extra: str = "") -> None:
    """A summary row of --baseline: this build's figures `now` against the baseline build's
    `before`, measured interleaved in the same rounds (lower is better); `baseline` names
    the baseline build. No worse = the median is no higher, or the two ranges overlap
    (within noise)."""
    if not now or not before:
        w(f"| {n} | {label} before/after (this build vs `{baseline}`) | "
          f"{med_rng(now, fmt, unit)} | — | — | baseline {med_rng(before, fmt, unit)} | "
          f"no worse than before | {verdict(None, 'a build has no figures')} |")
        return
    m_now, m_before = median(now), median(before)
    noise = ranges_overlap(now, before)
    why = "within noise: ranges overlap" if noise and m_now > m_before else ""
    w(f"| {n} | {label} before/after (this build vs `{baseline}`) | "
      f"{med_rng(now, fmt, unit)} | — | — | ×{m_now / max(m_before, 1e-12):.2f} (baseline "
      f"{med_rng(before, fmt, unit)}{extra}) | no worse than before | "
      f"{verdict(m_now <= m_before or noise, why)} |")


def baseline_name(res: dict) -> str:
    """How the output names a scenario's --baseline build: its --version, else its path."""
    return res.get("baseline_version") or res["baseline"]
