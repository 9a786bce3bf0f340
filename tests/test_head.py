"""HeadReranker: one more reranker call over the top of every query's ranking, as a stage of its own (_head.py).

Every expected order below is worked by hand from the scores the stub gives.
"""
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen import FirstStageFusion, HeadReranker

from _toy_graph import DictScorer


def run(rows):
    """A result frame from ``[(qid, docno, rank, iteration)]`` rows (query text ``'text of QID'``)."""
    frame = pd.DataFrame(rows, columns=['qid', 'docno', 'rank', 'iteration'])
    return frame.assign(query='text of ' + frame.qid, score=-frame['rank'].astype(float))


# q1: a b c d e (ranks 0-4); q2: x y (fewer documents than the depth); q3: one document
RUN = run([('q1', 'a', 0, 0), ('q1', 'b', 1, 0), ('q1', 'c', 2, 1), ('q1', 'd', 3, 1), ('q1', 'e', 4, 2),
           ('q2', 'x', 0, 0), ('q2', 'y', 1, 3), ('q3', 'z', 0, 0)])
SCORES = {'a': 1, 'b': 5, 'c': 3, 'd': 9, 'e': 0, 'x': 2, 'y': 4, 'z': 1}


def test_the_head_is_sorted_by_the_reranker_and_the_rest_keeps_its_order():
    scorer = DictScorer(SCORES)
    out = HeadReranker(scorer, depth=3)(RUN)
    # q1's head a b c scores 1 5 3 -> b c a; d (9) and e (0) stay below it in input order; q2's x y (2, 4) -> y x
    assert out.qid.tolist() == ['q1'] * 5 + ['q2'] * 2 + ['q3']
    assert out.docno.tolist() == ['b', 'c', 'a', 'd', 'e', 'y', 'x', 'z']
    assert out['rank'].tolist() == [0, 1, 2, 3, 4, 0, 1, 0]
    assert out['score'].tolist() == [5., 4., 3., 2., 1., 2., 1., 1.]
    # every row keeps its own columns (the shared fusion reads iteration), and no other column or index is added
    assert dict(zip(out.docno, out.iteration)) == {'a': 0, 'b': 0, 'c': 1, 'd': 1, 'e': 2, 'x': 0, 'y': 3, 'z': 0}
    assert out['query'].tolist() == ['text of q1'] * 5 + ['text of q2'] * 2 + ['text of q3']
    assert sorted(out.columns) == sorted(RUN.columns)
    assert out.index.tolist() == list(range(8))
    # ONE call for all queries, one window each, in input order, scored as a window search asks (len - position)
    assert scorer.num_calls == 1
    asked = scorer.calls[0]
    assert asked.qid.tolist() == ['q1'] * 3 + ['q2'] * 2 + ['q3']
    assert asked.docno.tolist() == ['a', 'b', 'c', 'x', 'y', 'z']
    assert asked['query'].tolist() == ['text of q1'] * 3 + ['text of q2'] * 2 + ['text of q3']
    assert asked['score'].tolist() == [3., 2., 1., 2., 1., 1.]
    assert asked['rank'].tolist() == [0, 1, 2, 0, 1, 0]


def test_input_order_is_read_from_rank_else_score_and_ties_keep_it():
    shuffled = RUN.iloc[[4, 2, 0, 6, 7, 3, 1, 5]]
    expected = ['b', 'c', 'a', 'd', 'e', 'y', 'x', 'z']
    assert HeadReranker(DictScorer(SCORES), depth=3)(shuffled).docno.tolist() == expected
    by_score = shuffled.drop(columns='rank')  # score = -rank: the same order
    assert HeadReranker(DictScorer(SCORES), depth=3)(by_score).docno.tolist() == expected
    # equal scores: the input order decides (a before c, both 1), b (5) first
    tied = HeadReranker(DictScorer({'a': 1, 'b': 5, 'c': 1}), depth=4)(RUN)
    assert tied.docno.tolist()[:5] == ['b', 'a', 'c', 'd', 'e']  # d scores 0 (the stub's default), e outside


def test_a_depth_of_the_whole_list_and_of_two():
    assert HeadReranker(DictScorer(SCORES), depth=5)(RUN).docno.tolist() == ['d', 'b', 'c', 'a', 'e', 'y', 'x', 'z']
    assert HeadReranker(DictScorer(SCORES), depth=2)(RUN).docno.tolist() == ['b', 'a', 'c', 'd', 'e', 'y', 'x', 'z']


