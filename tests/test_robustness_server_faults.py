"""A misbehaving OpenAI-compatible server must not turn into a run that reports success (issue 18, classes 1, 2 and 6):
the command line's exit status, refusals that stop a run at once, one deadline for every request, limits the server
reports checked, keys inside a base URL never shown, and engines that say how to ship them instead of pickling."""
import json
import re

import numpy as np
import pytest

from pyterrier_garen import GroupCorpusGraph
from pyterrier_garen.__main__ import main

from _fake_openai import ScriptedServer, completion

pytest.importorskip('openai', reason='the openai client (openai extra) is not installed')
pytestmark = pytest.mark.usefixtures('local_network')

DOCNOS = [f'd{i:02d}' for i in range(18)]
ERROR_500 = ('raw', 500, b'{"error": {"message": "the model crashed", "type": "server_error"}}',
             {'Content-Type': 'application/json'})
SUMMARY = ('ok', completion(json.dumps({'fingerprints': [], 'common_theme': 'tides', 'concept': 'ocean tides',
                                        'summary': 'About the tides of the ocean.'})))


def _artifact(tmp_path):
    """A GroupCorpusGraph of 6 groups and its collection folder."""
    edges = np.stack([[(i + 1) % len(DOCNOS), (i + 2) % len(DOCNOS)] for i in range(len(DOCNOS))])
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', DOCNOS, edges, np.ones(edges.shape),
                                          labels=np.arange(len(DOCNOS)) // 3)
    collection = tmp_path / 'c'
    collection.mkdir()
    (collection / 'docs.jsonl').write_text(''.join(json.dumps({'docno': d, 'text': f'ocean tide {i}'}) + '\n'
                                                   for i, d in enumerate(DOCNOS)))
    (collection / 'queries.tsv').write_text('1\tocean tide\n')
    return groups, collection


def _summarize(capsys, groups, collection, url, *extra):
    args = ['summarize', '--groups', groups.path, '--dataset', collection, '--summarizer', 'llm', '--model', 'm',
            '--base-url', url, '--max-retries', '0', '--timeout', '5', *extra]
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as ex:
        code = ex.code
    captured = capsys.readouterr()
    return code, captured.err, captured.out


def _error_line(err):
    lines = [line for line in err.splitlines() if line.startswith('error: ')]
    assert len(lines) == 1, err
    return lines[0]


def test_cli_summarize_against_a_failing_server_exits_1_and_the_rerun_retries(capsys, tmp_path):
    groups, collection = _artifact(tmp_path)
    with ScriptedServer([ERROR_500]) as server:
        code, err, _ = _summarize(capsys, groups, collection, server.url)
    assert code == 1
    line = _error_line(err)
    assert line.startswith('error: 6 of the 6 groups to summarise could not be summarised by the model: their engine '
                           'request failed')
    assert 'InternalServerError' in line
    assert 'the model crashed' in line
    assert 'rerun the same command' in line
    assert '--max-failed-share' in line
    assert not (groups.path / 'summaries.jsonl').exists()

    with ScriptedServer([SUMMARY]) as server:
        code, err, out = _summarize(capsys, groups, collection, server.url)
        asked = [r for r in server.requests if r.path.endswith('/chat/completions')]
    assert code == 0, err
    assert len(asked) == 6  # every group retried, once
    meta = json.loads(out.strip().splitlines()[-1])
    assert meta['fallbacks'] == 0
    records = [json.loads(line) for line in (groups.path / 'summaries.jsonl').read_text().splitlines()]
    assert [r['concept'] for r in records] == ['ocean tides'] * 6


def test_cli_accepts_failures_within_max_failed_share(capsys, tmp_path):
    groups, collection = _artifact(tmp_path)
    with ScriptedServer([ERROR_500]) as server, \
            pytest.warns(UserWarning, match='6 of 6 groups got an extractive summary because their engine request '
                                            'failed'):
        code, err, out = _summarize(capsys, groups, collection, server.url, '--max-failed-share', '1')
    assert code == 0, err
    meta = json.loads(out.strip().splitlines()[-1])
    assert meta['fallback_reasons'] == {'request_failed': 6, 'unusable_reply': 0}


