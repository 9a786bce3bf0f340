"""The search driver: per-query searches as coroutines, advanced in lock-step so each step is ONE model call.

Every windowed search of the package (GAREN, the document-level variant, SlideGAR, RGS, sliding-window re-ranking)
is a :class:`WindowSearch`: its per-query search is a generator that ``yield``s a request -- a window to re-rank
(:data:`RERANK`), rows for the navigator to score (:data:`NAVIGATE`) or an observation for the trace (:data:`EVENT`)
-- and receives the answer. :func:`run_batched` drives the generators of all queries together, so one reranker call
covers the windows of every active query (what makes an LLM engine efficient), and the result equals running the
queries one at a time.
"""
from __future__ import annotations

import inspect
import math
import warnings
from itertools import islice
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generator, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from ._frames import first_stage, keep_query_columns, neighbour_lookup, ranking_frame
from ._params import Rebuildable, check_graph, check_model, check_positive

__all__ = ['RERANK', 'NAVIGATE', 'EVENT', 'run_batched', 'rerank_handler', 'score_handler', 'window_starts',
           'queue_windows', 'slide', 'QueryState', 'WindowSearch', 'Ranked', 'FINAL_ORDERS', 'resolve_final_order',
           'is_listwise', 'order_tail', 'check_final_order', 'warn_listwise_scores', 'check_window']

RERANK = 'rerank'
NAVIGATE = 'navigate'
EVENT = 'event'
STATS_COLUMNS = ['qid', 'docs_reranked', 'groups_scored', 'reranker_calls', 'navigator_calls', 'iterations']

Request = Tuple[str, Any]  # (RERANK, docnos) | (NAVIGATE, {column: values}) | (EVENT, {field: value})
Search = Generator[Request, Any, Any]
Key = Tuple[Any, str]  # (qid, query)
Observer = Callable[[Key, str, Any], None]


def run_batched(searches: Dict[Key, Search], handlers: Dict[str, Callable[[list], list]], *,
                observer: Optional[Observer] = None, desc: str = 'searching',
                verbose: bool = False) -> Dict[Key, Any]:
    """Drive per-query search coroutines in lock-step, one model call per step for all of them.

    Args:
        searches: ``{(qid, query): coroutine}``; each coroutine yields ``(kind, payload)`` requests, receives the
            answer and finally returns its result.
        handlers: ``{kind: handler}``; a handler gets ``[(qid, query, payload), ...]`` and returns the answers in
            the same order. When several kinds are pending, the first kind in ``handlers`` is served first (the
            others wait), which keeps the queries in the same iteration.
        observer: called as ``observer(key, kind, payload)`` for every request, model requests and :data:`EVENT`
            observations alike; events are answered with ``None`` at once and never reach a handler.
        desc: progress-bar label.
        verbose: show a progress bar over queries.

    Returns:
        ``{(qid, query): result}``.
    """
    results: Dict[Key, Any] = {}
    pending: Dict[Key, Request] = {}
    pbar = pt.tqdm(total=len(searches), desc=desc, unit='query') if verbose else None

    def advance(key, answer):
        search = searches[key]
        try:
            request = search.send(answer)
            while request[0] == EVENT:
                if observer is not None:
                    observer(key, EVENT, request[1])
                request = search.send(None)
        except StopIteration as stop:
            pending.pop(key, None)
            results[key] = stop.value
            if pbar is not None:
                pbar.update()
            return
        if observer is not None:
            observer(key, *request)
        pending[key] = request

    for key in searches:
        advance(key, None)
    while pending:
        kind = next(k for k in handlers if any(req[0] == k for req in pending.values()))
        keys = [key for key, req in pending.items() if req[0] == kind]
        answers = handlers[kind]([(*key, pending[key][1]) for key in keys])
        for key, answer in zip(keys, answers, strict=True):
            advance(key, answer)
    if pbar is not None:
        pbar.close()
    return results


