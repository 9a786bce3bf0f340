"""ListwiseReranker, YesNoScorer and LLMSummarizer on a deterministic stub engine (tests/_stub_engine.py)."""
import json
import warnings

import pandas as pd
import pytest
from _stub_engine import StubEngine, overlap, query_of

from pyterrier_garen import ExtractiveSummarizer, ListwiseReranker, LLMSummarizer, YesNoScorer
from pyterrier_garen._engines import Engine, UsageStats
from pyterrier_garen._driver import window_starts
from pyterrier_garen._prompts import PromptTemplate

VOCAB = 'alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau'.split()


def frame(num_queries=3, num_docs=20, seed=0):
    """Queries of two words; doc ``d{q}_{j}`` shares ``j % 3`` words with its query, so the true order is known."""
    rows = []
    for q in range(num_queries):
        qwords = [VOCAB[(q + seed) % len(VOCAB)], VOCAB[(q + seed + 7) % len(VOCAB)]]
        for j in range(num_docs):
            shared = qwords[:j % 3]
            filler = [f'w{q}x{j}y{k}' for k in range(6)]
            rows.append({'qid': f'q{q}', 'query': ' '.join(qwords), 'docno': f'd{q}_{j}',
                         'text': ' '.join(shared + filler)})
    return pd.DataFrame(rows)


def expected_order(group):
    """Docnos by descending overlap, ties in input order (what the stub's answers imply for a single window)."""
    keyed = [(-overlap(q, t), i, d) for i, (q, t, d) in enumerate(
        zip(group['query'], group['text'], group['docno'], strict=True))]
    return [d for _, _, d in sorted(keyed)]


# ---------------------------------------------------------------------------------------------------------------------
# ListwiseReranker

def test_prompt_construction_rankllm():
    engine = StubEngine()
    reranker = ListwiseReranker(engine)
    conversation = reranker.conversation('what is alpha', ['first doc', 'second doc', 'third doc'])
    assert [m['role'] for m in conversation] == ['system', 'user']
    user = conversation[1]['content']
    assert 'what is alpha' in user
    assert '[1] first doc\n[2] second doc\n[3] third doc' in user
    assert 'all 3 passages' in user
    assert '<answer>' in user
    assert '{' not in user.replace('{', '', 0) or '{query}' not in user  # every field was filled


def test_prompt_construction_reasoning():
    conversation = ListwiseReranker(StubEngine(), prompt='reasoning').conversation('why is the sky blue', ['a', 'b'])
    system, user = conversation[0]['content'], conversation[1]['content']
    assert '[Reasoning Trace]' in system
    assert '[Document Ranking]' in system
    assert user.startswith('[Query]\nwhy is the sky blue')
    assert '[1] a\n[2] b' in user


def test_prompt_files_have_hashes():
    for name in ('rankllm', 'reasoning', 'yes_no', 'summary', 'summary_repair'):
        template = PromptTemplate(name)
        assert len(template.hash) == 12
        assert int(template.hash, 16) >= 0
    assert ListwiseReranker(StubEngine()).prompt_hash != ListwiseReranker(StubEngine(), prompt='reasoning').prompt_hash
    with pytest.raises(ValueError, match='unknown prompt'):
        PromptTemplate('nope')


def test_fields_are_filled_once():
    messages = PromptTemplate('rankllm').messages(query='{docs} {n}', n=2, docs='[1] {query}')
    assert 'Search query: {docs} {n}' in messages[1]['content']
    assert '[1] {query}' in messages[1]['content']


@pytest.mark.parametrize('prompt', ['rankllm', 'reasoning'])
def test_single_window_orders_by_the_answer(prompt):
    engine = StubEngine()
    inp = frame(num_queries=2, num_docs=12)
    out = ListwiseReranker(engine, prompt=prompt)(inp)
    assert len(engine.log) == 1
    assert len(engine.log[0][1]) == 2
    assert len(out) == len(inp)
    assert set(out.columns) >= {'qid', 'query', 'docno', 'text', 'score', 'rank'}
    for qid, group in out.groupby('qid'):
        group = group.sort_values('rank')
        assert group['docno'].tolist() == expected_order(inp[inp.qid == qid])
        assert group['score'].is_monotonic_decreasing
        assert group['score'].is_unique
        assert group['rank'].tolist() == list(range(len(group)))


