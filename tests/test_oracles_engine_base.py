"""Oracles for what every LLM engine shares (pyterrier_garen._engines._base): the API key that never shows, the
usage counters, the yes/no arithmetic with missing or unusable log-probabilities (values worked out by hand), the
default tokenizer estimate and its one warning, the warn-once counters, a live engine refusing to be pickled, and
per-conversation failures (a batch that fails is asked one conversation at a time; a refused key stops at once). The
twenty-seventh mutation run, docs/testing.md."""
import math
import pickle
import warnings

import pytest

from pyterrier_garen import _redact
from pyterrier_garen._engines import _base as base
from pyterrier_garen._engines._base import (AccessRefused, Engine, Generation, Secret, UsageStats, no_information,
                                            resolve_api_key, softmax_yes, usable_logprob)


pytestmark = pytest.mark.usefixtures('forget_secrets')  # each test starts with nothing remembered


# ---- the key


def test_a_secret_never_shows_and_travels_with_its_value():
    key = Secret('sk-abc123')
    assert (repr(key), str(key), f'{key}', f'{key:>10}', '%s' % key) == (
        "'<hidden>'", '<hidden>', '<hidden>', '  <hidden>', '<hidden>')
    assert key.reveal() == 'sk-abc123'
    copy = pickle.loads(pickle.dumps(key))
    assert type(copy) is Secret
    assert copy.reveal() == 'sk-abc123'


def test_resolve_api_key(monkeypatch):
    monkeypatch.setenv('OPENAI_API_KEY', 'sk-from-env')
    given = resolve_api_key('sk-given-1')
    assert (type(given), given.reveal()) == (Secret, 'sk-given-1')
    assert resolve_api_key(Secret('sk-secret-2')).reveal() == 'sk-secret-2'
    assert resolve_api_key(None).reveal() == 'sk-from-env'
    monkeypatch.setenv('OPENAI_API_KEY', '')
    assert resolve_api_key(None).reveal() == 'EMPTY'
    monkeypatch.delenv('OPENAI_API_KEY')
    assert resolve_api_key(None).reveal() == 'EMPTY'
    assert _redact._secrets == {'sk-given-1', 'sk-secret-2', 'sk-from-env'}  # remembered for the logs, not EMPTY
    assert base.redact('key sk-given-1 and xyz', 'xyz') == 'key <hidden> and <hidden>'


# ---- usage counters


def test_usage_counters():
    stats = UsageStats()
    assert stats.stats() == {'calls': 0, 'prompts': 0, 'prompt_tokens': 0, 'completion_tokens': 0}
    stats._record([Generation('a', 10, 2), Generation('b', None, None), Generation('c', 5, 1)], 3)
    stats._record([Generation('d', 1, 1)], 1)
    assert stats.stats() == {'calls': 2, 'prompts': 4, 'prompt_tokens': 16, 'completion_tokens': 4}
    stats._record_each([Generation('e', 3, 3), None, Generation('f', 2, 0)])
    assert stats.stats() == {'calls': 3, 'prompts': 6, 'prompt_tokens': 21, 'completion_tokens': 7}
    with pytest.raises(RuntimeError, match=r'returned 1 answers for 2 conversations; an Engine must answer every '
                                           'conversation, in order'):
        stats._record([Generation('g')], 2)
    assert stats.calls == 3
    stats.reset_stats()
    assert stats.stats() == {'calls': 0, 'prompts': 0, 'prompt_tokens': 0, 'completion_tokens': 0}


# ---- yes/no arithmetic


