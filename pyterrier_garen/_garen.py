"""GAREN: group-aware adaptive re-ranking (paper Algorithm 1, Section 4.3, Appendix E).

The per-query search is written as a coroutine that reads like Algorithm 1: it ``yield``s a window to re-rank
(or rows for the navigator to score) and receives the answer. :func:`run_batched` drives the coroutines of all
queries in lock-step, so each step makes ONE model call covering every active query. The baselines
(``_baselines.py``) reuse the same driver.
"""
from __future__ import annotations

import inspect
import math
import warnings
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, Generator, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

__all__ = ['GAREN', 'Strategy', 'num_iterations', 'vote_groups', 'select_groups', 'take', 'propagate', 'run_batched']

RERANK = 'rerank'
NAVIGATE = 'navigate'
#: Depth of the final ranking whose documents carry evidence b(d) in Group-Driven Evidence Propagation (paper Eq. 8).
PROPAGATION_DEPTH = 10
RESULT_COLUMNS = ['qid', 'query', 'docno', 'score', 'rank']
STATS_COLUMNS = ['qid', 'docs_reranked', 'groups_scored', 'reranker_calls', 'navigator_calls', 'iterations']

Request = Tuple[str, Any]  # (RERANK, docnos) or (NAVIGATE, {column: values})
Search = Generator[Request, Any, Any]


class Strategy(str, Enum):
    """Window expansion strategy (paper Section 4.2.2). Accepts plain strings, e.g. ``'explore'``."""
    EXPLORE = 'explore'
    EXPLOIT = 'exploit'
    EXPLORE_EXPLOIT = 'explore_exploit'


# ---------------------------------------------------------------------------------------------------------------------
# pure algorithm steps

def num_iterations(budget: int, window: int, keep: int) -> int:
    """Number of iterations ``T = 1 + ceil((c - w) / (w - h))`` (1 when the budget ``c`` does not exceed ``w``)."""
    return 1 + max(0, math.ceil((budget - window) / (window - keep)))


def vote_groups(window: Sequence[str], neighbours: Callable[[str], Sequence[str]],
                group_of: Callable[[str], int]) -> Dict[int, int]:
    """Candidate groups of a window and their votes (paper Eq. 5 and Eq. 11).

    Args:
        window: the window ``W_t``.
        neighbours: ``N_k(d)``, the k-NN neighbours of a document (without the document itself).
        group_of: ``Omega(d)``, the group id of a document (-1 when it has none).

    Returns:
        ``{group: vote}`` for every group of ``G^cand_t``, where vote = number of window documents with a neighbour
        in the group; groups in order of first appearance.
    """
    votes: Dict[int, int] = {}
    for docno in window:
        for gid in {group_of(n) for n in neighbours(docno)} - {-1}:
            votes[gid] = votes.get(gid, 0) + 1
    return votes


def select_groups(votes: Dict[int, int], scored: Dict[int, float], budget: int, *, best_rank: Dict[int, int],
                  is_open: Callable[[int], bool], fill: Iterable[int]) -> List[int]:
    """Groups the navigator scores in this iteration (paper Appendix E, "Budget allocation").

    Unscored candidate groups that still hold unobserved documents are ranked by vote, ties by the best first-stage
    rank of any member, then group id; the top ``K_g`` are taken. When fewer exist, the budget is filled with the
    groups of the best-ranked unobserved first-stage documents.

    Args:
        votes: ``{group: vote}`` of the candidate groups ``G^cand_t``.
        scored: the navigator cache ``Pi_q`` (groups already scored are never scored again).
        budget: ``K_g``.
        best_rank: best first-stage rank of any member of a group (groups absent from ``R_0`` rank last).
        is_open: whether a group still holds unobserved documents.
        fill: groups of the unobserved documents of ``R_0``, in rank order.

    Returns:
        The groups to score, candidates first.
    """
    chosen = sorted((g for g in votes if g not in scored and is_open(g)),
                    key=lambda g: (-votes[g], best_rank.get(g, math.inf), g))[:budget]
    taken = set(chosen)
    for gid in fill:
        if len(chosen) >= budget:
            break
        if gid != -1 and gid not in scored and gid not in taken:
            chosen.append(gid)
            taken.add(gid)
    return chosen


