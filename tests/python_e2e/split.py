import time, sys

def work(n):
    x = 0
    for i in range(n):
        x += i * i
    return x

def seventy():
    return work(7000)

def thirty():
    return work(3000)

def main(seconds):
    # When the Python code ran, on the samples' clock (CLOCK_MONOTONIC), for checks that
    # leave out the interpreter's own start and end (long under emulation).
    sys.stderr.write("split.py: main start_ns=%d\n" % time.monotonic_ns())
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        seventy()
        thirty()
    sys.stderr.write("split.py: main end_ns=%d\n" % time.monotonic_ns())

main(float(sys.argv[1]) if len(sys.argv) > 1 else 3)
