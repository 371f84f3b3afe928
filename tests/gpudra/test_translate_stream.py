"""`gpudra translate FILE` reads and translates a stream one document at a time (issue 25, item 9): the output is
the text the whole-file translation printed, a Namespace later in the stream still decides the pods before it, a
broken document further down still fails the file with nothing on stdout, the progress bar is drawn only on a
terminal, and worker processes (batches made tiny here) print exactly what one process prints."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dra.documents import iter_documents, read_documents
from dra.errors import InputError
from gpudra.commands import _translate_stream as stream_module
from gpudra.commands import translate as translate_command
from gpudra.commands.policy import policy_set
from gpudra.commands.translate import checked, translate_file
from gpudra.outcome import Outcome
from gpudra.render.documents import yaml_stream
from gpudra.render.translation import TranslationOutput, objects_with_templates, translation_json
from manifest_translation import translate_documents

ROOT = Path(__file__).resolve().parents[2]
WORKLOADS = ROOT / "tests" / "gpudra" / "fixtures" / "workloads"
EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def stream(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every workload fixture and a ConfigMap, twice (the second copy needs no new claim templates)."""
    parts = [p.read_text() for p in sorted(WORKLOADS.glob("*.yaml"))]
    parts.append("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {a: '1'}\n")
    path = tmp_path_factory.mktemp("stream") / "stream.yaml"
    path.write_text("---\n".join(parts + parts))
    return path


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_the_streamed_output_is_the_whole_file_translation(stream: Path, fmt: str) -> None:
    policies = checked(policy_set(None), None)  # as translate_file checks them: against the catalog
    objects, errors = translate_documents(read_documents(stream), policies)
    assert not errors
    expected = (
        yaml_stream(objects_with_templates(objects))
        if fmt == "yaml"
        else json.dumps(translation_json(objects), indent=2) + "\n"
    )
    outcome = translate_file(stream, output=fmt)
    assert outcome.code == 0, outcome.stderr
    assert outcome.stdout == expected
    built = TranslationOutput("json" if fmt == "json" else "yaml")
    for obj in objects:
        built.add(obj)
    assert built.text() == expected


def test_an_empty_list_and_an_empty_stream_print_as_before() -> None:
    empty = TranslationOutput("json")
    assert empty.text() == json.dumps(translation_json([]), indent=2) + "\n"
    assert TranslationOutput("yaml").text() == yaml_stream([])


def test_a_namespace_later_in_the_stream_decides_the_pods_before_it(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        (EXAMPLES / "pod-ray-train.yaml").read_text() + "---\n" + (EXAMPLES / "namespace-team-a.yaml").read_text()
    )
    outcome = translate_file(path)
    assert outcome.code == 1 and not outcome.stdout
    assert "namespace team-a allows at most 4" in outcome.stderr
    assert translate_file(EXAMPLES / "pod-ray-train.yaml").code == 0  # without its Namespace it is allowed


def test_documents_are_read_one_at_a_time_and_a_later_error_still_fails_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text((WORKLOADS / "job-vectoradd.yaml").read_text() + "---\nkind: Job\nspec: [\n")
    documents = iter_documents(path)
    assert next(documents).data["kind"] == "Job"  # yielded before the broken document is parsed
    with pytest.raises(InputError, match="invalid YAML"):
        next(documents)
    outcome = translate_file(path)
    assert outcome.code == 2 and not outcome.stdout and f"{path}:" in outcome.stderr