def take(pools: Sequence[Sequence[str]], n: int, *, round_robin: bool) -> List[str]:
    """Expansion documents ``X_t`` from ordered pools (paper Section 4.2.2).

    Args:
        pools: per eligible group (in descending navigator score), its unobserved documents in order.
        n: number of documents to take (``w - h``, or what is left of the budget).
        round_robin: explore (one document from each pool in turn) if True, exploit (exhaust the best pool, then
            the next) if False.

    Returns:
        Up to ``n`` documents, without duplicates.
    """
    if round_robin:
        order = (pool[i] for i in range(max(map(len, pools), default=0)) for pool in pools if i < len(pool))
    else:
        order = (docno for pool in pools for docno in pool)
    out: Dict[str, None] = {}
    for docno in order:
        if len(out) >= n:
            break
        out.setdefault(docno)
    return list(out)


def propagate(final: Sequence[str], observed: Iterable[str], last: Dict[str, Tuple[int, int]],
              group_of: Callable[[str], int], p: float, alpha: float) -> List[str]:
    """Group-Driven Evidence Propagation (paper Section 4.3, Eq. 8-9); returns the final order of the observed docs.

    ``b(d) = (1-p) p^(rank(d)-1)`` for the top :data:`PROPAGATION_DEPTH` documents of the last re-ranked window
    ``W~_T`` (0 otherwise) and ``score(d) = b(d) + alpha * sum(b(d') for observed d' with Omega(d') = Omega(d))``.
    The sum includes ``d`` itself (the paper's condition does not exclude it); documents without a group (-1) get no
    group term. Ties (most documents score 0) keep the order in which the reranker last placed them: later
    iterations first, then window position.

    Args:
        final: ``W~_T``.
        observed: every observed document.
        last: ``(iteration, position)`` of the last re-ranked window each document appeared in.
        group_of: ``Omega(d)``.
        p: RBP decay ``p``.
        alpha: propagation weight ``alpha``.
    """
    base = {d: (1 - p) * p ** i for i, d in enumerate(final[:PROPAGATION_DEPTH])}
    bonus: Dict[int, float] = {}
    for docno, b in base.items():
        gid = group_of(docno)
        if gid != -1:
            bonus[gid] = bonus.get(gid, 0.) + b

    def key(docno):
        gid = group_of(docno)
        score = base.get(docno, 0.) + (alpha * bonus.get(gid, 0.) if gid != -1 else 0.)
        return -score, -last[docno][0], last[docno][1]
    return sorted(observed, key=key)


def by_last_placement(observed: Iterable[str], last: Dict[str, Tuple[int, int]]) -> List[str]:
    """Observed documents in the order the reranker last placed them: later iterations first, then position."""
    return sorted(observed, key=lambda d: (-last[d][0], last[d][1]))


# ---------------------------------------------------------------------------------------------------------------------
# batching across queries

