"""Observed-usage sizing for the simulator: `gpudra simulate --sizing observed:FILE`.

FILE is either

- a Prometheus range-query dump of the NVIDIA DCGM exporter's `DCGM_FI_DEV_FB_USED` (what `/api/v1/query_range`
  returns: `{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...}, "values":
  [[ts, "MiB"], ...]}]}}`), whose series name their pod as `gpudra recommend` reads them (`recommender`'s
  `series_identity`: the exporter's `namespace`, `pod`, `container`, their `exported_*` forms after Prometheus's
  renaming, or the old `pod_namespace`, `pod_name`, `container_name`, all valid Kubernetes names); or
- GPUSizingRecommendation objects (YAML or JSON: one object, a `List`/`GPUSizingRecommendationList`, a list or a
  multi-document stream), as `kubectl get gsr -A -o yaml` prints them; read as the webhook's cache reads them.

`observed:generated` builds a demo dump from the workload itself (`demo_dump`): every pod's framebuffer use
sampled hourly for 7 days below its VRAM need, so the saving shown is what observed sizing gives when the
observations reflect what the pods use; it is labelled as generated wherever it is shown.

A dump becomes recommendations as `gpudra recommend` computes them (recommender's defaults: all samples of an
owner's container pooled, the p99 of them as the peak, x 1.2 headroom, at least 100 samples). Matching a series to a
workload owner (the dump names pods, not owners) goes by the pod name, the controllers' naming
(`workloads.owner_of_pod_name`: `<name>-<pod-template-hash>-<5 chars>` a Deployment's, `<name>-<ordinal>` a
StatefulSet's, `<name>-<5 chars>` a Job's, anything else the bare Pod).

A simulated pod finds its recommendation through `workloads.pod_owner` of its Pod object (ownerReferences and
labels, as the webhook does), the pod's namespace and the container's name. The built-in generator's pods carry
owner metadata for that (`simulator.workload.legacy_pod`); openb trace rows have none, so they never match.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from array import array
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from dra.durations import format_go_duration
from dra.errors import InputError
from dra.sizing import ObservedSizing
from dra.sizing.recommendations import parse_recommendation
from recommender import (
    FB_USED,
    MIB,
    Answer,
    AnswerError,
    Rejected,
    Settings,
    capped_to_device,
    peak_of,
    read_answer,
    series_identity,
    vram_for,
)
from workloads import KINDS, owner_of_pod_name, pod_owner

from .workload import SimPod, Workload

__all__ = [
    "FB_USED",
    "ObservedLookup",
    "SizingSpec",
    "demo_dump",
    "dump_lookup",
    "generated_lookup",
    "granted_vs_observed",
    "load_observed",
    "owner_of_pod_name",
    "parse_sizing",
    "parse_prometheus_dump",
    "parse_recommendations",
    "strip_annotations",
]

VRAM_ANNOTATION = "gpudra.io/vram"

# The kinds a pod name can stand for (`owner_of_pod_name`); the demo dump names other owners as Deployments.
_NAMED_KINDS = frozenset(k.kind for k in KINDS if k.pod_name is not None)

OwnerKey = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class SizingSpec:
    """`--sizing`: none (annotations only), or observed from a file or from the generated demo dump."""

    kind: str = "none"  # "none" | "observed"
    path: str | None = None  # None with kind observed: generated

    @property
    def label(self) -> str:
        if self.kind == "none":
            return "none"
        return f"observed:{self.path or 'generated'}"


def parse_sizing(text: str | None) -> SizingSpec:
    """`none`, `observed:FILE` or `observed:generated`; InputError naming the accepted forms otherwise."""
    if text is None or text == "none":
        return SizingSpec()
    kind, sep, rest = text.partition(":")
    if kind != "observed" or not sep or not rest:
        raise InputError(f"--sizing must be none, observed:FILE or observed:generated (got {text!r})")
    return SizingSpec("observed", None if rest == "generated" else rest)


@dataclass
class ObservedLookup:
    """A `dra.sizing.SizingLookup` over recommendations loaded from a file; counts what it was asked."""

    source: str
    kind: str  # "prometheus" | "recommendations" | "generated"
    entries: dict[OwnerKey, dict[str, ObservedSizing]] = field(default_factory=dict)
    series: int = 0  # dump series read (or objects)
    skipped: Counter[str] = field(default_factory=Counter)  # owners/containers without a recommendation, by reason
    hits: int = 0
    misses: int = 0

    def observed(self, namespace: str, owner_kind: str, owner_name: str, container: str) -> ObservedSizing | None:
        found = self.entries.get((namespace, owner_kind, owner_name), {}).get(container)
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def for_pod(self, pod: SimPod) -> ObservedSizing | None:
        """The recommendation of a simulated pod's first container (no counting)."""
        obj = pod.as_pod()
        owner = pod_owner(obj)
        containers = (obj.get("spec") or {}).get("containers") or []
        if owner is None or not containers:
            return None
        name = containers[0].get("name", "")
        return self.entries.get((pod.namespace or "default", owner[0], owner[1]), {}).get(name)

    def describe(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "kind": self.kind,
            "series": self.series,
            "owners": len(self.entries),
            "containers": sum(len(c) for c in self.entries.values()),
            "skipped": dict(self.skipped),
        }


