"""Oracles for building the GroupCorpusGraph artifact (pyterrier_garen._group_builder) and for the docno table
(the writer and look-ups of pyterrier_garen._graphs): the argument checks and their messages, the docno sorting and
the renumbered edges, the partition record in pt_meta.json, the bytes of every file written, reuse and refusal of
an existing artifact, ``fingerprint`` and ``graph_arrays``; then ``write_docnos`` read back with ``npids.Lookup``,
``lookup_ids``, ``check_docnos`` and ``repair_docnos``. Every expected value is worked out by hand on three to six
documents (the twenty-fifth mutation run, docs/testing.md)."""
import hashlib
import json
import os
import re
import struct
import warnings
from types import SimpleNamespace

import numpy as np
import pytest

import pyterrier_garen._partition as partition
from pyterrier_garen import GroupCorpusGraph
from pyterrier_garen._atomic import ArtifactKindError
from pyterrier_garen._group_builder import build_group_graph, fingerprint, graph_arrays

# Four documents given out of order (c, a, d, b), k=2, edges by position in this list:
#   c -> a, b    a -> c, d    d -> b, d    b -> a, c
# Stored in docno order a, b, c, d (new ids 0..3), the rows become
#   a -> c, d = [2, 3]    b -> a, c = [0, 2]    c -> a, b = [0, 1]    d -> b, d = [1, 3]
DOCNOS = ['c', 'a', 'd', 'b']
EDGES = [[1, 3], [0, 2], [3, 2], [1, 0]]
WEIGHTS = [[1., 2.], [3., 4.], [5., 6.], [7., 8.]]
STORED_EDGES = [[2, 3], [0, 2], [0, 1], [1, 3]]
STORED_WEIGHTS = [[3., 4.], [7., 8.], [1., 2.], [5., 6.]]
# labels by given position c:3 a:7 d:5 b:3 -> groups (sorted labels 3, 5, 7) c:0 a:2 d:1 b:0 -> stored a, b, c, d:
LABELS = [3, 7, 5, 3]
GROUP_OF = [2, 0, 0, 1]
OFFSETS = [0, 2, 3, 4]  # group 0 = {b, c}, group 1 = {d}, group 2 = {a}
MEMBERS = [1, 2, 3, 0]


def _sha(docnos, edges):
    """The documented recipe, written out: sha256 of the newline-joined docnos, then the edges as uint32 LE."""
    flat = [e for row in edges for e in row]
    return hashlib.sha256('\n'.join(docnos).encode() + struct.pack(f'<{len(flat)}I', *flat)).hexdigest()


def _weights_sha(weights):
    """sha256 of the weights as stored: float16 little-endian, rows in docno order."""
    flat = [w for row in weights for w in row]
    return hashlib.sha256(struct.pack(f'<{len(flat)}e', *flat)).hexdigest()


def _meta(path):
    return json.loads((path / 'pt_meta.json').read_text())


def _read(path, name, dtype):
    return np.fromfile(path / name, dtype=dtype).tolist()


def _build(path, **kwargs):
    kwargs.setdefault('labels', LABELS)
    return build_group_graph(path, DOCNOS, np.array(EDGES), np.array(WEIGHTS), **kwargs)


# -- the files written -------------------------------------------------------------------------------------------

def test_documents_are_stored_in_docno_order_with_renumbered_edges(tmp_path):
    path = _build(tmp_path / 'g')
    assert path == tmp_path / 'g'
    assert _read(path, 'edges.u32.np', '<u4') == [e for row in STORED_EDGES for e in row]
    assert _read(path, 'weights.f16.np', '<f2') == [w for row in STORED_WEIGHTS for w in row]
    assert _read(path, 'group_of.u32.np', '<u4') == GROUP_OF
    assert _read(path, 'group_offsets.u64.np', '<u8') == OFFSETS
    assert _read(path, 'group_members.u32.np', '<u4') == MEMBERS
    from npids import Lookup
    with Lookup(str(path / 'docnos.npids')) as lookup:
        assert [str(d) for d in lookup.fwd[[0, 1, 2, 3]]] == ['a', 'b', 'c', 'd']
    assert sorted(p.name for p in path.iterdir()) == [
        'docnos.npids', 'edges.u32.np', 'group_members.u32.np', 'group_of.u32.np', 'group_offsets.u64.np',
        'pt_meta.json', 'weights.f16.np']


def test_the_reader_sees_the_sorted_graph(tmp_path):
    graph = GroupCorpusGraph(_build(tmp_path / 'g'))
    assert graph.docnos_list() == ['a', 'b', 'c', 'd']
    assert graph.neighbours('d').tolist() == ['b', 'd']
    assert graph.neighbours('c', weights=True)[1].tolist() == [1., 2.]
    assert graph.group_of('a') == 2


def test_the_meta_record_of_given_labels(tmp_path):
    path = _build(tmp_path / 'g', max_group_size=1, resolution=0.5, randomness=0.25, seed=7, backend='leidenalg',
                  source={'from': 'hand'})
    meta = _meta(path)
    part = meta.pop('partition')
    assert meta == {
        'type': 'corpus_graph', 'format': 'garen_groups', 'package_hint': 'pyterrier-garen', 'format_version': 1,
        'doc_count': 4, 'k': 2, 'num_groups': 3, 'source_graph': {'from': 'hand'},
        'graph_sha256': _sha(['a', 'b', 'c', 'd'], STORED_EDGES), 'summaries': None,
        'docnos_bytes': (path / 'docnos.npids').stat().st_size, 'weights_sha256': _weights_sha(STORED_WEIGHTS)}
    assert meta['docnos_bytes'] > 0
    seconds = part.pop('seconds')
    assert isinstance(seconds, float)
    assert 0 <= seconds < 60
    # given labels: no Leiden run, the backend recorded as 'given', no partition version; group 0 ({b, c}) is over
    # the limit of 1 (listed, not warned about: the caller chose the groups)
    assert part == {'max_group_size': 1, 'resolution': 0.5, 'randomness': 0.25, 'seed': 7, 'backend': 'given',
                    'unsplittable': [], 'over_limit': [0], 'modularity': None, 'leiden_calls': 0,
                    'stage_seconds': {}, 'stage_cpu_seconds': {}}


def test_default_parameters_are_recorded(tmp_path):
    part = _meta(_build(tmp_path / 'g'))['partition']
    assert {k: part[k] for k in ('max_group_size', 'resolution', 'randomness', 'seed', 'backend', 'over_limit')} \
        == {'max_group_size': 20, 'resolution': 1.0, 'randomness': 0.001, 'seed': 42, 'backend': 'given',
            'over_limit': []}
    assert _meta(tmp_path / 'g')['source_graph'] is None


