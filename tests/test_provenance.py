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


def test_command_line_as_typed_in_the_checkout(tmp_path, monkeypatch):
    import sys
    from pathlib import Path

    import pyterrier_garen
    from pyterrier_garen import command_line
    root = tmp_path / 'checkout'
    (root / 'examples').mkdir(parents=True)
    script = root / 'examples' / 'run.py'
    # inside the root: relative; arguments quoted as a shell needs them
    assert command_line([str(script), '--out', 'a b.csv', '--k', '3'], root=root) == \
        "python examples/run.py --out 'a b.csv' --k 3"
    # outside it: the absolute path
    assert command_line([str(tmp_path / 'other.py')], root=root) == f'python {tmp_path / "other.py"}'
    # by default: this process's argv, relative to the checkout the package lies in
    checkout = Path(pyterrier_garen.__file__).resolve().parents[1]
    monkeypatch.setattr(sys, 'argv', [str(checkout / 'examples' / 'x.py'), '--flag'])
    assert command_line() == 'python examples/x.py --flag'


def test_package_versions_of_given_names():
    from importlib import metadata

    from pyterrier_garen import package_versions
    # an absent distribution is left out, and those after it are still read
    assert package_versions(['no-such-distribution-xyz', 'pandas']) == {'pandas': metadata.version('pandas')}
    everything = package_versions()
    assert everything['numpy'] == metadata.version('numpy')
    assert 'no-such-distribution-xyz' not in everything


def test_sidecar_layout_and_fields(tmp_path):
    import datetime
    import json
    import re

    from pyterrier_garen import code_version, package_versions, read_sidecar, write_sidecar
    path = tmp_path / 'run.csv'
    path.write_text('a\n1\n')
    side = write_sidecar(path, command='python s.py', queries=2)
    text = side.read_text()
    # one-space indents, keys in the order written (file first), one record per file, nothing left beside it
    assert text.splitlines()[:3] == ['{', ' "file": "run.csv",', f' "sha256": "{json.loads(text)["sha256"]}",']
    assert text.endswith('}\n')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['run.csv', 'run.csv.json']
    record = json.loads(text)
    assert re.fullmatch(r'\d{4}-\d{2}-\d{2}', record['date'])
    today = datetime.datetime.now(datetime.timezone.utc).date()
    assert abs((datetime.date.fromisoformat(record['date']) - today).days) <= 1
    assert record['code'] == code_version()
    assert record['packages'] == package_versions()
    side.write_text('{"file": ')  # torn
    broken = read_sidecar(path)
    assert broken['status'] == 'unreadable'
    assert str(side) in broken['error']
