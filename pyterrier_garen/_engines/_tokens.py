"""How engines render prompts and count and cut text.

Every component that cuts a text to fit a context (the navigator's document, the listwise reranker's window, the
summariser's group prompt) asks its engine, and the engine answers with the model's own tokenizer wherever it can:

1. a tokenizer in this process (:class:`VLLMEngine`, :class:`TransformersEngine`, or ``OpenAIEngine(tokenizer=...)``
   with a tokenizer folder or name the user gives): :class:`HFTokenizerMixin`;
2. the server's own tokenizer, through the ``/tokenize`` and ``/detokenize`` endpoints a vLLM OpenAI-compatible
   server offers: :class:`ServerTokenizer` (one request per text, sent concurrently, results cached);
3. only as a last resort, an estimate of characters per token (:func:`estimate_count`, :func:`estimate_truncate`),
   which the engine warns about once.

Cutting is the same on every route: the text is encoded without adding special tokens, the first ``max_tokens`` ids
are kept and decoded back (as vLLM's ``/detokenize`` does), so a server and an in-process engine of the same model cut a
document at the same token.
"""
from __future__ import annotations

import math
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence

Conversation = List[Dict[str, str]]


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


# ---- the last resort: an estimate ----------------------------------------------------------------------------------

def estimate_count(text: str, chars_per_token: float) -> int:
    """Tokens in ``text`` estimated at ``chars_per_token`` characters each."""
    return math.ceil(len(text) / chars_per_token)


def estimate_truncate(text: str, max_tokens: int, chars_per_token: float) -> str:
    """``text`` cut to about ``max_tokens`` estimated tokens, at a word boundary when one is in the second half."""
    limit = max(0, int(max_tokens * chars_per_token))
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(' ')
    return cut[:space] if space >= limit // 2 else cut


# ---- a tokenizer in this process -------------------------------------------------------------------------------------

def load_tokenizer(name: str, what: str) -> Any:
    """A Hugging Face tokenizer from a local folder or the local cache, never downloaded."""
    from ._base import _require
    transformers = _require('transformers', what, extra='cpu')
    try:
        return transformers.AutoTokenizer.from_pretrained(name, local_files_only=True)
    except (OSError, ValueError) as ex:
        raise ValueError(f'{what}: cannot load the tokenizer {name!r} from a local folder or the Hugging Face cache '
                         f'({type(ex).__name__}: {str(ex)[:200]}); pass the folder the model was saved to, or '
                         'download it first (e.g. `hf download <model>`): it is not downloaded here') from ex


def hf_truncate(tokenizer: Any, text: str, max_tokens: int) -> str:
    """``text`` cut to its first ``max_tokens`` tokens by ``tokenizer`` (unchanged when it has no more).

    The kept ids are decoded as vLLM's ``/detokenize`` decodes them (special tokens kept), so a cut text is the same
    on every route, and cutting never removes text that a text short enough to be kept whole would keep.
    """
    ids = tokenizer.encode(text, add_special_tokens=False)
    if len(ids) <= max_tokens:
        return text
    return whole_characters(lambda keep: tokenizer.decode(ids[:keep]), text, max(0, int(max_tokens)))


def whole_characters(decode: Callable[[int], Optional[str]], text: str, keep: int) -> Optional[str]:
    """``decode(keep)``, the text of the first ``keep`` ids, without a character cut in two: a byte-level tokenizer
    spreads a character (an emoji, most CJK) over several tokens, and a cut between them decoded to a U+FFFD
    replacement character, which was not the document's and may take more tokens than the part it replaced (up to
    3 ids are given back, on every route alike; None when ``decode`` says None)."""
    cut = decode(keep)
    for _ in range(3):
        if cut is None or keep <= 0 or not cut.endswith('\ufffd') or '\ufffd' in text:
            break
        keep -= 1
        cut = decode(keep)
    return cut


class HFTokenizerMixin:
    """count_tokens / truncate / count_conversation_tokens with a Hugging Face tokenizer in ``self.tokenizer``."""
    tokenizer: Any
    chat_template_kwargs: Optional[dict] = None

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False))

    def count_conversation_tokens(self, conversation: Conversation) -> int:
        """Exactly the tokens of the prompt the engine sends (chat template included)."""
        return len(self.tokenizer.encode(render_chat(self.tokenizer, conversation, self._template_kwargs()),
                                         add_special_tokens=False))

    def _template_kwargs(self) -> Optional[dict]:
        """What the chat template is rendered with: ``chat_template_kwargs`` (and a template of the engine's own)."""
        return self.chat_template_kwargs

    def truncate(self, text: str, max_tokens: int) -> str:
        return hf_truncate(self.tokenizer, text, max_tokens)

    def truncate_many(self, texts: Sequence[str], max_tokens: int) -> List[str]:
        return [hf_truncate(self.tokenizer, text, max_tokens) for text in texts]

    def _single_token_id(self, token: str) -> int:
        ids = self.tokenizer.encode(token, add_special_tokens=False)
        if len(ids) != 1:
            from ._base import answer_token_error
            raise answer_token_error(token, ids, self.model)
        return ids[0]

    def _answer_ids(self, yes: str, no: str) -> tuple:
        """The token ids of the two answer words of yes/no scoring (:class:`~._base.AnswerTokenError` if either is
        not one token, or both are the same)."""
        from ._base import check_answer_pair
        yes_id, no_id = self._single_token_id(yes), self._single_token_id(no)
        check_answer_pair(yes_id, no_id, yes, no, self.model)
        return yes_id, no_id


