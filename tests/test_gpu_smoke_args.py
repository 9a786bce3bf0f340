"""``examples/gpu_smoke.py`` (the GPU machine's one prepared run) refuses bad input in one line before it prepares or
loads anything: no GPU and no model are needed to check that."""
import subprocess
import sys

import pytest

from _scripts import ROOT, load_script


@pytest.mark.parametrize(('args', 'said'), [
    (['--queries', '-1'], 'error: --queries -1: give a number of topics >= 0 (0: all)\n'),
    (['--budget', '0'], 'error: --budget 0: give a number of documents >= 1 (e.g. 100)\n'),
])
def test_a_bad_number_is_refused_before_anything_runs(tmp_path, capsys, args, said):
    script = load_script('examples/gpu_smoke.py')
    assert script.main([str(tmp_path / 'none'), '--workdir', str(tmp_path / 'work'), *args]) == 2
    assert capsys.readouterr().err == said
    assert not (tmp_path / 'work').exists()


def test_a_missing_collection_is_one_line_with_exit_status_2(tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / 'examples' / 'gpu_smoke.py'), str(tmp_path / 'none'),
                           '--engine', 'transformers', '--workdir', str(tmp_path / 'work')],
                          capture_output=True, text=True, timeout=120)
    if proc.stdout.startswith('skipped:'):
        pytest.skip(f'the engine is not installed here: {proc.stdout.strip()}')
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.startswith(f"error: collection folder '{tmp_path / 'none'}' does not exist")
    assert 'Traceback' not in proc.stderr
