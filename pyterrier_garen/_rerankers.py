"""Rerankers: document-level transformers that order a window.

:class:`VectorScorer` is the CPU default (MiniLM cosine over stored vectors, pointwise); :class:`ListwiseReranker`
asks an LLM engine for a permutation of each sliding window (RankLLM style) and turns it into scores. The parsing of
listwise answers lives here too.
"""
from __future__ import annotations

import bisect
import re
import warnings
from typing import Any, Dict, List, Optional, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from ._driver import window_starts
from ._engines import Conversation, Engine, UsageStats, generate_each, truncate_each
from ._frames import numeric_order
from ._params import Rebuildable, check_choice, check_int, check_optional_positive, check_positive
from ._prompts import (QUERY_SHARE, PromptTemplate, cap_reply, clean_text, drop_think_blocks, fit_query,
                       warn_cut_queries, warn_empty_texts)
from ._vectors import VectorComponent

__all__ = ['VectorScorer', 'ListwiseReranker', 'parse_ranking', 'check_ranking']

# ---------------------------------------------------------------------------------------------------------------------
# parsing listwise answers

_ID = re.compile(r'\[\s*(\d{1,9})\s*\]')
_CHAIN = re.compile(r'\[\s*\d{1,9}\s*\](?:\s*(?:>|&gt;)\s*\[\s*\d{1,9}\s*\])+')
_RANKING_MARK = re.compile(r'document\s+ranking\s*\]?\s*:?', re.I)  # no leading \s*: linear
_ANSWER_OPEN = re.compile(r'<answer>', re.I)
_ANSWER_CLOSE = re.compile(r'</answer>', re.I)


def _answer_text(text: str) -> str:
    """The part of a reply that holds the ranking: reasoning blocks, traces and tags removed.

    Linear time on any reply: the tail of at most ``MAX_REPLY_CHARS`` is read, whitespace runs are collapsed first
    (so no ``\\s*`` can scan far) and think blocks are removed by a string scan.
    """
    text = drop_think_blocks(' '.join(cap_reply(text).split()))
    lower = text.lower()
    if '</think>' in lower:  # the opening tag was part of the prompt
        text = text[lower.rfind('</think>') + len('</think>'):]
    elif '<think>' in lower:  # reasoning that never finished: nothing after it is an answer
        text = text[:lower.find('<think>')]
    # the last ranking mark that an identifier follows, and in what is left the last answer tags that hold one: a
    # mark or tag with nothing after it (prose naming the "document ranking" after the ranking, a repeated
    # <answer>) is no answer, and it made the whole ranking be ignored
    ids = [m.start() for m in _ID.finditer(text)]
    marks = [m.end() for m in _RANKING_MARK.finditer(text) if ids and m.end() <= ids[-1]]
    if marks:
        text = text[marks[-1]:]
        ids = [m.start() for m in _ID.finditer(text)]
    closes = [m.start() for m in _ANSWER_CLOSE.finditer(text)]
    for opening in reversed(list(_ANSWER_OPEN.finditer(text))):
        k = bisect.bisect_left(closes, opening.end())
        end = closes[k] if k < len(closes) else len(text)
        k = bisect.bisect_left(ids, opening.end())
        if k < len(ids) and ids[k] < end:
            return text[opening.end():end]
    return text