def run_batched(searches: Dict[Tuple[Any, str], Search], handlers: Dict[str, Callable[[list], list]], *,
                desc: str = 'searching', verbose: bool = False) -> Dict[Tuple[Any, str], Any]:
    """Drive per-query search coroutines in lock-step, one model call per step for all of them.

    Args:
        searches: ``{(qid, query): coroutine}``; each coroutine yields ``(kind, payload)`` requests, receives the
            answer and finally returns its result.
        handlers: ``{kind: handler}``; a handler gets ``[(qid, query, payload), ...]`` and returns the answers in
            the same order. When several kinds are pending, the first kind in ``handlers`` is served first (the
            others wait), which keeps the queries in the same iteration.
        desc: progress-bar label.
        verbose: show a progress bar over queries.

    Returns:
        ``{(qid, query): result}``.
    """
    results: Dict[Tuple[Any, str], Any] = {}
    pending: Dict[Tuple[Any, str], Request] = {}
    pbar = pt.tqdm(total=len(searches), desc=desc, unit='query') if verbose else None

    def advance(key, answer):
        try:
            pending[key] = searches[key].send(answer)
        except StopIteration as stop:
            pending.pop(key, None)
            results[key] = stop.value
            if pbar is not None:
                pbar.update()
    for key in searches:
        advance(key, None)
    while pending:
        kind = next(k for k in handlers if any(req[0] == k for req in pending.values()))
        keys = [key for key, req in pending.items() if req[0] == kind]
        answers = handlers[kind]([(*key, pending[key][1]) for key in keys])
        for key, answer in zip(keys, answers):
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
    out = model(frame)
    if 'score' not in out.columns or 'docno' not in out.columns:
        raise ValueError(f'the {role} {model!r} must return qid, docno and score columns; got {list(out.columns)}')
    returned = pd.Series(out['score'].to_numpy(dtype=float),
                         index=pd.MultiIndex.from_arrays([out['qid'], out['docno'].astype(str)]))
    scores = returned[~returned.index.duplicated()].reindex(pd.MultiIndex.from_arrays([frame.qid, frame.docno]))
    missing = scores.isna().to_numpy()
    if missing.any():
        qids = sorted({str(q) for q in frame.qid[missing]})
        warnings.warn(f'the {role} {model!r} returned no score for {missing.sum()} rows (qids {qids[:5]}); '
                      'they are ranked last', stacklevel=3)
    return np.split(np.nan_to_num(scores.to_numpy(), nan=-np.inf), np.cumsum(lengths)[:-1])


def rerank_handler(reranker: pt.Transformer) -> Callable[[list], List[List[str]]]:
    """Handler of :data:`RERANK` requests: orders each window by descending reranker score, ties by window order.

    The reranker receives ``qid, query, docno, score, rank`` rows, where ``score``/``rank`` give the current window
    order (``score = len(window) - position``, ``rank = position``); it fetches any text itself.
    """
    def handle(requests):
        requests = [(qid, query, {'docno': list(docs), 'score': np.arange(len(docs), 0, -1, dtype=float),
                                  'rank': np.arange(len(docs))}) for qid, query, docs in requests]
        scores = _call(reranker, requests, 'reranker')
        return [[payload['docno'][i] for i in np.lexsort((np.arange(len(s)), -s))]
                for (_, _, payload), s in zip(requests, scores)]
    return handle


def score_handler(navigator: pt.Transformer) -> Callable[[list], List[np.ndarray]]:
    """Handler of :data:`NAVIGATE` requests: the navigator's score of every row (``-inf`` when it returns none)."""
    return lambda requests: _call(navigator, requests, 'navigator')


# ---------------------------------------------------------------------------------------------------------------------
# transformer plumbing shared by GAREN and the baselines

def first_stage(inp: pd.DataFrame, context: Optional[pt.Transformer] = None) -> List[Tuple[Any, str, List[str]]]:
    """``[(qid, query, R_0)]`` with ``R_0`` the docnos by ``rank`` (else descending ``score``, else input order).

    Duplicate docnos of a query keep their first occurrence in that order, with a warning.
    """
    pt.validate.result_frame(inp, extra_columns=['query'], context=context)
    order = [c for c in ('rank', 'score') if c in inp.columns][:1]
    frame = inp.sort_values(order, ascending='rank' in order, kind='stable') if order else inp
    frame = frame.assign(docno=frame['docno'].astype(str))
    duplicated = frame.duplicated(['qid', 'docno']).to_numpy()
    if duplicated.any():
        warnings.warn(f'{context!r}: dropped {duplicated.sum()} duplicate docnos (kept the first occurrence of each '
                      f'per query)', stacklevel=3)
        frame = frame[~duplicated]
    return [(qid, group['query'].iloc[0], group['docno'].tolist()) for qid, group in frame.groupby('qid', sort=False)]


