"""Drive redis-py's own Lock against a named lock, for polylock's interop tests.

    python redis_py_lock.py URL NAME hold SECONDS   # acquire, print "acquired", hold, release
    python redis_py_lock.py URL NAME try            # one non-blocking attempt: prints "acquired" or "busy"
    python redis_py_lock.py URL NAME wait SECONDS   # prints "waiting", blocks until acquired (or gives up),
                                                    # then prints "acquired after MS" or "busy"

Exits 0 unless redis-py itself fails.
"""
import sys
import time

import redis


def main() -> None:
    url, name, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    client = redis.Redis.from_url(url)
    lock = client.lock(name, timeout=30)
    if mode == "hold":
        seconds = float(sys.argv[4])
        if not lock.acquire(blocking=True, blocking_timeout=10):
            print("busy", flush=True)
            return
        print("acquired", flush=True)
        time.sleep(seconds)
        lock.release()
        print("released", flush=True)
    elif mode == "try":
        print("acquired" if lock.acquire(blocking=False) else "busy", flush=True)
        if lock.owned():
            lock.release()
    elif mode == "wait":
        print("waiting", flush=True)
        started = time.monotonic()
        if lock.acquire(blocking=True, blocking_timeout=float(sys.argv[4])):
            print(f"acquired after {int((time.monotonic() - started) * 1000)}", flush=True)
            lock.release()
        else:
            print("busy", flush=True)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
