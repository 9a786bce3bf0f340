"""The baselines' rules where the worked examples of test_baselines.py did not reach: SlideGAR's turn after a
skipped pool and its last one-document step, the document-level variant's tie rules and trace, RGS's queue size
check and the reference settings. Each expected value is worked out by hand in the comments.

Written after the fifteenth mutation run (docs/testing.md) found these rules unpinned.
"""
import inspect

import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen._baselines import RGS, DocGAREN, SlideGAR, SlidingWindowReranker


def windows(reranker):
    return [call.docno.tolist() for call in reranker.calls]


R8 = [f'r{i}' for i in range(1, 9)]


def test_slidegar_after_a_skipped_frontier_the_next_turn_is_the_frontier():
    scores = {'r1': 5, 'r2': 1, 'r3': 4, 'r4': 0, 'r5': .5, 'r6': 8, 'n1': 6, 'r7': 3, 'r8': 2}
    reranker = DictScorer(scores)
    graph = ToyGroupGraph({'r6': ['n1'], 'r1': ['r2']}, {})
    out = SlideGAR(reranker, graph, window=4, keep=2, budget=8, final_order='paper')(first_stage(R8))
    # 1: [r1 r2 r3 r4] -> [r1 r3 | r2 r4]; seen 4, room min(2, 8 - 4) = 2. The frontier of r1, r3 is empty (r2 is
    #    seen), so its turn is skipped (it counts) and R_0 gives r5, r6.
    # 2: [r1 r3 r5 r6] -> [r6 r1 | r3 r5]; seen 6, room 2. The turn is the frontier's again: n1 (from r6) alone.
    #    (Had the skipped turn not counted, R_0 would give r7, r8.)
    # 3: [r6 r1 n1] -> [r6 n1 | r1]; seen 7, room min(2, 1) = 1: one more step. The frontier of r6, n1 is empty;
    #    its turn is not due (R_0's is): R_0 gives r7.
    # 4: [r6 n1 r7] -> [r6 n1 | r7]; seen 8, room 0: stop.
    assert windows(reranker) == [['r1', 'r2', 'r3', 'r4'], ['r1', 'r3', 'r5', 'r6'], ['r6', 'r1', 'n1'],
                                 ['r6', 'n1', 'r7']]
    # the last window, then the dropped ones, most recently dropped first
    assert out.docno.tolist() == ['r6', 'n1', 'r7', 'r1', 'r3', 'r5', 'r2', 'r4']
    assert out.iteration.tolist() == [2, 3, 4, 1, 1, 2, 1, 1]


DOC_GRAPH = {'r1': ['n1', 'r5', 'n2'], 'r2': ['n2', 'r6']}


def test_docgaren_ties_of_the_navigator_go_to_votes_then_first_stage_rank():
    reranker, navigator = DictScorer({'r1': 10}), DictScorer({})  # the navigator scores every document 0
    model = DocGAREN(reranker, ToyGroupGraph(DOC_GRAPH, {}), navigator, window=3, keep=1, budget=7, trace=True,
                     final_order='paper')
    out = model(first_stage(['r1', 'r2', 'r3', 'r4', 'r5', 'r6']))
    # t=1: window [r1 r2 r3]; candidates in discovery order n1 (1 vote), r5 (1), n2 (2: r1 and r2), r6 (1); all
    #      score 0, so votes first: n2; then r5 (R_0 rank 4) before r6 (5) before n1 (not in R_0). X_1 = [n2, r5].
    # t=2: window [r1 n2 r5]; unobserved neighbours: n1 only (r6 hangs off r2, no longer in the window), already
    #      scored, so no navigator call; one slot is left, backfilled from R_0: r4.
    # t=3: window [r1 n1 r4]; budget 7 reached.
    assert windows(reranker) == [['r1', 'r2', 'r3'], ['r1', 'n2', 'r5'], ['r1', 'n1', 'r4']]
    assert [(c.docno.tolist(), c.vote.tolist()) for c in navigator.calls] == [(['n1', 'r5', 'n2', 'r6'],
                                                                                [1, 1, 2, 1])]
    trace = [{k: step.get(k) for k in ('iteration', 'candidates', 'scored', 'backfill', 'expansion')}
             for step in model.last_trace]
    assert trace == [
        {'iteration': 1, 'candidates': {'n1': 1, 'r5': 1, 'n2': 2, 'r6': 1},
         'scored': {'n1': 0.0, 'r5': 0.0, 'n2': 0.0, 'r6': 0.0}, 'backfill': [], 'expansion': ['n2', 'r5']},
        {'iteration': 2, 'candidates': {'n1': 1}, 'scored': {}, 'backfill': ['r4'], 'expansion': ['n1', 'r4']},
        {'iteration': 3, 'candidates': None, 'scored': None, 'backfill': None, 'expansion': None}]
    # the last window, then the others in the order the reranker last placed them (later windows first)
    assert out.docno.tolist() == ['r1', 'n1', 'r4', 'n2', 'r5', 'r2', 'r3']


def test_docgaren_the_navigator_score_comes_before_the_votes():
    reranker, navigator = DictScorer({'r1': 10}), DictScorer({'n1': 1.0, 'r6': 0.5})
    model = DocGAREN(reranker, ToyGroupGraph(DOC_GRAPH, {}), navigator, window=3, keep=1, budget=5)
    model(first_stage(['r1', 'r2', 'r3', 'r4', 'r5', 'r6']))
    # n1 (score 1, 1 vote) and r6 (.5) before n2 (0, 2 votes)
    assert windows(reranker)[1] == ['r1', 'n1', 'r6']


def test_rgs_refuses_a_queue_or_seed_size_below_1():
    for bad in (0, -3):
        with pytest.raises(ValueError, match='queue_size'):
            RGS(DictScorer({}), None, queue_size=bad)
        with pytest.raises(ValueError, match='seed_size'):
            RGS(DictScorer({}), None, seed_size=bad)


@pytest.mark.parametrize(('cls', 'expected'), [
    (SlidingWindowReranker, {'window': 20, 'stride': 10, 'budget': 100}),
    (SlideGAR, {'window': 20, 'keep': 10, 'budget': 100, 'fill': False}),
    (RGS, {'budget': 100, 'window': 20, 'stride': 10, 'queue_size': None, 'seed_size': None, 'backfill': False}),
    (DocGAREN, {'window': 20, 'keep': 10, 'budget': 100, 'trace': False}),
])
def test_defaults_are_the_reference_settings(cls, expected):
    # shared/BASELINES.md: windows of 20 with stride (SlideGAR's step b) 10 at budget 100; quiet unless asked
    defaults = {name: p.default for name, p in inspect.signature(cls.__init__).parameters.items()
                if p.default is not inspect.Parameter.empty}
    assert defaults == {**expected, 'final_order': 'auto', 'verbose': False}
    # built with its required arguments only, it keeps every default (its repr names nothing else)
    required = [DictScorer({})] + [ToyGroupGraph({}, {}), DictScorer({})][:len(inspect.signature(cls).parameters)
                                                                          - len(defaults) - 1]
    model = cls(*required)
    assert repr(model) == f"{cls.__name__}({', '.join(map(repr, required))})"
    assert all(getattr(model, name) == value for name, value in defaults.items())
