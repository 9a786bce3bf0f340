"""Analysis instruments and helpers behind the notebooks and ``examples/strength_sweep.py``.

* :class:`SimulatedReranker` / :class:`SimulatedNavigator`: scorers of controlled strength that read the relevance
  judgements (label plus fixed Gaussian noise). They are *instruments* for studying how a search method behaves as the
  reranker (or navigator) gets stronger, never retrieval models: they need the qrels of the queries they score.
* reachability: hop distance of the relevant documents from the first stage (:func:`gold_hops`,
  :func:`recall_by_hop`), where GAREN lost each relevant document (:func:`gold_group_status`, paper Appendix C.3),
  and how well the navigator ranked the groups holding them (:func:`navigator_quality`).
* the reranker-strength sweep (:func:`strength_sweep`, :func:`sweep_summary`, :func:`sweep_tests`,
  :func:`plot_strength_sweep`; command line: ``examples/strength_sweep.py``).
* how ``GAREN(adaptive_interleave=...)`` split its expansions between the first stage and the groups
  (:func:`first_stage_shares`, :func:`share_summary`).
* budget curves and plots.
* issue 16's claims over sweep CSVs (:func:`load_sweeps`, :func:`budget_monotonicity`, :func:`monotonicity_summary`,
  :func:`baseline_margins`,
  :func:`strength_response`, :func:`claims_report`, :func:`sweep_provenance`; command line:
  ``examples/sweep_verdict.py``), and each margin at no more reranker work (:func:`cost_matched_margins`; command
  line: ``examples/cost_matched.py``).

matplotlib is imported inside the plotting functions only.
"""
from __future__ import annotations

import math
import warnings
from collections import deque
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import pandas as pd
import pyterrier as pt

from ._claims import (ALPHA, baseline_margins, budget_monotonicity, budget_values, claims_report, cost_matched_margins,
                      coverage_gaps, fusion_weight_margins,
                      load_per_query, load_sweeps, monotonicity_summary, parse_sweep_files, per_query_path,
                      provenance_notes,
                      strength_response, stratified_paired_interval, stratified_paired_test, sweep_provenance)
from ._compare import add_fusion_arguments, describe_fusion, own_fusion_notes, resolve_fusion, vectors_precision
from ._frames import numeric_order
from ._params import check_int
from ._simulation import ListwiseView, SimulatedNavigator, SimulatedReranker, stable_noise
from ._sweep import (SWEEP_COLUMNS, SWEEP_SYSTEMS, AppendedTable, check_sweep_arguments, check_variants, judged_topics,
                     parse_variants, partition_groups, plot_strength_sweep, reranker_labels, strength_sweep,
                     sweep_plot_file, sweep_summary, sweep_tests)

__all__ = ['SimulatedReranker', 'SimulatedNavigator', 'ListwiseView', 'stable_noise', 'doc_hops', 'group_hops',
           'gold_hops',
           'recall_by_hop', 'gold_group_diagnostics', 'gold_group_status', 'GOLD_STAGES', 'navigator_quality',
           'budget_curve',
           'plot_budget_curve', 'plot_recall_by_hop', 'strength_sweep', 'sweep_summary', 'sweep_tests',
           'plot_strength_sweep', 'sweep_plot_file', 'partition_groups', 'judged_topics',
           'check_sweep_arguments', 'check_variants', 'parse_variants', 'SWEEP_SYSTEMS', 'SWEEP_COLUMNS',
           'add_fusion_arguments', 'describe_fusion', 'own_fusion_notes', 'first_stage_shares', 'resolve_fusion',
           'share_summary', 'load_sweeps', 'budget_monotonicity', 'monotonicity_summary', 'baseline_margins',
           'fusion_weight_margins', 'cost_matched_margins', 'budget_values', 'coverage_gaps', 'strength_response',
           'load_per_query', 'per_query_path', 'parse_sweep_files', 'stratified_paired_test',
           'stratified_paired_interval', 'ALPHA',
           'claims_report', 'reranker_labels',
           'sweep_provenance', 'provenance_notes', 'vectors_precision', 'budget_swaps',
           'AppendedTable']


