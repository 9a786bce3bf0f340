"""An interrupted swap never loses the only copy of an artifact (issue 22).

Every writer that replaces a folder artifact (groups, summaries, PISA index, FlexIndex vectors, BM25 graph) is
interrupted at each point between two steps of its swap. The interruption is injected, not timed: at the chosen
point the swap raises, and from then on the process is "dead" (no cleanup handler may rename or remove anything,
as after ``kill -9``). After the interruption, and after the next open and the next build of the same path, a
complete artifact must be at the path, and no leftover of the swap may remain once the build has run.
"""
import contextlib
import json
import warnings

import numpy as np
import pyterrier as pt
import pytest

import pyterrier_garen._atomic as atomic
import pyterrier_garen._group_graph as group_graph
from pyterrier_garen import ExtractiveSummarizer, GroupCorpusGraph
from pyterrier_garen.synthetic import make_synthetic

N = 30
# the points each kind of swap passes: an atomic exchange, or two renames with a backup folder
PASSED = {True: ('start', 'exchanged', 'old-marked-deleted'),
          False: ('start', 'backup-folder-made', 'old-moved-aside', 'new-moved-in', 'old-marked-deleted')}


class Killed(BaseException):
    """The process stops here: nothing after this point runs."""


@contextlib.contextmanager
def killed_at(monkeypatch, point, *, hard=True):
    """Interrupt at ``point`` (a swap step, or a summarize step); with ``hard`` no handler touches files after it."""
    seen = []
    dead = []
    real_rename, real_remove = atomic._rename, atomic._remove

    def step(name):
        seen.append(name)
        if name == point:
            dead.append(True)
            raise Killed(name)
    with monkeypatch.context() as patch:
        patch.setattr(atomic, '_step', step)
        patch.setattr(group_graph, '_step', step)
        if hard:
            patch.setattr(atomic, '_rename', lambda a, b: None if dead else real_rename(a, b))
            patch.setattr(atomic, '_remove', lambda p: None if dead else real_remove(p))
        with pytest.raises(Killed):
            yield seen
    assert point in seen


def _leftovers(path):
    return sorted(p.name for p in path.parent.iterdir() if p.name.startswith(f'.{path.name}.')
                  and not p.name.endswith('.lock'))


def _arrays(seed):
    rng = np.random.default_rng(seed)
    docnos = [f'd{i:02d}' for i in range(N)]
    edges = np.stack([(np.arange(1, 4) + i) % N for i in range(N)])
    return docnos, edges, rng.random(edges.shape).astype(np.float32) + 0.1


def _groups(path, seed, overwrite=False):
    docnos, edges, weights = _arrays(seed)
    return GroupCorpusGraph.from_arrays(path, docnos, edges, weights, labels=(np.arange(N) + seed) // 5,
                                        max_group_size=5, seed=seed, overwrite=overwrite)


def _open_groups(path):
    groups = GroupCorpusGraph(path)
    assert groups.validate()['ok']
    return groups.meta['partition']['seed']


def test_the_steps_are_all_tested():
    assert set(PASSED[True]) | set(PASSED[False]) == set(atomic.SWAP_STEPS)


@pytest.mark.parametrize('hard', [True, False], ids=['kill', 'ctrl-c'])
@pytest.mark.parametrize(('exchange', 'point'), [(mode, point) for mode in (True, False) for point in PASSED[mode]],
                         ids=[f'{"exchange" if mode else "two-renames"}-{point}' for mode in (True, False)
                              for point in PASSED[mode]])
def test_group_rebuild_interrupted_at_every_step(tmp_path, monkeypatch, exchange, point, hard):
    monkeypatch.setattr(atomic, 'USE_EXCHANGE', exchange)
    path = tmp_path / 'g'
    _groups(path, seed=1)
    with killed_at(monkeypatch, point, hard=hard) as seen:
        _groups(path, seed=2, overwrite=True)
    assert set(seen) <= set(PASSED[exchange])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        seed = _open_groups(path)  # the next open: the old (1) or the new (2) artifact, complete
    restored = [w for w in caught if 'restored' in str(w.message)]
    if point == 'old-moved-aside' and hard:  # the only instant the path is empty: the open restores the old one
        assert seed == 1
        assert restored, 'the open must restore the backup and say so'
        assert 'was missing after an interrupted rebuild; the previous artifact was restored' in \
            str(restored[0].message)
    else:
        assert not restored
        assert seed == (2 if point in ('exchanged', 'new-moved-in', 'old-marked-deleted') else 1)
    _groups(path, seed=3, overwrite=True)  # the next build
    assert _open_groups(path) == 3
    assert _leftovers(path) == []


def test_next_build_restores_before_anything_else(tmp_path, monkeypatch):
    """A kill with the path empty, then a build WITHOUT overwrite of the same parameters: the backup is restored
    first, so the build finds the old artifact (and is refused, as for any existing one) instead of losing it."""
    monkeypatch.setattr(atomic, 'USE_EXCHANGE', False)
    path = tmp_path / 'g'
    _groups(path, seed=1)
    with killed_at(monkeypatch, 'old-moved-aside'):
        _groups(path, seed=2, overwrite=True)
    assert not path.exists()
    with pytest.warns(UserWarning, match='restored'), pytest.raises(FileExistsError, match='built differently'):
        _groups(path, seed=2)
    assert _open_groups(path) == 1


