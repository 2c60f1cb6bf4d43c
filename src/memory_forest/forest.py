"""``Forest``: one opened forest, the handle every operation takes.

Opening it is where the root is checked (it exists, is a real directory,
not a symlink), once per call of an operation. The config is read the
first time something needs it and kept, so one ``remember`` reads
``forest.json`` once, however many layers of the write engine look at the
limits. The read-only index connection is opened on first use and shared
by every phase of the call (the gate's route and retrieve use one
connection), and closed with the handle.

The functions the catalog names take a ``ForestLike`` (a handle or a root
path) and open it once with ``opened`` (which also closes what it opened),
so library callers and tests may keep passing paths; every function below
them takes the ``Forest``.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from .config import Config, load_config
from .indexreader import connect
from .safety import open_root


class Forest:
    """An opened forest root with its config and index connection, both loaded lazily."""

    __slots__ = ("_config", "_reader", "root")

    def __init__(self, root: Path) -> None:
        self.root = root  # already checked by ``open``
        self._config: Config | None = None
        self._reader: sqlite3.Connection | None = None

    @classmethod
    def open(cls, root: str | os.PathLike[str]) -> Forest:
        """Check the root once (``root_missing``, ``root_symlink``, ...) and return a handle."""
        return cls(open_root(root))

    @classmethod
    def of(cls, forest: ForestLike) -> Forest:
        """``forest`` itself when it is already a handle, else the handle of that path."""
        return forest if isinstance(forest, Forest) else cls.open(forest)

    @property
    def config(self) -> Config:
        """The forest's ``forest.json``, read on first use (``config_invalid`` if it is bad)."""
        if self._config is None:
            self._config = load_config(self.root)
        return self._config

    @property
    def limits(self) -> dict[str, int]:
        return self.config.limits

    def reader(self) -> sqlite3.Connection:
        """The read-only index connection, opened on first use (``index_missing``, ...)."""
        if self._reader is None:
            self._reader = connect(self.root)
        return self._reader

    def forget_index(self) -> None:
        """Close the reader, so the next ``reader()`` sees an index a writer just replaced."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def close(self) -> None:
        self.forget_index()

    def __enter__(self) -> Forest:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Forest({str(self.root)!r})"


# What the library's entry points (the functions the catalog names) accept: a handle, or
# the path of a root they open once. Everything below them takes a ``Forest``.
ForestLike = Forest | str | os.PathLike[str]


class opened:  # lower case: it reads as a call, ``with opened(forest) as forest``
    """The handle of ``forest`` for one call: a handle passes through, a path is opened.

    At the end only a handle opened here is closed; one the caller passed in
    stays open, with its config and index connection, for the caller's next
    phase. A plain class, not ``contextlib``: this is on the per-turn path.
    """

    __slots__ = ("forest", "owned")

    def __init__(self, forest: ForestLike) -> None:
        self.owned = not isinstance(forest, Forest)
        self.forest = Forest.of(forest)

    def __enter__(self) -> Forest:
        return self.forest

    def __exit__(self, *exc: Any) -> None:
        if self.owned:
            self.forest.close()
