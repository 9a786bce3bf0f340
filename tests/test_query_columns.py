"""Every search passes its input's query columns on (``query_0`` after a query rewrite, any other column PyTerrier
counts as a query's), as PyTerrier's re-rankers do: each document of a query's ranking, found through the graph or
not, carries that query's values, so ``>> pt.rewrite.reset()`` works after a search (session 40; the searches used
to drop them, and ``reset`` raised a ``KeyError``)."""
import pandas as pd
import pyterrier as pt
import pytest
from _toy_graph import DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen import GAREN, VoteNavigator
from pyterrier_garen._baselines import RGS, DocGAREN, SlideGAR, SlidingWindowReranker
from pyterrier_garen._gar import GAR

GRAPH = ToyGroupGraph({'a': ['x', 'y'], 'b': ['y', 'z'], 'c': ['z'], 'x': ['a'], 'y': ['b'], 'z': ['c']},
                      {'a': 0, 'x': 0, 'b': 1, 'y': 1, 'c': 2, 'z': 2})
SCORES = {'a': 1., 'b': 2., 'c': 0.5, 'x': 3., 'y': 0.2, 'z': 2.5}

SEARCHES = {
    'GAREN': lambda: GAREN(DictScorer(SCORES), GRAPH, VoteNavigator(), window=2, keep=1, budget=4),
    'DocGAREN': lambda: DocGAREN(DictScorer(SCORES), GRAPH, DictScorer(SCORES), window=2, keep=1, budget=4),
    'SlideGAR': lambda: SlideGAR(DictScorer(SCORES), GRAPH, window=2, keep=1, budget=4),
    'RGS': lambda: RGS(DictScorer(SCORES), GRAPH, budget=4, window=2, stride=1),
    'SlidingWindowReranker': lambda: SlidingWindowReranker(DictScorer(SCORES), budget=4, window=2, stride=1),
    'GAR': lambda: GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2),
}


def rewritten():
    """Two queries after a rewrite: ``query`` the new text, ``query_0`` the old one, ``qtype`` another query column
    (a number, so that its type is seen to survive)."""
    frame = pd.concat([first_stage(['a', 'b', 'c']), first_stage(['c', 'a'], qid='q2', query='two')])
    return frame.assign(query_0=frame['qid'].map({'q1': 'old one', 'q2': 'old two'}),
                        qtype=frame['qid'].map({'q1': 7, 'q2': 8}), note='a document column')


@pytest.mark.parametrize('name', SEARCHES)
def test_each_document_carries_its_querys_columns(name):
    out = SEARCHES[name]()(rewritten())
    assert len(out) > 4  # both queries ranked, graph-found documents among them for the graph searches
    for qid, old, qtype in (('q1', 'old one', 7), ('q2', 'old two', 8)):
        rows = out[out.qid == qid]
        assert rows.query_0.tolist() == [old] * len(rows)
        assert rows.qtype.tolist() == [qtype] * len(rows)
    assert 'note' not in out.columns  # a document column has no value for documents the graph found


@pytest.mark.parametrize('name', SEARCHES)
def test_a_rewrite_can_be_undone_after_the_search(name):
    out = (SEARCHES[name]() >> pt.rewrite.reset())(rewritten())
    assert out.groupby('qid')['query'].first().to_dict() == {'q1': 'old one', 'q2': 'old two'}


@pytest.mark.parametrize('name', SEARCHES)
def test_inspection_and_an_empty_input_declare_the_query_columns(name):
    search = SEARCHES[name]()
    columns = rewritten().columns.tolist()
    declared = pt.inspect.transformer_outputs(search, columns)
    assert {'query_0', 'qtype'} <= set(declared)
    assert 'note' not in declared
    assert list(search(rewritten().iloc[:0]).columns) == declared


def test_which_columns_are_the_querys():
    from pyterrier_garen._frames import keep_query_columns, query_columns
    # PyTerrier's rule (every name starting with q, and stashed results), less qid, query and the names taken
    columns = ['qid', 'query', 'docno', 'query_0', 'qtype', 'stashed_results_0', 'score', 'text']
    assert query_columns(columns) == ['query_0', 'qtype', 'stashed_results_0']
    assert query_columns(columns, taken=['qtype']) == ['query_0', 'stashed_results_0']
    # each query's values come from its first row, and a column the output already has keeps the output's values
    inp = pd.DataFrame({'qid': ['1', '1', '2'], 'query': 'q', 'docno': ['a', 'b', 'c'], 'query_0': ['x', 'y', 'z'],
                        'qtype': [5, 5, 6]})
    out = pd.DataFrame({'qid': ['2', '1'], 'query': 'q', 'docno': ['c', 'b'], 'qtype': [0, 0]})
    kept = keep_query_columns(out, inp)
    assert kept.query_0.tolist() == ['z', 'x']
    assert kept.qtype.tolist() == [0, 0]
