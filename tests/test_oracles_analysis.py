"""Oracles for the analysis instruments (pyterrier_garen.analysis): hop distances on the document and group graphs,
where relevant documents sit and which of them a run holds, where GAREN lost each relevant document, how well the
navigator ranked the gold groups, and the first stage's share of expansions. Every expected value is worked out by
hand on a six-document graph (the thirty-fourth mutation run, docs/testing.md), with ids given as integers on one
side and strings on the other where a collection's files and a run can differ.

The graph (k = 2, edges in their direction; ``c``, ``d`` and ``f`` link to themselves)::

    a -> b, c     b -> a, d     c -> e, c     d -> d, d     e -> f, a     f -> f, f

Groups: 0 = {a, b}, 1 = {c, d}, 2 = {e}, 3 = {f}. Group links (a k-NN edge between members, self-links dropped):
0 -> 1, 1 -> 2, 2 -> 3, 2 -> 0.
"""
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from pyterrier_garen import GroupCorpusGraph, analysis


@pytest.fixture
def six(tmp_path):
    docnos = ['a', 'b', 'c', 'd', 'e', 'f']
    edges = np.array([[1, 2], [0, 3], [4, 2], [3, 3], [5, 0], [5, 5]])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones((6, 2)), labels=[0, 0, 1, 1, 2, 3])


# -- hops ----------------------------------------------------------------------------------------------------------
def test_doc_hops_follow_edges_breadth_first_up_to_the_limit(six):
    assert analysis.doc_hops(six, ['a']) == {0: 0, 1: 1, 2: 1, 3: 2, 4: 2, 5: 3}
    assert analysis.doc_hops(six, ['a'], limit=2) == {0: 0, 1: 1, 2: 1, 3: 2, 4: 2}
    assert analysis.doc_hops(six, ['a'], limit=0) == {0: 0}
    assert analysis.doc_hops(six, ['a', 'e']) == {0: 0, 4: 0, 1: 1, 2: 1, 5: 1, 3: 2}
    assert analysis.doc_hops(six, ['d']) == {3: 0}  # only itself: its edges are self-links
    assert analysis.doc_hops(six, ['zz', 'f']) == {5: 0}  # an unknown seed is skipped
    assert analysis.doc_hops(six, []) == {}


def test_group_hops_follow_links_between_groups(six):
    assert analysis.group_hops(six, ['a']) == {0: 0, 1: 1, 2: 2, 3: 3}
    assert analysis.group_hops(six, ['b', 'a']) == {0: 0, 1: 1, 2: 2, 3: 3}
    assert analysis.group_hops(six, ['e']) == {2: 0, 3: 1, 0: 1, 1: 2}
    assert analysis.group_hops(six, ['e'], limit=1) == {2: 0, 3: 1, 0: 1}
    assert analysis.group_hops(six, ['f']) == {3: 0}
    assert analysis.group_hops(six, ['zz']) == {}
    assert [a.tolist() for a in analysis._group_adjacency(six)] == [[1], [2], [0, 3], []]


def test_gold_hops_match_integer_qids_with_string_ones_and_read_the_top_by_rank_or_score(six):
    # the first stage, qid 1 as an integer, rows out of order: by score its top 1 is 'a'
    first = pd.DataFrame({'qid': [1, 1, 2], 'docno': ['e', 'a', 'f'], 'score': [1.0, 2.0, 5.0]})
    qrels = pd.DataFrame({'qid': ['1', '1', '1', '1', '2', '3'], 'docno': ['d', 'f', 'b', 'zz', 'a', 'a'],
                          'label': [1, 2, 0, 1, 1, 1]})
    hops = analysis.gold_hops(six, first, qrels, top=1, limit=6)
    assert hops.to_dict('list') == {
        'qid': ['1', '1', '1', '2', '3'], 'docno': ['d', 'f', 'zz', 'a', 'a'],
        'doc_hop': [2, 3, 7, 7, 7],  # from 'a'; query 2's seed 'f' reaches only itself; query 3 has no first stage
        'group_hop': [1, 3, 7, 7, 7]}
    ranked = first.assign(rank=[0, 1, 0])  # a rank, where there is one, overrules the score: now 'e' is the top 1
    again = analysis.gold_hops(six, ranked, qrels, top=1, limit=2)
    assert again.doc_hop.tolist() == [3, 1, 3, 3, 3]  # limit 2: farther than 2 hops is 3
    assert again.group_hop.tolist() == [2, 1, 3, 3, 3]
    both = analysis.gold_hops(six, first, qrels, top=2, limit=6)  # seeds 'a' and 'e'
    assert both.doc_hop.tolist() == [2, 1, 7, 7, 7]
    # limit 0: only the seed 'e' (group 2) itself; every other document is "farther", 1, on both graphs
    near = analysis.gold_hops(six, ranked, qrels, top=1, limit=0)
    assert near.doc_hop.tolist() == [1, 1, 1, 1, 1]
    assert near.group_hop.tolist() == [1, 1, 1, 1, 1]