class Faulty(pt.Transformer):
    """Drops document a's row and gives b a NaN score; c gets 1 and the rest their DictScorer score."""

    def transform(self, inp):
        out = DictScorer(SCORES)(inp)
        out.loc[out.docno == 'b', 'score'] = np.nan
        return out[out.docno != 'a']


def test_a_dropped_row_or_nan_goes_to_the_bottom_of_the_head_with_a_warning():
    with pytest.warns(UserWarning, match=r'no usable score for 2 of 6 rows \(1 NaN or infinite, 1 missing'):
        out = HeadReranker(Faulty(), depth=3)(RUN)
    # head a b c: only c has a score -> c, then a and b in input order; d e below
    assert out.docno.tolist() == ['c', 'a', 'b', 'd', 'e', 'y', 'x', 'z']
    assert out['rank'].tolist() == [0, 1, 2, 3, 4, 0, 1, 0]


def test_duplicates_empty_input_and_bad_arguments():
    twice = pd.concat([RUN, RUN.iloc[[1]].assign(rank=7)], ignore_index=True)
    with pytest.warns(UserWarning, match='dropped 1 duplicate docnos'):
        out = HeadReranker(DictScorer(SCORES), depth=3)(twice)
    assert out.docno.tolist() == ['b', 'c', 'a', 'd', 'e', 'y', 'x', 'z']
    assert len(HeadReranker(DictScorer(SCORES))(RUN.iloc[:0])) == 0
    with pytest.raises(ValueError) as info:
        HeadReranker(DictScorer(SCORES), depth=1)
    assert str(info.value) == 'depth must be an integer >= 2, got 1 (documents re-ranked once more per query)'
    with pytest.raises(ValueError, match=r'^HeadReranker\(.*\): the input needs a rank or score column'):
        HeadReranker(DictScorer(SCORES))(RUN[['qid', 'query', 'docno']])
    missing = r"in transformer HeadReranker\(.*missing_columns=\['query'\]"
    with pytest.raises(pt.validate.InputValidationError, match=missing):
        HeadReranker(DictScorer(SCORES))(RUN.drop(columns='query'))
    assert HeadReranker(DictScorer(SCORES)).depth == 20  # by default one window of GAREN's size
    assert repr(HeadReranker(DictScorer(SCORES), depth=3)).startswith('HeadReranker(')
    assert repr(HeadReranker(DictScorer(SCORES), depth=3)).endswith('depth=3)')


def test_before_the_fusion_it_sees_the_search_order_and_the_fusion_reads_its_iterations():
    # composed as compare composes it: the fused order of the re-ranked head, by FirstStageFusion's own formula
    first = run([('q1', d, i, -1) for i, d in enumerate(['e', 'd', 'c', 'b', 'a'])])
    pipe = HeadReranker(DictScorer(SCORES), depth=3) >> FirstStageFusion(first, weight=1.0, k=1)
    # after the call: b c a d e (positions 1-5); R_0 ranks e1 d2 c3 b4 a5
    # b 1/2 + 1/5 = .7, c 1/3 + 1/4 = .5833, a 1/4 + 1/6 = .4167, d 1/5 + 1/3 = .5333, e 1/6 + 1/2 = .6667
    assert pipe(RUN[RUN.qid == 'q1']).docno.tolist() == ['b', 'e', 'c', 'd', 'a']


# ---- GAREN(head_rerank=N): the same call inside the search, before propagation and fusion

def _garen_setup():
    from _toy_graph import ToyGroupGraph
    docs = [f'd{i:02d}' for i in range(30)]
    groups = {d: i % 6 for i, d in enumerate(docs)}
    adjacency = {d: [docs[(i + 7) % 30], docs[(i + 11) % 30]] for i, d in enumerate(docs)}
    scores = {d: float((i * 17) % 30) for i, d in enumerate(docs)}  # distinct: no ties
    first = pd.DataFrame({'qid': 'q1', 'query': 'text of q1', 'docno': docs[::-1][:20], 'rank': range(20)})
    first['score'] = -first['rank'].astype(float)
    return ToyGroupGraph(adjacency, groups), scores, first


def _garen(scorer, graph, **kw):
    from pyterrier_garen import GAREN
    return GAREN(scorer, graph, DictScorer({str(g): g / 10 for g in range(6)}), window=6, keep=3, budget=24,
                 group_budget=2, **kw)


