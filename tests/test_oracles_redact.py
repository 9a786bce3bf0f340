"""Oracles for hiding secrets inside URLs and log records (pyterrier_garen._redact): what a URL shows and what it
sends, which query parameters are credentials, what is remembered and scrubbed (longest first, short values never
from free text), the log filter, and the loggers it watches. Every expected string is written out by hand (the
twenty-sixth mutation run, docs/testing.md)."""
import logging
import pickle

import pytest

from pyterrier_garen import _redact as redact
from pyterrier_garen._redact import HIDDEN, SecretURL, protect_url, remember, scrub, shown_url


pytestmark = pytest.mark.usefixtures('forget_secrets')  # each test starts with nothing remembered


# ---- what a URL shows


@pytest.mark.parametrize(('url', 'shown', 'secrets'), [
    ('http://user:pa%2Fss@host:8000/v1', 'http://<hidden>@host:8000/v1', {'pa/ss', 'pa%2Fss'}),
    ('http://tokenonly@host/v1', 'http://<hidden>@host/v1', {'tokenonly'}),
    ('https://a@b:pw12@host/v1', 'https://<hidden>@host/v1', {'pw12'}),     # the last @ ends the userinfo
    ('http://u:pa:ss1@host/v1', 'http://<hidden>@host/v1', {'pa:ss1'}),       # the first : ends the user
    ('http://host/v1?api-key=K+1/2&model=m', 'http://host/v1?api-key=<hidden>&model=m', {'K 1/2', 'K%201%2F2'}),
    ('http://host/v1?Access_Token=abcd&x=a+b', 'http://host/v1?Access_Token=<hidden>&x=a+b', {'abcd'}),
    ('http://host/v1?sig=&x=1', 'http://host/v1?sig=&x=1', set()),          # an empty value is no secret
    ('http://host/v1?a%20b=1#frag', 'http://host/v1?a+b=1', set()),
])
def test_a_secret_url_shows_no_credential_and_remembers_it(url, shown, secrets):
    secret = SecretURL(url)
    assert str(secret) == shown
    assert repr(secret) == repr(shown)
    assert f'{secret}' == shown
    assert f'{secret:>40}' == f'{shown:>40}'
    assert '%s' % secret == shown
    assert secret.reveal() == url
    assert secret == url  # code that sends requests sees the URL itself
    assert redact._secrets == {s for s in secrets if len(s) >= 4}


@pytest.mark.parametrize('name', ['api-key', 'api_key', 'KEY', 'token', 'client_secret', 'password', 'passwd', 'pwd',
                                  'sig', 'auth', 'credentials', 'session_id'])
def test_credential_parameters(name):
    assert str(SecretURL(f'http://h/?{name}=s3cret')) == f'http://h/?{name}=<hidden>'


@pytest.mark.parametrize('name', ['model', 'temperature', 'k', 'q'])
def test_other_parameters_are_shown(name):
    assert str(SecretURL(f'http://h/?{name}=visible')) == f'http://h/?{name}=visible'


def test_a_secret_url_of_a_secret_url_and_pickling():
    inner = SecretURL('http://u:pass1@h/v1')
    outer = SecretURL(inner)
    assert outer.reveal() == 'http://u:pass1@h/v1'
    assert str(outer) == 'http://<hidden>@h/v1'
    copy = pickle.loads(pickle.dumps(outer))
    assert type(copy) is SecretURL
    assert copy.reveal() == 'http://u:pass1@h/v1'
    assert str(copy) == 'http://<hidden>@h/v1'


def test_client_args_send_the_query_with_every_request():
    assert SecretURL('http://h:1/v1?api-key=K1&x=2').client_args() == {
        'base_url': 'http://h:1/v1', 'default_query': {'api-key': 'K1', 'x': '2'}}
    assert SecretURL('http://u:p@h/v1').client_args() == {'base_url': 'http://u:p@h/v1'}


