"""Oracles for the GroupCorpusGraph artifact's reader (pyterrier_garen._group_graph): look-ups, checks on opening,
validate() and group_stats(), on small artifacts whose every value is known by hand (the twentieth mutation run,
docs/testing.md)."""
import json

import numpy as np
import pytest

from pyterrier_garen import ArtifactError, GroupCorpusGraph


@pytest.fixture
def five(tmp_path):
    """Five documents, k=2, groups {a, b} {c, d} {e}; e's list is padded with e itself."""
    docnos = ['a', 'b', 'c', 'd', 'e']
    edges = np.array([[1, 2], [0, 2], [3, 0], [2, 4], [3, 4]])
    weights = np.array([[.9, .5], [.9, .4], [.8, .5], [.8, .3], [.3, 0.]])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights, labels=[0, 0, 1, 1, 2])


def test_neighbours_by_docno_and_by_id(five):
    assert five.neighbours('c').tolist() == ['d', 'a']
    assert five.neighbours(2).tolist() == [3, 0]
    docnos, weights = five.neighbours('a', weights=True)
    assert docnos.tolist() == ['b', 'c']
    assert weights.tolist() == pytest.approx([.9, .5], abs=1e-3)
    assert np.int64(4) in range(5)
    assert five.neighbours(np.int64(4)).tolist() == [3, 4]


def test_an_unknown_docno_has_no_neighbours_of_the_known_ones_types(five):
    known, known_weights = five.neighbours('a', weights=True)
    empty, empty_weights = five.neighbours('zz', weights=True)
    assert (len(empty), len(empty_weights)) == (0, 0)
    # docnos stay text (numpy strings for a known docno, objects for none: never numbers), weights float16
    assert (known.dtype.kind, empty.dtype.kind) == ('U', 'O')
    assert empty_weights.dtype == known_weights.dtype == np.float16
    alone = five.neighbours('zz')
    assert isinstance(alone, np.ndarray)
    assert alone.dtype.kind == 'O'
    assert len(alone) == 0


@pytest.mark.parametrize('docid', [-1, 5, 6, True, np.bool_(False), 1.0, None])
def test_an_id_outside_0_to_n_minus_1_is_refused(five, docid):
    with pytest.raises(IndexError, match='internal ids run from 0 to 4'):
        five.neighbours(docid)


def test_ids_at_both_ends_are_accepted(five):
    assert five.neighbours(0).tolist() == [1, 2]
    assert five.neighbours(4).tolist() == [3, 4]


def test_repr_names_the_folder(five):
    assert repr(five) == f"GroupCorpusGraph({str(five.path)!r})"


def test_arrays_are_read_only_maps(five):
    for array in (five.edges_data, five.weights_data, five.group_ids, five._group_members):
        assert not array.flags.writeable
    assert five.edges_data.shape == five.weights_data.shape == (5, 2)


def test_a_refused_read_names_the_file_and_the_verb(five, monkeypatch):
    import errno

    def refused(path, **kwargs):
        raise PermissionError(errno.EACCES, 'Permission denied', str(path))
    monkeypatch.setattr(np, 'memmap', refused)
    with pytest.raises(OSError, match=r'^cannot read .*edges\.u32\.np: permission denied; '):
        _ = five.edges_data


# -- checks on opening: pt_meta.json's type, counts and files ----------------------------------------------------

def _edit_meta(graph, **changes):
    meta_path = graph.path / 'pt_meta.json'
    meta = json.loads(meta_path.read_text())
    for key, value in changes.items():
        if value is _DROP:
            meta.pop(key, None)
        else:
            meta[key] = value
    meta_path.write_text(json.dumps(meta))
    return graph.path


_DROP = object()


def test_meta_without_type_and_format_is_named_damaged(five):
    path = _edit_meta(five, type=_DROP, format=_DROP)
    with pytest.raises(ArtifactError, match='names no artifact type and format'):
        GroupCorpusGraph(path)


@pytest.mark.parametrize(('changes', 'shown'), [
    (dict(type=_DROP), 'None.garen_groups'), (dict(format=_DROP), 'corpus_graph.None'),
    (dict(format='np_topk'), 'corpus_graph.np_topk')])
def test_meta_with_one_of_type_and_format_names_what_it_holds(five, changes, shown):
    path = _edit_meta(five, **changes)
    with pytest.raises(ArtifactError, match=f'holds a {shown} artifact, not corpus_graph.garen_groups'):
        GroupCorpusGraph(path)


@pytest.mark.parametrize('changes', [dict(doc_count=-1, num_groups=0), dict(k=-1), dict(num_groups=-1),
                                     dict(num_groups=6), dict(doc_count=0, num_groups=1)],
                         ids=['negative docs', 'negative k', 'negative groups', 'more groups than docs',
                              'a group of no documents'])
def test_counts_that_describe_no_partition_are_refused(five, changes):
    path = _edit_meta(five, **changes)
    with pytest.raises(ArtifactError, match='do not describe a partition'):
        GroupCorpusGraph(path)


@pytest.mark.parametrize(('changes', 'file', 'found', 'expected'), [
    (dict(k=0), 'edges.u32.np', 40, 0),  # k = 0 describes a partition: the file sizes are checked next
    (dict(num_groups=5), 'group_offsets.u64.np', 32, 48),  # as many groups as documents is a partition
    (dict(doc_count=0, num_groups=0), 'edges.u32.np', 40, 0)])
def test_counts_at_the_edge_pass_on_to_the_size_check(five, changes, file, found, expected):
    path = _edit_meta(five, **changes)
    with pytest.raises(ArtifactError, match=rf'{file} has {found} bytes, expected {expected} for'):
        GroupCorpusGraph(path)


