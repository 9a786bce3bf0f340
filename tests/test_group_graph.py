import filecmp
import functools
import http.server
import json
import threading

import numpy as np
import pyterrier as pt
import pytest
from ir_measures import R, nDCG

from pyterrier_garen import ArtifactError, ExtractiveSummarizer, GroupCorpusGraph, Summarizer

GROUP_FILES = ['edges.u32.np', 'weights.f16.np', 'docnos.npids', 'group_of.u32.np', 'group_offsets.u64.np',
               'group_members.u32.np']


def check_partition(groups, docnos):
    """Every document is in exactly one group; CSR members agree with group_of; limit respected unless reported."""
    assert groups.doc_count == len(docnos)
    assert sorted(groups.docnos_list()) == sorted(docnos)
    seen = np.zeros(groups.doc_count, dtype=int)
    for gid in range(groups.num_groups):
        members = groups.group_member_ids(gid)
        assert len(members) > 0
        assert (np.asarray(groups.group_ids)[members] == gid).all()
        seen[members] += 1
    assert (seen == 1).all()
    stats = groups.group_stats()
    big = set(np.nonzero(groups.group_sizes > 20)[0].tolist())
    assert big == set(stats['unsplittable'])


@pytest.fixture(scope='module')
def cran_bm25_groups(cran_bm25_graph, tmp_path_factory):
    return GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path_factory.mktemp('g') / 'bm25.groups')


def test_bm25_groups_on_cranfield(cran_bm25_groups, cranfield):
    check_partition(cran_bm25_groups, cranfield.docnos())
    stats = cran_bm25_groups.group_stats()
    assert 50 < stats['groups'] < 400
    assert stats['max'] <= 20


def test_dense_groups_on_cranfield(cran_groups, cranfield):
    check_partition(cran_groups, cranfield.docnos())
    assert cran_groups.meta['partition']['modularity'] > 0.5
    assert cran_groups.has_summaries


def test_graph_is_preserved(cran_groups, cran_dense_graph):
    for docno in ['1', '100', '999', '1400']:
        assert list(cran_groups.neighbours(docno)) == list(cran_dense_graph.neighbours(docno))
        _, w1 = cran_groups.neighbours(docno, weights=True)
        _, w2 = cran_dense_graph.neighbours(docno, weights=True)
        np.testing.assert_array_equal(w1, w2)


def test_group_accessors(cran_groups):
    gid = cran_groups.group_of('1')
    assert '1' in cran_groups.group_members(gid)
    assert cran_groups.group_of('not-a-doc') == -1
    assert len(cran_groups.neighbours('not-a-doc')) == 0
    assert cran_groups.groups_of(['1', 'nope']).tolist() == [gid, -1]
    with pytest.raises(IndexError, match='does not exist'):
        cran_groups.group_members(cran_groups.num_groups)
    assert cran_groups.summary(gid).strip()
    assert cran_groups.summary_record(gid)['provenance']['name'] == 'extractive'


def test_deterministic_byte_identical(cran_bm25_graph, tmp_path):
    a = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'a', seed=5)
    b = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'b', seed=5)
    for name in GROUP_FILES:
        assert filecmp.cmp(a.path / name, b.path / name, shallow=False), name


def test_leidenalg_backend(cran_bm25_graph, tmp_path, cranfield):
    groups = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'la', backend='leidenalg')
    check_partition(groups, cranfield.docnos())
    assert groups.meta['partition']['backend'] == 'leidenalg'


def test_artifact_load_and_meta(cran_groups):
    loaded = pt.Artifact.load(str(cran_groups.path))
    assert isinstance(loaded, GroupCorpusGraph)
    meta = json.loads((cran_groups.path / 'pt_meta.json').read_text())
    assert (meta['type'], meta['format'], meta['package_hint']) == ('corpus_graph', 'garen_groups', 'pyterrier-garen')
    for key in ('max_group_size', 'resolution', 'randomness', 'seed', 'backend'):
        assert key in meta['partition']
    assert meta['summaries']['summarizer']['name'] == 'extractive'


