"""Oracles for the engine that talks to OpenAI-compatible servers (the thirty-first mutation run).

The engine's clients are replaced by scripted objects with the ``openai`` client's shape, so every request, retry,
wait, server choice and answer is known: round-robin over several servers, the backoff and ``Retry-After`` waits,
which errors are retried and which stop the run, the overall deadline, the exact request bodies (greedy decoding in
full, vLLM's fields, a prefill), the yes/no arithmetic over returned log-probabilities, the context length a server
reports, and the server-side tokenizer. Values are worked out by hand. The engine over real HTTP is in
``test_robustness_server_faults.py`` and, against real vLLM, ``test_llm_engines.py``.
"""
import json
import math
import re
import threading
import time
import types
import warnings

import pytest

openai = pytest.importorskip('openai')
try:  # the HTTP library of the installed openai client: httpx2 for openai 3, httpx before
    import httpx2 as httpx
except ImportError:
    httpx = pytest.importorskip('httpx')

from pyterrier_garen._engines import _openai  # noqa: E402
from pyterrier_garen._engines._base import AccessRefused, AnswerTokenError  # noqa: E402
from pyterrier_garen._engines._openai import DeadlineExceeded, InvalidResponseError, OpenAIEngine, \
    RequestFailed, RequestRefused, _check_completion, _positive_int  # noqa: E402
from pyterrier_garen._engines._tokens import ServerTokenizer, estimate_count, estimate_truncate, \
    split_prefill  # noqa: E402

NS = types.SimpleNamespace
REQUEST = httpx.Request('POST', 'http://server/v1/chat/completions')


def _status(cls, code, headers=None, message='no'):
    return cls(message, response=httpx.Response(code, request=REQUEST, headers=headers or {}), body=None)


def _completion(text='ok'):
    return NS(choices=[NS(message=NS(content=text), text=None, finish_reason='stop')],
              usage=NS(prompt_tokens=3, completion_tokens=1))


@pytest.fixture
def waits(monkeypatch):
    """The engine's waits between retries, recorded instead of slept."""
    slept = []
    monkeypatch.setattr(_openai, 'time', NS(sleep=slept.append, time=time.time))
    return slept


def _engine(n=1, **kwargs):
    kwargs.setdefault('max_retries', 3)
    kwargs.setdefault('retry_backoff', 0.5)
    urls = [f'http://s{k}/v1' for k in range(n)]
    return OpenAIEngine(urls if n > 1 else urls[0], 'm', api_key='sk-test-key-0123', **kwargs)


# ---- small helpers


@pytest.mark.parametrize(('value', 'expected'), [(4096, 4096), (4096.0, 4096), (1, 1), (1.0, 1), (4096.5, None),
                                                 (0, None), (0.0, None), (-3, None), (True, None), ('4096', None),
                                                 (math.inf, None), (math.nan, None), (None, None), (0.5, None)])
def test_positive_int(value, expected):
    result = _positive_int(value)
    assert result == expected
    assert type(result) is (int if expected is not None else type(None))


def test_what_counts_as_a_completion():
    chat = NS(choices=[NS(message=NS(content='a'))])
    assert _check_completion(chat) is chat
    text = NS(choices=[NS(message=None, text='')])
    assert _check_completion(text) is text  # an empty text is still a completion
    for bad, shown in [(NS(choices=[]), 'SimpleNamespace'), (NS(choices=(NS(message=NS()),)), 'SimpleNamespace'),
                       (NS(choices=[NS(message=None, text=None)]), 'SimpleNamespace'), ({'choices': []}, 'dict'),
                       ('<html>' + 'x' * 100, '<html>' + 'x' * 74), (b'oops', "b'oops'"),
                       (NS(choices=[None]), 'SimpleNamespace')]:
        with pytest.raises(InvalidResponseError) as refused:
            _check_completion(bad)
        # what it got, at most 80 characters of it, quoted
        assert str(refused.value) == (f'the server answered with something that is not a completion ({shown!r}); '
                                      'is base_url the OpenAI-compatible API (ending in /v1)?')


def test_split_prefill_and_the_estimates():
    user = {'role': 'user', 'content': 'q'}
    assert split_prefill([user, {'role': 'assistant', 'content': 'Yes'}]) == ([user], 'Yes')
    assert split_prefill([user, {'role': 'assistant', 'content': None}]) == ([user], '')
    assert split_prefill([user]) == ([user], '')
    assert split_prefill([]) == ([], '')
    assert estimate_count('abcdefghi', 4) == 3  # 9 / 4 rounded up
    assert estimate_count('abcdefgh', 4) == 2
    assert estimate_count('', 4) == 0
    assert estimate_truncate('abcd efgh ijkl', 3, 4) == 'abcd efgh'  # 12 characters, then the space at 9 >= 6
    assert estimate_truncate('ab cdefghijklmn', 3, 4) == 'ab cdefghijk'  # the space at 2 is before the half (6)
    assert estimate_truncate('abcdef ghijkl', 3, 4) == 'abcdef'  # a space exactly at the half cuts there
    assert estimate_truncate('short', 2, 4) == 'short'  # 5 <= 8
    assert estimate_truncate('exactly8', 2, 4) == 'exactly8'
    assert estimate_truncate('abc', 0, 4) == ''
    assert estimate_truncate('abc', -2, 4) == ''
    assert estimate_truncate('a b c d e f', 1, 2.5) == 'a'  # limit int(2.5) = 2: 'a ' -> space at 1 >= 1


# ---- requests: servers, retries, waits


class _Client:
    """A scripted client: each call of ``fn`` records which client it went to."""

    def __init__(self, name, log):
        self.name, self.log, self.closed = name, log, False

    def close(self):
        self.closed = True


def _clients(engine, log):
    engine._clients = [_Client(k, log) for k in range(len(engine._clients))]
    return engine._clients


def test_requests_go_round_robin_and_first_does_not_move_it(waits):
    engine = _engine(3)
    log = []
    _clients(engine, log)
    call = lambda c: log.append(c.name) or c.name  # noqa: E731
    assert [engine._request(call, completion=False) for _ in range(4)] == [0, 1, 2, 0]
    assert engine._request(call, completion=False, first=2) == 2
    assert engine._request(call, completion=False) == 1  # the round-robin goes on where it was
    assert engine.requests_per_server == [2, 2, 2]
    assert waits == []


def test_retries_move_to_the_next_server_and_wait_twice_as_long_each_time(waits):
    engine = _engine(3, max_retries=3, retry_backoff=0.5)
    log = []
    _clients(engine, log)
    failures = [_status(openai.RateLimitError, 429), openai.APIConnectionError(request=REQUEST),
                openai.APITimeoutError(request=REQUEST)]

    def call(client):
        log.append(client.name)
        if failures:
            raise failures.pop(0)
        return 'answer'
    assert engine._request(call, completion=False) == 'answer'
    assert log == [0, 1, 2, 0]
    assert waits == [0.5, 1.0, 2.0]
    assert engine.requests_per_server == [2, 1, 1]


def test_every_retryable_failure_is_retried_then_said_in_one_line(waits):
    engine = _engine(2, max_retries=2, retry_backoff=0.25)
    log = []
    _clients(engine, log)
    for error in (_status(openai.InternalServerError, 503), _status(openai.RateLimitError, 429),
                  openai.APIConnectionError(request=REQUEST), openai.APITimeoutError(request=REQUEST),
                  InvalidResponseError('not a completion'), DeadlineExceeded('slow'),
                  openai.APIResponseValidationError(response=httpx.Response(200, request=REQUEST), body=None)):
        log.clear()
        waits.clear()

        def call(client, error=error):
            log.append(client.name)
            raise error
        with pytest.raises(RequestFailed) as failed:
            engine._request(call, completion=False)
        assert len(log) == 3
        assert log[1] == (log[0] + 1) % 2
        assert waits == [0.25, 0.5]
        last = f'http://s{log[-1]}/v1'
        assert str(failed.value).startswith(f'request to {last} failed after 3 attempts ({type(error).__name__}: ')
        assert str(failed.value).endswith("); check that the server is up and serves 'm', or raise timeout=/"
                                          'max_retries= (--timeout/--max-retries)')


