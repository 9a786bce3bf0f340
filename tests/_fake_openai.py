"""The one fake OpenAI-compatible server of the tests, on 127.0.0.1, for the engine and the fault tests.

:class:`FakeOpenAIServer` answers ``/v1/chat/completions``, ``/v1/completions`` (with log-probabilities),
``/tokenize``, ``/detokenize`` (one token per word) and ``/v1/models`` like a small vLLM server would. A ``script``
of actions overrides the answers of the first completion requests (``/v1/completions``, ``/v1/chat/completions``;
the tokenizer endpoints always answer by the rules), one action each (then the default behaviour answers again);
:class:`ScriptedServer` is the fault-test form, where the last action repeats for ever. Actions:

* ``('ok', payload)``: 200 with the JSON ``payload``;
* ``('raw', status, body_bytes, headers)``: exactly these bytes;
* ``('trickle', total_bytes, interval)``: the headers at once, then one byte per ``interval`` seconds (bounded);
* ``('default',)``: the default behaviour.

Every request is recorded in ``requests`` as a :class:`Request` ``(time, path, authorization, body)``. Every loop
is bounded, and the server shuts itself down after ``lifetime`` seconds even if a test forgets to close it.
"""
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, NamedTuple, Optional


MODEL = 'fake-model'
#: request fields only vLLM understands; a ``generic`` server rejects them
VLLM_FIELDS = ('top_k', 'min_p', 'repetition_penalty', 'allowed_token_ids', 'logprob_token_ids',
               'return_tokens_as_token_ids')
#: the ids the fake ``/tokenize`` gives the two answer words
TOKEN_IDS = {'yes': 101, 'no': 102}


class Request(NamedTuple):
    time: float
    path: str
    authorization: Optional[str]
    body: Any


def completion(text='yes', logprobs=None):
    """A chat completion payload answering ``text`` (with the given ``logprobs`` object)."""
    return {'id': 'c', 'object': 'chat.completion', 'created': 0, 'model': 'm',
            'choices': [{'index': 0, 'finish_reason': 'stop', 'logprobs': logprobs,
                         'message': {'role': 'assistant', 'content': text}}],
            'usage': {'prompt_tokens': 3, 'completion_tokens': 1, 'total_tokens': 4}}


def _last_user(messages):
    return [m['content'] for m in messages if m['role'] == 'user'][-1]


def default_reply(body):
    """The default generated text: a rankllm prompt reverses its two passages, anything else is echoed."""
    if 'messages' in body:
        if 'passages' in body['messages'][0]['content']:
            return '<answer> [2] > [1]'
        return 'echo: ' + _last_user(body['messages'])
    return 'echo: ' + body['prompt'][-12:]


class _Listener(ThreadingHTTPServer):
    # the engine opens up to max_concurrency (16) connections at once; socketserver's backlog of 5 let some of them
    # be refused on a loaded machine (a connection error no retry of max_retries=0 could mend)
    request_queue_size = 128
    daemon_threads = True


