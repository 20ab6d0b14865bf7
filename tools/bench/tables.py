"""Cells of the output's tables: a median with its range, a verdict, a shortened command."""

from __future__ import annotations

import shlex
from pathlib import Path

from harness import REPO, median, spread


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
