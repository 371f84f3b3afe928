"""Differential test of the library functions against the Go oracle (Kubernetes CEL, tests/oracle/cmd/k8s-cel).

Seeded random inputs for regex, strings and format, URLs, IPs/CIDRs, semvers, quantities, named formats and
sort ties, passed through `object` so that neither side folds them at compile time; results and error texts
must agree. `$GPUDRA_K8S_CEL` may name a built k8s-cel binary; otherwise the `k8s_cel_oracle` fixture is used.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from typing import Any

import pytest

from dra.cel import Environment, from_json, to_json
from dra.errors import CelCompileError, CelRuntimeError
from tests.dra.cel.conftest import Oracle

Probe = tuple[str, dict[str, Any]]


def _text(rng: random.Random, alphabet: list[str], most: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, most)))


def probes(seed: int = 20260) -> Iterator[Probe]:
    rng = random.Random(seed)
    atoms = ["a", "b", "é", ".", "[ab]", "[^a]", "\\b", "^", "$", "(a|b)", "\\d", "\\w", " ", "(", "[", "\\"]
    quants = ["", "", "*", "+", "?", "*?", "{2}", "{1,2}", "**"]
    for _ in range(150):
        pattern = "".join(rng.choice(atoms) + rng.choice(quants) for _ in range(rng.randint(1, 4)))
        obj = {"s": _text(rng, list("aabé xB1\n"), 12), "p": pattern}
        yield f"object.s.findAll(object.p, {rng.choice([-1, 0, 1, 3])})", obj
        yield "object.s.find(object.p)", obj
    chars = list("aab€é😀 ")
    for _ in range(80):
        obj = {"s": _text(rng, chars, 8), "t": _text(rng, chars, 3), "i": rng.randint(-1, 10), "j": rng.randint(-1, 10)}
        for expr in (
            "object.s.indexOf(object.t, object.i)",
            "object.s.lastIndexOf(object.t)",
            "object.s.lastIndexOf(object.t, object.i)",
            "object.s.charAt(object.i)",
            "object.s.substring(object.i, object.j)",
            "object.s.split(object.t, object.i)",
            "object.s.replace(object.t, 'Z', object.i)",
            "strings.quote(object.s)",
            "'%s|%x|%.2f|%e'.format([object.s, object.t, double(object.i) * 1234.5, double(object.j) / 7.0])",
        ):
            yield expr, obj
    url_parts = ["http", "https", "ftp", ":", "//", "/", "?", "#", "@", "[", "]", "::1", "1.2.3.4", "a", "%20", "%zz"]
    url_parts += [":80", ":x", " ", "é", "u:p", "&", "=", ";", "+", "%25", "fe80::1"]
    for _ in range(150):
        obj = {"s": "".join(rng.choice(url_parts) for _ in range(rng.randint(1, 7)))}
        yield "isURL(object.s)", obj
        yield "[url(object.s).getScheme(), url(object.s).getHost(), url(object.s).getPort()]", obj
        yield "[url(object.s).getHostname(), url(object.s).getEscapedPath()]", obj
        yield "url(object.s).getQuery()", obj
    ip_parts = [
        "1",
        "0",
        "01",
        "255",
        "256",
        ".",
        ":",
        "::",
        "a",
        "ffff",
        "%",
        "eth0",
        "/",
        "24",
        "128",
        "33",
        "::ffff:",
    ]
    for _ in range(150):
        obj = {"s": "".join(rng.choice(ip_parts) for _ in range(rng.randint(1, 8)))}
        yield "ip(object.s)", obj
        yield "isIP(object.s) ? [string(ip(object.s).family()), string(ip.isCanonical(object.s))] : []", obj
        yield "cidr(object.s)", obj
        yield (
            "isCIDR(object.s) ? [string(cidr(object.s).masked()), string(cidr(object.s).containsIP('10.0.0.1'))] : []",
            obj,
        )
    semver_parts = ["1", "0", "01", ".", "-", "+", "a", "rc", "v", "99999999999999999999", "_", " "]
    for _ in range(120):
        obj = {"s": "".join(rng.choice(semver_parts) for _ in range(rng.randint(1, 8)))}
        yield "semver(object.s)", obj
        yield "semver(object.s, true)", obj
        yield "isSemver(object.s, true) ? semver(object.s, true).compareTo(semver('1.0.0-rc.1')) : 9", obj
    quantity_parts = [
        "1",
        "0",
        ".",
        "5",
        "-",
        "+",
        "e",
        "3",
        "k",
        "K",
        "Mi",
        "Gi",
        "m",
        "n",
        "Ki",
        "i",
        "Ei",
        "9999999999",
    ]
    for _ in range(120):
        obj = {"s": "".join(rng.choice(quantity_parts) for _ in range(rng.randint(1, 6)))}
        yield "quantity(object.s) == quantity('1k')", obj
        yield (
            "isQuantity(object.s) ? [sign(quantity(object.s)), quantity(object.s).compareTo(quantity('1Mi'))] : []",
            obj,
        )
        yield "isQuantity(object.s) && quantity(object.s).isInteger() ? quantity(object.s).asInteger() : 0", obj
    format_parts = ["a", "A", "-", ".", "_", "/", "1", " ", "é", "a" * 64, "x.y", "=", "+", "2020-01-3", ":00Z", "T"]
    names = ["dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName", "dns1123LabelPrefix"]
    names += ["dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue", "uri", "uuid", "byte", "date", "datetime"]
    for _ in range(60):
        obj = {"s": "".join(rng.choice(format_parts) for _ in range(rng.randint(0, 5)))}
        for name in names:
            yield f"format.{name}().validate(object.s)", obj
    for _ in range(60):
        size = rng.choice([13, 20, 50, 51, 100])
        obj = {"l": [rng.randint(0, 6) for _ in range(size)]}
        yield f"lists.range({size}).sortBy(i, object.l[i])", obj


def _ours(env: Environment, expr: str, obj: dict[str, Any]) -> tuple[str, Any]:
    try:
        program = env.compile(expr)
    except CelCompileError as err:
        return "compile", err.message
    try:
        return "result", to_json(program.evaluate({"object": from_json(obj)}))
    except CelRuntimeError as err:
        return "eval", err.message


def _theirs(result: dict[str, Any]) -> tuple[str, Any]:
    if result.get("error") is None:
        return "result", result.get("result")
    message = re.sub(r"^compilation failed: ERROR: <input>:\d+:\d+: ", "", str(result["error"])).split("\n")[0]
    return str(result.get("stage")), message


def _oracle_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"@optional"}:
            return _oracle_json(value["@optional"][0]) if value["@optional"] else None
        return {k: _oracle_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_oracle_json(v) for v in value]
    return value


@pytest.mark.oracle
def test_library_functions_agree_with_go_oracle(oracle: Oracle) -> None:
    cases = list(probes())
    results = oracle([{"expression": e, "env": "admission", "variables": {"object": o}} for e, o in cases])
    env = Environment.admission()
    disagreements = []
    for (expr, obj), result in zip(cases, results, strict=True):
        ours, theirs = _ours(env, expr, obj), _theirs(result)
        if ours[0] == "result":
            ours = ("result", _oracle_json(ours[1]))
        if ours != theirs:
            disagreements.append(f"{expr} with {obj}: ours {ours!r}, oracle {theirs!r}")
    assert len(cases) > 2000
    assert not disagreements, "\n".join(disagreements[:40])
