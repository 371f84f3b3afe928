"""`--scheduler-config`: a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) read as kube-scheduler reads it.

Strict like kube-scheduler's decoder (unknown fields are errors); the profile for `schedulerName: default-scheduler`
(the simulated pods') is merged onto v1.37.2's defaults as pkg/scheduler/apis/config/v1/default_plugins.go
mergePlugins does (per extension point: `disabled` names or `*` drop defaults, `enabled` entries replace a default in
place or are appended), MultiPoint first, then the Filter and Score points. pluginConfig args: NodeResourcesFit
`scoringStrategy` (type, resources with weights, requestedToCapacityRatio shape), NodeResourcesBalancedAllocation
`resources`; others the simulation cannot be changed by are accepted. An explicit plugin or resource weight of 0
is refused (kube-scheduler silently reads it as 1: pkg/scheduler/framework/runtime/framework.go
getValidScoreWeights; disable the plugin instead). Errors name the file, the document's line and the field path.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from dra.documents import read_documents
from dra.errors import InputError

from .profile import (
    DEFAULT_PROFILE,
    DEFAULT_RESOURCES,
    DEFAULT_SCORE_WEIGHTS,
    FILTER_PLUGINS,
    INERT_PLUGINS,
    SCORE_PLUGINS,
    FitScoring,
    Profile,
)

__all__ = ["API_VERSION", "load_scheduler_config", "profile_from_config"]

API_VERSION = "kubescheduler.config.k8s.io/v1"
_TOP = {
    "apiVersion", "kind", "parallelism", "leaderElection", "clientConnection", "healthzBindAddress",
    "metricsBindAddress", "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
    "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders", "delayCacheUntilActive",
}  # fmt: skip
_PROFILE = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
_POINTS = {
    "preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve", "permit",
    "preBind", "bind", "postBind", "multiPoint", "placementGenerate", "placementScore", "podGroupPostFilter",
}  # fmt: skip
KNOWN_PLUGINS = FILTER_PLUGINS | set(SCORE_PLUGINS) | INERT_PLUGINS
_FIT_TYPES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")
_MODELLED_RESOURCES = ("cpu", "memory")


class _Where:
    def __init__(self, source: str, line: int) -> None:
        self.source, self.line = source, line

    def error(self, path: str, message: str) -> InputError:
        return InputError(f"{path}: {message}", source=self.source, line=self.line)


def _mapping(value: Any, path: str, where: _Where, allowed: set[str] | None = None) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.error(path, f"must be an object (got {type(value).__name__})")
    if allowed is not None:
        for key in value:
            if key not in allowed:
                raise where.error(
                    f"{path}.{key}" if path else str(key), f"unknown field (known: {', '.join(sorted(allowed))})"
                )
    return value


def _list(value: Any, path: str, where: _Where) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(path, f"must be a list (got {type(value).__name__})")
    return value


def _int(value: Any, path: str, where: _Where, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise where.error(path, f"must be an integer from {low} to {high} (got {value!r})")
    return value


def _plugin_name(value: Any, path: str, where: _Where) -> str:
    name = value.get("name") if isinstance(value, Mapping) else None
    if not isinstance(name, str) or not name:
        raise where.error(path + ".name", "required")
    if name != "*" and name not in KNOWN_PLUGINS:
        close = difflib.get_close_matches(name, sorted(KNOWN_PLUGINS), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise where.error(
            path + ".name",
            f"unknown plugin {name!r}{hint}: not a kube-scheduler v1.37 in-tree plugin, and the simulator cannot "
            "model plugins it does not know",
        )
    return name


def _merge(default: dict[str, int], point: Mapping[str, Any], path: str, where: _Where) -> dict[str, int]:
    """mergePluginSet: drop the disabled defaults, replace or append the enabled ones (weights kept by name)."""
    point = _mapping(point, path, where, {"enabled", "disabled"})
    disabled = set()
    for i, entry in enumerate(_list(point.get("disabled"), path + ".disabled", where)):
        _mapping(entry, f"{path}.disabled[{i}]", where, {"name"})
        disabled.add(_plugin_name(entry, f"{path}.disabled[{i}]", where))
    merged = {} if "*" in disabled else {n: w for n, w in default.items() if n not in disabled}
    for i, entry in enumerate(_list(point.get("enabled"), path + ".enabled", where)):
        at = f"{path}.enabled[{i}]"
        _mapping(entry, at, where, {"name", "weight"})
        name = _plugin_name(entry, at, where)
        if name == "*":
            raise where.error(at + ".name", "'*' can only be disabled")
        weight = 0
        if "weight" in entry:
            weight = _int(entry["weight"], at + ".weight", where, 0, 100)
            if weight == 0:
                raise where.error(
                    at + ".weight", "0 is not a weight (kube-scheduler reads it as 1); disable the plugin instead"
                )
        merged[name] = weight or default.get(name, 0) or merged.get(name, 0)
    return merged


def _resources(value: Any, path: str, where: _Where) -> tuple[tuple[str, int], ...]:
    out = []
    for i, entry in enumerate(_list(value, path, where)):
        at = f"{path}[{i}]"
        entry = _mapping(entry, at, where, {"name", "weight"})
        name = entry.get("name")
        if name not in _MODELLED_RESOURCES:
            raise where.error(at + ".name", f"the simulator models cpu and memory only; it cannot score on {name!r}")
        weight = 1
        if "weight" in entry:
            weight = _int(entry["weight"], at + ".weight", where, 0, 100)
            if weight == 0:
                raise where.error(at + ".weight", "0 is not a weight (kube-scheduler reads it as 1)")
        out.append((str(name), weight))
    return tuple(out) or DEFAULT_RESOURCES


def _fit_args(args: Mapping[str, Any], path: str, where: _Where) -> FitScoring:
    args = _mapping(
        args, path, where, {"kind", "apiVersion", "ignoredResources", "ignoredResourceGroups", "scoringStrategy"}
    )
    strategy = _mapping(args.get("scoringStrategy"), path + ".scoringStrategy", where,
                        {"type", "resources", "requestedToCapacityRatio"})  # fmt: skip
    kind = strategy.get("type", "LeastAllocated")
    if kind not in _FIT_TYPES:
        raise where.error(path + ".scoringStrategy.type", f"must be one of {', '.join(_FIT_TYPES)} (got {kind!r})")
    resources = _resources(strategy.get("resources"), path + ".scoringStrategy.resources", where)
    shape: list[tuple[int, int]] = []
    if kind == "RequestedToCapacityRatio":
        at = path + ".scoringStrategy.requestedToCapacityRatio"
        ratio = _mapping(strategy.get("requestedToCapacityRatio"), at, where, {"shape"})
        for i, point in enumerate(_list(ratio.get("shape"), at + ".shape", where)):
            point = _mapping(point, f"{at}.shape[{i}]", where, {"utilization", "score"})
            shape.append((
                _int(point.get("utilization"), f"{at}.shape[{i}].utilization", where, 0, 100),
                _int(point.get("score"), f"{at}.shape[{i}].score", where, 0, 10),
            ))  # fmt: skip
        if not shape:
            raise where.error(at + ".shape", "required for RequestedToCapacityRatio")
        if any(b[0] <= a[0] for a, b in zip(shape, shape[1:], strict=False)):
            raise where.error(at + ".shape", "utilization must increase from point to point")
    return FitScoring(str(kind), resources, tuple(shape))


def _check_inert_args(name: str, args: Mapping[str, Any], path: str, where: _Where) -> None:
    if name == "PodTopologySpread" and _list(args.get("defaultConstraints"), path + ".defaultConstraints", where):
        raise where.error(path + ".defaultConstraints", "the simulator cannot model topology spread constraints")
    if name == "NodeAffinity" and args.get("addedAffinity"):
        raise where.error(path + ".addedAffinity", "the simulator cannot model a profile-wide node affinity")


def profile_from_config(data: Mapping[str, Any], source: str = "<config>", line: int = 1) -> Profile:
    """The default-scheduler profile of a KubeSchedulerConfiguration object."""
    where = _Where(source, line)
    data = _mapping(data, "", where, _TOP)
    if data.get("apiVersion") != API_VERSION:
        raise where.error("apiVersion", f"must be {API_VERSION} (got {data.get('apiVersion')!r})")
    if data.get("kind") != "KubeSchedulerConfiguration":
        raise where.error("kind", f"must be KubeSchedulerConfiguration (got {data.get('kind')!r})")
    if _list(data.get("extenders"), "extenders", where):
        raise where.error("extenders", "the simulator cannot model scheduler extenders (HTTP webhooks)")
    top_pct = _int(data.get("percentageOfNodesToScore", 0), "percentageOfNodesToScore", where, 0, 100)
    initial = _int(data.get("podInitialBackoffSeconds", 1), "podInitialBackoffSeconds", where, 1, 86400)
    maximum = _int(data.get("podMaxBackoffSeconds", 10), "podMaxBackoffSeconds", where, 1, 86400)
    if maximum < initial:
        raise where.error("podMaxBackoffSeconds", f"must be at least podInitialBackoffSeconds ({initial})")
    profiles = _list(data.get("profiles"), "profiles", where) or [{}]
    chosen: tuple[int, Mapping[str, Any]] | None = None
    names = []
    for i, item in enumerate(profiles):
        item = _mapping(item, f"profiles[{i}]", where, _PROFILE)
        name = item.get("schedulerName", "default-scheduler" if i == 0 else None)
        if not name:
            raise where.error(f"profiles[{i}].schedulerName", "required after the first profile")
        if name in names:
            raise where.error(f"profiles[{i}].schedulerName", f"duplicate {name!r}")
        names.append(name)
        if name == "default-scheduler":
            chosen = (i, item)
    if chosen is None:
        raise where.error("profiles", "no profile named default-scheduler: the simulated pods use that one")
    index, profile = chosen
    path = f"profiles[{index}]"
    plugins = _mapping(profile.get("plugins"), path + ".plugins", where, _POINTS)
    defaults = dict(DEFAULT_SCORE_WEIGHTS) | {n: 0 for n in FILTER_PLUGINS if n not in DEFAULT_SCORE_WEIGHTS}
    multi = _merge(defaults, plugins.get("multiPoint") or {}, path + ".plugins.multiPoint", where)
    filters = _merge({n: 0 for n in multi if n in FILTER_PLUGINS}, plugins.get("filter") or {},
                     path + ".plugins.filter", where)  # fmt: skip
    scores = _merge({n: w or 1 for n, w in multi.items() if n in SCORE_PLUGINS}, plugins.get("score") or {},
                    path + ".plugins.score", where)  # fmt: skip
    for point in _POINTS - {"multiPoint", "filter", "score"}:  # validated; nothing there changes a decision
        _merge({}, plugins.get(point) or {}, f"{path}.plugins.{point}", where)
    if "DynamicResources" not in filters:
        raise where.error(
            path + ".plugins", "DynamicResources must stay enabled: pods with claims cannot be placed without it"
        )
    result = replace(
        DEFAULT_PROFILE,
        filters=frozenset(n for n in filters if n in FILTER_PLUGINS),
        weights=tuple((n, scores[n] or 1) for n in SCORE_PLUGINS if n in scores),
        percentage_of_nodes_to_score=_int(
            profile.get("percentageOfNodesToScore", top_pct), path + ".percentageOfNodesToScore", where, 0, 100
        ),  # fmt: skip
        initial_backoff=float(initial),
        max_backoff=float(maximum),
        source=f"{source} (profile default-scheduler)",
    )
    seen: set[str] = set()
    for i, item in enumerate(_list(profile.get("pluginConfig"), path + ".pluginConfig", where)):
        at = f"{path}.pluginConfig[{i}]"
        item = _mapping(item, at, where, {"name", "args"})
        name = _plugin_name(item, at, where)
        if name in seen:
            raise where.error(at + ".name", f"duplicate pluginConfig for {name}")
        seen.add(name)
        args = _mapping(item.get("args"), at + ".args", where)
        if name == "NodeResourcesFit":
            result = replace(result, fit=_fit_args(args, at + ".args", where))
        elif name == "NodeResourcesBalancedAllocation":
            _mapping(args, at + ".args", where, {"kind", "apiVersion", "resources"})
            result = replace(
                result, balanced_resources=_resources(args.get("resources"), at + ".args.resources", where)
            )
        else:
            _check_inert_args(name, args, at + ".args", where)
    return result


def load_scheduler_config(path: str | Path) -> Profile:
    """The default-scheduler profile of the KubeSchedulerConfiguration in `path` (one YAML or JSON document)."""
    documents = read_documents(Path(path))
    if len(documents) != 1:
        raise InputError(f"expected one KubeSchedulerConfiguration document (found {len(documents)})", source=str(path))
    doc = documents[0]
    return profile_from_config(doc.data, doc.source, doc.line)