def _as_text(frame: pd.DataFrame) -> pd.DataFrame:
    """``qid`` and ``docno`` as strings: qrels read with integer ids then match a run's string ones."""
    return frame.assign(qid=frame.qid.astype(str), docno=frame.docno.astype(str))


def _ranked(run: pd.DataFrame) -> pd.DataFrame:
    """A run in its ranked order: by ``rank`` where it has one, else by descending ``score``, else as given (a
    column of numbers written as text read as numbers)."""
    run = numeric_order(run, 'the run')
    order = [c for c in ('rank', 'score') if c in run.columns][:1]
    return run.sort_values(order, ascending='rank' in order, kind='stable') if order else run


def _bfs(seeds: Iterable[int], neighbours, limit: int) -> Dict[int, int]:
    dist = {s: 0 for s in seeds}
    queue = deque(dist)
    while queue:
        node = queue.popleft()
        if dist[node] >= limit:
            continue
        for nb in neighbours(node):
            if nb not in dist:
                dist[nb] = dist[node] + 1
                queue.append(nb)
    return dist


def doc_hops(groups, seed_docnos: Sequence[str], *, limit: int = 6) -> Dict[int, int]:
    """Hop distance (following k-NN edges) from the seed documents to every reachable document id."""
    edges = np.asarray(groups.edges_data)
    seeds = [i for i in groups.doc_ids(list(seed_docnos)).tolist() if i >= 0]
    return _bfs(seeds, lambda i: edges[i].tolist(), limit)


def _group_adjacency(groups) -> List[np.ndarray]:
    cached = getattr(groups, '_analysis_group_adjacency', None)
    if cached is None:
        gid = np.asarray(groups.group_ids, dtype=np.int64)
        edges = np.asarray(groups.edges_data, dtype=np.int64)
        src = np.repeat(gid, edges.shape[1])
        dst = gid[edges.reshape(-1)]
        pairs = np.unique(np.stack([src, dst], axis=1)[src != dst], axis=0)
        offsets = np.searchsorted(pairs[:, 0], np.arange(groups.num_groups + 1))
        cached = [pairs[offsets[g]:offsets[g + 1], 1] for g in range(groups.num_groups)]
        groups._analysis_group_adjacency = cached
    return cached


def group_hops(groups, seed_docnos: Sequence[str], *, limit: int = 6) -> Dict[int, int]:
    """Hop distance on the group graph (groups linked when a k-NN edge joins their members) from seed groups."""
    adjacency = _group_adjacency(groups)
    seeds = sorted({g for g in groups.groups_of(list(seed_docnos)).tolist() if g >= 0})
    return _bfs(seeds, lambda g: adjacency[g].tolist(), limit)


def gold_hops(groups, first_stage: pd.DataFrame, qrels: pd.DataFrame, *, top: int = 20,
              limit: int = 6) -> pd.DataFrame:
    """For every relevant (qid, docno): its hop distance from the first-stage top-``top`` on both graphs.

    Returns ``qid, docno, doc_hop, group_hop`` (``limit + 1`` = farther or unreachable).
    """
    rows = []
    relevant = _as_text(qrels[qrels.label > 0])
    tops = {qid: list(df.docno[:top]) for qid, df in _ranked(_as_text(first_stage)).groupby('qid', sort=False)}
    for qid, rel in relevant.groupby('qid'):
        seeds = tops.get(qid, [])
        dh, gh = doc_hops(groups, seeds, limit=limit), group_hops(groups, seeds, limit=limit)
        ids = groups.doc_ids(list(rel.docno))
        gids = groups.groups_of(list(rel.docno))
        for docno, did, gid in zip(rel.docno, ids.tolist(), gids.tolist()):
            rows.append((qid, docno, dh.get(did, limit + 1) if did >= 0 else limit + 1,
                         gh.get(gid, limit + 1) if gid >= 0 else limit + 1))
    return pd.DataFrame(rows, columns=['qid', 'docno', 'doc_hop', 'group_hop'])


