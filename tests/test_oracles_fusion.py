"""Oracles for ``FirstStageFusion`` (``_fusion.py``) beyond tests/test_fusion.py: how each side is ordered when a
frame has no ``rank`` column (descending ``score``, else row order), and the rank constant at its default 60."""
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen import FirstStageFusion


def frame(docnos, qid='q1', **columns):
    return pd.DataFrame({'qid': qid, 'query': 'q', 'docno': docnos, **columns})


def test_without_rank_both_sides_are_ordered_by_descending_score():
    # input by score: b (3) c (2) a (1), positions 1-3; R_0 by score: a (9) x (5) c (1), ranks 1-3; k = 1, weight 1:
    # b 1/2 = .5, c 1/3 + 1/4 = .583, a 1/4 + 1/2 = .75 -> a c b. (Ascending scores would take the input as a c b
    # and R_0 as c x a: a 1/2 + 1/4, c 1/3 + 1/2, b 1/4 -> c a b.)
    inp = frame(['a', 'b', 'c'], score=[1., 3., 2.])
    r0 = frame(['x', 'a', 'c'], score=[5., 9., 1.])
    out = FirstStageFusion(r0, weight=1, k=1)(inp)
    assert out.docno.tolist() == ['a', 'c', 'b']
    assert out['rank'].tolist() == [0, 1, 2]
    # weight 0: the input's own order (by its score), re-numbered
    assert FirstStageFusion(r0, weight=0, k=1)(inp).docno.tolist() == ['b', 'c', 'a']


def test_a_first_stage_without_rank_or_score_is_taken_in_row_order():
    # R_0 = c a (row order); input a b c by rank; k = 1, weight 3: a 1/2 + 3/3 = 1.5, b 1/3, c 1/4 + 3/2 = 1.75
    r0 = frame(['c', 'a'])
    inp = frame(['a', 'b', 'c'], rank=[0, 1, 2], score=[3., 2., 1.])
    assert FirstStageFusion(r0, weight=3, k=1)(inp).docno.tolist() == ['c', 'a', 'b']
    # as a transformer run on the input's queries (one row per qid reaches it)
    seen = []

    def first(queries):
        seen.append(queries.qid.tolist())
        return r0
    assert FirstStageFusion(pt.apply.generic(first), weight=3, k=1)(inp).docno.tolist() == ['c', 'a', 'b']
    assert seen == [['q1']]


def test_default_rank_constant_is_60():
    # input a b (positions 1 2), R_0 = b x a: a 1/61 + w/63, b 1/62 + w/61 -> b ahead iff w (1/61 - 1/63) > 1/61 - 1/62,
    # i.e. w > (1/61 - 1/62) / (1/61 - 1/63) = 63/124 = .508 at k = 60 (at k = 1: (1/2 - 1/3) / (1/2 - 1/4) = .667)
    inp = frame(['a', 'b'], rank=[0, 1])
    r0 = frame(['b', 'x', 'a'], rank=[0, 1, 2])
    assert FirstStageFusion(r0, weight=0.55)(inp).docno.tolist() == ['b', 'a']
    assert FirstStageFusion(r0, weight=0.45)(inp).docno.tolist() == ['a', 'b']
    assert FirstStageFusion(r0, weight=0.55, k=1)(inp).docno.tolist() == ['a', 'b']


def test_ties_keep_row_order_and_rank_wins_over_score():
    # 50 documents with three score values and no rank: ties keep row order (a stable sort, on both sides)
    scores = [float(s) for s in np.random.default_rng(0).integers(0, 3, 50)]
    docnos = [f'd{i:02d}' for i in range(50)]
    by_score = [docnos[i] for i in sorted(range(50), key=lambda i: -scores[i])]  # Python's sort is stable
    assert FirstStageFusion(frame(docnos), weight=0)(frame(docnos, score=scores)).docno.tolist() == by_score
    # the same ties on the first-stage side: R_0 ranks follow them (input in row order by rank, weight 2, k = 1)
    r0 = {d: r for r, d in enumerate(by_score, start=1)}
    inp = frame(docnos, rank=list(range(50)))
    expected = sorted(docnos, key=lambda d: -(1 / (1 + docnos.index(d) + 1) + 2 / (1 + r0[d])))
    assert FirstStageFusion(frame(docnos, score=scores), weight=2, k=1)(inp).docno.tolist() == expected
    # with both columns, rank decides (here it disagrees with score)
    inp = frame(['a', 'b', 'c'], rank=[0, 1, 2], score=[1., 2., 3.])
    assert FirstStageFusion(frame(['x']), weight=0)(inp).docno.tolist() == ['a', 'b', 'c']
    # rank alone is enough
    assert FirstStageFusion(frame(['c']), weight=1, k=1)(frame(['a', 'b', 'c'], rank=[0, 1, 2])).docno.tolist() == [
        'c', 'a', 'b']


