"""Where a unique /mutate review's CPU goes in process, stage by stage, and what a faster JSON library would change.

    python benchmarks/review_stages.py [--pods 1000] [--repeats 3] [--profile 25]

The webhook's own path without the HTTP stack: `parse_review` (json.loads plus the body's shape checks), the
decision (`Admission.mutate` with the shipped policies and no API server: evaluation, translation, the patch) and the
response's encoding as the app sends it (starlette's JSONResponse, json.dumps). Every repeat gets pods no earlier one
saw (no decision-cache hits); each stage's figure is the least CPU per review over the repeats (the machine is
shared). Where orjson is installed, its loads/dumps of the same bodies and answers are measured in the same run, and
`orjson_differs` lists inputs on which it does not do what json does (so a switch would change admission behaviour).
With `--profile N` it also prints cProfile's N costliest functions (own time) over one more repeat.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.admission import unique_pods  # noqa: E402
from policyengine import load_policies  # noqa: E402
from webhook.admission import Admission, RolloutConfig  # noqa: E402
from webhook.metrics import WebhookMetrics  # noqa: E402
from webhook.policy_store import PolicyStore  # noqa: E402
from webhook.review import parse_review, pod_review  # noqa: E402

T = TypeVar("T")
# Bodies json reads one way and orjson another (or not at all): what a switch would change.
_EDGE_BODIES = {
    "integer_beyond_64_bits": b'{"a": 1180591620717411303424}',
    "nan": b'{"a": NaN}',
    "1e400": b'{"a": 1e400}',
}


def _orjson() -> Any:
    try:
        import orjson
    except ImportError:
        return None
    return orjson


def _differs(orjson: Any) -> list[str]:
    differs = []
    for name, body in _EDGE_BODIES.items():
        try:
            same = repr(orjson.loads(body)) == repr(json.loads(body))
        except orjson.JSONDecodeError:
            same = False
        if not same:
            differs.append(name)
    return differs


def measure(pods: int, repeats: int, profile: int) -> dict[str, Any]:
    from starlette.responses import JSONResponse

    admission = Admission(PolicyStore(ROOT / "policies", load_policies), WebhookMetrics(), rollout=RolloutConfig())
    warm = [pod_review(p, uid=f"w{i}") for i, p in enumerate(unique_pods(300, start=10**8))]
    orjson = _orjson()
    best: dict[str, float] = {}

    def timed(name: str, work: Callable[[Any], T], items: list[Any]) -> list[T]:
        """`work` on each of `items`; the least CPU per review so far is kept as `name`'s figure."""
        started = time.process_time()
        out = [work(item) for item in items]
        best[name] = min(best.get(name, float("inf")), (time.process_time() - started) / len(items) * 1e6)
        return out

    def render(answer: dict[str, Any]) -> bytes:
        return bytes(JSONResponse(answer).body)

    for body in warm:  # imports, schemas and first-call caches paid before any figure
        render(admission.mutate(parse_review(body)))
    for k in range(1, repeats + 1):
        bodies = [pod_review(p, uid=f"u{k}-{i}") for i, p in enumerate(unique_pods(pods, start=10**6 * k))]
        timed("json_loads", json.loads, bodies)
        reviews = timed("parse_review", parse_review, bodies)
        answers = timed("decide", admission.mutate, reviews)
        timed("encode", render, answers)
        if orjson is not None:
            timed("orjson_loads", orjson.loads, bodies)
            timed("orjson_dumps", orjson.dumps, answers)
    total = best["parse_review"] + best["decide"] + best["encode"]
    result: dict[str, Any] = {
        "pods_per_repeat": pods,
        "repeats": repeats,
        "cpu_us_per_review": {name: round(value, 1) for name, value in best.items()},
        "in_process_us_per_review": round(total, 1),
        "share": {name: round(best[name] / total, 3) for name in ("parse_review", "decide", "encode")},
    }
    if orjson is not None:
        saved = best["json_loads"] - best["orjson_loads"] + best["encode"] - best["orjson_dumps"]
        result["orjson"] = {
            "version": orjson.__version__,
            "saves_us_per_review": round(saved, 1),
            "saves_share": round(saved / total, 3),
            "orjson_differs": _differs(orjson),
        }
    if profile:
        bodies = [pod_review(p, uid=f"p{i}") for i, p in enumerate(unique_pods(pods, start=10**7))]
        profiler = cProfile.Profile()
        profiler.enable()
        for body in bodies:
            render(admission.mutate(parse_review(body)))
        profiler.disable()
        text = io.StringIO()
        pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(profile)
        print(text.getvalue(), file=sys.stderr)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pods", type=int, default=1000, help="unique pods per repeat")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--profile", type=int, default=0, help="print cProfile's N costliest functions to stderr")
    args = parser.parse_args()
    if args.pods < 1 or args.repeats < 1:
        parser.error(f"--pods {args.pods} and --repeats {args.repeats} must be at least 1")
    print(json.dumps(measure(args.pods, args.repeats, args.profile), indent=2))


if __name__ == "__main__":
    main()