def test_progress_is_reported_by_characters_read(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("a: 1\n---\nb: 2\n---\nc: 3\n")
    seen: list[tuple[int, int]] = []
    assert len(list(iter_documents(path, lambda done, total: seen.append((done, total))))) == 3
    assert [total for _, total in seen] == [len(path.read_text())] * 3
    assert [done for done, _ in seen] == sorted(done for done, _ in seen) and seen[-1][0] == seen[-1][1]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_progress_bar_is_drawn_only_on_a_terminal(stream: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with translate_command._progress_bar("x") as progress:
        assert progress is None
    assert translate_file(stream).code == 0 and pipe.getvalue() == ""
    terminal = _Terminal()
    monkeypatch.setattr("sys.stderr", terminal)
    monkeypatch.setenv("TERM", "xterm")
    with translate_command._progress_bar("translating") as progress:
        assert progress is not None
        progress(50, 100)
        progress(100, 100)
    assert "translating" in terminal.getvalue()


# Worker processes: a stream cut into batches gives the one-process output, messages and exit code.


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream_module, "_MIN_BATCH_CHARS", 1500)


# The workers run in a fresh interpreter: this one may run threads other tests left (a webhook's caches, a
# control plane's watchers), and `translate_stream` rightly never forks a process that runs other threads.
_WORKERS = """
import json, sys
from gpudra.commands import _translate_stream as stream_module, translate as translate_command
stream_module._MIN_BATCH_CHARS = 1500
used = []
real = stream_module.translate_stream
def counting(*args, **kwargs):
    found = real(*args, **kwargs)
    used.append(found.jobs)
    return found
translate_command.translate_stream = counting
out = translate_command.translate_file(sys.argv[1], output=sys.argv[2], jobs=3)
print(json.dumps({"stdout": out.stdout, "stderr": out.stderr, "code": out.code, "jobs": used}))
"""


def _same_in_workers(path: Path, fmt: str = "yaml") -> tuple[Outcome, int | None]:
    """One process here, three workers in a fresh interpreter: the same output, messages and exit code; and how
    many processes the stream was translated in (None when the stream failed to read)."""
    alone = translate_file(path, output=fmt, jobs=1)
    done = subprocess.run(
        [sys.executable, "-c", _WORKERS, str(path), fmt], capture_output=True, text=True, check=True, cwd=ROOT
    )
    spread = json.loads(done.stdout)
    assert (spread["stdout"], spread["stderr"], spread["code"]) == (alone.stdout, alone.stderr, alone.code)
    return alone, (spread["jobs"] or [None])[0]


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_workers_print_what_one_process_prints(stream: Path, fmt: str, small_batches: None) -> None:
    alone, jobs = _same_in_workers(stream, fmt)
    assert alone.code == 0 and alone.stdout
    assert jobs == 3 and len(stream_module._batches(stream.read_text(), 3)) > 3


def test_workers_report_a_broken_document_at_its_line(stream: Path, tmp_path: Path, small_batches: None) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(stream.read_text() + "---\nkind: Job\nspec: [\n")
    alone, _ = _same_in_workers(path)
    lines = path.read_text().count("\n")
    assert alone.code == 2 and alone.stderr.startswith(f"error: {path}:{lines + 1}: invalid YAML")  # after `[`


def test_workers_deny_and_decide_in_a_later_namespace(stream: Path, tmp_path: Path, small_batches: None) -> None:
    path = tmp_path / "s.yaml"
    pod = (EXAMPLES / "pod-ray-train.yaml").read_text()
    path.write_text(pod + "---\n" + stream.read_text() + "---\n" + (EXAMPLES / "namespace-team-a.yaml").read_text())
    alone, _ = _same_in_workers(path)
    assert alone.code == 1 and "namespace team-a allows at most 4" in alone.stderr


def test_a_stream_with_aliases_stays_in_one_process(stream: Path, small_batches: None) -> None:
    text = stream.read_text() + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
    text += "  labels: &l {x: y}\n  annotations: *l\n"
    found = stream_module.translate_stream(text, "s", policy_set(None), None, None, TranslationOutput("yaml"), jobs=3)
    assert found.jobs == 1 and found.translations > 0


def test_an_alias_bomb_is_refused_in_one_process_or_many(stream: Path, tmp_path: Path, small_batches: None) -> None:
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    path = tmp_path / "bomb.yaml"
    path.write_text(stream.read_text() + "---\n" + bomb)
    for jobs in (1, 3):
        outcome = translate_file(path, jobs=jobs)
        assert outcome.code == 2 and not outcome.stdout and "aliases expand to more than" in outcome.stderr


def test_a_namespace_is_found_in_a_stream_that_stays_in_one_process(tmp_path: Path) -> None:
    aliased = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l {x: y}\n  annotations: *l\n"
    path = tmp_path / "s.yaml"
    pod, namespace = (EXAMPLES / "pod-ray-train.yaml").read_text(), (EXAMPLES / "namespace-team-a.yaml").read_text()
    path.write_text(pod + "---\n" + aliased + "---\n" + namespace)
    for jobs in (None, 3):
        outcome = translate_file(path, jobs=jobs)
        assert outcome.code == 1 and "namespace team-a allows at most 4" in outcome.stderr


def test_a_process_running_other_threads_is_not_forked(stream: Path, small_batches: None) -> None:
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        text = stream.read_text()
        found = stream_module.translate_stream(
            text, "s", policy_set(None), None, None, TranslationOutput("yaml"), jobs=3
        )
    finally:
        release.set()
        other.join()
    assert found.jobs == 1 and found.translations > 0
