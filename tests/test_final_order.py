"""``final_order``: what every window search does with the verdicts of documents that left its windows."""
import inspect
import math
import random

import pandas as pd
import pytest
import pyterrier as pt
from _toy_graph import ADJACENCY, GROUPS, NAVIGATE, R0, RERANK, DictScorer, HashScorer, ToyGroupGraph, first_stage

from pyterrier_garen import GAREN, RGS, DocGAREN, ListwiseReranker, SlideGAR, SlidingWindowReranker
from pyterrier_garen._driver import is_listwise, order_tail, resolve_final_order
from pyterrier_garen._garen import propagate
from pyterrier_garen._navigators import VoteNavigator

# the worked example (tests/_toy_graph.py; w=4, h=2, c=10, K_g=2, tau_switch=1): windows
# W~_1 = [a1 a3 a2 a4], W~_2 = [a1 y1 a3 x1], W~_3 = [a1 y1 y3 y2], W~_4 = [w1 a1 y1 x2]


def worked(**kwargs):
    params = dict(window=4, keep=2, budget=10, group_budget=2, tau_switch=1)
    params.update(kwargs)
    garen = GAREN(DictScorer(RERANK), ToyGroupGraph(ADJACENCY, GROUPS), DictScorer(NAVIGATE), **params)
    return garen(first_stage(R0)).docno.tolist()


def test_worked_example_orders():
    # paper: W~_4, then later iterations first, then position (the tail holds x2, scored 0, at rank 4)
    assert worked(final_order='paper', propagate=False) == ['w1', 'a1', 'y1', 'x2', 'y3', 'y2', 'a3', 'x1', 'a2',
                                                            'a4']
    # score: kept top h = [w1 a1], then y1 9, a3 8, y3 7, a2 5, y2 3, x1 2, a4 1, x2 0
    score = ['w1', 'a1', 'y1', 'a3', 'y3', 'a2', 'y2', 'x1', 'a4', 'x2']
    assert worked(final_order='score', propagate=False) == score
    # dropped: last positions 2 = y1 (t4), y3 (t3), a3 (t2), a2 (t1); 3 = x2 (t4), y2 (t3), x1 (t2), a4 (t1)
    dropped = ['w1', 'a1', 'y1', 'y3', 'a3', 'a2', 'x2', 'y2', 'x1', 'a4']
    assert worked(final_order='dropped', propagate=False) == dropped
    # with propagation every one of the 10 gets b(d) = .4 * .6^i from the new order, and alpha = .01 times the group
    # sums (score order: G5 .4, G0 .2711, G2 .2212, G1 .1016) moves nobody: e.g. a4 .00672 + .00221 = .00893 >
    # x2 .00403 + .00102 = .00505, x1 .01120 + .00102 = .01222 > a4
    assert worked(final_order='score') == score
    assert worked(final_order='dropped') == dropped
    # the paper's propagated order, unchanged (test_garen_algorithm pins it)
    assert worked(final_order='paper') == ['w1', 'a1', 'y1', 'x2', 'a2', 'y3', 'y2', 'a4', 'a3', 'x1']


def test_worked_example_alpha_reorders_by_new_order():
    # alpha = 1: score = b(d) + group sum; score order b: w1 .4 a1 .24 y1 .144 a3 .0864 y3 .05184 a2 .031104
    # y2 .0186624 x1 .01119744 a4 .006718464 x2 .0040310784; groups G0 a1+a2 = .271104, G1 a3+x1+x2 = .1016285184,
    # G2 y1+y3+y2+a4 = .221220864, G5 w1 = .4 -> w1 .8, a1 .511104, y1 .365221, a2 .302208, y3 .273061,
    # y2 .239883, a4 .227939, a3 .188029, x1 .112826, x2 .105660
    assert worked(final_order='score', alpha=1.0) == ['w1', 'a1', 'y1', 'a2', 'y3', 'y2', 'a4', 'a3', 'x1', 'x2']


def test_final_order_never_changes_what_is_observed():
    sets = {how: set(worked(final_order=how)) for how in ('paper', 'score', 'dropped', 'auto')}
    assert len({frozenset(s) for s in sets.values()}) == 1


