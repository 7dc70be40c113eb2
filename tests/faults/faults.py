#!/usr/bin/env python3
"""polylock's fault-injection suite: real `polylock run` processes against real servers, checked
against a ledger (see cs.py: every critical section's start, end and fenced writes on
CLOCK_MONOTONIC, and a fencing store that refuses a token lower than the highest it accepted).

    faults.py [--only SUBSTRING ...] [--list]

The CLI comes from $POLYLOCK_CLI. Cases that only stop or kill CLIENT processes use the shared
servers named by POLYLOCK_TEST_*_URL (a unique lock-name prefix per run); cases that restart,
partition or kill a SERVER start private servers on their own ports and stop them at the end.
Each case prints one line: `PASS|FAIL|SKIP|KNOWN case backend/kind: figures` (KNOWN: a listed, not yet fixed bug). Exit status 1 if any
case failed. Python 3 standard library only.
"""

import argparse
import fcntl
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
CS = os.path.join(HERE, "cs.py")
CLI = os.environ.get("POLYLOCK_CLI") or os.path.join(
    os.environ.get("CARGO_TARGET_DIR", os.path.join(HERE, "..", "..", "target")), "release", "polylock")
RUN_ID = "%x%04x" % (int(time.time()), os.getpid() & 0xFFFF)
PREFIX = "faults-" + RUN_ID
LEASE = 2.0  # the watchdog lease (URL lease=2s), etcd's session TTL and ZooKeeper's session timeout
CLUSTER_LEASE = 5.0  # etcd TTL / ZooKeeper session timeout and lease in the cluster cases
PG_BIN = "/usr/lib/postgresql/15/bin"
ZK_JAR = "/usr/share/java/zookeeper.jar"

PROCS = []  # every process group we started: killed at exit whatever happens
CLEANUPS = []  # callables run at exit (servers, iptables rules, folders), last first
WORK = tempfile.mkdtemp(prefix="polylock-faults-")
now = time.monotonic


class Violation(Exception):
    """A check failed: the case fails with this message."""


class Skip(Exception):
    """The case cannot run here (a server or tool is missing)."""


# Cases that fail on a bug found by this suite and not yet fixed: each still runs and prints
# its figures as KNOWN, without failing the suite, and says so if it starts to pass. Every
# entry names the bug; fix it and take the entry off, never add one to quiet a flaky case.
KNOWN_BUGS = {
    # "case title": "what is wrong and what is safe meanwhile" (a case listed here prints KNOWN
    # with its figures instead of failing the suite, and says so when it starts passing)
    "cluster etcd/leader-freeze": (
        "issue 35: in about 1 run of 3 the holder connected to the frozen leader learns of its loss "
        "only when the leader resumes (~6.6 s after a 6 s freeze, lease 5 s), so it believes ~0.5 s "
        "past the next holder's start; bounding the session keep-alive's waits by the TTL did not "
        "fix it (1 of 5 still late), so a call on the hold's path still waits on the frozen member. "
        "Fencing tokens still order the writes (A's token is below the next holder's)"),
}


def check(cond, message):
    if not cond:
        raise Violation(message)


def ms(seconds):
    return "%.0fms" % (seconds * 1000) if seconds is not None else "-"


def wait_for(pred, timeout, step=0.02):
    deadline = now() + timeout
    while True:
        value = pred()
        if value:
            return value
        if now() >= deadline:
            return None
        time.sleep(step)


# ---------------------------------------------------------------------------------------
# The ledger


class Ledger:
    def __init__(self, name):
        self.dir = os.path.join(WORK, name)
        os.makedirs(self.dir, exist_ok=True)
        self.path = os.path.join(self.dir, "ledger")

    def events(self):
        try:
            with open(self.path) as f:
                lines = f.read().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            p = line.split()
            if len(p) < 5:
                continue  # a line being written
            e = {"ev": p[0], "tag": p[1], "pid": int(p[2]), "token": None if p[3] == "None" else int(p[3]),
                 "t": float(p[4])}
            if p[0] == "write":
                e["ok"] = p[5] == "ok"
                e["highest"] = int(p[6])
            if p[0] == "end":
                e["how"] = p[5]
            out.append(e)
        return out

    def first(self, ev, tag, after=None):
        for e in self.events():
            if e["ev"] == ev and e["tag"] == tag and (after is None or e["t"] >= after):
                return e
        return None

    def sections(self):
        """One record per critical section (by pid): start, end, sigterm, token, writes."""
        secs = {}
        for e in self.events():
            s = secs.setdefault(e["pid"], {"tag": e["tag"], "pid": e["pid"], "token": e["token"], "start": None,
                                           "end": None, "sigterm": None, "writes": []})
            if e["ev"] == "start":
                s["start"] = e["t"]
            elif e["ev"] == "end":
                s["end"] = e["t"]
            elif e["ev"] == "sigterm":
                s["sigterm"] = e["t"]
            elif e["ev"] == "write":
                s["writes"].append(e)
        return sorted((s for s in secs.values() if s["start"] is not None), key=lambda s: s["start"])


def belief(sec, until):
    """The interval in which a section's owner believed it held the lock: from its start until
    it was told it lost it (SIGTERM) or ended."""
    end = sec["sigterm"] or sec["end"] or until
    return sec["start"], end


def overlaps(secs, until):
    """Pairs of sections whose belief intervals intersect, with the overlap in seconds."""
    found = []
    for i, a in enumerate(secs):
        a0, a1 = belief(a, until)
        for b in secs[i + 1:]:
            b0, b1 = belief(b, until)
            o = min(a1, b1) - max(a0, b0)
            if o > 0:
                found.append((a, b, o))
    return found


# ---------------------------------------------------------------------------------------
# Processes


def spawn(args, log, **kw):
    out = open(log, "ab")
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                         start_new_session=True, **kw)
    out.close()
    PROCS.append(p)
    return p