def recall_by_hop(hops: pd.DataFrame, runs: Dict[str, pd.DataFrame], *, hop_column: str = 'doc_hop',
                  depth: int = 100) -> pd.DataFrame:
    """Share of relevant documents at each hop distance that each run holds in its top ``depth``.

    Returns one row per (system, hop): ``system, hop, gold, found, recall``.
    """
    out = []
    for name, run in runs.items():
        top = _ranked(run).groupby('qid', sort=False).head(depth)
        found = set(zip(top.qid.astype(str), top.docno.astype(str)))
        hit = np.array([(q, d) in found for q, d in zip(hops.qid.astype(str), hops.docno.astype(str))])
        for hop, idx in hops.groupby(hop_column).groups.items():
            mask = hops.index.isin(idx)
            out.append((name, int(hop), int(mask.sum()), int(hit[mask].sum()), float(hit[mask].mean())))
    return pd.DataFrame(out, columns=['system', 'hop', 'gold', 'found', 'recall'])


def gold_group_diagnostics(trace: Sequence[dict], groups, qrels: pd.DataFrame) -> pd.DataFrame:
    """How often GAREN's navigator scored and expanded the groups holding relevant documents (App. C.3).

    Args:
        trace: ``GAREN(..., trace=True).last_trace`` (per query and iteration: ``qid``, ``scored``,
            ``chosen_groups``).
        groups: the GroupCorpusGraph.
        qrels: ``qid, docno, label``.

    Returns:
        One row per query: ``gold_groups`` (distinct groups of relevant docs), ``scored`` and ``selected`` (how
        many of them the navigator scored / GAREN expanded at some iteration).
    """
    gold = _gold_groups(groups, qrels)
    scored: Dict[str, set] = {}
    chosen: Dict[str, set] = {}
    for step in trace:
        qid = str(step['qid'])
        scored.setdefault(qid, set()).update(int(g) for g in step.get('scored', {}))
        chosen.setdefault(qid, set()).update(int(g) for g in step.get('chosen_groups', []))
    rows = []
    for qid in sorted(set(scored) | set(chosen)):
        g = gold.get(qid, set())
        rows.append((qid, len(g), len(g & scored.get(qid, set())), len(g & chosen.get(qid, set()))))
    return pd.DataFrame(rows, columns=['qid', 'gold_groups', 'scored', 'selected'])


def _gold_groups(groups, qrels: pd.DataFrame) -> Dict[str, set]:
    relevant = qrels[qrels.label > 0]
    return {str(qid): {g for g in groups.groups_of(list(df.docno.astype(str))).tolist() if g >= 0}
            for qid, df in relevant.groupby('qid')}


GOLD_STAGES = ('no group', 'not candidate', 'not scored', 'not selected', 'not observed', 'observed')