def ranking_frame(rankings: List[Tuple[Any, str, List[str], Dict[str, Sequence]]],
                  columns: Sequence[str] = ()) -> pd.DataFrame:
    """Result frame of ``[(qid, query, docnos, {column: values})]``, score strictly decreasing with rank."""
    lengths = [len(docnos) for _, _, docnos, _ in rankings]
    ranks = np.concatenate([np.arange(n) for n in lengths]) if rankings else np.zeros(0, dtype=int)
    frame = pd.DataFrame({
        'qid': np.repeat([r[0] for r in rankings], lengths).astype(object),
        'query': np.repeat([r[1] for r in rankings], lengths).astype(object),
        'docno': np.concatenate([np.asarray(r[2], dtype=object) for r in rankings]) if rankings else [],
        'score': np.repeat(np.asarray(lengths, dtype=float), lengths) - ranks,
        'rank': ranks,
    }, columns=RESULT_COLUMNS)
    for col in columns:
        frame[col] = np.concatenate([np.asarray(r[3][col], dtype=int) for r in rankings]) if rankings else []
        frame[col] = frame[col].astype(int)
    return frame


def rebuild_repr(obj: Any) -> str:
    """``Class(positional args, keyword=value...)`` of the ``__init__`` arguments, keywords only when not default."""
    args = []
    for name, param in inspect.signature(type(obj).__init__).parameters.items():
        if name == 'self':
            continue
        value = getattr(obj, name)
        if param.kind == param.KEYWORD_ONLY:
            if value is not param.default and value != param.default:
                args.append(f'{name}={value!r}')
        else:
            args.append(repr(value))
    return f'{type(obj).__name__}({", ".join(args)})'


def neighbour_lookup(graph: Any) -> Callable[[str], List[str]]:
    """Cached ``N_k(d)`` of a graph with ``neighbours(docno)``: docnos as ``str``, without ``d``, ``[]`` if unknown."""
    cache: Dict[str, List[str]] = {}

    def neighbours(docno: str) -> List[str]:
        if docno not in cache:
            try:
                found = graph.neighbours(docno)
            except (LookupError, ValueError):  # pyterrier-adaptive graphs raise on docnos they do not hold
                found = ()
            cache[docno] = list(dict.fromkeys(str(n) for n in found if str(n) != docno))
        return cache[docno]
    return neighbours


def check_positive(**values: int) -> None:
    """Raise ``ValueError`` for any non-positive integer parameter."""
    for name, value in values.items():
        if not isinstance(value, (int, np.integer)) or value < 1:
            raise ValueError(f'{name} must be a positive integer, got {value!r}')


# ---------------------------------------------------------------------------------------------------------------------
# the GAREN loop

@dataclass
class QueryState:
    """What one query's search knows: ``R_0``, the observed documents and the navigator cache ``Pi_q``."""
    r0: List[str]
    neighbours: Callable[[str], List[str]]
    rank0: Dict[str, int] = field(init=False)
    observed: Dict[str, int] = field(default_factory=dict)  # docno -> iteration it first entered a window
    last: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # docno -> (iteration, position) last re-ranked
    cache: Dict[Any, float] = field(default_factory=dict)  # the navigator cache Pi_q
    members: Dict[int, List[str]] = field(default_factory=dict)  # group -> members in expansion order
    best_rank: Dict[int, int] = field(default_factory=dict)  # group -> best first-stage rank of a member
    trace: List[Dict[str, Any]] = field(default_factory=list)
    reranker_calls: int = 0
    navigator_calls: int = 0

    def __post_init__(self):
        self.rank0 = {d: i for i, d in enumerate(self.r0)}

    def unobserved_r0(self) -> Iterable[str]:
        return (d for d in self.r0 if d not in self.observed)

    def navigate(self, payload: Dict[str, list]) -> Generator[Request, Any, Dict[Any, float]]:
        """Score the payload rows with the navigator (one request), cache and return ``{key: score}``.

        ``payload['key']`` names the cache entry of each row; the other columns go to the navigator.
        """
        keys = payload.pop('key')
        if not keys:
            return {}
        self.navigator_calls += 1
        scores = yield NAVIGATE, payload
        new = dict(zip(keys, map(float, scores)))
        self.cache.update(new)
        return new

    def backfill(self, chosen: List[str], n: int) -> List[str]:
        """Complete ``chosen`` to ``n`` documents with unobserved documents of ``R_0`` in rank order."""
        picked = set(chosen)
        extra = (d for d in self.unobserved_r0() if d not in picked)
        return chosen + [d for _, d in zip(range(n - len(chosen)), extra)]


