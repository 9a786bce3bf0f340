"""Two runs that need the same artifact at the same moment (two sweeps sharing a workdir): every get-or-build step
lets the first build, makes the second wait (saying so once), and hands the second what the first built. Nothing is
built twice, and resumable work kept beside an artifact (encoded chunks, a summary run) is written by one run only.

Before the lock covered the whole step, a second sweep encoding the same vectors wrote chunks into the folder the
first was removing, and failed with "no such file or directory: .../minilm.flex.partial/.chunk-...tmp".

Each test stops the first run inside its build (a gate), starts the second, waits until the second says it waits,
then lets the first go. Threads stand in for processes (``flock`` contends between them as between processes; see
tests/_locks.py); the last test runs two real processes."""
import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('pyterrier_dr', reason='the cpu extra (pyterrier-dr) is not installed')

import pyterrier_dr  # noqa: E402

import pyterrier_garen._encoding as encoding  # noqa: E402
from pyterrier_garen import GroupCorpusGraph, encode_corpus  # noqa: E402
from pyterrier_garen._graphs import _with_title, bm25_corpus_graph, dense_corpus_graph  # noqa: E402
from pyterrier_garen._summaries import ExtractiveSummarizer  # noqa: E402
from pyterrier_garen.synthetic import make_synthetic  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
WAITING = 'waiting for it to finish'


def _vector(text: str) -> np.ndarray:
    """A fixed 8-dimensional vector of a text (from its SHA-256), the oracle of what was encoded."""
    raw = np.frombuffer(hashlib.sha256(text.encode('utf8')).digest()[:8], dtype=np.uint8).astype(np.float32)
    return raw - 127.5


class Hashing:
    """An encoder of :func:`_vector`; counts its calls and, with a gate, stops inside its first call."""
    model_name = 'hashing-test-encoder'

    def __init__(self, gate=None):
        self.gate, self.calls = gate, 0

    def encode_docs(self, texts, batch_size=None):
        self.calls += 1
        if self.gate is not None and self.calls == 1:
            self.gate.stop()
        return np.stack([_vector(t) for t in texts])


class Gate:
    """Where the first run stops: ``stop()`` (inside its build) blocks until the test opens the gate."""

    def __init__(self):
        self.reached, self.open = threading.Event(), threading.Event()
        self.calls = 0

    def stop(self):
        self.reached.set()
        assert self.open.wait(60), 'the gate was never opened'

    def wrap(self, original):
        """``original``, its calls counted in ``calls``, stopping at this gate on the first."""
        def gated(*args, **kwargs):
            self.calls += 1
            if self.calls == 1:
                self.stop()
            return original(*args, **kwargs)
        return gated


def race(first, second, gate):
    """Run ``first`` until it stops at ``gate``, then ``second`` until it says it waits, then open the gate.
    Returns both results and the waiting messages."""
    results, errors = {}, []

    def run(name, job):
        try:
            results[name] = job()
        except BaseException as ex:  # noqa: B036 - reported below
            errors.append((name, ex))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        one = threading.Thread(target=run, args=('first', first))
        one.start()
        assert gate.reached.wait(60), f'the first run never reached its gate: {errors}'
        two = threading.Thread(target=run, args=('second', second))
        two.start()
        deadline = time.monotonic() + 30
        while not any(WAITING in str(w.message) for w in caught) and two.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        gate.open.set()
        one.join(120)
        two.join(120)
    if errors:  # whole messages (an assert's message would be cut to a repr of limited length)
        raise AssertionError('; '.join(f'{who}: {type(ex).__name__}: {ex}' for who, ex in errors))
    return results['first'], results['second'], [str(w.message) for w in caught if WAITING in str(w.message)]


def _message(path: Path) -> str:
    return (f'another process is building {path}; waiting for it to finish (its lock is '
            f'{path.parent / ("." + path.name + ".lock")}), then using what it built')


@pytest.fixture(scope='module')
def collection(tmp_path_factory):
    return make_synthetic(tmp_path_factory.mktemp('race') / 'synthetic', docs_per_topic=8, queries_per_topic=1)


@pytest.fixture(scope='module')
def texts(collection):
    return {d['docno']: _with_title(d)['text'] for d in collection.get_corpus_iter(verbose=False)}


def test_a_second_encoding_waits_and_reuses_the_vectors_chunks_written_once(collection, texts, tmp_path, monkeypatch):
    monkeypatch.setattr(encoding, 'CHUNK', 16)  # 128 documents: 8 chunks
    gate = Gate()
    first, second = Hashing(gate), Hashing()
    path = tmp_path / 'v.flex'
    a, b, waits = race(lambda: encode_corpus(collection, path, encoder=first, verbose=False),
                       lambda: encode_corpus(collection, path, encoder=second, verbose=False), gate)
    assert (first.calls, second.calls) == (8, 0)
    assert waits == [_message(path)]
    for index in (a, b):
        vectors, docnos = index.payload(return_docnos=False)[0], index.docnos()
        assert len(docnos) == 128
        np.testing.assert_array_equal(vectors[np.arange(128)], np.stack([_vector(texts[d]) for d in docnos.fwd[
            np.arange(128)]]))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['v.flex']  # no chunks, temporaries or lock left