def test_labels_zero_to_g_minus_1_are_kept_and_others_renumbered_in_label_order(tmp_path):
    # given order c, a, d, b; labels 1, 0, 0, 2 are group ids already: stored a:0 b:2 c:1 d:0
    build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), labels=[1, 0, 0, 2])
    assert _read(tmp_path / 'g', 'group_of.u32.np', '<u4') == [0, 2, 1, 0]
    assert _read(tmp_path / 'g', 'group_offsets.u64.np', '<u8') == [0, 2, 3, 4]
    assert _read(tmp_path / 'g', 'group_members.u32.np', '<u4') == [0, 3, 2, 1]
    # labels -5, 'x'-like gaps: 100, -5, 100, 40 -> sorted -5, 40, 100 -> c:2 a:0 d:2 b:1 -> stored a:0 b:1 c:2 d:2
    build_group_graph(tmp_path / 'h', DOCNOS, np.array(EDGES), np.array(WEIGHTS), labels=[100, -5, 100, 40])
    assert _read(tmp_path / 'h', 'group_of.u32.np', '<u4') == [0, 1, 2, 2]
    assert _meta(tmp_path / 'h')['num_groups'] == 3


def test_labels_given_as_a_column_are_one_label_per_document(tmp_path):
    build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), labels=np.array(LABELS)[:, None])
    assert _read(tmp_path / 'g', 'group_of.u32.np', '<u4') == GROUP_OF
    assert _read(tmp_path / 'g', 'group_members.u32.np', '<u4') == MEMBERS


def test_numbers_as_docnos_are_stored_as_text_in_string_order(tmp_path):
    # docnos 10, 9, 100 (numbers) become '10', '9', '100': string order '10' < '100' < '9'
    edges = np.array([[1], [2], [0]])  # 10 -> 9, 9 -> 100, 100 -> 10
    graph = GroupCorpusGraph.from_arrays(tmp_path / 'g', [10, 9, 100], edges, np.ones((3, 1)), labels=[0, 1, 2])
    assert graph.docnos_list() == ['10', '100', '9']
    # stored rows: '10' -> '9' (id 2), '100' -> '10' (id 0), '9' -> '100' (id 1)
    assert _read(tmp_path / 'g', 'edges.u32.np', '<u4') == [2, 0, 1]
    assert _read(tmp_path / 'g', 'group_of.u32.np', '<u4') == [0, 2, 1]


def test_equal_docnos_in_sort_order_keep_a_stable_renumbering(tmp_path):
    """Already-sorted docnos keep their positions: the identity renumbering."""
    edges = np.array([[2, 1], [0, 2], [1, 0]])
    build_group_graph(tmp_path / 'g', ['x', 'y', 'z'], edges, np.ones((3, 2)), labels=[0, 0, 0])
    assert _read(tmp_path / 'g', 'edges.u32.np', '<u4') == [2, 1, 0, 2, 1, 0]
    assert _meta(tmp_path / 'g')['num_groups'] == 1


def test_whole_float_and_boolean_edges_are_positions(tmp_path):
    # float 1.0 / 0.0 are positions 1 / 0; booleans True / False are 1 / 0
    build_group_graph(tmp_path / 'f', ['p', 'q'], np.array([[1.0], [0.0]]), np.ones((2, 1)), labels=[0, 1])
    assert _read(tmp_path / 'f', 'edges.u32.np', '<u4') == [1, 0]
    build_group_graph(tmp_path / 'b', ['p', 'q'], np.array([[True], [False]]), np.ones((2, 1)), labels=[0, 1])
    assert _read(tmp_path / 'b', 'edges.u32.np', '<u4') == [1, 0]


def test_a_weight_is_stored_as_float16(tmp_path):
    build_group_graph(tmp_path / 'g', ['p', 'q'], np.array([[1], [0]]), np.array([[0.1], [1 / 3]]), labels=[0, 0])
    assert _read(tmp_path / 'g', 'weights.f16.np', '<f2') == [np.float16(0.1), np.float16(1 / 3)]


# -- argument checks ---------------------------------------------------------------------------------------------

def test_no_documents_is_refused(tmp_path):
    with pytest.raises(ValueError, match='no documents to group'):
        build_group_graph(tmp_path / 'g', [], np.zeros((0, 2)), np.zeros((0, 2)), labels=[])
    assert not (tmp_path / 'g').exists()


@pytest.mark.parametrize(('edges', 'weights', 'shapes'), [
    (np.zeros((3,), int), np.zeros((3,)), r'edges \(3,\) and weights \(3,\)'),  # one dimension
    (np.zeros((3, 1, 1), int), np.zeros((3, 1, 1)), r'edges \(3, 1, 1\) and weights \(3, 1, 1\)'),  # three dimensions
    (np.zeros((2, 1), int), np.zeros((2, 1)), r'edges \(2, 1\) and weights \(2, 1\)'),  # a row short
    (np.zeros((4, 1), int), np.zeros((4, 1)), r'edges \(4, 1\) and weights \(4, 1\)'),  # a row too many
    (np.zeros((3, 2), int), np.zeros((3, 1)), r'edges \(3, 2\) and weights \(3, 1\)'),  # other widths
])
def test_shapes_other_than_n_by_k_are_refused(tmp_path, edges, weights, shapes):
    with pytest.raises(ValueError, match='^' + shapes + r' must both have shape \(3, k\)'):
        build_group_graph(tmp_path / 'g', ['a', 'b', 'c'], edges, weights, labels=[0, 0, 0])


def test_an_edge_outside_the_documents_is_refused_with_its_place_and_count(tmp_path):
    edges = np.array([[1, 2], [-1, 0], [3, 1]])
    with pytest.raises(ValueError, match=r'^edges\[1, 0\] = -1 is not a document position \(0 \.\. 2; out of range: '
                                         r'2 of 6 edges\)\. Pad a short'):
        build_group_graph(tmp_path / 'g', ['a', 'b', 'c'], edges, np.ones((3, 2)), labels=[0, 0, 0])
    with pytest.raises(ValueError, match=r'^edges\[2, 0\] = 3 is not a document position \(0 \.\. 2; out of range: '
                                         r'1 of 6 edges\)'):
        build_group_graph(tmp_path / 'g', ['a', 'b', 'c'], np.array([[1, 2], [2, 0], [3, 2]]), np.ones((3, 2)),
                          labels=[0, 0, 0])
    # n - 1 and 0 are positions
    build_group_graph(tmp_path / 'g', ['a', 'b', 'c'], np.array([[0, 2], [2, 0], [0, 2]]), np.ones((3, 2)),
                      labels=[0, 0, 0])


@pytest.mark.parametrize(('bad', 'shown', 'count'), [(np.nan, 'nan', 1), (np.inf, 'inf', 2), (-np.inf, '-inf', 1)])
def test_a_weight_that_is_not_finite_is_refused_with_its_place_and_count(tmp_path, bad, shown, count):
    weights = np.ones((3, 2))
    weights[2, 1] = bad
    if count == 2:
        weights[2, 0] = bad
    at = '2, 1' if count == 1 else '2, 0'
    with pytest.raises(ValueError, match=rf'^weights\[{at}\] = {shown} is not a finite number \(NaN or infinite: '
                                         rf'{count} of 6 weights\)\. Replace them'):
        build_group_graph(tmp_path / 'g', ['a', 'b', 'c'], np.array([[1, 2], [2, 0], [0, 1]]), weights,
                          labels=[0, 0, 0])