class _WindowSearch(pt.Transformer):
    """The window loop of Algorithm 1, batched across queries; subclasses define the expansion step."""
    window: int
    keep: int
    budget: int
    trace: bool
    verbose: bool
    reranker: pt.Transformer
    navigator: pt.Transformer
    extra_columns: Tuple[str, ...] = ('iteration',)

    def _validate(self):
        check_positive(window=self.window, keep=self.keep, budget=self.budget)
        if self.keep >= self.window:
            raise ValueError(f'keep (h={self.keep}) must be smaller than window (w={self.window}), otherwise no new '
                             f'document can enter the window; e.g. keep={self.window // 2}')

    def __repr__(self):
        return rebuild_repr(self)

    def _graph(self) -> Any:
        raise NotImplementedError

    def _expand(self, state: QueryState, t: int, window: List[str], n: int, step: Dict[str, Any]) -> Search:
        """Yield navigator requests, then return the expansion documents ``X_t`` (at most ``n``)."""
        raise NotImplementedError

    def _final(self, state: QueryState, reranked: List[str]) -> List[str]:
        return by_last_placement(state.observed, state.last)

    def _columns(self, state: QueryState, ranking: List[str]) -> Dict[str, list]:
        return {'iteration': [state.observed[d] for d in ranking]}

    def _search(self, state: QueryState) -> Search:
        """Algorithm 1 for one query; returns the final ranking of the observed documents."""
        w, h, c = self.window, self.keep, self.budget
        horizon = num_iterations(c, w, h)
        window = state.r0[:min(w, c)]
        t = 0
        while window:
            t += 1
            for docno in window:
                state.observed.setdefault(docno, t)
            state.reranker_calls += 1
            reranked = yield RERANK, window
            state.last.update((d, (t, i)) for i, d in enumerate(reranked))
            step: Dict[str, Any] = {'iteration': t, 'window': list(window), 'reranked': list(reranked)}
            if self.trace:
                state.trace.append(step)
            n = min(w - h, c - len(state.observed))
            if t >= horizon or n <= 0:
                break
            expansion = yield from self._expand(state, t, window, n, step)
            step['expansion'] = expansion
            if not expansion:  # nothing new can enter the window: stop early, never re-rank the same docs again
                break
            window = reranked[:h] + expansion
        return self._final(state, reranked) if t else []

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        """Run the search for every query of ``inp`` (a first-stage result frame)."""
        queries = first_stage(inp, context=self)
        neighbours = neighbour_lookup(self._graph())
        states = {(qid, query): QueryState(r0, neighbours) for qid, query, r0 in queries}
        rankings = run_batched({key: self._search(s) for key, s in states.items()},
                               {NAVIGATE: score_handler(self.navigator), RERANK: rerank_handler(self.reranker)},
                               desc=type(self).__name__, verbose=self.verbose)
        self.last_stats = pd.DataFrame([(qid, len(s.observed), len(s.cache), s.reranker_calls, s.navigator_calls,
                                         max((t for t, _ in s.last.values()), default=0))
                                        for (qid, _), s in states.items()], columns=STATS_COLUMNS)
        self.last_trace = [{'qid': key[0], **step} for key, s in states.items() for step in s.trace]
        return ranking_frame([(*key, rankings[key], self._columns(states[key], rankings[key])) for key in states],
                             self.extra_columns)


