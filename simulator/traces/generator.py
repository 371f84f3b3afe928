"""The built-in, seedable workload: the default when no trace is given.

Five classes of GPU jobs, each pod drawn independently (numpy `default_rng(seed)`):

| class | share | GPUs per pod | compute share (`gpu_milli`) | duration | CPU / memory |
|---|---|---|---|---|---|
| embedding | 30% | 1 | 100, 200 or 250 (equal odds) | exponential, mean 2 h | 2 CPU / 8 GiB |
| small-inference | 25% | 1 | 300 or 500 (equal odds) | exponential, mean 4 h | 4 CPU / 16 GiB |
| llm-serving | 20% | 2, 4, 8 (tensor parallel; 50/35/15%) | 1000 | exponential, mean 8 h | 8 CPU / 64 GiB per GPU |
| fine-tuning | 15% | 1, 2, 4 (60/25/15%) | 1000 | log-normal, median 3 h, sigma 0.6 | 8 CPU / 64 GiB per GPU |
| training | 10% | 4 or 8 (30/70%) | 1000 | log-normal, median 12 h, sigma 0.5 | 12 CPU / 96 GiB per GPU |

VRAM per GPU comes from `VramModel(kind="class")` (see `simulator.vram.CLASS_DEFAULTS`). Arrivals are a
Poisson process whose rate makes the offered GPU load (requested GPUs x duration / time) equal `load` times
the cluster's GPU count. Every pod also carries a legacy Pod spec (`nvidia.com/gpu: N`) for the policy engine.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..vram import VramModel
from ..workload import SimPod, Workload, legacy_pod

__all__ = ["CLASSES", "GeneratorConfig", "JobClass", "generate"]

HOUR = 3600.0


@dataclass(frozen=True, slots=True)
class JobClass:
    name: str
    share: float
    gpus: tuple[tuple[int, float], ...]  # (count, probability)
    milli: tuple[int, ...]  # equally likely compute shares
    duration: tuple[str, float, float]  # ("exp", mean, 0) or ("lognormal", median, sigma), seconds
    cpu_milli_per_gpu: int
    memory_mib_per_gpu: int


CLASSES: tuple[JobClass, ...] = (
    JobClass("embedding", 0.30, ((1, 1.0),), (100, 200, 250), ("exp", 2 * HOUR, 0.0), 2000, 8192),
    JobClass("small-inference", 0.25, ((1, 1.0),), (300, 500), ("exp", 4 * HOUR, 0.0), 4000, 16384),
    JobClass("llm-serving", 0.20, ((2, 0.5), (4, 0.35), (8, 0.15)), (1000,), ("exp", 8 * HOUR, 0.0), 8000, 65536),
    JobClass("fine-tuning", 0.15, ((1, 0.6), (2, 0.25), (4, 0.15)), (1000,), ("lognormal", 3 * HOUR, 0.6), 8000, 65536),
    JobClass("training", 0.10, ((4, 0.3), (8, 0.7)), (1000,), ("lognormal", 12 * HOUR, 0.5), 12000, 98304),
)


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    pods: int = 1200
    load: float = 0.7
    seed: int = 0


def generate(config: GeneratorConfig, total_gpus: int, *, vram: VramModel | None = None) -> Workload:
    """`config.pods` pods drawn from `CLASSES`, arriving so that the offered load is `config.load`."""
    vram = vram or VramModel(kind="class")
    rng = np.random.default_rng(config.seed)
    shares = np.array([c.share for c in CLASSES])
    picks = rng.choice(len(CLASSES), size=config.pods, p=shares / shares.sum())
    drafts: list[tuple[JobClass, int, int, float]] = []
    for index in picks:
        job = CLASSES[int(index)]
        counts, probs = zip(*job.gpus, strict=True)
        gpus = int(rng.choice(counts, p=np.array(probs) / sum(probs)))
        milli = int(rng.choice(job.milli))
        kind, a, b = job.duration
        duration = float(rng.exponential(a)) if kind == "exp" else float(a * np.exp(b * rng.standard_normal()))
        drafts.append((job, gpus, milli, max(60.0, duration)))
    gpu_seconds = sum(g * m / 1000 * d for _, g, m, d in drafts)
    mean_gap = gpu_seconds / max(1e-9, config.load * max(1, total_gpus) * len(drafts)) if drafts else 0.0
    arrival = 0.0
    pods: list[SimPod] = []
    for number, (job, gpus, milli, duration) in enumerate(drafts):
        name = f"{job.name}-{number:05d}"
        vram_mib = vram.demand(milli, job.name, name)
        cpu = job.cpu_milli_per_gpu * gpus
        mem = job.memory_mib_per_gpu * gpus
        pods.append(
            SimPod(
                name=name,
                cpu_milli=cpu,
                memory_mib=mem,
                num_gpu=gpus,
                gpu_milli=milli,
                vram_mib=vram_mib,
                arrival=round(arrival, 3),
                duration=round(duration, 3),
                workload_class=job.name,
                pod=legacy_pod(name, cpu, mem, gpus, job.name, vram_mib=vram_mib if milli < 1000 else None),
                source=f"generator(seed={config.seed})#{number}",
            )
        )
        arrival += float(rng.exponential(mean_gap)) if mean_gap > 0 else 0.0
    work = Workload(pods=pods, source=f"built-in generator (seed {config.seed}, {config.pods} pods)", kind="generated")
    return work
