"""The methods GAREN is compared with: sliding-window re-ranking, SlideGAR, RGS and the document-level variant.

Each per-query search is a coroutine driven by :func:`~pyterrier_garen._garen.run_batched`, so every step makes
ONE reranker call covering all active queries. All take the reranker interface of :class:`~pyterrier_garen.GAREN`:
the reranker gets ``qid, query, docno, score, rank`` rows (the window in its current order) and fetches text itself.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import pandas as pd
import pyterrier as pt

from ._garen import (RERANK, QueryState, Search, _WindowSearch, check_positive, first_stage, neighbour_lookup,
                     ranking_frame, rebuild_repr, rerank_handler, run_batched)

__all__ = ['SlidingWindowReranker', 'SlideGAR', 'RGS', 'DocGAREN', 'slide']


def slide(ranking: List[str], window: int, stride: int, *, is_new=None) -> Search:
    """Re-rank ``ranking`` in place with windows of ``window`` docs, ``stride`` apart, from the bottom up.

    The pass ends with the window that starts at position 0, so the best documents bubble to the top. With
    ``is_new``, it also ends at the first window without a new document (RGS).
    """
    end = len(ranking)
    while end > 0:
        start = max(end - window, 0)
        if is_new is not None and not any(map(is_new, ranking[start:end])):
            break
        ranking[start:end] = yield RERANK, ranking[start:end]
        if start == 0:
            break
        end -= stride


class _Baseline(pt.Transformer):
    """Shared transform: one coroutine per query, batched reranker calls, ``qid, query, docno, score, rank`` out."""
    reranker: pt.Transformer
    verbose: bool
    columns: Sequence[str] = ('iteration',)

    def _search(self, r0: List[str], seen: Dict[str, int]) -> Search:
        """Yield windows to re-rank, fill ``seen`` (docno -> 1-based step first sent) and return the ranking."""
        raise NotImplementedError

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Re-rank every query of ``inp`` (a first-stage result frame)."""
        queries = first_stage(inp, context=self)
        seen: Dict[Any, Dict[str, int]] = {(qid, query): {} for qid, query, _ in queries}
        rankings = run_batched({(qid, query): self._search(r0, seen[qid, query]) for qid, query, r0 in queries},
                               {RERANK: rerank_handler(self.reranker)}, desc=type(self).__name__, verbose=self.verbose)
        return ranking_frame([(*key, rankings[key], {'iteration': [seen[key][d] for d in rankings[key]]})
                              for key in seen], self.columns)

    def __repr__(self):
        return rebuild_repr(self)