def test_gold_hops_of_the_first_document_and_group(six):
    # document id 0 and group 0 are real ids: 'a' is 0 hops from itself, 'b' one hop and in the same group
    first = pd.DataFrame({'qid': ['q'], 'docno': ['a'], 'rank': [0]})
    qrels = pd.DataFrame({'qid': ['q', 'q'], 'docno': ['a', 'b'], 'label': [1, 1]})
    hops = analysis.gold_hops(six, first, qrels)
    assert hops.to_dict('list') == {'qid': ['q', 'q'], 'docno': ['a', 'b'], 'doc_hop': [0, 1], 'group_hop': [0, 0]}


def _chain(tmp_path, n):
    """d0 -> d1 -> ... -> d(n-1), one group per document."""
    edges = np.minimum(np.arange(n) + 1, n - 1)[:, None]
    return GroupCorpusGraph.from_arrays(tmp_path / 'chain', [f'd{i}' for i in range(n)], edges, np.ones((n, 1)),
                                        labels=list(range(n)))


def test_the_default_limits_and_depths(tmp_path):
    chain = _chain(tmp_path, 10)
    assert max(analysis.doc_hops(chain, ['d0']).values()) == 6  # limit 6 by default
    assert max(analysis.group_hops(chain, ['d0']).values()) == 6
    # the first stage's top 20 by default: the 21st document is not a seed; unreachable is limit + 1 = 7
    first = pd.DataFrame({'qid': ['q'] * 22, 'docno': ['d0'] * 20 + ['d9', 'd8'], 'rank': range(22)})
    qrels = pd.DataFrame({'qid': ['q', 'q', 'q'], 'docno': ['d9', 'd6', 'd7'], 'label': [1, 1, 1]})
    hops = analysis.gold_hops(chain, first, qrels)
    assert hops.doc_hop.tolist() == [7, 6, 7]
    assert hops.group_hop.tolist() == [7, 6, 7]
    # recall_by_hop's depth is 100 by default: the 100th document counts, the 101st does not
    run = pd.DataFrame({'qid': ['q'] * 101, 'docno': [f'x{i}' for i in range(99)] + ['d6', 'd9'],
                        'rank': range(101)})
    table = analysis.recall_by_hop(hops, {'s': run})
    assert table.to_dict('list') == {'system': ['s', 's'], 'hop': [6, 7], 'gold': [1, 2], 'found': [1, 0],
                                     'recall': [1.0, 0.0]}


def test_the_group_links_are_computed_once_per_graph(six):
    first = analysis._group_adjacency(six)
    assert analysis._group_adjacency(six) is first
    assert six._analysis_group_adjacency is first