def test_one_engine_call_for_ten_queries():
    engine = StubEngine()
    ListwiseReranker(engine)(frame(num_queries=10, num_docs=20))
    assert [(method, len(convs)) for method, convs, _ in engine.log] == [('generate', 10)]


def test_one_engine_call_per_sliding_position_across_queries():
    engine = StubEngine()
    inp = pd.concat([frame(num_queries=3, num_docs=45), frame(num_queries=1, num_docs=25, seed=5).assign(qid='short')])
    reranker = ListwiseReranker(engine, window=20, stride=10)
    out = reranker(inp)
    # 45 docs: windows at 25, 15, 5, 0; 25 docs: 5, 0
    assert window_starts(45, 20, 10) == [25, 15, 5, 0]
    assert [len(convs) for _, convs, _ in engine.log] == [4, 4, 3, 3]
    assert reranker.calls == 4
    assert reranker.prompts == 14
    assert len(out) == len(inp)
    # the bottom-up pass carries the best documents to the top: each query's top 10 are its best-overlap docs
    for qid, group in out.groupby('qid'):
        top = group.sort_values('rank')['docno'].tolist()[:10]
        assert top == expected_order(inp[inp.qid == qid])[:10], qid


def test_batched_equals_per_query():
    inp = pd.concat([frame(num_queries=4, num_docs=33), frame(num_queries=2, num_docs=7, seed=3).assign(
        qid=lambda f: f.qid + 'b')])
    batched = ListwiseReranker(StubEngine(), window=10, stride=5)(inp)
    singles = pd.concat([ListwiseReranker(StubEngine(), window=10, stride=5)(g) for _, g in inp.groupby('qid')])
    key = ['qid', 'docno', 'score', 'rank']
    pd.testing.assert_frame_equal(batched[key].sort_values(['qid', 'rank']).reset_index(drop=True),
                                  singles[key].sort_values(['qid', 'rank']).reset_index(drop=True))


def test_rank_column_gives_the_list_order():
    inp = frame(num_queries=1, num_docs=6)
    inp['rank'] = [5, 4, 3, 2, 1, 0]
    engine = StubEngine(responder=lambda conversation: '<answer> [1] > [2] > [3] > [4] > [5] > [6]')
    out = ListwiseReranker(engine)(inp.sample(frac=1, random_state=1))
    assert out.sort_values('rank')['docno'].tolist() == [f'd0_{j}' for j in range(5, -1, -1)]
    user = engine.log[0][1][0][1]['content']
    assert user.index('[1] ' + inp.text[5]) < user.index('[6] ' + inp.text[0])


def test_documents_are_truncated_to_the_budget():
    engine = StubEngine(context_length=1200)
    inp = frame(num_queries=2, num_docs=20)
    inp['text'] = inp['text'] + ' ' + ' '.join(['filler'] * 500)
    reranker = ListwiseReranker(engine)
    reranker(inp)  # the stub asserts prompt + max_tokens <= context for every conversation
    budget = reranker.doc_budget(inp['query'][0], 20)
    assert 0 < budget < 500
    for conversation in engine.log[0][1]:
        lines = [line for line in conversation[1]['content'].split('\n') if line.startswith('[')]
        assert len(lines) == 20
        assert all(len(line.split()) - 1 <= budget for line in lines)
    capped = ListwiseReranker(StubEngine(context_length=1200), max_doc_tokens=5)
    assert capped.doc_budget('q', 20) == 5
    capped(inp)
    first = [line for line in capped.engine.log[0][1][0][1]['content'].split('\n') if line.startswith('[1] ')]
    assert len(first[0].split()) == 6


def test_tiny_context_warns_before_the_engine_fails():
    inp = frame(num_queries=1, num_docs=20)
    inp['text'] = inp['text'] + ' ' + ' '.join(['filler'] * 100)
    reranker = ListwiseReranker(StubEngine(context_length=400), max_tokens=100)
    with pytest.warns(UserWarning, match="qid 'q0'.* tokens per document"):
        with pytest.warns(UserWarning, match=r"kept their order because the engine request failed \(qid 'q0': "
                                             r"AssertionError: prompt \+ answer exceed the context"):
            out = reranker(inp)  # the stub rejects the prompt, as a real engine would: it costs that window only
    assert (reranker.failed, reranker.prompts) == (1, 0)
    assert out.sort_values('rank')['docno'].tolist() == inp['docno'].tolist()


