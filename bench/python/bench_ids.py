"""polylock's UUIDv7 and ULID from Python beside what Python users run today, in one process
and one run, printed as ratios (figures, not pass/fail; issue 19's goal: faster than the
ecosystem's own generators).

    python bench/python/bench_ids.py [--seconds 1]

Peers (bench/python/requirements-ids.txt):
- UUIDv7: the standard library's `uuid.uuid7()` where the Python has it (3.14+), else the
  `uuid6` package's `uuid7()` (RFC 9562, monotonic counter within a millisecond). Both return
  a `uuid.UUID`, as `polylock.uuid7()` does.
- ULID: the `python-ulid` package (module `ulid`): `ULID()` (monotonic by default from 4.x)
  and `str(ULID())`. `polylock.ulid()` returns the 26-character text.
- For scale, `uuid.uuid4()` (random, no order).

Every row calls each side the same way in the same loop: N calls between two looks at the
clock, for the same time; batch rows make lists of 10,000.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
import uuid
from importlib import metadata
from typing import Callable, Optional, Tuple

import polylock

BATCH = 10_000
CALLS_PER_LOOK = 200


def per_second(step: Callable[[], object], seconds: float, per_call: int = 1) -> float:
    """Calls of `step` per second (times `per_call` IDs each), for `seconds`."""
    step()  # warm
    count, started = 0, time.perf_counter()
    deadline = started + seconds
    calls = max(1, CALLS_PER_LOOK // per_call)
    while time.perf_counter() < deadline:
        for _ in range(calls):
            step()
        count += calls
    return count * per_call / (time.perf_counter() - started)


def version_of(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def uuid7_peer() -> Tuple[Optional[Callable[[], uuid.UUID]], str]:
    if hasattr(uuid, "uuid7"):  # Python 3.14+
        return uuid.uuid7, f"uuid.uuid7 (Python {platform.python_version()})"
    try:
        import uuid6
    except ImportError:
        return None, "uuid6 (not installed: pip install -r bench/python/requirements-ids.txt)"
    return uuid6.uuid7, f"uuid6.uuid7 {version_of('uuid6')}"


def fmt(value: float) -> str:
    return f"{value:,.0f}"


def row(section: str, label: str, ours: float, peer_name: str, peer: Optional[float]) -> None:
    cells = [f"polylock {fmt(ours)} ids/s"]
    if peer is None:
        cells.append(f"{peer_name}: skipped")
    else:
        ratio = ours / peer if peer > 0 else float("inf")
        cells += [
            f"{peer_name} {fmt(peer)} ids/s",
            f"polylock/peer {ratio:.2f}x (goal >1x: {'met' if ratio > 1 else 'not met'})",
        ]
    print(f"{section:<10} {label:<28} " + " | ".join(cells), flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=1.0, help="time per figure (default 1)")
    args = parser.parse_args()
    seconds = args.seconds

    peer7, peer7_name = uuid7_peer()
    try:
        from ulid import ULID
    except ImportError:
        ULID = None  # noqa: N806
    ulid_name = f"python-ulid {version_of('python-ulid')}" if ULID is not None else "python-ulid (not installed)"
    print(
        f"# ids (Python {platform.python_version()}, polylock {version_of('polylock')}): IDs/s of polylock.uuid7()/ulid() "
        f"beside {peer7_name} and {ulid_name}; {seconds:g} s per figure; figures, not pass/fail",
        flush=True,
    )

    def measure_peer(step: Optional[Callable[[], object]], per_call: int = 1) -> Optional[float]:
        return None if step is None else per_second(step, seconds, per_call)

    row("uuid7", "uuid7()", per_second(polylock.uuid7, seconds), peer7_name, measure_peer(peer7))
    row(
        "uuid7",
        "str(uuid7())",
        per_second(lambda: str(polylock.uuid7()), seconds),
        peer7_name,
        measure_peer(None if peer7 is None else (lambda: str(peer7()))),
    )
    row(
        "uuid7",
        f"batches of {BATCH:,}",
        per_second(lambda: polylock.uuid7_batch(BATCH), seconds, BATCH),
        f"[{peer7_name.split()[0]}() x{BATCH:,}]",
        measure_peer(None if peer7 is None else (lambda: [peer7() for _ in range(BATCH)]), BATCH),
    )
    row("uuid7", "vs uuid.uuid4() (scale)", per_second(polylock.uuid7, seconds), "uuid.uuid4", per_second(uuid.uuid4, seconds))

    ulid_text = per_second(polylock.ulid, seconds)
    row("ulid", "ulid() as text", ulid_text, "str(ULID())", measure_peer(None if ULID is None else (lambda: str(ULID()))))
    row("ulid", "ulid() vs ULID() object", ulid_text, "ULID()", measure_peer(ULID))
    row(
        "ulid",
        f"batches of {BATCH:,}",
        per_second(lambda: polylock.ulid_batch(BATCH), seconds, BATCH),
        f"[str(ULID()) x{BATCH:,}]",
        measure_peer(None if ULID is None else (lambda: [str(ULID()) for _ in range(BATCH)]), BATCH),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