def _fail(path: str, where: str, message: str) -> InputError:
    return InputError(f"{path}: {where}: {message}" if where else f"{path}: {message}")


def parse_prometheus_dump(data: Any, path: str, settings: Settings | None = None) -> ObservedLookup:
    """A `/api/v1/query_range` answer of DCGM_FI_DEV_FB_USED (MiB), decoded -> recommendations per owner and
    container: read as `gpudra recommend` reads Prometheus (`recommender.read_answer`, `series_identity`).

    InputError naming `path` and the series for anything that is not such an answer: another status or result
    type, a series without namespace/pod/container labels or with labels that are not Kubernetes names, another
    metric, a sample that is not a finite number >= 0."""
    if not isinstance(data, Mapping):
        raise _fail(path, "", f"not a successful Prometheus query answer (status {type(data).__name__!r})")
    return dump_lookup(read_answer(json.dumps(data).encode()), path, settings)


def _rejected_series(path: str, where: str, labels: Mapping[str, str], why: Rejected) -> InputError:
    if why.reason.startswith("no "):
        shown = {k: v[:64] for k, v in list(labels.items())[:12] if k != "__name__"}
        return _fail(path, where, f"series without {why.reason[3:]} (labels {shown}); the DCGM exporter adds them "
                     "when its Kubernetes mapping is on")  # fmt: skip
    return _fail(path, where, f"series with an {why.reason}: {why.detail}")


def _prometheus_number(value: float) -> str:
    return (
        "NaN" if math.isnan(value) else "+Inf" if value == math.inf else "-Inf" if value == -math.inf else f"{value:g}"
    )


