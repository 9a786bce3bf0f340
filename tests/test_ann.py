"""Approximate dense k-NN graphs (FAISS HNSW, re-scored) against brute force."""
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
