"""`gpudra plan`'s inputs: the candidate node pools, the prices and power per GPU model, and the target.

Every problem is an `InputError` naming the file, the field (`pools[1].max`, `gpus.H100-SXM5-80GB.gpu_hour`,
`--target`) and what was expected; an unknown GPU model lists the catalog's closest names.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from dra import gpus
from dra.errors import InputError
from dra.yamlio import load_yaml, read_source

from .cluster import ClusterSpec, cluster_from_spec, resolve_gpu

__all__ = ["HOURS_PER_MONTH", "Condition", "PoolCandidate", "PoolSet", "Price", "Target", "load_pools", "load_prices",
           "parse_target", "percentile"]  # fmt: skip

HOURS_PER_MONTH = 730.0  # 365 x 24 / 12
_PRICE_KEYS = ("gpu_hour", "watts")
_POOL_BOUNDS = ("min", "max")


@dataclass(frozen=True, slots=True)
class PoolCandidate:
    """One pool the plan may size: a node template (a cluster spec's pool fields) and its node-count bounds."""

    name: str
    template: tuple[tuple[str, Any], ...]  # the cluster spec's pool fields, `count` aside
    model: str  # the GPU model's catalog key
    gpus: int  # GPUs per node
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class PoolSet:
    """The candidate pools of a plan file, in the file's order."""

    pools: tuple[PoolCandidate, ...]
    source: str

    def cluster(self, counts: tuple[int, ...]) -> ClusterSpec:
        """The cluster with `counts[i]` nodes of pool i."""
        pools = [{**dict(p.template), "count": c} for p, c in zip(self.pools, counts, strict=True)]
        return cluster_from_spec({"name": "plan", "pools": pools}, None, Path(self.source))

    def gpus(self, counts: tuple[int, ...]) -> int:
        """GPUs in the cluster of `counts`."""
        return sum(p.gpus * c for p, c in zip(self.pools, counts, strict=True))


@dataclass(frozen=True, slots=True)
class Price:
    """What one GPU of a model costs an hour (the user's currency) and draws (watts)."""

    gpu_hour: float
    watts: float


def _close(name: str) -> str:
    known = sorted({m.key for m in (*gpus.trace_models(), *gpus.all_models())})
    close = difflib.get_close_matches(name.upper(), [k.upper() for k in known], n=3, cutoff=0.5)
    shown = [k for k in known if k.upper() in close]
    return f"did you mean {', '.join(shown)}?" if shown else f"known: {', '.join(known)}"


def _model(name: Any, field: str, source: str) -> str:
    """The catalog key of GPU model `name`; an unknown one is refused with the closest names."""
    try:
        return resolve_gpu(str(name)).key
    except InputError:
        raise InputError(f"{field}: unknown GPU model {name!r} ({_close(str(name))})", source=source) from None


def _read(path: Path) -> tuple[Any, yaml.Node | None]:
    try:
        text, _ = read_source(path)
        data, root = next(load_yaml(text, str(path)), (None, None))
    except InputError as exc:
        raise InputError(exc.message, source=str(path), line=exc.line) from exc
    return data, root


def _bound(pool: dict[str, Any], key: str, where: str, source: str) -> int:
    value = pool.get(key, 0 if key == "min" else None)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{where}.{key} must be a whole number of nodes >= 0 (got {value!r})", source=source)
    return value


def load_pools(path: str | Path) -> PoolSet:
    """A plan file (YAML or JSON): `pools:`, each a cluster spec pool (`simulator.cluster`) with `min`/`max` nodes
    in place of `count`."""
    path = Path(path)
    source = str(path)
    data, root = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("pools"), list) or not data["pools"]:
        raise InputError("a plan file needs a non-empty 'pools' list", source=source, line=1)
    if unknown := set(data) - {"pools"}:
        raise InputError(f"unknown keys {sorted(unknown)} (a plan file holds 'pools')", source=source)
    candidates = []
    for index, pool in enumerate(data["pools"]):
        where = f"pools[{index}]"
        if not isinstance(pool, dict):
            raise InputError(f"{where} must be a mapping (got {type(pool).__name__})", source=source)
        if "count" in pool:
            raise InputError(f"{where}.count: a plan sizes the pool, give min and max nodes instead", source=source)
        if not pool.get("gpu"):
            raise InputError(f"{where}.gpu: a candidate pool needs a GPU model", source=source)
        model = _model(pool["gpu"], f"{where}.gpu", source)
        low, high = _bound(pool, "min", where, source), _bound(pool, "max", where, source)
        if high < max(low, 1):
            raise InputError(f"{where}.max must be >= 1 and >= min ({low}) (got {high})", source=source)
        template = {k: v for k, v in pool.items() if k not in _POOL_BOUNDS}
        candidates.append((str(pool.get("name", f"pool-{index}")), template, model, low, high))
    names = [c[0] for c in candidates]
    if len(set(names)) != len(names):
        raise InputError(f"pools: names must be distinct (got {names})", source=source)
    specs = [{**t, "name": n, "count": 1} for n, t, _, _, _ in candidates]
    spec = cluster_from_spec({"name": "plan", "pools": specs}, root, path)  # every template checked once
    per_node = {node.pool: node.gpu_count for node in spec.nodes}
    pools = tuple(
        PoolCandidate(n, tuple(sorted({**t, "name": n}.items())), m, per_node[n], low, high)
        for n, t, m, low, high in candidates
    )
    return PoolSet(pools, source)


