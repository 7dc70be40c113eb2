#!/usr/bin/env python3
"""Run every conformance scenario on every surface and backend it applies to; print and write
the matrix. The protocol and the scenario format are in PROTOCOL.md beside this file.

Standard library only: it runs before any binding is installed anywhere.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
SURFACES = ["rust", "cli", "python", "python-asyncio", "node", "c", "cpp", "java", "ruby", "go", "wasm"]

# What each backend offers, from the README's "What each backend offers" table. A scenario
# runs on a backend only if the backend has everything the scenario `needs`.
_COMMON = {"mutex", "kind:reentrant", "rw", "semaphore", "multi", "election", "latch", "values", "watch",
           "idempotency", "segment", "snowflake", "tokens", "status"}
BACKENDS: Dict[str, Dict[str, Any]] = {
    "sqlite": {"env": None, "caps": _COMMON | {"list", "force_unlock"}},
    "redis": {"env": "POLYLOCK_TEST_REDIS_URL", "caps": _COMMON | {"kind:fair", "kind:token", "list", "force_unlock"}},
    # The default kind there is a session lock (pg_advisory_lock, GET_LOCK): not listed, not
    # breakable by another session; only the lease kind's rows are.
    "postgres": {"env": "POLYLOCK_TEST_POSTGRES_URL", "caps": _COMMON | {"kind:lease"}},
    "mariadb": {"env": "POLYLOCK_TEST_MARIADB_URL", "caps": _COMMON | {"kind:lease"}},
    "etcd": {"env": "POLYLOCK_TEST_ETCD_URL", "caps": _COMMON | {"list", "force_unlock"}},
    "zookeeper": {"env": "POLYLOCK_TEST_ZOOKEEPER_URL", "caps": _COMMON | {"list", "force_unlock"}},
}
SERVER_BACKENDS = [b for b in BACKENDS if b != "sqlite"]

DEFAULT_STEP_TIMEOUT_MS = 60_000
READY_TIMEOUT_S = 180


class StepFailed(Exception):
    pass


class NotOffered(Exception):
    pass


# ----------------------------------------------------------------------------------------
# Drivers


class Driver:
    """One driver process: requests go in on stdin, answers are read by a thread that stamps
    each with its arrival time, so an `async` step's duration is measured when it arrives."""

    def __init__(self, surface: str, log_dir: Path, env: Dict[str, str]):
        self.surface = surface
        run = HERE / "drivers" / surface / "run.sh"
        self.log_path = log_dir / f"{surface}-{uuid.uuid4().hex[:8]}.stderr"
        self.log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [str(run)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log,
            env=env, start_new_session=True,
        )
        self.answers: "queue.Queue[Tuple[float, Optional[dict]]]" = queue.Queue()
        self.next_id = 1
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        at, first = self._get(READY_TIMEOUT_S)
        if first is None or "ready" not in first:
            self.kill()
            raise RuntimeError(f"the {surface} driver did not say ready (got {first!r}); "
                               f"its stderr: {self.stderr_tail()}")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            now = time.monotonic()
            try:
                self.answers.put((now, json.loads(raw)))
            except json.JSONDecodeError:
                self.answers.put((now, {"ok": False, "error": "DRIVER",
                                        "message": f"not JSON on stdout: {raw[:200]!r}"}))
        self.answers.put((time.monotonic(), None))

    def _get(self, timeout_s: float) -> Tuple[float, Optional[dict]]:
        try:
            return self.answers.get(timeout=timeout_s)
        except queue.Empty:
            return time.monotonic(), {"__timeout__": True}

    def send(self, request: dict) -> Tuple[int, float]:
        request = dict(request, id=self.next_id)
        self.next_id += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write((json.dumps(request) + "\n").encode())
        self.proc.stdin.flush()
        return request["id"], time.monotonic()

    def receive(self, request_id: int, sent_at: float, timeout_s: float) -> Tuple[dict, float]:
        at, answer = self._get(timeout_s)
        if answer is None:
            raise StepFailed(f"the {self.surface} driver exited ({self.proc.poll()}); "
                             f"stderr: {self.stderr_tail()}")
        if answer.get("__timeout__"):
            self.kill()
            raise StepFailed(f"no answer within {timeout_s:.0f} s (driver killed)")
        if answer.get("id") != request_id:
            raise StepFailed(f"answer out of order: wanted id {request_id}, got {answer!r}")
        return answer, (at - sent_at) * 1000.0

    def has_answer_within(self, timeout_s: float) -> Optional[Tuple[float, Optional[dict]]]:
        try:
            item = self.answers.get(timeout=timeout_s)
        except queue.Empty:
            return None
        return item

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                assert self.proc.stdin is not None
                self.proc.stdin.close()
                self.proc.wait(timeout=15)
            except (subprocess.TimeoutExpired, BrokenPipeError, OSError):
                self.kill()
        self.log.close()

    def stderr_tail(self) -> str:
        self.log.flush()
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-1500:].strip()