def test_a_budget_where_the_orders_differ():
    # top 4 of budget 10: paper keeps x2 (score 0, but in the last window); score order has a3 (score 8) instead
    assert worked(final_order='paper')[:4] == ['w1', 'a1', 'y1', 'x2']
    assert worked(final_order='score')[:4] == ['w1', 'a1', 'y1', 'a3']


def test_order_tail_ties_missing_and_head():
    order = ['h', 'a', 'b', 'c', 'd', 'e']
    scores = {'h': 0., 'a': 1., 'b': 3., 'c': 1., 'e': -math.inf}  # d never scored
    last = {'h': (3, 0), 'a': (3, 2), 'b': (1, 3), 'c': (2, 2), 'd': (1, 1), 'e': (2, 3)}
    assert order_tail(order, 1, 'paper', scores=scores, last=last) == order
    # the head stays even with a low score; a/c tie keeps order; unscored and -inf last, in order
    assert order_tail(order, 1, 'score', scores=scores, last=last) == ['h', 'b', 'a', 'c', 'd', 'e']
    assert order_tail(order, 1, 'dropped', scores=scores, last=last) == ['h', 'd', 'a', 'c', 'b', 'e']
    assert order_tail(order, 0, 'score', scores=scores, last=last) == ['b', 'a', 'c', 'h', 'd', 'e']
    with pytest.raises(ValueError, match='how must be'):
        order_tail(order, 1, 'auto', scores=scores, last=last)


def test_propagate_ties_follow_given_order():
    last = {d: (1, i) for i, d in enumerate('abcdef')}
    group = {'a': 0, 'b': 1, 'c': 0, 'd': 2, 'e': 1, 'f': -1}.get
    # b: a .5, b .25; bonus G0 .5 G1 .25 (alpha .5): c .25, e .125; d, f score 0: tie -> order given (f before d)
    assert propagate(['a', 'b'], 'abcdef', last, group, p=.5, alpha=.5, order=list('abcefd')) == list('abcefd')
    assert propagate(['a', 'b'], 'abcdef', last, group, p=.5, alpha=.5) == list('abcedf')


def test_propagate_head_places_the_top_ten_only():
    # d0..d12 in that order, one group each except d0 and d12 (group 0); b(d_i) = .4 * .6^i for i < 10
    order = [f'd{i}' for i in range(13)]
    last = {d: (1, i) for i, d in enumerate(order)}
    group = {**{d: i for i, d in enumerate(order)}, 'd12': 0}.get
    # alpha .01: d12 gets .01 * b(d0) = .004 < b(d9) = .4 * .6^9 = .00403: outside the top 10. The full propagated
    # order lifts it above d10, d11 (score 0); with head=10 it stays where its own order put it
    full = propagate(order, order, last, group, p=.6, alpha=.01, order=order)
    assert full == order[:10] + ['d12', 'd10', 'd11']
    assert propagate(order, order, last, group, p=.6, alpha=.01, order=order, head=10) == order
    # alpha .5 (a document's own b(d) is in its group sum): d_i = 1.5 b(d_i) for 1 <= i < 10, d0 .4 + .5 * .4 = .6;
    # d12 .5 * .4 = .2 lies between d2 .216 and d3 .1296: it enters the head at rank 4 and pushes d9 out of it; the
    # rest keep the given order (d9 d10 d11)
    head = propagate(order, order, last, group, p=.6, alpha=.5, order=order, head=10)
    assert head == ['d0', 'd1', 'd2', 'd12', *order[3:9], 'd9', 'd10', 'd11']
    assert propagate(order, order, last, group, p=.6, alpha=.01, head=10) == full  # no order given: no head rule


