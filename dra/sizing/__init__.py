"""Sizing sources for right-sizing pods that carry no annotations: observed usage (`ObservedSizing`, looked up by the
pod's workload owner), a model-aware estimate for inference servers (`parse_container` → `estimate_memory`, from the
`MODELS` catalog), and the precedence that picks one (`resolve_sizing`: annotation > observed > model > default).
Reading a container is bounded (`BUDGET` characters; `read_container` warns when it cuts).

Pure computation: no HTTP, no Kubernetes client.
"""

from .estimate import CONCURRENCY, FIXED_OVERHEAD_BYTES, ModelEstimate, estimate_memory
from .inference import (
    BUDGET,
    VLLM_DEFAULT_MAX_NUM_SEQS,
    VLLM_DEFAULT_UTILIZATION,
    ContainerReading,
    ServerConfig,
    parse_container,
    parse_server,
    read_container,
    read_server,
)
from .models import MODELS, ModelSpec, lookup_model
from .observed import ObservedSizing, SizingLookup
from .sources import MAX_MEMORY_BYTES, SOURCES, SizingDecision, resolve_sizing

__all__ = [
    "BUDGET",
    "CONCURRENCY",
    "FIXED_OVERHEAD_BYTES",
    "MAX_MEMORY_BYTES",
    "MODELS",
    "SOURCES",
    "VLLM_DEFAULT_MAX_NUM_SEQS",
    "VLLM_DEFAULT_UTILIZATION",
    "ContainerReading",
    "ModelEstimate",
    "ModelSpec",
    "ObservedSizing",
    "ServerConfig",
    "SizingDecision",
    "SizingLookup",
    "estimate_memory",
    "lookup_model",
    "parse_container",
    "parse_server",
    "read_container",
    "read_server",
    "resolve_sizing",
]
