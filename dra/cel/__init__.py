"""Kubernetes CEL for gpudra: our Lark grammar and closure compiler, the Kubernetes libraries and DRA's env.

env = Environment.dra_selector()
program = env.compile('device.attributes["gpu.nvidia.com"].memory >= 40')
program.evaluate({"device": device_value("gpu.nvidia.com", device)})
"""

from __future__ import annotations

from dra.cel._functions import FunctionRegistry, NoMatchingOverload
from dra.cel.cache import SelectorCache, device_key
from dra.cel.cost import DEFAULT_COST_LIMIT, RUNTIME_COST_BUDGET, CostMeter, EvaluationBudget
from dra.cel.device import device_value
from dra.cel.env import Environment, Program
from dra.cel.json import from_json, to_json
from dra.cel.parse import parse as parse_tree  # loaded by env already; for static reads of an expression (policyengine)
from dra.cel.stdlib import format_double
from dra.cel.values import CelType, Duration, Optional, Timestamp, Uint

__all__ = [
    "CelType",
    "CostMeter",
    "DEFAULT_COST_LIMIT",
    "Duration",
    "Environment",
    "EvaluationBudget",
    "FunctionRegistry",
    "NoMatchingOverload",
    "Optional",
    "Program",
    "RUNTIME_COST_BUDGET",
    "SelectorCache",
    "Timestamp",
    "Uint",
    "device_key",
    "device_value",
    "format_double",
    "from_json",
    "parse_tree",
    "to_json",
]
