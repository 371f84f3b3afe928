"""The ASGI application: decode the body, call the admission core, encode its answer.

`/mutate` and `/validate` speak AdmissionReview v1; `/healthz` says the process is alive; `/readyz` says whether it
should receive traffic (policies loaded, certificate valid, API server reachable when side effects are on), with
details; `/metrics` is Prometheus text. Malformed reviews get a 4xx with a reason; an unexpected failure on a real
review is answered as a denial that names the error, never as a 500 and never as a silently unmutated pod. Bodies are
read within bounds (webhook.body); decisions run on a small thread pool with a deadline, and reviews of large bodies
on a lane of their own, so neither a slow review nor a flood of huge ones stalls the others or the health checks.

The review endpoints are answered straight from ASGI (`WebhookApp`): a burst of pod creations is what they serve,
and a framework's per-request stack cost more than the decision (benchmarks/admission.py,
docs/admission-performance.md). The probes and `/metrics` are Starlette routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from webhook.body import DEFAULT_BODY_SECONDS, DEFAULT_LARGE_BODY_BYTES, BodyBudget, BodyLimits, BodyRefused, read_body
from webhook.collector import ByteBudgetCollector
from webhook.deadline import DeadlineExceeded, DecisionPool
from webhook.metrics import WebhookMetrics
from webhook.review import (
    DEFAULT_MAX_BYTES,
    AdmissionDenied,
    BadReview,
    ReviewRequest,
    allowed_response,
    annotation_patch,
    denied_response,
    operation_label,
    parse_review,
    sniff_uid,
)

__all__ = [
    "DEFAULT_DEADLINE_SECONDS",
    "ECHO_PATCH_ANNOTATION",
    "AdmissionHandler",
    "BackgroundService",
    "ReadinessCheck",
    "WebhookApp",
    "create_app",
]

log = logging.getLogger("gpudra.webhook")

# Below the shipped webhook configurations' timeoutSeconds (5): the API server must get our answer, not its own
# timeout, so that what the pod's creator reads is gpudra's reason.
DEFAULT_DEADLINE_SECONDS = 4.0
DEFAULT_DECISION_THREADS = 4
# A refused body's connection is closed, and aborted when its body was not read whole (webhook.connections): a
# refusal is never followed by reading on.
_CLOSE = {"Connection": "close"}


class AdmissionHandler(Protocol):
    def mutate(self, request: ReviewRequest) -> dict[str, Any]: ...

    def validate(self, request: ReviewRequest) -> dict[str, Any]: ...


ReadinessCheck = Callable[[], tuple[bool, str]]


class BackgroundService(Protocol):
    """Something that runs beside the server for its lifetime (the recommendation cache's watch thread)."""

    def start(self) -> None: ...

    def stop(self, timeout: float = ...) -> None: ...


ReviewEndpoint = Callable[[Request], Awaitable[Response]]


class WebhookApp(Starlette):
    """Starlette, with `POST` to the review paths answered before its middleware stack and router."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.reviews: dict[str, ReviewEndpoint] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            endpoint = self.reviews.get(scope["path"])
            if endpoint is not None:
                scope["app"] = self
                response = await endpoint(Request(scope, receive))
                await response(scope, receive, send)
                return
        await super().__call__(scope, receive, send)


class _Late(Exception):
    """A large review not parsed within its deadline, whose uid was read off its body (webhook.review.sniff_uid)."""

    def __init__(self, uid: str, message: str) -> None:
        super().__init__(message)
        self.uid = uid
        self.message = message


ECHO_PATCH_ANNOTATION = "gpudra.io/echo"


def _echo_patch(review: ReviewRequest) -> dict[str, Any]:
    """The benchmarks' floor for a mutating webhook: every object allowed with one annotation added, no decision.
    The API server then does for it what it does after any patch (applies it, decodes and defaults the object again,
    runs its in-tree admission a second time), which `/echo`'s unchanged answer spares it."""
    if not isinstance(review.object, dict):  # nothing to annotate (a DELETE's review carries no object)
        return allowed_response(review.uid)
    return allowed_response(review.uid, patch=annotation_patch(review.object, {ECHO_PATCH_ANNOTATION: "patched"}))


def create_app(
    handler: AdmissionHandler,
    *,
    metrics: WebhookMetrics,
    readiness: dict[str, ReadinessCheck] | None = None,
    periodic: list[Callable[[], object]] | None = None,
    period_seconds: float = 2.0,
    max_body_bytes: int = DEFAULT_MAX_BYTES,
    enable_echo: bool = False,
    deadline_seconds: float = DEFAULT_DEADLINE_SECONDS,
    decision_threads: int = DEFAULT_DECISION_THREADS,
    services: list[BackgroundService] | None = None,
    body_seconds: float = DEFAULT_BODY_SECONDS,
    large_body_bytes: int = DEFAULT_LARGE_BODY_BYTES,
    body_budget: BodyBudget | None = None,
    lifespan_state: Mapping[str, object] | None = None,
) -> WebhookApp:
    """Build the app. `periodic` callables (policy and certificate reloads) run every `period_seconds`; each
    review's decision runs off the event loop and is answered within `deadline_seconds` (webhook.deadline);
    bodies must arrive within `body_seconds`, and all bodies in flight fit `body_budget` (webhook.body); those
    above `large_body_bytes` are parsed and decided one at a time on a lane of their own; `services` are started
    with the server and stopped with it; `lifespan_state` is handed to the server's connections (webhook.connections
    reads its gate and TLS from there)."""
    checks = dict(readiness or {})
    pool = DecisionPool(decision_threads, on_wait=metrics.decision_wait.observe)
    # One thread: huge reviews (thousands of containers, megabytes of env) wait for each other, never for or
    # instead of the ordinary ones, and one stuck there holds this thread only.
    large_lane = DecisionPool(1, name="gpudra-decide-large")
    limits = BodyLimits(max_bytes=max_body_bytes, deadline_seconds=body_seconds, large_body_bytes=large_body_bytes)
    budget = body_budget or BodyBudget()
    tasks = list(periodic or [])
    background = list(services or [])

    state = dict(lifespan_state or {})

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[dict[str, object]]:
        poller: asyncio.Task[None] | None = None
        for service in background:
            service.start()
        if tasks:

            async def poll() -> None:
                while True:
                    await asyncio.sleep(period_seconds)
                    for task in tasks:
                        try:
                            await asyncio.to_thread(task)
                        except Exception:  # a reload failure is logged by the task's owner; keep polling
                            log.exception("periodic task failed")

            poller = asyncio.create_task(poll())
        try:
            yield state
        finally:
            if poller is not None:
                poller.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await poller
            for service in background:
                await asyncio.to_thread(service.stop)

    app = WebhookApp(lifespan=lifespan)
    collector = ByteBudgetCollector()  # large reviews would otherwise outpace the cyclic collector (collector.py)
    latency: dict[str, Any] = {}  # the latency histogram's child per endpoint, looked up once

    async def answer(endpoint: str, request: Request, decide: Callable[[ReviewRequest], dict[str, Any]]) -> Response:
        started = time.perf_counter()
        try:
            # A body that finds the byte budget spent waits for room, leaving the decision a share of the deadline.
            wait = left(started) - min(1.0, deadline_seconds / 4)
            async with read_body(request, limits, budget, wait_seconds=wait) as body:
                return await answer_body(endpoint, body, decide, started)
        except BodyRefused as refused:
            if refused.status is None:  # the API server gave up (its timeout) or went away: nobody to answer
                log.warning("%s review: %s", endpoint, refused.reason)
                metrics.bad_requests.labels("499").inc()
                return Response(status_code=499)
            log.warning("%s review refused (%d): %s", endpoint, refused.status, refused.reason)
            uid = sniff_uid(refused.start) if refused.status == 503 and refused.start else None
            if uid is not None:  # a large review left unread: a denial the pod's creator sees, as _Late gives
                return busy_denial(endpoint, uid, refused.reason, headers=_CLOSE)
            metrics.bad_requests.labels(str(refused.status)).inc()
            return JSONResponse({"error": refused.reason}, status_code=refused.status, headers=_CLOSE)

    def busy_denial(endpoint: str, uid: str, message: str, headers: Mapping[str, str] | None = None) -> Response:
        """A review the webhook was too busy to read or parse in time, answered as a denial with gpudra's reason
        (fail closed), not as an HTTP error the API server reports as "failed calling webhook"."""
        metrics.reviews.labels(endpoint, "", "", "timeout").inc()
        denial = AdmissionDenied(f"{message}; the pod was not admitted", code=503, reason="ServiceUnavailable")
        return JSONResponse(denied_response(uid, denial), headers=headers)

    def left(started: float) -> float:
        return max(0.0, deadline_seconds - (time.perf_counter() - started))

    async def parse_large(body: bytes, started: float) -> ReviewRequest:
        """Parse on the large lane: a multi-megabyte json.loads holds the GIL, so at most one runs at a time."""
        uid = sniff_uid(body)
        held = [body]
        try:
            return await large_lane.run(lambda: parse_review(held.pop(), max_bytes=max_body_bytes), left(started))
        except DeadlineExceeded:
            held.clear()  # a job still queued must not keep the body after its request was answered
            busy = (
                f"gpudra webhook is busy with other large reviews (bodies above {large_body_bytes} bytes are "
                f"decided one at a time); not parsed within {deadline_seconds:g} s, retry shortly"
            )
            if uid is None:  # nothing to answer an AdmissionReview with
                raise BodyRefused(busy, 503) from None
            # Answered as a review the deadline cut short is (fail closed, with gpudra's reason for the pod's
            # creator), not as an HTTP error the API server reports as "failed calling webhook".
            raise _Late(uid, busy) from None

    async def answer_body(
        endpoint: str, body: bytes, decide: Callable[[ReviewRequest], dict[str, Any]], started: float
    ) -> Response:
        collector.account(len(body))
        large = len(body) > large_body_bytes
        try:
            review = await parse_large(body, started) if large else parse_review(body, max_bytes=max_body_bytes)
        except BadReview as exc:
            metrics.bad_requests.labels(str(exc.status)).inc()
            return JSONResponse({"error": exc.reason}, status_code=exc.status)
        except _Late as unparsed:
            log.warning("review %s not parsed within %g s: %s", unparsed.uid, deadline_seconds, unparsed.message)
            return busy_denial(endpoint, unparsed.uid, unparsed.message)
        del body
        held = [review]
        try:
            result = await (large_lane if large else pool).run(lambda: decide(held.pop()), left(started))
        except DeadlineExceeded:
            held.clear()
            late = DeadlineExceeded(deadline_seconds)  # the review's whole deadline, not what was left of it
            log.warning("review %s (%s/%s) %s", review.uid, review.namespace, review.name or "<generated>", late)
            metrics.reviews.labels(endpoint, operation_label(review.operation), "", "timeout").inc()
            # Fail closed, as failurePolicy Fail would: a GPU pod is never admitted unchecked because it was slow.
            result = denied_response(
                review.uid,
                AdmissionDenied(f"gpudra webhook: {late}; the pod was not admitted", code=504, reason="Timeout"),
            )
        except AdmissionDenied as denial:
            result = denied_response(review.uid, denial)
        except BadReview as exc:
            metrics.bad_requests.labels(str(exc.status)).inc()
            return JSONResponse({"error": exc.reason}, status_code=exc.status)
        except Exception as exc:
            log.exception("internal error answering review %s", review.uid)
            metrics.reviews.labels(endpoint, operation_label(review.operation), "", "error").inc()
            result = denied_response(
                review.uid,
                AdmissionDenied(
                    f"gpudra webhook internal error: {type(exc).__name__}: {exc}", code=500, reason="InternalError"
                ),
            )
        observed = latency.get(endpoint)
        if observed is None:
            observed = latency[endpoint] = metrics.latency.labels(endpoint)
        observed.observe(time.perf_counter() - started)
        return JSONResponse(result)

    async def mutate(request: Request) -> Response:
        return await answer("mutate", request, handler.mutate)

    async def validate(request: Request) -> Response:
        return await answer("validate", request, handler.validate)

    app.reviews["/mutate"] = mutate
    app.reviews["/validate"] = validate
    if enable_echo:

        async def echo(request: Request) -> Response:
            return await answer("echo", request, lambda review: allowed_response(review.uid))

        async def echo_patch(request: Request) -> Response:
            return await answer("echo-patch", request, _echo_patch)

        app.reviews["/echo"] = echo
        app.reviews["/echo-patch"] = echo_patch

    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(_: Request) -> Response:
        details: dict[str, dict[str, Any]] = {}
        ready = True
        for name, check in checks.items():
            try:
                ok, detail = await asyncio.to_thread(check)
            except Exception as exc:
                ok, detail = False, f"{type(exc).__name__}: {exc}"
            details[name] = {"ok": ok, "detail": detail}
            ready = ready and ok
        return JSONResponse({"ready": ready, "checks": details}, status_code=200 if ready else 503)

    async def prometheus(_: Request) -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    # The review paths are routed too, so that other methods on them get a 405.
    for path, endpoint in app.reviews.items():
        app.router.routes.append(Route(path, endpoint, methods=["POST"]))
    app.router.routes.append(Route("/healthz", healthz, methods=["GET"]))
    app.router.routes.append(Route("/readyz", readyz, methods=["GET"]))
    app.router.routes.append(Route("/metrics", prometheus, methods=["GET"]))
    return app
