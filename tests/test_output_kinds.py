"""An output folder that holds something else is refused by name before any work, and never called damaged (found
by reading docs/robustness.md as a user, session 34): vectors asked into a PISA index or a group graph, a BM25 graph
asked into a group graph or a dense graph, and either asked into a folder of the user's own files."""
import json

import pytest

import pyterrier_garen as garen
from pyterrier_garen._atomic import ArtifactKindError


class _NoCorpus:
    """A dataset whose corpus must not be read: the refusal comes before any indexing or encoding."""

    def get_corpus_iter(self, verbose=False):
        raise AssertionError('the corpus was read before the output folder was checked')


def _folder(path, files):
    path.mkdir()
    for name, text in files.items():
        (path / name).write_text(text)
    return {p.name: p.read_text() for p in path.iterdir()}


def _never_encodes(*args, **kwargs):
    raise AssertionError('encoded before the output folder was checked')


META = {
    'pisa': {'type': 'sparse_index', 'format': 'pisa', 'package_hint': 'pyterrier-pisa'},
    'groups': {'type': 'corpus_graph', 'format': 'garen_groups', 'package_hint': 'pyterrier-garen'},
    'dense graph': {'type': 'corpus_graph', 'format': 'np_topk', 'doc_count': 3, 'k': 2},
}


@pytest.mark.parametrize(('held', 'said'), [
    ('pisa', 'holds a sparse_index.pisa artifact, not vectors (dense_index.flex); it is left untouched: choose '
             'another folder for the vectors'),
    ('groups', 'holds a corpus_graph.garen_groups artifact, not vectors (dense_index.flex); it is left untouched: '
               'choose another folder for the vectors'),
    (None, 'already exists and is not a dense_index.flex artifact (no pt_meta.json); it is left untouched: choose '
           'another output path or move it away'),
])
def test_vectors_are_never_written_over_another_artifact_or_a_users_folder(tmp_path, monkeypatch, held, said):
    from pyterrier_garen import _encoding
    monkeypatch.setattr(_encoding, 'encode_chunked', _never_encodes)
    files = {'pt_meta.json': json.dumps(META[held])} if held else {'notes.txt': 'mine'}
    before = _folder(tmp_path / 'out', files)
    with pytest.raises(ArtifactKindError) as refused:
        garen.encode_corpus(_NoCorpus(), tmp_path / 'out', verbose=False)
    assert str(refused.value) == f'{tmp_path / "out"} {said}'
    assert {p.name: p.read_text() for p in (tmp_path / 'out').iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['out']


@pytest.mark.parametrize(('held', 'said'), [
    ('groups', 'holds a corpus_graph.garen_groups artifact, not a BM25 corpus graph; it is left untouched: choose '
               'another output folder'),
    ('dense graph', "holds a corpus graph not built from a retriever (pyterrier-dr's dense graph has no "
                    "package_hint), not a BM25 corpus graph; it is left untouched: choose another output folder"),
    ('pisa', 'holds a sparse_index.pisa artifact, not a BM25 corpus graph; it is left untouched: choose another '
             'output folder'),
    (None, 'already exists and is not a corpus_graph.np_topk artifact (no pt_meta.json); it is left untouched: '
           'choose another output path or move it away'),
])
def test_a_bm25_graph_is_never_taken_from_another_artifact_nor_built_over_a_users_folder(tmp_path, held, said):
    files = {'pt_meta.json': json.dumps(META[held])} if held else {'notes.txt': 'mine'}
    before = _folder(tmp_path / 'out', files)
    with pytest.raises(ArtifactKindError) as refused:
        garen.bm25_corpus_graph(_NoCorpus(), tmp_path / 'out')
    assert str(refused.value) == f'{tmp_path / "out"} {said}'
    assert {p.name: p.read_text() for p in (tmp_path / 'out').iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ['out']  # no out.pisa built first


@pytest.mark.parametrize('built', [True, False])
def test_vectors_given_as_a_graph_point_to_the_dense_graph_inside_them(tmp_path, built):
    from pyterrier_garen._graphs import load_corpus_graph
    _folder(tmp_path / 'V', {'pt_meta.json': json.dumps({'type': 'dense_index', 'format': 'flex'})})
    if built:
        _folder(tmp_path / 'V' / 'corpusgraph_k16', {'pt_meta.json': json.dumps(META['dense graph'])})
    with pytest.raises(ValueError) as refused:
        load_corpus_graph(tmp_path / 'V')
    hint = (f"the dense graph built from these vectors is the folder inside it, e.g. "
            f"{str(tmp_path / 'V' / 'corpusgraph_k16')!r}" if built else
            'build its dense graph with build-graph --vectors')
    assert str(refused.value) == (f"{str(tmp_path / 'V')!r} holds a dense_index.flex artifact, not a corpus graph; "
                                  f"{hint}")


@pytest.mark.parametrize('spec', ['sbert:{missing}', 'hf:{missing}', 'sbert:{file}'])
def test_an_encoder_path_that_is_no_folder_is_named_before_any_model_library_loads(tmp_path, spec, monkeypatch):
    import sys

    from pyterrier_garen._encoding import load_encoder
    (tmp_path / 'a-file').write_text('x')
    spec = spec.format(missing=tmp_path / 'missing', file=tmp_path / 'a-file')
    monkeypatch.setitem(sys.modules, 'pyterrier_dr', None)  # importing it would fail: the check comes first
    where = spec.partition(':')[2]
    with pytest.raises(ValueError) as refused:
        load_encoder(spec)
    why = 'it is a file' if where.endswith('a-file') else 'no such path'
    assert str(refused.value) == (f"{spec!r}: there is no model folder at {where} ({why}); check the path, or give a "
                                  "model name the local Hugging Face cache holds")


def test_a_cross_encoder_path_that_is_no_folder_is_refused_before_compare_prepares(tmp_path):
    from pyterrier_garen._text_rerankers import check_reranker
    with pytest.raises(ValueError, match=r"^'cross-encoder:\./nope': there is no model folder at \./nope \(no such "):
        check_reranker('cross-encoder:./nope')
    check_reranker(f'cross-encoder:{tmp_path}')  # a folder passes (whether it holds a model is the library's word)
    check_reranker('cross-encoder:org/some-model')  # a Hub name is not a path: left to the library and its cache
