"""Mutation check: each deliberate breakage of the package must make a test fail.

Usage: python scripts/mutation_check.py [--only NAME ...] [--list] [--no-baseline]
       python scripts/mutation_check.py --write-docs

For every breakage in BREAKAGES the package source (src/memory_forest) is
copied to a fresh temporary directory, the breakage's string replacements are
applied to the copy, and the breakage's test files run with ``-x`` against
the copy (PYTHONPATH puts it before the installed package, and that it does
is checked before anything runs). A breakage is *caught* when a test fails;
it *survives* when every test passes. The script prints a table, breakage ->
tests that caught it, and exits 1 when any breakage survives. ``--write-docs``
writes the list itself (breakage, file, the tests that must catch it) into
docs/testing.md, so the page names exactly the breakages the check runs.

It fails loudly, never quietly, when the check itself has gone stale: a
replacement that does not apply exactly once (the code it breaks has
changed), a listed test file that does not exist, a mutated copy that does
not compile, or a test run that errors instead of failing (a collection
error proves nothing). The baseline run first checks that the untouched copy
passes every listed test file, so a failure can only come from the breakage.

To add a breakage, add one Breakage record: the file under src/memory_forest,
the (old, new) replacements, and the test files that should catch it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from docblock import write_block  # noqa: E402

PACKAGE = "memory_forest"
DOCS = REPO / "docs" / "testing.md"
BEGIN, END = "<!-- mutation_check:begin -->", "<!-- mutation_check:end -->"
RUN_TIMEOUT = 600


@dataclass(frozen=True)
class Breakage:
    name: str
    file: str  # relative to src/memory_forest
    edits: tuple[tuple[str, str], ...]  # (old, new); each old must occur exactly once
    tests: tuple[str, ...]  # test files, relative to the repository


BREAKAGES: tuple[Breakage, ...] = (
    Breakage(
        "an incremental build forgets the files linking to one that appeared or went",
        "incremental.py",
        (("    affected |= filerows.linking_to(con, {link_target(path) for path in appeared})\n",
          "    affected |= set()\n"),),
        ("tests/test_incremental.py",),
    ),
    Breakage(
        "an incremental build leaves the children of a path that appeared or went unjudged",
        "incremental.py",
        (("            if routed(child) and parent_of(child) == path:\n",
          "            if False:\n"),),
        ("tests/test_incremental.py",),
    ),
    Breakage(
        "an incremental build ignores inode changes", "building.py",
        (("    fresh = {entry[0] for entry in on_disk - known}\n",
          "    fresh = {entry[0] for entry in on_disk - known if entry[:3] not in\n"
          "             {row[:3] for row in known}}\n"),),
        ("tests/test_incremental.py",),
    ),
    Breakage(
        "verify compares sizes only, not sha256", "retrieve.py",
        (('seen[path] = _state_of(forest, path, node["sha256"], strict)',
          'seen[path] = _state_of(forest, path, node["size"], strict)'),
         ("    changed = current != indexed_sha256\n",
          "    changed = len(data) != indexed_sha256\n")),
        ("tests/cli/test_cli_retrieval.py", "tests/test_index.py"),
    ),
    Breakage(
        "hash verification a no-op", "retrieve.py",
        (("    changed = current != indexed_sha256\n", "    changed = False\n"),),
        ("tests/cli/test_cli_retrieval.py", "tests/test_retrieve.py"),
    ),
    Breakage(
        "write_private writes in place (no temp, no fsync, no rename)", "safety.py",
        (('    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")\n',
          "    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, FILE_MODE)\n"
          "    os.fchmod(fd, FILE_MODE)\n"
          "    view = memoryview(data)\n"
          "    while view:\n"
          "        view = view[os.write(fd, view):]\n"
          "    os.close(fd)\n"
          "    return\n"
          '    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")\n'),),
        ("tests/test_safety.py", "tests/writers/test_crash.py"),
    ),
    Breakage(
        "temp file not fsynced before its rename", "safety.py",
        (("            view = view[os.write(fd, view):]\n        os.fsync(fd)\n",
          "            view = view[os.write(fd, view):]\n"),),
        ("tests/test_safety.py", "tests/writers/test_durability.py"),
    ),
    Breakage(
        "directory not fsynced after a rename", "safety.py",
        (("        raise\n    fsync_dir(path.parent)\n", "        raise\n"),),
        ("tests/test_safety.py", "tests/writers/test_durability.py"),
    ),
    Breakage(
        "rollback leaves the directories it created", "writers/journal.py",
        (('    for rel in reversed(journal.manifest["dirs"]):\n',
          '    for rel in reversed(journal.manifest["dirs"][:0]):\n'),),
        ("tests/writers/test_crash.py", "tests/writers/test_transaction.py"),
    ),
    Breakage(
        "an OSError from the disk is internal_error again", "envelope.py",
        (("    disk = as_io_error(exc) if isinstance(exc, Exception) else None\n",
          "    disk = None\n"),),
        ("tests/test_io_errors.py",),
    ),
    Breakage(
        "setting a corrupt journal aside deletes it", "writers/journal_torn.py",
        (("    os.rename(state_dir / JOURNAL, target)\n",
          "    shutil.rmtree(state_dir / JOURNAL)\n    os.mkdir(target)\n"),),
        ("tests/writers/test_journal_repair.py",),
    ),
    Breakage(
        "a journal restore deletes the files it takes out of the forest",
        "writers/journal_torn.py",
        (("            os.rename(target, folder / name)\n",
          "            os.unlink(target)\n"),),
        ("tests/journeys/test_double_fault.py",),
    ),
    Breakage(
        "redaction disabled", "writers/redact.py",
        (("        found = spans(text)\n        if not found:\n            return text\n",
          "        found = []\n        if not found:\n            return text\n"),),
        ("tests/writers/test_redact.py", "tests/writers/test_redaction_writers.py"),
    ),
    Breakage(
        "remember files a redacted fact only up to its first marker", "writers/remember.py",
        (('        block = entry_block(stage.now, pointer, payload["text"])\n',
          '        block = entry_block(stage.now, pointer,\n'
          '                            payload["text"].split("[REDACTED")[0])\n'),),
        ("tests/writers/test_remember.py",),
    ),
    Breakage(
        "the credential detector finds nothing", "credentials/__init__.py",
        (("    if not may_hold(folded):\n        return []\n",
          "    if folded:\n        return []\n"),),
        ("tests/test_credentials.py", "tests/test_sync.py", "tests/test_release_audit.py"),
    ),
    Breakage(
        "sync reads no commit the remote has not seen, only the working tree", "syncscan.py",
        (("    found = committed(repo, remote, allow_binary) if remote is not None else []\n",
          "    found = []\n"),),
        ("tests/test_syncscan.py",),
    ),
    Breakage(
        "sync leaves the modes git wrote under the user's umask", "syncsettle.py",
        (('    done["modes"] = restore_modes(root, changed, None if since is None else since[1])\n',
          '    done["modes"] = {"modes": [], "modes_failed": [], "git_modes": 0}\n'),),
        ("tests/test_sync.py", "tests/test_syncsettle.py"),
    ),
    Breakage(
        "sync leaves what git wrote in .git readable by others", "modes.py",
        (('    report["git_modes"] = _private_git_dir(root, since_ns)\n',
          '    report["git_modes"] = 0\n'),),
        ("tests/test_sync.py", "tests/test_syncsettle.py"),
    ),
    Breakage(
        "files created 0644", "safety.py",
        (("os.O_NOFOLLOW, FILE_MODE)\n    try:\n        os.fchmod(fd, FILE_MODE)\n",
          "os.O_NOFOLLOW, 0o644)\n    try:\n        os.fchmod(fd, 0o644)\n"),),
        ("tests/test_safety.py", "tests/test_init.py"),
    ),
    Breakage(
        "mode checks disabled", "safety.py",
        (("    if mode != want:\n        code = ", "    if False:\n        code = "),),
        ("tests/test_validate.py", "tests/test_audit.py"),
    ),
    Breakage(
        "placement files a fact under a branch that barely beats the runner-up", "placement.py",
        (("    if runner is not None and runner.strength >= best.strength \\\n"
          "            and best.score < MIN_MARGIN * runner.score:\n",
          "    if False:\n"),),
        ("tests/test_placement.py",),
    ),
    Breakage(
        "append files a fact into the leaf of another instance", "placement.py",
        (("    differing = differs(text, leaf_title)\n", "    differing = {}\n"),),
        ("tests/test_placement.py", "tests/writers/test_consolidate.py"),
    ),
    Breakage(
        "a capture a leaf cites is still listed as unfiled", "store/lookups.py",
        (("\"(f.kind = 'event' AND s.layer_number IN (4, 5)) OR \"",
          "\"(f.kind = 'event' AND s.layer_number IN (-1)) OR \""),),
        ("tests/test_unfiled.py",),
    ),
    Breakage(
        "audit no longer checks the ISTM hash chain", "audit.py",
        (("            if previous is not None and record[chain.FIELD] != previous:\n",
          "            if False:\n"),),
        ("tests/test_provenance.py",),
    ),
    Breakage(
        "accepting a proposal ignores a source that changed since it was made",
        "writers/proposals.py",
        (('            "changed" if sha256_hex(line) != source.fingerprint else None\n',
          '            None\n'),),
        ("tests/writers/test_consolidate.py",),
    ),
    Breakage(
        "browse renders raw HTML", "browse/safehtml.py",
        (('MarkdownIt("commonmark", {"html": False,', 'MarkdownIt("commonmark", {"html": True,'),
         ('    rules["html_block"] = _render_escaped_block\n'
          '    rules["html_inline"] = _render_escaped\n', "")),
        ("tests/test_browse.py",),
    ),
    Breakage(
        "an MCP tool error carries structured content that breaks the output schema",
        "mcp_server.py",
        (("            return types.CallToolResult.model_validate(tool_error(outcome))\n",
          "            return types.CallToolResult.model_validate(\n"
          "                {**tool_error(outcome), \"structuredContent\": outcome})\n"),),
        ("tests/test_mcp_server.py",),
    ),
    Breakage(
        "the MCP frame reader keeps a repeated key's last value", "mcp_frames.py",
        (("        self.pairs = pairs\n", "        self.pairs = list(dict(pairs).items())\n"),),
        ("tests/test_mcp_server.py",),
    ),
    Breakage(
        "a finding's message no longer says which command fixes it", "issues.py",
        (('        return f"{self.message}: {FIXES.get(self.code, _UNKNOWN)}"\n',
          "        return self.message\n"),),
        ("tests/journeys/test_journey_terminal.py",),
    ),
    Breakage(
        "index and maintain stop counting a symlink at a document's path as left out",
        "quarantine.py",
        (("    return len(set(quarantined) | set(unread))\n",
          "    return len(set(quarantined))\n"),),
        ("tests/journeys/test_journey_terminal.py",),
    ),
    Breakage(
        "sync merges a remote commit whose tree holds an entry named '..'", "sync.py",
        (("        refuse_unsafe(repo, self.remote, branch)",
          "        (repo, self.remote, branch)"),),
        ("tests/test_sync_unsafe_remote.py",),
    ),
    Breakage(
        "sync publishes a symlink in a layer", "publishing.py",
        (("    if stat.S_ISLNK(st.st_mode):\n        return \"symlink\"\n", ""),),
        ("tests/test_sync_publish.py",),
    ),
    Breakage(
        "sync checks out what another machine committed by hand", "publishing.py",
        (("    if paths:\n        patterns", "    if not paths:\n        patterns"),),
        ("tests/test_sync_publish.py",),
    ),
    Breakage(
        "doctor --repair leaves a stale .git/index.lock", "syncsafety.py",
        (("        os.unlink(root / INDEX_LOCK)\n", "        os.stat(root / INDEX_LOCK)\n"),),
        ("tests/test_sync_unsafe_remote.py",),
    ),
    Breakage(
        "a FIFO where a state file belongs is opened like a file", "safety.py",
        (("        if not S_ISREG(os.fstat(fd).st_mode):\n",
          "        if S_ISDIR(os.fstat(fd).st_mode):\n"),),
        ("tests/test_damaged_semantic_state.py",),
    ),
    Breakage(
        "the dense floor lowered: an unrelated question gets a dense-only trail",
        "semantic_null.py",
        (("NULL_MARGIN = 0.01", "NULL_MARGIN = -0.01"),),
        ("tests/test_multilingual.py",),
    ),
    Breakage(
        "the null reference has no passage on science or geography",
        "semantic_null.py",
        (('    "Physics and chemistry: boiling points, densities and the speed of light.",\n'
          '    "Geography: the highest mountains, longest rivers and largest deserts'
          ' of the world.",\n',
          ""),),
        ("tests/test_multilingual.py",),
    ),
    Breakage(
        "the dense floor raised: questions in another language lose their leaf",
        "semantic_null.py",
        (("NULL_MARGIN = 0.01", "NULL_MARGIN = 0.02"),),
        ("tests/test_multilingual.py",),
    ),
    Breakage(
        "a paragraph is embedded in windows of four lines", "semantic.py",
        (("        while len(block) > CHUNK_LINES:\n"
          "            pieces.append(block[:CHUNK_LINES])\n"
          "            block = block[CHUNK_LINES:]\n",
          "        while len(block) > CHUNK_LINES + 1:\n"
          "            pieces.append(block[:CHUNK_LINES + 1])\n"
          "            block = block[CHUNK_LINES + 1:]\n"),),
        ("tests/test_semantic.py",),
    ),
    Breakage(
        "fusion adds no dense candidate", "semantic.py",
        (("        supported = pooled.size and float(pooled.max()) > floor\n",
          "        supported = False\n"),),
        ("tests/test_multilingual.py", "tests/test_semantic.py"),
    ),
    Breakage(
        "the matrix cache's keys are trusted without their shape checked", "semantic_cache.py",
        (("        found, hashes, counts = keys_shape(data)\n",
          "        keys = __import__('json').loads(data)\n"
          "        found, hashes, counts = keys['generation'], keys['hashes'], keys['counts']\n"),),
        ("tests/test_damaged_semantic_state.py",),
    ),
    Breakage(
        "a reader no longer rolls back a hot journal a killed writer left", "indexheal.py",
        (("    if hot(root):\n        roll_back(root)\n", "    pass\n"),),
        ("tests/journeys/test_journey_heal_index.py",),
    ),
    Breakage(
        "an index a cut-short journal left half-restored is trusted", "indexheal.py",
        (("            sound = schema.passes_quick_check(con)\n", "            sound = True\n"),),
        ("tests/test_damaged_index_state.py",),
    ),
    Breakage(
        "a hook blocks the turn on every failed lookup again", "gate.py",
        (('    if receipt["ok"] or strict or receipt["error"]["code"] in _BLOCKING:\n',
          "    if True:\n"),),
        ("tests/test_gate.py",),
    ),
    Breakage(
        "the gate's route results carry a line of the leaf's body in their titles", "gate.py",
        (('    results, trails = routed.get("results", []), found.get("trails", [])\n',
          '    results = [{**hit, "title": hit["title"] + " " + (forest.root / hit["path"])\n'
          '                .read_text().splitlines()[-1]} for hit in routed.get("results", [])]\n'
          '    trails = found.get("trails", [])\n'),),
        ("tests/journeys/test_journey_no_vacuous.py", "tests/test_gate.py",
         "tests/test_hostile.py"),
    ),
    Breakage(
        "route's results carry a line of the leaf's body in their titles", "retrieve.py",
        (('columns="title path") if terms else []\n'
          '        results = [{**node_of(row), "score": score} for row, score in found]\n',
          'columns="title path") if terms else []\n'
          '        results = [{**node_of(row), "score": score, "title": row.title + " " + (\n'
          '            forest.root / row.path).read_text().splitlines()[-1]}\n'
          '            for row, score in found]\n'),),
        ("tests/journeys/test_journey_no_vacuous.py", "tests/test_mcp_server.py"),
    ),
    Breakage(
        "consolidate proposes again a source another machine decided on",
        "writers/consolidate.py",
        (("             for pointer in proposals.pointers(proposal)} "
          "| lookups.decided(forest.reader())\n",
          "             for pointer in proposals.pointers(proposal)}\n"),),
        ("tests/journeys/test_review_travels.py",),
    ),
    Breakage(
        "consolidate names a leaf from an event's unredacted text", "writers/consolidate.py",
        (("        text = self._redacted(event_text(record))\n",
          "        text = event_text(record)\n"),),
        ("tests/writers/test_consolidate_names.py",),
    ),
    Breakage(
        "a conflict copy is named after the machine that merges", "syncconflicts.py",
        (('            tag = f"-conflict-{their_host(repo, their_ref, path)}-{stamp}"\n',
          '            tag = f"-conflict-{host_trailer()[20:]}-{stamp}"\n'),),
        ("tests/test_sync_conflicts.py",),
    ),
)


class Stale(Exception):
    """The check no longer matches the code or the tests: fix the record, never ignore it."""


def copy_package(into: Path) -> Path:
    """A pristine copy of src/memory_forest under ``into``/src, readable by every user
    (one test reruns the package as an unprivileged user)."""
    src = into / "src"
    shutil.copytree(REPO / "src" / PACKAGE, src / PACKAGE,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in (into, src):
        path.chmod(0o755)
    return src


def mutated(breakage: Breakage, text: str) -> str:
    """``text`` with the breakage's replacements; Stale unless each applies exactly once."""
    for old, new in breakage.edits:
        found = text.count(old)
        if found != 1:
            raise Stale(f"{breakage.name}: {old!r} occurs {found} times in {breakage.file}, "
                        "not once")
        text = text.replace(old, new)
    return text


