"""`ShapeFolder`: ResourceSlices and DeviceClasses, added and removed one at a time, folded into distinct shapes.

A node's shape is the set of its complete pools, each pool the digests of its slices at the pool's newest
generation (`_canonical`). State per slice and per node is a digest or a key; a slice's canonical spec is stored
once per distinct digest (bounded by `max_slices` and `max_bytes`), so 5,000 nodes of 20 shapes cost 20 shapes'
slices. Shapes past `max_shapes` are not kept and the snapshot says so (`DeviceShapes.limit`).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from dra.shapes._canonical import SliceIdentity, canonical_slice, digest, slice_identity
from dra.shapes._shape import DeviceShape, DeviceShapes, shape_evidence

__all__ = ["DEFAULT_MAX_BYTES", "DEFAULT_MAX_SHAPES", "DEFAULT_MAX_TRACKED", "ShapeFolder", "fold_shapes"]

DEFAULT_MAX_SHAPES = 256
DEFAULT_MAX_BYTES = 32 << 20  # pickled bytes of the distinct slices kept: about 120 dynamic-MIG HGX H100 shapes
DEFAULT_MAX_TRACKED = 200_000  # ResourceSlices followed: a 5,000-node dynamic-MIG cluster publishes 45,000
_SLICES_PER_SHAPE = 64  # the default bound on distinct canonical slices: max_shapes x this
_serial = itertools.count(1)

PoolId = tuple[str, str]  # driver, pool name
PoolKey = tuple[str, int, tuple[str, ...]]  # driver, resourceSliceCount, sorted slice digests
NodeKey = tuple[PoolKey, ...]


# What `adopt_slices` moves: everything that follows the slices (the classes, generation and shapes built stay).
_SLICE_STATE = (
    "_slices",
    "_refs",
    "_canon",
    "_canon_size",
    "_canon_bytes",
    "_pools",
    "_node_pools",
    "_node_keys",
    "_key_nodes",
    "_pending",
    "_cluster",
    "_untracked",
)


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


class ShapeFolder:
    """Incremental fold of slices and classes into `DeviceShapes`; `shapes()` is memoised until the next change."""

    def __init__(
        self,
        *,
        max_shapes: int = DEFAULT_MAX_SHAPES,
        max_slices: int | None = None,
        max_tracked: int = DEFAULT_MAX_TRACKED,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        if max_shapes < 1:
            raise ValueError(f"max_shapes must be >= 1 (got {max_shapes})")
        self.max_shapes = max_shapes
        self.max_slices = max_slices if max_slices is not None else max_shapes * _SLICES_PER_SHAPE
        self.max_tracked = max_tracked
        self.max_bytes = max_bytes
        self._canon_bytes = 0
        self._canon_size: dict[str, int] = {}
        self._serial = next(_serial)
        self._untracked = 0  # slices ignored past `max_tracked` since the last full list
        self._cluster: set[PoolId] = set()  # pools with a slice local to no node
        self._slices: dict[str, tuple[SliceIdentity, str]] = {}
        self._refs: dict[str, int] = {}
        self._canon: dict[str, dict[str, Any]] = {}
        self._pools: dict[PoolId, set[str]] = {}
        self._node_pools: dict[str, set[PoolId]] = {}
        self._node_keys: dict[str, NodeKey] = {}
        self._key_nodes: dict[NodeKey, dict[str, None]] = {}
        self._pending: set[PoolId] = set()
        self._classes: dict[str, dict[str, Any]] = {}
        self._classes_digest = digest([])
        self._built: dict[NodeKey, DeviceShape] = {}
        self._generation = 0
        self._signature: Any = None
        self._snapshot: DeviceShapes | None = None

    # -- slices ---------------------------------------------------------------------------------------------
    def replace_slices(self, slices: Iterable[Mapping[str, Any]]) -> None:
        """Start over from a full list (a relist); the generation moves only if the shapes differ."""
        fresh = self.empty()
        for raw in slices:
            fresh._put(raw)
        self.adopt_slices(fresh)

    def empty(self) -> ShapeFolder:
        """A folder with this one's bounds and nothing folded (where a relist is folded off to the side)."""
        return ShapeFolder(
            max_shapes=self.max_shapes,
            max_slices=self.max_slices,
            max_tracked=self.max_tracked,
            max_bytes=self.max_bytes,
        )

    def adopt_slices(self, other: ShapeFolder) -> None:
        """Take `other`'s slices as this folder's (a relist folded off to the side, then swapped in at once); the
        classes, the generation and the shapes already built stay this folder's."""
        for name in _SLICE_STATE:
            setattr(self, name, getattr(other, name))
        self._snapshot = None

    def apply_slice(self, raw: Mapping[str, Any]) -> None:
        """A slice added or modified."""
        self._put(raw)
        self._snapshot = None

    def remove_slice(self, name: str) -> None:
        """A slice deleted (unknown names are ignored)."""
        self._forget(name)
        self._snapshot = None

    def _put(self, raw: Mapping[str, Any]) -> None:
        name = _name(raw)
        if name in self._slices:
            self._forget(name)
        elif len(self._slices) >= self.max_tracked:
            self._untracked += 1
            return
        ident = slice_identity(raw)
        canon = canonical_slice(raw)
        self._slices[name] = (ident, canon.digest)
        self._refs[canon.digest] = self._refs.get(canon.digest, 0) + 1
        if (
            canon.digest not in self._canon
            and len(self._canon) < self.max_slices
            and self._canon_bytes + canon.size <= self.max_bytes
        ):
            self._canon[canon.digest] = canon.spec
            self._canon_size[canon.digest] = canon.size
            self._canon_bytes += canon.size
        pool = (ident.driver, ident.pool)
        self._pools.setdefault(pool, set()).add(name)
        if ident.node is not None:
            self._node_pools.setdefault(ident.node, set()).add(pool)
        self._refresh(pool)

    def _forget(self, name: str) -> None:
        entry = self._slices.pop(name, None)
        if entry is None:
            return
        ident, digest = entry
        refs = self._refs[digest] - 1
        if refs:
            self._refs[digest] = refs
        else:
            del self._refs[digest]
            if self._canon.pop(digest, None) is not None:
                self._canon_bytes -= self._canon_size.pop(digest)
        pool = (ident.driver, ident.pool)
        members = self._pools.get(pool)
        if members is not None:
            members.discard(name)
            if not members:
                del self._pools[pool]
        self._refresh(pool, ident.node)

    def _newest(self, pool: PoolId) -> list[tuple[SliceIdentity, str]]:
        entries = [self._slices[n] for n in self._pools.get(pool, ())]
        if not entries:
            return []
        newest = max(i.generation for i, _ in entries)
        return [(i, d) for i, d in entries if i.generation == newest]

    def _pool_key(self, pool: PoolId) -> PoolKey | None:
        """The pool's key when complete at its newest generation (what the allocator would use), else None."""
        entries = self._newest(pool)
        if not entries:
            self._pending.discard(pool)
            return None
        count = entries[0][0].count
        if len(entries) != count:
            self._pending.add(pool)
            return None
        self._pending.discard(pool)
        return (pool[0], count, tuple(sorted(d for _, d in entries)))

    def _refresh(self, pool: PoolId, also: str | None = None) -> None:
        idents = [self._slices[n][0] for n in self._pools.get(pool, ())]
        nodes = {i.node for i in idents if i.node is not None}
        if any(i.node is None for i in idents):
            self._cluster.add(pool)
        else:
            self._cluster.discard(pool)
        self._pool_key(pool)  # keeps `_pending` right for pools local to no node too
        if also is not None:
            nodes.add(also)
        for node in nodes:
            self._refresh_node(node)

    def _refresh_node(self, node: str) -> None:
        pools = self._node_pools.get(node, set())
        live = {p for p in pools if p in self._pools and any(self._slices[n][0].node == node for n in self._pools[p])}
        if live:
            self._node_pools[node] = live
        else:
            self._node_pools.pop(node, None)
        keys = [self._pool_key(p) for p in live]
        key: NodeKey = tuple(sorted(k for k in keys if k is not None))
        old = self._node_keys.get(node)
        if old == key:
            return
        if old is not None:
            members = self._key_nodes[old]
            del members[node]
            if not members:
                del self._key_nodes[old]
                self._built.pop(old, None)
            del self._node_keys[node]
        if key:
            self._node_keys[node] = key
            self._key_nodes.setdefault(key, {})[node] = None

    # -- classes --------------------------------------------------------------------------------------------
    def replace_classes(self, classes: Iterable[Mapping[str, Any]]) -> None:
        self._classes = {_name(c): dict(c) for c in classes}
        self._classes_changed()

    def apply_class(self, raw: Mapping[str, Any]) -> None:
        self._classes[_name(raw)] = dict(raw)
        self._classes_changed()

    def remove_class(self, name: str) -> None:
        self._classes.pop(name, None)
        self._classes_changed()

    def _classes_changed(self) -> None:
        # What the allocator reads of a class: its name, selectors and config (not its metadata's versions).
        self._classes_digest = digest([(n, self._classes[n].get("spec")) for n in sorted(self._classes)])
        self._snapshot = None

    # -- the snapshot ---------------------------------------------------------------------------------------
    def shapes(self) -> DeviceShapes:
        """The current shapes (the same object until something changes)."""
        if self._snapshot is None:
            self._snapshot = self._build()
        return self._snapshot

    def _shape(self, key: NodeKey, nodes: dict[str, None]) -> DeviceShape:
        example = next(iter(nodes))
        built = self._built.get(key)
        if built is not None:
            return (
                built
                if built.nodes == len(nodes) and built.example == example
                else replace(built, nodes=len(nodes), example=example)
            )
        digest = hashlib.sha256(repr(key).encode()).hexdigest()[:16]
        node_name = f"shape-{digest}"
        slices: list[dict[str, Any]] = []
        for j, (driver, count, digests) in enumerate(key):
            pool = f"{node_name}-{j}" if j else node_name
            for k, d in enumerate(digests):
                spec = dict(self._canon[d])
                spec["nodeName"] = node_name
                spec["pool"] = {"name": pool, "generation": 1, "resourceSliceCount": count}
                slices.append(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceSlice",
                        "metadata": {"name": f"{pool}-{driver}-{k}"},
                        "spec": spec,
                    }
                )
        shape = DeviceShape(digest, node_name, tuple(slices), shape_evidence(slices), len(nodes), example)
        self._built[key] = shape
        return shape

    def _cluster_slices(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for pool in sorted(self._cluster):
            members = self._pools.get(pool, set())
            if any(self._slices[n][0].node is not None for n in members) or self._pool_key(pool) is None:
                continue
            for name in sorted(members):
                ident, digest = self._slices[name]
                spec = self._canon.get(digest)
                if spec is None or ident.generation != max(self._slices[n][0].generation for n in members):
                    continue
                spec = dict(spec)
                spec["pool"] = {**spec["pool"], "generation": 1}
                out.append(
                    {
                        "apiVersion": "resource.k8s.io/v1",
                        "kind": "ResourceSlice",
                        "metadata": {"name": name},
                        "spec": spec,
                    }
                )
        return out

    def _build(self) -> DeviceShapes:
        kept: list[DeviceShape] = []
        overflow = 0
        example = ""
        for key, nodes in self._key_nodes.items():
            storable = all(d in self._canon for _, _, digests in key for d in digests)
            if len(kept) >= self.max_shapes or not storable:
                overflow += len(nodes)
                example = example or next(iter(nodes))
                continue
            kept.append(self._shape(key, nodes))
        for stale in [k for k in self._built if k not in self._key_nodes]:  # after a relist swapped the slices in
            del self._built[stale]
        cluster = self._cluster_slices()
        classes = tuple(self._classes[n] for n in sorted(self._classes))
        limit = None
        if overflow:
            limit = (
                f"more distinct device shapes than the cap of {self.max_shapes} (or than {self.max_slices} distinct "
                f"slices, {self.max_bytes} bytes of them): {overflow} node(s) not folded, e.g. {example}"
            )
        if self._untracked:
            limit = (f"{limit}; " if limit else "") + (
                f"more ResourceSlices than the bound of {self.max_tracked}: {self._untracked} not folded"
            )
        signature = (
            tuple(s.key for s in kept),
            self._classes_digest,
            digest([s["spec"] for s in cluster]),
            limit is None,
        )
        if signature != self._signature:
            self._signature = signature
            self._generation += 1
        return DeviceShapes(
            generation=self._generation,
            token=f"{self._serial}:{self._generation}",
            shapes=tuple(kept),
            classes=classes,
            cluster_slices=tuple(cluster),
            nodes=sum(s.nodes for s in kept),
            pending=len(self._pending),
            overflow=overflow,
            limit=limit,
        )


def fold_shapes(
    slices: Iterable[Mapping[str, Any]],
    classes: Iterable[Mapping[str, Any]] = (),
    *,
    max_shapes: int = DEFAULT_MAX_SHAPES,
) -> DeviceShapes:
    """The distinct device shapes of a list of ResourceSlices (a cluster dump, the catalog's slices)."""
    folder = ShapeFolder(max_shapes=max_shapes)
    folder.replace_slices(slices)
    folder.replace_classes(classes)
    return folder.shapes()
