"""Collecting the ResourceClaimTemplates gpudra created that no pod uses any more.

The webhook creates one template per distinct translated request (named from its spec's hash) and reuses it for
identical pods, so templates outlive their pods. A template may be deleted once no pod in its namespace names it in
`spec.resourceClaims[].resourceClaimTemplateName` and it has not been used for `min_idle` (creation, or the
`gpudra.io/last-used` time the webhook stamps when it reuses one). The idle bound covers the window between the
webhook creating or reusing a template and the API server persisting the pod that names it.

Deletes carry the listed `resourceVersion` as a precondition: if the webhook stamped the template after the list
(a pod is about to use it), the delete fails with a conflict and the template stays; if the delete wins, the
webhook's stamp finds no template and creates it again. Either way no pod is admitted naming a deleted template.
That holds only while `min_idle` exceeds the stamp's resolution plus the webhook's answer time (`MIN_IDLE_FLOOR`).
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

from kubeapi import LAST_USED_ANNOTATION, LAST_USED_RESOLUTION, ApiServerError, Backoff, parse_timestamp
from policyengine.translate import MANAGED_BY

__all__ = [
    "MIN_IDLE_FLOOR",
    "GcReport",
    "TemplateStore",
    "check_min_idle",
    "collect",
    "run_forever",
    "unused_templates",
]

log = logging.getLogger("gpudra.gc")

MANAGED_SELECTOR = ",".join(f"{k}={v}" for k, v in MANAGED_BY.items())
# A template is handed to a pod (from the webhook's memory, or after a call that re-stamps it only past
# kubeapi.RESTAMP_SECONDS) only while its stamp is less than LAST_USED_RESOLUTION old, so it may carry a stamp that
# old; the pod is persisted within the webhook configurations' longest timeoutSeconds (30) after that.
# A shorter idle bound could delete a template that a pod being admitted names.
MIN_IDLE_FLOOR = dt.timedelta(seconds=LAST_USED_RESOLUTION + 30)


def check_min_idle(min_idle: dt.timedelta) -> None:
    """Raise ValueError when `min_idle` is below `MIN_IDLE_FLOOR` (see there)."""
    if min_idle < MIN_IDLE_FLOOR:
        raise ValueError(
            f"min_idle must be at least {MIN_IDLE_FLOOR.total_seconds():g} s (got {min_idle.total_seconds():g} s): the "
            f"webhook re-stamps a reused template only every {LAST_USED_RESOLUTION:g} s, so a shorter bound can delete "
            "a template just handed to a pod"
        )


class TemplateStore(Protocol):
    def list_templates(self, label_selector: str) -> list[dict[str, Any]]: ...

    def list_pods(self) -> list[dict[str, Any]]: ...

    def delete_template(self, namespace: str, name: str, resource_version: str) -> bool:
        """Delete if still at `resource_version`; False when it changed or is gone already."""
        ...


@dataclass
class GcReport:
    deleted: list[str] = field(default_factory=list)
    in_use: int = 0
    recently_used: int = 0
    changed_since_listed: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _last_used(template: dict[str, Any]) -> dt.datetime | None:
    metadata = template.get("metadata") or {}
    stamps = [
        parse_timestamp(metadata.get("creationTimestamp")),
        parse_timestamp((metadata.get("annotations") or {}).get(LAST_USED_ANNOTATION)),
    ]
    known = [s for s in stamps if s is not None]
    return max(known) if known else None


def _referenced(pods: Iterable[dict[str, Any]]) -> set[tuple[str, str]]:
    names: set[tuple[str, str]] = set()
    for pod in pods:
        namespace = (pod.get("metadata") or {}).get("namespace", "")
        for claim in (pod.get("spec") or {}).get("resourceClaims") or []:
            name = claim.get("resourceClaimTemplateName") if isinstance(claim, dict) else None
            if name:
                names.add((namespace, name))
    return names


def unused_templates(
    templates: list[dict[str, Any]], pods: list[dict[str, Any]], *, now: dt.datetime, min_idle: dt.timedelta
) -> tuple[list[dict[str, Any]], GcReport]:
    """The templates that may go, and a report counting the ones that stay (pure: no API calls)."""
    used = _referenced(pods)
    report = GcReport()
    unused: list[dict[str, Any]] = []
    for template in templates:
        metadata = template.get("metadata") or {}
        key = (metadata.get("namespace", ""), metadata.get("name", ""))
        if key in used:
            report.in_use += 1
            continue
        last = _last_used(template)
        if last is None or now - last < min_idle:  # no timestamp: not ours to judge
            report.recently_used += 1
            continue
        unused.append(template)
    return unused, report


def collect(
    store: TemplateStore,
    *,
    min_idle: dt.timedelta = dt.timedelta(minutes=10),
    dry_run: bool = False,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
) -> GcReport:
    """One pass: list gpudra's templates, then the pods, and delete the unused ones (templates listed first, so a
    pod created between the two lists is seen by the second). `min_idle` below `MIN_IDLE_FLOOR` is a ValueError."""
    check_min_idle(min_idle)
    templates = store.list_templates(MANAGED_SELECTOR)
    pods = store.list_pods()
    unused, report = unused_templates(templates, pods, now=now(), min_idle=min_idle)
    for template in unused:
        metadata = template["metadata"]
        ref = f"{metadata['namespace']}/{metadata['name']}"
        if dry_run:
            report.deleted.append(ref)
            continue
        if store.delete_template(metadata["namespace"], metadata["name"], str(metadata.get("resourceVersion", ""))):
            report.deleted.append(ref)
            log.info("deleted unused ResourceClaimTemplate %s", ref)
        else:
            report.changed_since_listed.append(ref)
    return report


def run_forever(
    store: TemplateStore,
    *,
    interval_seconds: float,
    min_idle: dt.timedelta,
    on_pass: Callable[[GcReport | None, str | None], None] = lambda report, error: None,
    sleep: Callable[[float], None] = time.sleep,
    passes: int | None = None,
) -> None:
    """The controller loop: a pass every `interval_seconds`; an API-server failure is reported and retried with
    backoff (doubling up to the interval), never fatal. `min_idle` below `MIN_IDLE_FLOOR` is a ValueError."""
    check_min_idle(min_idle)
    done = 0
    backoff = Backoff(min(5.0, interval_seconds), interval_seconds)
    while passes is None or done < passes:
        try:
            report = collect(store, min_idle=min_idle)
        except ApiServerError as exc:
            delay = backoff.next()
            log.warning("template collection failed, retrying in %.0f s: %s", delay, exc)
            on_pass(None, str(exc))
            sleep(delay)
        else:
            on_pass(report, None)
            backoff.reset()
            sleep(interval_seconds)
        done += 1