def _call(model: pt.Transformer, requests: list, role: str) -> List[np.ndarray]:
    """One call of ``model`` over the rows of all requests; the returned ``score`` of each request row."""
    lengths = [len(payload['docno']) for _, _, payload in requests]
    frame = pd.DataFrame({
        'qid': np.repeat([qid for qid, _, _ in requests], lengths),
        'query': np.repeat([query for _, query, _ in requests], lengths),
        **{col: np.concatenate([np.asarray(payload[col], dtype=object if col in ('docno', 'text') else None)
                                for _, _, payload in requests]) for col in requests[0][2]},
    })
    try:
        out = model(frame.copy())  # a copy: a model that edits its input in place changes nothing of ours
    except KeyError as ex:
        missing = _unsent_columns(ex, frame)
        if not missing:
            raise
        sent = f'{role} {model!r} reads the column(s) {missing}, which it is not sent: it gets {list(frame.columns)}'
        if role == 'navigator':
            raise ValueError(f'the {sent} (docno = the group id, text = its summary)') from ex
        fix = 'garen.with_text(dataset, reranker)' if missing == ['text'] else \
            f'garen.with_text(dataset, reranker, field={missing[0]!r})'
        raise ValueError(f'the {sent} and no document text (a graph search also scores documents the first stage did '
                         f'not return), so it must fetch what it reads itself: pass {fix}, which is '
                         f'pt.text.get_text(dataset, {missing[0]!r}) >> reranker') from ex
    if 'score' not in out.columns or 'docno' not in out.columns or 'qid' not in out.columns:
        raise ValueError(f'the {role} {model!r} must return qid, docno and score columns; got {list(out.columns)}')
    raw = pd.to_numeric(out['score'], errors='coerce')
    not_numeric = raw.isna().to_numpy() & out['score'].notna().to_numpy()
    if not_numeric.any():
        raise ValueError(f'the {role} {model!r} returned {int(not_numeric.sum())} scores that are not numbers (e.g. '
                         f'{out["score"][not_numeric].iloc[0]!r}); scores must be numbers')
    if _same(out['qid'], frame['qid']) and _same(out['docno'], frame['docno']) and _distinct(requests):
        # the usual answer: the rows asked, in the order asked (what matching by strings below would find)
        scores = raw.to_numpy(dtype=float)
        returned, foreign = scores, np.zeros(len(scores), dtype=bool)
    else:
        scores, returned, foreign = _match(frame, out, raw, role, model)
    unusable = ~np.isfinite(scores)
    if unusable.any():
        bad_returned = int((~np.isfinite(returned) & ~foreign).sum())
        qids = sorted({str(q) for q in frame.qid[unusable]})
        warnings.warn(f'the {role} {model!r} gave no usable score for {int(unusable.sum())} of {len(scores)} rows '
                      f'({bad_returned} NaN or infinite, {int(unusable.sum()) - bad_returned} missing; qids '
                      f'{qids[:5]}); they are ranked last', stacklevel=3)
    return np.split(np.where(np.isfinite(scores), scores, -np.inf), np.cumsum(lengths)[:-1])


#: column names a text-reading model looks up in its input rows (a plain ``KeyError`` of another name is the model's
#: own look-up, not a missing column)
_FIELD_NAMES = frozenset({'text', 'title', 'body', 'abstract', 'contents', 'content', 'passage', 'document',
                          'doc_text', 'doc_vec', 'doc_toks', 'query_vec', 'query_toks', 'summary'})


def _unsent_columns(ex: KeyError, frame: pd.DataFrame) -> List[str]:
    """The columns a model's ``KeyError`` says it lacks that the frame sent it does not hold (pyterrier's
    ``InputValidationError`` lists them; a plain ``KeyError`` of a document field's name, ``'text'``, names one);
    ``[]`` for any other ``KeyError`` (a model's own look-up of a docno or a term)."""
    modes = getattr(ex, 'modes', None)
    if modes:
        names = [c for mode in modes for c in getattr(mode, 'missing_columns', None) or []]
    else:  # a plain KeyError may be any look-up of the model's own (a term, a docno): only a document field's name
        names = [ex.args[0]] if len(ex.args) == 1 and ex.args[0] in _FIELD_NAMES else []
    return [c for c in dict.fromkeys(names) if isinstance(c, str) and c not in frame.columns]


def _distinct(requests: list) -> bool:
    """Whether the ``(qid, docno)`` pairs of the requests are distinct as strings."""
    return len({str(qid) for qid, _, _ in requests}) == len(requests) and \
        all(len(set(map(str, payload['docno']))) == len(payload['docno']) for _, _, payload in requests)