@pytest.mark.parametrize('share', ['-1', '2', 'half'])
def test_cli_bad_max_failed_share(capsys, tmp_path, share):
    groups, collection = _artifact(tmp_path)
    code, err, _ = _summarize(capsys, groups, collection, 'http://127.0.0.1:9/v1', '--max-failed-share', share)
    assert code == 2
    assert 'max' in _error_line(err)
    assert 'share' in _error_line(err)


# -- refusals that no retry can fix (class 1) -------------------------------------------------------------------------
def _refusal(status):
    kind = 'authentication_error' if status == 401 else 'permission_error'
    return ('raw', status, json.dumps({'error': {'message': f'denied ({status})', 'type': kind}}).encode(),
            {'Content-Type': 'application/json'})


@pytest.mark.parametrize('status', [401, 403])
def test_cli_summarize_stops_at_once_when_the_key_is_refused(capsys, tmp_path, status):
    groups, collection = _artifact(tmp_path)
    with ScriptedServer([_refusal(status)], models=_refusal(status)) as server:
        code, err, _ = _summarize(capsys, groups, collection, server.url, '--max-retries', '3', '--batch-size', '2')
        sent = len(server.requests) + len(server.gets)
    assert code == 1
    line = _error_line(err)
    assert f'{server.url} refused the credentials (HTTP {status}' in line
    assert 'no retry can fix this' in line
    assert 'OPENAI_API_KEY' in line
    assert sent == 1  # the first request (the models list) stops the run: no retry, no second request
    assert not server.requests
    assert not (groups.path / 'summaries.jsonl').exists()


@pytest.mark.parametrize('component', ['yes_no', 'listwise'])
def test_online_a_refused_key_is_an_error_not_the_first_stage_order(component):
    import pandas as pd

    from pyterrier_garen import ListwiseReranker, OpenAIEngine, YesNoScorer
    from pyterrier_garen._engines import AccessRefused
    frame = pd.DataFrame({'qid': ['q'] * 4, 'query': ['ocean tide'] * 4, 'docno': list('abcd'),
                          'text': ['sea', 'tide', 'shore', 'wave']})
    with ScriptedServer([_refusal(401)]) as server:
        engine = OpenAIEngine(server.url, 'm', max_retries=3, retry_backoff=0.01, context_length=4096,
                              vllm_extensions=False)
        ranker = YesNoScorer(engine) if component == 'yes_no' else ListwiseReranker(engine, window=4, stride=2)
        with pytest.raises(AccessRefused, match=r'refused the credentials \(HTTP 401'):
            ranker(frame)
        asked = [r for r in server.requests if r.path.endswith('completions')]
        assert len(asked) <= 4  # the requests of one batch in flight at most; none retried (max_retries=3)


def test_online_transient_failures_are_counted_and_said():
    import pandas as pd

    from pyterrier_garen import OpenAIEngine, YesNoScorer
    frame = pd.DataFrame({'qid': ['q'] * 3, 'query': ['ocean'] * 3, 'docno': list('abc'), 'text': ['x', 'y', 'z']})
    with ScriptedServer([ERROR_500]) as server:
        scorer = YesNoScorer(OpenAIEngine(server.url, 'm', max_retries=0, context_length=4096,
                                          vllm_extensions=False), batch_size=1)
        words = r'3 rows scored 0 because the engine request failed .*InternalServerError'
        with pytest.warns(UserWarning, match=words):
            out = scorer(frame)
    assert scorer.failed == 3
    assert list(out.score) == [0.0, 0.0, 0.0]


# -- one deadline for every request, limits checked (class 2) ---------------------------------------------------------
def test_context_length_is_bounded_by_the_deadline():
    import time

    from pyterrier_garen import OpenAIEngine
    # a minute per attempt without the deadline, about a second with it: the bound tolerates a stalled machine
    with ScriptedServer([SUMMARY], models=('trickle', 240, 0.25)) as server:
        engine = OpenAIEngine(server.url, 'fake-model', timeout=1.0, max_retries=1, retry_backoff=0.01)
        started = time.monotonic()
        words = r'could not read the context length of .fake-model. from .*DeadlineExceeded.*assuming 8192 tokens'
        with pytest.warns(UserWarning, match=words + '; pass context_length='):
            assert engine.context_length == 8192
        assert time.monotonic() - started < 20.0  # two attempts of 1 s, not 240 x 0.25 s
        assert len(server.gets) == 2


