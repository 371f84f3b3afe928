"""A cluster's devices as distinct node shapes: what the allocator needs to allocate on an empty copy of a node.

The public face of `dra.shapes`. `fold_shapes(slices, classes)` folds a list at once; `ShapeFolder` folds a watch
stream one event at a time (the webhook's cache) and hands out immutable `DeviceShapes` snapshots, each with a
`generation` that changes only when the set of shapes or the classes do.
"""

from __future__ import annotations

from dra.shapes._canonical import IDENTITY_ATTRIBUTES
from dra.shapes._fold import DEFAULT_MAX_SHAPES, ShapeFolder, fold_shapes
from dra.shapes._shape import DeviceShape, DeviceShapes, ShapeEvidence

__all__ = [
    "DEFAULT_MAX_SHAPES",
    "DeviceShape",
    "DeviceShapes",
    "IDENTITY_ATTRIBUTES",
    "ShapeEvidence",
    "ShapeFolder",
    "fold_shapes",
]
