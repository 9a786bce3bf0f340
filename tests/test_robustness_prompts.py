"""A query is budgeted in LLM prompts like the documents are (issue 18, class 5): a 100,000-character query is cut to
its share of the context, counted and said, and the prompt still fits with room for the documents."""
import pandas as pd
import pytest

from pyterrier_garen import ListwiseReranker, YesNoScorer

from _stub_engine import StubEngine

CONTEXT = 4096
HUGE = ' '.join(f'w{i}' for i in range(16000)) + ' ocean tide'  # about 100,000 characters, 16,002 stub tokens


def _frame(query):
    return pd.DataFrame({'qid': ['q1'] * 4, 'query': [query] * 4, 'docno': list('abcd'),
                         'text': ['w0 w1 sea', 'w0 shore', 'nothing here', 'w0 w1 w2 wave'], 'rank': range(4),
                         'score': [4., 3., 2., 1.]})


def test_a_huge_query_is_cut_in_listwise_prompts():
    engine = StubEngine(context_length=CONTEXT)
    reranker = ListwiseReranker(engine, window=4, stride=2)
    with pytest.warns(UserWarning, match=r'1 queries longer than 512 tokens \(1/8 of the context of 4096\) were cut'):
        out = reranker(_frame(HUGE))
    assert reranker.failed == 0  # the stub engine refuses prompts that do not fit: none was refused
    assert reranker.cut_queries == 1
    (_, conversations, kwargs), = engine.log
    assert engine.count_conversation_tokens(conversations[0]) + kwargs['max_tokens'] <= CONTEXT
    assert 'w0 w1 w2' in conversations[0][-1]['content']  # the query's start is kept
    assert list(out.docno) == ['d', 'a', 'b', 'c']  # ordered by overlap with the (cut) query


def test_a_huge_query_is_cut_in_yes_no_prompts():
    engine = StubEngine(context_length=CONTEXT)
    scorer = YesNoScorer(engine)
    with pytest.warns(UserWarning, match='1 queries longer than 512 tokens'):
        scorer(_frame(HUGE))
    assert scorer.cut_queries == 1
    (_, conversations, _), = engine.log
    assert all(engine.count_conversation_tokens(c) <= CONTEXT for c in conversations)
    assert all('<Document>: ' in c[-2]['content'] and 'sea' in c[-2]['content'] for c in conversations[:1])


def test_ordinary_queries_are_not_touched():
    import warnings
    engine = StubEngine(context_length=CONTEXT)
    reranker, scorer = ListwiseReranker(engine, window=4, stride=2), YesNoScorer(engine)
    query = ' '.join(['ocean'] * 512)  # exactly the budget
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        reranker(_frame(query))
        scorer(_frame(query))
    assert reranker.cut_queries == scorer.cut_queries == 0
    assert all(query in c[-1]['content'] or query in c[-2]['content'] for _, cs, _ in engine.log for c in cs)
