#!/usr/bin/env python3
"""The conformance driver of the `polylock` command line (tests/conformance/PROTOCOL.md).

Each request becomes the command a shell user would type. A hold that outlives a request is
a `polylock run` (or `polylock elect`) process whose command prints the fencing token it is
given and then reads its stdin until the driver closes it (the release); the CLI's lost
signal is the SIGTERM it sends that command, which the command reports as a line. The CLI's
error is its exit status (cli/src/exit.rs), mapped back to the kind it stands for.
Standard library only.
"""

import json
import os
import queue
import subprocess
import sys
import threading
import time

BIN = os.environ.get("POLYLOCK_BIN") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.expanduser("~/.cache/polylock/target")), "release", "polylock")

# The command run under a hold (bash: it starts in a few milliseconds, and its `read` gives
# way to a trapped signal): the token it is given, a line when it is sent the SIGTERM of a lost
# hold, then it waits for the release (its stdin closing).
HOLDER = r"""
trap 'echo lost; trap - TERM; kill -TERM $$' TERM
echo "token ${POLYLOCK_ELECTION_TERM:-${POLYLOCK_FENCING_TOKEN:-none}}"
while read -r _; do :; done
"""

# Exit statuses of cli/src/exit.rs and the kind each stands for. 75 is also Exhausted and
# InProgress, 64 also Unsupported, 70 every other kind: the CLI prints no kind to tell them apart.
EXIT_KINDS = {75: "TIMEOUT", 64: "INVALID_ARGUMENT", 69: "CONNECTION", 70: "BACKEND"}
STEP_LIMIT_S = 120


class Failed(Exception):
    """A polylock error, as the CLI's exit status tells it."""

    def __init__(self, kind, message):
        super().__init__(message)
        self.kind = kind


class NotOffered(Exception):
    pass


class DriverError(Exception):
    pass


def failed(code, stderr):
    message = stderr.strip() or f"exit status {code}"
    if code in EXIT_KINDS:
        return Failed(EXIT_KINDS[code], message)
    return DriverError(f"polylock exited {code}: {message}")


def duration(req, key):
    """`--wait`/`--lease` text in the CLI's syntax (250ms); None when absent."""
    value = req.get(key)
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value}ms"
    if isinstance(value, float):
        return f"{int(value)}ms" if value.is_integer() else f"{value!r}ms"
    if value in ("NaN", "inf", "-inf"):
        return f"{value}ms"
    raise DriverError(f"'{key}' is not a duration: {value!r}")


def polylock(url, *args, stdin=subprocess.DEVNULL):
    """Run one command to its end: its stdout, or the error its exit status stands for."""
    command = [BIN] + (["--url", url] if url is not None else []) + list(args)
    done = subprocess.run(command, stdin=stdin, capture_output=True, text=True, timeout=STEP_LIMIT_S)
    if done.returncode != 0:
        raise failed(done.returncode, done.stderr)
    return done.stdout


class Holding:
    """A `polylock run`/`elect` process holding for the driver until its stdin is closed."""

    def __init__(self, command, client):
        self.client = client
        self.proc = subprocess.Popen(command + ["--", "bash", "--norc", "--noprofile", "-c", HOLDER], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.stderr = []
        self.lost = False
        self.token = None
        self.readers = [threading.Thread(target=self._read, args=(self.proc.stdout, self.lines.put), daemon=True),
                        threading.Thread(target=self._read, args=(self.proc.stderr, self.stderr.append), daemon=True)]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream, sink):
        for line in stream:
            sink(line.rstrip("\n"))
        sink(None)

    def next_line(self, timeout):
        """The command's next line, None at the end of its output, "" if none came in time."""
        try:
            line = self.lines.get(timeout=timeout) if timeout is None or timeout > 0 else self.lines.get_nowait()
        except queue.Empty:
            return ""
        if line == "lost":
            self.lost = True
        if line is None:
            self.lines.put(None)  # the end stays the end for every later read
        return line

    def ended(self):
        """Wait for polylock to exit and its output to end; its exit status."""
        code = self.proc.wait(timeout=STEP_LIMIT_S)
        for reader in self.readers:
            reader.join(timeout=5)
        self.wait_lost(0)
        return code

    def started(self):
        """The token once the command runs under the hold, or the error polylock exited with."""
        line = self.next_line(None)
        if line is None:
            raise failed(self.ended(), self.stderr_text())
        if not line.startswith("token "):
            raise DriverError(f"unexpected output of the held command: {line!r}")
        word = line.split(" ", 1)[1]
        self.token = None if word == "none" else int(word)
        return self.token

    def wait_lost(self, timeout):
        """Whether the command was sent the SIGTERM of a lost hold, waiting up to `timeout`."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self.lost:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            line = self.next_line(left)
            if line is None or (line == "" and left == 0.0):
                break
        return self.lost

    def release(self):
        """Close the command's stdin: it exits, and polylock gives the hold back."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        code = self.ended()
        if self.lost:
            raise Failed("LOST", self.stderr_text() or "polylock sent the command SIGTERM: its hold was lost")
        if code != 0:
            raise failed(code, self.stderr_text())

    def stop(self):
        try:
            self.release()
        except Exception:
            pass
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stderr_text(self):
        return "\n".join(line for line in self.stderr if line)


