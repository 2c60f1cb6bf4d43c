"""``sync``: two machines, one bare remote, real git, real forests in tmp_path.

Machine A and machine B are two forests on this disk; ``MEMORY_FOREST_HOST``
tells them apart where the ISTM files are per machine. B is always a plain
``git clone`` of the remote whose first command is ``sync``, as on a new
machine. The library is called in-process, except where the promise is about
the CLI (a SIGKILL, a PATH without git).
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from memory_forest import operations, schemas
from memory_forest.credentials import line_findings
from memory_forest.mergedriver import merge as merge_daily
from memory_forest.retrieve import retrieve
from memory_forest.sync import sync
from memory_forest.writers.capture import capture_events
from memory_forest.writers.remember import remember
from tests.conftest import raises_code, run_cli
from tests.forestkit import write_file

# Built from two halves so this file holds no line the release audit would flag.
AWS_KEY = "AKIA" + "Q7XZ2M4B9K3LP5RT"


@pytest.fixture(autouse=True)
def _hermetic_git(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No user or system git config: the fallback identity and the default branch apply."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(tmp_path / "no-gitconfig"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def machine(monkeypatch: pytest.MonkeyPatch, host: str) -> None:
    monkeypatch.setenv("MEMORY_FOREST_HOST", host)


def event(text: str, event_id: str | None = None) -> dict:
    record = {"observed_at": "2026-12-01T09:00:00Z", "source": "test-agent", "kind": "note",
              "payload": {"text": text}}
    if event_id:
        record["event_id"] = event_id
    return record


def event_ids(root: Path) -> list[str]:
    ids = []
    for path in sorted((root / "06 istm").glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                ids.append(json.loads(line)["event_id"])
    return ids


def canonical(root: Path) -> dict[str, bytes]:
    """Every file outside .git and .memory-forest, by relative path."""
    found = {}
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_file() and not rel.startswith((".git/", ".memory-forest/")):
            found[rel] = path.read_bytes()
    return found


def remote_paths(remote: Path) -> list[str]:
    return git(remote, "ls-tree", "-r", "--name-only", "HEAD").splitlines()


@pytest.fixture
def pair(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, Path]:
    """A bare remote, forest A synced to it with one fact, and B cloned (umask 022) and
    synced."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    a, b = tmp_path / "A", tmp_path / "B"
    operations.init(a)
    machine(monkeypatch, "alpha")
    remember(a, content="The greenhouse pump valve is painted blue.", title="Pump valve")
    first = sync(a, init=str(remote))
    assert first["ok"] and first["created"] and first["pushed"], first
    # A terminal's umask, not this process's: under 077 git would write private files
    # itself and sync's mode restoration would go untested.
    subprocess.run(["git", "clone", "-q", str(remote), str(b)], check=True,
                   capture_output=True, umask=0o022)
    assert stat.S_IMODE(os.stat(b / "04 stm").st_mode) == 0o755
    machine(monkeypatch, "beta")
    cloned = sync(b)
    assert cloned["ok"], cloned
    return remote, a, b


