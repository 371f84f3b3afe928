"""What a hostile container costs the policy engine beside an ordinary vLLM pod, in one run.

    python benchmarks/sizing_bounds.py [--repeats 5] [--cases ordinary,expansion,...]

Cases (one GPU container each, evaluated by the shipped policies as a review is, without HTTP):

- `ordinary`: `sh -c "vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 8192 ..."`, the baseline.
- `expansion`: the issue's 122 kB pod: env A = 100 kB and one arg of `$(A)` x 6000 (600 MB if expanded whole).
- `expansion_1mb`: env A = 500 kB and `$(A)` x 125,000 (a 1 MB pod; 62 GB if expanded whole).
- `sh_400k`, `sh_1_4m`: `sh -c` scripts of 400 kB and 1.4 MB ending in one long word (shlex, which builds a word a
  character at a time, took 3.9 s and 65 s); `sh_400k_words`, `sh_1_4m_words`: the same sizes in short words (the
  most words, hence the most work, for gpudra's splitter); `sh_400k_quoted`: short quoted words (no fast path).

Per case: CPU seconds of one evaluation (median of `--repeats`, each with a distinct image so that no cache
answers), the tracemalloc peak of one evaluation, and the RSS growth (VmHWM) of a fresh process that evaluates it
once; and each against `ordinary`. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from itertools import count
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from policyengine import load_policies, shipped_policies_dir  # noqa: E402

MODEL = "meta-llama/Llama-3.1-8B-Instruct"
_unique = count()


def _script(chars: int, words: str = "") -> str:
    head = f"exec vllm serve {MODEL} --max-model-len 8192 --gpu-memory-utilization 0.9 "
    if words:
        return head + words * max(0, (chars - len(head)) // len(words))
    return head + "--tag=" + "a" * max(0, chars - len(head) - 6)


def container(case: str) -> dict[str, Any]:
    image = f"vllm/vllm-openai:bench-{next(_unique)}"
    base: dict[str, Any] = {"name": "app", "image": image, "resources": {"limits": {"nvidia.com/gpu": 1}}}
    if case == "ordinary":
        return {**base, "command": ["sh", "-c"], "args": [_script(0)]}
    if case == "expansion":
        args = ["--model", MODEL, "--max-model-len", "8192", "$(A)" * 6000]
        return {**base, "env": [{"name": "A", "value": "x" * 100_000}], "args": args}
    if case == "expansion_1mb":
        args = ["--model", MODEL, "--max-model-len", "8192", "$(A)" * 125_000]
        return {**base, "env": [{"name": "A", "value": "x" * 500_000}], "args": args}
    sizes = {"sh_400k": 400_000, "sh_1_4m": 1_400_000}
    for suffix, words in (("_words", "--x ab "), ("_quoted", '--x "ab" '), ("", "")):
        if case.endswith(suffix) and case.removesuffix(suffix) in sizes:
            script = _script(sizes[case.removesuffix(suffix)], words)
            return {**base, "command": ["sh", "-c"], "args": [script]}
    raise SystemExit(f"unknown case {case!r}")


CASES = (
    "ordinary",
    "expansion",
    "expansion_1mb",
    "sh_400k",
    "sh_1_4m",
    "sh_400k_words",
    "sh_1_4m_words",
    "sh_400k_quoted",
)


def pod(case: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "bench", "namespace": "bench"},
        "spec": {"containers": [container(case)]},
    }


def _status(field: str) -> int:
    """A /proc/self/status figure in bytes (VmRSS, VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    return 0


def child(case: str) -> None:
    """In a fresh process: the RSS high-water mark one evaluation adds."""
    policies = load_policies(shipped_policies_dir())
    policies.evaluate(pod("ordinary"))  # warm: policies compiled, memo tables made
    subject = pod(case)
    before = _status("VmHWM")
    decision = policies.evaluate(subject)
    print(json.dumps({"rss_growth_bytes": _status("VmHWM") - before, "allowed": decision.allowed}))


def measure(case: str, repeats: int, policies: Any) -> dict[str, Any]:
    cpu: list[float] = []
    for _ in range(repeats):
        subject = pod(case)
        start = time.process_time()
        decision = policies.evaluate(subject)
        cpu.append(time.process_time() - start)
    subject = pod(case)
    tracemalloc.start()
    policies.evaluate(subject)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    out = subprocess.run(
        [sys.executable, __file__, "--child", case], capture_output=True, text=True, check=True, cwd=ROOT
    )
    sizing = decision.sizing.get("app", "")
    return {
        "pod_bytes": len(json.dumps(subject)),
        "cpu_seconds": statistics.median(cpu),
        "tracemalloc_peak_bytes": peak,
        **json.loads(out.stdout),
        "sized": decision.sizing_source,
        "sizing_note": sizing[:160],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated; ordinary is always measured")
    parser.add_argument("--child", default="")
    ns = parser.parse_args()
    if ns.child:
        child(ns.child)
        return
    policies = load_policies(shipped_policies_dir())
    policies.evaluate(pod("ordinary"))
    cases = ["ordinary", *(c for c in ns.cases.split(",") if c and c != "ordinary")]
    results = {case: measure(case, ns.repeats if case != "ordinary" else ns.repeats * 20, policies) for case in cases}
    base = results["ordinary"]
    for result in results.values():
        result["cpu_ratio_to_ordinary"] = round(result["cpu_seconds"] / base["cpu_seconds"], 2)
        result["peak_ratio_to_ordinary"] = round(result["tracemalloc_peak_bytes"] / base["tracemalloc_peak_bytes"], 2)
        result["rss_growth_minus_ordinary_bytes"] = result["rss_growth_bytes"] - base["rss_growth_bytes"]
    print(json.dumps({"python": sys.version.split()[0], "repeats": ns.repeats, "cases": results}, indent=2))


if __name__ == "__main__":
    main()
