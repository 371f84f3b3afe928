"""The admission core: AdmissionReview request → policy decision → translation and side effects → response dict.

`mutate` rewrites legacy GPU pods (enforce) or annotates what they would have got (audit); `validate` re-checks the
final pod against the guardrails. The ResourceClaimTemplate is created before the patch is returned, never on a dry
run; if it cannot be created the pod is denied with the reason, so no pod is admitted pointing at a template that
does not exist. Tested with plain dicts, without a server.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from dra.sizing import ObservedSizing
from kubeapi import ApiServerError, NamespaceCache, TemplateWriter
from policyengine import Decision, PolicySet, extended_resource_pairs, jsontext
from policyengine.k8s_features import unserved_features
from policyengine.pod_shape import check_pod_shape
from policyengine.scheduler_path import SchedulerPath, scheduler_path
from policyengine.translate import Translation, translate, translation_key
from webhook.claim_refs import check_claim_references
from webhook.decision_cache import DecisionCache
from webhook.dra_demand import ClaimReader, claim_demand, gpu_classes
from webhook.input_size import json_text_longer_than
from webhook.metrics import WebhookMetrics
from webhook.policy_store import PolicyStore
from webhook.review import (
    AdmissionDenied,
    BadReview,
    ReviewRequest,
    allowed_response,
    annotation_patch,
    encoded_patch,
    operation_label,
)

__all__ = ["Admission", "RolloutConfig", "SizingSource"]


AUDIT_ANNOTATION_LIMIT = 1000
DECISION_CACHE_SIZE = 1024
# The admin-owned exemption list: pods there are never translated and no template is ever created there, whoever
# sends the review (the webhook configurations' namespaceSelector excludes the same namespaces).
DEFAULT_EXEMPT_NAMESPACES = frozenset({"kube-system", "kube-public", "kube-node-lease"})
# The namespace labels policies/guardrails.yaml reads as GPU caps.
CAP_LABELS = ("gpudra.io/max-gpus", "gpudra.io/max-vram")
# JSON text of the cached inputs; the process's Python objects for them take about 3-5x (measured in the tests).
DECISION_CACHE_BYTES = 32 * 1024 * 1024
# Inputs above this (a pod of a quarter megabyte: the large lane's, webhook.body) are decided each time, never cached:
# an entry keeps its pod, and a burst of large distinct pods would otherwise leave the cache's whole budget of them
# alive after the burst (measured: 64 distinct 2.5 MB pods left two workers about 100 MiB above their level).
UNCACHED_INPUT_BYTES = 256 * 1024
# The translations kept by what they read (`translation_key`): their templates, patches and warnings.
TRANSLATION_CACHE_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class RolloutConfig:
    """Rollout behaviour not decided by policies: whether to warn when templates cannot be created."""

    warn_without_side_effects: bool = True


def _request_info(review: ReviewRequest) -> dict[str, Any]:
    return {
        "uid": review.uid,
        "operation": review.operation,
        "namespace": review.namespace,
        "name": review.name,
        "dryRun": review.dry_run,
        "userInfo": review.user_info,
        "kind": review.kind,
        "resource": review.resource,
    }


def _check_namespace(review: ReviewRequest, pod: dict[str, Any]) -> None:
    """A pod review names the namespace its template goes to: it must name one, and the pod's own must agree."""
    if not review.namespace:
        raise BadReview("'request.namespace' is required for a pod review")
    metadata = pod.get("metadata")
    stated = metadata.get("namespace") if isinstance(metadata, dict) else None
    if stated not in (None, "", review.namespace):
        raise BadReview(
            f"'request.object.metadata.namespace' is {stated!r} but 'request.namespace' is {review.namespace!r}"
        )


