"""Engines: lazy imports, the missing-extra error, and OpenAIEngine for real (the ``openai`` client) against a small
fake OpenAI-compatible HTTP server on 127.0.0.1: concurrency, retries, round-robin over servers, logprobs, usage."""
import json
import math
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pandas as pd
import pytest

from pyterrier_garen import ListwiseReranker, YesNoScorer
from pyterrier_garen._llm import Engine, OpenAIEngine, render_chat, softmax_yes

MODEL = 'fake-model'


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

    def __init__(self, *, delay=0.0, fail_first=0, max_model_len=2048, reply=default_reply):
        self.delay, self.failures_left, self.max_model_len, self.reply = delay, fail_first, max_model_len, reply
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
                try:
                    time.sleep(server.delay)
                    if fail:
                        self._send(500, {'error': {'message': 'boom', 'type': 'server_error'}})
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
                top = [{'token': 'yes', 'logprob': ly, 'bytes': None}, {'token': ' no', 'logprob': ln, 'bytes': None},
                       {'token': 'maybe', 'logprob': -9.0, 'bytes': None}]
                logprobs = {'content': [{'token': text, 'logprob': max(ly, ln), 'bytes': None, 'top_logprobs': top}]}
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
                        'top_logprobs': [{'yes': ly, ' no': ln}]}
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
    """Just enough of a Hugging Face tokenizer: words are tokens."""

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **kwargs):
        text = ''.join(f'<|{m["role"]}|>{m["content"]}<|end|>' for m in messages)
        return text + ('<|assistant|>' if add_generation_prompt else '')

    def encode(self, text, add_special_tokens=False):
        return text.split()

    def decode(self, ids, skip_special_tokens=True):
        return ' '.join(ids)


# ---------------------------------------------------------------------------------------------------------------------

def test_importing_the_engine_module_is_light():
    code = ('import sys, pyterrier_garen, pyterrier_garen._llm, pyterrier_garen._rerankers, '
            'pyterrier_garen._llm_summarizer; heavy = [m for m in ("vllm", "openai", "transformers", "torch") '
            'if m in sys.modules]; print(heavy); sys.exit(1 if heavy else 0)')
    result = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_vllm_engine_without_vllm_names_the_extra(monkeypatch):
    from pyterrier_garen import VLLMEngine
    monkeypatch.setitem(sys.modules, 'vllm', None)  # makes `import vllm` fail even where it is installed
    with pytest.raises(ImportError, match=r'pip install pyterrier-garen\[vllm\]'):
        VLLMEngine('Qwen/Qwen3-Reranker-0.6B')


def test_openai_engine_without_client_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'openai', None)
    with pytest.raises(ImportError, match=r'pip install pyterrier-garen\[vllm\]'):
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
    assert body['top_logprobs'] == 20
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
    assert all(body['logprobs'] == 20 and body['max_tokens'] == 1 for _, body in srv.requests)
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
    chats = [body for _, body in srv.requests]
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
