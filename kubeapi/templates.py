"""ResourceClaimTemplates on the API server: the webhook's side effects (create the template a decision needs,
AlreadyExists with the same spec is success, a different spec under the same hash-derived name is an error; read
Namespaces and claims), and the store `gpudra gc` lists and deletes through. Every call is bounded by a timeout.

`SharedTemplates` puts those calls off the admission path for identical claims: a burst of replicas (or of distinct
pods asking for the same GPUs) shares one template, created once, instead of one create-or-reuse round trip each.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, cast

from dra.cancellation import check_deadline

from .client import one_attempt_per_call, parse_timestamp
from .errors import ApiServerError, ApiServerUnanswered, api_errors, status_of
from .paging import PAGE, all_pages
from .refresh import BackgroundRefresh, time_for_another_call

__all__ = [
    "GROUP",
    "LAST_USED_ANNOTATION",
    "LAST_USED_RESOLUTION",
    "PLURAL",
    "RESTAMP_SECONDS",
    "SPEC_DIGEST_ANNOTATION",
    "VERSION",
    "KubeSideEffects",
    "KubeTemplateStore",
    "SharedTemplates",
    "TemplateResult",
    "TemplateWriter",
    "spec_digest",
]

GROUP, VERSION, PLURAL = "resource.k8s.io", "v1", "resourceclaimtemplates"
SPEC_DIGEST_ANNOTATION = "gpudra.io/spec-digest"
# When the webhook last handed this template to a pod (RFC 3339, UTC); template garbage collection reads it.
LAST_USED_ANNOTATION = "gpudra.io/last-used"
LAST_USED_RESOLUTION = 60.0  # seconds: a template in use is stamped at least this often
# A reused template whose stamp is older than this is stamped again: half of LAST_USED_RESOLUTION, so a template
# renewed in the background (SharedTemplates) stays usable from memory for at least this long after its renewal.
RESTAMP_SECONDS = LAST_USED_RESOLUTION / 2


def spec_digest(template: dict[str, Any]) -> str:
    """SHA-256 of the template's spec as gpudra built it (canonical JSON)."""
    canonical = json.dumps(template.get("spec"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@dataclass(frozen=True)
class TemplateResult:
    name: str
    namespace: str
    created: bool  # False: an identical template already existed
    # The latest time (Unix seconds) the API server is known to hold as the template's last use: its creation, or the
    # `gpudra.io/last-used` stamp written or read. None: not known (then `SharedTemplates` does not remember it).
    active_at: float | None = None


class TemplateWriter(Protocol):
    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult: ...

    def get_namespace(self, name: str) -> dict[str, Any] | None: ...

    def reachable(self) -> tuple[bool, str]: ...


class KubeSideEffects:
    """`TemplateWriter` over a `kubernetes.client.ApiClient`; every call bounded by `timeout` seconds (one attempt:
    the client is set not to retry, see `one_attempt_per_call`)."""

    def __init__(self, api_client: Any, *, timeout: float = 2.0) -> None:
        from kubernetes import client  # imported here: only the webhook side needs the client library

        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._version = client.VersionApi(api_client)
        self.timeout = timeout
        one_attempt_per_call(api_client)

    def _timeout(self) -> tuple[float, float]:
        return (self.timeout, self.timeout)

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        for _ in range(3):  # a template collected between our read and our stamp is simply created again
            result = self._ensure_once(namespace, template)
            if result is not None:
                return result
        raise ApiServerError(
            f"ResourceClaimTemplate {namespace}/{template['metadata']['name']} kept disappearing while being reused"
        )

    def _ensure_once(self, namespace: str, template: dict[str, Any]) -> TemplateResult | None:
        name = template["metadata"]["name"]
        digest = spec_digest(template)
        body = dict(template)
        metadata = dict(template["metadata"])
        metadata["namespace"] = namespace
        metadata["annotations"] = {**metadata.get("annotations", {}), SPEC_DIGEST_ANNOTATION: digest}
        body["metadata"] = metadata
        asked = time.time()  # the API server's creationTimestamp is no earlier
        try:
            self._custom.create_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, body, _request_timeout=self._timeout()
            )
            return TemplateResult(name, namespace, created=True, active_at=asked)
        except api_errors() as exc:
            if status_of(exc) != 409:
                raise self._failure("create ResourceClaimTemplate", namespace, name, exc) from exc
        existing = self._get(PLURAL, namespace, name, "read ResourceClaimTemplate")
        if existing is None:  # collected between our create and our read: create it again
            return None
        # The stored spec carries the API server's defaults, so the digest of what gpudra sent is compared.
        annotations = existing.get("metadata", {}).get("annotations") or {}
        if annotations.get(SPEC_DIGEST_ANNOTATION) != digest:
            raise ApiServerError(
                f"ResourceClaimTemplate {namespace}/{name} exists with a different spec; "
                "it was not created by gpudra for this request (rename or delete it)"
            )
        active_at = self._stamp_if_stale(namespace, name, annotations.get(LAST_USED_ANNOTATION))
        if active_at is None:
            return None
        return TemplateResult(name, namespace, created=False, active_at=active_at)

    def _stamp_if_stale(self, namespace: str, name: str, last_used: Any) -> float | None:
        """Mark a reused template as used now (so collection leaves it alone) unless its stamp is younger than
        RESTAMP_SECONDS; the stamp it holds now (Unix seconds), or None when it is gone."""
        now = dt.datetime.now(dt.UTC)
        stamped = parse_timestamp(last_used)
        if stamped is not None and (now - stamped).total_seconds() < RESTAMP_SECONDS:
            return stamped.timestamp()
        # The stamp is written in whole seconds: what the server holds is no later than `now`, and no earlier than
        # `now` truncated.
        now = now.replace(microsecond=0)
        patch = {"metadata": {"annotations": {LAST_USED_ANNOTATION: now.strftime("%Y-%m-%dT%H:%M:%SZ")}}}
        try:
            self._custom.patch_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, patch, _request_timeout=self._timeout()
            )
        except api_errors() as exc:
            if status_of(exc) == 404:
                return None
            raise self._failure("mark ResourceClaimTemplate used", namespace, name, exc) from exc
        return now.timestamp()

    def _get(self, plural: str, namespace: str, name: str, what: str) -> dict[str, Any] | None:
        """One resource.k8s.io/v1 object, or None when it does not exist."""
        try:
            found = self._custom.get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name, _request_timeout=self._timeout()
            )
        except api_errors() as exc:
            if status_of(exc) == 404:
                return None
            raise self._failure(what, namespace, name, exc) from exc
        return cast(dict[str, Any], found)

    def read_claim_spec(self, namespace: str, kind: str, name: str) -> dict[str, Any] | None:
        """`webhook.dra_demand.ClaimReader`: a ResourceClaim's spec, or a ResourceClaimTemplate's `spec.spec`."""
        plural = "resourceclaims" if kind == "claim" else PLURAL
        found = self._get(plural, namespace, name, f"read {kind}")
        if found is None:
            return None
        spec = found.get("spec") or {}
        result: dict[str, Any] = spec if kind == "claim" else (spec.get("spec") or {})
        return result

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        try:
            ns = self._core.read_namespace(name, _request_timeout=self._timeout())
        except api_errors() as exc:
            if status_of(exc) == 404:
                return None
            raise self._failure("read Namespace", "", name, exc) from exc
        result: dict[str, Any] = self._core.api_client.sanitize_for_serialization(ns)
        return result

    def reachable(self) -> tuple[bool, str]:
        try:
            info = self._version.get_code(_request_timeout=self._timeout())
        except api_errors() as exc:
            return False, f"API server not reachable: {type(exc).__name__}: {exc}"
        return True, f"API server {getattr(info, 'git_version', '?')}"

    def _failure(self, what: str, namespace: str, name: str, exc: Exception) -> ApiServerError:
        """The error naming the call; `ApiServerUnanswered` when no answer came (a timeout, a lost connection)."""
        message = self._explain(what, namespace, name, exc)
        return ApiServerError(message) if status_of(exc) is not None else ApiServerUnanswered(message)

    def _explain(self, what: str, namespace: str, name: str, exc: Exception) -> str:
        target = f"{namespace}/{name}" if namespace else name
        status = status_of(exc)
        if status is not None:
            reason = getattr(exc, "reason", "") or ""
            return f"could not {what} {target}: API server answered {status} {reason}".strip()
        return f"could not {what} {target} within {self.timeout:g}s: {type(exc).__name__}: {exc}"


