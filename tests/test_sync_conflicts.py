"""``sync`` keeps every conflict both ways: real git, a bare remote and two forests in tmp_path.

Each kind of file two machines can change at once (a tree, the root map, a
Life Archive record, a Daily entry, the config, a file deleted on one side
and changed on the other) ends in a forest that validates and audits clean,
holds both versions' bytes and no conflict marker, and says what it kept
(``sync``'s ``conflicts``, ``status``'s ``conflict_copies``). Then the forest
with no remote, and two forests created apart that join through one remote.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest import operations, schemas
from memory_forest.retrieve import retrieve
from memory_forest.routes import parse_route
from memory_forest.sync import sync
from memory_forest.writers.capture import capture_events
from memory_forest.writers.remember import remember
from tests.conftest import raises_code, run_cli
from tests.forestkit import write_file
from tests.gitkit import git as hand_git
from tests.test_sync import _hermetic_git, audit_errors, canonical, event, git, machine  # noqa: F401

TAG = r"-conflict-beta-[0-9]{8}T[0-9]{6}Z"  # A merges; the copies hold B's versions


@pytest.fixture
def example_pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A bare remote, the example forest A synced to it, and B cloned from it and synced."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a, b = tmp_path / "A", tmp_path / "B"
    operations.init(a, example=True)
    machine(monkeypatch, "alpha")
    assert sync(a, init=str(remote))["pushed"]
    git(tmp_path, "clone", "-q", str(remote), str(b))
    machine(monkeypatch, "beta")
    assert sync(b)["ok"]
    return remote, a, b


def edit(root: Path, rel: str, old: str, new: str) -> None:
    text = (root / rel).read_text(encoding="utf-8")
    assert old in text, (rel, old)
    (root / rel).write_text(text.replace(old, new, 1), encoding="utf-8")


def no_markers(root: Path) -> None:
    for rel, data in canonical(root).items():
        assert b"<<<<<<<" not in data and b">>>>>>>" not in data, rel


def clean(root: Path) -> None:
    no_markers(root)
    checked = operations.validate(root)
    assert checked["ok"], checked["issues"]
    assert audit_errors(root) == []


def both_changed(monkeypatch, a: Path, b: Path, rel: str, old: str) -> dict:
    """B and A change the same line of ``rel`` two ways; B syncs first, then A merges."""
    edit(a, rel, old, "ALPHA-VERSION " + old)
    edit(b, rel, old, "BETA-VERSION " + old)
    machine(monkeypatch, "beta")
    assert sync(b)["pushed"]
    machine(monkeypatch, "alpha")
    merged = sync(a)
    assert merged["ok"] and merged["pushed"], merged
    schemas.validate("SyncResult", merged)
    machine(monkeypatch, "beta")
    assert sync(b)["ok"]
    return merged


@pytest.mark.parametrize("rel, old", [
    ("02 ltm/greenhouse_LTM.md", "Durable knowledge about the rooftop greenhouse"),
    ("01 xltm/XLTM.md", "This synthetic forest belongs"),
    ("00 life_archive/2025-first-greenhouse-season.md", "A reusable summary"),
])
def test_a_record_changed_on_both_sides_gets_a_copy_beside_it(example_pair, monkeypatch, rel,
                                                              old) -> None:
    """A tree, the root map and a Life Archive record, as a branch or leaf: ours in place,
    theirs a copy of the same layer that owns nothing."""
    _, a, b = example_pair
    if old not in (a / rel).read_text():
        pytest.fail(f"the example's {rel} changed: pick another line")
    merged = both_changed(monkeypatch, a, b, rel, old)
    ((found),) = merged["conflicts"]
    copy = found["copy"]
    assert found == {"path": rel, "kind": "copy", "copy": copy}
    folder, _, name = rel.rpartition("/")
    assert re.fullmatch(re.escape(folder + "/" + name[:-3]) + TAG + r"\.md", copy), copy
    assert parse_route(copy).layer == parse_route(rel).layer
    for root in (a, b):
        assert "ALPHA-VERSION" in (root / rel).read_text()
        text = (root / copy).read_text()
        assert "BETA-VERSION" in text and f'conflict_of: "{rel}"' in text
        clean(root)
        status = operations.status(root)
        schemas.validate("StatusResult", status)
        assert status["conflict_copies"] == [copy]
    assert canonical(a) == canonical(b)
    # The copy is indexed as a document of its own, never an owner: every trail through
    # the greenhouse still runs through the original, and the copy ends a trail of its own.
    if not parse_route(rel).layer.structured:
        return  # retrieval walks the ownership tree (01-04) only
    found_leaf = retrieve(a, "drip retrofit")
    owners = [node["path"] for trail in found_leaf["trails"] for node in trail["nodes"][:-1]]
    assert owners and copy not in owners
    found_copy = retrieve(a, "BETA-VERSION")
    ends = [trail["nodes"][-1]["path"] for trail in found_copy["trails"]]
    assert copy in ends, found_copy


def test_one_daily_entry_changed_two_ways_keeps_both_entries(example_pair, monkeypatch) -> None:
    _, a, b = example_pair
    day = "05 daily/2026-11-28.md"
    text = (a / day).read_text()
    entry = next(line[3:].strip() for line in text.splitlines() if line.startswith("## "))
    body = text.split(f"## {entry}\n", 1)[1].lstrip("\n").split("\n", 1)[0]
    merged = both_changed(monkeypatch, a, b, day, body)
    ((found),) = merged["conflicts"]
    assert found["path"] == day and found["kind"] == "entries"
    ((copy),) = found["entries"]
    assert re.fullmatch(re.escape(entry) + TAG, copy), copy
    for root in (a, b):
        now = (root / day).read_text()
        assert now.count(f"## {entry}\n") == 1 and now.count(f"## {copy}\n") == 1
        ours, theirs = now.split(f"## {copy}\n")
        assert "ALPHA-VERSION" in ours.split(f"## {entry}\n")[1]
        assert "BETA-VERSION" in theirs and f"Conflict of: {entry}\n" in theirs
        clean(root)
        assert operations.status(root)["conflict_copies"] == [f"{day}#{copy}"]
    # The Daily parser reads the marker as a marker: the conflict entry's text is theirs.
    from memory_forest.documents import read_document

    _, _, fragments = read_document(parse_route(day), (a / day).read_bytes(), 0, 1000)
    (kept,) = [fragment for fragment in fragments if fragment.anchor == copy]
    assert "BETA-VERSION" in kept.text and "Conflict of" not in kept.text


@pytest.mark.parametrize("deleter", ["ours", "theirs"])
def test_deleted_on_one_side_changed_on_the_other_keeps_the_change(example_pair, monkeypatch,
                                                                   deleter) -> None:
    _, a, b = example_pair
    leaf = "04 stm/kitchen/fermentation/zaatar-blend.md"
    changer, remover = (b, a) if deleter == "ours" else (a, b)
    edit(changer, leaf, "\n# ", "\nCHANGED-HERE\n\n# ")
    changed = (changer / leaf).read_bytes()
    (remover / leaf).unlink()
    machine(monkeypatch, "beta")
    assert sync(b)["pushed"]
    machine(monkeypatch, "alpha")
    merged = sync(a)
    assert merged["ok"] and merged["pushed"], merged
    assert merged["conflicts"] == [{"path": leaf, "kind": "kept_changed",
                                    "kept": "theirs" if deleter == "ours" else "ours",
                                    "deleted_by": deleter}]
    machine(monkeypatch, "beta")
    sync(b)
    for root in (a, b):
        assert (root / leaf).read_bytes() == changed
        clean(root)


def test_the_config_changed_on_both_sides_keeps_ours_and_reports_theirs(example_pair,
                                                                        monkeypatch) -> None:
    _, a, b = example_pair
    config = ".memory-forest/forest.json"
    for root, value in ((a, 111), (b, 222)):
        data = json.loads((root / config).read_text())
        data["limits"] = {"max_links_per_document": value}
        (root / config).write_text(json.dumps(data, indent=2) + "\n")
    theirs = (b / config).read_bytes()
    ours = (a / config).read_bytes()
    machine(monkeypatch, "beta")
    sync(b)
    machine(monkeypatch, "alpha")
    merged = sync(a)
    ((found),) = merged["conflicts"]
    assert found["path"] == config and found["kind"] == "kept_ours"
    assert (a / config).read_bytes() == ours
    blob = subprocess.run(["git", "cat-file", "blob", found["theirs_blob"]], cwd=a,
                          capture_output=True, check=True).stdout
    assert blob == theirs
    clean(a)


def opt_in(a: Path, b: Path, monkeypatch, *globs: str) -> None:
    """Publish ``globs`` as attachments from ``forest.json`` on A; B gets the config."""
    path = a / ".memory-forest" / "forest.json"
    config = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**config, "sync": {"publish": list(globs)}}), encoding="utf-8")
    machine(monkeypatch, "alpha")
    sync(a)
    machine(monkeypatch, "beta")
    sync(b)


def test_an_opted_in_attachment_gets_a_copy_too(example_pair, monkeypatch) -> None:
    _, a, b = example_pair
    opt_in(a, b, monkeypatch, "attachments/**")
    write_file(a, "attachments/notes.txt", b"alpha's notes\n")
    write_file(b, "attachments/notes.txt", b"beta's notes\n")
    machine(monkeypatch, "beta")
    sync(b)
    machine(monkeypatch, "alpha")
    merged = sync(a)
    ((found),) = merged["conflicts"]
    assert found["kind"] == "copy"
    assert found["copy"].startswith("attachments/notes-conflict-beta-")
    assert found["copy"].endswith(".txt")
    assert (a / "attachments/notes.txt").read_bytes() == b"alpha's notes\n"
    assert (a / found["copy"]).read_bytes() == b"beta's notes\n"


def test_a_symlink_made_on_both_sides_stays_on_each(example_pair, monkeypatch) -> None:
    """Git stores a symlink as its target, and the forest never follows one: it is never
    published, so the two machines' symlinks never meet."""
    remote, a, b = example_pair
    os.symlink("one", a / "pointer")
    os.symlink("two", b / "pointer")
    machine(monkeypatch, "beta")
    assert sync(b)["left_local"]["paths"] == [{"path": "pointer", "reason": "symlink"}]
    machine(monkeypatch, "alpha")
    merged = sync(a)
    assert "conflicts" not in merged and merged["left_local"]["count"] == 1
    assert os.readlink(a / "pointer") == "one" and os.readlink(b / "pointer") == "two"
    assert "pointer" not in git(remote, "ls-tree", "-r", "--name-only", "HEAD").splitlines()


