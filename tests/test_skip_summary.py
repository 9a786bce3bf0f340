"""The one line a run without the test collections ends with (issue 19, "skips that speak")."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_missing_collections_are_summarised_in_one_line(tmp_path):
    # the cheapest tests that need a collection, run where GAREN_DATA points at an empty folder
    env = {**os.environ, 'GAREN_DATA': str(tmp_path)}
    proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests/test_realdata.py',
                           '-k', 'batched_equals or compare_example'], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)
    lines = [line for line in proc.stdout.splitlines() if 'tests skipped: the test collections' in line]
    assert len(lines) == 1, proc.stdout[-3000:]
    count = int(lines[0].split()[0])
    assert count == 1
    assert '1 passed, 1 skipped' in proc.stdout.splitlines()[-1]
    assert str(tmp_path) in lines[0]
    assert 'set GAREN_DATA' in lines[0]


@pytest.mark.slow  # a second pytest run (the default tier's CPU budget)
def test_no_line_without_such_skips():
    proc = subprocess.run([sys.executable, '-m', 'pytest', '-q', '-p', 'no:cacheprovider', 'tests/test_realdata.py',
                           '-k', 'compare_example'], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:]
    assert 'tests skipped: the test collections' not in proc.stdout
