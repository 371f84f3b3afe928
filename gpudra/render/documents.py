"""Kubernetes objects as the commands print them: YAML streams and a `v1` `List` in JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import yaml

__all__ = ["json_list", "slice_stream", "yaml_stream"]


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True


def yaml_stream(documents: Sequence[Any]) -> str:
    """Documents as one YAML stream (`---` between them), keys in their Kubernetes order, no anchors."""
    return yaml.dump_all(list(documents), Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def slice_stream(objects: Sequence[dict[str, Any]]) -> str:
    """A multi-document stream, each document opened by `---` (what `kubectl apply -f` reads)."""
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml when present: 20x faster
    return str(yaml.dump_all(list(objects), Dumper=dumper, sort_keys=False, explicit_start=True))


def json_list(objects: Sequence[dict[str, Any]]) -> str:
    """A `v1` `List` of the objects, as `kubectl -o json` prints several."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)}, indent=2) + "\n"
