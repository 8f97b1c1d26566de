#!/usr/bin/env python3
"""The CFFI case: load a C library whose constructor initialises CUDA.

``tests/c/ctor_lib.c``, built as a shared library, calls cuInit, creates a
context, allocates memory and writes a pattern in its constructor, under the
loader lock. This script loads it with ``cffi`` (``ffi.dlopen``) from a
non-main thread while 8 other threads run Python code, then checks that the
load returned in time, that the constructor ran on the loading thread and
succeeded, and that the memory holds the pattern (read from two threads).

Usage:  python3 cffi_ctor.py PATH/TO/libctor_lib.so
Output: ``ok NAME`` lines and ``cffi ok``; ``FAIL ...`` and exit 1 otherwise.
        A hang dumps every thread's stack and exits 3 after 60 s.
"""

import faulthandler
import hashlib
import os
import sys
import threading
import time

import cffi

DEADLINE_S = 60
BUSY_THREADS = 8

faulthandler.dump_traceback_later(DEADLINE_S, exit=True)


def fail(msg):
    """Reports and ends the process, from any thread."""
    print(f"FAIL {msg}", flush=True)
    os._exit(1)


def busy(i, stop, counts):
    """Python work that takes and drops the GIL all the time."""
    n = 0
    while not stop.is_set():
        h = hashlib.sha256(f"{i}:{n}".encode()).digest()
        table = {k: h[k % len(h)] * k for k in range(64)}
        n += 1 if sum(table.values()) >= 0 else 0
        counts[i] = n


def main():
    if len(sys.argv) != 2:
        fail("usage: cffi_ctor.py LIBRARY")
    path = sys.argv[1]
    ffi = cffi.FFI()
    ffi.cdef(
        """
        int ctor_status(void);
        const char *ctor_failed_call(void);
        long ctor_thread(void);
        size_t ctor_bytes(void);
        unsigned long long ctor_device_pointer(void);
        void ctor_expected(unsigned char *out, size_t n);
        int ctor_read(unsigned char *out, size_t n);
        """
    )

    stop = threading.Event()
    counts = [0] * BUSY_THREADS
    workers = [
        threading.Thread(target=busy, args=(i, stop, counts), daemon=True)
        for i in range(BUSY_THREADS)
    ]
    for w in workers:
        w.start()
    while min(counts) == 0:
        time.sleep(0.001)
    print(f"ok busy_threads_running {BUSY_THREADS}", flush=True)

    loaded = {}

    def loader():
        loaded["tid"] = threading.get_native_id()
        t0 = time.monotonic()
        loaded["lib"] = ffi.dlopen(path)
        loaded["seconds"] = time.monotonic() - t0

    t = threading.Thread(target=loader, name="loader")
    before = list(counts)
    t.start()
    t.join(timeout=30)
    if t.is_alive():
        faulthandler.dump_traceback(all_threads=True)
        print("FAIL dlopen did not return within 30 s (deadlock?)", flush=True)
        os._exit(1)
    if "lib" not in loaded:
        fail("ffi.dlopen raised (see above)")
    lib = loaded["lib"]
    progressed = sum(1 for a, b in zip(before, counts) if b > a)
    print(f"ok dlopen_returned in {loaded['seconds']:.3f} s on thread {loaded['tid']}", flush=True)

    stop.set()
    for w in workers:
        w.join(timeout=10)
        if w.is_alive():
            fail("a busy thread did not stop")
    print(f"ok busy_threads_done ({progressed} progressed during the load)", flush=True)

    status = lib.ctor_status()
    if status != 0:
        fail(f"constructor: {ffi.string(lib.ctor_failed_call()).decode()} returned {status}")
    if lib.ctor_thread() != loaded["tid"]:
        fail(f"constructor ran on thread {lib.ctor_thread()}, dlopen on {loaded['tid']}")
    print("ok constructor_succeeded on the loading thread", flush=True)

    n = lib.ctor_bytes()
    want = ffi.new("unsigned char[]", n)
    lib.ctor_expected(want, n)
    want = bytes(ffi.buffer(want))

    def read_back(where):
        got = ffi.new("unsigned char[]", n)
        r = lib.ctor_read(got, n)
        if r != 0:
            fail(f"ctor_read on {where} returned {r}")
        got = bytes(ffi.buffer(got))
        if got != want:
            j = next(i for i in range(n) if got[i] != want[i])
            fail(f"{where}: byte {j} of {n} reads {got[j]:#x}, want {want[j]:#x}")

    read_back("the main thread")
    other = threading.Thread(target=read_back, args=("another thread",))
    other.start()
    other.join(timeout=30)
    if other.is_alive():
        fail("read back on another thread hung")
    print(f"ok data_right {n} bytes at {lib.ctor_device_pointer():#x}", flush=True)
    print("cffi ok", flush=True)


if __name__ == "__main__":
    main()