def _same(returned: pd.Series, asked: pd.Series) -> bool:
    """Whether a returned column holds the asked values in the asked order, with the same (non-object) dtype, so
    that both read the same as strings."""
    return returned.dtype == asked.dtype and returned.dtype != object and len(returned) == len(asked) and \
        bool(returned.array.equals(asked.array))


def _match(frame: pd.DataFrame, out: pd.DataFrame, raw: pd.Series, role: str, model: pt.Transformer):
    """The returned scores of the asked rows, matched by ``(qid, docno)`` as strings (first of duplicates).

    Returns ``(scores of the asked rows, NaN where none; the deduplicated returned scores; which of those are
    foreign)``; warns about the foreign rows.
    """
    # qids and docnos compare as strings: a model that turns qid 1 into '1' still answers the same query
    asked = pd.MultiIndex.from_arrays([frame.qid.astype(str), frame.docno.astype(str)])
    returned = pd.Series(raw.to_numpy(dtype=float),
                         index=pd.MultiIndex.from_arrays([out['qid'].astype(str), out['docno'].astype(str)]))
    repeated = returned.index.duplicated()
    if repeated.any():
        kept = returned[~repeated]
        values, firsts = returned.to_numpy(), kept.reindex(returned.index).to_numpy()
        differ = repeated & ~((values == firsts) | (np.isnan(values) & np.isnan(firsts)))
        if differ.any():
            sample = [f'{q}/{d}' for q, d in returned.index[differ][:3]]
            warnings.warn(f'the {role} {model!r} returned {int(differ.sum())} more rows with another score for a '
                          f'(qid, docno) it had already scored (qid/docno e.g. {sample}); its first score of each '
                          'is used', stacklevel=4)
        returned = kept
    foreign = ~returned.index.isin(asked)
    if foreign.any():
        sample = [f'{q}/{d}' for q, d in returned.index[foreign][:3]]
        warnings.warn(f'the {role} {model!r} returned {int(foreign.sum())} rows for queries or documents it was not '
                      f'asked about (qid/docno e.g. {sample}); they are ignored', stacklevel=4)
    return returned.reindex(asked).to_numpy(), returned.to_numpy(), foreign


class Ranked(list):
    """A re-ranked window: its docnos best first, with the reranker's score of each in ``scores`` (same order).

    The answer to a :data:`RERANK` request; a plain list (e.g. from a handler written for tests) works too, it just
    carries no scores.
    """

    def __init__(self, docnos: Iterable[str] = (), scores: Sequence[float] = ()):
        super().__init__(docnos)
        self.scores = list(scores)


def rerank_handler(reranker: pt.Transformer) -> Callable[[list], List[Ranked]]:
    """Handler of :data:`RERANK` requests: orders each window by descending reranker score, ties by window order.

    The reranker receives ``qid, query, docno, score, rank`` rows, where ``score``/``rank`` give the current window
    order (``score = len(window) - position``, ``rank = position``); it fetches any text itself. Each answer is a
    :class:`Ranked` window that keeps the scores (``-inf`` where the reranker gave none).
    """
    check_cached_scores(reranker)

    def handle(requests):
        requests = [(qid, query, {'docno': list(docs), 'score': np.arange(len(docs), 0, -1, dtype=float),
                                  'rank': np.arange(len(docs))}) for qid, query, docs in requests]
        scores = _call(reranker, requests, 'reranker')
        # every window at once: by request, then descending score, then window position
        lengths = [len(s) for s in scores]
        ends = np.cumsum(lengths).tolist()
        request = np.repeat(np.arange(len(requests)), lengths)
        position = np.arange(len(request)) - np.repeat(np.asarray(ends) - lengths, lengths)
        flat = np.concatenate(scores) if scores else np.zeros(0)
        order = np.lexsort((position, -flat, request))
        docnos = [d for _, _, payload in requests for d in payload['docno']]
        ranked = [docnos[i] for i in order.tolist()]
        ranked_scores = flat[order].tolist()
        return [Ranked(ranked[end - n:end], ranked_scores[end - n:end]) for n, end in zip(lengths, ends)]
    return handle


def score_handler(navigator: pt.Transformer) -> Callable[[list], List[np.ndarray]]:
    """Handler of :data:`NAVIGATE` requests: the navigator's score of every row (``-inf`` when it returns none)."""
    return lambda requests: _call(navigator, requests, 'navigator')


# ---------------------------------------------------------------------------------------------------------------------
# the sliding window (RankGPT order), shared by sliding-window re-ranking, RGS and the listwise LLM reranker

