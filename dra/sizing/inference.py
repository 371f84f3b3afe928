"""Read an inference server's memory-relevant settings from a container spec (command, args, env).

Recognised servers, their flags and defaults (checked against each project's documentation):

- **vLLM** (`vllm serve MODEL`, `python -m vllm.entrypoints.openai.api_server --model MODEL`, or the
  `vllm/vllm-openai` image whose entrypoint is the API server): `--model`, `--dtype`, `--quantization`/`-q`,
  `--max-model-len`, `--max-num-seqs`, `--tensor-parallel-size`/`-tp`, `--pipeline-parallel-size`/`-pp`,
  `--gpu-memory-utilization` (default 0.9), `--kv-cache-dtype` (default `auto`). vLLM's argument parser accepts
  `--flag=value` and underscores for dashes. EngineArgs defaults: `gpu_memory_utilization = 0.90`,
  `max_num_seqs = 256` (vllm/engine/arg_utils.py); `--max-model-len` defaults to the model's
  `max_position_embeddings`.
- **TGI** (`text-generation-launcher`, the `text-generation-inference` image): `--model-id`, `--quantize`,
  `--dtype`, `--max-total-tokens`, `--max-batch-total-tokens`, `--num-shard`, `--cuda-memory-fraction`; each also as
  the environment variable its help names (`[env: MODEL_ID=]`, `QUANTIZE`, `NUM_SHARD`, ...).
  huggingface.co/docs/text-generation-inference/reference/launcher
- **TEI** (`text-embeddings-router`, the `text-embeddings-inference` image): `--model-id`, `--dtype`
  (float16 | float32), `--max-batch-tokens` (default 16384); env `MODEL_ID`, `DTYPE`, `MAX_BATCH_TOKENS`.
  huggingface.co/docs/text-embeddings-inference/cli_arguments
- **NIM** (`nvcr.io/nim/...` images): `NIM_MODEL_NAME` or `NIM_MODEL_PATH` (`hf://org/name`), `NIM_MAX_MODEL_LEN`,
  `NIM_TENSOR_PARALLEL_SIZE`; NIM 2.x passes `nim-serve` arguments and `NIM_PASSTHROUGH_ARGS` to vLLM with vLLM's
  flag names (docs.nvidia.com/nim/large-language-models/latest/reference/advanced-configuration.html).

Kubernetes `$(VAR)` references in command and args are expanded from the container's literal `env` values, as the
kubelet does. `sh -c "..."` command lines are split like a shell would.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

__all__ = ["VLLM_DEFAULT_MAX_NUM_SEQS", "VLLM_DEFAULT_UTILIZATION", "ServerConfig", "parse_container", "parse_server"]

VLLM_DEFAULT_UTILIZATION = 0.9
VLLM_DEFAULT_MAX_NUM_SEQS = 256
TEI_DEFAULT_MAX_BATCH_TOKENS = 16384


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """What an inference server was told that decides its memory use (None: the server's default)."""

    server: str  # "vllm", "tgi", "tei" or "nim"
    model: str = ""
    dtype: str | None = None
    quantization: str | None = None
    max_model_len: int | None = None  # vLLM --max-model-len, TGI --max-total-tokens, NIM_MAX_MODEL_LEN
    max_num_seqs: int | None = None
    max_batch_tokens: int | None = None  # TGI --max-batch-total-tokens, TEI --max-batch-tokens
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    memory_utilization: float | None = None  # vLLM --gpu-memory-utilization, TGI --cuda-memory-fraction
    kv_cache_dtype: str | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def preallocates(self) -> bool:
        """vLLM (and NIM, which runs it) claims `gpu_memory_utilization` x the device's whole memory at start."""
        return self.server in ("vllm", "nim")

    @property
    def utilization(self) -> float:
        """The fraction of the device's memory the server takes (vLLM's default 0.9; 1.0 for the others)."""
        if self.memory_utilization is not None:
            return self.memory_utilization
        return VLLM_DEFAULT_UTILIZATION if self.preallocates else 1.0


_VAR = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def _expand(token: str, env: Mapping[str, str]) -> str:
    # Kubernetes: $(VAR) expands when VAR is defined; $$(VAR) is an escaped literal.
    if "$(" not in token:
        return token
    return _VAR.sub(lambda m: env.get(m.group(1), m.group(0)), token.replace("$$(", "\0")).replace("\0", "$(")


def _tokens(command: Sequence[str], args: Sequence[str], env: Mapping[str, str]) -> list[str]:
    words = [_expand(t, env) for t in (*command, *args)]
    # sh -c "vllm serve ..." (and bash -lc): split the script.
    shell = len(words) >= 3 and words[0].rsplit("/", 1)[-1] in {"sh", "bash"}
    if shell and words[1].startswith("-") and "c" in words[1]:
        try:
            words = shlex.split(words[2]) + words[3:]
        except ValueError:
            words = words[2].split() + words[3:]
    return words


def _flags(words: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """`--flag value` / `--flag=value` / `-x value` → {flag: value} (dashes for underscores; last wins), and the
    positional words."""
    flags: dict[str, str] = {}
    positional: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and len(word) > 1 and not _is_number(word):
            name, eq, value = word.lstrip("-").partition("=")
            name = name.replace("_", "-")
            if not eq:
                nxt = words[i + 1] if i + 1 < len(words) else None
                if nxt is not None and (not nxt.startswith("-") or _is_number(nxt)):
                    value = nxt
                    i += 1
                else:
                    value = "true"
            flags[name] = value
        else:
            positional.append(word)
        i += 1
    return flags, positional


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


def _int(text: str | None) -> int | None:
    """A whole number; vLLM also reads `32k` (x1000) and `32K` (x1024), `1m`/`1M` likewise."""
    if text is None:
        return None
    text = text.strip()
    scale = {"k": 1000, "K": 1024, "m": 1000**2, "M": 1024**2}.get(text[-1:], 1) if text else 1
    if scale != 1:
        text = text[:-1]
    try:
        value = float(text) * scale
    except ValueError:
        return None
    return int(value) if value > 0 and value == int(value) else None


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


def _pick(flags: Mapping[str, str], env: Mapping[str, str], *names: str) -> str | None:
    for name in names:
        if name in flags:
            return flags[name]
    for name in names:
        key = name.upper().replace("-", "_")
        if key in env:
            return env[key]
    return None


def _vllm(flags: Mapping[str, str], positional: Sequence[str], server: str = "vllm", model: str = "") -> ServerConfig:
    if not model:
        model = flags.get("model", "")
    if not model and positional:
        model = positional[0]
    return ServerConfig(
        server=server,
        model=model,
        dtype=flags.get("dtype"),
        quantization=flags.get("quantization") or flags.get("q"),
        max_model_len=_int(flags.get("max-model-len")),
        max_num_seqs=_int(flags.get("max-num-seqs")),
        tensor_parallel=_int(flags.get("tensor-parallel-size") or flags.get("tp")) or 1,
        pipeline_parallel=_int(flags.get("pipeline-parallel-size") or flags.get("pp")) or 1,
        memory_utilization=_float(flags.get("gpu-memory-utilization")),
        kv_cache_dtype=flags.get("kv-cache-dtype"),
    )


def parse_server(
    command: Sequence[str], args: Sequence[str], env: Mapping[str, str], image: str = ""
) -> ServerConfig | None:
    """The inference server a container runs and its settings, or None when it is none of those recognised."""
    words = _tokens(command, args, env)
    base = [w.rsplit("/", 1)[-1] for w in words]
    image_l = image.lower()
    # vLLM: `vllm serve MODEL ...` or the OpenAI API server module.
    for i, word in enumerate(base):
        if word == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
            flags, positional = _flags(words[i + 2 :])
            return _vllm(flags, positional)
        if word.startswith("vllm.entrypoints"):
            flags, _ = _flags(words[i + 1 :])
            return _vllm(flags, ())
    if "text-embeddings-router" in base or ("text-embeddings-inference" in image_l and not command):
        start = base.index("text-embeddings-router") + 1 if "text-embeddings-router" in base else 0
        flags, _ = _flags(words[start:])
        return ServerConfig(
            server="tei",
            model=_pick(flags, env, "model-id") or "",
            dtype=_pick(flags, env, "dtype"),
            max_batch_tokens=_int(_pick(flags, env, "max-batch-tokens")) or TEI_DEFAULT_MAX_BATCH_TOKENS,
        )
    if "text-generation-launcher" in base or ("text-generation-inference" in image_l and not command):
        start = base.index("text-generation-launcher") + 1 if "text-generation-launcher" in base else 0
        flags, _ = _flags(words[start:])
        return ServerConfig(
            server="tgi",
            model=_pick(flags, env, "model-id") or "",
            dtype=_pick(flags, env, "dtype"),
            quantization=_pick(flags, env, "quantize"),
            max_model_len=_int(_pick(flags, env, "max-total-tokens")),
            max_batch_tokens=_int(_pick(flags, env, "max-batch-total-tokens")),
            tensor_parallel=_int(_pick(flags, env, "num-shard")) or 1,
            memory_utilization=_float(_pick(flags, env, "cuda-memory-fraction")),
        )
    nim_model = env.get("NIM_MODEL_NAME") or env.get("NIM_MODEL_PATH") or ""
    if nim_model or "nvcr.io/nim/" in image_l or "nim-serve" in base:
        passthrough = shlex.split(env.get("NIM_PASSTHROUGH_ARGS", "")) if env.get("NIM_PASSTHROUGH_ARGS") else []
        start = base.index("nim-serve") + 1 if "nim-serve" in base else len(words)
        flags, _ = _flags([*passthrough, *words[start:]])
        config = _vllm(flags, (), server="nim", model=flags.get("model") or nim_model)
        tp = _int(env.get("NIM_TENSOR_PARALLEL_SIZE"))
        max_len = _int(env.get("NIM_MAX_MODEL_LEN"))
        return ServerConfig(
            server="nim",
            model=config.model,
            dtype=config.dtype,
            quantization=config.quantization,
            max_model_len=config.max_model_len or max_len,
            max_num_seqs=config.max_num_seqs,
            tensor_parallel=config.tensor_parallel if "tensor-parallel-size" in flags or "tp" in flags else tp or 1,
            pipeline_parallel=config.pipeline_parallel,
            memory_utilization=config.memory_utilization,
            kv_cache_dtype=config.kv_cache_dtype,
        )
    if "vllm/vllm-openai" in image_l and not command:
        # The image's entrypoint is the OpenAI API server: the pod's args are its flags.
        flags, positional = _flags(words)
        return _vllm(flags, positional)
    return None


@lru_cache(maxsize=2048)
def _parse_cached(
    command: tuple[str, ...], args: tuple[str, ...], env: tuple[tuple[str, str], ...], image: str
) -> ServerConfig | None:
    return parse_server(command, args, dict(env), image)


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool))


def parse_container(container: Mapping[str, Any]) -> ServerConfig | None:
    """`parse_server` of a Kubernetes container spec (only literal `env` values are read; results are cached)."""
    env: list[tuple[str, str]] = []
    for entry in container.get("env") or ():
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str):
            env.append((entry["name"], entry["value"]))
    image = container.get("image")
    return _parse_cached(
        _strings(container.get("command")),
        _strings(container.get("args")),
        tuple(env),
        image if isinstance(image, str) else "",
    )
