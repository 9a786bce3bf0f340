"""GAREN's cheap bookkeeping (pyterrier_garen._garen_state, the driver's cursors and model-call fast path) against
the plain definitions it replaces: every answer must be the one the definition gives."""
import math
import sys
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from _toy_graph import HashScorer, ToyGroupGraph

from pyterrier_garen import GAREN, GroupCorpusGraph
from pyterrier_garen._driver import QueryState, _call
from pyterrier_garen._frames import first_stage
from pyterrier_garen._garen import _by_vote_then_rank
from pyterrier_garen._garen_state import GARENState, GroupView, _native, by_value


class DocnoOnly:
    """A group graph seen only through its docno interface (no ids, no groups_of): GAREN's generic route."""

    def __init__(self, graph):
        self.graph = graph

    def neighbours(self, docno):
        return self.graph.neighbours(docno)

    def group_of(self, docno):
        return self.graph.group_of(docno)

    def group_members(self, gid):
        return self.graph.group_members(gid)

    def summary(self, gid):
        return self.graph.summary(gid)


@pytest.fixture(scope='module')
def graph(tmp_path_factory):
    """150 documents, k=6, groups of 1 to 14 members; some rows padded with the document itself or repeating a
    neighbour (as short neighbour lists are stored)."""
    rng = np.random.default_rng(5)
    n, k = 150, 6
    edges = np.array([rng.choice([j for j in range(n) if j != i], k, replace=False) for i in range(n)])
    edges[::7, -2:] = np.arange(n)[::7, None]  # padding: the document itself
    edges[3::11, -1] = edges[3::11, 0]  # a neighbour listed twice
    sizes = rng.integers(1, 15, 40)
    labels = np.repeat(np.arange(len(sizes)), sizes)[:n]
    labels = np.concatenate([labels, np.full(n - len(labels), len(sizes))])
    rng.shuffle(labels)
    docnos = [f'd{i:03d}' for i in range(n)]
    return GroupCorpusGraph.from_arrays(tmp_path_factory.mktemp('state') / 'groups', docnos, edges,
                                        np.ones((n, k), dtype=np.float32), labels=labels)


def first_stages(seed=0):
    rng = np.random.default_rng(seed)
    docs = [f'd{i:03d}' for i in range(150)]
    frames = []
    for q in range(4):
        ranked = list(rng.choice(docs, 60, replace=False)) + ['zz1', 'zz2']  # two documents outside the graph
        rng.shuffle(ranked)
        frames.append(pd.DataFrame({'qid': f'q{q}', 'query': f'query {q}', 'docno': ranked,
                                    'score': np.arange(len(ranked), 0, -1, dtype=float)}))
    return pd.concat(frames, ignore_index=True)


OPTIONS = [{}, dict(final_order='paper'), dict(strategy='explore'), dict(strategy='exploit', group_budget=2),
           dict(evidence_weight=0.7), dict(interleave=3), dict(switch_members=2), dict(member_order='evidence'),
           dict(feedback=0.5), dict(link_feedback=0.7, dropped_vote=0.5), dict(dropped_vote=0.), dict(fusion=0.4),
           dict(group_budget=0), dict(propagate=False, budget=25)]


def _items(trace):
    """A trace with every dict as its list of items, so that the order of candidates counts too."""
    def plain(x):
        if isinstance(x, dict):
            return [(k, plain(v)) for k, v in x.items()]
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x
    return [plain(step) for step in trace]


@pytest.mark.parametrize('options', OPTIONS, ids=[str(o) or 'defaults' for o in OPTIONS])
def test_the_id_route_equals_the_docno_route(graph, options):
    """On a GroupCorpusGraph, GAREN reads neighbours' groups from the id arrays; through the docno interface alone
    it must rank, count and trace exactly the same."""
    assert GroupView(graph)._native
    assert not GroupView(DocnoOnly(graph))._native
    inp = first_stages()
    params = {**dict(window=10, keep=5, budget=40, group_budget=4, tau_switch=2, trace=True), **options}
    fast = GAREN(HashScorer(), graph, HashScorer('navigator'), **params)
    plain = GAREN(HashScorer(), DocnoOnly(graph), HashScorer('navigator'), **params)
    pd.testing.assert_frame_equal(fast(inp), plain(inp))
    pd.testing.assert_frame_equal(fast.last_stats, plain.last_stats)
    assert _items(fast.last_trace) == _items(plain.last_trace)
    assert any(step.get('expansion') for step in fast.last_trace)