def test_recall_by_hop_takes_each_runs_top_by_rank_or_score(six):
    hops = pd.DataFrame({'qid': ['1', '1', '1', '1'], 'docno': ['d', 'f', 'zz', 'b'], 'doc_hop': [2, 3, 7, 2],
                         'group_hop': [1, 3, 7, 0]})
    unsorted = pd.DataFrame({'qid': [1, 1, 1], 'docno': ['zz', 'd', 'a'], 'score': [0.1, 0.9, 0.5]})
    ranked = pd.DataFrame({'qid': ['1', '1', '1'], 'docno': ['b', 'f', 'zz'], 'rank': [2, 1, 0]})
    table = analysis.recall_by_hop(hops, {'by score': unsorted, 'by rank': ranked}, depth=2)
    assert table.to_dict('list') == {
        'system': ['by score'] * 3 + ['by rank'] * 3, 'hop': [2, 3, 7] * 2, 'gold': [2, 1, 1] * 2,
        'found': [1, 0, 0, 0, 1, 1],  # top 2 by score: d, a; by rank: zz, f
        'recall': [0.5, 0.0, 0.0, 0.0, 1.0, 1.0]}
    # a run with both: the rank alone orders it, tied ranks keep their rows' order (the score does not break ties)
    tied = pd.DataFrame({'qid': ['1', '1'], 'docno': ['f', 'd'], 'rank': [0, 0], 'score': [2.0, 1.0]})
    one = analysis.recall_by_hop(hops, {'tied': tied}, depth=1)
    assert one.found.tolist() == [0, 1, 0]  # 'f' (hop 3) comes first as given
    one = analysis.recall_by_hop(hops, {'tied': tied[::-1]}, depth=1)
    assert one.found.tolist() == [1, 0, 0]  # and 'd' (hop 2) when it is given first
    groups = analysis.recall_by_hop(hops, {'by rank': ranked}, hop_column='group_hop', depth=3)
    assert groups.to_dict('list') == {'system': ['by rank'] * 4, 'hop': [0, 1, 3, 7], 'gold': [1, 1, 1, 1],
                                      'found': [1, 0, 1, 1], 'recall': [1.0, 0.0, 1.0, 1.0]}


# -- the navigator's view of the gold groups -------------------------------------------------------------------------
def test_gold_group_diagnostics_count_gold_groups_scored_and_selected(six):
    qrels = pd.DataFrame({'qid': [1, 1, 1, 1], 'docno': ['c', 'e', 'b', 'zz'], 'label': [1, 3, 0, 1]})
    trace = [{'qid': '1', 'scored': {1: 0.5, 3: 0.1}, 'chosen_groups': [1]},
             {'qid': '1', 'scored': {}, 'chosen_groups': [0, 2]},
             {'qid': 'r', 'scored': {2: 0.3}},  # a query without judgements
             {'qid': '1', 'chosen_groups': [3]}]  # a step that scored nothing
    diag = analysis.gold_group_diagnostics(trace, six, qrels)
    assert diag.to_dict('records') == [{'qid': '1', 'gold_groups': 2, 'scored': 1, 'selected': 2},
                                       {'qid': 'r', 'gold_groups': 0, 'scored': 0, 'selected': 0}]


TRACE = [
    {'qid': 'q', 'iteration': 1, 'window': ['a', 'b'], 'candidates': {1: 2, 2: 1}, 'scored': {1: 0.4, 3: 0.2},
     'chosen_groups': [1]},
    {'qid': 'q', 'iteration': 1, 'expansion': ['c']},  # the expansion event of the same iteration
    {'qid': 'q', 'iteration': 2, 'window': ['a', 'c'], 'candidates': None, 'scored': None, 'chosen_groups': None},
    {'qid': 'r', 'iteration': 1, 'window': ['a'], 'candidates': {}, 'scored': {}, 'chosen_groups': []},
]


def test_gold_group_status_names_where_each_relevant_document_was_lost(six):
    qrels = pd.DataFrame({'qid': ['q'] * 7 + ['r', 's'], 'docno': ['a', 'c', 'd', 'e', 'f', 'zz', 'b', 'e', 'a'],
                          'label': [1, 2, 1, 1, 1, 1, 0, 1, 1]})
    status = analysis.gold_group_status(TRACE, six, qrels)
    assert status.to_dict('list') == {
        'qid': ['q', 'q', 'q', 'q', 'q', 'q', 'r'], 'docno': ['a', 'c', 'd', 'e', 'f', 'zz', 'e'],
        'group': [0, 1, 1, 2, 3, -1, 2],
        'candidate': [False, True, True, True, False, False, False],
        'scored': [False, True, True, False, True, False, False],
        'selected': [False, True, True, False, False, False, False],
        'observed': [True, True, False, False, False, False, False],
        'iteration': [1, 2, 0, 0, 0, 0, 0],  # the first iteration whose window held it
        'stage': ['observed', 'observed', 'not observed', 'not scored', 'not selected', 'no group', 'not candidate']}
    assert set(status.stage) <= set(analysis.GOLD_STAGES)


