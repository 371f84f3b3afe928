"""Sizing sources for right-sizing pods that carry no annotations: observed usage (`ObservedSizing`, looked up by the
pod's workload owner), a model-aware estimate for inference servers, and the precedence that picks one.

Pure computation: no HTTP, no Kubernetes client.
"""

from .observed import ObservedSizing, SizingLookup, pod_owner

__all__ = ["ObservedSizing", "SizingLookup", "pod_owner"]