# ---- the server's tokenizer ------------------------------------------------------------------------------------------

class ServerTokenizer:
    """Counts and cuts with a server's own tokenizer: vLLM's ``/tokenize`` and ``/detokenize`` endpoints.

    ``post(path, body)`` sends one request (with the engine's retries and deadline) and gives the answer's JSON, or
    None when the server has no such endpoint (then :attr:`available` turns False and every method gives None, for
    the engine to fall back). ``map(fn, items)`` runs requests concurrently (the engine's thread pool). The ids of
    texts are cached (the same document is often cut for several queries and windows).

    Args:
        post: sends a request to the server's root (``/tokenize``, ``/detokenize``).
        map: runs ``fn`` over ``items`` concurrently, in order.
        model: the served model name.
        chat_template_kwargs: extra chat template variables, as sent with chat requests.
        cache_size: texts whose ids are kept.
    """

    def __init__(self, post: Callable[[str, dict], Optional[dict]], map: Callable, model: str,  # noqa: A002
                 chat_template_kwargs: Optional[dict] = None, cache_size: int = 4096):
        self._post, self._map = post, map
        self.model = model
        self.chat_template_kwargs = chat_template_kwargs
        self.cache_size = cache_size
        self.available: Optional[bool] = None  # None: not asked yet
        self._ids: Dict[str, List[int]] = {}
        self._lock = threading.Lock()

    def _ask(self, path: str, body: dict) -> Optional[dict]:
        if self.available is False:
            return None
        answer = self._post(path, {'model': self.model, **body})
        if answer is None or not isinstance(answer, dict):
            self.available = False
            return None
        self.available = True
        return answer

    def _encode(self, text: str) -> Optional[List[int]]:
        with self._lock:
            if text in self._ids:
                return self._ids[text]
        answer = self._ask('/tokenize', {'prompt': text, 'add_special_tokens': False})
        if answer is None or not isinstance(answer.get('tokens'), list):
            self.available = False
            return None
        ids = [int(t) for t in answer['tokens']]
        with self._lock:
            if len(self._ids) >= self.cache_size:
                self._ids.clear()
            self._ids[text] = ids
        return ids

    def encode_many(self, texts: Sequence[str]) -> Optional[List[List[int]]]:
        """The ids of each text (no special tokens added), or None when the server cannot tokenize."""
        texts = list(texts)
        if not texts:
            return []
        if self.available is False:
            return None
        if self.available is None:  # ask once before sending a whole batch to a server that may not know /tokenize
            if self._encode(texts[0]) is None:
                return None
        result = self._map(self._encode, texts)
        return None if any(ids is None for ids in result) else result

    def _decode(self, ids: List[int]) -> Optional[str]:
        answer = self._ask('/detokenize', {'tokens': list(ids)})
        return None if answer is None or not isinstance(answer.get('prompt'), str) else answer['prompt']

    def truncate_many(self, texts: Sequence[str], max_tokens: int) -> Optional[List[str]]:
        """Each text cut to its first ``max_tokens`` tokens, or None when the server cannot tokenize."""
        texts = list(texts)
        encoded = self.encode_many(texts)
        if encoded is None:
            return None
        limit = max(0, int(max_tokens))
        long = [k for k, ids in enumerate(encoded) if len(ids) > limit]
        decoded = self._map(lambda k: whole_characters(lambda keep: self._decode(encoded[k][:keep]), texts[k], limit),
                            long)
        if any(text is None for text in decoded):
            return None
        result = list(texts)
        for k, text in zip(long, decoded, strict=True):
            result[k] = text
        return result

    def count_conversation(self, conversation: Conversation) -> Optional[int]:
        """Tokens of the prompt the server renders for ``conversation`` (as its chat endpoint does), or None."""
        messages, prefill = split_prefill(conversation)
        body: Dict[str, Any] = {'messages': messages, 'add_special_tokens': False}
        if prefill:
            body.update(messages=messages + [{'role': 'assistant', 'content': prefill}],
                        add_generation_prompt=False, continue_final_message=True)
        if self.chat_template_kwargs:
            body['chat_template_kwargs'] = dict(self.chat_template_kwargs)
        answer = self._ask('/tokenize', body)
        if answer is None:
            return None
        if isinstance(answer.get('count'), int):
            return int(answer['count'])
        return len(answer['tokens']) if isinstance(answer.get('tokens'), list) else None