@pytest.mark.parametrize(('edges', 'message'), [
    ([[1.0], [0.5]], r'^edges\[1, 0\] = 0\.5 is not a whole document position; edges hold the positions'),
    ([[np.nan], [0.0]], r'^edges\[0, 0\] = nan is not a whole document position'),
    ([[1.0], [np.inf]], r'^edges\[1, 0\] = inf is not a whole document position'),
    ([['b'], ['a']], r'^edges must hold integer document positions \(0 \.\. n-1\), got an array of <U1$'),
    ([[1 + 0j], [0j]], r'got an array of complex128$'),
])
def test_edges_that_are_not_whole_positions_are_refused(tmp_path, edges, message):
    with pytest.raises(ValueError, match=message):
        build_group_graph(tmp_path / 'g', ['a', 'b'], np.array(edges), np.ones((2, 1)), labels=[0, 0])


@pytest.mark.filterwarnings('ignore:overflow encountered in cast:RuntimeWarning')
def test_a_weight_beyond_float32_is_refused_as_infinite(tmp_path):
    with pytest.raises(ValueError, match=r'^weights\[1, 0\] = inf is not a finite number \(NaN or infinite: 1 of 2'):
        build_group_graph(tmp_path / 'g', ['a', 'b'], np.array([[1], [0]]), np.array([[1.0], [1e39]]), labels=[0, 0])


def test_a_weight_beyond_float16_is_refused_and_the_largest_it_holds_is_kept(tmp_path):
    """The artifact stores float16 weights: 65504 is the largest; 70000 would be stored as infinity."""
    with pytest.raises(ValueError, match=r"^weights\[1, 0\] = 70000 does not fit the artifact's float16 weights \(at "
                                         r'most 65504 in size: 1 of 2 weights are larger\); rescale them'):
        build_group_graph(tmp_path / 'g', ['a', 'b'], np.array([[1], [0]]), np.array([[1.0], [70000.0]]),
                          labels=[0, 0])
    graph = GroupCorpusGraph.from_arrays(tmp_path / 'h', ['a', 'b'], np.array([[1], [0]]),
                                         np.array([[-65504.0], [65504.0]]), labels=[0, 0])
    assert graph.neighbours('b', weights=True)[1].tolist() == [65504.0]


def test_duplicate_docnos_are_refused(tmp_path):
    with pytest.raises(ValueError, match="^docnos must be unique: 'a' is given 2 times"):
        build_group_graph(tmp_path / 'g', ['a', 'b', 'a'], np.zeros((3, 1), int), np.ones((3, 1)), labels=[0, 0, 0])
    # 1 and '1' are the same docno once made text
    with pytest.raises(ValueError, match=r"^docnos must be unique: '1' is given 2 times \(docnos are compared as "
                                         r"text, so 12 and \"12\" are one\)$"):
        build_group_graph(tmp_path / 'g', [1, '1'], np.zeros((2, 1), int), np.ones((2, 1)), labels=[0, 0])


@pytest.mark.parametrize('labels', [[0, 0, 0], [0, 0, 0, 0, 0]])
def test_labels_of_another_length_are_refused(tmp_path, labels):
    with pytest.raises(ValueError, match=rf'^labels has {len(labels)} entries, expected one per document \(4\)$'):
        _build(tmp_path / 'g', labels=labels)
    assert not (tmp_path / 'g').exists()


# -- Leiden's partition, as the builder records it ----------------------------------------------------------------

def _fake_leiden(monkeypatch, labels, modularity=0.25, unsplittable=(), calls=3):
    """Replace Leiden by a stub that records its arguments and returns a known partition."""
    seen = {}

    def leiden(edges, weights, **kwargs):
        seen.update(edges=np.asarray(edges).tolist(), weights=np.asarray(weights).tolist(),
                    kinds=(np.asarray(edges).dtype.kind, np.asarray(weights).dtype.name), **kwargs)
        return partition.Partition(labels=np.array(labels), unsplittable=list(unsplittable), modularity=modularity,
                                   leiden_calls=calls, seconds={'symmetrise': 0.12345, 'leiden': 2.0004},
                                   cpu_seconds={'leiden': 1.23456})
    monkeypatch.setattr(partition, 'leiden_partition', leiden)
    return seen


def test_leiden_gets_the_stored_graph_and_the_parameters(tmp_path, monkeypatch):
    seen = _fake_leiden(monkeypatch, [0, 0, 1, 1])
    build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), max_group_size=5, resolution=0.5,
                      randomness=0.01, seed=9, backend='leidenalg', verbose=True)
    assert seen == {'edges': STORED_EDGES, 'weights': STORED_WEIGHTS, 'kinds': ('i', 'float32'), 'max_group_size': 5,
                    'resolution': 0.5, 'randomness': 0.01, 'seed': 9, 'backend': 'leidenalg', 'verbose': True}


def test_leiden_runs_quietly_by_default(tmp_path, monkeypatch):
    seen = _fake_leiden(monkeypatch, [0, 0, 1, 1])
    build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))
    assert seen['verbose'] is False
    assert seen['backend'] == 'igraph'


def test_leidens_partition_is_recorded(tmp_path, monkeypatch):
    # Leiden's labels are by stored id (a, b, c, d): used as they are, not reordered again
    _fake_leiden(monkeypatch, [1, 0, 0, 1], unsplittable=[np.int64(1)])
    path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), max_group_size=2)
    assert _read(path, 'group_of.u32.np', '<u4') == [1, 0, 0, 1]
    assert _read(path, 'group_offsets.u64.np', '<u8') == [0, 2, 4]
    assert _read(path, 'group_members.u32.np', '<u4') == [1, 2, 0, 3]
    part = _meta(path)['partition']
    del part['seconds']
    assert part == {'max_group_size': 2, 'resolution': 1.0, 'randomness': 0.001, 'seed': 42, 'backend': 'igraph',
                    'version': partition.PARTITION_VERSION, 'unsplittable': [1], 'over_limit': [],
                    'modularity': 0.25, 'leiden_calls': 3, 'stage_seconds': {'symmetrise': 0.123, 'leiden': 2.0},
                    'stage_cpu_seconds': {'leiden': 1.235}}
    assert _meta(path)['num_groups'] == 2


@pytest.mark.parametrize('modularity', [float('nan'), float('inf'), None])
def test_a_modularity_that_is_no_number_is_recorded_as_null(tmp_path, monkeypatch, modularity):
    _fake_leiden(monkeypatch, [0, 0, 1, 1], modularity=modularity)
    assert _meta(build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS)))['partition'][
        'modularity'] is None


def test_a_modularity_of_zero_is_kept(tmp_path, monkeypatch):
    _fake_leiden(monkeypatch, [0, 0, 1, 1], modularity=np.float64(0.0))
    modularity = _meta(build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS)))['partition'][
        'modularity']
    assert modularity == 0.0
    assert type(modularity) is float