def test_malformed_answers_are_counted_and_warned_with_the_qid():
    def responder(conversation):
        return 'I refuse.' if 'beta' in conversation[1]['content'].split('\n')[0] else None
    inp = frame(num_queries=3, num_docs=8)  # q1's query contains 'beta'
    reranker = ListwiseReranker(StubEngine(responder=responder))
    with pytest.warns(UserWarning, match=r"1 malformed answers.*qid 'q1': no \[i\] identifiers"):
        out = reranker(inp)
    assert reranker.malformed == 1
    assert reranker.stats()['malformed'] == 1
    q1 = out[out.qid == 'q1'].sort_values('rank')['docno'].tolist()
    assert q1 == inp[inp.qid == 'q1']['docno'].tolist()  # input order kept
    reranker.reset_stats()
    assert reranker.malformed == 0
    assert reranker.calls == 0


def test_partial_answer_is_backfilled_and_counted():
    reranker = ListwiseReranker(StubEngine(responder=lambda c: '<answer> [3] > [3] > [1]'))
    with pytest.warns(UserWarning, match='qid'):
        out = reranker(frame(num_queries=1, num_docs=4))
    assert out.sort_values('rank')['docno'].tolist() == ['d0_2', 'd0_0', 'd0_1', 'd0_3']
    assert reranker.malformed == 1


def test_empty_frame_makes_no_call():
    engine = StubEngine()
    empty = frame().iloc[:0]
    for component in (ListwiseReranker(engine), YesNoScorer(engine)):
        out = component(empty)
        assert len(out) == 0
        assert {'qid', 'query', 'docno', 'text', 'score', 'rank'} <= set(out.columns)
    assert engine.log == []


def test_missing_columns_are_reported():
    from pyterrier.validate import InputValidationError
    with pytest.raises(InputValidationError):
        ListwiseReranker(StubEngine())(pd.DataFrame({'qid': ['1'], 'docno': ['d']}))
    with pytest.raises(ValueError, match='stride'):
        ListwiseReranker(StubEngine(), window=10, stride=11)
    with pytest.raises(ValueError, match=r"prompt must be one of \('rankllm', 'reasoning'\), got 'rankgpt'"):
        ListwiseReranker(StubEngine(), prompt='rankgpt')


def test_accounting_counters_per_component():
    engine = StubEngine()
    reranker, navigator = ListwiseReranker(engine), YesNoScorer(engine)
    inp = frame(num_queries=2, num_docs=10)
    reranker(inp)
    navigator(inp)
    navigator(inp)
    expected_prompt = sum(engine.count_conversation_tokens(c) for c in engine.log[0][1])
    assert reranker.stats() == {'calls': 1, 'prompts': 2, 'prompt_tokens': expected_prompt,
                                'completion_tokens': reranker.completion_tokens, 'malformed': 0, 'failed': 0}
    assert reranker.completion_tokens == 2 * 20  # '<answer>', 10 ids and 9 '>' (stub tokens are words)
    assert navigator.calls == 2
    assert navigator.prompts == 40
    assert navigator.completion_tokens == 40
    assert navigator.prompt_tokens == 2 * sum(engine.count_conversation_tokens(c) for c in engine.log[1][1])
    navigator.reset_stats()
    assert navigator.stats() == {'calls': 0, 'prompts': 0, 'prompt_tokens': 0, 'completion_tokens': 0, 'failed': 0}
    assert reranker.calls == 1


def test_factories_share_the_engine_and_repr_rebuilds():
    engine = StubEngine()
    components = [ListwiseReranker(engine, window=10, stride=5, prompt='reasoning'), YesNoScorer(engine, batch_size=4),
                  LLMSummarizer(engine, max_doc_tokens=64)]
    assert all(c.engine is engine for c in components)
    env = {'ListwiseReranker': ListwiseReranker, 'YesNoScorer': YesNoScorer, 'LLMSummarizer': LLMSummarizer,
           'StubEngine': lambda: engine}
    for component in components:
        rebuilt = eval(repr(component), env)  # noqa: S307 - repr round-trip
        assert repr(rebuilt) == repr(component)
    assert repr(components[0]) == "ListwiseReranker(StubEngine(), prompt='reasoning', window=10, stride=5)"


