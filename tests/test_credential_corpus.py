"""Nothing unsafe leaves the machine, proven on a corpus written apart from the rules.

Every form of ``tests/data/credentials/forms.jsonl`` (see tests/credcorpus.py)
goes through the writers (``remember`` one form at a time, ``capture`` all of
them in one batch): the secret is stored nowhere in the forest and said
nowhere in the result, whether the writer stores a redacted copy or refuses.
Written into a leaf by hand, every form makes ``sync`` refuse with
``secrets_found`` naming that leaf, and no object of the bare remote holds
it; in a file of its own, every form makes the public-release audit refuse.
Ordinary text gathered from the machine is rarely taken for a credential (at
most 0.5 % of the lines), and the project's own docs and examples never are.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memory_forest import operations
from memory_forest.credentials import findings
from memory_forest.errors import ForestError
from memory_forest.sync import sync
from memory_forest.writers.redact import redact_text
from memory_forest.writers.remember import remember
from tests.conftest import REPO, raises_code, run_cli
from tests.credcorpus import forms, lines_of, ordinary_lines, own_text_files

FORMS = forms()
BY_ID = {form["id"]: form for form in FORMS}
FALSE_POSITIVE_CEILING = 0.005
# Through the real CLI one process per form: one of a kind, so the file stays quick.
CLI_SAMPLE = ("aws-secret-ini", "gitlab-pat-prose", "postgres-url", "slack-webhook",
              "pem-openssh", "json-numeric-password", "env-short-password",
              "prose-my-password", "netrc-one-line", "docker-config-auth")


def form_param(form: dict[str, Any]) -> Any:
    return pytest.param(form, id=form["id"])


ALL_FORMS = [form_param(form) for form in FORMS]


# --- where a secret could survive -----------------------------------------------------------


def holds(haystack: str, secret: str) -> bool:
    """Whether ``secret`` is in ``haystack``; a short secret only as a whole token, so
    "7391" is not found inside a digest or a timestamp."""
    if len(secret) >= 12:
        return secret in haystack
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])",
                     haystack) is not None


def slug(text: str) -> str:
    """Text as a leaf's file name may carry it: lower case, runs of other characters one dash."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def files_under(root: Path) -> Iterator[Path]:
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            yield Path(dirpath) / name


def survivors(root: Path, secret: str, *outputs: str) -> list[str]:
    """Everywhere ``secret`` survived: a file's bytes (state and git included), a path,
    or an output."""
    where = []
    for path in files_under(root):
        rel = path.relative_to(root).as_posix()
        if holds(slug(rel), slug(secret)):
            where.append(f"path {rel}")
        if holds(path.read_bytes().decode("utf-8", "replace"), secret):
            where.append(f"file {rel}")
    where += [f"output {n}" for n, output in enumerate(outputs) if holds(output, secret)]
    return where


def payload_of(form: dict[str, Any]) -> dict[str, Any]:
    """A JSON form is the payload itself (its keys matter); any other form is a text value."""
    try:
        value = json.loads(form["text"])
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"text": form["text"], "kind": "note"}


def event(form: dict[str, Any]) -> dict[str, Any]:
    return {"observed_at": "2026-12-01T09:00:00Z", "source": "corpus", "kind": "note",
            "payload": payload_of(form)}


# --- writers --------------------------------------------------------------------------------


def answer(write) -> str:
    """What a writer said, as text: its result, or the error it refused with (a refusal
    stores nothing, which keeps the secret too; a crash is never an answer)."""
    try:
        said = write()
    except ForestError as error:
        said = error.to_dict()
        assert error.code != "internal_error", said
    return json.dumps(said, ensure_ascii=False)


@pytest.mark.parametrize("form", ALL_FORMS)
def test_remember_stores_the_secret_nowhere(form: dict[str, Any], empty_forest: Path) -> None:
    said = answer(lambda: remember(empty_forest, content=form["text"]))
    assert survivors(empty_forest, form["secret"], said) == []


@pytest.mark.parametrize("form_id", CLI_SAMPLE)
def test_remember_through_the_cli_stores_the_secret_nowhere(form_id: str,
                                                            empty_forest: Path) -> None:
    form = BY_ID[form_id]
    done = run_cli("remember", empty_forest, form["text"], "--json")
    assert done.code == 0 or done.json()["error"]["code"] != "internal_error", done.stdout
    assert survivors(empty_forest, form["secret"], done.stdout, done.stderr) == []


