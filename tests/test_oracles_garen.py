"""Oracles for GAREN's formulas: values computed by hand, with parameters where the plausible variants differ.

p = 0.5 or alpha = 0 hide most mistakes of a propagation formula, and a fusion weight far from the decision boundary
hides the rank constant; every case below is chosen so that the variant named in its comment gives another answer.
"""
import pandas as pd
import pytest
from _toy_graph import R0, DictScorer, first_stage, worked_garen

from pyterrier_garen import GAREN, SlidingWindowReranker
from pyterrier_garen._garen import PROPAGATION_DEPTH, fuse_first_stage, propagate

# ---------------------------------------------------------------------------------------------------------------------
# Group-Driven Evidence Propagation, p = 0.7, alpha = 0.3
#
# The last re-ranked window W~_T (iteration 3) holds f1..f12 at positions 0..11; c, m, n, z1, z2 were observed
# earlier. b(d) = (1-p) p^(rank-1) for ranks 1..10:
#   f1 .3  f2 .21  f3 .147  f4 .1029  f5 .07203  f6 .050421  f7 .0352947  f8 .02470629  f9 .017294403
#   f10 .0121060821   f11, f12: 0 (beyond the depth of 10)
# Groups: G5 = {f1, f3}, G1 = {f2, c}, G2 = {f6}, G3 = {f10, m}, G4 = {f11, n}, G6 = {z2}; the rest have none (-1).
# Group sums of b: G5 .447, G1 .21, G2 .050421, G3 .0121060821, G4 0, G6 0.
# score = b + alpha * group sum (the sum includes d itself; no group term for -1):
#   f1 .3+.1341 = .4341     f3 .147+.1341 = .2811    f2 .21+.063 = .273      f4 .1029     f5 .07203
#   f6 .050421+.0151263 = .0655473                   c 0+.063 = .063         f7 .0352947  f8 .02470629
#   f9 .017294403           f10 .0121060821+.0036318 = .0157379              m .0036318
#   zeros, later iteration first, then window position: f11 (3, 10), f12 (3, 11), n (2, 0), z2 (2, 2), z1 (1, 3)
# Variants and what they change:
#   the group sum without d itself: f6 = .050421 < c = .063           p and 1-p swapped: f3 .063+.. < f2
#   depth 11: f11 = .0110 and n = .0025 rise above m and the zeros     depth 9: f10 falls to .0036 with m
#   alpha = 0: f3 .147 < f2 .21                                          -1 taken as a group: z1 rises to .0757
#   ties by earlier iteration or by later position: z1 or f12 moves

FINAL = [f'f{i}' for i in range(1, 13)]
PROP_GROUPS = {'f1': 5, 'f3': 5, 'f2': 1, 'c': 1, 'f6': 2, 'f10': 3, 'm': 3, 'f11': 4, 'n': 4, 'z2': 6}
LAST = {**{d: (3, i) for i, d in enumerate(FINAL)}, 'c': (1, 0), 'z1': (1, 3), 'n': (2, 0), 'm': (2, 1),
        'z2': (2, 2)}
EXPECTED = ['f1', 'f3', 'f2', 'f4', 'f5', 'f6', 'c', 'f7', 'f8', 'f9', 'f10', 'm', 'f11', 'f12', 'n', 'z2', 'z1']


def group_of(docno):
    return PROP_GROUPS.get(docno, -1)


def test_propagation_worked_example():
    assert PROPAGATION_DEPTH == 10
    observed = ['z1', 'c', 'n', 'm', 'z2', *reversed(FINAL)]  # the input order must not matter
    assert propagate(FINAL, observed, LAST, group_of, p=0.7, alpha=0.3) == EXPECTED


def test_propagation_depth_edge():
    """Rank 10 carries evidence to its group, rank 11 does not (with and without alpha)."""
    last = {'a': (1, 9), 'b': (1, 10), 'ma': (0, 1), 'mb': (0, 0)}
    filler = [f'x{i}' for i in range(9)]
    final = filler + ['a', 'b']
    last.update({d: (1, i) for i, d in enumerate(filler)})
    groups = {'a': 1, 'ma': 1, 'b': 2, 'mb': 2}.get
    order = propagate(final, ['mb', 'ma', 'b', 'a', *filler], last, lambda d: groups(d, -1), p=0.7, alpha=0.3)
    # a: b(10) > 0, its mate ma gets alpha * b(10) > 0; b (rank 11) and mb score 0: b (iteration 1) before mb (0),
    # although mb sits at an earlier position
    assert order == filler + ['a', 'ma', 'b', 'mb']