def gold_group_status(trace: Sequence[dict], groups, qrels: pd.DataFrame) -> pd.DataFrame:
    """Where GAREN found or lost each relevant document (paper Appendix C.3), from ``GAREN(..., trace=True)``.

    For every relevant ``(qid, docno)`` of the traced queries: whether the document's group was ever a candidate
    (a k-NN neighbour of a window document lies in it), scored by the navigator, selected for expansion, and
    whether the document itself was observed (entered a window: it was re-ranked).

    Args:
        trace: ``GAREN(..., trace=True).last_trace`` (per query and iteration: ``qid``, ``window``,
            ``candidates``, ``scored``, ``chosen_groups``).
        groups: the GroupCorpusGraph.
        qrels: ``qid, docno, label`` (``label > 0`` is relevant).

    Returns:
        ``qid, docno, group, candidate, scored, selected, observed, iteration, stage``: ``iteration`` is the first
        iteration whose window held the document (0 if none, or if that step of the trace names no iteration);
        ``stage`` is ``'observed'`` or the furthest step
        the document's group reached, named by what failed after it (one of :data:`GOLD_STAGES`: ``'not
        candidate'``, ``'not scored'``, ``'not selected'`` when it was scored but never expanded, ``'not observed'``
        when it was expanded but the document was not reached; a document observed straight from the first stage
        counts as observed whatever its group's fate).
    """
    seen: Dict[str, Dict[str, set]] = {}
    entered: Dict[Tuple[str, str], int] = {}
    for step in trace:
        qid = str(step['qid'])
        record = seen.setdefault(qid, {'candidate': set(), 'scored': set(), 'selected': set()})
        record['candidate'].update(int(g) for g in step.get('candidates', {}) or {})
        record['scored'].update(int(g) for g in step.get('scored', {}) or {})
        record['selected'].update(int(g) for g in step.get('chosen_groups', []) or [])
        for docno in step.get('window', []):
            entered.setdefault((qid, str(docno)), int(step.get('iteration', 0)))
    relevant = qrels[qrels.label > 0]
    relevant = relevant[relevant.qid.astype(str).isin(seen)]
    qids, docnos = relevant.qid.astype(str).tolist(), relevant.docno.astype(str).tolist()
    gids = groups.groups_of(docnos).tolist() if docnos else []
    rows = []
    for qid, docno, gid in zip(qids, docnos, gids):
        record = seen[qid]
        flags = [gid in record[k] for k in ('candidate', 'scored', 'selected')]
        observed = (qid, docno) in entered
        it = entered.get((qid, docno), 0)
        candidate, scored, selected = flags
        if observed:
            stage = 'observed'
        elif gid < 0:
            stage = 'no group'
        elif selected:
            stage = 'not observed'
        elif scored:  # also groups the fill rule scored without their being candidates
            stage = 'not selected'
        else:
            stage = 'not scored' if candidate else 'not candidate'
        rows.append((qid, docno, int(gid), *flags, observed, it, stage))
    return pd.DataFrame(rows, columns=['qid', 'docno', 'group', 'candidate', 'scored', 'selected', 'observed',
                                       'iteration', 'stage'])


