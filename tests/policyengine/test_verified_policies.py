"""Policy files that loaded cleanly before, taken back from the user's cache (policyengine.verified): the same
decisions as a full load, compiled lazily, never for a changed or broken file, robust to a broken store."""

from __future__ import annotations

import copy
import json
import os
import pickle
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from policyengine import load_policies, shipped_policies_dir, verified
from policyengine.loader import CompiledExpr
from policyengine.translate import translate

ROOT = Path(__file__).resolve().parents[2]
PODS = ["pod-legacy-vram.yaml", "pod-legacy-1gpu.yaml", "pod-vllm-tp4.yaml", "pod-mig-legacy.yaml"]


@pytest.fixture
def cache_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    monkeypatch.delenv("GPUDRA_NO_PARSER_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    verified.store.cache_clear()
    yield tmp_path / "cache"
    verified.store.cache_clear()


def _decisions(policies: Any) -> list[Any]:
    """What each example pod becomes: the translated pod and its templates."""
    out = []
    for name in PODS:
        pod = yaml.safe_load((ROOT / "examples" / name).read_text())
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team-a"}}
        decision = policies.evaluate(copy.deepcopy(pod), namespace, {"operation": "CREATE"})
        translation = translate(copy.deepcopy(pod), decision)
        out.append((decision.policy, translation.pod, translation.templates))
    return out


def _expressions(policies: Any) -> list[CompiledExpr]:
    found: list[CompiledExpr] = []

    def walk(value: Any) -> None:
        if isinstance(value, CompiledExpr):
            found.append(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item)
        elif hasattr(value, "__dataclass_fields__"):
            for name in value.__dataclass_fields__:
                walk(getattr(value, name))

    for policy in policies.policies:
        walk(policy)
    return found


def test_a_clean_file_comes_back_the_same_and_compiles_when_evaluated(cache_home: Path) -> None:
    fresh = load_policies(reuse_verified=True)  # a miss: loaded in full, then stored
    assert not fresh.errors
    verified.store().save()
    [stored] = list((cache_home / "gpudra").glob("policies-*.pickle"))
    verified.store.cache_clear()  # a new process's view
    again = load_policies(reuse_verified=True)
    taken_back = _expressions(again)
    assert taken_back and all(e.compiled is None for e in taken_back)  # nothing compiled yet
    assert [p.name for p in again.policies] == [p.name for p in fresh.policies]
    assert [(p.mode, p.priority, p.failure_policy, p.extended_resource_mapping) for p in again.policies] == [
        (p.mode, p.priority, p.failure_policy, p.extended_resource_mapping) for p in fresh.policies
    ]
    assert _decisions(again) == _decisions(fresh) == _decisions(load_policies())
    assert any(e.compiled is not None for e in taken_back)  # evaluated ones compiled on first use
    assert stored.stat().st_mode & 0o077 == 0


def test_the_memo_analysis_comes_back_with_the_policies_and_names_their_own_expressions(cache_home: Path) -> None:
    from policyengine._memo import Analysis, Plan, _pod_level_exprs, _pod_level_reads, _policy_reads

    load_policies(reuse_verified=True)
    verified.store().save()
    verified.store.cache_clear()  # a new process's view
    recalled = []
    for file in sorted(shipped_policies_dir().glob("*.yaml")):
        found = verified.recall(file.read_text(), str(file))
        assert found is not None
        recalled.extend(found)
    assert recalled
    for policy in recalled:  # as taken back, before any PolicySet asked for it
        kept = policy.memo_analysis
        assert isinstance(kept, Analysis)
        own = {id(e) for e in _pod_level_exprs(policy)}
        assert kept.reads and all(id(expr) in own for expr, _reads in kept.reads)  # the same objects, not copies
        # what a fresh analysis of the taken-back policy finds
        assert kept.plan == Plan.of(policy)
        assert [(e.source, r) for e, r in kept.reads] == [(e.source, r) for e, r in _pod_level_reads(policy)]
        assert kept.policy_reads == _policy_reads(policy, kept.reads)
    assert _decisions(load_policies(reuse_verified=True)) == _decisions(load_policies())


def test_a_changed_or_broken_file_is_loaded_in_full(cache_home: Path, tmp_path: Path) -> None:
    directory = tmp_path / "policies"
    directory.mkdir()
    source = (shipped_policies_dir() / "whole-gpu.yaml").read_text()
    policy = directory / "p.yaml"
    policy.write_text(source)
    load_policies(directory, reuse_verified=True)
    assert verified.recall(source, str(policy)) is not None
    assert verified.recall(source, str(directory / "other.yaml")) is None  # positions name the file: keyed by it
    edited = source + "\n# an edit\n"
    assert verified.recall(edited, str(policy)) is None
    broken = source + "\n---\napiVersion: gpudra.io/v1alpha1\nkind: GPUClaimPolicy\nmetadata: {name: bad}\n"
    broken += "spec:\n  matchConditions:\n  - name: x\n    expression: 'object.spec +'\n"
    policy.write_text(broken)
    loaded = load_policies(directory, reuse_verified=True)
    assert loaded.errors and "CEL compile error" in loaded.errors[0].message
    assert verified.recall(broken, str(policy)) is None  # a file with an error is never stored
    assert load_policies(directory, reuse_verified=True).errors  # and keeps reporting it


def test_an_unreadable_entry_is_a_miss(cache_home: Path) -> None:
    text = (shipped_policies_dir() / "guardrails.yaml").read_text()
    file = str(shipped_policies_dir() / "guardrails.yaml")
    verified.store().put(verified._key(text, file), pickle.dumps(["not a policy"]))
    assert verified.recall(text, file) is None
    verified.store().put(verified._key(text, file), b"\x80\x05 truncated")
    assert verified.recall(text, file) is None
    assert not load_policies(shipped_policies_dir() / "guardrails.yaml", reuse_verified=True).errors
    assert verified.recall(text, file) is not None


_PROBE = """
import json, sys
from policyengine import load_policies, verified
from policyengine.loader import CompiledExpr
from policyengine.translate import translate
policies = load_policies(reuse_verified=True)
print(json.dumps({"errors": len(policies.errors), "pydantic": "policyengine.model" in sys.modules,
                  "hits": sum(1 for p in policies.policies if all(
                      not isinstance(v, CompiledExpr) or v.compiled is None for _, v in p.match_conditions))}))
"""


def test_a_second_process_skips_the_document_models(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GPUDRA_NO_PARSER_CACHE"}
    env["XDG_CACHE_HOME"] = str(tmp_path)

    def run() -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, check=True)
        result: dict[str, Any] = json.loads(done.stdout)
        return result

    first, second = run(), run()
    assert first["errors"] == second["errors"] == 0
    assert first["pydantic"] is True and first["hits"] == 0
    assert second["pydantic"] is False and second["hits"] == len(load_policies().policies)
    env["GPUDRA_NO_PARSER_CACHE"] = "1"
    assert run()["pydantic"] is True  # turned off: loaded in full


def test_claim_verdicts_are_kept_between_processes_once_turned_on(
    cache_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from policyengine import _claim

    monkeypatch.setattr(verified, "_claims_kept", False)
    verified.claim_store.cache_clear()
    good = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}
    bad = {"devices": {"requests": [{"name": "Not_A_DNS_Label", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}
    problems = _claim.validate_claim(bad)
    assert problems and _claim.validate_claim(good) == []
    assert verified.claim_verdict(repr(bad)) is None  # off: nothing read or kept
    verified.keep_claim_verdicts()
    verified.claim_store.cache_clear()
    monkeypatch.setattr(_claim, "_VALIDATED", {})
    assert _claim.validate_claim(bad) == problems
    verified.claim_store().save()
    verified.claim_store.cache_clear()  # a new process's view
    assert verified.claim_verdict(repr(bad)) == tuple(problems)
    assert verified.claim_verdict(repr(good)) is None  # never checked while on
    verified.claim_store().put(repr(good), pickle.dumps(["not", "a", "tuple"]))
    assert verified.claim_verdict(repr(good)) is None  # an unreadable verdict is a miss, and is checked again
    monkeypatch.setattr(_claim, "_VALIDATED", {})
    assert _claim.validate_claim(good) == []
    assert verified.claim_verdict(repr(good)) == ()
