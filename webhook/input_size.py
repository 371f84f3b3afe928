"""Whether a value's JSON text is certainly longer than a bound, without writing the text.

The decision cache keeps no input whose text passes `webhook.admission.UNCACHED_INPUT_BYTES`, but it learnt the size
only by writing the text for the key: for a 2.5 MB pod that was 31 ms of the C encoder holding the GIL on a loaded
machine (more than a json.loads of the same body), on every such review, for a key never stored. A walk that adds up
the lengths of the strings (keys and values; the text holds each of them, quoted, at one or more bytes a character)
stops as soon as they pass the bound, after a quarter megabyte of a large pod's strings at most.
"""

from __future__ import annotations

from typing import Any

__all__ = ["json_text_longer_than"]


def json_text_longer_than(value: Any, limit: int) -> bool:
    """True only when `value`'s JSON text (json.dumps, any separators, ASCII or not) is longer than `limit` bytes;
    False when it may not be (then write it to know). Iterative: no nesting overflows it."""
    total = 0
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            for key, child in item.items():
                total += (len(key) if isinstance(key, str) else 1) + 3
                if isinstance(child, (dict, list, str)):
                    stack.append(child)
                else:
                    total += 1
        elif isinstance(item, (list, tuple)):
            total += 2
            stack.extend(item)
        else:
            total += 1
        if total > limit:
            return True
    return False
