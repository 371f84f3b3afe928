"""Reader for gpudra's own trace format: JSON Lines of real Pod specs with arrival and duration.

Each line: `{"pod": {<a v1 Pod>}, "arrival": <s>, "duration": <s or null>}` and optionally `"namespace"`
(a Namespace object for policies), `"vram_mib"` and `"gpu_milli"` (per-GPU demand overrides). Demands are
read from the containers as the scheduler sums them; `nvidia.com/gpu` gives whole GPUs and
`nvidia.com/mig-<g>g.<m>gb` a MIG slice. The Pod itself is kept so that any policy sees the real object.
"""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path
from typing import Any

from dra.errors import QuantityError, TraceError
from dra.quantity import Quantity

from ..vram import VramModel
from ..workload import SimPod, Workload

__all__ = ["pod_demand", "read_jsonl"]

_MIG = re.compile(r"^nvidia\.com/mig-(\d+)g\.(\d+)gb$")
GPU_RESOURCE = "nvidia.com/gpu"


def _container_resources(container: dict[str, Any], where: str) -> dict[str, Fraction]:
    """A container's resources (requests over limits) as exact numbers; ValueError naming the field."""
    res = container.get("resources") or {}
    merged = {
        **{name: (value, "limits") for name, value in (res.get("limits") or {}).items()},
        **{name: (value, "requests") for name, value in (res.get("requests") or {}).items()},
    }
    out: dict[str, Fraction] = {}
    for name, (value, kind) in merged.items():
        try:
            out[name] = Quantity.coerce(value).value
        except QuantityError as exc:
            raise ValueError(f"{where}.resources.{kind}[{name}]: {exc}") from None
    return out


def pod_demand(pod: dict[str, Any]) -> tuple[int, int, int, int, int | None]:
    """(cpu_milli, memory_mib, num_gpu, gpu_milli per GPU, MIG VRAM MiB or None) of a Pod, as scheduled.

    Quantities are read by `dra.quantity`; one Kubernetes would reject raises ValueError naming the field."""
    spec = pod.get("spec") or {}
    totals: dict[str, Fraction] = {}
    for k, container in enumerate(spec.get("containers") or []):
        for name, value in _container_resources(container, f"spec.containers[{k}]").items():
            totals[name] = totals.get(name, Fraction(0)) + value
    for k, init in enumerate(spec.get("initContainers") or []):
        for name, value in _container_resources(init, f"spec.initContainers[{k}]").items():
            if init.get("restartPolicy") == "Always":  # sidecars run alongside the app containers
                totals[name] = totals.get(name, Fraction(0)) + value
            else:
                totals[name] = max(totals.get(name, Fraction(0)), value)
    cpu = int(totals.get("cpu", Fraction(0)) * 1000)
    mem = int(totals.get("memory", Fraction(0)) / 2**20)
    gpus = int(totals.get(GPU_RESOURCE, Fraction(0)))
    if gpus:
        return cpu, mem, gpus, 1000, None
    for name, value in totals.items():
        match = _MIG.match(name)
        if match and value > 0:
            return cpu, mem, int(value), int(match.group(1)) * 1000 // 7, int(match.group(2)) * 1024
    return cpu, mem, 0, 0, None


def read_jsonl(path: str | Path, *, vram: VramModel | None = None, strict: bool = True) -> Workload:
    """Read a gpudra JSONL trace; a line that is not valid raises `TraceError(file, line)` (or is counted)."""
    vram = vram or VramModel()
    path = Path(path)
    work = Workload(pods=[], source=str(path), kind="jsonl")
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise TraceError(f"cannot read trace: {exc.strerror}", source=str(path)) from exc
    for number, text in enumerate(lines, start=1):
        if not text.strip() or text.lstrip().startswith("#"):
            continue
        try:
            work.pods.append(_pod(json.loads(text), path, number, vram))
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            error = exc if isinstance(exc, TraceError) else TraceError(str(exc), source=str(path), line=number)
            if strict:
                raise error from None
            work.skip("malformed line", f"{path}:{number}")
    work.pods.sort(key=lambda p: p.arrival)
    return work


def _pod(entry: dict[str, Any], path: Path, line: int, vram: VramModel) -> SimPod:
    if not isinstance(entry, dict) or not isinstance(entry.get("pod"), dict):
        raise TraceError('each line must be an object with a "pod" object', source=str(path), line=line)
    pod = entry["pod"]
    if pod.get("kind", "Pod") != "Pod":
        raise TraceError(f"expected kind Pod (got {pod.get('kind')!r})", source=str(path), line=line)
    meta = pod.get("metadata") or {}
    name = str(meta.get("name") or meta.get("generateName") or f"line-{line}")
    cpu, mem, num_gpu, gpu_milli, mig_vram = pod_demand(pod)
    gpu_milli = int(entry.get("gpu_milli", gpu_milli))
    if not 0 <= gpu_milli <= 1000:
        raise TraceError(f"gpu_milli must be within 0..1000 (got {gpu_milli})", source=str(path), line=line)
    if "vram_mib" in entry:
        vram_mib = int(entry["vram_mib"])
    elif mig_vram is not None:
        vram_mib = mig_vram
    else:
        vram_mib = vram.demand(gpu_milli if num_gpu else 0, str(entry.get("class", "trace")), name)
    duration = entry.get("duration")
    arrival = float(entry.get("arrival", 0.0))
    if duration is not None and float(duration) < 0:
        raise TraceError(f"duration must be >= 0 (got {duration})", source=str(path), line=line)
    selector = (pod.get("spec") or {}).get("nodeSelector") or {}
    product = selector.get("nvidia.com/gpu.product")
    return SimPod(
        name=name,
        cpu_milli=cpu,
        memory_mib=mem,
        num_gpu=num_gpu,
        gpu_milli=gpu_milli if num_gpu else 0,
        vram_mib=vram_mib if num_gpu else 0,
        arrival=arrival,
        duration=None if duration is None else float(duration),
        gpu_models=(str(product),) if product else (),
        workload_class=str(entry.get("class", "trace")),
        namespace=str(meta.get("namespace") or "default"),  # the Pod's; `namespace_object` is the Namespace
        pod=pod,
        namespace_object=entry["namespace"] if isinstance(entry.get("namespace"), dict) else None,
        source=f"{path}:{line}",
    )
