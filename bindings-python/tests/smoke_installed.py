"""What a user does first with the installed wheel, runnable on any supported CPython without
pytest: run-tests.sh runs it in a fresh venv of the oldest one (3.9).

    python tests/smoke_installed.py SCRATCH_DIR
"""

import asyncio
import sys

import polylock
import polylock.aio


def main(scratch: str) -> None:
    url = f"sqlite://{scratch}/smoke.db"
    with polylock.connect(url) as client:
        lock = client.lock("smoke")
        with lock:
            token = lock.fencing_token
            assert isinstance(token, int) and token > 0, token
        assert not lock.locked()
        try:
            lock.acquire(lease=0)
        except polylock.InvalidArgumentError:
            pass
        else:
            raise AssertionError("a zero lease was accepted")

    async def with_asyncio() -> None:
        async with await polylock.aio.connect(url) as client:
            async with client.lock("smoke") as held:
                assert held.fencing_token > token

    asyncio.run(with_asyncio())
    ids = polylock.Snowflake(worker_id=5)
    assert polylock.parse_snowflake(ids.next_id()).worker == 5
    print(f"installed wheel on CPython {sys.version.split()[0]}: ok (polylock {polylock.__version__})")


if __name__ == "__main__":
    main(sys.argv[1])