def test_groups_leiden_leaves_over_the_limit_are_warned_about(tmp_path, monkeypatch):
    # groups by stored id: 0 = {a, b, c} (3 > 2), 1 = {d}
    _fake_leiden(monkeypatch, [0, 0, 0, 1])
    with pytest.warns(UserWarning, match=r'^1 groups stay larger than max_group_size=2 because Leiden found no split '
                                         r'\(near-duplicate documents\?\): groups \[0\], the largest of 3 '
                                         r'documents$'):
        path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), max_group_size=2)
    assert _meta(path)['partition']['over_limit'] == [0]


@pytest.mark.parametrize(('resolution', 'hint'), [
    (0.5, '; resolution=0.5 is below 1, which favours fewer and larger groups: raise it (the paper uses 1.0)'),
    (0.999, '; resolution=0.999 is below 1, which favours fewer and larger groups: raise it (the paper uses 1.0)'),
    (1.0, ''), (2.0, '')])
def test_a_resolution_below_one_is_named_as_a_cause(tmp_path, monkeypatch, resolution, hint):
    _fake_leiden(monkeypatch, [0, 0, 0, 1])
    with pytest.warns(UserWarning, match='stay larger') as caught:
        build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), max_group_size=2,
                          resolution=resolution)
    assert str(caught[0].message).endswith('groups [0], the largest of 3 documents' + hint)


def test_groups_at_the_limit_are_not_over_it(tmp_path, monkeypatch):
    _fake_leiden(monkeypatch, [0, 0, 1, 1])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS), max_group_size=2)
    assert _meta(path)['partition']['over_limit'] == []


def test_the_warning_lists_at_most_ten_groups(tmp_path, monkeypatch):
    n = 36  # twelve groups of three, limit 2: all twelve over, ten named
    docnos = [f'd{i:02d}' for i in range(n)]
    _fake_leiden(monkeypatch, [i // 3 for i in range(n)])
    with pytest.warns(UserWarning, match=r'^12 groups stay larger than max_group_size=2 .*: groups '
                                         r'\[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\], the largest of 3 documents$'):
        path = build_group_graph(tmp_path / 'g', docnos, np.zeros((n, 1), int), np.ones((n, 1)), max_group_size=2)
    assert _meta(path)['partition']['over_limit'] == list(range(12))


def test_the_build_time_is_recorded_in_seconds_to_the_millisecond(tmp_path, monkeypatch):
    import pyterrier_garen._group_builder as builder
    clock = iter([100.0, 101.23456])  # the start of the partition, then the writing of the record
    monkeypatch.setattr(builder, 'time', SimpleNamespace(time=lambda: next(clock)))
    assert _meta(_build(tmp_path / 'g'))['partition']['seconds'] == 1.235


def test_members_of_a_group_are_listed_in_id_order(tmp_path):
    # 16 documents d00..d15 in three groups by id modulo 3 (a sort that is not stable would mix each group's order)
    docnos = [f'd{i:02d}' for i in range(16)]
    labels = [i % 3 for i in range(16)]
    build_group_graph(tmp_path / 'g', docnos, np.zeros((16, 1), int), np.ones((16, 1)), labels=labels)
    assert _read(tmp_path / 'g', 'group_offsets.u64.np', '<u8') == [0, 6, 11, 16]
    members = [0, 3, 6, 9, 12, 15, 1, 4, 7, 10, 13, 2, 5, 8, 11, 14]
    assert _read(tmp_path / 'g', 'group_members.u32.np', '<u4') == members


def test_a_real_leiden_run_records_its_version_and_backend(tmp_path):
    path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))
    part = _meta(path)['partition']
    assert (part['backend'], part['version'], part['leiden_calls']) == ('igraph', 1, 1)
    assert sorted(part['stage_seconds']) == sorted(part['stage_cpu_seconds']) == ['leiden', 'split', 'symmetrise']


# -- an artifact already there -----------------------------------------------------------------------------------

def test_the_same_request_reuses_the_artifact_untouched(tmp_path):
    path = _build(tmp_path / 'g')
    before = (path / 'pt_meta.json').read_text()
    (path / 'marker').write_text('kept')  # a rebuild would not keep it
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert _build(tmp_path / 'g') == path
    assert (path / 'marker').read_text() == 'kept'
    assert (path / 'pt_meta.json').read_text() == before


def test_the_same_graph_given_in_another_order_is_the_same_request(tmp_path):
    path = _build(tmp_path / 'g')
    (path / 'marker').write_text('kept')
    # the same four documents listed a, b, c, d with positions renumbered by hand
    build_group_graph(tmp_path / 'g', ['a', 'b', 'c', 'd'], np.array(STORED_EDGES), np.array(STORED_WEIGHTS),
                      labels=[7, 3, 3, 5])
    assert (path / 'marker').exists()


@pytest.mark.parametrize(('change', 'diff'), [
    ({'max_group_size': 5}, "{'max_group_size': (20, 5)}"),
    ({'resolution': 2.0}, "{'resolution': (1.0, 2.0)}"),
    ({'randomness': 0.5}, "{'randomness': (0.001, 0.5)}"),
    ({'seed': 1, 'max_group_size': 3}, "{'max_group_size': (20, 3), 'seed': (42, 1)}"),
])
def test_other_parameters_are_refused_naming_the_differences(tmp_path, change, diff):
    path = _build(tmp_path / 'g')
    (path / 'marker').write_text('kept')
    with pytest.raises(FileExistsError) as info:
        _build(tmp_path / 'g', **change)
    assert str(info.value) == (f'{path} already holds a GroupCorpusGraph built differently (stored, requested): '
                               f'{diff}; pass overwrite=True (--overwrite) to rebuild it')
    assert (path / 'marker').exists()


def test_leiden_asked_for_where_labels_were_given_is_refused(tmp_path, monkeypatch):
    _fake_leiden(monkeypatch, [0, 0, 1, 1])
    _build(tmp_path / 'g')
    with pytest.raises(FileExistsError, match=r"\{'backend': \('given', 'igraph'\)\}; pass overwrite=True"):
        _build(tmp_path / 'g', labels=None)


def test_a_record_without_its_partition_is_refused_as_built_differently(tmp_path):
    path = _build(tmp_path / 'g')
    meta = _meta(path)
    del meta['partition']
    (path / 'pt_meta.json').write_text(json.dumps(meta))
    with pytest.raises(FileExistsError) as info:
        _build(tmp_path / 'g')
    assert str(info.value) == (f"{path} already holds a GroupCorpusGraph built differently (stored, requested): "
                               "{'max_group_size': (None, 20), 'resolution': (None, 1.0), 'randomness': (None, 0.001), "
                               "'seed': (None, 42), 'backend': (None, 'given')}; pass overwrite=True (--overwrite) to "
                               "rebuild it")


def test_another_graph_is_refused(tmp_path):
    path = _build(tmp_path / 'g')
    other = np.array(EDGES)
    other[0, 0] = 2  # c -> d instead of c -> a
    with pytest.raises(FileExistsError, match=r'built differently \(stored, requested\): other graph; pass'):
        build_group_graph(path, DOCNOS, other, np.array(WEIGHTS), labels=LABELS)
    with pytest.raises(FileExistsError, match='other graph'):  # another docno, the same edges
        build_group_graph(path, ['c', 'a', 'd', 'e'], np.array(EDGES), np.array(WEIGHTS), labels=LABELS)


