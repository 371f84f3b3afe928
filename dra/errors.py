"""The one error family of gpudra: every error carries where the problem is.

`GpudraError` is the base. Subclasses add the location a user needs to fix the input: a field path for
model validation, file:line:column plus the expression for policy and CEL errors, file:line for traces.
The webhook turns these into AdmissionReview answers in one place; the CLI prints `str(err)`.
"""

from __future__ import annotations

__all__ = [
    "CelCompileError",
    "CelCostError",
    "CelError",
    "CelRuntimeError",
    "GpudraError",
    "InputError",
    "ModelValidationError",
    "PolicyError",
    "QuantityError",
    "TraceError",
    "UnknownName",
]


class GpudraError(Exception):
    """Base of every error gpudra raises on purpose."""


class QuantityError(GpudraError, ValueError):
    """A string that is not a Kubernetes quantity, or arithmetic that cannot be represented."""


class ModelValidationError(GpudraError, ValueError):
    """A DRA object that Kubernetes would reject; `errors` holds (field path, message) pairs."""

    def __init__(self, errors: list[tuple[str, str]]) -> None:
        self.errors = list(errors)
        super().__init__("; ".join(f"{path}: {msg}" for path, msg in self.errors))

    @property
    def field(self) -> str:
        return self.errors[0][0] if self.errors else ""


class InputError(GpudraError, ValueError):
    """A file or document the user gave that cannot be read (bad YAML, wrong kind, missing field)."""

    def __init__(self, message: str, *, source: str = "", line: int | None = None) -> None:
        self.message = message
        self.source = source
        self.line = line
        where = source + (f":{line}" if line is not None else "")
        super().__init__(f"{where}: {message}" if where else message)


class UnknownName(InputError, KeyError):
    """A name a catalog does not know (a GPU model, a MIG profile). Also a `KeyError`, as a failed lookup reads."""

    def __str__(self) -> str:  # KeyError would quote the message
        return InputError.__str__(self)


class CelError(GpudraError):
    """Base of CEL errors; `expression` is the source text, `position` a 0-based offset when known."""

    def __init__(self, message: str, *, expression: str = "", position: int | None = None) -> None:
        self.message = message
        self.expression = expression
        self.position = position
        super().__init__(message)


class CelCompileError(CelError, ValueError):
    """Syntax or type errors found before evaluation (lint time)."""


class CelRuntimeError(CelError):
    """An evaluation error (no such key, overflow, no matching overload at run time, ...)."""


class CelCostError(CelRuntimeError):
    """Evaluation stopped because it exceeded its cost budget."""


class PolicyError(GpudraError):
    """A policy file problem: names the file, the line and column, and the expression when there is one."""

    def __init__(
        self,
        message: str,
        *,
        file: str = "",
        line: int | None = None,
        column: int | None = None,
        expression: str = "",
    ) -> None:
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        self.expression = expression
        where = file
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        text = f"{where}: {message}" if where else message
        if expression:
            text += f"\n    expression: {expression}"
        super().__init__(text)


class TraceError(InputError):
    """A trace or cluster-spec line that cannot be read (file and line are required)."""
