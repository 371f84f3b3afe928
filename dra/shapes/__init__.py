"""A cluster's devices as distinct node shapes, and whether a claim can ever be allocated on one of them.

The public face of `dra.shapes`. `fold_shapes(slices, classes)` folds a list at once; `ShapeFolder` folds a watch
stream one event at a time (the webhook's cache) and hands out immutable `DeviceShapes` snapshots whose `generation`
changes only when the set of shapes or the classes do. `SatisfiabilityChecker.check(claim, shapes)` says which
alternatives an empty copy of some shape can satisfy; `explain` turns a claim with none left into its evidence.
"""

from __future__ import annotations

from dra.shapes._canonical import IDENTITY_ATTRIBUTES
from dra.shapes._catalog import catalog_shapes, catalog_slices, dump_shapes
from dra.shapes._fold import DEFAULT_MAX_BYTES, DEFAULT_MAX_SHAPES, DEFAULT_MAX_TRACKED, ShapeFolder, fold_shapes
from dra.shapes._reason import MemoryBounds, RequestReason, SizeEvidence, Unsatisfied, explain, memory_bounds
from dra.shapes._satisfiability import (
    Alternative,
    Closest,
    RequestVerdict,
    SatisfiabilityChecker,
    Verdict,
    claim_devices,
    prune,
)
from dra.shapes._shape import DeviceShape, DeviceShapes, ShapeEvidence

__all__ = [
    "Alternative",
    "Closest",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_SHAPES",
    "DEFAULT_MAX_TRACKED",
    "DeviceShape",
    "DeviceShapes",
    "IDENTITY_ATTRIBUTES",
    "MemoryBounds",
    "RequestReason",
    "RequestVerdict",
    "SatisfiabilityChecker",
    "ShapeEvidence",
    "ShapeFolder",
    "SizeEvidence",
    "Unsatisfied",
    "Verdict",
    "catalog_shapes",
    "catalog_slices",
    "claim_devices",
    "dump_shapes",
    "explain",
    "fold_shapes",
    "memory_bounds",
    "prune",
]