@pytest.mark.parametrize(('yes', 'no', 'floor', 'expected'), [
    (math.log(.8), math.log(.2), -9.0, .8),
    (math.log(.3), math.log(.1), -9.0, .75),                        # .3 / (.3 + .1): not normalised, still a ratio
    (None, math.log(.8), -9.0, math.exp(-9) / (math.exp(-9) + .8)),  # the missing token gets the floor
    (math.log(.8), None, -9.0, .8 / (.8 + math.exp(-9))),
    (None, None, -9.0, .5),
    (-math.inf, math.log(.5), -9.0, 0.0),                           # a token ruled out
    (-math.inf, -math.inf, -9.0, .5),                               # nothing to go on
    (None, None, -math.inf, .5),
    (-1000.0, -1001.0, -2000.0, 1 / (1 + math.exp(-1))),             # no underflow: shifted by the larger
])
def test_softmax_yes(yes, no, floor, expected):
    assert softmax_yes(yes, no, floor) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@pytest.mark.parametrize(('value', 'expected'), [
    (-1.5, -1.5), ('-0.25', -0.25), (-math.inf, -math.inf), (0, 0.0),
    (math.nan, None), (math.inf, None), ('x', None), (None, None), ([1], None),
])
def test_usable_logprob(value, expected):
    assert usable_logprob(value) == expected


@pytest.mark.parametrize(('yes', 'no', 'floor', 'expected'), [
    (None, None, -9.0, True), (-math.inf, -math.inf, -9.0, True), (None, -math.inf, -math.inf, True),
    (None, -1.0, -9.0, False), (-1.0, None, -math.inf, False), (-math.inf, -2.0, -9.0, False),
])
def test_no_information(yes, no, floor, expected):
    assert no_information(yes, no, floor) is expected


# ---- the Engine defaults


class Bare(Engine):
    model = 'bare/1'

    def __repr__(self):
        return 'Bare()'

    def yes_no(self, conversations, *, yes='yes', no='no'):
        self.tokens = (yes, no)
        return [Generation(yes, probability=p) for p in (0.25, 1)][:len(conversations)]


def test_default_token_estimate_and_its_one_warning():
    engine = Bare()
    assert engine.context_length == 8192
    with pytest.warns(UserWarning, match=r'^Bare\(\): no tokenizer of the model is available, so token counts and '
                                         r'truncation estimate 4 characters per token') as caught:
        assert engine.count_tokens('abcdefghi') == 3          # ceil(9 / 4)
    assert len(caught) == 1
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # warned once per engine
        assert engine.count_tokens('') == 0
        assert engine.truncate('aaaa bbbb cccc', 2) == 'aaaa'  # 8 characters, cut at the space
        assert engine.truncate_many(['aaaa bbbb cccc', 'dd'], 2) == ['aaaa', 'dd']
        conversation = [{'role': 'system', 'content': 'abcd'}, {'role': 'user', 'content': None},
                        {'role': 'user', 'content': 'abcde'}]
        assert engine.count_conversation_tokens(conversation) == (1 + 8) + (0 + 8) + (2 + 8)
    assert engine.yes_no_probability([[], []]) == [0.25, 1.0]
    assert engine.tokens == ('yes', 'no')
    engine.yes_no_probability([[]], yes='Ja', no='Nein')
    assert engine.tokens == ('Ja', 'Nein')
    assert all(type(p) is float for p in engine.yes_no_probability([[], []]))
    with pytest.raises(NotImplementedError):
        Engine().generate([], max_tokens=1)
    with pytest.raises(NotImplementedError):
        Engine().yes_no([])
    assert Engine().close() is None


def test_counters_that_warn_once():
    engine = Bare()
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        engine._note_unscored(0)  # nothing to count: no warning yet
    with pytest.warns(UserWarning, match='^Bare') as caught:
        engine._note_unscored(3)
    assert [str(w.message) for w in caught] == [
        'Bare(): 3 yes/no answers came without usable log-probabilities for either token; they score P(yes) = 0.5, '
        'which carries no preference (does the server return logprobs?) (counted in engine.unscored_yes_no; warned '
        'once)']
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        engine._note_unscored(2)
        engine._note_unscored(0)
        engine._note_unscored(-4)
    assert engine.unscored_yes_no == 5
    with pytest.warns(UserWarning, match='^Bare') as caught:
        engine._note_inexact(1, 'top 5 only')
    assert [str(w.message) for w in caught] == [
        'Bare(): 1 yes/no answers without the exact log-probability of both tokens (top 5 only); their P(yes) is '
        'estimated from the returned top log-probabilities, and is not comparable to exact scores (counted in '
        'engine.inexact_yes_no; warned once)']
    assert (engine.inexact_yes_no, Bare().inexact_yes_no, Bare().unscored_yes_no) == (1, 0, 0)


