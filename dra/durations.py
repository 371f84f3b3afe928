"""Go durations (`168h`, `1h30m`, `90s`) as Kubernetes objects and flags carry them: the one parser."""

from __future__ import annotations

import math
import re

__all__ = ["parse_go_duration"]

_DURATION = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str) -> float:
    """Seconds of a Go duration (`168h`, `1h30m`, `90s`); ValueError naming the text otherwise."""
    if not isinstance(text, str) or not text:
        raise ValueError(f"window {text!r} is not a Go duration (e.g. 168h)")
    pos, total = 0, 0.0
    for match in _DURATION.finditer(text):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        pos = match.end()
    if pos != len(text) or not math.isfinite(total):
        raise ValueError(f"window {text!r} is not a Go duration (e.g. 168h)")
    return total
