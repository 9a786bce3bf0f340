"""LLM engines shared by the reranker, the navigator and the summariser.

This is the only module of the package that touches vLLM, the ``openai`` client or ``transformers``, and it imports
them lazily (inside the functions that need them), so ``import pyterrier_garen`` stays light.

An :class:`Engine` answers batches of chat conversations (``[{'role': ..., 'content': ...}, ...]``). A conversation
whose last message has role ``assistant`` is a *prefill*: the model continues that message (the navigator uses this
for the empty think block of the Qwen3-Reranker protocol). Two engines are provided:

* :class:`VLLMEngine`: an in-process ``vllm.LLM`` (offline batch inference, prefix caching, greedy decoding);
* :class:`OpenAIEngine`: any OpenAI-compatible server (``vllm serve``, SGLang, a hosted API), with bounded
  concurrency, timeouts, retries and round-robin over several servers (data parallel).

Engines know nothing of the components built on them: ``ListwiseReranker(engine)``, ``YesNoScorer(engine)`` and
``LLMSummarizer(engine)`` share one engine and keep their own :class:`UsageStats` (calls, prompts, prompt and
completion tokens).
"""
from __future__ import annotations

import email.utils
import importlib
import itertools
import json
import math
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ['Engine', 'Generation', 'UsageStats', 'VLLMEngine', 'OpenAIEngine', 'Conversation', 'Secret']

Conversation = List[Dict[str, str]]

_EXTRA_HINT = 'pip install pyterrier-garen[vllm]'