@pytest.mark.parametrize('value', [-5, 0, 1.5, True, 'many', [4096], float('nan')])
def test_a_server_reported_context_length_that_is_not_a_positive_integer_is_refused(value):
    from pyterrier_garen import OpenAIEngine
    with ScriptedServer([SUMMARY], max_model_len=value) as server:
        engine = OpenAIEngine(server.url, 'fake-model', max_retries=0)
        words = re.escape(f"reports max_model_len={value!r} for 'fake-model', which is not a positive integer; "
                          'ignoring it and assuming 8192 tokens')
        with pytest.warns(UserWarning, match=words):
            assert engine.context_length == 8192


@pytest.mark.parametrize(('value', 'expected'), [(4096, 4096), (4096.0, 4096), (1, 1)])
def test_a_server_reported_context_length_is_used(value, expected):
    import warnings

    from pyterrier_garen import OpenAIEngine
    with ScriptedServer([SUMMARY], max_model_len=value) as server, warnings.catch_warnings():
        warnings.simplefilter('error')
        assert OpenAIEngine(server.url, 'fake-model', max_retries=0).context_length == expected


@pytest.mark.parametrize('value', [-5, 0, 1.5, True, 'many'])
def test_a_context_length_option_that_is_not_a_positive_integer(value):
    from pyterrier_garen import OpenAIEngine
    with pytest.raises(ValueError, match=rf'context_length must be a positive integer or None, got {value!r}'):
        OpenAIEngine('http://127.0.0.1:9/v1', 'm', context_length=value)


@pytest.mark.parametrize('value', [-5, 1.5])
def test_bad_server_limits_never_shrink_the_summary_prompts(tmp_path, value):
    """The issue's example: max_model_len -5 or 1.5 believed, every summary prompt held 1 of 5 documents."""
    from pyterrier_garen import LLMSummarizer, OpenAIEngine
    docs = [{'docno': f'd{i}', 'text': 'ocean tide ' * 20} for i in range(5)]
    with ScriptedServer([SUMMARY], max_model_len=value) as server:
        summarizer = LLMSummarizer(OpenAIEngine(server.url, 'fake-model', max_retries=0), max_tokens=64)
        with pytest.warns(UserWarning, match='not a positive'):
            prompt = summarizer.conversation(docs)[-1]['content']
    assert all(f'({d["docno"]})' in prompt for d in docs)


# -- keys inside base_url, secrets and pickling (class 6) -------------------------------------------------------------
KEY = 'sk-URLKEY-7f3a9c1e55'


def _keyed(url, form):
    scheme, rest = url.split('://', 1)
    return f'{scheme}://user:{KEY}@{rest}' if form == 'userinfo' else f'{url}?api-key={KEY}'