def test_output_frame_shape_and_queries_outside_the_first_stage():
    # two queries, q2 first in the input; q2 is not in the first stage (no second term: input order)
    inp = pd.concat([frame(['b', 'a'], qid='q2', rank=[0, 1], score=[5., 4.], extra=[1, 2]),
                     frame(['a', 'b'], rank=[0, 1], score=[5., 4.], extra=[3, 4])], ignore_index=True)
    out = FirstStageFusion(frame(['b', 'a'], rank=[0, 1]), weight=2, k=1)(inp)
    assert out.qid.tolist() == ['q2', 'q2', 'q1', 'q1']  # queries in input order
    assert out.docno.tolist() == ['b', 'a', 'b', 'a']
    assert list(out.columns) == list(inp.columns)  # no index column added
    assert out.index.tolist() == [0, 1, 2, 3]
    assert out.score.dtype == np.float64
    assert out.score.tolist() == [2., 1., 2., 1.]


def test_default_weight_and_what_the_first_stage_transformer_gets():
    # the default weight is 0.1: below the boundary .508 of test_default_rank_constant_is_60, so a stays first
    inp = frame(['a', 'b'], rank=[0, 1])
    assert FirstStageFusion(frame(['b', 'x', 'a'], rank=[0, 1, 2]))(inp).docno.tolist() == ['a', 'b']
    columns = []

    def first(queries):
        columns.append(list(queries.columns))
        return frame(['b', 'x', 'a'], rank=[0, 1, 2])
    FirstStageFusion(pt.apply.generic(first))(inp)
    assert columns == [['qid', 'query']]


def test_input_without_docno_is_refused_naming_the_stage():
    with pytest.raises(Exception, match=r'(?s)FirstStageFusion.*docno'):
        FirstStageFusion(frame(['a']))(pd.DataFrame({'qid': ['q1'], 'rank': [0]}))


def test_the_first_stage_is_ordered_by_rank_over_score_and_rows():
    # R_0 rows: a (rank 1, score 9), b (rank 0, score 1): by rank b a (by score or by rows it would be a b).
    # Input a b, weight 3, k = 1: a 1/2 + 3/3 = 1.5, b 1/3 + 3/2 = 1.83 -> b a (with R_0 = a b: a 2.0, b 1.33)
    r0 = frame(['a', 'b'], rank=[1, 0], score=[9., 1.])
    assert FirstStageFusion(r0, weight=3, k=1)(frame(['a', 'b'], rank=[0, 1])).docno.tolist() == ['b', 'a']


# ---------------------------------------------------------------------------------------------------------------------
# depth-aware fusion: the first ``head`` documents by ``weight``, the documents below them by ``tail_weight``
# (k = 1 throughout: score = 1/(1 + i) + w/(1 + r), i = 1-based input position, r = 1-based R_0 rank)

def ranked(docnos, qid='q1'):
    return frame(docnos, qid=qid, rank=list(range(len(docnos))))


def test_tail_weight_reorders_only_below_the_head():
    # input a b c d e (i = 1..5), R_0 = e d (r = 1, 2); c, a, b outside R_0.
    inp, r0 = ranked(['a', 'b', 'c', 'd', 'e']), ranked(['e', 'd'])
    # weight 0, head 2: a b stay; tail c 1/4 = .25, d 1/5 + 1/3 = .533, e 1/6 + 1/2 = .667 -> e d c
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=1, head=2)(inp).docno.tolist() == ['a', 'b', 'e', 'd', 'c']
    # no tail weight: the input order (weight 0); the whole list at weight 1: a .5, b .333 -> e d a b c
    assert FirstStageFusion(r0, weight=0, k=1)(inp).docno.tolist() == ['a', 'b', 'c', 'd', 'e']
    assert FirstStageFusion(r0, weight=1, k=1)(inp).docno.tolist() == ['e', 'd', 'a', 'b', 'c']
    # the boundary: head 3 keeps c (3rd) above d and e; head 1 lets d and e above b
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=1, head=3)(inp).docno.tolist() == ['a', 'b', 'c', 'e', 'd']
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=1, head=1)(inp).docno.tolist() == ['a', 'e', 'd', 'b', 'c']
    # head 0: the whole list at the tail weight
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=1, head=0)(inp).docno.tolist() == ['e', 'd', 'a', 'b', 'c']


