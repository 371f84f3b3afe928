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
from pathlib import Path
from typing import Any

import typer
import yaml
from typer.core import TyperCommand

from dra.allocator import AllocationError, Allocator, FeatureSet, Unsatisfiable
from dra.documents import load_documents, load_objects
from dra.errors import GpudraError, InputError
from dra.model import KINDS

from ..options import AllocatorMode, OptionError, allocator_mode
from ..outcome import Outcome, emit

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


def _answer(
    slices: Sequence[Path],
    classes: Sequence[Path],
    claim: Sequence[Path],
    allocated: Sequence[Path],
    node: str | None,
    node_file: Path | None,
    mode: AllocatorMode,
    features: str | None,
    notes: list[str],
) -> tuple[int, dict[str, Any]]:
    try:
        feature_set = FeatureSet.parse(features) if features else FeatureSet.latest()
        slice_objs = load_dra(slices, ("ResourceSlice",), notes)
        class_objs = load_dra(classes, ("DeviceClass",), notes)
        claims = load_dra(claim, ("ResourceClaim", "ResourceClaimTemplate"), notes)
        if not claims:
            raise InputError("no ResourceClaim or ResourceClaimTemplate found", source=", ".join(map(str, claim)))
        done = load_dra(allocated, ("ResourceClaim",), notes)
        allocator = Allocator(slices=slice_objs, classes=class_objs, allocated=done, features=feature_set)
        result = allocator.allocate(claims, node=_node(node, node_file, slice_objs), mode=mode)
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


def allocate(
    *,
    slices: Sequence[Path],
    classes: Sequence[Path],
    claim: Path | Sequence[Path],
    allocated: Sequence[Path] = (),
    node: str | None = None,
    node_file: Path | None = None,
    mode: AllocatorMode = "upstream",
    features: str | None = None,
    as_json: bool = False,
) -> Outcome:
    """The answer as YAML (or JSON) on stdout, whatever it is; the exit code says which it is."""
    notes: list[str] = []
    claims = [claim] if isinstance(claim, Path) else list(claim)
    code, answer = _answer(slices, classes, claims, allocated, node, node_file, mode, features, notes)
    text = json.dumps(answer, indent=2) if as_json else yaml.safe_dump(answer, sort_keys=False).rstrip()
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
    @app.command("allocate", cls=_MultiValueCommand)
    def _allocate(
        slices: list[Path] = typer.Option(..., "--slices", help="ResourceSlice files (any number: --slices a b c)."),
        classes: list[Path] = typer.Option(..., "--classes", help="DeviceClass files (any number)."),
        claim: list[Path] = typer.Option(
            ..., "--claim", help="ResourceClaim (or template) files; all their claims allocate together."
        ),
        allocated: list[Path] = typer.Option(
            [], "--allocated", help="Claims already allocated (their status counts; any number)."
        ),
        node: str | None = typer.Option(None, "--node", help="Node name (a Node without labels)."),
        node_file: Path | None = typer.Option(
            None, "--node-file", help="A Node object, for label-based node selectors."
        ),
        mode: str = typer.Option("upstream", "--mode", help="upstream (exactly as kube-scheduler) or scored."),
        features: str | None = typer.Option(None, "--features", help="e.g. 'all', 'none', '-DRADeviceTaints'."),
        as_json: bool = typer.Option(False, "--json", help="Print JSON instead of YAML."),
    ) -> None:
        """Print {"allocation": ...} or {"unsatisfiable": reason} (exit 1)."""
        try:
            checked_mode = allocator_mode(mode)
        except OptionError as exc:
            raise typer.BadParameter(f"expected {exc.expected}", param_hint="--mode") from exc
        emit(
            allocate(
                slices=slices,
                classes=classes,
                claim=claim,
                allocated=allocated,
                node=node,
                node_file=node_file,
                mode=checked_mode,
                features=features,
                as_json=as_json,
            )
        )
