"""Rows 4 and 7 of issue 37: forged AdmissionReviews from a tenant, and large legitimate ones from the API server."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from benchmarks.tenants.wire import Control, Target, patched, post, run_threads
from tests.controlplane.tenant_stack import legacy_pod
from webhook.review import pod_review


def forged_pod(i: int, namespace: str) -> dict[str, Any]:
    """A legacy GPU pod of a shape of its own (GPU count and memory), so that each asks for a template of its own."""
    pod = legacy_pod(f"forged-{i}", namespace)
    pod["metadata"]["labels"] = {"forged": "true"}
    pod["metadata"]["annotations"] = {"gpudra.io/vram": f"{1 + i // 4}Gi"}
    pod["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = 1 + i % 4
    return pod


def until_stopped(control: Control, clients: int, at_least: int, one: Callable[[int], None], pause: float = 0.0) -> int:
    """`one(0)`, `one(1)`, ... from `clients` threads: at least `at_least` calls, back to back, and on until the
    harness stops the attack (each client pausing `pause` seconds between those), so that every ordinary pod it
    measures is created while the attack runs. Returns how many ran."""
    numbers, ran = itertools.count(), itertools.count()  # next() is one C call: no two threads get the same number

    def client(_: int) -> None:
        while True:
            i = next(numbers)
            if i >= at_least and (control.stopping() or (pause and control.wait(pause))):
                return
            next(ran)
            one(i)

    run_threads(clients, client)
    return next(ran)


def forged_reviews(target: Target, control: Control, namespace: str, count: int = 50) -> dict[str, Any]:
    """Row 4: AdmissionReviews of distinct GPU pods in `namespace`, sent with no client certificate from 4 clients:
    `count` back to back, then one every 0.1 s per client until the harness stops the attack (a source refused once
    has its next connections reset at accept: sent back to back for the whole load they would be the flood of resets
    rows 3 and 10 are)."""
    answers: Counter[str] = Counter()
    with_patch = 0
    lock = threading.Lock()
    control.armed()

    def one(i: int) -> None:
        nonlocal with_patch
        body = pod_review(forged_pod(i, namespace), uid=f"forged-{i}")
        status, answer = post(target, target.sources[i % len(target.sources)], "/mutate", body)
        with lock:
            answers[status] += 1
            with_patch += patched(answer)

    sent = until_stopped(control, 4, count, one, pause=0.1)
    return {"forged_reviews": sent, "answers": dict(answers), "answered_with_a_patch": with_patch}


def large_pod(mb: float) -> bytes:
    """A valid legacy GPU pod of about `mb` MB (its container's environment), as review bytes with the name and uid
    left as placeholders."""
    pod = legacy_pod("LARGE-NAME", "LARGE-NS")
    value = "v" * 1000
    count = int(mb * 1_000_000 / 1030)
    pod["spec"]["containers"][0]["env"] = [{"name": f"SETTING_{i}", "value": value} for i in range(count)]
    return pod_review(pod, uid="LARGE-UID")


def large_reviews(
    target: Target, control: Control, namespace: str, count: int = 550, clients: int = 32, mb: float = 2.5
) -> dict[str, Any]:
    """Row 7: valid ~`mb` MB reviews from `clients` clients at once, each with the API server's client certificate
    (from 127.0.0.1, the API server's address), `count` at least and on until the harness stops the attack: the
    answers by status."""
    body = large_pod(mb).replace(b"LARGE-NS", namespace.encode())
    answers: Counter[str] = Counter()
    with_patch = 0
    lock = threading.Lock()
    control.armed()
    started = time.perf_counter()

    refusals: Counter[str] = Counter()
    unpatched: Counter[str] = Counter()
    waits: list[float] = []

    def one(i: int) -> None:
        nonlocal with_patch
        review = body.replace(b"LARGE-NAME", f"large-{i}".encode()).replace(b"LARGE-UID", f"large-{i}".encode())
        sent = time.perf_counter()
        status, answer = post(target, "127.0.0.1", "/mutate", review, cert=True, timeout=60)
        with lock:
            answers[status] += 1
            with_patch += patched(answer)
            if status != "200":
                refusals[f"{status}: {answer[:100].decode(errors='replace')}"] += 1
                waits.append(time.perf_counter() - sent)
            elif not patched(answer):
                unpatched[_unpatched(answer)] += 1

    sent = until_stopped(control, clients, count, one)
    return {
        "reviews": sent,
        "clients": clients,
        "review_bytes": len(body),
        "answers": dict(answers),
        "refused_503": answers["503"],
        "refusals": dict(refusals),
        "answered_200_without_a_patch": dict(unpatched),
        "seconds_to_a_refusal_max": round(max(waits, default=0.0), 2),
        "translated": with_patch,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _unpatched(answer: bytes) -> str:
    """What a 200 without a patch said: allowed unchanged, or denied and why."""
    try:
        response = json.loads(answer).get("response") or {}
    except (ValueError, AttributeError):
        return "not an AdmissionReview"
    if response.get("allowed"):
        return "allowed, no patch"
    return f"denied: {str((response.get('status') or {}).get('message'))[:120]}"