# ---------------------------------------------------------------------------------------------------------------------
# YesNoScorer

def test_yes_no_prompt_follows_the_qwen3_reranker_protocol():
    scorer = YesNoScorer(StubEngine(), instruction='Find proofs')
    conversation = scorer.conversation('Find proofs', 'prime numbers', 'Euclid proved it')
    assert [m['role'] for m in conversation] == ['system', 'user', 'assistant']
    assert '"yes" or "no"' in conversation[0]['content']
    assert conversation[1]['content'] == '<Instruct>: Find proofs\n<Query>: prime numbers\n<Document>: Euclid proved it'
    assert conversation[2]['content'] == '<think>\n\n</think>\n\n'


def test_yes_no_scores_all_rows_in_one_call():
    engine = StubEngine()
    inp = frame(num_queries=3, num_docs=9)
    out = YesNoScorer(engine)(inp)
    assert [(m, len(c)) for m, c, _ in engine.log] == [('yes_no', 27)]
    for row in out.itertuples():
        k = overlap(row.query, row.text)
        assert row.score == pytest.approx(k / (k + 1))
    top = out[out['rank'] == 0]
    assert (top['score'] == out.groupby('qid')['score'].transform('max')[top.index]).all()
    engine.log.clear()
    YesNoScorer(engine, batch_size=10)(inp)
    assert [len(c) for _, c, _ in engine.log] == [10, 10, 7]


def test_instruction_as_mapping_or_callable():
    engine = StubEngine()
    inp = frame(num_queries=2, num_docs=2)
    YesNoScorer(engine, instruction={'q0': 'Biology task', 'q1': 'Math task'})(inp)
    YesNoScorer(engine, instruction=lambda qid, query: f'Task for {qid}')(inp)
    users = [[c[1]['content'] for c in convs] for _, convs, _ in engine.log]
    assert users[0][0].startswith('<Instruct>: Biology task')
    assert users[0][3].startswith('<Instruct>: Math task')
    assert users[1][2].startswith('<Instruct>: Task for q1')
    with pytest.raises(ValueError, match="no instruction for qid 'q1'"):
        YesNoScorer(engine, instruction={'q0': 'x'})(inp)


def test_navigator_rows_and_truncation():
    engine = StubEngine(context_length=300)
    rows = pd.DataFrame({'qid': ['1', '1'], 'query': ['alpha beta', 'alpha beta'], 'docno': ['0', '7'],
                         'text': ['alpha ' + 'x ' * 1000, 'gamma'], 'vote': [3, 0]})
    out = YesNoScorer(engine)(rows)
    assert out.set_index('docno')['score'].to_dict() == {'0': 0.5, '7': 0.0}
    assert 'vote' in out.columns
    for conversation in engine.log[0][1]:
        assert engine.count_conversation_tokens(conversation) <= 300
    YesNoScorer(engine, max_doc_tokens=3)(rows)
    assert engine.log[1][1][0][1]['content'].endswith('<Document>: alpha x x')


# ---------------------------------------------------------------------------------------------------------------------
# LLMSummarizer

def groups(n=3, size=4):
    return [{'group': g, 'docs': [{'docno': f'g{g}d{j}', 'text': f'shared{g} topic{g} item{j} ' + 'word ' * 50,
                                   **({'title': f'Title {j}'} if j % 2 else {})} for j in range(size)]}
            for g in range(n)]


def test_summarizer_one_call_and_records():
    engine = StubEngine()
    summarizer = LLMSummarizer(engine, max_doc_tokens=10)
    records = summarizer.summarize(groups())
    assert len(engine.log) == 1
    assert len(engine.log[0][1]) == 3
    assert [r['concept'] for r in records] == [f'shared{g} topic{g} word' for g in range(3)]
    assert all(r['summary'].startswith('4 documents about') and len(r['fingerprints']) == 4 for r in records)
    assert not any(r.get('fallback') for r in records)
    user = engine.log[0][1][0][1]['content']
    assert '[1] (g0d0) shared0 topic0 item0 word' in user
    assert '[2] (g0d1) Title 1: shared0' in user
    assert 'The 4 documents below' in user
    assert '"concept"' in user
    assert all(len(line.split()) <= 2 + 2 + 10 for line in user.split('\n') if line.startswith('[2]'))
    json.dumps(records)  # JSON-serialisable for the artifact
    assert summarizer.config() == {'name': 'llm', 'model': 'stub/rules', 'prompt_hash': summarizer.prompt_hash,
                                   'max_doc_tokens': 10, 'max_tokens': 2048}
    assert summarizer.summarize(groups()) == records  # deterministic
    assert summarizer.calls == 2
    assert summarizer.prompts == 6


