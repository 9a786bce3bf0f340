"""The rerankers' rules against values worked out by hand: which part of a reply holds the ranking, how problems are
counted, the listwise reranker's token arithmetic, its failure accounting and its order of queries, and the
embedding scorer's edges.

Written after the seventeenth mutation run (docs/testing.md) found these unpinned.
"""
import re
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest
from _stub_engine import StubEngine
from _vector_stubs import TableEncoder, TableVectors

from pyterrier_garen import ListwiseReranker, VectorScorer
from pyterrier_garen._rerankers import check_ranking
from pyterrier_garen._vectors import QueryVectors, unit


# -- which part of a reply is the answer ---------------------------------------------------------------------------
@pytest.mark.parametrize(('text', 'expected'), [
    # reasoning before a closing tag (the opening one was prefilled) is not the answer, even with a longer chain
    ('[3] > [1] > [2] > [4] is my guess.</think> [2] > [1]', [1, 0, 2, 3]),
    # two closing tags: the answer follows the last one
    ('a</think> [1] > [2] > [3] </think> [2] > [1]', [1, 0, 2, 3]),
    # the answer has no chain: the identifiers just before the closing tag are not part of it
    ('so [3] > [4]</think> [2] and then [1]', [1, 0, 2, 3]),
    # reasoning that never closes: nothing from its first opening tag on is the answer
    ('[2] > [1] <think>[1] > [2] > [3] > [4]', [1, 0, 2, 3]),
    ('[2] > [1] <think> [3] > [1] > [2] <think> end', [1, 0, 2, 3]),
    # after the last [Document Ranking] mark, and inside the last answer tags
    ('[Reasoning Trace] Step 1: [1] > [2] > [3] [Document Ranking] [2] > [1]', [1, 0, 2, 3]),
    ('I think [1] > [3] > [4] > [2] <answer> [2] > [1] </answer>', [1, 0, 2, 3]),
    ('Here: <answer> [2] > [1] </answer> and also [1] > [3] > [4] > [2]', [1, 0, 2, 3]),
])
def test_the_ranking_is_read_from_the_answer_part_only(text, expected):
    assert check_ranking(text, 4) == (expected, '2 of 4 documents missing')


class Reply:
    def __init__(self, text):
        self.text = text

    def __str__(self):
        if self.text is None:
            raise RuntimeError('no text')
        return self.text


def test_a_reply_that_is_not_a_string_is_read_through_str_and_never_raises():
    assert check_ranking(Reply('[2] > [1]'), 2) == ([1, 0], None)
    assert check_ranking(Reply(None), 3) == ([0, 1, 2], 'no [i] identifiers')


def test_problems_are_counted_and_joined():
    # ids 5 and 7 are out of range (n = 4); 2 and 1 repeat twice in all; 4 is missing
    assert check_ranking('[2] > [5] > [1] > [2] > [7] > [3] > [1]', 4) == (
        [1, 0, 2, 3], '2 out-of-range identifiers; 2 repeated identifiers; 1 of 4 documents missing')


# -- the listwise reranker: token arithmetic -----------------------------------------------------------------------
def test_generation_tokens_per_prompt():
    engine = StubEngine()
    assert ListwiseReranker(engine).generation_tokens() == 6 * 20 + 32
    assert ListwiseReranker(engine, window=5, stride=5).generation_tokens() == 62
    assert ListwiseReranker(engine, prompt='reasoning', window=5, stride=5).generation_tokens() == 2048 + 30
    assert ListwiseReranker(engine, max_tokens=50).generation_tokens() == 50


def docs_frame(texts, qid='1', query='alpha beta gamma delta epsilon', rank=None):
    frame = pd.DataFrame({'qid': qid, 'query': query, 'docno': [f'{qid}-{i}' for i in range(len(texts))],
                          'text': list(texts)})
    return frame if rank is None else frame.assign(rank=rank)


@pytest.mark.parametrize(('n', 'query'), [(1, 'alpha'), (4, 'alpha beta gamma delta epsilon'), (3, 'x')])
def test_documents_cut_to_their_budget_fill_the_context_to_the_documented_bound(n, query):
    # the documented bound: overhead + n * (doc + 4) + max_tokens <= context, with doc as large as it allows; under
    # the stub (a token is a word) a document line "[i] w w ..." is doc + 1 tokens, so the slack the prompt and
    # answer leave is 3n plus a remainder below n
    engine = StubEngine(context_length=700)
    reranker = ListwiseReranker(engine, window=4, stride=2)
    reranker(docs_frame([' '.join(['w'] * 1000)] * n, query=query))
    (_, (conversation,), kwargs), = engine.log
    slack = 700 - engine.count_conversation_tokens(conversation) - kwargs['max_tokens']
    assert 3 * n <= slack < 4 * n
    assert kwargs == {'max_tokens': 6 * 4 + 32, 'stop': ['</answer>']}


