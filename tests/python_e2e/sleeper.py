# A thread sleeping in Python (sleeper -> time.sleep) while the main thread spins.
import threading, time


def sleeper():
    for _ in range(20):
        time.sleep(0.05)


def spin():
    end = time.monotonic() + 1.2
    x = 0
    while time.monotonic() < end:
        x += 1


t = threading.Thread(target=sleeper)
t.start()
spin()
t.join()
