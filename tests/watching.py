"""A real ``memory-forest watch`` process for the tests, and ways to ask it and wait on it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memory_forest import warmsocket

# A test waits this long for what the benchmark measures in hundreds of milliseconds: the
# suite shares two cores, and a deadline is a failure, never a figure (docs/benchmarks.md).
PATIENCE = 30.0
# Any MEMORY_FOREST_ variable but the root keeps a command off the warm service: the cold
# path, in the same environment otherwise.
COLD = {"MEMORY_FOREST_WARM": "off"}


class Watching:
    """``memory-forest watch ROOT`` in a subprocess, started and stopped like a person would."""

    def __init__(self, root: Path, *args: str, env: dict[str, str] | None = None) -> None:
        self.root = root
        self.log = root.parent / f"watch-{os.getpid()}-{time.monotonic_ns()}.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memory_forest", "watch", str(root), *args, "--json"],
                stdout=subprocess.PIPE, stderr=log, env={**os.environ, **(env or {})})

    def __enter__(self) -> Watching:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.stop()

    def wait_ready(self) -> dict[str, Any]:
        """Wait until the service answers and the watcher is current; its status."""
        return until(lambda: (status(self.root) or {}).get("current") and status(self.root),
                     f"the watcher never became current: {self.log.read_text()}")

    def stop(self, signum: int = signal.SIGTERM) -> dict[str, Any]:
        """Signal the watcher, wait for it, and return the one JSON object it printed."""
        self.proc.send_signal(signum)
        out, _ = self.proc.communicate(timeout=PATIENCE)
        return json.loads(out)

    def lines(self) -> list[dict[str, Any]]:
        """What the watcher logged, one JSON object a line."""
        return [json.loads(line) for line in self.log.read_text().splitlines()
                if line.startswith("{")]


def status(root: Path) -> dict[str, Any] | None:
    """The service's own status answer, or None when none answers."""
    answer = warmsocket.request(str(root), "status", b"")
    if answer is None or not answer.startswith(b"ok "):
        return None
    return json.loads(answer.partition(b"\n")[2])


def until(probe, why: str, patience: float = PATIENCE) -> Any:
    """Poll ``probe`` until it returns something true; fail with ``why`` after ``patience``."""
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        found = probe()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(why)


def cli(*args: str, stdin: str = "", env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``python -m memory_forest ARGS`` with stdout a pipe (the way a hook runs the gate)."""
    return subprocess.run([sys.executable, "-m", "memory_forest", *args], input=stdin,
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, **(env or {})})


def gate_paths(root: Path, turn: str, **env: str) -> list[str]:
    """The paths ending the gate's trails for ``turn``."""
    done = cli("gate", str(root), stdin=turn, env=env)
    receipt = json.loads(done.stdout)
    return [trail["nodes"][-1]["path"] for trail in receipt["retrieve"]["trails"]]
