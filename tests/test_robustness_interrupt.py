"""kill -9 of real build-groups / summarize / prepare processes, then a rerun: nothing lost, nothing duplicated, no
temporary left (issue 9, "Nothing is ever lost"). The killed process is the package's own code; the only addition
is a pause at a chosen point (announced through a file) so that the kill lands mid-build."""
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pyterrier_garen import GroupCorpusGraph, prepare
from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index

from _robust import gap_collection

ENV = {**os.environ, 'PYTHONPATH': str(Path(__file__).resolve().parents[1]) + os.pathsep +
       os.environ.get('PYTHONPATH', '')}


def _kill_at_pause(code: str, sentinel: Path, timeout: float = 90.0) -> None:
    """Run ``code`` in a fresh interpreter, wait until it writes ``sentinel``, then SIGKILL it."""
    proc = subprocess.Popen([sys.executable, '-c', textwrap.dedent(code)], env=ENV, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + timeout
        while not sentinel.exists():
            if proc.poll() is not None:
                raise AssertionError(f'the process ended before its pause: {proc.stderr.read().decode()[-2000:]}')
            if time.monotonic() > deadline:
                raise AssertionError('the process did not reach its pause in time')
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def _cli(*args):
    proc = subprocess.run([sys.executable, '-m', 'pyterrier_garen', *map(str, args)], env=ENV, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


PAUSE = '''
import pathlib, time
def pause(*args, **kwargs):
    pathlib.Path({sentinel!r}).write_text('paused')
    time.sleep(120)
'''


@pytest.fixture(scope='module')
def collection(tmp_path_factory):
    tmp = tmp_path_factory.mktemp('interrupt')
    dataset = gap_collection(tmp)
    graph = bm25_corpus_graph(dataset, tmp / 'bm25.graph', index=bm25_index(dataset, tmp / 'bm25.pisa'))
    return dataset, graph.path if hasattr(graph, 'path') else tmp / 'bm25.graph'


def _leftovers(folder: Path, name: str):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith(f'.{name}.'))


# rebuild=True (an existing artifact survives the killed rebuild) costs a third CLI process: in the slow tier
@pytest.mark.parametrize('rebuild', [False, pytest.param(True, marks=pytest.mark.slow)])
def test_build_groups_killed_then_rerun(collection, tmp_path, rebuild):
    _, graph = collection
    out = tmp_path / 'groups'
    if rebuild:
        _cli('build-groups', '--graph', graph, '--out', out, '--seed', 1)
        before = (out / 'pt_meta.json').read_bytes()
    sentinel = tmp_path / 'paused'
    _kill_at_pause(PAUSE.format(sentinel=str(sentinel)) + f'''
import pyterrier_garen._group_builder as builder
real = builder.write_docnos
def slow(*args, **kwargs):
    real(*args, **kwargs)
    pause()
builder.write_docnos = slow
from pyterrier_garen.__main__ import main
main(['build-groups', '--graph', {str(graph)!r}, '--out', {str(out)!r}, '--overwrite'])
''', sentinel)
    assert _leftovers(tmp_path, 'groups')  # the killed build's temporary is there ...
    if rebuild:
        assert (out / 'pt_meta.json').read_bytes() == before  # ... and the old artifact is untouched
        assert GroupCorpusGraph(out).validate()['ok']
    else:
        assert not out.exists()
    _cli('build-groups', '--graph', graph, '--out', out, '--overwrite')
    assert _leftovers(tmp_path, 'groups') == []  # ... and the rerun cleaned it up
    assert GroupCorpusGraph(out).validate()['ok']
    assert GroupCorpusGraph(out).meta['partition']['seed'] == 42


def test_summarize_killed_then_resumed(collection, tmp_path):
    dataset, graph = collection
    out = tmp_path / 'groups'
    _cli('build-groups', '--graph', graph, '--out', out, '--max-group-size', 8)
    sentinel = tmp_path / 'paused'
    _kill_at_pause(PAUSE.format(sentinel=str(sentinel)) + f'''
from pyterrier_garen import ExtractiveSummarizer, GroupCorpusGraph, LocalDataset
class Slow(ExtractiveSummarizer):
    calls = 0
    def summarize(self, groups):
        Slow.calls += 1
        if Slow.calls == 4:  # three batches are on disk
            pause()
        return super().summarize(groups)
GroupCorpusGraph({str(out)!r}).summarize(Slow(), LocalDataset({str(dataset.path)!r}), batch_size=2)
''', sentinel)
    partial = [json.loads(line) for line in (out / 'summaries.partial.jsonl').read_text().splitlines()]
    assert len(partial) == 6
    _cli('summarize', '--groups', out, '--dataset', dataset.path)
    groups = GroupCorpusGraph(out)
    final = [json.loads(line) for line in (out / 'summaries.jsonl').read_text().splitlines()]
    assert sorted(r['group'] for r in final) == list(range(groups.num_groups))  # every group once
    assert groups.meta['summaries']['count'] == groups.num_groups
    for record in partial:  # the records finished before the kill are the ones kept
        assert final[record['group']] == record
    assert not (out / 'summaries.partial.jsonl').exists()


def test_prepare_killed_then_rerun(collection, tmp_path):
    dataset, _ = collection
    work = tmp_path / 'w'
    sentinel = tmp_path / 'paused'
    _kill_at_pause(PAUSE.format(sentinel=str(sentinel)) + f'''
import pyterrier_adaptive
real = pyterrier_adaptive.CorpusGraph.from_retriever
def slow(*args, **kwargs):
    graph = real(*args, **kwargs)
    pause()
    return graph
pyterrier_adaptive.CorpusGraph.from_retriever = slow
from pyterrier_garen import LocalDataset, prepare
prepare(LocalDataset({str(dataset.path)!r}), {str(work)!r}, graph='bm25', vectors=False)
''', sentinel)
    assert (work / 'bm25.pisa' / 'pt_meta.json').is_file()  # the finished step is kept
    assert not (work / 'bm25.k16.graph').exists()  # the interrupted one left nothing at its name
    assert _leftovers(work, 'bm25.k16.graph')
    pisa_built = (work / 'bm25.pisa' / 'pt_meta.json').stat().st_mtime_ns
    prepared = prepare(dataset, work, graph='bm25', vectors=False)
    assert (work / 'bm25.pisa' / 'pt_meta.json').stat().st_mtime_ns == pisa_built  # reused, not rebuilt
    assert [p.name for p in work.iterdir() if p.name.startswith('.')] == []
    assert prepared.groups.validate()['summaries'] == prepared.groups.num_groups


SHUTDOWN = '''
import atexit, pathlib, time
import numpy as np
from pyterrier_garen import ExtractiveSummarizer, GroupCorpusGraph
from pyterrier_garen.__main__ import main
folder = pathlib.Path({folder!r})

def at_exit():  # a library's exit callback, registered during the command (torch's, Ray's)
    (folder / 'atexit').write_text('x')
    time.sleep(20)

class Teardown:  # a module global finalised in Python's teardown, after the default SIGINT handler is back
    def __del__(self, folder=folder, sleep=time.sleep):  # the module's globals are gone by then
        (folder / 'teardown').write_text('x')
        sleep(1)
        (folder / 'torn-down').write_text('x')

real = ExtractiveSummarizer.summarize
def summarize(self, groups):
    if {point!r} == 'atexit':
        atexit.register(at_exit)
    return real(self, groups)
ExtractiveSummarizer.summarize = summarize
keep = Teardown()
docnos = [f'd{{i:02d}}' for i in range(24)]
edges = np.stack([(np.arange(1, 4) + i) % 24 for i in range(24)])
GroupCorpusGraph.from_arrays(folder / 'g', docnos, edges, np.full(edges.shape, .5, dtype=np.float32),
                             labels=np.arange(24) // 4, max_group_size=4)
main(['summarize', '--groups', str(folder / 'g'), '--dataset', str(folder / 'c')])
'''


@pytest.mark.parametrize(('point', 'status'), [('atexit', 130), ('teardown', 0)])
def test_ctrl_c_during_the_shutdown_of_a_finished_summarize(tmp_path, point, status):
    # the run had finished; a Ctrl-C in Python's shutdown printed a traceback (an atexit callback) or killed the
    # process by SIGINT (status -2, not a word: Python's default handler is back in the teardown)
    from pyterrier_garen._errors import SHUT_DOWN
    (tmp_path / 'c').mkdir()
    (tmp_path / 'c' / 'docs.jsonl').write_text(''.join(json.dumps({'docno': f'd{i:02d}', 'text': f'word{i % 5} x'})
                                                       + '\n' for i in range(24)))
    (tmp_path / 'c' / 'queries.tsv').write_text('q1\tword1\n')
    (tmp_path / 'c' / 'qrels.txt').write_text('q1 0 d01 1\n')
    proc = subprocess.Popen([sys.executable, '-c', SHUTDOWN.format(folder=str(tmp_path), point=point)], env=ENV,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (tmp_path / point).exists():
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, 'the command did not reach its shutdown in time'
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == status, err[-2000:]
    assert 'Traceback' not in err
    assert 'Exception ignored' not in err
    assert err.rstrip().endswith(SHUT_DOWN) == (status == 130)
    assert json.loads(out.splitlines()[-1])['count'] == 6  # the results are printed and kept
    assert GroupCorpusGraph(tmp_path / 'g').validate()['summaries'] == 6
    assert (tmp_path / 'torn-down').exists() == (point == 'teardown')  # the teardown ran to its end, undisturbed