def test_gold_group_status_of_group_zero_and_of_a_step_without_iteration(six):
    trace = [{'qid': 'q', 'window': ['c']},  # no iteration: observed all the same, at iteration 0
             {'qid': 'q', 'iteration': 2, 'window': ['d'], 'scored': {0: 0.5}}]
    qrels = pd.DataFrame({'qid': ['q', 'q', 'q'], 'docno': ['b', 'c', 'd'], 'label': [1, 1, 1]})
    status = analysis.gold_group_status(trace, six, qrels)
    assert status[['docno', 'group', 'scored', 'observed', 'iteration', 'stage']].values.tolist() == [
        ['b', 0, True, False, 0, 'not selected'], ['c', 1, False, True, 0, 'observed'],
        ['d', 1, False, True, 2, 'observed']]


def test_gold_group_status_of_integer_ids_and_of_no_relevant_document(six):
    trace = [{'qid': 7, 'iteration': 3, 'window': [4], 'scored': {2: 1.0}}]  # ids as integers; docno 4 is not 'e'
    qrels = pd.DataFrame({'qid': ['7', '7'], 'docno': ['e', 'a'], 'label': [1, 0]})
    status = analysis.gold_group_status(trace, six, qrels)
    assert status[['qid', 'docno', 'scored', 'stage']].values.tolist() == [['7', 'e', True, 'not selected']]
    none = analysis.gold_group_status(trace, six, qrels.assign(label=0))
    assert len(none) == 0
    assert list(none.columns) == ['qid', 'docno', 'group', 'candidate', 'scored', 'selected',
                                                        'observed', 'iteration', 'stage']


def test_navigator_quality_auc_with_ties_and_the_best_gold_rank(six):
    qrels = pd.DataFrame({'qid': ['q', 'q', 'only'], 'docno': ['c', 'e', 'f'], 'label': [1, 1, 1]})
    trace = [{'qid': 'q', 'scored': {0: 0.9, 1: 0.5, 2: 0.3}},
             {'qid': 'q', 'scored': {3: 0.6, 1: 0.6}},  # a later score of group 1 replaces its first
             {'qid': 'r', 'scored': {0: 0.2}},  # no gold group scored
             {'qid': 'only', 'scored': {3: 0.1}},  # only gold groups scored
             {'qid': 'q', 'scored': None}]
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no division by zero behind the NaNs
        table = analysis.navigator_quality(trace, six, qrels)
    rows = {r.qid: r for r in table.itertuples()}
    assert list(table.columns) == ['qid', 'scored', 'gold_scored', 'auc', 'best_gold_rank']
    assert list(rows) == ['q', 'r', 'only']
    # gold 1 (0.6) and 2 (0.3) against 0 (0.9) and 3 (0.6): one tie counts half, of four pairs
    assert (rows['q'].scored, rows['q'].gold_scored, rows['q'].auc, rows['q'].best_gold_rank) == (4, 2, 0.125, 2.0)
    assert (rows['r'].scored, rows['r'].gold_scored) == (1, 0)
    assert math.isnan(rows['r'].auc)
    assert math.isnan(rows['r'].best_gold_rank)
    assert (rows['only'].scored, rows['only'].gold_scored, rows['only'].best_gold_rank) == (1, 1, 1.0)
    assert math.isnan(rows['only'].auc)


