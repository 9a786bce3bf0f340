"""Reranker feedback in navigation (GAREN's ``feedback``): group standing moves with the reranker's verdicts."""
import warnings

import pytest
from _toy_graph import GROUPS, R0, first_stage, worked_garen

from pyterrier_garen._garen import group_feedback


def test_group_feedback_by_hand():
    # the worked example's last placements (keep = 2): hits at positions 0 and 1
    last = {'a1': (4, 1), 'a2': (1, 2), 'a3': (2, 2), 'a4': (1, 3), 'y1': (4, 2), 'x1': (2, 3), 'y2': (3, 3),
            'y3': (3, 2), 'w1': (4, 0), 'x2': (4, 3), 'nogroup': (1, 0)}
    # G0: a1 hit, a2 miss -> 0/3; G1: a3 x1 x2 miss -> -3/4; G2: a4 y1 y2 y3 miss -> -4/5; G5: w1 hit -> 1/2
    assert group_feedback(last, lambda d: GROUPS.get(d, -1), keep=2) == {0: 0., 1: -.75, 2: -.8, 5: .5}
    # keep = 3 turns the position-2 documents into hits: G0 a1 a2 -> 2/3, G1 a3 -> (1-2)/4, G2 y1 y3 -> 0/5
    assert group_feedback(last, lambda d: GROUPS.get(d, -1), keep=3) == {0: 2 / 3, 1: -.25, 2: 0., 5: .5}


def test_feedback_reorders_eligible_groups():
    # t=1: W~_1 = [a1 a3 a2 a4]; scored G1 .5, G2 .9 -> standardised (mean .7, std .2) G1 -1, G2 +1.
    # verdicts (keep 2): G1 a3 hit -> +1/2, G2 a4 miss -> -1/2. beta=1: G1 -.5 < G2 .5 (paper order kept);
    # beta=4: G1 -1 + 2 = 1 > G2 1 - 2 = -1, so G1 leads and explore takes x1 before y1
    paper, _, _ = worked_garen()
    paper(first_stage(R0))
    assert paper.last_trace[0]['eligible'] == [2, 1]
    assert paper.last_trace[0]['expansion'] == ['y1', 'x1']
    weak, _, _ = worked_garen(feedback=1.0)
    weak(first_stage(R0))
    assert weak.last_trace[0]['eligible'] == [2, 1]
    strong, _, _ = worked_garen(feedback=4.0)
    strong(first_stage(R0))
    assert strong.last_trace[0]['eligible'] == [1, 2]
    assert strong.last_trace[0]['expansion'] == ['x1', 'y1']


@pytest.mark.parametrize('bad', [-1, float('nan'), 'a'])
def test_feedback_must_be_a_nonnegative_number(bad):
    with pytest.raises(ValueError, match='feedback'):
        worked_garen(feedback=bad)


# ---------------------------------------------------------------------------------------------------------------------
# verdicts along the k-NN graph (link_feedback) and votes weighted by the verdicts (dropped_vote)

def _linked(adjacency):
    """``linked(d)``: the distinct groups of d's neighbours (without d itself and -1), as GAREN computes them."""
    from pyterrier_garen._garen import linked_groups
    return lambda d: linked_groups(d, lambda x: [n for n in adjacency.get(x, []) if n != x],
                                   lambda x: GROUPS.get(x, -1))


LAST = {'a1': (4, 1), 'a2': (1, 2), 'a3': (2, 2), 'a4': (1, 3), 'y1': (4, 2), 'x1': (2, 3), 'y2': (3, 3),
        'y3': (3, 2), 'w1': (4, 0), 'x2': (4, 3), 'nogroup': (1, 0)}