def test_inside_garen_without_propagation_the_call_is_the_stage():
    from pyterrier_garen.analysis import ListwiseView
    graph, scores, first = _garen_setup()
    listwise = ListwiseView(DictScorer(scores))
    inside = _garen(listwise, graph, propagate=False, head_rerank=8)(first)
    stage = (_garen(listwise, graph, propagate=False) >> HeadReranker(listwise, 8))(first)
    plain = _garen(listwise, graph, propagate=False)(first)
    assert inside.docno.tolist() == stage.docno.tolist()
    assert inside.docno.tolist() != plain.docno.tolist()  # the merge's ranks 4-8 were re-ordered
    assert set(inside.docno) == set(plain.docno)  # the same documents: no budget spent
    assert len(inside) == 24
    # the documents below the call keep their place
    assert inside.docno.tolist()[8:] == plain.docno.tolist()[8:]


def test_inside_garen_a_pointwise_call_changes_nothing_even_with_propagation():
    # the final order before propagation is already the reranker's (the kept top h are the best it saw, the rest by
    # score), so the call returns it as it is, and propagation then runs on the same order
    graph, scores, first = _garen_setup()
    scorer = DictScorer(scores)
    plain = _garen(scorer, graph)(first)
    calls = scorer.num_calls
    inside = _garen(scorer, graph, head_rerank=10)(first)
    assert inside.docno.tolist() == plain.docno.tolist()
    assert scorer.num_calls == 2 * calls + 1  # one request more, for the query's head
    # what it was asked: the order before propagation (GAREN's without it), whose top 10 propagation then changes
    unpropagated = _garen(DictScorer(scores), graph, propagate=False)(first).docno.tolist()
    assert scorer.calls[-1].docno.tolist() == unpropagated[:10]
    assert plain.docno.tolist()[:10] != unpropagated[:10]
    with pytest.raises(ValueError, match='head_rerank must be 0 \\(none\\) or at least 2'):
        _garen(scorer, graph, head_rerank=1)


def test_inside_garen_a_query_of_one_document_asks_nothing_more_and_two_documents_ask_once():
    from _toy_graph import ToyGroupGraph
    graph = ToyGroupGraph({'x': [], 'y': []}, {'x': 0, 'y': 1})  # nothing to expand to: the search ends with R_0
    for docs, extra in ((['x'], 0), (['x', 'y'], 1)):
        first = pd.DataFrame({'qid': 'q1', 'query': 'text of q1', 'docno': docs, 'rank': range(len(docs))})
        first['score'] = -first['rank'].astype(float)
        plain, inside = DictScorer({'x': 1, 'y': 2}), DictScorer({'x': 1, 'y': 2})
        assert len(_garen(plain, graph)(first)) == len(docs)
        _garen(inside, graph, head_rerank=5)(first)
        assert inside.num_calls == plain.num_calls + extra, docs


@pytest.mark.parametrize('stage', ['head', 'fusion'])
def test_rows_without_a_qid_docno_or_query_and_two_queries_per_qid_are_refused(stage):
    """A groupby drops a row without a qid (its document would vanish from the ranking) and a missing docno or
    query would be sent as the text 'nan': both shared stages refuse such rows, naming them."""
    def make():
        return HeadReranker(DictScorer(SCORES), depth=3) if stage == 'head' else FirstStageFusion(RUN, weight=0.1)
    for column, where in (('qid', ''), ('docno', " (qids ['q1', 'q2'])"), ('query', " (qids ['q1', 'q2'])")):
        broken = RUN.copy()
        broken[column] = broken[column].astype(object)
        broken.loc[[1, 6], column] = [None, np.nan]
        stage_ = make()
        with pytest.raises(ValueError) as info:
            stage_(broken)
        assert str(info.value) == (f'{stage_!r}: 2 input rows have no {column} (None/NaN){where}; every row needs '
                                   f'its {column}')
    clash = RUN.copy()
    clash.loc[1, 'query'] = 'another text'
    stage_ = make()
    with pytest.raises(ValueError) as info:
        stage_(clash)
    assert str(info.value) == (f"{stage_!r}: qid 'q1' carries 2 different queries (e.g. 'text of q1' and 'another "
                               "text'; 1 qids like this); each qid must name one query: give the queries distinct qids")
    # without a query column the fusion needs none
    assert FirstStageFusion(RUN, weight=0.1)(RUN.drop(columns='query')).docno.tolist()[:5] == ['a', 'b', 'c', 'd',
                                                                                                'e']


class Scripted(pt.Transformer):
    """A listwise reranker that answers each call with the next order of its script (one query, one window)."""
    listwise = True

    def __init__(self, answers):
        self.answers, self.asked = list(answers), []

    def transform(self, inp):
        self.asked.append(inp.docno.tolist())
        answer = self.answers[len(self.asked) - 1]
        assert sorted(answer) == sorted(inp.docno)
        return inp.assign(score=[float(len(answer) - answer.index(d)) for d in inp.docno])


