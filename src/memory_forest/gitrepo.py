"""The one place that runs the ``git`` executable.

Replication is git's job, never a protocol of our own, so everything ``sync``
does to a repository is a ``git`` command run here: an argument list (never a
shell), no terminal prompt (a scheduled sync must fail, not hang on a
password), umask 077 (whatever git creates is private from the start), and an
identity given with ``-c`` when the user has none configured, so a fresh
machine can commit. A missing executable is ``git_missing``; a failing command
is ``git_failed`` with git's exit code and the command's name, never git's
output, which can hold the remote URL or a private path.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import IO

from .errors import ForestError

# The identity a commit gets when neither the repository nor the user set one.
FALLBACK_NAME = "memory-forest"
FALLBACK_EMAIL = "memory-forest@localhost"
TIMEOUT_SECONDS = 600


def executable() -> str:
    """The path of ``git`` on PATH, or ``git_missing``."""
    found = shutil.which("git")
    if found is None:
        raise ForestError("git_missing", "the git executable was not found on PATH; "
                          "install git to sync a forest")
    return found


def version() -> str | None:
    """``git --version``'s version number, or None when git is absent or does not answer."""
    try:
        done = _run(["--version"], None, check=False)
    except ForestError:
        return None
    words = done.stdout.decode("utf-8", "replace").split()
    return words[2] if len(words) >= 3 and done.returncode == 0 else None


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(GIT_TERMINAL_PROMPT="0", LC_ALL="C", GIT_MERGE_AUTOEDIT="no")
    env.pop("GIT_DIR", None)  # the forest's own repository, never one the caller pointed at
    env.pop("GIT_WORK_TREE", None)
    return env


def _run(args: list[str], cwd: Path | None, check: bool = True,
         stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    # A commit or fetch can start git's automatic gc; detached, it would go on deleting
    # loose objects after the command returned, under sync's walk over .git. In the
    # foreground it ends with the command, inside the lock.
    command = [executable(), "-c", "gc.autoDetach=false", *args]
    try:
        done = subprocess.run(command, cwd=cwd, env=_env(), input=stdin, capture_output=True,
                              timeout=TIMEOUT_SECONDS, umask=0o077, check=False)
    except subprocess.TimeoutExpired:
        raise ForestError("git_failed", f"git {_name(args)} did not finish in "
                          f"{TIMEOUT_SECONDS} s", {"command": _name(args)}) from None
    except OSError as exc:
        raise ForestError("git_failed", f"git {_name(args)} could not be started",
                          {"command": _name(args), "error": type(exc).__name__}) from None
    if check and done.returncode != 0:
        raise ForestError("git_failed", f"git {_name(args)} failed with exit code "
                          f"{done.returncode}", {"command": _name(args),
                                                 "exit_code": done.returncode})
    return done


def _name(args: list[str]) -> str:
    """The subcommand, for messages: the first word that is not an option or its value."""
    words = iter(args)
    for word in words:
        if word in ("-c", "-C"):
            next(words, None)
        elif not word.startswith("-"):
            return word
    return "--version" if "--version" in args else "git"


class Repo:
    """A work tree at ``root`` (the forest root), whose ``.git`` sits at the root."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def exists(self) -> bool:
        return os.path.isdir(self.root / ".git") and not os.path.islink(self.root / ".git")

    def run(self, *args: str, check: bool = True,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        return _run([*self._identity(args), *args], self.root, check, stdin)

    def out(self, *args: str) -> str:
        return self.run(*args).stdout.decode("utf-8", "surrogateescape").strip()

    def lines_z(self, *args: str) -> list[str]:
        """A ``-z`` listing as names: unquoted, whatever bytes a name holds."""
        data = self.run(*args).stdout
        return [os.fsdecode(name) for name in data.split(b"\0") if name]

    def _identity(self, args: tuple[str, ...]) -> list[str]:
        """``-c user.name=... -c user.email=...`` for a command that commits, when unset."""
        if not args or args[0] not in ("commit", "merge"):
            return []
        extra = []
        for key, fallback in (("user.name", FALLBACK_NAME), ("user.email", FALLBACK_EMAIL)):
            if _run(["config", "--get", key], self.root, check=False).returncode != 0:
                extra += ["-c", f"{key}={fallback}"]
        return extra

    def init(self) -> None:
        """A new repository on the user's default branch (``init.defaultBranch``): the
        name a bare remote made on this machine points its HEAD at too."""
        _run(["init", "-q", "."], self.root)

    def config(self, key: str, value: str) -> None:
        self.run("config", "--local", key, value)

    def get_config(self, key: str) -> str | None:
        done = self.run("config", "--get", key, check=False)
        return done.stdout.decode("utf-8", "surrogateescape").strip() if done.returncode == 0 \
            else None

    def branch(self) -> str:
        return self.out("symbolic-ref", "--short", "HEAD")

    def has_commit(self, ref: str = "HEAD") -> bool:
        return self.run("rev-parse", "-q", "--verify", f"{ref}^{{commit}}",
                        check=False).returncode == 0

    def rev(self, ref: str) -> str:
        return self.out("rev-parse", "--verify", f"{ref}^{{commit}}")

    def remotes(self) -> list[str]:
        return self.out("remote").split()

    def objects(self, ids: Iterable[str]) -> Iterator[tuple[str, bytes]]:
        """Each object's id and bytes, whole, from one ``git cat-file --batch``: one process
        however many objects, where a ``cat-file`` each would cost a process each.
        An id git does not have is skipped.

        The ids are written from a thread while the objects are read: a batch
        larger than the pipe would otherwise stall both sides.
        """
        command = [executable(), "cat-file", "--batch"]
        proc = subprocess.Popen(command, cwd=self.root, env=_env(), stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, umask=0o077)
        assert proc.stdin is not None and proc.stdout is not None
        feeder = threading.Thread(target=_feed, args=(proc.stdin, list(ids)), daemon=True)
        feeder.start()
        try:
            while header := proc.stdout.readline():
                name, kind, *size = header.split()
                if kind == b"missing" or not size:
                    continue
                data = proc.stdout.read(int(size[0]))
                proc.stdout.read(1)  # the newline after each object
                yield name.decode("ascii"), data
            if proc.wait() != 0:
                raise ForestError("git_failed", f"git cat-file failed with exit code "
                                  f"{proc.returncode}", {"command": "cat-file",
                                                         "exit_code": proc.returncode})
        finally:
            if proc.poll() is None:  # the reader stopped early
                proc.kill()
                proc.wait()
            proc.stdout.close()
            feeder.join()


def _feed(stdin: IO[bytes], ids: list[str]) -> None:
    try:
        for chunk in range(0, len(ids), 1024):
            stdin.write("".join(f"{name}\n" for name in ids[chunk:chunk + 1024]).encode())
        stdin.close()
    except BrokenPipeError:  # git ended early; its exit code says why
        pass


def merge_file(base: str, ours: str, theirs: str) -> str | None:
    """``git merge-file``'s three-way merge of three texts; None when it finds a conflict."""
    with tempfile.TemporaryDirectory(prefix="memory-forest-merge-") as scratch:
        names = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(scratch, name)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
            names.append(path)
        done = _run(["merge-file", "-p", "-q", *names], None, check=False)
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8")
