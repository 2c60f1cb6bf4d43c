"""What ``sync`` returns."""

from __future__ import annotations

from typing import Any, NotRequired

from typing_extensions import TypedDict

from .reading import Result


class SyncLeft(TypedDict):
    count: int
    paths: list[dict[str, str]]
    """At most 200, each a 'path' and the 'reason' it is not published: 'symlink', 'submodule',
    'repository', 'not_regular', 'outside_layers', 'extension', 'state'."""


class SyncPaths(TypedDict):
    commits: int
    """Commits the merge brought (or would bring)."""
    files: int
    paths: list[str]
    """Root-relative paths, at most 200."""
    not_checked_out: NotRequired[SyncLeft | None]
    """Entries of the remote's tree the forest does not own, kept out of the work tree."""


class SyncCommit(TypedDict):
    commit: str
    files: int
    message: str
    """The commit's first line: operations and counts only."""
    paths: list[str]


class SecretFinding(TypedDict):
    path: str
    line: int
    """0 for binary content (rule 'binary')."""
    rule: str
    """The credential rule; the matched text is never reported."""
    commit: NotRequired[str | None]
    """A blob of a local commit the remote has not seen: the oldest commit that added it."""


class SyncResult(Result):
    """What one ``sync`` did; ``nothing_to_do`` true means it stopped after the fetch."""

    remote: str | None
    """The remote synced with; null in a repository that has none yet (committed locally,
    nothing pushed)."""
    branch: NotRequired[str | None]
    dry_run: bool
    created: bool
    """This run created the repository."""
    nothing_to_do: bool
    recovered: NotRequired[str | None]
    would_commit: NotRequired[list[str] | None]
    """Dry run: the paths a commit would take."""
    left_local: NotRequired[SyncLeft | None]
    """Changes in the folder sync does not publish (docs/sync.md)."""
    stop_tracking: NotRequired[SyncLeft | None]
    """Dry run: tracked paths the forest does not own that a commit would take out of the
    index."""
    stopped_tracking: NotRequired[SyncLeft | None]
    """Tracked paths the forest does not own, taken out of the index (the files stay)."""
    incoming: NotRequired[SyncPaths | None]
    committed: NotRequired[SyncCommit | None]
    pulled: NotRequired[SyncPaths | None]
    secrets: NotRequired[list[SecretFinding]]
    conflicts: NotRequired[list[dict[str, Any]]]
    """Paths the merge kept both ways, by 'kind': 'copy' ('path' kept ours, 'copy' holds
    theirs), 'entries' (a Daily record holds theirs as the conflict 'entries'), 'kept_changed'
    (deleted on one side, changed on the other: the changed one, 'kept', stays), 'kept_ours'
    (config: theirs is 'theirs_blob' in git), 'deleted'."""
    created_dirs: NotRequired[list[str]]
    """Layer directories (and .memory-forest/) git could not carry, created empty."""
    modes: NotRequired[dict[str, Any] | None]
    checks: NotRequired[dict[str, Any] | None]
    index: NotRequired[dict[str, Any] | None]
    pushed: NotRequired[bool | None]
    seconds: float
