"""The webhook's memory under distinct large pods: RSS of `gpudra serve` before and after N reviews.

    python benchmarks/webhook_memory.py [--pods 250] [--annotation-bytes 1048576]

Each pod is different (name and a 1 MB annotation), so neither the decision cache nor the policy memo can reuse
anything: what the process keeps afterwards is what its caches hold plus what the allocator did not give back.
Two servers in the same run: glibc's default malloc settings and the ones the image and Deployment set
(`MALLOC_MMAP_THRESHOLD_=131072 MALLOC_ARENA_MAX=2`). Prints JSON: RSS before/after per variant and the ratio of
their growth.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import ssl
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from admission import _review, _Server, unique_pods  # noqa: E402

TUNED = {"MALLOC_MMAP_THRESHOLD_": "131072", "MALLOC_ARENA_MAX": "2"}


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RuntimeError("no VmRSS")


def _post(url: str, body: bytes, ctx: ssl.SSLContext) -> int:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, context=ctx, timeout=30) as response:
        response.read()
        return int(response.status)


def run(env: dict[str, str], pods: int, annotation_bytes: int) -> dict[str, Any]:
    saved = {k: os.environ.pop(k) for k in TUNED if k in os.environ}
    os.environ.update(env)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            server = _Server(Path(tmp))
            try:
                url = f"https://127.0.0.1:{server.port}/mutate"
                before = _rss_mib(server.proc.pid)
                started = time.perf_counter()
                failures = 0
                shapes = unique_pods(4)
                samples = []
                for i in range(pods):
                    pod = copy.deepcopy(shapes[i % len(shapes)])
                    pod["metadata"]["name"] = f"bench-{i}"
                    pod["metadata"].setdefault("annotations", {})["bench/blob"] = f"{i}" + "x" * annotation_bytes
                    failures += _post(url, _review(pod, f"uid-{i}"), server.ctx) != 200
                    if (i + 1) % max(1, pods // 5) == 0:
                        samples.append(_rss_mib(server.proc.pid))
                wall = time.perf_counter() - started
                time.sleep(0.5)
                after = _rss_mib(server.proc.pid)
            finally:
                server.stop()
    finally:
        for k in env:
            os.environ.pop(k, None)
        os.environ.update(saved)
    return {"rss_before_mib": before, "rss_after_mib": after, "growth_mib": round(after - before, 1),
            "rss_along_the_way_mib": samples, "non_200": failures, "wall_s": round(wall, 2)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=250)
    parser.add_argument("--annotation-bytes", type=int, default=2**20)
    args = parser.parse_args()
    default = run({}, args.pods, args.annotation_bytes)
    tuned = run(TUNED, args.pods, args.annotation_bytes)
    print(json.dumps({
        "pods": args.pods, "annotation_bytes": args.annotation_bytes,
        "glibc_default": default, "tuned": tuned,
        "growth_tuned_over_default": round(tuned["growth_mib"] / max(default["growth_mib"], 0.1), 3),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
