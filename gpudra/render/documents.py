"""Kubernetes objects as the commands print them: YAML streams and a `v1` `List` in JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dra.documents import dump_documents

__all__ = ["json_list", "slice_stream", "yaml_stream"]


def yaml_stream(documents: Sequence[Any]) -> str:
    """Documents as one YAML stream (`---` between them), keys in their Kubernetes order, no anchors (libyaml
    writes it where available, with the pure-Python emitter's text)."""
    return dump_documents(documents)


def slice_stream(objects: Sequence[dict[str, Any]]) -> str:
    """A multi-document stream, each document opened by `---` (what `kubectl apply -f` reads)."""
    return dump_documents(objects, explicit_start=True, width=80)


def json_list(objects: Sequence[dict[str, Any]]) -> str:
    """A `v1` `List` of the objects, as `kubectl -o json` prints several."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}, indent=2) + "\n"