def test_no_retries_at_all(waits):
    engine = _engine(1, max_retries=0)
    _clients(engine, [])
    with pytest.raises(RequestFailed, match='failed after 1 attempts'):
        engine._request(lambda c: (_ for _ in ()).throw(_status(openai.InternalServerError, 500)), completion=False)
    assert waits == []
    assert engine.requests_per_server == [1]


@pytest.mark.parametrize(('error', 'raised', 'words'), [
    (lambda: _status(openai.AuthenticationError, 401, message='key sk-test-key-0123 is wrong'), AccessRefused,
     'http://s0/v1 refused the credentials (HTTP 401 AuthenticationError: key <hidden> is wrong); no retry can fix '
     "this, so the run stops: check the API key (api_key=, or $OPENAI_API_KEY) and that it may use 'm'"),
    (lambda: _status(openai.PermissionDeniedError, 403), AccessRefused, '(HTTP 403 PermissionDeniedError: no)'),
    (lambda: _status(openai.BadRequestError, 400, message='prompt too long'), RequestRefused,
     'request to http://s0/v1 was refused (BadRequestError: prompt too long)'),
    (lambda: _status(openai.NotFoundError, 404, message='no model'), RequestFailed,
     'request to http://s0/v1 was refused (NotFoundError: no model)'),
    (lambda: _status(openai.UnprocessableEntityError, 422), RequestFailed, '(UnprocessableEntityError: no)')])
def test_errors_a_retry_cannot_fix_stop_at_the_first_attempt(waits, error, raised, words):
    engine = _engine(2, max_retries=3)
    log = []
    _clients(engine, log)

    def call(client):
        log.append(client.name)
        raise error()
    with pytest.raises(raised) as stopped:
        engine._request(call, completion=False)
    assert type(stopped.value) is raised
    assert log == [0]
    assert waits == []
    assert words in str(stopped.value)
    assert 'sk-test-key-0123' not in str(stopped.value)
    assert stopped.value.__context__ is None or 'sk-test' not in str(stopped.value.__context__)


def test_other_exceptions_pass_through_unchanged(waits):
    engine = _engine(1)
    _clients(engine, [])
    with pytest.raises(KeyError, match='mine'):
        engine._request(lambda c: {}['mine'], completion=False)
    assert waits == []


@pytest.mark.parametrize(('header', 'attempt', 'expected'), [
    (None, 0, 0.5), (None, 2, 2.0), ('2', 0, 2.0), ('0.1', 1, 1.0), ('100', 0, 60.0), ('-5', 0, 0.5), ('0', 3, 4.0),
    ('garbage', 1, 1.0), ('inf', 0, 0.5), ('nan', 0, 0.5), ('', 0, 0.5), ('Wed, 21 Oct 2015 07:28:00 GMT', 1, 1.0)])
def test_retry_delay_backs_off_or_takes_the_servers_word(header, attempt, expected):
    engine = _engine(1, retry_backoff=0.5)
    headers = {} if header is None else {'retry-after': header}
    error = NS(response=NS(headers=headers))
    assert engine._retry_delay(error, attempt) == pytest.approx(expected)
    assert engine._retry_delay(NS(), attempt) == pytest.approx(0.5 * 2 ** attempt)  # no response at all


def test_retry_after_as_an_http_date_in_the_future():
    from email.utils import format_datetime
    import datetime
    engine = _engine(1, retry_backoff=0.5)
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
    delay = engine._retry_delay(NS(response=NS(headers={'retry-after': format_datetime(when, usegmt=True)})), 0)
    assert 28 <= delay <= 30.5
    far = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(hours=2)
    assert engine._retry_delay(NS(response=NS(headers={'retry-after': format_datetime(far, usegmt=True)})), 0) == 60


def test_a_request_past_its_deadline_is_abandoned_and_its_client_replaced(waits):
    engine = _engine(1, timeout=0.3, max_retries=1)
    log = []
    old = _clients(engine, log)[0]
    release = threading.Event()

    def call(client):
        log.append(client)
        if client is old:
            release.wait(5)
            return 'too late'
        return 'second'
    assert engine._request(call, completion=False) == 'second'
    release.set()
    assert log[0] is old
    assert log[1] is engine._clients[0]
    assert log[1] is not old
    assert str(log[1].base_url) == 'http://s0/v1/'
    assert waits == [0.5]
    for _ in range(50):
        if old.closed:
            break
        time.sleep(0.02)
    assert old.closed


def test_deadline_message_and_a_body_that_is_not_json():
    engine = _engine(1, timeout=0.2)
    _clients(engine, [])
    release = threading.Event()
    with pytest.raises(DeadlineExceeded) as late:
        engine._with_deadline(0, lambda c: release.wait(5))
    release.set()
    assert str(late.value) == 'no complete answer within timeout=0.2 s'

    def not_json(client):
        json.loads('<html>' + 'y' * 80)
    with pytest.raises(InvalidResponseError) as bad:
        engine._with_deadline(0, not_json)
    assert str(bad.value) == ("the server answered with a body that is not JSON (Expecting value at 0: "
                              f"{('<html>' + 'y' * 80)[:60]!r})")
    assert engine._with_deadline(0, lambda c: {'a': 1}, completion=False) == {'a': 1}
    with pytest.raises(InvalidResponseError):
        engine._with_deadline(0, lambda c: {'a': 1})  # a completion was expected
    answer = _completion()
    assert engine._with_deadline(0, lambda c: answer) is answer


def test_an_answer_that_is_not_a_completion_is_retried(waits):
    engine = _engine(2, max_retries=1)
    _clients(engine, [])
    answers = [NS(choices=[]), _completion('fine')]
    assert engine._request(lambda c: answers.pop(0)).choices[0].message.content == 'fine'
    assert waits == [0.5]


def test_map_runs_in_order_in_threads_only_when_it_helps():
    engine = _engine(1, max_concurrency=4)
    main = threading.current_thread()
    where = []
    assert engine._map(lambda x: where.append(threading.current_thread()) or x * 2, []) == []
    assert engine._map(lambda x: where.append(threading.current_thread()) or x * 2, [5]) == [10]
    assert where == [main]

    def slow_first(x):
        time.sleep(0.05 if x == 0 else 0)
        where.append(threading.current_thread())
        return x * 10
    assert engine._map(slow_first, range(6)) == [0, 10, 20, 30, 40, 50]
    assert all(t is not main for t in where[1:])
    single = _engine(1, max_concurrency=1)
    where.clear()
    assert single._map(slow_first, (1, 2, 3)) == [10, 20, 30]
    assert where == [main, main, main]


# ---- vLLM's request fields, and requests without them


def test_the_server_rejecting_vllm_fields_is_found_once_and_counted(waits):
    engine = _engine(1, max_retries=0)
    _clients(engine, [])
    sent = []

    def build(ext):
        def call(client):
            sent.append(ext)
            if ext:
                raise _status(openai.BadRequestError, 400, message='unknown field: top_k')
            return _completion()
        return call
    with pytest.warns(UserWarning, match="rejects vLLM's request fields") as said:
        response, ext = engine._send(build)
    assert (ext, sent, engine.extension_fallbacks) == (False, [True, False], 1)
    assert len(said) == 1
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert engine._send(build)[1] is False  # no more tries, no second warning
    assert (sent, engine.extension_fallbacks) == ([True, False, False], 2)


