"""GAREN's online algorithm on a hand-built group graph: every decision of DESIGN.md "Online algorithm"."""
import random

import numpy as np
import pandas as pd
import pytest
from _toy_graph import (ADJACENCY, GROUPS, R0, RERANK, DictScorer, HashScorer, ToyGroupGraph, first_stage,
                        worked_garen)

from pyterrier_garen._garen import GAREN, Strategy, num_iterations, propagate, select_groups, take
from pyterrier_garen._navigators import VoteNavigator

# the worked example (tests/_toy_graph.py): groups, member order as listed,
# G0 a1 a2 | G1 a3 x1 x2 | G2 a4 y1 y2 y3 | G3 z1 z2 | G4 a5 a6 a7 a8 | G5 w1
make = worked_garen


def docnos(frame, qid='q1'):
    return frame[frame.qid == qid].docno.tolist()


def test_worked_example():
    """Windows worked out by hand (w=4, h=2, c=10 -> T=4; K_g=2; explore at t=1, exploit after)."""
    garen, reranker, navigator = make(final_order='paper')  # the paper's final order (see test_final_order.py)
    out = garen(first_stage(R0))
    windows = [call.docno.tolist() for call in reranker.calls]
    # t=1: W_1 = R_0[:4]. votes G1=3 (a1,a3,a4), G2=3 (a1,a2,a4), G3=1, G0=1 (all observed: not scored).
    #      G1/G2 tie -> best R_0 rank (a3 < a4) -> score [G1, G2]; explore round-robin G2 (.9), G1 (.5): y1, x1
    # t=2: W~_1 = [a1, a3, a2, a4]; W_2 = [a1, a3] + [y1, x1]. votes G1=2, G0=2, G2=1, G5=1, G3=1; unscored open:
    #      G3, G5 (tie on vote and rank -> group id). eligible G2 .9, G5 .8, G3 .7, G1 .5; exploit G2: y2, y3
    # t=3: W~_2 = [a1, y1, a3, x1]; W_3 = [a1, y1, y2, y3]. candidates G1, G2, G5 all cached -> fill from R_0: G4.
    #      eligible G5 .8, G1 .5, G4 .1 (G2 exhausted); exploit: w1 (G5), then x2 (G1)
    # t=4 = T: W~_3 = [a1, y1, y3, y2]; W_4 = [a1, y1, w1, x2] -> [w1, a1, y1, x2]
    assert windows == [['a1', 'a2', 'a3', 'a4'], ['a1', 'a3', 'y1', 'x1'], ['a1', 'y1', 'y2', 'y3'],
                       ['a1', 'y1', 'w1', 'x2']]
    nav = [(call.docno.tolist(), call.vote.tolist()) for call in navigator.calls]
    assert nav == [(['1', '2'], [3, 3]), (['3', '5'], [1, 1]), (['4'], [0])]
    assert navigator.calls[0].text.tolist() == ['summary of group 1', 'summary of group 2']
    assert list(navigator.calls[0].columns) == ['qid', 'query', 'docno', 'text', 'vote']
    assert list(reranker.calls[0].columns) == ['qid', 'query', 'docno', 'score', 'rank']
    assert reranker.calls[1].score.tolist() == [4., 3., 2., 1.]
    assert reranker.calls[1]['rank'].tolist() == [0, 1, 2, 3]
    # propagation: b = .4 (w1, G5), .24 (a1, G0), .144 (y1, G2), .0864 (x2, G1); + alpha * group sum
    # a2 .0024 (G0) > G2 ties .00144 (y3, y2 last at t=3; a4 at t=1) > G1 ties .000864 (a3, x1 at t=2)
    assert docnos(out) == ['w1', 'a1', 'y1', 'x2', 'a2', 'y3', 'y2', 'a4', 'a3', 'x1']
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'rank', 'iteration', 'group']
    assert dict(zip(out.docno, out.iteration)) == {'a1': 1, 'a2': 1, 'a3': 1, 'a4': 1, 'y1': 2, 'x1': 2,
                                                   'y2': 3, 'y3': 3, 'w1': 4, 'x2': 4}
    assert out.group.tolist() == [GROUPS[d] for d in out.docno]
    assert out['rank'].tolist() == list(range(10))
    assert (np.diff(out.score) < 0).all()
    trace = garen.last_trace
    assert [s['mode'] for s in trace[:3]] == ['explore', 'exploit', 'exploit']
    assert trace[1]['eligible'] == [2, 5, 3, 1]
    assert trace[2]['eligible'] == [5, 1, 4]
    assert trace[0]['chosen_groups'] == [2, 1]
    assert trace[2]['chosen_groups'] == [5, 1]
    assert trace[1]['scored'] == {3: .7, 5: .8}
    assert trace[0]['candidates'] == {1: 3, 2: 3, 3: 1, 0: 1}
    stats = garen.last_stats.iloc[0].to_dict()
    assert stats == {'qid': 'q1', 'docs_reranked': 10, 'groups_scored': 5, 'reranker_calls': 4,
                     'navigator_calls': 3, 'iterations': 4}