def window_starts(num_docs: int, window: int, stride: int) -> List[int]:
    """Start positions of the sliding windows over a list of ``num_docs``, bottom window first (RankGPT order).

    The windows ``[s, s + window)`` cover the list from the bottom to the top, each ``stride`` above the previous
    one; the last one starts at 0. A list no longer than ``window`` has one window.
    """
    if num_docs <= 0:
        return []
    if num_docs <= window:
        return [0]
    return list(range(num_docs - window, 0, -stride)) + [0]


def queue_windows(num_docs: int, window: int, stride: int) -> List[Tuple[int, int]]:
    """The windows ``[start, end)`` with which RGS re-ranks its queue, bottom window first (its reference code's pass).

    The windows end at ``num_docs``, ``num_docs - stride``, ... while above 0, each ``window`` long or cut at the top
    of the list, so the pass ends with the top ``end`` documents for the last ``end`` in ``(0, stride]`` (over 36
    documents with window 20 and stride 10: ``[16, 36)``, ``[6, 26)``, ``[0, 16)``, ``[0, 6)``). Unlike
    :func:`window_starts`, the top window can be shorter than ``window``, and after a full window at the top another,
    shorter one re-ranks its head again. A last window of one document, which orders nothing, is left out unless
    every window holds one document (``window == 1``).
    """
    spans = []
    for end in range(num_docs, 0, -stride):
        start = max(0, end - window)
        if end - start > 1 or window == 1 or not spans:
            spans.append((start, end))
    return spans


def slide(ranking: List[str], window: int, stride: int, *, is_new: Optional[Callable[[str], bool]] = None,
          state: Optional['QueryState'] = None, queue: bool = False) -> Search:
    """Re-rank ``ranking`` in place, window after window from the bottom up.

    The windows are those of :func:`window_starts` (RankGPT's pass, which ends with the window that starts at
    position 0, so the best documents bubble to the top), or with ``queue`` those of :func:`queue_windows` (RGS's).
    With ``is_new``, the pass also ends at the first window without a new document (RGS). With ``state``, every
    window's verdicts are recorded there (:meth:`QueryState.rerank`).
    """
    if queue:
        spans = queue_windows(len(ranking), window, stride)
    else:
        spans = [(start, min(start + window, len(ranking))) for start in window_starts(len(ranking), window, stride)]
    for start, end in spans:
        if is_new is not None and not any(map(is_new, ranking[start:end])):
            break
        if state is not None:
            ranking[start:end] = yield from state.rerank(ranking[start:end])
        else:
            ranking[start:end] = yield RERANK, ranking[start:end]


# ---------------------------------------------------------------------------------------------------------------------
# the final order: what a search does with the verdicts of documents that left its windows

#: Values of the ``final_order`` option of every window search.
FINAL_ORDERS = ('auto', 'paper', 'score', 'dropped')


def pipeline_stages(transformer: Any) -> List[Any]:
    """The stages of a ``>>`` pipeline (``pt.Compose``, read with ``pt.inspect.subtransformers``); else
    ``[transformer]``."""
    if isinstance(transformer, pt.Compose):
        return list(pt.inspect.subtransformers(transformer)['transformers'])
    return [transformer]


def is_listwise(reranker: Any) -> bool:
    """Whether a reranker declares window-relative scores (``listwise = True``), looking through ``>>`` pipelines.

    The last stage of a pipeline that declares ``listwise`` decides; a reranker that declares nothing counts as
    pointwise (its scores compare across calls, as those of cross-encoders, yes/no scorers and vector scorers do).
    """
    for stage in reversed(pipeline_stages(reranker)):  # pt.Compose flattens nested pipelines
        if hasattr(stage, 'listwise'):
            return bool(stage.listwise)
        if _score_cache(stage):  # a cache answers with its scorer's scores
            return is_listwise(stage.scorer)
    return False


def _score_cache(stage: Any) -> bool:
    """Whether ``stage`` is one of pyterrier_caching's scorer caches (which keep the model they wrap in ``scorer``)."""
    return type(stage).__module__.startswith('pyterrier_caching') and getattr(stage, 'scorer', None) is not None


