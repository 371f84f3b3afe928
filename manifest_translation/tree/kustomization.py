"""Adding a file to a kustomization's `resources:` without disturbing the rest of it.

The new entry is written as a text line right after the entry it belongs next to, in that entry's indentation, so
comments and layout stay; the result is parsed again and used only when `resources` is exactly the old list with
the entry inserted and nothing else changed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from dra.errors import InputError
from dra.yamlio import load_yaml

__all__ = ["KUSTOMIZATION_NAMES", "add_resource", "find_kustomization", "listed_resources"]

KUSTOMIZATION_NAMES = ("kustomization.yaml", "kustomization.yml", "Kustomization")

_RESOURCES_KEY = re.compile(r"resources\s*:\s*(?:#.*)?")
_ITEM = re.compile(r"(?P<lead>\s*-\s+)(?P<value>[^#]*?)\s*(?:#.*)?")


def find_kustomization(directory: Path) -> Path | None:
    """The kustomization file of `directory`, if it has one."""
    for name in KUSTOMIZATION_NAMES:
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None


def _load(text: str) -> Any:
    try:
        return next((data for data, _node in load_yaml(text, "kustomization")), None)
    except InputError:
        return None


def listed_resources(text: str) -> list[str]:
    """The string entries of the kustomization's `resources:` ([] when it has none or cannot be read)."""
    data = _load(text)
    resources = data.get("resources") if isinstance(data, dict) else None
    return [r for r in resources if isinstance(r, str)] if isinstance(resources, list) else []


def lists(kustomization: Path, text: str, target: Path) -> str | None:
    """The entry of `text`'s `resources:` that names `target` (a path relative to the kustomization), else None."""
    base = kustomization.parent
    for entry in listed_resources(text):
        if os.path.normpath(base / entry) == os.path.normpath(target):
            return entry
    return None


def _unquoted(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        return value[1:-1]
    return value


def add_resource(text: str, after: str, entry: str) -> str | None:
    """`text` with `entry` in `resources:` right after `after`; None when that cannot be done safely (flow style,
    `after` not found, or a parse of the result that differs in anything else)."""
    lines = text.splitlines(keepends=True)
    start = next((i for i, line in enumerate(lines) if _RESOURCES_KEY.fullmatch(line.rstrip("\r\n"))), None)
    if start is None:
        return None
    position: int | None = None
    lead = ""
    for index in range(start + 1, len(lines)):
        line = lines[index].rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        item = _ITEM.fullmatch(line)
        if item is None:
            if not line[0].isspace():
                break
            continue
        if _unquoted(item.group("value")) == after:
            position, lead = index, item.group("lead")
            break
    if position is None:
        return None
    before = lines[position] if lines[position].endswith("\n") else lines[position] + "\n"
    edited = "".join([*lines[:position], before, f"{lead}{entry}\n", *lines[position + 1 :]])
    old, new = _load(text), _load(edited)
    if not isinstance(old, dict) or not isinstance(new, dict):
        return None
    resources = list(old.get("resources") or [])
    resources.insert(resources.index(after) + 1, entry)
    return edited if new == {**old, "resources": resources} else None