def test_neighbour_groups_are_the_docno_routes_tuples(graph):
    view = GroupView(graph)
    docnos = [f'd{i:03d}' for i in range(150)] + ['zz1']
    view.prime(docnos)
    for docno in docnos:  # the same tuple, order included, as set(map(group_of, N_k(d))) - {-1} over docnos
        neighbours = [str(n) for n in graph.neighbours(docno)] if docno != 'zz1' else []
        expected = tuple(set(map(graph.group_of, dict.fromkeys(n for n in neighbours if n != docno))) - {-1})
        assert view.neighbour_groups[docno] == expected
    assert view.neighbour_groups['zz1'] == ()


def test_neighbour_groups_persist_on_the_graph_across_calls(graph):
    """The memo lives on the GroupCorpusGraph: a second call finds it filled and ranks exactly as the first."""
    inp = first_stages()
    garen = GAREN(HashScorer(), graph, HashScorer('navigator'), window=10, keep=5, budget=40, group_budget=4)
    graph._neighbour_groups_cache.clear()  # the graph is shared by this module's tests
    first = garen(inp)
    memo = dict(graph._neighbour_groups_cache)
    assert memo  # filled by the first call's expansion steps
    assert GroupView(graph).neighbour_groups is graph._neighbour_groups_cache
    pd.testing.assert_frame_equal(garen(inp), first)
    assert {d: memo[d] for d in memo} == {d: graph._neighbour_groups_cache[d] for d in memo}  # entries never change


def test_first_stage_groups_come_from_the_graphs_memo_the_second_time(graph, monkeypatch):
    docnos = [f'd{i:03d}' for i in range(0, 150, 3)] + ['zz1']
    expected = [graph.group_of(d) for d in docnos]
    graph._group_cache.clear()
    assert GroupView(graph).groups_of(docnos) == expected  # one vectorised look-up, which fills the memo
    assert all(graph._group_cache[d] == g for d, g in zip(docnos, expected))

    def no_lookup(_):
        raise AssertionError('the memo should have answered')
    monkeypatch.setattr(graph, 'groups_of', no_lookup)
    assert GroupView(graph).groups_of(docnos) == expected


def test_group_sizes_and_members(graph):
    for view in (GroupView(graph), GroupView(DocnoOnly(graph))):
        for gid in range(graph.num_groups):
            assert view.sizes[gid] == view.size(gid) == len(graph.group_members(gid)) == int(graph.group_sizes[gid])
            assert view.members(gid) == graph.group_members(gid)


def test_bookkeeping_follows_the_definitions_as_the_search_grows():
    """is_open, pool, fill_groups and unobserved_r0 after each growth step equal their definitions."""
    rng = np.random.default_rng(3)
    docs = [f'x{i}' for i in range(80)]
    labels = {d: int(rng.integers(0, 12)) if i % 9 else -1 for i, d in enumerate(docs)}  # some without a group
    groups = ToyGroupGraph({}, {d: g for d, g in labels.items() if g != -1})
    r0 = list(rng.choice(docs, 50, replace=False))
    state = GARENState(r0, lambda d: [])
    view = GroupView(groups)
    state.start(view)
    assert state.best_rank == {g: min(i for i, d in enumerate(r0) if groups.group_of(d) == g)
                               for g in {groups.group_of(d) for d in r0}}
    order = list(rng.permutation(docs))
    for step in range(0, 80, 7):
        for docno in order[step:step + 7]:
            state.observed.setdefault(docno, step)
        for gid in rng.choice(12, 2).tolist():
            state.cache[gid] = 0.5
        for gid in range(12):
            members = groups.group_members(gid) if gid in groups.members else []
            assert state.is_open(view, gid) == any(d not in state.observed for d in members)
            if members:
                rank0 = {d: i for i, d in enumerate(r0)}
                ordered = sorted((d for d in members if d in rank0), key=rank0.get) + \
                    [d for d in members if d not in rank0]
                assert state.pool(view, gid) == [d for d in ordered if d not in state.observed]
        assert list(state.unobserved_r0()) == [d for d in r0 if d not in state.observed]
        plain_fill = [groups.group_of(d) for d in r0 if d not in state.observed]
        useful = [g for g in plain_fill if g != -1 and g not in state.cache]
        assert [g for g in state.fill_groups() if g != -1 and g not in state.cache] == useful