class DriverPool:
    """Long-lived drivers per (surface, slot); each cell resets the ones it used."""

    def __init__(self, log_dir: Path, env: Dict[str, str]):
        self.log_dir = log_dir
        self.env = env
        self.drivers: Dict[Tuple[str, int], Driver] = {}

    def get(self, surface: str, slot: int) -> Driver:
        driver = self.drivers.get((surface, slot))
        if driver is None or not driver.alive():
            driver = Driver(surface, self.log_dir, self.env)
            self.drivers[(surface, slot)] = driver
        return driver

    def reset(self, surface: str, slot: int) -> None:
        driver = self.drivers.get((surface, slot))
        if driver is None or not driver.alive():
            return
        try:
            request_id, sent = driver.send({"op": "reset"})
            answer, _ = driver.receive(request_id, sent, 60)
            if not answer.get("ok"):
                raise StepFailed(str(answer))
        except (StepFailed, OSError):
            driver.kill()
            self.drivers.pop((surface, slot), None)

    def discard(self, surface: str, slot: int) -> None:
        driver = self.drivers.pop((surface, slot), None)
        if driver is not None:
            driver.kill()

    def close(self) -> None:
        for driver in self.drivers.values():
            driver.close()


# ----------------------------------------------------------------------------------------
# Values, substitution and expectations

_WHOLE_VAR = re.compile(r"^\$([A-Za-z_][A-Za-z0-9_]*)((?:\.[A-Za-z0-9_]+)*)$")


def pick(value: Any, path: str) -> Any:
    for part in [p for p in path.split(".") if p]:
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict):
            if part not in value:
                raise StepFailed(f"no field '{part}' in {value!r}")
            value = value[part]
        else:
            raise StepFailed(f"cannot take '{part}' of {value!r}")
    return value


def substitute(item: Any, env: Dict[str, Any]) -> Any:
    if isinstance(item, str):
        whole = _WHOLE_VAR.match(item)
        if whole and whole.group(1) in env:
            return pick(env[whole.group(1)], whole.group(2))
        # Embedded: only the run's own strings ($name, $url, $run); longest first.
        for var in ("name", "url", "run"):
            item = item.replace("$" + var, str(env[var]))
        return item
    if isinstance(item, list):
        return [substitute(x, env) for x in item]
    if isinstance(item, dict):
        return {k: substitute(v, env) for k, v in item.items()}
    return item


