"""Oracles for ``FirstStageFusion`` (``_fusion.py``) beyond tests/test_fusion.py: how each side is ordered when a
frame has no ``rank`` column (descending ``score``, else row order), and the rank constant at its default 60."""
import pandas as pd
import pyterrier as pt

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
