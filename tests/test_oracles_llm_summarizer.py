"""Oracles for the LLM summariser (pyterrier_garen._llm_summarizer) and the reply helpers it reads with
(pyterrier_garen._prompts): where the JSON of a reply is looked for and in which order, the limit on candidate
starts, what a usable record keeps, how a group's documents are cut to fit the context (the arithmetic of the cut,
worked out by hand for the stub engine, whose tokens are words and whose messages cost 8 tokens more), batching,
repair rounds and the counters. The twenty-fourth mutation run, docs/testing.md."""
import json

import pytest
from _stub_engine import StubEngine

from pyterrier_garen._llm_summarizer import LLMSummarizer, extract_json, parse_summary
from pyterrier_garen._prompts import PromptTemplate, cap_reply, clean_text, drop_think_blocks, fenced_blocks, fit_query

GOOD = '{"concept": "c", "summary": "s"}'

# ---- drop_think_blocks and fenced_blocks


@pytest.mark.parametrize(('text', 'expected'), [
    ('a<think>x</think>b', 'a b'),
    ('<think>x</think>b', ' b'),                                   # a block at the very start
    ('A<THINK>x</Think>B', 'A B'),                                 # tags in any case
    ('a<think>1</think>b<think>2</think>c', 'a b c'),              # every block, each to its own closing tag
    ('a<think>1</think>b<think>2', 'a b<think>2'),                 # an unclosed block stays
    ('x</think>y<think>z</think>w', 'x</think>y w'),               # a closing tag before any opening one stays
    ('plain text', 'plain text'),
])
def test_drop_think_blocks(text, expected):
    assert drop_think_blocks(text) == expected


@pytest.mark.parametrize(('text', 'expected'), [
    ('```json\n{"a": 1}\n```', ['{"a": 1}']),
    ('```JSON {"a": 1}```', ['{"a": 1}']),
    ('```  json{"a": 1}```', ['{"a": 1}']),                       # the tag after leading blanks
    ('```jsonx```', ['x']),
    ('a```x```b```y', ['x']),                                      # an unclosed fence is no block
    ('```one``` and ```two```', ['one', 'two']),
])
def test_fenced_blocks(text, expected):
    assert fenced_blocks(text) == expected


def test_small_helpers():
    assert clean_text(None) == clean_text(float('nan')) == ''
    assert clean_text('  a \n\t b ') == 'a b'
    assert clean_text(3.5) == '3.5'


def test_every_missing_value_pandas_makes_is_an_empty_text():
    import numpy as np
    import pandas as pd

    from pyterrier_garen._prompts import text_or_empty
    # a column with a gap holds NaN (object or float), pd.NA (string dtype) or NaT (dates): none is text
    for missing in (None, float('nan'), np.float32('nan'), np.float64('nan'), pd.NA, pd.NaT):
        assert text_or_empty(missing) == ''
        assert clean_text(missing) == ''
    assert pd.Series(['a', None], dtype='string').map(text_or_empty).tolist() == ['a', '']
    # numbers that are not missing keep their text, of any float type
    assert [text_or_empty(v) for v in (np.float32(1.5), 0.0, 7, 'nan')] == ['1.5', '0.0', '7', 'nan']
    assert cap_reply(12) == '12'
    assert cap_reply('x' * 100_005) == 'x' * 100_000
    assert len(cap_reply('ab' * 60_000)) == 100_000


# ---- extract_json: the order in which a reply is searched


def test_a_reply_that_is_json():
    assert extract_json(' {"a": 1} ') == {'a': 1}


def test_the_answer_after_the_last_closing_think_tag():
    """Reasoning without its opening tag (it was in the prompt), then the answer."""
    assert extract_json('I think {"concept": "draft"} maybe</think>\n{"b": 2}') == {'b': 2}
    assert extract_json('x{"a": 1}</think>{"b": 2}') == {'b': 2}
    assert extract_json('a</think>{"x": 1}</THINK>{"y": 2}') == {'y': 2}


