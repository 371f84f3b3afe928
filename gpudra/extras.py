"""Optional parts of gpudra (`pip install 'gpudra[report]'`, `'gpudra[ray]'`): checked before a command starts the
work that needs them, so a missing plotting stack is one clear line, not a traceback after a long simulation."""

from __future__ import annotations

import importlib.util

__all__ = ["missing_extra"]


def missing_extra(module: str, extra: str, what: str) -> str | None:
    """None when `module` is importable; else what to install, e.g. `--report needs matplotlib: pip install ...`."""
    if importlib.util.find_spec(module) is not None:
        return None
    return f"{what} needs {module}, which is not installed: pip install 'gpudra[{extra}]'"