class SlidingWindowReranker(_Baseline):
    """Retrieve-and-Rerank: sliding-window re-ranking of the first-stage top ``budget`` (RankGPT / rank_llm style).

    Windows of ``window`` documents, ``stride`` apart, from the bottom of the list to the top, so the best documents
    bubble up. One pass of overlapping windows is a partial bubble sort: with a pointwise scorer its top ``stride``
    equals the top of sorting by score (and the whole list does when it fits in one window).

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank']``: only the re-ranked top ``budget`` (the rest of the
    first stage is dropped); ``score`` strictly decreases with rank.
    """
    columns = ()

    def __init__(self, reranker: pt.Transformer, *, window: int = 20, stride: int = 10, budget: int = 100,
                 verbose: bool = False):
        """
        Args:
            reranker: the document-level reranker.
            window: documents per reranker call.
            stride: distance between consecutive windows (``<= window``).
            budget: number of first-stage documents re-ranked, ``c``.
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.window = window
        self.stride = stride
        self.budget = budget
        self.verbose = verbose
        check_positive(window=window, stride=stride, budget=budget)
        if stride > window:
            raise ValueError(f'stride ({stride}) must not exceed window ({window}), or documents between windows '
                             'would never be re-ranked')

    def _search(self, r0, seen):
        ranking = r0[:self.budget]
        seen.update((d, 1) for d in ranking)
        yield from slide(ranking, self.window, self.stride)
        return ranking


class SlideGAR(_Baseline):
    """SlideGAR (Rathee, MacAvaney, Anand, ECIR 2025): listwise graph-based adaptive re-ranking.

    Step 1 re-ranks the top ``w`` of ``R_0``. Each later window is the top ``b`` of the previous ranked window plus
    the next ``min(b, c - seen)`` documents of a pool that alternates between ``R_0`` (unseen docs in rank order) and
    the graph frontier (an empty pool is skipped and counts as a turn). The frontier is rebuilt after every step from
    the neighbours, in graph order, of the kept top ``b`` documents (in rank order, i.e. pseudo-score
    ``1/(rank+1)``), skipping seen documents, until ``b`` are collected. Budget ``c`` = distinct documents sent to the
    reranker (100 -> 9 reranker calls per query).

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration']``: the last ranked window, then the
    documents dropped from earlier windows (most recent first); ``score`` strictly decreasing; ``iteration`` = the
    1-based step in which the document first entered a window.
    """

    def __init__(self, reranker: pt.Transformer, graph: Any, *, window: int = 20, step: int = 10, budget: int = 100,
                 verbose: bool = False):
        """
        Args:
            reranker: the document-level (listwise) reranker.
            graph: any object with ``neighbours(docno)`` (a GroupCorpusGraph or a pyterrier-adaptive CorpusGraph).
            window: window (buffer) size ``w``.
            step: documents kept and added per step, ``b`` (``b < w``).
            budget: distinct documents re-ranked per query, ``c``.
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.graph = graph
        self.window = window
        self.step = step
        self.budget = budget
        self.verbose = verbose
        check_positive(window=window, step=step, budget=budget)
        if step >= window:
            raise ValueError(f'step (b={step}) must be smaller than window (w={window}); e.g. step={window // 2}')

    def _search(self, r0, seen):
        neighbours = neighbour_lookup(self.graph)
        b, c = self.step, self.budget
        window, dropped, turn, t = r0[:min(self.window, c)], [], 1, 0
        while window:
            t += 1
            seen.update((d, t) for d in window if d not in seen)
            ranked = yield RERANK, window
            top, dropped = ranked[:b], ranked[b:] + dropped
            size = min(b, c - len(seen))
            if size <= 0:
                break
            frontier: Dict[str, None] = {}
            for docno in top:
                frontier.update((n, None) for n in neighbours(docno) if n not in seen)
                if len(frontier) >= b:
                    break
            pools = [(d for d in r0 if d not in seen), iter(list(frontier)[:b])]
            batch = [d for _, d in zip(range(size), pools[turn % 2])]
            turn += 1
            if not batch:  # empty pool: skip it (it counts as a turn) and take from the other one
                batch = [d for _, d in zip(range(size), pools[turn % 2])]
                turn += 1
            window = top + batch if batch else []
        return top + dropped