def test_a_first_stage_shorter_than_the_window_still_spends_the_budget():
    """R_0 = [a1, a3] only (w=4, h=2, c=10): the paper's T = 4 would stop after 8 documents; the loop goes on
    while budget is left, as GAR, SlideGAR and RGS do. Windows worked out by hand (K_g=2, explore at t=1 only):
    t=1: votes G1=2 (a1, a3), G2=1, G0=1; score G1, then G0 (a1 ranks first in R_0; G2 has no R_0 member);
         round-robin G1 (.5), G0 (.2): x1, a2
    t=2: W~ = [a1, a3, a2, x1]; every candidate has vote 2; score G2 and G3 (no R_0 member: by id); G0 is closed;
         exploit G2 (.9): a4, y1
    t=3: W~ = [a1, y1, a3, a4]; the one unscored candidate is G5 (R_0 is spent: no fill); exploit G2: y2, y3
    t=4: W~ = [a1, y1, y3, y2], 8 observed, T reached; nothing new to score; G2 is closed: exploit G5 (.8) then
         G1 (.5): w1, x2
    t=5: the budget is spent."""
    garen, reranker, navigator = make()
    garen(first_stage(['a1', 'a3']))
    windows = [call.docno.tolist() for call in reranker.calls]
    assert windows == [['a1', 'a3'], ['a1', 'a3', 'x1', 'a2'], ['a1', 'a3', 'a4', 'y1'], ['a1', 'y1', 'y2', 'y3'],
                       ['a1', 'y1', 'w1', 'x2']]
    assert [call.docno.tolist() for call in navigator.calls] == [['1', '0'], ['2', '3'], ['5']]
    assert num_iterations(10, 4, 2) == 4 < 5 == garen.last_stats.iterations[0]
    assert garen.last_stats.docs_reranked[0] == 10