def test_a_leaf_the_remote_turned_into_a_symlink_is_the_conflict_left(example_pair,
                                                                      monkeypatch) -> None:
    """A hand commit replaced a leaf with a symlink: the leaf cannot be left out of the
    work tree without losing it here, so nothing is merged (``sync_conflict``)."""
    _, a, b = example_pair
    leaf = next(path.relative_to(b).as_posix() for path in sorted((b / "04 stm").rglob("*.md")))
    os.unlink(b / leaf)
    os.symlink("/etc/hostname", b / leaf)
    hand_git(b, "add", "--", leaf)
    hand_git(b, "commit", "-q", "-m", "a leaf becomes a symlink")
    hand_git(b, "push", "-q", "origin", "HEAD")
    machine(monkeypatch, "alpha")
    files = canonical(a)
    error = raises_code(lambda: sync(a), "sync_conflict")
    assert error.details["paths"] == [leaf]
    assert canonical(a) == files and (a / leaf).is_file() and not (a / leaf).is_symlink()
    assert not (a / ".git" / "MERGE_HEAD").exists()


def test_a_file_where_the_other_side_has_a_folder_is_the_conflict_left(example_pair,
                                                                       monkeypatch) -> None:
    """Git would move the file aside to a name neither side chose: the merge is undone."""
    _, a, b = example_pair
    write_file(a, "04 stm/notes.md", b"a file\n")
    write_file(b, "04 stm/notes.md/inside.md", b"a file in a folder\n")
    machine(monkeypatch, "beta")
    sync(b)
    machine(monkeypatch, "alpha")
    error = raises_code(lambda: sync(a), "sync_conflict")
    assert error.details["paths"] == ["04 stm/notes.md"]
    assert (a / "04 stm/notes.md").read_bytes() == b"a file\n"
    assert not (a / ".git" / "MERGE_HEAD").exists()
    assert not (a / "04 stm/notes.md~HEAD").exists()


