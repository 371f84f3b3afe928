"""Which sizing source wins for one container: annotation > observed > model > default.

- annotation: the pod's `gpudra.io/vram` (or, without it, the container's HAMi `nvidia.com/gpumem`): the owner said
  so, and the policy validates it.
- observed: a recommendation from observed framebuffer use (`ObservedSizing`), when it has samples behind it.
- model: the model-aware estimate of an inference server (`ModelEstimate`); for vLLM the device memory it needs
  (`estimate / gpu_memory_utilization`), since it pre-allocates that fraction of the whole device.
- default: nothing above; `vram_bytes` is the namespace / cluster default if one is given, else None (the shipped
  policies then give a whole GPU).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .estimate import ModelEstimate
from .observed import ObservedSizing

__all__ = ["MAX_MEMORY_BYTES", "SOURCES", "SizingDecision", "resolve_sizing"]

SOURCES = ("annotation", "observed", "model", "default")
# The most memory a size may name: the largest whole MiB in an int64, the type of a Kubernetes quantity's Value() and
# of CEL's `vramBytes` (rounded up to whole MiB). Beyond it a size is unusable, not merely large.
MAX_MEMORY_BYTES = (2**63 - 1) // 2**20 * 2**20


@dataclass(frozen=True, slots=True)
class SizingDecision:
    """The winning source's memory per device (None: none known), with the evidence and why it won."""

    vram_bytes: int | None
    source: str
    samples: int = 0
    window_seconds: int = 0
    reason: str = ""
    # The model estimate, whichever source won (policies warn when the winner leaves a vLLM server too little).
    model_bytes: int = 0
    min_device_bytes: int = 0
    memory_utilization: float = 0.0  # > 0 for servers that pre-allocate a fraction of the device (vLLM)
    server: str = ""
    model: str = ""
    pressure: bool = False
    # What reading the container could not take in (`ContainerReading.warnings`), surfaced with the decision.
    warnings: tuple[str, ...] = ()


def _gb(value: int) -> str:
    if abs(value) > MAX_MEMORY_BYTES:  # an int beyond a float's range must not raise OverflowError here
        return f"{value // 10**9} GB"
    return f"{value / 1e9:.1f} GB"


def _need(estimate: ModelEstimate) -> int:
    return max(estimate.min_device_bytes or 0, estimate.bytes_per_device or 0)


def resolve_sizing(
    annotation_vram: int | None,
    observed: ObservedSizing | None,
    model_estimate: ModelEstimate | None,
    default: int | None,
    *,
    annotation_label: str = "annotation gpudra.io/vram",
) -> SizingDecision:
    """Apply the precedence; the reason names the winner, why, and what the other sources said."""
    said: list[str] = []
    observed_ok = observed is not None and observed.samples > 0 and 0 < observed.vram_bytes <= MAX_MEMORY_BYTES
    if observed is not None:
        ref = f" ({observed.source_ref})" if observed.source_ref else ""
        if observed.vram_bytes > MAX_MEMORY_BYTES:
            said.append(f"observed: a recommendation beyond {MAX_MEMORY_BYTES} bytes{ref}, ignored")
        elif observed_ok:
            said.append(
                f"observed {_gb(observed.vram_bytes)} (peak {_gb(observed.peak_bytes)}, {observed.samples} samples "
                f"over {observed.window_seconds}s{', memory pressure' if observed.pressure else ''}){ref}"
            )
        else:
            said.append(f"observed: a recommendation without samples{ref}, ignored")
    else:
        said.append("observed: no recommendation")
    # What every decision carries whichever source wins: the model estimate and the pressure flag.
    base = SizingDecision(None, "default", pressure=bool(observed is not None and observed.pressure))
    need = 0
    if model_estimate is None:
        said.append("model: not a recognised inference server")
    elif model_estimate.known and _need(model_estimate) > MAX_MEMORY_BYTES:
        # e.g. --max-model-len 1e15: no device holds it, and no quantity of bytes could name it.
        said.append(f"model: an estimate beyond {MAX_MEMORY_BYTES} bytes ({model_estimate.server} settings), ignored")
        base = replace(base, server=model_estimate.server, model=model_estimate.model)
    elif model_estimate.known:
        assert model_estimate.bytes_per_device is not None
        need = model_estimate.min_device_bytes or model_estimate.bytes_per_device
        said.append(f"model: {model_estimate.explanation}" + (" (uncertain)" if model_estimate.uncertain else ""))
        base = replace(
            base,
            model_bytes=model_estimate.bytes_per_device,
            min_device_bytes=model_estimate.min_device_bytes or 0,
            memory_utilization=model_estimate.utilization if model_estimate.preallocates else 0.0,
            server=model_estimate.server,
            model=model_estimate.model,
        )
    else:
        said.append(f"model: no estimate ({model_estimate.explanation})")
        base = replace(base, server=model_estimate.server, model=model_estimate.model)
    others = "; ".join(said)
    if annotation_vram is not None:
        reason = f"{annotation_label} ({_gb(annotation_vram)}) wins; {others}"
        return replace(base, vram_bytes=annotation_vram, source="annotation", reason=reason)
    if observed_ok:
        assert observed is not None
        return replace(
            base,
            vram_bytes=observed.vram_bytes,
            source="observed",
            samples=observed.samples,
            window_seconds=observed.window_seconds,
            reason=f"observed usage wins (no annotation); {others}",
        )
    if need:
        reason = f"model estimate wins (no annotation, no observed usage); {others}"
        return replace(base, vram_bytes=need, source="model", reason=reason)
    fallback = f"default {_gb(default)}" if default is not None else "default (no size: a whole GPU)"
    reason = f"{fallback}: no annotation, no observed usage, no model estimate; {others}"
    return replace(base, vram_bytes=default, reason=reason)
