"""The navigators against values worked out by hand: the vote heuristic, the centroid cosine, the checks every
navigator makes of its input, and the yes/no scorer's prompt, document budget and failure accounting.

Written after the sixteenth mutation run (docs/testing.md) found these unpinned.
"""
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from _stub_engine import StubEngine
from _toy_graph import ToyGroupGraph
from _vector_stubs import TableEncoder, TableVectors

from pyterrier_garen import CentroidNavigator, GroupCorpusGraph, SummaryNavigator, VoteNavigator, YesNoScorer


def nav_rows(gids, qid='q', query='x', **columns):
    return pd.DataFrame({'qid': qid, 'query': query, 'docno': list(gids), **columns})


# -- VoteNavigator -------------------------------------------------------------------------------------------------
def test_vote_navigator_scores_the_vote():
    out = VoteNavigator()(nav_rows(['4', '0', '2'], vote=[3, 0, 1]))
    assert out.score.tolist() == [3.0, 0.0, 1.0]
    assert out.score.dtype == np.float64
    assert out.docno.tolist() == ['4', '0', '2']
    with pytest.raises(pt.validate.InputValidationError, match=r"VoteNavigator\(\).*missing_columns=\['vote'\]"):
        VoteNavigator()(nav_rows(['4']))


# -- CentroidNavigator ---------------------------------------------------------------------------------------------
@pytest.fixture
def centroid(tmp_path):
    # groups {d0, d1} and {d2}; d0 = (3, 4) -> (.6, .8), d1 = (1, 0), d2 = (0, -2) -> (0, -1)
    edges = np.array([[1, 2], [0, 2], [0, 1]])
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', ['d0', 'd1', 'd2'], edges, np.ones(edges.shape),
                                          labels=[0, 0, 1])
    vectors = TableVectors(tmp_path / 'v.npids', {'d0': [3., 4.], 'd1': [1., 0.], 'd2': [0., -2.]})
    return CentroidNavigator(groups, vectors, TableEncoder({'up': [0., 5.], 'right': [2., 0.]}))


def test_centroid_navigator_scores_the_cosine_with_the_mean_of_unit_vectors(centroid):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        out = centroid(pd.concat([nav_rows(['0', '1'], query='up'), nav_rows(['0'], qid='r', query='right')]))
    assert not [w for w in caught if 'vector' in str(w.message)]  # every group document has one: nothing to say
    # group 0: (.6 + 1, .8 + 0) = (1.6, .8) -> (2, 1) / sqrt 5; group 1: (0, -1)
    assert out.score.tolist() == pytest.approx([1 / 5 ** .5, -1.0, 2 / 5 ** .5], abs=1e-6)
    assert out['rank'].tolist() == [0, 1, 0]


@pytest.mark.parametrize('make', ['centroid', 'summary'])
def test_every_embedding_navigator_checks_its_input(centroid, make):
    navigator = centroid if make == 'centroid' else SummaryNavigator(
        ToyGroupGraph({}, {'a': 0, 'b': 1}, summaries={0: 'up', 1: 'right'}), encoder=centroid.encoder)
    name = type(navigator).__name__
    with pytest.raises(pt.validate.InputValidationError, match=rf"{name}\(.*missing_columns=\['query'\]"):
        navigator(pd.DataFrame({'qid': ['q'], 'docno': ['0']}))
    with pytest.raises(ValueError, match=rf"^{name}\(.*docno '7' is not a group id of this artifact"):
        navigator(nav_rows(['0', '7'], query='up'))
    empty = navigator(nav_rows([], query='up'))
    assert list(empty.columns) == ['qid', 'query', 'docno', 'score', 'rank']
    assert (empty.score.dtype, empty['rank'].dtype) == (np.float64, np.int64)


@pytest.mark.parametrize(('cls', 'args', 'needs'), [
    (CentroidNavigator, (None,), 'group_ids, num_groups, docnos_list'),
    (SummaryNavigator, (), 'summary, num_groups')])
def test_an_embedding_navigator_given_a_plain_graph_names_what_it_lacks(cls, args, needs):
    class PlainGraph:
        def neighbours(self, docno):
            return []
    navigator = cls(PlainGraph(), *args, TableEncoder({'up': [0., 1.]}))
    with pytest.raises(TypeError, match=rf'^{cls.__name__} needs a group graph \(a GroupCorpusGraph\), got '
                                        rf'PlainGraph without {needs}; build one with'):
        navigator(nav_rows(['0'], query='up'))


# -- YesNoScorer ---------------------------------------------------------------------------------------------------
def user_turns(engine):
    return [next(m['content'] for m in conv if m['role'] == 'user') for _, convs, _ in engine.log for conv in convs]


def doc_rows(qids, texts, query='alpha beta'):
    return pd.DataFrame({'qid': qids, 'query': query, 'docno': [f'd{i}' for i in range(len(qids))], 'text': texts})