def test_head_is_the_weight_fused_order_and_tail_positions_are_the_inputs():
    # input a b c d e, R_0 = e c (r = 1, 2): at weight 1 e 1/6 + 1/2 = .667, c 1/4 + 1/3 = .583, a .5, b .333, d .2
    inp, r0 = ranked(['a', 'b', 'c', 'd', 'e']), ranked(['e', 'c'])
    assert FirstStageFusion(r0, weight=1, k=1)(inp).docno.tolist() == ['e', 'c', 'a', 'b', 'd']
    # head 1 = e; tail at weight 0: the input order of the rest (a b c d), not the weight-1 order (c a b d)
    assert FirstStageFusion(r0, weight=1, k=1, tail_weight=0, head=1)(inp).docno.tolist() == ['e', 'a', 'b', 'c', 'd']
    # tail at weight .3 with the input's positions: a .5, c .25 + .1 = .35, b .333, d .2 -> a c b d (with positions
    # re-counted in the fused order, c 1/3 + .1 would lead: c a b d)
    assert FirstStageFusion(r0, weight=1, k=1, tail_weight=.3, head=1)(inp).docno.tolist() == ['e', 'a', 'c', 'b', 'd']
    # tail_weight == weight is the plain fusion
    assert FirstStageFusion(r0, weight=1, k=1, tail_weight=1, head=2)(inp).docno.tolist() == ['e', 'c', 'a', 'b', 'd']


def test_tail_ties_keep_input_order_and_documents_outside_r0_get_no_second_term():
    # input a..g (i = 1..7), R_0 = six other documents, then g (r = 7); head 2, weight 0, tail weight 1:
    # c 1/4 = .25, d .2, e .167, f .143 (none in R_0), g 1/8 + 1/8 = .25: tied with c (exact in binary) -> c first
    inp = ranked(list('abcdefg'))
    r0 = ranked([f'x{i}' for i in range(6)] + ['g'])
    out = FirstStageFusion(r0, weight=0, k=1, tail_weight=1, head=2)(inp)
    assert out.docno.tolist() == ['a', 'b', 'c', 'g', 'd', 'e', 'f']
    assert out['rank'].tolist() == list(range(7))
    assert out.score.tolist() == [7., 6., 5., 4., 3., 2., 1.]
    # tail weight 1.01 breaks the tie for g
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=1.01, head=2)(inp).docno.tolist()[2:4] == ['g', 'c']


def test_head_at_least_the_list_length_is_the_plain_fusion():
    # input a b c, R_0 = c: weight 1 -> a .5, b .333, c .25 + .5 = .75 -> c a b, whatever the tail weight
    inp, r0 = ranked(['a', 'b', 'c']), ranked(['c'])
    for head in (3, 4, 10):
        assert FirstStageFusion(r0, weight=1, k=1, tail_weight=100, head=head)(inp).docno.tolist() == ['c', 'a', 'b']
    # weight 0 with a head covering the list: the input order, untouched by the tail weight
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=100, head=3)(inp).docno.tolist() == ['a', 'b', 'c']
    # one below the length: b is the tail, alone
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=100, head=2)(inp).docno.tolist() == ['a', 'b', 'c']
    assert FirstStageFusion(r0, weight=0, k=1, tail_weight=100, head=1)(inp).docno.tolist() == ['a', 'c', 'b']


def test_tail_options_are_checked_and_shown():
    r0 = ranked(['a'])
    for bad in (dict(tail_weight=-1), dict(tail_weight=float('nan')), dict(head=-1), dict(head=1.5)):
        with pytest.raises(ValueError, match=next(iter(bad))):
            FirstStageFusion(r0, **bad)
    assert 'tail_weight=0.5' in repr(FirstStageFusion(r0, tail_weight=0.5))
    assert 'tail_weight' not in repr(FirstStageFusion(r0))


