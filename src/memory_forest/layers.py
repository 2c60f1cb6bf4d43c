"""The seven layers of a forest: names, objects and allowed canonical links.

Pure data, no I/O. Every other module asks this one; nothing else spells a
layer directory name.
"""

from __future__ import annotations

from typing import NamedTuple


# NamedTuple rather than a dataclass: ``dataclasses`` costs ~15 ms to import, on every
# per-turn process.
class Layer(NamedTuple):
    number: int
    key: str  # short name used in output and options: "xltm", "stm", ...
    object: str  # what one document of this layer is
    extension: str
    links_to: frozenset[str]  # layer keys this layer may link to canonically

    @property
    def dirname(self) -> str:
        return f"{self.number:02d} {self.key}"

    @property
    def structured(self) -> bool:
        """Layers 01-04: the ownership tree that ``retrieve`` walks."""
        return 1 <= self.number <= 4


LAYERS: tuple[Layer, ...] = (
    Layer(0, "life_archive", "archive record", ".md", frozenset({"xltm"})),
    Layer(1, "xltm", "forest root map", ".md", frozenset({"ltm"})),
    Layer(2, "ltm", "tree", ".md", frozenset({"mtm", "xltm"})),
    Layer(3, "mtm", "branch", ".md", frozenset({"stm", "ltm"})),
    Layer(4, "stm", "leaf", ".md", frozenset({"mtm"})),
    Layer(5, "daily", "daily source", ".md", frozenset()),
    Layer(6, "istm", "raw event source", ".jsonl", frozenset()),
)

BY_KEY: dict[str, Layer] = {layer.key: layer for layer in LAYERS}
BY_DIR: dict[str, Layer] = {layer.dirname: layer for layer in LAYERS}
BY_NUMBER: dict[int, Layer] = {layer.number: layer for layer in LAYERS}

XLTM_PATH = "01 xltm/XLTM.md"
LTM_SUFFIX = "_LTM"


def layer_for(key_or_dir: str) -> Layer | None:
    """Accept ``stm``, ``04``, ``4`` or ``04 stm``; return None when unknown."""
    text = key_or_dir.strip()
    if text in BY_KEY:
        return BY_KEY[text]
    if text in BY_DIR:
        return BY_DIR[text]
    if text.isdigit():
        return BY_NUMBER.get(int(text))
    return None
