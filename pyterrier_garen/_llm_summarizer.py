"""Group summaries written by an LLM (JSON answers), with a repair round and an extractive fallback."""
from __future__ import annotations

import hashlib
import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ._engines import Conversation, Engine, UsageStats, generate_each, truncate_each
from ._params import Rebuildable, check_int, check_optional_positive, check_positive
from ._prompts import PromptTemplate, cap_reply, clean_text, drop_think_blocks, fenced_blocks
from ._summaries import REQUEST_FAILED, UNUSABLE_REPLY, ExtractiveSummarizer, GroupDocs, Summarizer

__all__ = ['LLMSummarizer', 'extract_json', 'parse_summary']

_MAX_STARTS = 64  # candidate '{' positions tried before giving up


def extract_json(text: Any) -> Dict[str, Any]:
    """The first JSON object in an LLM reply.

    Tries, in order: the whole reply; the content of each code fence; the first ``{`` from which a complete JSON
    object can be decoded (so leading and trailing prose are ignored). ``<think>...</think>`` blocks are dropped
    first. Only ``ValueError`` is raised, for any input.

    Args:
        text: the reply.

    Returns:
        The decoded object (a dict).

    Raises:
        ValueError: no JSON object could be decoded.
    """
    try:
        text = drop_think_blocks(cap_reply(text))  # linear time on any reply (see _prompts)
        lower = text.lower()
        if '</think>' in lower:
            text = text[lower.rfind('</think>') + len('</think>'):]
        decoder = json.JSONDecoder()
        candidates = [text.strip()] + fenced_blocks(text)
        for candidate in candidates:
            try:
                value = json.loads(candidate)
            except Exception:  # noqa: BLE001 - JSON errors, recursion limits, huge numbers: all "not JSON"
                continue
            if isinstance(value, dict):
                return value
        start = text.find('{')
        tries = 0
        while start != -1 and tries < _MAX_STARTS:
            tries += 1
            try:
                value, _ = decoder.raw_decode(text, start)
            except Exception:  # noqa: BLE001
                value = None
            if isinstance(value, dict):
                return value
            start = text.find('{', start + 1)
    except Exception as ex:  # noqa: BLE001 - anything unexpected is reported as "no JSON"
        raise ValueError(f'could not read the reply ({type(ex).__name__})') from None
    raise ValueError('no JSON object found in the reply')


def parse_summary(text: Any) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """A summary record from a reply: ``(record, None)``, or ``(None, error)`` when it cannot be used.

    A usable reply is a JSON object whose ``concept`` and ``summary`` are non-empty strings; ``common_theme`` (a
    string) and ``fingerprints`` (a list) are kept when present. Never raises.
    """
    try:
        value = extract_json(text)
    except ValueError as ex:
        return None, str(ex)
    concept, summary = value.get('concept'), value.get('summary')
    problems = [f'"{key}" must be a non-empty string' for key, v in (('concept', concept), ('summary', summary))
                if not isinstance(v, str) or not v.strip()]
    if problems:
        return None, '; '.join(problems)
    theme = value.get('common_theme')
    fingerprints = value.get('fingerprints')
    return {'concept': ' '.join(concept.split()), 'summary': ' '.join(summary.split()),
            'common_theme': theme.strip() if isinstance(theme, str) else '',
            'fingerprints': fingerprints if isinstance(fingerprints, list) else []}, None