def apply(breakage: Breakage, src: Path) -> None:
    target = src / PACKAGE / breakage.file
    text = mutated(breakage, target.read_text(encoding="utf-8"))
    try:
        compile(text, str(target), "exec")
    except SyntaxError as exc:
        raise Stale(f"{breakage.name}: the mutated {breakage.file} does not compile") from exc
    target.write_text(text, encoding="utf-8")


def environment(src: Path) -> dict[str, str]:
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(src) + (os.pathsep + path if path else "")}


def check_shadowing(src: Path) -> None:
    """The copy, not the installed package, is what the tests and their subprocesses import."""
    done = subprocess.run([sys.executable, "-c", f"import {PACKAGE}; print({PACKAGE}.__file__)"],
                          env=environment(src), capture_output=True, text=True, cwd=REPO,
                          timeout=60)
    imported = Path(done.stdout.strip()).resolve()
    if done.returncode != 0 or not imported.is_relative_to(src.resolve()):
        raise Stale(f"the copy does not shadow the installed package: {PACKAGE} comes from "
                    f"{imported or done.stderr.strip()}")


def run_tests(src: Path, tests: tuple[str, ...]) -> tuple[bool, list[str]]:
    """(all passed, the failing test ids). A run that errors rather than fails is Stale."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-x", "-q", "-rf", "-p", "no:cacheprovider", *tests],
        env=environment(src), capture_output=True, text=True, cwd=REPO, timeout=RUN_TIMEOUT)
    failed = [line.split(" ", 1)[1].split(" - ", 1)[0] for line in done.stdout.splitlines()
              if line.startswith("FAILED ")]
    if done.returncode == 0:
        return True, []
    if done.returncode == 1 and failed:
        return False, failed
    tail = "\n".join(done.stdout.splitlines()[-15:] + done.stderr.splitlines()[-5:])
    raise Stale(f"pytest exited {done.returncode} on {' '.join(tests)}:\n{tail}")


def check_records(breakages: tuple[Breakage, ...]) -> None:
    """Every record still applies and names real tests, before the long runs start."""
    for breakage in breakages:
        mutated(breakage, (REPO / "src" / PACKAGE / breakage.file).read_text(encoding="utf-8"))
        for test in breakage.tests:
            if not (REPO / test).is_file():
                raise Stale(f"{breakage.name}: the test file {test} does not exist")


def baseline(breakages: tuple[Breakage, ...]) -> None:
    tests = tuple(dict.fromkeys(test for b in breakages for test in b.tests))
    with tempfile.TemporaryDirectory(prefix="mutation-baseline-") as tmp:
        src = copy_package(Path(tmp))
        check_shadowing(src)
        passed, failed = run_tests(src, tests)
    if not passed:
        raise Stale(f"the untouched package already fails: {', '.join(failed)}")


def mutate(breakage: Breakage) -> list[str]:
    """The tests that caught ``breakage``; empty when it survived."""
    with tempfile.TemporaryDirectory(prefix="mutation-") as tmp:
        src = copy_package(Path(tmp))
        apply(breakage, src)
        check_shadowing(src)
        _, failed = run_tests(src, breakage.tests)
    return failed


def short(test_id: str) -> str:
    """A test id with long parameters elided, for the table."""
    name, bracket, params = test_id.partition("[")
    return name + (f"[{params[:-1]}]" if len(params) <= 24 else "[...]") if bracket else name


def table(results: list[tuple[Breakage, list[str]]]) -> str:
    lines = ["| breakage | caught by |", "|---|---|"]
    for breakage, failed in results:
        caught = ", ".join(f"`{short(test)}`" for test in failed) if failed else "**SURVIVED**"
        lines.append(f"| {breakage.name} | {caught} |")
    return "\n".join(lines)


def listing() -> str:
    """docs/testing.md's block: every breakage, the file it breaks, the tests that must
    catch it, in the order the check runs them."""
    lines = [BEGIN, "| breakage | file broken | tests that must catch it |", "|---|---|---|"]
    for breakage in BREAKAGES:
        tests = ", ".join(f"`{test}`" for test in breakage.tests)
        lines.append(f"| {breakage.name} | `{breakage.file}` | {tests} |")
    return "\n".join([*lines, END])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", default=[], metavar="NAME",
                        help="run the breakages whose name contains NAME (repeatable)")
    parser.add_argument("--list", action="store_true", help="list the breakages and exit")
    parser.add_argument("--write-docs", action="store_true",
                        help="write the list of breakages into docs/testing.md and exit")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip checking that the untouched package passes first")
    args = parser.parse_args(argv)
    if args.write_docs:
        write_block(DOCS, BEGIN, END, listing())
        return 0
    chosen = tuple(b for b in BREAKAGES
                   if not args.only or any(part in b.name for part in args.only))
    if args.list or not chosen:
        print("\n".join(b.name for b in BREAKAGES))
        return 0 if args.list else 2
    try:
        results = run(chosen, baseline_first=not args.no_baseline)
    except Stale as exc:
        print(f"mutation_check: stale: {exc}", file=sys.stderr)
        return 2
    print(table(results))
    survivors = [b.name for b, failed in results if not failed]
    if survivors:
        print(f"\n{len(survivors)} breakage(s) survived: {'; '.join(survivors)}",
              file=sys.stderr)
        return 1
    return 0


def run(chosen: tuple[Breakage, ...], baseline_first: bool) -> list[tuple[Breakage, list[str]]]:
    check_records(chosen)
    if baseline_first:
        baseline(chosen)
    results = []
    for breakage in chosen:
        results.append((breakage, mutate(breakage)))
        print(f"{'caught  ' if results[-1][1] else 'SURVIVED'} {breakage.name}",
              file=sys.stderr, flush=True)
    return results

if __name__ == "__main__":
    sys.exit(main())