def test_observed_weight_orders_the_tail_by_when_the_search_first_saw_a_document():
    # input a b c d e (i = 1..5) first seen at iterations 3 1 2 -1 1: observation order b e c a d (ties by input
    # position; -1, GAR's backfill, last): o = a 4, b 1, c 3, d 5, e 2. Head 1 (weight 0: a), observed weight 2:
    # b 1/3 + 2/2 = 1.333, c 1/4 + 2/4 = .75, d 1/5 + 2/6 = .533, e 1/6 + 2/3 = .833 -> b e c d
    inp = ranked(['a', 'b', 'c', 'd', 'e']).assign(iteration=[3, 1, 2, -1, 1])
    r0 = ranked(['x'])
    out = FirstStageFusion(r0, weight=0, k=1, head=1, observed_weight=2)(inp)
    assert out.docno.tolist() == ['a', 'b', 'e', 'c', 'd']
    assert out.iteration.tolist() == [3, 1, 1, 2, -1]  # the rows travel with their columns
    # with the first stage (R_0 = d, tail weight 1): d .2 + 1/2 + 2/6 = 1.033 -> b d e c
    out = FirstStageFusion(ranked(['d']), weight=0, k=1, head=1, tail_weight=1, observed_weight=2)(inp)
    assert out.docno.tolist() == ['a', 'b', 'd', 'e', 'c']
    # without an iteration column (plain re-ranking) the observation order is R_0's, then the documents absent from
    # R_0 in input order. R_0 = d b: o = d 1, b 2, a 3, c 4, e 5. Head a; b 1/3 + 2/3 = 1, c 1/4 + 2/5 = .65,
    # d 1/5 + 2/2 = 1.2, e 1/6 + 2/6 = .5 -> d b c e (with the input order as the observation order: b c d e)
    plain = inp.drop(columns='iteration')
    assert FirstStageFusion(ranked(['d', 'b']), weight=0, k=1, head=1, observed_weight=2)(plain).docno.tolist() == [
        'a', 'd', 'b', 'c', 'e']
    # and with R_0 holding none of them, the input order: the tail stays b c d e
    assert FirstStageFusion(r0, weight=0, k=1, head=1, observed_weight=2)(plain).docno.tolist() == list('abcde')
    # observed weight 0 and no tail weight: the plain fusion (weight 0: the input order)
    assert FirstStageFusion(r0, weight=0, k=1, head=1)(inp).docno.tolist() == list('abcde')
    # head covering the list: nothing below it to re-order
    assert FirstStageFusion(r0, weight=0, k=1, head=5, observed_weight=2)(inp).docno.tolist() == list('abcde')
    with pytest.raises(ValueError, match='observed_weight'):
        FirstStageFusion(r0, observed_weight=-1)


def test_the_observation_rank_in_the_term_is_1_based():
    """Head 0, weight 0, k 1, observation weight 1.5; input x y (i = 1, 2), y looked at first (o: y 1, x 2).
    x 1/2 + 1.5/3 = 1, y 1/3 + 1.5/2 = 1.083 -> y x. With o counted from 0 (y 0, x 1) or from 2 (y 2, x 3) the
    boundary weight moves from 1 to 1/3 or 2 and x stays first at 1.5 only when counted from 2: x 1/2 + 1.5/4 = .875,
    y 1/3 + 1.5/3 = .833. Both ways of reading the observation order: the iteration column, and R_0's order for a
    frame without one."""
    by_iteration = frame(['x', 'y'], rank=[0, 1], iteration=[2, 1])
    out = FirstStageFusion(frame(['z'], rank=[0]), weight=0, k=1, head=0, observed_weight=1.5)(by_iteration)
    assert out.docno.tolist() == ['y', 'x']
    # R_0 = y x at tail weight 0: only the observation term carries R_0 here
    by_r0 = frame(['x', 'y'], rank=[0, 1])
    out = FirstStageFusion(ranked(['y', 'x']), weight=0, k=1, head=0, tail_weight=0, observed_weight=1.5)(by_r0)
    assert out.docno.tolist() == ['y', 'x']
    # just below the boundary (weight .9) x stays first
    out = FirstStageFusion(ranked(['y', 'x']), weight=0, k=1, head=0, tail_weight=0, observed_weight=0.9)(by_r0)
    assert out.docno.tolist() == ['x', 'y']


