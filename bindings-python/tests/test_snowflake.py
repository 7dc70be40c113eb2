"""Snowflake IDs through the binding."""

from __future__ import annotations

import threading
import time

import pytest

import polylock


def test_ids_increase_and_parse_back():
    ids = polylock.Snowflake(worker_id=7)
    first, second = ids.next_id(), ids.next_id()
    assert 0 < first < second < 2**63
    parts = polylock.parse_snowflake(second)
    assert parts.worker == 7
    assert abs(parts.timestamp_ms - time.time() * 1000) < 5_000
    assert ids.parse(second) == parts
    assert ids.worker_id == 7


def test_batches_are_unique_and_ordered():
    ids = polylock.Snowflake(1)
    batch = ids.next_ids(10_000)
    assert len(batch) == len(set(batch)) == 10_000
    assert batch == sorted(batch)
    assert ids.next_id() > batch[-1]


def test_threads_share_a_generator():
    ids = polylock.Snowflake(3)
    results = [[] for _ in range(4)]
    threads = [threading.Thread(target=lambda out=out: out.extend(ids.next_id() for _ in range(5000))) for out in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [i for out in results for i in out]
    assert len(set(everything)) == len(everything)


def test_custom_epoch():
    epoch = 1_700_000_000_000
    ids = polylock.Snowflake(2, epoch_ms=epoch)
    assert ids.epoch_ms == epoch
    parts = polylock.parse_snowflake(ids.next_id(), epoch_ms=epoch)
    assert parts.worker == 2 and abs(parts.timestamp_ms - time.time() * 1000) < 5_000


@pytest.mark.parametrize("worker", [1024, 5000])
def test_worker_must_fit_ten_bits(worker):
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.Snowflake(worker)


def test_negative_worker_and_id_are_refused():
    with pytest.raises(OverflowError):
        polylock.Snowflake(-1)
    with pytest.raises(polylock.InvalidArgumentError):
        polylock.parse_snowflake(2**63)