def test_navigator_quality_auc_without_ties():
    class Groups:
        def groups_of(self, docnos):
            return np.array([{'x': 0, 'y': 1, 'z': 2}.get(d, -1) for d in docnos])
    qrels = pd.DataFrame({'qid': ['q', 'q'], 'docno': ['x', 'z'], 'label': [1, 1]})
    trace = [{'qid': 'q', 'scored': {0: 0.8, 1: 0.5, 2: 0.1, 5: 0.7}}]
    row = analysis.navigator_quality(trace, Groups(), qrels).iloc[0]
    # gold 0.8 beats 0.5 and 0.7; gold 0.1 beats neither: 2 of 4 pairs; the best gold is first
    assert (row.auc, row.best_gold_rank) == (0.5, 1.0)


# -- the first stage's share -----------------------------------------------------------------------------------------
def test_first_stage_shares_and_their_spread():
    trace = [{'qid': 'q1', 'iteration': 2, 'first_stage_share': 0.4},
             {'qid': 'q1', 'iteration': 1, 'first_stage_share': 0.2},
             {'qid': 'q2', 'iteration': 1, 'first_stage_share': 0.6},
             {'qid': 'q2', 'iteration': 2, 'window': ['a']},  # the last window: no share
             {'qid': 'q3', 'iteration': 2, 'first_stage_share': 0},
             {'qid': 'q3', 'iteration': 3, 'first_stage_share': None}]
    shares = analysis.first_stage_shares(trace)
    assert shares.to_dict('list') == {'qid': ['q1', 'q1', 'q2', 'q3'], 'iteration': [2, 1, 1, 2],
                                      'share': [0.4, 0.2, 0.6, 0.0]}
    summary = analysis.share_summary(shares)
    assert summary.iteration.tolist() == ['1', '2', 'last']
    assert summary.queries.tolist() == [2, 2, 3]
    # iteration 1: 0.2, 0.6; iteration 2: 0.4, 0.0; last of each query: 0.4, 0.6, 0.0
    np.testing.assert_allclose(summary['mean'], [0.4, 0.2, 1 / 3])
    np.testing.assert_allclose(summary.sd, [math.sqrt(0.08), math.sqrt(0.08), math.sqrt(0.28 / 3)])
    np.testing.assert_allclose(summary.q10, [0.24, 0.04, 0.08])
    np.testing.assert_allclose(summary.q90, [0.56, 0.36, 0.56])
    one = analysis.share_summary(shares[shares.qid == 'q2'])
    assert one.iteration.tolist() == ['1', 'last']
    assert math.isnan(one.sd[0])
    empty = analysis.share_summary(analysis.first_stage_shares([]))
    assert len(empty) == 0
    assert list(empty.columns) == ['iteration', 'queries', 'mean', 'sd', 'q10', 'q90']


# -- budget swaps: ids as text, and the refusals ---------------------------------------------------------------------
def test_budget_swaps_match_integer_docnos_with_string_judgements():
    smaller = pd.DataFrame({'qid': [1, 1], 'docno': [10, 11], 'rank': [0, 1]})
    larger = pd.DataFrame({'qid': [1, 1, 1], 'docno': [12, 10, 11], 'rank': [0, 1, 2]})
    qrels = pd.DataFrame({'qid': ['1', '1'], 'docno': ['11', '12'], 'label': [1, 1]})
    out = analysis.budget_swaps(smaller, larger, qrels, depth=2, head=1)
    assert out.to_dict('records') == [{'qid': '1', 'prefix': None, 'late': 1, 'late_head': 1, 'gained': 1,
                                       'promoted': 0, 'lost': 1, 'relevant': 2}]


@pytest.mark.parametrize(('kwargs', 'message'), [
    ({'depth': 0}, 'depth must be a positive integer, got 0 (the recall cut-off)'),
    ({'head': -1}, 'head must be an integer >= 0, got -1 (the top nDCG sees)'),
])
def test_budget_swaps_refuses_a_bad_cut_off(kwargs, message):
    run = pd.DataFrame({'qid': ['1'], 'docno': ['a'], 'rank': [0]})
    qrels = pd.DataFrame({'qid': ['1'], 'docno': ['a'], 'label': [1]})
    with pytest.raises(ValueError) as refused:
        analysis.budget_swaps(run, run, qrels, **kwargs)
    assert str(refused.value) == message