def test_a_backup_is_never_removed_while_it_is_the_only_copy(tmp_path, monkeypatch):
    """Path missing and a backup beside it: cleaning stale temporaries (prepare does it before each step) restores
    it; with something unfinished at the path instead, the backup is kept and named."""
    monkeypatch.setattr(atomic, 'USE_EXCHANGE', False)
    path = tmp_path / 'g'
    _groups(path, seed=1)
    with killed_at(monkeypatch, 'old-moved-aside'):
        _groups(path, seed=2, overwrite=True)
    backup = [p for p in tmp_path.iterdir() if p.name.endswith('.old')]
    path.mkdir()  # someone made an empty folder there meanwhile
    with pytest.warns(UserWarning, match=f'a backup of the previous one is beside it in {backup[0]}'):
        atomic.clean_stale(path)
    assert (backup[0] / 'artifact' / 'pt_meta.json').is_file()
    path.rmdir()
    with pytest.warns(UserWarning, match='restored'):
        atomic.clean_stale(path)
    assert _open_groups(path) == 1
    assert _leftovers(path) == []


def _summaries_file(path):
    return [json.loads(line) for line in (path / 'summaries.jsonl').read_text().splitlines()]


class Tagged(ExtractiveSummarizer):
    def __init__(self, tag):
        super().__init__()
        self.tag = tag

    def config(self):
        return {**super().config(), 'tag': self.tag}

    def summarize(self, groups):
        return [{**r, 'concept': f'{self.tag}:{r["concept"]}'} for r in super().summarize(groups)]


@pytest.mark.parametrize('point', ['summaries-unset', 'summaries-written'])
def test_summaries_overwrite_interrupted(tmp_path, monkeypatch, point):
    corpus = [{'docno': f'd{i:02d}', 'text': f'word{i % 4} topic{i // 5} text'} for i in range(N)]
    groups = _groups(tmp_path / 'g', seed=1)
    groups.summarize(Tagged('old'), corpus)
    with killed_at(monkeypatch, point):
        GroupCorpusGraph(groups.path).summarize(Tagged('new'), corpus, overwrite=True)
    reopened = GroupCorpusGraph(groups.path)
    assert reopened.validate()['ok']  # complete at every instant: pt_meta.json never describes other records
    if reopened.has_summaries:
        tag = reopened.meta['summaries']['summarizer']['tag']
        assert {r['concept'].split(':')[0] for r in _summaries_file(groups.path)} == {tag}
    calls = []
    new = Tagged('new')
    real = new.summarize
    new.summarize = lambda batch: calls.append(len(batch)) or real(batch)
    reopened.summarize(new, corpus)  # the rerun finishes from the partial run: no summariser call
    assert calls == []
    assert {r['concept'].split(':')[0] for r in _summaries_file(groups.path)} == {'new'}
    assert sorted(p.name for p in groups.path.iterdir() if 'summaries' in p.name or p.name.startswith('.')) == \
        ['summaries.jsonl']


# -- the writers of the other artifacts (a swap happens when the target is an empty folder) -----------------------
@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    return make_synthetic(tmp_path_factory.mktemp('tiny') / 'c', docs_per_topic=6, queries_per_topic=1)


class FakeEncoder(pt.Transformer):
    """Deterministic 8-dimensional vectors from a docno's hash (the swap, not the encoding, is under test)."""

    def transform(self, inp):
        vecs = [np.random.default_rng(abs(hash(d)) % 2**32).random(8).astype(np.float32) for d in inp.docno]
        return inp.assign(doc_vec=vecs)


def _pisa(dataset, path):
    from pyterrier_garen._graphs import bm25_index
    index = bm25_index(dataset, path)
    assert index.built()
    assert len(index.bm25(num_results=3).search(dataset.get_topics()['query'].iloc[0])) > 0
    return index


def _vectors(dataset, path):
    from pyterrier_garen._graphs import encode_corpus
    index = encode_corpus(dataset, path, encoder=FakeEncoder(), verbose=False)
    assert len(index.docnos()) == len(dataset.docnos())
    return index


def _bm25_graph(dataset, path):
    from pyterrier_garen._graphs import bm25_corpus_graph, load_corpus_graph
    bm25_corpus_graph(dataset, path, index=_pisa(dataset, path.parent / 'shared.pisa'), k=4)
    graph = load_corpus_graph(path)
    assert len(graph.neighbours(dataset.docnos()[0])) == 4
    return graph


@pytest.mark.parametrize('writer', [_pisa, _vectors, _bm25_graph], ids=['pisa', 'vectors', 'bm25-graph'])
@pytest.mark.parametrize('point', ['old-moved-aside', 'new-moved-in', 'exchanged'])
def test_other_writers_interrupted(tiny, tmp_path, monkeypatch, writer, point):
    monkeypatch.setattr(atomic, 'USE_EXCHANGE', point == 'exchanged')
    path = tmp_path / 'artifact'
    path.mkdir()  # an empty folder at the target: what the swap replaces
    with killed_at(monkeypatch, point):
        writer(tiny, path)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        writer(tiny, path)  # the next open/build: restores or reuses, then builds what is missing
    assert (path / 'pt_meta.json').is_file()
    assert _leftovers(path) == []


def test_pt_artifact_load_of_a_group_artifact_without_meta(tmp_path):
    groups = _groups(tmp_path / 'g', seed=1)
    (groups.path / 'pt_meta.json').unlink()
    with pytest.raises(FileNotFoundError) as direct:
        GroupCorpusGraph(groups.path)
    with pytest.raises(FileNotFoundError) as loaded:
        pt.Artifact.load(str(groups.path))
    assert str(loaded.value) == str(direct.value)
    assert 'pt_meta.json is missing' in str(direct.value)
    assert 'rebuild it' in str(direct.value)


def test_pt_artifact_load_of_a_group_artifact_with_empty_meta(tmp_path):
    groups = _groups(tmp_path / 'g', seed=1)
    (groups.path / 'pt_meta.json').write_text('{}')
    with pytest.raises(ValueError, match='pt_meta.json names no artifact type and format; the artifact is damaged'):
        pt.Artifact.load(str(groups.path))