def describe(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 200 else text[:200] + "..."


def check_value(value: Any, expect: Dict[str, Any], env: Dict[str, Any], elapsed_ms: Optional[float]) -> None:
    if "min_ms" in expect and elapsed_ms is not None and elapsed_ms < expect["min_ms"]:
        raise StepFailed(f"answered after {elapsed_ms:.0f} ms, expected at least {expect['min_ms']} ms")
    if "max_ms" in expect and elapsed_ms is not None and elapsed_ms > expect["max_ms"]:
        raise StepFailed(f"answered after {elapsed_ms:.0f} ms, expected at most {expect['max_ms']} ms")
    if "path" in expect:
        value = pick(value, expect["path"])
    if "value" in expect:
        wanted = substitute(expect["value"], env)
        if value != wanted:
            raise StepFailed(f"expected {describe(wanted)}, got {describe(value)}")
    if expect.get("not_null") and value is None:
        raise StepFailed("expected a value, got null")
    for op, test in (("gt", lambda a, b: a > b), ("ge", lambda a, b: a >= b), ("lt", lambda a, b: a < b),
                     ("le", lambda a, b: a <= b), ("eq", lambda a, b: a == b), ("ne", lambda a, b: a != b)):
        if op in expect:
            other = substitute(expect[op], env)
            try:
                ok = test(value, other)
            except TypeError:
                ok = False
            if not ok:
                raise StepFailed(f"expected {op} {describe(other)}, got {describe(value)}")
    if "len" in expect:
        if not isinstance(value, (list, str)) or len(value) != expect["len"]:
            raise StepFailed(f"expected length {expect['len']}, got {describe(value)}")
    if "matches" in expect:
        if not isinstance(value, str) or not re.fullmatch(expect["matches"], value):
            raise StepFailed(f"expected a match of /{expect['matches']}/, got {describe(value)}")
    if expect.get("increasing"):
        if not isinstance(value, list) or any(a is None or b is None or not a < b for a, b in zip(value, value[1:])):
            raise StepFailed(f"expected strictly increasing values, got {describe(value)}")
    if "distinct" in expect:
        if not isinstance(value, list):
            raise StepFailed(f"expected a list, got {describe(value)}")
        seen = set()
        for other_name in expect["distinct"]:
            seen.update(pick(env[other_name], "") if other_name in env else [])
        for item in value:
            if item in seen:
                raise StepFailed(f"{item} appears twice")
            seen.add(item)
    if "one_of" in expect:
        if value not in substitute(expect["one_of"], env):
            raise StepFailed(f"expected one of {describe(expect['one_of'])}, got {describe(value)}")


def judge(answer: dict, expect: Dict[str, Any], env: Dict[str, Any], elapsed_ms: float) -> Any:
    """The answer's value if it meets `expect`; StepFailed or NotOffered if not."""
    if not answer.get("ok"):
        if "not_offered" in answer:
            raise NotOffered(answer["not_offered"])
        kind = answer.get("error")
        if kind == "DRIVER" or kind is None:
            raise StepFailed(f"driver error: {answer.get('message', answer)}")
        wanted = expect.get("error")
        if wanted is None:
            raise StepFailed(f"expected success, got {kind}: {answer.get('message', '')}"[:400])
        if kind != wanted and kind not in (wanted if isinstance(wanted, list) else []):
            raise StepFailed(f"expected error {wanted}, got {kind}: {answer.get('message', '')}"[:400])
        check_timing_only(expect, elapsed_ms)
        if "details" in expect:
            check_value(answer.get("details", {}), expect["details"], env, None)
        return {"error": kind, "details": answer.get("details", {})}
    value = answer.get("value")
    if "error" in expect:
        raise StepFailed(f"expected error {expect['error']}, got success {describe(value)}")
    check_value(value, {k: v for k, v in expect.items() if k != "details"}, env, elapsed_ms)
    return value


def check_timing_only(expect: Dict[str, Any], elapsed_ms: float) -> None:
    check_value(None, {k: expect[k] for k in ("min_ms", "max_ms") if k in expect}, {}, elapsed_ms)


# ----------------------------------------------------------------------------------------
# Cells


@dataclass
class Cell:
    surface: str  # one surface, or "a+b+c" for a multi-language run
    scenario: str
    backend: str
    result: str = ""
    why: str = ""
    seconds: float = 0.0
    step: Optional[int] = None


@dataclass
class Lane:
    pool: DriverPool
    tmp: Path


def backend_url(backend: str, lane: Lane, run_id: str) -> str:
    if backend == "sqlite":
        return f"sqlite://{lane.tmp / (run_id + '.db')}"
    url = os.environ.get(BACKENDS[backend]["env"] or "")
    if not url:
        raise RuntimeError(f"{BACKENDS[backend]['env']} is not set: start the servers with tests/services/services.sh")
    return url


def run_cell(scenario: dict, surfaces: List[str], backend: str, lane: Lane) -> Tuple[str, str, Optional[int]]:
    """(result, why, failing step index)."""
    parties: List[str] = scenario.get("parties", ["A"])
    slot_of = {}
    used: Dict[Tuple[str, int], bool] = {}
    counts: Dict[str, int] = {}
    for party, surface in zip(parties, surfaces):
        slot_of[party] = (surface, counts.get(surface, 0))
        counts[surface] = counts.get(surface, 0) + 1
    run_id = f"{scenario['name']}-{uuid.uuid4().hex[:10]}"
    env: Dict[str, Any] = {"name": f"conf-{run_id}", "run": run_id}
    pending: Dict[str, Tuple[str, int, float, dict]] = {}
    killed: set = set()
    index = 0
    try:
        env["url"] = backend_url(backend, lane, run_id)
        # Options a scenario needs of one backend, e.g. a short session TTL where a killed
        # holder's lock lasts until its session ends (etcd, ZooKeeper).
        extra = scenario.get("url_options", {}).get(backend)
        if extra:
            env["url"] += ("&" if "?" in env["url"] else "?") + extra
        for index, step in enumerate(scenario["steps"]):
            op = step["op"]
            expect = step.get("expect", {})
            if op == "sleep":
                time.sleep(step["ms"] / 1000.0)
                continue
            if op == "check":
                value = substitute(step["of"], env)
                check_value(value, expect, env, None)
                continue
            party = step.get("party", parties[0])
            surface, slot = slot_of[party]
            if op == "kill":
                lane.pool.discard(surface, slot)
                killed.add(party)
                continue
            if op in ("await", "pending"):
                label = step["step"]
                if label not in pending:
                    raise StepFailed(f"no async step '{label}'")
                p_party, request_id, sent_at, p_expect = pending[label]
                driver = lane.pool.get(*slot_of[p_party])
                if op == "pending":
                    item = driver.has_answer_within(step["for_ms"] / 1000.0)
                    if item is not None:
                        if item[1] and "not_offered" in item[1]:
                            raise NotOffered(item[1]["not_offered"])
                        raise StepFailed(f"'{label}' answered within {step['for_ms']} ms: {describe(item[1])}")
                    continue
                del pending[label]
                timeout = step.get("timeout_ms", DEFAULT_STEP_TIMEOUT_MS) / 1000.0
                answer, elapsed = driver.receive(request_id, sent_at, timeout)
                value = judge(answer, {**p_expect, **expect}, env, elapsed)
                if "save" in step:
                    env[step["save"]] = value
                continue
            driver = lane.pool.get(surface, slot)
            used[(surface, slot)] = True
            request = {k: substitute(v, env) for k, v in step.items()
                       if k not in ("party", "expect", "save", "async", "timeout_ms", "comment")}
            request_id, sent_at = driver.send(request)
            if "async" in step:
                pending[step["async"]] = (party, request_id, sent_at, expect)
                if "save" in step:
                    raise StepFailed("an async step saves through its await")
                continue
            timeout = step.get("timeout_ms", DEFAULT_STEP_TIMEOUT_MS) / 1000.0
            answer, elapsed = driver.receive(request_id, sent_at, timeout)
            value = judge(answer, expect, env, elapsed)
            if "save" in step:
                env[step["save"]] = value
        if pending:
            raise StepFailed(f"async steps never awaited: {sorted(pending)}")
        return "pass", "", None
    except NotOffered as reason:
        return "not offered", str(reason), index
    except StepFailed as failure:
        step = scenario["steps"][index]
        where = f"step {index} ({step.get('party', parties[0])} {step['op']})"
        return "fail", f"{where}: {failure}", index
    except (OSError, RuntimeError) as failure:
        return "fail", f"step {index}: {failure}", index
    finally:
        for (surface, slot) in used:
            # A party still blocked in a request cannot take a reset: start it afresh.
            if any(slot_of[p] == (surface, slot) for p, *_ in pending.values()):
                lane.pool.discard(surface, slot)
            else:
                lane.pool.reset(surface, slot)


# ----------------------------------------------------------------------------------------
# Plans


def load_scenarios(names: Optional[List[str]]) -> List[dict]:
    scenarios = []
    for path in sorted((HERE / "scenarios").glob("*.json")):
        scenario = json.loads(path.read_text())
        if scenario.get("name") != path.stem:
            raise SystemExit(f"{path}: its name must be its file name ('{path.stem}')")
        if names and scenario["name"] not in names:
            continue
        scenarios.append(scenario)
    if names:
        missing = set(names) - {s["name"] for s in scenarios}
        if missing:
            raise SystemExit(f"no such scenarios: {', '.join(sorted(missing))}")
    return scenarios


def load_known() -> Dict[Tuple[str, str], List[dict]]:
    known: Dict[Tuple[str, str], List[dict]] = {}
    for path in sorted((HERE / "known").glob("*.json")):
        for entry in json.loads(path.read_text()):
            for key in ("scenario", "step", "why"):
                if key not in entry:
                    raise SystemExit(f"{path}: an entry lacks '{key}': {entry}")
            if not re.match(r"#\d+", entry["why"]):
                raise SystemExit(f"{path}: 'why' must start with the issue number: {entry}")
            known.setdefault((path.stem, entry["scenario"]), []).append(entry)
    return known


def applies(scenario: dict, backend: str) -> Optional[str]:
    needs = scenario.get("needs", [])
    if needs == ["ids"]:
        return None if backend == "sqlite" else "needs no backend"  # run once
    missing = [n for n in needs if n not in BACKENDS[backend]["caps"]]
    return f"the {backend} backend has no {', '.join(missing)}" if missing else None


def home_backend(scenario: dict, backends: List[str]) -> Optional[str]:
    """The backend a scenario runs on for every surface: sqlite where it applies, else the
    first server that offers what it needs (Redis for the fair and token kinds...)."""
    for backend in backends:
        if applies(scenario, backend) is None:
            return backend
    return None


def plan(scenarios: List[dict], surfaces: List[str], backends: List[str], full: bool) -> List[Cell]:
    """Every (scenario, surface) on the scenario's home backend; on the other servers every
    scenario from a rotation of `per_server` surfaces, so each surface meets each server
    (--full: every surface everywhere). Multi-language cells: every `cross` combination on the
    home backend and on each server."""
    cells: List[Cell] = []
    rotation = 0
    per_server = 1
    for scenario in scenarios:
        home = home_backend(scenario, backends)
        for backend in backends:
            if applies(scenario, backend) is not None:
                continue
            chosen = surfaces
            if not full and backend != home and len(surfaces) > per_server:
                chosen = [surfaces[(rotation + i) % len(surfaces)] for i in range(per_server)]
                rotation += per_server
            for surface in chosen:
                cells.append(Cell(surface, scenario["name"], backend))
            for combo in scenario.get("cross", []):
                if all(s in surfaces for s in combo):
                    cells.append(Cell("+".join(combo), scenario["name"], backend))
    return cells


# ----------------------------------------------------------------------------------------
# Output


def apply_known(cell: Cell, known: Dict[Tuple[str, str], List[dict]]) -> None:
    entries = []
    cross = "+" in cell.surface
    for surface in cell.surface.split("+"):
        entries += [e for e in known.get((surface, cell.scenario), [])
                    if (e.get("backends", ["*"]) == ["*"] or cell.backend in e.get("backends", []))
                    and (cross or not e.get("cross_only"))]
    if not entries or "+" in cell.surface and cell.result == "pass":
        return
    if cell.result == "pass":
        cell.result, cell.why = "fail", (f"listed in known/{cell.surface}.json ({entries[0]['why']}) but passes: "
                                         "remove the entry")
        return
    for entry in entries:
        if entry["step"] == cell.step:
            cell.why = f"{entry['why']} [{cell.why}]"
            cell.result = "known"
            return
    cell.why += f" (known/{cell.surface}.json lists step {entries[0]['step']}, not this one)"


def print_matrix(cells: List[Cell], surfaces: List[str]) -> None:
    symbol = {"pass": "ok", "fail": "FAIL", "known": "known", "not offered": "-"}
    columns = surfaces + sorted({c.surface for c in cells if "+" in c.surface})
    rows: Dict[Tuple[str, str], Dict[str, List[str]]] = {}
    for cell in cells:
        rows.setdefault((cell.scenario, cell.backend), {}).setdefault(cell.surface, []).append(cell.result)
    single = [s for s in surfaces if any(c.surface == s for c in cells)]
    width = max([len(f"{s} @ {b}") for s, b in rows] + [20])
    print("\n" + " " * width + "  " + " ".join(f"{s[:8]:>8}" for s in single))
    for (scenario, backend), by_surface in sorted(rows.items()):
        marks = []
        for surface in single:
            results = by_surface.get(surface)
            marks.append(f"{symbol[results[0]] if results else '':>8}")
        cross = [f"{s}={symbol[r[0]]}" for s, r in sorted(by_surface.items()) if "+" in s]
        print(f"{scenario + ' @ ' + backend:<{width}}  " + " ".join(marks) + ("  " + " ".join(cross) if cross else ""))
    problems = [c for c in cells if c.result in ("fail", "known")]
    if problems:
        print("\nfailures and known drift:")
        for cell in problems:
            print(f"  {cell.result.upper():5} {cell.surface} / {cell.scenario} / {cell.backend}: {cell.why}")
    offered = [c for c in cells if c.result == "not offered" and not c.why.startswith("the ")]
    if offered:
        print("\nnot offered:")
        seen = set()
        for cell in offered:
            key = (cell.surface, cell.why)
            if key in seen:
                continue
            seen.add(key)
            print(f"  {cell.surface}: {cell.why} (e.g. {cell.scenario})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--surfaces", help="comma-separated surfaces (default: every surface with a driver)")
    parser.add_argument("--backends", help="comma-separated backends (default: sqlite and every server whose URL is set)")
    parser.add_argument("--scenarios", help="comma-separated scenario names (default: all)")
    parser.add_argument("--full", action="store_true", help="every surface on every server (CI rotates surfaces over servers)")
    parser.add_argument("--lanes", type=int, default=2, help="backends run side by side (default 2)")
    parser.add_argument("--out", help="write the matrix as JSON here")
    args = parser.parse_args()

    surfaces = args.surfaces.split(",") if args.surfaces else [s for s in SURFACES if (HERE / "drivers" / s / "run.sh").exists()]
    for surface in surfaces:
        if surface not in SURFACES:
            raise SystemExit(f"unknown surface '{surface}' (known: {', '.join(SURFACES)})")
        if not (HERE / "drivers" / surface / "run.sh").exists():
            raise SystemExit(f"no driver for '{surface}' (drivers/{surface}/run.sh)")
    if args.backends:
        backends = args.backends.split(",")
        for backend in backends:
            if backend not in BACKENDS:
                raise SystemExit(f"unknown backend '{backend}' (known: {', '.join(BACKENDS)})")
    else:
        backends = ["sqlite"] + [b for b in SERVER_BACKENDS if os.environ.get(BACKENDS[b]["env"])]
    scenarios = load_scenarios(args.scenarios.split(",") if args.scenarios else None)
    known = load_known()
    by_name = {s["name"]: s for s in scenarios}
    cells = plan(scenarios, surfaces, backends, args.full)

    started = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="polylock-conformance-"))
    env = dict(os.environ)
    # Lanes: cells of one backend run in order in one lane; backends spread over the lanes.
    lanes_cells: List[List[Cell]] = [[] for _ in range(max(1, args.lanes))]
    load = [0] * len(lanes_cells)
    for backend in backends:
        mine = [c for c in cells if c.backend == backend]
        lane = load.index(min(load))
        lanes_cells[lane] += mine
        load[lane] += len(mine)
    print(f"conformance: {len(scenarios)} scenarios, surfaces {','.join(surfaces)}, backends {','.join(backends)}: "
          f"{len(cells)} cells in {len(lanes_cells)} lanes (logs: {tmp})", flush=True)
    lock = threading.Lock()

    def run_lane(number: int, lane_cells: List[Cell]) -> None:
        lane_tmp = tmp / f"lane{number}"
        lane_tmp.mkdir()
        lane = Lane(DriverPool(lane_tmp, env), lane_tmp)
        try:
            for cell in lane_cells:
                scenario = by_name[cell.scenario]
                parties = scenario.get("parties", ["A"])
                party_surfaces = cell.surface.split("+") if "+" in cell.surface else [cell.surface] * len(parties)
                began = time.monotonic()
                cell.result, cell.why, cell.step = run_cell(scenario, party_surfaces, cell.backend, lane)
                cell.seconds = time.monotonic() - began
                apply_known(cell, known)
                if cell.result in ("fail", "known") or os.environ.get("POLYLOCK_CONFORMANCE_VERBOSE"):
                    with lock:
                        print(f"  {cell.result:11} {cell.surface} / {cell.scenario} / {cell.backend} "
                              f"({cell.seconds:.1f} s) {cell.why}", flush=True)
        finally:
            lane.pool.close()

    threads = [threading.Thread(target=run_lane, args=(i, lc)) for i, lc in enumerate(lanes_cells) if lc]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # Cells the backend cannot host, listed (not run) so the matrix shows every pair.
    for scenario in scenarios:
        for backend in backends:
            reason = applies(scenario, backend)
            if reason and reason != "needs no backend":
                for surface in surfaces:
                    cells.append(Cell(surface, scenario["name"], backend, "not offered", reason))

    print_matrix(cells, surfaces)
    counts = {r: sum(1 for c in cells if c.result == r) for r in ("pass", "fail", "known", "not offered")}
    print(f"\nconformance: {counts['pass']} passed, {counts['fail']} failed, {counts['known']} known drift, "
          f"{counts['not offered']} not offered, in {time.monotonic() - started:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps({"cells": [
            {"surface": c.surface, "scenario": c.scenario, "backend": c.backend, "result": c.result, "why": c.why}
            for c in cells]}, indent=1) + "\n")
    if counts["fail"] == 0:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if counts["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