def dump_lookup(answer: Answer, path: str, settings: Settings | None = None) -> ObservedLookup:
    """`parse_prometheus_dump` of an answer read by `recommender.read_answer` (what `load_observed` reads a
    dump file with: bounded memory, whatever its size)."""
    settings = settings or Settings()
    if answer.status != "success":
        raise _fail(path, "", f"not a successful Prometheus query answer (status {answer.status!r})")
    if answer.result_type != "matrix" or answer.result is None:
        raise _fail(path, "data", f"expected a range query's matrix result (resultType {answer.result_type!r})")
    pooled: dict[tuple[str, str, str, str], list[array[float]]] = {}
    times: dict[tuple[str, str, str, str], list[array[float]]] = {}
    models: dict[tuple[str, str, str, str], str] = {}  # the GPU model a series ran on (caps the recommendation)
    for index, series in enumerate(answer.result):
        where = f"data.result[{index}]"
        labels = series.labels
        if labels is None:
            raise _fail(path, where, "a series needs 'metric' (labels, a map of strings) and 'values'")
        metric = labels.get("__name__")
        if metric is not None and metric != FB_USED:
            raise _fail(path, where, f"metric {metric!r} is not {FB_USED} (framebuffer used, MiB)")
        ident = series_identity(labels)
        if isinstance(ident, Rejected):
            raise _rejected_series(path, where, labels, ident)
        if not series.samples_ok or (not series.values and not series.unparseable):
            raise _fail(path, where, "'values' must be a non-empty list of [timestamp, \"value\"]")
        if series.first_unparseable is not None:
            j, text = series.first_unparseable
            raise _fail(path, f"{where}.values[{j}]", f'{text} is not a [timestamp, "number"] sample')
        values = np.frombuffer(series.values, dtype=np.float64)
        stamps_of = np.frombuffer(series.times, dtype=np.float64)
        bad = ~np.isfinite(values) | (values < 0) | ~np.isfinite(stamps_of)
        if bad.any():
            j = int(np.argmax(bad))
            shown = _prometheus_number(float(values[j]))
            raise _fail(path, f"{where}.values[{j}]", f"{shown!r} is not a finite framebuffer size >= 0 MiB")
        kind, owner = owner_of_pod_name(ident.pod)
        key = (ident.namespace, kind, owner, ident.container)
        pooled.setdefault(key, []).append(series.values)
        times.setdefault(key, []).append(series.times)
        models.setdefault(key, ident.model_name)
    lookup = ObservedLookup(path, "prometheus", series=len(answer.result))
    for key, parts in sorted(pooled.items()):
        namespace, kind, owner, container = key
        samples = np.concatenate([np.frombuffer(p, dtype=np.float64) for p in parts])
        if len(samples) < settings.min_samples:
            lookup.skipped[f"fewer than {settings.min_samples} samples"] += 1
            continue
        peak = math.ceil(peak_of(samples, settings.quantile) * MIB)
        stamps = np.concatenate([np.frombuffer(p, dtype=np.float64) for p in times[key]])
        window = int(stamps.max() - stamps.min())
        span = format_go_duration(window) if window else "one instant"
        lookup.entries.setdefault((namespace, kind, owner), {})[container] = ObservedSizing(
            vram_bytes=capped_to_device(vram_for(peak, settings.headroom), peak, models[key]),
            peak_bytes=peak,
            samples=len(samples),
            window_seconds=window,
            updated="",
            source_ref=f"{path} ({kind} {namespace}/{owner}, {span})",
        )
    return lookup


def parse_recommendations(objects: Iterable[Any], path: str) -> ObservedLookup:
    """GPUSizingRecommendation objects -> the lookup, exactly as the webhook's cache parses them (bad entries
    skipped and counted; an object that is not a recommendation is an error naming the file)."""
    lookup = ObservedLookup(path, "recommendations")
    for index, obj in enumerate(objects):
        if not isinstance(obj, Mapping) or obj.get("kind") != "GPUSizingRecommendation":
            kind = obj.get("kind") if isinstance(obj, Mapping) else type(obj).__name__
            raise _fail(path, f"object {index}", f"kind {kind!r} is not GPUSizingRecommendation")
        try:
            parsed = parse_recommendation(obj)
        except ValueError as exc:
            raise _fail(path, f"object {index}", str(exc)) from exc
        lookup.series += 1
        for reason, _ in parsed.skipped:
            lookup.skipped[reason] += 1
        if parsed.owner in lookup.entries:
            lookup.skipped["duplicate_owner"] += 1
            continue
        lookup.entries[parsed.owner] = dict(parsed.containers)
    return lookup


def _documents(text: str, path: str) -> list[Any]:
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        try:
            return [json.loads(text)]
        except json.JSONDecodeError as exc:
            raise _fail(path, f"line {exc.lineno}", f"not JSON: {exc.msg}") from None
    from dra.yamlio import load_yaml

    try:
        return [d for d, _node in load_yaml(text, path) if d is not None]
    except InputError as exc:
        where = f"line {exc.line}" if exc.line is not None else ""
        raise _fail(path, where, f"neither JSON nor YAML: {exc.message}") from None


