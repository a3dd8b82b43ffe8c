"""`trainscope-viewer --render ... --search TEXT [--search-match N]` (issue
23.5): the rendered window shows the search as if TEXT were typed and F3
pressed N times, and a search that finds nothing, or a match past the last,
fails (exit 2, a usage error) naming the flag and what the job holds.

Run: /usr/bin/python3 -m pytest tests/python/test_viewer_search_flags.py
"""

from __future__ import annotations

import os
import subprocess

import pytest

from conftest import BUILD_DIR

VIEWER = BUILD_DIR / "bin" / "trainscope-viewer"


def render(tmp_path, *args) -> subprocess.CompletedProcess:
    if not VIEWER.exists():
        pytest.skip("trainscope-viewer is not built")
    return subprocess.run(
        [str(VIEWER), "--synthetic", "--synthetic-devices", "4", "--synthetic-steps", "12",
         "--render", "all", "--width", "1600", "--height", "1000",
         "--out", str(tmp_path / "search.png"), *args],
        capture_output=True, text=True, timeout=120,
        env=dict(os.environ, QT_QPA_PLATFORM="offscreen"))


def test_a_search_renders(tmp_path):
    r = render(tmp_path, "--search", "conv", "--search-match", "6")
    assert r.returncode == 0, r.stderr
    png = tmp_path / "search.png"
    assert png.exists() and png.stat().st_size > 10_000


@pytest.mark.parametrize("args, message", [
    (["--search", "no_such_op"], 'no operator, step or rank matches "no_such_op"'),
    (["--search", "#99"], "no step 99 (steps 1"),
    (["--search", "r9"], "no rank 9 (ranks 0"),
    (["--search", "step 3", "--search-match", "2"], "--search-match 2: 'step 3' has 1 match"),
    (["--search", "conv", "--search-match", "0"], "--search-match"),
])
def test_a_search_that_finds_nothing_names_the_flag(tmp_path, args, message):
    r = render(tmp_path, *args)
    assert r.returncode == 2, (r.returncode, r.stderr)  # a usage error, as --alert's
    assert message in r.stderr, r.stderr
    assert not (tmp_path / "search.png").exists()
