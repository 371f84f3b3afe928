"""Policy reloads on a thread of their own, off the server's periodic loop that rotates the certificate.

A policy load is bounded (policyengine: 1 MiB files, strict YAML, compile), but it is still the slowest thing the
webhook does on a timer; on its own daemon thread neither a slow load nor a refused one delays a certificate
reload. The last good set keeps serving (`PolicyStore`); `/readyz` stays ready while it does, and its
`policyReload` check, the log and `/metrics` say when the newest files were refused, or when the serving set
translates nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from prometheus_client import Gauge

from policyengine import PolicySet, translates_nothing
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore

__all__ = ["PolicyReloader"]

log = logging.getLogger("gpudra.webhook.policies")


class PolicyReloader:
    """Polls `store` every `period_seconds` on a daemon thread (`start`/`stop`: a `webhook.app.BackgroundService`)."""

    def __init__(
        self,
        store: PolicyStore[PolicySet],
        period_seconds: float,
        metrics: WebhookMetrics,
        after_replaced: Callable[[], None] | None = None,
    ) -> None:
        """`after_replaced` runs on the poll after the one that replaced the set, a period later, when the reviews
        that were deciding with the old set have most likely ended (`webhook.settled_heap.SettledHeap.resettle`)."""
        self.store = store
        self._after_replaced = after_replaced
        self._replaced_last_poll = False
        self.period_seconds = period_seconds
        self.metrics = metrics
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._failing = False
        registry = metrics.registry
        self.failing = Gauge(
            "gpudra_policy_reload_failing",
            "1 while the newest policy files are refused and the last good set serves, else 0.",
            registry=registry,
        )
        self.idle = Gauge(
            "gpudra_policy_set_translates_nothing",
            "1 when no policy of the serving set has a claim that could apply (no pod is ever translated).",
            registry=registry,
        )
        self.loaded = Gauge(
            "gpudra_policy_set_loaded_timestamp_seconds", "When the serving set was loaded.", registry=registry
        )
        self._observe()

    def _observe(self) -> None:
        status = self.store.status()
        self._failing = bool(status.last_error)
        self.failing.set(1 if self._failing else 0)
        self.metrics.policies_loaded.set(len(self.store.current.policies))
        self.loaded.set(status.loaded_at)
        idle = translates_nothing(self.store.current)
        self.idle.set(1 if idle else 0)
        if idle:
            log.warning("the serving policy set translates nothing: %s", idle)

    def reload_once(self) -> bool:
        """One poll: True when a new set now serves. Never raises (a failure is the store's to record)."""
        if self._replaced_last_poll and self._after_replaced is not None:
            try:
                self._after_replaced()
            except Exception:  # never a reason to stop reloading
                log.exception("after a policy reload")
        self._replaced_last_poll = False
        try:
            replaced = self.store.reload_if_changed()
        except Exception:  # the store records load failures itself; this is a bug, kept off the serving set
            log.exception("policy reload failed")
            return False
        status = self.store.status()
        if replaced or bool(status.last_error) != self._failing:
            self._observe()
        self._replaced_last_poll = replaced
        return replaced

    def _run(self) -> None:
        while not self._stop.wait(self.period_seconds):
            self.reload_once()

    def start(self) -> None:
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="gpudra-policy-reload", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None

    def readiness(self) -> tuple[bool, str]:
        """Always ready while a set serves (the store never serves none): the detail says what is wrong."""
        status = self.store.status()
        problems = []
        if status.last_error:
            problems.append(f"the newest policy files were refused, the last good set serves: {status.last_error}")
        idle = translates_nothing(self.store.current)
        if idle:
            problems.append(f"the serving set translates nothing: {idle}")
        if not problems:
            return (
                True,
                f"policy set loaded at {status.loaded_at:.0f}; {status.reloads} reloads, {status.failures} refused",
            )
        return True, "; ".join(problems)
