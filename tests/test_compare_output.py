"""What a user of the main job sees: `compare --help`, the report on stdout, and only progress bars on stderr."""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_garen.__main__ import build_parser

ROOT = Path(__file__).resolve().parent.parent
# the desc of every progress bar a fresh synthetic run may show (one bar per step)
BARS = ('encoding documents', 'k-NN graph', 're-partitioning large groups', 'summarising groups', 'running ')


def _subparsers(parser):
    action = next(a for a in parser._actions if a.__class__.__name__ == '_SubParsersAction')
    return action.choices


def test_every_option_has_help_and_a_shown_default():
    for name, sub in _subparsers(build_parser()).items():
        text = sub.format_help()
        for action in sub._actions:
            if not action.option_strings or action.dest == 'help':
                continue
            assert action.help, f'{name} {action.option_strings[0]} has no help'
            shown = sub._get_formatter()._get_help_string(action)
            assert 'default' in shown or '(required)' in shown, f'{name} {action.option_strings[0]}: {shown}'
            assert action.option_strings[-1] in text


def test_compare_help_runs():
    proc = subprocess.run([sys.executable, '-m', 'pyterrier_garen', 'compare', '--help'], capture_output=True,
                          text=True, timeout=120, env=_env(ROOT / 'unused'))
    assert proc.returncode == 0, proc.stderr
    for option in ('--dataset', '--budget', '--queries', '--navigator', '--systems', '--binary', '--graded',
                   '--workdir', '--out', '--quiet', '--strict'):
        assert option in proc.stdout
    assert 'reranked per query (c); at least the window of 20, or the adaptive methods only re-rank (default: 100)' \
        in ' '.join(proc.stdout.split())


def _env(cache):
    env = {k: v for k, v in os.environ.items() if k in ('PATH', 'HOME', 'LANG', 'TMPDIR')}
    env.update(GAREN_CACHE=str(cache), HF_HUB_OFFLINE='1', TRANSFORMERS_OFFLINE='1', PYTHONPATH=str(ROOT))
    return env


def _compare(cache, *args):
    return subprocess.run([sys.executable, '-m', 'pyterrier_garen', 'compare', *map(str, args)], capture_output=True,
                          text=True, timeout=600, env=_env(cache))


@pytest.fixture(scope='module')
def synthetic_run(tmp_path_factory):
    cache = tmp_path_factory.mktemp('cache')
    out = cache / 'table.csv'
    proc = _compare(cache, '--systems', 'BM25', 'GAR', 'GAREN', 'GAREN-vote', '--out', out,
                    '--json', cache / 'run.json')
    assert proc.returncode == 0, proc.stderr[-3000:]
    return cache, proc, out


def test_compare_reports_what_ran_and_a_legend(synthetic_run):
    _, proc, out = synthetic_run
    lines = proc.stdout.splitlines()
    assert lines[0].startswith('collection:  SYNTHETIC')
    assert re.search(r'\b640 documents; 48 queries$', lines[0])
    for key in ('labels:', 'budget:      100 documents reranked per query', 'first stage: PISA BM25', 'reranker:',
                'navigator:   query vs. group centroid', 'groups:'):
        assert any(line.startswith(key) for line in lines), key
    header = next(line for line in lines if line.split()[:3] == ['name', 'nDCG@10', 'R@100'])
    assert 'nDCG@10 p-value' in header
    table = lines[lines.index(header) + 1:lines.index(header) + 5]
    assert [row.split()[0] for row in table] == ['BM25', 'GAR', 'GAREN', 'GAREN-vote']
    assert table[2].split() == table[2].split()[:3]  # the baseline's row has no significance cells
    legend = [line for line in lines if line.startswith('"<measure>')]
    assert len(legend) == 2
    assert 'than GAREN (the baseline' in legend[0]
    assert 'paired t-test against GAREN over 48 queries' in legend[1]
    assert out.is_file()


def test_the_saved_run_says_how_its_vectors_were_encoded(synthetic_run):
    """``compare --json`` records the precision the prepared vectors were encoded with, read from the record
    ``encode_corpus`` leaves in their folder (a fresh build here, so ``'auto'`` resolved for this CPU)."""
    import json

    from pyterrier_garen._encoding import resolve_precision
    cache, _, _ = synthetic_run
    record = json.loads((cache / 'run.json').read_text())
    assert record['run']['vectors_precision'] == resolve_precision('auto')


def test_compare_stderr_holds_only_progress_bars(synthetic_run):
    _, proc, _ = synthetic_run
    seen = set()
    for line in re.split(r'[\r\n]+', proc.stderr):
        if line.strip():
            desc = next((bar for bar in BARS if line.lstrip().startswith(bar)), None)
            assert desc, f'unexpected stderr line: {line!r}'
            seen.add(desc)
    assert seen == set(BARS)  # a fresh run builds every artifact, one bar each


@pytest.mark.slow  # two more compare processes (about 20 CPU-s); build_systems' warning is pinned in the default tier
def test_budget_below_window_warns_and_strict_fails(synthetic_run):
    cache, _, _ = synthetic_run
    proc = _compare(cache, '--systems', 'BM25', 'GAREN', '--budget', 5, '--quiet')
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert 'budget=5 leaves GAREN no adaptive step' in proc.stderr
    assert 'budget:      5 documents' in proc.stdout
    strict = _compare(cache, '--systems', 'BM25', 'GAREN', '--budget', 5, '--quiet', '--strict')
    assert strict.returncode == 2
    assert 'no adaptive step' in strict.stderr
    assert '--strict' in strict.stderr