def test_a_refusal_that_names_no_vllm_field_or_fields_asked_for_explicitly_are_raised():
    engine = _engine(1, max_retries=0)
    _clients(engine, [])

    def refuse(ext):
        return lambda c: (_ for _ in ()).throw(_status(openai.BadRequestError, 400, message='prompt too long'))
    with pytest.raises(RequestRefused, match='prompt too long'):
        engine._send(refuse)
    assert engine._extensions is True
    forced = _engine(1, max_retries=0, vllm_extensions=True)
    _clients(forced, [])

    def refuse_field(ext):
        return lambda c: (_ for _ in ()).throw(_status(openai.BadRequestError, 400, message='bad min_p'))
    with pytest.raises(RequestRefused, match='min_p'):
        forced._send(refuse_field)
    assert forced.extension_fallbacks == 0
    plain = _engine(1, max_retries=0, vllm_extensions=False)
    _clients(plain, [])
    assert plain._send(lambda ext: lambda c: _completion(str(ext)))[0].choices[0].message.content == 'False'
    assert plain.extension_fallbacks == 0  # never asked for: not a fallback


@pytest.mark.parametrize('field', ['top_k', 'min_p', 'repetition_penalty', 'allowed_token_ids', 'logprob_token_ids',
                                   'return_tokens_as_token_ids'])
def test_each_vllm_field_named_in_a_refusal_turns_them_off(field):
    engine = _engine(1, max_retries=0)
    _clients(engine, [])
    calls = []

    def build(ext):
        def call(client):
            calls.append(ext)
            if ext:
                raise _status(openai.BadRequestError, 400, message=f'extra field {field} not permitted')
            return plain
        return call
    plain = _completion('plain')
    with pytest.warns(UserWarning, match="rejects vLLM's request fields"):
        assert engine._send(build) == (plain, False)
    assert calls == [True, False]


