# A hot loop on known lines; writes CPython's own line table of hot() to argv[1]:
# dis.findlinestarts (co_lnotab before 3.10, co_lines after) and, from 3.11, the lines of
# co_positions(), so the test holds hotspot's lines against the interpreter's answer; and
# the line dis gives the instruction main() calls hot() with, the one instruction a
# sampled main() frame can be at.
import dis, json, sys, threading, time


def hot(n):
    total = 0
    for i in range(n):
        total += i * i % 7
        total ^= (i << 3) & 0xFFFF
        total = total % 1000003
    return total


def call_line():
    """The line of the CALL instruction after main() loads hot, by dis."""
    line, loaded = None, False
    for i in dis.get_instructions(main):
        if getattr(i, "positions", None) is not None and i.positions.lineno:
            line = i.positions.lineno
        elif isinstance(i.starts_line, int) and not isinstance(i.starts_line, bool):
            line = i.starts_line
        if i.opname == "LOAD_GLOBAL" and i.argval == "hot":
            loaded = True
        elif loaded and i.opname.startswith("CALL"):
            return line
    return None


def main():
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        hot(20000)
    code = hot.__code__
    out = {
        "first_line": code.co_firstlineno,
        "line_starts": sorted({l for _, l in dis.findlinestarts(code) if l}),
        "positions": sorted({p[0] for p in code.co_positions() if p[0]})
        if hasattr(code, "co_positions")
        else None,
        "call_line": call_line(),
        "tid": threading.get_native_id(),
    }
    with open(sys.argv[1], "w") as f:
        json.dump(out, f)


main()
