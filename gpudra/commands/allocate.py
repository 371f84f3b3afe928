"""`gpudra allocate`: allocate claims on one node with the structured allocator (upstream or scored).

Files may hold several documents or `kind: List` objects (as `kubectl get -o yaml` writes them); objects are
picked by `kind`. The answer is `{"allocation": ...}` (`"allocations"` for several claims), `{"unsatisfiable":
reason, "why": [...]}` with exit code 1 (`why`: per failing request, the closest device and the check it failed),
or `{"error": message}` with exit code 2.

DRA objects are read strictly, as the API server reads them with `fieldValidation=Strict`: an unknown field is an
error naming its full path, an apiVersion other than resource.k8s.io/v1, v1beta2 or v1beta1 is an error, and
v1beta1/v1beta2 objects are converted to v1 as the API server converts them (`dra.model.conversion`), with a note
on stderr.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml
from typer.core import TyperCommand

from dra.allocator import AllocationError, Allocator, FeatureSet, Unsatisfiable
from dra.documents import load_documents, load_objects
from dra.errors import GpudraError, InputError
from dra.model import KINDS

from ..options import AllocatorMode, OptionError, allocator_mode
from ..outcome import Outcome
from ..signature import add_command

EXIT_UNSATISFIABLE = 1
EXIT_ERROR = 2


def load_kind(paths: Sequence[Path], *kinds: str) -> list[dict[str, Any]]:
    """Every object of the given kinds in the files, in file order."""
    return [doc for path in paths for doc in load_documents(path) if doc.get("kind") in kinds]


def load_dra(paths: Sequence[Path], kinds: Sequence[str], notes: list[str]) -> list[dict[str, Any]]:
    """The DRA objects of `kinds` in the files, in their resource.k8s.io/v1 form, read strictly by
    `dra.documents.load_objects` (`InputError` naming file, line, object and field; a note per converted object).
    Objects of other kinds are skipped (the allocator has no use for DeviceTaintRules)."""
    models = tuple(KINDS[kind] for kind in kinds)
    return [
        obj.to_k8s() for obj in load_objects(*paths, others="skip", strict=True, notes=notes) if isinstance(obj, models)
    ]


def _node(name: str | None, node_file: Path | None, slices: list[dict[str, Any]]) -> dict[str, Any]:
    if node_file is not None:
        nodes = load_kind([node_file], "Node")
        if len(nodes) != 1:
            raise InputError(f"expected exactly one Node (got {len(nodes)})", source=str(node_file))
        return nodes[0]
    if name is None:
        names = sorted({s["spec"]["nodeName"] for s in slices if (s.get("spec") or {}).get("nodeName")})
        if len(names) != 1:
            raise InputError(f"--node is required: the slices name {len(names)} nodes ({', '.join(names)})")
        name = names[0]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}


@dataclass(frozen=True, slots=True)
class AllocateOptions:
    """`gpudra allocate`'s options as typer shows them (the command's one signature)."""

    slices: Annotated[list[Path], typer.Option("--slices", help="ResourceSlice files (any number: --slices a b c).")]
    classes: Annotated[list[Path], typer.Option("--classes", help="DeviceClass files (any number).")]
    claim: Annotated[
        list[Path],
        typer.Option("--claim", help="ResourceClaim (or template) files; all their claims allocate together."),
    ]
    allocated: Annotated[
        list[Path], typer.Option("--allocated", help="Claims already allocated (their status counts; any number).")
    ] = field(default_factory=list)
    node: Annotated[str | None, typer.Option("--node", help="Node name (a Node without labels).")] = None
    node_file: Annotated[
        Path | None, typer.Option("--node-file", help="A Node object, for label-based node selectors.")
    ] = None
    mode: Annotated[str, typer.Option("--mode", help="upstream (exactly as kube-scheduler) or scored.")] = "upstream"
    features: Annotated[str | None, typer.Option("--features", help="e.g. 'all', 'none', '-DRADeviceTaints'.")] = None
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of YAML.")] = False


def _answer(options: AllocateOptions, mode: AllocatorMode, notes: list[str]) -> tuple[int, dict[str, Any]]:
    try:
        feature_set = FeatureSet.parse(options.features) if options.features else FeatureSet.latest()
        slice_objs = load_dra(options.slices, ("ResourceSlice",), notes)
        class_objs = load_dra(options.classes, ("DeviceClass",), notes)
        claims = load_dra(options.claim, ("ResourceClaim", "ResourceClaimTemplate"), notes)
        if not claims:
            raise InputError(
                "no ResourceClaim or ResourceClaimTemplate found", source=", ".join(map(str, options.claim))
            )
        done = load_dra(options.allocated, ("ResourceClaim",), notes)
        allocator = Allocator(slices=slice_objs, classes=class_objs, allocated=done, features=feature_set)
        node = _node(options.node, options.node_file, slice_objs)
        result = allocator.allocate(claims, node=node, mode=mode)
    except Unsatisfiable as err:
        answer: dict[str, Any] = {"unsatisfiable": err.summary}
        if err.details:
            answer["why"] = err.details
        return EXIT_UNSATISFIABLE, answer
    except (AllocationError, GpudraError) as err:
        return EXIT_ERROR, {"error": str(err)}
    if len(result) == 1:
        return 0, {"allocation": result[0]}
    return 0, {"allocations": result}


def allocate(options: AllocateOptions) -> Outcome:
    """The answer as YAML (or JSON) on stdout, whatever it is; the exit code says which it is (a bad `--mode` is a
    usage error)."""
    try:
        mode = allocator_mode(options.mode)
    except OptionError as exc:
        raise typer.BadParameter(f"expected {exc.expected}", param_hint="--mode") from exc
    notes: list[str] = []
    code, answer = _answer(options, mode, notes)
    text = json.dumps(answer, indent=2) if options.as_json else yaml.safe_dump(answer, sort_keys=False).rstrip()
    return Outcome(stdout=text + "\n", stderr="".join(n + "\n" for n in notes), code=code)


# Options that take several files, as `--slices a b c` (the same as `--slices a --slices b --slices c`).
MULTI_VALUE_OPTIONS = frozenset({"--slices", "--classes", "--claim", "--allocated"})


def spread_multi_values(args: Sequence[str]) -> list[str]:
    """`--slices a b --classes c d` as click reads repeated options: `--slices a --slices b --classes c ...`.
    Each value belongs to the option written before it; a bare word after any other option is left where it is
    (and click refuses it)."""
    out: list[str] = []
    current: str | None = None
    for arg in args:
        if arg == "--":
            current = None
            out.append(arg)
        elif arg.startswith("-"):
            name = arg.split("=", 1)[0]
            current = name if name in MULTI_VALUE_OPTIONS and "=" not in arg else None
            out.append(arg)
        elif current is not None and out and out[-1] != current:
            out.extend((current, arg))
        else:
            out.append(arg)
    return out


class _MultiValueCommand(TyperCommand):
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # typer's own (vendored) click Context
        return super().parse_args(ctx, spread_multi_values(args))


def register(app: typer.Typer) -> None:
    add_command(
        app,
        "allocate",
        allocate,
        help='Print {"allocation": ...} or {"unsatisfiable": reason} (exit 1).',
        cls=_MultiValueCommand,
    )