def test_request_bodies_say_greedy_decoding_in_full():
    engine = _engine(1, seed=7)
    user = [{'role': 'system', 'content': 's'}, {'role': 'user', 'content': 'q'}]
    greedy = {'temperature': 0.0, 'top_p': 1.0, 'presence_penalty': 0.0, 'frequency_penalty': 0.0, 'seed': 7}
    assert engine._chat_kwargs(user) == {'model': 'm', 'messages': user, **greedy, 'extra_body': None}
    assert engine._chat_kwargs(user, True) == {'model': 'm', 'messages': user, **greedy, 'extra_body': {
        'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}}
    assert engine._chat_kwargs(user, False, {'allowed_token_ids': [1, 2]})['extra_body'] == {
        'allowed_token_ids': [1, 2]}
    templated = _engine(1, chat_template_kwargs={'enable_thinking': False})
    prefilled = templated._chat_kwargs(user + [{'role': 'assistant', 'content': 'Answer:'}])
    assert prefilled['messages'] == user + [{'role': 'assistant', 'content': 'Answer:'}]
    assert prefilled['extra_body'] == {'chat_template_kwargs': {'enable_thinking': False},
                                       'add_generation_prompt': False, 'continue_final_message': True}
    assert prefilled['extra_body']['chat_template_kwargs'] is not templated.chat_template_kwargs
    assert prefilled['seed'] == 0


class _Tokenizer:
    """A tokenizer with the two methods the engine calls: a chat template, and one id per word."""

    def __init__(self, vocabulary):
        self.vocabulary = vocabulary

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=True, **kwargs):
        text = ''.join(f"<{m['role']}>{m['content']}" for m in messages)
        return text + ('<assistant>' if add_generation_prompt else '') + ''.join(f'[{k}={v}]' for k, v in
                                                                                  kwargs.items())

    def encode(self, text, add_special_tokens=True):
        return ([0] if add_special_tokens else []) + [self.vocabulary[w] for w in text.split()]  # 0: BOS

    def decode(self, ids):
        words = {v: k for k, v in self.vocabulary.items()}
        return ' '.join(words[i] for i in ids)


def test_completion_bodies_render_the_prompt_here():
    engine = _engine(1, tokenizer=_Tokenizer({}), chat_template_kwargs={'t': 1}, seed=3)
    body = engine._completion_kwargs([{'role': 'user', 'content': 'q'}, {'role': 'assistant', 'content': 'A:'}],
                                     True, {'logprob_token_ids': [9]})
    assert body == {'model': 'm', 'prompt': '<user>q<assistant>[t=1]A:', 'temperature': 0.0, 'top_p': 1.0,
                    'presence_penalty': 0.0, 'frequency_penalty': 0.0, 'seed': 3,
                    'extra_body': {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0, 'logprob_token_ids': [9]}}
    assert _engine(1, tokenizer=_Tokenizer({}))._completion_kwargs([{'role': 'user', 'content': 'q'}])[
        'extra_body'] is None


# ---- generation and yes/no answers through scripted clients


class _Api:
    """``client.chat.completions.create`` and ``client.completions.create`` answering from a script."""

    def __init__(self, answer):
        self.calls = []
        self.answer = answer
        self.chat = NS(completions=NS(create=self._create))
        self.completions = NS(create=self._create)

    def _create(self, **kwargs):
        self.calls.append(kwargs)
        return self.answer(kwargs) if callable(self.answer) else self.answer

    def close(self):
        pass


def test_generate_reads_the_text_and_the_usage():
    engine = _engine(1, vllm_extensions=False)
    api = _Api(NS(choices=[NS(message=NS(content=None), finish_reason='length')], usage=NS(prompt_tokens=11)))
    engine._clients = [api]
    (out,) = engine.generate([[{'role': 'user', 'content': 'q'}]], max_tokens=7.0, stop=('\n', 'END'))
    assert (out.text, out.prompt_tokens, out.completion_tokens, out.finish_reason) == ('', 11, 0, 'length')
    assert api.calls[0]['max_tokens'] == 7
    assert type(api.calls[0]['max_tokens']) is int
    assert api.calls[0]['stop'] == ['\n', 'END']
    api.answer = NS(choices=[NS(message=NS(content='Hi'), finish_reason='stop')],
                    usage=NS(prompt_tokens=None, completion_tokens=2))
    (out,) = engine.generate([[{'role': 'user', 'content': 'q'}]], max_tokens=3, stop=[])
    assert (out.text, out.prompt_tokens, out.completion_tokens) == ('Hi', 0, 2)
    assert api.calls[1]['stop'] is None
    local = _engine(1, vllm_extensions=False, tokenizer=_Tokenizer({}))
    local._clients = [_Api(NS(choices=[NS(text='', finish_reason='stop')], usage=None))]
    assert local.generate([[{'role': 'user', 'content': 'q'}]], max_tokens=2)[0].text == ''
    assert local._clients[0].calls[0]['prompt'] == '<user>q<assistant>'


def _chat_logprobs(pairs, chosen=None):
    top = [NS(token=t, logprob=lp) for t, lp in pairs]
    first = chosen or top[0]
    return NS(choices=[NS(message=NS(content=first.token), finish_reason='length',
                          logprobs=NS(content=[NS(token=first.token, logprob=first.logprob, top_logprobs=top)]))],
              usage=NS(prompt_tokens=4, completion_tokens=1))


def _p(yes, no):
    return math.exp(yes) / (math.exp(yes) + math.exp(no))


def test_yes_no_by_token_id_is_exact_and_restricted():
    engine = _engine(1, tokenizer=_Tokenizer({'yes': 10, 'no': 20, 'two words': 0}))
    api = _Api(NS(choices=[NS(text='', finish_reason='length', logprobs=NS(top_logprobs=[
        {'token_id:20': -0.2, 'token_id:10': -1.9}]))], usage=NS(prompt_tokens=2, completion_tokens=1)))
    engine._clients = [api]
    (out,) = engine.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert out.probability == pytest.approx(_p(-1.9, -0.2))
    assert out.text == 'no'
    body = api.calls[0]
    assert body['logprobs'] == 2
    assert body['max_tokens'] == 1
    assert body['extra_body']['allowed_token_ids'] == [10, 20]
    assert body['extra_body']['logprob_token_ids'] == [10, 20]
    assert body['extra_body']['return_tokens_as_token_ids'] is True
    assert (engine.inexact_yes_no, engine.unscored_yes_no) == (0, 0)
    assert engine.yes_no([]) == []


def test_yes_no_by_words_takes_the_best_spelling_and_counts_estimates():
    engine = _engine(1, vllm_extensions=False, top_logprobs=5)
    answers = [_chat_logprobs([(' Yes', -0.7), ('yes', -0.4), ('No', -1.3), ('maybe', -3.0)]),
               _chat_logprobs([('YES', -0.1), ('nope', -2.5)]),
               _chat_logprobs([('a', -0.5), ('b', float('nan'))]),
               _chat_logprobs([(' no', -0.05), (' yes', float('-inf'))])]
    api = _Api(lambda kwargs: answers[int(kwargs['messages'][0]['content'])])  # the k-th question, k-th answer
    engine._clients = [api]
    with pytest.warns(UserWarning, match='yes/no answers') as said:
        out = engine.yes_no([[{'role': 'user', 'content': str(k)}] for k in range(4)], yes='Yes', no='No')
    assert out[0].probability == pytest.approx(_p(-0.4, -1.3))
    assert out[1].probability == pytest.approx(_p(-0.1, -2.5))  # 'no' missing: the lowest returned value
    assert out[2].probability == 0.5
    assert out[3].probability == 0.0
    assert [o.text for o in out] == ['Yes', 'Yes', 'Yes', 'No']  # 0.5 reads as yes
    assert (engine.inexact_yes_no, engine.unscored_yes_no) == (1, 1)
    assert api.calls[0]['top_logprobs'] == 5
    assert api.calls[0]['logprobs'] is True
    assert api.calls[0]['extra_body'] is None
    assert len(said) == 2
    assert "(the server does not take vLLM's logprob_token_ids)" in str(said[0].message) + str(said[1].message)


def test_yes_no_without_answer_ids_asks_the_top_log_probabilities():
    engine = _engine(1, top_logprobs=7)
    engine._answer_ids = {'yes': 5, 'no': None}
    api = _Api(_chat_logprobs([('yes', -0.3), ('no', -0.9)]))
    engine._clients = [api]
    (out,) = engine.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert out.probability == pytest.approx(_p(-0.3, -0.9))
    assert api.calls[0]['top_logprobs'] == 7
    assert api.calls[0]['extra_body'] == {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}


def test_a_chat_answer_without_log_probabilities_is_unscored():
    engine = _engine(1, vllm_extensions=False)
    engine._clients = [_Api(NS(choices=[NS(message=NS(content='yes'), finish_reason='stop', logprobs=None)],
                               usage=None))]
    with pytest.warns(UserWarning, match='without usable log-probabilities'):
        (out,) = engine.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert out.probability == 0.5
    assert engine.unscored_yes_no == 1
    empty = _engine(1, vllm_extensions=False)
    empty._clients = [_Api(NS(choices=[NS(message=NS(content='yes'), finish_reason='stop',
                                          logprobs=NS(content=[]))], usage=None))]
    with pytest.warns(UserWarning, match='without usable log-probabilities'):
        assert empty.yes_no([[{'role': 'user', 'content': 'q'}]])[0].probability == 0.5


def test_the_chosen_token_counts_when_the_top_list_leaves_it_out():
    engine = _engine(1, vllm_extensions=False)
    chosen = NS(token='yes', logprob=-0.2)
    engine._clients = [_Api(_chat_logprobs([('no', -1.0)], chosen=chosen))]
    (out,) = engine.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert out.probability == pytest.approx(_p(-0.2, -1.0))


def test_answer_ids_come_from_the_tokenizer_else_the_server_and_must_be_one_token():
    engine = _engine(1, tokenizer=_Tokenizer({'yes': 3, 'ja': 3, 'two': 1, 'words': 2}))
    assert engine.answer_token_id('yes') == 3
    with pytest.raises(AnswerTokenError, match=r"'two words' is 2 tokens for 'm' \(\[1, 2\]\)"):
        engine.answer_token_id('two words')
    engine._clients = [_Api(_chat_logprobs([('yes', -0.1)]))]
    with pytest.raises(AnswerTokenError, match=r"yes='yes' and no='ja' are the same token \(3\) for 'm'"):
        engine.yes_no([[{'role': 'user', 'content': 'q'}]], yes='yes', no='ja')
    served = _engine(1)
    served._server_tokenizer = ServerTokenizer(lambda path, body: {'tokens': [42]}, served._map, 'm')
    assert served.answer_token_id('Yes') == 42
    served._server_tokenizer = ServerTokenizer(lambda path, body: None, served._map, 'm')
    assert served.answer_token_id('Yes') == 42  # cached
    assert served.answer_token_id('No') is None

    def broken(path, body):
        raise RequestFailed('down')
    plain = _engine(1)
    plain._server_tokenizer = ServerTokenizer(broken, plain._map, 'm')
    assert plain.answer_token_id('yes') is None

    def refused(path, body):
        raise AccessRefused('no key')
    locked = _engine(1)
    locked._server_tokenizer = ServerTokenizer(refused, locked._map, 'm')
    with pytest.raises(AccessRefused):
        locked.answer_token_id('yes')
    off = _engine(1, vllm_extensions=False)
    off._server_tokenizer = ServerTokenizer(lambda path, body: {'tokens': [42]}, off._map, 'm')
    assert off.answer_token_id('yes') is None  # the server is not asked without vLLM's fields


# ---- the context length a server reports


def _listing(*entries):
    return lambda c: NS(data=list(entries))


@pytest.mark.parametrize(('entries', 'expected', 'warned'), [
    ([NS(id='other', max_model_len=1), NS(id='m', max_model_len=4096)], 4096, False),
    ([NS(id='m', max_model_len=None, model_extra={'max_model_len': 2048.0})], 2048, False),
    ([NS(id='m', max_model_len=1024, model_extra={'max_model_len': 2048})], 1024, False),
    ([NS(id='m')], 8192, False),
    ([NS(id='m', max_model_len=0)], 8192, True),
    ([NS(id='m', max_model_len='4096')], 8192, True),
    ([NS(id='x'), NS(id='y')], 8192, True),
    ([], 8192, True)])
def test_context_length_from_the_model_listing(entries, expected, warned):
    engine = _engine(1, max_retries=0)
    engine._clients = [NS(models=NS(list=lambda: NS(data=list(entries))), close=lambda: None)]
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter('always')
        assert engine.context_length == expected
    assert bool(said) == warned
    engine._clients = None  # asked once
    assert engine.context_length == expected


def test_context_length_given_is_never_asked_and_a_failure_falls_back():
    assert _engine(1, context_length=1000).context_length == 1000
    engine = _engine(1, max_retries=0)
    engine._clients = [NS(models=NS(list=lambda: (_ for _ in ()).throw(openai.APIConnectionError(request=REQUEST))),
                          close=lambda: None)]
    with pytest.warns(UserWarning, match=r"could not read the context length of 'm' from http://s0/v1/models"):
        assert engine.context_length == 8192
    refused = _engine(1, max_retries=0)
    refused._clients = [NS(models=NS(list=lambda: (_ for _ in ()).throw(_status(openai.AuthenticationError, 401))),
                           close=lambda: None)]
    with pytest.raises(AccessRefused):
        refused.context_length  # noqa: B018
    served = _engine(3, max_retries=0)
    served._clients = [NS(models=NS(list=lambda k=k: NS(data=[NS(id='m', max_model_len=100 * (k + 1))])),
                          close=lambda: None) for k in range(3)]
    next(served._next)  # the round-robin has moved on: the listing still comes from the first server
    assert served.context_length == 100
    assert served.requests_per_server == [1, 0, 0]


# ---- the server's tokenizer


def test_post_root_goes_beside_v1_and_reads_a_missing_endpoint_as_none(waits):
    engine = _engine(1, max_retries=1)
    posted = []

    class Client:
        base_url = httpx.URL('http://host:8000/v1/')

        def __init__(self, status=None):
            self.status = status

        def post(self, url, cast_to, body):
            posted.append((url, cast_to, body))
            if self.status:
                raise _status(openai.APIStatusError, self.status)
            return {'tokens': [1]}

        def close(self):
            pass
    engine._clients = [Client()]
    assert engine._post_root('/tokenize', {'prompt': 'x'}) == {'tokens': [1]}
    assert posted == [('http://host:8000/tokenize', object, {'prompt': 'x'})]
    for status in (404, 405, 501):
        engine._clients = [Client(status)]
        assert engine._post_root('/tokenize', {}) is None
    engine._clients = [Client(500)]
    with pytest.raises(RequestFailed):
        engine._post_root('/tokenize', {})
    engine._clients = [Client(400)]
    with pytest.raises(RequestFailed, match='was refused'):
        engine._post_root('/tokenize', {})

    class Root(Client):
        base_url = httpx.URL('http://host:8000/api')
    posted.clear()
    engine._clients = [Root()]
    engine._post_root('/detokenize', {})
    assert posted[0][0] == 'http://host:8000/api/detokenize'


class _Server:
    """``/tokenize`` and ``/detokenize`` of a model whose tokens are characters (id = code point)."""

    def __init__(self, available=True):
        self.available, self.asked = available, []

    def __call__(self, path, body):
        self.asked.append((path, body))
        if not self.available:
            return None
        if path == '/tokenize' and 'prompt' in body:
            return {'tokens': [ord(c) for c in body['prompt']]}
        if path == '/tokenize':
            text = ''.join(m['content'] for m in body['messages'])
            return {'count': len(text) + 10, 'tokens': [0]}
        return {'prompt': ''.join(chr(t) for t in body['tokens'])}


def _serial(fn, items):
    return [fn(item) for item in items]


def test_server_tokenizer_counts_caches_and_cuts():
    server = _Server()
    tokens = ServerTokenizer(server, _serial, 'm', cache_size=2)
    assert tokens.available is None
    assert tokens.encode_many([]) == []
    assert server.asked == []
    assert tokens.encode_many(['ab', 'c']) == [[97, 98], [99]]
    assert tokens.available is True
    assert server.asked[0] == ('/tokenize', {'model': 'm', 'prompt': 'ab', 'add_special_tokens': False})
    assert len(server.asked) == 2  # 'ab' was asked once, then taken from the cache
    tokens.encode_many(['ab'])
    assert len(server.asked) == 2
    tokens.encode_many(['d'])  # a third text: the cache of two is emptied first
    assert len(server.asked) == 3
    tokens.encode_many(['ab'])
    assert len(server.asked) == 4
    server.asked.clear()
    assert tokens.truncate_many(['abcdef', 'xy', 'abc'], 3) == ['abc', 'xy', 'abc']
    assert [p for p, _ in server.asked].count('/detokenize') == 1  # only the long text is cut
    assert server.asked[-1] == ('/detokenize', {'model': 'm', 'tokens': [97, 98, 99]})
    assert tokens.truncate_many(['ab'], 0) == ['']
    assert tokens.truncate_many(['ab'], -1) == ['']
    assert tokens.truncate_many(['ab'], 2.9) == ['ab']


def test_server_tokenizer_counts_a_conversation_as_the_chat_endpoint_renders_it():
    server = _Server()
    tokens = ServerTokenizer(server, _serial, 'm', chat_template_kwargs={'enable_thinking': False})
    user = [{'role': 'user', 'content': 'hello'}]
    assert tokens.count_conversation(user) == 15
    assert server.asked[-1] == ('/tokenize', {'model': 'm', 'messages': user, 'add_special_tokens': False,
                                              'chat_template_kwargs': {'enable_thinking': False}})
    assert tokens.count_conversation(user + [{'role': 'assistant', 'content': 'Yes'}]) == 18
    assert server.asked[-1][1] == {'model': 'm', 'messages': user + [{'role': 'assistant', 'content': 'Yes'}],
                                   'add_special_tokens': False, 'add_generation_prompt': False,
                                   'continue_final_message': True, 'chat_template_kwargs': {'enable_thinking': False}}
    only_tokens = ServerTokenizer(lambda path, body: {'tokens': [1, 2, 3, 4]}, _serial, 'm')
    assert only_tokens.count_conversation(user) == 4
    assert ServerTokenizer(lambda path, body: {'count': '4'}, _serial, 'm').count_conversation(user) is None
    assert ServerTokenizer(lambda path, body: {'count': 7.0, 'tokens': [1]}, _serial, 'm').count_conversation(
        user) == 1


def test_a_server_without_the_endpoints_is_asked_once():
    server = _Server(available=False)
    tokens = ServerTokenizer(server, _serial, 'm')
    assert tokens.encode_many(['a', 'b', 'c']) is None
    assert tokens.available is False
    assert len(server.asked) == 1  # the first text only, not the whole batch
    assert tokens.encode_many(['a']) is None
    assert tokens.truncate_many(['abc'], 1) is None
    assert tokens.count_conversation([{'role': 'user', 'content': 'x'}]) is None
    assert len(server.asked) == 1
    odd = ServerTokenizer(lambda path, body: ['not', 'a', 'dict'], _serial, 'm')
    assert odd.encode_many(['a']) is None
    assert odd.available is False
    no_list = ServerTokenizer(lambda path, body: {'tokens': 'abc'}, _serial, 'm')
    assert no_list.encode_many(['a']) is None
    assert no_list.available is False
    no_text = ServerTokenizer(lambda path, body: {'tokens': [1, 2, 3]} if path == '/tokenize' else {'prompt': 5},
                              _serial, 'm')
    assert no_text.truncate_many(['abc'], 1) is None
    assert no_text.truncate_many(['abc'], 3) == ['abc']  # nothing to cut: no /detokenize needed


def test_the_engine_counts_and_cuts_with_the_server_else_the_estimate():
    engine = _engine(1)
    assert engine.token_source == 'unknown'
    engine._server_tokenizer = ServerTokenizer(_Server(), engine._map, 'm')
    assert engine.count_tokens('hello') == 5
    assert engine.token_source == 'server'
    assert engine.truncate('abcdefgh', 3) == 'abc'
    assert engine.truncate_many(['abcdefgh', 'ab'], 2) == ['ab', 'ab']
    assert engine.count_conversation_tokens([{'role': 'user', 'content': 'hey'}]) == 13
    engine._server_tokenizer = ServerTokenizer(_Server(available=False), engine._map, 'm')
    with pytest.warns(UserWarning, match='four characters|estimate'):
        assert engine.count_tokens('abcdefghi') == 3  # four characters a token, rounded up
    assert engine.token_source == 'estimate'
    assert engine.truncate('abcd efgh ijkl', 3) == 'abcd efgh'
    assert engine.count_conversation_tokens([{'role': 'user', 'content': 'abcdefgh'}]) == 2 + 8
    local = _engine(1, tokenizer=_Tokenizer({'a': 1, 'b': 2}))
    assert local.token_source == 'tokenizer'
    assert local.count_tokens('a b a') == 3


# ---- construction, and the paths the first tests left open


def test_defaults_and_what_the_engine_keeps(monkeypatch):
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)
    engine = OpenAIEngine('http://s0/v1', 'm')
    assert (engine.max_concurrency, engine.timeout, engine.max_retries, engine.retry_backoff, engine.seed,
            engine.top_logprobs, engine.vllm_extensions) == (16, 60, 3, 0.5, 0, 20, None)
    assert engine.base_url == 'http://s0/v1'
    assert engine.api_key is None  # as given: None reads the environment when a client is made
    assert engine._key.reveal() == 'EMPTY'
    assert str(engine._clients[0].base_url) == 'http://s0/v1/'
    assert engine._clients[0].api_key == 'EMPTY'
    assert engine._clients[0].max_retries == 0  # the engine retries, not the client
    monkeypatch.setenv('OPENAI_API_KEY', 'sk-from-the-environment')
    assert OpenAIEngine('http://s0/v1', 'm')._clients[0].api_key == 'sk-from-the-environment'
    both = OpenAIEngine(['http://s0/v1', 'http://s1/v1'], 'm', api_key='sk-given-key-1')
    assert both.base_url == ['http://s0/v1', 'http://s1/v1']
    assert [str(c.base_url) for c in both._clients] == ['http://s0/v1/', 'http://s1/v1/']
    assert both.api_key.reveal() == 'sk-given-key-1'
    assert both._clients[1].api_key == 'sk-given-key-1'
    assert both.requests_per_server == [0, 0]
    tokenizer = _Tokenizer({})
    assert OpenAIEngine('http://s0/v1', 'm', tokenizer=tokenizer).tokenizer is tokenizer