# --- a forest with no remote ----------------------------------------------------------------


def cli(*args: object, env: dict | None = None) -> tuple[int, dict]:
    done = subprocess.run([sys.executable, "-m", "memory_forest", *map(os.fspath, args),
                           "--json"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})
    (line,) = done.stdout.splitlines()
    return done.returncode, json.loads(line)


def test_sync_without_a_repository_commits_locally_then_gains_a_remote(tmp_path: Path) -> None:
    root, remote = tmp_path / "forest", tmp_path / "remote.git"
    operations.init(root)
    remember(root, content="The shed key hangs by the door.", title="Shed key")
    code, first = cli("sync", root)
    assert code == 0 and first["ok"], first
    schemas.validate("SyncResult", first)
    assert first["created"] and first["remote"] is None and first["pushed"] is False
    assert first["committed"]["files"] > 0
    assert git(root, "status", "--porcelain") == ""
    assert git(root, "remote") == ""
    assert operations.validate(root)["ok"] and audit_errors(root) == []
    code, again = cli("sync", root)
    assert code == 0 and again["nothing_to_do"] and again["remote"] is None
    remember(root, content="The shed lock is oiled in spring.", title="Shed lock")
    shown = subprocess.run([sys.executable, "-m", "memory_forest", "sync", os.fspath(root)],
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "no remote to push to" in shown.stdout, shown
    code, missing = cli("sync", root, "--remote", "upstream")
    assert code != 0 and missing["error"]["code"] == "sync_remote_missing"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    code, pushed = cli("sync", root, "--init", remote)
    assert code == 0 and pushed["pushed"] and pushed["remote"] == "origin", pushed
    assert any(path.endswith("shed-key.md") for path in
               git(remote, "ls-tree", "-r", "--name-only", "HEAD").splitlines())


# --- two forests created apart --------------------------------------------------------------


def test_two_forests_created_apart_join_through_one_remote(tmp_path: Path,
                                                           monkeypatch) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a, b = tmp_path / "A", tmp_path / "B"
    for root, host, fact in ((a, "alpha", "The pump valve is painted blue."),
                             (b, "beta", "The pump valve is painted green.")):
        operations.init(root, example=True)
        machine(monkeypatch, host)
        remember(root, content=fact, title="Pump valve")  # the same leaf, added two ways
        remember(root, content=f"{host.title()} keeps the seed tin on shelf {len(host)}.",
                 title=f"Seed tin {host}")
        capture_events(root, [event(f"{host} saw the heater start", f"evt-{host}-1")])
    ids = {root: json.loads((root / ".memory-forest/forest.json").read_text())["forest_id"]
           for root in (a, b)}
    machine(monkeypatch, "alpha")
    assert sync(a, init=str(remote))["pushed"]
    # B joins with the CLI, as a person would: the same URL, its own forest.
    code, joined = cli("sync", b, "--init", remote, env={"MEMORY_FOREST_HOST": "beta"})
    assert code == 0 and joined["ok"] and joined["pushed"], joined
    schemas.validate("SyncResult", joined)
    kinds = {conflict["path"]: conflict for conflict in joined["conflicts"]}
    assert kinds[".memory-forest/forest.json"]["kind"] == "kept_ours"
    leaf = "04 stm/inbox/inbox/pump-valve.md"
    assert kinds[leaf]["kind"] == "copy"
    machine(monkeypatch, "alpha")
    pulled = sync(a)
    assert pulled["ok"] and pulled["pulled"]["commits"] > 0, pulled
    assert canonical(a) == canonical(b)
    copy = kinds[leaf]["copy"]
    assert copy.startswith("04 stm/inbox/inbox/pump-valve-conflict-alpha-")  # A's version
    for root in (a, b):
        no_markers(root)
        assert operations.validate(root)["ok"], operations.validate(root)["issues"]
        # Both machines captured into the same day's file before either had a repository:
        # the union keeps every line, and that file's chain is reported as broken.
        assert {issue["code"] for issue in audit_errors(root)} <= {"istm_chain_broken"}
        assert "painted green" in (root / leaf).read_text()
        assert "painted blue" in (root / copy).read_text()
        for host in ("alpha", "beta"):
            assert (root / f"04 stm/inbox/inbox/seed-tin-{host}.md").is_file()
            assert f"evt-{host}-1" in "".join(p.read_text() for p in (root / "06 istm").glob(
                "*.jsonl"))
        assert json.loads((root / ".memory-forest/forest.json").read_text())["forest_id"] \
            == ids[b]  # the joiner kept its config and pushed it
        found = retrieve(root, "seed tin shelf")
        assert {"seed-tin-alpha.md", "seed-tin-beta.md"} <= {
            trail["nodes"][-1]["path"].rsplit("/", 1)[1] for trail in found["trails"]}


def test_an_unrelated_history_is_merged_only_when_asked(tmp_path: Path, monkeypatch) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a, b = tmp_path / "A", tmp_path / "B"
    for root in (a, b):
        operations.init(root, example=True)
    machine(monkeypatch, "alpha")
    sync(a, init=str(remote))
    machine(monkeypatch, "beta")
    sync(b)  # committed locally, no remote
    git(b, "remote", "add", "origin", str(remote))
    head = git(b, "rev-parse", "HEAD")
    raises_code(lambda: sync(b), "sync_unrelated_histories")
    assert git(b, "rev-parse", "HEAD") == head and not (b / ".git" / "MERGE_HEAD").exists()
    joined = sync(b, init=str(remote))
    assert joined["ok"] and joined["pushed"], joined
    clean(b)


def test_a_clone_whose_remote_head_names_no_branch_starts_from_the_remote(tmp_path: Path,
                                                                          monkeypatch) -> None:
    """A clone with nothing checked out is no forest of its own: nothing to join, it takes
    the remote's only branch (sync's own two files aside, which it writes again)."""
    remote, a, b = tmp_path / "remote.git", tmp_path / "A", tmp_path / "B"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    operations.init(a, example=True)
    git(a, "init", "-q", "-b", "trunk")
    machine(monkeypatch, "alpha")
    assert sync(a, init=str(remote))["pushed"]
    git(tmp_path, "clone", "-q", str(remote), str(b))  # HEAD names 'main': nothing checked out
    machine(monkeypatch, "beta")
    cloned = sync(b)
    assert cloned["ok"] and cloned["branch"] == "trunk" and not cloned.get("conflicts"), cloned
    assert git(b, "rev-list", "--count", "HEAD") == git(a, "rev-list", "--count", "HEAD")
    assert canonical(a) == canonical(b)
    clean(b)


def test_the_cli_says_what_it_kept_both_ways(example_pair, monkeypatch) -> None:
    _, a, b = example_pair
    leaf, day = "04 stm/kitchen/fermentation/kimchi-batch-7.md", "05 daily/2026-11-28.md"
    for root, side in ((a, "ALPHA"), (b, "BETA")):
        edit(root, leaf, "\n# ", f"\n{side}-VERSION\n\n# ")
        edit(root, day, "Drip emitters", f"{side}-VERSION Drip emitters")
    machine(monkeypatch, "beta")
    sync(b)
    machine(monkeypatch, "alpha")
    done = run_cli("sync", a)
    assert done.code == 0, done
    lines = [line for line in done.stdout.splitlines() if line.startswith("conflict ")]
    assert len(lines) == 2, done.stdout
    assert f"conflict {day}: theirs kept as d-20261128-drip-conflict-" in lines[1]
    assert f"conflict {leaf}: ours kept; theirs is {leaf[:-3]}-conflict-" in lines[0]
    clean(a)


# --- whose version a copy holds -------------------------------------------------------------

KIMCHI = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
STAMP = r"-[0-9]{8}T[0-9]{6}Z"


def test_a_copy_is_named_after_the_machine_whose_version_it_holds(example_pair,
                                                                  monkeypatch) -> None:
    """A pushes first, B merges: B's own edit stays in place and the copy beside it, A's
    version, is named after A on both machines (not after B, which ran the merge)."""
    _, a, b = example_pair
    for root, side in ((a, "ALPHA"), (b, "BETA")):
        edit(root, KIMCHI, "\n# ", f"\n{side}-VERSION\n\n# ")
    machine(monkeypatch, "alpha")
    assert sync(a)["pushed"]
    machine(monkeypatch, "beta")
    merged = sync(b)
    ((found),) = merged["conflicts"]
    copy = found["copy"]
    assert re.fullmatch(re.escape(KIMCHI[:-3]) + "-conflict-alpha" + STAMP + r"\.md", copy)
    assert "ALPHA-VERSION" in (b / copy).read_text()
    assert "BETA-VERSION" in (b / KIMCHI).read_text()
    machine(monkeypatch, "alpha")
    assert sync(a)["ok"]
    assert (a / copy).read_bytes() == (b / copy).read_bytes()
    assert operations.status(a)["conflict_copies"] == [copy]
    # Every commit sync made says on which machine: the merge, B's.
    hosts = git(a, "log", "--format=%(trailers:key=Memory-Forest-Host,valueonly,separator=,)")
    assert set(hosts.splitlines()) == {"alpha", "beta"}
    assert git(b, "log", "-1", "--merges",
               "--format=%(trailers:key=Memory-Forest-Host,valueonly,separator=,)") == "beta"
    clean(a)
    clean(b)


@pytest.mark.parametrize(("message", "author", "host"), [
    ("edited by hand\n\nMemory-Forest-Host: ../Ana's MacBook.local\n", "Ana",
     "ana-s-macbook-local"),
    ("edited by hand\n", "Zoë Example", "zo-example"),  # no trailer: the author's name
    ("edited by hand\n", "日本語", "remote"),  # nothing of the name fits a file name
    ("edited by hand\n\nMemory-Forest-Host: ~~~\n", "---", "remote"),
    ("edited by hand\n", "memory-forest", "remote"),  # the identity sync falls back to
])
def test_a_copy_of_a_commit_sync_did_not_make_gets_a_safe_honest_name(
        example_pair, monkeypatch, message, author, host) -> None:
    remote, a, b = example_pair
    for root, side in ((a, "ALPHA"), (b, "BETA")):
        edit(root, KIMCHI, "\n# ", f"\n{side}-VERSION\n\n# ")
    branch = git(b, "symbolic-ref", "--short", "HEAD")
    git(b, "-c", f"user.name={author}", "-c", "user.email=editor@example.invalid",
        "commit", "-q", "-a", "-m", message)
    git(b, "push", "-q", "origin", f"HEAD:{branch}")
    machine(monkeypatch, "alpha")
    merged = sync(a)
    ((found),) = merged["conflicts"]
    assert re.fullmatch(re.escape(KIMCHI[:-3]) + f"-conflict-{host}" + STAMP + r"\.md",
                        found["copy"]), found["copy"]
    assert "BETA-VERSION" in (a / found["copy"]).read_text()
    clean(a)
