"""`json.dumps` for the hot paths that only need its text: the same C encoder, without the Python layers around it.

`json.dumps(value, allow_nan=..., separators=...)` builds a `JSONEncoder` object, then its `encode` and `iterencode`
build the C encoder for each call; keys, fingerprints and patches are written for every admission review, most of
them small, so those layers cost more than the encoding. `dumps` here builds the C encoder directly, with the
arguments `json.dumps` would give it, so the text, the errors (`TypeError` for what is not JSON, `ValueError` for a
non-finite float without `allow_nan`, or a circular reference) and the conversions (non-str keys) are the same.
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable
from typing import Any

__all__ = ["dumps"]

# None only without CPython's _json accelerator (then `json.dumps` itself is used)
_c_make_encoder: Callable[..., Callable[[Any, int], Any]] | None = getattr(json.encoder, "c_make_encoder", None)
_encode_ascii = json.encoder.encode_basestring_ascii


def _default(value: Any) -> Any:
    raise TypeError(f"Object of type {value.__class__.__name__} is not JSON serializable")


def dumps(value: Any, *, allow_nan: bool, compact: bool = True) -> str:
    """`json.dumps(value, allow_nan=allow_nan)`, with `separators=(",", ":")` when `compact` (else the default
    `", "` and `": "`), ASCII only, keys in their order."""
    item, key = (",", ":") if compact else (", ", ": ")
    if _c_make_encoder is None:  # pragma: no cover
        return json.dumps(value, allow_nan=allow_nan, separators=(item, key))
    encode = _c_make_encoder({}, _default, _encode_ascii, None, key, item, False, False, allow_nan)
    return "".join(encode(value, 0))
