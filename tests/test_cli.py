"""The offline command line, end to end on Cranfield (BM25 graph: no model needed)."""
import json
import subprocess
import sys

import pytest


def run(*args):
    proc = subprocess.run([sys.executable, '-m', 'pyterrier_garen', *map(str, args)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


@pytest.mark.slow  # five CLI processes on Cranfield (about 20 CPU-s; the default tier's CPU budget)
def test_cli_graph_groups_summaries_show(cranfield, tmp_path):
    run('build-graph', '--dataset', cranfield.path, '--kind', 'bm25', '--out', tmp_path / 'graph')
    stats = json.loads(run('build-groups', '--graph', tmp_path / 'graph', '--out', tmp_path / 'groups',
                           '--max-group-size', 15).strip().splitlines()[-1])
    assert stats['docs'] == 1400
    assert stats['max'] <= 15 or stats['unsplittable']
    summaries = json.loads(run('summarize', '--groups', tmp_path / 'groups', '--dataset', cranfield.path)
                           .strip().splitlines()[-1])
    assert summaries['count'] == stats['groups']
    shown = run('show', '--groups', tmp_path / 'groups', '--group', 0)
    assert '--- group 0' in shown
    assert 'Key terms:' in shown


def test_cli_reports_bad_dataset(tmp_path):
    proc = subprocess.run([sys.executable, '-m', 'pyterrier_garen', 'build-graph', '--dataset', tmp_path / 'nope',
                           '--kind', 'bm25', '--out', tmp_path / 'g'], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert 'neither a collection folder' in proc.stderr