def _require(module: str, what: str) -> Any:
    """Import ``module`` or raise an ImportError that says which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as ex:
        raise ImportError(f'{what} needs the {module!r} package, which is not installed; install the extra with '
                          f'`{_EXTRA_HINT}` (or `pip install {module}`)') from ex


class Secret(str):
    """An API key: behaves as the key for the client that needs it, but never shows it (repr, str, format).

    ``reveal()`` gives the plain key; everything else (``repr``, ``str``, f-strings, ``%``) shows ``'<hidden>'``.
    """

    def __repr__(self):
        return "'<hidden>'"

    def __str__(self):
        return '<hidden>'

    def __format__(self, spec):
        return format('<hidden>', spec)

    def __reduce__(self):  # never pickled with its value (artifacts, multiprocessing)
        return (Secret, ('',))

    def reveal(self) -> str:
        return str.__str__(self)


def resolve_api_key(api_key: Optional[str]) -> Secret:
    """The key to send: ``api_key`` when given, else ``$OPENAI_API_KEY``, else ``'EMPTY'`` (a local server)."""
    key = api_key.reveal() if isinstance(api_key, Secret) else api_key
    if key is None:
        key = os.environ.get('OPENAI_API_KEY') or 'EMPTY'
    return Secret(key)


def redact(text: str, *secrets: str) -> str:
    """``text`` with every secret (and its ``Bearer`` header form) replaced by ``<hidden>``."""
    for secret in secrets:
        plain = secret.reveal() if isinstance(secret, Secret) else str(secret)
        if plain and plain != 'EMPTY':
            text = text.replace(plain, '<hidden>')
    return text


@dataclass
class Generation:
    """One answer of an engine.

    Attributes:
        text: the generated text (for :meth:`Engine.yes_no`, the chosen token, ``yes`` or ``no``).
        prompt_tokens: tokens in the prompt, as counted by the engine (0 when unknown).
        completion_tokens: tokens generated.
        finish_reason: why generation stopped (``stop``, ``length``, ...), when the engine reports it.
        probability: for :meth:`Engine.yes_no`, ``P(yes)`` = softmax over the yes/no logits; else None.
    """
    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: Optional[str] = None
    probability: Optional[float] = None


class UsageStats:
    """Call and token counters of one LLM component (used to reproduce a cost comparison such as the paper's Table 7).

    Attributes:
        calls: engine calls made (one per batch).
        prompts: conversations sent.
        prompt_tokens: prompt tokens over all conversations.
        completion_tokens: generated tokens over all conversations.
    """

    def __init__(self):
        self.reset_stats()

    def reset_stats(self) -> None:
        """Set every counter back to zero."""
        self.calls = 0
        self.prompts = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def _record(self, generations: Sequence[Generation], expected: int) -> None:
        if len(generations) != expected:
            raise RuntimeError(f'the engine of {self!r} returned {len(generations)} answers for {expected} '
                               'conversations; an Engine must answer every conversation, in order')
        self.calls += 1
        self.prompts += len(generations)
        self.prompt_tokens += sum(int(g.prompt_tokens or 0) for g in generations)
        self.completion_tokens += sum(int(g.completion_tokens or 0) for g in generations)

    def stats(self) -> Dict[str, int]:
        """The counters as a dict (``calls``, ``prompts``, ``prompt_tokens``, ``completion_tokens``)."""
        return {'calls': self.calls, 'prompts': self.prompts, 'prompt_tokens': self.prompt_tokens,
                'completion_tokens': self.completion_tokens}


def softmax_yes(yes_logprob: Optional[float], no_logprob: Optional[float], floor: float) -> float:
    """``P(yes)`` from the log-probabilities of the yes and no tokens.

    A token missing from the returned top log-probabilities gets ``floor`` (the lowest returned log-probability,
    an upper bound of the missing one), so that the score keeps an order even when only one token was seen.
    """
    yes = floor if yes_logprob is None else yes_logprob
    no = floor if no_logprob is None else no_logprob
    top = max(yes, no)
    if math.isinf(top):
        return 0.5
    ey, en = math.exp(yes - top), math.exp(no - top)
    return ey / (ey + en)


def split_prefill(conversation: Conversation):
    """``(messages, prefill)``: the messages to template and the text the assistant turn starts with (or '')."""
    if conversation and conversation[-1].get('role') == 'assistant':
        return list(conversation[:-1]), conversation[-1].get('content') or ''
    return list(conversation), ''


def render_chat(tokenizer: Any, conversation: Conversation, chat_template_kwargs: Optional[dict] = None) -> str:
    """The prompt string of a conversation with the tokenizer's chat template, including any assistant prefill.

    The messages before a prefill are templated with a generation prompt; the prefill text is then appended unless
    the template already ends with it (e.g. Qwen3 templates with ``enable_thinking=False`` write the empty think
    block themselves).
    """
    messages, prefill = split_prefill(conversation)
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True,
                                         **(chat_template_kwargs or {}))
    if prefill and not text.endswith(prefill):
        text += prefill
    return text


class Engine:
    """Interface of an LLM engine shared by the reranker, the navigator and the summariser.

    Subclasses implement :meth:`generate` and :meth:`yes_no` and should override :meth:`count_tokens`,
    :meth:`truncate` and :attr:`context_length` when they know the model's tokenizer (the defaults estimate four
    characters per token). Decoding is greedy: the same conversation gives the same answer.

    Attributes:
        model: the model id (recorded in artifacts and experiment names).
    """
    model: str = 'unknown'
    chars_per_token: float = 4.0

    def generate(self, conversations: Sequence[Conversation], *, max_tokens: int,
                 stop: Optional[Sequence[str]] = None) -> List[Generation]:
        """Greedy answers to a batch of conversations, in input order.

        Args:
            conversations: chat conversations; a final ``assistant`` message is continued (prefill).
            max_tokens: most tokens generated per answer.
            stop: strings that end an answer (not included in the text).

        Returns:
            One :class:`Generation` per conversation.
        """
        raise NotImplementedError()

    def yes_no(self, conversations: Sequence[Conversation], *, yes: str = 'yes', no: str = 'no') -> List[Generation]:
        """One constrained token per conversation; ``probability`` = softmax over the yes/no logits, i.e. P(yes).

        Args:
            conversations: chat conversations (typically ending with an assistant prefill).
            yes: the "yes" token.
            no: the "no" token.

        Returns:
            One :class:`Generation` per conversation, with ``probability`` set.
        """
        raise NotImplementedError()

    def yes_no_probability(self, conversations: Sequence[Conversation], *, yes: str = 'yes',
                           no: str = 'no') -> List[float]:
        """``P(yes)`` of each conversation (see :meth:`yes_no`)."""
        return [float(g.probability) for g in self.yes_no(conversations, yes=yes, no=no)]

    @property
    def context_length(self) -> int:
        """Most tokens (prompt + answer) the model accepts."""
        return 8192

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` (an estimate of four characters per token unless the engine has a tokenizer)."""
        return math.ceil(len(text) / self.chars_per_token)

    def truncate(self, text: str, max_tokens: int) -> str:
        """``text`` cut to at most ``max_tokens`` tokens (at a word boundary for the estimate)."""
        limit = max(0, int(max_tokens * self.chars_per_token))
        if len(text) <= limit:
            return text
        cut = text[:limit]
        space = cut.rfind(' ')
        return cut[:space] if space >= limit // 2 else cut

    def count_conversation_tokens(self, conversation: Conversation) -> int:
        """Tokens of a conversation's texts plus a small allowance per message for the chat template."""
        return sum(self.count_tokens(m.get('content') or '') + 8 for m in conversation)


