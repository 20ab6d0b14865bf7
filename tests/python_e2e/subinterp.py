# The work runs in a sub-interpreter of the main thread (the C API's Py_NewInterpreter,
# reached through CPython's private module: _xxsubinterpreters 3.8-3.12, _interpreters
# 3.13). The main interpreter's frames meanwhile stay at the call below.
import sys

CODE = """
import time
def sub_work():
    t = time.monotonic()
    while time.monotonic() - t < 1.5:
        sum(i * i for i in range(1000))
sub_work()
"""

try:
    import _interpreters as interpreters
except ImportError:
    import _xxsubinterpreters as interpreters

interp = interpreters.create()
interpreters.run_string(interp, CODE)
interpreters.destroy(interp)
print("subinterp: done", file=sys.stderr)
