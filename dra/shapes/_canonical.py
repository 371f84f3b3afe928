"""One ResourceSlice as the same slice on any node: node, pool and per-GPU identities taken out, a digest over the rest.

Two nodes of the same hardware publish slices that differ only in the node and pool names, the pool generation and
the GPUs' UUIDs; everything the allocator reads (device names, attributes such as `pcieRoot`, capacities, counters)
is the same. UUID-like attributes are renamed in order of appearance within the slice, so a MIG device's
`parentUUID` still equals its parent's `uuid`.
"""

from __future__ import annotations

import hashlib
import io
import pickle
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["IDENTITY_ATTRIBUTES", "CanonicalSlice", "SliceIdentity", "canonical_slice", "digest", "slice_identity"]

# Attribute names (the part after any domain) whose values name one physical device and nothing else.
IDENTITY_ATTRIBUTES = frozenset({"uuid", "parentUUID"})


@dataclass(frozen=True, slots=True)
class SliceIdentity:
    """Where a slice belongs: its pool, its generation and count, and the node it is local to (None: not local)."""

    driver: str
    pool: str
    generation: int
    count: int
    node: str | None


@dataclass(frozen=True, slots=True)
class CanonicalSlice:
    """A slice's spec without node, pool name or generation; `digest` is equal for equal specs."""

    digest: str
    spec: dict[str, Any]
    size: int  # bytes of its pickle: what bounds the copies kept (their Python objects take a few times more)


def slice_identity(raw: Mapping[str, Any]) -> SliceIdentity:
    spec = raw.get("spec") or {}
    pool = spec.get("pool") or {}
    node = spec.get("nodeName")
    return SliceIdentity(
        driver=str(spec.get("driver", "")),
        pool=str(pool.get("name", "")),
        generation=int(pool.get("generation", 0) or 0),
        count=int(pool.get("resourceSliceCount", 0) or 0),
        node=str(node) if node else None,
    )


def _rename(attributes: Mapping[str, Any], tokens: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, value in attributes.items():
        if name.rpartition("/")[2] in IDENTITY_ATTRIBUTES and isinstance(value, Mapping) and "string" in value:
            text = str(value["string"])
            out[name] = {"string": tokens.setdefault(text, f"id-{len(tokens)}")}
        else:
            out[name] = value
    return out


def _device(raw: Mapping[str, Any], tokens: dict[str, str], cluster: bool) -> dict[str, Any]:
    device = dict(raw)
    if "attributes" in device:
        device["attributes"] = _rename(device["attributes"] or {}, tokens)
    if cluster and ("nodeName" in device or "nodeSelector" in device):
        # Per-device node selection: the empty copy may use the device from any node (never refuse too much).
        device.pop("nodeName", None)
        device.pop("nodeSelector", None)
        device["allNodes"] = True
    return device


def canonical_slice(raw: Mapping[str, Any]) -> CanonicalSlice:
    """The node-independent spec of `raw` and its digest.

    A slice that is not local to one node (nodeSelector, allNodes, per-device selection) keeps its pool name and is
    made usable from every node: the copy over-approximates where its devices reach."""
    spec = dict(raw.get("spec") or {})
    cluster = not spec.get("nodeName")
    spec.pop("nodeName", None)
    pool = dict(spec.get("pool") or {})
    pool.pop("generation", None)
    if cluster:
        spec.pop("nodeSelector", None)
        if not spec.get("perDeviceNodeSelection"):
            spec["allNodes"] = True
    else:
        pool.pop("name", None)
    spec["pool"] = pool
    tokens: dict[str, str] = {}
    if spec.get("devices"):
        spec["devices"] = [_device(d, tokens, cluster) for d in spec["devices"]]
    text, size = _pickled_digest(spec)
    return CanonicalSlice(text, spec, size)


def digest(spec: Any) -> str:
    """A short stable digest of a plain JSON tree (dicts, lists, strings, numbers), key order included."""
    return _pickled_digest(spec)[0]


def _pickled_digest(spec: Any) -> tuple[str, int]:
    # Pickle without its memo (`fast`): bytes depend on values and key order only, not on which objects are shared,
    # and it is several times faster than sorted JSON. Key order counts: the API server and the driver write a fixed
    # order, so equal slices from one source fold together; a source that reorders keys only costs extra shapes.
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=5)
    pickler.fast = True
    pickler.dump(spec)  # plain JSON trees only: Kubernetes objects as dicts
    data = buffer.getbuffer()
    return hashlib.sha256(data).hexdigest()[:24], len(data)