class GAREN(_WindowSearch):
    """Group-Aware Adaptive Retrieval for Evidence Navigation (GAREN).

    Required input columns: ``['qid', 'query', 'docno']`` plus ``rank`` or ``score`` (the first-stage ranking
    ``R_0``; other columns, e.g. ``text``, are ignored).

    Output columns: ``['qid', 'query', 'docno', 'score', 'rank', 'iteration', 'group']``: every observed document
    (at most ``budget`` per query) in the final order; ``score`` strictly decreases with rank (it is derived from the
    order, so that evaluation tools cannot re-sort ties by docno), ``iteration`` is the 1-based iteration in which the
    document first entered a window, ``group`` its group id (-1 when it is not in the graph).

    Each iteration ``t`` re-ranks the window ``W_t`` (``W_1`` = the top ``w`` of ``R_0``), scores up to ``K_g`` new
    groups around it with the navigator, and builds ``W_{t+1} = W~_t[:h] + X_t`` from the best groups (explore:
    round-robin over the eligible groups by descending navigator score; exploit: depth-first), backfilling from
    ``R_0`` when the groups run dry; it stops after ``T = 1 + ceil((c - w) / (w - h))`` iterations or earlier when
    nothing new can enter. Finally Group-Driven Evidence Propagation (:func:`propagate`) orders all observed docs.
    All queries advance in lock-step: every iteration makes ONE reranker call with the windows of all active queries
    and at most ONE navigator call with all their new groups.

    Decisions beyond the paper (see also :func:`select_groups`, :func:`propagate`):

    * a candidate group whose members were all observed is not sent to the navigator (it could never be expanded);
    * eligible groups with equal navigator scores are ordered by vote, then best first-stage rank, then group id;
    * within a group, unobserved members in first-stage rank order, members absent from ``R_0`` after them in the
      graph's member order;
    * the last expansion is cut to what is left of the budget; ``budget < window`` truncates ``W_1`` to ``budget``.

    With a pointwise reranker GAREN re-ranks only the first-stage top ``w`` directly, so it trades some top-10
    precision against plain top-``c`` re-ranking for recall beyond the first stage.

    The reranker receives ``qid, query, docno, score, rank`` rows (``score``/``rank`` encode the current window
    order) and must fetch text itself (e.g. ``pt.text.get_text(dataset, 'text') >> reranker``); each window is ordered
    by descending returned score, ties by window order. The navigator receives ``qid, query, docno, text, vote`` rows:
    ``docno`` = the group id as a string, ``text`` = ``groups.summary(gid)``, ``vote`` = its vote in that iteration (0
    for groups added by the first-stage fill rule).

    After :meth:`transform`, ``last_stats`` holds per-query accounting (``qid, docs_reranked, groups_scored,
    reranker_calls, navigator_calls, iterations``) and, with ``trace=True``, ``last_trace`` one dict per query and
    iteration (``qid, iteration, window, reranked, mode, candidates, scored, eligible, chosen_groups, expansion,
    backfill``).
    """
    extra_columns = ('iteration', 'group')

    def __init__(self,
                 reranker: pt.Transformer,
                 groups: Any,
                 navigator: pt.Transformer,
                 *,
                 window: int = 20,
                 keep: int = 10,
                 budget: int = 100,
                 group_budget: int = 20,
                 tau_switch: int = 4,
                 strategy: Strategy = Strategy.EXPLORE_EXPLOIT,
                 propagate: bool = True,
                 p: float = 0.6,
                 alpha: float = 0.01,
                 trace: bool = False,
                 verbose: bool = False):
        """
        Args:
            reranker: document-level reranker; scores ``(qid, query, docno)`` rows (listwise scores encode order).
            groups: the group graph (``neighbours``, ``group_of``, ``group_members``, ``summary``), e.g. a
                :class:`~pyterrier_garen.GroupCorpusGraph`.
            navigator: group-level navigator; scores ``(qid, query, docno=<group id>, text=<summary>, vote)`` rows.
            window: window size ``w``.
            keep: documents kept from one window to the next, ``h`` (``h < w``).
            budget: total number of distinct documents re-ranked per query, ``c``.
            group_budget: new groups scored by the navigator per iteration, ``K_g``.
            tau_switch: last exploring iteration ``tau_switch`` (explore while ``t <= tau_switch``).
            strategy: ``'explore_exploit'`` (paper), ``'explore'`` (always explore) or ``'exploit'`` (always exploit).
            propagate: apply Group-Driven Evidence Propagation; if False the final order is the last re-ranked window,
                then the other observed documents in the order the reranker last placed them.
            p: RBP decay ``p`` of the propagation.
            alpha: propagation weight ``alpha``.
            trace: record ``last_trace``.
            verbose: show a progress bar.

        Raises:
            ValueError: on a non-positive size, ``keep >= window`` or an unknown strategy.
        """
        self.reranker = reranker
        self.groups = groups
        self.navigator = navigator
        self.window = window
        self.keep = keep
        self.budget = budget
        self.group_budget = group_budget
        self.tau_switch = tau_switch
        self.strategy = Strategy(strategy)
        self.propagate = propagate
        self.p = p
        self.alpha = alpha
        self.trace = trace
        self.verbose = verbose
        self._validate()
        if not isinstance(group_budget, (int, np.integer)) or group_budget < 0:
            raise ValueError(f'group_budget (K_g) must be a non-negative integer, got {group_budget!r}')

    def _graph(self):
        return self.groups

    def _explores(self, t: int) -> bool:
        return self.strategy == Strategy.EXPLORE or (self.strategy == Strategy.EXPLORE_EXPLOIT and t <= self.tau_switch)

    def _expand(self, state, t, window, n, step):
        groups = self.groups
        members, best_rank = state.members, state.best_rank
        if not best_rank:
            for docno in state.r0:
                best_rank.setdefault(groups.group_of(docno), state.rank0[docno])

        def pool(gid):  # unobserved members: first-stage rank order, then members absent from R_0 (stable sort)
            if gid not in members:
                members[gid] = sorted(map(str, groups.group_members(gid)), key=lambda d: state.rank0.get(d, math.inf))
            return [d for d in members[gid] if d not in state.observed]

        votes = vote_groups(window, state.neighbours, groups.group_of)
        chosen = select_groups(votes, state.cache, self.group_budget, best_rank=best_rank,
                               is_open=lambda g: bool(pool(g)),
                               fill=(groups.group_of(d) for d in state.unobserved_r0()))
        scored = yield from state.navigate({'key': chosen, 'docno': [str(g) for g in chosen],
                                            'text': [groups.summary(g) or '' for g in chosen],
                                            'vote': [votes.get(g, 0) for g in chosen]})
        eligible = sorted((g for g in dict.fromkeys([*votes, *chosen]) if g in state.cache and pool(g)),
                          key=lambda g: (-state.cache[g], -votes.get(g, 0), best_rank.get(g, math.inf), g))
        explore = self._explores(t)
        picked = take([pool(g) for g in eligible], n, round_robin=explore)
        expansion = state.backfill(picked, n)
        step.update(mode='explore' if explore else 'exploit', candidates=votes, scored=scored, eligible=eligible,
                    chosen_groups=list(dict.fromkeys(groups.group_of(d) for d in picked)),
                    backfill=expansion[len(picked):])
        return expansion

    def _final(self, state, reranked):
        if not self.propagate:
            return super()._final(state, reranked)
        return propagate(reranked, state.observed, state.last, self.groups.group_of, self.p, self.alpha)

    def _columns(self, state, ranking):
        return {**super()._columns(state, ranking), 'group': [self.groups.group_of(d) for d in ranking]}
