"""FirstStageFusion: the weighted reciprocal-rank fusion with the first stage, as a stage of its own."""
import pandas as pd
import pytest
import pyterrier as pt
from _toy_graph import DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen import GAREN, FirstStageFusion


def ranking(docnos, qid='q1'):
    return first_stage(docnos, qid=qid)


def test_formula_by_hand():
    # input a b c d (positions 1-4), R_0 = d c x a (ranks 1-4), k = 1:
    # weight 2: a 1/2 + 2/5 = .9, b 1/3 (not in R_0), c 1/4 + 2/3 = .9167, d 1/5 + 2/2 = 1.2 -> d c a b
    # weight 1: a 1/2 + 1/5 = .7 = d 1/5 + 1/2 (tie: input order), c 1/4 + 1/3 = .5833, b .3333 -> a d c b
    r0 = ranking(['d', 'c', 'x', 'a'])
    inp = ranking(['a', 'b', 'c', 'd']).assign(extra=[1, 2, 3, 4])
    out = FirstStageFusion(r0, weight=2, k=1)(inp)
    assert out.docno.tolist() == ['d', 'c', 'a', 'b']
    assert out.extra.tolist() == [4, 3, 1, 2]  # other columns travel with their rows
    assert out['rank'].tolist() == [0, 1, 2, 3]
    assert out.score.tolist() == [4., 3., 2., 1.]
    assert FirstStageFusion(r0, weight=1, k=1)(inp).docno.tolist() == ['a', 'd', 'c', 'b']
    assert FirstStageFusion(r0, weight=0, k=1)(inp).docno.tolist() == ['a', 'b', 'c', 'd']


def test_per_query_and_first_stage_as_transformer():
    r0 = pd.concat([ranking(['d', 'c', 'x', 'a']), ranking(['a', 'b'], qid='q2')], ignore_index=True)
    inp = pd.concat([ranking(['a', 'b', 'c', 'd']), ranking(['b', 'a'], qid='q2')], ignore_index=True)
    inp = inp.sample(frac=1, random_state=3)  # row order does not matter: rank does
    out = FirstStageFusion(pt.Transformer.from_df(r0), weight=2, k=1)(inp)
    # q2: b 1/2 + 2/3 = 1.1667, a 1/3 + 2/2 = 1.3333 -> a b
    assert out[out.qid == 'q1'].docno.tolist() == ['d', 'c', 'a', 'b']
    assert out[out.qid == 'q2'].docno.tolist() == ['a', 'b']


def test_equals_garen_internal_fusion():
    groups = {'a1': 0, 'a2': 0, 'a3': 1, 'x1': 1, 'x2': 1, 'a4': 2, 'y1': 2, 'y2': 2, 'y3': 2, 'w1': 5}
    adjacency = {'a1': ['x1', 'y1'], 'a2': ['y2'], 'a3': ['x2', 'a1'], 'a4': ['y3', 'a3'], 'y1': ['w1']}
    scores = {'a1': 10, 'a2': 5, 'a3': 8, 'a4': 1, 'y1': 9, 'x1': 2, 'y2': 3, 'y3': 7, 'w1': 11, 'x2': 0}
    r0 = ranking(['a1', 'a2', 'a3', 'a4', 'a5', 'a6'])

    def garen(**kw):
        return GAREN(DictScorer(scores), ToyGroupGraph(adjacency, groups), DictScorer({'0': .2, '1': .5, '2': .9}),
                     window=4, keep=2, budget=10, group_budget=2, **kw)
    for weight in (0.1, 1.0, 5.0):
        inside = garen(fusion=weight)(r0)
        stage = (garen() >> FirstStageFusion(r0, weight=weight))(r0)
        assert stage.docno.tolist() == inside.docno.tolist()
    assert (garen() >> FirstStageFusion(r0, weight=5.0))(r0).docno.tolist() != garen()(r0).docno.tolist()


def test_bad_parameters_and_input():
    with pytest.raises(ValueError, match='weight'):
        FirstStageFusion(ranking(['a']), weight=-1)
    with pytest.raises(ValueError, match='k must be'):
        FirstStageFusion(ranking(['a']), k=0)
    with pytest.raises(ValueError, match=r'^FirstStageFusion\(.*\): the input needs a rank or score column'):
        FirstStageFusion(ranking(['a']))(pd.DataFrame({'qid': ['q1'], 'docno': ['a']}))
    assert repr(FirstStageFusion(ranking(['a']), weight=0.3)) == 'FirstStageFusion(<DataFrame of 1 rows>, weight=0.3)'
    assert len(FirstStageFusion(ranking(['a']))(ranking([])[['qid', 'docno', 'score']])) == 0


