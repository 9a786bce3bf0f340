"""Secrets inside URLs (``http://user:KEY@host/v1``, ``http://host/v1?api-key=KEY``): a URL type that never shows
them, and a logging filter that scrubs every secret the engines know of from the records of the HTTP libraries.

Nothing here imports a network library; :func:`watch_logs` only attaches a filter to loggers by name.
"""
from __future__ import annotations

import logging
import re
import threading
import urllib.parse
from typing import Any, Dict, Iterable, List, Tuple

__all__ = ['SecretURL', 'protect_url', 'shown_url', 'remember', 'scrub', 'watch_logs', 'HIDDEN', 'SECRET_WORDS',
           'secret_name']

HIDDEN = '<hidden>'
# query parameters whose value is a credential (api-key, api_key, key, access_token, sig, password, ...)
_SECRET_PARAM = re.compile(r'key|token|secret|passw|pwd|sig|auth|credential|session', re.I)
_MIN_SECRET = 4  # shorter values are not scrubbed from free text (they would mangle it); they are never shown
_secrets: set = set()
_lock = threading.Lock()
# loggers of the HTTP stack that may print a request's URL (httpx prints every request at INFO)
_LOGGERS = ('httpx', 'httpx2', 'httpcore', 'openai', 'openai._base_client', 'urllib3.connectionpool')
#: words of an argument's name that say its value is a credential (``api_key``, ``hf_token``; not ``max_tokens``)
SECRET_WORDS = frozenset({'key', 'apikey', 'token', 'password', 'passwd', 'pwd', 'secret', 'credential',
                          'credentials', 'auth', 'authorization', 'bearer', 'cookie'})


def secret_name(name: str) -> bool:
    """Whether an argument called ``name`` holds a credential: a word of it (split at ``_`` and ``-``) is one of
    :data:`SECRET_WORDS`."""
    return not SECRET_WORDS.isdisjoint(name.lower().replace('-', '_').split('_'))


def hide_option_values(words: Iterable[str]) -> List[str]:
    """Command-line words with the value of every option named like a credential (:func:`secret_name`:
    ``--api-key sk-...``, ``--hf-token=...``) replaced by ``<hidden>``, as a usage error may echo them back."""
    shown: List[str] = []
    hide_next = False
    for word in words:
        if hide_next and not word.startswith('-'):
            shown.append(HIDDEN)
            hide_next = False
            continue
        hide_next = False
        name, equals, _ = word.partition('=')
        if word.startswith('-') and secret_name(name.lstrip('-')):
            if equals:
                word = f'{name}={HIDDEN}'
            else:
                hide_next = True
        shown.append(word)
    return shown


def _parts(url: str) -> Tuple[str, List[str], List[Tuple[str, str]]]:
    """``(shown URL, secrets, query parameters)`` of ``url``."""
    split = urllib.parse.urlsplit(url)
    secrets: List[str] = []
    netloc = split.netloc
    if '@' in netloc:
        userinfo, host = netloc.rsplit('@', 1)
        user, _, password = userinfo.partition(':')
        secrets += [urllib.parse.unquote(v) for v in (password or user,) if v]
        secrets += [v for v in (password or user,) if v]  # as written (percent-encoded) too
        netloc = f'{HIDDEN}@{host}'
    query = urllib.parse.parse_qsl(split.query, keep_blank_values=True)
    shown_query = []
    for name, value in query:
        if value and _SECRET_PARAM.search(name):
            secrets.append(value)
            secrets.append(urllib.parse.quote(value, safe=''))
            shown_query.append(f'{urllib.parse.quote(name)}={HIDDEN}')
        else:
            shown_query.append(urllib.parse.urlencode({name: value}))
    shown = urllib.parse.urlunsplit((split.scheme, netloc, split.path, '&'.join(shown_query), ''))
    return shown, secrets, query


class SecretURL(str):
    """A URL holding a credential: behaves as the URL for code that sends requests, but ``repr``, ``str``,
    f-strings and ``%`` show it with the credential replaced by ``<hidden>`` (``reveal()`` gives the URL).

    It pickles with its value, so that a recipe (``EngineSpec``) holding one works in a Ray worker.
    """

    def __new__(cls, url: str):
        plain = url.reveal() if isinstance(url, SecretURL) else str(url)
        self = super().__new__(cls, plain)
        self._shown, secrets, self._query = _parts(plain)
        remember(*secrets)
        return self

    def __repr__(self):
        return repr(self._shown)

    def __str__(self):
        return self._shown

    def __format__(self, spec):
        return format(self._shown, spec)

    def __reduce__(self):
        return (SecretURL, (self.reveal(),))

    def reveal(self) -> str:
        return str.__str__(self)

    def client_args(self) -> Dict[str, Any]:
        """``base_url`` (without the query) and ``default_query`` for an ``openai.OpenAI`` client: the query's
        parameters are sent with every request instead of being glued to the path."""
        split = urllib.parse.urlsplit(self.reveal())
        base = urllib.parse.urlunsplit((split.scheme, split.netloc, split.path, '', ''))
        return {'base_url': base, **({'default_query': dict(self._query)} if self._query else {})}


def protect_url(url: Any) -> Any:
    """``url`` as a :class:`SecretURL` when it holds a credential (userinfo or a key-like query parameter), else
    as it is."""
    if isinstance(url, SecretURL) or not isinstance(url, str):
        return url
    split = urllib.parse.urlsplit(url)
    if '@' in split.netloc or split.query:
        return SecretURL(url)
    return url


def shown_url(value: Any) -> Any:
    """A value for display: URLs (and lists of them) with their credentials hidden."""
    if isinstance(value, (list, tuple)):
        return type(value)(shown_url(v) for v in value)
    if isinstance(value, str) and '://' in value:
        protected = protect_url(value)
        return str(protected) if isinstance(protected, SecretURL) else value
    return value


def remember(*secrets: str) -> None:
    """Add secrets to scrub from log records (:func:`watch_logs`) and from :func:`scrub`."""
    plain = [s.reveal() if hasattr(s, 'reveal') else str(s) for s in secrets if s]
    with _lock:
        _secrets.update(s for s in plain if len(s) >= _MIN_SECRET and s != 'EMPTY')


def scrub(text: str, *secrets: Iterable[str]) -> str:
    """``text`` with every remembered secret (and any of ``secrets``) replaced by ``<hidden>``, longest first."""
    with _lock:
        known = set(_secrets)
    known.update(s.reveal() if hasattr(s, 'reveal') else str(s) for s in secrets if s)
    for secret in sorted((s for s in known if s and s != 'EMPTY'), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


class _ScrubFilter(logging.Filter):
    """Rewrites a log record whose message holds a remembered secret (the record is kept, the secret is not)."""

    def filter(self, record: logging.LogRecord) -> bool:
        with _lock:
            if not _secrets:
                return True
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a record that cannot be formatted is left to logging's own handling
            return True
        cleaned = scrub(message)
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


_FILTER = _ScrubFilter()


def watch_logs() -> None:
    """Attach the scrubbing filter to the HTTP stack's loggers (once)."""
    for name in _LOGGERS:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