def test_a_fenced_object_before_an_earlier_brace_in_prose():
    reply = 'Example: {"concept": "x"} and the answer:\n```json\n{"concept": "y"}\n```'
    assert extract_json(reply) == {'concept': 'y'}


def test_a_list_is_not_the_object_but_what_it_holds_may_be():
    assert extract_json('[{"a": 1}]') == {'a': 1}
    with pytest.raises(ValueError, match='^no JSON object found in the reply$'):
        extract_json('[1, 2]')


def test_an_object_right_after_one_character():
    assert extract_json('x{"a": 1}') == {'a': 1}


def test_at_most_64_starts_are_tried():
    assert extract_json('{x ' * 63 + '{"a": 1}') == {'a': 1}      # the 64th start
    with pytest.raises(ValueError, match='^no JSON object found in the reply$'):
        extract_json('{x ' * 64 + '{"a": 1}')                     # the 65th


def test_anything_unreadable_is_a_value_error():
    class Broken:
        def __str__(self):
            raise RuntimeError('no text')
    with pytest.raises(ValueError, match=r'^could not read the reply \(RuntimeError\)$'):
        extract_json(Broken())


# ---- parse_summary


def test_parse_summary_keeps_what_it_uses_and_cleans_it():
    record, error = parse_summary('{"concept": " a \\n b ", "summary": "one.\\n two.", "common_theme": "  t  ", '
                                  '"fingerprints": [{"doc": 1}], "extra": 1}')
    assert error is None
    assert record == {'concept': 'a b', 'summary': 'one. two.', 'common_theme': 't', 'fingerprints': [{'doc': 1}]}
    record, _ = parse_summary('{"concept": "c", "summary": "s", "common_theme": 5, "fingerprints": "none"}')
    assert (record['common_theme'], record['fingerprints']) == ('', [])
    record, _ = parse_summary(GOOD)
    assert (record['common_theme'], record['fingerprints']) == ('', [])


def test_parse_summary_names_every_problem():
    assert parse_summary('{"concept": "", "summary": 3}') == (
        None, '"concept" must be a non-empty string; "summary" must be a non-empty string')
    assert parse_summary('{"concept": "c", "summary": "  "}') == (None, '"summary" must be a non-empty string')
    assert parse_summary('no json') == (None, 'no JSON object found in the reply')


# ---- the summariser's settings and counters


def test_defaults_and_refusals():
    summarizer = LLMSummarizer(StubEngine())
    assert (summarizer.max_doc_tokens, summarizer.max_tokens, summarizer.batch_size, summarizer.retries) == \
        (512, 2048, 32, 1)
    assert LLMSummarizer(StubEngine(), batch_size=None).batch_size is None
    assert LLMSummarizer(StubEngine(), retries=0).retries == 0
    for kwargs, message in (({'retries': -1}, 'retries must be an integer >= 0, got -1'),
                            ({'batch_size': 0}, 'batch_size must be a positive integer or None, got 0'),
                            ({'max_doc_tokens': 0}, 'max_doc_tokens must be a positive integer, got 0'),
                            ({'max_tokens': 0}, 'max_tokens must be a positive integer, got 0')):
        with pytest.raises(ValueError) as info:
            LLMSummarizer(StubEngine(), **kwargs)
        assert str(info.value) == message


def _groups(*sizes, words=4):
    return [{'gid': g, 'docs': [{'docno': f'g{g}d{i}', 'title': '', 'text': ' '.join(['alpha'] * words)}
                                for i in range(size)]} for g, size in enumerate(sizes)]


@pytest.mark.parametrize(('batch_size', 'calls'), [(None, [5]), (2, [2, 2, 1]), (5, [5]), (1, [1] * 5)])
def test_batches_of_groups_per_engine_call(batch_size, calls):
    engine = StubEngine()
    LLMSummarizer(engine, batch_size=batch_size, max_tokens=50).summarize(_groups(1, 1, 1, 1, 1))
    assert [len(conversations) for _, conversations, _ in engine.log] == calls


