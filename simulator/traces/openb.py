"""Reader for the Alibaba cluster-trace-gpu-v2023 ("openb") pod CSVs.

Columns: `name,cpu_milli,memory_mib,num_gpu,gpu_milli` and, in most files, `gpu_spec,qos,pod_phase,
creation_time,deletion_time,scheduled_time` (seconds). `gpu_milli` is a per-GPU compute share; VRAM comes from
`simulator.vram`. A row that cannot be parsed raises `TraceError(file, line)`; with `strict=False` it is
skipped and counted. Rows that parse but cannot be simulated are always skipped and counted by reason.
"""

from __future__ import annotations

import csv
from pathlib import Path

from dra.errors import TraceError

from ..vram import VramModel
from ..workload import SimPod, Workload

__all__ = ["POD_COLUMNS", "read_openb_pods"]

POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")
_TIMED = ("creation_time", "deletion_time")
_PRIORITY = {"BE": 0, "Burstable": 1, "LS": 2, "Guaranteed": 3}  # the trace's QoS classes, lowest first


def _int(row: dict[str, str], key: str, where: tuple[str, int]) -> int:
    text = (row.get(key) or "").strip()
    try:
        return int(float(text)) if text else 0
    except ValueError:
        raise TraceError(f"column {key!r} must be a number (got {text!r})", source=where[0], line=where[1]) from None


def read_openb_pods(path: str | Path, *, vram: VramModel | None = None, strict: bool = True) -> Workload:
    """Read an openb pod CSV into a `Workload` sorted by creation time (file order for ties)."""
    vram = vram or VramModel()
    path = Path(path)
    work = Workload(pods=[], source=str(path), kind="openb")
    try:
        handle = path.open(newline="")
    except OSError as exc:
        raise TraceError(f"cannot read pod trace: {exc.strerror}", source=str(path)) from exc
    with handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        if header is None:
            raise TraceError("empty file, expected a header with " + ",".join(POD_COLUMNS), source=str(path), line=1)
        header = [h.strip() for h in header]
        missing = [c for c in POD_COLUMNS if c not in header]
        if missing:
            raise TraceError(f"header lacks columns {missing} (got {header})", source=str(path), line=1)
        timed = all(c in header for c in _TIMED)
        for values in reader:
            line = reader.line_num
            where = f"{path}:{line}"
            if not values or all(not v.strip() for v in values):
                continue
            if len(values) != len(header):
                if strict:
                    raise TraceError(f"expected {len(header)} fields, got {len(values)}", source=str(path), line=line)
                work.skip("malformed line", where)
                continue
            row = dict(zip(header, values, strict=True))
            try:
                pod = _pod(row, (str(path), line), timed, vram)
            except TraceError:
                if strict:
                    raise
                work.skip("malformed line", where)
                continue
            if isinstance(pod, str):
                work.skip(pod, where)
            else:
                if pod.duration == 0.0:  # kept: demand for the FGD protocol, gone at once in a replay
                    work.note("zero-length pod", where)
                work.pods.append(pod)
    work.pods.sort(key=lambda p: p.arrival)
    return work


def _pod(row: dict[str, str], where: tuple[str, int], timed: bool, vram: VramModel) -> SimPod | str:
    """The pod of one row, or the reason it cannot be simulated."""
    cpu, mem = _int(row, "cpu_milli", where), _int(row, "memory_mib", where)
    num_gpu, gpu_milli = _int(row, "num_gpu", where), _int(row, "gpu_milli", where)
    if cpu < 0 or mem < 0 or num_gpu < 0 or gpu_milli < 0:
        return "negative resource"
    if gpu_milli > 1000:
        return "gpu_milli above 1000"
    if num_gpu == 0 and gpu_milli > 0:
        return "gpu_milli without num_gpu"
    if num_gpu > 0 and gpu_milli == 0:
        return "num_gpu without gpu_milli"
    arrival, duration = 0.0, None
    if timed:
        created, deleted = _int(row, "creation_time", where), _int(row, "deletion_time", where)
        if (row.get("deletion_time") or "").strip():
            if deleted < created:
                return "deletion before creation"
            duration = float(deleted - created)
        arrival = float(created)
    spec = (row.get("gpu_spec") or "").strip()
    models = tuple(sorted({m for m in spec.split("|") if m})) if spec else ()
    source = f"{where[0]}:{where[1]}"
    name = row["name"].strip() or source
    return SimPod(
        name=name,
        cpu_milli=cpu,
        memory_mib=mem,
        num_gpu=num_gpu,
        gpu_milli=gpu_milli if num_gpu else 0,
        vram_mib=vram.demand(gpu_milli if num_gpu else 0, "trace", name),
        arrival=arrival,
        duration=duration,
        gpu_models=models,
        workload_class="trace",
        priority=_PRIORITY.get((row.get("qos") or "").strip(), 0),
        source=source,
    )