def check_cached_scores(reranker: Any) -> None:
    """Refuse a scorer cache around a listwise reranker: its scores order one window only, and a cache would hand
    a document's place in one window to every later window that holds it."""
    for stage in pipeline_stages(reranker):
        if _score_cache(stage) and is_listwise(stage.scorer):
            raise ValueError(f'{stage!r} caches the scores of {stage.scorer!r}, a listwise reranker (listwise = '
                             'True): its scores order the documents of one window only, so a cached score would '
                             'place a document in windows it was never compared in. Cache pointwise rerankers only '
                             '(cross-encoders, yes/no and vector scorers), or pass the listwise reranker itself')


def warn_listwise_scores(reranker: Any, *, context: str, use: str, fix: str, stacklevel: int = 3) -> None:
    """Warn (``UserWarning``) when ``reranker`` declares ``listwise = True`` but the caller compares its scores
    across calls (``use`` says how; ``fix`` what to do instead). ``stacklevel``: as ``warnings.warn``'s, counted
    from the caller (the default names the caller's caller)."""
    if not is_listwise(reranker):
        return
    name = type(pipeline_stages(reranker)[-1]).__name__
    warnings.warn(f'{context}: {use}, but the reranker ({name}) declares listwise = True: its scores only order the '
                  'documents of one call, so documents from different calls are compared by their places in their '
                  f'own calls (the best of every call tie); {fix}', stacklevel=stacklevel)


def check_final_order(final_order: str, reranker: Any, *, context: str) -> None:
    """For a search's constructor: ``ValueError`` for a ``final_order`` not in :data:`FINAL_ORDERS`, and a warning
    when ``'score'`` is asked of a listwise reranker (whose scores do not compare across windows)."""
    _check_final_order_value(final_order)
    if final_order == 'score':
        warn_listwise_scores(reranker, context=context, use="final_order='score' orders the documents below the "
                             "kept top by the reranker's scores from every window",
                             fix="use final_order='auto' (or 'dropped'), which merges window positions",
                             stacklevel=4)  # the constructor's caller


def _check_final_order_value(final_order: str) -> None:
    if final_order not in FINAL_ORDERS:
        raise ValueError(f'final_order must be one of {FINAL_ORDERS}, got {final_order!r}')


def resolve_final_order(final_order: str, reranker: Any) -> str:
    """``final_order`` with ``'auto'`` resolved: ``'dropped'`` for a listwise reranker, else ``'score'``."""
    _check_final_order_value(final_order)
    if final_order == 'auto':
        return 'dropped' if is_listwise(reranker) else 'score'
    return final_order


def order_tail(order: Sequence[str], head: int, how: str, *, scores: Dict[str, float],
               last: Dict[str, Tuple[int, int]]) -> List[str]:
    """A search's own final ``order`` with everything below its first ``head`` documents re-ordered by ``how``.

    ``'paper'``: unchanged. ``'score'``: by descending reranker score (documents without a score last).
    ``'dropped'``: by the position each document had in the last window that re-ranked it (best first; window-
    relative evidence, for listwise rerankers). Both sorts are stable: ties keep ``order``.
    """
    if how == 'paper':
        return list(order)
    if how == 'score':
        def key(docno):
            return -scores.get(docno, -math.inf)
    elif how == 'dropped':
        def key(docno):
            return last[docno][1] if docno in last else math.inf
    else:
        raise ValueError(f"how must be 'paper', 'score' or 'dropped', got {how!r}")
    return list(order[:head]) + sorted(order[head:], key=key)


def collection_size(graph: Any) -> Optional[int]:
    """The number of documents of a graph (``len(graph)``), or None when it does not say."""
    try:
        return int(len(graph))
    except TypeError:
        return None


#: The start of every warning :func:`warn_budget_covers_collection` gives (for a filter: a comparison that warned
#: once for the collection hides the same advice from each of its searches).
COVERS_COLLECTION = r'[^:\n]+: budget=\d+ is at least the \d+ documents of the collection'


def warn_budget_covers_collection(budget: Optional[int], docs: Any, *, context: str) -> bool:
    """Warn (``UserWarning``) when ``budget`` is at least the number of documents; returns whether it warned.

    ``docs`` is that number or a graph of the collection (its ``len``); nothing happens when either is unknown.
    """
    size = docs if isinstance(docs, (int, np.integer)) else collection_size(docs) if docs is not None else None
    if budget is None or size is None or size <= 0 or budget < size:
        return False
    warnings.warn(f'{context}: budget={budget} is at least the {size} documents of the collection, so every adaptive '
                  'search re-ranks the whole corpus and all find the same documents, differing only in their order; '
                  'use a budget below the collection size to compare the searches', stacklevel=3)
    return True