def killpg(p, sig):
    try:
        os.killpg(p.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_stopped(pgid):
    """Every process of the group is in the stopped state (and at least one exists)."""
    seen = False
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp ...
        if int(fields[2]) != pgid or fields[0] in ("Z", "X"):
            continue
        seen = True
        if fields[0] not in ("T", "t"):
            return False
    return seen


def reap(p, timeout=10):
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        killpg(p, signal.SIGCONT)
        killpg(p, signal.SIGKILL)
        return p.wait(5)


class Holder:
    """One `polylock run` process (its own process group, with its critical section)."""

    def __init__(self, ledger, url, name, tag, hold, kind=None, every=0.05, extra=()):
        self.tag, self.ledger = tag, ledger
        self.log = os.path.join(ledger.dir, tag + ".log")
        args = [CLI, "--url", url, "run", "--lock", name]
        if kind:
            args += ["--kind", kind]
        args += list(extra)
        args += ["--", sys.executable, "-S", "-E", CS, ledger.dir, tag, str(hold), str(every)]
        self.p = spawn(args, self.log)
        # When it exited, on the suite's clock, whenever the case gets round to looking.
        self.exited_at = None
        threading.Thread(target=self._note_exit, daemon=True).start()

    def _note_exit(self):
        self.p.wait()
        self.exited_at = now()

    def started(self, timeout):
        return wait_for(lambda: self.ledger.first("start", self.tag), timeout)

    def stop(self):
        # Never freeze the section while it holds the fencing store's flock: the next holder's
        # first write would wait for it until SIGCONT (a harness artefact, not the lock's). So:
        # take the store lock ourselves, stop the group, wait until every process in it has
        # stopped, and only then let the store go.
        fd = os.open(os.path.join(self.ledger.dir, "store"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            killpg(self.p, signal.SIGSTOP)
            check(wait_for(lambda: group_stopped(self.p.pid), 10, 0.005), "%s did not stop" % self.tag)
        finally:
            os.close(fd)

    def cont(self):
        killpg(self.p, signal.SIGCONT)

    def kill(self):
        killpg(self.p, signal.SIGKILL)

    def wait(self, timeout):
        try:
            return self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def output(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def status_json(url, name, kind=None):
    args = [CLI, "--url", url, "status", name, "--json"] + (["--kind", kind] if kind else [])
    r = subprocess.run(args, capture_output=True, text=True, timeout=20)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


# ---------------------------------------------------------------------------------------
# Backends: the shared servers (client faults) and private ones (server faults)


def with_query(url, **opts):
    q = "&".join("%s=%s" % kv for kv in opts.items())
    return url + ("&" if "?" in url else "?") + q


def client_opts(backend):
    lease = "%ds" % LEASE
    if backend == "etcd":
        return {"ttl": lease, "lease": lease}
    if backend == "zookeeper":
        return {"session_timeout": lease, "lease": lease}
    return {"lease": lease}


def shared_url(backend):
    if backend == "sqlite":
        return "sqlite://%s/shared.db" % WORK
    env = {"redis": "REDIS", "postgres": "POSTGRES", "mariadb": "MARIADB", "etcd": "ETCD",
           "zookeeper": "ZOOKEEPER"}[backend]
    url = os.environ.get("POLYLOCK_TEST_%s_URL" % env)
    if not url:
        raise Skip("POLYLOCK_TEST_%s_URL is not set (tests/services/services.sh env)" % env)
    return url


def free_port():
    while True:
        port = random.randint(21000, 25999)
        ok = True
        for host in ("127.0.0.1", "127.0.0.2"):
            s = socket.socket()
            try:
                s.bind((host, port))
            except OSError:
                ok = False
            finally:
                s.close()
        if ok:
            return port


def port_open(port, host="127.0.0.1"):
    try:
        socket.create_connection((host, port), 0.5).close()
        return True
    except OSError:
        return False


class Private:
    """A private server: started on free ports under WORK, stopped (SIGKILL to its group) at
    the end. restart() stops it the way a crash or an operator would and starts it again."""

    def __init__(self, kind):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix=kind + "-", dir=WORK)
        self.port = free_port()
        self.proc = None
        self.prepare()
        self.start()
        CLEANUPS.append(self.stop)

    def prepare(self):
        if self.kind == "redis":
            if not shutil.which("redis-server"):
                raise Skip("no redis-server")
        elif self.kind == "etcd":
            if not shutil.which("etcd"):
                raise Skip("no etcd")
            self.peer = free_port()
        elif self.kind == "postgres":
            if not os.path.exists(PG_BIN + "/initdb"):
                raise Skip("no PostgreSQL 15")
            data = os.path.join(self.dir, "data")
            os.makedirs(data)
            if os.geteuid() == 0:
                shutil.chown(self.dir, "postgres", "postgres")
                shutil.chown(data, "postgres", "postgres")
                os.chmod(WORK, 0o755)
            r = subprocess.run(self.as_pg([PG_BIN + "/initdb", "-D", data, "-U", "postgres", "--auth=trust",
                                           "--encoding=UTF8", "--no-locale", "--no-sync"]),
                               capture_output=True, text=True, timeout=120)
            if r.returncode != 0:
                raise Violation("initdb failed: " + r.stderr[-300:])
        elif self.kind == "zookeeper":
            if not os.path.exists(ZK_JAR) or not shutil.which("java"):
                raise Skip("no ZooKeeper")
            os.makedirs(os.path.join(self.dir, "data"))
            with open(os.path.join(self.dir, "zoo.cfg"), "w") as f:
                f.write("tickTime=1000\ninitLimit=10\nsyncLimit=5\ndataDir=%s/data\nclientPort=%d\n"
                        "clientPortAddress=127.0.0.2\nmaxClientCnxns=0\nadmin.enableServer=false\n"
                        "4lw.commands.whitelist=*\n" % (self.dir, self.port))
            self.proxy = None

    def as_pg(self, args):
        if os.geteuid() == 0:
            return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", "--"] + args
        return args

    def command(self):
        if self.kind == "redis":
            return ["redis-server", "--bind", "127.0.0.1", "127.0.0.2", "--port", str(self.port), "--save", "",
                    "--appendonly", "no", "--dir", self.dir, "--daemonize", "no"]
        if self.kind == "etcd":
            client = "http://127.0.0.1:%d" % self.port
            peer = "http://127.0.0.1:%d" % self.peer
            return ["etcd", "--name", "solo", "--data-dir", self.dir + "/data",
                    "--listen-client-urls", client + ",http://127.0.0.2:%d" % self.port,
                    "--advertise-client-urls", client, "--listen-peer-urls", peer,
                    "--initial-advertise-peer-urls", peer, "--initial-cluster", "solo=" + peer,
                    "--initial-cluster-state", "new", "--initial-cluster-token", "faults-" + RUN_ID,
                    "--logger", "zap", "--log-outputs", "stderr"]
        if self.kind == "postgres":
            return self.as_pg([PG_BIN + "/postgres", "-D", self.dir + "/data", "-c",
                               "listen_addresses=127.0.0.1,127.0.0.2", "-c", "port=%d" % self.port, "-c",
                               "unix_socket_directories=" + self.dir + "/data", "-c", "max_connections=100",
                               "-c", "fsync=off", "-c", "synchronous_commit=off"])
        if self.kind == "zookeeper":
            return ["java", "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC", "-Dzookeeper.admin.enableServer=false",
                    "-Dzookeeper.jmx.log4j.disable=true", "-cp", ZK_JAR,
                    "org.apache.zookeeper.server.quorum.QuorumPeerMain", self.dir + "/zoo.cfg"]
        raise AssertionError(self.kind)

    def start(self):
        self.proc = spawn(self.command(), os.path.join(self.dir, "server.log"))
        if not wait_for(lambda: self.proc.poll() is None and self.ready(), 60, 0.1):
            raise Violation("private %s did not start (log %s/server.log)" % (self.kind, self.dir))

    def ready(self):
        if not port_open(self.port, "127.0.0.2" if self.kind == "zookeeper" else "127.0.0.1"):
            return False
        if self.kind == "redis":
            return subprocess.run(["redis-cli", "-p", str(self.port), "ping"], capture_output=True,
                                  text=True).stdout.strip() == "PONG"
        if self.kind == "postgres":
            return subprocess.run([PG_BIN + "/pg_isready", "-q", "-h", "127.0.0.1", "-p", str(self.port)]).returncode == 0
        if self.kind == "etcd":
            return subprocess.run(["etcdctl", "--endpoints", "127.0.0.1:%d" % self.port, "--dial-timeout", "1s",
                                   "endpoint", "health"], capture_output=True).returncode == 0
        return True

    def stop(self, sig=signal.SIGKILL):
        if self.proc and self.proc.poll() is None:
            if sig != signal.SIGKILL:
                os.kill(self.proc.pid, sig)  # the server process itself (setpriv execs it)
                try:
                    self.proc.wait(30)
                except subprocess.TimeoutExpired:
                    pass
            killpg(self.proc, signal.SIGKILL)
            self.proc.wait(10)

    def restart(self):
        # A clean stop (redis: its data is gone, no persistence; postgres: fast shutdown, which
        # ends every session; etcd: its data dir stays), then the same server again.
        self.stop(signal.SIGINT if self.kind == "postgres" else signal.SIGTERM)
        self.start()

    def url(self, host="127.0.0.1"):
        if self.kind == "redis":
            return "redis://%s:%d" % (host, self.port)
        if self.kind == "etcd":
            return "etcd://%s:%d" % (host, self.port)
        if self.kind == "postgres":
            return "postgres://postgres@%s:%d/postgres" % (host, self.port)
        if self.kind == "zookeeper":  # listens on 127.0.0.2 only: 127.0.0.1 goes through a proxy
            if host == "127.0.0.2":
                return "zk://127.0.0.2:%d" % self.port
            self.proxy = self.proxy or Proxy(self.port)
            return "zk://127.0.0.1:%d" % self.proxy.port
        raise AssertionError(self.kind)


# ---------------------------------------------------------------------------------------
# Case 1: the holder paused (SIGSTOP) past its lease, then resumed


# (backend, kind, does a paused holder lose the lock?) Every kind does, session locks too
# (PostgreSQL pg_advisory_lock, MariaDB GET_LOCK; on the SQL backends the reentrant kind is the
# session lock): a holding session is told to end after a silence of its lease rounded up to
# whole seconds plus one (idle_session_timeout, wait_timeout; issue 35 section 7), so the
# server ends a paused holder's session, and the lock with it, instead of keeping it for as
# long as the pause lasts. The third field stays for a backend whose server keeps a paused
# holder's lock (PostgreSQL before 14 would): then the waiter must NOT get it during the pause.
PAUSE_TARGETS = [
    ("sqlite", None, True), ("redis", "reentrant", True), ("redis", "fair", True), ("redis", "token", True),
    ("postgres", "lease", True), ("postgres", "reentrant", True), ("mariadb", "lease", True),
    ("mariadb", "reentrant", True), ("etcd", None, True), ("zookeeper", None, True),
]


def case_pause(backend, kind, frees):
    url = with_query(shared_url(backend), **client_opts(backend))
    label = "%s-%s" % (backend, kind or "default")
    led = Ledger("pause-" + label)
    name = "%s-pause-%s" % (PREFIX, label)
    # A session lock may stay held across the pause: then A simply ends its section later.
    a = Holder(led, url, name, "A", hold=60 if frees else 3 * LEASE + 3, kind=kind)
    check(a.started(20), "A never got the lock: " + a.output()[-300:])
    b = Holder(led, url, name, "B", hold=3 * LEASE, kind=kind)
    time.sleep(0.5)  # B is queued behind A
    t_stop = now()
    a.stop()
    if frees:
        got = b.started(LEASE + 8)
        check(got, "B did not get the lock within %s of A's pause" % ms(LEASE + 8))
        check(wait_for(lambda: led.first("write", "B"), 5), "B made no write")
    else:
        time.sleep(2 * LEASE + 1)
        check(not led.first("start", "B"), "B got a session lock while its holder was paused (but alive)")
    t_cont = now()
    a.cont()
    code_a = a.wait(LEASE + 10)
    check(code_a is not None, "A did not end within %s of resuming" % ms(LEASE + 10))
    if not frees:
        check(b.started(LEASE + 10), "B never got the lock after A ended")
    held_after = status_json(url, name, kind)
    code_b = b.wait(3 * LEASE + 15)
    secs = {s["tag"]: s for s in led.sections()}
    sa, sb = secs["A"], secs.get("B")
    check(sb is not None, "B has no section")
    gap = sb["start"] - t_stop
    told = (sa["sigterm"] - t_cont) if sa["sigterm"] else None
    check(sb["token"] > sa["token"], "B's token %s is not above A's %s" % (sb["token"], sa["token"]))
    b_first_ok = next((w["t"] for w in sb["writes"] if w["ok"]), None)
    check(b_first_ok is not None, "B's fenced write was refused")
    late = [w for w in sa["writes"] if w["t"] > b_first_ok]
    check(all(not w["ok"] for w in late), "A's fenced write after B's was ACCEPTED")
    after_resume = [w for w in sa["writes"] if w["t"] >= t_cont]
    refused = sum(1 for w in sa["writes"] if not w["ok"])
    # A's release must not have freed B's hold: B ran its whole section untouched.
    check(code_b == 0 and sb["sigterm"] is None, "B's hold was disturbed (exit %s): %s" % (code_b, b.output()[-300:]))
    check(held_after is None or held_after.get("held"), "status after A's release says not held: %s" % held_after)
    if frees:
        check(told is not None, "A was never told it lost the lock (exit %s): %s" % (code_a, a.output()[-300:]))
        check(told < 1.0, "A learned of the loss %s after resuming (want < 1s)" % ms(told))
        check(code_a == 143, "A's polylock run exited %s, want 143 (its command SIGTERMed)" % code_a)
        check("lost" in a.output(), "A's polylock run did not say it lost the lock")
        check(gap <= LEASE + 3, "B got the lock %s after A's pause (lease %s)" % (ms(gap), ms(LEASE)))
        # A renewed at most a third of a lease before it was paused: the lock cannot be free
        # sooner than two thirds of a lease later.
        check(gap >= 2 * LEASE / 3 - 0.2, "B got the lock only %s after A's pause: before A's lease could end" % ms(gap))
        check(after_resume and all(not w["ok"] for w in after_resume), "A's writes after resuming: %s" % after_resume)
        return "waiter got it %s after the pause; A told lost %s after SIGCONT, exit %d; A's writes refused %d (%d after resume); tokens %d<%d" % (
            ms(gap), ms(told), code_a, refused, len(after_resume), sa["token"], sb["token"])
    # The server kept the session lock for the paused (alive) connection: B waited, and no two
    # owners believed at once.
    check(sb["start"] >= t_cont, "B started during A's pause")
    ov = overlaps([sa, sb], now())
    check(not ov, "A and B believed at once for %s" % ms(ov[0][2]) if ov else "")
    check(refused == 0, "A's writes were refused though nobody else held the lock")
    return "kept by the server during a %s pause; waiter got it %s after SIGCONT; A %s (exit %s); A's writes all accepted (%d after resume); tokens %d<%d" % (
        ms(t_cont - t_stop), ms(sb["start"] - t_cont),
        "told lost %s after SIGCONT (its watchdog lease ran out while paused)" % ms(told) if told is not None else "kept the lock to its end",
        code_a, len(after_resume), sa["token"], sb["token"])


# ---------------------------------------------------------------------------------------
# Case 2: the holder killed (SIGKILL)

KILL_TARGETS = [
    ("sqlite", None, LEASE), ("redis", "reentrant", LEASE), ("redis", "token", LEASE),
    ("postgres", "reentrant", 0.0), ("postgres", "lease", LEASE), ("mariadb", "reentrant", 0.0),
    ("mariadb", "lease", LEASE), ("etcd", None, LEASE), ("zookeeper", None, LEASE),
]


def case_kill(backend, kind, bound):
    url = with_query(shared_url(backend), **client_opts(backend))
    label = "%s-%s" % (backend, kind or "default")
    led = Ledger("kill-" + label)
    name = "%s-kill-%s" % (PREFIX, label)
    a = Holder(led, url, name, "A", hold=60, kind=kind)
    check(a.started(20), "A never got the lock: " + a.output()[-300:])
    b = Holder(led, url, name, "B", hold=0.2, kind=kind)
    time.sleep(0.5)
    t_kill = now()
    a.kill()
    got = b.started(bound + 10)
    check(got, "B did not get the lock within %s of A's SIGKILL" % ms(bound + 10))
    freed = got["t"] - t_kill
    code_b = b.wait(20)
    secs = {s["tag"]: s for s in led.sections()}
    check(code_b == 0, "B exited %s" % code_b)
    check(secs["B"]["token"] > secs["A"]["token"], "tokens did not grow")
    check(freed <= bound + 1.5, "the lock freed %s after SIGKILL, bound %s + 1.5s" % (ms(freed), ms(bound)))
    if bound:  # renewed at most a third of a lease before the kill
        check(freed >= 2 * bound / 3 - 0.2, "the lock freed only %s after SIGKILL, before the lease could end" % ms(freed))
    return "freed %s after SIGKILL (bound: %s %s); tokens %d<%d" % (
        ms(freed), "connection close" if bound == 0 else "lease/session", ms(bound), secs["A"]["token"],
        secs["B"]["token"])


# ---------------------------------------------------------------------------------------
# Case 3: many processes, many holds on one name


def case_many(backend, kind, procs, holds, budget):
    url = shared_url(backend)
    label = "%s-%s" % (backend, kind or "default")
    led = Ledger("many-" + label)
    name = "%s-many-%s" % (PREFIX, label)
    failures = []
    deadline = now() + budget

    def worker(k):
        for i in range(holds):
            if now() > deadline:
                failures.append("w%d: out of time after %d holds" % (k, i))
                return
            args = [CLI, "--url", url, "run", "--lock", name, "--wait", "%ds" % max(1, int(deadline - now()))]
            if kind:
                args += ["--kind", kind]
            args += ["--", sys.executable, "-S", "-E", CS, led.dir, "w%d" % k, "0", "0"]
            p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.PIPE, start_new_session=True)
            PROCS.append(p)
            try:
                _, err = p.communicate(timeout=max(1, deadline - now() + 5))
            except subprocess.TimeoutExpired:
                killpg(p, signal.SIGKILL)
                p.wait()
                failures.append("w%d: hold %d timed out" % (k, i))
                return
            if p.returncode != 0:
                failures.append("w%d hold %d exit %d: %s" % (k, i, p.returncode, err.decode(errors="replace")[-200:]))
                return

    t0 = now()
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(procs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = now() - t0
    secs = led.sections()
    done = len(secs)
    # No overlap: each section ends before the next one starts; tokens grow in ledger order.
    bad_overlap = [(a["pid"], b["pid"]) for a, b in zip(secs, secs[1:]) if a["end"] is None or a["end"] > b["start"]]
    bad_tokens = [(a["token"], b["token"]) for a, b in zip(secs, secs[1:]) if not b["token"] > a["token"]]
    refused = sum(1 for s in secs for w in s["writes"] if not w["ok"])
    half = secs[: done // 2]
    per = {}
    for s in secs:
        per.setdefault(s["tag"], [0, 0])[1] += 1
    for s in half:
        per[s["tag"]][0] += 1
    shares = sorted(v[0] / v[1] for v in per.values() if v[1])
    fair = "first-half share per process min %.2f median %.2f max %.2f" % (
        shares[0], shares[len(shares) // 2], shares[-1]) if shares else "no holds"
    figures = "%d procs x %d holds: %d sections in %.1fs (%.0f holds/s); overlaps %d; token inversions %d; refused writes %d; %s" % (
        procs, holds, done, elapsed, done / elapsed if elapsed else 0, len(bad_overlap), len(bad_tokens), refused, fair)
    check(not failures, figures + "; " + "; ".join(failures[:3]))
    check(done == procs * holds, figures + "; missing sections")
    check(not bad_overlap, figures + "; overlapping sections %s" % bad_overlap[:3])
    check(not bad_tokens, figures + "; tokens not increasing %s" % bad_tokens[:3])
    check(refused == 0, figures + "; refused writes")
    return figures


# ---------------------------------------------------------------------------------------
# Case 4: the server restarted under a held lock


RESTART_TARGETS = [("redis", "reentrant"), ("etcd", None), ("postgres", "reentrant"), ("postgres", "lease")]


def case_restart(backend, kind):
    srv = Private(backend)
    url = with_query(srv.url(), **client_opts(backend))
    label = "%s-%s" % (backend, kind or "default")
    led = Ledger("restart-" + label)
    name = "%s-restart-%s" % (PREFIX, label)
    a = Holder(led, url, name, "A", hold=6 * LEASE, kind=kind)
    check(a.started(20), "A never got the lock: " + a.output()[-300:])
    b = Holder(led, url, name, "B", hold=1.0, kind=kind)
    time.sleep(0.5)
    t_r = now()
    srv.restart()
    down = now() - t_r
    # After the restart, a third client comes: it must get the lock at some point, with a token
    # above every earlier one.
    c = Holder(led, url, name, "C", hold=0.5, kind=kind, extra=["--wait", "40s"])
    codes = {h.tag: h.wait(60) for h in (a, b, c)}
    until = now()
    secs = led.sections()
    by = {}
    for s in secs:
        by.setdefault(s["tag"], s)
    ov = overlaps(secs, until)
    tokens = [s["token"] for s in secs]
    grow = all(y > x for x, y in zip(tokens, tokens[1:]))
    # Fencing: every write after a higher token was accepted must have been refused.
    highest, late_ok = -1, 0
    for e in led.events():
        if e["ev"] == "write":
            if e["ok"] and e["token"] < highest:
                late_ok += 1
            if e["ok"]:
                highest = max(highest, e["token"])
    a_lost = by["A"]["sigterm"] - t_r if by["A"]["sigterm"] else None
    order = " ".join("%s@%+.2fs" % (s["tag"], s["start"] - t_r) for s in secs)
    figures = "restart took %s; A %s; starts %s; tokens %s (%s); exits %s; belief overlap %s" % (
        ms(down), "told lost %s after the restart began" % ms(a_lost) if a_lost is not None else "kept the lock",
        order, tokens, "growing" if grow else "NOT growing", codes,
        ", ".join("%s+%s %s" % (x["tag"], y["tag"], ms(o)) for x, y, o in ov) or "none")
    check(late_ok == 0, figures + "; a stale fenced write was accepted")
    check("C" in by, figures + "; C never got the lock")
    if backend == "redis":
        # Redis without persistence forgets the lock: polylock documents that another client can
        # take it at once, until the old holder's next renewal; tokens (from TIME) must still grow
        # and the fencing store must catch the old holder.
        check(grow, figures)
        return figures + " (Redis without persistence: overlap possible by design, fencing caught it)"
    check(not ov, figures + "; two owners believed they held the lock at once")
    check(grow, figures)
    return figures


# ---------------------------------------------------------------------------------------
# Case 5: the holder partitioned from the server (iptables on 127.0.0.2)


class Proxy:
    """A TCP forwarder 127.0.0.1:port -> 127.0.0.2:target whose outgoing connections come from
    127.0.0.3, so that the partition rules (which cut 127.0.0.1 <-> 127.0.0.2:target) spare it:
    for servers that listen on one address only (ZooKeeper), the waiter goes through it."""

    def __init__(self, target):
        self.target = target
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.closed = False
        self.socks = []
        threading.Thread(target=self.accept, daemon=True).start()
        CLEANUPS.append(self.close)

    def accept(self):
        while not self.closed:
            try:
                client, _ = self.listener.accept()
                upstream = socket.socket()
                upstream.bind(("127.0.0.3", 0))
                upstream.connect(("127.0.0.2", self.target))
            except OSError:
                continue
            self.socks += [client, upstream]
            for src, dst in ((client, upstream), (upstream, client)):
                threading.Thread(target=self.pump, args=(src, dst), daemon=True).start()

    @staticmethod
    def pump(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        self.closed = True
        for s in [self.listener] + self.socks:
            try:
                s.close()
            except OSError:
                pass


class IptablesChain:
    """A chain of this run's own, jumped to from INPUT, removed at cleanup (or SIGTERM)."""

    def __init__(self, prefix):
        if not shutil.which("iptables"):
            raise Skip("no iptables (apt-get install iptables)")
        self.chain = prefix + RUN_ID[-8:].upper()
        r = subprocess.run(["iptables", "-N", self.chain], capture_output=True, text=True)
        if r.returncode != 0:
            raise Skip("iptables cannot be used here: " + r.stderr.strip())
        CLEANUPS.append(self.remove)
        subprocess.run(["iptables", "-I", "INPUT", "-j", self.chain], check=True)

    def remove(self):
        subprocess.run(["iptables", "-D", "INPUT", "-j", self.chain], capture_output=True)
        subprocess.run(["iptables", "-F", self.chain], capture_output=True)
        subprocess.run(["iptables", "-X", self.chain], capture_output=True)


class Partition(IptablesChain):
    def __init__(self, port):
        super().__init__("PLFAULTS_")
        self.port = port

    def cut(self):
        # Both directions of the holder's connections to the server's 127.0.0.2 address (the
        # kernel gives them the source 127.0.0.1; the waiter reaches the server at 127.0.0.1,
        # or through a Proxy from 127.0.0.3).
        for rule in (["-s", "127.0.0.1", "-d", "127.0.0.2", "-p", "tcp", "--dport", str(self.port)],
                     ["-s", "127.0.0.2", "-d", "127.0.0.1", "-p", "tcp", "--sport", str(self.port)]):
            subprocess.run(["iptables", "-A", self.chain] + rule + ["-j", "DROP"], check=True)



# (backend, kind, is the lock freed by the server while its holder is cut off?) Every kind is:
# a SQL session lock's connection looks silent to the server behind a partition, and the
# server ends a holding session silent for its lease rounded up to whole seconds plus one
# (idle_session_timeout; issue 35 section 7). Before that it kept the lock until TCP gave up,
# and the waiter got it only after the partition healed (the False branch below).
PARTITION_TARGETS = [("redis", "reentrant", True), ("etcd", None, True), ("zookeeper", None, True),
                     ("postgres", "lease", True), ("postgres", "reentrant", True)]


def case_partition(backend, kind, frees):
    srv = Private(backend)
    part = Partition(srv.port)
    try:
        label = "%s-%s" % (backend, kind or "default")
        led = Ledger("partition-" + label)
        name = "%s-partition-%s" % (PREFIX, label)
        opts = client_opts(backend)
        a = Holder(led, with_query(srv.url("127.0.0.2"), **opts), name, "A", hold=60, kind=kind)
        check(a.started(20), "A never got the lock: " + a.output()[-300:])
        b = Holder(led, with_query(srv.url("127.0.0.1"), **opts), name, "B", hold=0.5, kind=kind)
        time.sleep(0.5)
        t_cut = now()
        part.cut()
        t_heal = None
        if frees:
            got = b.started(LEASE * 4 + 30)
        else:
            got = b.started(3 * LEASE + 2)
            check(not got, "B got a session lock whose holder's connection the server still has (%s after the cut)" % (
                ms(got["t"] - t_cut) if got else ""))
            part.remove()
            t_heal = now()
            got = b.started(30)
        code_b = b.wait(20)
        # A's exit as it happened: with the partition kept until B is granted, the case only
        # gets here after the heal, long after A may have exited.
        a_exited = wait_for(lambda: a.exited_at, 40, 0.05)
        code_a = a.p.poll()
        secs = {s["tag"]: s for s in led.sections()}
        sa, sb = secs["A"], secs.get("B")
        told = sa["sigterm"] - t_cut if sa["sigterm"] else None
        # `polylock run` must end soon after its command did, even with the server out of reach.
        a_exit = (a_exited - sa["end"]) if a_exited and sa["end"] else None
        granted = sb["start"] - t_cut if sb else None
        b_first_ok = next((w["t"] for w in sb["writes"] if w["ok"]), None) if sb else None
        stale_ok = [w for w in sa["writes"] if w["ok"] and b_first_ok and w["t"] > b_first_ok]
        caught = [w for w in sa["writes"] if not w["ok"]]
        if told is not None and granted is not None and told < granted:
            verdict = "holder learned first (by %s)" % ms(granted - told)
        elif granted is not None:
            verdict = "granted to B BEFORE A learned (A %s); fenced store refused %d of A's writes" % (
                ms(told) if told else "never told", len(caught))
        else:
            verdict = "B never got the lock"
        if t_heal is not None and sb:
            verdict += "; the server kept the session lock until the partition healed, B got it %s after the heal" % ms(
                sb["start"] - t_heal)
        figures = "A told lost %s after the cut, B granted %s after; %s; exits A=%s B=%s; A's polylock run exited %s after its command; tokens %s<%s" % (
            ms(told), ms(granted), verdict, code_a, code_b,
            ms(a_exit) if a_exit is not None else "NOT (40s+)", sa["token"], sb["token"] if sb else "-")
        check(got, figures)
        check(a_exit is not None and a_exit < 10, figures + "; polylock run hung after its command ended (releasing over the partition)")
        check(not stale_ok, figures + "; A's stale write was accepted")
        check(told is not None, figures + "; A was never told")
        check(sb["token"] > sa["token"], figures + "; tokens did not grow")
        if frees:
            check(granted <= 2 * LEASE + 3, figures + "; B waited too long")
        return figures
    finally:
        part.remove()


# ---------------------------------------------------------------------------------------
# Case 6: 3-member etcd and ZooKeeper clusters, their leader killed or frozen


class Cluster:
    """Three private members on 127.0.0.1; stopped at the end."""

    def __init__(self, kind):
        self.kind = kind
        self.dir = tempfile.mkdtemp(prefix=kind + "-cluster-", dir=WORK)
        self.client = [free_port() for _ in range(3)]
        self.peer = [free_port() for _ in range(3)]
        self.elect = [free_port() for _ in range(3)]
        self.procs = [None] * 3
        self.frozen = set()  # members stopped with SIGSTOP: not asked (they would not answer)
        CLEANUPS.append(self.stop)
        if kind == "etcd":
            if not shutil.which("etcd"):
                raise Skip("no etcd")
            initial = ",".join("m%d=http://127.0.0.1:%d" % (i, self.peer[i]) for i in range(3))
            self.cmds = [["etcd", "--name", "m%d" % i, "--data-dir", "%s/m%d" % (self.dir, i),
                          "--listen-client-urls", "http://127.0.0.1:%d" % self.client[i],
                          "--advertise-client-urls", "http://127.0.0.1:%d" % self.client[i],
                          "--listen-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                          "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % self.peer[i],
                          "--initial-cluster", initial, "--initial-cluster-state", "new",
                          "--initial-cluster-token", "faults-cluster-" + RUN_ID, "--logger", "zap",
                          "--log-outputs", "stderr"] for i in range(3)]
        else:
            if not os.path.exists(ZK_JAR) or not shutil.which("java"):
                raise Skip("no ZooKeeper")
            self.cmds = []
            servers = "".join("server.%d=127.0.0.1:%d:%d\n" % (i + 1, self.peer[i], self.elect[i]) for i in range(3))
            for i in range(3):
                d = "%s/n%d" % (self.dir, i)
                os.makedirs(d + "/data")
                with open(d + "/data/myid", "w") as f:
                    f.write("%d\n" % (i + 1))
                with open(d + "/zoo.cfg", "w") as f:
                    f.write("tickTime=1000\ninitLimit=10\nsyncLimit=2\ndataDir=%s/data\nclientPort=%d\n"
                            "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
                            "4lw.commands.whitelist=*\n%s" % (d, self.client[i], servers))
                self.cmds.append(["java", "-Xms32m", "-Xmx128m", "-XX:+UseSerialGC",
                                  "-Dzookeeper.admin.enableServer=false", "-Dzookeeper.jmx.log4j.disable=true",
                                  "-cp", ZK_JAR, "org.apache.zookeeper.server.quorum.QuorumPeerMain", d + "/zoo.cfg"])
        for i in range(3):
            self.procs[i] = spawn(self.cmds[i], "%s/m%d.log" % (self.dir, i))
        if not wait_for(lambda: self.leader() is not None, 90, 0.3):
            raise Violation("the private %s cluster elected no leader (logs in %s)" % (kind, self.dir))

    def zk_mode(self, i):
        try:
            with socket.create_connection(("127.0.0.1", self.client[i]), 1) as s:
                s.sendall(b"srvr")
                s.settimeout(2)
                data = b""
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            for line in data.decode(errors="replace").splitlines():
                if line.startswith("Mode: "):
                    return line[6:].strip()
        except OSError:
            return None
        return None

    def leader(self):
        """The index of the leading member, if all living members agree there is one."""
        alive = [i for i in range(3) if self.procs[i].poll() is None and i not in self.frozen]
        if self.kind == "zookeeper":
            modes = [self.zk_mode(i) if i in alive else None for i in range(3)]
            leaders = [i for i, m in enumerate(modes) if m == "leader"]
            return leaders[0] if len(leaders) == 1 else None
        eps = ",".join("127.0.0.1:%d" % self.client[i] for i in alive)
        r = subprocess.run(["etcdctl", "--endpoints", eps, "--dial-timeout", "1s", "--command-timeout", "2s",
                            "endpoint", "status", "-w", "json"], capture_output=True, text=True)
        try:
            rows = json.loads(r.stdout)
        except ValueError:
            return None
        for row in rows:
            if row["Status"]["header"]["member_id"] == row["Status"].get("leader"):
                port = int(row["Endpoint"].rsplit(":", 1)[1])
                return self.client.index(port)
        return None

    def url(self):
        hosts = ",".join("127.0.0.1:%d" % p for p in self.client)
        return ("etcd://" if self.kind == "etcd" else "zk://") + hosts

    def stop(self):
        for p in self.procs:
            if p is not None and p.poll() is None:
                killpg(p, signal.SIGCONT)
                killpg(p, signal.SIGKILL)
                p.wait(10)


def case_cluster(backend, fault):
    cl = Cluster(backend)
    # A 5 s session: long enough to outlast an election (about 1-3 s here), as any real
    # deployment's would; the case checks that locks keep working through it.
    lease = "%ds" % CLUSTER_LEASE
    url = with_query(cl.url(), **({"ttl": lease, "lease": lease} if backend == "etcd" else
                                  {"session_timeout": lease, "lease": lease}))
    led = Ledger("cluster-%s-%s" % (backend, fault))
    name = "%s-cluster-%s-%s" % (PREFIX, backend, fault)
    a = Holder(led, url, name, "A", hold=CLUSTER_LEASE + 6)
    check(a.started(30), "A never got the lock: " + a.output()[-300:])
    b = Holder(led, url, name, "B", hold=0.5)
    # B is queued (its key or node exists) before the fault.
    queued = wait_for(lambda: (status_json(url, name) or {}).get("waiters"), 20, 0.2)
    check(queued, "B never queued behind A")
    leader = cl.leader()
    check(leader is not None, "no leader before the fault")
    t_f = now()
    if fault == "kill":
        killpg(cl.procs[leader], signal.SIGKILL)
    else:
        killpg(cl.procs[leader], signal.SIGSTOP)  # frozen: cut off both ways, as an isolated member
        cl.frozen.add(leader)
    # (a list, so that member 0 is not taken for "no leader")
    new_leader = wait_for(lambda: (lambda x: [x] if x is not None and x != leader else None)(cl.leader()), 30, 0.2)
    t_elected = now() - t_f if new_leader is not None else None
    if fault == "freeze":
        time.sleep(max(0.0, CLUSTER_LEASE + 1 - (now() - t_f)))
        killpg(cl.procs[leader], signal.SIGCONT)  # the partition heals: the old leader rejoins
        cl.frozen.discard(leader)
    c = Holder(led, url, name, "C", hold=0.5, extra=["--wait", "40s"])
    codes = {h.tag: h.wait(60) for h in (a, b, c)}
    until = now()
    secs = led.sections()
    ov = overlaps(secs, until)
    tokens = [s["token"] for s in secs]
    grow = all(y > x for x, y in zip(tokens, tokens[1:]))
    highest, stale_ok = -1, 0
    for e in led.events():
        if e["ev"] == "write" and e["ok"]:
            stale_ok += e["token"] < highest
            highest = max(highest, e["token"])
    by = {s["tag"]: s for s in secs}
    figures = "leader m%d %s, new leader after %s; A %s; starts %s; tokens %s; exits %s; belief overlap %s" % (
        leader, "SIGKILLed" if fault == "kill" else "frozen %s then resumed" % ms(CLUSTER_LEASE + 1), ms(t_elected),
        "told lost %s after the fault" % ms(by["A"]["sigterm"] - t_f) if by["A"]["sigterm"] else "kept the lock",
        " ".join("%s@%+.2fs" % (s["tag"], s["start"] - t_f) for s in secs), tokens, codes,
        ", ".join("%s+%s %s" % (x["tag"], y["tag"], ms(o)) for x, y, o in ov) or "none")
    check(t_elected is not None, figures + "; no new leader")
    check(not ov, figures + "; two owners believed they held the lock at once")
    check(grow, figures + "; tokens not growing")
    check(stale_ok == 0, figures + "; a stale fenced write was accepted")
    check("C" in by and codes["C"] == 0, figures + "; C did not get the lock")
    return figures


def case_member_down(backend, runs=10):
    """A follower of a 3-member cluster is dead (SIGKILL, no election involved): fresh clients
    naming all three members must all connect and lock: a refused member is retried on another."""
    cl = Cluster(backend)
    lead = cl.leader()
    victim = (lead + 1) % 3
    killpg(cl.procs[victim], signal.SIGKILL)
    cl.procs[victim].wait(10)
    led = Ledger("member-down-" + backend)
    url = with_query(cl.url(), **({"ttl": "5s"} if backend == "etcd" else {"session_timeout": "5s"}))
    name = "%s-member-down-%s" % (PREFIX, backend)
    failures, t0 = [], now()
    for i in range(runs):
        h = Holder(led, url, name, "r%d" % i, hold=0, every=0)
        code = h.wait(30)
        if code != 0:
            failures.append("run %d exit %s: %s" % (i, code, h.output().strip()[:220]))
    secs = led.sections()
    tokens = [s["token"] for s in secs]
    figures = "follower m%d of 3 dead: %d/%d fresh polylock runs succeeded in %.1fs; tokens growing: %s" % (
        victim, runs - len(failures), runs, now() - t0, all(y > x for x, y in zip(tokens, tokens[1:])))
    check(not failures, figures + "; " + failures[0] if failures else figures)
    return figures


class Resets(IptablesChain):
    """Every new packet to `ports` on 127.0.0.1 answered with a TCP reset (iptables REJECT):
    connections to those members break at once, as a healing partition leaves them ("broken
    pipe", "connection reset"), and new ones are refused until `heal`."""

    def __init__(self, ports):
        super().__init__("PLRESET_")
        self.ports = ports

    def cut(self):
        for port in self.ports:
            subprocess.run(["iptables", "-A", self.chain, "-p", "tcp", "-d", "127.0.0.1", "--dport", str(port),
                            "-j", "REJECT", "--reject-with", "tcp-reset"], check=True)

    def heal(self):
        subprocess.run(["iptables", "-F", self.chain], check=True)



def case_release_retry(backend, cut_for=2.0):
    """Issue 35 section 8: the holder's release meets transport errors (every member of a private
    3-member cluster resets the holder's connections for `cut_for` s around it) and is retried
    within the URL's timeout= (5 s) on fresh connections: `polylock run` gives the lock back
    and says nothing; before, it printed the `Connection` error ("transport error") and the
    lock stayed held until the session ended."""
    cl = Cluster(backend)
    lease = "%ds" % CLUSTER_LEASE
    url = with_query(cl.url(), ttl=lease, lease=lease, timeout="5s")
    resets = Resets(cl.client)
    led = Ledger("release-retry-" + backend)
    name = "%s-release-retry-%s" % (PREFIX, backend)
    hold = 3.0
    a = Holder(led, url, name, "A", hold=hold, every=0.5, extra=["--log-level", "info"])
    check(a.started(30), "A never got the lock: " + a.output()[-300:])
    t_start = led.first("start", "A")["t"]
    # The section ends `hold` s after its start; `polylock run` releases right after.
    time.sleep(max(0.0, t_start + hold - 0.4 - now()))
    t_cut = now()
    resets.cut()
    time.sleep(cut_for)
    resets.heal()
    t_heal = now()
    code = a.wait(30)
    out = a.output()
    t_exit = a.exited_at or now()
    status = status_json(url, name)
    end = led.first("end", "A")
    retries = [line for line in out.splitlines() if "retry" in line and "release" in line]
    figures = ("members reset the holder's connections %s after its start for %s; section ended %s into the cut; "
               "A exited %s after the heal with %s; retry events %d; status after: %s" % (
                   ms(t_cut - t_start), ms(cut_for), ms(end["t"] - t_cut) if end else "never",
                   ms(t_exit - t_heal), code, len(retries), (status or {}).get("held")))
    check(end is not None and t_cut <= end["t"] <= t_heal, figures + "; the release did not fall into the cut")
    check(code == 0, figures + "; A's exit: " + out[-400:])
    check("polylock: " not in out.replace("polylock: lost", ""), figures + "; the release failed: " + out[-400:])
    check(retries, figures + "; no retry event logged: " + out[-400:])
    check(status is not None and not status["held"], figures + "; the lock is still held")
    return figures


# ---------------------------------------------------------------------------------------
# The runner

# ---------------------------------------------------------------------------------------
# Case 7: one name never blocks, breaks or deletes another (issue 35)


def cli(url, *args, timeout=30):
    """Run one CLI command to its end: (exit code, seconds, stdout + stderr)."""
    t0 = now()
    r = subprocess.run([CLI, "--url", url] + list(args), capture_output=True, text=True, timeout=timeout)
    return r.returncode, now() - t0, r.stdout + r.stderr


def case_collision(backend):
    """Names and primitives that shared a key before issue 35, through real `polylock` runs."""
    url = with_query(shared_url(backend), **client_opts(backend))
    name = "%s-collide-%s" % (PREFIX, backend)
    seen = []
    # Every backend: a namespace with the separator in it is refused at connect.
    code, _, out = cli(with_query(url, namespace="a:b"), "run", "--lock", name, "--", "true")
    check(code == 64 and "':'" in out, "namespace a:b: exit %s: %s" % (code, out[-300:]))
    seen.append("namespace a:b refused")
    if backend == "etcd":
        code, _, out = cli(url, "run", "--semaphore", name, "--permits", "2", "--", "true")
        check(code == 0, "semaphore: exit %s: %s" % (code, out[-300:]))
        code, took, out = cli(url, "run", "--lock", name, "--wait", "5s", "--", "true")
        check(code == 0, "the lock of a semaphore's name: exit %s after %s (the count key held it): %s"
              % (code, ms(took), out[-300:]))
        status = status_json(url, name)
        check(status is not None and not status["held"], "status names a holder: %s" % status)
        led = Ledger("collision-" + backend)
        nested = Holder(led, url, name + "/sub", "N", hold=30)
        check(nested.started(20), "the nested lock never started: " + nested.output()[-300:])
        code, took, out = cli(url, "run", "--lock", name, "--wait", "5s", "--", "true")
        check(code == 0, "the lock behind a held nested name: exit %s after %s: %s" % (code, ms(took), out[-300:]))
        nested.kill()
        seen.append("lock after a semaphore and beside a held NAME/sub: granted in %s" % ms(took))
    elif backend == "redis":
        code, _, out = cli(url, "run", "--semaphore", name, "--permits", "2", "--", "true")
        check(code == 0, "semaphore: exit %s: %s" % (code, out[-300:]))
        code, took, out = cli(url, "run", "--lock", name, "--wait", "10s", "--", "true")
        check(code == 70 and "semaphore" in out and "WRONGTYPE" not in out and took < 5,
              "the lock of a semaphore's name: exit %s after %s: %s" % (code, ms(took), out[-300:]))
        seen.append("lock of a semaphore's name: Conflict in %s" % ms(took))
        code, _, out = cli(url, "unlock", "--force", name)
        check(code != 0, "force-unlock deleted a semaphore's counter: %s" % out[-300:])
        code, _, out = cli(url, "run", "--semaphore", name, "--permits", "2", "--", "true")
        check(code == 0, "the semaphore after the refused force-unlock: exit %s: %s" % (code, out[-300:]))
        seen.append("force-unlock refused")
        redlock = "redlock://%s,%s" % ((url.split("://", 1)[1].split("?")[0].split("/")[0],) * 2)
        code, _, out = cli(redlock, "run", "--lock", name, "--", "true")
        check(code == 64 and "one server" in out, "a RedLock URL naming one server twice: exit %s: %s"
              % (code, out[-300:]))
        seen.append("redlock with one server twice refused")
    elif backend == "zookeeper":
        code, _, out = cli(url, "run", "--lock", name + "/x-lock-0000000000", "--", "true")
        check(code == 64, "a level in a contender's node form: exit %s: %s" % (code, out[-300:]))
        seen.append("NAME/x-lock-0000000000 refused")
    else:  # postgres, mariadb
        code, _, out = cli(url, "run", "--lock", name + "#0", "--", "true")
        check(code == 64 and "#" in out, "a semaphore slot's name: exit %s: %s" % (code, out[-300:]))
        seen.append("NAME#0 refused")
    return "; ".join(seen)


CASES = []


def add(case, name, fn, *args):
    CASES.append(("%s %s" % (case, name), fn, args))


for _b, _k, _f in PAUSE_TARGETS:
    add("pause", "%s/%s" % (_b, _k or "default"), case_pause, _b, _k, _f)
for _b, _k, _bound in KILL_TARGETS:
    add("kill", "%s/%s" % (_b, _k or "default"), case_kill, _b, _k, _bound)
# (backend, kind, time budget in seconds): 32 x 20 holds each; FAULTS_PROCS / FAULTS_HOLDS
# shrink them on a slower machine.
# Each takes 30-50 s on 2 cores (process start-up bounds it: a CLI and a Python section per hold),
# so the suite keeps five: the embedded default, Redis's unfair and fair kinds, a SQL session
# lock and etcd's queue (ZooKeeper's and MariaDB's ran as well: FAULTS_MANY_ALL=1).
MANY_TARGETS = [("sqlite", None, 150), ("redis", "reentrant", 150), ("redis", "fair", 150),
                ("postgres", "reentrant", 150), ("etcd", None, 150)]
if os.environ.get("FAULTS_MANY_ALL") == "1":
    MANY_TARGETS += [("mariadb", "lease", 150), ("zookeeper", None, 150)]
for _b, _k, _budget in MANY_TARGETS:
    add("many", "%s/%s" % (_b, _k or "default"), case_many, _b, _k, int(os.environ.get("FAULTS_PROCS", "32")),
        int(os.environ.get("FAULTS_HOLDS", "20")), _budget)
for _b, _k in RESTART_TARGETS:
    add("restart", "%s/%s" % (_b, _k or "default"), case_restart, _b, _k)
for _b, _k, _f in PARTITION_TARGETS:
    add("partition", "%s/%s" % (_b, _k or "default"), case_partition, _b, _k, _f)


for _b in ("redis", "etcd", "zookeeper", "postgres", "mariadb"):
    add("collision", _b, case_collision, _b)

for _b in ("etcd", "zookeeper"):
    for _f in ("kill", "freeze"):
        add("cluster", "%s/leader-%s" % (_b, _f), case_cluster, _b, _f)
    add("cluster", "%s/follower-down" % _b, case_member_down, _b)
add("cluster", "etcd/release-retry", case_release_retry, "etcd")


def cleanup():
    for p in PROCS:
        if p.poll() is None:
            killpg(p, signal.SIGCONT)
            killpg(p, signal.SIGKILL)
    for fn in reversed(CLEANUPS):
        try:
            fn()
        except Exception:  # noqa: BLE001 - best effort, keep cleaning
            traceback.print_exc()
    CLEANUPS.clear()
    for p in PROCS:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            pass


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", action="append", default=[], help="run the cases whose name contains this")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (ledgers, logs)")
    opts = ap.parse_args()
    selected = [c for c in CASES if not opts.only or any(o in c[0] for o in opts.only)]
    if opts.list or not os.access(CLI, os.X_OK):
        shutil.rmtree(WORK, ignore_errors=True)
        if opts.list:
            print("\n".join(c[0] for c in selected))
            return 0
        print("faults: no polylock CLI at %s (set POLYLOCK_CLI)" % CLI, file=sys.stderr)
        return 2
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda s, f: sys.exit(128 + s))
    failed = 0
    known = 0
    not_passed = []  # repeated above the summary: a CI log shows its tail
    t_all = now()
    print("faults: run %s, CLI %s, work folder %s" % (RUN_ID, CLI, WORK), flush=True)
    try:
        for title, fn, args in selected:
            t0 = now()
            try:
                figures = fn(*args)
                verdict = "PASS"
                if title in KNOWN_BUGS:
                    figures += " [listed in KNOWN_BUGS but passed: take it off the list]"
            except Skip as e:
                verdict, figures = "SKIP", str(e)
            except Violation as e:
                verdict, figures = "FAIL", str(e)
                if title in KNOWN_BUGS:
                    verdict, figures = "KNOWN", "%s [known bug, not counted: %s]" % (figures, KNOWN_BUGS[title])
                    known += 1
                else:
                    failed += 1
            except Exception as e:  # noqa: BLE001 - a harness error fails the case, never the suite's cleanup
                verdict, figures = "FAIL", "harness error: %r" % e
                traceback.print_exc()
                failed += 1
            finally:
                cleanup()
            line = "%s %-28s %5.1fs  %s" % (verdict, title, now() - t0, figures)
            print(line, flush=True)
            if verdict in ("FAIL", "KNOWN"):
                not_passed.append(line)
    except SystemExit:
        print("faults: interrupted; cleaning up its servers, processes and iptables rules", flush=True)
        raise
    finally:
        cleanup()
        if not opts.keep and not failed:
            shutil.rmtree(WORK, ignore_errors=True)
    for line in not_passed:
        print("faults: not passed: " + line)
    print("faults: %d cases, %d failed, %d known bugs, %.0fs%s" % (len(selected), failed, known, now() - t_all,
                                                  "; ledgers and logs kept in " + WORK if failed or opts.keep else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
