"""Prints, for many code objects, the raw line table and CPython's own line for every
instruction offset: one JSON object per line. Run by python/tests/line_tables.rs under
every installed interpreter (3.8-3.13)."""

import ctypes
import dis
import importlib.util
import json
import sys

addr2line = ctypes.pythonapi.PyCode_Addr2Line
addr2line.argtypes = [ctypes.py_object, ctypes.c_int]
addr2line.restype = ctypes.c_int

# Code with what line tables find hard: big line gaps both ways, long bodies (byte
# deltas over 255), multi-line expressions, decorators, nested functions, lambdas,
# comprehensions, generators, try/finally, a class body, non-ASCII names.
SYNTHETIC = '''
import functools

def deco(f):
    return f

@deco
@functools.lru_cache(
    maxsize=None,
)
def decorated(a,
              b=(1,
                 2)):
    return (a +
            b[0]
            + b[1])

def long_body(x):
    y = 0
''' + "".join("    y += x * %d\n    if y > %d:\n        y -= %d\n" % (i, i * 7, i) for i in range(120)) + '''
    return y

def gaps(x):
    a = x''' + "\n" * 300 + '''
    b = a + 1''' + "\n" * 40 + '''
    return [
        a,
        b,
    ]

class Klass:
    attr = 1

    def method(self):
        def inner(z):
            return lambda w: z + w
        return inner(self.attr)(2)

    @property
    def prop(self):
        return {k: v for k, v in zip("ab", (1, 2)) if v}

def gen(n):
    for i in range(n):
        try:
            yield i
        finally:
            pass

def na\u00efve(\u00e9t\u00e9):
    return [x for x in \u00e9t\u00e9]

def \u51fd\u6570():
    return 1

def \U00020000():
    return 2
'''

def code_objects(code):
    yield code
    for c in code.co_consts:
        if hasattr(c, "co_code"):
            yield from code_objects(c)

def sources():
    yield "<synthetic>", SYNTHETIC
    yield __file__, open(__file__, encoding="utf-8").read()
    for name in ["argparse", "dis", "inspect", "threading", "json.decoder", "typing"]:
        spec = importlib.util.find_spec(name)
        with open(spec.origin, encoding="utf-8") as f:
            yield spec.origin, f.read()

def oracle_lines(code, nbytes):
    """The Python-level answer per 2-byte offset, where the version has one."""
    if sys.version_info >= (3, 11):
        return [p[0] for p in code.co_positions()]
    if sys.version_info >= (3, 10):
        lines = [None] * (nbytes // 2)
        for start, end, line in code.co_lines():
            for off in range(start, end, 2):
                if off < nbytes:
                    lines[off // 2] = line
        return lines
    starts = dict(dis.findlinestarts(code))
    lines, line = [], code.co_firstlineno
    for off in range(0, nbytes, 2):
        line = starts.get(off, line)
        lines.append(line)
    return lines

for path, source in sources():
    for code in code_objects(compile(source, path, "exec")):
        table = code.co_lnotab if sys.version_info < (3, 10) else code.co_linetable
        nbytes = len(code.co_code)
        print(json.dumps({
            "file": path,
            "qualname": getattr(code, "co_qualname", code.co_name),
            "first": code.co_firstlineno,
            "table": table.hex(),
            "nbytes": nbytes,
            "addr2line": [addr2line(code, off) for off in range(0, nbytes, 2)],
            "python": oracle_lines(code, nbytes),
        }))