def test_a_full_first_stage_takes_the_papers_iterations():
    # every window full: the budget is spent in exactly T iterations, whatever the budget's remainder
    docs = [f'd{i}' for i in range(40)]
    graph = ToyGroupGraph({d: [docs[(i + 1) % 40], docs[(i + 7) % 40]] for i, d in enumerate(docs)},
                          {d: i // 5 for i, d in enumerate(docs)})
    # T = 1 + ceil((c - 4) / 3), by hand
    for budget, iterations in ((4, 1), (5, 2), (6, 2), (7, 2), (8, 3), (10, 3), (15, 5), (30, 10)):
        garen = GAREN(HashScorer(), graph, HashScorer('navigator'), window=4, keep=1, budget=budget, group_budget=2)
        out = garen(first_stage(docs[:25]))
        assert garen.last_stats.iterations[0] == iterations == num_iterations(budget, 4, 1)
        assert len(out) == garen.last_stats.docs_reranked[0] == budget


def test_no_propagation_orders_by_last_placement():
    garen, _, _ = make(propagate=False, final_order='paper')
    # last window, then later iterations first, then window position
    assert docnos(garen(first_stage(R0))) == ['w1', 'a1', 'y1', 'x2', 'y3', 'y2', 'a3', 'x1', 'a2', 'a4']


@pytest.mark.parametrize(('strategy', 'first', 'second'), [
    ('explore', ['y1', 'x1'], ['y2', 'w1']),  # always round-robin: G2, G5, G3, G1
    ('exploit', ['y1', 'y2'], None),  # depth-first in G2 from the start
    (Strategy.EXPLORE_EXPLOIT, ['y1', 'x1'], ['y2', 'y3']),
])
def test_strategies(strategy, first, second):
    garen, _, _ = make(strategy=strategy)
    garen(first_stage(R0))
    assert garen.last_trace[0]['expansion'] == first
    if second:
        assert garen.last_trace[1]['expansion'] == second


def test_strategy_rejects_unknown():
    with pytest.raises(ValueError):
        make(strategy='wander')


def test_group_budget_vote_tie_broken_by_first_stage_rank():
    garen, _, navigator = make(group_budget=1)
    garen(first_stage(R0))
    assert navigator.calls[0].docno.tolist() == ['1']  # G1 and G2 both have vote 3; G1 holds a3 (rank 2) < a4


def test_select_groups_rules():
    votes = {7: 1, 3: 2, 5: 1, 9: 1, 4: 2}
    best = {3: 5, 4: 1, 9: 0}
    # vote desc, then best rank (absent = last), then id; scored (9) and closed (4) groups are skipped
    assert select_groups(votes, {9: .3}, 3, best_rank=best, is_open=lambda g: g != 4, fill=[]) == [3, 5, 7]
    # fewer unscored candidates than K_g: fill with groups of the best unobserved R_0 docs (skip -1, scored, dupes)
    assert select_groups({3: 1}, {8: .1}, 4, best_rank={}, is_open=lambda g: True,
                         fill=[3, -1, 8, 6, 6, 2, 1]) == [3, 6, 2, 1]
    assert select_groups(votes, {}, 0, best_rank=best, is_open=lambda g: True, fill=[1]) == []


def test_take_round_robin_and_depth_first():
    pools = [['a', 'b', 'c'], ['d'], ['e', 'f']]
    assert take(pools, 5, round_robin=True) == ['a', 'd', 'e', 'b', 'f']
    assert take(pools, 5, round_robin=False) == ['a', 'b', 'c', 'd', 'e']
    assert take(pools, 10, round_robin=True) == ['a', 'd', 'e', 'b', 'f', 'c']
    assert take([], 3, round_robin=True) == []


def test_iterations_formula():
    assert num_iterations(100, 20, 10) == 9
    assert num_iterations(95, 20, 10) == 9
    assert num_iterations(20, 20, 10) == 1
    assert num_iterations(5, 20, 10) == 1
    assert num_iterations(300, 20, 10) == 29


def test_propagation_formula_includes_self_and_skips_ungrouped():
    group = {'a': 0, 'b': 0, 'c': 1, 'd': -1, 'e': 0, 'f': -1}.get
    last = {'a': (2, 0), 'b': (2, 1), 'c': (2, 2), 'd': (1, 3), 'e': (1, 2), 'f': (2, 3)}
    # b: a .5, b .25, c .125, f .0625; alpha=.5: a .5+.375, b .25+.375, c .125+.0625, e 0+.375, d 0, f .0625
    order = propagate(['a', 'b', 'c', 'f'], ['a', 'b', 'c', 'd', 'e', 'f'], last, group, p=.5, alpha=.5)
    assert order == ['a', 'b', 'e', 'c', 'f', 'd']
    # ties (all zero bonus for -1 docs) fall back to the reranker's last placement
    order = propagate([], ['d', 'f', 'e'], last, lambda d: -1, p=.5, alpha=.5)
    assert order == ['f', 'e', 'd']  # f last placed at t=2; e before d in the t=1 window


SCENARIO2 = dict(adjacency={'c1': ['c3']}, groups={'h0': 0, 'c1': 0, 'q9': 1, 'c5': 1, 'q1': 1, 'c3': 1})


def run_scenario2(budget):
    graph = ToyGroupGraph(**SCENARIO2)
    reranker, navigator = DictScorer({'c1': 10}), DictScorer({'1': 1.})
    garen = GAREN(reranker, graph, navigator, window=2, keep=1, budget=budget, trace=True)
    return garen, garen(first_stage(['c1', 'c2', 'c3', 'c4', 'c5', 'c6'])), reranker


def test_within_group_order_backfill_and_missing_docs():
    """Group 1 lists [q9, c5, q1, c3]: R_0 members by rank (c3, c5), then absent ones in member order (q9, q1);
    then the groups run dry and R_0 backfills (c4, c6 are not in the graph: group -1, no neighbours)."""
    garen, out, reranker = run_scenario2(budget=8)  # T = 1 + ceil(6 / 1) = 7
    assert [call.docno.tolist()[-1] for call in reranker.calls] == ['c2', 'c3', 'c5', 'q9', 'q1', 'c4', 'c6']
    assert [s.get('backfill') for s in garen.last_trace] == [[], [], [], [], ['c4'], ['c6'], None]
    assert dict(zip(out.docno, out.group))['c2'] == -1
    assert dict(zip(out.docno, out.group))['c6'] == -1
    assert len(out) == 8
    assert garen.last_stats.iterations.tolist() == [7]


def test_early_stop_when_nothing_new_can_enter():
    garen, out, reranker = run_scenario2(budget=50)  # T would be 49
    assert reranker.num_calls == 7
    assert len(out) == 8
    sent = [d for call in reranker.calls for d in call.docno]
    assert len(set(sent)) == 8
    assert garen.last_stats.iterations.tolist() == [7]


def test_fewer_first_stage_docs_than_window():
    garen, reranker, _ = make()
    out = garen(first_stage(['a1', 'a2']))
    assert reranker.calls[0].docno.tolist() == ['a1', 'a2']
    # votes G2=2 (a1, a2), G1=1, G3=1 (G1 before G3 by id); explore: G2's a4, G1's a3 (absent from R_0 here)
    assert garen.last_trace[0]['expansion'] == ['a4', 'a3']
    # the first window holds 2 docs and each later one adds w - h = 2: the paper's T = 4 iterations would stop at 8
    # docs, below the budget 10; a fifth spends it
    assert len(out) == garen.last_stats.docs_reranked.iloc[0] == 10
    assert reranker.num_calls == 5
    assert (np.diff(out.score) < 0).all()


def test_budget_below_window_truncates_first_window():
    garen, reranker, navigator = make(budget=3)
    out = garen(first_stage(R0))
    assert reranker.num_calls == 1
    assert reranker.calls[0].docno.tolist() == ['a1', 'a2', 'a3']
    assert navigator.num_calls == 0
    assert len(out) == 3


def test_empty_input_makes_no_model_call():
    garen, reranker, navigator = make()
    out = garen(first_stage(R0).iloc[:0])
    assert len(out) == 0
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'rank', 'iteration', 'group']
    assert reranker.num_calls == navigator.num_calls == 0


def test_duplicate_docnos_keep_first_with_warning():
    garen, reranker, _ = make()
    inp = first_stage(['a1', 'a2', 'a1', 'a3', 'a4', 'a5'])
    with pytest.warns(UserWarning, match='duplicate'):
        out = garen(inp)
    assert reranker.calls[0].docno.tolist() == ['a1', 'a2', 'a3', 'a4']
    assert not out.docno.duplicated().any()


def test_orders_by_score_when_no_rank_column():
    garen, reranker, _ = make()
    inp = first_stage(R0).drop(columns=['rank']).iloc[::-1]
    garen(inp)
    assert reranker.calls[0].docno.tolist() == ['a1', 'a2', 'a3', 'a4']


def random_setup(seed, n_docs=60, n_groups=9):
    rng = random.Random(seed)
    docs = [f'd{i}' for i in range(n_docs)]
    adjacency = {d: rng.sample(docs, 4) for d in docs[:-5]}  # the last 5 docs are not in the graph
    groups = {d: rng.randrange(n_groups) for d in docs[:-5]}
    # scores depend on the query text: a driver that matched answers to the wrong query would change the output
    reranker = HashScorer(f'reranker {seed}')
    navigator = HashScorer(f'navigator {seed}')
    inp = pd.concat([first_stage(rng.sample(docs, rng.randrange(1, 30)), qid=f'q{i}', query=f'query {i}')
                     for i in range(4)])
    return ToyGroupGraph(adjacency, groups), reranker, navigator, inp


@pytest.mark.parametrize('seed', range(6))
def test_budget_calls_and_batched_equals_per_query(seed):
    graph, reranker, navigator, inp = random_setup(seed)
    budget, window, keep = 23, 6, 2
    garen = GAREN(reranker, graph, navigator, window=window, keep=keep, budget=budget, group_budget=3, tau_switch=2)
    batched = garen(inp)
    calls, nav_calls = reranker.num_calls, navigator.num_calls
    stats = garen.last_stats.set_index('qid')
    assert calls == stats.iterations.max()  # a first stage shorter than the window may take more than T
    assert nav_calls <= calls - 1
    for qid in inp.qid.unique():
        sent = [d for call in reranker.calls for d in call[call.qid == qid].docno]
        assert len(set(sent)) <= budget
        assert len(set(sent)) == stats.docs_reranked[qid]
        assert max(len(call[call.qid == qid]) for call in reranker.calls) <= window
        scored = [g for call in navigator.calls for g in call[call.qid == qid].docno]
        assert len(scored) == len(set(scored)) == stats.groups_scored[qid]  # cached, never re-scored
        assert set(batched[batched.qid == qid].docno) == set(sent)
    assert (batched.groupby('qid').score.diff().dropna() < 0).all()
    alone = pd.concat([garen(inp[inp.qid == qid]) for qid in inp.qid.unique()], ignore_index=True)
    pd.testing.assert_frame_equal(batched.reset_index(drop=True), alone)
    assert reranker.calls[0].qid.nunique() == inp.qid.nunique()  # one call covered every query's first window


def test_one_reranker_and_navigator_call_per_iteration_for_many_queries():
    garen, reranker, navigator = make()
    inp = pd.concat([first_stage(R0, qid=f'q{i}') for i in range(5)])
    out = garen(inp)
    assert reranker.num_calls == 4
    assert navigator.num_calls == 3
    assert len(reranker.calls[0]) == 20
    assert reranker.calls[0].qid.nunique() == 5
    assert out.groupby('qid').docno.apply(tuple).nunique() == 1


def test_vote_navigator():
    nav = VoteNavigator()
    rows = pd.DataFrame({'qid': ['q1'], 'query': ['x'], 'docno': ['3'], 'text': [''], 'vote': [2]})
    assert nav(rows).score.tolist() == [2.]
    with pytest.raises(Exception, match='vote'):
        nav(rows.drop(columns=['vote']))
    garen = GAREN(DictScorer(RERANK), ToyGroupGraph(ADJACENCY, GROUPS), nav, window=4, keep=2, budget=10)
    assert len(garen(first_stage(R0))) == 10
    assert repr(nav) == 'VoteNavigator()'


def test_parameters_and_repr():
    garen, reranker, navigator = make()
    assert repr(garen) == (f'GAREN({reranker!r}, {garen.groups!r}, {navigator!r}, window=4, keep=2, budget=10, '
                           'group_budget=2, tau_switch=1, trace=True)')
    for name in ['reranker', 'groups', 'navigator', 'window', 'keep', 'budget', 'group_budget', 'tau_switch',
                 'strategy', 'propagate', 'p', 'alpha', 'trace', 'verbose']:
        assert hasattr(garen, name)
    assert garen.strategy is Strategy.EXPLORE_EXPLOIT
    with pytest.raises(ValueError, match='keep'):
        make(keep=4)
    with pytest.raises(ValueError, match='budget'):
        make(budget=0)
    with pytest.raises(ValueError, match='group_budget'):
        make(group_budget=-1)