def test_overwrite_rebuilds_with_the_new_request(tmp_path):
    path = _build(tmp_path / 'g')
    (path / 'summaries.partial.jsonl').write_text('')  # the summary store's own file: part of the artifact
    (path / 'summaries.partial.0123456789ab.jsonl').write_text('')  # a run the store set aside: part of it too
    (path / 'summaries.partial.0123456789ab.json').write_text('{}')
    _build(tmp_path / 'g', max_group_size=5, overwrite=True)
    assert _meta(path)['partition']['max_group_size'] == 5
    assert not (path / 'summaries.partial.jsonl').exists()
    assert not (path / 'summaries.partial.0123456789ab.jsonl').exists()
    # overwrite with the very same request rebuilds too: weights spoiled in place are written again
    np.zeros(8, dtype='<f2').tofile(path / 'weights.f16.np')
    _build(tmp_path / 'g', max_group_size=5, overwrite=True)
    assert _read(path, 'weights.f16.np', '<f2') == [w for row in STORED_WEIGHTS for w in row]


def test_overwrite_never_removes_a_users_file_in_the_folder(tmp_path):
    path = _build(tmp_path / 'g')
    (path / 'my_notes.txt').write_text('mine')
    (path / 'plots').mkdir()
    (path / 'summaries.partial.mine.jsonl').write_text('mine')  # not a name the store gives a run it sets aside
    with pytest.raises(FileExistsError, match=r'g holds files that are not part of the GroupCorpusGraph '
                                              r'\(my_notes\.txt, plots, summaries\.partial\.mine\.jsonl\); '
                                              r'overwrite=True replaces the whole folder, '
                                              'so move them out'):
        _build(tmp_path / 'g', max_group_size=5, overwrite=True)
    assert (path / 'my_notes.txt').read_text() == 'mine'
    assert _meta(path)['partition']['max_group_size'] == 20  # the artifact as it was


def test_a_rebuild_of_the_same_graph_from_other_weights_or_labels_is_refused(tmp_path):
    path = _build(tmp_path / 'g')
    with pytest.raises(FileExistsError, match=r'already holds a GroupCorpusGraph of this graph, built from other '
                                              r'weights; pass overwrite=True'):
        build_group_graph(path, DOCNOS, np.array(EDGES), np.array(WEIGHTS) * 2, labels=LABELS)
    with pytest.raises(FileExistsError, match=r'built from other labels \(another partition\)'):
        _build(path, labels=[3, 7, 7, 3])  # a joins d's group
    # the same partition under other label values is the same request: reused
    assert _build(path, labels=[10, 0, 2, 10]) == path
    # an artifact from before the weights were recorded: its stored weights are compared
    meta = _meta(path)
    del meta['weights_sha256']
    (path / 'pt_meta.json').write_text(json.dumps(meta))
    assert _build(path) == path
    with pytest.raises(FileExistsError, match='built from other weights'):
        build_group_graph(path, DOCNOS, np.array(EDGES), np.array(WEIGHTS) + 1, labels=LABELS)


def test_docnos_holding_newlines_are_told_apart(tmp_path):
    # joined by newlines, ['a\nb', 'c'] and ['a', 'b\nc'] would be the same text
    edges, weights = np.array([[1], [0]]), np.ones((2, 1))
    path = build_group_graph(tmp_path / 'g', ['a\nb', 'c'], edges, weights, labels=[0, 1])
    assert fingerprint(['a\nb', 'c'], edges) != fingerprint(['a', 'b\nc'], edges)
    with pytest.raises(FileExistsError, match='other graph'):
        build_group_graph(path, ['a', 'b\nc'], edges, weights, labels=[0, 1])
    # without a newline in any docno the recorded recipe is unchanged (every artifact built so far keeps its record)
    assert fingerprint(['a', 'b'], edges) == _sha(['a', 'b'], [[1], [0]])


def test_a_folder_of_another_kind_is_never_taken_for_the_artifact(tmp_path):
    for name, kind in (('g', {'type': 'corpus_graph', 'format': 'np_topk'}),
                       ('h', {'type': 'dense_index', 'format': 'garen_groups'})):
        (tmp_path / name).mkdir()
        (tmp_path / name / 'pt_meta.json').write_text(json.dumps(kind))
        with pytest.raises(ArtifactKindError, match=r'already exists and is not a corpus_graph\.garen_groups '
                                                    r'artifact \(a '):
            _build(tmp_path / name)
        assert json.loads((tmp_path / name / 'pt_meta.json').read_text()) == kind


def test_a_link_to_an_artifact_is_not_reused(tmp_path):
    """A link at the path is not read as an existing artifact: the build refuses the link itself."""
    real = _build(tmp_path / 'real')
    os.symlink(real, tmp_path / 'link')
    with pytest.raises(ArtifactKindError, match='is a symbolic link'):
        _build(tmp_path / 'link')
    assert (tmp_path / 'link').is_symlink()


def test_an_interrupted_swap_is_undone_before_comparing(tmp_path):
    """A rebuild killed between its two renames left the old artifact only as its backup: it is put back, then
    reused as the same request (not refused as "already there")."""
    path = _build(tmp_path / 'g')
    (path / 'marker').write_text('kept')
    (tmp_path / '.g.abcd1234.old').mkdir()
    os.rename(path, tmp_path / '.g.abcd1234.old' / 'artifact')
    with pytest.warns(UserWarning, match='the previous artifact was restored'):
        assert _build(tmp_path / 'g') == path
    assert (path / 'marker').read_text() == 'kept'


def test_an_artifact_of_another_partition_version_is_reused_with_a_warning(tmp_path, monkeypatch):
    _fake_leiden(monkeypatch, [0, 0, 1, 1])
    path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))
    meta = _meta(path)
    meta['partition']['version'] = 1
    monkeypatch.setattr(partition, 'PARTITION_VERSION', 2)
    # the stored version is compared like any parameter only through the warning (the request has no version key)
    (path / 'pt_meta.json').write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match=rf'^{re.escape(str(path))} holds groups made by partition version 1; this '
                                         r'pyterrier-garen makes version 2, which'):
        assert build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS)) == path
    del meta['partition']['version']  # no version recorded: version 1
    (path / 'pt_meta.json').write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match='partition version 1; '):
        build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))


def test_an_artifact_of_a_later_partition_version_is_reused_with_a_warning(tmp_path, monkeypatch):
    _fake_leiden(monkeypatch, [0, 0, 1, 1])
    path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))
    meta = _meta(path)
    meta['partition']['version'] = 3  # this one makes version 1
    (path / 'pt_meta.json').write_text(json.dumps(meta))
    with pytest.warns(UserWarning, match=r'holds groups made by partition version 3; this pyterrier-garen makes '
                                         r'version 1, which'):
        build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))