def test_propagation_off_with_alpha_zero_is_the_top_ten_then_last_placement():
    order = propagate(FINAL, ['z1', 'c', 'n', 'm', 'z2', *FINAL], LAST, group_of, p=0.7, alpha=0.0)
    assert order == FINAL[:10] + ['f11', 'f12', 'n', 'm', 'z2', 'c', 'z1']


# ---------------------------------------------------------------------------------------------------------------------
# reciprocal-rank fusion with the first stage: score = 1/(60 + i) + weight/(60 + r), i and r 1-based

def test_fusion_rank_constant_and_one_based_ranks():
    # x (position 1, not in R_0): 1/61 = .0163934; y (position 2, first-stage rank 1): 1/62 + w/61.
    # y overtakes x exactly when w > 61 * (1/61 - 1/62) = 1/62 = .016129
    assert fuse_first_stage(['x', 'y'], {'y': 0}, 0.0160) == ['x', 'y']  # 0-based r (w/60) or k=61 put y first
    assert fuse_first_stage(['x', 'y'], {'y': 0}, 0.0162) == ['y', 'x']  # 0-based i (1/60, 1/61 + w/61): x first
    # a document absent from R_0 gets no second term, whatever the weight
    assert fuse_first_stage(['x', 'y'], {'x': 5}, 100.0) == ['x', 'y']
    # equal fused scores keep the final order
    assert fuse_first_stage(['p', 'q', 'r'], {}, 1.0) == ['p', 'q', 'r']


def test_garen_fusion_option_worked_example():
    # the paper's final order (test_garen_algorithm's worked example, final_order='paper') and R_0 ranks a1..a4 = 1..4:
    #   i: w1 1, a1 2, y1 3, x2 4, a2 5, y3 6, y2 7, a4 8, a3 9, x1 10
    # fusion=1: a1 1/62+1/61 = .032522; a2 1/65+1/62 = .031514; a3 1/69+1/63 = .030366; a4 1/68+1/64 = .030331;
    # then the documents outside R_0 in their final order: w1 1/61, y1 1/63, x2 1/64, y3 1/66, y2 1/67, x1 1/70
    garen, _, _ = worked_garen(fusion=1.0, final_order='paper')
    assert garen(first_stage(R0)).docno.tolist() == ['a1', 'a2', 'a3', 'a4', 'w1', 'y1', 'x2', 'y3', 'y2', 'x1']
    # fusion=0.02: a1 1/62+.02/61 = .016457 > w1 .016393; a2 1/65+.02/62 = .015707 between y1 .015873 and
    # x2 .015625; a4 1/68+.02/64 = .015018 above y2 1/67 = .014925; a3 1/69+.02/63 = .014810 below it, above x1
    garen, _, _ = worked_garen(fusion=0.02, final_order='paper')
    assert garen(first_stage(R0)).docno.tolist() == ['a1', 'w1', 'y1', 'a2', 'x2', 'y3', 'a4', 'y2', 'a3', 'x1']


# ---------------------------------------------------------------------------------------------------------------------
# tie-breaking of equal reranker scores: window order (the order the window was sent in)

def test_equal_reranker_scores_keep_the_window_order():
    r = [f'r{i}' for i in range(6)]
    out = SlidingWindowReranker(DictScorer({}), window=4, stride=2, budget=6)(first_stage(r))
    assert out.docno.tolist() == r  # all scores equal: nothing moves
    # window [r2..r5]: r4 and r5 tie at 1 -> r4, r5, r2, r3; window [r0, r1, r4, r5]: -> r4, r5, r0, r1
    out = SlidingWindowReranker(DictScorer({'r4': 1, 'r5': 1}), window=4, stride=2, budget=6)(first_stage(r))
    assert out.docno.tolist() == ['r4', 'r5', 'r0', 'r1', 'r2', 'r3']


