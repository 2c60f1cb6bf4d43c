"""Sync through git at scale: what `sync` costs, and what git costs, on a generated forest.

Usage: python scripts/bench_sync.py [--docs N] [--runs R] [--forest DIR] [--keep DIR]

Why this shape: `sync` is a CLI process that runs git several times, so it is
timed as one (the real CLI in a subprocess, ``--json``), against a bare remote
in a temporary directory, on the forest ``scripts/bench_scale.py`` generates
(``--forest DIR`` reuses one generated there). Machine A holds the forest and
its index (built untimed first, as a forest in use has one); machine B is a
``git clone`` of the remote on which ``sync`` is the first command, with
``MEMORY_FOREST_HOST=b`` so it writes as another machine. Measured, in order:

- A's first sync, ``sync --init REMOTE`` (repository, first commit of every
  file, checks, index update, push): once, it is the expensive one; then an
  untimed ``git gc`` on A (see ``measure`` for why);
- B: ``git clone`` of the remote, then B's first ``sync`` (modes, checks, a
  full index build): once each;
- a no-op ``sync`` on A and on B: median of --runs;
- one ``remember`` on A (untimed), then ``sync`` on A (commit and push) and on
  B (fetch, merge one commit, incremental index): median of --runs rounds;
- git's own cost on A's repository: ``git status --porcelain``, plain and
  with ``feature.manyFiles`` (index v4 and the untracked cache, after one
  warming run), and ``git fetch`` with nothing new: median of --runs;
- beside them: the whole-forest check and the credential scan over every
  tracked file, in process (the code sync runs), and git alone committing and
  pushing a copy of the same files (``init``, ``add -A``, ``commit``, ``push``);
- the sizes: files tracked, ``.git`` and the bare remote on disk.

With ``--after-remember-only`` only the routine case is measured, and
quickly enough to run at 100,000 documents: A is indexed and its first
commit pushed by git alone (untimed), then each round is one ``remember``
(untimed) and one timed ``sync`` on A, for this checkout's code and, with
``--before SRC`` (the ``src`` directory of another version, for example
``git archive`` of an older commit), for that code too, alternating which
goes first. Each version first runs one untimed ``remember`` and ``sync``: the
first sync of a repository settles the whole forest. Beside them, in
process: what a first push scans (every blob reachable from HEAD, from one
``git cat-file --batch``).

Prints JSON on stdout (every run's wall as well as the median) and writes
nothing into the repository. Run it at several --docs to see what grows.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_scale import CLI_ENV, our_executable, prepared_forest, progress  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5, help="Runs of each cheap measure (median).")
    parser.add_argument("--forest", type=Path,
                        help="Generate the forest here once (with a stamp) and reuse it.")
    parser.add_argument("--keep", type=Path,
                        help="Keep the remote and both machines under KEEP (a new directory).")
    parser.add_argument("--after-remember-only", action="store_true",
                        help="Measure only sync after one remember (and the first-push scan).")
    parser.add_argument("--before", type=Path, metavar="SRC",
                        help="With --after-remember-only: also time the code in SRC "
                        "(put on PYTHONPATH), alternating with this checkout's.")
    args = parser.parse_args()
    print(json.dumps(run(args), indent=2))


def run(args: argparse.Namespace) -> dict:
    workdir = Path(tempfile.mkdtemp(prefix="mf-bench-sync-"))
    try:
        source, stamp = prepared_forest(args.forest or workdir / "generated", args.docs)
        base = args.keep or workdir
        if args.keep:
            args.keep.mkdir(parents=True)
        if args.after_remember_only:
            report = after_remember(Path(our_executable()), source, base, args.runs,
                                    args.before)
        else:
            report = measure(Path(our_executable()), source, base, args.runs)
        return {"documents": stamp["documents"], "forest": stamp, "runs": args.runs,
                "load_average": [round(x, 2) for x in os.getloadavg()],
                "git": git_version(), "measured_at": now(), **report}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def measure(exe: Path, source: Path, base: Path, runs: int) -> dict:
    remote, a, b = base / "remote.git", base / "a", base / "b"
    git("init", "--bare", "-q", str(remote))
    copy_forest(exe, source, a)
    indexed = cli(exe, "a", "index", a)
    progress(f"A indexed in {indexed.wall:.2f} s (untimed setup)")
    m: dict = {"setup_index_a_s": round(indexed.wall, 3)}

    first = cli(exe, "a", "sync", a, "--init", remote.as_uri())
    m["first_sync_a_s"] = once(first, "committed", "index", "pushed")
    progress(f"A first sync: {first.wall:.2f} s")
    # A first sync leaves every object loose; the next commit starts git's detached
    # `gc --auto`, which deletes loose objects while sync walks .git to restore modes
    # (at 100,000 files that walk then fails with ENOENT). Packing first measures the
    # steady state every later sync sees.
    started = time.perf_counter()
    while (a / ".git" / "gc.pid").exists():  # the first sync's own commit may have started one
        time.sleep(0.5)
    git("-C", str(a), "gc", "-q")
    m["setup_gc_a_s"] = round(time.perf_counter() - started, 3)

    started = time.perf_counter()
    git("clone", "-q", remote.as_uri(), str(b))
    m["clone_b_s"] = round(time.perf_counter() - started, 3)
    first_b = cli(exe, "b", "sync", b)
    m["first_sync_b_s"] = once(first_b, "index", "modes")
    m["clone_and_first_sync_b_s"] = round(m["clone_b_s"] + first_b.wall, 3)
    progress(f"B clone {m['clone_b_s']:.2f} s, first sync {first_b.wall:.2f} s")

    for machine, root in (("a", a), ("b", b)):
        cli(exe, machine, "sync", root)  # settle: the first no-op after a build may still index
        walls = [cli(exe, machine, "sync", root, expect_nothing=True) for _ in range(runs)]
        m[f"noop_sync_{machine}_s"] = median(walls)
        progress(f"no-op sync {machine}: {m[f'noop_sync_{machine}_s']['median']:.3f} s")

    pushes, pulls = [], []
    for number in range(runs):
        cli(exe, "a", "remember", a, f"Sync bench fact {number}: the remote is a bare repo.")
        pushes.append(cli(exe, "a", "sync", a))
        pulls.append(cli(exe, "b", "sync", b))
        progress(f"after remember {number + 1}/{runs}: A {pushes[-1].wall:.3f} s, "
                 f"B {pulls[-1].wall:.3f} s")
    m["sync_after_remember_a_s"] = median(pushes, "committed", "pushed")
    m["sync_after_remember_b_s"] = median(pulls, "pulled", "index")

    m["git_status_s"] = timed_git(runs, "-C", str(a), "status", "--porcelain")
    many = ("-C", str(a), "-c", "feature.manyFiles=true", "-c", "core.untrackedCache=true",
            "status", "--porcelain")
    timed_git(1, *many)  # writes the untracked cache into the index
    m["git_status_many_files_s"] = timed_git(runs, *many)
    m["git_fetch_nothing_new_s"] = timed_git(runs, "-C", str(a), "fetch", "-q", "origin")
    m.update(in_process(a, runs))
    m.update(git_alone(a, base / "plain", base / "plain-remote.git"))
    m["tracked_files"] = len(git("-C", str(a), "ls-files", "-z").split("\0")) - 1
    m["git_dir_mib"] = du_mib(a / ".git")
    m["remote_mib"] = du_mib(remote)
    m["forest_mib"] = du_mib(a, exclude=(".git", ".memory-forest"))
    m["index_mib"] = round((a / ".memory-forest" / "index.sqlite3").stat().st_size / 2**20, 1)
    return m


def after_remember(exe: Path, source: Path, base: Path, runs: int,
                   before: Path | None) -> dict:
    """Sync after one remember on A, for this code and the code in ``before``, alternating."""
    from memory_forest.sync import GITATTRIBUTES, gitignore

    remote, a = base / "remote.git", base / "a"
    git("init", "--bare", "-q", str(remote))
    copy_forest(exe, source, a)
    m: dict = {"setup_index_a_s": round(cli(exe, "a", "index", a).wall, 3)}
    (a / ".gitignore").write_text(gitignore(), encoding="utf-8")
    (a / ".gitattributes").write_text(GITATTRIBUTES, encoding="utf-8")
    started = time.perf_counter()
    for args in (("init", "-q"), ("add", "-A"),
                 ("-c", "user.name=bench", "-c", "user.email=bench@localhost", "commit", "-q",
                  "-m", "first"),
                 ("remote", "add", "origin", remote.as_uri()),
                 ("push", "-q", "origin", "HEAD:refs/heads/main"), ("fetch", "-q", "origin"),
                 ("gc", "-q")):
        git("-C", str(a), "-c", "gc.auto=0", *args)  # no detached gc racing the next step
    m["setup_git_alone_s"] = round(time.perf_counter() - started, 3)
    progress(f"A indexed and pushed by git alone in {m['setup_git_alone_s']:.1f} s")
    # Both as ``python -m`` with a PYTHONPATH, so they start the same way.
    ours = str(Path(__file__).resolve().parent.parent / "src")
    versions = {"after": {"PYTHONPATH": ours},
                **({"before": {"PYTHONPATH": str(before)}} if before else {})}
    walls: dict[str, list[Outcome]] = {name: [] for name in versions}
    for name, env in versions.items():  # the first sync of each version settles everything
        cli(exe, "a", "remember", a, f"Sync bench warm-up for {name}.")
        cli(exe, "a", "sync", a, env=env)
    for number in range(runs):
        order = list(versions) if number % 2 == 0 else list(reversed(versions))
        for name in order:
            cli(exe, "a", "remember", a, f"Sync bench fact {number} for {name}: the remote "
                "is a bare repo.")
            walls[name].append(cli(exe, "a", "sync", a, env=versions[name]))
            progress(f"sync after remember {number + 1}/{runs}, {name}: "
                     f"{walls[name][-1].wall:.2f} s")
    for name in versions:
        m[f"sync_after_remember_{name}_s"] = median(walls[name], "committed", "pushed", "index")
    m.update(first_push_scan(a))
    m["tracked_files"] = len(git("-C", str(a), "ls-files", "-z").split("\0")) - 1
    return m


def first_push_scan(root: Path) -> dict:
    """What a first push scans, in process: every blob reachable from HEAD."""
    from memory_forest.gitrepo import Repo
    from memory_forest.syncscan import committed, nothing_allowed

    started = time.perf_counter()
    found = committed(Repo(root), "no-such-remote", nothing_allowed)  # no ref: everything
    return {"first_push_scan_in_process_s": round(time.perf_counter() - started, 3),
            "first_push_scan_findings": len(found)}


def in_process(root: Path, runs: int) -> dict:
    """Beside git: the whole-forest check (what every sync with changes ran before it
    settled by change), and what a first push scans."""
    from memory_forest.checks import check_forest
    from memory_forest.forest import Forest

    checks = []
    for _ in range(runs):
        started = time.perf_counter()
        check_forest(Forest.open(root))
        checks.append(time.perf_counter() - started)
    return {"check_in_process_s": {"median": round(statistics.median(checks), 3),
                                   "runs": [round(w, 3) for w in checks]},
            **first_push_scan(root)}


def git_alone(root: Path, plain: Path, remote: Path) -> dict:
    """Git's share of a first sync: the same files, committed and pushed by git alone."""
    git("init", "--bare", "-q", str(remote))
    shutil.copytree(root, plain, symlinks=True,
                    ignore=lambda d, names: [".git", ".memory-forest"] if d == str(root) else [])
    walls = {}
    for name, args in (("init", ("init", "-q")), ("add", ("add", "-A")),
                       ("commit", ("-c", "user.name=bench", "-c", "user.email=bench@localhost",
                                   "commit", "-q", "-m", "first")),
                       ("push", ("push", "-q", remote.as_uri(), "HEAD:refs/heads/main"))):
        started = time.perf_counter()
        git("-C", str(plain), *args)
        walls[name] = round(time.perf_counter() - started, 3)
    shutil.rmtree(plain, ignore_errors=True)
    return {"git_alone_first_commit_s": {**walls, "total": round(sum(walls.values()), 3)}}


