"""One critical section, run by `polylock run` as its command (kept tiny: it starts on every hold).

    python3 -S cs.py DIR TAG HOLD_SECONDS WRITE_EVERY_SECONDS

Appends to DIR/ledger, one line per event, every time on CLOCK_MONOTONIC (shared by all the
processes of one machine):
    start TAG PID TOKEN T
    write TAG PID TOKEN T ok|refused HIGHEST   (a fenced write to the store DIR/store)
    sigterm TAG PID TOKEN T                    (polylock run said the hold was lost)
    end TAG PID TOKEN T normal|sigterm
The fencing store accepts a write only if its token is at least the highest token it has
accepted (polylock's write_fenced rule); the check and the ledger line happen under one flock,
so the ledger's write lines are in the store's order. On SIGTERM the section makes one more
write (a write that was in flight when the hold was lost) and exits 143.
"""

import fcntl
import os
import signal
import sys
import time


class Term(Exception):
    pass


def main():
    t0 = time.monotonic()
    folder, tag, hold, every = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
    raw = os.environ.get("POLYLOCK_FENCING_TOKEN")
    token = int(raw) if raw else None
    pid = os.getpid()
    ledger = os.open(os.path.join(folder, "ledger"), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(*fields):
        os.write(ledger, (" ".join(str(f) for f in fields) + "\n").encode())

    def write():
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
        try:
            fd = os.open(os.path.join(folder, "store"), os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                text = os.pread(fd, 64, 0).strip()
                highest = int(text) if text else -1
                ok = token is not None and token >= highest
                if ok:
                    os.ftruncate(fd, 0)
                    os.pwrite(fd, b"%d\n" % token, 0)
                log("write", tag, pid, token, "%.6f" % time.monotonic(), "ok" if ok else "refused", highest)
            finally:
                os.close(fd)
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    def on_term(_sig, _frame):
        raise Term()

    signal.signal(signal.SIGTERM, on_term)
    log("start", tag, pid, token, "%.6f" % t0)
    try:
        end = t0 + hold
        while True:
            write()
            now = time.monotonic()
            if now >= end:
                break
            time.sleep(min(every, end - now))
    except Term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        log("sigterm", tag, pid, token, "%.6f" % time.monotonic())
        write()
        log("end", tag, pid, token, "%.6f" % time.monotonic(), "sigterm")
        sys.exit(143)
    log("end", tag, pid, token, "%.6f" % time.monotonic(), "normal")


main()