def test_capture_stores_no_secret_of_the_corpus(empty_forest: Path,
                                                                tmp_path: Path) -> None:
    batch = tmp_path / "events.jsonl"
    batch.write_text("".join(json.dumps(event(form)) + "\n" for form in FORMS), encoding="utf-8")
    done = run_cli("capture", empty_forest, "--file", batch, "--json")
    assert done.code == 0 and len(done.json()["event_ids"]) == len(FORMS), done.stdout
    leaked = {form["id"]: where for form in FORMS
              if (where := survivors(empty_forest, form["secret"], done.stdout, done.stderr))}
    assert leaked == {}


# --- sync -----------------------------------------------------------------------------------


def git(cwd: Path, *args: str) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def synced(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path, str]]:
    """A bare remote and a forest synced to it, with one leaf to edit by hand."""
    base = tmp_path_factory.mktemp("corpus-sync")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("GIT_CONFIG_GLOBAL", str(base / "no-gitconfig"))
        patch.setenv("GIT_CONFIG_NOSYSTEM", "1")
        patch.setenv("MEMORY_FOREST_HOST", "alpha")
        remote, root = base / "remote.git", base / "forest"
        git(base, "init", "-q", "--bare", str(remote))
        operations.init(root)
        leaf = remember(root, content="Keys for the greenhouse controller live in the safe.",
                        title="Greenhouse controller")["path"]
        assert sync(root, init=str(remote))["pushed"]
        yield remote, root, leaf


@pytest.mark.parametrize("form", ALL_FORMS)
def test_sync_refuses_a_leaf_holding_the_form(form: dict[str, Any],
                                              synced: tuple[Path, Path, str]) -> None:
    remote, root, leaf = synced
    original = (root / leaf).read_bytes()
    (root / leaf).write_bytes(original + b"\n" + form["text"].encode("utf-8") + b"\n")
    try:
        error = raises_code(lambda: sync(root), "secrets_found")
    finally:
        (root / leaf).write_bytes(original)
    assert {finding["path"] for finding in error.details["findings"]} == {leaf}
    assert not holds(json.dumps(error.to_dict(), ensure_ascii=False), form["secret"])
    objects = git(remote, "cat-file", "--batch-all-objects", "--batch")
    assert not holds(objects.decode("utf-8", "replace"), form["secret"])


def test_the_release_audit_refuses_every_form(tmp_path: Path) -> None:
    for form in FORMS:
        (tmp_path / f"{form['id']}.md").write_text(f"# Notes\n\n{form['text']}\n",
                                                    encoding="utf-8")
    done = subprocess.run([sys.executable, REPO / "scripts" / "audit_public_release.py",
                           "--root", tmp_path], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    report = json.loads(done.stdout)
    flagged = {finding["path"][:-3] for finding in report["findings"]}
    assert report["mode"] == "walk"
    assert sorted(set(BY_ID) - flagged) == []
    assert not any(holds(done.stdout, form["secret"]) for form in FORMS)


# --- false positives ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def ordinary() -> list[str]:
    lines = ordinary_lines()
    assert len(lines) >= 5000
    return lines


def flagged_by_sync(lines: list[str]) -> list[str]:
    numbers = {number for number, _ in findings("\n".join(lines))}
    return [lines[number - 1] for number in sorted(numbers)]


def changed_by_writers(lines: list[str]) -> list[str]:
    return [line for line in lines if redact_text(line, {}) != line]


@pytest.mark.parametrize("detector", [flagged_by_sync, changed_by_writers],
                         ids=["sync", "writers"])
def test_ordinary_lines_are_rarely_taken_for_credentials(detector, ordinary: list[str]) -> None:
    flagged = detector(ordinary)
    assert len(flagged) / len(ordinary) <= FALSE_POSITIVE_CEILING, flagged[:20]


@pytest.mark.parametrize("detector", [flagged_by_sync, changed_by_writers],
                         ids=["sync", "writers"])
def test_the_projects_own_docs_and_examples_are_never_taken_for_credentials(detector) -> None:
    lines = lines_of(own_text_files())
    assert len(lines) > 1000
    assert detector(lines) == []


def test_the_corpus_is_wide_and_each_secret_is_in_its_text() -> None:
    assert len(FORMS) >= 60 and len(BY_ID) == len(FORMS)
    assert all(form["secret"] in form["text"] for form in FORMS)
    assert len({form["kind"] for form in FORMS}) >= 30