class LLMSummarizer(Rebuildable, Summarizer, UsageStats):
    """Group summaries written by an LLM, for :meth:`GroupCorpusGraph.summarize`.

    The prompt (``prompts/summary.txt``) shows the group's documents and asks for one JSON object with a fingerprint
    per document, the common theme, a 1-5 word ``concept`` and a 4-8 sentence ``summary``; only ``concept`` and
    ``summary`` are used for navigation, the other fields are stored for analysis.

    All groups of a :meth:`summarize` call go to the engine in one call (or calls of ``batch_size`` groups). A reply
    that is not usable JSON gets ``retries`` repair rounds (batched: the group's prompt, the failed reply and a
    message naming the problem; the documents are cut further so that this longer conversation still fits the
    context with ``max_tokens`` to answer). If it is still unusable, or its engine request failed (after the
    engine's own retries), the record comes from :class:`ExtractiveSummarizer` with ``fallback: True``, the
    ``error`` and its ``fallback_reason`` (``'request_failed'``: the next run retries the group;
    ``'unusable_reply'``: kept, greedy decoding would answer the same), and :attr:`fallbacks` (and :attr:`failed`)
    is incremented: one bad group never stops the others. A refusal that no retry can fix (a wrong API key, HTTP
    401/403) is raised at once instead. :meth:`GroupCorpusGraph.summarize` stops with an error when more than
    ``max_failed_share`` of the groups failed.
    Greedy decoding makes the result a function of the engine and the groups.

    Attributes:
        fallbacks: number of groups summarised by the extractive fallback so far (reset by :meth:`reset_stats`).
        repaired: number of groups whose repair round succeeded.
        failed: number of groups whose engine request failed (they are among the fallbacks).
    """

    def __init__(self, engine: Engine, *, max_doc_tokens: int = 512, max_tokens: int = 2048,
                 batch_size: Optional[int] = 32, retries: int = 1):
        """
        Args:
            engine: the LLM engine (shared with the reranker and navigator).
            max_doc_tokens: most tokens per document in the prompt (less when a large group would not fit the
                context; groups too large even at 32 tokens per document show their first documents only).
            max_tokens: most tokens generated per summary.
            batch_size: groups per engine call; None: all groups of a :meth:`summarize` call in one engine call.
            retries: repair rounds for unusable replies before the extractive fallback.
        """
        check_int('retries', retries, low=0)
        check_optional_positive(batch_size=batch_size)
        check_positive(max_doc_tokens=max_doc_tokens, max_tokens=max_tokens)
        self.engine = engine
        self.max_doc_tokens = max_doc_tokens
        self.max_tokens = max_tokens
        self.batch_size = batch_size
        self.retries = retries
        self.template = PromptTemplate('summary')
        self.repair_template = PromptTemplate('summary_repair')
        self.fallback = ExtractiveSummarizer()
        self.reset_stats()

    @property
    def prompt_hash(self) -> str:
        """SHA-256 prefix over the summary prompt and the repair prompt."""
        text = self.template.text + '\0' + self.repair_template.text
        return hashlib.sha256(text.encode('utf8')).hexdigest()[:12]

    def config(self) -> Dict[str, Any]:
        """What identifies these summaries: the model, the prompt, the answer and document lengths, and under
        ``engine`` the engine's settings that change what it writes (``Engine.output_settings``: a context given,
        the dtype, the chat template; left out when there are none, as before they were recorded)."""
        config = {'name': 'llm', 'model': self.engine.model, 'prompt_hash': self.prompt_hash,
                  'max_doc_tokens': self.max_doc_tokens, 'max_tokens': self.max_tokens}
        settings = getattr(self.engine, 'output_settings', None)
        settings = settings() if callable(settings) else {}
        if settings:
            config['engine'] = settings
        return config

    def reset_stats(self) -> None:
        UsageStats.reset_stats(self)
        self.fallbacks = 0
        self.repaired = 0
        self.failed = 0

    def stats(self) -> Dict[str, int]:
        return {**UsageStats.stats(self), 'fallbacks': self.fallbacks, 'repaired': self.repaired,
                'failed': self.failed}

    def conversation(self, docs: Sequence[Dict[str, Any]], *, reserve: int = 0) -> Conversation:
        """The prompt for one group's documents, truncated to fit the context with ``max_tokens`` to answer and
        ``reserve`` more tokens (for the messages of a repair round).

        Each document's ``title: text`` is cut to an equal share of the room (at most ``max_doc_tokens``); a group
        too large for 48 tokens per document shows its first documents only. The whole prompt is then counted with
        the engine's tokenizer and the share lowered until it fits (identifiers, titles and separators included).
        """
        context = self.engine.context_length
        limit = context - self.max_tokens - int(reserve)
        overhead = self.engine.count_conversation_tokens(self.template.messages(n=len(docs), docs=''))
        if not reserve and limit - overhead < 8:  # every request would be refused: say why once, not per group
            raise ValueError(f'{self!r}: the summary prompt takes {overhead} tokens before any document and '
                             f'max_tokens={self.max_tokens} are kept for the answer, more than the engine\'s context '
                             f'of {context} tokens holds; lower max_tokens= or serve the model with a context of at '
                             f'least {overhead + self.max_tokens + 48 * max(1, len(docs))} tokens (vllm serve '
                             '--max-model-len, or max_model_len= in process; the summarize command: --max-tokens, '
                             '--max-model-len)')
        room = max(40, limit - overhead)
        shown = list(docs)
        if room // max(1, len(shown)) < 48:
            shown = shown[:max(1, room // 48)]
        per_doc = max(8, min(self.max_doc_tokens, room // max(1, len(shown))))
        while True:
            bodies = []
            for doc in shown:
                title, text = clean_text(doc.get('title')), clean_text(doc.get('text'))
                bodies.append(f'{title}: {text}' if title else text)
            lines = [f'[{k}] ({clean_text(doc.get("docno"))}) {body}' for k, (doc, body)
                     in enumerate(zip(shown, truncate_each(self.engine, bodies, [per_doc] * len(bodies)), strict=True),
                                  start=1)]
            conversation = self.template.messages(n=len(shown), docs='\n\n'.join(lines))
            excess = self.engine.count_conversation_tokens(conversation) - limit
            if excess <= 0 or per_doc <= 8:
                return conversation
            per_doc = max(8, per_doc - -(-excess // len(shown)) - 1)

    def _generate(self, conversations: List[Conversation]) -> Tuple[List[Optional[str]], List[Optional[str]]]:
        """Replies (None where the request failed) and the failures' error texts."""
        size = self.batch_size or max(1, len(conversations))
        texts, errors = [], []
        for start in range(0, len(conversations), size):
            batch = conversations[start:start + size]
            generations, failures = generate_each(self.engine, batch, max_tokens=self.max_tokens)
            self._record_each(generations)
            texts.extend(None if g is None else g.text for g in generations)
            errors.extend(failures)
        return texts, errors

    def repair_conversation(self, docs: Sequence[Dict[str, Any]], reply: str,
                            error: str) -> Optional[Conversation]:
        """The group's prompt (cut to make room), the unusable reply and the repair message; None when the context
        has no room for them with ``max_tokens`` to answer (the group then keeps its unusable reply).

        The reply is cut to at most half of the room the prompt's own text, the repair message and the answer
        leave: a reply that ran to ``max_tokens`` (the usual unusable one) took the whole room, so the repair request
        was longer than the context and failed, which counted the group as a failed request (retried on every run).
        """
        repair = self.repair_template.messages(error=error)
        overhead = self.engine.count_conversation_tokens(self.template.messages(n=len(docs), docs=''))
        room = (self.engine.context_length - self.max_tokens - overhead
                - self.engine.count_conversation_tokens([{'role': 'assistant', 'content': ''}] + repair))
        if room < 2 * 48:  # not a document's share (see conversation) beside a cut reply
            return None
        if self.engine.count_tokens(reply) > room // 2:
            reply = self.engine.truncate(reply, room // 2)
        answer = {'role': 'assistant', 'content': reply}
        reserve = self.engine.count_conversation_tokens([answer] + repair)
        return self.conversation(docs, reserve=reserve) + [answer] + repair

    def summarize(self, groups: Sequence[GroupDocs]) -> List[Dict[str, Any]]:
        """One record per group (same order): ``concept``, ``summary``, ``common_theme``, ``fingerprints``,
        and ``fallback``/``error`` when the extractive fallback was used."""
        if not groups:
            return []
        conversations = [self.conversation(group['docs']) for group in groups]
        replies, failures = self._generate(conversations)
        records: List[Optional[Dict[str, Any]]] = [None] * len(groups)
        errors: List[Optional[str]] = [None] * len(groups)
        dead = set()  # groups whose request failed: no reply to repair
        for i, (reply, failure) in enumerate(zip(replies, failures, strict=True)):
            if reply is None:
                dead.add(i)
                errors[i] = f'engine request failed: {failure}'
            else:
                records[i], errors[i] = parse_summary(reply)
        for _ in range(self.retries):
            todo = [i for i, r in enumerate(records) if r is None and i not in dead]
            if not todo:
                break
            repairs = [self.repair_conversation(groups[i]['docs'], replies[i], errors[i]) for i in todo]
            todo = [i for i, repair in zip(todo, repairs, strict=True) if repair is not None]  # None: no room
            repairs = [repair for repair in repairs if repair is not None]
            if not todo:
                break
            answers, failures = self._generate(repairs)
            for i, reply, failure in zip(todo, answers, failures, strict=True):
                if reply is None:
                    dead.add(i)
                    errors[i] = f'engine request failed in the repair round: {failure}'
                    continue
                record, error = parse_summary(reply)
                replies[i] = reply
                if record is not None:
                    records[i], errors[i] = record, None
                    self.repaired += 1
                else:
                    errors[i] = error
        result = []
        for i, (group, record, error) in enumerate(zip(groups, records, errors, strict=True)):
            if record is None:
                self.fallbacks += 1
                record = {**self.fallback.summarize_one(group['docs']), 'fallback': True,
                          'fallback_reason': REQUEST_FAILED if i in dead else UNUSABLE_REPLY, 'error': error}
            result.append(record)
        self.failed += len(dead)
        return result
