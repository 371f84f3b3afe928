"""YAML parse and dump: libyaml (CSafeLoader / CSafeDumper) against the pure-Python path, measured in the same run.

    python benchmarks/yaml_io.py [--pod-mb 5.3] [--documents 2000] [--repeat 3]

Two inputs: one generated pod of several MB (many containers with long env lists, args and annotations, as a big
real pod has) and a stream of many small documents (ResourceSlice-shaped). Each is parsed with
`dra.documents.read_documents` and written with `dra.documents.dump_documents`, once with libyaml and once with
it switched off (`dra.documents.libyaml_available` patched to False: exactly the fallback a PyYAML without libyaml
takes); both paths must give the same data and the same text. Prints one JSON object: the best of `--repeat` wall
times per step and path, and the C path's time as a ratio of the pure-Python path's (lower is better).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import dra.documents as documents  # noqa: E402


def big_pod(target_bytes: int) -> dict[str, Any]:
    """A Pod of about `target_bytes` of YAML: containers with env vars, args, mounts and ports."""
    containers: list[dict[str, Any]] = []
    annotations = {f"example.com/note-{i}": f"value {i} with: colons, 'quotes' and #hashes" for i in range(200)}
    pod: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "big", "namespace": "team-a", "labels": {"app": "big"}, "annotations": annotations},
        "spec": {"containers": containers},
    }
    i = 0
    size = 0
    while size < target_bytes:
        container = {
            "name": f"c{i}",
            "image": f"registry.example.com/team/app:{i}",
            "args": ["--port", str(8000 + i), "--config", f"/etc/app/{i}.yaml", "--flag=on", "--level", "0123"],
            "env": [{"name": f"VAR_{i}_{j}", "value": f"v{j}" if j % 3 else "yes"} for j in range(120)],
            "ports": [{"containerPort": 8000 + i, "protocol": "TCP"}],
            "volumeMounts": [{"name": "data", "mountPath": f"/data/{i}", "readOnly": True}],
            "resources": {"limits": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1} if i == 0 else {"cpu": "1"}},
        }
        containers.append(container)
        size += len(json.dumps(container))  # block YAML runs about as long as its compact JSON here
        i += 1
    return pod


def slice_stream(count: int) -> list[dict[str, Any]]:
    """`count` small ResourceSlice-shaped documents."""
    return [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": f"node-{n}-gpu.nvidia.com"},
            "spec": {
                "driver": "gpu.nvidia.com",
                "nodeName": f"node-{n}",
                "pool": {"name": f"node-{n}", "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": f"gpu-{d}",
                        "attributes": {"productName": {"string": "NVIDIA H100 80GB HBM3"}, "index": {"int": d}},
                        "capacity": {"memory": {"value": "80Gi"}},
                    }
                    for d in range(8)
                ],
            },
        }
        for n in range(count)
    ]


@contextmanager
def pure_python() -> Iterator[None]:
    original = documents.libyaml_available
    documents.libyaml_available = lambda: False  # type: ignore[assignment]
    try:
        yield
    finally:
        documents.libyaml_available = original  # type: ignore[assignment]


def best(repeat: int, step: Callable[[], Any]) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        result = step()
        times.append(time.perf_counter() - start)
    return min(times), result


def measure(name: str, docs: list[dict[str, Any]], repeat: int) -> dict[str, Any]:
    text = documents.dump_documents(docs)
    out: dict[str, Any] = {"input": name, "bytes": len(text), "documents": len(docs)}
    results: dict[str, Any] = {}
    for path in ("c", "python"):
        with pure_python() if path == "python" else _nothing():
            parse_s, parsed = best(repeat, lambda: [d.data for d in documents.read_documents(text)])
            dump_s, dumped = best(repeat, lambda data=parsed: documents.dump_documents(data))
        out[f"parse_{path}_s"] = round(parse_s, 4)
        out[f"dump_{path}_s"] = round(dump_s, 4)
        results[path] = (parsed, dumped)
    out["identical"] = results["c"] == results["python"] and results["c"][1] == text
    out["parse_ratio_c_over_python"] = round(out["parse_c_s"] / out["parse_python_s"], 3)
    out["dump_ratio_c_over_python"] = round(out["dump_c_s"] / out["dump_python_s"], 3)
    total_c, total_py = out["parse_c_s"] + out["dump_c_s"], out["parse_python_s"] + out["dump_python_s"]
    out["total_ratio_c_over_python"] = round(total_c / total_py, 3)
    return out


@contextmanager
def _nothing() -> Iterator[None]:
    yield


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pod-mb", type=float, default=5.3)
    parser.add_argument("--documents", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not documents.libyaml_available():
        print(json.dumps({"error": "PyYAML here has no libyaml: nothing to compare"}))
        return 1
    runs = [
        measure("pod", [big_pod(int(args.pod_mb * 1_000_000))], args.repeat),
        measure("stream", slice_stream(args.documents), args.repeat),
    ]
    print(json.dumps({"libyaml": True, "repeat": args.repeat, "runs": runs}, indent=2))
    return 0 if all(run["identical"] for run in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
