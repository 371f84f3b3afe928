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
kubelet does (`expansion`), and `sh -c "..."` scripts are split as shlex does (`shellwords`). Everything read from one
container is bounded: at most `BUDGET` characters of expanded command and args and of the env values read are ever
built, the container is sized from what fits, and the reading carries a warning saying what was cut.
"""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .cache import ByteBoundedLRU
from .expansion import expand_words
from .models import model_from_nim_image
from .shellwords import split, split_prefix

__all__ = [
    "BUDGET",
    "VLLM_DEFAULT_MAX_NUM_SEQS",
    "VLLM_DEFAULT_UTILIZATION",
    "ContainerReading",
    "ServerConfig",
    "parse_container",
    "parse_server",
    "read_container",
    "read_server",
]

VLLM_DEFAULT_UTILIZATION = 0.9
VLLM_DEFAULT_MAX_NUM_SEQS = 256
TEI_DEFAULT_MAX_BATCH_TOKENS = 16384
# Characters of one container's expanded command and args and of the env values sizing reads, in all: a tenant's pod
# can make `$(VAR)` expansion grow without limit (a 100 kB value referenced 6,000 times), the kubelet's budget is
# the node's memory, and gpudra's must be a small constant.
BUDGET = 64 * 1024
# What the reading cache may hold (it is keyed by a digest of the container, and values are charged their strings).
CACHE_MAX_BYTES = 4 * 2**20
CACHE_MAX_ENTRIES = 4096
# A container with more characters than this (command, args, image, env names and values) is read, not cached: the
# reading's work is bounded by BUDGET whatever the container's size, but its cache key hashes every character
# (2.5 MB of env: 4.2 ms to key a reading that takes 0.09 ms).
CACHE_MAX_KEY_CHARS = 4 * BUDGET


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


@dataclass(frozen=True, slots=True)
class ContainerReading:
    """The server a container runs (None: none recognised), and what its reading could not take in."""

    server: ServerConfig | None
    warnings: tuple[str, ...] = ()


class _Reader:
    """One container's env values and the budget left; records what went beyond it."""

    __slots__ = ("cut", "env", "left")

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.left = BUDGET
        self.cut: list[str] = []

    def take(self, text: str, what: str) -> tuple[str, bool]:
        """`text` charged to the budget, cut where it runs out; and whether it was cut."""
        if len(text) <= self.left:
            self.left -= len(text)
            return text, False
        kept = text[: self.left]
        self.left = 0
        self.cut.append(what)
        return kept, True

    def get(self, name: str) -> str | None:
        value = self.env.get(name)
        return None if value is None else self.take(value, f"env {name}")[0]

    def warnings(self) -> tuple[str, ...]:
        if not self.cut:
            return ()
        return (
            f"sizing read only the first {BUDGET // 1024} KiB of this container's command, args and env values "
            f"({', '.join(self.cut)} went beyond it): it is sized from what fits",
        )


def _tokens(command: Sequence[str], args: Sequence[str], reader: _Reader) -> list[str]:
    expanded = expand_words((*command, *args), reader.env, reader.left)
    reader.left -= sum(len(w) for w in expanded.words)
    words = list(expanded.words)
    # sh -c "vllm serve ..." (and bash -lc): split the script.
    shell = len(words) >= 3 and words[0].rsplit("/", 1)[-1] in {"sh", "bash"}
    shell = shell and words[1].startswith("-") and "c" in words[1]
    if expanded.truncated:
        reader.cut.append("command and args after $(VAR) expansion")
        if shell and len(words) == 3:  # the script itself was cut
            return split_prefix(words[2])
        words.pop()  # the word the budget cut
    if shell:
        try:
            words = split(words[2]) + words[3:]
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
    if word.startswith("--"):  # never a number; and float()'s ValueError is the slow way to learn it
        return False
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
    # `inf` and `1e308k` are floats but no count; past 2**53 a float is no exact whole number either.
    return int(value) if 0 < value <= _EXACT_FLOAT_INT and value == int(value) else None


_EXACT_FLOAT_INT = 2**53


def _float(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text)
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


def _pick(flags: Mapping[str, str], reader: _Reader, *names: str) -> str | None:
    for name in names:
        if name in flags:
            return flags[name]
    for name in names:
        value = reader.get(name.upper().replace("-", "_"))
        if value is not None:
            return value
    return None


def _passthrough(reader: _Reader) -> list[str]:
    """NIM_PASSTHROUGH_ARGS as words (split as shlex does; on an unbalanced quote, at whitespace)."""
    text = reader.env.get("NIM_PASSTHROUGH_ARGS")
    if not text:
        return []
    text, cut = reader.take(text, "env NIM_PASSTHROUGH_ARGS")
    if cut:
        return split_prefix(text)
    try:
        return split(text)
    except ValueError:
        return text.split()


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
    return read_server(command, args, env, image).server


def read_server(
    command: Sequence[str], args: Sequence[str], env: Mapping[str, str], image: str = ""
) -> ContainerReading:
    """`parse_server`, with a warning when the container holds more than `BUDGET` characters for sizing to read."""
    reader = _Reader(env)
    return ContainerReading(_server(command, args, reader, image), reader.warnings())