def test_repair_rounds_fallbacks_and_counters():
    """One group per engine call. Group 0 answers well; group 1 badly once, then well; group 2 always badly; group
    3's request fails (it is never repaired)."""
    seen = {}

    def responder(conversation):
        user = conversation[1]['content']
        group = next(g for g in range(4) if f'(g{g}d0)' in user)
        seen[group] = seen.get(group, 0) + 1
        if group == 3:
            raise RuntimeError('server down')
        if group == 0 or (group == 1 and seen[group] == 2):
            return GOOD
        return 'not json'
    engine = StubEngine(responder=responder)
    summarizer = LLMSummarizer(engine, max_tokens=50, retries=2, batch_size=1)
    records = summarizer.summarize(_groups(1, 1, 1, 1))
    assert [r.get('fallback', False) for r in records] == [False, False, True, True]
    assert [r.get('fallback_reason') for r in records] == [None, None, 'unusable_reply', 'request_failed']
    assert records[2]['error'] == 'no JSON object found in the reply'
    assert records[3]['error'] == 'engine request failed: RuntimeError: server down'
    assert seen == {0: 1, 1: 2, 2: 3, 3: 1}
    assert (summarizer.repaired, summarizer.fallbacks, summarizer.failed) == (1, 2, 1)
    stats = summarizer.stats()
    assert (stats['repaired'], stats['fallbacks'], stats['failed']) == (1, 2, 1)
    assert set(stats) == {'calls', 'prompts', 'prompt_tokens', 'completion_tokens', 'repaired', 'fallbacks',
                          'failed'}
    summarizer.summarize(_groups(1, 1, 1, 1))  # now group 1 too answers badly three times
    assert (summarizer.repaired, summarizer.fallbacks, summarizer.failed) == (1, 5, 2)  # counted on, not reset
    summarizer.reset_stats()
    assert summarizer.stats() == dict.fromkeys(stats, 0)


def test_a_request_failing_in_the_repair_round():
    calls = []

    def responder(conversation):
        calls.append(len(conversation))
        if len(conversation) > 2:  # the repair conversation: prompt, the failed reply, the repair message
            raise RuntimeError('gone')
        return 'not json'
    summarizer = LLMSummarizer(StubEngine(responder=responder), max_tokens=50, retries=3)
    [record] = summarizer.summarize(_groups(1))
    assert record['fallback_reason'] == 'request_failed'
    assert record['error'] == 'engine request failed in the repair round: RuntimeError: gone'
    assert calls == [3 - 1, 4]  # the first answer, then one repair request (no more once the request failed)
    assert summarizer.failed == 1


def test_the_repair_conversation_carries_the_latest_reply():
    replies = iter(['first bad', 'second bad', GOOD])
    asked = []

    def responder(conversation):
        asked.append([m['content'] for m in conversation if m['role'] == 'assistant'])
        return next(replies)
    summarizer = LLMSummarizer(StubEngine(responder=responder), max_tokens=50, retries=2)
    [record] = summarizer.summarize(_groups(1))
    assert record['concept'] == 'c'
    assert asked == [[], ['first bad'], ['second bad']]


# ---- how a group is cut to fit the context (stub engine: a token is a word, a message costs 8 more)


def _overhead(engine, n):
    return engine.count_conversation_tokens(PromptTemplate('summary').messages(n=n, docs=''))


def _bodies(conversation):
    user = conversation[1]['content']
    return [line.split(') ', 1)[1] for line in user.split('\n') if line.startswith('[') and '] (' in line]


def _docs(n, words, prefix='w'):
    return [{'docno': f'd{i}', 'title': '', 'text': ' '.join(f'{prefix}{i}_{j}' for j in range(words))}
            for i in range(n)]


def test_long_documents_get_an_equal_share_less_three():
    """Room R = 300 for 3 documents of 200 words: a share of 100 each; with '[k]' and '(docno)' the lines take 306,
    6 over, so the share drops by ceil(6 / 3) + 1 = 3: 97 words each, 9 under the limit."""
    engine = StubEngine()
    max_tokens = 100
    engine._context_length = _overhead(engine, 3) + max_tokens + 300
    bodies = _bodies(LLMSummarizer(engine, max_tokens=max_tokens).conversation(_docs(3, 200)))
    assert [len(b.split()) for b in bodies] == [97, 97, 97]
    assert bodies[0].split()[-1] == 'w0_96'