def test_the_client_package_and_a_tokenizer_folder_are_asked_for_by_name(monkeypatch):
    asked, loaded = [], []
    real = _openai._require
    monkeypatch.setattr(_openai, '_require', lambda *a, **k: asked.append((a, k)) or real(*a, **k))
    stub = _Tokenizer({})
    monkeypatch.setattr(_openai, 'load_tokenizer', lambda name, what: loaded.append((name, what)) or stub)
    engine = OpenAIEngine('http://s0/v1', 'm', tokenizer='/models/qwen')
    assert asked == [(('openai', 'OpenAIEngine'), {'extra': 'openai'})]
    assert loaded == [('/models/qwen', 'OpenAIEngine(tokenizer=...)')]
    assert engine._tok is stub
    assert engine.tokenizer == '/models/qwen'


@pytest.mark.parametrize(('kwargs', 'start'), [
    ({'max_concurrency': 0}, 'max_concurrency must be'), ({'top_logprobs': 0}, 'top_logprobs must be'),
    ({'timeout': 0}, 'timeout must be'), ({'timeout': -1}, 'timeout must be'),
    ({'retry_backoff': -0.1}, 'retry_backoff must be'), ({'max_retries': -1}, 'max_retries must be'),
    ({'max_retries': 1.5}, 'max_retries must be'), ({'seed': 1.5}, 'seed must be'), ({'seed': 'x'}, 'seed must be'),
    ({'context_length': 0}, 'context_length must be')])
