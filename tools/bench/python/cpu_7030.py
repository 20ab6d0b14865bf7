# Scenario 10's CPU-bound target: two Python functions sharing one loop 70/30.
# Usage: cpu_7030.py WARMUP_S SECONDS. Prints `ready` at once (a profiler attaches), runs
# WARMUP_S unmeasured, then counts rounds for SECONDS on CLOCK_MONOTONIC (the samples'
# clock) and prints one `bench` line: the window and the rounds per second.
import sys, time


def work(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def seventy():
    return work(7000)


def thirty():
    return work(3000)


def main(warmup, seconds):
    print("ready", flush=True)
    end = time.monotonic() + warmup
    while time.monotonic() < end:
        seventy()
        thirty()
    start = time.monotonic_ns()
    end = start + int(seconds * 1e9)
    units = 0
    while time.monotonic_ns() < end:
        seventy()
        thirty()
        units += 1
    stop = time.monotonic_ns()
    print("bench start_ns=%d end_ns=%d units=%d units_per_s=%.3f"
          % (start, stop, units, units / ((stop - start) / 1e9)), flush=True)


main(float(sys.argv[1]), float(sys.argv[2]))