class Driver:
    def __init__(self):
        self.reset_state()

    def reset_state(self):
        self.clients = {}      # label -> URL
        self.handles = {}      # label -> (url, `run` arguments naming what to hold, the lock name and kind or None)
        self.guards = {}       # label -> Holding
        self.released = set()
        self.elections = {}    # label -> (client label, url, name)
        self.leaderships = {}  # label -> Holding
        self.segments = {}     # label -> (url, tag, step)
        self.names = {}        # label of a lock or a side -> (client label, name)
        self.held_names = {}   # guard label -> (client label, name) of a lock or a side

    # ------------------------------------------------------------------ helpers

    def url(self, req):
        label = req["client"]
        if label not in self.clients:
            raise DriverError(f"no client labelled {label!r}")
        return self.clients[label]

    def holdings(self):
        return list(self.guards.values()) + list(self.leaderships.values())

    # ------------------------------------------------------------------ session

    def op_reset(self, req):
        for holding in self.holdings():
            holding.stop()
        self.reset_state()
        return None

    def op_connect(self, req):
        # The CLI opens a client for every command: `status` (read-only) is the one whose
        # only effect is opening it, so a URL that cannot be used fails here as it would there.
        polylock(req["url"], "status", "polylock-conformance-connect", "--json")
        self.clients[req["as"]] = req["url"]
        return None

    def op_close(self, req):
        # Each command is a client of its own: closing is ending the client's commands.
        for table in (self.guards, self.leaderships):
            for label, holding in list(table.items()):
                if holding.client == req["client"]:
                    holding.stop()
                    del table[label]
        return None

    def op_error_table(self, req):
        raise NotOffered("the CLI reports errors as exit statuses (75, 64, 69, 70), not as a table of kinds")

    # ------------------------------------------------------------------ handles

    def op_lock(self, req):
        kind = req.get("kind")
        if kind == "session":
            raise NotOffered("the CLI's --kind is reentrant, fair, token or lease: it has no session kind")
        args = ["--lock", req["name"]] + (["--kind", kind] if kind else [])
        # No handle without a command: `status` on the name is the one whose only effect is
        # asking the backend for the lock, so a name or kind it refuses fails here.
        polylock(self.url(req), "status", req["name"], "--json", *(["--kind", kind] if kind else []))
        self.handles[req["as"]] = (self.url(req), args, req["client"], (req["name"], kind))
        self.names[req["as"]] = (req["client"], req["name"])
        return None

    def op_rw_lock(self, req):
        side = {"read": "--shared", "write": "--exclusive"}[req["side"]]
        self.handles[req["as"]] = (self.url(req), ["--lock", req["name"], side], req["client"], None)
        self.names[req["as"]] = (req["client"], req["name"])
        return None

    def op_semaphore(self, req):
        args = ["--semaphore", req["name"], "--permits", str(req["permits"])]
        self.handles[req["as"]] = (self.url(req), args, req["client"], None)
        return None

    def op_multi_lock(self, req):
        raise NotOffered("the CLI's run holds one lock, side or permit: it has no multi-lock")

    def handle(self, req):
        label = req["handle"]
        if label not in self.handles:
            raise DriverError(f"no handle labelled {label!r}")
        return self.handles[label]

    # ------------------------------------------------------------------ holds

    def op_acquire(self, req):
        url, args, client, _ = self.handle(req)
        name = self.names.get(req["handle"])
        if name is not None and any(self.held_names.get(label) == name for label in self.guards):
            raise NotOffered("each `polylock run` is a client of its own: the CLI cannot re-enter or downgrade "
                             "a hold it has")
        limits = []
        for flag, key in (("--wait", "wait_ms"), ("--lease", "lease_ms")):
            text = duration(req, key)
            if text is not None:
                limits.append(f"{flag}={text}")
        holding = Holding([BIN, "--url", url, "run"] + args + limits, client)
        try:
            token = holding.started()
        except BaseException:
            holding.stop()
            raise
        self.released.discard(req["as"])
        self.guards[req["as"]] = holding
        self.held_names[req["as"]] = name
        return {"token": token}

    def op_try_acquire(self, req):
        raise NotOffered("the CLI's run has only the waiting form: a wait that runs out exits 75, never 'nothing'")

    def guard(self, req):
        label = req["guard"]
        if label in self.released:
            raise NotOffered("the CLI releases a hold by its command exiting, which happens once")
        if label not in self.guards:
            raise DriverError(f"no guard labelled {label!r}")
        return self.guards[label]

    def op_release(self, req):
        holding = self.guard(req)
        del self.guards[req["guard"]]
        self.released.add(req["guard"])
        holding.release()
        return None

    def op_release_handle(self, req):
        raise NotOffered("the CLI releases a hold only by its command exiting, never through a name")

    def op_token(self, req):
        return self.guard(req).token

    def op_is_lost(self, req):
        return self.guard(req).wait_lost(0)

    def op_wait_lost(self, req):
        wait = req.get("wait_ms")
        return self.guard(req).wait_lost(None if wait is None else wait / 1000.0)

    def op_hold_count(self, req):
        raise NotOffered("the CLI has no command for a hold count")

    def op_is_locked(self, req):
        url, _, _, mutex = self.handle(req)
        if mutex is None:
            raise NotOffered("the CLI's status reads mutexes, not read-write locks or semaphores")
        name, kind = mutex
        return json.loads(polylock(url, "status", name, "--json", *(["--kind", kind] if kind else [])))["held"]

    # ------------------------------------------------------------------ admin

    def op_status(self, req):
        status = json.loads(polylock(self.url(req), "status", req["name"], "--json"))
        return {"held": status["held"], "holders": 1 if status["held"] else 0}

    def op_list(self, req):
        entries = json.loads(polylock(self.url(req), "list", "--prefix", req["prefix"], "--json"))
        return sorted(entry["name"] for entry in entries if entry["held"])

    def op_force_unlock(self, req):
        out = polylock(self.url(req), "unlock", "--force", req["name"], "--yes")
        return out.startswith("unlocked ")

    # ------------------------------------------------------------------ election

    def op_election(self, req):
        self.elections[req["as"]] = (req["client"], self.url(req), req["name"])
        return None

    def election(self, req):
        label = req["election"]
        if label not in self.elections:
            raise DriverError(f"no election labelled {label!r}")
        return self.elections[label]

    def op_campaign(self, req):
        client, url, name = self.election(req)
        wait = duration(req, "wait_ms")
        command = [BIN, "--url", url, "elect", "--name", name, "--value", req["value"]]
        holding = Holding(command + ([f"--wait={wait}"] if wait is not None else []), client)
        try:
            term = holding.started()
        except BaseException:
            holding.stop()
            raise
        self.leaderships[req["as"]] = holding
        return {"term": term}

    def op_try_campaign(self, req):
        raise NotOffered("the CLI's elect has only the waiting form: a wait that runs out exits 75")

    def op_leader(self, req):
        raise NotOffered("the CLI has no command that tells the current leader and its term")

    def op_observe_next(self, req):
        raise NotOffered("elect --observe prints leaders' values only: no term, and nothing when nobody leads")

    def leadership(self, req):
        label = req["leadership"]
        if label not in self.leaderships:
            raise DriverError(f"no leadership labelled {label!r}")
        return self.leaderships[label]

    def op_resign(self, req):
        holding = self.leadership(req)
        del self.leaderships[req["leadership"]]
        holding.release()
        return None

    def op_is_leader(self, req):
        holding = self.leadership(req)
        return not holding.wait_lost(0) and holding.proc.poll() is None

    # ------------------------------------------------------------------ IDs

    def op_segment(self, req):
        self.segments[req["as"]] = (self.url(req), req["tag"], req.get("step"))
        return None

    def segment_ids(self, req, count):
        url, tag, step = self.segments[req["segment"]]
        out = polylock(url, "id", "segment", "--tag", tag, "--count", str(count),
                       *(["--step", str(step)] if step is not None else []))
        return [int(line) for line in out.split()]

    def op_next_id(self, req):
        return self.segment_ids(req, 1)[0]

    def op_next_ids(self, req):
        return self.segment_ids(req, req["count"])

    def op_snowflake(self, req):
        raise NotOffered("the CLI leases a worker id only while one `id snowflake --lease` command runs, "
                         "so it cannot keep one across requests")

    def op_uuid7(self, req):
        return polylock(None, "id", "uuid7").strip()

    def op_ulid(self, req):
        return polylock(None, "id", "ulid").strip()

    def op_snowflake_parse(self, req):
        epoch = req.get("epoch_ms")
        out = polylock(None, "id", "parse", str(req["of"]), *(["--epoch", str(epoch)] if epoch is not None else []))
        fields = dict(line.split(":", 1) for line in out.splitlines() if ":" in line)
        return {"timestamp_ms": int(fields["timestamp"].split()[0]), "worker_id": int(fields["worker"]),
                "sequence": int(fields["sequence"])}

    @staticmethod
    def _parsed(of):
        """`polylock id parse OF`'s `label: value` lines (a UUIDv7's or a ULID's)."""
        out = polylock(None, "id", "parse", str(of))
        return {label.strip(): value.strip() for label, value in
                (line.split(":", 1) for line in out.splitlines() if ":" in line)}

    def op_uuid7_timestamp(self, req):
        return int(self._parsed(req["of"])["timestamp"].split()[0])

    def op_ulid_timestamp(self, req):
        return int(self._parsed(req["of"])["timestamp"].split()[0])

    def op_ulid_to_uuid(self, req):
        return self._parsed(req["of"])["as uuid"]

    def op_uuid_to_ulid(self, req):
        return self._parsed(req["of"])["as ulid"]