def test_bad_settings_are_named(kwargs, start):
    with pytest.raises(ValueError) as refused:
        OpenAIEngine('http://s0/v1', 'm', **kwargs)
    assert str(refused.value).startswith(start)


def test_the_lowest_good_settings_are_taken():
    engine = OpenAIEngine('http://s0/v1', 'm', timeout=0.001, retry_backoff=0, max_retries=0, seed=-5,
                          context_length=1)
    assert (engine.timeout, engine.retry_backoff, engine.max_retries, engine.seed, engine.context_length) == (
        0.001, 0, 0, -5, 1)


def test_failure_messages_quote_the_error_cut_at_300_characters_and_honour_retry_after(waits):
    engine = _engine(1, max_retries=1, retry_backoff=0.25)
    _clients(engine, [])
    long = 'e' * 400
    errors = [_status(openai.RateLimitError, 429, headers={'retry-after': '3'}),
              _status(openai.InternalServerError, 500, message=long)]
    with pytest.raises(RequestFailed) as failed:
        engine._request(lambda c: (_ for _ in ()).throw(errors.pop(0)), completion=False)
    assert waits == [3.0]  # the server's word, not the backoff
    assert str(failed.value) == ('request to http://s0/v1 failed after 2 attempts (InternalServerError: ' + 'e' * 300
                                 + "); check that the server is up and serves 'm', or raise timeout=/max_retries= "
                                 "(--timeout/--max-retries)")
    for cls, code, words in ((openai.AuthenticationError, 401, 'refused the credentials (HTTP 401 '),
                             (openai.BadRequestError, 400, 'was refused (')):
        with pytest.raises((AccessRefused, RequestRefused)) as stopped:
            engine._request(lambda c, cls=cls, code=code: (_ for _ in ()).throw(_status(cls, code, message=long)),
                            completion=False)
        assert words in str(stopped.value)
        assert 'e' * 300 in str(stopped.value)
        assert 'e' * 301 not in str(stopped.value)


def test_request_threads_are_daemons_so_a_hung_server_never_holds_the_process():
    engine = _engine(1, timeout=0.2)
    release = threading.Event()

    class Slow:
        def close(self):
            release.wait(5)
    engine._clients = [Slow()]
    with pytest.raises(DeadlineExceeded):
        engine._with_deadline(0, lambda c: release.wait(5))
    workers = [t for t in threading.enumerate() if t.name == 'garen-openai-request']
    closers = [t for t in threading.enumerate() if t.name.endswith('(close)')]
    release.set()
    assert len(workers) == 1
    assert workers[0].daemon
    assert len(closers) == 1
    assert closers[0].daemon


def test_map_keeps_to_max_concurrency():
    engine = _engine(1, max_concurrency=2)
    running, peak, lock = [0], [0], threading.Lock()

    def work(x):
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        time.sleep(0.03)
        with lock:
            running[0] -= 1
        return x
    assert engine._map(work, range(8)) == list(range(8))
    assert peak[0] == 2


def test_usage_without_counts_reads_zero():
    engine = _engine(1, vllm_extensions=False)
    engine._clients = [_Api(NS(choices=[NS(message=NS(content='a'), finish_reason='stop')],
                               usage=NS(completion_tokens=2)))]
    (out,) = engine.generate([[{'role': 'user', 'content': 'q'}]], max_tokens=3)
    assert (out.prompt_tokens, out.completion_tokens) == (0, 2)


def test_generate_sends_the_whole_request_on_both_endpoints():
    engine = _engine(1, seed=4)
    chat = _Api(_completion('Hello'))
    engine._clients = [chat]
    conversation = [{'role': 'user', 'content': 'q'}]
    assert engine.generate([conversation], max_tokens=5, stop=['x'])[0].text == 'Hello'
    assert chat.calls == [{'max_tokens': 5, 'stop': ['x'], 'model': 'm', 'messages': conversation,
                           'temperature': 0.0, 'top_p': 1.0, 'presence_penalty': 0.0, 'frequency_penalty': 0.0,
                           'seed': 4, 'extra_body': {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}}]
    local = _engine(1, tokenizer=_Tokenizer({}), seed=4)
    text = _Api(NS(choices=[NS(text='Hi there', message=None, finish_reason='stop')], usage=None))
    local._clients = [text]
    assert local.generate([conversation], max_tokens=6.0, stop=('y',))[0].text == 'Hi there'
    assert text.calls == [{'max_tokens': 6, 'stop': ['y'], 'model': 'm', 'prompt': '<user>q<assistant>',
                           'temperature': 0.0, 'top_p': 1.0, 'presence_penalty': 0.0, 'frequency_penalty': 0.0,
                           'seed': 4, 'extra_body': {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}}]
    assert type(text.calls[0]['max_tokens']) is int


