"""webhook.heap_trim: a trim once the connection table has shrunk by enough, never on every poll."""

from __future__ import annotations

import gc
import sys
import weakref

import pytest

from webhook.heap_trim import HeapTrim


def test_it_trims_after_enough_connections_closed_and_not_before() -> None:
    table = [0]
    trim = HeapTrim(lambda: table[0], closed=10)
    for size in (50, 200, 195):  # growing, then 5 closed: not yet
        table[0] = size
        trim()
    assert trim.trims == 0 or trim._trim is None
    table[0] = 150  # 50 closed since the peak of 200
    trim()
    table[0] = 149  # one more: the peak was reset to 150 at the trim
    trim()
    expected = 1 if trim._trim is not None else 0
    assert trim.trims == expected


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc_trim")
def test_glibc_malloc_trim_is_found_here() -> None:
    assert HeapTrim(lambda: 0)._trim is not None


def test_what_closed_connections_left_in_reference_cycles_is_collected_before_the_trim() -> None:
    """A closed connection's objects hold one another in cycles (asyncio's TLS protocol <-> its transport): the
    trim collects them first, even with automatic collection off (a quiet server, webhook.settled_heap)."""

    class Connection:
        def __init__(self) -> None:
            self.peer = self
            self.buffer = bytearray(64 * 1024)

    table = [100]
    trim = HeapTrim(lambda: table[0], closed=10)
    trim()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        gone = [weakref.ref(Connection()) for _ in range(50)]
        assert all(ref() is not None for ref in gone)  # kept alive by their cycles alone
        table[0] = 50
        trim()
        assert all(ref() is None for ref in gone)
    finally:
        if was_enabled:
            gc.enable()
