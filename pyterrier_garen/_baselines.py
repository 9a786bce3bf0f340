"""The methods GAREN is compared with: sliding-window re-ranking, SlideGAR, RGS and the document-level variant.

Each is a :class:`~pyterrier_garen._driver.WindowSearch`: its per-query search is a coroutine driven by
:func:`~pyterrier_garen._driver.run_batched`, so every step makes
ONE reranker call covering all active queries. All take the reranker interface of :class:`~pyterrier_garen.GAREN`:
the reranker gets ``qid, query, docno, score, rank`` rows (the window in its current order) and fetches text itself.
"""
from __future__ import annotations

import math
from itertools import islice
from typing import Any, Dict, Iterable, List, Optional

import pyterrier as pt

from ._driver import EVENT, QueryState, Search, WindowSearch, check_final_order, slide
from ._garen import by_last_placement, window_loop
from ._params import check_bool, check_positive

__all__ = ['SlidingWindowReranker', 'SlideGAR', 'RGS', 'DocGAREN']


class SlidingWindowReranker(WindowSearch):
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
                 final_order: str = 'auto', verbose: bool = False):
        """
        Args:
            reranker: the document-level reranker.
            window: documents per reranker call.
            stride: distance between consecutive windows (``<= window``).
            budget: number of first-stage documents re-ranked, ``c``.
            final_order: below the top ``stride`` of the pass: ``'paper'`` (the list as the pass left it),
                ``'score'`` (by reranker score) or ``'auto'`` (``'score'`` unless the reranker declares
                ``listwise = True``; ``'dropped'`` is the pass's own order here, as the pass keeps one sorted list).
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.window = window
        self.stride = stride
        self.budget = budget
        self.final_order = final_order
        self.verbose = verbose
        self._check_sizes()
        check_final_order(final_order, reranker, context=type(self).__name__)

    def _search(self, state):
        ranking = state.r0[:self.budget]
        state.observed.update((d, 1) for d in ranking)
        yield from slide(ranking, self.window, self.stride, state=state)
        return self._final(state, ranking, self.stride, sorted_list=len(ranking))


class SlideGAR(WindowSearch):
    """SlideGAR (Rathee, MacAvaney, Anand, ECIR 2025): listwise graph-based adaptive re-ranking.

    Step 1 re-ranks the top ``w`` of ``R_0``. Each later window is the top ``h`` of the previous ranked window plus
    the next ``min(h, c - seen)`` documents of a pool that alternates between ``R_0`` (unseen docs in rank order) and
    the graph frontier (an empty pool is skipped and counts as a turn). The frontier is rebuilt after every step from
    the neighbours, in graph order, of the kept top ``h`` documents (in rank order, i.e. pseudo-score
    ``1/(rank+1)``), skipping seen documents, until ``h`` are collected. Budget ``c`` = distinct documents sent to the
    reranker (100 -> 9 reranker calls per query).

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration']``: the last ranked window, then the
    documents dropped from earlier windows (most recent first); ``score`` strictly decreasing; ``iteration`` = the
    1-based step in which the document first entered a window.
    """

    graph_param = 'graph'

    def __init__(self, reranker: pt.Transformer, graph: Any, *, window: int = 20, keep: int = 10, budget: int = 100,
                 final_order: str = 'auto', fill: bool = False, verbose: bool = False):
        """
        Args:
            reranker: the document-level (listwise) reranker.
            graph: any object with ``neighbours(docno)`` (a GroupCorpusGraph or a pyterrier-adaptive CorpusGraph).
            window: window (buffer) size ``w``.
            keep: documents kept from one window to the next and added to it, ``b`` in the SlideGAR paper
                (``h`` in GAREN's notation; ``keep < window``).
            budget: distinct documents re-ranked per query, ``c``.
            final_order: below the kept top ``b``: ``'paper'`` (the dropped documents, most recently dropped
                first), ``'score'`` (by reranker score), ``'dropped'`` (by the position at which a window last
                placed them, then most recent first) or ``'auto'`` (``'dropped'`` when the reranker declares
                ``listwise = True``, else ``'score'``).
            fill: (beyond the reference code) when both pools are empty while budget remains (the first stage is
                used up and the kept top has no unseen neighbour: a first stage shorter than the budget, or a sparse
                graph), the next window takes the unseen neighbours of the documents dropped so far (most recently
                dropped first, each one's in graph order) and the search goes on; False: it ends there, as in the
                reference code, with the budget unspent (what GAR's frontier over every scored document, GAREN's
                last resort and ``RGS(backfill=True)`` avoid).
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.graph = graph
        self.window = window
        self.keep = keep
        self.budget = budget
        self.final_order = final_order
        self.fill = fill
        self.verbose = verbose
        self._check_sizes()
        check_bool(fill=fill)
        check_final_order(final_order, reranker, context=type(self).__name__)

    def _search(self, state):
        r0, seen, neighbours = state.r0, state.observed, state.neighbours
        b, c = self.keep, self.budget
        window, dropped, turn, t = r0[:min(self.window, c)], [], 1, 0
        while window:
            t += 1
            seen.update((d, t) for d in window if d not in seen)
            ranked = yield from state.rerank(window)
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
            if not batch and self.fill:  # both empty: widen the frontier to the dropped documents' neighbours
                batch = list(islice(_unseen_neighbours(dropped, neighbours, seen), size))
            window = top + batch if batch else []
        return self._final(state, top + dropped, len(top))


def _unseen_neighbours(docnos, neighbours, seen) -> Iterable[str]:
    """The neighbours of ``docnos`` (in that order, each one's in graph order) not in ``seen``, each once, lazily."""
    found = set()
    for docno in docnos:
        for n in neighbours(docno):
            if n not in seen and n not in found:
                found.add(n)
                yield n


class RGS(WindowSearch):
    """Reranker-Guided Search (Xu & Chen 2025): best-first search over a corpus graph driven by a listwise reranker.

    A ranked queue ``Q`` of size ``L`` is seeded by re-ranking the first ``seed_size`` first-stage documents. While
    ``Q`` holds an unexpanded document and budget remains: take the best unexpanded document, collect its unseen
    neighbours (graph order, cut to the remaining budget), append them to ``Q``, re-rank ``Q`` bottom-up with windows
    of ``window`` ending ``stride`` apart (the reference code's windows, :func:`~pyterrier_garen._driver.queue_windows`:
    the top one can be shorter, and a full one at the top is followed by one over its head; the pass stops at the
    first window without a new document), and truncate ``Q`` to ``L``. Budget = distinct documents ever sent to the
    reranker; documents are re-ranked several times, so reranker calls exceed ``budget / window``. All queries'
    windows of the same step share one reranker call.

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score``

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration']``: ``Q``, then the documents truncated
    from it (most recently truncated first); ``score`` strictly decreasing; ``iteration`` = 1 for seeds, ``k + 1``
    for documents found by the ``k``-th expansion that found unseen neighbours.
    """

    graph_param = 'graph'

    def __init__(self, reranker: pt.Transformer, graph: Any, *, budget: int = 100, queue_size: Optional[int] = None,
                 window: int = 20, stride: int = 10, seed_size: Optional[int] = None, final_order: str = 'auto',
                 backfill: bool = False, verbose: bool = False):
        """
        Args:
            reranker: the document-level (listwise) reranker.
            graph: any object with ``neighbours(docno)``.
            budget: distinct documents re-ranked per query.
            queue_size: ``L``; default ``max(20, budget // 10)`` (20 at budget 100, 30 at 300, 50 at 500).
            window: documents per reranker call.
            stride: distance between consecutive windows.
            seed_size: first-stage documents seeding ``Q``; default ``max(1, budget // 5)``.
            final_order: below the top ``stride`` of ``Q``: ``'paper'`` (``Q``, then the truncated documents, most
                recent first), ``'score'`` (by reranker score), ``'dropped'`` (``Q`` as its windows sorted it, then
                the truncated documents by the place their last window gave them, ties most recent first) or
                ``'auto'`` (``'dropped'`` when the reranker declares ``listwise = True``, else ``'score'``).
            backfill: (beyond the reference code) when no document of ``Q`` has unseen neighbours left while budget
                remains, the next unseen first-stage documents (``seed_size`` of them, at most the budget left) enter
                ``Q`` as new documents and the search goes on from them; False: the search ends there, as in the
                reference code, with the budget unspent.
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.graph = graph
        self.budget = budget
        self.queue_size = queue_size
        self.window = window
        self.stride = stride
        self.seed_size = seed_size
        self.final_order = final_order
        self.backfill = backfill
        self.verbose = verbose
        self._check_sizes()
        check_positive(queue_size=self.L, seed_size=self.seeds)
        check_bool(backfill=backfill)
        check_final_order(final_order, reranker, context=type(self).__name__)

    @property
    def L(self) -> int:  # noqa: N802 (paper notation)
        """The queue size in use: ``queue_size``, by default ``max(20, budget // 10)``."""
        return self.queue_size if self.queue_size is not None else max(20, self.budget // 10)

    @property
    def seeds(self) -> int:
        """Seed documents in use: ``seed_size``, by default ``max(1, budget // 5)``, at most ``budget``."""
        return min(self.seed_size if self.seed_size is not None else max(1, self.budget // 5), self.budget)

    def _search(self, state):
        r0, seen, neighbours = state.r0, state.observed, state.neighbours
        seeds = r0[:self.seeds]
        queue: List[str] = []
        dropped: List[str] = []
        expanded = set()
        new, t = seeds, 0
        while new:
            t += 1
            queue += new
            yield from slide(queue, self.window, self.stride, is_new=lambda d: d not in seen, state=state, queue=True)
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
            if not new and self.backfill and len(seen) < self.budget:  # the graph ran out around Q
                new = list(islice(state.unobserved_r0(), min(self.seeds, self.budget - len(seen))))
        return self._final(state, queue + dropped, min(self.stride, len(queue)), sorted_list=len(queue))


class DocGAREN(WindowSearch):
    """The document-level variant of GAREN (paper Section 6.2): the navigator scores documents, not groups.

    Same loop as :class:`~pyterrier_garen.GAREN` (window ``w``, keep ``h``, budget ``c`` spent, early stop),
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

    graph_param = 'graph'

    def __init__(self, reranker: pt.Transformer, graph: Any, navigator: pt.Transformer, *, window: int = 20,
                 keep: int = 10, budget: int = 100, final_order: str = 'auto', trace: bool = False,
                 verbose: bool = False):
        """
        Args:
            reranker: the document-level reranker.
            graph: any object with ``neighbours(docno)``.
            navigator: scores ``(qid, query, docno)`` rows of candidate documents.
            window: window size ``w``.
            keep: documents kept from one window to the next, ``h`` (``h < w``).
            budget: distinct documents re-ranked per query, ``c``.
            final_order: below the kept top ``h``: ``'paper'`` (the order the reranker last placed them),
                ``'score'`` (by reranker score), ``'dropped'`` (by the position at which a window last placed them,
                then later iterations first) or ``'auto'`` (``'dropped'`` when the reranker declares
                ``listwise = True``, else ``'score'``).
            trace: record ``last_trace``.
            verbose: show a progress bar.
        """
        self.reranker = reranker
        self.graph = graph
        self.navigator = navigator
        self.window = window
        self.keep = keep
        self.budget = budget
        self.final_order = final_order
        self.trace = trace
        self.verbose = verbose
        self._check_sizes()
        check_final_order(final_order, reranker, context=type(self).__name__)

    def _search(self, state: QueryState) -> Search:
        reranked = yield from window_loop(state, self._expand, window=self.window, keep=self.keep, budget=self.budget)
        if not reranked:
            return []
        return self._final(state, by_last_placement(state.observed, state.last), min(self.keep, len(reranked)))

    def _expand(self, state: QueryState, t: int, window: List[str], n: int) -> Search:
        votes: Dict[str, int] = {}
        for docno in window:
            for neighbour in state.neighbours(docno):
                if neighbour not in state.observed:
                    votes[neighbour] = votes.get(neighbour, 0) + 1
        new = [d for d in votes if d not in state.cache]
        scored = yield from state.navigate(new, {'docno': new, 'vote': [votes[d] for d in new]})
        order = {d: i for i, d in enumerate(votes)}
        best = sorted(votes, key=lambda d: (-state.cache[d], -votes[d], state.rank0.get(d, math.inf), order[d]))[:n]
        expansion = state.backfill(best, n)
        yield EVENT, {'iteration': t, 'candidates': votes, 'scored': scored, 'backfill': expansion[len(best):]}
        return expansion