def test_the_default_instruction_is_qwen3_rerankers():
    engine = StubEngine()
    YesNoScorer(engine)(doc_rows(['1'], ['alpha']))
    assert user_turns(engine) == ['<Instruct>: Given a query, retrieve relevant passages that answer the query\n'
                                  '<Query>: alpha beta\n<Document>: alpha']


def test_instructions_by_qid_of_either_type_and_by_query():
    engine = StubEngine()
    YesNoScorer(engine, instruction={'7': 'seven', 8: 'eight'})(doc_rows([7, 8], ['a', 'b']))
    assert [turn.split('\n')[0] for turn in user_turns(engine)] == ['<Instruct>: seven', '<Instruct>: eight']
    engine = StubEngine()
    YesNoScorer(engine, instruction=lambda qid, query: f'{qid}:{query.split()[1]}')(doc_rows(['1'], ['a']))
    assert user_turns(engine)[0].startswith('<Instruct>: 1:beta\n')


def test_a_document_cut_to_its_budget_fills_the_context_but_8_tokens():
    documents = {}
    for query in ('one', 'one two three four five'):
        engine = StubEngine(context_length=200)
        YesNoScorer(engine, instruction='judge')(doc_rows(['1'], [' '.join(['w'] * 500)], query=query))
        (_, (conversation,), _), = engine.log
        # the stub counts words, plus 8 per message: whatever the query, the prompt stops 8 tokens short
        assert engine.count_conversation_tokens(conversation) == 200 - 8
        documents[query] = conversation[1]['content'].split('<Document>: ', 1)[1].split()
    # the query is in the prompt once: four more words of query leave the document four words fewer
    assert len(documents['one']) - len(documents['one two three four five']) == 4


def test_a_document_keeps_at_least_16_tokens_and_a_cut_query_names_the_context():
    engine = StubEngine(context_length=60)  # the prompt alone is over 60 - 8 tokens
    scorer = YesNoScorer(engine, instruction='judge')
    assert scorer.doc_budget('judge', 'q') == 16
    with pytest.warns(UserWarning, match=r'1 queries longer than 32 tokens \(1/8 of the context of 60\) were cut'):
        scorer(doc_rows(['1'], [' '.join(['w'] * 40)], query=' '.join(['q'] * 40)))
    document = user_turns(engine)[0].split('<Document>: ', 1)[1]
    assert len(document.split()) == 16
    assert scorer.cut_queries == 1


class Faulty(StubEngine):
    """Fails a request whose document says ``boom``; answers P(yes) = 1 for ``sure`` and NaN for ``odd``."""

    def yes_no(self, conversations, **kwargs):
        if any('boom' in c[1]['content'] for c in conversations):
            raise RuntimeError('server down')
        answers = super().yes_no(conversations, **kwargs)
        for answer, conversation in zip(answers, conversations):
            if 'sure' in conversation[1]['content']:
                answer.probability = 1.0
            if 'odd' in conversation[1]['content']:
                answer.probability = float('nan')
        return answers


def test_failures_are_counted_across_calls_and_name_their_own_query():
    scorer = YesNoScorer(Faulty(), batch_size=2)
    frame = doc_rows([f'q{i}' for i in range(1, 7)], ['alpha', 'sure', 'beta', 'boom', 'gamma', 'odd'])
    frame = frame.set_axis(range(5, 11))
    # each failure is the second row of its batch: the query named is the row's own
    with pytest.warns(UserWarning, match=r"2 rows scored 0 .*\(qid 'q4': RuntimeError: server down; qid 'q6': the "
                                         r"engine gave probability nan, not a number in \[0, 1\]\)"):
        out = scorer(frame)
    # alpha: 1 / 2; sure: 1 (a certain yes is a usable answer); beta: 1 / 2; boom: failed, 0; gamma: 0; odd: 0
    assert out.score.tolist() == [0.5, 1.0, 0.5, 0.0, 0.0, 0.0]
    assert list(out.columns) == ['qid', 'query', 'docno', 'text', 'score', 'rank']
    assert scorer.failed == 2
    with pytest.warns(UserWarning, match="qid 'q4'"):
        scorer(frame)
    assert scorer.failed == 4


def test_the_yes_no_scorer_checks_its_input():
    scorer = YesNoScorer(StubEngine(), text_field='body')
    with pytest.raises(pt.validate.InputValidationError, match=r"YesNoScorer\(.*missing_columns=\['body'\]"):
        scorer(doc_rows(['1'], ['a']))
    empty = scorer(doc_rows([], []).rename(columns={'text': 'body'}))
    assert list(empty.columns) == ['qid', 'query', 'docno', 'body', 'score', 'rank']
    assert empty.score.dtype == np.float64