def test_summarizer_repairs_in_one_batched_retry():
    engine = StubEngine()

    def responder(conversation):
        if conversation[-1]['content'].startswith('Your reply could not be used'):
            return None  # the rule answer: valid JSON
        return 'Here you go: {"concept": "x"' if 'shared1' in conversation[1]['content'] or \
            'shared2' in conversation[1]['content'] else None
    engine.responder = responder
    summarizer = LLMSummarizer(engine)
    records = summarizer.summarize(groups())
    assert [len(c) for _, c, _ in engine.log] == [3, 2]
    repair = engine.log[1][1][0]
    assert [m['role'] for m in repair] == ['system', 'user', 'assistant', 'user']
    assert 'no JSON object found' in repair[-1]['content']
    assert summarizer.repaired == 2
    assert summarizer.fallbacks == 0
    assert not any(r.get('fallback') for r in records)


def test_summarizer_falls_back_to_extractive():
    engine = StubEngine(responder=lambda c: '{"concept": "only a concept"}' if 'shared0' in c[1]['content'] else None)
    summarizer = LLMSummarizer(engine, retries=1)
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        records = summarizer.summarize(groups())
    assert [len(c) for _, c, _ in engine.log] == [3, 1]
    assert records[0]['fallback'] is True
    assert '"summary" must be a non-empty string' in records[0]['error']
    expected = ExtractiveSummarizer().summarize_one(groups()[0]['docs'])
    assert records[0]['concept'] == expected['concept']
    assert records[0]['summary'] == expected['summary']
    assert summarizer.fallbacks == 1
    assert summarizer.stats()['fallbacks'] == 1
    assert not records[1].get('fallback')
    none = LLMSummarizer(StubEngine(responder=lambda c: 'nope'), retries=0)
    assert all(r['fallback'] for r in none.summarize(groups()))
    assert none.calls == 1
    assert none.fallbacks == 3


def _six_long_documents():
    """One group of six documents of 300 distinct words each: its prompt fills a small context."""
    return [{'group': 0, 'docs': [{'docno': f'd{i}', 'text': ' '.join(f'w{i}x{j}' for j in range(300))}
                                  for i in range(6)]}]


def _repair_gets_the_rule_answer(reply):
    """A responder whose first answer is ``reply`` and whose repair round gets the rule answer (valid JSON)."""
    def responder(conversation):
        if conversation[-1]['content'].startswith('Your reply could not be used'):
            return None
        return reply
    return responder


def test_summarizer_repair_round_fits_a_full_context():
    """Defect 3: the first prompt is sized to context - max_tokens; the repair round re-sent it plus the failed reply
    plus the repair message, which a real engine rejects (the stub asserts prompt + answer <= context)."""
    engine = StubEngine(context_length=1200, responder=_repair_gets_the_rule_answer('not json ' * 40))
    big = _six_long_documents()
    summarizer = LLMSummarizer(engine, max_doc_tokens=512, max_tokens=100)
    records = summarizer.summarize(big)
    first, repair = engine.log[0][1][0], engine.log[1][1][0]
    assert engine.count_conversation_tokens(first) + 100 > 1200 - 60  # the first prompt fills the context
    assert engine.count_conversation_tokens(repair) + 100 <= 1200
    assert repair[2] == {'role': 'assistant', 'content': 'not json ' * 40}
    assert (summarizer.repaired, summarizer.fallbacks, summarizer.failed) == (1, 0, 0)
    assert not records[0].get('fallback')