def check_ranking(text: Any, num_docs: int) -> Tuple[List[int], Optional[str]]:
    """Parse a listwise answer and say whether it was well-formed.

    The reply's ranking part is found by dropping ``<think>...</think>`` blocks, everything before the last
    ``[Document Ranking]`` mark and outside the last ``<answer>`` tags that an identifier follows; in it, the longest
    ``[i] > [j] > ...`` chain (the last of equally long ones) is read, or every ``[i]`` when there is no chain.
    Identifiers are 1-based; repeated and out-of-range ones are dropped and missing ones appended in input order.
    Never raises.

    Args:
        text: the model's reply (anything; non-strings are converted with ``str``).
        num_docs: number of documents in the window, ``n``.

    Returns:
        ``(permutation, problem)``: a 0-based permutation of ``range(n)`` (best first), and None when the answer
        named every document exactly once, else a short description of what was wrong.
    """
    num_docs = max(0, int(num_docs))
    try:
        answer = _answer_text(text if isinstance(text, str) else str(text))
    except Exception:  # noqa: BLE001 - a reply must never crash a run
        answer = ''
    chains = [m.group(0) for m in _CHAIN.finditer(answer)]
    if chains:
        longest = max(len(_ID.findall(c)) for c in chains)
        answer = [c for c in chains if len(_ID.findall(c)) == longest][-1]
    ids = [int(i) - 1 for i in _ID.findall(answer)]
    seen, permutation, out_of_range, repeated = set(), [], 0, 0
    for i in ids:
        if not 0 <= i < num_docs:
            out_of_range += 1
        elif i in seen:
            repeated += 1
        else:
            seen.add(i)
            permutation.append(i)
    missing = num_docs - len(permutation)
    permutation.extend(i for i in range(num_docs) if i not in seen)
    problems = []
    if num_docs and not ids:
        problems.append('no [i] identifiers')
    else:
        if out_of_range:
            problems.append(f'{out_of_range} out-of-range identifiers')
        if repeated:
            problems.append(f'{repeated} repeated identifiers')
        if missing:
            problems.append(f'{missing} of {num_docs} documents missing')
    return permutation, ('; '.join(problems) or None)


def parse_ranking(text: Any, num_docs: int) -> List[int]:
    """A listwise answer as a 0-based permutation of ``range(num_docs)``, best first. Never raises.

    See :func:`check_ranking` (which also reports whether the answer was well-formed).

    Args:
        text: the model's reply, e.g. ``'<answer> [2] > [1] > [3] </answer>'``.
        num_docs: number of documents in the window.

    Returns:
        A permutation of ``range(num_docs)``, e.g. ``[1, 0, 2]``.
    """
    return check_ranking(text, num_docs)[0]


# ---------------------------------------------------------------------------------------------------------------------
# embedding reranker (CPU default)

class VectorScorer(VectorComponent):
    """Pointwise reranker: ``score = cos(query vector, stored document vector)``.

    Required input columns: ``qid, query, docno``. Output: the input rows with ``score`` and ``rank``.
    Documents missing from the vector index score 0 (counted in :attr:`missing_vectors`, warned once); a call in
    which none of ten or more documents has a vector is an error (vectors of another corpus).

    Args:
        vectors: a ``pyterrier_dr.FlexIndex`` holding the corpus vectors (see :func:`encode_corpus`).
        encoder: the query encoder (``encode_queries``); defaults to the packaged MiniLM.
    """
    #: documents scored 0 because the vectors do not hold them (over every call)
    missing_vectors: int = 0

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.check_rows(inp)
        if len(inp) == 0:
            return inp.assign(score=pd.Series(dtype=float), rank=pd.Series(dtype=int))
        docnos = [str(d) for d in inp['docno']]
        found = self._found_in_vectors(docnos)
        if found == 0 and len(docnos) >= 10:
            raise ValueError(f'{self!r}: none of the {len(docnos)} documents to score is in the vectors '
                             f'{self.vectors!r} (e.g. {docnos[:3]}); the vectors are of another corpus than the '
                             'first stage, encode this corpus (encode_corpus) and pass that FlexIndex')
        if found < len(docnos):
            first = self.missing_vectors == 0
            self.missing_vectors += len(docnos) - found
            if first:
                warnings.warn(f'{self!r}: {len(docnos) - found} of {len(docnos)} documents have no stored vector and '
                              'score 0 (counted in missing_vectors; warned once)', stacklevel=2)
        qvecs = self._queries(list(inp['query']))
        dvecs = self._doc_vectors(docnos)
        return self.with_scores(inp, np.einsum('ij,ij->i', qvecs, dvecs))


