"""A seeded generator of hostile AdmissionReviews: issue 22's findings, issue 12's edge values, and random mutations.

Each `Attack` is a body to POST to /mutate; `half_sent` ones declare their whole length but send only the first half
and then wait, as a stalled or hostile client does. `corpus(seed)` is the same list for the same seed; the named
cases come first, in a fixed order, then `mutations` reviews of a pristine GPU pod with one field made hostile.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from webhook.review import pod_review

__all__ = ["Attack", "corpus", "pristine_pod", "pristine_review"]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@dataclass(frozen=True)
class Attack:
    name: str
    body: bytes
    half_sent: bool = False  # send the headers (the whole Content-Length) and half the body, then stop


def pristine_pod() -> dict[str, Any]:
    """examples/pod-legacy-1gpu.yaml: one whole GPU through nvidia.com/gpu, which the webhook must translate."""
    doc = yaml.safe_load((EXAMPLES / "pod-legacy-1gpu.yaml").read_text())
    assert isinstance(doc, dict)
    return doc


def pristine_review(uid: str = "pristine") -> bytes:
    return pod_review(pristine_pod(), uid=uid, namespace="team-a")


def _review(pod: dict[str, Any], uid: str) -> bytes:
    return pod_review(pod, uid=uid, namespace="team-a")


def _gpu_container(pod: dict[str, Any]) -> dict[str, Any]:
    container = pod["spec"]["containers"][0]
    assert isinstance(container, dict)
    return container


def _expansion() -> Attack:
    """Issue 22 item 1: env A of 100 kB and args `$(A)` x 6,000, a 122 kB pod that expands to 600 MB."""
    pod = pristine_pod()
    container = _gpu_container(pod)
    container["env"] = [{"name": "A", "value": "x" * 100_000}]
    container["args"] = ["$(A)"] * 6000
    return Attack("$(A) x 6000 over a 100 kB env", _review(pod, "expansion"))


def _shell_script(size: int, rng: random.Random) -> str:
    """An `sh -c` script of about `size` characters: quoted words, escapes and variables, as shlex must split."""
    words = ["echo", "'quoted words'", '"$(HOME)/x"', "a\\ b", "--flag=1", "&&", "python", "-m", "train"]
    parts: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(words)
        parts.append(word)
        length += len(word) + 1
    return " ".join(parts)


def _shell(size: int, rng: random.Random, uid: str) -> Attack:
    """Issue 22 item 2: a long `sh -c` script (400 kB took 3.9 s of quadratic shlex parsing)."""
    pod = pristine_pod()
    container = _gpu_container(pod)
    container["command"] = ["sh", "-c", _shell_script(size, rng)]
    return Attack(f"sh -c script of {size // 1000} kB", _review(pod, uid))


def _big_env(i: int) -> Attack:
    """Issue 22 item 5: 1 MB of env in a GPU container, distinct per pod (an entry-bounded cache keeps them all)."""
    pod = pristine_pod()
    pod["metadata"]["name"] = f"big-env-{i}"
    _gpu_container(pod)["env"] = [{"name": "BLOB", "value": f"{i}-" + "y" * 1_000_000}]
    return Attack("1 MB env in a GPU container", _review(pod, f"big-env-{i}"))


def _many_containers() -> Attack:
    """Issue 22 item 10: 5,000 GPU containers in one pod."""
    pod = pristine_pod()
    first = _gpu_container(pod)
    pod["spec"]["containers"] = [{**copy.deepcopy(first), "name": f"c{i}"} for i in range(5000)]
    return Attack("5,000 GPU containers", _review(pod, "many-containers"))


def _deep_json() -> Attack:
    review = json.loads(pristine_review("deep"))
    review["request"]["object"]["metadata"]["annotations"] = {"deep": "DEEP"}
    deep = b"[" * 10_000 + b'"x"' + b"]" * 10_000  # spliced in as text: encoding it would recurse here
    return Attack("JSON nested 10,000 deep", json.dumps(review).encode().replace(b'"DEEP"', deep))


def _annotated(name: str, uid: str, annotations: dict[str, str]) -> Attack:
    pod = pristine_pod()
    pod["metadata"]["annotations"] = annotations
    return Attack(name, _review(pod, uid))


def _gpu_count(value: Any, uid: str) -> Attack:
    pod = pristine_pod()
    _gpu_container(pod)["resources"]["limits"]["nvidia.com/gpu"] = value
    return Attack(f"nvidia.com/gpu: {value!r}", _review(pod, uid))


def _half_sent(size: int) -> Attack:
    pod = pristine_pod()
    pod["metadata"]["annotations"] = {"pad": "p" * size}
    return Attack(f"half of a {size // 1000} kB body, then nothing", _review(pod, "half-sent"), half_sent=True)


def named_cases(rng: random.Random) -> list[Attack]:
    cases = [
        _expansion(),
        _shell(400_000, rng, "shell-400k"),
        *(_big_env(i) for i in range(8)),
        _many_containers(),
        _deep_json(),
        _annotated("gpudra.io/vram: 1e400", "vram-1e400", {"gpudra.io/vram": "1e400"}),
        _annotated("gpudra.io/vram: -1e400", "vram-neg", {"gpudra.io/vram": "-1e400"}),
        _gpu_count("1000m", "gpu-1000m"),
        _gpu_count("0.001k", "gpu-0.001k"),
        _gpu_count(2**70, "gpu-2-70"),
        _gpu_count(1e308, "gpu-1e308"),
        _gpu_count("1e400", "gpu-1e400"),
        _half_sent(2_000_000),
        _half_sent(2_000),
        Attack("body that is not JSON", b"\x00\xffnot json"),
        Attack("empty body", b""),
        Attack("truncated review", pristine_review("truncated")[:100]),
        Attack("review of 9 MB", pristine_review("nine-mb")[:-1] + b', "pad": "' + b"x" * 9_000_000 + b'"}'),
    ]
    return cases


# Values that broke gpudra before, or could: wrong types, huge and tiny numbers, long and odd strings.
_VALUES: list[Any] = [
    None, True, 0, -1, 2**70, 1e308, -1e308, "", "1e400", "1000m", "0.001k", "2Ki", "-1", "NaN", "Infinity",
    "$(A)" * 200, "\ud800", "x" * 70_000, [], {}, [[[[["deep"]]]]], {"k": {"k": {"k": "v"}}}, ["a"] * 1000,
]  # fmt: skip
_PATHS: list[tuple[str | int, ...]] = [
    ("request", "uid"), ("request", "operation"), ("request", "namespace"), ("request", "dryRun"),
    ("request", "kind"), ("request", "object", "metadata"), ("request", "object", "metadata", "annotations"),
    ("request", "object", "metadata", "name"), ("request", "object", "spec"),
    ("request", "object", "spec", "containers"), ("request", "object", "spec", "containers", 0),
    ("request", "object", "spec", "containers", 0, "args"), ("request", "object", "spec", "containers", 0, "env"),
    ("request", "object", "spec", "containers", 0, "command"),
    ("request", "object", "spec", "containers", 0, "resources"),
    ("request", "object", "spec", "containers", 0, "resources", "limits"),
    ("request", "object", "spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"),
    ("request", "object", "spec", "resourceClaims"), ("request", "object", "spec", "initContainers"),
]  # fmt: skip


def _hostile_value(rng: random.Random) -> Any:
    value = rng.choice(_VALUES)
    shape = rng.randrange(4)
    if shape == 1:
        return {"gpudra.io/vram": rng.choice(["1e400", "80Gi", "-5", "0x10", "9" * 400])}
    if shape == 2:
        return [{"name": f"V{i}", "value": "$(V0)" * rng.randrange(1, 50)} for i in range(rng.randrange(1, 20))]
    return value


def mutations(count: int, rng: random.Random) -> Iterator[Attack]:
    base = json.loads(pristine_review("mutation"))
    made = 0
    while made < count:
        review = copy.deepcopy(base)
        path = rng.choice(_PATHS)
        target: Any = review
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = _hostile_value(rng)
        made += 1
        yield Attack(f"random: {'/'.join(map(str, path))}", json.dumps(review).encode())


def corpus(seed: int = 0, *, mutation_count: int = 150) -> list[Attack]:
    rng = random.Random(seed)
    return named_cases(rng) + list(mutations(mutation_count, rng))