def test_an_artifact_of_this_version_is_reused_silently(tmp_path, monkeypatch):
    _fake_leiden(monkeypatch, [0, 0, 1, 1])
    path = build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))
    meta = _meta(path)
    del meta['partition']['version']  # no version recorded: version 1, this one
    (path / 'pt_meta.json').write_text(json.dumps(meta))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        build_group_graph(tmp_path / 'g', DOCNOS, np.array(EDGES), np.array(WEIGHTS))


def test_given_labels_are_reused_without_a_version_warning(tmp_path, monkeypatch):
    path = _build(tmp_path / 'g')
    monkeypatch.setattr(partition, 'PARTITION_VERSION', 2)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert _build(tmp_path / 'g') == path


# -- fingerprint -------------------------------------------------------------------------------------------------

def test_fingerprint_follows_the_documented_recipe():
    edges = np.array([[2, 3], [0, 2], [0, 1], [1, 3]], dtype=np.int64)
    assert fingerprint(['a', 'b', 'c', 'd'], edges) == _sha(['a', 'b', 'c', 'd'], STORED_EDGES)
    # the bytes: 'a\nb' then 1, 0 as little-endian uint32 (whatever the edges' own dtype)
    expected = hashlib.sha256(b'a\nb' + b'\x01\x00\x00\x00' + b'\x00\x00\x00\x00').hexdigest()
    assert fingerprint(['a', 'b'], np.array([[1], [0]], dtype=np.int8)) == expected
    assert fingerprint(('a', 'b'), np.array([[1, 0]], dtype=np.uint64).T) == expected
    # a non-contiguous view is hashed in logical order: rows [1], [0] from a transposed array
    assert fingerprint(['a', 'b'], np.array([[1, 0]]).T) == expected
    assert fingerprint(['é'], np.zeros((1, 0), int)) == hashlib.sha256('é'.encode()).hexdigest()


# -- graph_arrays ------------------------------------------------------------------------------------------------

def test_graph_arrays_of_a_group_corpus_graph(tmp_path):
    graph = GroupCorpusGraph(_build(tmp_path / 'g'))
    docnos, edges, weights = graph_arrays(graph)
    assert docnos == ['a', 'b', 'c', 'd']
    assert edges.tolist() == STORED_EDGES
    assert weights.tolist() == STORED_WEIGHTS
    assert weights.dtype == np.float32


def _lookup_folder(folder, docnos):
    from pyterrier_garen._graphs import write_docnos
    folder.mkdir()
    write_docnos(docnos, folder / 'docnos.npids')
    return folder


def test_graph_arrays_of_an_np_topk_graph(tmp_path):
    folder = _lookup_folder(tmp_path / 'np', ['z', 'x', 'y'])
    graph = SimpleNamespace(path=str(folder), edges_data=np.array([[1], [2], [0]], dtype=np.uint32),
                            weights_data=np.array([[0.5], [0.25], [1.0]], dtype=np.float16))
    docnos, edges, weights = graph_arrays(graph)
    assert docnos == ['z', 'x', 'y']
    assert edges.tolist() == [[1], [2], [0]]
    assert weights.tolist() == [[0.5], [0.25], [1.0]]
    assert weights.dtype == np.float32


def test_graph_arrays_of_any_corpus_graph_asks_each_node(tmp_path):
    folder = _lookup_folder(tmp_path / 'any', ['p', 'q', 'r'])
    asked = []

    class Graph:
        path = folder

        def neighbours(self, docid, weights=False):
            asked.append((docid, weights))
            return [(docid + 1) % 3, (docid + 2) % 3], [1.0 + docid, 0.5]
    docnos, edges, weights = graph_arrays(Graph())
    assert asked == [(0, True), (1, True), (2, True)]
    assert docnos == ['p', 'q', 'r']
    assert edges.tolist() == [[1, 2], [2, 0], [0, 1]]
    assert weights.tolist() == [[1.0, 0.5], [2.0, 0.5], [3.0, 0.5]]
    assert weights.dtype == np.float32


def test_graph_arrays_refuses_a_graph_without_a_docno_table(tmp_path):
    with pytest.raises(TypeError, match=r'has no docnos\.npids; pass a pyterrier_adaptive NpTopKCorpusGraph'):
        graph_arrays(SimpleNamespace(edges_data=np.zeros((1, 1))))
    with pytest.raises(TypeError, match=r'has no docnos\.npids'):
        graph_arrays(SimpleNamespace(path=str(tmp_path)))
    (tmp_path / 'docnos.npids').mkdir()  # a folder of that name is no table
    with pytest.raises(TypeError, match=r'has no docnos\.npids'):
        graph_arrays(SimpleNamespace(path=str(tmp_path)))


def test_graph_arrays_takes_a_group_graph_by_its_marks(tmp_path):
    """An object with ``docnos_list`` and ``group_of`` gives its own docnos (no docnos.npids is read)."""
    graph = SimpleNamespace(path=str(tmp_path), docnos_list=lambda: ['s', 't'], group_of=lambda d: 0,
                            edges_data=np.array([[1], [0]], dtype=np.uint32), weights_data=np.array([[1.0], [0.5]]))
    docnos, edges, weights = graph_arrays(graph)
    assert docnos == ['s', 't']
    assert edges.tolist() == [[1], [0]]
    assert weights.tolist() == [[1.0], [0.5]]
    assert weights.dtype == np.float32


def test_graph_arrays_needs_both_marks_of_a_group_graph(tmp_path):
    """Only an object with both ``docnos_list`` and ``group_of`` takes the GroupCorpusGraph path."""
    folder = _lookup_folder(tmp_path / 'np', ['u', 'v'])
    for extra in ({'docnos_list': lambda: ['wrong']}, {'group_of': lambda d: 0}):
        graph = SimpleNamespace(path=folder, edges_data=np.array([[1], [0]]), weights_data=np.ones((2, 1)), **extra)
        assert graph_arrays(graph)[0] == ['u', 'v']


# -- the docno table: look-ups and checks on hand-built lookups --------------------------------------------------

class _Stub:
    """An npids-like lookup of ``docnos`` whose inverse answers ``answers`` (docno -> id); a batch holding one of
    ``batch_fails`` raises, as npids does for a non-numeric key in an integer codec; single keys not answered raise
    LookupError (a ``ValueError`` for those in ``value_errors``)."""

    def __init__(self, docnos, answers, batch_fails=(), value_errors=()):
        self.docnos, self.answers = list(docnos), dict(answers)
        self.batch_fails, self.value_errors = set(batch_fails), set(value_errors)
        self.asked = []
        outer = self

        class Fwd:
            def __getitem__(self, ids):
                return np.array([outer.docnos[i] for i in ids], dtype=object)

        class Inv:
            def __getitem__(self, keys):
                outer.asked.append(keys)
                if isinstance(keys, list):
                    if outer.batch_fails & set(keys):
                        raise ValueError('invalid literal for int()')
                    return [outer.answers.get(k, -1) for k in keys]
                if keys in outer.value_errors:
                    raise ValueError(f'bad key {keys!r}')
                if keys not in outer.answers:
                    raise LookupError(f'{keys!r} not found')
                return outer.answers[keys]
        self.fwd, self.inv = Fwd(), Inv()

    def __len__(self):
        return len(self.docnos)


