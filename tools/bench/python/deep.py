# Scenario 10's deep target: busy at the bottom of a Python stack DEPTH frames deep
# (<module>, spin, then down() DEPTH - 2 times). Usage: deep.py DEPTH SECONDS; prints
# `ready` once the stack is built.
import sys, time


def down(n, end):
    if n == 0:
        print("ready", flush=True)
        x = 0
        while time.monotonic() < end:
            for i in range(1000):
                x += i
        return x
    return down(n - 1, end)


def spin(depth, seconds):
    # <module> and spin are two frames; down(k) .. down(0) are k + 1.
    return down(depth - 3, time.monotonic() + seconds)


sys.setrecursionlimit(10000)
spin(int(sys.argv[1]), float(sys.argv[2]))