@pytest.mark.parametrize('form', ['userinfo', 'query'])
def test_a_key_inside_base_url_is_used_and_never_shown(caplog, form):
    import logging
    import pickle
    import traceback

    from pyterrier_garen import EngineSpec, OpenAIEngine, YesNoScorer
    caplog.set_level(logging.DEBUG)
    seen = []
    missing = ('raw', 404, b'{"error": {"message": "no such model"}}', {'Content-Type': 'application/json'})
    with ScriptedServer([('ok', completion('fine')), missing, ('ok', completion('again'))]) as server:
        url = _keyed(server.url, form)
        engine = OpenAIEngine(url, 'm', max_retries=0, context_length=4096)
        assert engine.generate([[{'role': 'user', 'content': 'x'}]], max_tokens=2)[0].text == 'fine'
        first = server.requests[0]
        if form == 'query':
            assert first.path == f'/v1/chat/completions?api-key={KEY}'  # the key is sent, at the right place
        else:
            assert first.path == '/v1/chat/completions'
            assert first.authorization.startswith('Basic ')
        with pytest.raises(RuntimeError) as refused:
            engine.generate([[{'role': 'user', 'content': 'x'}]], max_tokens=2)
        seen += [str(refused.value), ''.join(traceback.format_exception(refused.value))]
        spec = EngineSpec('openai', base_url=url, model='m')
        seen += [repr(engine), str(engine), str(vars(engine)), repr(YesNoScorer(engine)), repr(spec),
                 repr(pickle.loads(pickle.dumps(spec)))]
        rebuilt = pickle.loads(pickle.dumps(spec)).build()  # as in a Ray worker: the key travels with the recipe
        assert rebuilt.generate([[{'role': 'user', 'content': 'y'}]], max_tokens=2)[0].text == 'again'
        assert server.requests[-1].path == first.path
        assert server.requests[-1].authorization == first.authorization
    dead = OpenAIEngine(_keyed('http://127.0.0.1:9/v1', form), 'm', max_retries=0, context_length=4096)
    with pytest.raises(RuntimeError) as unreachable:
        dead.generate([[{'role': 'user', 'content': 'x'}]], max_tokens=2)
    seen += [str(unreachable.value), ''.join(traceback.format_exception(unreachable.value))]
    seen += [r.getMessage() for r in caplog.records]
    assert any('<hidden>' in text for text in seen)
    assert not [text[:300] for text in seen if KEY in text]


def test_a_secret_survives_pickling_for_ray_workers():
    import pickle

    from pyterrier_garen import EngineSpec
    from pyterrier_garen._engines import Secret
    secret = Secret(KEY)
    copy = pickle.loads(pickle.dumps(secret))
    assert copy.reveal() == KEY
    assert KEY not in repr(copy)
    spec = pickle.loads(pickle.dumps(EngineSpec('openai', base_url='http://127.0.0.1:9/v1', model='m',
                                                api_key=secret)))
    assert spec.build()._key.reveal() == KEY  # the worker sends the key, not "" (which would be "pass an api_key")
    assert KEY not in repr(spec)


def test_pickling_a_live_engine_names_the_engine_and_the_recipe():
    import pickle

    import pyterrier as pt

    from pyterrier_garen import OpenAIEngine, YesNoScorer
    engine = OpenAIEngine('http://127.0.0.1:9/v1', 'm', api_key=KEY)
    words = (r"OpenAIEngine\('http://127.0.0.1:9/v1', 'm'.*\) is a live engine .* cannot be pickled; .*"
             r"EngineSpec\('openai', base_url=..., model=...\)")
    for thing in (engine, YesNoScorer(engine), pt.Transformer.identity() >> YesNoScorer(engine)):
        with pytest.raises(TypeError, match=words) as info:
            pickle.dumps(thing)
        assert KEY not in str(info.value)
        assert '_thread' not in str(info.value)


# -- log-probabilities that carry no information are counted (class 5) ------------------------------------------------
@pytest.mark.parametrize(('yes', 'no'), [(float('-inf'), float('-inf')), (float('nan'), float('nan')),
                                         (float('inf'), float('-inf'))])
def test_unusable_log_probabilities_are_counted(yes, no):
    from pyterrier_garen import OpenAIEngine
    top = [{'token': 'yes', 'logprob': yes, 'bytes': None}, {'token': 'no', 'logprob': no, 'bytes': None}]
    answer = completion('yes', {'content': [{'token': 'yes', 'logprob': yes, 'bytes': None, 'top_logprobs': top}]})
    with ScriptedServer([('ok', answer)]) as server:
        engine = OpenAIEngine(server.url, 'm', max_retries=0, vllm_extensions=False, context_length=4096)
        with pytest.warns(UserWarning, match='1 yes/no answers came without usable log-probabilities'):
            out = engine.yes_no([[{'role': 'user', 'content': 'x'}]])
    assert out[0].probability == 0.5
    assert engine.unscored_yes_no == 1



