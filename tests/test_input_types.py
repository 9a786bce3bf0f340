"""Input a user's own run can hold: numbers stored as text, qids of two types, a first stage that repeats a docno,
vectors that are not finite. Every search reads them as the numbers and queries they are, or refuses them by name."""
import warnings

import numpy as np
import pandas as pd
import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage
from _vector_stubs import TableEncoder, TableVectors

import pyterrier_garen as garen
from pyterrier_garen._gar import GAR

DOCS = [f'd{i}' for i in range(12)]
GRAPH = ToyGroupGraph({d: [DOCS[(i + 1) % 12]] for i, d in enumerate(DOCS)}, {d: i // 4 for i, d in enumerate(DOCS)})
#: the reranker prefers later documents, so a first window of d0 d1 d2 is visible in what it was sent first
SCORES = {d: float(i) for i, d in enumerate(DOCS)}


def _searches():
    """Every stage that reads its input's order, as ``name -> (stage, reranker)``; each re-ranks 3 documents first."""
    out = {}
    for name, make in {
        'GAREN': lambda r: garen.GAREN(r, GRAPH, DictScorer({}), window=3, keep=1, budget=3),
        'SlideGAR': lambda r: garen.SlideGAR(r, GRAPH, window=3, keep=1, budget=3),
        'RGS': lambda r: garen.RGS(r, GRAPH, budget=3, window=3, stride=1, seed_size=3),
        'SlidingWindowReranker': lambda r: garen.SlidingWindowReranker(r, window=3, stride=1, budget=3),
        'HeadReranker': lambda r: garen.HeadReranker(r, depth=3),
        'GAR': lambda r: GAR(r, GRAPH, num_results=3, batch_size=3),
    }.items():
        reranker = DictScorer(SCORES)
        out[name] = (make(reranker), reranker)
    return out


# GAR orders its input by score only, as pyterrier-adaptive's does
@pytest.mark.parametrize(('name', 'column'), [(name, column) for name in _searches() for column in ('score', 'rank')
                                          if (name, column) != ('GAR', 'rank')])
def test_numbers_stored_as_text_order_the_documents_as_numbers(name, column):
    # as text, '9' sorts above '12' and '10' below '1': the first three would be d3 d4 d5 (score) or d0 d1 d10 (rank)
    inp = first_stage(DOCS).drop(columns='rank' if column == 'score' else 'score')
    inp = inp.assign(**{column: inp[column].astype(int).astype(str)})
    stage, reranker = _searches()[name]
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        stage(inp)
    assert sorted(reranker.calls[0].docno) == ['d0', 'd1', 'd2']


@pytest.mark.parametrize('name', list(_searches()))
def test_an_order_column_that_is_not_a_number_is_refused_by_name(name):
    inp = first_stage(DOCS).drop(columns='rank')
    inp['score'] = inp['score'].astype(object)
    inp.loc[4, 'score'] = 'high'
    stage, reranker = _searches()[name]
    with pytest.raises(ValueError, match=r"score column orders its documents and must hold numbers; got 'high' "
                                         r"\(qid 'q1', docno 'd4'; 1 rows like this\)"):
        stage(inp)
    assert reranker.calls == []


def test_fusion_reads_a_first_stage_whose_rank_is_text_as_numbers():
    run = first_stage(DOCS[:4][::-1])  # d3 d2 d1 d0
    r0 = first_stage(DOCS).assign(rank=lambda f: f['rank'].astype(str)).drop(columns='score')
    # weight 5, k 1: d0 1/5 + 5/2, d1 1/4 + 5/3, d2 1/3 + 5/4, d3 1/2 + 5/5: R_0's order wins; as text, '10' and
    # '11' would sit between '1' and '2', moving d2 and d3 down by two ranks (d3: 1/2 + 5/7 < d2's ...)
    out = garen.FirstStageFusion(r0, weight=5.0, k=1)(run)
    assert out.docno.tolist() == ['d0', 'd1', 'd2', 'd3']


def test_fusion_counts_a_repeated_first_stage_docno_at_its_best_placed_row():
    # R_0 = a b c d e f g h a; the run is h g f e d c b a; weight 5, k 1, score 1/(k+i) + 5/(k+r):
    # a 1/9 + 5/2 = 2.611, b 1/8 + 5/3 = 1.792, c 1/7 + 5/4 = 1.393, d 1/6 + 1 = 1.167, h 1/2 + 5/9 = 1.056,
    # e 1/5 + 5/6 = 1.033, f 1/4 + 5/7 = 0.964, g 1/3 + 5/8 = 0.958. With a's last row (r = 9) a would score
    # 1/9 + 5/10 = 0.611 and rank last.
    r0 = first_stage(list('abcdefgha'))
    run = first_stage(list('hgfedcba'))
    with pytest.warns(UserWarning, match='1 first-stage rows repeat a docno ranked higher for the same query; each '
                                         'docno counts at its best-placed row'):
        out = garen.FirstStageFusion(r0, weight=5.0, k=1)(run)
    assert out.docno.tolist() == list('abcdhefg')
    # the same as GAREN's own fusion option, which reads R_0 once per docno
    plain = garen.GAREN(DictScorer({d: ord(d) for d in 'abcdefgh'}), ToyGroupGraph({}, {d: 0 for d in 'abcdefgh'}),
                        DictScorer({}), window=8, keep=4, budget=8, propagate=False, final_order='paper')
    inside = garen.GAREN(plain.reranker, plain.groups, plain.navigator, window=8, keep=4, budget=8, propagate=False,
                         final_order='paper', fusion=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        after = garen.FirstStageFusion(r0, 5.0)(plain(r0))
        assert inside(r0).docno.tolist() == after.docno.tolist()


def _mixed_qids():
    return pd.concat([first_stage(['d0', 'd1', 'd2'], qid='1', query='alpha'),
                      first_stage(['d1', 'd2', 'd3'], qid=1, query='beta')], ignore_index=True)


@pytest.mark.parametrize('name', list(_searches()))
def test_two_qids_with_one_text_are_refused_before_any_call(name):
    stage, reranker = _searches()[name]
    with pytest.raises(ValueError, match=r"the qids '1' \(str\) and 1 \(int\) are different values with the same "
                                         r"text, and would be merged into one query; give every qid one type"):
        stage(_mixed_qids())
    assert reranker.calls == []


def test_fusion_refuses_two_qids_with_one_text_in_its_first_stage():
    with pytest.raises(ValueError, match=r"the qids '1' \(str\) and 1 \(int\)"):
        garen.FirstStageFusion(_mixed_qids(), 1.0)(first_stage(['d0', 'd1']))
    # one type of qid, numeric or text, is read as it is
    ints = first_stage(['d0', 'd1'], qid=7)
    assert garen.FirstStageFusion(ints, 1.0)(ints).docno.tolist() == ['d0', 'd1']


@pytest.mark.parametrize(('kwargs', 'message'), [
    (dict(num_results=0), 'num_results must be a positive integer, got 0'),
    (dict(num_results=-1), 'num_results must be a positive integer, got -1'),
    (dict(num_results=True), 'num_results must be a positive integer, got True'),
    (dict(num_results=2.5), 'num_results must be a positive integer, got 2.5'),
    (dict(num_results=None), 'num_results must be a positive integer, got None'),
    (dict(batch_size=0), 'batch_size must be a positive integer or None, got 0'),
    (dict(batch_size=-2), 'batch_size must be a positive integer or None, got -2'),
])
def test_gar_refuses_a_budget_or_batch_that_is_no_positive_integer(kwargs, message):
    with pytest.raises(ValueError, match=message):
        GAR(DictScorer(SCORES), GRAPH, **kwargs)
    with pytest.raises(ValueError, match=message):
        garen.GroupCorpusGraph.gar(GRAPH, DictScorer(SCORES), **kwargs)


def _vectors(tmp_path, broken):
    table = {'d0': [1., 0.], 'd1': [0., 1.], 'd2': [1., 1.]}
    table[broken] = [np.nan, 0.]
    return TableVectors(tmp_path / 'docnos.npids', table), TableEncoder({'query one': [1., 0.]})


def test_a_stored_vector_that_is_not_finite_scores_minus_infinity_with_a_warning(tmp_path):
    vectors, encoder = _vectors(tmp_path, 'd1')
    scorer = garen.VectorScorer(vectors, encoder=encoder)
    with pytest.warns(UserWarning, match=r"1 of 3 rows have no finite cosine \(a stored vector or the query's holds "
                                         r"NaN or inf; docno \['d1'\]\); they score -inf and rank last"):
        out = scorer(first_stage(['d0', 'd1', 'd2']))
    # cos with (1, 0): d0 1, d2 1/sqrt 2, d1 -inf
    assert out.sort_values('rank').docno.tolist() == ['d0', 'd2', 'd1']
    np.testing.assert_allclose(out.set_index('docno').score[['d0', 'd2']], [1, 2 ** -.5], rtol=1e-6)
    assert out.set_index('docno').score['d1'] == -np.inf
    # warned once, counted every time (a search calls its scorer many times per query)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        scorer(first_stage(['d1', 'd2']))
    assert [str(w.message) for w in caught if 'finite cosine' in str(w.message)] == []
    assert scorer.nonfinite_scores == 2


class _Groups:
    """The part of a group graph the centroid navigator reads: d0 in group 0, d1 and d2 in group 1."""
    num_groups = 2
    group_ids = [0, 1, 1]

    def docnos_list(self):
        return ['d0', 'd1', 'd2']


def test_a_group_whose_centroid_is_not_finite_scores_minus_infinity(tmp_path):
    vectors, encoder = _vectors(tmp_path, 'd2')  # group 1's centroid sums a NaN
    navigator = garen.CentroidNavigator(_Groups(), vectors, encoder=encoder)
    rows = pd.DataFrame({'qid': 'q1', 'query': 'query one', 'docno': ['0', '1']})
    with pytest.warns(UserWarning, match=r"1 of 2 rows have no finite cosine .*docno \['1'\]"):
        out = navigator(rows)
    assert out.score.tolist() == [1.0, -np.inf]
    assert out['rank'].tolist() == [0, 1]


def test_a_row_without_a_query_is_refused_by_the_vector_scorer(tmp_path):
    vectors, encoder = _vectors(tmp_path, 'd2')
    inp = first_stage(['d0', 'd1'])
    inp.loc[1, 'query'] = None
    with pytest.raises(ValueError, match=r"1 rows have no query \(None/NaN\) \(qids \['q1'\]\); every row needs its "
                                         "query"):
        garen.VectorScorer(vectors, encoder=encoder)(inp)