def _kwargs_repr(options: Dict[str, Any], defaults: Dict[str, Any]) -> str:
    return ''.join(f', {k}={v!r}' for k, v in options.items() if k not in defaults or defaults[k] != v)


class _HFTokenizerMixin:
    """count_tokens / truncate with a Hugging Face tokenizer in ``self.tokenizer``."""
    tokenizer: Any

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def truncate(self, text: str, max_tokens: int) -> str:
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        if len(ids) <= max_tokens:
            return text
        return self.tokenizer.decode(ids[:max(0, int(max_tokens))], skip_special_tokens=True)

    def _single_token_id(self, token: str) -> int:
        ids = self.tokenizer.encode(token, add_special_tokens=False)
        if len(ids) != 1:
            raise ValueError(f'{token!r} is {len(ids)} tokens for {self.model!r} ({ids}); yes/no scoring needs '
                             'single-token answers: pass other yes=/no= strings')
        return ids[0]


class VLLMEngine(_HFTokenizerMixin, Engine):
    """An in-process vLLM model (offline batch inference on the local GPUs).

    Prompts are rendered with the model's chat template and passed as token ids to ``LLM.generate`` with greedy
    ``SamplingParams`` (``temperature=0``, fixed ``seed``); prefix caching is on by default, so the shared system
    prompt and query of a batch are computed once.

    Args:
        model: a Hugging Face model id or a local path, e.g. ``'Qwen/Qwen3-Reranker-4B'``.
        seed: the seed of the engine and of every request.
        enable_prefix_caching: reuse the KV cache of shared prompt prefixes.
        chat_template_kwargs: extra variables for the chat template (e.g. ``{'enable_thinking': False}``).
        **engine_args: passed to ``vllm.LLM`` (``tensor_parallel_size``, ``max_model_len``,
            ``gpu_memory_utilization``, ``dtype``, ...).

    Raises:
        ImportError: vLLM is not installed (``pip install pyterrier-garen[vllm]``).
    """

    def __init__(self, model: str, *, seed: int = 0, enable_prefix_caching: bool = True,
                 chat_template_kwargs: Optional[dict] = None, **engine_args):
        vllm = _require('vllm', 'VLLMEngine')
        self.model = model
        self.seed = seed
        self.enable_prefix_caching = enable_prefix_caching
        self.chat_template_kwargs = chat_template_kwargs
        self.engine_args = engine_args
        self.llm = vllm.LLM(model=model, seed=seed, enable_prefix_caching=enable_prefix_caching, **engine_args)
        self.tokenizer = self.llm.get_tokenizer()

    def __repr__(self):
        options = {'seed': self.seed, 'enable_prefix_caching': self.enable_prefix_caching,
                   'chat_template_kwargs': self.chat_template_kwargs, **self.engine_args}
        defaults = {'seed': 0, 'enable_prefix_caching': True, 'chat_template_kwargs': None}
        return f'VLLMEngine({self.model!r}{_kwargs_repr(options, defaults)})'

    @property
    def context_length(self) -> int:
        for path in ('llm_engine.model_config.max_model_len', 'llm_engine.vllm_config.model_config.max_model_len'):
            value = self.llm
            try:
                for attr in path.split('.'):
                    value = getattr(value, attr)
                return int(value)
            except (AttributeError, TypeError, ValueError):
                continue
        return int(getattr(self.tokenizer, 'model_max_length', 8192))

    def _prompts(self, conversations: Sequence[Conversation]) -> List[dict]:
        return [{'prompt_token_ids': self.tokenizer.encode(render_chat(self.tokenizer, c, self.chat_template_kwargs),
                                                           add_special_tokens=False)} for c in conversations]

    def generate(self, conversations, *, max_tokens, stop=None):
        if not conversations:
            return []
        vllm = _require('vllm', 'VLLMEngine')
        params = vllm.SamplingParams(temperature=0.0, seed=self.seed, max_tokens=int(max_tokens),
                                     stop=list(stop) if stop else None)
        outputs = self.llm.generate(self._prompts(conversations), params, use_tqdm=False)
        return [Generation(text=out.outputs[0].text, prompt_tokens=len(out.prompt_token_ids or ()),
                           completion_tokens=len(out.outputs[0].token_ids),
                           finish_reason=out.outputs[0].finish_reason) for out in outputs]

    def yes_no(self, conversations, *, yes='yes', no='no'):
        if not conversations:
            return []
        vllm = _require('vllm', 'VLLMEngine')
        yes_id, no_id = self._single_token_id(yes), self._single_token_id(no)
        params = vllm.SamplingParams(temperature=0.0, seed=self.seed, max_tokens=1, logprobs=20,
                                     allowed_token_ids=[yes_id, no_id])
        outputs = self.llm.generate(self._prompts(conversations), params, use_tqdm=False)
        result = []
        for out in outputs:
            top = out.outputs[0].logprobs[0] if out.outputs[0].logprobs else {}
            logprobs = {tid: float(getattr(lp, 'logprob', lp)) for tid, lp in top.items()}
            floor = min(logprobs.values()) if logprobs else 0.0
            probability = softmax_yes(logprobs.get(yes_id), logprobs.get(no_id), floor)
            result.append(Generation(text=out.outputs[0].text, prompt_tokens=len(out.prompt_token_ids or ()),
                                     completion_tokens=len(out.outputs[0].token_ids), probability=probability,
                                     finish_reason=out.outputs[0].finish_reason))
        return result