@pytest.mark.parametrize(('name', 'recipe'), [
    ('OpenAIEngine', "EngineSpec('openai', base_url=..., model=...)"),
    ('VLLMEngine', "EngineSpec('vllm', model=...)"),
    ('TransformersEngine', "EngineSpec('transformers', model=...)"),
    ('MyEngine', 'EngineSpec(MyEngine, model=..., ...)'),
])
def test_a_live_engine_is_never_pickled(name, recipe):
    engine = type(name, (Bare,), {'__repr__': lambda self: f'{name}()'})()
    with pytest.raises(TypeError) as info:
        pickle.dumps(engine)
    assert str(info.value) == (f'{name}() is a live engine (open connections, threads or a loaded model) and cannot '
                               f'be pickled; send its recipe instead, {recipe}, and build it where it runs '
                               '(spec.build(); for summaries on Ray: EngineSpec(...).summarizer(...))')


def test_require_names_the_extra():
    assert base._require('math', 'x') is math
    with pytest.raises(ImportError, match=r"^the thing needs the 'no_such_mod_zz' package, which is not installed; "
                                          r"install the extra with `pip install -e '\.\[openai\]' \(in a clone of "
                                          r"pyterrier-garen\)` \(or `pip install no_such_mod_zz`\)$"):
        base._require('no_such_mod_zz', 'the thing', 'openai')


# ---- per-conversation failures


class Flaky:
    """Answers ``'ok:<content>'``; a batch holding a content of ``bad`` raises ValueError, else one holding a content
    of ``refused`` raises AccessRefused."""

    def __init__(self, bad=(), refused=(), wrong_count=False):
        self.bad, self.refused, self.wrong_count, self.calls = set(bad), set(refused), wrong_count, []

    def __call__(self, batch):
        contents = [c[0]['content'] for c in batch]
        self.calls.append(contents)
        if self.bad & set(contents):
            raise ValueError(f'bad {sorted(self.bad & set(contents))}')
        if self.refused & set(contents):
            raise AccessRefused('HTTP 401')
        answers = [Generation(f'ok:{c}') for c in contents]
        return answers[:-1] if self.wrong_count else answers


def _conversations(*contents):
    return [[{'role': 'user', 'content': c}] for c in contents]


def test_a_batch_that_works_is_one_call():
    call = Flaky()
    answers, errors = base._each(call, _conversations('a', 'b'))
    assert [a.text for a in answers] == ['ok:a', 'ok:b']
    assert errors == [None, None]
    assert call.calls == [['a', 'b']]


def test_a_failed_batch_is_asked_one_conversation_at_a_time():
    call = Flaky(bad={'b'})
    answers, errors = base._each(call, _conversations('a', 'b', 'c'))
    assert [None if a is None else a.text for a in answers] == ['ok:a', None, 'ok:c']
    assert errors == [None, "ValueError: bad ['b']", None]
    assert call.calls == [['a', 'b', 'c'], ['a'], ['b'], ['c']]
    alone = Flaky(bad={'x'})
    assert base._each(alone, _conversations('x')) == ([None], ["ValueError: bad ['x']"])
    assert alone.calls == [['x']]  # one conversation: not asked twice


def test_a_refused_key_stops_at_once():
    for conversations in (_conversations('a', 'k'), _conversations('k')):
        with pytest.raises(AccessRefused):
            base._each(Flaky(refused={'k'}), conversations)
    call = Flaky(bad={'a'}, refused={'k'})
    with pytest.raises(AccessRefused):  # the batch fails for another reason, then the key is refused alone
        base._each(call, _conversations('a', 'k'))
    assert call.calls == [['a', 'k'], ['a'], ['k']]