@pytest.fixture(scope='module')
def vectors(collection, tmp_path_factory):
    return encode_corpus(collection, tmp_path_factory.mktemp('vectors') / 'v.flex', encoder=Hashing(), verbose=False)


def test_a_second_dense_graph_waits_instead_of_removing_the_one_being_written(vectors, monkeypatch):
    """pyterrier_dr writes the graph inside the vectors' folder, in place: a second run used to take it for an
    interrupted build and remove it under the first."""
    gate = Gate()
    monkeypatch.setattr(pyterrier_dr.FlexIndex, 'corpus_graph', gate.wrap(pyterrier_dr.FlexIndex.corpus_graph))
    flex = Path(vectors.index_path)
    a, b, waits = race(lambda: dense_corpus_graph(vectors, k=4),
                       lambda: dense_corpus_graph(pyterrier_dr.FlexIndex(str(flex)), k=4), gate)
    assert waits == [_message(flex)]
    unit = np.array(vectors.payload(return_docnos=False)[0])
    unit = unit / np.linalg.norm(unit, axis=1, keepdims=True)
    similar = unit @ unit.T
    np.fill_diagonal(similar, -np.inf)
    for graph in (a, b):
        edges = np.asarray(graph.edges_data)
        assert edges.shape == (128, 4)
        # each listed neighbour is among the four most similar (ties may order them either way)
        fourth = np.sort(similar, axis=1)[:, -4]
        assert (similar[np.arange(128)[:, None], edges] >= fourth[:, None] - 1e-5).all()
    assert sorted(p.name for p in flex.parent.iterdir()) == ['v.flex']


def test_a_second_bm25_graph_waits_and_reuses_the_index_and_the_graph(collection, tmp_path, monkeypatch):
    from pyterrier_adaptive import CorpusGraph
    gate = Gate()
    monkeypatch.setattr(CorpusGraph, 'from_retriever', staticmethod(gate.wrap(CorpusGraph.from_retriever)))
    path = tmp_path / 'bm25.k4.graph'
    a, b, waits = race(lambda: bm25_corpus_graph(collection, path, k=4),
                       lambda: bm25_corpus_graph(collection, path, k=4), gate)
    assert gate.calls == 1
    assert waits == [_message(path)]
    np.testing.assert_array_equal(np.asarray(a.edges_data), np.asarray(b.edges_data))
    assert sorted(p.name for p in tmp_path.iterdir()) == ['bm25.k4.graph', 'bm25.k4.graph.pisa']


@pytest.fixture(scope='module')
def knn(vectors):
    return dense_corpus_graph(vectors, k=4)


def test_a_smaller_k_after_a_larger_one_cuts_the_built_graph(knn, vectors):
    """pyterrier_dr loads a larger built graph through an abstract class and fails; the graph of k=2 is the k=4
    graph's first two neighbours of every document, written as corpusgraph_k2 (no neighbours computed again)."""
    folder = Path(vectors.index_path)
    before = sorted(p.name for p in folder.iterdir())
    small = dense_corpus_graph(pyterrier_dr.FlexIndex(str(folder)), k=2)
    assert np.asarray(small.edges_data).shape == (128, 2)
    np.testing.assert_array_equal(np.asarray(small.edges_data), np.asarray(knn.edges_data)[:, :2])
    assert sorted(p.name for p in folder.iterdir()) == sorted(before + ['corpusgraph_k2'])  # and nothing else


def test_a_second_partition_waits_then_reuses_it_or_says_what_differs(knn, tmp_path, monkeypatch):
    import pyterrier_garen._partition as partition
    original = partition.leiden_partition
    gate = Gate()
    monkeypatch.setattr(partition, 'leiden_partition', gate.wrap(original))
    path = tmp_path / 'g.groups'
    a, b, waits = race(lambda: GroupCorpusGraph.from_corpus_graph(knn, path, max_group_size=8),
                       lambda: GroupCorpusGraph.from_corpus_graph(knn, path, max_group_size=8), gate)
    assert gate.calls == 1
    assert waits == [_message(path)]
    assert a.group_ids.tolist() == b.group_ids.tolist()
    gate = Gate()
    monkeypatch.setattr(partition, 'leiden_partition', gate.wrap(original))
    path = tmp_path / 'h.groups'
    with pytest.raises(AssertionError) as failed:  # the second asks for other groups: it waits, then is told why not
        race(lambda: GroupCorpusGraph.from_corpus_graph(knn, path, max_group_size=8),
             lambda: GroupCorpusGraph.from_corpus_graph(knn, path, max_group_size=6), gate)
    assert "already holds a GroupCorpusGraph built differently (stored, requested): {'max_group_size': (8, 6)}" \
        in str(failed.value)
    assert gate.calls == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ['g.groups', 'h.groups']


