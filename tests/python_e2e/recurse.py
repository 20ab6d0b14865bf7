# A Python stack DEPTH frames deep (plus <module> and spin), busy at the bottom.
import sys, time


def down(n, end):
    if n == 0:
        x = 0
        while time.monotonic() < end:
            for i in range(1000):
                x += i
        return x
    return down(n - 1, end)


def spin(depth, seconds):
    return down(depth, time.monotonic() + seconds)


sys.setrecursionlimit(10000)
spin(int(sys.argv[1]), float(sys.argv[2]))