class RGS(_Baseline):
    """Reranker-Guided Search (Xu & Chen 2025): best-first search over a corpus graph driven by a listwise reranker.

    A ranked queue ``Q`` of size ``L`` is seeded by re-ranking the first ``seed_size`` first-stage documents. While
    ``Q`` holds an unexpanded document and budget remains: take the best unexpanded document, collect its unseen
    neighbours (graph order, cut to the remaining budget), append them to ``Q``, re-rank ``Q`` bottom-up with windows
    of ``window`` and stride ``step`` (stopping at the first window without a new document, or after the window at the
    top), and truncate ``Q`` to ``L``. Budget = distinct documents ever sent to the reranker; documents are re-ranked
    several times, so reranker calls exceed ``budget / window``. All queries' windows of the same step share one
    reranker call.

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration']``: ``Q``, then the documents truncated
    from it (most recently truncated first); ``score`` strictly decreasing; ``iteration`` = 1 for seeds, ``k + 1``
    for documents found by the ``k``-th expansion that found unseen neighbours.
    """

    def __init__(self, reranker: pt.Transformer, graph: Any, *, budget: int = 100, queue_size: Optional[int] = None,
                 window: int = 20, step: int = 10, seed_size: Optional[int] = None, verbose: bool = False):
        """
        Args:
            reranker: the document-level (listwise) reranker.
            graph: any object with ``neighbours(docno)``.
            budget: distinct documents re-ranked per query.
            queue_size: ``L``; default ``max(20, budget // 10)`` (20 at budget 100, 30 at 300, 50 at 500).
            window: documents per reranker call.
            step: stride between windows.
            seed_size: first-stage documents seeding ``Q``; default ``max(1, budget // 5)``.
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.graph = graph
        self.budget = budget
        self.queue_size = queue_size
        self.window = window
        self.step = step
        self.seed_size = seed_size
        self.verbose = verbose
        check_positive(budget=budget, window=window, step=step, queue_size=self.L, seed_size=self.seeds)

    @property
    def L(self) -> int:  # noqa: N802 (paper notation)
        """The queue size in use: ``queue_size``, by default ``max(20, budget // 10)``."""
        return self.queue_size if self.queue_size is not None else max(20, self.budget // 10)

    @property
    def seeds(self) -> int:
        """Seed documents in use: ``seed_size``, by default ``max(1, budget // 5)``, at most ``budget``."""
        return min(self.seed_size if self.seed_size is not None else max(1, self.budget // 5), self.budget)

    def _search(self, r0, seen):
        neighbours = neighbour_lookup(self.graph)
        seeds = r0[:self.seeds]
        queue: List[str] = []
        dropped: List[str] = []
        expanded = set()
        new, t = seeds, 0
        while new:
            t += 1
            queue += new
            yield from slide(queue, self.window, self.step, is_new=lambda d: d not in seen)
            seen.update((d, t) for d in new)
            dropped[:0] = queue[self.L:]
            del queue[self.L:]
            new = []
            for docno in queue:
                if len(seen) >= self.budget:
                    break
                if docno not in expanded:
                    expanded.add(docno)
                    new = [n for n in neighbours(docno) if n not in seen][:self.budget - len(seen)]
                    if new:
                        break
        return queue + dropped


class DocGAREN(_WindowSearch):
    """The document-level variant of GAREN (paper Section 6.2): the navigator scores documents, not groups.

    Same loop as :class:`~pyterrier_garen.GAREN` (window ``w``, keep ``h``, budget ``c``, ``T`` iterations, early stop),
    but at each iteration the navigator scores the unobserved k-NN neighbours of the window (at most ``w * k``; scores
    are cached per query and never recomputed), and ``X_t`` takes the best-scored of them (ties by vote = number of
    window documents linking to it, then first-stage rank, then order of discovery), backfilled from ``R_0``. There is
    no explore/exploit switch and no propagation: the final order is the last re-ranked window, then the other observed
    documents in the order the reranker last placed them.

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration']``

    The navigator receives ``qid, query, docno, vote`` rows and fetches text itself. ``last_stats`` and
    ``last_trace`` are as in GAREN (``groups_scored`` counts the documents the navigator scored).
    """

    def __init__(self, reranker: pt.Transformer, graph: Any, navigator: pt.Transformer, *, window: int = 20,
                 keep: int = 10, budget: int = 100, trace: bool = False, verbose: bool = False):
        """
        Args:
            reranker: the document-level reranker.
            graph: any object with ``neighbours(docno)``.
            navigator: scores ``(qid, query, docno)`` rows of candidate documents.
            window: window size ``w``.
            keep: documents kept from one window to the next, ``h`` (``h < w``).
            budget: distinct documents re-ranked per query, ``c``.
            trace: record ``last_trace``.
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.graph = graph
        self.navigator = navigator
        self.window = window
        self.keep = keep
        self.budget = budget
        self.trace = trace
        self.verbose = verbose
        self._validate()

    def _graph(self):
        return self.graph

    def _expand(self, state: QueryState, t, window, n, step):
        votes: Dict[str, int] = {}
        for docno in window:
            for neighbour in state.neighbours(docno):
                if neighbour not in state.observed:
                    votes[neighbour] = votes.get(neighbour, 0) + 1
        new = [d for d in votes if d not in state.cache]
        scored = yield from state.navigate({'key': new, 'docno': new, 'vote': [votes[d] for d in new]})
        order = {d: i for i, d in enumerate(votes)}
        best = sorted(votes, key=lambda d: (-state.cache[d], -votes[d], state.rank0.get(d, math.inf), order[d]))[:n]
        expansion = state.backfill(best, n)
        step.update(candidates=votes, scored=scored, backfill=expansion[len(best):])
        return expansion