def test_two_machines_share_facts_and_every_event_once(pair, monkeypatch) -> None:
    remote, a, b = pair
    machine(monkeypatch, "alpha")
    capture_events(a, [event("alpha saw the heater start", "evt-alpha-1")])
    sync(a)
    machine(monkeypatch, "beta")
    sync(b)  # B now holds alpha's first event
    capture_events(b, [event("beta saw the fan stop", "evt-beta-1")])
    machine(monkeypatch, "alpha")
    # Unsynced on A while B captures: both append, to one shard or to one each.
    capture_events(a, [event("alpha saw the vent open", "evt-alpha-2")])
    machine(monkeypatch, "beta")
    pushed = sync(b)
    assert pushed["pushed"] and pushed["committed"]["message"].startswith("memory-forest sync")
    machine(monkeypatch, "alpha")
    merged = sync(a)
    assert merged["pulled"]["commits"] >= 1 and merged["pushed"], merged
    machine(monkeypatch, "beta")
    sync(b)

    found = retrieve(b, "pump valve painted blue")
    assert any(node["path"].endswith("pump-valve.md")
               for trail in found["trails"] for node in trail["nodes"]), found
    for root in (a, b):
        ids = event_ids(root)
        assert len(ids) == len(set(ids)), ids  # every event exactly once
        assert {"evt-alpha-1", "evt-alpha-2", "evt-beta-1"} <= set(ids)
        assert operations.validate(root)["ok"], operations.validate(root)["issues"]
        assert audit_errors(root) == []
    assert sorted(event_ids(a)) == sorted(event_ids(b))
    for outcome in (pushed, merged):
        schemas.validate("SyncResult", outcome)
    assert canonical(a) == canonical(b)
    # Derived state never travels: of .memory-forest/ only the config is in the remote.
    state = [path for path in remote_paths(remote) if path.startswith(".memory-forest/")]
    assert state == [".memory-forest/forest.json"]
    assert (a / ".memory-forest" / "receipts").is_dir()


