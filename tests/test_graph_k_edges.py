"""The k of a corpus graph at its edges: a dense graph of a smaller k after a larger one, and a BM25 graph asked for
more neighbours than the collection holds.

``build-graph --vectors V --k 16`` after ``--k 32`` cut the k=32 graph in memory and wrote nothing: it printed the
k=32 folder, no ``V/corpusgraph_k16`` existed for ``build-groups --graph``, and groups built from the printed path
recorded k=32. The BM25 graph took any k: ``--k 100000`` on 300 documents recorded k=100000 and wrote 180 MB of
documents padded with themselves, where the dense graph warns and links each document to its n-1 others."""
import hashlib
import json
import warnings
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('pyterrier_dr', reason='the cpu extra (pyterrier-dr) is not installed')

import pyterrier_dr  # noqa: E402

from pyterrier_garen import ArtifactError, encode_corpus  # noqa: E402
from pyterrier_garen.__main__ import main as cli  # noqa: E402
from pyterrier_garen._atomic import FILES_RECORD  # noqa: E402
from pyterrier_garen._checks import check_recorded_files  # noqa: E402
from pyterrier_garen._graphs import bm25_corpus_graph, dense_corpus_graph, load_corpus_graph  # noqa: E402
from pyterrier_garen.synthetic import make_synthetic  # noqa: E402

from test_robustness_boundaries import _read_only  # noqa: E402


class Hashing:
    """8-dimensional vectors from a text's SHA-256 (the graphs, not the encoding, are under test)."""
    model_name = 'hashing-graph-k-edges'

    def encode_docs(self, texts, batch_size=None):
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32)
                         - 127.5 for t in texts])


@pytest.fixture(scope='module')
def collection(tmp_path_factory):
    return make_synthetic(tmp_path_factory.mktemp('k-edges') / 'c', docs_per_topic=4, queries_per_topic=1)  # 64


@pytest.fixture
def vectors(collection, tmp_path):
    """Vectors with the dense graph of k=6 built inside them (``corpusgraph_k6``)."""
    index = encode_corpus(collection, tmp_path / 'v.flex', encoder=Hashing(), verbose=False)
    dense_corpus_graph(index, k=6)
    return Path(index.index_path)


def _array(folder, name, dtype, k):
    return np.fromfile(folder / name, dtype=dtype).reshape(-1, k)


def _meta(folder):
    return json.loads((folder / 'pt_meta.json').read_text())


# -- a dense graph of a smaller k after a larger one -------------------------------------------------------------------
def test_a_smaller_k_is_written_as_its_own_checked_graph(vectors):
    large = vectors / 'corpusgraph_k6'
    graph = dense_corpus_graph(pyterrier_dr.FlexIndex(str(vectors)), k=3)
    small = vectors / 'corpusgraph_k3'
    assert Path(graph.path) == small  # not the k=6 folder cut in memory
    assert str(graph) == f"NpTopKCorpusGraph('{small}', k=3)"
    assert _meta(small) == {**_meta(large), 'k': 3, 'cut_from': 'corpusgraph_k6'}
    np.testing.assert_array_equal(_array(small, 'edges.u32.np', np.uint32, 3),
                                  _array(large, 'edges.u32.np', np.uint32, 6)[:, :3])
    np.testing.assert_array_equal(_array(small, 'weights.f16.np', np.float16, 3),
                                  _array(large, 'weights.f16.np', np.float16, 6)[:, :3])
    assert (small / 'docnos.npids').read_bytes() == (vectors / 'docnos.npids').read_bytes()
    recorded = json.loads((small / FILES_RECORD).read_text())['files']
    assert set(recorded) == {'pt_meta.json', 'edges.u32.np', 'weights.f16.np', 'docnos.npids'}
    assert check_recorded_files(small, 'dense k-NN graph') is True
    assert load_corpus_graph(small).edges_data.shape == (64, 3)
    assert not [p.name for p in vectors.iterdir() if p.name.startswith('.')]  # no temporary or lock left


