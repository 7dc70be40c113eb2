"""A Python process and the `polylock` CLI contend for one lock, on every backend that two
processes can share."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

import polylock
from conftest import BACKEND_KINDS, IN_PROCESS_BACKENDS, backend_params

# Every backend a second process can share (mem:// lives in one process).
pytestmark = pytest.mark.parametrize(
    "backend", backend_params([name for name in BACKEND_KINDS if name not in IN_PROCESS_BACKENDS])
)

CLI_TIMED_OUT = 75


def cli_binary() -> str:
    explicit = os.environ.get("POLYLOCK_CLI")
    if explicit:
        return explicit
    root = Path(__file__).resolve().parents[2]
    metadata = subprocess.run(
        ["cargo", "metadata", "--format-version", "1", "--no-deps"],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    )
    binary = Path(json.loads(metadata.stdout)["target_directory"]) / "release" / "polylock"
    if not binary.exists():
        pytest.fail(f"{binary} is missing: run `cargo build --release -p polylock-cli` or set POLYLOCK_CLI")
    return str(binary)


def cli(url, *args, **popen_args):
    return subprocess.Popen([cli_binary(), "--url", url, *args], text=True, **popen_args)


def test_cli_waits_for_python_and_python_for_cli(client, url, lock_name):
    lock = client.lock(lock_name)
    assert lock.acquire()
    python_token = lock.fencing_token
    blocked = cli(url, "run", "--lock", lock_name, "--wait", "300ms", "--", "true")
    assert blocked.wait(30) == CLI_TIMED_OUT
    lock.release()

    holder = cli(
        url,
        "run",
        "--lock",
        lock_name,
        "--wait",
        "10s",
        "--",
        "sh",
        "-c",
        'echo "$POLYLOCK_FENCING_TOKEN"; sleep 1',
        stdout=subprocess.PIPE,
    )
    try:
        cli_token = int(holder.stdout.readline())
        assert cli_token > python_token
        assert lock.acquire(blocking=False) is False
        started = time.monotonic()
        assert lock.acquire(timeout=15)
        assert time.monotonic() - started > 0.3, "Python got the lock while the CLI still held it"
        assert lock.fencing_token > cli_token
        assert holder.wait(10) == 0
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    lock.release()
