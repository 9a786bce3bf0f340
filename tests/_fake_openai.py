"""A scripted OpenAI-compatible server on 127.0.0.1 for fault tests: each POST takes the next action of a script.

Every loop is bounded and the server shuts itself down after ``lifetime`` seconds even if a test forgets to.
"""
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


def completion(text='yes', logprobs=None):
    return {'id': 'c', 'object': 'chat.completion', 'created': 0, 'model': 'm',
            'choices': [{'index': 0, 'finish_reason': 'stop', 'logprobs': logprobs,
                         'message': {'role': 'assistant', 'content': text}}],
            'usage': {'prompt_tokens': 3, 'completion_tokens': 1, 'total_tokens': 4}}


class ScriptedServer:
    """Actions: ``('ok', payload)``, ``('raw', status, body_bytes, headers)``, ``('trickle', total_bytes, interval)``.

    The last action repeats when the script runs out. ``requests`` records ``(time, path, authorization, body)``.
    """

    def __init__(self, script, *, lifetime=60.0):
        self.script, self.requests, self.lock = list(script), [], threading.Lock()
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

            def do_GET(self):
                self._send(200, json.dumps({'object': 'list', 'data': []}).encode(),
                           {'Content-Type': 'application/json'})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers['Content-Length'])))
                with server.lock:
                    server.requests.append((time.monotonic(), self.path, self.headers.get('Authorization'), body))
                    action = server.script.pop(0) if len(server.script) > 1 else server.script[0]
                try:
                    if action[0] == 'ok':
                        self._send(200, json.dumps(action[1]).encode(), {'Content-Type': 'application/json'})
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
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(('127.0.0.1', 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f'http://127.0.0.1:{self.httpd.server_address[1]}/v1'
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self._stopper = threading.Timer(lifetime, self.close)
        self._stopper.daemon = True
        self._stopper.start()

    def close(self):
        self._stopper.cancel()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@pytest.fixture
def local_network(monkeypatch):
    """Requests to the fake server go straight to 127.0.0.1 (no proxy), and no real API key is picked up."""
    for var in ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy'):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv('NO_PROXY', '127.0.0.1,localhost')
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