class _DecisionInputs(NamedTuple):
    """Everything a decision and its translation read, and so the decision cache's key: `Admission._key` digests the
    whole tuple, so an input added here is in the key (the tests pair each `PolicySet.evaluate` parameter with one).

    `sizing` stands for the sizing lookup: the version of the pod owner's recommendation (`SizingSource.version`);
    `mapped` for the cluster's KEP-5004 mapping: its legacy GPU pairs (`extended_resource_pairs`), all any
    decision reads of it; `shapes` for the cluster's device shapes the claims are checked against
    (`DeviceShapes.token`, policyengine.claim_check): a decision cached before the devices changed is not served
    after."""

    pod: dict[str, Any]
    namespace: dict[str, Any] | None
    info: dict[str, Any]
    dra_devices: int
    sizing: str
    mapped: tuple[tuple[str, str], ...]
    shapes: str


_INFO = _DecisionInputs._fields.index("info")


class SizingSource(Protocol):
    """`dra.sizing.SizingLookup` plus what the decision cache keys on (webhook.sizing_cache.RecommendationCache)."""

    def observed(self, namespace: str, owner_kind: str, owner_name: str, container: str) -> ObservedSizing | None: ...

    def version(self, pod: dict[str, Any], namespace: str) -> str: ...


def _served(decision: Decision) -> Decision:
    """The decision without its variables (the policies' and each container's), which no answer shows: what a cached
    decision holds on to is then its claim and messages, not the evaluation's activations (about 120 objects that
    the cyclic collector would walk at every full collection, for each of the cache's entries)."""
    if not decision.variables and all(not c.variables for c in decision.containers):
        return decision
    return decision.without_variables()


# What a translation keeps for the next pod of its key: its templates, patch and warnings, and the patch as the
# answer carries it (`Admission._translate`).
_Translated = tuple[tuple[dict[str, Any], ...], tuple[dict[str, Any], ...], tuple[str, ...], str]


class _Cached:
    """A decision and, once mutate asks for it, its translation (both pure functions of the cache key's inputs).

    `pod` is the first review's object: equal, by the key, to every later one served from this entry. The decision
    is kept without its variables (`_served`).
    """

    __slots__ = ("pod", "decision", "_translation", "_native")

    def __init__(
        self, pod: dict[str, Any], decision: Decision, policies: PolicySet, mapping: Mapping[str, str]
    ) -> None:
        self.pod = pod
        self.decision = _served(decision)
        self._translation: tuple[Translation, str] | None = None
        # Whether kube-scheduler's own claim (KEP-5004) gives the pod what the decision would: computed here, from the
        # same inputs as the decision (the mapping is part of the cache key).
        self._native = scheduler_path(pod, decision, mapping, policies)

    @property
    def native(self) -> SchedulerPath | None:
        return self._native

    def translation(
        self, translator: Callable[[dict[str, Any], Decision], tuple[Translation, str]]
    ) -> tuple[Translation, str]:
        """The translation and its patch's `encoded_patch` ("" when it has none)."""
        if self._translation is None:
            self._translation = translator(self.pod, self.decision)
        return self._translation