def load_observed(path: str | Path) -> ObservedLookup:
    """A dump or a recommendations file, told apart by content (a Prometheus answer has `status`, no `kind`)."""
    name = str(path)
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{name}: cannot read: {exc}") from exc
    if text.lstrip().startswith("{"):  # a dump is read as the recommender reads Prometheus, in bounded memory
        try:
            answer = read_answer(text.encode())
        except AnswerError:
            answer = None  # not JSON: the readers below name the line
        if answer is not None and answer.status is not None and answer.kind is None:
            return dump_lookup(answer, name)
    documents = _documents(text, name)
    if not documents:
        raise _fail(name, "", "empty: expected a Prometheus query_range answer or GPUSizingRecommendation objects")
    first = documents[0]
    if len(documents) == 1 and isinstance(first, Mapping) and "status" in first and "kind" not in first:
        return parse_prometheus_dump(first, name)
    objects: list[Any] = []
    for doc in documents:
        if not isinstance(doc, (list, Mapping)):
            raise _fail(name, "", f"neither a Prometheus query_range answer nor GPUSizingRecommendation objects "
                        f"(the file holds a {type(doc).__name__}: {str(doc)[:60]!r})")  # fmt: skip
        if isinstance(doc, list):
            objects.extend(doc)
        elif (
            isinstance(doc, Mapping)
            and isinstance(doc.get("items"), list)
            and str(doc.get("kind", "")).endswith("List")
        ):
            objects.extend(doc["items"])
        else:
            objects.append(doc)
    return parse_recommendations(objects, name)


def _pod_name(owner: tuple[str, str], seq: int) -> str:
    """A pod name the owner's controller would give (what a DCGM series names), for the demo dump."""
    kind, name = owner
    rnd = random.Random(f"{kind}/{name}/{seq}")
    chars = "bcdfghjklmnpqrstvwxz2456789"
    suffix = "".join(rnd.choice(chars) for _ in range(5))
    if kind == "Deployment":
        return f"{name}-{'7c9d8f6b5'}-{suffix}"
    if kind == "StatefulSet":
        return f"{name}-{seq}"
    return f"{name}-{suffix}"