def test_a_share_above_max_doc_tokens_is_capped():
    engine = StubEngine()
    engine._context_length = _overhead(engine, 2) + 100 + 1000
    bodies = _bodies(LLMSummarizer(engine, max_tokens=100, max_doc_tokens=30).conversation(_docs(2, 50)))
    assert [len(b.split()) for b in bodies] == [30, 30]


def test_a_prompt_that_fits_exactly_is_not_cut_and_one_token_more_is():
    """Three documents of 47 words take 3 * (2 + 47) = 147 tokens. With a room of 147 nothing is cut; with 146 (a
    share of 48, still every document) they are 1 over: the share drops from 48 by ceil(1 / 3) + 1 = 2, to 46."""
    engine = StubEngine()
    docs = _docs(3, 47)
    summarizer = LLMSummarizer(engine, max_tokens=100)
    engine._context_length = _overhead(engine, 3) + 100 + 147
    assert [len(b.split()) for b in _bodies(summarizer.conversation(docs))] == [47, 47, 47]
    assert [len(b.split()) for b in _bodies(summarizer.conversation(docs, reserve=0))] == [47, 47, 47]
    engine._context_length -= 1
    assert [len(b.split()) for b in _bodies(summarizer.conversation(docs))] == [46, 46, 46]


def test_a_share_of_48_shows_every_document_and_less_shows_fewer():
    engine = StubEngine()
    summarizer = LLMSummarizer(engine, max_tokens=100)
    engine._context_length = _overhead(engine, 3) + 100 + 144  # 48 each
    assert len(_bodies(summarizer.conversation(_docs(3, 5)))) == 3
    engine._context_length = _overhead(engine, 3) + 100 + 96   # 32 each: the first 96 // 48 = 2
    assert len(_bodies(summarizer.conversation(_docs(3, 5)))) == 2
    engine._context_length = _overhead(engine, 3) + 100 + 50   # 16 each: the first one
    assert len(_bodies(summarizer.conversation(_docs(3, 5)))) == 1


def test_one_document_takes_the_whole_room():
    engine = StubEngine()
    engine._context_length = _overhead(engine, 1) + 100 + 60
    [body] = _bodies(LLMSummarizer(engine, max_tokens=100).conversation(_docs(1, 200)))
    assert len(body.split()) == 57  # 60, less three as above (2 over: ceil(2 / 1) + 1)


def test_a_reserve_is_room_taken_away():
    engine = StubEngine()
    engine._context_length = _overhead(engine, 1) + 100 + 160
    [body] = _bodies(LLMSummarizer(engine, max_tokens=100).conversation(_docs(1, 200), reserve=100))
    assert len(body.split()) == 57


def test_below_eight_tokens_a_document_keeps_eight():
    engine = StubEngine()
    engine._context_length = _overhead(engine, 1) + 100 + 20
    [body] = _bodies(LLMSummarizer(engine, max_tokens=100, max_doc_tokens=5).conversation(_docs(1, 30)))
    assert len(body.split()) == 8
    engine._context_length = _overhead(engine, 1) + 100 + 2  # no room for 8: one error, not a refused request
    with pytest.raises(ValueError, match='lower max_tokens= or serve the model with a context of at least'):
        LLMSummarizer(engine, max_tokens=100).conversation(_docs(1, 30))


def test_titles_and_identifiers_in_the_prompt():
    engine = StubEngine()
    conversation = LLMSummarizer(engine, max_tokens=100).conversation(
        [{'docno': 'A 1', 'title': 'T  x', 'text': 'body\nhere'}, {'docno': 'B', 'title': None, 'text': 'only'}])
    user = conversation[1]['content']
    assert '[1] (A 1) T x: body here\n\n[2] (B) only' in user
    assert 'The 2 documents below' in user