def test_fuse_first_stage_adds_no_observation_term_unless_weighted():
    """The helper's default observation weight is 0. Input x y z (i = 1..3), z looked at first (o: z 1, x 2, y 3),
    head 0, weights 0, k 1: without a weight the input order x y z; at weight 1, x 1/2 + 1/3 = .833,
    y 1/3 + 1/4 = .583, z 1/4 + 1/2 = .75 -> x z y."""
    from pyterrier_garen._fusion import fuse_first_stage
    seen = {'z': 0, 'x': 1, 'y': 2}
    assert fuse_first_stage(['x', 'y', 'z'], {}, 0.0, 1, tail_weight=0.0, head=0, observed=seen) == ['x', 'y', 'z']
    assert fuse_first_stage(['x', 'y', 'z'], {}, 0.0, 1, tail_weight=0.0, head=0, observed=seen,
                            observed_weight=1.0) == ['x', 'z', 'y']


def test_an_iteration_column_of_text_or_without_values():
    """Input x y z (i = 1..3), head 0, weights 0, k 1, observation weight 1: x 1/2 + 1/(1 + o_x), and so on.
    Iterations '2' '1' '0' (numbers as text) read as 2 1 0: o z 1, y 2, x 3 -> x .75, y .667, z .75 -> x z y (x and
    z tie, input order). No value in the column (None) reads as no column: R_0 = z y x gives the same o, so x z y
    again (the input order x y z would come back if the missing values counted as ties). A value that is not a
    number is refused by name, with the fix."""
    r0 = ranked(['z', 'y', 'x'])
    stage = FirstStageFusion(r0, weight=0, k=1, head=0, tail_weight=0, observed_weight=1)
    assert stage(frame(['x', 'y', 'z'], rank=[0, 1, 2], iteration=['2', '1', '0'])).docno.tolist() == ['x', 'z', 'y']
    assert stage(frame(['x', 'y', 'z'], rank=[0, 1, 2], iteration=[2, 1, 0])).docno.tolist() == ['x', 'z', 'y']
    assert stage(frame(['x', 'y', 'z'], rank=[0, 1, 2], iteration=[None] * 3)).docno.tolist() == ['x', 'z', 'y']
    # a missing value beside real ones counts as last, as GAR's backfill does: o y 1, z 2, x 3 ->
    # x .75, y .833, z .583 -> y x z
    assert stage(frame(['x', 'y', 'z'], rank=[0, 1, 2], iteration=[None, 0, 1])).docno.tolist() == ['y', 'x', 'z']
    with pytest.raises(ValueError, match=r"iteration column must hold numbers .*got 'late' for docno 'y'.*"
                                         r"pd\.to_numeric"):
        stage(frame(['x', 'y', 'z'], rank=[0, 1, 2], iteration=['0', 'late', '1']))
    # at observation weight 0 the column is not read
    assert FirstStageFusion(r0, weight=0, k=1, head=0, tail_weight=0)(
        frame(['x', 'y', 'z'], rank=[0, 1, 2], iteration=['0', 'late', '1'])).docno.tolist() == ['x', 'y', 'z']


def test_a_bad_head_is_refused_by_name():
    for bad in (-1, 1.5):
        with pytest.raises(ValueError, match=r'^head must be an integer >= 0, got'):
            FirstStageFusion(ranked(['a']), head=bad)


def test_iteration_zero_is_a_first_look_and_only_negative_ones_count_as_last():
    """Input d1 d2 d3 (i = 1..3) first seen at iterations -1 (backfill), 1 and 0: observation order d3 d2 d1 (o = 0,
    1, 2; 1-based 1, 2, 3). Head 0, weight 0, observed weight 100, k 60: d1 1/61 + 100/63 = 1.6037, d2 1/62 +
    100/62 = 1.6290, d3 1/63 + 100/61 = 1.6552 -> d3 d2 d1. Were iteration 0 counted as last with the backfill, d2
    would lead."""
    inp = frame(['d1', 'd2', 'd3'], score=[3., 2., 1.], iteration=[-1, 1, 0])
    out = FirstStageFusion(frame(['x'], score=[1.]), weight=0, head=0, observed_weight=100)(inp)
    assert out.docno.tolist() == ['d3', 'd2', 'd1']
