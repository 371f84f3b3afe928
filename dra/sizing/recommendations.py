"""GPUSizingRecommendation objects read into per-container `ObservedSizing`: what the recommender writes, the
webhook's cache and the simulator read. Pure: the API calls that list and watch them live elsewhere."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dra.durations import parse_go_duration
from dra.errors import QuantityError
from dra.quantity import Quantity

from .observed import ObservedSizing

__all__ = ["GROUP", "KIND", "PLURAL", "VERSION", "OwnerKey", "ParsedRecommendation", "parse_recommendation"]

GROUP, VERSION, PLURAL, KIND = "gpudra.io", "v1alpha1", "gpusizingrecommendations", "GPUSizingRecommendation"

OwnerKey = tuple[str, str, str]  # (namespace, owner kind, owner name)


@dataclass(frozen=True, slots=True)
class ParsedRecommendation:
    """One object as the cache keeps it: the owner it targets, its usable containers, and what was skipped."""

    object_ref: tuple[str, str]  # (namespace, metadata.name)
    owner: OwnerKey
    canonical: bool  # metadata.name == <kind lower>-<name>
    resource_version: str
    containers: Mapping[str, ObservedSizing]
    skipped: tuple[tuple[str, str], ...]  # (metric reason, log detail) per skipped container entry


class _Bad(ValueError):
    """A containers[] entry that cannot be used; `reason` is its metric label."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _bytes(value: Any, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise _Bad("bad_quantity", f"{field} {value!r} is not a quantity")
    try:
        amount = Quantity.coerce(value).value
    except QuantityError as exc:
        raise _Bad("bad_quantity", f"{field} {value!r} is not a quantity") from exc
    if amount < 0:
        raise _Bad("bad_quantity", f"{field} {value!r} is negative")
    return math.ceil(amount)


def _container(entry: Any, ref: str, updated: str) -> tuple[str, ObservedSizing]:
    if not isinstance(entry, Mapping):
        raise _Bad("malformed", "a containers[] entry is not an object")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise _Bad("missing_field", "a containers[] entry has no name")
    for required in ("vram", "peak", "samples", "window"):
        if required not in entry:
            raise _Bad("missing_field", f"container {name!r}: {required} is missing")
    vram = _bytes(entry["vram"], f"container {name!r}: vram")
    peak = _bytes(entry["peak"], f"container {name!r}: peak")
    if vram <= 0:
        raise _Bad("bad_quantity", f"container {name!r}: vram {entry['vram']!r} is not positive")
    if vram < peak:
        raise _Bad("vram_below_peak", f"container {name!r}: vram {entry['vram']!r} is below peak {entry['peak']!r}")
    samples = entry["samples"]
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 0:
        raise _Bad("bad_samples", f"container {name!r}: samples {samples!r} is not a whole number >= 0")
    try:
        window = parse_go_duration(entry["window"])
    except ValueError as exc:
        raise _Bad("bad_window", f"container {name!r}: window {exc}") from exc
    if window < 0:
        raise _Bad("bad_window", f"container {name!r}: window {entry['window']!r} is negative")
    pressure = entry.get("pressure", False)
    if not isinstance(pressure, bool):
        raise _Bad("malformed", f"container {name!r}: pressure {pressure!r} is not a boolean")
    return name, ObservedSizing(
        vram_bytes=vram,
        peak_bytes=peak,
        samples=samples,
        window_seconds=int(window),
        updated=updated,
        pressure=pressure,
        source_ref=f"{KIND} {ref}",
    )


def parse_recommendation(obj: Any) -> ParsedRecommendation:
    """An API object -> `ParsedRecommendation`. ValueError (naming the object) when the object as a whole is unusable
    (no namespace, name or targetRef); bad container entries are skipped and listed in `skipped`."""
    if not isinstance(obj, Mapping):
        raise ValueError("not an object")
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, Mapping) else {}
    namespace, name = meta.get("namespace"), meta.get("name")
    if not isinstance(namespace, str) or not namespace or not isinstance(name, str) or not name:
        raise ValueError("metadata.namespace or metadata.name is missing")
    ref = f"{namespace}/{name}"
    spec = obj.get("spec")
    target = spec.get("targetRef") if isinstance(spec, Mapping) else None
    kind = target.get("kind") if isinstance(target, Mapping) else None
    owner = target.get("name") if isinstance(target, Mapping) else None
    if not isinstance(kind, str) or not kind or not isinstance(owner, str) or not owner:
        raise ValueError(f"{KIND} {ref}: spec.targetRef.kind and .name are required")
    status = obj.get("status")
    status = status if isinstance(status, Mapping) else {}
    updated = status.get("lastUpdated")
    updated = updated if isinstance(updated, str) else ""
    entries = status.get("containers")
    containers: dict[str, ObservedSizing] = {}
    skipped: list[tuple[str, str]] = []
    if entries is not None and not isinstance(entries, list):
        skipped.append(("malformed", f"{KIND} {ref}: status.containers is not a list"))
        entries = []
    for entry in entries or ():
        try:
            cname, sizing = _container(entry, ref, updated)
        except _Bad as exc:
            skipped.append((exc.reason, f"{KIND} {ref}: {exc}"))
            continue
        if cname in containers:
            skipped.append(("duplicate_container", f"{KIND} {ref}: container {cname!r} listed twice (first kept)"))
            continue
        containers[cname] = sizing
    rv = meta.get("resourceVersion")
    return ParsedRecommendation(
        object_ref=(namespace, name),
        owner=(namespace, kind, owner),
        canonical=name == f"{kind.lower()}-{owner}",
        resource_version=rv if isinstance(rv, str) else "",
        containers=containers,
        skipped=tuple(skipped),
    )
