"""Bounds on one review's cost to the others: the decision cache in bytes, and decisions off the event loop with a
deadline (a slow review is answered at its deadline while health checks and other reviews keep flowing)."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import httpx
import pytest

from tests.webhook.test_admission import RecordingApiServer, example, review_body
from webhook.admission import Admission
from webhook.app import create_app
from webhook.deadline import DeadlineExceeded, DecisionPool
from webhook.decision_cache import DecisionCache
from webhook.kube import NamespaceCache
from webhook.metrics import WebhookMetrics
from webhook.policy import PolicySet, load_policies, shipped_policies_dir
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
    megabyte = "x" * (1024 * 1024)
    for i in range(60):
        pod = example("pod-legacy-vram.yaml")
        pod["metadata"]["name"] = f"big-{i}"
        pod["metadata"]["annotations"]["notes"] = megabyte + str(i)
        admission.mutate(parse_review(review_body(pod)))
    cache = admission._cache
    assert 0 < len(cache) < 60 and cache.weight <= cache.max_bytes
    assert len(cache) * 1024 * 1024 <= cache.max_bytes  # each entry holds a pod of a bit more than 1 MiB


def test_pool_answers_at_the_deadline_and_keeps_serving() -> None:
    pool = DecisionPool(2)
    release = threading.Event()

    async def scenario() -> tuple[float, int, int]:
        started = time.perf_counter()
        with pytest.raises(DeadlineExceeded, match="0.2 s"):
            await pool.run(release.wait, 0.2)
        waited = time.perf_counter() - started
        fast = await pool.run(lambda: 41 + 1, 1.0)  # the second thread is free
        return waited, fast, pool.busy

    waited, fast, busy = asyncio.run(scenario())
    release.set()
    assert waited < 1.0 and fast == 42 and busy == 1


def test_pool_threads_are_daemons_so_a_stuck_decision_never_blocks_exit() -> None:
    DecisionPool(1, name="gpudra-test-daemon")
    workers = [t for t in threading.enumerate() if t.name.startswith("gpudra-test-daemon")]
    assert workers and all(t.daemon for t in workers)


class _SlowForOnePod:
    """Spins the CPU (holding the GIL between switches, as policy evaluation does) for pods named `slow`."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def mutate(self, review: ReviewRequest) -> dict[str, Any]:
        if (review.object or {}).get("metadata", {}).get("name") == "slow":
            end = time.perf_counter() + self.seconds
            n = 0
            while time.perf_counter() < end:
                n += 1
        return allowed_response(review.uid)

    validate = mutate


def test_a_slow_review_is_denied_at_its_deadline_while_others_and_healthz_flow() -> None:
    app = create_app(_SlowForOnePod(3.0), metrics=WebhookMetrics(), deadline_seconds=0.5, decision_threads=2)
    slow_pod = {"metadata": {"name": "slow"}, "spec": {"containers": []}}
    fast_pod = {"metadata": {"name": "fast"}, "spec": {"containers": []}}

    async def scenario() -> tuple[httpx.Response, float, list[float]]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook") as client:

            async def timed(coro: Any) -> tuple[httpx.Response, float]:
                started = time.perf_counter()
                resp = await coro
                return resp, time.perf_counter() - started

            slow_task = asyncio.create_task(timed(client.post("/mutate", content=review_body(slow_pod))))
            await asyncio.sleep(0.05)
            others = []
            for _ in range(5):
                others.append(await timed(client.get("/healthz")))
                others.append(await timed(client.post("/mutate", content=review_body(fast_pod))))
            slow, slow_took = await slow_task
            assert all(r.status_code == 200 for r, _ in others)
            return slow, slow_took, [took for _, took in others]

    slow, slow_took, others = asyncio.run(scenario())
    status = slow.json()["response"]
    assert status["allowed"] is False and status["status"]["code"] == 504 and "0.5 s" in status["status"]["message"]
    assert slow_took < 1.5
    assert max(others) < 0.5, others  # each answered while the slow decision still spins
