# Python -> C -> Python: run() calls the builtin sorted(), which calls key() per item;
# key() does nearly all the work.
import sys, time


def key(x):
    s = 0
    for i in range(300):
        s += i
    return -x


def run(seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sorted(range(500), key=key)


run(float(sys.argv[1]))
