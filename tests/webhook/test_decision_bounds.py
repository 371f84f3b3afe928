"""Bounds on one review's cost to the others: the decision cache in bytes, and decisions off the event loop with a
deadline (a slow review is answered at its deadline while health checks and other reviews keep flowing)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from kubeapi import NamespaceCache
from policyengine import PolicySet, load_policies, shipped_policies_dir
from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.admission import Admission
from webhook.app import create_app
from webhook.deadline import DeadlineExceeded, DecisionPool
from webhook.decision_cache import DecisionCache
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import ReviewRequest, allowed_response, parse_review


def test_cache_evicts_by_bytes_and_refuses_oversized_entries() -> None:
    cache: DecisionCache[str] = DecisionCache(max_entries=100, max_bytes=1000)
    for i in range(10):
        assert cache.put(bytes([i]), f"v{i}", 200)
    assert cache.weight <= 1000 and len(cache) == 5
    assert cache.get(bytes([0])) is None and cache.get(bytes([9])) == "v9"
    assert not cache.put(b"big", "x", 251) and cache.get(b"big") is None  # over a quarter of the budget
    cache.put(bytes([5]), "again", 100)  # replacing an entry re-weighs it
    assert cache.weight == sum(200 for _ in range(4)) + 100


def test_cache_is_safe_under_threads() -> None:
    cache: DecisionCache[int] = DecisionCache(max_entries=8, max_bytes=10_000)
    errors: list[BaseException] = []

    def hammer(seed: int) -> None:
        try:
            for i in range(3000):
                key = bytes([(seed * 7 + i) % 32])
                if cache.get(key) is None:
                    cache.put(key, i, 1 + i % 50)
        except BaseException as exc:  # pragma: no cover - what the test looks for
            errors.append(exc)

    threads = [threading.Thread(target=hammer, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) <= 8 and cache.weight <= 10_000


def _admission() -> Admission:
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    api = RecordingApiServer({"team-a": example("namespace-team-a.yaml")})
    return Admission(store, WebhookMetrics(), writer=api, namespaces=NamespaceCache(api))


def test_large_distinct_pods_keep_the_decision_cache_inside_its_byte_budget() -> None:
    admission = _admission()
    # 200 KiB each (under UNCACHED_INPUT_BYTES, so cached), 200 of them: past the 32 MiB budget
    filler = "x" * (200 * 1024)
    for i in range(200):
        pod = example("pod-legacy-vram.yaml")
        pod["metadata"]["name"] = f"big-{i}"
        pod["metadata"]["annotations"]["notes"] = filler + str(i)
        admission.mutate(parse_review(review_body(pod)))
    cache = admission._cache
    assert 0 < len(cache) < 200 and cache.weight <= cache.max_bytes
    assert len(cache) * 200 * 1024 <= cache.max_bytes  # each entry holds a pod of a bit more than 200 KiB


def test_pool_answers_at_the_deadline_and_keeps_serving() -> None:
    pool = DecisionPool(2)
    release = threading.Event()

    async def scenario() -> tuple[int, int]:
        # `release` is set only after the scenario: the run can only end by its deadline.
        with pytest.raises(DeadlineExceeded, match="0.2 s"):
            await pool.run(release.wait, 0.2)
        fast = await pool.run(lambda: 41 + 1, 1.0)  # the second thread is free
        return fast, pool.busy

    fast, busy = asyncio.run(scenario())
    release.set()
    assert fast == 42 and busy == 1


def test_pool_reports_how_long_each_job_waited_for_a_thread() -> None:
    waits: list[float] = []
    pool = DecisionPool(1, name="gpudra-test-wait", on_wait=waits.append)
    held, release = threading.Event(), threading.Event()

    def hold() -> int:
        held.set()
        assert release.wait(30)
        return 1

    async def scenario() -> list[int]:
        first = asyncio.ensure_future(pool.run(hold, 30))
        while not held.is_set():  # the one thread is taken
            await asyncio.sleep(0.01)
        second = asyncio.ensure_future(pool.run(lambda: 2, 30))
        await asyncio.sleep(0.2)  # the second job waits behind the first for at least this long
        release.set()
        return [await first, await second]

    assert asyncio.run(scenario()) == [1, 2]
    assert len(waits) == 2 and waits[1] >= 0.2 and waits[0] < waits[1]


def test_pool_threads_are_daemons_so_a_stuck_decision_never_blocks_exit() -> None:
    DecisionPool(1, name="gpudra-test-daemon")
    workers = [t for t in threading.enumerate() if t.name.startswith("gpudra-test-daemon")]
    assert workers and all(t.daemon for t in workers)


class _SlowForOnePod:
    """Spins the CPU (holding the GIL between switches, as policy evaluation does) for pods named `slow`, until
    `stop` is set (or `seconds`, a safety net); `spinning` says whether it is spinning now."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.stop = threading.Event()
        self.spinning = threading.Event()

    def mutate(self, review: ReviewRequest) -> dict[str, Any]:
        if (review.object or {}).get("metadata", {}).get("name") == "slow":
            self.spinning.set()
            end = time.monotonic() + self.seconds
            n = 0
            while not self.stop.is_set() and time.monotonic() < end:
                n += 1
            self.spinning.clear()
        return allowed_response(review.uid)

    validate = mutate


def test_a_slow_review_is_denied_at_its_deadline_while_others_and_healthz_flow() -> None:
    slow_handler = _SlowForOnePod(60.0)  # the safety net: a deadline that never fires fails after it
    app = create_app(slow_handler, metrics=WebhookMetrics(), deadline_seconds=0.5, decision_threads=2)
    slow_pod = {"metadata": {"name": "slow"}, "spec": {"containers": []}}
    fast_pod = {"metadata": {"name": "fast"}, "spec": {"containers": []}}

    # Ordered by the spinning decision's state, not timed: the slow review must be answered, and the others served,
    # while its decision still spins (it spins until told to stop, after the last answer).
    async def scenario() -> tuple[httpx.Response, bool, list[bool]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook") as client:

            async def spinning_when_answered(coro: Any) -> tuple[httpx.Response, bool]:
                resp = await coro
                return resp, slow_handler.spinning.is_set()

            slow_task = asyncio.create_task(
                spinning_when_answered(client.post("/mutate", content=review_body(slow_pod)))
            )
            while not slow_handler.spinning.is_set():
                await asyncio.sleep(0.01)
            others = []
            for _ in range(5):
                others.append(await spinning_when_answered(client.get("/healthz")))
                others.append(await spinning_when_answered(client.post("/mutate", content=review_body(fast_pod))))
            slow, slow_spinning = await slow_task
            assert all(r.status_code == 200 for r, _ in others)
            return slow, slow_spinning, [spinning for _, spinning in others]

    try:
        slow, slow_spinning, others = asyncio.run(scenario())
    finally:
        slow_handler.stop.set()
    status = slow.json()["response"]
    assert status["allowed"] is False and status["status"]["code"] == 504 and "0.5 s" in status["status"]["message"]
    assert slow_spinning, "the slow review was answered only once its decision had finished"
    assert all(others), others  # each answered while the slow decision still spins
