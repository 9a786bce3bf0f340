"""Engine faults against a scripted OpenAI-compatible server on 127.0.0.1: an overall deadline, invalid 200 bodies
retried with a clear final error, Retry-After honoured (issue 9, "Faults never hang and never crash a run")."""
import time

import pytest

from pyterrier_garen._engines import OpenAIEngine

from _fake_openai import ScriptedServer, completion

pytest.importorskip('openai', reason='the openai client (vllm extra) is not installed')
pytestmark = pytest.mark.usefixtures('local_network')


CONV = [{'role': 'user', 'content': 'hello'}]


def _engine(server, **kwargs):
    return OpenAIEngine(server.url, 'm', **{'retry_backoff': 0.01, 'max_concurrency': 1, **kwargs})


def test_a_trickling_server_cannot_extend_the_deadline():
    # 240 bytes at 0.25 s: a minute per attempt if the deadline did not hold, about a second each if it does; the
    # bound sits far from both, so a stalled CI machine does not fail it and a broken deadline cannot pass it
    with ScriptedServer([('trickle', 240, 0.25)]) as server:
        engine = _engine(server, timeout=1.0, max_retries=1)
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=r'failed after 2 attempts \(DeadlineExceeded: no complete answer '
                                               r'within timeout=1.0 s\)'):
            engine.generate([CONV], max_tokens=4)
        assert time.monotonic() - started < 20.0  # two attempts of 1 s, not 240 x 0.25 s each
        assert len(server.requests) == 2


@pytest.mark.parametrize('body', [b'<html><body>502 Bad Gateway</body></html>', b'{"object": "error"}',
                                  b'{"choices": []}', b'not json at all'])
def test_an_invalid_200_body_is_retried_then_named(body):
    with ScriptedServer([('raw', 200, body, {'Content-Type': 'application/json'})]) as server:
        engine = _engine(server, max_retries=2)
        with pytest.raises(RuntimeError, match=r'failed after 3 attempts \((InvalidResponseError|APIResponse'
                                               r'ValidationError)') as info:
            engine.generate([CONV], max_tokens=4)
        assert len(server.requests) == 3
        assert 'TypeError' not in str(info.value)


def test_an_invalid_200_body_then_a_good_one_recovers():
    script = [('raw', 200, b'<html>oops</html>', {'Content-Type': 'text/html'}), ('ok', completion('fine'))]
    with ScriptedServer(script) as server:
        out = _engine(server, max_retries=2).generate([CONV], max_tokens=4)
        assert out[0].text == 'fine'
        assert len(server.requests) == 2


@pytest.mark.parametrize('status', [429, 503])
def test_retry_after_is_honoured(status):
    error = b'{"error": {"message": "slow down", "type": "rate_limit"}}'
    script = [('raw', status, error, {'Content-Type': 'application/json', 'Retry-After': '1'}),
              ('ok', completion('after'))]
    with ScriptedServer(script) as server:
        out = _engine(server, max_retries=1).generate([CONV], max_tokens=4)
        assert out[0].text == 'after'
        (first, *_), (second, *_) = server.requests
        assert second - first >= 0.95  # backoff alone would be 0.01 s


def test_a_refused_request_is_not_retried_and_names_the_server():
    body = b'{"error": {"message": "model m does not exist", "type": "not_found"}}'
    with ScriptedServer([('raw', 404, body, {'Content-Type': 'application/json'})]) as server:
        with pytest.raises(RuntimeError, match=rf'request to {server.url} was refused \(NotFoundError'):
            _engine(server, max_retries=3).generate([CONV], max_tokens=4)
        assert len(server.requests) == 1


def test_yes_no_without_logprobs_is_counted_and_warned_once():
    with ScriptedServer([('ok', completion('yes', logprobs=None))]) as server:
        engine = _engine(server, max_retries=0, vllm_extensions=False)
        with pytest.warns(UserWarning, match=r'2 yes/no answers came without usable log-probabilities for either '
                                             r'token; they score P\(yes\) = 0.5, which carries no preference'):
            first = engine.yes_no([CONV, CONV])
        import warnings
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            engine.yes_no([CONV])  # counted again, not warned again
    assert [g.probability for g in first] == [0.5, 0.5]
    assert engine.unscored_yes_no == 3


@pytest.mark.parametrize(('kwargs', 'words'), [
    ({'timeout': 0}, 'timeout must be a finite number > 0, got 0'),
    ({'timeout': float('nan')}, 'timeout must be a finite number > 0, got nan'),
    ({'retry_backoff': -1}, 'retry_backoff must be a finite number >= 0, got -1'),
    ({'max_retries': -1}, 'max_retries must be an integer >= 0, got -1'),
    ({'max_retries': 1.5}, 'max_retries must be an integer >= 0, got 1.5'),
])
def test_bad_engine_options(kwargs, words):
    with pytest.raises(ValueError, match=words):
        OpenAIEngine('http://127.0.0.1:9/v1', 'm', **kwargs)
    OpenAIEngine('http://127.0.0.1:9/v1', 'm', retry_backoff=0)  # no backoff is allowed
