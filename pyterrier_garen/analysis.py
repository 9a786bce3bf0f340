"""Analysis helpers behind the notebooks: budget curves, hop-distance recall, navigator diagnostics, plots.

matplotlib is imported inside the plotting functions only.
"""
from __future__ import annotations

from collections import deque
from typing import Dict, Iterable, List, Optional, Sequence

import numpy as np
import pandas as pd

__all__ = ['doc_hops', 'group_hops', 'gold_hops', 'recall_by_hop', 'gold_group_diagnostics', 'budget_curve',
           'plot_budget_curve', 'plot_recall_by_hop']


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
    relevant = qrels[qrels.label > 0]
    ranked = first_stage.sort_values(['qid', 'rank'] if 'rank' in first_stage else ['qid', 'score'],
                                     ascending=[True, 'rank' in first_stage])
    tops = {qid: list(df.docno[:top]) for qid, df in ranked.groupby('qid')}
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
        top = run[run['rank'] < depth] if 'rank' in run else run.groupby('qid').head(depth)
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
    relevant = qrels[qrels.label > 0]
    gold = {qid: {g for g in groups.groups_of(list(df.docno)).tolist() if g >= 0}
            for qid, df in relevant.groupby('qid')}
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


def budget_curve(pipelines_by_budget: Dict[int, Dict[str, object]], topics: pd.DataFrame, qrels: pd.DataFrame,
                 measures: Optional[list] = None) -> pd.DataFrame:
    """Run ``pt.Experiment`` once per budget; returns ``budget, name, <measures>`` rows."""
    import pyterrier as pt
    from ir_measures import R, nDCG
    measures = measures or [nDCG @ 10, R @ 100]
    frames = []
    for budget, pipelines in sorted(pipelines_by_budget.items()):
        res = pt.Experiment(list(pipelines.values()), topics, qrels, measures, names=list(pipelines),
                            plan='tree')
        frames.append(res.assign(budget=budget))
    return pd.concat(frames, ignore_index=True)


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
