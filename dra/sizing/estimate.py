"""The model-aware memory estimate of an inference server: bytes per device, and what the device must have.

    weights   = params x bytes per parameter / (tensor x pipeline parallel)
                (4-bit methods: 4.25 bits for the quantized matrices -- group-wise scales included -- and the token
                embedding / output head kept 16-bit, as AWQ and GPTQ checkpoints keep them; 8-bit methods: 1 byte)
    kv cache  = 2 x layers x kv_heads x head_dim x kv bytes x tokens / (tensor x pipeline parallel)
                tokens = max_model_len x CONCURRENCY (1): vLLM refuses to start unless one sequence of
                max_model_len tokens fits in its KV cache, so that is the minimum; more concurrent sequences only
                add throughput (vLLM preempts beyond what fits, up to --max-num-seqs). TGI: --max-batch-total-tokens
                when set (its KV budget), else --max-total-tokens, else the model's context. TEI: no KV cache.
    overhead  = 1 GiB (CUDA context, cuBLAS workspaces, CUDA graphs) + 10 % of the weights (the activation peak of
                the start-up profile run); TEI: 1 GiB + max_batch_tokens x max(intermediate, 4 x hidden) x 2 x bytes.

vLLM pre-allocates `gpu_memory_utilization` (default 0.9) x the device's *total* memory and must fit weights,
activations and the KV cache inside it, so the device needs `estimate / utilization` (`min_device_bytes`); a shared
GPU's capacity request does not change what vLLM takes. These are round, documented figures, not measurements: the
estimate says so (`uncertain`) where a setting is not modelled, and an unknown model gets no estimate at all.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from .inference import ServerConfig
from .models import ModelSpec, lookup_model

__all__ = ["CONCURRENCY", "FIXED_OVERHEAD_BYTES", "ModelEstimate", "estimate_memory"]

GiB = 2**30
FIXED_OVERHEAD_BYTES = 1 * GiB
ACTIVATION_FRACTION = 0.10
CONCURRENCY = 1

_DTYPE_BYTES = {
    "float16": 2.0, "half": 2.0, "fp16": 2.0, "bfloat16": 2.0, "bf16": 2.0,
    "float32": 4.0, "float": 4.0, "fp32": 4.0,
}  # fmt: skip
_FOUR_BIT = frozenset(
    {"awq", "awq_marlin", "gptq", "gptq_marlin", "marlin", "bitsandbytes-nf4", "bitsandbytes-fp4", "int4", "exl2"}
)
_EIGHT_BIT = frozenset({"fp8", "fbgemm_fp8", "modelopt", "eetq", "int8", "w8a8", "experts_int8"})
_FOUR_BIT_BYTES = 4.25 / 8
# A pre-quantized checkpoint named after its base model (Qwen/Qwen2.5-7B-Instruct-AWQ): the suffix says the method.
_QUANT_SUFFIX = re.compile(r"-(awq|gptq-int4|gptq-int8|gptq|fp8(?:-dynamic)?|int4|int8|bnb-4bit)$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class ModelEstimate:
    """The estimate for one server (None figures: no estimate, `explanation` says why)."""

    server: str
    model: str
    bytes_per_device: int | None = None  # weights + KV cache + overhead on each device
    weights_bytes: int = 0
    kv_cache_bytes: int = 0
    overhead_bytes: int = 0
    kv_tokens: int = 0
    utilization: float = 1.0
    min_device_bytes: int | None = None  # bytes_per_device / utilization for servers that pre-allocate
    devices: int = 1  # tensor x pipeline parallel
    uncertain: bool = False
    explanation: str = ""

    @property
    def known(self) -> bool:
        return self.bytes_per_device is not None

    @property
    def preallocates(self) -> bool:
        return self.server in ("vllm", "nim")


def _shown(text: str | None, limit: int = 120) -> str:
    """A setting quoted for an explanation, cut to `limit` characters (a tenant's flag value may be 64 KiB)."""
    if text is None or len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"... ({len(text)} characters)"


def _gb(value: float) -> str:
    return f"{value / 1e9:.1f} GB"


def _resolve(model: str) -> tuple[ModelSpec | None, str | None]:
    spec = lookup_model(model)
    if spec is not None:
        return spec, None
    match = _QUANT_SUFFIX.search(model.strip())
    if match is not None:
        spec = lookup_model(model.strip()[: match.start()])
        if spec is not None:
            suffix = match.group(1).lower()
            method = "bitsandbytes-nf4" if suffix == "bnb-4bit" else "fp8" if suffix.startswith("fp8") else suffix
            return spec, {"gptq-int4": "gptq", "gptq-int8": "int8"}.get(method, method)
    return None, None


def _weight_bytes(spec: ModelSpec, quantization: str | None, dtype_bytes: float, server: str) -> tuple[float, str]:
    params, embed = spec.params, spec.embedding_params
    if not quantization:
        return params * dtype_bytes, f"{params / 1e9:.2f}B parameters x {dtype_bytes:g} bytes"
    method = quantization.lower()
    if method == "bitsandbytes":
        # vLLM's bitsandbytes loads 4-bit; TGI's `bitsandbytes` is 8-bit (its 4-bit ones are -nf4 / -fp4).
        method = "int8" if server == "tgi" else "bitsandbytes-nf4"
    if method in _FOUR_BIT:
        return (params - embed) * _FOUR_BIT_BYTES + embed * 2.0, f"{quantization}: 4.25 bits per quantized parameter"
    if method in _EIGHT_BIT:
        return (params - embed) * 1.0 + embed * 2.0, f"{quantization}: 1 byte per quantized parameter"
    return (
        params * dtype_bytes,
        f"quantization {_shown(quantization)} not modelled: weights counted at {dtype_bytes:g} bytes",
    )


def estimate_memory(config: ServerConfig) -> ModelEstimate:
    """The memory estimate of `config` (see the module docstring), or one without figures when the model is not in
    the catalog (never a guess)."""
    if not config.model:
        return ModelEstimate(config.server, "", explanation=f"{config.server}: no model named in the container")
    spec, suffix_quant = _resolve(config.model)
    if spec is None:
        return ModelEstimate(
            config.server,
            config.model,
            explanation=f"{config.server}: model {_shown(config.model)} is unknown (not in gpudra's model catalog)",
        )
    notes: list[str] = []
    uncertain = False
    quantization = config.quantization or suffix_quant
    if suffix_quant and not config.quantization:
        notes.append(f"quantization {suffix_quant} read from the model name")
    dtype = (config.dtype or "auto").lower()
    if dtype == "auto":
        # vLLM and TGI load float32 checkpoints as float16; TEI runs float16 on CUDA unless --dtype float32.
        dtype_bytes = min(_DTYPE_BYTES.get(spec.dtype, 2.0), 2.0)
    elif dtype in _DTYPE_BYTES:
        dtype_bytes = _DTYPE_BYTES[dtype]
    else:
        dtype_bytes, uncertain = 2.0, True
        notes.append(f"dtype {_shown(config.dtype)} not modelled: 2 bytes assumed")
    devices = max(1, config.tensor_parallel) * max(1, config.pipeline_parallel)
    weights, weight_note = _weight_bytes(spec, quantization, dtype_bytes, config.server)
    if "not modelled" in weight_note:
        uncertain = True
    weights /= devices
    kv_dtype = (config.kv_cache_dtype or "auto").lower()
    kv_bytes = 1.0 if kv_dtype.startswith("fp8") else dtype_bytes
    if spec.kind == "encoder":
        tokens = config.max_batch_tokens or 16384
        activation = tokens * max(spec.intermediate, 4 * spec.hidden) * 2 * dtype_bytes
        overhead = FIXED_OVERHEAD_BYTES + activation
        kv_total = 0.0
        kv_tokens = 0
        kv_note = f"no KV cache (encoder); activations for {tokens} batch tokens"
    else:
        if config.server == "tgi":
            kv_tokens = config.max_batch_tokens or config.max_model_len or spec.max_position
        else:
            kv_tokens = (config.max_model_len or spec.max_position) * CONCURRENCY
        # KV heads are split over the tensor-parallel ranks (replicated when there are fewer heads than ranks);
        # layers over the pipeline stages.
        tp = max(1, config.tensor_parallel)
        heads_per_device = math.ceil(spec.kv_heads / tp)
        layers_per_device = math.ceil(spec.layers / max(1, config.pipeline_parallel))
        kv_total = 2 * layers_per_device * heads_per_device * spec.head_dim * kv_bytes * kv_tokens
        overhead = FIXED_OVERHEAD_BYTES + ACTIVATION_FRACTION * weights
        kv_note = f"KV cache for {kv_tokens} tokens at {kv_bytes:g} bytes"
        if config.max_model_len and config.max_model_len > spec.max_position:
            notes.append(f"max_model_len {config.max_model_len} beyond the model's {spec.max_position}")
            uncertain = True
    total = math.ceil(weights + kv_total + overhead)
    utilization = config.utilization
    min_device = math.ceil(total / utilization) if (config.preallocates or utilization < 1.0) else None
    kv_shown = kv_note if spec.kind == "encoder" else f"{kv_note} = {_gb(kv_total)}"
    parts = [
        f"{config.server} {spec.hf_id}: weights {_gb(weights)} ({weight_note}"
        + (f", / {devices} devices" if devices > 1 else "")
        + f"), {kv_shown}, overhead {_gb(overhead)}: {_gb(total)} per device"
    ]
    if min_device is not None:
        what = "gpu_memory_utilization" if config.preallocates else "cuda_memory_fraction"
        parts.append(f"{what} {utilization:g} of the device must hold it: at least {_gb(min_device)} of device memory")
    parts.extend(notes)
    return ModelEstimate(
        server=config.server,
        model=spec.hf_id,
        bytes_per_device=total,
        weights_bytes=math.ceil(weights),
        kv_cache_bytes=math.ceil(kv_total),
        overhead_bytes=math.ceil(overhead),
        kv_tokens=kv_tokens,
        utilization=utilization,
        min_device_bytes=min_device,
        devices=devices,
        uncertain=uncertain,
        explanation="; ".join(parts),
    )
