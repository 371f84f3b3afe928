"""Workload sources: the openb CSV reader, gpudra's JSONL of Pod specs, and the built-in generator."""

from __future__ import annotations

from pathlib import Path

from ..vram import VramModel
from ..workload import Workload
from .generator import CLASSES, GeneratorConfig, generate
from .jsonl import pod_demand, read_jsonl
from .openb import read_openb_pods

__all__ = ["CLASSES", "GeneratorConfig", "generate", "load_trace", "pod_demand", "read_jsonl", "read_openb_pods"]


def load_trace(path: str | Path, *, vram: VramModel | None = None, strict: bool = True) -> Workload:
    """An openb CSV (`.csv`) or a gpudra JSONL (`.jsonl`/`.json`) trace."""
    suffix = Path(path).suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        return read_jsonl(path, vram=vram, strict=strict)
    return read_openb_pods(path, vram=vram, strict=strict)