# ---- the prompt templates and the query's share of the context


def test_prompt_templates():
    template = PromptTemplate('summary_repair')
    assert template.name == 'summary_repair'
    assert [role for role, _ in template.sections] == ['user']
    [message] = template.messages(error='E {n}')
    assert message['content'].startswith('Your reply could not be used: E {n}. Answer again')
    assert message['content'].endswith('Do not write anything outside the JSON object.')
    [_, user] = PromptTemplate('summary').messages(n=2)
    assert '{docs}' in user['content']  # a field not given stays as it is
    assert '"fingerprints": [{"doc": 1,' in user['content']  # braces that are no field stay too
    with pytest.raises(ValueError, match=r"^unknown prompt 'nope'; the package ships \[.*'summary', "
                                         r"'summary_repair'.*\]$"):
        PromptTemplate('nope')


def test_fit_query_cuts_only_what_is_over_its_share():
    engine = StubEngine(context_length=800)  # a share of 800 // 8 = 100 tokens
    short = ' '.join(['q'] * 100)
    assert fit_query(engine, short) == (short, 100, False)
    long = ' '.join(['q'] * 101)
    assert fit_query(engine, long) == (short, 100, True)
    assert fit_query(StubEngine(context_length=100), 'x ' * 40) == (' '.join(['x'] * 32), 32, True)  # at least 32
    exactly = 'y' * 100  # 100 characters, one token: not cut
    assert fit_query(engine, exactly) == (exactly, 100, False)


def test_warn_cut_queries_adds_to_the_count():
    from pyterrier_garen._prompts import warn_cut_queries

    class Component:
        cut_queries = 2

        def __repr__(self):
            return 'C()'
    component = Component()
    with pytest.warns(UserWarning, match=r'^C\(\): 3 queries longer than 100 tokens \(1/8 of the context of 800\)'):
        warn_cut_queries(component, 3, 100, 800)
    assert component.cut_queries == 5
    warn_cut_queries(component, 0, 100, 800)
    assert component.cut_queries == 5


def test_summary_records_are_json():
    record, _ = parse_summary(json.dumps({'concept': 'é', 'summary': 's'}))
    assert record['concept'] == 'é'


class CharEngine(StubEngine):
    """The stub engine with a tokenizer that counts characters: the number of documents in the prompt's text
    ('3', not 'None' or '{n}') then changes its length."""

    def count_tokens(self, text):
        return len(text)


def test_the_prompt_overhead_is_counted_with_the_number_of_documents():
    engine = CharEngine()
    summarizer = LLMSummarizer(engine, max_tokens=100)
    engine._context_length = _overhead(engine, 3) + 100 + 144  # a share of 48 each: every document
    assert len(_bodies(summarizer.conversation(_docs(3, 1, prefix='')))) == 3


def test_room_for_eight_tokens_is_enough_and_a_document_never_falls_below_eight():
    """The refusal's edge: 8 tokens of room after the prompt and max_tokens is served (one document of 8 words, two
    tokens over: a document keeps 8), 7 is refused. With 9 the cut lands at 9 - 3 = 6, and 8 is kept."""
    engine = StubEngine()
    summarizer = LLMSummarizer(engine, max_tokens=100)
    for room in (8, 9):
        engine._context_length = _overhead(engine, 1) + 100 + room
        [body] = _bodies(summarizer.conversation(_docs(1, 30)))
        assert len(body.split()) == 8
    engine._context_length = _overhead(engine, 1) + 100 + 7
    with pytest.raises(ValueError, match='lower max_tokens='):
        summarizer.conversation(_docs(1, 30))
    # below 48 the share starts at 40 whatever the room: a document of 40 words in 39 tokens of room takes 42 tokens,
    # 3 over, and is cut to 40 - 3 - 1 = 36 (from a share of 41 the cut would keep 37)
    engine._context_length = _overhead(engine, 1) + 100 + 39
    [body] = _bodies(summarizer.conversation(_docs(1, 40)))
    assert len(body.split()) == 36
