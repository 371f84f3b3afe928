"""One decision made when a worker process starts, before it serves: the first review's one-off costs paid then.

The first decision in a process imports modules the policy engine loads on first use and builds the validation
schemas of the claim models (about 50 ms of CPU where a warm decision takes well under 1 ms). With `gpudra serve
--workers N`, and over HTTP/2 where a burst's reviews share one connection and so one worker, the first review a
worker gets would pay it in the middle of a burst. Here each worker decides once at start-up, in its lifespan
(before uvicorn serves), for a pod that asks for a legacy GPU in a namespace of its own. Only the pure parts run
(`PolicySet.evaluate` and `translate`): no API call, no template, no metric, no decision-cache entry. A failure is
logged and serving goes on: the first real review then pays the cost, as it did before.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from policyengine import PolicySet
from policyengine.translate import translate

__all__ = ["DecisionWarmUp", "warm_up_pod"]

log = logging.getLogger("gpudra.webhook")

_NAMESPACE = "gpudra-warm-up"


def warm_up_pod() -> dict[str, Any]:
    """A pod asking for one whole GPU the legacy way (limits `nvidia.com/gpu: 1`)."""
    container = {"name": "warm-up", "image": "warm-up", "resources": {"limits": {"nvidia.com/gpu": 1}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "gpudra-warm-up", "namespace": _NAMESPACE},
        "spec": {"containers": [container]},
    }


class DecisionWarmUp:
    """A webhook.app BackgroundService whose start() decides once for `warm_up_pod()` with the serving policies."""

    def __init__(self, policies: Callable[[], PolicySet]) -> None:
        self._policies = policies
        self.done = False

    def start(self) -> None:
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": _NAMESPACE}}
        pod = warm_up_pod()
        try:
            translate(pod, self._policies().evaluate(pod, namespace, {"operation": "CREATE"}))
        except Exception:  # never a reason not to serve: the first review pays instead
            log.warning("the start-up decision failed; the first review will pay for loading", exc_info=True)
            return
        self.done = True

    def stop(self, timeout: float = 0.0) -> None:
        return None