def test_answer_ids_are_asked_without_special_tokens_and_by_the_word():
    engine = _engine(1, tokenizer=_Tokenizer({'yes': 3}))
    assert engine.answer_token_id('yes') == 3  # with special tokens it would be two ids, [0, 3]
    asked = []
    served = _engine(1)
    served._server_tokenizer = ServerTokenizer(lambda path, body: asked.append(body) or {'tokens': [42]},
                                               served._map, 'm')
    served.answer_token_id('Yes')
    assert asked == [{'model': 'm', 'prompt': 'Yes', 'add_special_tokens': False}]


def test_truncation_with_a_local_tokenizer():
    engine = _engine(1, tokenizer=_Tokenizer({'a': 1, 'b': 2, 'c': 3}))
    assert engine.truncate_many(['a b c a', 'c', 'b b'], 2) == ['a b', 'c', 'b b']
    assert engine.truncate('a b c', 1) == 'a'


def test_estimated_cuts_at_odd_limits():
    assert estimate_truncate('abcd efghijkl', 3, 3) == 'abcd'  # limit 9: the space at 4 >= 9 // 2
    assert estimate_truncate('abcd efghijklmn', 3, 4) == 'abcd efghijk'  # limit 12: the space at 4 < 6


def test_a_server_that_cannot_count_a_conversation_is_asked_once_and_not_taken_for_one_that_can():
    asked = []
    tokens = ServerTokenizer(lambda path, body: asked.append(path), _serial, 'm')
    conversation = [{'role': 'user', 'content': 'x'}]
    assert tokens.count_conversation(conversation) is None
    assert tokens.available is False
    assert tokens.count_conversation(conversation) is None
    assert asked == ['/tokenize']


def test_an_unknown_server_is_asked_one_text_before_a_concurrent_batch():
    engine = _engine(1, max_concurrency=4)
    asked, lock = [], threading.Lock()

    def post(path, body):
        with lock:
            asked.append(body['prompt'])
        time.sleep(0.05)
        return None
    tokens = ServerTokenizer(post, engine._map, 'm')
    assert tokens.encode_many(['a', 'b', 'c', 'd']) is None
    assert asked == ['a']


def test_one_text_the_server_cannot_tokenize_fails_the_batch():
    tokens = ServerTokenizer(lambda path, body: {'tokens': [1]} if body['prompt'] != 'b' else {'tokens': None},
                             _serial, 'm')
    assert tokens.encode_many(['a']) == [[1]]
    assert tokens.encode_many(['a', 'b', 'c']) is None


def test_context_length_listing_details():
    engine = _engine(1, max_retries=0)
    engine._clients = [NS(models=NS(list=lambda: NS(data=[NS(), NS(id='m', max_model_len=5)])), close=lambda: None)]
    assert engine.context_length == 5  # an entry without an id is skipped
    ids = [NS(id=f'x{k}') for k in range(6)] + [NS()]
    lister = _engine(1, max_retries=0)
    lister._clients = [NS(models=NS(list=lambda: NS(data=ids)), close=lambda: None)]
    with pytest.warns(UserWarning, match='does not list') as said:
        assert lister.context_length == 8192
    assert str(said[0].message).endswith("http://s0/v1/models does not list 'm' (it lists ['x0', 'x1', 'x2', 'x3', "
                                         "'x4']); assuming 8192 tokens; pass context_length= to say it")
    bare = _engine(1, max_retries=0)
    bare._clients = [NS(models=NS(list=lambda: NS()), close=lambda: None)]
    with pytest.warns(UserWarning, match=r"does not list 'm' \(it lists \[\]\)"):
        assert bare.context_length == 8192
    odd = _engine(1, max_retries=0)
    odd._clients = [NS(models=NS(list=lambda: NS(data=[NS(id='m', max_model_len=-1)])), close=lambda: None)]
    with pytest.warns(UserWarning, match='max_model_len') as said:
        odd.context_length  # noqa: B018
    assert str(said[0].message).endswith("http://s0/v1 reports max_model_len=-1 for 'm', which is not a positive "
                                         'integer; ignoring it and assuming 8192 tokens; pass context_length= to '
                                         'say it')


def test_post_root_strips_only_slashes():
    engine = _engine(1)
    posted = []

    class Client:
        base_url = httpx.URL('http://host:8000/apiX/')

        def post(self, url, cast_to, body):
            posted.append(url)
            return {}

        def close(self):
            pass
    engine._clients = [Client()]
    engine._post_root('/tokenize', {})
    assert posted == ['http://host:8000/apiX/tokenize']


def test_yes_no_ids_in_either_order_and_counts_over_a_batch():
    engine = _engine(1, tokenizer=_Tokenizer({'yes': 10, 'no': 20}))
    answers = {'0': {'token_id:10': -1.9, 'token_id:20': -0.2}, '1': {'token_id:20': -3.0, 'token_id:10': -0.1}}
    engine._clients = [_Api(lambda kw: NS(choices=[NS(text='', finish_reason='length', logprobs=NS(top_logprobs=[
        answers[kw['prompt'][len('<user>')]]]))], usage=None))]
    out = engine.yes_no([[{'role': 'user', 'content': k}] for k in '01'])
    assert [o.probability for o in out] == pytest.approx([_p(-1.9, -0.2), _p(-0.1, -3.0)])
    words = _engine(1, vllm_extensions=False)
    replies = {'0': [('yes', -0.1)], '1': [('no', -0.3)], '2': [('a', -1.0)], '3': [('b', -2.0)]}
    words._clients = [_Api(lambda kw: _chat_logprobs(replies[kw['messages'][0]['content']]))]
    with pytest.warns(UserWarning, match='yes/no answers'):
        words.yes_no([[{'role': 'user', 'content': k}] for k in '0123'])
    assert (words.inexact_yes_no, words.unscored_yes_no) == (2, 2)
    assert words._clients[0].calls[0]['max_tokens'] == 1


def test_yes_no_chat_by_id_and_its_plain_fallback():
    engine = _engine(1, max_retries=0, top_logprobs=9)
    engine._answer_ids = {'yes': 5, 'no': 6}
    calls = []

    def answer(kwargs):
        calls.append(kwargs)
        if kwargs['extra_body'] and 'allowed_token_ids' in kwargs['extra_body']:
            raise _status(openai.BadRequestError, 400, message='allowed_token_ids is not allowed')
        return _chat_logprobs([('yes', -0.2), ('no', -0.9)])
    engine._clients = [_Api(answer)]
    with pytest.warns(UserWarning, match="rejects vLLM's request fields"):
        (out,) = engine.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert out.probability == pytest.approx(_p(-0.2, -0.9))
    first, second = calls
    assert (first['top_logprobs'], first['max_tokens']) == (2, 1)
    assert first['extra_body'] == {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0, 'allowed_token_ids': [5, 6],
                                   'logprob_token_ids': [5, 6], 'return_tokens_as_token_ids': True}
    assert (second['top_logprobs'], second['extra_body']) == (9, None)