def test_the_written_cut_is_reused_and_checked_like_a_built_graph(vectors):
    small = vectors / 'corpusgraph_k3'
    dense_corpus_graph(pyterrier_dr.FlexIndex(str(vectors)), k=3)
    written = {p.name: p.read_bytes() for p in small.iterdir()}
    again = dense_corpus_graph(pyterrier_dr.FlexIndex(str(vectors)), k=3)
    assert Path(again.path) == small
    assert {p.name: p.read_bytes() for p in small.iterdir()} == written  # reused as it is
    edges = bytearray((small / 'edges.u32.np').read_bytes())
    edges[len(edges) // 2] ^= 0x01  # another neighbour id, still in range: only the record tells
    (small / 'edges.u32.np').write_bytes(bytes(edges))
    with pytest.raises(ArtifactError, match=r'corpusgraph_k3 \(dense k-NN graph\) is damaged: edges.u32.np'):
        dense_corpus_graph(pyterrier_dr.FlexIndex(str(vectors)), k=3)
    with pytest.raises(ArtifactError, match=r'corpusgraph_k3 \(corpus graph\) is damaged: edges.u32.np'):
        load_corpus_graph(small)


def test_build_graph_with_the_default_k_after_a_larger_one_writes_the_graph_build_groups_reads(collection, tmp_path,
                                                                                              capsys):
    vectors = tmp_path / 'v.flex'
    encode_corpus(collection, vectors, encoder=Hashing(), verbose=False)  # build-graph reuses these vectors
    cli(['build-graph', '--dataset', str(collection.path), '--vectors', str(vectors), '--k', '20'])
    cli(['build-graph', '--dataset', str(collection.path), '--vectors', str(vectors)])
    out = capsys.readouterr().out
    assert f"graph: NpTopKCorpusGraph('{vectors / 'corpusgraph_k16'}', k=16)" in out.splitlines()
    cli(['build-groups', '--graph', str(vectors / 'corpusgraph_k16'), '--out', str(tmp_path / 'groups'),
         '--max-group-size', '8'])
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])['docs'] == 64
    assert _meta(tmp_path / 'groups')['k'] == 16


def test_a_smaller_k_on_a_read_only_folder_is_cut_in_memory_with_a_warning(vectors, monkeypatch):
    before = sorted(p.name for p in vectors.iterdir())
    with monkeypatch.context() as patch:
        _read_only(patch, vectors)
        with pytest.warns(UserWarning, match=r'read-only file system.*corpusgraph_k6 cut to k=3 in memory, not '
                                             r'stored$'):
            graph = dense_corpus_graph(pyterrier_dr.FlexIndex(str(vectors)), k=3)
    np.testing.assert_array_equal(np.asarray(graph.edges_data),
                                  _array(vectors / 'corpusgraph_k6', 'edges.u32.np', np.uint32, 6)[:, :3])
    assert sorted(p.name for p in vectors.iterdir()) == before


# -- a BM25 graph asked for more neighbours than the collection holds -------------------------------------------------
CLAMPED = (r'^k=100 neighbours asked for, but each of the 64 documents has only 63 others: the graph lists at most all '
           r'of them, those BM25 retrieves \(k=63\)$')


def test_a_bm25_graph_clamps_k_to_the_other_documents_and_records_it(collection, tmp_path):
    path = tmp_path / 'bm25.graph'
    with pytest.warns(UserWarning, match=CLAMPED):
        graph = bm25_corpus_graph(collection, path, k=100)
    assert graph.edges_data.shape == (64, 63)
    assert _meta(path)['k'] == 63
    assert (path / 'edges.u32.np').stat().st_size == 64 * 63 * 4  # not 64 x 100 edges padded with themselves
    assert check_recorded_files(path, 'BM25 corpus graph') is True
    written = (path / 'edges.u32.np').read_bytes()
    with pytest.warns(UserWarning, match=CLAMPED):  # the same k asked again: reused, as it is
        assert bm25_corpus_graph(collection, path, k=100).edges_data.shape == (64, 63)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert bm25_corpus_graph(collection, path, k=63).edges_data.shape == (64, 63)
    assert (path / 'edges.u32.np').read_bytes() == written
    with pytest.raises(FileExistsError, match=r'already holds a BM25 graph with k=63, not k=8'):
        bm25_corpus_graph(collection, path, k=8)


def test_build_graph_bm25_with_a_huge_k_records_the_clamped_k(collection, tmp_path, capsys):
    with pytest.warns(UserWarning, match=r'^k=100000 neighbours asked for, but each of the 64 documents has only 63 '
                                         r'others'):
        cli(['build-graph', '--dataset', str(collection.path), '--kind', 'bm25', '--out', str(tmp_path / 'g'),
             '--k', '100000'])
    assert f"graph: NpTopKCorpusGraph('{tmp_path / 'g'}', k=63)" in capsys.readouterr().out.splitlines()
    assert _meta(tmp_path / 'g')['k'] == 63
    assert sum(p.stat().st_size for p in (tmp_path / 'g').iterdir()) < 100_000  # was 64 x 100000 x 6 bytes


def test_a_bm25_graph_built_before_the_clamp_is_still_reused(collection, tmp_path, monkeypatch):
    """A graph that recorded a k above the collection's other documents (self-padded) holds the neighbours of
    k=n-1: asked for again, it is reused, not refused as a graph of another k."""
    import pyterrier_garen._graphs as graphs
    path = tmp_path / 'old.graph'
    with monkeypatch.context() as patch:
        patch.setattr(graphs, '_bm25_k', lambda k, count: k)  # as built before k was clamped
        bm25_corpus_graph(collection, path, k=70)
    assert _meta(path)['k'] == 70
    with pytest.warns(UserWarning, match=r'only 63 others'):
        assert bm25_corpus_graph(collection, path, k=70).edges_data.shape == (64, 70)
    with pytest.raises(FileExistsError, match=r'already holds a BM25 graph with k=70, not k=8'):
        bm25_corpus_graph(collection, path, k=8)