#: documents at the top of each query's first stage that :func:`warn_unknown_docnos` looks up (what a search
#: re-ranks first; all of them would cost a large share of a search's own time on a 1000-deep first stage)
CHECKED_DOCNOS = 20


def warn_unknown_docnos(rankings: Iterable[Sequence[Any]], graph: Any, *, context: str) -> int:
    """Warn (``UserWarning``) when documents at the top of the first stage are not in the graph; returns how many.

    A search re-ranks such a document but follows no link from it, so a first stage over other docnos than the
    graph's (another collection, docnos read as numbers that lost their leading zeros) silently degrades every
    search to re-ranking the first stage. ``rankings``: each query's docnos in first-stage order, of which the
    first :data:`CHECKED_DOCNOS` are looked up. Only graphs that can say which docnos they hold (``doc_ids``, as a
    ``GroupCorpusGraph``) are checked.
    """
    doc_ids = getattr(graph, 'doc_ids', None)
    if doc_ids is None:
        return 0
    docnos = list(dict.fromkeys(str(d) for ranking in rankings for d in islice(ranking, CHECKED_DOCNOS)))
    unknown = [d for d, i in zip(docnos, np.asarray(doc_ids(docnos)).tolist()) if i < 0] if docnos else []
    if unknown:
        warnings.warn(f'{context}: {len(unknown)} of the {len(docnos)} documents at the top of the first stage (its '
                      f'first {CHECKED_DOCNOS} per query) are not in the graph (e.g. docno {unknown[0]!r}); the search '
                      're-ranks them but follows no link from them. Give it a first stage over the collection the '
                      'graph was built from (docnos read as numbers lose their leading zeros: read runs with '
                      'dtype=str)', stacklevel=3)
    return len(unknown)


def check_first_stage(results: pd.DataFrame, topics: pd.DataFrame, *, context: str) -> None:
    """Say which queries the first stage finds nothing for: every system starts from it, so those queries are
    absent from every run and score 0. A warning for some; ``ValueError`` for all, when nothing can be compared.

    Args:
        results: the first stage's ranking of ``topics`` (a ``qid`` column).
        topics: the queries (``qid``, ``query``) that are evaluated.
        context: the caller's name, which starts the message.
    """
    found = set(results['qid'].astype(str)) if len(results) else set()
    missing = topics[~topics['qid'].astype(str).isin(found)]
    if missing.empty:
        return
    example = f"e.g. qid {str(missing['qid'].iloc[0])!r}, {str(missing['query'].iloc[0])[:60]!r}"
    if len(missing) == len(topics):
        raise ValueError(f'{context}: the first stage finds no document for any of the {len(topics)} queries '
                         f'({example}), so every system would return nothing: no query shares an indexed term with '
                         'the documents (after stemming and stopword removal); check that queries and documents are '
                         'in the same language and that the queries file holds the query texts')
    warnings.warn(f'{context}: the first stage finds no document for {len(missing)} of the {len(topics)} queries '
                  f'({example}); every system starts from it, so these queries are absent from every run and score '
                  '0 for all of them', stacklevel=3)


# ---------------------------------------------------------------------------------------------------------------------
# the one base class of every windowed search

