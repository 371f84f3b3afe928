"""dra.sizing reads a tenant's container within a fixed budget: `$(VAR)` expansion never builds more than `BUDGET`
characters, shell scripts are split in linear time over at most that, and the reading cache is bounded in bytes.

Costs are measured without clocks: memory with tracemalloc, work as the Python lines executed (sys.settrace), so the
tests hold on a loaded machine."""

from __future__ import annotations

import gc
import sys
import tracemalloc
from collections.abc import Callable
from itertools import count
from typing import Any

import pytest

from dra import sizing
from dra.sizing import parse_container, parse_server

_unique = count()
MB = 2**20


def _image() -> str:
    """A distinct image per call, so that no reading comes from the cache."""
    return f"vllm/vllm-openai:bounds-{next(_unique)}"


def _peak(fn: Callable[[], object]) -> int:
    """Peak bytes allocated while `fn` runs (its inputs exist before)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        fn()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def _work(fn: Callable[[], object]) -> int:
    """Python line events while `fn` runs: a deterministic count of the work done."""
    events = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal events
        events += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return events


# --------------------------------------------------------------------------------------------- item 1: $(VAR) bomb
def _bomb(references: int) -> dict[str, Any]:
    """The issue's 122 kB pod: env A = 100 kB and one arg of `$(A)` x 6000, behind an ordinary vLLM command line
    (the kubelet would build 600 MB from it)."""
    return {
        "name": "c",
        "image": _image(),
        "env": [{"name": "A", "value": "x" * 100_000}],
        "args": ["--model", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "8192", "$(A)" * references],
    }


@pytest.mark.parametrize("references", [60, 600, 6000])
def test_expansion_bomb_peaks_under_2_mb_whatever_the_references(references: int) -> None:
    # (Each `$(A)` alone in its own arg costs nothing: the expanded word is the env value itself.)
    container = _bomb(references)
    peak = _peak(lambda: parse_container(container))
    assert peak < 2 * MB, f"{references} x $(A) of 100 kB peaked at {peak / MB:.1f} MB"


def test_expansion_bomb_is_sized_from_what_fits_with_a_warning() -> None:
    reading = sizing.read_container(_bomb(6000))
    assert reading.server is not None
    assert (reading.server.model, reading.server.max_model_len) == ("meta-llama/Llama-3.1-8B-Instruct", 8192)
    assert len(reading.warnings) == 1 and "first 64 KiB" in reading.warnings[0]
    assert "$(VAR) expansion" in reading.warnings[0]


def test_an_ordinary_container_reads_without_warning() -> None:
    reading = sizing.read_container(
        {"image": _image(), "args": ["--model", "$(M)"], "env": [{"name": "M", "value": "Qwen/Qwen2.5-7B-Instruct"}]}
    )
    assert reading.server is not None and reading.server.model == "Qwen/Qwen2.5-7B-Instruct"
    assert reading.warnings == ()


# --------------------------------------------------------------------------------------------- item 2: shell scripts
def _script(chars: int) -> str:
    return "exec vllm serve Qwen/Qwen2.5-7B-Instruct --max-model-len 4096 " + "ab " * (chars // 3)


def test_shell_parsing_work_does_not_grow_past_the_budget() -> None:
    # 128 KiB and 512 KiB scripts: the same work, since only BUDGET characters are ever read (shlex did 4x, and its
    # character-at-a-time token building made a 1.4 MB script cost 65 s).
    small, large = _script(128 * 1024), _script(512 * 1024)
    work_small = _work(lambda: parse_server(["sh", "-c"], [small], {}))
    work_large = _work(lambda: parse_server(["sh", "-c"], [large], {}))
    assert work_large <= work_small * 1.05, (work_small, work_large)


def test_shell_parsing_work_is_linear_within_the_budget() -> None:
    quarter, whole = _script(sizing.BUDGET // 8), _script(sizing.BUDGET // 2)
    work_quarter = _work(lambda: parse_server(["sh", "-c"], [quarter], {}))
    work_whole = _work(lambda: parse_server(["sh", "-c"], [whole], {}))
    assert work_whole <= work_quarter * 4.4, (work_quarter, work_whole)


def test_a_cut_script_is_sized_from_its_complete_words() -> None:
    reading = sizing.read_server(["/bin/bash", "-lc"], [_script(1_400_000)], {})
    assert reading.server is not None
    assert (reading.server.model, reading.server.max_model_len) == ("Qwen/Qwen2.5-7B-Instruct", 4096)
    assert reading.warnings and "first 64 KiB" in reading.warnings[0]


@pytest.mark.parametrize(
    ("command", "args", "env", "expected"),
    [
        (["sh", "-c"], ['vllm serve "$(MODEL)" --dtype bfloat16 -tp 2 --max-model-len=8k'],
         {"MODEL": "meta-llama/Llama-3.1-8B-Instruct"},
         {"server": "vllm", "model": "meta-llama/Llama-3.1-8B-Instruct", "dtype": "bfloat16", "tensor_parallel": 2,
          "max_model_len": 8000}),
        (["/bin/bash", "-lc"], ["pip install x && exec python3 -m vllm.entrypoints.openai.api_server "
                                "--model 'Qwen/Qwen2.5-7B-Instruct' --gpu-memory-utilization 0.85"], {},
         {"server": "vllm", "model": "Qwen/Qwen2.5-7B-Instruct", "memory_utilization": 0.85}),
        (["sh", "-c", "text-generation-launcher --model-id $(M) --quantize awq --num-shard 2"], [],
         {"M": "mistralai/Mistral-7B-Instruct-v0.2"},
         {"server": "tgi", "model": "mistralai/Mistral-7B-Instruct-v0.2", "quantization": "awq", "tensor_parallel": 2}),
        (["sh", "-c", 'vllm serve m/x --max-model-len "4096'], [], {},  # unbalanced: split at whitespace, as before
         {"server": "vllm", "model": "m/x", "max_model_len": None}),
        (["python3", "-m", "sglang.launch_server"], ["--model-path", "Qwen/Qwen2.5-7B-Instruct"], {}, None),
    ],
)  # fmt: skip
def test_legitimate_commands_size_as_before(
    command: list[str], args: list[str], env: dict[str, str], expected: dict[str, Any] | None
) -> None:
    config = parse_server(command, args, env)
    if expected is None:
        assert config is None
        return
    assert config is not None
    assert {key: getattr(config, key) for key in expected} == expected


def test_nim_passthrough_args_with_an_unbalanced_quote_are_split_at_whitespace() -> None:
    env = {"NIM_MODEL_NAME": "meta-llama/Llama-3.1-8B-Instruct", "NIM_PASSTHROUGH_ARGS": "--max-model-len 4096 '"}
    config = parse_server([], [], env, "nvcr.io/nim/meta/llama-3.1-8b-instruct:1.3")
    assert config is not None and (config.server, config.max_model_len) == ("nim", 4096)


def test_huge_nim_passthrough_args_are_read_within_the_budget() -> None:
    env = {"NIM_MODEL_NAME": "m/x", "NIM_PASSTHROUGH_ARGS": "--max-model-len 4096 " + "ab " * 400_000}
    reading = sizing.read_server([], [], env, "nvcr.io/nim/x:1")
    assert reading.server is not None and reading.server.max_model_len == 4096
    assert reading.warnings and "NIM_PASSTHROUGH_ARGS" in reading.warnings[0]
    assert _work(lambda: sizing.read_server([], [], env, "nvcr.io/nim/x:1")) < 2_000_000


# --------------------------------------------------------------------------------------------- item 5: the cache
def test_the_reading_cache_is_bounded_in_bytes() -> None:
    # 100 GPU containers carrying 256 kB of env each: the cache keeps a digest and the small reading, not the pod.
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for i in range(100):
            parse_container(
                {"image": _image(), "args": ["--model", "m/x", f"--seed={i}"],
                 "env": [{"name": "BLOB", "value": str(i) + "z" * 256_000}]}
            )  # fmt: skip
        gc.collect()
        retained = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert retained < 4 * MB, f"100 containers of 256 kB left {retained / MB:.1f} MB"


def test_the_reading_cache_holds_at_most_its_byte_budget() -> None:
    cache = sizing.inference._READINGS
    for _ in range(3000):
        sizing.read_container({"image": _image(), "args": ["--model", "m/" + "y" * 60_000]})
        assert cache.bytes <= sizing.inference.CACHE_MAX_BYTES
    assert len(cache) < 3000  # the byte bound, not the entry bound, evicted


def test_the_reading_cache_answers_an_equal_container_from_its_digest() -> None:
    container = {"image": _image(), "args": ["--model", "m/x"], "env": [{"name": "A", "value": "1"}]}
    first = sizing.read_container(container)
    assert sizing.read_container({**container, "env": [{"name": "A", "value": "1"}]}) is first
    assert sizing.read_container({**container, "env": [{"name": "A", "value": "2"}]}) is not first
    assert sizing.read_container({**container, "env": [{"name": "A1", "value": ""}]}) is not first


def test_a_container_too_large_to_key_is_read_each_time_and_never_cached() -> None:
    # 2,400 env values of 1 kB (the large reviews of benchmarks/tenant_attacks.py): hashing them for a key cost 45x
    # the reading it keyed.
    env = [{"name": f"SETTING_{i}", "value": "v" * 1000} for i in range(2400)]
    container = {"image": _image(), "args": ["--model", "$(M)"], "env": [*env, {"name": "M", "value": "m/x"}]}
    cache = sizing.inference._READINGS
    before = len(cache)
    first = sizing.read_container(container)
    assert len(cache) == before
    assert first.server is not None and first.server.model == "m/x"
    assert sizing.read_container(container) == first
    small = {**container, "env": [{"name": "M", "value": "m/x"}]}
    assert sizing.read_container(small) is sizing.read_container(small)  # under the bound: cached


# --------------------------------------------------------------------------------------------- numbers no count holds
@pytest.mark.parametrize("value", ["inf", "1e308k", "1e300", "9" * 400, "nan", "-inf"])
def test_a_count_no_integer_holds_is_not_understood_rather_than_an_exception(value: str) -> None:
    config = parse_server(["vllm", "serve", "m/x", "--max-model-len", value, "-tp", value], [], {})
    assert config is not None and config.max_model_len is None and config.tensor_parallel == 1


def test_an_estimate_beyond_any_quantity_of_bytes_is_ignored_with_a_reason() -> None:
    config = parse_server(["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--max-model-len", "1e15"], [], {})
    assert config is not None and config.max_model_len == 10**15
    decision = sizing.resolve_sizing(None, None, sizing.estimate_memory(config), None)
    assert (decision.source, decision.vram_bytes, decision.model_bytes, decision.min_device_bytes) == (
        "default",
        None,
        0,
        0,
    )
    assert "model: an estimate beyond" in decision.reason and "ignored" in decision.reason


def test_a_long_unknown_model_name_is_quoted_short_in_the_explanation() -> None:
    config = parse_server(["vllm", "serve", "org/" + "m" * 60_000, "--dtype", "q" * 60_000], [], {})
    assert config is not None
    explanation = sizing.estimate_memory(config).explanation
    assert len(explanation) < 300 and "(60004 characters) is unknown" in explanation


@pytest.mark.parametrize("value", [1.5, True, "A=1", {"name": "A"}, None])
def test_env_of_the_wrong_json_type_is_no_env(value: Any) -> None:
    # A review not from the API server may send anything; sizing reads what it understands and never raises.
    config = parse_container({"image": _image(), "args": ["--model", "m/x"], "env": value})
    assert config is not None and config.model == "m/x"
