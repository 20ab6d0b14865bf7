"""A process for python/tests/live_process.rs to read from outside: four threads block
in known places (a sleep under non-ASCII names, a pipe read under a call from C, an
Event wait, the main thread's sleep) and one JSON line per thread tells what an outside
reader must find: the thread's FS base and thread state, and its Python stack with the
code objects' addresses, names and lines. Then "ready", and everything stays blocked
until the test kills the process."""

import ctypes
import json
import os
import sys
import threading
import time

libc = ctypes.CDLL(None, use_errno=True)
SYS_ARCH_PRCTL, ARCH_GET_FS = 158, 0x1003
ctypes.pythonapi.PyThreadState_Get.restype = ctypes.c_void_p

blocked = {}  # thread name -> ident, once the thread is about to block
infos = {}


def fs_base():
    v = ctypes.c_ulong()
    assert libc.syscall(SYS_ARCH_PRCTL, ARCH_GET_FS, ctypes.byref(v)) == 0
    return v.value


def about_to_block(name):
    """Records this thread's FS base and thread state (taken from `_Py_tss_tstate` /
    the current-state pointer, not from the pthread key the reader will use)."""
    infos[name] = {
        "fs_base": fs_base(),
        "tstate": ctypes.pythonapi.PyThreadState_Get(),
        "ident": threading.get_ident(),
    }
    blocked[name] = threading.get_ident()


# A sleep under non-ASCII names: Latin-1, UCS-2 and UCS-4 strings.
def naïve():
    函数()


def 函数():
    𠀀()


def 𠀀():
    about_to_block("sleeper")
    time.sleep(1000)


def sleeper():
    naïve()


# A pipe read in a function called from C (map), so its frame starts an eval loop.
READ_END, WRITE_END = os.pipe()


def reader_b(fd):
    about_to_block("reader")
    return os.read(fd, 1)


def reader():
    list(map(reader_b, [READ_END]))


class Waiter:
    def wait(self, event):
        about_to_block("waiter")
        event.wait()


NEVER = threading.Event()


def main_b():
    about_to_block("main")
    time.sleep(1000)


def main_a():
    main_b()


# Functions called from C (besides each thread's oldest frame), whose frames start an
# eval-loop call, and functions called by a plain call from Python, whose frames do not
# on 3.11+ (which runs such calls in the caller's eval loop). Other frames (the standard
# library's) are left open.
CALLED_FROM_C = {"reader_b"}
CALLED_FROM_PYTHON = {"naïve", "函数", "𠀀", "main_a", "main_b"}


def stack_of(ident):
    frame = sys._current_frames()[ident]
    stack = []
    while frame is not None:
        code = frame.f_code
        stack.append({
            "code": id(code),
            "qualname": getattr(code, "co_qualname", code.co_name),
            "filename": code.co_filename,
            "first": code.co_firstlineno,
            "line": frame.f_lineno,
            "from_c": True if code.co_name in CALLED_FROM_C or frame.f_back is None
            else False if code.co_name in CALLED_FROM_PYTHON else None,
        })
        frame = frame.f_back
    return stack


def report():
    names = ["sleeper", "reader", "waiter", "main"]
    while len(blocked) < len(names):
        time.sleep(0.01)
    # Each thread set `blocked` just before its blocking call: wait until every stack
    # has stopped moving.
    before = None
    while True:
        time.sleep(0.05)
        now = {n: stack_of(blocked[n]) for n in names}
        if now == before:
            break
        before = now
    for n in names:
        print(json.dumps(dict(kind="thread", name=n, stack=now[n], **infos[n])), flush=True)
    runtime = ctypes.addressof(ctypes.c_char.in_dll(ctypes.pythonapi, "_PyRuntime"))
    print(json.dumps({"kind": "ready", "runtime": runtime}), flush=True)
    NEVER.wait()


threading.Thread(target=sleeper, daemon=True).start()
threading.Thread(target=reader, daemon=True).start()
threading.Thread(target=Waiter().wait, args=(NEVER,), daemon=True).start()
threading.Thread(target=report, daemon=True).start()
main_a()