class FakeOpenAIServer:
    """An OpenAI-compatible server with vLLM's extensions, answering from rules (see the module docstring).

    Args:
        script: actions answering the first completion requests, one each.
        repeat: when the script runs out, repeat its last action (True) or answer by the rules (False).
        delay: seconds each POST waits before answering (to observe concurrency: ``max_in_flight``).
        fail_first: answer the first ``fail_first`` completion requests (after the script) with a 500.
        max_model_len: the context length ``/v1/models`` reports.
        models: an action answering every GET of ``/v1/models`` instead (e.g. ``('trickle', 40, 0.25)`` or
            ``('raw', 401, body, headers)``); GETs are recorded in ``gets``.
        reply: ``reply(body) -> text`` of a generation.
        generic: a plain OpenAI-style server: rejects vLLM's fields (400) and has no ``/tokenize`` or
            ``/detokenize`` (404).
        lifetime: seconds after which the server stops by itself.
    """

    def __init__(self, script=(), *, repeat=False, delay=0.0, fail_first=0, max_model_len=2048, reply=default_reply,
                 generic=False, models=None, lifetime=60.0):
        self.script, self.repeat = list(script), repeat
        self.delay, self.failures_left, self.max_model_len, self.reply = delay, fail_first, max_model_len, reply
        self.generic, self.models, self.gets = generic, models, []
        self.vocab, self.words = dict(TOKEN_IDS), {i: w for w, i in TOKEN_IDS.items()}
        self.requests, self.in_flight, self.max_in_flight, self.lock = [], 0, 0, threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, data, headers=()):
                self.send_response(status)
                for key, value in dict(headers).items():
                    self.send_header(key, value)
                self.send_header('Content-Length', str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _json(self, status, payload):
                self._send(status, json.dumps(payload).encode(), {'Content-Type': 'application/json'})

            def do_GET(self):
                with server.lock:
                    server.gets.append(Request(time.monotonic(), self.path, self.headers.get('Authorization'), None))
                if server.models is not None:
                    return self._act(server.models, None)
                model = {'id': MODEL, 'object': 'model', 'created': 0, 'owned_by': 'test',
                         'max_model_len': server.max_model_len}
                self._json(200, {'object': 'list', 'data': [model]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                with server.lock:
                    server.requests.append(Request(time.monotonic(), self.path, self.headers.get('Authorization'),
                                                   body))
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    route = self.path.split('?', 1)[0]  # a query (an api-key in base_url) does not change the route
                    action = server._next_action() if route.endswith('completions') else ('default',)
                try:
                    time.sleep(server.delay)
                    self._act(action, body)
                finally:
                    with server.lock:
                        server.in_flight -= 1

            def _act(self, action, body):
                try:
                    if action[0] == 'ok':
                        self._json(200, action[1])
                    elif action[0] == 'raw':
                        self._send(action[1], action[2], action[3])
                    elif action[0] == 'trickle':  # headers at once, then one byte per interval (bounded)
                        self.send_response(200)
                        self.send_header('Content-Type', 'application/json')
                        self.send_header('Content-Length', str(action[1]))
                        self.end_headers()
                        for _ in range(action[1]):
                            self.wfile.write(b' ')
                            self.wfile.flush()
                            time.sleep(action[2])
                    elif action[0] == 'fail':
                        self._json(500, {'error': {'message': 'boom', 'type': 'server_error'}})
                    else:
                        self._json(*server.respond(self.path.split('?', 1)[0], body))
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = _Listener(('127.0.0.1', 0), Handler)
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}/v1'
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self._stopper = threading.Timer(lifetime, self.close)
        self._stopper.daemon = True
        self._stopper.start()

    def _next_action(self):  # called under the lock
        if self.script:
            if len(self.script) > 1 or not self.repeat:
                return self.script.pop(0)
            return self.script[0]
        if self.failures_left > 0:
            self.failures_left -= 1
            return ('fail',)
        return ('default',)

    def close(self):
        self._stopper.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- the rules ----------------------------------------------------------------------------------------------------

    @staticmethod
    def top(body, ly, ln):
        """The returned log-probabilities: of the asked ids (vLLM's logprob_token_ids), else some top tokens."""
        if body.get('logprob_token_ids'):
            yes_id, no_id = body['logprob_token_ids']
            return {f'token_id:{yes_id}': ly, f'token_id:{no_id}': ln}
        return {'yes': ly, ' no': ln, 'maybe': -9.0}

    @staticmethod
    def judgement(text):
        """``(log P(yes), log P(no))``: 0.8 for a text that says 'good', else 0.2."""
        p = 0.8 if 'good' in text else 0.2
        return math.log(p), math.log(1 - p)

    def respond(self, path, body):
        """``(status, payload)`` of a POST answered by the rules."""
        unknown = [k for k in body if k in VLLM_FIELDS]
        if self.generic and (unknown or path.endswith(('/tokenize', '/detokenize'))):
            return (400 if unknown else 404), {'error': {
                'message': f'Unrecognized request argument supplied: {unknown[0] if unknown else ""}',
                'type': 'invalid_request_error'}}
        if path == '/tokenize':
            return 200, self.tokenize(body)
        if path == '/detokenize':
            return 200, {'prompt': ' '.join(self.words[t] for t in body['tokens'])}
        return 200, self.answer(path, body)

    def token_ids(self, text):
        """The fake tokenizer: one token per whitespace-separated word (ids of new words given as they come)."""
        with self.lock:
            for word in text.split():
                if word not in self.vocab:
                    self.vocab[word] = len(self.vocab) + 1000
                    self.words[self.vocab[word]] = word
            return [self.vocab[word] for word in text.split()]

    def tokenize(self, body):
        """vLLM's ``/tokenize``: of a ``prompt``, or of ``messages`` rendered as ``role: content`` lines (plus the
        assistant's turn opener unless the last message is continued)."""
        if 'messages' in body:
            lines = [f"{m['role']}: {m['content']}" for m in body['messages']]
            if not body.get('continue_final_message'):
                lines.append('assistant:')
            tokens = self.token_ids('\n'.join(lines))
        else:
            tokens = self.token_ids(body['prompt'])
        return {'tokens': tokens, 'count': len(tokens), 'max_model_len': self.max_model_len}

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


class ScriptedServer(FakeOpenAIServer):
    """The fault-test form: each completion request takes the next action of ``script``; the last one repeats."""

    def __init__(self, script, **kwargs):
        super().__init__(script, repeat=True, **kwargs)

