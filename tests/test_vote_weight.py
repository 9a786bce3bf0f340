"""GAREN's ``vote_weight`` (a group's value = navigator score + weight x its vote), on the worked example by hand."""
import pandas as pd
import pyterrier as pt
import pytest
from _toy_graph import R0, HashScorer, first_stage, worked_garen
from test_robustness_online import _groups

import pyterrier_garen as garen
from pyterrier_garen import _registry

# The worked example at t = 1: W~_1 = [a1 a3 a2 a4] (scores 10 8 5 1), keep 2 -> a1 a3 kept. Neighbour groups:
# a1 -> G1 G2, a3 -> G1 G0, a2 -> G2 G3, a4 -> G2 G1. Paper votes: G1 3, G2 3, G0 1, G3 1 (chosen G1 G2);
# kept only (dropped_vote=0): G1 2, G2 1, G0 1 (G0 is fully observed, so chosen G1 G2). Navigator: G1 .5, G2 .9.


@pytest.mark.parametrize(('weight', 'eligible', 'expansion'), [
    (0.0, [2, 1], ['y1', 'x1']),   # .5 < .9
    (0.3, [2, 1], ['y1', 'x1']),   # G1 .5 + .6 = 1.1 < G2 .9 + .3 = 1.2
    (0.5, [1, 2], ['x1', 'y1']),   # G1 .5 + 1 = 1.5 > G2 .9 + .5 = 1.4
])
def test_the_vote_joins_the_navigator_score(weight, eligible, expansion):
    search, _, _ = worked_garen(dropped_vote=0.0, vote_weight=weight)
    search(first_stage(R0))
    step = search.last_trace[0]
    assert step['candidates'] == {1: 2, 2: 1, 0: 1}
    assert step['scored'] == {1: .5, 2: .9}  # the trace keeps the navigator's own scores
    assert step['eligible'] == eligible
    assert step['expansion'] == expansion


def test_equal_votes_leave_the_order():
    # paper votes: G1 3 = G2 3, so any weight adds the same to both and G2 (.9) stays ahead of G1 (.5)
    search, _, _ = worked_garen(vote_weight=10.0)
    search(first_stage(R0))
    assert search.last_trace[0]['candidates'][1] == search.last_trace[0]['candidates'][2] == 3
    assert search.last_trace[0]['eligible'] == [2, 1]


@pytest.mark.parametrize('bad', [-.01, float('nan'), 'a', None])
def test_vote_weight_is_checked(bad):
    with pytest.raises(ValueError, match='vote_weight'):
        worked_garen(vote_weight=bad)


class _Navigator(pt.Transformer):
    """A navigator of fixed per-(query, group) scores; with ``vote_weight`` it adds the vote itself."""

    def __init__(self, vote_weight=0.):
        self.hash, self.vote_weight = HashScorer('navigator'), vote_weight

    def transform(self, inp):
        out = self.hash(inp)
        return out.assign(score=out['score'] + self.vote_weight * inp['vote'].astype(float))


def test_the_same_as_a_navigator_that_adds_the_vote(tmp_path):
    # an independent route: the test's navigator adds weight x vote to its own score
    groups = _groups(tmp_path)  # 20 documents, groups of five, edges i -> i+1, i+2
    inp = pd.concat([first_stage([f'd{i:02d}' for i in order], qid=qid, query=qid)
                     for qid, order in (('q1', [0, 7, 14, 3, 19, 11]), ('q2', [5, 12, 1, 18]))], ignore_index=True)
    options = dict(window=4, keep=2, budget=12, group_budget=2, dropped_vote=0.0)
    for weight in (.05, 2.):
        by_navigator = garen.GAREN(HashScorer(), groups, _Navigator(weight), **options)(inp)
        by_garen = garen.GAREN(HashScorer(), groups, _Navigator(), vote_weight=weight, **options)(inp)
        pd.testing.assert_frame_equal(by_navigator, by_garen)
    plain = garen.GAREN(HashScorer(), groups, _Navigator(), **options)(inp)
    assert not plain.equals(by_garen)  # the weight 2 changes the run, so the comparison above can fail


def _garen_stage(pipeline):
    stages = pt.inspect.subtransformers(pipeline)['transformers']
    return next(s for s in stages if isinstance(s, garen.GAREN))


def test_garen_plus_adds_the_vote_and_garen_does_not(tmp_path):
    assert _registry.GAREN_PLUS['vote_weight'] == 0.02
    parts = dict(first_stage=pt.Transformer.identity(), reranker=HashScorer(), groups=_groups(tmp_path))
    for navigator in (_Navigator(), garen.VoteNavigator()):
        components = _registry.Components(navigator=navigator, **parts)
        assert _garen_stage(_registry.system('GAREN+').factory(components)).vote_weight == 0.02
        assert _garen_stage(_registry.system('GAREN').factory(components)).vote_weight == 0.0  # the paper's
