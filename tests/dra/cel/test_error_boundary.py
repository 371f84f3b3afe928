"""The libraries' own exceptions (AddrParseError, PrefixParseError, URLError, SemverError, GoRegexError, the
format helpers') stay inside `dra.cel`: compiling or evaluating raises only `CelError`, constant or not."""

from __future__ import annotations

import pytest

from dra.cel import Environment, NoMatchingOverload
from dra.errors import CelCompileError, CelError, CelRuntimeError

# (call with `{}` where the bad string goes, the bad string)
BAD_CALLS = [
    ("ip({})", "not-an-ip"),
    ("isIP({})", "::zz"),
    ("ip.isCanonical({})", "1.2.3"),
    ("cidr({})", "10.0.0.0/99"),
    ("isCIDR({})", "10.0.0.0/"),
    ("cidr('10.0.0.0/8').containsIP({})", "300.1.1.1"),
    ("cidr('10.0.0.0/8').containsCIDR({})", "10.0.0.0/x"),
    ("url({})", "://no-scheme"),
    ("isURL({})", "http://[::1"),
    ("semver({})", "1.2.x"),
    ("isSemver({})", "01.2.3"),
    ("quantity({})", "1.5.5Gi"),
    ("'abc'.matches({})", "("),
    ("'abc'.find({})", "(?<name>x"),
    ("'abc'.findAll({})", "[z-a]"),
    ("{}.format([1])", "%z"),
    ("{}.format([1, 2])", "%d %s %q"),
    ("{}.format(['x'])", "%d"),
    ("{}.format([1.5])", "%x"),
    ("{}.format([{{1: 2}}])", "%.3f"),
    ("format.named({}).validate('x')", "no-such-format"),
    ("duration({})", "1x"),
    ("timestamp({})", "yesterday"),
    ("int({})", "1e3"),
]


def _outcome(env: Environment, expression: str, activation: dict[str, object]) -> object:
    try:
        return env.evaluate(expression, activation)
    except CelError as exc:
        return exc
    except Exception as exc:  # pragma: no cover - what this test exists to catch
        pytest.fail(f"{expression}: {type(exc).__name__} escaped dra.cel: {exc}")


@pytest.mark.parametrize(("call", "bad"), BAD_CALLS)
def test_library_errors_surface_as_cel_errors(call: str, bad: str) -> None:
    env = Environment.admission()
    constant = call.format(repr(bad))
    dynamic = call.format("object.s")
    _outcome(env, constant, {})
    _outcome(env, dynamic, {"object": {"s": bad}})


def test_a_constant_call_that_fails_is_a_compile_or_runtime_error_never_a_value_error() -> None:
    env = Environment.admission()
    with pytest.raises((CelCompileError, CelRuntimeError)):
        env.evaluate("ip('not-an-ip')")
    with pytest.raises(CelCompileError):
        env.compile("'abc'.matches('(')")


def test_no_matching_overload_is_a_cel_runtime_error() -> None:
    from dra.cel.quantity import REGISTRY

    with pytest.raises(NoMatchingOverload) as info:
        REGISTRY.call_global("quantity", (1,))
    assert isinstance(info.value, CelRuntimeError)
    assert info.value.name == "quantity" and info.value.args_types == ("int",)