class InvalidResponseError(RuntimeError):
    """A server answered 200 with a body that is not a completion (not JSON, no ``choices``, an HTML page)."""


class DeadlineExceeded(TimeoutError):
    """A request took longer than its overall deadline."""


def _check_completion(response):
    """``response`` when it is a completion with at least one choice, else :class:`InvalidResponseError`."""
    choices = getattr(response, 'choices', None)
    first = choices[0] if isinstance(choices, list) and choices else None
    if first is None or (getattr(first, 'message', None) is None and not isinstance(getattr(first, 'text', None), str)):
        shown = response if isinstance(response, (str, bytes)) else type(response).__name__
        raise InvalidResponseError(f'the server answered with something that is not a completion ({str(shown)[:80]!r}'
                                   '); is base_url the OpenAI-compatible API (ending in /v1)?')
    return response


class OpenAIEngine(Engine):
    """Any OpenAI-compatible server: ``vllm serve``, SGLang or a hosted API.

    Requests run in a thread pool of ``max_concurrency`` threads (the server batches them); each has a ``timeout``
    and is retried up to ``max_retries`` times (connection errors, timeouts, HTTP 429 and 5xx) with exponential
    backoff, moving to the next server on each retry. With a list of ``base_url`` the requests of a batch are spread
    round-robin over the servers (data parallel: one ``vllm serve`` per GPU or per node).

    Without ``tokenizer`` the chat endpoint (``/v1/chat/completions``) renders the prompt on the server; an assistant
    prefill is sent with vLLM's ``continue_final_message`` option, and yes/no probabilities come from
    ``top_logprobs``. With ``tokenizer`` (a Hugging Face id or tokenizer object) prompts are rendered here and sent
    to ``/v1/completions``, which reproduces the in-process prompts exactly and gives exact token counts for
    truncation.

    Args:
        base_url: the server's URL (``http://host:8000/v1``) or a list of URLs.
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
        context_length: the model's context length; None asks the server (vLLM reports ``max_model_len``) and
            falls back to 8192.
        tokenizer: None, a Hugging Face tokenizer id, or a tokenizer object (see above).
        chat_template_kwargs: extra chat template variables (e.g. ``{'enable_thinking': False}``).
        top_logprobs: log-probabilities requested per token for yes/no scoring.

    Raises:
        ImportError: the ``openai`` client is not installed (``pip install pyterrier-garen[vllm]``).
    """

    def __init__(self, base_url: Union[str, Sequence[str]], model: str, *, api_key: Optional[str] = None,
                 max_concurrency: int = 16, timeout: float = 60, max_retries: int = 3, retry_backoff: float = 0.5,
                 seed: int = 0, context_length: Optional[int] = None, tokenizer: Any = None,
                 chat_template_kwargs: Optional[dict] = None, top_logprobs: int = 20):
        _require('openai', 'OpenAIEngine')
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise ValueError('OpenAIEngine needs at least one base_url, e.g. "http://localhost:8000/v1"')
        if max_concurrency < 1:
            raise ValueError(f'max_concurrency must be at least 1; got {max_concurrency}')
        self.base_url = base_url
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
        self._tok = None
        if tokenizer is not None:
            if isinstance(tokenizer, str):
                transformers = _require('transformers', 'OpenAIEngine(tokenizer=...)')
                self._tok = transformers.AutoTokenizer.from_pretrained(tokenizer)
            else:
                self._tok = tokenizer
        self._key = resolve_api_key(api_key)
        self._urls = urls
        self._clients = [self._client(url) for url in urls]
        self._next = itertools.count()
        self._lock = threading.Lock()
        self.requests_per_server = [0] * len(urls)

    def _client(self, url: str):
        openai = importlib.import_module('openai')
        return openai.OpenAI(base_url=url, api_key=self._key.reveal(), timeout=self.timeout, max_retries=0)

    def __repr__(self):
        options = {'api_key': self.api_key, 'max_concurrency': self.max_concurrency, 'timeout': self.timeout,
                   'max_retries': self.max_retries, 'retry_backoff': self.retry_backoff, 'seed': self.seed,
                   'context_length': self._context_length, 'tokenizer': self.tokenizer,
                   'chat_template_kwargs': self.chat_template_kwargs, 'top_logprobs': self.top_logprobs}
        defaults = {'api_key': None, 'max_concurrency': 16, 'timeout': 60, 'max_retries': 3, 'retry_backoff': 0.5,
                    'seed': 0, 'context_length': None, 'tokenizer': None, 'chat_template_kwargs': None,
                    'top_logprobs': 20}
        return f'OpenAIEngine({self.base_url!r}, {self.model!r}{_kwargs_repr(options, defaults)})'

    # ---- tokens
    @property
    def context_length(self) -> int:
        if self._context_length is None:
            self._context_length = self._ask_context_length()
        return self._context_length

    def _ask_context_length(self) -> int:
        try:
            for entry in self._clients[0].models.list().data:
                if entry.id == self.model:
                    value = getattr(entry, 'max_model_len', None) or (entry.model_extra or {}).get('max_model_len')
                    if value:
                        return int(value)
        except Exception:  # noqa: BLE001 - any failure means "unknown"; the fallback is documented
            pass
        return 8192

    def count_tokens(self, text: str) -> int:
        if self._tok is None:
            return super().count_tokens(text)
        return len(self._tok.encode(text, add_special_tokens=False))

    def truncate(self, text: str, max_tokens: int) -> str:
        if self._tok is None:
            return super().truncate(text, max_tokens)
        ids = self._tok.encode(text, add_special_tokens=False)
        if len(ids) <= max_tokens:
            return text
        return self._tok.decode(ids[:max(0, int(max_tokens))], skip_special_tokens=True)

    # ---- requests
    def _request(self, fn):
        """Run ``fn(client)`` with retries; each attempt goes to the next server in round-robin order.

        Each attempt has an overall deadline of ``timeout`` seconds; connection errors, timeouts, HTTP 429/5xx and
        200 answers that are not a completion are retried (honouring ``Retry-After``), other errors are raised at
        once. Messages never contain the API key.
        """
        openai = importlib.import_module('openai')
        retryable = (openai.APIConnectionError, openai.APITimeoutError, openai.RateLimitError,
                     openai.InternalServerError, openai.APIResponseValidationError, InvalidResponseError,
                     DeadlineExceeded)
        with self._lock:
            start = next(self._next)
        for attempt in range(self.max_retries + 1):
            index = (start + attempt) % len(self._clients)
            with self._lock:
                self.requests_per_server[index] += 1
            message = None
            try:
                return self._with_deadline(index, fn)
            except retryable as ex:  # other errors (400: prompt too long, 404: unknown model, ...) are raised
                if attempt == self.max_retries:
                    message = (f'request to {self._urls[index]} failed after {attempt + 1} attempts '
                               f'({type(ex).__name__}: {str(ex)[:300]}); check that the server is up and serves '
                               f'{self.model!r}, or raise timeout=/max_retries=')
                else:
                    delay = self._retry_delay(ex, attempt)
            except openai.APIError as ex:
                message = f'request to {self._urls[index]} was refused ({type(ex).__name__}: {str(ex)[:300]})'
            if message is not None:  # raised outside the handler: the original (which may quote the key) is dropped
                raise RuntimeError(redact(message, self._key))
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

    def _with_deadline(self, index: int, fn):
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
        return _check_completion(box['value'])

    def _map(self, fn, items):
        items = list(items)
        if not items:
            return []
        if len(items) == 1 or self.max_concurrency == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(items))) as pool:
            return list(pool.map(fn, items))

    def _chat_kwargs(self, conversation: Conversation) -> dict:
        messages, prefill = split_prefill(conversation)
        extra = {}
        if self.chat_template_kwargs:
            extra['chat_template_kwargs'] = dict(self.chat_template_kwargs)
        if prefill:
            messages = messages + [{'role': 'assistant', 'content': prefill}]
            extra.update(add_generation_prompt=False, continue_final_message=True)
        return {'model': self.model, 'messages': messages, 'temperature': 0.0, 'seed': self.seed,
                'extra_body': extra or None}

    def _prompt(self, conversation: Conversation) -> str:
        return render_chat(self._tok, conversation, self.chat_template_kwargs)

    def generate(self, conversations, *, max_tokens, stop=None):
        stop = list(stop) if stop else None

        def one(conversation):
            if self._tok is None:
                response = self._request(lambda c: c.chat.completions.create(
                    max_tokens=int(max_tokens), stop=stop, **self._chat_kwargs(conversation)))
                choice = response.choices[0]
                text = choice.message.content or ''
            else:
                response = self._request(lambda c: c.completions.create(
                    model=self.model, prompt=self._prompt(conversation), max_tokens=int(max_tokens), stop=stop,
                    temperature=0.0, seed=self.seed))
                choice = response.choices[0]
                text = choice.text or ''
            usage = response.usage
            return Generation(text=text, prompt_tokens=getattr(usage, 'prompt_tokens', 0) or 0,
                              completion_tokens=getattr(usage, 'completion_tokens', 0) or 0,
                              finish_reason=choice.finish_reason)
        return self._map(one, conversations)

    def yes_no(self, conversations, *, yes='yes', no='no'):
        def pick(candidates: Dict[str, float]) -> Generation:
            yes_lp = no_lp = None
            for token, logprob in candidates.items():
                word = token.strip().lower()
                if word == yes.lower() and (yes_lp is None or logprob > yes_lp):
                    yes_lp = logprob
                elif word == no.lower() and (no_lp is None or logprob > no_lp):
                    no_lp = logprob
            floor = min(candidates.values()) if candidates else 0.0
            return Generation(text='', probability=softmax_yes(yes_lp, no_lp, floor))

        def one(conversation):
            if self._tok is None:
                response = self._request(lambda c: c.chat.completions.create(
                    max_tokens=1, logprobs=True, top_logprobs=self.top_logprobs, **self._chat_kwargs(conversation)))
                choice = response.choices[0]
                content = (choice.logprobs.content or []) if choice.logprobs else []
                candidates = {}
                if content:
                    candidates = {t.token: float(t.logprob) for t in content[0].top_logprobs or []}
                    candidates.setdefault(content[0].token, float(content[0].logprob))
                text = choice.message.content or ''
            else:
                response = self._request(lambda c: c.completions.create(
                    model=self.model, prompt=self._prompt(conversation), max_tokens=1, temperature=0.0,
                    seed=self.seed, logprobs=self.top_logprobs))
                choice = response.choices[0]
                tops = (choice.logprobs.top_logprobs or []) if choice.logprobs else []
                candidates = {t: float(lp) for t, lp in (tops[0] or {}).items()} if tops else {}
                text = choice.text or ''
            generation = pick(candidates)
            generation.text = text
            usage = response.usage
            generation.prompt_tokens = getattr(usage, 'prompt_tokens', 0) or 0
            generation.completion_tokens = getattr(usage, 'completion_tokens', 0) or 0
            generation.finish_reason = choice.finish_reason
            return generation
        return self._map(one, conversations)
