"""The engine for OpenAI-compatible servers (``vllm serve``, SGLang, hosted APIs)."""
from __future__ import annotations

import email.utils
import importlib
import itertools
import json
import math
import re
import threading
import time
import urllib.parse
import warnings
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Union

from .._params import Rebuildable, check_int, check_number, check_optional_positive, check_positive
from .._redact import SecretURL, protect_url, watch_logs
from ._base import (AccessRefused, Conversation, Engine, Generation, _require, answer_token_error, check_answer_pair,
                    no_information, redact, resolve_api_key, softmax_yes, usable_logprob)
from ._tokens import ServerTokenizer, hf_truncate, load_tokenizer, render_chat, split_prefill

__all__ = ['OpenAIEngine', 'RequestRefused', 'InvalidResponseError', 'DeadlineExceeded', 'RequestFailed',
           'ModelNotServed']

# greedy decoding, said in full: a server applies the model's generation_config.json to whatever a request leaves out
_GREEDY = {'temperature': 0.0, 'top_p': 1.0, 'presence_penalty': 0.0, 'frequency_penalty': 0.0}
_VLLM_GREEDY = {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}
_EXTENSION_FIELDS = ('top_k', 'min_p', 'repetition_penalty', 'allowed_token_ids', 'logprob_token_ids',
                     'return_tokens_as_token_ids')


class RequestRefused(RuntimeError):
    """The server refused a request as invalid (HTTP 400): retrying the same request cannot help."""


class InvalidResponseError(RuntimeError):
    """A server answered 200 with a body that is not a completion (not JSON, no ``choices``, an HTML page)."""


class DeadlineExceeded(TimeoutError):
    """A request took longer than its overall deadline."""


class ModelNotServed(AccessRefused):
    """The server answered HTTP 404 because it does not serve the model asked for (a wrong model name): every
    request of the run would fail the same way, so the run stops at once, as for a refused key (status 1)."""


def _names_missing_model(ex: BaseException, model: str) -> bool:
    """Whether a 404 says that ``model`` does not exist (vLLM: "The model `m` does not exist."; OpenAI:
    ``model_not_found``), as opposed to a path the server does not have."""
    text = str(ex).lower()
    if 'model_not_found' in text:
        return True
    named = re.search(rf'(?<![\w./-]){re.escape(str(model).lower())}(?![\w./-])', text) is not None
    return named and 'model' in text and ('not exist' in text or 'not found' in text)


class RequestFailed(RuntimeError):
    """A request still failed after every retry (the server is down, overloaded or too slow). Components count it
    per item; where it ends a run (a token count the prompt needs), the command line says it in one line (status 1).

    ``server_down`` is True when the last attempt could not reach the server, timed out, or met a gateway's 502/503/504:
    nothing about the request itself, so the rest of its batch is not sent one by one (see ``generate_each``)."""
    exit_status = 1

    def __init__(self, message: str, server_down: bool = False):
        super().__init__(message)
        self.server_down = server_down


def _check_completion(response):
    """``response`` when it is a completion with at least one choice, else :class:`InvalidResponseError`."""
    choices = getattr(response, 'choices', None)
    first = choices[0] if isinstance(choices, list) and choices else None
    if first is None or (getattr(first, 'message', None) is None and not isinstance(getattr(first, 'text', None), str)):
        shown = response if isinstance(response, (str, bytes)) else type(response).__name__
        raise InvalidResponseError(f'the server answered with something that is not a completion ({str(shown)[:80]!r}'
                                   '); is base_url the OpenAI-compatible API (ending in /v1)?')
    return response