class Admission:
    """`AdmissionHandler` for the review app (webhook.app); holds the serving policy set and the side-effect client."""

    def __init__(
        self,
        store: PolicyStore[PolicySet],
        metrics: WebhookMetrics,
        *,
        writer: TemplateWriter | None = None,
        namespaces: NamespaceCache | None = None,
        rollout: RolloutConfig | None = None,
        cache_size: int = DECISION_CACHE_SIZE,
        cache_bytes: int = DECISION_CACHE_BYTES,
        exempt_namespaces: frozenset[str] = DEFAULT_EXEMPT_NAMESPACES,
        claims: ClaimReader | None = None,
        sizing: SizingSource | None = None,
        extended_resources: Callable[[], Mapping[str, str]] | None = None,
        k8s_minor: int | None = None,
        shapes_token: Callable[[], str] | None = None,
    ) -> None:
        self.store = store
        self.metrics = metrics
        self.writer = writer
        self.namespaces = namespaces
        self.rollout = rollout or RolloutConfig()
        self.cache_size = cache_size
        self.exempt_namespaces = exempt_namespaces
        self.claims = claims  # where the claims and templates a pod names are read (None: not counted)
        self.sizing = sizing  # observed-usage recommendations (webhook.sizing_cache), read from memory only
        # The cluster's KEP-5004 mapping, extended resource -> DeviceClass (kubeapi.deviceclasses), read from memory.
        self.extended_resources = extended_resources
        # The API server's minor version: templates get a warning for what it does not serve (k8s_features).
        self.k8s_minor = k8s_minor
        # The generation of the device shapes the policies' claim check reads (webhook.cluster_view), for the key.
        self.shapes_token = shapes_token
        # Decisions (and their translations) by a digest of every input they depend on; see `_key`.
        self._cache: DecisionCache[_Cached] = DecisionCache(cache_size, cache_bytes)
        self._cache_policies: PolicySet | None = None
        # Translations by `translation_key`: pods that differ only where translate does not read (each replica's
        # name, a label) share one, though each is a decision-cache miss. A pure function of the key: never cleared.
        self._translations: DecisionCache[_Translated] = DecisionCache(cache_size, TRANSLATION_CACHE_BYTES)
        self._policies_lock = threading.Lock()
        self._reads_uid = False

    def policies_ready(self) -> tuple[bool, str]:
        status = self.store.status()
        names = ", ".join(self.store.current.names()) or "none"
        detail = f"{len(self.store.current.policies)} policies serving ({names})"
        if status.last_error:
            detail += f"; the last reload was rejected: {status.last_error}"
        return bool(self.store.current.policies), detail

    def _namespace(self, review: ReviewRequest) -> dict[str, Any] | None:
        if not review.namespace:
            return None
        if self.namespaces is None:
            return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": review.namespace}}
        try:
            found = self.namespaces.get(review.namespace)
        except ApiServerError as exc:
            # Rollout mode and guardrails depend on the namespace: refuse rather than guess.
            raise AdmissionDenied(
                f"gpudra cannot read namespace {review.namespace!r} to apply its GPU policies: {exc}",
                code=503,
                reason="ServiceUnavailable",
            ) from exc
        if found is None:
            # The API server never sends a pod review for a namespace that does not exist; a review that names one
            # was not sent by it, and gets nothing created or evaluated.
            raise AdmissionDenied(
                f"gpudra: namespace {review.namespace!r} does not exist; nothing is created there",
                code=404,
                reason="NotFound",
            )
        return found

    def _key(self, policies: PolicySet, inputs: _DecisionInputs) -> tuple[bytes, int] | None:
        """A digest of exactly what a decision reads: all of `inputs` (the request info's uid left out unless
        some policy expression could read it). Replicas of one Deployment arrive identical at mutating admission, so
        they share one entry. With the digest, the text's size (the entry's weight). None when an input is not plain
        JSON (then no caching)."""
        with self._policies_lock:  # decisions run on several threads (webhook.deadline)
            if policies is not self._cache_policies:
                self._cache.clear()
                self._cache_policies = policies
                self._reads_uid = any("uid" in source for source in policies.expression_sources())
            reads_uid = self._reads_uid
        values = list(inputs)
        if not reads_uid:
            values[_INFO] = {k: v for k, v in inputs.info.items() if k != "uid"}
        try:
            # Not sorted: the API server writes a given object's keys in one order, and equal text means equal
            # inputs either way (another key order only misses the cache); sorting would double the cost.
            text = jsontext.dumps(values, allow_nan=False)
        except (TypeError, ValueError):
            return None
        data = text.encode()
        return hashlib.blake2b(data, digest_size=20).digest(), len(data)

    def _translate(self, pod: dict[str, Any], decision: Decision) -> tuple[Translation, str]:
        """`translate(pod, decision)` and its patch's `encoded_patch`, shared with an earlier pod's of an equal
        `translation_key` (templates and patch are only read: written out, or copied before a patch is applied)."""
        key = translation_key(pod, decision)
        found = self._translations.get(key) if key is not None else None
        if found is not None:
            templates, patch, warnings, encoded = found
            return Translation(pod, templates, patch, warnings), encoded
        translation = translate(pod, decision)
        encoded = encoded_patch(translation.patch) if translation.patch else ""
        if key is not None:
            blob = decision.claim_blob or b""
            # the key's claim pickle, the template's claim (about as much again as Python objects), the patch's text
            # and the rest
            weight = 4 * len(blob) + 2 * sum(len(w) for w in translation.warnings) + 256 * len(translation.patch)
            weight += len(encoded) + 1024
            entry = (translation.templates, translation.patch, translation.warnings, encoded)
            self._translations.put(key, entry, weight)
        return translation, encoded

    def _dra_devices(
        self,
        review: ReviewRequest,
        pod: dict[str, Any],
        namespace: dict[str, Any] | None,
        mapping: Mapping[str, str] | None = None,
    ) -> int:
        """GPU devices the claims and templates the pod names ask for; an API-server failure denies (a cap that
        cannot be checked is not waved through), and so does a claim or template that does not exist yet in a
        namespace with a GPU cap (what it will ask for cannot be counted now)."""
        if self.claims is None or not (pod.get("spec") or {}).get("resourceClaims"):
            return 0
        try:
            demand = claim_demand(pod, review.namespace, self.claims, gpu_classes(mapping))
        except ApiServerError as exc:
            raise AdmissionDenied(
                f"gpudra: cannot read the pod's ResourceClaims to check GPU caps: {exc}", code=503,
                reason="ServiceUnavailable",
            ) from exc  # fmt: skip
        labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
        caps = [label for label in CAP_LABELS if label in labels]
        # A dry run persists nothing (and its mutation created no template, so its own claim is missing too).
        if demand.missing and caps and not review.dry_run:
            raise AdmissionDenied(
                f"gpudra: {', '.join(demand.missing)} does not exist yet, and namespace {review.namespace} caps GPUs "
                f"(label {', '.join(caps)}): what it will ask for cannot be counted, so create it before the pod",
                code=403,
                reason="Forbidden",
            )
        return demand.devices

    def _decide(self, review: ReviewRequest) -> _Cached | None:
        if not review.is_pod or review.operation != "CREATE":
            return None
        if review.object is None:
            raise BadReview("a CREATE review for a pod must carry 'request.object'")
        pod = review.object
        check_pod_shape(pod)
        _check_namespace(review, pod)
        if review.namespace in self.exempt_namespaces:
            return None
        check_claim_references(pod)
        namespace = self._namespace(review)
        policies = self.store.current
        mapping = self.extended_resources() if self.extended_resources is not None else {}
        inputs = _DecisionInputs(
            pod,
            namespace,
            _request_info(review),
            self._dra_devices(review, pod, namespace, mapping),
            self.sizing.version(pod, review.namespace) if self.sizing is not None else "",
            extended_resource_pairs(mapping),
            self.shapes_token() if self.shapes_token is not None else "",
        )
        # A pod whose text is certainly past what the cache keeps is not written out for a key never stored.
        uncached = review.body_bytes > UNCACHED_INPUT_BYTES and json_text_longer_than(pod, UNCACHED_INPUT_BYTES)
        keyed = self._key(policies, inputs) if self.cache_size > 0 and not uncached else None
        if keyed is not None:
            cached = self._cache.get(keyed[0])
            if cached is not None:
                return cached
        decision = policies.evaluate(
            inputs.pod,
            inputs.namespace,
            inputs.info,
            dra_devices=inputs.dra_devices,
            sizing=self.sizing,  # read through `inputs.sizing`, its version
            extended_resources=mapping,  # read through `inputs.mapped`, its legacy GPU pairs
            with_variables=False,  # no answer shows them (`_served`)
            memoize_facts=not uncached,  # nor is it written out for the engine's facts memo
        )
        entry = _Cached(pod, decision, policies, mapping)
        if keyed is not None and keyed[1] <= UNCACHED_INPUT_BYTES:
            # inputs, and what the decision held when made (its variables included: an upper bound of what the
            # entry keeps, `_served`)
            self._cache.put(keyed[0], entry, keyed[1] + decision.held_bytes)
        return entry

    def _count(self, endpoint: str, review: ReviewRequest, decision: Decision | None, outcome: str) -> None:
        policy = decision.policy if decision is not None and decision.policy else ""
        self.metrics.reviews.labels(endpoint, operation_label(review.operation), policy, outcome).inc()
        if decision is not None:
            for violation in decision.violations:
                if violation.reason == "InternalError":
                    self.metrics.policy_errors.labels(violation.policy).inc()

    def _deny(self, endpoint: str, review: ReviewRequest, decision: Decision) -> AdmissionDenied:
        self._count(endpoint, review, decision, "denied")
        code = 500 if decision.reason == "InternalError" else 403
        return AdmissionDenied(
            decision.message, code=code, reason=decision.reason or "Forbidden", warnings=list(decision.warnings)
        )

    def mutate(self, review: ReviewRequest) -> dict[str, Any]:
        decided = self._decide(review)
        if decided is None:
            self._count("mutate", review, None, "skipped")
            return allowed_response(review.uid)
        pod, decision = decided.pod, decided.decision
        if not decision.allowed:
            raise self._deny("mutate", review, decision)
        if decided.native is not None:
            return self._leave_to_scheduler(review, decision, decided.native)
        translation, encoded = decided.translation(self._translate)
        warnings = list(translation.warnings)
        if translation.patch and self.k8s_minor is not None:  # what the cluster's version would not serve
            for template in translation.templates:
                spec = (template.get("spec") or {}).get("spec") or {}
                name = template["metadata"]["name"]
                warnings.extend(f"ResourceClaimTemplate {name} {w}" for w in unserved_features(spec, self.k8s_minor))
        if translation.patch:
            if review.dry_run:
                self.metrics.templates_created.labels("skipped_dry_run").inc()
            elif self.writer is not None:
                for template in translation.templates:
                    try:
                        result = self.writer.ensure_template(review.namespace, template)
                    except ApiServerError as exc:
                        self._count("mutate", review, decision, "error")
                        raise AdmissionDenied(
                            f"gpudra could not create the ResourceClaimTemplate for this pod, so it is not admitted "
                            f"half-translated: {exc}",
                            code=503,
                            reason="ServiceUnavailable",
                        ) from exc
                    self.metrics.templates_created.labels("created" if result.created else "existing").inc()
            elif self.rollout.warn_without_side_effects:
                names = ", ".join(t["metadata"]["name"] for t in translation.templates)
                warnings.append(f"gpudra runs without API-server access: ResourceClaimTemplate {names} not created")
            self._count("mutate", review, decision, "mutated")
            return allowed_response(review.uid, patch=translation.patch, warnings=warnings, encoded=encoded)
        if translation.audit_annotations:
            self._count("mutate", review, decision, "audited")
            annotations = dict(translation.audit_annotations)
            return allowed_response(
                review.uid,
                patch=annotation_patch(pod, annotations),
                warnings=warnings,
                # The API server prefixes these keys with the webhook's name, so they must not carry a prefix.
                audit_annotations={k.rsplit("/", 1)[-1]: v[:AUDIT_ANNOTATION_LIMIT] for k, v in annotations.items()},
            )
        self._count("mutate", review, decision, "allowed")
        return allowed_response(review.uid, warnings=warnings)

    def _leave_to_scheduler(self, review: ReviewRequest, decision: Decision, native: SchedulerPath) -> dict[str, Any]:
        """Admit the pod unchanged: kube-scheduler builds the same whole-device claim itself (KEP-5004). No template,
        no API write, no patch; an audit annotation says why."""
        for device_class in native.device_classes:
            self.metrics.left_to_scheduler.labels(native.policy, device_class).inc()
        self._count("mutate", review, decision, "left_to_scheduler")
        return allowed_response(
            review.uid,
            warnings=list(decision.warnings),
            audit_annotations={"left-to-scheduler": native.reason[:AUDIT_ANNOTATION_LIMIT]},
        )

    def validate(self, review: ReviewRequest) -> dict[str, Any]:
        decided = self._decide(review)
        if decided is None:
            self._count("validate", review, None, "skipped")
            return allowed_response(review.uid)
        decision = decided.decision
        if not decision.allowed:
            raise self._deny("validate", review, decision)
        self._count("validate", review, decision, "allowed")
        return allowed_response(review.uid)