NOT_OFFERED = {
    "latch": "the CLI has no command for countdown latches",
    "value": "the CLI has no command for versioned values",
    "idem": "the CLI has no command for idempotency keys",
}
for _op in ("latch_set", "count_down", "latch_count", "latch_wait"):
    NOT_OFFERED[_op] = NOT_OFFERED["latch"]
for _op in ("value_get", "value_create", "value_cas", "value_delete", "value_write_fenced", "value_watch"):
    NOT_OFFERED[_op] = NOT_OFFERED["value"]
for _op in ("idempotency", "idem_begin", "idem_complete", "idem_abandon", "idem_run"):
    NOT_OFFERED[_op] = NOT_OFFERED["idem"]
for _op in ("snowflake_next", "snowflake_close"):
    NOT_OFFERED[_op] = "the CLI cannot keep a leased snowflake generator across requests"


def answer(driver, req):
    op = req.get("op")
    method = getattr(driver, f"op_{op}", None)
    try:
        if op in NOT_OFFERED:
            raise NotOffered(NOT_OFFERED[op])
        if method is None:
            raise NotOffered(f"the CLI driver does not know the op {op!r}")
        return {"ok": True, "value": method(req)}
    except NotOffered as why:
        return {"ok": False, "not_offered": str(why)}
    except Failed as err:
        return {"ok": False, "error": err.kind, "message": str(err)}
    except KeyError as missing:
        return {"ok": False, "error": "DRIVER", "message": f"the request has no {missing}"}
    except Exception as err:  # the driver itself
        return {"ok": False, "error": "DRIVER", "message": f"{type(err).__name__}: {err}"}


def main():
    driver = Driver()
    out = sys.stdout
    out.write(json.dumps({"ready": "cli"}) + "\n")
    out.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            req = json.loads(line)
        except ValueError as err:
            reply = {"id": None, "ok": False, "error": "DRIVER", "message": f"not a JSON request: {err}"}
        else:
            reply = {"id": req.get("id"), **answer(driver, req)}
        out.write(json.dumps(reply) + "\n")
        out.flush()
    driver.op_reset({})


if __name__ == "__main__":
    main()