def test_link_feedback_by_hand():
    from _toy_graph import ADJACENCY

    from pyterrier_garen._garen import link_feedback
    linked = _linked(ADJACENCY)
    # reached groups: a1 -> G1 G2, a2 -> G2 G3, a3 -> G1 G0, a4 -> G2 G1, x1 -> G3 G0, y1 -> G5 (itself ignored);
    # keep 2: only a1 (position 1) is a hit. G0: 0 hits 2 misses -> -2/3; G1: a1 hit, a3 a4 miss -> -1/4; G2 the same;
    # G3 -2/3; G5 (y1 miss) -1/2. The own-member feedback differs (G0 0, G1 -.75, G5 +.5: the test above)
    assert link_feedback(LAST, linked, keep=2) == {0: -2 / 3, 1: -.25, 2: -.25, 3: -2 / 3, 5: -.5}
    # keep 3: a2, a3 and y1 (position 2) become hits: G0 a3 hit x1 miss -> 0; G1 a1 a3 hit a4 miss -> 1/4; G2 a1 a2
    # hit a4 miss -> 1/4; G3 a2 hit x1 miss -> 0; G5 y1 hit -> 1/2
    assert link_feedback(LAST, linked, keep=3) == {0: 0., 1: .25, 2: .25, 3: 0., 5: .5}


def test_link_feedback_counts_a_document_once_per_group():
    from pyterrier_garen._garen import link_feedback
    # d1's three neighbours are all in G2 (and one is d1 itself): one hit for G2, not three
    linked = _linked({'a1': ['y1', 'y2', 'y3', 'a1'], 'a2': ['x1', 'nogroup']})
    assert link_feedback({'a1': (1, 0), 'a2': (1, 1)}, linked, keep=1) == {2: .5, 1: -.5}
    assert link_feedback({}, linked, keep=1) == {}


def test_weighted_votes_by_hand():
    from _toy_graph import ADJACENCY

    from pyterrier_garen._garen import vote_groups, weighted_votes
    linked = _linked(ADJACENCY)
    window, kept = ['a1', 'a2', 'a3', 'a4'], {'a1', 'a2'}
    # a1 (kept) -> G1 G2; a2 (kept) -> G2 G3; a3 (dropped) -> G0 G1; a4 (dropped) -> G1 G2
    assert weighted_votes(window, kept, linked, 0.) == {1: 1., 2: 2., 3: 1.}  # G0 only from a dropped document
    assert weighted_votes(window, kept, linked, .5) == {1: 2., 2: 2.5, 3: 1., 0: .5}
    paper = vote_groups(window, lambda x: [n for n in ADJACENCY.get(x, []) if n != x], lambda x: GROUPS.get(x, -1))
    assert weighted_votes(window, kept, linked, 1.) == paper == {1: 3, 2: 3, 3: 1, 0: 1}
    assert weighted_votes(window, set(), linked, 0.) == {}


def _kept_a2():
    """The worked example with a2 re-ranked second (a1 10, a2 9.5, a3 8, a4 1): W~_1 keeps a1 a2, drops a3 a4."""
    garen, reranker, _ = worked_garen(group_budget=1)
    reranker.scores = {**reranker.scores, 'a2': 9.5}
    return garen


@pytest.mark.parametrize(('dropped', 'group', 'expansion'), [
    (1.0, 1, ['x1', 'x2']),   # paper votes G1 3 = G2 3: the tie goes to G1 (best first-stage rank a3 = 2 < a4 = 3)
    (0.9, 2, ['y1', 'y2']),   # G1 1 + .9 + .9 = 2.8 < G2 1 + 1 + .9 = 2.9
    (0.5, 2, ['y1', 'y2']),   # G1 2 < G2 2.5
    (0.0, 2, ['y1', 'y2']),   # G1 1 (a1) < G2 2 (a1 a2); G0 is no candidate
])
def test_dropped_vote_steers_which_group_is_scored(dropped, group, expansion):
    # group_budget 1: the navigator scores one group, the one with the highest vote; t = 1 explores its pool
    garen = _kept_a2()
    garen.dropped_vote = dropped
    garen(first_stage(R0))
    step = garen.last_trace[0]
    assert step['chosen_groups'] == [group]
    assert step['expansion'] == expansion
    assert (0 in step['candidates']) == (dropped > 0)


@pytest.mark.parametrize(('gamma', 'eligible', 'expansion'), [(3.0, [2, 1], ['y1', 'x1']), (5.0, [1, 2], ['x1', 'y1'])])
def test_link_feedback_reorders_eligible_groups(gamma, eligible, expansion):
    # t=1: W~_1 = [a1 a3 a2 a4], keep 2: a1 a3 hits, a2 a4 misses. Links: a1 -> G1 G2, a3 -> G0 G1 (hits), a2 -> G2 G3,
    # a4 -> G1 G2 (misses): G1 (2 - 1) / 4 = +1/4, G2 (1 - 2) / 4 = -1/4. Standardised navigator values G1 -1, G2 +1:
    # gamma 3 -> G1 -.25 < G2 .25 (paper order); gamma 5 -> G1 .25 > G2 -.25
    garen, _, _ = worked_garen(link_feedback=gamma)
    garen(first_stage(R0))
    assert garen.last_trace[0]['eligible'] == eligible
    assert garen.last_trace[0]['expansion'] == expansion