class Summarizer(ExtractiveSummarizer):
    """The extractive summariser, counting the groups it was asked for and stopping at a gate on its first call."""

    def __init__(self, gate=None):
        super().__init__()
        self.gate, self.asked = gate, 0

    def summarize(self, groups):
        if self.gate is not None and not self.asked:
            self.gate.stop()
        self.asked += len(groups)
        return super().summarize(groups)


def test_a_second_summary_run_waits_and_keeps_the_first_runs_summaries(collection, knn, tmp_path):
    path = tmp_path / 'g.groups'
    GroupCorpusGraph.from_corpus_graph(knn, path, max_group_size=8)
    one, two = GroupCorpusGraph(path), GroupCorpusGraph(path)  # both opened before either summarises
    gate = Gate()
    first, second = Summarizer(gate), Summarizer()
    a, b, waits = race(lambda: one.summarize(first, collection, batch_size=4),
                       lambda: two.summarize(second, collection, batch_size=4), gate)
    assert (first.asked, second.asked) == (one.num_groups, 0)
    assert waits == [_message(path)]
    assert [a.summary(g) for g in range(a.num_groups)] == [b.summary(g) for g in range(b.num_groups)]
    assert b.meta['summaries'] == GroupCorpusGraph(path).meta['summaries']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['g.groups']


def test_a_second_approximate_graph_waits_and_reuses_it(vectors, monkeypatch):
    pytest.importorskip('faiss', reason='the ann extra (faiss) is not installed')
    import pyterrier_garen._ann as ann
    gate = Gate()
    monkeypatch.setattr(ann, 'rescore_candidates', gate.wrap(ann.rescore_candidates))
    a, b, waits = race(lambda: ann.hnsw_corpus_graph(vectors, k=4, neighbours=8),
                       lambda: ann.hnsw_corpus_graph(vectors, k=4, neighbours=8), gate)
    path = Path(vectors.index_path) / 'hnsw_n-8_ef-40_search64.k4.rescored.graph'
    assert gate.calls == 1
    assert waits == [_message(path)]
    np.testing.assert_array_equal(np.asarray(a.edges_data), np.asarray(b.edges_data))


_PROCESS = textwrap.dedent('''
    import sys, time
    from pathlib import Path
    import numpy as np
    import pyterrier_garen._encoding as encoding
    from pyterrier_garen import LocalDataset, encode_corpus
    here = Path(sys.argv[1])

    class Slow:
        model_name = 'hashing-process-encoder'
        def encode_docs(self, texts, batch_size=None):
            with open(here / 'calls.txt', 'a') as log:
                log.write(sys.argv[2] + '\\n')
            (here / (sys.argv[2] + '-inside')).touch()
            while not (here / 'go').exists():
                time.sleep(0.02)
            return np.stack([np.full(4, float(len(t)), dtype=np.float32) + np.arange(4) for t in texts])

    if __name__ == '__main__':
        encoding.CHUNK = 64
        index = encode_corpus(LocalDataset(sys.argv[3]), here / 'v.flex', encoder=Slow(), verbose=False)
        print(len(index))
''')


@pytest.mark.slow  # two interpreters loading pyterrier_dr (torch)
def test_two_processes_encoding_the_same_folder(collection, tmp_path):
    script = tmp_path / 'encode.py'
    script.write_text(_PROCESS)
    env = {**os.environ, 'PYTHONWARNINGS': 'default'}

    def start(name):
        return subprocess.Popen([sys.executable, str(script), str(tmp_path), name, str(collection.path)], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=open(tmp_path / f'{name}.err', 'w'), text=True,
                                env=env)
    first = start('first')
    deadline = time.monotonic() + 120
    while not (tmp_path / 'first-inside').exists() and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    second = start('second')
    while WAITING not in (tmp_path / 'second.err').read_text() and second.poll() is None \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    (tmp_path / 'go').touch()
    outs = [p.communicate(timeout=120)[0] for p in (first, second)]
    errs = [(tmp_path / f'{n}.err').read_text() for n in ('first', 'second')]
    assert [first.returncode, second.returncode] == [0, 0], errs
    assert outs == ['128\n', '128\n']
    assert (tmp_path / 'calls.txt').read_text() == 'first\n' * 2  # two chunks of 64, encoded by the first only
    assert WAITING not in errs[0]
    assert _message(tmp_path / 'v.flex') in errs[1]
    assert not encoding.partial_dir(tmp_path / 'v.flex').exists()