@pytest.mark.parametrize('value', [True, 1.5, '5', None])
def test_a_count_that_is_no_integer_is_refused(five, value):
    path = _edit_meta(five, doc_count=value)
    with pytest.raises(ArtifactError, match='lacks a valid doc_count, k or num_groups'):
        GroupCorpusGraph(path)


def test_summaries_named_in_meta_must_be_there(five):
    path = _edit_meta(five, summaries={'count': 3, 'summarizer': {'name': 'extractive'}})
    with pytest.raises(ArtifactError, match=r'summaries\.jsonl is missing'):
        GroupCorpusGraph(path)


def test_a_damaged_docno_table_fails_on_opening_not_mid_search(five):
    table = five.path / 'docnos.npids'
    table.write_bytes(b'\0' * table.stat().st_size)
    with pytest.raises(ArtifactError, match='docnos.npids'):
        GroupCorpusGraph(five.path)


def test_any_link_inside_the_artifact_is_refused_on_opening_and_by_validate(five):
    path = five.path
    (path / 'weights.copy').write_bytes((path / 'weights.f16.np').read_bytes())
    (path / 'weights.f16.np').unlink()
    (path / 'weights.f16.np').symlink_to(path / 'weights.copy')
    with pytest.raises(ArtifactError, match=r'weights\.f16\.np is a symbolic link .*\(a link inside the artifact\)'):
        GroupCorpusGraph(path)
    with pytest.raises(ArtifactError, match=r'failed validation: .*weights\.f16\.np is a symbolic link .*inside'):
        five.validate()  # opened before the link was planted


def test_packaging_leaves_temporaries_out_and_keeps_every_other_file(five):
    (five.path / '.pt_meta.json.ab12cd34.tmp').write_text('{}')  # sorts first: the files after it still count
    names = sorted(rel for rel, _ in five._package_files())
    assert names == sorted(p.name for p in five.path.iterdir() if not p.name.startswith('.'))
    assert 'pt_meta.json' in names
    assert 'group_of.u32.np' in names


# -- validate(): every problem, with its numbers ---------------------------------------------------------------

def _write_u(path, values, dtype):
    np.asarray(values, dtype=dtype).tofile(path)


def test_validate_counts_an_empty_group_and_a_member_listed_in_the_wrong_group(five):
    assert five.validate() == {'docs': 5, 'groups': 3, 'summaries': 0, 'ok': True}
    _write_u(five.path / 'group_offsets.u64.np', [0, 2, 5, 5], np.uint64)  # group 1 now lists c, d and e
    with pytest.raises(ArtifactError) as raised:
        GroupCorpusGraph(five.path).validate()
    message = str(raised.value)
    assert message.endswith('failed validation: 1 members are listed in a group that group_of.u32.np disagrees '
                            'with (e.g. document 4 is listed in group 1, but group_of says 2); 1 groups have no '
                            'member')


def test_validate_names_a_document_listed_twice(five):
    _write_u(five.path / 'group_members.u32.np', [0, 1, 2, 2, 4], np.uint32)  # d (3) missing, c (2) twice
    with pytest.raises(ArtifactError, match='failed validation: group_members.u32.np lists some documents twice '
                                            'and others not at all$'):
        GroupCorpusGraph(five.path).validate()


def test_validate_names_an_array_that_fails_its_range_check(five):
    _write_u(five.path / 'group_of.u32.np', [0, 0, 1, 1, 3], np.uint32)  # group 3 of 3
    with pytest.raises(ArtifactError, match=r'failed validation: .*group_of\.u32\.np names a group >= '
                                            r'num_groups=3$'):
        GroupCorpusGraph(five.path).validate()


def test_validate_names_replaced_edges(five):
    _write_u(five.path / 'edges.u32.np', [[1, 2], [0, 2], [3, 0], [2, 4], [3, 0]], np.uint32)  # e's last: a
    with pytest.raises(ArtifactError, match=r'failed validation: docnos\.npids or edges\.u32\.np differ from what '
                                            r'was built \(graph_sha256 in pt_meta\.json\); the files were replaced '
                                            r'or tampered with$'):
        GroupCorpusGraph(five.path).validate()


# -- the searches a GroupCorpusGraph makes -------------------------------------------------------------------------

def test_every_search_is_built_over_this_graph_with_the_options_given(five):
    import pyterrier as pt

    from pyterrier_garen import GAREN, RGS, DocGAREN, SlideGAR
    from pyterrier_garen._gar import GAR
    reranker, navigator = pt.Transformer.identity(), pt.Transformer.identity()
    garen = five.garen(reranker, navigator, budget=30, keep=5)
    assert type(garen) is GAREN
    assert (garen.reranker, garen.groups, garen.navigator) == (reranker, five, navigator)
    assert (garen.budget, garen.keep) == (30, 5)
    gar = five.gar(reranker, num_results=30, batch_size=4)
    assert type(gar) is GAR
    assert (gar.scorer, gar.corpus_graph, gar.num_results, gar.batch_size) == \
        (reranker, five, 30, 4)
    for make, cls in ((five.slidegar, SlideGAR), (five.rgs, RGS)):
        search = make(reranker, budget=30, window=12)
        assert type(search) is cls
        assert (search.reranker, search.graph) == (reranker, five)
        assert (search.budget, search.window) == (30, 12)
    doc = five.doc_garen(reranker, navigator, budget=30)
    assert type(doc) is DocGAREN
    assert (doc.reranker, doc.graph, doc.navigator, doc.budget) == \
        (reranker, five, navigator, 30)