def test_reopen_same_params_reuses_and_other_params_refuse(cran_bm25_graph, tmp_path):
    first = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g')
    again = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g')
    assert again.meta['partition']['seconds'] == first.meta['partition']['seconds']  # not rebuilt
    with pytest.raises(FileExistsError, match='max_group_size'):
        GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g', max_group_size=10)
    rebuilt = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g', max_group_size=10, overwrite=True)
    assert rebuilt.group_sizes.max() <= 10


def test_reuse_warns_when_another_partition_version_made_the_groups(tmp_path, monkeypatch):
    import warnings

    import pyterrier_garen._partition as partition
    from pyterrier_garen.synthetic import planted_knn_graph
    edges, weights, _, _ = planted_knn_graph(300, k=8, seed=3)
    docnos = [f'd{i}' for i in range(300)]
    built = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights)
    assert built.meta['partition']['version'] == partition.PARTITION_VERSION
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # same version: reused without a word
        GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights)
    meta_path = tmp_path / 'g' / 'pt_meta.json'
    meta = json.loads(meta_path.read_text())
    del meta['partition']['version']  # written before versions were stored: taken as version 1
    meta_path.write_text(json.dumps(meta))
    monkeypatch.setattr(partition, 'PARTITION_VERSION', 2)
    with pytest.warns(UserWarning, match=r"partition version 1; .* makes version 2.*overwrite=True") as record:
        again = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights)
    assert len(record) == 1
    assert 'version' not in again.meta['partition']  # reused as it is, not rebuilt
    rebuilt = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights, overwrite=True)
    assert rebuilt.meta['partition']['version'] == 2
    # labels given by the caller: no procedure whose version could differ, and no warning when reused
    given = GroupCorpusGraph.from_arrays(tmp_path / 'h', docnos, edges, weights, labels=np.arange(300) % 7)
    assert 'version' not in given.meta['partition']
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        GroupCorpusGraph.from_arrays(tmp_path / 'h', docnos, edges, weights, labels=np.arange(300) % 7)


def test_failed_build_leaves_nothing(cran_bm25_graph, tmp_path, monkeypatch):
    import pyterrier_garen._group_builder as builder

    def boom(*args, **kwargs):
        raise RuntimeError('disk full')
    monkeypatch.setattr(builder, 'write_docnos', boom)
    with pytest.raises(RuntimeError, match='disk full'):
        GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g')
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(FileNotFoundError, match='not a built GroupCorpusGraph'):
        GroupCorpusGraph(tmp_path / 'g')


def _copy(groups, dest):
    import shutil
    shutil.copytree(groups.path, dest)
    return dest


def test_truncated_artifact_is_rejected(cran_groups, tmp_path):
    path = _copy(cran_groups, tmp_path / 'g')
    data = (path / 'edges.u32.np').read_bytes()
    (path / 'edges.u32.np').write_bytes(data[:-4])
    with pytest.raises(ArtifactError, match='truncated'):
        GroupCorpusGraph(path)


def test_tampered_ids_are_rejected(cran_groups, tmp_path):
    path = _copy(cran_groups, tmp_path / 'g')
    edges = np.fromfile(path / 'edges.u32.np', dtype=np.uint32)
    edges[7] = 10_000_000
    edges.tofile(path / 'edges.u32.np')
    groups = GroupCorpusGraph(path)
    with pytest.raises(ArtifactError, match='edges'):
        groups.neighbours('1')
    path2 = _copy(cran_groups, tmp_path / 'g2')
    group_of = np.fromfile(path2 / 'group_of.u32.np', dtype=np.uint32)
    group_of[0] = 99999
    group_of.tofile(path2 / 'group_of.u32.np')
    with pytest.raises(ArtifactError, match='group'):
        GroupCorpusGraph(path2).group_of('1')


