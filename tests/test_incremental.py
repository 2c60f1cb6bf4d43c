"""An incremental build equals a full rebuild, after any sequence of changes.

Each example starts from the example forest, applies a random sequence of
edits, additions, deletions, renames (of leaves, and of branches and trees
with their children), mode changes, duplicate ids, names
that differ only by case, symlinks, captures, Daily entries and citations,
and after every change compares the incrementally kept index (every table:
documents, full text, quarantine, problems, references, fragments and their
full text, citations, and the unfiled list) with a full rebuild of the same
files. Changed files get a distinct mtime an hour in the past, so the build
trusts the stat of every file it did not see change, as it would in use:
nothing is re-read just because it is recent.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import tempfile
import time
from pathlib import Path

from forestkit import render_doc, write_file
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_forest import checks, index, operations, retrieve
from memory_forest.forest import Forest
from memory_forest.statefiles import index_path
from memory_forest.store import lookups

HOUR_NS = 3600 * 10**9
LEAVES = "04 stm"


class Changes:
    """The forest under test and the changes a step can make to it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.clock = time.time_ns() - HOUR_NS
        self.step = 0

    def files(self, under: str = "", suffix: str = ".md") -> list[str]:
        found = []
        for folder, _, names in os.walk(self.root / under if under else self.root):
            rel_dir = os.path.relpath(folder, self.root)
            if rel_dir.startswith(".memory-forest"):
                continue
            for name in names:
                rel = os.path.normpath(os.path.join(rel_dir, name))
                if rel.endswith(suffix) and not os.path.islink(self.root / rel):
                    found.append(rel)
        return sorted(found)

    def pick(self, choices: list[str], seed: int) -> str | None:
        return choices[seed % len(choices)] if choices else None

    def leaf_paths(self) -> list[str]:
        return self.files(LEAVES)

    def backdate(self) -> None:
        """Every file changed just now gets its own mtime in the past."""
        now = time.time_ns() - 10 * 10**9
        for rel in self.files(suffix=""):
            path = self.root / rel
            if os.lstat(path).st_mtime_ns > now:
                self.clock += 1_000_000
                os.utime(path, ns=(self.clock, self.clock), follow_symlinks=False)

    # --- the changes ----------------------------------------------------------------------

    def edit(self, seed: int) -> None:
        rel = self.pick(self.files(), seed)
        if rel:
            with open(self.root / rel, "a", encoding="utf-8") as handle:
                handle.write(f"\nedited in step {self.step}\n")

    def break_yaml(self, seed: int) -> None:
        rel = self.pick(self.files("03 mtm") + self.leaf_paths(), seed)
        if rel:
            write_file(self.root, rel, b"---\ntitle: [unclosed\n---\n# Broken\n")

    def binary(self, seed: int) -> None:
        """Bytes that are not UTF-8: left out of the index, its readable words kept apart."""
        rel = self.pick(self.files("03 mtm") + self.leaf_paths(), seed)
        if rel:
            write_file(self.root, rel, b"\x89PNG\r\n\x1a\n\xff habanero gloves \x00\x01")

    def rewrite(self, seed: int) -> None:
        """A clean document again (a fix for whatever the file had)."""
        rel = self.pick(self.files("02 ltm") + self.files("03 mtm") + self.leaf_paths(), seed)
        if rel:
            write_file(self.root, rel, render_doc(rel, f"Doc {seed}", f"body {seed}",
                                                  f"id-{rel}"))

    def bad_link(self, seed: int) -> None:
        rel = self.pick(self.leaf_paths(), seed)
        other = self.pick(self.leaf_paths(), seed // 7)
        if rel and other:
            target = other[:-3] if seed % 2 else "03 mtm/nowhere/gone"
            with open(self.root / rel, "a", encoding="utf-8") as handle:
                handle.write(f"\nSee [[{target}]].\n")

    def add_leaf(self, seed: int) -> None:
        branches = [p[len("03 mtm/"):-3] for p in self.files("03 mtm")] + ["orphan/none"]
        branch = self.pick(branches, seed)
        rel = f"{LEAVES}/{branch}/added-{self.step}.md"
        write_file(self.root, rel, render_doc(rel, f"Added {self.step}", "new", f"new-{seed}"))

    def add_branch(self, seed: int) -> None:
        """A branch for leaves that have none (or a new one), linking down to a leaf."""
        trees = [p[len("02 ltm/"):-len("_LTM.md")] for p in self.files("02 ltm")] + ["orphan"]
        tree = self.pick(trees, seed)
        branch = "none" if seed % 2 else f"branch-{self.step}"
        rel = f"03 mtm/{tree}/{branch}.md"
        down = self.pick(self.files(f"{LEAVES}/{tree}/{branch}"), seed)
        body = f"- [[{down[:-3]}]]" if down else ""
        write_file(self.root, rel, render_doc(rel, f"Branch {branch}", body, f"mtm-{seed}"))

    def delete(self, seed: int) -> None:
        rel = self.pick(self.files("02 ltm") + self.files("03 mtm") + self.leaf_paths(), seed)
        if rel:
            os.unlink(self.root / rel)

    def rename(self, seed: int) -> None:
        rel = self.pick(self.leaf_paths(), seed)
        folders = sorted({p.rsplit("/", 1)[0] for p in self.leaf_paths()})
        folder = self.pick(folders, seed // 3)
        if rel and folder:
            target = f"{folder}/moved-{self.step}.md"
            if not (self.root / target).exists():
                os.rename(self.root / rel, self.root / target)

    def move_branch(self, seed: int) -> None:
        """A branch moved as a file manager moves it: its file and its leaves' folder
        together, the file alone (its leaves lose their parent) or the folder alone. The
        file goes, when one is there, onto a folder of leaves that has no branch file: a
        path that appears with children already under it."""
        rel = self.pick(self.files("03 mtm"), seed)
        if not rel:
            return
        tree = rel.split("/")[1]
        orphans = [folder for folder in self.folders(f"{LEAVES}/{tree}")
                   if not (self.root / f"03 mtm/{tree}/{folder}.md").exists()]
        name = self.pick(orphans, seed // 3) or f"moved-{self.step}"
        how = seed % 3
        moves = [] if how == 2 else [(rel, f"03 mtm/{tree}/{name}.md")]
        if how != 1:
            moves.append((f"{LEAVES}/{rel[len('03 mtm/'):-3]}", f"{LEAVES}/{tree}/{name}"))
        self.move(moves)

    def move_tree(self, seed: int) -> None:
        """A tree renamed with its branches and leaves, or its root file alone onto a tree
        folder that has none (a path that appears with branches under it)."""
        rel = self.pick(self.files("02 ltm"), seed)
        if not rel:
            return
        tree = rel[len("02 ltm/"):-len("_LTM.md")]
        orphans = [folder for folder in self.folders("03 mtm")
                   if not (self.root / f"02 ltm/{folder}_LTM.md").exists()]
        name = self.pick(orphans, seed // 3) or f"moved-{self.step}"
        moves = [(rel, f"02 ltm/{name}_LTM.md")]
        if seed % 2:
            moves += [(f"{layer}/{tree}", f"{layer}/{name}") for layer in ("03 mtm", LEAVES)]
        self.move(moves)

    def folders(self, under: str) -> list[str]:
        path = self.root / under
        return sorted(entry.name for entry in path.iterdir()
                      if entry.is_dir() and not entry.is_symlink()) if path.is_dir() else []

    def move(self, moves: list[tuple[str, str]]) -> None:
        """Each rename whose source is there and whose target is not."""
        for source, target in moves:
            if os.path.lexists(self.root / source) and not os.path.lexists(self.root / target):
                (self.root / target).parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.rename(self.root / source, self.root / target)

    def chmod(self, seed: int) -> None:
        rel = self.pick(self.files(suffix=""), seed)
        if rel:
            path = self.root / rel
            os.chmod(path, 0o644 if os.stat(path).st_mode & 0o777 == 0o600 else 0o600)

    def duplicate_id(self, seed: int) -> None:
        rel = self.pick(self.leaf_paths(), seed)
        other = self.pick(self.files("03 mtm") + self.leaf_paths(), seed // 5)
        if rel and other:
            write_file(self.root, rel, render_doc(rel, "Twin", "same id", f"id-{other}"))

    def case_twin(self, seed: int) -> None:
        rel = self.pick(self.leaf_paths(), seed)
        if rel:
            folder, name = rel.rsplit("/", 1)
            twin = f"{folder}/{name[0].upper()}{name[1:]}"
            if twin != rel:
                write_file(self.root, twin, render_doc(twin, "Twin", "by case", f"twin-{seed}"))

    def symlink(self, seed: int) -> None:
        """A symlink where a branch would be, or no longer."""
        rel = f"03 mtm/kitchen/linked-{seed % 2}.md"
        path = self.root / rel
        if path.is_symlink():
            path.unlink()
        elif not path.exists():
            path.parent.mkdir(mode=0o700, exist_ok=True)  # a move may have taken the tree
            os.symlink(self.root / "01 xltm/XLTM.md", path)
            write_file(self.root, f"{LEAVES}/kitchen/linked-{seed % 2}/under.md",
                       render_doc(f"{LEAVES}/kitchen/linked-{seed % 2}/under.md", "Under", "",
                                  f"under-{seed}"))

    def capture(self, seed: int) -> None:
        """A new event in an ISTM shard (a new shard or the end of one)."""
        day = f"2026-11-{seed % 3 + 27:02d}"
        event = {"event_id": f"evt-step-{self.step}-{seed}", "observed_at": f"{day}T10:00:00Z",
                 "captured_at": "2026-11-29T10:00:00Z", "source": "test", "kind": "note",
                 "payload": {"text": f"capture {seed}"}}
        path = self.root / f"06 istm/{day}.jsonl"
        old = path.read_bytes() if path.exists() else b""
        write_file(self.root, f"06 istm/{day}.jsonl", old + json.dumps(event).encode() + b"\n")

    def daily_entry(self, seed: int) -> None:
        """A new ``## entry`` in a Daily record, citing an event when one exists."""
        path = self.root / "05 daily/2026-11-28.md"
        if path.exists():
            pointer = self.pick(self.pointers("06 istm"), seed)
            sources = f"Sources: `{pointer}`\n" if pointer else ""
            with open(path, "a", encoding="utf-8") as handle:
                handle.write(f"\n## d-step-{self.step}\n\nEntry {seed}.\n{sources}")

    def cite(self, seed: int) -> None:
        """A branch or leaf rewritten to cite a capture (an event or a Daily entry), or to
        cite nothing any more."""
        rel = self.pick(self.files("03 mtm") + self.leaf_paths(), seed)
        pointer = self.pick(self.pointers("06 istm") + self.pointers("05 daily"), seed // 3)
        if rel:
            text = render_doc(rel, f"Cites {seed}", f"cites {seed}", f"cite-{rel}")
            if pointer and seed % 4:
                sources = f"sources:\n  - {json.dumps(pointer)}\n---\n#"
                text = text.replace(b"---\n#", sources.encode(), 1)
            write_file(self.root, rel, text)

    def pointers(self, layer: str) -> list[str]:
        """Every capture pointer (``path#anchor``) in a source layer, as the files hold them."""
        found = []
        for rel in self.files(layer, suffix=""):
            text = (self.root / rel).read_text(encoding="utf-8", errors="replace")
            for line in text.splitlines():
                if line.startswith("## "):
                    found.append(f"{rel}#{line[3:].strip()}")
                elif line.startswith("{"):
                    try:
                        event_id = json.loads(line).get("event_id")
                    except (ValueError, AttributeError):
                        continue
                    if isinstance(event_id, str):
                        found.append(f"{rel}#{event_id}")
        return found

    def copy_events(self, seed: int) -> None:
        """An event file copied under another day: every event id now twice."""
        source = self.pick(self.files("06 istm", suffix=".jsonl"), seed)
        target = f"06 istm/2026-12-{seed % 28 + 1:02d}.jsonl"
        if source and source != target:
            shutil.copyfile(self.root / source, self.root / target)
            os.chmod(self.root / target, 0o600)


CHANGES = [name for name in vars(Changes) if not name.startswith("_")
           and name not in ("files", "pick", "leaf_paths", "backdate", "pointers", "folders",
                            "move")]


def index_state(root: Path) -> dict[str, list]:
    """Every table of the index, in an order that does not depend on how it was built."""
    con = sqlite3.connect(f"{index_path(root).as_uri()}?mode=ro", uri=True)
    try:
        tables = {
            "docs": "SELECT path, layer, layer_number, tree, branch, leaf, parent_path, doc_id,"
                    " title, status, sha256, size, mtime_ns, ino, facts, updated, superseded_by"
                    " FROM docs",
            "terms": "SELECT d.path, t.title, t.path, t.body FROM terms t JOIN docs d"
                     " ON d.rowid = t.rowid",
            "orphan_terms": "SELECT rowid FROM terms WHERE rowid NOT IN (SELECT rowid FROM docs)",
            "quarantine": "SELECT * FROM quarantine",
            "left_out": "SELECT l.path, t.title, t.names, t.body FROM left_out l"
                        " JOIN left_out_terms t ON t.rowid = l.rowid",
            "orphan_left_out": "SELECT rowid FROM left_out_terms WHERE rowid NOT IN"
                               " (SELECT rowid FROM left_out) UNION ALL SELECT rowid FROM"
                               " left_out WHERE rowid NOT IN (SELECT rowid FROM left_out_terms)",
            "problems": "SELECT * FROM problems",
            "links": "SELECT * FROM links",
            "events": "SELECT * FROM events",
            "fragments": "SELECT d.path, f.kind, f.anchor, f.observed_at, t.body FROM fragments f"
                         " JOIN docs d ON d.rowid = f.doc JOIN fragment_terms t"
                         " ON t.rowid = f.rowid",
            "orphan_fragments": "SELECT rowid FROM fragments WHERE doc NOT IN"
                                " (SELECT rowid FROM docs) UNION ALL SELECT rowid FROM"
                                " fragment_terms WHERE rowid NOT IN (SELECT rowid FROM fragments)",
            "cites": "SELECT * FROM cites",
            "pending": "SELECT * FROM pending",
            "unread": "SELECT value FROM meta WHERE key = 'unread'",
        }
        state = {name: sorted(con.execute(sql).fetchall(), key=repr)
                 for name, sql in tables.items()}
        state["unfiled"] = [(f.kind, f.path, f.anchor, f.observed_at, f.sha256)
                            for f in lookups.unfiled(con)]
        return state
    finally:
        con.close()


def full_rebuild_state(root: Path) -> tuple[dict, dict]:
    """A full rebuild's index and report, leaving the incremental index in place after."""
    kept = index_path(root).with_name("kept.sqlite3")
    shutil.copy2(index_path(root), kept)
    try:
        report = index.build(Forest.open(root), full=True)
        return index_state(root), report
    finally:
        os.replace(kept, index_path(root))


REPORTED = ("problems", "quarantined", "warnings", "documents")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(CHANGES), st.integers(0, 10_000)),
                min_size=1, max_size=8))
def test_incremental_index_and_problems_equal_a_full_rebuild(steps):
    workdir = Path(tempfile.mkdtemp(prefix="mf-incremental-"))
    try:
        root = workdir / "forest"
        operations.init(root, example=True)
        changes = Changes(root)
        changes.backdate()
        os.utime(root / "01 xltm/XLTM.md", ns=(changes.clock, changes.clock))
        index.build(Forest.open(root), full=True)
        for number, (change, seed) in enumerate(steps):
            changes.step = number
            getattr(changes, change)(seed)
            changes.backdate()
            report = index.build(Forest.open(root))
            assert report["mode"] == "incremental"
            full_state, full_report = full_rebuild_state(root)
            assert index_state(root) == full_state, f"after {steps[:number + 1]}"
            assert {k: report[k] for k in REPORTED} == {k: full_report[k] for k in REPORTED}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def _indexed_example(tmp_path: Path) -> tuple[Path, Changes]:
    """The example forest, its files an hour old, fully indexed."""
    root = tmp_path / "forest"
    operations.init(root, example=True)
    changes = Changes(root)
    changes.backdate()
    index.build(Forest.open(root), full=True)
    return root, changes


def test_one_edit_reads_one_file_and_no_change_reads_none(tmp_path):
    root, changes = _indexed_example(tmp_path)
    recorder = checks.Recorder()
    assert index.refresh(Forest.open(root), recorder=recorder).written["mode"] == "incremental"
    assert recorder.steps["read"]["read"] == 0
    changes.edit(3)
    changes.backdate()
    recorder = checks.Recorder()
    index.refresh(Forest.open(root), recorder=recorder)
    assert recorder.steps["read"]["read"] == 1


def test_a_deleted_branch_rechecks_its_leaves_and_nothing_else(tmp_path):
    """The leaves lose their parent; the other tree's files are not read."""
    root, changes = _indexed_example(tmp_path)
    os.unlink(root / "03 mtm/kitchen/fermentation.md")
    recorder = checks.Recorder()
    done = index.refresh(Forest.open(root), recorder=recorder)
    leaves = {"04 stm/kitchen/fermentation/kimchi-batch-7.md",
              "04 stm/kitchen/fermentation/zaatar-blend.md"}
    # The branch's children and the tree that linked down to it: nothing from the greenhouse.
    assert recorder.steps["read"]["read"] == 3
    # Readable leaves that lost their parent file stay indexed, with a warning each.
    assert {(i.path, i.code) for i in done.triage.problems if i.level == "warning"} >= {
        (leaf, "parent_missing") for leaf in leaves}
    assert not done.triage.quarantined & leaves
    [trail] = retrieve.retrieve(root, "kimchi")["trails"]
    assert trail["reason"] == "owner_not_indexed"
    assert trail["missing"] == ["03 mtm/kitchen/fermentation.md"]


def test_a_branch_that_appears_over_its_leaves_rejudges_them(tmp_path):
    """A branch file moved away and back: its leaves were orphans, and the path that
    appeared again has them as children, so the build must judge them again."""
    root, changes = _indexed_example(tmp_path)
    branch, aside = root / "03 mtm/kitchen/fermentation.md", tmp_path / "fermentation.md"
    leaves = {"04 stm/kitchen/fermentation/kimchi-batch-7.md",
              "04 stm/kitchen/fermentation/zaatar-blend.md"}
    os.rename(branch, aside)
    orphaned = index.refresh(Forest.open(root)).triage.problems
    assert {(i.path, i.code) for i in orphaned} >= {(leaf, "parent_missing") for leaf in leaves}
    os.rename(aside, branch)
    changes.backdate()
    done = index.refresh(Forest.open(root))
    assert done.written["mode"] == "incremental"
    assert not {(i.path, i.code) for i in done.triage.problems} & {
        (leaf, "parent_missing") for leaf in leaves}
    assert index_state(root) == full_rebuild_state(root)[0]
    [trail] = retrieve.retrieve(root, "kimchi")["trails"]
    assert trail["nodes"][-2]["path"] == "03 mtm/kitchen/fermentation.md"


def test_a_file_replaced_with_its_old_size_and_mtime_is_seen_by_its_inode(tmp_path):
    """A sync tool that restores mtimes (rsync -t) can swap a file for one of the same size
    and mtime: only the inode tells, and the build must read it."""
    root, changes = _indexed_example(tmp_path)
    rel = "04 stm/kitchen/fermentation/kimchi-batch-7.md"
    path = root / rel
    old = path.read_bytes()
    st = os.stat(path)
    new = old.replace(b"kimchi", b"kimcha", 1)
    assert new != old and len(new) == len(old)
    write_file(root, rel + ".new", new)
    os.utime(root / (rel + ".new"), ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(root / (rel + ".new"), path)
    assert os.stat(path).st_ino != st.st_ino and os.stat(path).st_mtime_ns == st.st_mtime_ns
    report = index.build(Forest.open(root))
    assert (report["mode"], report["changed"]) == ("incremental", 1)
    full_state, _ = full_rebuild_state(root)
    assert index_state(root) == full_state