@dataclass
class QueryState:
    """What one query's search knows: ``R_0``, the observed documents and the navigator cache ``Pi_q``."""
    r0: List[str]
    neighbours: Callable[[str], List[str]]
    rank0: Dict[str, int] = field(init=False)
    observed: Dict[str, int] = field(default_factory=dict)  # docno -> 1-based step it was first sent to the reranker
    last: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # docno -> (iteration, position) last re-ranked
    cache: Dict[Any, float] = field(default_factory=dict)  # the navigator cache Pi_q
    scores: Dict[str, float] = field(default_factory=dict)  # docno -> the reranker's last score of it
    reranks: int = 0  # reranker requests so far
    unobserved_from: int = field(default=0, init=False, repr=False)  # R_0 before this position is all observed

    def rerank(self, window: Sequence[str]) -> Generator[Request, Any, List[str]]:
        """Re-rank ``window`` (one request); record each document's ``last`` placement and score, return the order.

        ``last[d]`` becomes ``(number of this request, position)``, 1-based requests, 0-based positions.
        """
        reranked = yield RERANK, window
        self.reranks += 1
        self.last.update((d, (self.reranks, i)) for i, d in enumerate(reranked))
        self.scores.update(zip(reranked, getattr(reranked, 'scores', ())))
        return reranked

    def __post_init__(self):
        self.rank0 = dict(zip(self.r0, range(len(self.r0))))

    def unobserved_r0(self) -> Iterable[str]:
        """The documents of ``R_0`` not yet observed, in rank order."""
        r0, observed, i = self.r0, self.observed, self.unobserved_from
        while i < len(r0) and r0[i] in observed:  # observation only grows: an observed prefix stays observed
            i += 1
        self.unobserved_from = i
        return (d for d in islice(r0, i, None) if d not in observed)

    def navigate(self, keys: Sequence[Any], rows: Dict[str, list]) -> Generator[Request, Any, Dict[Any, float]]:
        """Score ``rows`` with the navigator (one request), cache the scores under ``keys`` and return them."""
        if not keys:
            return {}
        scores = yield NAVIGATE, rows
        new = dict(zip(keys, map(float, scores), strict=True))
        self.cache.update(new)
        return new

    def backfill(self, chosen: List[str], n: int) -> List[str]:
        """Complete ``chosen`` to ``n`` documents with unobserved documents of ``R_0`` in rank order."""
        picked = set(chosen)
        extra = (d for d in self.unobserved_r0() if d not in picked)
        return chosen + [d for _, d in zip(range(n - len(chosen)), extra)]


class _Recorder:
    """Observer of a batched run: model calls per query and, when asked, the trace of :data:`EVENT` observations.

    Events carry an ``iteration`` field; consecutive events of the same iteration of one query merge into one step.
    """

    def __init__(self, trace: bool):
        self.trace = trace
        self.calls: Dict[Key, Dict[str, int]] = {}
        self.steps: Dict[Key, List[Dict[str, Any]]] = {}

    def __call__(self, key: Key, kind: str, payload: Any) -> None:
        if kind != EVENT:
            counts = self.calls.setdefault(key, {})
            counts[kind] = counts.get(kind, 0) + 1
        elif self.trace:
            steps = self.steps.setdefault(key, [])
            if steps and steps[-1]['iteration'] == payload['iteration']:
                steps[-1].update(payload)
            else:
                steps.append(dict(payload))


def check_window(window: int, keep: int, budget: int) -> None:
    """Validate ``w``, ``h`` and ``c``: positive integers with ``h < w``."""
    check_positive(window=window, keep=keep, budget=budget)
    if keep >= window:
        fix = f'e.g. keep={window // 2}' if window >= 2 else \
            'so the window must hold at least 2 (e.g. window=20, keep=10)'
        raise ValueError(f'keep (h={keep}) must be smaller than window (w={window}), otherwise no new document can '
                         f'enter the window; {fix}')


