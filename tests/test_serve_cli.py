"""``memory-forest serve`` before the protocol starts: these run with or without the SDK."""

from __future__ import annotations

import json
import subprocess
import sys


def test_serve_refuses_a_bad_root_before_speaking_the_protocol(tmp_path):
    done = subprocess.run([sys.executable, "-m", "memory_forest", "--json", "serve",
                           str(tmp_path / "nowhere")], capture_output=True, text=True,
                          timeout=60, input="")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "root_missing"


def test_serve_without_the_sdk_says_how_to_install_it(example):
    probe = ("import sys\nsys.modules['mcp'] = None  # as if the SDK were not installed\n"
             "from memory_forest.cli import main\nmain(['--json', 'serve', sys.argv[1]])\n")
    done = subprocess.run([sys.executable, "-c", probe, str(example)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "mcp_sdk_missing"
    assert "pip install -e '.[mcp]'" in error["message"]
    assert "Traceback" not in done.stderr
