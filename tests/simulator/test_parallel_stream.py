"""`simulator.parallel.parallel_stream`: every submitted task's result comes back once, under its ticket."""

from __future__ import annotations

import pytest

from dra.errors import InputError
from simulator.parallel import parallel_stream


def _square(value: int) -> int:
    return value * value


@pytest.mark.parametrize("workers", [1, 2])
def test_results_come_back_under_their_tickets(workers: int) -> None:
    with parallel_stream("process", workers) as stream:
        tickets = {stream.submit(_square, n): n for n in range(6)}
        assert sorted(tickets) == list(range(6))
        first = stream.next_done()
        more = {stream.submit(_square, 10): 10}
        results = dict([first] + [stream.next_done() for _ in range(6)])
    assert results == {t: n * n for t, n in {**tickets, **more}.items()}


def test_serial_stream_runs_in_submission_order() -> None:
    with parallel_stream("process", 1) as stream:
        for n in (3, 1, 2):
            stream.submit(_square, n)
        assert [stream.next_done() for _ in range(3)] == [(0, 9), (1, 1), (2, 4)]


def test_unknown_backend_is_refused() -> None:
    with pytest.raises(InputError, match="backend must be process or ray"), parallel_stream("threads"):
        pass