class Outcome:
    __slots__ = ("out", "wall")

    def __init__(self, wall: float, out: dict) -> None:
        self.wall, self.out = wall, out


def cli(exe: Path, host: str, command: str, *args: object,
        expect_nothing: bool = False, env: dict[str, str] | None = None) -> Outcome:
    """``memory-forest --json COMMAND ARGS`` as machine ``host``; a failure ends the run.

    ``env`` with a ``PYTHONPATH`` runs the code there instead (``python -m``)."""
    extra = env or {}
    env = {**CLI_ENV, "MEMORY_FOREST_HOST": host, **extra}
    start = [sys.executable, "-m", "memory_forest"] if "PYTHONPATH" in extra else [str(exe)]
    line = [*start, "--json", command, *map(str, args)]
    started = time.perf_counter()
    proc = subprocess.run(line, capture_output=True, text=True, env=env, check=False)
    wall = time.perf_counter() - started
    try:
        out = json.loads(proc.stdout)
    except ValueError:
        out = {"ok": False, "error": {"code": "no_json", "message": proc.stderr[-300:]}}
    if proc.returncode != 0 or not out.get("ok"):
        sys.exit(f"{' '.join(line)} (exit {proc.returncode}): {json.dumps(out.get('error'))}")
    if expect_nothing and not out.get("nothing_to_do"):
        sys.exit(f"{' '.join(line)}: expected nothing to do, got {json.dumps(out)[:500]}")
    return Outcome(wall, out)


