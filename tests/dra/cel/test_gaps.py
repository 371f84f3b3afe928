"""Known gaps versus Kubernetes CEL, each checked against the Go oracle (tests/oracle k8s-cel, cel-go v0.29.2).

dra.cel has no full type checker: it types literals (and dyn()), not the results of macros, functions or
bindings, so these ill-typed expressions compile here and fail (or succeed) only at evaluation, where
Kubernetes rejects them when the policy or claim is created. Strict xfails: fixing one makes its test fail.
"""

from __future__ import annotations

import pytest

from dra.cel import Environment
from dra.errors import CelCompileError

GAP = pytest.mark.xfail(strict=True, reason="no type inference through macros/functions/bindings (see module doc)")


@GAP
@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ('[1, 2].map(x, x * 2)[0] == "a"', "found no matching overload for '_==_' applied to '(int, string)'"),
        ('size(object.items.map(x, 1) + ["a"]) > 0', "found no matching overload for '_+_'"),
        ('[1].map(x, x)[0].startsWith("a")', "found no matching overload for 'startsWith'"),
    ],
)
def test_admission_rejects_ill_typed_results(expr: str, message: str) -> None:
    with pytest.raises(CelCompileError, match=message):
        Environment.admission().compile(expr)


@GAP
@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ('cel.bind(x, "a", x)', "must evaluate to bool or the unknown type, not string"),
        ('device.attributes["d"].a.exists(x, true) == 1', "found no matching overload for '_==_'"),
    ],
)
def test_dra_rejects_ill_typed_selectors(expr: str, message: str) -> None:
    with pytest.raises(CelCompileError, match=message):
        Environment.dra_selector().compile(expr)


def test_the_gaps_still_fail_safely_at_run_time() -> None:
    """What happens instead: the selector errors when evaluated, so the device does not match."""
    from dra.cel import device_value
    from dra.errors import CelRuntimeError

    program = Environment.dra_selector().compile('cel.bind(x, "a", x)')
    with pytest.raises(CelRuntimeError, match="could not be converted to bool"):
        program.matches({"device": device_value("d", {})})