# How long a template this process ensured is handed to further pods without asking the API server again. The
# template collector cannot take it meanwhile (reuse is bounded below by the last use the server holds, see
# SharedTemplates); what this bounds is how long a template deleted by hand goes unnoticed.
DEFAULT_REUSE_SECONDS = 10.0
_WAIT_SLICE_SECONDS = 0.05


class _Flight:
    """One ensure in progress; callers asking for the same template meanwhile wait for its outcome."""

    __slots__ = ("done", "result", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: TemplateResult | None = None
        self.error: ApiServerError | None = None


class SharedTemplates:
    """A `TemplateWriter` that creates (or reuses) each template once for identical claims.

    Concurrent callers asking for the same template (namespace, name, spec digest) share one call to `writer`, and a
    template ensured here is handed to later callers from memory, as `created=False`, while less than
    LAST_USED_RESOLUTION have passed since the last use the API server holds (`TemplateResult.active_at`: its
    creation or `gpudra.io/last-used` stamp). `KubeSideEffects` re-stamps a reused template whose stamp is older than
    RESTAMP_SECONDS (below LAST_USED_RESOLUTION), and the collector's idle floor (`housekeeping.MIN_IDLE_FLOOR`) is
    built on that bound, so a template handed out from memory is exactly as safe from collection as one confirmed by
    a call. Once `reuse_seconds` have passed since it was ensured, the first caller also has it ensured again in the
    background (`renewals`, one call at a time), so that a template deleted by hand is noticed (and made again)
    within about `reuse_seconds` while no review waits for that call; past LAST_USED_RESOLUTION callers wait for it.

    A failure is never remembered. One the API server answered is shared by the callers that waited for it; one that
    got no answer (`ApiServerUnanswered`: its timeout) says nothing of theirs, and each of them whose deadline leaves
    room for another whole call (`call_seconds`) asks once more (one call at a time again). Bounded by `max_entries`
    (least recently used out first)."""

    def __init__(
        self,
        writer: TemplateWriter,
        *,
        reuse_seconds: float = DEFAULT_REUSE_SECONDS,
        max_entries: int = 4096,
        clock: Callable[[], float] = time.time,
        renewals: BackgroundRefresh | None = None,
        call_seconds: float = 2.0,
    ) -> None:
        if max_entries < 1:
            raise ValueError(f"max_entries must be above 0 (got {max_entries})")
        self._writer = writer
        self.reuse_seconds = reuse_seconds
        self.max_entries = max_entries
        self._clock = clock
        self._lock = threading.Lock()
        # key -> (renewed after, handed out until), both on `clock`
        self._known: OrderedDict[tuple[str, str, str], tuple[float, float]] = OrderedDict()
        self._flights: dict[tuple[str, str, str], _Flight] = {}
        self._waiting = 0
        self.renewals = renewals or BackgroundRefresh(1, name="gpudra-template-renew")
        self.call_seconds = call_seconds  # what bounds one call of `writer` (KubeSideEffects.timeout)

    def __len__(self) -> int:
        return len(self._known)

    @property
    def waiting(self) -> int:
        """Callers waiting now for another caller's call."""
        return self._waiting

    def ensure_template(self, namespace: str, template: dict[str, Any]) -> TemplateResult:
        name = template["metadata"]["name"]
        key = (namespace, name, spec_digest(template))
        asked_again = False
        while True:
            with self._lock:
                known = self._known.get(key)
                if known is not None:
                    soft, hard = known
                    now = self._clock()
                    if now < hard:
                        self._known.move_to_end(key)
                        if now >= soft and key not in self._flights:
                            self.renewals.submit(key, lambda: self._renew(key, namespace, template))
                        return TemplateResult(name, namespace, created=False)
                    del self._known[key]
                flight = self._flights.get(key)
                leader = flight is None
                if flight is None:
                    flight = self._flights[key] = _Flight()
            if leader:
                return self._lead(key, flight, namespace, template)
            try:
                return self._wait(flight, name, namespace)
            except ApiServerUnanswered:
                # The call this review waited for got no answer (its timeout, a lost connection): that says nothing
                # about this review, which asks once more, itself or behind another waiter, if its own deadline
                # leaves room for a whole call; else it is refused with that call's reason.
                if asked_again or not time_for_another_call(self.call_seconds):
                    raise
                asked_again = True

    def _lead(
        self, key: tuple[str, str, str], flight: _Flight, namespace: str, template: dict[str, Any]
    ) -> TemplateResult:
        try:
            result = self._writer.ensure_template(namespace, template)
        except ApiServerError as exc:
            flight.error = exc
            raise
        else:
            flight.result = result
            self._remember(key, result)
            return result
        finally:
            with self._lock:
                del self._flights[key]
            flight.done.set()

    def _renew(self, key: tuple[str, str, str], namespace: str, template: dict[str, Any]) -> None:
        """Ensure a remembered template again in the background (`renewals`). No answer keeps what is remembered
        until its hard bound; an answer that refuses it (another spec under its name, no permission) forgets it, so
        that the next review asks and is refused itself."""
        with self._lock:
            if key in self._flights:
                return
            flight = self._flights[key] = _Flight()
        try:
            self._lead(key, flight, namespace, template)
        except ApiServerUnanswered:
            raise
        except ApiServerError:
            with self._lock:
                self._known.pop(key, None)
            raise

    def _wait(self, flight: _Flight, name: str, namespace: str) -> TemplateResult:
        with self._lock:
            self._waiting += 1
        try:
            while not flight.done.wait(_WAIT_SLICE_SECONDS):
                check_deadline()  # the review was answered at its deadline: stop waiting for it
        finally:
            with self._lock:
                self._waiting -= 1
        if flight.result is not None:
            return TemplateResult(name, namespace, created=False, active_at=flight.result.active_at)
        if flight.error is not None:
            raise type(flight.error)(str(flight.error))
        # The leader stopped without an outcome (its own deadline passed): nothing is known about the template.
        raise ApiServerUnanswered(f"ResourceClaimTemplate {namespace}/{name}: the call creating it was abandoned")

    def _remember(self, key: tuple[str, str, str], result: TemplateResult) -> None:
        if result.active_at is None or self.reuse_seconds <= 0:
            return
        hard = result.active_at + LAST_USED_RESOLUTION
        soft = min(self._clock() + self.reuse_seconds, hard)
        with self._lock:
            self._known[key] = (soft, hard)
            self._known.move_to_end(key)
            while len(self._known) > self.max_entries:
                self._known.popitem(last=False)

    def get_namespace(self, name: str) -> dict[str, Any] | None:
        return self._writer.get_namespace(name)

    def reachable(self) -> tuple[bool, str]:
        return self._writer.reachable()


class KubeTemplateStore:
    """`housekeeping.TemplateStore` over a `kubernetes.client.ApiClient` (paged lists, bounded calls)."""

    PAGE = PAGE

    def __init__(self, api_client: Any, *, timeout: float = 30.0) -> None:
        from kubernetes import client

        self._client = client
        self._custom = client.CustomObjectsApi(api_client)
        self._core = client.CoreV1Api(api_client)
        self._serialize = api_client.sanitize_for_serialization
        self.timeout = timeout

    def list_templates(self, label_selector: str) -> list[dict[str, Any]]:
        def page(token: str | None) -> Any:
            return self._custom.list_cluster_custom_object(
                GROUP, VERSION, PLURAL, label_selector=label_selector, limit=self.PAGE,
                _continue=token, _request_timeout=self.timeout,
            )  # fmt: skip

        try:
            items, _ = all_pages(page)
        except api_errors() as exc:
            raise ApiServerError(f"could not list ResourceClaimTemplates: {type(exc).__name__}: {exc}") from exc
        return cast(list[dict[str, Any]], items)

    def list_pods(self) -> list[dict[str, Any]]:
        def page(token: str | None) -> Any:
            return self._core.list_pod_for_all_namespaces(
                limit=self.PAGE, _continue=token, _request_timeout=self.timeout
            )

        try:
            pods, _ = all_pages(page)
        except api_errors() as exc:
            raise ApiServerError(f"could not list Pods: {type(exc).__name__}: {exc}") from exc
        items: list[dict[str, Any]] = []
        for pod in pods:
            spec, meta = pod.spec, pod.metadata
            claims = [self._serialize(c) for c in ((spec.resource_claims if spec else None) or [])]
            namespace = meta.namespace if meta else None
            items.append({"metadata": {"namespace": namespace}, "spec": {"resourceClaims": claims}})
        return items

    def delete_template(self, namespace: str, name: str, resource_version: str) -> bool:
        options = self._client.V1DeleteOptions(
            preconditions=self._client.V1Preconditions(resource_version=resource_version or None)
        )
        try:
            self._custom.delete_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name, body=options, _request_timeout=self.timeout
            )
        except api_errors() as exc:
            if status_of(exc) in (404, 409):  # gone already, or stamped by the webhook since we listed it
                return False
            raise ApiServerError(f"could not delete ResourceClaimTemplate {namespace}/{name}: {exc}") from exc
        return True
