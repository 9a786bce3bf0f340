"""The commit recorded beside saved measurements (``compare --json`` and the bench scripts' ``--json``)."""
import shutil
import subprocess

import pytest

from pyterrier_garen import code_version

pytestmark = pytest.mark.skipif(shutil.which('git') is None, reason='git is not installed')


def _git(root, *args):
    config = ['-c', 'user.name=t', '-c', 'user.email=t@t', '-c', 'commit.gpgsign=false']
    return subprocess.run(['git', '-C', str(root), *config, *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_commit_then_changes_then_unknown(tmp_path):
    repo = tmp_path / 'repo'
    (repo / 'pyterrier_garen').mkdir(parents=True)
    (repo / 'pyterrier_garen' / 'x.py').write_text('a = 1\n')
    (repo / 'notes.txt').write_text('n\n')
    _git(repo, 'init', '-q')
    _git(repo, 'add', '.')
    _git(repo, 'commit', '-q', '-m', 'c')
    head = _git(repo, 'rev-parse', 'HEAD')[:8]
    assert code_version(repo) == head
    (repo / 'notes.txt').write_text('edited outside the package\n')  # only the package's files count
    (repo / 'pyterrier_garen' / 'new.py').write_text('untracked\n')  # and only tracked ones
    assert code_version(repo) == head
    (repo / 'pyterrier_garen' / 'x.py').write_text('a = 2\n')
    assert code_version(repo) == head + '+changes'
    plain = tmp_path / 'plain'
    plain.mkdir()
    assert code_version(plain) == 'unknown'


def test_compare_and_bench_record_the_same_version():
    import sys
    from pathlib import Path
    from pyterrier_garen import _compare
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'bench'))
    try:
        import _record
    finally:
        sys.path.pop(0)
    assert _compare.code_version is code_version
    assert _record.code_version is code_version