def test_summarizer_repair_of_a_reply_cut_at_max_tokens_fits_the_context():
    """A reply that ran to max_tokens (the usual unusable one) took the repair round's whole room: the repair request
    overflowed the context (the stub asserts prompt + answer <= context, a server answers 400) and the group was
    counted as a failed request, retried on every run. The reply is now cut to fit; with no room at all for a repair
    round, none is sent and the group keeps its unusable reply."""
    engine = StubEngine(context_length=1500, responder=_repair_gets_the_rule_answer('truncated ' * 600))
    big = _six_long_documents()
    summarizer = LLMSummarizer(engine, max_tokens=600)
    records = summarizer.summarize(big)
    repair = engine.log[1][1][0]
    assert engine.count_conversation_tokens(repair) + 600 <= 1500
    assert repair[2]['role'] == 'assistant'
    assert 0 < len(repair[2]['content'].split()) < 600
    assert (summarizer.repaired, summarizer.fallbacks, summarizer.failed) == (1, 0, 0)
    assert not records[0].get('fallback')

    tight = StubEngine(context_length=530, responder=lambda c: 'not json')  # room for the prompt, not for a repair
    summarizer = LLMSummarizer(tight, max_tokens=100)
    record, = summarizer.summarize([{'group': 0, 'docs': [{'docno': 'd0', 'text': 'some words here'}]}])
    assert len(tight.log) == 1  # no repair request
    assert (record['fallback_reason'], summarizer.failed, summarizer.fallbacks) == ('unusable_reply', 0, 1)


class CharEngine(StubEngine):
    """Tokens are characters, and a message's role counts: every piece of the repair round's arithmetic shows."""

    def count_tokens(self, text):
        return len(text)

    def truncate(self, text, max_tokens):
        return text[:max(0, max_tokens)]

    def count_conversation_tokens(self, conversation):
        return sum(len(m['role']) + len(m.get('content') or '') + 1 for m in conversation)


