"""The project's GAR is pyterrier_adaptive.GAR's algorithm, inspectable by PyTerrier (no validation report)."""
import warnings

import pandas as pd
import pyterrier as pt
import pyterrier_adaptive
from ir_measures import R
from _toy_graph import DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen._gar import GAR

GRAPH = ToyGroupGraph({'a': ['x', 'y'], 'b': ['y', 'z'], 'c': ['z'], 'x': ['a'], 'y': ['b'], 'z': ['c']},
                      {'a': 0, 'x': 0, 'b': 1, 'y': 1, 'c': 2, 'z': 2})
SCORES = {'a': 1., 'b': 2., 'c': 0.5, 'x': 3., 'y': 0.2, 'z': 2.5}


def test_same_output_as_pyterrier_adaptive():
    inp = pd.concat([first_stage(['a', 'b', 'c']), first_stage(['c', 'a'], qid='q2', query='two')])
    ours = GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2)(inp)
    theirs = pyterrier_adaptive.GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2)(inp)
    pd.testing.assert_frame_equal(ours, theirs)


def test_inspectable_and_empty_in_empty_out():
    scorer = DictScorer(SCORES)
    gar = GAR(scorer, GRAPH, num_results=4)
    columns = ['qid', 'query', 'docno', 'score', 'rank']
    assert pt.inspect.transformer_outputs(gar, columns) == ['qid', 'query', 'docno', 'rank', 'score', 'iteration']
    out = gar(pd.DataFrame(columns=columns))
    assert len(out) == 0
    assert list(out.columns) == ['qid', 'query', 'docno', 'rank', 'score', 'iteration']
    assert scorer.num_calls == 0
    assert repr(gar).startswith('GAR(')
    assert 'num_results=4' in repr(gar)


def test_experiment_validates_without_a_report():
    topics = pd.DataFrame({'qid': ['q1'], 'query': ['query one']})
    qrels = pd.DataFrame({'qid': ['q1'], 'docno': ['z'], 'label': [1]})
    first = pt.Transformer.from_df(first_stage(['a', 'b', 'c']))  # z is reached only through the graph
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        table = pt.Experiment([first >> GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2)], topics, qrels,
                              [R @ 10], names=['GAR'])
    assert table['R@10'].iloc[0] == 1.0