class Down(ValueError):
    server_down = True


class Outage(Flaky):
    """Flaky whose contents in ``down`` fail as a server that is down (``server_down``)."""

    def __init__(self, down=(), **kwargs):
        super().__init__(**kwargs)
        self.down = set(down)

    def __call__(self, batch):
        contents = [c[0]['content'] for c in batch]
        if self.down & set(contents):
            self.calls.append(contents)
            raise Down(f'down {sorted(self.down & set(contents))}')
        return super().__call__(batch)


def test_two_requests_in_a_row_failing_as_a_server_that_is_down_end_the_batch():
    call = Outage(down={'b', 'c', 'd', 'e'})
    answers, errors = base._each(call, _conversations('a', 'b', 'c', 'd', 'e'))
    assert [None if a is None else a.text for a in answers] == ['ok:a', None, None, None, None]
    assert call.calls == [['a', 'b', 'c', 'd', 'e'], ['a'], ['b'], ['c']]  # d and e are not sent
    assert errors[:3] == [None, "Down: down ['b']", "Down: down ['c']"]
    assert errors[3:] == ["not sent: the batch and the 2 requests asked alone before this one failed "
                          "(Down: down ['c'])"] * 2


def test_a_request_that_works_or_fails_for_itself_breaks_the_run_of_server_failures():
    call = Outage(down={'a', 'c', 'e'}, bad={'d'})
    answers, errors = base._each(call, _conversations('a', 'b', 'c', 'd', 'e', 'f'))
    assert [None if a is None else a.text for a in answers] == [None, 'ok:b', None, None, None, 'ok:f']
    assert call.calls == [['a', 'b', 'c', 'd', 'e', 'f'], ['a'], ['b'], ['c'], ['d'], ['e'], ['f']]
    assert errors[3] == "ValueError: bad ['d']"


def test_an_engine_that_answers_too_few_is_an_error():
    with pytest.raises(RuntimeError, match=r'^the engine returned 1 answers for 2 conversations; an Engine must '
                                           r'answer every conversation, in order$'):
        base._each(Flaky(wrong_count=True), _conversations('a', 'b'))


class Cutter(Bare):
    def __init__(self, short=False):
        self.asked, self.short = [], short

    def truncate_many(self, texts, max_tokens):
        self.asked.append((list(texts), max_tokens))
        cut = [t[:max_tokens] for t in texts]
        return cut[:-1] if self.short else cut


def test_truncate_each_makes_one_call_per_distinct_budget():
    engine = Cutter()
    assert base.truncate_each(engine, ['abcdef', 'ghijkl', 'mnopqr'], [2, 3.0, 2]) == ['ab', 'ghi', 'mn']
    assert engine.asked == [(['abcdef', 'mnopqr'], 2), (['ghijkl'], 3)]
    assert all(type(budget) is int for _, budget in engine.asked)
    with pytest.raises(RuntimeError, match=r'^Bare\(\)\.truncate_many returned 1 texts for 2$'):
        base.truncate_each(Cutter(short=True), ['abc', 'def'], [1, 1])


def test_generate_each_and_yes_no_each_pass_their_arguments():
    class Recorder(Bare):
        def __init__(self):
            self.kwargs = []

        def generate(self, conversations, **kwargs):
            self.kwargs.append(kwargs)
            return [Generation('g')] * len(conversations)

        def yes_no(self, conversations, **kwargs):
            self.kwargs.append(kwargs)
            return [Generation('yes', probability=.5)] * len(conversations)
    engine = Recorder()
    answers, errors = base.generate_each(engine, _conversations('a'), max_tokens=7, stop=['x'])
    assert ([a.text for a in answers], errors) == (['g'], [None])
    answers, errors = base.yes_no_each(engine, _conversations('a', 'b'), yes='Y', no='N')
    assert ([a.probability for a in answers], errors) == ([.5, .5], [None, None])
    assert engine.kwargs == [{'max_tokens': 7, 'stop': ['x']}, {'yes': 'Y', 'no': 'N'}]