@pytest.mark.parametrize('room', [95, 96, 97, 200, 201])
def test_summarizer_repair_round_cuts_the_reply_to_half_of_the_room_left(room):
    """The room of a repair round is the context less max_tokens, the group's prompt without its documents, and the
    repair messages with an empty reply; the reply is cut to half of it, and under two documents' shares (96 tokens)
    no repair is sent. Worked out here from the pieces, with characters as tokens."""
    engine = CharEngine()
    summarizer = LLMSummarizer(engine, max_tokens=100)
    docs = [{'docno': f'd{i}', 'text': f'text of document {i}'} for i in range(12)]
    error = 'the reply is not JSON'
    prompt = summarizer.template.messages(n=12, docs='')
    repair = summarizer.repair_template.messages(error=error)
    fixed = (sum(len(m['role']) + len(m['content']) + 1 for m in prompt)
             + len('assistant') + 1 + sum(len(m['role']) + len(m['content']) + 1 for m in repair))
    engine._context_length = 100 + fixed + room
    reply = 'x' * 500
    conversation = summarizer.repair_conversation(docs, reply, error)
    if room < 96:
        assert conversation is None
        return
    assert conversation[-1 - len(repair):] == [{'role': 'assistant', 'content': 'x' * (room // 2)}] + repair
    short = summarizer.repair_conversation(docs, 'x' * (room // 2), error)
    assert short[-1 - len(repair)]['content'] == 'x' * (room // 2)  # a reply within half the room is kept whole


def test_summarizer_a_failed_request_costs_only_its_group():
    def responder(conversation):
        if 'shared1' in conversation[1]['content']:
            raise RuntimeError('request to http://x/v1 failed after 4 attempts')
        return None
    engine = StubEngine(responder=responder)
    summarizer = LLMSummarizer(engine)
    records = summarizer.summarize(groups())
    assert [r.get('fallback', False) for r in records] == [False, True, False]
    assert records[1]['error'].startswith('engine request failed: RuntimeError: request to http://x/v1 failed')
    assert (summarizer.failed, summarizer.fallbacks, summarizer.repaired) == (1, 1, 0)
    assert summarizer.prompts == 2  # the failed request has no answer and no tokens
    assert [len(c) for _, c, _ in engine.log] == [3, 1, 1, 1]  # the batch failed, then each group alone


def test_a_failed_request_costs_the_reranker_one_window_and_the_navigator_one_row():
    def responder(conversation):
        if 'beta' in conversation[1]['content'].split('\n')[0]:
            raise RuntimeError('server gone')
        return None
    inp = frame(num_queries=3, num_docs=8)  # q1's query contains 'beta'
    reranker = ListwiseReranker(StubEngine(responder=responder))
    with pytest.warns(UserWarning, match=r"1 windows kept their order .*qid 'q1': RuntimeError: server gone"):
        out = reranker(inp)
    assert (reranker.failed, reranker.prompts, reranker.malformed) == (1, 2, 0)
    assert out[out.qid == 'q1'].sort_values('rank')['docno'].tolist() == inp[inp.qid == 'q1']['docno'].tolist()
    assert out[out.qid == 'q0'].sort_values('rank')['docno'].tolist() == expected_order(inp[inp.qid == 'q0'])

    class Failing(StubEngine):
        def yes_no(self, conversations, **kwargs):
            if any('<Query>: beta' in c[1]['content'] or 'beta' in query_of(c) for c in conversations):
                raise RuntimeError('server gone')
            return super().yes_no(conversations, **kwargs)
    navigator = YesNoScorer(Failing())
    with pytest.warns(UserWarning, match=r"8 rows scored 0 because the engine request failed"):
        scores = navigator(inp)
    assert (scores[scores.qid == 'q1']['score'] == 0).all()
    assert (navigator.failed, navigator.prompts) == (8, 16)


def test_summarizer_large_group_fits_the_context():
    engine = StubEngine(context_length=3000)
    summarizer = LLMSummarizer(engine, max_doc_tokens=512, max_tokens=1000)
    summarizer.summarize(groups(n=1, size=200))  # the stub asserts that prompt + answer fit
    user = engine.log[0][1][0][1]['content']
    assert 0 < user.count('\n[') < 200
    assert summarizer.summarize([]) == []


def test_engine_interface_and_stats_base():
    engine = Engine()
    assert engine.count_tokens('abcdefgh') == 2
    assert engine.truncate('aaaa bbbb cccc', 2) == 'aaaa'
    with pytest.raises(NotImplementedError):
        engine.generate([[{'role': 'user', 'content': 'x'}]], max_tokens=3)
    stats = UsageStats()
    with pytest.raises(RuntimeError, match='returned 0 answers for 2'):
        stats._record([], 2)


# ---------------------------------------------------------------------------------------------------------------------
# inside GAREN

def test_garen_batches_llm_calls_across_queries():
    import pyterrier as pt
    from _toy_graph import ToyGroupGraph

    from pyterrier_garen import GAREN
    docnos = [f'd{i}' for i in range(60)]
    texts = {d: f'{VOCAB[i % 6]} {VOCAB[6 + i % 4]} filler{i}' for i, d in enumerate(docnos)}
    groups = {d: i // 5 for i, d in enumerate(docnos)}
    adjacency = {d: [docnos[(i + k) % 60] for k in (1, 2, 5, 7)] for i, d in enumerate(docnos)}
    graph = ToyGroupGraph(adjacency, groups, {g: f'{VOCAB[g % 6]} group {g}' for g in range(12)})
    queries = {'q1': 'alpha kappa', 'q2': 'beta lambda', 'q3': 'gamma'}
    first = pd.DataFrame([{'qid': q, 'query': text, 'docno': d, 'rank': r, 'score': 60.0 - r}
                          for q, text in queries.items() for r, d in enumerate(docnos[::-1][:40])])
    engine = StubEngine()
    loader = pt.apply.generic(lambda df: df.assign(text=df['docno'].map(texts)))
    reranker, navigator = ListwiseReranker(engine, window=20), YesNoScorer(engine)
    out = GAREN(loader >> reranker, graph, navigator, window=20, keep=10, budget=50)(first)
    assert out.groupby('qid').size().to_dict() == {'q1': 50, 'q2': 50, 'q3': 50}
    generate = [len(c) for m, c, _ in engine.log if m == 'generate']
    yes_no = [c for m, c, _ in engine.log if m == 'yes_no']
    assert generate == [3] * len(generate)  # one engine call per iteration, all three queries in it
    assert len(generate) == 1 + -(-(50 - 20) // (20 - 10))
    assert reranker.calls == len(generate)
    assert all(len({query_of(c) for c in convs}) > 1 for convs in yes_no)
    assert navigator.calls == len(yes_no)
    assert reranker.malformed == 0