def test_by_vote_then_rank_is_the_tuple_sort():
    rng = np.random.default_rng(4)
    for _ in range(50):
        gids = rng.choice(200, 40, replace=False).tolist()
        votes = {g: int(rng.integers(1, 5)) for g in gids}
        best_rank = {g: int(rng.integers(0, 8)) for g in gids[::2]}  # ties in rank, groups without one
        best_rank.update({g: math.inf for g in gids[1::7]})  # an explicit inf ties with the absent ones
        scored = {g: 0. for g in gids[::5]}
        expected = sorted((g for g in votes if g not in scored),
                          key=lambda g: (-votes[g], best_rank.get(g, math.inf), g))
        assert list(_by_vote_then_rank(votes, scored, best_rank)) == expected


# ---------------------------------------------------------------------------------------------------------------------
# the driver: one model call, answered in order (fast path) or by matching qid/docno strings

class Rows(pt.Transformer):
    """Scores each row by a hash of (qid, docno); ``reverse`` returns the rows in reverse order, ``qid_as_str``
    turns the qids into strings, ``by_row`` scores by row position instead."""

    def __init__(self, reverse=False, qid_as_str=False, by_row=False):
        self.reverse, self.qid_as_str, self.by_row = reverse, qid_as_str, by_row

    def transform(self, inp):
        scores = np.arange(len(inp), dtype=float) if self.by_row else \
            [hash((str(q), str(d))) % 1000 / 7 for q, d in zip(inp.qid, inp.docno)]
        out = inp.assign(score=scores)
        if self.qid_as_str:
            out = out.assign(qid=out.qid.astype(str))
        return out.iloc[::-1] if self.reverse else out


def _requests(qids):
    return [(q, f'query {q}', {'docno': [f'd{i}' for i in range(j, j + 5)]}) for j, q in enumerate(qids)]


@pytest.mark.parametrize('qids', [['q1', 'q2', 'q3'], [1, 2, 3]])
def test_model_call_in_order_equals_matching_by_strings(qids):
    requests = _requests(qids)
    expected = _call(Rows(reverse=True), requests, 'reranker')  # reversed rows: matched by qid/docno strings
    for model in (Rows(), Rows(qid_as_str=True)):
        got = _call(model, requests, 'reranker')
        assert [a.tolist() for a in got] == [b.tolist() for b in expected]


def test_model_call_repeated_rows_get_the_first_answer():
    """A window that holds a docno twice: both rows get the first returned score (matching keeps the first)."""
    got = _call(Rows(by_row=True), [('q', 'query', {'docno': ['a', 'b', 'a']})], 'reranker')
    assert got[0].tolist() == [0., 1., 0.]
    got = _call(Rows(by_row=True), [('1', 'x', {'docno': ['a']}), (1, 'y', {'docno': ['a']})], 'reranker')
    assert [a.tolist() for a in got] == [[0.], [0.]]  # qid '1' and 1 read the same


def test_model_call_missing_scores_are_counted_in_both_routes():
    class Holes(Rows):
        def transform(self, inp):
            return inp.assign(score=[np.nan] + [1.] * (len(inp) - 1))
    for model in (Holes(), Holes() >> pt.apply.generic(lambda df: df.iloc[::-1])):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter('always')
            got = _call(model, _requests(['q1', 'q2']), 'reranker')
        assert got[0][0] == -np.inf
        assert np.isfinite(np.concatenate(got)[1:]).all()
        assert any('1 NaN or infinite, 0 missing' in str(w.message) for w in caught)


