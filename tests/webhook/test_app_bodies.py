"""Bodies within bounds and huge reviews on their own lane, through the app in process (webhook.app, webhook.body)."""

from __future__ import annotations

import asyncio
import copy
import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette as FastAPI

from policyengine import load_policies, shipped_policies_dir
from tests.webhook.test_admission import example, review_body
from webhook.admission import Admission
from webhook.app import create_app
from webhook.body import BodyBudget
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import ReviewRequest


@pytest.fixture
def admission(tmp_path: Path) -> Admission:
    target = tmp_path / "policies"
    shutil.copytree(shipped_policies_dir(), target, ignore=shutil.ignore_patterns("tests"))
    return Admission(PolicyStore(target, load_policies), WebhookMetrics())


def _post_all(app: FastAPI, bodies: list[bytes], headers: dict[str, str] | None = None) -> list[httpx.Response]:
    async def run() -> list[httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook", timeout=120) as client:
            return list(await asyncio.gather(*(client.post("/mutate", content=b, headers=headers) for b in bodies)))

    return asyncio.run(run())


async def _until(check: Callable[[], object], what: str) -> None:
    """Poll `check` until it holds (a hang bound of two minutes, not a time bound)."""
    for _ in range(60_000):
        if check():
            return
        await asyncio.sleep(0.002)
    raise AssertionError(f"never happened: {what}")


def _huge_review(containers: int = 3000) -> bytes:
    pod = example("pod-legacy-vram.yaml")
    first = pod["spec"]["containers"][0]
    pod["spec"]["containers"] = [{**copy.deepcopy(first), "name": f"c{i}"} for i in range(containers)]
    return review_body(pod, uid="huge")


class _HoldsHugeReviews:
    """The real admission, except that decisions of huge pods wait until the test lets them go: a stuck review."""

    def __init__(self, inner: Admission) -> None:
        self.inner = inner
        self.release = threading.Event()
        self.threads: dict[str, set[str]] = {"huge": set(), "ordinary": set()}

    def _hold(self, request: ReviewRequest) -> None:
        huge = len((request.object or {}).get("spec", {}).get("containers", [])) > 100
        self.threads["huge" if huge else "ordinary"].add(threading.current_thread().name)
        if huge:
            self.release.wait(120)

    def mutate(self, request: ReviewRequest) -> dict[str, Any]:
        self._hold(request)
        return self.inner.mutate(request)

    def validate(self, request: ReviewRequest) -> dict[str, Any]:
        self._hold(request)
        return self.inner.validate(request)


class _CountsWholeBodies:
    """ASGI wrapper: how many requests have had their whole body received by the app."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app
        self.whole = 0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def counted() -> Any:
            message = await receive()
            if message["type"] == "http.request" and not message.get("more_body"):
                self.whole += 1
            return message

        await self.app(scope, counted, send)


def test_stuck_huge_reviews_leave_the_ordinary_ones_their_threads(admission: Admission) -> None:
    handler = _HoldsHugeReviews(admission)
    budget = BodyBudget(large_bodies=3)  # all three read at once: they queue for the large lane's one thread
    app = _CountsWholeBodies(
        create_app(handler, metrics=WebhookMetrics(), decision_threads=2, deadline_seconds=30, body_budget=budget)
    )
    huge = _huge_review()
    assert len(huge) > 256 * 1024

    async def run() -> tuple[list[httpx.Response], httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook", timeout=120) as client:
            stuck = [asyncio.create_task(client.post("/mutate", content=huge)) for _ in range(3)]
            # all three read and waiting on a decision (each holds one once begun)
            await _until(lambda: app.whole == 3 and handler.threads["huge"], "all three huge reviews read")
            ordinary = await client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml")))
            handler.release.set()
            return list(await asyncio.gather(*stuck)), ordinary

    stuck, ordinary = asyncio.run(run())
    assert ordinary.status_code == 200 and ordinary.json()["response"]["allowed"] is True
    assert ordinary.json()["response"]["patch"]
    assert handler.threads["huge"] == {"gpudra-decide-large-0"}
    assert all(name.startswith("gpudra-decide-") and "large" not in name for name in handler.threads["ordinary"])
    assert [r.status_code for r in stuck] == [200, 200, 200]  # each answered: a denial, not a crash


def test_a_declared_length_above_the_limit_is_413_before_the_body_is_read(admission: Admission) -> None:
    app = create_app(admission, metrics=WebhookMetrics(), max_body_bytes=1000)
    (resp,) = _post_all(app, [b"{}"], headers={"Content-Length": "5000000"})
    assert resp.status_code == 413 and "5000000 bytes exceeds the limit of 1000" in resp.json()["error"]


def test_bodies_beyond_the_budget_wait_their_turn_and_the_budget_comes_back(admission: Admission) -> None:
    huge = _huge_review()
    budget = BodyBudget(small_bytes=1 << 20, large_bytes=len(huge) * 3 // 2)
    app = create_app(admission, metrics=WebhookMetrics(), body_budget=budget, deadline_seconds=60)
    # Both are in flight at once and only one fits: the second waits for the first's bytes instead of a 503.
    responses = _post_all(app, [huge, huge, huge])
    assert [r.status_code for r in responses] == [200, 200, 200]
    assert all(r.json()["response"]["uid"] == "huge" for r in responses)
    assert budget.held == 0 and budget.large.waiting == 0
    ordinary = _post_all(app, [review_body(example("pod-legacy-vram.yaml"))])[0]
    assert ordinary.status_code == 200 and ordinary.json()["response"]["patch"]


def test_a_body_larger_than_its_whole_share_is_503_at_once(admission: Admission) -> None:
    huge = _huge_review()
    budget = BodyBudget(small_bytes=1 << 20, large_bytes=len(huge) // 2)
    app = create_app(admission, metrics=WebhookMetrics(), body_budget=budget, deadline_seconds=60)
    (shed,) = _post_all(app, [huge])
    assert shed.status_code == 503 and "bytes of large request bodies are in flight" in shed.json()["error"]
    assert shed.headers["connection"] == "close"
    assert budget.held == 0


def test_malformed_length_is_400(admission: Admission) -> None:
    app = create_app(admission, metrics=WebhookMetrics())
    body = json.dumps({"kind": "AdmissionReview"}).encode()
    (resp,) = _post_all(app, [body], headers={"Content-Length": "12x"})
    assert resp.status_code == 400


def _decided(response: httpx.Response) -> bool:
    """The huge pod's own answer (3,000 GPU containers are more than a claim can allocate), not a busy refusal."""
    status = response.json()["response"].get("status") or {}
    return status.get("code") == 400 and "AllocationResultsMaxSize" in str(status.get("message"))


def test_large_bodies_are_read_one_at_a_time_and_the_others_wait_unread(admission: Admission) -> None:
    """By default one large body is read, parsed and decided at a time in a process: the next ones wait for its turn
    with their bodies unread (issue 37 row 7), ordinary reviews pass meanwhile, and every one is answered."""
    handler = _HoldsHugeReviews(admission)
    budget = BodyBudget()
    app = _CountsWholeBodies(create_app(handler, metrics=WebhookMetrics(), deadline_seconds=60, body_budget=budget))
    huge = _huge_review()

    async def run() -> tuple[list[httpx.Response], httpx.Response, int, int]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook", timeout=120) as client:
            held = [asyncio.create_task(client.post("/mutate", content=huge)) for _ in range(3)]
            await _until(lambda: handler.threads["huge"], "the first is read and held in its decision")
            ordinary = await client.post("/mutate", content=review_body(example("pod-legacy-vram.yaml")))
            whole_while_held, in_flight = app.whole, budget.large_in_flight
            handler.release.set()
            return list(await asyncio.gather(*held)), ordinary, whole_while_held, in_flight

    answered, ordinary, whole_while_held, in_flight = asyncio.run(run())
    assert ordinary.status_code == 200 and ordinary.json()["response"]["patch"]
    # the held huge one and the ordinary one were read whole; the other two huge bodies were not read at all
    assert (whole_while_held, in_flight) == (2, 1)
    assert [r.status_code for r in answered] == [200, 200, 200]
    assert all(_decided(r) for r in answered)
    assert (budget.large_in_flight, budget.held) == (0, 0)


def test_a_large_body_without_a_length_gets_a_turn_at_once_or_a_503_and_never_waits_holding_small_bytes(
    admission: Admission,
) -> None:
    """A chunked body (no Content-Length) is small until its bytes say otherwise. Past the large-body size it takes
    the large turn if one is free; if not it is refused at once (503), its small-share bytes given back, since
    waiting would hold them (enough such waiters would starve the ordinary reviews). The API server always sends a
    length."""
    handler = _HoldsHugeReviews(admission)
    budget = BodyBudget(large_share=1.0)  # the turn is free as soon as the first gives it back: no rest
    app = create_app(handler, metrics=WebhookMetrics(), deadline_seconds=60, body_budget=budget)
    huge = _huge_review()

    async def chunks() -> Any:
        for start in range(0, len(huge), 64 * 1024):
            yield huge[start : start + 64 * 1024]

    async def run() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook", timeout=120) as client:
            first = asyncio.create_task(client.post("/mutate", content=huge))
            await _until(lambda: handler.threads["huge"], "the first holds the large lane's thread")
            refused = await client.post("/mutate", content=chunks())
            small_after_refusal = budget.small.held
            handler.release.set()
            done = await first
            alone = await client.post("/mutate", content=chunks())  # the turn is free: read and decided
            assert small_after_refusal == 0
            return done, refused, alone

    done, refused, alone = asyncio.run(run())
    assert refused.status_code == 503 and "busy with other large reviews" in refused.json()["error"]
    assert _decided(done) and alone.status_code == 200 and _decided(alone)
    assert (budget.large_in_flight, budget.held) == (0, 0)


@pytest.mark.parametrize(
    ("large_bodies", "why"),
    [
        (1, "read and decided 1 at a time"),  # waits for the large turn, unread
        (2, "decided one at a time); not parsed within"),  # read, then waits for the large lane's one thread
    ],
)
def test_a_huge_review_not_taken_within_its_deadline_is_denied_with_its_uid_not_503(
    admission: Admission, large_bodies: int, why: str
) -> None:
    """The first huge review holds its decision. The next one meets its deadline waiting, for the large turn (one
    large body at a time) or, read, for the large lane's thread: answered as an AdmissionReview denial (fail closed,
    with gpudra's reason), its uid read off the body's start, the connection closed; the turn and the bytes come
    back, and the same review is decided once the first is done."""
    handler = _HoldsHugeReviews(admission)
    budget = BodyBudget(large_bodies=large_bodies)
    app = create_app(handler, metrics=WebhookMetrics(), deadline_seconds=1.0, body_budget=budget)
    first, second = _huge_review(), review_body(json.loads(_huge_review())["request"]["object"], uid="second")

    async def run() -> tuple[httpx.Response, httpx.Response, httpx.Response]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://webhook", timeout=120) as client:
            held = asyncio.create_task(client.post("/mutate", content=first))
            await _until(lambda: handler.threads["huge"], "the first holds the large lane's thread")
            late = await client.post("/mutate", content=second)
            handler.release.set()
            done = await held
            after = await client.post("/mutate", content=second)
            return done, late, after

    done, late, after = asyncio.run(run())
    assert late.status_code == 200, late.text
    answer = late.json()["response"]
    assert answer["uid"] == "second" and answer["allowed"] is False and answer["status"]["code"] == 503
    assert "busy with other large reviews" in answer["status"]["message"] and why in answer["status"]["message"]
    assert done.status_code == 200 and done.json()["response"]["uid"] == "huge"
    assert after.status_code == 200 and _decided(after) and after.json()["response"]["uid"] == "second"
    assert (budget.large_in_flight, budget.held) == (0, 0)