@pytest.mark.parametrize(('final_order', 'with_call', 'without_call'), [
    # 'dropped' (the listwise default): the call's order [d b a] + c is propagated over itself (order=final)
    ('auto', ['b', 'a', 'd', 'c'], ['b', 'a', 'c', 'd']),
    # 'paper': the call's answer [d b a] is W~_T; c (not in it) gets only its group's term
    ('paper', ['d', 'b', 'a', 'c'], ['b', 'a', 'c', 'd'])])
def test_inside_garen_a_listwise_call_then_propagation_worked_by_hand(final_order, with_call, without_call):
    """GAREN with a listwise reranker, the call inside and propagation (p = 0.7, alpha = 1), on four documents that
    one window re-ranks whole (budget 4, no neighbour: the search is that one window).

    Window [a b c d] -> the script's first answer [b a d c]. Groups: d alone in group 0; a, b, c in group 1.
    Without the call, propagation runs over [b a d c]: b(d) = .3 .21 .147 .1029 by rank; group 1 holds
    .3 + .21 + .1029 = .6129, group 0 .147; b .9129, a .8229, c .7158, d .294 -> b a c d (either final order).
    With the call over the top 3 [b a d] -> the script's second answer [d b a]:
    'dropped': propagation over [d b a c]: d .3, b .21, a .147, c .1029; group 0 = .3, group 1 = .4599;
      d .6, b .6699, a .6069, c .5628 -> b a d c.
    'paper': propagation over W~_T = [d b a] (c observed, no base): d .3, b .21, a .147; group 0 .3, group 1 .357;
      d .6, b .567, a .504, c .357 -> d b a c."""
    from pyterrier_garen import GAREN

    from _toy_graph import ToyGroupGraph
    graph = ToyGroupGraph({d: [] for d in 'abcd'}, {'a': 1, 'b': 1, 'c': 1, 'd': 0})
    first = pd.DataFrame({'qid': 'q1', 'query': 'text of q1', 'docno': list('abcd'), 'rank': range(4)})
    first['score'] = -first['rank'].astype(float)

    def garen(reranker, **kw):
        return GAREN(reranker, graph, DictScorer({}), window=4, keep=2, budget=4, group_budget=2, p=0.7, alpha=1.0,
                     final_order=final_order, **kw)
    called = Scripted([['b', 'a', 'd', 'c'], ['d', 'b', 'a']])
    assert garen(called, head_rerank=3)(first).docno.tolist() == with_call
    assert called.asked == [list('abcd'), ['b', 'a', 'd']]  # the call asks the top 3 of the order before propagation
    plain = Scripted([['b', 'a', 'd', 'c']])
    assert garen(plain)(first).docno.tolist() == without_call
    assert plain.asked == [list('abcd')]


@pytest.mark.parametrize('stage', ['head', 'fusion'])
def test_how_both_shared_stages_read_their_input_order(stage):
    """rank wins over score when they disagree; queries keep their order of first appearance (not sorted); rows of
    equal score keep their input order however many (pandas' default sort is not stable beyond 16 rows); a frame
    with rank and no score is read."""
    def make(first):
        return HeadReranker(DictScorer({}), depth=2) if stage == 'head' else FirstStageFusion(first, weight=0.)
    # rank 0 1 2 gives a b c; score, rising with the rank, would give c b a
    frame = pd.DataFrame({'qid': 'q1', 'query': 'text of q1', 'docno': ['a', 'b', 'c'], 'rank': [0, 1, 2],
                          'score': [1., 2., 3.]})
    # the head (a b) ties at the stub's score 0 and keeps its order
    assert make(frame)(frame).docno.tolist() == ['a', 'b', 'c']
    assert make(frame)(frame.drop(columns='score')).docno.tolist() == ['a', 'b', 'c']
    assert make(frame)(frame.drop(columns='rank')).docno.tolist() == ['c', 'b', 'a']
    # q2 comes first in the input and stays first
    two = pd.concat([RUN[RUN.qid == 'q2'], RUN[RUN.qid == 'q1']], ignore_index=True)
    assert make(two)(two).qid.tolist() == ['q2'] * 2 + ['q1'] * 5
    # 40 rows on three scores (2 1 0 2 1 0 ...): each score's rows in input order, a stable sort
    docs = [f'd{i:02d}' for i in range(40)]
    flat = pd.DataFrame({'qid': 'q1', 'query': 'text of q1', 'docno': docs, 'score': [float(2 - i % 3)
                                                                                      for i in range(40)]})
    expected = docs[0::3] + docs[1::3] + docs[2::3]
    assert make(flat)(flat).docno.tolist() == expected
