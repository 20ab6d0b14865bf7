# Scenario 10's threaded target: three Python threads, two partly sleeping.
#   cruncher: busy all the time, alpha/beta 70/30;
#   napper_1, napper_2: gamma for ~6 ms of work, then time.sleep(0.006), over and over;
#   the main thread waits in join (off CPU).
# Usage: threads_sleepy.py WARMUP_S SECONDS. Prints `ready` at once, runs WARMUP_S
# unmeasured, then counts the work units every thread finishes for SECONDS and prints one
# `bench` line (window on CLOCK_MONOTONIC, units per second of all threads together, the
# CPU seconds of the cruncher and of the two nappers over the window).
import sys, threading, time

state = {"measure": False, "stop": False}
counts = {}
# Each thread's CPU time (time.thread_time) when the window opened and closed: the truth
# an on-CPU profiler's thread shares are compared with.
cpu0, cpu1 = {}, {}


def clock(name):
    if state["measure"]:
        cpu0.setdefault(name, time.thread_time())
    elif name in cpu0:
        cpu1.setdefault(name, time.thread_time())


def work(n):
    x = 0
    for i in range(n):
        x += i * i
    return x


def alpha():
    return work(7000)


def beta():
    return work(3000)


def gamma():
    return work(3000)


def cruncher():
    n = 0
    while not state["stop"]:
        clock("cruncher")
        alpha()
        beta()
        if state["measure"]:
            n += 10
    clock("cruncher")
    counts["cruncher"] = n


def napper(name):
    n = 0
    while not state["stop"]:
        clock(name)
        gamma()
        gamma()
        if state["measure"]:
            n += 6
        time.sleep(0.006)
    clock(name)
    counts[name] = n


def main(warmup, seconds):
    threads = [threading.Thread(target=cruncher, name="cruncher")]
    threads += [threading.Thread(target=napper, args=(f"napper_{i}",), name=f"napper_{i}")
                for i in (1, 2)]
    print("ready", flush=True)
    for t in threads:
        t.start()
    time.sleep(warmup)
    start = time.monotonic_ns()
    state["measure"] = True
    time.sleep(seconds)
    state["measure"] = False
    stop = time.monotonic_ns()
    state["stop"] = True
    for t in threads:
        t.join()
    units = sum(counts.values())
    cpu = {k: cpu1.get(k, 0.0) - v for k, v in cpu0.items()}
    print("bench start_ns=%d end_ns=%d units=%d units_per_s=%.3f cpu_cruncher=%.6f "
          "cpu_nappers=%.6f" % (start, stop, units, units / ((stop - start) / 1e9),
                                cpu.get("cruncher", 0.0),
                                sum(v for k, v in cpu.items() if k.startswith("napper"))),
          flush=True)


main(float(sys.argv[1]), float(sys.argv[2]))