def test_yes_no_completions_without_ids_or_without_log_probabilities():
    engine = _engine(1, tokenizer=_Tokenizer({}), top_logprobs=6)
    engine._answer_ids = {'yes': None, 'no': None}
    api = _Api(NS(choices=[NS(text='', finish_reason='length', logprobs=NS(top_logprobs=[{'yes': -0.3, 'no': -0.6}]))],
                  usage=None))
    engine._clients = [api]
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # both words came back: nothing is estimated
        assert engine.yes_no([[{'role': 'user', 'content': 'q'}]])[0].probability == pytest.approx(_p(-0.3, -0.6))
    assert api.calls[0]['logprobs'] == 6
    assert api.calls[0]['extra_body'] == {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}
    for logprobs in (None, NS(top_logprobs=[]), NS(top_logprobs=None)):
        empty = _engine(1, tokenizer=_Tokenizer({'yes': 1, 'no': 2}))
        empty._clients = [_Api(NS(choices=[NS(text='', finish_reason='length', logprobs=logprobs)], usage=None))]
        with pytest.warns(UserWarning, match='without usable log-probabilities'):
            assert empty.yes_no([[{'role': 'user', 'content': 'q'}]])[0].probability == 0.5
    plain = _engine(1, tokenizer=_Tokenizer({'yes': 1, 'no': 2}), vllm_extensions=False, top_logprobs=4)
    plain._clients = [_Api(NS(choices=[NS(text='', finish_reason='length', logprobs=NS(top_logprobs=[
        {'yes': -0.1, 'no': -0.2}]))], usage=None))]
    plain.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert plain._clients[0].calls[0]['logprobs'] == 4
    assert plain._clients[0].calls[0]['extra_body'] is None


def test_the_client_takes_a_credential_of_the_url_and_the_timeout():
    queried = OpenAIEngine('http://s0/v1?api-key=abcd1234', 'm', timeout=7)._clients[0]
    assert str(queried.base_url) == 'http://s0/v1/'
    assert queried._custom_query == {'api-key': 'abcd1234'}
    assert queried.timeout == 7


def test_the_engine_asks_its_own_servers_for_tokens_with_the_model_and_template_options():
    engine = _engine(2, chat_template_kwargs={'enable_thinking': False}, max_concurrency=2)
    posted = []

    class Client:
        def __init__(self, k):
            self.base_url = httpx.URL(f'http://s{k}:8000/v1/')

        def post(self, url, cast_to, body):
            posted.append((url, body))
            if 'messages' in body:
                return {'count': 9}
            return {'tokens': [ord(c) for c in body['prompt']]}

        def close(self):
            pass
    engine._clients = [Client(0), Client(1)]
    assert engine.count_tokens('abc') == 3
    assert posted[0] == ('http://s0:8000/tokenize', {'model': 'm', 'prompt': 'abc', 'add_special_tokens': False})
    assert engine.count_conversation_tokens([{'role': 'user', 'content': 'x'}]) == 9
    assert posted[1][1]['chat_template_kwargs'] == {'enable_thinking': False}
    assert posted[1][1]['model'] == 'm'
    assert engine.truncate_many(['ab', 'cd', 'ef'], 5) == ['ab', 'cd', 'ef']  # asked concurrently over both servers
    # the round-robin goes on: s0 (count), s1 (conversation), then s0, s1, s0
    assert sorted(url for url, _ in posted[2:]) == ['http://s0:8000/tokenize', 'http://s0:8000/tokenize',
                                                     'http://s1:8000/tokenize']
    assert engine.token_source == 'server'


def test_the_warning_about_estimated_answers_says_why():
    unknown = _engine(1)  # vLLM's fields on, but no answer ids: no tokenizer, and /tokenize is missing
    unknown._answer_ids = {'yes': None, 'no': None}
    unknown._clients = [_Api(_chat_logprobs([('yes', -0.5)]))]
    with pytest.warns(UserWarning, match=r'\(the answer ids are unknown: pass tokenizer=\)'):
        unknown.yes_no([[{'role': 'user', 'content': 'q'}]])
    left_out = _engine(1, tokenizer=_Tokenizer({'yes': 10, 'no': 20}))
    left_out._clients = [_Api(NS(choices=[NS(text='', finish_reason='length', logprobs=NS(top_logprobs=[
        {'token_id:10': -0.5}]))], usage=None))]
    with pytest.warns(UserWarning, match=r'\(the server left one out\)'):
        assert left_out.yes_no([[{'role': 'user', 'content': 'q'}]])[0].probability == 0.5  # the floor is -0.5 too
    assert ServerTokenizer(None, None, 'm').cache_size == 4096


def test_yes_no_completions_fall_back_to_plain_requests_without_the_ids():
    engine = _engine(1, tokenizer=_Tokenizer({'yes': 10, 'no': 20}), max_retries=0, top_logprobs=7)
    calls = []

    def answer(kwargs):
        calls.append(kwargs)
        if kwargs['extra_body']:
            raise _status(openai.BadRequestError, 400, message='logprob_token_ids is not a field')
        return NS(choices=[NS(text='', finish_reason='length', logprobs=NS(top_logprobs=[{'yes': -1.0, 'no': -0.1}]))],
                  usage=None)
    engine._clients = [_Api(answer)]
    with pytest.warns(UserWarning, match="rejects vLLM's request fields"):
        (out,) = engine.yes_no([[{'role': 'user', 'content': 'q'}]])
    assert out.probability == pytest.approx(_p(-1.0, -0.1))
    assert (calls[0]['logprobs'], calls[0]['extra_body']['allowed_token_ids']) == (2, [10, 20])
    assert (calls[1]['logprobs'], calls[1]['extra_body']) == (7, None)


def test_the_settings_that_change_what_is_asked_of_the_server_are_reported():
    assert _engine(1).output_settings() == {}
    assert _engine(1, max_concurrency=2, timeout=5, seed=4).output_settings() == {}  # how, not what, is asked
    engine = _engine(1, context_length=4096, chat_template_kwargs={'enable_thinking': False},
                     tokenizer=_Tokenizer({'yes': 3}))
    assert engine.output_settings() == {'context_length': 4096, 'tokenizer': '_Tokenizer',  # not its address
                                        'chat_template_kwargs': {'enable_thinking': False}}
    assert 'sk-test-key-0123' not in json.dumps(engine.output_settings())
    engine.tokenizer.name_or_path = 'org/tok'  # a Hugging Face tokenizer: by its name
    assert engine.output_settings()['tokenizer'] == 'org/tok'


@pytest.mark.parametrize(('url', 'reason'), [
    ('notaurl', 'it has no http:// or https:// scheme (got none)'),
    ('ftp://host/v1', 'it has no http:// or https:// scheme (got ftp://)'),
    ('http:///v1', 'it names no host'),
    ('http://user:sk-SECRET123@host:abc/v1', 'its port is not a number'),
    ('http://host:sk-SECRET123/v1', 'its port is not a number'),
    ('http://[::1/v1', 'it cannot be read as a URL'),
])
def test_a_malformed_base_url_is_refused_naming_the_option_without_quoting_it(url, reason):
    # before: 'notaurl' was retried as a server that is down, a port of 'abc' was a traceback through httpx
    with pytest.raises(ValueError) as info:
        OpenAIEngine(url, 'm')
    assert str(info.value) == (f'base_url (--base-url) is not the URL of an OpenAI-compatible server: {reason}; give '
                               'one such as "http://localhost:8000/v1"')
    assert 'SECRET' not in str(info.value)
    with pytest.raises(ValueError, match=re.escape(reason)):
        OpenAIEngine(['http://localhost:8000/v1', url], 'm')  # each server of a list is checked


@pytest.mark.parametrize('url', ['http://localhost:8000/v1', 'HTTPS://h/v1', 'http://u:pw@10.0.0.1:9/v1?api-key=x',
                                 'http://[::1]:8000/v1'])
def test_a_well_formed_base_url_is_taken(url):
    assert OpenAIEngine(url, 'm').model == 'm'