# ---------------------------------------------------------------------------------------------------------------------
# the first stage, read without a frame per query

@pytest.mark.parametrize('qids', [[3, 1, 2], ['b', 'a', 'c'], [1, 'a', 2.5]])
def test_first_stage_equals_groupby(qids):
    rng = np.random.default_rng(1)
    rows = [(q, f'query {q}', int(rng.integers(0, 40)), float(rng.random()), int(r))
            for q in qids for r in rng.permutation(30)]
    inp = pd.DataFrame(rows, columns=['qid', 'query', 'docno', 'score', 'rank'])
    for frame in (inp, inp.drop(columns='rank')):  # a frame with neither column is refused (test_frames_first_stage)
        order = [c for c in ('rank', 'score') if c in frame.columns][:1]
        ref = frame.sort_values(order, ascending='rank' in order, kind='stable')
        ref = ref.assign(docno=ref['docno'].astype(str))
        ref = ref[~ref.duplicated(['qid', 'docno']).to_numpy()]
        expected = [(type(q), q, g['query'].iloc[0], g['docno'].tolist()) for q, g in ref.groupby('qid', sort=False)]
        with warnings.catch_warnings():
            warnings.simplefilter('ignore')  # the duplicate docnos
            got = [(type(q), q, query, docnos) for q, query, docnos in first_stage(frame)]
        assert got == expected
    assert first_stage(inp.iloc[:0]) == []


def test_query_state_rank0():
    state = QueryState(['a', 'b', 'c'], lambda d: [])
    assert state.rank0 == {'a': 0, 'b': 1, 'c': 2}


def test_by_value_is_the_tuple_sort():
    rng = np.random.default_rng(6)
    for _ in range(50):
        gids = rng.choice(300, int(rng.integers(0, 40)), replace=False).tolist()
        values = {g: float(rng.choice([0.1, 0.5, -0.0, 0.0, -math.inf, rng.random()])) for g in gids}  # ties
        votes = {g: int(rng.integers(1, 4)) for g in gids[::2]}
        best_rank = {g: int(rng.integers(0, 5)) for g in gids[::3]}
        expected = sorted(gids, key=lambda g: (-values[g], -votes.get(g, 0), best_rank.get(g, math.inf), g))
        assert by_value(gids, values.__getitem__, votes, best_rank) == expected


def test_memos_stay_within_the_graphs_limit_and_never_change_a_result(graph):
    """A long-running process: the graph empties a memo once it exceeds memo_limit, and rankings stay the same."""
    from pyterrier_garen import GroupCorpusGraph
    assert GroupCorpusGraph.memo_limit == 1_000_000
    inp = first_stages()
    garen = GAREN(HashScorer(), graph, HashScorer('navigator'), window=10, keep=5, budget=40, group_budget=4)
    graph.clear_caches()
    assert all(not graph.__dict__.get(name) for name in graph._MEMOS)
    unbounded = garen(inp)
    sizes = {name: len(graph.__dict__[name]) for name in graph._MEMOS}
    assert min(sizes.values()) > 8  # every memo was used
    try:
        graph.memo_limit = max(sizes.values())  # the largest memo exactly at the limit: nothing emptied
        assert graph.trim_caches() == []
        assert {name: len(graph.__dict__[name]) for name in graph._MEMOS} == sizes
        graph.memo_limit = 8
        assert sorted(graph.trim_caches()) == sorted(graph._MEMOS)  # all over 8: emptied, in place
        assert all(len(graph.__dict__[name]) == 0 for name in graph._MEMOS)
        assert GroupView(graph).neighbour_groups is graph._neighbour_groups_cache
        for _ in range(2):  # memos emptied again and again during the calls
            pd.testing.assert_frame_equal(garen(inp), unbounded)
        ids = graph._id_cache
        for i in range(150):  # one miss at a time: never more than the limit plus the entry being added
            assert graph.doc_id(f'd{i:03d}') == i
            assert len(ids) <= 9
        assert graph.doc_ids([f'd{i:03d}' for i in range(20)]).tolist() == list(range(20))  # a batch past the limit
        assert [graph.group_member_ids(g).size for g in range(graph.num_groups)] == \
            [len(graph.group_members(g)) for g in range(graph.num_groups)]
        assert len(graph._member_cache) <= 9
        graph.memo_limit = None
        graph.doc_ids([f'd{i:03d}' for i in range(150)])
        assert graph.trim_caches() == []
        assert len(graph._id_cache) == 150
    finally:
        graph.memo_limit = GroupCorpusGraph.memo_limit
    graph.clear_caches()
    pd.testing.assert_frame_equal(garen(inp), unbounded)