def load_prices(path: str | Path, models: tuple[str, ...]) -> tuple[str, dict[str, Price]]:
    """(currency, price per catalog key) from a prices file: `currency:` (default USD) and `gpus:` mapping each GPU
    model to `{gpu_hour, watts}`. Every model in `models` must be there: the GPU catalog has no TDP to default to."""
    path = Path(path)
    source = str(path)
    data, _ = _read(path)
    if not isinstance(data, dict) or not isinstance(data.get("gpus"), dict):
        raise InputError("a prices file needs a 'gpus' mapping: MODEL: {gpu_hour: N, watts: N}", source=source)
    if unknown := set(data) - {"currency", "gpus"}:
        raise InputError(f"unknown keys {sorted(unknown)} (expected currency, gpus)", source=source)
    prices: dict[str, Price] = {}
    for name, entry in data["gpus"].items():
        key = _model(name, f"gpus.{name}", source)
        if not isinstance(entry, dict):
            raise InputError(f"gpus.{name} must be a mapping {{gpu_hour: N, watts: N}} (got {entry!r})", source=source)
        for typo in sorted(set(entry) - set(_PRICE_KEYS)):
            hint = difflib.get_close_matches(str(typo), _PRICE_KEYS, n=1)
            said = f"did you mean {hint[0]!r}?" if hint else f"expected {', '.join(_PRICE_KEYS)}"
            raise InputError(f"gpus.{name}: unknown key {typo!r} ({said})", source=source)
        values = {}
        for field in _PRICE_KEYS:
            value = entry.get(field)
            if field not in entry:
                why = " (the GPU catalog has no TDP to default to)" if field == "watts" else ""
                raise InputError(f"gpus.{name}.{field} is missing{why}", source=source)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise InputError(f"gpus.{name}.{field} must be a number >= 0 (got {value!r})", source=source)
            values[field] = float(value)
        prices[key] = Price(values["gpu_hour"], values["watts"])
    for model in models:
        if model not in prices:
            raise InputError(f"gpus.{model} is missing: the plan's pools use it", source=source)
    return str(data.get("currency", "USD")), prices


@dataclass(frozen=True, slots=True)
class Condition:
    """One clause of a target: `p<N>-pending` <= seconds (grows easier with the cluster), `allocation` >= ratio
    (grows harder: checked at the smallest size the pending clauses allow)."""

    metric: str  # "pending" | "allocation"
    value: float  # seconds, or a ratio in [0, 1]
    percentile: float = 0.0  # pending: which percentile of the GPU pods' waits


@dataclass(frozen=True, slots=True)
class Target:
    """What a cluster must achieve: every clause of `text`."""

    text: str
    conditions: tuple[Condition, ...]


_PENDING = re.compile(r"^p(\d{1,3}(?:\.\d+)?)-pending\s*<=\s*(\d+(?:\.\d+)?)\s*([smh]?)$")
_ALLOCATION = re.compile(r"^allocation\s*>=\s*(\d*\.?\d+)$")
_UNITS = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_target(text: str) -> Target:
    """`p95-pending<=10m` (s, m, h; any percentile), `placed` (every GPU pod placed the moment it arrives, i.e.
    `p100-pending<=0`), `allocation>=0.6`; clauses joined by commas, e.g. `p95-pending<=10m,allocation>=0.5`."""
    conditions = []
    for clause in (c.strip().lower() for c in text.split(",")):
        if clause == "placed":
            conditions.append(Condition("pending", 0.0, 100.0))
        elif found := _PENDING.match(clause):
            percentile = float(found[1])
            if not 0 < percentile <= 100:
                raise InputError(f"--target: percentile must be in (0, 100] (got {clause!r})")
            conditions.append(Condition("pending", float(found[2]) * _UNITS[found[3]], percentile))
        elif found := _ALLOCATION.match(clause):
            value = float(found[1])
            if not 0 < value <= 1:
                raise InputError(f"--target: allocation is a ratio in (0, 1] (got {clause!r})")
            conditions.append(Condition("allocation", value))
        else:
            raise InputError(
                f"--target: cannot read {clause!r} (expected p95-pending<=10m, placed or allocation>=0.6, "
                "joined by commas)"
            )
    if not any(c.metric == "pending" for c in conditions):
        raise InputError(
            "--target: allocation falls as the cluster grows, so alone it is met by the smallest cluster; give it "
            "with a pending clause (e.g. p95-pending<=10m,allocation>=0.6) or placed"
        )
    return Target(text, tuple(conditions))


def percentile(values: list[float], pct: float) -> float:
    """The nearest-rank percentile of `values` (inf counts as a pod never placed); 0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(0, math.ceil(pct / 100 * len(ordered)) - 1)]
