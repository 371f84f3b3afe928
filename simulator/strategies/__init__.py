"""Placement strategies by name: the device plugin, KEP-5004 whole-GPU DRA, gpudra, and the FGD paper's baselines."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .base import NODE_SCORES, Demand, Option, Strategy
from .baselines import BASELINES, BestFit, DotProd, Fgd, GpuClustering, GpuPacking, RandomFit
from .deviceplugin import DevicePlugin, DraWhole, Kep5004, Reconfiguration
from .policy_claims import OBSERVED_RUN
from .settings import RunSettings

__all__ = [
    "NODE_SCORES",
    "OBSERVED_RUN",
    "RunSettings",
    "BestFit",
    "Demand",
    "DevicePlugin",
    "DotProd",
    "DraWhole",
    "Kep5004",
    "Fgd",
    "GpuClustering",
    "GpuPacking",
    "Option",
    "RandomFit",
    "Reconfiguration",
    "STRATEGY_NAMES",
    "Strategy",
    "make_strategy",
    "strategy_class",
]

# `kep-5004` and `dra-whole` are the same placement (whole GPUs through the scheduler's own claim, first-fit
# devices); both names run, each under its own name
STRATEGY_NAMES = ("device-plugin", "kep-5004", "dra-whole", "gpudra", *BASELINES)


def strategy_class(name: str) -> type[Strategy]:
    """The strategy class registered as `name`; ValueError naming the known ones."""
    if name == "gpudra":
        from .policy_claims import PolicyClaims

        return PolicyClaims
    classes: dict[str, type[Strategy]] = {
        "device-plugin": DevicePlugin, "kep-5004": Kep5004, "dra-whole": DraWhole, **BASELINES,
    }  # fmt: skip
    if name not in classes:
        raise ValueError(f"unknown strategy {name!r} (known: {', '.join(STRATEGY_NAMES)})")
    return classes[name]


def make_strategy(name: str, *, seed: int = 0, **options: Any) -> Strategy:
    """A fresh strategy by name; `options` go to its constructor (e.g. `policies=`, `mode=` for gpudra)."""
    factories: dict[str, Callable[..., Strategy]] = {
        "device-plugin": DevicePlugin,
        "kep-5004": Kep5004,
        "dra-whole": DraWhole,
        **BASELINES,
    }
    if name == "gpudra":
        from .policy_claims import PolicyClaims

        return PolicyClaims(seed=seed, **options)
    if name not in factories:
        raise ValueError(f"unknown strategy {name!r} (known: {', '.join(STRATEGY_NAMES)})")
    return factories[name](seed=seed, **options)
