"""Segment IDs and leased Snowflake worker ids through the binding, sync and asyncio, on every
backend with counters and versioned values: unique across threads and clients, never 0,
typed errors for bad input and taken ids."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid

import pytest

import polylock
from conftest import backend_params, make_url


@pytest.fixture(params=backend_params())
def id_url(request, tmp_path) -> str:
    return make_url(request.param, tmp_path, f"namespace=pyids-{uuid.uuid4().hex}&lease=3s")


def test_segment_ids_are_unique_never_zero_across_threads_and_clients(id_url):
    with polylock.connect(id_url) as first, polylock.connect(id_url) as second:
        generators = [first.segment("orders", step=20), second.segment("orders", step=20)]
        seen = []
        lock = threading.Lock()

        def work(generator):
            ids = [generator.next_id() for _ in range(300)] + generator.next_ids(200)
            assert ids == sorted(ids), "one generator's IDs only grow"
            with lock:
                seen.extend(ids)

        threads = [threading.Thread(target=work, args=(generators[i % 2],)) for i in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(seen) == 4 * 500
        assert len(set(seen)) == len(seen)
        assert 0 not in seen
        assert generators[0].tag == "orders"
        assert generators[0].step >= 20


def test_segment_bad_input_is_a_typed_error(tmp_path):
    with polylock.connect(f"sqlite://{tmp_path}/ids.db") as client:
        with pytest.raises(polylock.InvalidArgumentError):
            client.segment("")
        with pytest.raises(polylock.InvalidArgumentError):
            client.segment("t", step=0)
        with pytest.raises(polylock.InvalidArgumentError):
            client.segment("t", load_at=2.0)
        with pytest.raises(polylock.InvalidArgumentError):
            client.segment("t", wait=-1.0)
        with pytest.raises(OverflowError):
            client.segment("t").next_ids(-1)


def test_leased_snowflakes_have_their_own_worker_ids_and_never_share_an_id(id_url):
    with polylock.connect(id_url) as client:
        first = client.snowflake()
        second = client.snowflake()
        assert {first.worker_id, second.worker_id} == {0, 1}
        assert first.epoch >= 1
        ids = first.next_ids(3000) + [second.next_id() for _ in range(500)]
        assert len(set(ids)) == len(ids)
        assert {polylock.parse_snowflake(i).worker for i in ids} == {0, 1}
        with pytest.raises(polylock.LockTimeoutError):
            client.snowflake(worker_id=first.worker_id)
        with pytest.raises(polylock.InvalidArgumentError):
            client.snowflake(worker_id=1024)
        worker, epoch = first.worker_id, first.epoch
        first.close()
        with client.snowflake(worker_id=worker) as again:
            assert again.epoch > epoch
            assert again.next_id() > max(i for i in ids if polylock.parse_snowflake(i).worker == worker)
        second.close()


def test_asyncio_segments_and_leased_snowflakes(id_url):
    async def main():
        async with await polylock.aio.connect(id_url) as client:
            segment = client.segment("async-tag", step=10)
            ids = [await segment.next_id() for _ in range(100)]
            ids += await segment.next_ids(250)
            batches = await asyncio.gather(*(segment.next_ids(50) for _ in range(4)))
            ids += [i for batch in batches for i in batch]
            assert len(set(ids)) == len(ids) == 550
            assert 0 not in ids
            async with await client.snowflake() as generator:
                assert await generator.worker_id() == 0
                flakes = await generator.next_ids(1000)
                flakes.append(await generator.next_id())
                assert flakes == sorted(flakes) and len(set(flakes)) == len(flakes)

    asyncio.run(main())


def test_exhausted_carries_retry_after(tmp_path):
    """With no time to wait, a generator whose first range is still loading says when to
    retry; once the range is there, IDs flow. (Rust's suite covers a store that cannot answer.)"""
    with polylock.connect(f"sqlite://{tmp_path}/ids.db") as client:
        segment = client.segment("impatient", step=5, wait=0.0)
        with pytest.raises(polylock.ExhaustedError) as caught:
            segment.next_id()
        assert caught.value.retry_after > 0
        for _ in range(500):
            try:
                assert segment.next_id() >= 1
                break
            except polylock.ExhaustedError:
                time.sleep(0.01)
        else:
            pytest.fail("the first range never arrived")
