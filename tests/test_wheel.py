"""Publishing is one command when the time comes: the wheel builds from the repository's own files, holds the
package data and entry points, and passes ``twine check`` (issue 19). Built in a copy, so the repository gets no
build/ or dist/ folder."""
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def wheel(tmp_path_factory):
    src = tmp_path_factory.mktemp('src')
    for name in ('setup.cfg', 'pyproject.toml', 'README.md'):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / 'pyterrier_garen', src / 'pyterrier_garen',
                    ignore=shutil.ignore_patterns('__pycache__', '*.pyc'))
    out = tmp_path_factory.mktemp('dist')
    proc = subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation', '-w',
                           str(out), str(src)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    wheels = list(out.glob('pyterrier_garen-*.whl'))
    assert len(wheels) == 1
    return wheels[0]


def test_the_wheel_holds_the_package(wheel):
    import pyterrier_garen
    assert wheel.name == f'pyterrier_garen-{pyterrier_garen.__version__}-py3-none-any.whl'
    names = zipfile.ZipFile(wheel).namelist()
    for part in ('pyterrier_garen/__init__.py', 'pyterrier_garen/_encoding.py', 'pyterrier_garen/prompts/rankllm.txt',
                 'pyterrier_garen/pt_docs/index.rst'):
        assert part in names, part
    assert not [n for n in names if n.startswith('tests/') or '__pycache__' in n]
    meta = next(n for n in names if n.endswith('.dist-info/entry_points.txt'))
    entry_points = zipfile.ZipFile(wheel).read(meta).decode()
    assert 'pyterrier-garen = pyterrier_garen.__main__:main' in entry_points
    assert 'corpus_graph.garen_groups = pyterrier_garen:GroupCorpusGraph' in entry_points


def test_twine_check_passes(wheel):
    pytest.importorskip('twine', reason='twine is not installed (the test extra has it)')
    proc = subprocess.run([sys.executable, '-m', 'twine', 'check', '--strict', str(wheel)], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'PASSED' in proc.stdout