def _random_graph(rnd, n=60, k=4, size=5):
    docs = [f'd{i}' for i in range(n)]
    adjacency = {d: rnd.sample([x for x in docs if x != d], k) for d in docs}
    return docs, ToyGroupGraph(adjacency, {d: i // size for i, d in enumerate(docs)})


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_score_order_is_sorting_for_pointwise_scorers(seed):
    """With scores that compare across calls, every search's 'score' order is its observed set sorted by score.

    (An independent route: the kept top h / the top stride of a pass hold the best scores seen, so sorting the
    whole set must give the same list.)
    """
    rnd = random.Random(seed)
    docs, graph = _random_graph(rnd)
    r0 = rnd.sample(docs, 40)
    scorer = HashScorer(salt=str(seed))
    searches = {
        'rerank': lambda fo: SlidingWindowReranker(scorer, window=6, stride=3, budget=25, final_order=fo),
        'slidegar': lambda fo: SlideGAR(scorer, graph, window=6, keep=3, budget=25, final_order=fo),
        'rgs': lambda fo: RGS(scorer, graph, window=6, stride=3, budget=25, queue_size=8, final_order=fo),
        'doc': lambda fo: DocGAREN(scorer, graph, scorer, window=6, keep=3, budget=25, final_order=fo),
        'garen': lambda fo: GAREN(scorer, graph, VoteNavigator(), window=6, keep=3, budget=25, group_budget=3,
                                  propagate=False, final_order=fo),
    }
    for name, make in searches.items():
        paper = make('paper')(first_stage(r0)).docno.tolist()
        score = make('score')(first_stage(r0)).docno.tolist()
        expected = sorted(paper, key=lambda d: -scorer.score('query one', d))
        assert score == expected, name
        assert make('auto')(first_stage(r0)).docno.tolist() == score, name
        assert paper != score, name  # the paper orders differ from score order here (else the test proves nothing)


def test_the_sliding_window_keeps_its_own_order_under_dropped():
    # one bottom-up pass sorts one list in place: its order already merges the windows' relative evidence
    rnd = random.Random(5)
    docs, graph = _random_graph(rnd)
    r0 = rnd.sample(docs, 40)
    scorer = HashScorer()

    def make(fo):
        return SlidingWindowReranker(scorer, window=6, stride=3, budget=25, final_order=fo)
    assert make('dropped')(first_stage(r0)).docno.tolist() == make('paper')(first_stage(r0)).docno.tolist()


class _PlacesRecorded(pt.Transformer):
    """A listwise view of a hash scorer that records where each call placed each document (0-based, best first)."""
    listwise = True

    def __init__(self):
        self.scorer = HashScorer(salt='rgs')
        self.places = []  # per call: {docno: place}

    def transform(self, inp):
        scores = [self.scorer.score(q, d) for q, d in zip(inp['query'], inp['docno'])]
        order = sorted(range(len(inp)), key=lambda i: -scores[i])
        self.places.append({inp['docno'].iloc[i]: place for place, i in enumerate(order)})
        return inp.assign(score=[float(len(inp) - order.index(i)) for i in range(len(inp))])


@pytest.mark.parametrize('seed', [5, 6, 7])
def test_rgs_dropped_keeps_the_queue_and_orders_what_was_truncated_by_its_last_place(seed):
    # RGS's own order puts the documents truncated from Q most recent first: one truncated early, even at the top
    # of its last window, sinks below every later one. 'dropped' (what 'auto' gives a listwise reranker) keeps Q
    # as its windows sorted it and orders the truncated ones by the place their last window gave them, ties most
    # recent first. The places are read from the reranker's side (an independent route to the driver's record).
    rnd = random.Random(seed)
    docs, graph = _random_graph(rnd)
    r0 = rnd.sample(docs, 40)

    def run(fo):
        reranker = _PlacesRecorded()
        out = RGS(reranker, graph, window=6, stride=3, budget=30, queue_size=8, final_order=fo)(first_stage(r0))
        return out.docno.tolist(), reranker.places
    paper, places = run('paper')
    last = {}
    for call in places:
        last.update(call)
    expected = paper[:8] + sorted(paper[8:], key=lambda d: last[d])  # stable: ties keep the recency order
    dropped, _ = run('dropped')
    assert dropped == expected
    assert run('auto')[0] == dropped
    assert dropped != paper  # the orders differ here (else the test proves nothing)
    assert len(set(last[d] for d in paper[8:])) < len(paper[8:])  # and ties occur


class _Listwise(pt.Transformer):
    listwise = True

    def transform(self, inp):
        return inp.assign(score=-inp['rank'].astype(float))


def test_auto_reads_the_declaration_through_pipelines():
    identity = pt.Transformer.from_df(pd.DataFrame(columns=['qid', 'docno']))
    assert is_listwise(ListwiseReranker)
    assert is_listwise(_Listwise())
    assert is_listwise(identity >> _Listwise())
    assert is_listwise(_Listwise() >> DictScorer({}))
    assert not is_listwise(DictScorer({}))
    assert not is_listwise(identity >> DictScorer({}))
    assert resolve_final_order('auto', identity >> _Listwise()) == 'dropped'
    assert resolve_final_order('auto', DictScorer({})) == 'score'
    assert resolve_final_order('paper', _Listwise()) == 'paper'
    for make in (lambda: GAREN(DictScorer({}), ToyGroupGraph(ADJACENCY, GROUPS), VoteNavigator(), final_order='x'),
                 lambda: SlideGAR(DictScorer({}), ToyGroupGraph(ADJACENCY, GROUPS), final_order='best'),
                 lambda: SlidingWindowReranker(DictScorer({}), final_order=None)):
        with pytest.raises(ValueError, match="final_order must be one of"):
            make()


def test_auto_with_a_listwise_reranker_merges_by_dropped_position():
    # window-relative scores (minus the window position): 'score' would compare positions across windows and
    # 'auto' must pick 'dropped'. Here the listwise reranker keeps each window's order, so W~_t = W_t.
    graph = ToyGroupGraph(ADJACENCY, GROUPS)

    def run(final_order):
        return GAREN(_Listwise(), graph, DictScorer(NAVIGATE), window=4, keep=2, budget=10, group_budget=2,
                     tau_switch=1, propagate=False, final_order=final_order)(first_stage(R0)).docno.tolist()
    assert run('auto') == run('dropped')
    assert run('auto') != run('paper')


def test_listwise_view_scores_positions_per_query():
    from pyterrier_garen.analysis import ListwiseView
    inner = DictScorer({'1': 3, '2': 1, '3': 2, '4': 5, '5': 5})
    frame = pd.DataFrame({'qid': ['a', 'a', 'b', 'a', 'b'], 'docno': list('12345')})
    out = ListwiseView(inner)(frame)
    # query a: 4 (5) > 1 (3) > 2 (1) -> scores 3 2 1; query b: 5 (5) > 3 (2) -> 2 1
    assert dict(zip(out.docno, out.score)) == {'4': 3., '1': 2., '2': 1., '5': 2., '3': 1.}
    assert dict(zip(out.docno, out['rank'])) == {'4': 0, '1': 1, '2': 2, '5': 0, '3': 1}
    assert is_listwise(ListwiseView(inner))


class _Sized(ToyGroupGraph):
    def __len__(self):
        return len(self.groups)


def test_budget_at_least_the_collection_warns():
    import warnings

    from pyterrier_garen._driver import warn_budget_covers_collection
    graph = _Sized(ADJACENCY, GROUPS)  # 16 documents
    with pytest.warns(UserWarning, match='budget=16 is at least the 16 documents'):
        SlideGAR(DictScorer(RERANK), graph, window=4, keep=2, budget=16)(first_stage(R0))
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        SlideGAR(DictScorer(RERANK), graph, window=4, keep=2, budget=15)(first_stage(R0))  # one below: silent
        GAREN(DictScorer(RERANK), ToyGroupGraph(ADJACENCY, GROUPS), VoteNavigator(), window=4, keep=2,
              budget=99)(first_stage(R0))  # a graph without len: nothing to check
    assert warn_budget_covers_collection(100, 1400, context='x') is False
    with pytest.warns(UserWarning, match='budget=1400 is at least the 1400'):
        assert warn_budget_covers_collection(1400, 1400, context='x') is True


class _LaterWindowsScoreHigher(pt.Transformer):
    """Listwise: each call scores its rows ``100 * call - position``, so scores do not compare across windows."""
    listwise = True

    def __init__(self):
        self.calls = 0

    def transform(self, inp):
        self.calls += 1
        return inp.assign(score=100. * self.calls - inp['rank'].astype(float))


def test_auto_takes_the_rerankers_declaration_not_score_order():
    # scores that grow with the window: 'score' would put the last window's documents first, 'dropped' merges by
    # the position each document was last placed at; 'auto' must read the reranker's declaration and give 'dropped'
    graph = ToyGroupGraph(ADJACENCY, GROUPS)

    def run(final_order):
        return GAREN(_LaterWindowsScoreHigher(), graph, DictScorer(NAVIGATE), window=4, keep=2, budget=10,
                     group_budget=2, tau_switch=1, propagate=False, final_order=final_order)(
            first_stage(R0)).docno.tolist()
    with pytest.warns(UserWarning, match="final_order='score' orders"):  # what 'score' does here is the defect
        assert run('score') != run('dropped')
    assert run('auto') == run('dropped')


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_propagation_under_score_order_places_the_top_ten_only(seed):
    # GAREN with propagation and final_order='score': propagation re-orders the top PROPAGATION_DEPTH (10) only;
    # every later document keeps its place in the score order of the observed set (an independent route: sorting
    # the observed documents by the pointwise scorer's score)
    rnd = random.Random(seed)
    docs, graph = _random_graph(rnd)
    r0 = rnd.sample(docs, 40)
    scorer = HashScorer(salt=str(seed))

    def run(alpha):
        return GAREN(scorer, graph, VoteNavigator(), window=6, keep=3, budget=25, group_budget=3, alpha=alpha,
                     final_order='score')(first_stage(r0)).docno.tolist()
    got = run(2.0)
    by_score = sorted(got, key=lambda d: -scorer.score('query one', d))
    head = set(got[:10])
    assert got[10:] == [d for d in by_score if d not in head]
    assert len(got) == 25
    assert run(0.0) == by_score  # no group term: nothing moves
    assert got[:10] != by_score[:10]  # alpha 2 lifts group members within the head (else the test proves nothing)


def _searches(reranker, final_order):
    """Every window search of the package, built with ``reranker`` and ``final_order``."""
    graph = ToyGroupGraph(ADJACENCY, GROUPS)
    return {'GAREN': lambda: GAREN(reranker, graph, DictScorer(NAVIGATE), final_order=final_order),
            'DocGAREN': lambda: DocGAREN(reranker, graph, DictScorer({}), final_order=final_order),
            'SlideGAR': lambda: SlideGAR(reranker, graph, final_order=final_order),
            'RGS': lambda: RGS(reranker, graph, final_order=final_order),
            'SlidingWindowReranker': lambda: SlidingWindowReranker(reranker, final_order=final_order)}


@pytest.mark.parametrize('reranker', [_Listwise(), DictScorer({}) >> _Listwise()], ids=['alone', 'last stage'])
def test_score_order_of_a_listwise_reranker_warns_at_construction(reranker, recwarn):
    # 'score' compares the reranker's scores across windows; a listwise reranker's only order one window
    for name, make in _searches(reranker, 'score').items():
        with pytest.warns(UserWarning, match='declares listwise') as caught:
            make()
        assert len(caught) == 1, name
        assert str(caught[0].message) == (
            f"{name}: final_order='score' orders the documents below the kept top by the reranker's scores from every "
            'window, but the reranker (_Listwise) declares listwise = True: its scores only order the documents of one '
            'call, so documents from different calls are compared by their places in their own calls (the best of '
            "every call tie); use final_order='auto' (or 'dropped'), which merges window positions")
        assert caught[0].filename == __file__  # points at the code that built the search
    with pytest.warns(UserWarning, match='declares listwise') as caught:  # built here, not in a helper
        SlideGAR(reranker, ToyGroupGraph(ADJACENCY, GROUPS), final_order='score')
    assert (caught[0].filename, caught[0].lineno) == (__file__, inspect.currentframe().f_lineno - 1)
    recwarn.clear()
    for order in ('auto', 'dropped', 'paper'):  # what a listwise reranker is meant to get
        for make in _searches(reranker, order).values():
            make()
    for make in _searches(DictScorer({}), 'score').values():  # pointwise: scores compare across windows
        make()
    assert not [w for w in recwarn if 'listwise' in str(w.message)]