def test_no_pickle_in_artifact(cran_groups):
    names = {file.name for file in cran_groups.path.iterdir()}
    assert names == set(GROUP_FILES) | {'pt_meta.json', 'summaries.jsonl'}
    for file in cran_groups.path.iterdir():
        data = file.read_bytes()
        assert not (data[:1] == b'\x80' and data[1:2] in b'\x02\x03\x04\x05'), f'{file.name} looks like a pickle'
        if file.suffix in ('.json', '.jsonl'):
            for line in (data.splitlines() if file.suffix == '.jsonl' else [data]):
                json.loads(line)
        elif file.suffix == '.np':  # raw arrays: exactly the bytes their dtype and pt_meta.json counts imply
            assert b'NUMPY' not in data[:8]


@pytest.mark.slow  # 60 queries with MiniLM (about 30 CPU-s; the default tier's CPU budget)
def test_gar_over_groups_in_experiment(cran_groups, cranfield, cran_pisa, cran_vectors, minilm):
    from pyterrier_adaptive import GAR

    from pyterrier_garen import VectorScorer
    bm25 = cran_pisa.bm25(num_results=1000)
    scorer = VectorScorer(cran_vectors, minilm)
    topics = cranfield.get_topics().head(60)
    res = pt.Experiment([bm25 % 100, bm25 >> GAR(scorer, cran_groups, num_results=100, batch_size=16)],
                        topics, cranfield.get_qrels(binary=True), [nDCG @ 10, R @ 100], names=['BM25', 'GAR'])
    # GAR explores the graph: it finds documents the first-stage top 100 does not hold
    assert res['R@100'][1] > res['R@100'][0]


class CountingSummarizer(Summarizer):
    """Extractive summaries, counting calls; raises after ``fail_after`` calls to simulate a crash."""

    def __init__(self, fail_after=None):
        self.inner = ExtractiveSummarizer()
        self.calls = 0
        self.groups_seen = []
        self.fail_after = fail_after

    def config(self):
        return {'name': 'counting', 'model': None, 'prompt_hash': 'x'}

    def summarize(self, groups):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise KeyboardInterrupt('killed')
        self.calls += 1
        self.groups_seen.extend(g['group'] for g in groups)
        return self.inner.summarize(groups)


def test_summarize_resumes_without_redoing(cran_bm25_graph, cranfield, tmp_path):
    groups = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g')
    crashing = CountingSummarizer(fail_after=3)
    with pytest.raises(KeyboardInterrupt):
        groups.summarize(crashing, cranfield, batch_size=10)
    assert not groups.has_summaries
    # a torn last line, as if killed in the middle of a write
    with (groups.path / 'summaries.partial.jsonl').open('at') as fout:
        fout.write('{"group": 31, "conc')
    resumed = CountingSummarizer()
    groups = GroupCorpusGraph(groups.path).summarize(resumed, cranfield, batch_size=10)
    assert sorted(crashing.groups_seen + resumed.groups_seen) == list(range(groups.num_groups))
    assert not set(crashing.groups_seen) & set(resumed.groups_seen)
    assert groups.has_summaries
    assert not (groups.path / 'summaries.partial.jsonl').exists()
    reference = ExtractiveSummarizer().summarize(
        [{'group': 0, 'docs': [d for d in cranfield.get_corpus_iter(verbose=False)
                               if d['docno'] in set(groups.group_members(0))]}])[0]
    assert GroupCorpusGraph(groups.path).summary_record(0)['summary'] == reference['summary']


def test_summarize_refuses_other_summarizer_without_overwrite(cran_groups, cranfield):
    with pytest.raises(FileExistsError, match='overwrite=True'):
        cran_groups.summarize(CountingSummarizer(), cranfield)