def test_lookup_ids_of_no_docnos_is_an_empty_int64_array():
    from pyterrier_garen._graphs import lookup_ids
    ids = lookup_ids(_Stub(['a', 'b', 'c'], {}), [])
    assert ids.shape == (0,)
    assert ids.dtype == np.int64


def test_lookup_ids_answers_minus_one_outside_0_to_n_minus_1():
    from pyterrier_garen._graphs import lookup_ids
    stub = _Stub(['a', 'b', 'c'], {'a': 0, 'c': 2, 'far': 3, 'farther': 7, 'neg': -4})
    ids = lookup_ids(stub, ['c', 'far', 'neg', 'a', 'farther', 'none'])
    assert ids.tolist() == [2, -1, -1, 0, -1, -1]
    assert ids.dtype == np.int64
    assert stub.asked == [['c', 'far', 'neg', 'a', 'farther', 'none']]  # one batch


def test_lookup_ids_asks_one_by_one_when_the_batch_fails():
    from pyterrier_garen._graphs import lookup_ids
    stub = _Stub(['a', 'b', 'c'], {'a': 0, 'b': 1, 'c': 2, 'far': 3}, batch_fails={'x1'}, value_errors={'x1'})
    assert lookup_ids(stub, ['b', 'x1', 'gone', 'c', 'far']).tolist() == [1, -1, -1, 2, -1]
    assert stub.asked == [['b', 'x1', 'gone', 'c', 'far'], 'b', 'x1', 'gone', 'c', 'far']


def test_lookup_ids_asks_for_docnos_as_text():
    from pyterrier_garen._graphs import lookup_ids
    stub = _Stub(['7', '8'], {'7': 0, '8': 1})
    assert lookup_ids(stub, [8, 7]).tolist() == [1, 0]
    assert stub.asked == [['8', '7']]


def test_check_docnos_names_the_first_five_that_do_not_round_trip():
    from pyterrier_garen._graphs import check_docnos
    docnos = ['a', 'b', 'c', 'd', 'e', 'f', 'g']
    # a<->b, c<->d and e<->f swapped: six of seven wrong; g right
    stub = _Stub(docnos, {'a': 1, 'b': 0, 'c': 3, 'd': 2, 'e': 5, 'f': 4, 'g': 6})
    message = (r"^6 of 7 docnos do not round-trip through the npids lookup \(e\.g\. \['a', 'b', 'c', 'd', 'e'\]\); "
               r"rebuild the artifact")
    with pytest.raises(ValueError, match=message):
        check_docnos(stub)  # the docnos read from the lookup itself
    with pytest.raises(ValueError, match=message):
        check_docnos(stub, docnos)
    with pytest.raises(ValueError, match=r"^1 of 2 docnos .* \(e\.g\. \['b'\]\)"):
        check_docnos(_Stub(['a', 'b'], {'a': 0, 'b': -1}))
    check_docnos(_Stub(['a', 'b'], {'a': 0, 'b': 1}))  # all round-trip: no error


# -- the docno table: writing ------------------------------------------------------------------------------------

TRAP = [str(i) for i in range(1, 375)] + [str(i) for i in range(377, 426)]  # npids' intsequencemulti loses some


def _read_back(path, count):
    from npids import Lookup
    with Lookup(str(path)) as lookup:
        return ([str(d) for d in lookup.fwd[list(range(count))]], [c.fmt.NAME for c in lookup.fwd.codecs],
                repr(lookup.inv.codec).split(' ')[0])


def test_integer_runs_keep_npids_forward_blocks_with_a_hash_inverse(tmp_path):
    from pyterrier_garen._graphs import write_docnos
    write_docnos(TRAP, tmp_path / 'd.npids')
    docnos, blocks, inverse = _read_back(tmp_path / 'd.npids', len(TRAP))
    assert docnos == TRAP
    assert (blocks, inverse) == (['intsequence', 'intsequence'], 'hash')
    from npids import Lookup
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        assert lookup.inv[['1', '374', '377', '425', '375', '0']] == [0, 373, 374, 422, -1, -1]


def test_one_integer_run_is_written_byte_for_byte_as_npids_writes_it(tmp_path):
    """A single run keeps npids' own inverse: the file equals npids' own build (forward and inverse once)."""
    from npids import Lookup

    from pyterrier_garen._graphs import write_docnos
    docnos = [f'doc{i}' for i in range(300)]  # past one block of seeds: written by npids' own builder
    write_docnos(docnos, tmp_path / 'ours.npids')
    Lookup.build(docnos, str(tmp_path / 'npids.npids'), return_self=False)
    assert (tmp_path / 'ours.npids').read_bytes() == (tmp_path / 'npids.npids').read_bytes()
    assert _read_back(tmp_path / 'ours.npids', 300)[1:] == (['intsequence'], 'intsequence')


def test_the_check_compares_with_the_docnos_given(tmp_path):
    """A forward writer that stores other docnos is caught, even when they round-trip among themselves."""
    from pyterrier_garen._graphs import _write_fixed, _write_lookup

    def wrong(docnos, path):
        _write_fixed(['x', 'y'], path)
    with pytest.raises(ValueError, match=r"^2 of 2 docnos do not round-trip .*\(e\.g\. \['a', 'b'\]\)"):
        _write_lookup(['a', 'b'], tmp_path / 'd.npids', wrong)


def test_the_fixed_layout_cuts_a_common_prefix_inside_a_character(tmp_path):
    """'qä' and 'qö' share b'q\\xc3': the prefix is 'q' (the half character dropped), each rest 2 bytes."""
    from npids import Lookup

    from pyterrier_garen._graphs import _write_fixed
    _write_fixed(['qä', 'qö'], tmp_path / 'd.npids')
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        assert [str(d) for d in lookup.fwd[[0, 1]]] == ['qä', 'qö']
        assert lookup.fwd.codecs[0].fmt.config() == {'length': 3, 'prefix': 'q'}


# eight hex digits of i * 2654435761 mod 2**32 (Knuth's multiplicative hash): the first, 9e3779b1, ends in 'b1', so
# npids picks lower-case hexdigest
HEXES = [(i * 2654435761) % 2 ** 32 for i in range(1, 301)]


