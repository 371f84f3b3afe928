"""Sizing sources for right-sizing pods that carry no annotations: observed usage (`ObservedSizing`, looked up by the
pod's workload owner), a model-aware estimate for inference servers (`parse_container` → `estimate_memory`, from the
`MODELS` catalog), and the precedence that picks one (`resolve_sizing`: annotation > observed > model > default).

Pure computation: no HTTP, no Kubernetes client.
"""

from .estimate import CONCURRENCY, FIXED_OVERHEAD_BYTES, ModelEstimate, estimate_memory
from .inference import VLLM_DEFAULT_MAX_NUM_SEQS, VLLM_DEFAULT_UTILIZATION, ServerConfig, parse_container, parse_server
from .models import MODELS, ModelSpec, lookup_model
from .observed import ObservedSizing, SizingLookup, pod_owner
from .sources import SOURCES, SizingDecision, resolve_sizing

__all__ = [
    "CONCURRENCY",
    "FIXED_OVERHEAD_BYTES",
    "MODELS",
    "SOURCES",
    "VLLM_DEFAULT_MAX_NUM_SEQS",
    "VLLM_DEFAULT_UTILIZATION",
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
    "pod_owner",
    "resolve_sizing",
]