@pytest.mark.parametrize(('name', 'bad'), [
    ('link_feedback', -1), ('link_feedback', float('nan')), ('link_feedback', 'a'),
    ('dropped_vote', -.1), ('dropped_vote', 1.5), ('dropped_vote', True), ('dropped_vote', float('inf'))])
def test_verdict_options_are_checked(name, bad):
    with pytest.raises(ValueError, match=name):
        worked_garen(**{name: bad})


# ---------------------------------------------------------------------------------------------------------------------
# GAREN._with_feedback on hand-made search states: the standardisation, its guards and the groups without verdicts

class _State:
    def __init__(self, cache, last, adjacency=None):
        self.cache, self.last = cache, last
        self.neighbours = lambda d: (adjacency or {}).get(d, [])


class _View:
    def __init__(self, groups):
        self.group_of = lambda d: groups.get(d, -1)
        self.neighbour_groups = {}


def _feedback_values(cache, last, groups, *, value=None, adjacency=None, **options):
    garen, _, _ = worked_garen(**options)  # keep (h) = 2
    state, view = _State(cache, last, adjacency), _View(groups)
    combined = garen._with_feedback(state, view, value or cache.__getitem__)
    values = {g: combined(g) for g in cache}
    return (values, view) if options.get('link_feedback') else values


def test_with_feedback_standardises_and_adds_verdicts_by_hand():
    # scored .2 .6 1.0: mean .6, population std sqrt(.32 / 3) = .326599; verdicts (keep 2): G0 a hit -> +1/2,
    # G1 b miss -> -1/2, G2 no re-ranked member -> 0 (not a verdict of its own); feedback 1.5
    got = _feedback_values({0: .2, 1: .6, 2: 1.0}, {'a': (1, 0), 'b': (1, 3)}, {'a': 0, 'b': 1}, feedback=1.5)
    std = (.32 / 3) ** .5
    assert got == pytest.approx({0: -.4 / std + .75, 1: -.75, 2: .4 / std})


def test_with_feedback_links_give_nothing_to_an_unreached_group():
    # a (hit) links to G1, b (miss) to G1 and G0: G1 (1 - 1) / 3 = 0, G0 -1/2, G2 unreached -> 0; link_feedback 2
    got, view = _feedback_values({0: 1., 1: 2., 2: 3.}, {'a': (1, 1), 'b': (2, 2)}, {'a': 5, 'b': 5, 'x': 1, 'y': 0},
                                 adjacency={'a': ['x'], 'b': ['x', 'y']}, link_feedback=2.0)
    std = (2 / 3) ** .5
    assert got == pytest.approx({0: -1 / std - 1., 1: 0., 2: 1 / std})
    # each document's linked groups are memoised in the view (the search reuses them every iteration)
    assert {d: set(groups) for d, groups in view.neighbour_groups.items()} == {'a': {1}, 'b': {0, 1}}


def test_with_feedback_equal_scores_keep_a_unit_spread():
    # every scored group .5 (std 0) or one scored group: the spread is 1, so the evidence in value() is not rescaled
    value = {0: .8, 1: .5}.__getitem__  # the navigator's .5 plus evidence .3 for G0
    assert _feedback_values({0: .5, 1: .5}, {}, {}, value=value, feedback=1.0) == pytest.approx({0: .3, 1: 0.})
    assert _feedback_values({0: .5}, {}, {}, value=value, feedback=1.0) == pytest.approx({0: .3})
    # non-finite navigator scores take no part in the mean and spread, and stay non-finite
    got = _feedback_values({0: float('-inf'), 1: .5}, {}, {}, feedback=1.0)
    assert got == {0: float('-inf'), 1: 0.}
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # no statistics of an empty set (numpy would warn and give NaN)
        assert _feedback_values({0: float('-inf')}, {}, {}, feedback=1.0) == {0: float('-inf')}
