"""The VRAM-demand model: how many MiB of GPU memory a pod needs per GPU.

The openb trace records `gpu_milli`, a share of GPU *compute*; it says nothing about memory. The simulator
never assumes: every pod's VRAM comes from this explicit model, chosen by the user (`vram:` in a cluster or
sweep file) and printed in the summary's input section.

- `proportional` (default for traces): `max(floor_mib, gpu_milli / 1000 * reference_mib)`; `reference_mib`
  defaults to 16 GiB, the memory of the P100/T4/V100-16GB fleet the trace ran on.
- `fixed`: every GPU pod needs `fixed_mib` per GPU.
- `class`: sampled per workload class from a log-normal (median, sigma) clipped to [low, high] MiB, seeded by
  the pod name so a pod always gets the same number; used by the built-in generator.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass, field
from typing import Any

from dra.errors import InputError

__all__ = ["CLASS_DEFAULTS", "ClassVram", "VramModel"]

GIB = 1024


@dataclass(frozen=True, slots=True)
class ClassVram:
    """Log-normal VRAM per GPU for one workload class, in MiB."""

    median_mib: int
    sigma: float
    low_mib: int
    high_mib: int


# Typical footprints (weights + KV cache / activations), per GPU: embedding models (~0.1-1B params) need a
# few GiB; 7-8B inference in fp16 ~16 GiB; tensor-parallel LLM serving fills most of an 80 GiB GPU;
# fine-tuning and training run near full memory.
CLASS_DEFAULTS: dict[str, ClassVram] = {
    "embedding": ClassVram(3 * GIB, 0.4, 1 * GIB, 8 * GIB),
    "small-inference": ClassVram(14 * GIB, 0.3, 6 * GIB, 24 * GIB),
    "llm-serving": ClassVram(62 * GIB, 0.15, 40 * GIB, 78 * GIB),
    "fine-tuning": ClassVram(52 * GIB, 0.25, 24 * GIB, 78 * GIB),
    "training": ClassVram(72 * GIB, 0.08, 56 * GIB, 79 * GIB),
}


@dataclass(frozen=True, slots=True)
class VramModel:
    """Per-GPU VRAM demand for a pod; see the module docstring for the three kinds."""

    kind: str = "proportional"
    reference_mib: int = 16 * GIB
    floor_mib: int = 1 * GIB
    fixed_mib: int = 16 * GIB
    classes: dict[str, ClassVram] = field(default_factory=lambda: dict(CLASS_DEFAULTS))

    def __post_init__(self) -> None:
        if self.kind not in ("proportional", "fixed", "class"):
            raise InputError(f"vram.kind must be proportional, fixed or class (got {self.kind!r})")
        if self.reference_mib <= 0 or self.floor_mib < 0 or self.fixed_mib <= 0:
            raise InputError("vram: reference_mib and fixed_mib must be > 0 and floor_mib >= 0")

    def demand(self, gpu_milli: int, workload_class: str = "trace", key: str = "") -> int:
        """MiB per GPU for a pod with compute share `gpu_milli`; 0 for pods without GPU."""
        if gpu_milli <= 0:
            return 0
        if self.kind == "fixed":
            return self.fixed_mib
        if self.kind == "class" and workload_class in self.classes:
            return self.sample(workload_class, key)
        return max(self.floor_mib, math.ceil(gpu_milli * self.reference_mib / 1000))

    def sample(self, workload_class: str, key: str) -> int:
        spec = self.classes[workload_class]
        seed = int.from_bytes(hashlib.blake2b(f"{workload_class}/{key}".encode(), digest_size=8).digest(), "big")
        value = spec.median_mib * math.exp(spec.sigma * random.Random(seed).gauss(0.0, 1.0))
        return int(min(spec.high_mib, max(spec.low_mib, value)))

    def describe(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind}
        if self.kind == "proportional":
            out.update(reference_mib=self.reference_mib, floor_mib=self.floor_mib)
        elif self.kind == "fixed":
            out["fixed_mib"] = self.fixed_mib
        else:
            out["classes"] = {
                name: {"median_mib": c.median_mib, "sigma": c.sigma, "low_mib": c.low_mib, "high_mib": c.high_mib}
                for name, c in self.classes.items()
            }
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None, *, default_kind: str = "proportional") -> VramModel:
        data = dict(data or {})
        classes = dict(CLASS_DEFAULTS)
        for name, spec in (data.pop("classes", None) or {}).items():
            try:
                classes[str(name)] = ClassVram(
                    int(spec["median_mib"]), float(spec.get("sigma", 0.0)), int(spec["low_mib"]), int(spec["high_mib"])
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise InputError(f"vram.classes.{name}: needs median_mib, low_mib, high_mib ({exc})") from exc
        unknown = set(data) - {"kind", "reference_mib", "floor_mib", "fixed_mib"}
        if unknown:
            raise InputError(
                f"vram: unknown keys {sorted(unknown)} (expected kind, reference_mib, floor_mib, fixed_mib)"
            )
        return cls(
            kind=str(data.get("kind", default_kind)),
            reference_mib=int(data.get("reference_mib", 16 * GIB)),
            floor_mib=int(data.get("floor_mib", GIB)),
            fixed_mib=int(data.get("fixed_mib", 16 * GIB)),
            classes=classes,
        )