def test_package_roundtrip_over_http(cran_groups, tmp_path, monkeypatch):
    """build_package + from_url, the path that to_hf/from_hf use, served from 127.0.0.1 (no network)."""
    package = cran_groups.build_package(str(tmp_path / 'groups.tar.lz4'), verbose=False)
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(('127.0.0.1', 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv('PYTERRIER_HOME', str(tmp_path / 'home'))
    try:
        url = f'http://127.0.0.1:{server.server_address[1]}/{package.split("/")[-1]}'
        loaded = pt.Artifact.from_url(url)
    finally:
        server.shutdown()
    assert isinstance(loaded, GroupCorpusGraph)
    assert loaded.num_groups == cran_groups.num_groups
    assert loaded.summary(3) == cran_groups.summary(3)
    assert list(loaded.neighbours('5')) == list(cran_groups.neighbours('5'))


def test_from_arrays_with_given_labels(tmp_path):
    docnos = ['a', 'b', 'c', 'd']
    edges = np.array([[1], [0], [3], [2]])
    weights = np.ones((4, 1))
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights, labels=[0, 0, 1, 1])
    assert groups.group_members(0) == ['a', 'b']
    assert groups.group_members(1) == ['c', 'd']
    assert list(groups.neighbours('c')) == ['d']
    assert groups.summary(0) == ''



def test_batched_lookups_equal_single_ones(tmp_path):
    docnos = [f'd{i}' for i in range(50)]
    edges = (np.arange(50)[:, None] + np.arange(1, 3)[None, :]) % 50
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape),
                                          labels=np.arange(50) % 7)
    asked = ['d3', 'nope', 'd3', 'd49', 'd0', 'd10', 'nope']
    fresh = GroupCorpusGraph(tmp_path / 'g')  # batched first, on an empty memo
    assert fresh.groups_of(asked).tolist() == [groups.group_of(d) for d in asked] == [3, -1, 3, 0, 0, 3, -1]
    assert fresh.doc_ids(asked).tolist() == [groups.doc_id(d) for d in asked]
    assert fresh.groups_of([]).tolist() == []

def test_integer_docnos_with_gaps_round_trip(tmp_path):
    # the npids trap from DESIGN.md: integer docnos in two runs with a gap
    docnos = [str(i) for i in range(1, 375)] + [str(i) for i in range(377, 426)]
    n = len(docnos)
    edges = (np.arange(n)[:, None] + np.arange(1, 4)[None, :]) % n
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape),
                                          labels=np.arange(n) // 10)
    assert all(groups.doc_id(d) >= 0 for d in docnos)
    assert list(groups.neighbours('374')) == ['377', '378', '379']


def test_lookup_ids_never_raises(tmp_path):
    from npids import Lookup

    from pyterrier_garen._graphs import lookup_ids
    # integer docnos out of order are stored with an integer codec that raises for non-numeric keys
    docnos = ['4983', '5836', '70490', '12', '999999']
    lookup = Lookup.build(docnos, str(tmp_path / 'ids.npids'))
    assert lookup_ids(lookup, ['70490', 'not-a-number', '5']).tolist() == [2, -1, -1]
    assert lookup_ids(lookup, []).tolist() == []


def test_reopen_with_another_graph_refuses(cran_bm25_graph, cran_dense_graph, tmp_path):
    GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, tmp_path / 'g')
    with pytest.raises(FileExistsError, match='other graph'):
        GroupCorpusGraph.from_corpus_graph(cran_dense_graph, tmp_path / 'g')


def test_vector_scorer_scores_unknown_docs_zero(cran_vectors, minilm):
    import pandas as pd

    from pyterrier_garen import VectorScorer
    frame = pd.DataFrame({'qid': ['1'] * 3, 'query': ['wing slipstream'] * 3, 'docno': ['1', 'no-such-doc', '2']})
    out = VectorScorer(cran_vectors, minilm)(frame).set_index('docno')
    assert out.loc['no-such-doc', 'score'] == 0
    assert out.loc['1', 'score'] > out.loc['2', 'score']  # doc 1 is about a wing in a slipstream
