"""The timings that unit tests used to bound with the wall clock, measured here instead (issue 22: CI that never
flakes). Each case is timed against a baseline measured in the same run, so the ratios travel between machines.

    python benchmarks/timing_bounds.py [--repeat 3]

Prints JSON: per case, the least wall time in seconds over `--repeat` runs, its baseline, and the ratio. Cases:
CEL programs that must stop on cost (were bounded at 1-5 s; baseline: one evaluation of a small nest), findAll on
1 MB (5 s; baseline: Python's `re.findall` on the same text) and a 10,000-container pod decided by admission
(3 s; baseline: the same pod with 1,000 containers, so the ratio is ~10 when linear, ~100 when quadratic).
"""

from __future__ import annotations

import argparse
import itertools
import json
import platform
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dra.cel import Environment  # noqa: E402
from dra.cel.regex import find_all  # noqa: E402
from dra.errors import CelCostError  # noqa: E402
from policyengine import PolicySet, load_policies, shipped_policies_dir  # noqa: E402
from webhook.admission import Admission  # noqa: E402
from webhook.metrics import WebhookMetrics  # noqa: E402
from webhook.policy_store import PolicyStore  # noqa: E402
from webhook.review import parse_review, pod_review  # noqa: E402

TEN = "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"


def _nested(depth: int) -> str:
    expr = "true"
    for i in range(depth):
        expr = f"{TEN}.all(x{i}, {expr})"
    return expr


def _least(run: Callable[[], object], repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best


def _stops(program: Any) -> Callable[[], None]:
    def run() -> None:
        try:
            program.evaluate({})
        except CelCostError:
            return
        raise AssertionError("the program was expected to stop on its cost")

    return run


def cel_cases(repeat: int) -> dict[str, Any]:
    env = Environment.admission()
    small = env.compile(_nested(3))
    baseline = _least(lambda: small.evaluate({}), repeat)
    doubling = "size(a60) > 0"
    for i in range(60, 0, -1):
        doubling = f"cel.bind(a{i}, a{i - 1} + a{i - 1}, {doubling})"
    spaces = itertools.count()
    cases = {
        "runaway_nest_10^8": _stops(env.compile(_nested(8))),
        "doubling_concatenation_2^63_bytes": _stops(
            Environment.dra_selector().compile(f'cel.bind(a0, "abcdefgh", {doubling})')
        ),
        "replace_chain_1e9_chars": _stops(env.compile("size('a'" + ".replace('a', 'aaaaaaaaaa')" * 9 + ")")),
        # A new text each run (trailing spaces): compiled programs are cached by their text.
        "compile_replace_chain_1e12_chars": lambda: env.compile(
            "size('a'" + ".replace('a', 'aaaaaaaaaa')" * 12 + ")" + " " * next(spaces)
        ),
    }
    out: dict[str, Any] = {"baseline": "evaluate a 3-deep nest (1,000 iterations)", "baseline_s": round(baseline, 6)}
    for name, run in cases.items():
        took = _least(run, repeat)
        out[name] = {"s": round(took, 4), "ratio_to_baseline": round(took / baseline, 1)}
    return out


def regex_case(repeat: int) -> dict[str, Any]:
    text = "ab é " * (1024 * 1024 // 6)
    ours = _least(lambda: find_all(text, "[a-zé]*"), repeat)
    python = _least(lambda: re.findall("[a-zé]*", text), repeat)
    return {"findAll_1MB_s": round(ours, 4), "re_findall_1MB_s": round(python, 4), "ratio": round(ours / python, 1)}


def admission_case(repeat: int) -> dict[str, Any]:
    store: PolicyStore[PolicySet] = PolicyStore(shipped_policies_dir(), load_policies)
    admission = Admission(store, WebhookMetrics())  # no API server: what is timed is the decision
    names = itertools.count()

    def decide(n: int) -> None:
        containers = [
            {"name": f"c{i}", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1" if i < 2 else "0"}}}
            for i in range(n)
        ]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"wide-{next(names)}", "namespace": "team"},
               "spec": {"containers": containers}}  # fmt: skip
        admission.mutate(parse_review(pod_review(pod, uid=f"uid-{n}")))

    decide(1000)  # compile the policies
    small = _least(lambda: decide(1000), repeat)
    large = _least(lambda: decide(10_000), repeat)
    return {"pod_1k_containers_s": round(small, 4), "pod_10k_containers_s": round(large, 4),
            "ratio": round(large / small, 1)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3, help="runs per case; the least time is kept (default 3)")
    args = parser.parse_args(argv)
    result = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "cel_stops": cel_cases(args.repeat),
        "regex": regex_case(args.repeat),
        "admission_wide_pod": admission_case(args.repeat),
    }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
