"""dra.model builds its pydantic models on first use; the names it exports stay the same."""

from __future__ import annotations

import subprocess
import sys

import dra.model


def test_kind_names_are_the_kinds_the_model_reads() -> None:
    assert dra.model.KIND_NAMES == frozenset(dra.model.KINDS)


def test_every_exported_name_resolves() -> None:
    for name in dra.model.__all__:
        assert getattr(dra.model, name) is not None, name


def test_importing_the_limits_builds_no_model() -> None:
    probe = (
        "import sys; from dra.model import LIMITS\nprint('pydantic' in sys.modules, 'dra.model.slice' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
