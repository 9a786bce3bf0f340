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


def test_excluded_documents_leave_every_run_before_it_is_measured(tmp_path, monkeypatch, capsys):
    """A collection with excluded documents (label -100, BRIGHT): no run the table measures holds one (they took
    ranks as unjudged documents), with the stub engine in place of the models."""
    import pyterrier as pt

    from _stub_engine import StubEngine
    words = ['wing flow heat', 'flow heat wing lift', 'heat wing drag', 'wing flow plate', 'heat flow drag',
             'wing heat skin', 'flow wing heat plate', 'drag lift wing', 'skin heat flow', 'plate drag lift']
    folder = tmp_path / 'c'
    folder.mkdir()
    (folder / 'docs.jsonl').write_text(''.join(f'{{"docno": "d{i}", "text": "{w}"}}\n' for i, w in enumerate(words)))
    (folder / 'queries.tsv').write_text('q1\twing flow\nq2\theat drag\n')
    (folder / 'qrels.txt').write_text('q1 0 d0 1\nq1 0 d3 -100\nq1 0 d6 -100\nq2 0 d4 1\nq2 0 d2 -100\n')
    script = load_script('examples/gpu_smoke.py')
    engine = StubEngine()
    monkeypatch.setattr(script, 'make_engines', lambda *args: (engine, engine))
    monkeypatch.setattr(script, 'skip_reason', lambda *args: None)
    measured = []
    real = pt.Experiment

    def experiment(runs, *args, **kwargs):
        measured.extend(runs)
        return real(runs, *args, **kwargs)
    monkeypatch.setattr(pt, 'Experiment', experiment)
    assert script.main([str(folder), '--device', 'cpu', '--queries', '0', '--budget', '6',
                        '--workdir', str(tmp_path / 'work')]) == 0
    assert len(measured) == 3
    excluded = {('q1', 'd3'), ('q1', 'd6'), ('q2', 'd2')}
    for run in measured:
        assert not excluded & set(zip(run.qid, run.docno))
        assert {'d0', 'd4'} <= set(run.docno)  # the relevant ones are still there
    assert 'BM25 >> GAREN' in capsys.readouterr().out