def test_protect_url_only_where_there_may_be_a_credential():
    assert type(protect_url('http://u:p@h/v1')) is SecretURL
    assert type(protect_url('http://h/v1?x=1')) is SecretURL
    plain = 'http://h/v1'
    assert protect_url(plain) is plain
    assert type(protect_url(plain)) is str
    already = SecretURL('http://u:p@h/')
    assert protect_url(already) is already
    assert protect_url(None) is None
    assert protect_url(8000) == 8000


def test_shown_url_for_display():
    assert shown_url('http://u:pass@h/v1') == 'http://<hidden>@h/v1'
    assert type(shown_url('http://u:pass@h/v1')) is str
    assert shown_url(['http://h/v1?key=k', 'http://h2/v1']) == ['http://h/v1?key=<hidden>', 'http://h2/v1']
    assert shown_url(('http://h/v1?key=k',)) == ('http://h/v1?key=<hidden>',)
    assert shown_url('user:pass@host') == 'user:pass@host'  # no scheme: not taken for a URL
    assert shown_url(5) == 5


# ---- remembering and scrubbing


def test_remember_keeps_values_of_four_characters_or_more():
    remember('abc', 'abcd', '', None, 'EMPTY', SecretURL('http://u:p@h/'))
    assert redact._secrets == {'abcd', 'http://u:p@h/'}


def test_scrub_replaces_longest_first():
    remember('secret', 'secret-longer')
    assert scrub('a secret-longer and a secret') == f'a {HIDDEN} and a {HIDDEN}'
    remember('zz12', 'aazz12xx')  # the shorter one sorts first by text: length decides, not the text
    assert scrub('key aazz12xx') == f'key {HIDDEN}'
    assert scrub('key abc here', 'abc') == f'key {HIDDEN} here'  # given here, even when short
    assert scrub('EMPTY stays', 'EMPTY') == 'EMPTY stays'
    assert scrub('nothing', '', None) == 'nothing'
    url = SecretURL('http://u:pass1@h/v1')  # a secret given as a SecretURL is scrubbed as the URL it holds
    assert scrub('calling http://u:pass1@h/v1 now', url) == f'calling {HIDDEN} now'


# ---- the log filter


def _record(msg, *args):
    return logging.LogRecord('httpx', logging.INFO, __file__, 1, msg, args, None)


def test_the_filter_rewrites_only_records_holding_a_secret():
    record = _record('GET %s', 'http://h/?api-key=zzzz9')
    assert redact._FILTER.filter(record) is True
    assert (record.msg, record.args) == ('GET %s', ('http://h/?api-key=zzzz9',))  # nothing remembered yet
    remember('zzzz9')
    assert redact._FILTER.filter(record) is True
    assert (record.msg, record.args) == (f'GET http://h/?api-key={HIDDEN}', None)
    clean = _record('GET %s', 'http://h/')
    assert redact._FILTER.filter(clean) is True
    assert (clean.msg, clean.args) == ('GET %s', ('http://h/',))


def test_a_record_that_cannot_be_formatted_is_left_alone():
    remember('zzzz9')
    record = _record('%d items', 'not a number')
    assert redact._FILTER.filter(record) is True
    assert (record.msg, record.args) == ('%d items', ('not a number',))


def test_watch_logs_attaches_one_filter_to_each_http_logger():
    names = ('httpx', 'httpx2', 'httpcore', 'openai', 'openai._base_client', 'urllib3.connectionpool')
    assert redact._LOGGERS == names
    redact.watch_logs()
    redact.watch_logs()
    for name in names:
        assert logging.getLogger(name).filters.count(redact._FILTER) == 1
    remember('zzzz9')
    logger = logging.getLogger('httpx')
    record = logger.makeRecord('httpx', logging.INFO, __file__, 1, 'key %s', ('zzzz9',), None)
    assert logger.filter(record)
    assert record.getMessage() == f'key {HIDDEN}'