def test_a_clone_gets_private_modes_layers_and_an_index(pair) -> None:
    _, a, b = pair
    assert sorted(p.name for p in b.iterdir() if p.is_dir() and p.name[0].isdigit()) == \
        sorted(p.name for p in a.iterdir() if p.is_dir() and p.name[0].isdigit())
    for path in [b, *b.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        inside_git = ".git" in path.relative_to(b).parts
        if inside_git:
            assert not mode & 0o077, (path, oct(mode))
        else:
            assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
    assert (b / ".memory-forest" / "index.sqlite3").is_file()
    assert operations.status(b)["ready"]


def test_nothing_to_do_is_a_quick_ok(pair) -> None:
    _, a, _ = pair
    again = sync(a)
    assert again["ok"] and again["nothing_to_do"] and not again["pushed"]


def test_debris_is_never_committed(pair, monkeypatch) -> None:
    remote, a, _ = pair
    write_file(a, "04 stm/inbox/inbox/.pump-valve.md.swp", b"swap")
    write_file(a, ".DS_Store", b"finder")
    machine(monkeypatch, "alpha")
    remember(a, content="The hose reel is by the door.", title="Hose reel")
    sync(a)
    paths = remote_paths(remote)
    assert any(path.endswith("hose-reel.md") for path in paths)
    assert not any(path.endswith((".swp", ".DS_Store")) for path in paths)


def test_a_planted_aws_key_blocks_the_push(pair) -> None:
    remote, a, _ = pair
    before = git(remote, "rev-parse", "HEAD")
    leaf = "04 stm/inbox/inbox/pump-valve.md"
    (a / leaf).write_text((a / leaf).read_text() + f"\nkey {AWS_KEY}\n")
    error = raises_code(lambda: sync(a), "secrets_found")
    assert error.details["findings"] == [{"path": leaf, "line": error.details["findings"][0][
        "line"], "rule": "aws_access_key"}]
    assert AWS_KEY not in json.dumps(error.to_dict())
    assert git(remote, "rev-parse", "HEAD") == before
    assert git(a, "status", "--porcelain") != ""  # nothing was committed either
    allowed = sync(a, allow_secrets=True)
    assert allowed["pushed"] and allowed["secrets"][0]["rule"] == "aws_access_key"
    assert git(remote, "rev-parse", "HEAD") != before


def test_the_remote_url_stays_out_of_canonical_files(pair) -> None:
    remote, a, _ = pair
    for data in canonical(a).values():
        assert os.fspath(remote).encode() not in data


def test_the_same_daily_record_merges_to_both_entries(pair, monkeypatch) -> None:
    _, a, b = pair
    day = "05 daily/2026-12-01.md"
    head = ('---\nid: "daily-2026-12-01"\ntitle: "Daily 2026-12-01"\n'
            'created: "2026-12-01T08:00:00Z"\nupdated: "{updated}"\nstatus: "active"\n---\n'
            "# Daily 2026-12-01\n\n## d-first\n\nThe day began.\n")
    write_file(a, day, head.format(updated="2026-12-01T08:00:00Z").encode())
    sync(a)
    sync(b)
    write_file(a, day, (head.format(updated="2026-12-01T10:00:00Z")
                        + "\n## d-alpha\n\nAlpha watered bed C.\n").encode())
    write_file(b, day, (head.format(updated="2026-12-01T11:00:00Z")
                        + "\n## d-beta\n\nBeta pruned the tomatoes.\n").encode())
    sync(b)
    merged = sync(a)
    assert merged["ok"] and merged["pushed"], merged
    sync(b)
    for root in (a, b):
        text = (root / day).read_text()
        assert "<<<<<<<" not in text and ">>>>>>>" not in text
        for entry in ("## d-first", "## d-alpha", "## d-beta"):
            assert text.count(entry) == 1, text
        assert 'updated: "2026-12-01T11:00:00Z"' in text
        assert operations.validate(root)["ok"], operations.validate(root)["issues"]


def test_the_daily_driver_refuses_one_entry_changed_two_ways() -> None:
    text = '---\nid: "d"\n---\n# Daily\n\n## d-one\n\n{}\n'
    assert merge_daily(text.format("ours"), text.format("theirs")) is None


def test_a_leaf_changed_on_both_sides_keeps_both_versions(pair, monkeypatch) -> None:
    _, a, b = pair
    leaf = "04 stm/inbox/inbox/pump-valve.md"
    original = (a / leaf).read_text()
    (a / leaf).write_text(original.replace("painted blue", "painted red"))
    (b / leaf).write_text(original.replace("painted blue", "painted green"))
    sync(b)
    ours = (a / leaf).read_bytes()
    machine(monkeypatch, "alpha")
    merged = sync(a)
    assert merged["ok"] and merged["pushed"], merged
    ((found),) = merged["conflicts"]
    assert found["path"] == leaf
    copy = found["copy"]
    assert copy.startswith("04 stm/inbox/inbox/pump-valve-conflict-beta-") and \
        copy.endswith(".md")  # the copy holds B's version
    assert (a / leaf).read_bytes() == ours
    text = (a / copy).read_text()
    assert "painted green" in text and f'conflict_of: "{leaf}"' in text
    assert stat.S_IMODE(os.lstat(a / copy).st_mode) == 0o600
    sync(b)
    for root in (a, b):
        assert not any(b"<<<<<<<" in data or b">>>>>>>" in data
                       for data in canonical(root).values())
        assert operations.validate(root)["ok"], operations.validate(root)["issues"]
        assert audit_errors(root) == []
    assert canonical(a) == canonical(b)
    assert operations.status(b)["conflict_copies"] == [copy]
    found_copy = retrieve(a, "painted green")
    assert any(node["path"] == copy for trail in found_copy["trails"]
               for node in trail["nodes"]), found_copy


def test_dry_run_changes_nothing(pair, monkeypatch) -> None:
    remote, a, b = pair
    remember(b, content="The rain barrel holds 200 litres.", title="Rain barrel")
    sync(b)
    machine(monkeypatch, "alpha")
    remember(a, content="The compost bin is turned weekly.", title="Compost bin")
    files, head = canonical(a), git(a, "rev-parse", "HEAD")
    status, remote_head = git(a, "status", "--porcelain"), git(remote, "rev-parse", "HEAD")
    shown = sync(a, dry_run=True)
    assert shown["ok"] and shown["dry_run"]
    schemas.validate("SyncResult", shown)
    assert any(path.endswith("compost-bin.md") for path in shown["would_commit"])
    assert shown["incoming"]["commits"] == 1
    assert any(path.endswith("rain-barrel.md") for path in shown["incoming"]["paths"])
    assert canonical(a) == files and git(a, "rev-parse", "HEAD") == head
    assert git(a, "status", "--porcelain") == status
    assert git(remote, "rev-parse", "HEAD") == remote_head


def test_dry_run_without_a_repository_creates_none(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    operations.init(root)
    shown = sync(root, init=os.fspath(tmp_path / "remote.git"), dry_run=True)
    assert shown["created"] and ".memory-forest/forest.json" in shown["would_commit"]
    assert ".memory-forest/index.sqlite3" not in shown["would_commit"]
    assert not (root / ".git").exists()
    local = sync(root, dry_run=True)
    assert local["created"] and local["remote"] is None and not (root / ".git").exists()


@pytest.mark.parametrize("step", ["sync_committed", "sync_merged"])
def test_sigkill_during_sync_leaves_a_forest_the_next_sync_completes(pair, step,
                                                                     monkeypatch) -> None:
    remote, a, b = pair
    remember(b, content="The seed trays are on shelf two.", title="Seed trays")
    sync(b)
    machine(monkeypatch, "alpha")
    remember(a, content="The frost cloth is in the shed.", title="Frost cloth")
    env = dict(os.environ, MEMORY_FOREST_TEST_CRASH_AT=step)
    killed = subprocess.run([sys.executable, "-m", "memory_forest", "sync", os.fspath(a),
                             "--json"], env=env, capture_output=True, timeout=60)
    assert killed.returncode == -signal.SIGKILL
    assert operations.validate(a)["ok"], operations.validate(a)["issues"]
    assert run_cli("unlock", a, "--stale", "--json").code == 0
    done = sync(a)
    assert done["ok"] and done["pushed"], done
    paths = remote_paths(remote)
    assert any(p.endswith("frost-cloth.md") for p in paths)
    assert any(p.endswith("seed-trays.md") for p in paths)
    assert audit_errors(a) == []


def audit_errors(root: Path) -> list[dict]:
    """Audit's errors: none, hash chains included, as each machine appends to its own shard."""
    return [issue for issue in operations.audit(root)["issues"] if issue["level"] == "error"]


def test_without_git_on_path_sync_fails_with_git_missing(tmp_path: Path) -> None:
    root = tmp_path / "forest"
    operations.init(root)
    env = dict(os.environ, PATH=os.fspath(tmp_path / "empty-bin"))
    done = subprocess.run([sys.executable, "-m", "memory_forest", "sync", os.fspath(root),
                           "--init", "unused", "--json"], env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode != 0
    (line,) = done.stdout.splitlines()
    assert json.loads(line)["error"]["code"] == "git_missing"
    assert not (root / ".git").exists()


def test_doctor_reports_the_git_version(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "forest"
    operations.init(root)
    version = operations.doctor(root)["versions"]["git"]
    assert version and version[0].isdigit()
    monkeypatch.setenv("PATH", os.fspath(tmp_path / "empty-bin"))
    assert operations.doctor(root)["versions"]["git"] is None


def test_sync_and_the_release_audit_share_the_credential_rules() -> None:
    sys.path.insert(0, os.fspath(Path(__file__).parents[1] / "scripts"))
    try:
        import audit_public_release
    finally:
        sys.path.pop(0)
    line = f"aws {AWS_KEY}"
    assert line_findings(line) == ["aws_access_key"]
    assert audit_public_release.line_rules(line) == ["credential"]
    assert line_findings("password=changeme") == []


def test_facts_filed_under_one_parent_on_both_machines_merge(pair, monkeypatch) -> None:
    _, a, b = pair
    remember(b, content="The wheelbarrow tyre was patched.", title="Wheelbarrow")
    sync(b)
    machine(monkeypatch, "alpha")
    remember(a, content="The ladder hangs on the north wall.", title="Ladder")
    merged = sync(a)
    assert merged["ok"] and merged["pushed"], merged
    sync(b)
    parent = "03 mtm/inbox/inbox.md"
    for root in (a, b):
        text = (root / parent).read_text()
        assert "<<<<<<<" not in text
        for leaf in ("pump-valve", "ladder", "wheelbarrow"):
            assert text.count(f"inbox/inbox/{leaf}|") == 1, text
        assert audit_errors(root) == []
    assert canonical(a) == canonical(b)


def test_a_merge_left_half_done_is_undone_first(pair) -> None:
    _, a, b = pair
    leaf = "04 stm/inbox/inbox/pump-valve.md"
    original = (a / leaf).read_text()
    (b / leaf).write_text(original.replace("painted blue", "painted green"))
    sync(b)
    (a / leaf).write_text(original.replace("painted blue", "painted red"))
    git(a, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qam", "hand")
    git(a, "fetch", "-q", "origin")
    # a merge stopped half-way, as a sync killed inside git would leave it, markers included
    subprocess.run(["git", "-c", "merge.memory-forest-record.driver=false",
                    "-c", "user.name=t", "-c", "user.email=t@example.org", "merge",
                    "origin/" + git(a, "branch", "--show-current")], cwd=a, capture_output=True)
    assert (a / ".git" / "MERGE_HEAD").exists()
    (a / leaf).write_text("<<<<<<< ours\nred\n=======\ngreen\n>>>>>>> theirs\n")
    done = sync(a)
    assert done["ok"] and done["conflicts"][0]["path"] == leaf, done
    assert (a / leaf).read_text() == original.replace("painted blue", "painted red")
    assert not (a / ".git" / "MERGE_HEAD").exists()
    assert operations.validate(a)["ok"]


def test_init_adds_a_remote_to_an_existing_repository(tmp_path: Path) -> None:
    root, remote = tmp_path / "forest", tmp_path / "remote.git"
    operations.init(root)
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(root, "init", "-q")
    raises_code(lambda: sync(root, remote="upstream"), "sync_remote_missing")
    shown = sync(root, init=os.fspath(remote), dry_run=True)
    assert shown["incoming"] is None and "origin" not in git(root, "remote")
    done = sync(root, init=os.fspath(remote))
    assert done["pushed"] and not done["created"]
    raises_code(lambda: sync(root, init=os.fspath(tmp_path / "other.git")), "sync_remote_exists")


def test_maintain_sync_replicates_on_schedule(pair, monkeypatch) -> None:
    """The scheduled job's sync step: A's new fact reaches B by two maintain runs."""
    from memory_forest.maintain import maintain

    _, a, b = pair
    machine(monkeypatch, "alpha")
    remember(a, content="The rain barrel tap drips.", title="Rain barrel")
    ran = maintain(a, sync=True)
    assert ran["ok"], ran
    assert ran["steps"]["sync"]["committed"] > 0 and ran["steps"]["sync"]["pushed"]
    assert set(ran["steps"]) >= {"lock", "index", "verify", "sync"}
    machine(monkeypatch, "beta")
    pulled = maintain(b, sync=True)
    assert pulled["ok"] and pulled["steps"]["sync"]["pulled"] > 0, pulled
    assert any(node["path"].endswith("rain-barrel.md")
               for trail in retrieve(b, "rain barrel tap")["trails"] for node in trail["nodes"])
    # Counts only: the run record names no path and no memory text.
    assert "rain" not in json.dumps(pulled["steps"]["sync"]).lower()
    assert not maintain(b)["steps"].get("sync")  # off unless asked for


def test_a_running_sync_holds_the_writers_lock(pair) -> None:
    from memory_forest import lock

    _, a, _ = pair
    with lock.held(a, "sync"):
        raises_code(lambda: remember(a, content="A note.", title="Note", wait=0), "lock_held")
        raises_code(lambda: sync(a, wait=0), "lock_held")