def test_garen_equal_reranker_scores_keep_the_window_order():
    # one group per document, no neighbours: W_1 = [d0..d3] is the only window (budget = window); with p = 0.7 every
    # one of them carries b(d), so they keep the reranker's order, which for equal scores is the window order
    from _toy_graph import ToyGroupGraph
    graph = ToyGroupGraph({}, {f'd{i}': i for i in range(4)})
    out = GAREN(DictScorer({'d2': 1.0}), graph, DictScorer({}), window=4, keep=2, budget=4, p=0.7, alpha=0.3)(
        first_stage(['d0', 'd1', 'd2', 'd3']))
    assert out.docno.tolist() == ['d2', 'd0', 'd1', 'd3']


# ---------------------------------------------------------------------------------------------------------------------
# GAR's budget accounting (pyterrier_adaptive.GAR's algorithm; our subclass only adds inspection)

GAR_GRAPH = {'a': ['x', 'y'], 'b': ['y', 'z'], 'c': ['z'], 'x': ['a'], 'y': ['b'], 'z': ['c']}
GAR_SCORES = {'a': 1., 'b': 2., 'c': 0.5, 'd': 0.1, 'x': 3., 'y': 0.2, 'z': 2.5}


def test_gar_budget_accounting_worked_example():
    from _toy_graph import ToyGroupGraph

    from pyterrier_garen._gar import GAR
    scorer = DictScorer(GAR_SCORES)
    graph = ToyGroupGraph(GAR_GRAPH, {})
    out = GAR(scorer, graph, num_results=5, batch_size=2)(first_stage(['a', 'b', 'c', 'd']))
    # batch 0 (R_0 by first-stage score): a, b -> a 1, b 2. Frontier, best scored first: b's neighbours y, z at 2
    #   (frontier empty < remaining budget 3); a's x at 1 (2 < 3; y keeps 2 > 1). Frontier {y 2, z 2, x 1}.
    # batch 1 (frontier): y, z (ties in insertion order) -> y .2, z 2.5. Remaining budget 1: z (2.5 >= min 1) adds c
    #   at 2.5; y (.2 < 1, frontier full) adds nothing. Frontier {x 1, c 2.5}.
    # batch 2 (R_0): min(2, 5 - 4) = 1 document: c (first stage 2 > d's 1) -> .5; 5 scored = the budget: stop.
    #   x, on the frontier at 1, is never scored.
    assert [call.docno.tolist() for call in scorer.calls] == [['a', 'b'], ['y', 'z'], ['c']]
    assert out.docno.tolist() == ['z', 'b', 'a', 'c', 'y']
    assert out.score.tolist() == [2.5, 2., 1., .5, .2]
    assert out.iteration.tolist() == [1, 0, 0, 2, 1]


def test_gar_backfills_from_the_first_stage_when_the_graph_runs_dry():
    from _toy_graph import ToyGroupGraph

    from pyterrier_garen._gar import GAR
    scorer = DictScorer({'a': 1., 'b': 2.})
    out = GAR(scorer, ToyGroupGraph({}, {}), num_results=3, batch_size=2)(first_stage(['a', 'b', 'c', 'd']))
    # batch 0: a, b; the frontier stays empty, so batch 1 is R_0's c (budget 3 - 2 = 1): 3 scored, no backfill
    assert [call.docno.tolist() for call in scorer.calls] == [['a', 'b'], ['c']]
    assert out.docno.tolist() == ['b', 'a', 'c']
    out = GAR(DictScorer({'a': 1.}), ToyGroupGraph({}, {}), num_results=4, batch_size=8)(first_stage(['a', 'b']))
    # both documents in one batch; the budget of 4 cannot be met and there is nothing left to backfill
    assert out.docno.tolist() == ['a', 'b']


@pytest.mark.parametrize('weight', [0.0160, 0.0162])
def test_fusion_in_garen_equals_the_formula_on_its_plain_order(weight):
    """An independent route: fuse the plain GAREN order by the formula written out here."""
    plain = worked_garen()[0](first_stage(R0)).docno.tolist()
    rank0 = {d: r for r, d in enumerate(R0, start=1)}
    scores = {d: 1 / (60 + i) + (weight / (60 + rank0[d]) if d in rank0 else 0.) for i, d in enumerate(plain, 1)}
    expected = sorted(plain, key=lambda d: (-scores[d], plain.index(d)))
    fused = worked_garen(fusion=weight)[0](first_stage(R0))
    assert fused.docno.tolist() == expected
    assert isinstance(fused, pd.DataFrame)