@pytest.mark.parametrize(('top', 'chosen', 'counts'), [
    ([{'token': 'yes', 'logprob': None}, {'token': 'no', 'logprob': None}], {'token': 'yes', 'logprob': None}, (1, 0)),
    ([{'token': None, 'logprob': None}], {'token': None, 'logprob': None}, (1, 0)),
    ([{'token': 'yes', 'logprob': 'n/a'}, {'token': 'no', 'logprob': -2.0}], {'token': 'no', 'logprob': -2.0}, (0, 1)),
    ([{'token': 'yes', 'logprob': None}], {'token': 'yes', 'logprob': -0.5}, (0, 1)),  # the chosen token's own value
])
def test_null_or_text_log_probabilities_are_missing_values_not_a_failed_request(top, chosen, counts):
    """A null (or text) log-probability or token reached float() and raised: the request counted as failed (the row
    scored 0, and the batch was sent again one conversation at a time) instead of being read as a missing value:
    unscored (0.5) when neither token has one, inexact when one of them has."""
    from pyterrier_garen import OpenAIEngine
    answer = completion('yes', {'content': [{**chosen, 'bytes': None, 'top_logprobs': top}]})
    with ScriptedServer([('ok', answer)]) as server:
        engine = OpenAIEngine(server.url, 'm', max_retries=0, vllm_extensions=False, context_length=4096)
        with pytest.warns(UserWarning, match='yes/no answers'):
            out = engine.yes_no([[{'role': 'user', 'content': 'x'}]])
        assert len(server.requests) == 1
    assert out[0].probability == 0.5
    assert (engine.unscored_yes_no, engine.inexact_yes_no) == counts


ERROR_503 = ('raw', 503, b'<html>Service Unavailable</html>', {'Content-Type': 'text/html'})


@pytest.mark.parametrize(('action', 'asked'), [
    (ERROR_503, [6, 1, 1]),              # a server that is down: two requests asked alone in a row say so
    (ERROR_500, [6, 1, 1, 1, 1, 1, 1]),  # an error of one request (a 500 may be): every request is asked alone
])
def test_a_server_that_is_down_costs_a_batch_two_requests_asked_alone_not_one_each(action, asked):
    import pandas as pd

    from pyterrier_garen import OpenAIEngine, YesNoScorer
    frame = pd.DataFrame({'qid': ['q'] * 6, 'query': ['ocean'] * 6, 'docno': list('abcdef'), 'text': list('uvwxyz')})
    with ScriptedServer([action]) as server:
        engine = OpenAIEngine(server.url, 'm', max_retries=0, context_length=4096, vllm_extensions=False)
        calls, yes_no = [], engine.yes_no
        engine.yes_no = lambda batch, **kwargs: calls.append(len(batch)) or yes_no(batch, **kwargs)
        scorer = YesNoScorer(engine, batch_size=6)
        with pytest.warns(UserWarning, match='6 rows scored 0 because the engine request failed') as said:
            out = scorer(frame)
    assert calls == asked
    assert scorer.failed == 6
    assert list(out.score) == [0.0] * 6
    assert ('not sent' in ' '.join(str(w.message) for w in said)) == (len(asked) < 7)


def test_a_server_that_cannot_be_reached_or_hangs_is_down_and_a_refused_request_is_not():
    from pyterrier_garen import OpenAIEngine
    from pyterrier_garen._engines._openai import RequestFailed, RequestRefused

    def ask(url, error, match='', timeout=60):
        engine = OpenAIEngine(url, 'm', max_retries=0, timeout=timeout, context_length=4096, vllm_extensions=False)
        with pytest.raises(error, match=match) as raised:
            engine.generate([[{'role': 'user', 'content': 'ocean'}]], max_tokens=4)
        return getattr(raised.value, 'server_down', None)

    with ScriptedServer([SUMMARY]) as server:
        closed = server.url
    assert ask(closed, RequestFailed, 'APIConnectionError') is True
    with ScriptedServer([('trickle', 240, 0.25)]) as server:
        assert ask(server.url, RequestFailed, 'DeadlineExceeded', timeout=0.5) is True
    with ScriptedServer([ERROR_500]) as server:
        assert ask(server.url, RequestFailed, 'InternalServerError') is False
    with ScriptedServer([('raw', 400, b'{"error": {"message": "too long"}}', {'Content-Type': 'application/json'})]) \
            as server:
        assert ask(server.url, RequestRefused) is None