def _positive_int(value: Any) -> Optional[int]:
    """``value`` as an int when it is a positive integer (an integral float such as 4096.0 included), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return None
    return int(value) if value >= 1 else None


def _check_url(url: Any) -> None:
    """``ValueError`` naming ``base_url`` unless ``url`` is an ``http(s)://`` URL with a host (and a port that is a
    number). The URL itself is not shown: it may hold a credential, and a malformed one cannot be redacted reliably.
    Without this, ``'notaurl'`` was retried as a server that is down, and a port of ``'abc'`` a traceback."""
    if not isinstance(url, str):
        return  # a SecretURL (made from a checked string) or a custom object the client is given as it is
    try:
        split = urllib.parse.urlsplit(url.strip())
        split.port  # noqa: B018 - raises ValueError for a port that is no number
    except ValueError as ex:  # the parser's own words can quote the URL's text: said here without it
        reason = 'its port is not a number' if 'port' in str(ex).lower() else 'it cannot be read as a URL'
    else:
        if split.scheme.lower() not in ('http', 'https'):
            reason = f'it has no http:// or https:// scheme (got {split.scheme + "://" if split.scheme else "none"})'
        elif not split.hostname:
            reason = 'it names no host'
        else:
            return
    raise ValueError(f'base_url (--base-url) is not the URL of an OpenAI-compatible server: {reason}; give one such as '
                     '"http://localhost:8000/v1"')


class OpenAIEngine(Rebuildable, Engine):
    """Any OpenAI-compatible server: ``vllm serve``, SGLang or a hosted API.

    Requests run in a thread pool of ``max_concurrency`` threads (the server batches them); each has a ``timeout``
    and is retried up to ``max_retries`` times (connection errors, timeouts, HTTP 429 and 5xx) with exponential
    backoff, moving to the next server on each retry. With a list of ``base_url`` the requests of a batch are spread
    round-robin over the servers (data parallel: one ``vllm serve`` per GPU or per node).

    Without ``tokenizer`` the chat endpoint (``/v1/chat/completions``) renders the prompt on the server; an assistant
    prefill is sent with vLLM's ``continue_final_message`` option. With ``tokenizer`` (a local tokenizer folder, a
    model name in the local Hugging Face cache, or a tokenizer object) prompts are rendered here and sent to
    ``/v1/completions``, which reproduces the in-process prompts exactly.

    Token counts and truncation (how much of a document fits the context) use the model's own tokenizer: the
    ``tokenizer`` when given, else the server's (vLLM's ``/tokenize`` and ``/detokenize`` endpoints, asked
    concurrently, with chat prompts counted as the server renders them), so that documents are cut exactly where an
    in-process engine of the same model cuts them. Only a server without these endpoints (a hosted API) falls back
    to an estimate of four characters per token, with a warning (once) that prompts then differ from an in-process
    run's.

    Every request says greedy decoding in full (temperature 0, top-p 1, no penalties and, to a vLLM server, top-k off,
    min-p 0 and repetition penalty 1): a server fills whatever a request leaves out from the model's
    ``generation_config.json``. Yes/no requests restrict the answer to the two tokens (``allowed_token_ids``) and ask
    for their exact log-probabilities by id (``logprob_token_ids``), as :class:`VLLMEngine` does; the ids come from
    ``tokenizer`` or the server's ``/tokenize``. These fields are vLLM's own: a server that rejects them
    (``vllm_extensions=None`` finds out on the first request) gets plain OpenAI requests instead, and the answers that
    lose exactness are counted (:attr:`extension_fallbacks`, :attr:`inexact_yes_no`) and warned about.

    Args:
        base_url: the server's URL (``http://host:8000/v1``) or a list of URLs. A credential inside a URL
            (``http://user:KEY@host/v1``, ``?api-key=KEY``) is sent (basic auth; the query with every request) but
            never shown: reprs, errors and the HTTP libraries' log records show ``<hidden>``.
        model: the served model name.
        api_key: the API key; ``None`` (default) reads ``$OPENAI_API_KEY``, and without it sends ``'EMPTY'`` (a
            local vLLM server). The key is kept as a :class:`Secret`: it never appears in a repr, log record, error
            message, result or artifact.
        max_concurrency: most requests in flight at once (over all servers).
        timeout: seconds a request may take in all (connecting, waiting and reading the whole answer) before it
            is abandoned and retried; a server that trickles its answer cannot extend it.
        max_retries: retries of a failed request.
        retry_backoff: seconds before the first retry, doubled on each further retry.
        seed: the seed sent with every request (decoding is greedy, ``temperature=0``).
        context_length: the model's context length (a positive integer); None asks the server (vLLM reports
            ``max_model_len``, under the same deadline and retries as every request) and falls back to 8192 with a
            warning when it cannot tell or reports something that is not a positive integer.
        tokenizer: None, a tokenizer folder or a model name in the local Hugging Face cache (loaded offline, never
            downloaded), or a tokenizer object (see above).
        chat_template_kwargs: extra chat template variables (e.g. ``{'enable_thinking': False}``).
        top_logprobs: log-probabilities requested for yes/no scoring when the server cannot return the two tokens'
            own (see above).
        vllm_extensions: send vLLM's extra request fields (True), never (False), or until the server rejects them
            (None).

    Attributes:
        extension_fallbacks: requests sent without vLLM's fields because the server rejected them.
        inexact_yes_no: yes/no answers whose P(yes) is an estimate (a token missing from the returned
            log-probabilities).

    Raises:
        ImportError: the ``openai`` client is not installed (``pip install -e '.[openai]'`` in a clone).
    """
    #: what besides the model changes what is asked of the server for a prompt (see :meth:`Engine.output_settings`)
    OUTPUT_ARGUMENTS = ('context_length', 'tokenizer', 'chat_template_kwargs')

    _repr_attributes = {'context_length': '_context_length'}

    def __init__(self, base_url: Union[str, Sequence[str]], model: str, *, api_key: Optional[str] = None,
                 max_concurrency: int = 16, timeout: float = 60, max_retries: int = 3, retry_backoff: float = 0.5,
                 seed: int = 0, context_length: Optional[int] = None, tokenizer: Any = None,
                 chat_template_kwargs: Optional[dict] = None, top_logprobs: int = 20,
                 vllm_extensions: Optional[bool] = None):
        _require('openai', 'OpenAIEngine', extra='openai')
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise ValueError('OpenAIEngine needs at least one base_url, e.g. "http://localhost:8000/v1"')
        check_positive(max_concurrency=max_concurrency, top_logprobs=top_logprobs)
        check_number('timeout', timeout, low=0, low_open=True)
        check_number('retry_backoff', retry_backoff, low=0)
        check_int('max_retries', max_retries, low=0)
        check_int('seed', seed)
        check_optional_positive(context_length=context_length)
        for url in urls:
            _check_url(url)
        watch_logs()  # the HTTP libraries log every request's URL: scrub credentials from their records
        urls = [protect_url(url) for url in urls]  # a credential inside a URL is never shown
        self.base_url = urls[0] if isinstance(base_url, str) else urls
        self.model = model
        self.api_key = None if api_key is None else resolve_api_key(api_key)  # as given: None reads the env
        self.max_concurrency = max_concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.retry_backoff = retry_backoff
        self.seed = seed
        self.tokenizer = tokenizer
        self.chat_template_kwargs = chat_template_kwargs
        self.top_logprobs = top_logprobs
        self._context_length = context_length
        self._context_retry_at: Optional[float] = None
        self._tok = tokenizer
        if isinstance(tokenizer, str):
            self._tok = load_tokenizer(tokenizer, 'OpenAIEngine(tokenizer=...)')
        self._key = resolve_api_key(api_key)
        self._urls = urls
        self._clients = [self._client(url) for url in urls]
        self._next = itertools.count()
        self._lock = threading.Lock()
        self.requests_per_server = [0] * len(urls)
        self.vllm_extensions = vllm_extensions
        self._extensions = vllm_extensions is not False
        self.extension_fallbacks = 0
        self.inexact_yes_no = 0
        self.unscored_yes_no = 0
        self._answer_ids: Dict[str, Optional[int]] = {}
        self._server_tokenizer = ServerTokenizer(self._post_root, self._map, model, chat_template_kwargs)

    def output_settings(self) -> Dict[str, Any]:
        return self.output_settings_of({'context_length': self._context_length, 'tokenizer': self.tokenizer,
                                        'chat_template_kwargs': self.chat_template_kwargs})

    def _client(self, url: str):
        openai = importlib.import_module('openai')
        where = url.client_args() if isinstance(url, SecretURL) else {'base_url': url}
        return openai.OpenAI(**where, api_key=self._key.reveal(), timeout=self.timeout, max_retries=0)

    # ---- tokens
    #: seconds after a failed context-length request during which 8192 is assumed without asking again (a server
    #: without a models list would otherwise be asked at every prompt)
    context_retry_s = 30.0

    @property
    def context_length(self) -> int:
        if self._context_length is None:
            if self._context_retry_at is not None and time.monotonic() < self._context_retry_at:
                return 8192  # the last request failed moments ago: the guess it warned about, until the next try
            value = self._ask_context_length()
            if value is None:  # the request failed: 8192 for now, the server is asked again later
                self._context_retry_at = time.monotonic() + float(self.context_retry_s)
                return 8192
            self._context_length = value
        return self._context_length

    def _ask_context_length(self) -> Optional[int]:
        """The server's ``max_model_len`` for the model (vLLM lists it with the models), through the same retries
        and overall deadline as every request; a value that is not a positive integer or a model the server does
        not list gives 8192, a failed request None, each with a warning. A refused key (401/403) stops the run.
        Only answers are kept: after a failed request (a server not up yet, restarting) a use at least
        ``context_retry_s`` seconds later asks again, so that an engine made before its server started does not
        size every prompt for 8192 tokens for good."""
        fallback = 'assuming 8192 tokens; pass context_length= to say it'
        url = self._urls[0]
        try:
            listing = self._request(lambda c: c.models.list(), completion=False, first=0)
            entries = list(getattr(listing, 'data', None) or [])
        except AccessRefused:
            raise
        except Exception as ex:  # noqa: BLE001 - said, and the documented fallback is used
            warnings.warn(f'{self!r}: could not read the context length of {self.model!r} from {url}/models '
                          f'({redact(str(ex), self._key)[:300]}); {fallback}', stacklevel=3)
            return None
        for entry in entries:
            if getattr(entry, 'id', None) == self.model:
                extra = getattr(entry, 'model_extra', None) or {}
                value = getattr(entry, 'max_model_len', None)
                value = extra.get('max_model_len') if value is None else value
                if value is None:
                    break
                number = _positive_int(value)
                if number is None:
                    warnings.warn(f'{self!r}: {url} reports max_model_len={value!r} for {self.model!r}, which is not '
                                  f'a positive integer; ignoring it and {fallback}', stacklevel=3)
                    return 8192
                return number
        else:
            served = [getattr(e, 'id', None) for e in entries][:5]
            warnings.warn(f'{self!r}: {url}/models does not list {self.model!r} (it lists {served}); {fallback}',
                          stacklevel=3)
            return 8192
        return 8192  # listed without max_model_len: not a vLLM server, which is fine

    # token counts and cuts: the given tokenizer, else the server's (/tokenize, /detokenize), else the estimate
    _estimate_fix = ('pass tokenizer= (the model\'s tokenizer folder, loaded offline) or serve the model with vLLM, '
                     'whose /tokenize and /detokenize endpoints the engine then uses')

    @property
    def token_source(self) -> str:
        """What counts and cuts tokens: ``'tokenizer'`` (the given one), ``'server'`` (its ``/tokenize``),
        ``'estimate'`` (the server has none) or ``'unknown'`` (the server was not asked yet)."""
        if self._tok is not None:
            return 'tokenizer'
        return {True: 'server', False: 'estimate', None: 'unknown'}[self._server_tokenizer.available]

    def count_tokens(self, text: str) -> int:
        if self._tok is not None:
            return len(self._tok.encode(text, add_special_tokens=False))
        ids = self._server_tokenizer.encode_many([text])
        return super().count_tokens(text) if ids is None else len(ids[0])

    def count_conversation_tokens(self, conversation: Conversation) -> int:
        if self._tok is not None:
            return len(self._tok.encode(self._prompt(conversation), add_special_tokens=False))
        count = self._server_tokenizer.count_conversation(conversation)
        return super().count_conversation_tokens(conversation) if count is None else count

    def truncate(self, text: str, max_tokens: int) -> str:
        return self.truncate_many([text], max_tokens)[0]

    def truncate_many(self, texts: Sequence[str], max_tokens: int) -> List[str]:
        if self._tok is not None:
            return [hf_truncate(self._tok, text, max_tokens) for text in texts]
        cut = self._server_tokenizer.truncate_many(texts, max_tokens)
        return [Engine.truncate(self, text, max_tokens) for text in texts] if cut is None else cut

    def _post_root(self, path: str, body: dict) -> Optional[dict]:
        """POST ``body`` to ``path`` at the server's root (beside ``/v1``), with retries; None when the server has
        no such endpoint (HTTP 404, 405 or 501: not a vLLM server)."""
        openai = importlib.import_module('openai')

        def call(client):
            root = str(client.base_url).rstrip('/')
            root = root[:-len('/v1')] if root.endswith('/v1') else root
            try:
                return client.post(f'{root}{path}', cast_to=object, body=body)
            except openai.APIStatusError as ex:
                if ex.status_code in (404, 405, 501) and not _names_missing_model(ex, self.model):
                    return None
                raise
        return self._request(call, completion=False)

    # ---- requests
    def _request(self, fn, *, completion: bool = True, first: Optional[int] = None):
        """Run ``fn(client)`` with retries; each attempt goes to the next server in round-robin order (from server
        ``first`` when given, without moving the round-robin).

        Each attempt has an overall deadline of ``timeout`` seconds; connection errors, timeouts, HTTP 429/5xx and
        200 answers that are not a completion are retried (honouring ``Retry-After``); a refused key (401/403) is
        :class:`AccessRefused`, other errors are raised at once. Messages never contain the API key or a credential
        of a URL.
        """
        openai = importlib.import_module('openai')
        retryable = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                     openai.InternalServerError, openai.APIResponseValidationError, InvalidResponseError,
                     DeadlineExceeded)
        with self._lock:
            start = next(self._next) if first is None else first
        for attempt in range(self.max_retries + 1):
            index = (start + attempt) % len(self._clients)
            with self._lock:
                self.requests_per_server[index] += 1
            message, refused, down = None, False, False
            try:
                return self._with_deadline(index, fn, completion)
            except retryable as ex:  # other errors (400: prompt too long, 404: unknown model, ...) are raised
                if attempt == self.max_retries:
                    down = (isinstance(ex, (openai.APIConnectionError, DeadlineExceeded))
                            or getattr(ex, 'status_code', None) in (502, 503, 504))
                    message = (f'request to {self._urls[index]} failed after {attempt + 1} attempts '
                               f'({type(ex).__name__}: {str(ex)[:300]}); check that the server is up and serves '
                               f'{self.model!r}, or raise timeout=/max_retries= (--timeout/--max-retries)')
                else:
                    delay = self._retry_delay(ex, attempt)
            except (openai.AuthenticationError, openai.PermissionDeniedError) as ex:
                message = (f'{self._urls[index]} refused the credentials (HTTP {getattr(ex, "status_code", "?")} '
                           f'{type(ex).__name__}: {str(ex)[:300]}); no retry can fix this, so the run stops: check '
                           f'the API key (api_key=, or $OPENAI_API_KEY) and that it may use {self.model!r}')
                refused = AccessRefused
            except openai.APIError as ex:
                message = f'request to {self._urls[index]} was refused ({type(ex).__name__}: {str(ex)[:300]})'
                refused = RequestRefused if isinstance(ex, openai.BadRequestError) else False
                if isinstance(ex, openai.NotFoundError) and _names_missing_model(ex, self.model):
                    message += (f'; the server does not serve the model {self.model!r}, so no retry can fix this and '
                                f'the run stops: pass the name it lists at {self._urls[index]}/models (vllm serve '
                                '--served-model-name NAME sets it)')
                    refused = ModelNotServed
            if message is not None:  # raised outside the handler: the original (which may quote the key) is dropped
                if refused:
                    raise refused(redact(message, self._key))
                raise RequestFailed(redact(message, self._key), server_down=down)
            time.sleep(delay)
        raise AssertionError('unreachable')  # pragma: no cover

    def _retry_delay(self, ex: BaseException, attempt: int) -> float:
        """Exponential backoff, or the server's ``Retry-After`` (seconds or an HTTP date; capped at 60 s)."""
        delay = self.retry_backoff * (2 ** attempt)
        response = getattr(ex, 'response', None)
        value = response.headers.get('retry-after') if response is not None else None
        if value:
            try:
                wait = float(value)
            except ValueError:
                try:
                    wait = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
                except (TypeError, ValueError, IndexError):
                    wait = None
            if wait is not None and math.isfinite(wait):
                delay = max(delay, min(max(wait, 0.0), 60.0))
        return delay

    def _with_deadline(self, index: int, fn, completion: bool = True):
        """``fn(client)`` in a daemon thread, abandoned after ``timeout`` seconds (the client's own timeout only
        bounds each read). An abandoned request's client is replaced so that its connection is dropped."""
        client = self._clients[index]
        box: Dict[str, Any] = {}

        def attempt():
            try:
                box['value'] = fn(client)
            except json.JSONDecodeError as ex:
                box['error'] = InvalidResponseError(f'the server answered with a body that is not JSON ({ex.msg} at '
                                                    f'{ex.pos}: {ex.doc[:60]!r})')
            except BaseException as ex:  # noqa: BLE001 - handed to the caller's thread
                box['error'] = ex
        worker = threading.Thread(target=attempt, daemon=True, name='garen-openai-request')
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            with self._lock:
                if self._clients[index] is client:
                    self._clients[index] = self._client(self._urls[index])
            threading.Thread(target=client.close, daemon=True).start()
            raise DeadlineExceeded(f'no complete answer within timeout={self.timeout} s')
        if 'error' in box:
            raise box['error']
        return _check_completion(box['value']) if completion else box['value']

    def _map(self, fn, items):
        items = list(items)
        if not items:
            return []
        if len(items) == 1 or self.max_concurrency == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    def _send(self, build):
        """``build(extensions) -> fn(client)`` run with retries: ``(response, extensions used)``. With
        ``vllm_extensions=None`` vLLM's fields are dropped for good (warned once) when the server rejects them."""
        if self._extensions:
            try:
                return self._request(build(True)), True
            except RequestRefused as ex:
                named = any(field in str(ex) for field in _EXTENSION_FIELDS)
                if self.vllm_extensions is not None or not named:
                    raise
                with self._lock:
                    first, self._extensions = self._extensions, False
                if first:
                    warnings.warn(f'{self!r}: the server rejects vLLM\'s request fields ({str(ex)[:200]}); '
                                  'sending plain OpenAI requests from now on: sampling defaults the server applies are '
                                  'not overridden and yes/no answers are not restricted to the two tokens (counted in '
                                  'engine.extension_fallbacks)', stacklevel=4)
        with self._lock:
            self.extension_fallbacks += self.vllm_extensions is not False
        return self._request(build(False)), False

    def _sampling(self, extensions: bool):
        """Greedy decoding in full (see the class docstring): keyword arguments and the ``extra_body`` part."""
        return {**_GREEDY, 'seed': self.seed}, (dict(_VLLM_GREEDY) if extensions else {})

    def _chat_kwargs(self, conversation: Conversation, extensions: bool = False, extra: Optional[dict] = None) -> dict:
        messages, prefill = split_prefill(conversation)
        options, body = self._sampling(extensions)
        body.update(extra or {})
        if self.chat_template_kwargs:
            body['chat_template_kwargs'] = dict(self.chat_template_kwargs)
        if prefill:
            messages = messages + [{'role': 'assistant', 'content': prefill}]
            body.update(add_generation_prompt=False, continue_final_message=True)
        return {'model': self.model, 'messages': messages, **options, 'extra_body': body or None}

    def _completion_kwargs(self, conversation: Conversation, extensions: bool = False,
                           extra: Optional[dict] = None) -> dict:
        options, body = self._sampling(extensions)
        body.update(extra or {})
        return {'model': self.model, 'prompt': self._prompt(conversation), **options, 'extra_body': body or None}

    def _prompt(self, conversation: Conversation) -> str:
        return render_chat(self._tok, conversation, self.chat_template_kwargs)

    @staticmethod
    def _usage(generation: Generation, response, choice) -> Generation:
        usage = response.usage
        generation.prompt_tokens = getattr(usage, 'prompt_tokens', 0) or 0
        generation.completion_tokens = getattr(usage, 'completion_tokens', 0) or 0
        generation.finish_reason = choice.finish_reason
        return generation

    def generate(self, conversations, *, max_tokens, stop=None):
        stop = list(stop) if stop else None

        def one(conversation):
            if self._tok is None:
                response, _ = self._send(lambda ext: lambda c: c.chat.completions.create(
                    max_tokens=int(max_tokens), stop=stop, **self._chat_kwargs(conversation, ext)))
                choice = response.choices[0]
                text = choice.message.content or ''
            else:
                response, _ = self._send(lambda ext: lambda c: c.completions.create(
                    max_tokens=int(max_tokens), stop=stop, **self._completion_kwargs(conversation, ext)))
                choice = response.choices[0]
                text = choice.text or ''
            return self._usage(Generation(text=text), response, choice)
        return self._map(one, conversations)

    def answer_token_id(self, word: str) -> Optional[int]:
        """The id of a single-token answer word: from ``tokenizer``, else the server's ``/tokenize`` (vLLM); None
        when neither can tell."""
        if word not in self._answer_ids:
            ids = None
            if self._tok is not None:
                ids = self._tok.encode(word, add_special_tokens=False)
            elif self._extensions:
                ids = self._server_token_ids(word)
            if ids is not None and len(ids) != 1:
                raise answer_token_error(word, ids, self.model)
            self._answer_ids[word] = ids[0] if ids else None
        return self._answer_ids[word]

    def _server_token_ids(self, word: str) -> Optional[List[int]]:
        try:
            ids = self._server_tokenizer.encode_many([word])
        except AccessRefused:
            raise
        except Exception:  # noqa: BLE001 - a failing /tokenize only costs exactness; the caller falls back
            return None
        return None if ids is None else ids[0]

    def yes_no(self, conversations, *, yes='yes', no='no'):
        """See :meth:`Engine.yes_no` and the class docstring (restricted, exact log-probabilities by token id)."""
        if not conversations:
            return []
        ids = (self.answer_token_id(yes), self.answer_token_id(no)) if self._extensions else (None, None)
        check_answer_pair(*ids, yes, no, self.model)
        by_id = None not in ids
        extra = {'allowed_token_ids': list(ids), 'logprob_token_ids': list(ids),
                 'return_tokens_as_token_ids': True} if by_id else {}
        inexact, unscored = [0], [0]

        def pick(candidates: Dict[Any, Any], exact: bool) -> Generation:
            # as the server sent them: a null, a string or a missing token is no log-probability (not a crash)
            candidates = {t: v for t, v in ((t, usable_logprob(v)) for t, v in candidates.items())
                          if v is not None and isinstance(t, str)}
            yes_lp = no_lp = None
            for token, logprob in candidates.items():
                if exact and token.startswith('token_id:'):
                    token_id = int(token[len('token_id:'):])
                    yes_lp = logprob if token_id == ids[0] else yes_lp
                    no_lp = logprob if token_id == ids[1] else no_lp
                    continue
                word = token.strip().lower()
                if word == yes.lower() and (yes_lp is None or logprob > yes_lp):
                    yes_lp = logprob
                elif word == no.lower() and (no_lp is None or logprob > no_lp):
                    no_lp = logprob
            floor = min(candidates.values()) if candidates else 0.0
            if no_information(yes_lp, no_lp, floor):  # missing, NaN or -inf on both sides: 0.5 is no score
                with self._lock:
                    unscored[0] += 1
            elif yes_lp is None or no_lp is None:
                with self._lock:
                    inexact[0] += 1
            probability = softmax_yes(yes_lp, no_lp, floor)
            return Generation(text=yes if probability >= 0.5 else no, probability=probability)

        def one(conversation):
            if self._tok is None:
                response, ext = self._send(lambda ext: lambda c: c.chat.completions.create(
                    max_tokens=1, logprobs=True, top_logprobs=2 if ext and by_id else self.top_logprobs,
                    **self._chat_kwargs(conversation, ext, extra if ext else None)))
                choice = response.choices[0]
                content = (choice.logprobs.content or []) if choice.logprobs else []
                candidates = {}
                if content:
                    candidates = {t.token: t.logprob for t in content[0].top_logprobs or []}
                    if usable_logprob(candidates.get(content[0].token)) is None:
                        candidates[content[0].token] = content[0].logprob
            else:
                response, ext = self._send(lambda ext: lambda c: c.completions.create(
                    max_tokens=1, logprobs=2 if ext and by_id else self.top_logprobs,
                    **self._completion_kwargs(conversation, ext, extra if ext else None)))
                choice = response.choices[0]
                tops = (choice.logprobs.top_logprobs or []) if choice.logprobs else []
                candidates = dict(tops[0] or {}) if tops else {}
            return self._usage(pick(candidates, ext and by_id), response, choice)
        result = self._map(one, conversations)
        why = ('the server does not take vLLM\'s logprob_token_ids' if not self._extensions else
               'the answer ids are unknown: pass tokenizer=' if not by_id else 'the server left one out')
        self._note_inexact(inexact[0], why)
        self._note_unscored(unscored[0])
        return result