# ---------------------------------------------------------------------------------------------------------------------
# pure steps at their edges (killed mutants of docs/testing.md)

def test_interleave_when_both_sources_run_dry():
    from pyterrier_garen._garen import interleave
    # slot 1 g1, slot 2 f1, slot 3: both dry before n = 4 -> the two found, as a list
    assert interleave(['g1'], ['f1'], 4, 2) == ['g1', 'f1']
    assert interleave([], [], 3, 2) == []


def test_exploit_now_ignores_documents_without_a_group():
    from pyterrier_garen._garen import exploit_now
    # two top documents outside the graph (-1) do not make a group, even if -1 were passed as eligible
    assert not exploit_now(['u1', 'u2'], lambda d: -1, [-1], 2)
    assert exploit_now(['u1', 'u2'], lambda d: 7, [-1, 7], 2)


def test_vote_groups_counts_window_documents_and_uses_its_memo():
    from pyterrier_garen._garen import vote_groups
    neighbours = {'a': ['x', 'y', 'u'], 'b': ['y', 'y2'], 'c': []}.get
    group_of = {'x': 1, 'y': 2, 'y2': 2, 'u': -1}.get
    # a votes for G1 and G2 (u has no group), b for G2 once although two of its neighbours are in it
    assert vote_groups(['a', 'b', 'c'], neighbours, group_of) == {1: 1, 2: 2}
    memo = {}
    assert vote_groups(['a', 'b', 'c'], neighbours, group_of, cache=memo) == {1: 1, 2: 2}
    assert {d: set(g) for d, g in memo.items()} == {'a': {1, 2}, 'b': {2}, 'c': set()}
    # the memo is what a later call reads (windows overlap): a planted entry is used as it stands
    assert vote_groups(['a', 'b'], neighbours, group_of, cache={'a': (7,)}) == {7: 1, 2: 1}


def test_select_groups_orders_by_vote_then_best_rank_then_id():
    from pyterrier_garen._garen import select_groups
    # vote order, first-stage-rank order and id order all differ here:
    # G2 (vote 3), G4 (vote 2, best rank 0), G3 (vote 2, rank 5), G1 (vote 1); by id it would be G1 G2 G3 G4,
    # without the rank G2 G3 G4 G1
    votes, best = {1: 1, 2: 3, 3: 2, 4: 2}, {4: 0, 3: 5, 1: 1}
    assert select_groups(votes, {}, 4, best_rank=best, is_open=lambda g: True, fill=[]) == [2, 4, 3, 1]
    assert select_groups(votes, {}, 2, best_rank=best, is_open=lambda g: True, fill=[9]) == [2, 4]
    # a group absent from R_0 (no best rank) comes after every ranked one of its vote
    assert select_groups({5: 2, 6: 2}, {}, 2, best_rank={6: 3}, is_open=lambda g: True, fill=[]) == [6, 5]


def test_garen_asks_the_navigator_for_the_best_voted_groups_first():
    """Through GAREN: with K_g = 2 of four candidates, the navigator sees G3 (vote 2) and G2 (best rank 4), not the
    two smallest ids."""
    from _toy_graph import ToyGroupGraph
    groups = {'r0': 0, 'r1': 0, 'r2': 0, 'r3': 0, 'r4': 2, 'r5': 1, 'x1': 1, 'x2': 2, 'x3': 3, 'x4': 4, 'x5': 3}
    adjacency = {'r0': ['x3'], 'r1': ['x5'], 'r2': ['x1'], 'r3': ['x2', 'x4']}
    navigator = DictScorer({})
    GAREN(DictScorer({}), ToyGroupGraph(adjacency, groups), navigator, window=4, keep=1, budget=8, group_budget=2)(
        first_stage(['r0', 'r1', 'r2', 'r3', 'r4', 'r5']))
    assert navigator.calls[0].docno.tolist() == ['3', '2']


@pytest.mark.parametrize(('kwargs', 'name'), [({'window': 2.5}, 'window'), ({'window': 8.0}, 'window'),
                                              ({'keep': 0}, 'keep'), ({'keep': 1.5}, 'keep')])
def test_window_and_keep_must_be_positive_integers(kwargs, name):
    # keep < window alone would accept all four
    with pytest.raises(ValueError, match=name):
        worked_garen(**kwargs)