def _server(command: Sequence[str], args: Sequence[str], reader: _Reader, image: str) -> ServerConfig | None:
    words = _tokens(command, args, reader)
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
            model=_pick(flags, reader, "model-id") or "",
            dtype=_pick(flags, reader, "dtype"),
            max_batch_tokens=_int(_pick(flags, reader, "max-batch-tokens")) or TEI_DEFAULT_MAX_BATCH_TOKENS,
        )
    if "text-generation-launcher" in base or ("text-generation-inference" in image_l and not command):
        start = base.index("text-generation-launcher") + 1 if "text-generation-launcher" in base else 0
        flags, _ = _flags(words[start:])
        return ServerConfig(
            server="tgi",
            model=_pick(flags, reader, "model-id") or "",
            dtype=_pick(flags, reader, "dtype"),
            quantization=_pick(flags, reader, "quantize"),
            max_model_len=_int(_pick(flags, reader, "max-total-tokens")),
            max_batch_tokens=_int(_pick(flags, reader, "max-batch-total-tokens")),
            tensor_parallel=_int(_pick(flags, reader, "num-shard")) or 1,
            memory_utilization=_float(_pick(flags, reader, "cuda-memory-fraction")),
        )
    nim_model = reader.get("NIM_MODEL_NAME") or reader.get("NIM_MODEL_PATH") or ""
    if not nim_model and (from_image := model_from_nim_image(image)) is not None:
        nim_model = from_image.hf_id  # a per-model NIM image names its model
    if nim_model or "nvcr.io/nim/" in image_l or "nim-serve" in base:
        passthrough = _passthrough(reader)
        start = base.index("nim-serve") + 1 if "nim-serve" in base else len(words)
        flags, _ = _flags([*passthrough, *words[start:]])
        config = _vllm(flags, (), server="nim", model=flags.get("model") or nim_model)
        tp = _int(reader.get("NIM_TENSOR_PARALLEL_SIZE"))
        max_len = _int(reader.get("NIM_MAX_MODEL_LEN"))
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


def _weight(reading: ContainerReading) -> int:
    """Bytes a cached reading holds: its strings, and a fixed allowance for the objects and the cache's entry."""
    strings: list[str] = list(reading.warnings)
    server = reading.server
    if server is not None:
        fields = (server.server, server.model, server.dtype, server.quantization, server.kv_cache_dtype)
        strings.extend(v for v in fields if v is not None)
        strings.extend(server.notes)
    return 512 + sum(sys.getsizeof(s) for s in strings)


_READINGS: ByteBoundedLRU[bytes, ContainerReading] = ByteBoundedLRU(CACHE_MAX_BYTES, CACHE_MAX_ENTRIES, _weight)
_CHUNK = 16384


def _feed(digest: Any, text: str) -> None:
    # Length-prefixed, so that no two different containers feed the same bytes; encoded a chunk at a time, so that
    # a megabyte of env costs no megabyte copy. Lone surrogates (valid in JSON strings) pass through.
    digest.update(len(text).to_bytes(8, "little"))
    for start in range(0, len(text), _CHUNK):
        digest.update(text[start : start + _CHUNK].encode("utf-8", "surrogatepass"))


def _key(command: Sequence[str], args: Sequence[str], env: Sequence[tuple[str, str]], image: str) -> bytes:
    digest = hashlib.blake2b(digest_size=20)
    _feed(digest, image)
    for words in (command, args):
        digest.update(len(words).to_bytes(8, "little"))
        for word in words:
            _feed(digest, word)
    digest.update(len(env).to_bytes(8, "little"))
    for name, value in env:
        _feed(digest, name)
        _feed(digest, value)
    return digest.digest()


def _strings(value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        return ()
    return tuple(str(v) for v in value if isinstance(v, (str, int, float)) and not isinstance(v, bool))


def read_container(container: Mapping[str, Any]) -> ContainerReading:
    """`read_server` of a Kubernetes container spec (only literal `env` values are read). Readings are cached by a
    digest of the container, within `CACHE_MAX_BYTES`, unless it has more than `CACHE_MAX_KEY_CHARS` characters."""
    env: list[tuple[str, str]] = []
    chars = 0
    entries = container.get("env")
    for entry in entries if isinstance(entries, list) else ():
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str) and isinstance(entry.get("value"), str):
            env.append((entry["name"], entry["value"]))
            chars += len(entry["name"]) + len(entry["value"])
    image = container.get("image")
    image = image if isinstance(image, str) else ""
    command, args = _strings(container.get("command")), _strings(container.get("args"))
    chars += len(image) + sum(map(len, command)) + sum(map(len, args))
    if chars > CACHE_MAX_KEY_CHARS:
        return read_server(command, args, dict(env), image)
    key = _key(command, args, env, image)
    reading = _READINGS.get(key)
    if reading is None:
        reading = read_server(command, args, dict(env), image)
        _READINGS.put(key, reading)
    return reading


def parse_container(container: Mapping[str, Any]) -> ServerConfig | None:
    """The server `read_container` finds (None: none recognised)."""
    return read_container(container).server
