"""The default forest root: ``MEMORY_FOREST_ROOT``, else ``root`` in the user's config file.

A default root lets a person type ``memory-forest retrieve "kimchi"`` instead
of naming the forest on every command. It is looked up only when a command
line leaves ROOT out, so an explicit ROOT always wins and a broken config
file never gets in the way of a command that names its forest.

The per-turn path (a gate line without ROOT) reads this module, so it imports
nothing heavy: the environment variable is checked first, and tomllib is
imported only when the config file exists.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from .errors import ForestError, usage_error
from .warmsocket import ROOT_ENV

ENV_VAR = ROOT_ENV  # named where the per-turn client can read it without this module
MAX_CONFIG_BYTES = 64 * 1024  # a user config is one line; anything huge is not one


def config_file() -> Path:
    """``$XDG_CONFIG_HOME/memory-forest/config.toml``; XDG_CONFIG_HOME defaults to ~/.config.

    The XDG base directory rules ignore a relative XDG_CONFIG_HOME, and so do we.
    """
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "memory-forest" / "config.toml"


def default_root() -> str | None:
    """The default root, or None when neither the variable nor the config file sets one.

    Raises ``user_config_invalid`` when the config file exists but cannot be
    used: unreadable, not TOML, or a ``root`` that is not an absolute path.
    """
    value = os.environ.get(ENV_VAR, "")
    if value:
        return os.path.expanduser(value)
    return _root_from(config_file())


def resolve_root(given: str | os.PathLike[str] | None) -> str:
    """``given`` when there is one, else the default root, else a ``root_required`` usage error."""
    if given is not None:
        return os.fspath(given)
    root = default_root()
    if root is None:
        raise root_required()
    return root


def root_required() -> ForestError:
    return usage_error("root_required", f"no forest given: pass ROOT, set {ENV_VAR}, or set "
                       f"root in {config_file()}")


def _root_from(path: Path) -> str | None:
    raw = _read(path)
    if raw is None:
        return None
    import tomllib

    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise _invalid(path, "it is not UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise _invalid(path, f"it is not valid TOML ({exc})") from None
    if "root" not in data:
        return None
    root = data["root"]
    if not isinstance(root, str) or not root:
        raise _invalid(path, "root must be a non-empty string")
    root = os.path.expanduser(root)
    if not os.path.isabs(root):
        # Relative to what? The working directory changes; the config file does not.
        raise _invalid(path, "root must be an absolute path (or start with ~)")
    return root


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None when there is no config file at all."""
    try:
        info = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise _invalid(path, f"cannot inspect it ({type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would hang the read
        raise _invalid(path, "it is not a regular file")
    if info.st_size > MAX_CONFIG_BYTES:
        raise _invalid(path, f"it is larger than {MAX_CONFIG_BYTES} bytes")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise _invalid(path, f"cannot read it ({type(exc).__name__})") from None


def _invalid(path: Path, reason: str) -> ForestError:
    return ForestError("user_config_invalid", f"{path}: {reason}", {"path": str(path)})