def copy_forest(exe: Path, source: Path, destination: Path) -> None:
    """A's own ``init`` (its config its own), then the generated layers, modes kept."""
    progress(f"copying the forest to {destination}")
    cli(exe, "a", "init", destination)
    for layer in sorted(os.listdir(source)):
        if not layer.startswith("."):
            shutil.rmtree(destination / layer, ignore_errors=True)
            subprocess.run(["cp", "-a", str(source / layer), str(destination / layer)],
                           check=True)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True,
                          env={**os.environ, "LC_ALL": "C"}).stdout


def timed_git(runs: int, *args: str) -> dict:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        git(*args)
        walls.append(time.perf_counter() - started)
    return {"median": round(statistics.median(walls), 3), "runs": [round(w, 3) for w in walls]}


def median(outcomes: list[Outcome], *reported: str) -> dict:
    entry = {"median": round(statistics.median(o.wall for o in outcomes), 3),
             "runs": [round(o.wall, 3) for o in outcomes]}
    return {**entry, **said(outcomes[-1], reported)} if reported else entry


def once(outcome: Outcome, *reported: str) -> dict:
    return {"wall": round(outcome.wall, 3), "seconds_in_process": outcome.out.get("seconds"),
            **said(outcome, reported)}


def said(outcome: Outcome, keys: tuple[str, ...]) -> dict:
    """What sync says it did (the last run's), trimmed of path lists, to show the work was real."""
    found = {}
    for key in keys:
        value = outcome.out.get(key)
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if not isinstance(v, list)}
        found[key] = value
    return {"reported": found}


def du_mib(path: Path, exclude: tuple[str, ...] = ()) -> float:
    total = 0
    for directory, dirs, files in os.walk(path):
        if directory == str(path):
            dirs[:] = [d for d in dirs if d not in exclude]
        total += sum(os.lstat(os.path.join(directory, name)).st_blocks * 512 for name in files)
    return round(total / 2**20, 1)


def git_version() -> str:
    return git("--version").strip()


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


if __name__ == "__main__":
    main()
