# Three threads: one blocked reading a pipe (off-CPU in the kernel, a byte every 0.3 s),
# one hashing a large buffer in a C extension that releases the GIL, and the main thread
# spinning in Python meanwhile. Writes the threads' ids to argv[1].
import hashlib, json, os, sys, threading, time

r, w = os.pipe()
tids = {}


def reader():
    tids["reader"] = threading.get_native_id()
    while True:
        b = os.read(r, 1)
        if b == b"q":
            return


def hasher():
    tids["hasher"] = threading.get_native_id()
    data = b"x" * (8 << 20)
    end = time.monotonic() + 2.0
    while time.monotonic() < end:
        hashlib.sha256(data).digest()


def spin():
    end = time.monotonic() + 2.0
    x = 0
    while time.monotonic() < end:
        x += 1
        if x % 200000 == 0:
            os.write(w, b".")


threads = [threading.Thread(target=reader), threading.Thread(target=hasher)]
for t in threads:
    t.start()
spin()
os.write(w, b"q")
for t in threads:
    t.join()
tids["main"] = threading.get_native_id()
with open(sys.argv[1], "w") as f:
    json.dump(tids, f)
# The last wake-up's code objects are read while the process lives.
time.sleep(0.3)