def test_budget_swaps_names_the_frame_that_lacks_a_column():
    run = pd.DataFrame({'qid': ['1'], 'docno': ['a'], 'rank': [0]})
    qrels = pd.DataFrame({'qid': ['1'], 'docno': ['a'], 'label': [1]})
    with pytest.raises(ValueError) as refused:
        analysis.budget_swaps(run.drop(columns='qid'), run, qrels)
    assert str(refused.value) == ("budget_swaps: smaller has no column qid (got ['docno', 'rank']); pass PyTerrier "
                                  'frames: runs with qid, docno and rank or score, qrels with qid, docno, label')


# -- budget curves and their plots -----------------------------------------------------------------------------------
def _fixed(rows):
    import pyterrier as pt
    frame = pd.DataFrame(rows, columns=['qid', 'docno', 'score'])
    return pt.apply.generic(lambda topics: frame[frame.qid.isin(topics.qid)].assign(
        query=lambda f: f.qid.map(dict(zip(topics.qid, topics['query'])))))


def test_budget_curve_runs_each_budget_in_budget_order(capsys):
    topics = pd.DataFrame({'qid': ['q1'], 'query': ['x']})
    qrels = pd.DataFrame({'qid': ['q1', 'q1'], 'docno': ['d1', 'd2'], 'label': [1, 1]})
    good = _fixed([('q1', 'd1', 2.0), ('q1', 'd2', 1.0)])
    half = _fixed([('q1', 'd3', 2.0), ('q1', 'd1', 1.0)])
    also_good = _fixed([('q1', 'd2', 2.0), ('q1', 'd1', 1.0)])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        curve = analysis.budget_curve({200: {'good': good, 'half': also_good}, 100: {'good': good, 'half': half}},
                                      topics, qrels)
    assert capsys.readouterr() == ('', '')  # quiet: no progress bar, no pipeline tree
    assert curve.index.tolist() == [0, 1, 2, 3]
    assert list(curve.columns) == ['name', 'R@100', 'nDCG@10', 'budget']  # pt.Experiment's order
    assert curve[['budget', 'name']].values.tolist() == [[100, 'good'], [100, 'half'], [200, 'good'], [200, 'half']]
    # half: d1 at rank 2 of two relevant documents: DCG 1/log2(3), ideal 1 + 1/log2(3)
    ndcg = (1 / np.log2(3)) / (1 + 1 / np.log2(3))
    np.testing.assert_allclose(curve['nDCG@10'], [1.0, ndcg, 1.0, 1.0])
    np.testing.assert_allclose(curve['R@100'], [1.0, 0.5, 1.0, 1.0])
    from ir_measures import P
    other = analysis.budget_curve({5: {'half': half}}, topics, qrels, measures=[P @ 1])
    assert other.to_dict('list') == {'name': ['half'], 'P@1': [0.0], 'budget': [5]}


def test_plot_budget_curve_draws_one_line_per_system():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    curve = pd.DataFrame({'name': ['b', 'a', 'b', 'a'], 'budget': [50, 50, 100, 100], 'nDCG@10': [.1, .2, .3, .4],
                          'R@100': [.5, .6, .7, .8]})
    ax = analysis.plot_budget_curve(curve, 'R@100')
    assert [line.get_label() for line in ax.get_lines()] == ['b', 'a']  # in the curve's order
    assert [line.get_xdata().tolist() for line in ax.get_lines()] == [[50, 100], [50, 100]]
    assert [line.get_ydata().tolist() for line in ax.get_lines()] == [[.5, .7], [.6, .8]]
    assert [line.get_marker() for line in ax.get_lines()] == ['o', 'o']
    assert (ax.get_xlabel(), ax.get_ylabel()) == ('reranking budget (documents)', 'R@100')
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ['b', 'a']
    assert [t.get_fontsize() for t in ax.get_legend().get_texts()] == [8, 8]
    assert tuple(ax.figure.get_size_inches()) == (5.0, 3.5)
    _, given = plt.subplots()
    assert analysis.plot_budget_curve(curve, ax=given) is given
    assert given.get_ylabel() == 'nDCG@10'
    plt.close('all')