def test_garen_tail_fusion_equals_the_depth_aware_stage():
    # 30 documents in 6 groups, 24 observed: the tail below the top 10 is what tail_fusion re-orders
    docs = [f'd{i:02d}' for i in range(30)]
    groups = {d: i % 6 for i, d in enumerate(docs)}
    adjacency = {d: [docs[(i + 7) % 30], docs[(i + 11) % 30]] for i, d in enumerate(docs)}
    scores = {d: float((i * 17) % 30) for i, d in enumerate(docs)}
    r0 = ranking(docs[::-1][:20])  # the first stage holds 20 of them, in reverse order

    def garen(**kw):
        return GAREN(DictScorer(scores), ToyGroupGraph(adjacency, groups),
                     DictScorer({str(g): g / 10 for g in range(6)}), window=6, keep=3, budget=24, group_budget=2,
                     **kw)
    plain = garen()(r0)
    assert len(plain) == 24
    assert plain.iteration.nunique() > 3  # observed over several iterations
    for weight, tail, seen in ((0.1, 1.0, 0.0), (0.0, 2.0, 0.0), (0.5, 0.0, 0.0), (0.1, 1.0, 1.0), (0.1, None, 3.0)):
        inside = garen(fusion=weight, tail_fusion=tail, observed_fusion=seen)(r0)
        stage = FirstStageFusion(r0, weight=weight, tail_weight=tail, observed_weight=seen)(plain)
        assert inside.docno.tolist() == stage.docno.tolist()
        assert inside.docno.tolist()[:10] == FirstStageFusion(r0, weight=weight)(plain).docno.tolist()[:10]
    assert garen(fusion=0.1, tail_fusion=2.0)(r0).docno.tolist() != garen(fusion=0.1)(r0).docno.tolist()
    assert (garen(fusion=0.1, tail_fusion=1.0, observed_fusion=3.0)(r0).docno.tolist()
            != garen(fusion=0.1, tail_fusion=1.0)(r0).docno.tolist())
    with pytest.raises(ValueError, match='tail_fusion'):
        garen(tail_fusion=-1)
    with pytest.raises(ValueError, match='observed_fusion'):
        garen(observed_fusion=-1)


def test_a_repeated_docno_keeps_its_best_placed_row_with_a_warning():
    """Input d1 d2 d1 d3 (by score), first stage d3 d2 d1, weight 1, k 60: the second d1 row (score 2, column
    ``tag`` 'late') is dropped with a warning, and the rest is fused as three documents. By hand: d1 and d3 both
    score 1/61 + 1/63 (a tie kept in input order, d1 first), d2 scores 2/62, which is lower."""
    inp = pd.DataFrame({'qid': ['1'] * 4 + ['2'], 'query': ['a'] * 4 + ['b'], 'docno': ['d1', 'd2', 'd1', 'd3', 'd1'],
                        'score': [4., 3., 2., 1., 1.], 'tag': ['early', 'x', 'late', 'y', 'z']})
    first = pd.DataFrame({'qid': ['1'] * 3, 'docno': ['d3', 'd2', 'd1'], 'score': [3., 2., 1.]})
    with pytest.warns(UserWarning, match='dropped 1 duplicate docnos'):
        out = FirstStageFusion(first, 1.0)(inp)
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'tag', 'rank']  # no index column left behind
    one = out[out.qid == '1']
    assert one.docno.tolist() == ['d1', 'd3', 'd2']
    assert one.tag.tolist() == ['early', 'y', 'x']
    assert one['rank'].tolist() == [0, 1, 2]
    assert one.score.tolist() == [3., 2., 1.]
    assert out[out.qid == '2'].docno.tolist() == ['d1']

    # repeats in two queries are counted together
    twice = pd.concat([inp, inp.assign(qid=inp.qid + 'b')], ignore_index=True)
    with pytest.warns(UserWarning, match='dropped 2 duplicate docnos'):
        FirstStageFusion(first, 1.0)(twice)