@pytest.mark.parametrize(('docnos', 'vectorised'), [
    ([f'{h:08x}' for h in HEXES], True),  # lower-case hex, past the seeds too
    ([f'{h:08x}' for h in HEXES] + ['0000000X'], False),  # an X is no hex digit
    ([f'{h:08X}' for h in HEXES] + ['0000000X'], False),
    (sorted(f'd{i}' for i in range(1, 300)) + ['d07'], False),  # intstored: a leading zero would print as d7
    (sorted(f'd{i}' for i in range(1, 300)) + ['e5'], False),  # another prefix
    (sorted(f'd{i}' for i in range(1, 300)) + ['d٣'], False),  # a digit, but not ASCII
    (sorted(str(i) for i in range(256)) + ['256'], False),  # one byte holds 0..255
    (sorted(str(i) for i in range(256)), True),
    ([f'q{i:03d}{chr(97 + i % 26)}' for i in range(256)] + ['q123abcdef', 'q123abcdeg'], False),  # fixedbytes: longer
    ([f'q{i:03d}{chr(97 + i % 26)}' for i in range(256)] + ['z', 'y'], False),  # fixedbytes: another prefix
])
def test_docnos_past_the_seeds_that_the_block_cannot_hold_are_left_to_npids(tmp_path, docnos, vectorised):
    from pyterrier_garen._graphs import _write_forward, write_docnos
    assert _write_forward(docnos, tmp_path / 'f.npids') is vectorised
    assert (tmp_path / 'f.npids').exists() is vectorised
    write_docnos(docnos, tmp_path / 'd.npids')
    assert _read_back(tmp_path / 'd.npids', len(docnos))[0] == docnos


# -- repair_docnos -----------------------------------------------------------------------------------------------

def test_repair_leaves_a_working_lookup_alone(tmp_path):
    from npids import Lookup

    from pyterrier_garen._graphs import repair_docnos
    Lookup.build(['b', 'a', 'c'], str(tmp_path / 'd.npids'), return_self=False)
    before = (tmp_path / 'd.npids').read_bytes()
    assert repair_docnos(tmp_path / 'd.npids') is False
    assert (tmp_path / 'd.npids').read_bytes() == before


def test_repair_rewrites_a_lookup_that_loses_docnos(tmp_path):
    from npids import Lookup

    from pyterrier_garen._graphs import repair_docnos
    Lookup.build(TRAP, str(tmp_path / 'd.npids'), return_self=False)  # npids' own choice: intsequencemulti
    assert _read_back(tmp_path / 'd.npids', len(TRAP))[2] == 'intsequencemulti'
    assert repair_docnos(str(tmp_path / 'd.npids')) is True
    docnos, blocks, inverse = _read_back(tmp_path / 'd.npids', len(TRAP))
    assert docnos == TRAP  # same ids
    assert inverse == 'hash'
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        assert lookup.inv[['1', '374', '377', '425']] == [0, 373, 374, 422]
    assert repair_docnos(tmp_path / 'd.npids') is False  # repaired once


def test_repair_names_the_lookup_when_the_disk_is_full(tmp_path, monkeypatch):
    import errno

    from npids import Lookup

    import pyterrier_garen._graphs as graphs
    Lookup.build(TRAP, str(tmp_path / 'd.npids'), return_self=False)

    def full(docnos, path):
        raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(graphs, 'write_docnos', full)
    with pytest.raises(OSError, match=rf"^cannot write {re.escape(str(tmp_path / 'd.npids'))}: no space left on "
                                      r'device; '):
        graphs.repair_docnos(tmp_path / 'd.npids')


# -- found by this run and mended: a docno table npids cannot read back, a number too long for its codec ----------


def test_a_block_npids_cannot_read_back_falls_back_to_the_fixed_layout(tmp_path):
    """After npids' first 256 docnos, a block of a single odd docno made npids' reader divide by zero: the build of
    the artifact failed. The fail-safe layout holds any docnos."""
    from npids import Lookup

    from pyterrier_garen._graphs import write_docnos
    docnos = [f'doc{i}x' for i in range(300)] + ['zdoc']
    write_docnos(docnos, tmp_path / 'd.npids')
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        assert [str(d) for d in lookup.fwd[[0, 299, 300]]] == ['doc0x', 'doc299x', 'zdoc']
    graph = GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, np.array([[(i + 1) % 301] for i in range(301)]),
                                         np.ones((301, 1)), labels=[0] * 301)
    assert graph.doc_id('zdoc') == 300
    assert graph.neighbours('zdoc').tolist() == ['doc0x']  # 'zdoc' sorts last; its neighbour is the first


def test_a_number_longer_than_the_integer_codec_is_not_in_the_lookup(tmp_path):
    from npids import Lookup

    from pyterrier_garen._graphs import lookup_ids, write_docnos
    write_docnos([str(i) for i in range(5, 10)], tmp_path / 'd.npids')
    with Lookup(str(tmp_path / 'd.npids')) as lookup:
        assert lookup_ids(lookup, ['1' * 23, '7', '5']).tolist() == [-1, 2, 0]


def test_a_number_with_a_leading_zero_is_another_docno(tmp_path):
    """npids' integer inverses parse the number, so '00006' found the document '6'. Neither the one-at-a-time route
    nor the batch route answers it now."""
    graph = GroupCorpusGraph.from_arrays(tmp_path / 'g', ['5', '6', '7', '8', '9'],
                                         np.array([[1], [2], [3], [4], [0]]), np.ones((5, 1)), labels=[0, 0, 1, 1, 1])
    assert (graph.doc_id('00006'), graph.group_of('00006'), graph.neighbours('00006').tolist()) == (-1, -1, [])
    assert graph.doc_ids(['00006', '6', '06', '0', '9']).tolist() == [-1, 1, -1, -1, 4]
    from pyterrier_garen._graphs import lookup_ids
    assert lookup_ids(graph._docnos, ['00006', '6'] * 150).tolist() == [-1, 1] * 150  # npids' batch route


def test_no_neighbour_column_bad_labels_and_bad_settings_are_refused_before_anything_is_built(tmp_path):
    path = tmp_path / 'g'
    with pytest.raises(ValueError, match=r'^edges \(4, 0\) hold no neighbour per document \(k = 0\); give each '
                                         'document at least one'):
        build_group_graph(path, DOCNOS, np.zeros((4, 0), int), np.zeros((4, 0)), labels=LABELS)
    with pytest.raises(ValueError, match=r'^labels must hold one group label per document \(4\), a flat sequence; '
                                         r'got one of shape \(4, 2\)$'):
        _build(path, labels=np.array([LABELS, LABELS]).T)
    with pytest.raises(ValueError, match=r'^labels\[2\] is missing \(None or NaN; 1 like this\)'):
        _build(path, labels=[3, 7, None, 3])
    with pytest.raises(ValueError, match=r'^labels mix numbers and str'):
        _build(path, labels=[3, 'x', 5, 3])
    for setting, message in (({'max_group_size': 0}, 'max_group_size must be a positive integer, got 0'),
                             ({'seed': 'abc'}, "seed must be an integer, got 'abc'"),
                             ({'resolution': -1}, 'resolution must be a finite number > 0, got -1')):
        with pytest.raises(ValueError, match=re.escape(message)):
            _build(path, **setting)
    with pytest.raises(ValueError, match=re.escape('max_group_size must be an integer >= 2, got 1')):
        build_group_graph(path, DOCNOS, np.array(EDGES), np.array(WEIGHTS), max_group_size=1)  # Leiden needs 2
    assert not path.exists()
    # texts as labels are one kind: kept
    assert _read(_build(path, labels=['x', 'z', 'y', 'x']), 'group_of.u32.np', '<u4') == GROUP_OF
