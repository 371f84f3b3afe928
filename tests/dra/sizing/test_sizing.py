"""dra.sizing: server flag parsing, the catalog, the estimate (hand-computed), precedence and owner heuristics."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dra.sizing import (
    MODELS,
    ObservedSizing,
    ServerConfig,
    estimate_memory,
    lookup_model,
    parse_container,
    parse_server,
    resolve_sizing,
)

GiB = 2**30


# --------------------------------------------------------------------------------------------- parsing
def test_vllm_serve_positional_model_and_flags() -> None:
    cfg = parse_server(
        ["vllm", "serve", "Qwen/Qwen2.5-7B-Instruct"],
        ["--dtype", "bfloat16", "--max-model-len=8192", "-tp", "2", "--gpu_memory_utilization", "0.85",
         "--kv-cache-dtype", "fp8", "--max-num-seqs", "64", "--quantization", "fp8"],
        {},
    )  # fmt: skip
    assert cfg == ServerConfig(
        server="vllm", model="Qwen/Qwen2.5-7B-Instruct", dtype="bfloat16", quantization="fp8", max_model_len=8192,
        max_num_seqs=64, tensor_parallel=2, memory_utilization=0.85, kv_cache_dtype="fp8",
    )  # fmt: skip
    assert cfg.utilization == 0.85 and cfg.preallocates


def test_vllm_api_server_module_and_image_entrypoint_and_shell() -> None:
    module = parse_server(["python3", "-m", "vllm.entrypoints.openai.api_server"], ["--model", "m/x"], {})
    assert module is not None and module.model == "m/x" and module.utilization == 0.9
    args = ["--model", "$(MODEL)", "--tensor-parallel-size", "4"]
    env = [{"name": "MODEL", "value": "meta-llama/Llama-3.1-70B-Instruct"}]
    image = parse_container({"image": "vllm/vllm-openai:v0.8.5", "args": args, "env": env})
    assert image is not None and image.model == "meta-llama/Llama-3.1-70B-Instruct" and image.tensor_parallel == 4
    shell = parse_server(["/bin/sh", "-c"], ["vllm serve google/gemma-2-9b-it --max-model-len 4k"], {})
    assert shell is not None and shell.model == "google/gemma-2-9b-it" and shell.max_model_len == 4000


def test_tgi_flags_and_env() -> None:
    cfg = parse_server(
        ["text-generation-launcher"], ["--model-id", "mistralai/Mistral-7B-Instruct-v0.2", "--quantize", "awq",
                                       "--max-total-tokens", "4096", "--max-batch-total-tokens", "32000"],
        {"NUM_SHARD": "2"},
    )  # fmt: skip
    assert cfg is not None and (cfg.server, cfg.quantization, cfg.max_model_len, cfg.max_batch_tokens) == (
        "tgi",
        "awq",
        4096,
        32000,
    )
    assert cfg.tensor_parallel == 2 and not cfg.preallocates
    by_env = parse_container({"image": "ghcr.io/huggingface/text-generation-inference:3.0",
                              "env": [{"name": "MODEL_ID", "value": "Qwen/Qwen2.5-3B-Instruct"}]})  # fmt: skip
    assert by_env is not None and by_env.model == "Qwen/Qwen2.5-3B-Instruct"


def test_tei_flags_defaults_and_nim_env() -> None:
    tei = parse_container({"image": "ghcr.io/huggingface/text-embeddings-inference:1.5",
                           "args": ["--model-id", "BAAI/bge-large-en-v1.5", "--dtype", "float32"]})  # fmt: skip
    assert tei is not None and (tei.server, tei.dtype, tei.max_batch_tokens) == ("tei", "float32", 16384)
    nim = parse_container({"image": "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3",
                           "env": [{"name": "NIM_MODEL_NAME", "value": "meta-llama/Llama-3.1-8B-Instruct"},
                                   {"name": "NIM_MAX_MODEL_LEN", "value": "16384"},
                                   {"name": "NIM_TENSOR_PARALLEL_SIZE", "value": "2"}]})  # fmt: skip
    assert nim is not None and (nim.server, nim.max_model_len, nim.tensor_parallel) == ("nim", 16384, 2)
    assert parse_container({"image": "nvidia/cuda:12.4", "command": ["python", "train.py"]}) is None


# --------------------------------------------------------------------------------------------- catalog
@pytest.mark.parametrize(
    ("model", "card"),
    [("meta-llama/Llama-3.1-8B", 8.03e9), ("meta-llama/Llama-3.2-1B", 1.24e9), ("Qwen/Qwen2.5-7B-Instruct", 7.61e9),
     ("Qwen/Qwen2.5-0.5B-Instruct", 0.49e9), ("mistralai/Mixtral-8x7B-Instruct-v0.1", 46.7e9),
     ("google/gemma-2-2b-it", 2.61e9), ("sentence-transformers/all-MiniLM-L6-v2", 22.7e6),
     ("BAAI/bge-large-en-v1.5", 335e6)],
)  # fmt: skip
def test_parameters_from_shapes_match_the_model_cards(model: str, card: float) -> None:
    spec = lookup_model(model)
    assert spec is not None and abs(spec.params - card) / card < 0.01


def test_catalog_size_lookup_and_sources() -> None:
    assert len(MODELS) >= 25 and all(m.source for m in MODELS)
    assert lookup_model("META-LLAMA/llama-3.1-8b-instruct") is lookup_model("meta-llama/Llama-3.1-8B")
    assert lookup_model("hf://Qwen/Qwen2.5-7B") is lookup_model("/models/Qwen/Qwen2.5-7B-Instruct")
    assert lookup_model("example/unknown") is None


# --------------------------------------------------------------------------------------------- estimate
def test_vllm_llama_8b_by_hand() -> None:
    est = estimate_memory(parse_server(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct"], [], {}))  # type: ignore[arg-type]
    params = 128256 * 4096 * 2 + 32 * (4096 * 4096 * 2 + 4096 * 1024 * 2 + 3 * 4096 * 14336)
    weights = params * 2
    kv = 2 * 32 * 8 * 128 * 2 * 131072  # one max_model_len sequence (vLLM's start-up requirement)
    total = math.ceil(weights + kv + GiB + 0.1 * weights)
    assert (est.weights_bytes, est.kv_cache_bytes, est.bytes_per_device) == (weights, kv, total)
    assert est.min_device_bytes == math.ceil(total / 0.9) and est.min_device_bytes > 10e9  # never a 1g.10gb


def test_awq_tp_and_fp8_kv_by_hand() -> None:
    flags = ["--quantization", "awq", "-tp", "2", "--max-model-len", "8192", "--kv-cache-dtype", "fp8"]
    cfg = parse_server(["vllm", "serve", "Qwen/Qwen2.5-72B-Instruct"], flags, {})
    assert cfg is not None
    est = estimate_memory(cfg)
    spec = lookup_model("Qwen/Qwen2.5-72B-Instruct")
    assert spec is not None
    weights = ((spec.params - spec.embedding_params) * 4.25 / 8 + spec.embedding_params * 2) / 2
    assert est.weights_bytes == math.ceil(weights)
    assert est.kv_cache_bytes == 2 * 80 * 4 * 128 * 1 * 8192  # 8 KV heads over 2 ranks, fp8
    assert est.devices == 2


def test_tei_encoder_has_no_kv_cache_and_unknown_has_no_estimate() -> None:
    est = estimate_memory(ServerConfig(server="tei", model="BAAI/bge-large-en-v1.5", max_batch_tokens=16384))
    assert (
        est.kv_cache_bytes == 0
        and est.bytes_per_device == math.ceil(335_141_888 * 2 + GiB + 16384 * 4096 * 2 * 2)
        and est.min_device_bytes is None
    )
    unknown = estimate_memory(ServerConfig(server="vllm", model="example/private-13b"))
    assert unknown.bytes_per_device is None and "unknown" in unknown.explanation


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([m.hf_id for m in MODELS if m.kind == "decoder"]), st.integers(1, 2**17), st.integers(1, 2**17))
def test_estimate_monotone_in_max_model_len(model: str, a: int, b: int) -> None:
    small, large = sorted((a, b))
    e1 = estimate_memory(ServerConfig(server="vllm", model=model, max_model_len=small))
    e2 = estimate_memory(ServerConfig(server="vllm", model=model, max_model_len=large))
    assert e1.bytes_per_device is not None and e2.bytes_per_device is not None
    assert e1.bytes_per_device <= e2.bytes_per_device


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 4096))
def test_estimate_monotone_in_params(max_len: int) -> None:
    # Within a family, more parameters never estimate less.
    family = ["Qwen/Qwen2.5-0.5B-Instruct", "Qwen/Qwen2.5-1.5B-Instruct", "Qwen/Qwen2.5-3B-Instruct",
              "Qwen/Qwen2.5-7B-Instruct", "Qwen/Qwen2.5-14B-Instruct", "Qwen/Qwen2.5-32B-Instruct",
              "Qwen/Qwen2.5-72B-Instruct"]  # fmt: skip
    sizes = [
        estimate_memory(ServerConfig(server="vllm", model=m, max_model_len=max_len)).bytes_per_device for m in family
    ]
    assert sizes == sorted(sizes)  # type: ignore[type-var]


# --------------------------------------------------------------------------------------------- precedence
def _observed(vram: int = 6 * GiB, samples: int = 500) -> ObservedSizing:
    return ObservedSizing(
        vram, vram // 2, samples, 7 * 86400, "2025-01-01T00:00:00Z", source_ref="GPUSizingRecommendation a/b"
    )


def test_precedence_annotation_observed_model_default() -> None:
    model = estimate_memory(ServerConfig(server="tei", model="BAAI/bge-large-en-v1.5"))
    assert resolve_sizing(10 * GiB, _observed(), model, None).source == "annotation"
    won = resolve_sizing(None, _observed(), model, None)
    assert (won.source, won.vram_bytes, won.samples, won.window_seconds) == ("observed", 6 * GiB, 500, 604800)
    assert "observed usage wins" in won.reason and "model: tei" in won.reason
    assert resolve_sizing(None, _observed(samples=0), model, None).source == "model"
    fallback = resolve_sizing(None, None, estimate_memory(ServerConfig(server="vllm", model="x/y")), 4 * GiB)
    assert (fallback.source, fallback.vram_bytes) == ("default", 4 * GiB) and "unknown" in fallback.reason


def test_vllm_model_source_asks_for_the_device_memory_its_utilization_needs() -> None:
    est = estimate_memory(ServerConfig(server="vllm", model="meta-llama/Llama-3.1-8B", max_model_len=8192))
    won = resolve_sizing(None, None, est, None)
    assert won.source == "model" and won.vram_bytes == est.min_device_bytes and won.memory_utilization == 0.9
