# Runs for about 0.2 s in brief_work(), then exits.
import time


def brief_work():
    end = time.monotonic() + 0.2
    x = 0
    while time.monotonic() < end:
        for i in range(1000):
            x += i
    return x


brief_work()
