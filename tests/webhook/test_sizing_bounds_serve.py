"""A real `gpudra serve` answers the issue's hostile GPU pods (a `$(VAR)` expansion bomb, a 1.4 MB `sh -c` script)
promptly, mutated as any GPU pod, and its memory high-water mark grows by less than 50 MB."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.webhook.test_admission import review_body
from tests.webhook.test_serve_https import Server, server  # noqa: F401  (the fixture)

MB = 2**20


def _status(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def _pod(name: str, **container: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"containers": [{"name": "app", "resources": {"limits": {"nvidia.com/gpu": 1}}, **container}]},
    }


def _hostile_pods() -> list[dict[str, Any]]:
    model = "meta-llama/Llama-3.1-8B-Instruct"
    bombs = [
        _pod(
            f"bomb-{i}",
            image=f"vllm/vllm-openai:v0.8.{i}",
            env=[{"name": "A", "value": "x" * 100_000}],
            args=["--model", model, "--max-model-len", "8192", "$(A)" * 6000],
        )
        for i in range(3)
    ]
    script = f"exec vllm serve {model} --max-model-len 8192 --tag=" + "a" * 1_400_000
    return [*bombs, _pod("script", image="vllm/vllm-openai:v0.8.5", command=["sh", "-c"], args=[script])]


def test_hostile_pods_leave_the_servers_peak_memory_within_50_mb(server: Server) -> None:  # noqa: F811
    with server.client() as client:
        warm = client.post("/mutate", content=review_body(_pod("warm", image="app")))
        assert warm.status_code == 200 and warm.json()["response"]["allowed"] is True
        before = _status(server.proc.pid, "VmHWM")
        for i, pod in enumerate(_hostile_pods()):
            reply = client.post("/mutate", content=review_body(pod, uid=f"u-{i}"))
            assert reply.status_code == 200, reply.text[:500]
            response = reply.json()["response"]
            assert response["allowed"] is True and response["patch"], json.dumps(response)[:500]
        grown = _status(server.proc.pid, "VmHWM") - before
    assert grown < 50 * MB, f"gpudra serve's peak grew {grown / MB:.0f} MB"