def navigator_quality(trace: Sequence[dict], groups, qrels: pd.DataFrame) -> pd.DataFrame:
    """How well the navigator ranked the groups holding relevant documents among all groups it scored, per query.

    Args:
        trace: ``GAREN(..., trace=True).last_trace`` (``qid``, ``scored``: ``{group: score}`` per iteration).
        groups: the GroupCorpusGraph.
        qrels: ``qid, docno, label``.

    Returns:
        ``qid, scored, gold_scored, auc, best_gold_rank``: groups scored, gold groups among them, the probability
        that a gold group scored higher than a scored non-gold group (ties count half; NaN when either set is
        empty) and the 1-based rank of the best gold group by navigator score (NaN when none was scored).
    """
    gold = _gold_groups(groups, qrels)
    scores: Dict[str, Dict[int, float]] = {}
    for step in trace:
        scores.setdefault(str(step['qid']), {}).update((int(g), float(v)) for g, v in
                                                        (step.get('scored', {}) or {}).items())
    rows = []
    for qid, scored in scores.items():
        g = gold.get(qid, set())
        pos = np.array([v for k, v in scored.items() if k in g], dtype=float)
        neg = np.array([v for k, v in scored.items() if k not in g], dtype=float)
        auc = float(((pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum())
                    / (len(pos) * len(neg))) if len(pos) and len(neg) else math.nan
        best = float(1 + (neg > pos.max()).sum()) if len(pos) else math.nan
        rows.append((qid, len(scored), len(pos), auc, best))
    return pd.DataFrame(rows, columns=['qid', 'scored', 'gold_scored', 'auc', 'best_gold_rank'])


def first_stage_shares(trace: Sequence[dict]) -> pd.DataFrame:
    """The first stage's share of every expansion of ``GAREN(adaptive_interleave=s0, trace=True)``.

    Args:
        trace: its ``last_trace`` (``qid``, ``iteration``, ``first_stage_share``; steps without a share, such as a
            query's last re-ranked window, are skipped).

    Returns:
        ``qid, iteration, share``, one row per query and expansion.
    """
    rows = [(str(step['qid']), int(step['iteration']), float(step['first_stage_share'])) for step in trace
            if step.get('first_stage_share') is not None]
    return pd.DataFrame(rows, columns=['qid', 'iteration', 'share'])


def share_summary(shares: pd.DataFrame) -> pd.DataFrame:
    """Spread of :func:`first_stage_shares` over the queries, per iteration and for each query's last expansion.

    Returns:
        ``iteration, queries, mean, sd, q10, q90``: one row per iteration (as a string, in iteration order), then
        the row ``'last'`` over each query's last share. ``sd`` is the sample standard deviation (NaN for one
        query); ``q10``/``q90`` are linear-interpolation quantiles.
    """
    columns = ['iteration', 'queries', 'mean', 'sd', 'q10', 'q90']
    if not len(shares):
        return pd.DataFrame(columns=columns)

    def row(name, values):
        return (name, len(values), float(values.mean()), float(values.std()), float(values.quantile(.1)),
                float(values.quantile(.9)))
    rows = [row(str(it), part.share) for it, part in shares.groupby('iteration', sort=True)]
    last = shares.sort_values(['qid', 'iteration'], kind='stable').groupby('qid').share.last()
    rows.append(row('last', last))
    return pd.DataFrame(rows, columns=columns)


def budget_curve(pipelines_by_budget: Dict[int, Dict[str, object]], topics: pd.DataFrame, qrels: pd.DataFrame,
                 measures: Optional[list] = None) -> pd.DataFrame:
    """Run ``pt.Experiment`` once per budget; returns ``budget, name, <measures>`` rows."""
    from ir_measures import R, nDCG
    measures = measures or [nDCG @ 10, R @ 100]
    frames = []
    for budget, pipelines in sorted(pipelines_by_budget.items()):  # every budget checked before any runs
        seen: Dict[int, str] = {}
        for name, pipeline in pipelines.items():
            if id(pipeline) in seen:  # PyTerrier's tree plan runs one object once, then fails with a bare assertion
                raise ValueError(f'budget_curve: at budget {budget}, {seen[id(pipeline)]!r} and {name!r} are the same '
                                 'pipeline object; list it once (or pass a copy to compare it with itself)')
            seen[id(pipeline)] = name
    for budget, pipelines in sorted(pipelines_by_budget.items()):
        # quiet (no pipeline-tree dump); the project's pipelines are known to produce qid, docno, score
        res = pt.Experiment(list(pipelines.values()), topics, qrels, measures, names=list(pipelines),
                            plan='tree', verbose=False, validate='ignore')
        frames.append(res.assign(budget=budget))
    return pd.concat(frames, ignore_index=True)


def budget_swaps(smaller: pd.DataFrame, larger: pd.DataFrame, qrels: pd.DataFrame, *, depth: int = 100,
                 head: int = 10) -> pd.DataFrame:
    """What a larger budget did to the top ``depth`` of one system: per query, which documents it re-ranked only
    with the larger budget ("late") and which of the smaller run's documents they pushed below ``depth``.

    A system whose recall at ``depth`` falls as the budget grows either searched differently (``prefix`` False:
    the smaller run's documents are not the larger run's first observed) or ordered the late documents above
    earlier ones that were more often relevant (``lost`` above ``gained``). Both runs are one system's result frames
    (``qid, docno`` and ``rank`` or ``score``; ``iteration`` for ``prefix``) on the same queries.

    Args:
        smaller: the run at the smaller budget.
        larger: the run at the larger budget.
        qrels: ``qid, docno, label`` (relevant: ``label > 0``).
        depth: the cut-off whose recall is asked about (R@depth).
        head: the top that nDCG@head sees (``late_head`` counts late documents there).

    Returns:
        ``qid, prefix`` (True when the smaller run's documents are exactly the larger run's documents of
        iterations up to the smaller run's last; None without an ``iteration`` column), ``late`` (documents in the
        larger run's top ``depth`` that the smaller run did not return), ``late_head`` (of them, in the top
        ``head``), ``gained`` (relevant late documents in that top ``depth``), ``promoted`` (relevant documents the
        smaller run returned below its top ``depth`` that the larger run lifts into it), ``lost`` (relevant documents
        of the smaller run's top ``depth`` below the larger run's) and ``relevant`` (the query's relevant documents).
        The query's recall at ``depth`` changes by ``(gained + promoted - lost) / relevant``.
    """
    check_int('depth', depth, low=1, note='the recall cut-off')
    check_int('head', head, low=0, note='the top nDCG sees')
    for name, frame, needs in (('smaller', smaller, ('qid', 'docno')), ('larger', larger, ('qid', 'docno')),
                               ('qrels', qrels, ('qid', 'docno', 'label'))):
        missing = [c for c in needs if c not in frame.columns]
        if missing:
            raise ValueError(f'budget_swaps: {name} has no column {", ".join(missing)} (got {list(frame.columns)}); '
                             'pass PyTerrier frames: runs with qid, docno and rank or score, qrels with qid, docno, '
                             'label')
    relevant = qrels[qrels.label > 0].assign(qid=lambda f: f.qid.astype(str), docno=lambda f: f.docno.astype(str))
    relevant = relevant.groupby('qid').docno.agg(set).to_dict()

    def ranked(frame):
        if 'rank' not in frame.columns and 'score' not in frame.columns:
            raise ValueError(f'a run needs a rank or score column to order its documents; got {list(frame.columns)}')
        frame = _as_text(_ranked(frame))
        repeated = frame.duplicated(['qid', 'docno']).to_numpy()
        if repeated.any():  # a document counts once, at its best-placed row
            warnings.warn(f'budget_swaps: a run lists {int(repeated.sum())} documents again further down a query\'s '
                          'ranking; each counts at its best-placed row', stacklevel=3)
            frame = frame[~repeated]
        return dict(tuple(frame.groupby('qid', sort=False)))
    small, large = ranked(smaller), ranked(larger)
    rows = []
    for qid, big in large.items():
        little = small.get(qid, big.iloc[:0])
        mine = relevant.get(qid, set())
        seen = set(little.docno)
        prefix = None
        if 'iteration' in big.columns and 'iteration' in little.columns and len(little):
            prefix = set(big[big.iteration.between(0, little.iteration.max())].docno) == \
                set(little[little.iteration >= 0].docno)
        top, before = list(big.docno[:depth]), set(little.docno[:depth])
        late = [d for d in top if d not in seen]
        rows.append({'qid': qid, 'prefix': prefix, 'late': len(late),
                     'late_head': sum(d not in seen for d in top[:head]), 'gained': sum(d in mine for d in late),
                     'promoted': len(((set(top) & seen) - before) & mine), 'lost': len((before - set(top)) & mine),
                     'relevant': len(mine)})
    return pd.DataFrame(rows, columns=['qid', 'prefix', 'late', 'late_head', 'gained', 'promoted', 'lost',
                                       'relevant'])


def plot_budget_curve(curve: pd.DataFrame, measure: str = 'nDCG@10', ax=None):
    """Line plot of a measure against the reranking budget, one line per system."""
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(5, 3.5))[1]
    for name, df in curve.groupby('name', sort=False):
        ax.plot(df.budget, df[measure], marker='o', label=name)
    ax.set_xlabel('reranking budget (documents)')
    ax.set_ylabel(measure)
    ax.legend(fontsize=8)
    return ax


def plot_recall_by_hop(table: pd.DataFrame, title: str = '', ax=None):
    """Grouped bars: recall of relevant documents per hop distance, one bar per system."""
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(6, 3.5))[1]
    systems = list(dict.fromkeys(table.system))
    hops = sorted(table.hop.unique())
    width = 0.8 / max(len(systems), 1)
    for i, system in enumerate(systems):
        df = table[table.system == system].set_index('hop').reindex(hops)
        ax.bar(np.arange(len(hops)) + i * width, df.recall.fillna(0), width, label=system)
    ax.set_xticks(np.arange(len(hops)) + width * (len(systems) - 1) / 2)
    counts = table.drop_duplicates('hop').set_index('hop').reindex(hops).gold
    ax.set_xticklabels([f'{h}\n(n={c})' for h, c in zip(hops, counts)])
    ax.set_xlabel('hop distance from the first-stage top 20')
    ax.set_ylabel('recall of relevant docs')
    ax.set_title(title)
    ax.legend(fontsize=8)
    return ax