def demo_dump(work: Workload, *, seed: int = 0, days: int = 7, step_s: int = 3600) -> dict[str, Any]:
    """A Prometheus query_range answer for the workload's GPU pods that have an owner: per pod and GPU, hourly
    framebuffer samples between 70 % and 100 % of its VRAM need (the need itself once), as the DCGM exporter
    would have reported them over `days` days. Owners the dump's naming cannot express (a RayCluster, an operator's
    kind) are named as Deployments of the same name, and the lookup below keys them so."""
    rng = np.random.default_rng(seed)
    end = 1_764_547_200.0  # 2025-12-01T00:00:00Z
    stamps = [end - days * 86400 + i * step_s for i in range(days * 86400 // step_s)]
    result: list[dict[str, Any]] = []
    seq: Counter[tuple[str, str]] = Counter()
    for pod in work.pods:
        obj = pod.as_pod()
        owner = pod_owner(obj)
        containers = (obj.get("spec") or {}).get("containers") or []
        if owner is None or not pod.is_gpu or not containers:
            continue
        kind = owner[0] if owner[0] in _NAMED_KINDS else "Deployment"
        name = _pod_name((kind, owner[1]), seq[(kind, owner[1])])
        seq[(kind, owner[1])] += 1
        values = rng.uniform(0.7, 1.0, len(stamps)) * pod.vram_mib
        values[int(rng.integers(len(stamps)))] = pod.vram_mib
        labels = {
            "__name__": FB_USED, "namespace": pod.namespace or "default", "pod": name,
            "container": str(containers[0].get("name", "")), "modelName": "NVIDIA H100 80GB HBM3",
            "gpu": "0", "UUID": f"GPU-{hashlib.blake2b(name.encode(), digest_size=8).hexdigest()}", "Hostname": "sim",
        }  # fmt: skip
        result.append({"metric": labels, "values": [[t, f"{v:.0f}"] for t, v in zip(stamps, values, strict=True)]})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


def generated_lookup(work: Workload, seed: int = 0) -> ObservedLookup:
    """`observed:generated`: the demo dump of this workload, parsed like a file, with owners keyed as the pods
    name them (the dump's naming spells the owners it cannot express as Deployments)."""
    lookup = parse_prometheus_dump(demo_dump(work, seed=seed), "generated")
    lookup.kind = "generated"
    lookup.source = "generated from the workload (demo: observations below each pod's VRAM need)"
    kinds = {}
    for pod in work.pods:
        owner = pod_owner(pod.as_pod())
        if owner is not None and owner[0] not in _NAMED_KINDS:
            kinds[(pod.namespace or "default", "Deployment", owner[1])] = owner[0]
    for key in list(lookup.entries):
        if key in kinds:
            lookup.entries[(key[0], kinds[key], key[2])] = lookup.entries.pop(key)
    return lookup


def strip_annotations(work: Workload) -> Workload:
    """The same pods without `gpudra.io/vram`: the pods as their owners wrote them (no right-sizing hints)."""
    pods: list[SimPod] = []
    stripped = 0
    for pod in work.pods:
        obj = pod.as_pod()
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if VRAM_ANNOTATION not in annotations:
            pods.append(pod)
            continue
        meta = dict(obj["metadata"])
        rest = {k: v for k, v in annotations.items() if k != VRAM_ANNOTATION}
        if rest:
            meta["annotations"] = rest
        else:
            meta.pop("annotations", None)
        pods.append(replace(pod, pod={**obj, "metadata": meta}))
        stripped += 1
    out = Workload(pods, work.source, work.kind, work.skipped, work.examples, Counter(work.notes),
                   dict(work.note_examples))  # fmt: skip
    if stripped:
        reason = f"{VRAM_ANNOTATION} annotation removed (--unannotated)"
        out.notes[reason] = stripped
        out.note_examples[reason] = [p.name for p in pods if p.pod is not None][:3]
    return out


def _quantile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * (len(ordered) - 1)))] if ordered else 0


def granted_vs_observed(pods: Iterable[SimPod], granted: Mapping[str, int], lookup: ObservedLookup) -> dict[str, Any]:
    """Per GPU pod a gpudra run placed: MiB per device granted (its first placement), needed (the workload's VRAM
    model) and observed (its owner's recommended peak, when the file has one); with summary statistics."""
    rows: list[dict[str, Any]] = []
    for pod in pods:
        if pod.name not in granted or not pod.is_gpu:
            continue
        found = lookup.for_pod(pod)
        observed = -(-found.peak_bytes // MIB) if found is not None else None
        rows.append({"pod": pod.name, "class": pod.workload_class, "gpus": pod.num_gpu, "need_mib": pod.vram_mib,
                     "granted_mib": granted[pod.name], "observed_mib": observed})  # fmt: skip
    with_observed = [r for r in rows if r["observed_mib"] is not None]
    need = sum(r["need_mib"] for r in rows)
    stats = {
        "pods": len(rows),
        "pods_with_observed": len(with_observed),
        "granted_mib_p50": _quantile([r["granted_mib"] for r in rows], 0.5),
        "granted_mib_p90": _quantile([r["granted_mib"] for r in rows], 0.9),
        "need_mib_p50": _quantile([r["need_mib"] for r in rows], 0.5),
        "observed_mib_p50": _quantile([r["observed_mib"] for r in with_observed], 0.5),
        "granted_over_need": round(sum(r["granted_mib"] for r in rows) / need, 3) if need else None,
        "granted_below_need": sum(1 for r in rows if r["granted_mib"] < r["need_mib"]),
        "granted_below_observed": sum(1 for r in with_observed if r["granted_mib"] < r["observed_mib"]),
    }
    return {"stats": stats, "rows": rows}