def test_plot_recall_by_hop_draws_grouped_bars():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    table = pd.DataFrame({'system': ['s', 's', 't'], 'hop': [2, 1, 2], 'gold': [4, 3, 4], 'found': [2, 3, 1],
                          'recall': [0.5, 1.0, 0.25]})
    ax = analysis.plot_recall_by_hop(table, title='T')
    bars = ax.patches
    assert len(bars) == 4  # two hops for each of two systems; t has no hop 1: a bar of height 0
    assert [round(b.get_x() + b.get_width() / 2, 6) for b in bars] == [0.0, 1.0, 0.4, 1.4]
    assert [b.get_height() for b in bars] == [1.0, 0.5, 0.0, 0.25]
    assert [round(b.get_width(), 6) for b in bars] == [0.4] * 4
    assert [round(t, 6) for t in ax.get_xticks()] == [0.2, 1.2]
    assert [t.get_text() for t in ax.get_xticklabels()] == ['1\n(n=3)', '2\n(n=4)']
    assert (ax.get_xlabel(), ax.get_ylabel(), ax.get_title()) == (
        'hop distance from the first-stage top 20', 'recall of relevant docs', 'T')
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ['s', 't']
    assert [t.get_fontsize() for t in ax.get_legend().get_texts()] == [8, 8]
    assert tuple(ax.figure.get_size_inches()) == (6.0, 3.5)
    _, given = plt.subplots()
    assert analysis.plot_recall_by_hop(table, ax=given) is given
    assert given.get_title() == ''
    _, alone = plt.subplots()
    analysis.plot_recall_by_hop(table[table.system == 's'], ax=alone)  # one system: bars 0.8 wide, centred
    assert [round(b.get_width(), 6) for b in alone.patches] == [0.8, 0.8]
    assert [round(t, 6) for t in alone.get_xticks()] == [0.0, 1.0]
    plt.close('all')


def test_budget_curve_runs_a_shared_first_stage_once_per_budget():
    import pyterrier as pt
    topics = pd.DataFrame({'qid': ['q1'], 'query': ['x']})
    qrels = pd.DataFrame({'qid': ['q1'], 'docno': ['d1'], 'label': [1]})
    calls = []

    def first_stage(frame):
        calls.append(len(frame))
        return pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['x', 'x'], 'docno': ['d1', 'd2'], 'score': [2.0, 1.0]})
    shared = pt.apply.generic(first_stage)
    flip = pt.apply.doc_score(lambda row: -row['score'])
    keep = pt.apply.doc_score(lambda row: row['score'])
    curve = analysis.budget_curve({1: {'keep': shared >> keep, 'flip': shared >> flip},
                                   2: {'keep': shared >> keep, 'flip': shared >> flip}}, topics, qrels)
    assert calls == [1, 1]  # plan='tree': the common prefix once for both systems, at each budget
    np.testing.assert_allclose(curve['nDCG@10'], [1.0, 1 / np.log2(3)] * 2)


def test_budget_curve_refuses_one_pipeline_object_under_two_names():
    import pyterrier as pt
    topics = pd.DataFrame({'qid': ['q1'], 'query': ['x']})
    qrels = pd.DataFrame({'qid': ['q1'], 'docno': ['d1'], 'label': [1]})
    calls = []
    good = _fixed([('q1', 'd1', 2.0)]) >> pt.apply.generic(lambda frame: calls.append(1) or frame)
    with pytest.raises(ValueError) as refused:
        analysis.budget_curve({100: {'a': good, 'b': _fixed([('q1', 'd1', 1.0)])}, 200: {'a': good, 'b': good}},
                              topics, qrels)
    assert str(refused.value) == ("budget_curve: at budget 200, 'a' and 'b' are the same pipeline object; list it "
                                  'once (or pass a copy to compare it with itself)')
    assert calls == []  # refused before any budget ran