# ---------------------------------------------------------------------------------------------------------------------
# listwise reranker

class ListwiseReranker(Rebuildable, pt.Transformer, UsageStats):
    """Listwise LLM reranker with a sliding window (RankGPT style), batched across queries.

    Required input columns: ``['qid', 'query', 'docno', text_field]``; ``rank`` (if present) gives the order of each
    query's list, else the input order is used. Output: the input rows, with ``score`` encoding the new order
    (``n - position``, strictly decreasing) and ``rank``.

    A list of at most ``window`` documents is ordered in one prompt. A longer list is ordered by windows of
    ``window`` documents moving from the bottom of the list to the top by ``stride``, each window re-ordering its
    documents in place. The windows of all queries at the same sliding position go to the engine in ONE call.

    Each document is cut to a token budget so that the prompt and the answer fit the engine's context:
    ``overhead + n * (doc + line) + max_tokens <= context_length``, ``line`` being the tokens of a line's identifier
    and line break (:meth:`line_tokens`, at least 4); ``max_doc_tokens`` caps the budget further.
    Malformed answers never stop a run: the parsed part is used, missing documents keep their relative order after
    it, :attr:`malformed` is incremented and a warning names the query. A request that fails (after the engine's own
    retries) costs only its window: the window keeps its order, :attr:`failed` is incremented and a warning names the
    query and the error.

    Attributes:
        malformed: number of malformed answers so far (reset by :meth:`reset_stats`).
        failed: number of windows left in their order because the engine request failed.
        calls / prompts / prompt_tokens / completion_tokens: usage counters (see :meth:`stats`).
    """
    #: its scores only order the documents of one call (window searches read it, see ``final_order``)
    listwise = True

    def __init__(self, engine: Engine, *, prompt: str = 'rankllm', window: int = 20, stride: int = 10,
                 max_doc_tokens: Optional[int] = None, text_field: str = 'text', max_tokens: Optional[int] = None,
                 verbose: bool = False):
        """
        Args:
            engine: the LLM engine (shared with the navigator and summariser).
            prompt: ``'rankllm'`` (answer ``[i] > [j] > ...`` in answer tags) or ``'reasoning'`` (reasoning steps,
                then the ranking line).
            window: documents per prompt, ``w``.
            stride: step between two sliding windows (``stride <= window``).
            max_doc_tokens: most tokens per document; None: as many as the context allows.
            text_field: the column holding document text.
            max_tokens: most tokens generated per answer; None: ``6 * window + 32`` for ``rankllm``,
                ``2048 + 6 * window`` for ``reasoning``.
            verbose: show a progress bar over sliding positions.
        """
        check_choice('prompt', prompt, ('rankllm', 'reasoning'))
        check_positive(window=window, stride=stride)
        check_int('stride', stride, high=window, note='at most window, or documents between windows are skipped')
        check_optional_positive(max_doc_tokens=max_doc_tokens, max_tokens=max_tokens)
        self.engine = engine
        self.prompt = prompt
        self.window = window
        self.stride = stride
        self.max_doc_tokens = max_doc_tokens
        self.text_field = text_field
        self.max_tokens = max_tokens
        self.verbose = verbose
        self.template = PromptTemplate(prompt)
        self.reset_stats()

    @property
    def prompt_hash(self) -> str:
        """SHA-256 prefix of the prompt file in use."""
        return self.template.hash

    def reset_stats(self) -> None:
        UsageStats.reset_stats(self)
        self.malformed = 0
        self.failed = 0
        self.cut_queries = 0
        self.empty_texts = 0
        self._said_empty = False

    def stats(self) -> Dict[str, int]:
        return {**UsageStats.stats(self), 'malformed': self.malformed, 'failed': self.failed}

    def generation_tokens(self) -> int:
        """Most tokens generated per answer."""
        if self.max_tokens is not None:
            return int(self.max_tokens)
        return 6 * self.window + 32 if self.prompt == 'rankllm' else 2048 + 6 * self.window

    def doc_fit(self, query: str, num_docs: int) -> int:
        """Tokens per document that fit the context in a window of ``num_docs`` for ``query`` (may be < 1).

        Each document line also costs its identifier and line break (:meth:`line_tokens`, at least 4 tokens)."""
        overhead = self.engine.count_conversation_tokens(self.template.messages(query=query, n=num_docs, docs=''))
        return (self.engine.context_length - overhead - self.generation_tokens()) // max(1, num_docs) \
            - self.line_tokens(num_docs)

    def line_tokens(self, num_docs: int) -> int:
        """Tokens per document line besides the document (``[i] `` and the line break) in a window of ``num_docs``,
        as the engine counts them: at least 4. A tokenizer that writes each digit as a token (Qwen's) takes 5 for
        ``[10]`` to ``[99]``, so a window of 20 long documents overflowed the room kept for the answer by 11 tokens."""
        context = int(self.engine.context_length)
        known = self.__dict__.setdefault('_line_tokens', {})
        if (num_docs, context) not in known:
            count = self.engine.count_conversation_tokens
            framing = (count(self.conversation('', [''] * num_docs))
                       - count(self.template.messages(query='', n=num_docs, docs='')))
            known[num_docs, context] = max(4, -(-framing // max(1, num_docs)))
        return known[num_docs, context]

    def check_room(self, sizes) -> None:
        """Raise, before any request, when the prompt of a window of ``n`` documents (``n`` in ``sizes``) and
        ``max_tokens`` for the answer leave no room for one token of each document in the engine's context, whatever
        the query: every window would be refused (each was counted as failed and kept its order, so a whole run gave
        the first stage's ranking under a warning per call)."""
        context, answer = int(self.engine.context_length), self.generation_tokens()
        checked = self.__dict__.setdefault('_room_checked', set())
        for n in sorted(set(sizes), reverse=True):
            if (n, context, answer) in checked:
                continue
            overhead = self.engine.count_conversation_tokens(self.template.messages(query='', n=n, docs=''))
            if context - overhead - answer < 5 * n:  # 16 tokens per document and the query's share: the least to ask
                needed = -(-(overhead + answer + 20 * n) * QUERY_SHARE // (QUERY_SHARE - 1))
                raise ValueError(f'{self!r}: the {self.prompt} prompt for a window of {n} documents takes {overhead} '
                                 f'tokens before any query or document and max_tokens={answer} are kept for the '
                                 f'answer, which leaves no room for the documents in the engine\'s context of '
                                 f'{context} tokens; lower window= or max_tokens=, or give the engine a context of at '
                                 f'least {needed} '
                                 'tokens (max_model_len=, vllm serve --max-model-len)')
            checked.add((n, context, answer))

    def doc_budget(self, query: str, num_docs: int) -> int:
        """Tokens allowed per document: what fits the context (at least 16), capped by ``max_doc_tokens``."""
        budget = max(16, self.doc_fit(query, num_docs))
        return budget if self.max_doc_tokens is None else min(int(self.max_doc_tokens), budget)

    def conversation(self, query: str, texts: List[str]) -> Conversation:
        """The prompt for ``query`` and the (already truncated) window texts."""
        docs = '\n'.join(f'[{i}] {t}' for i, t in enumerate(texts, start=1))
        return self.template.messages(query=query, n=len(texts), docs=docs)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=['qid', 'query', 'docno', self.text_field], context=self)
        if len(inp) == 0:
            out = inp.copy().assign(score=pd.Series(dtype=float))
            return pt.model.add_ranks(out)
        frame = (numeric_order(inp, self, 'rank') if 'rank' in inp.columns else inp).reset_index(drop=True)
        lists = []  # per query: (qid, query, row indices in list order)
        cut_queries, query_budget = 0, 0
        for qid, group in frame.groupby('qid', sort=False):
            if 'rank' in group.columns:
                group = group.sort_values('rank', kind='stable')
            query, query_budget, cut = fit_query(self.engine, clean_text(group['query'].iloc[0]))
            cut_queries += cut
            lists.append((qid, query, group.index.to_numpy()))
        warn_cut_queries(self, cut_queries, query_budget, self.engine.context_length)
        texts = frame[self.text_field].to_numpy()
        warn_empty_texts(self, [clean_text(text) for text in texts], self.text_field)
        orders = [list(rows) for _, _, rows in lists]
        starts = [window_starts(len(rows), self.window, self.stride) for _, _, rows in lists]
        self.check_room({min(self.window, len(rows) - s) for (_, _, rows), ss in zip(lists, starts) for s in ss})
        budgets: Dict[Tuple[int, int], int] = {}
        cut: Dict[Tuple[int, int], str] = {}
        positions = range(max(len(s) for s in starts))
        if self.verbose:
            positions = pt.tqdm(positions, desc=repr(self), unit='position')
        for k in positions:
            active = [q for q in range(len(lists)) if len(starts[q]) > k]
            windows = []
            for q in active:
                s = starts[q][k]
                rows = orders[q][s:s + self.window]
                query = lists[q][1]
                key = (q, len(rows))
                if key not in budgets:
                    fit = self.doc_fit(query, len(rows))
                    if fit < 16:
                        warnings.warn(f'{self!r}: qid {lists[q][0]!r}: the query and prompt leave only {fit} tokens '
                                      f'per document in the engine\'s context of {self.engine.context_length}; using '
                                      '16, which may not fit (use a smaller window or a larger max_model_len)',
                                      stacklevel=2)
                    budgets[key] = self.doc_budget(query, len(rows))
                windows.append((q, s, rows))
            # the texts of this position's windows, cut in one batch per budget
            missing = list(dict.fromkeys((r, budgets[q, len(rows)]) for q, _, rows in windows for r in rows
                                         if (r, budgets[q, len(rows)]) not in cut))
            for key, text in zip(missing, truncate_each(self.engine, [clean_text(texts[r]) for r, _ in missing],
                                                        [budget for _, budget in missing]), strict=True):
                cut[key] = text
            conversations = [self.conversation(lists[q][1], [cut[r, budgets[q, len(rows)]] for r in rows])
                             for q, _, rows in windows]
            generations, errors = generate_each(self.engine, conversations, max_tokens=self.generation_tokens(),
                                                stop=['</answer>'] if self.prompt == 'rankllm' else None)
            self._record_each(generations)
            bad, failed = [], []
            for (q, s, rows), generation, error in zip(windows, generations, errors, strict=True):
                if generation is None:
                    self.failed += 1
                    failed.append(f'qid {lists[q][0]!r}: {error}')
                    continue
                permutation, problem = check_ranking(generation.text, len(rows))
                if problem is not None:
                    self.malformed += 1
                    bad.append(f'qid {lists[q][0]!r}: {problem}')
                orders[q][s:s + len(rows)] = [rows[i] for i in permutation]
            if bad:
                warnings.warn(f'{self!r}: {len(bad)} malformed answers, used what could be parsed '
                              f'({"; ".join(bad[:5])}{"; ..." if len(bad) > 5 else ""})', stacklevel=2)
            if failed:
                warnings.warn(f'{self!r}: {len(failed)} windows kept their order because the engine request failed '
                              f'({"; ".join(failed[:3])}{"; ..." if len(failed) > 3 else ""})', stacklevel=2)
        index = np.concatenate([np.asarray(order, dtype=int) for order in orders])
        scores = np.concatenate([np.arange(len(order), 0, -1, dtype=float) for order in orders])
        out = frame.iloc[index].reset_index(drop=True).assign(score=scores)
        return pt.model.add_ranks(out)


# ---------------------------------------------------------------------------------------------------------------------
# pointwise yes/no scorer (navigator)