class WindowSearch(Rebuildable, pt.Transformer):
    """Base of every windowed search: one coroutine per query, all queries batched, a ranking frame out.

    A subclass stores every ``__init__`` argument under its own name (its ``reranker``, its ``navigator`` when it
    has one, ``verbose``, ``trace``), calls :meth:`_check_sizes` at the end of ``__init__`` and defines
    :meth:`_search`, the per-query search over a :class:`QueryState` (or the subclass ``state_class`` names).
    ``graph_param`` names the argument holding the graph whose ``neighbours`` the search follows (``None``: it
    follows none). ``columns`` names the integer columns :meth:`_columns` adds to the output (``iteration`` by
    default). The output also keeps the input's query columns (``query_0`` and the others PyTerrier counts as a
    query's; :func:`~pyterrier_garen._frames.keep_query_columns`), not its document columns.

    After each call of :meth:`transform`, ``last_stats`` holds per-query accounting of that call's queries (under
    ``pt.Experiment(batch_size=...)``, the last batch's) (``qid, docs_reranked, groups_scored,
    reranker_calls, navigator_calls, iterations``) and, with ``trace=True``, ``last_trace`` one dict per query and
    iteration (``qid`` plus what the search observed).
    """
    reranker: pt.Transformer
    navigator: Optional[pt.Transformer] = None
    verbose: bool = False
    trace: bool = False
    columns: Tuple[str, ...] = ('iteration',)
    graph_param: Optional[str] = None
    state_class: type = QueryState
    final_order: str = 'paper'

    def _final(self, state: QueryState, order: Sequence[str], head: int, *, sorted_list: int = 0) -> List[str]:
        """The search's own final ``order`` with its tail re-ordered as ``final_order`` says (:func:`order_tail`).

        ``sorted_list``: the first ``sorted_list`` documents of ``order`` are one list that the search's windows sort
        in place (the sliding window's whole list, RGS's queue), so their order is already a merge of the windows'
        relative evidence and ``'dropped'`` leaves them as they are; below them (RGS's documents truncated from the
        queue, which no window compared with each other) ``'dropped'`` orders by the place each document's last
        window gave it.
        """
        how = resolve_final_order(self.final_order, self.reranker)
        if how == 'dropped':
            head = max(head, sorted_list)
        return order_tail(order, head, how, scores=state.scores, last=state.last)

    def _graph(self) -> Any:
        """The graph whose ``neighbours`` the search follows (None if it follows none)."""
        return getattr(self, self.graph_param) if self.graph_param else None

    def _check_sizes(self) -> None:
        """Validate the sizes every windowed search shares, whichever of them it has.

        ``window``, ``keep``, ``stride`` and ``budget`` are positive integers; ``keep < window`` (or no new document
        could enter a window) and ``stride <= window`` (or documents between two windows would never be re-ranked).
        """
        owner = type(self).__name__
        check_model(owner, 'reranker', self.reranker)
        if 'navigator' in inspect.signature(type(self).__init__).parameters:
            check_model(owner, 'navigator', self.navigator)
        if self.graph_param and self._graph() is not None:  # None: named when the search is run (tests build
            check_graph(self._graph(), owner)               # searches without a graph to check their sizes)
        sizes = {name: getattr(self, name) for name in ('window', 'keep', 'stride', 'budget') if hasattr(self, name)}
        if 'keep' in sizes:
            check_window(sizes['window'], sizes['keep'], sizes['budget'])
        check_positive(**sizes)
        if 'stride' in sizes and sizes['stride'] > sizes['window']:
            raise ValueError(f"stride ({sizes['stride']}) must not exceed window ({sizes['window']}), or documents "
                             'between windows would never be re-ranked')

    def _search(self, state: QueryState) -> Search:
        """Yield requests and return the final ranking of the observed documents of one query."""
        raise NotImplementedError

    def _columns(self, state: QueryState, ranking: List[str]) -> Dict[str, list]:
        return {'iteration': [state.observed[d] for d in ranking]}

    def _handlers(self) -> Dict[str, Callable[[list], list]]:
        handlers = {}
        if self.navigator is not None:  # navigator first: keeps every query in the same iteration
            handlers[NAVIGATE] = score_handler(self.navigator)
        handlers[RERANK] = rerank_handler(self.reranker)
        return handlers

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Run the search for every query of ``inp`` (a first-stage result frame)."""
        queries = first_stage(inp, context=self)
        graph = self._graph()
        if self.graph_param:
            check_graph(graph, type(self).__name__)
        warn_budget_covers_collection(getattr(self, 'budget', None), graph, context=type(self).__name__)
        warn_unknown_docnos((r0 for _, _, r0 in queries), graph, context=type(self).__name__)
        neighbours = neighbour_lookup(graph) if graph is not None else (lambda docno: [])
        states = {(qid, query): self.state_class(r0, neighbours) for qid, query, r0 in queries}
        recorder = _Recorder(self.trace)
        rankings = run_batched({key: self._search(state) for key, state in states.items()}, self._handlers(),
                               observer=recorder, desc=type(self).__name__, verbose=self.verbose)
        self.last_stats = pd.DataFrame(
            [(key[0], len(s.observed), len(s.cache), recorder.calls.get(key, {}).get(RERANK, 0),
              recorder.calls.get(key, {}).get(NAVIGATE, 0), max(s.observed.values(), default=0))
             for key, s in states.items()], columns=STATS_COLUMNS)
        self.last_trace = [{'qid': key[0], **step} for key in states for step in recorder.steps.get(key, [])]
        out = ranking_frame([(*key, rankings[key], self._columns(states[key], rankings[key])) for key in states],
                            self.columns)
        return keep_query_columns(out, inp)