class DigitEngine(StubEngine):
    """The stub, counting as a byte-level tokenizer that writes each digit as a token (Qwen's): ``[12]`` is four
    tokens ``[ 1 2 ]`` and a line break one, so a line ``[i] doc`` takes the 4 tokens it was allowed besides the
    document up to ``[9]``, and 5 from ``[10]``."""

    def count_tokens(self, text):
        return len(text.split()) + sum(len(digits) + 1 for digits in re.findall(r'\[(\d+)\]', text)) \
            + text.count('\n')


def test_identifiers_of_several_digits_are_counted_in_the_window():
    # window 20: [10] to [20] take one token more than the 4 a line was allowed, so the prompt took 11 tokens of the
    # answer's room (the stub asserts prompt + max_tokens <= context on every request)
    engine = DigitEngine(context_length=2000)
    reranker = ListwiseReranker(engine, window=20, stride=10)
    reranker(docs_frame([' '.join(['w'] * 1000)] * 20))
    (_, (conversation,), kwargs), = engine.log
    assert 2000 - engine.count_conversation_tokens(conversation) - kwargs['max_tokens'] >= 0
    assert reranker.line_tokens(20) == 5
    assert reranker.line_tokens(4) == 4


class TwoPerCharacter(StubEngine):
    """Two tokens per character, 8 per message: every character of a prompt's framing shows in the arithmetic."""

    def count_tokens(self, text):
        return 2 * len(text)

    def truncate(self, text, max_tokens):
        return text[:max(0, max_tokens) // 2]

    def count_conversation_tokens(self, conversation):
        return sum(2 * len(m.get('content') or '') + 8 for m in conversation)


@pytest.mark.parametrize(('n', 'line'), [
    (1, 8),    # '[1] ': 4 characters, 8 tokens
    (5, 10),   # 5 x '[i] ' and 4 line breaks: 24 characters, 48 tokens, 9.6 a line
    (12, 11),  # 9 x '[i] ' + 3 x '[1i] ' + 11 line breaks: 62 characters, 124 tokens, 10.3 a line
    (20, 11),  # 9 x 4 + 11 x 5 + 19: 110 characters, 220 tokens, 11 a line
])
def test_a_document_line_costs_its_identifier_and_line_break_rounded_up(n, line):
    engine = TwoPerCharacter(context_length=100000)
    reranker = ListwiseReranker(engine, window=20, stride=10)
    assert reranker.line_tokens(n) == line


def test_the_room_per_document_is_the_context_less_prompt_and_answer_over_the_window_less_a_line():
    engine = TwoPerCharacter(context_length=100000)
    reranker = ListwiseReranker(engine, window=20, stride=10)
    query = 'tidal energy'
    overhead = sum(2 * len(m['content']) + 8 for m in reranker.template.messages(query=query, n=20, docs=''))
    for context in (100000, 100000 - 1, 100000 + 19):
        engine._context_length = context
        free = context - overhead - reranker.generation_tokens()
        assert reranker.doc_fit(query, 20) == free // 20 - 11


def document_lengths(engine):
    (_, (conversation,), _), = engine.log
    return [len(line.split()) for line in conversation[1]['content'].split('\n') if line.startswith('[')]


def test_a_fit_below_16_tokens_warns_and_uses_16():
    # rankllm's prompt for the query 'q r s' and two documents, counted by the stub (words, plus 8 per message):
    # system 31 + 8, user 74 + 8 (the query twice) = 121; the answer 6 * 2 + 32 = 44. At a context of
    # 121 + 44 + 2 * (16 + 4) = 205 each document gets exactly 16 tokens; at 203, 15. (A fit computed without the
    # query would be 2 tokens larger.) A document line is "[i]" and its words: 17.
    frame = docs_frame([' '.join(['w'] * 40)] * 2, query='q r s')
    engine = StubEngine(context_length=205)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        ListwiseReranker(engine, window=2, stride=1)(frame)
    assert not [w for w in caught if 'tokens per document' in str(w.message)]  # exactly 16 fits: nothing to say
    assert document_lengths(engine) == [17, 17]
    small = StubEngine(context_length=203)
    with pytest.warns(UserWarning, match='leave only 15 tokens per document'):
        ListwiseReranker(small, window=2, stride=1)(frame)
    assert document_lengths(small) == [17, 17]  # 16 at least


def test_a_context_without_room_for_the_documents_is_one_error_before_any_request():
    # rankllm's prompt for two documents and no query is 115 tokens under the stub, the answer 44: a context below
    # 115 + 44 + 2 * (1 + 4) = 169 holds no token of either document, whatever the query. Every window was refused
    # then, counted as failed and left in its order: a whole run gave the first stage's ranking.
    frame = docs_frame([' '.join(['w'] * 40)] * 2, query='q r s')
    engine = StubEngine(context_length=168)
    with pytest.raises(ValueError) as refused:
        ListwiseReranker(engine, window=2, stride=1)(frame)
    assert str(refused.value) == (
        'ListwiseReranker(StubEngine(), window=2, stride=1): the rankllm prompt for a window of 2 documents takes 115 '
        'tokens before any query or document and max_tokens=44 are kept for the answer, which leaves no room for the '
        "documents in the engine's context of 168 tokens; lower window= or max_tokens=, or give the engine a context "
        'of at least 228 tokens (max_model_len=, vllm serve --max-model-len)')
    assert engine.log == []
    roomy = StubEngine(context_length=169)  # room for the documents without a query: asked, with the warning
    with pytest.warns(UserWarning, match='leave only -2 tokens per document'):
        out = ListwiseReranker(roomy, window=2, stride=1)(frame)
    assert len(roomy.log) == 1
    assert len(out) == 2


# -- the listwise reranker: failures, order of queries, output -----------------------------------------------------
class Faulty(StubEngine):
    """Fails a prompt that holds ``boom``; answers nonsense to one that holds ``garbled``."""

    def generate(self, conversations, **kwargs):
        if any('boom' in c[1]['content'] for c in conversations):
            raise RuntimeError('server down')
        return super().generate(conversations, **kwargs)

    def rule_answer(self, conversation):
        return 'no idea' if 'garbled' in conversation[1]['content'] else super().rule_answer(conversation)


def test_a_failed_window_costs_only_itself_and_every_problem_is_counted():
    # four queries, one window each, all in one call: q1 fails, q2 and q4 are garbled, q3 is answered
    frame = pd.concat([docs_frame(['boom', 'alpha'], qid='q1', query='alpha'),
                       docs_frame(['garbled', 'alpha'], qid='q2', query='alpha'),
                       docs_frame(['beta', 'alpha'], qid='q3', query='alpha'),
                       docs_frame(['garbled', 'alpha'], qid='q4', query='alpha')])
    reranker = ListwiseReranker(Faulty(), window=2, stride=1)
    with pytest.warns(UserWarning, match='windows kept their order|malformed answers') as caught:
        out = reranker(frame)
    messages = [str(w.message) for w in caught]
    assert any("1 windows kept their order because the engine request failed (qid 'q1': RuntimeError: server down)"
               in m for m in messages)
    assert any("2 malformed answers, used what could be parsed (qid 'q2': no [i] identifiers; qid 'q4': no [i] "
               "identifiers)" in m for m in messages)
    assert (reranker.failed, reranker.malformed) == (1, 2)
    # q1 and the garbled ones keep their order; q3 puts alpha (overlap 1) first
    assert out.docno.tolist() == ['q1-0', 'q1-1', 'q2-0', 'q2-1', 'q3-1', 'q3-0', 'q4-0', 'q4-1']
    with pytest.warns(UserWarning, match='windows kept their order|malformed answers'):
        reranker(frame)
    assert (reranker.failed, reranker.malformed) == (2, 4)


def test_queries_keep_their_order_of_appearance_and_their_rank_order():
    frame = pd.concat([docs_frame(['x', 'alpha', 'y'], qid='b', query='alpha', rank=[2, 0, 1]),
                       docs_frame(['only'], qid='a', query='only')]).set_axis(range(10, 14))
    engine = StubEngine()
    out = ListwiseReranker(engine, window=4, stride=2, verbose=True)(frame)
    # b's list in rank order is alpha, y, x; alpha overlaps the query, y and x tie and keep that order
    assert out.docno.tolist() == ['b-1', 'b-2', 'b-0', 'a-0']
    assert out.score.tolist() == [3.0, 2.0, 1.0, 1.0]
    assert out['rank'].tolist() == [0, 1, 2, 0]
    assert list(out.columns) == ['qid', 'query', 'docno', 'text', 'score', 'rank']
    assert engine.log[0][2]['stop'] == ['</answer>']
    engine = StubEngine()
    ListwiseReranker(engine, prompt='reasoning', window=4, stride=2)(frame)
    assert engine.log[0][2] == {'max_tokens': 2048 + 24, 'stop': None}


def test_the_listwise_reranker_checks_its_settings_and_input():
    engine = StubEngine()
    for bad in ({'stride': 0}, {'window': 0}, {'max_doc_tokens': 0}, {'max_tokens': 0}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            ListwiseReranker(engine, **bad)
    with pytest.raises(ValueError, match=r'^stride must be an integer <= 4, got 5 \(at most window, or documents '
                                         r'between windows are skipped\)$'):
        ListwiseReranker(engine, stride=5, window=4)
    reranker = ListwiseReranker(engine, text_field='body')
    assert (reranker.window, reranker.stride) == (20, 10)
    with pytest.raises(pt.validate.InputValidationError, match=r"ListwiseReranker\(.*missing_columns=\['body'\]"):
        reranker(docs_frame(['a']))
    empty = reranker(docs_frame([]).rename(columns={'text': 'body'}))
    assert list(empty.columns) == ['qid', 'query', 'docno', 'body', 'score', 'rank']
    assert empty.score.dtype == np.float64


# -- the embedding scorer ------------------------------------------------------------------------------------------
@pytest.fixture
def scorer(tmp_path):
    vectors = TableVectors(tmp_path / 'v.npids', {f'd{i}': [float(i), 1.0] for i in range(12)})
    return VectorScorer(vectors, TableEncoder({'q': [0., 3.], 'r': [1., 0.]}))


def rows(docnos, query='q'):
    return pd.DataFrame({'qid': '1', 'query': query, 'docno': list(docnos)})


def test_vector_scorer_one_row_and_the_edges_of_the_missing_checks(scorer):
    assert scorer(rows(['d0'])).score.tolist() == [1.0]  # (0, 1) . (0, 1)
    assert scorer(rows(['d1'], 'r')).score.tolist() == pytest.approx([2 ** -.5])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        scorer(rows([f'd{i}' for i in range(12)]))
    assert not [w for w in caught if 'stored vector' in str(w.message)]
    assert scorer.missing_vectors == 0
    with pytest.warns(UserWarning, match='9 of 9 documents have no stored vector'):
        assert scorer(rows([f'x{i}' for i in range(9)])).score.tolist() == [0.0] * 9
    with pytest.raises(ValueError, match=r'^VectorScorer\(.*none of the 10 documents to score is in the vectors'):
        scorer(rows([f'x{i}' for i in range(10)]))
    with pytest.raises(pt.validate.InputValidationError, match=r"VectorScorer\(.*missing_columns=\['query'\]"):
        scorer(pd.DataFrame({'qid': ['1'], 'docno': ['d0']}))
    empty = scorer(rows([]))
    assert list(empty.columns) == ['qid', 'query', 'docno', 'score', 'rank']
    assert (empty.score.dtype, empty['rank'].dtype) == (np.float64, np.int64)


def test_unit_keeps_zero_rows_zero_and_query_vectors_of_no_queries():
    assert unit(np.array([[0., 0.], [3., 4.]])).tolist() == [[0.0, 0.0], [0.6, 0.8]]
    vectors = QueryVectors(TableEncoder({'q': [0., 2.]}))
    assert vectors([]).shape == (0, 0)
    assert vectors([]).dtype == np.float32
    assert vectors(['q', 'q']).tolist() == [[0.0, 1.0], [0.0, 1.0]]


def test_ties_in_the_rank_column_keep_the_input_order():
    # 50 documents whose ranks tie in two blocks, in a shuffled frame: the list is the frame's order within each
    # rank (a stable sort), and the stub (no document overlaps the query) answers the list's own order
    order = np.random.default_rng(0).permutation(50)
    frame = docs_frame([f'text {i}' for i in order], query='nothing', rank=[0 if i < 40 else 1 for i in order])
    out = ListwiseReranker(StubEngine(), window=50, stride=10)(frame)
    expected = [d for d, r in zip(frame.docno, frame['rank']) if r == 0] + \
        [d for d, r in zip(frame.docno, frame['rank']) if r == 1]
    assert out.docno.tolist() == expected