class Vectorised(ToyGroupGraph):
    """A graph of the user's own (not a GroupCorpusGraph) that offers a vectorised ``groups_of``."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls = []

    def groups_of(self, docnos):
        self.calls.append(list(docnos))
        return np.array([self.groups.get(d, -1) for d in docnos])

    def group_of(self, docno):
        raise AssertionError('groups_of should have answered')


def test_a_users_graph_with_groups_of_is_asked_once_for_every_docno():
    groups = Vectorised({}, {'a': 0, 'b': 1, 'c': 1})
    view = GroupView(groups)
    assert not view._native
    assert view.groups_of(['c', 'zz', 'a']) == [1, -1, 0]  # by hand: c is in group 1, zz in none, a in group 0
    assert groups.calls == [['c', 'zz', 'a']]
    state = GARENState(['b', 'zz', 'a', 'c'], lambda d: [])
    state.start(view)
    assert state.r0_groups == [1, -1, 0, 1]
    assert state.best_rank == {1: 0, -1: 1, 0: 2}  # each group's best (first) rank in R_0


def test_a_group_the_graph_does_not_have_has_no_members(graph):
    """On a GroupCorpusGraph the size comes from the offsets; ids outside 0..G-1 have none (no IndexError)."""
    view = GroupView(graph)
    last = graph.num_groups - 1
    assert [view.size(g) for g in (-1, last + 1, last + 5)] == [0, 0, 0]
    assert view.size(last) == len(graph.group_members(last)) > 0
    assert view.size(0) == len(graph.group_members(0)) > 0


def test_a_group_without_a_summary_reads_as_empty_text():
    class NoSummary(ToyGroupGraph):
        def summary(self, gid):
            return None if gid == 0 else 'group one'
    view = GroupView(NoSummary({}, {'a': 0, 'b': 1}))
    assert (view.summary(0), view.summary(1)) == ('', 'group one')


def test_without_the_group_graph_module_no_graph_is_native(graph, monkeypatch):
    """GAREN with a user's graph must not need pyterrier_garen._group_graph (imported lazily) to be loaded."""
    assert _native(graph)
    monkeypatch.delitem(sys.modules, 'pyterrier_garen._group_graph')
    assert not _native(ToyGroupGraph({}, {'a': 0}))
    assert not _native(graph)  # without the module there is no class to compare with


def test_a_one_member_group_is_open_until_its_member_is_observed():
    groups = ToyGroupGraph({}, {'a': 0, 'b': 1, 'c': 1})
    view, state = GroupView(groups), GARENState(['a', 'b'], lambda d: [])
    assert [state.is_open(view, g) for g in (0, 1)] == [True, True]
    state.observed['a'] = 0
    assert [state.is_open(view, g) for g in (0, 1)] == [False, True]
    state.observed['b'] = 0
    assert [state.is_open(view, g) for g in (0, 1)] == [False, True]  # c is still unobserved
    state.observed['zz'] = 0  # a document outside the graph counts for no group
    state.observed['c'] = 1
    assert [state.is_open(view, g) for g in (0, 1)] == [False, False]
    assert state.observed_in == {0: 1, 1: 2}
