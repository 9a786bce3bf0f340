"""GAREN and its baselines side by side in one ``pt.Experiment`` (used by ``examples/compare.py`` and notebooks)."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Optional, Tuple, Union

import pandas as pd
import pyterrier as pt

__all__ = ['SYSTEMS', 'cpu_components', 'build_systems', 'compare', 'evaluation_qrels']

SYSTEMS = ['BM25', 'Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN-explore', 'GAREN-exploit', 'GAREN-noprop',
           'GAREN-vote', 'GAREN-doc']
NAVIGATORS = ('centroid', 'summary', 'vote')


def cpu_components(prepared, *, navigator: str = 'centroid') -> Tuple[pt.Transformer, pt.Transformer]:
    """The CPU default reranker (MiniLM cosine over stored vectors) and navigator of a prepared collection.

    Args:
        prepared: the result of :func:`pyterrier_garen.prepare`.
        navigator: ``'centroid'`` (query vs. mean member vector; best recall on the reference runs), ``'summary'``
            (query vs. the extractive summary's vector) or ``'vote'`` (the paper's connectivity heuristic).
    """
    from ._graphs import minilm_encoder
    from ._navigators import CentroidNavigator, SummaryNavigator, VoteNavigator
    from ._rerankers import VectorScorer
    if navigator not in NAVIGATORS:
        raise ValueError(f'navigator must be one of {NAVIGATORS}, got {navigator!r}')
    encoder = minilm_encoder()
    reranker = VectorScorer(prepared.vectors, encoder)
    nav = {'centroid': lambda: CentroidNavigator(prepared.groups, prepared.vectors, encoder),
           'summary': lambda: SummaryNavigator(prepared.groups, encoder),
           'vote': VoteNavigator}[navigator]()
    return reranker, nav


def build_systems(prepared, reranker: pt.Transformer, navigator: pt.Transformer, *, budget: int = 100,
                  first_stage: Optional[pt.Transformer] = None, doc_navigator: Optional[pt.Transformer] = None,
                  systems=SYSTEMS) -> Dict[str, pt.Transformer]:
    """Pipelines named as in :data:`SYSTEMS`, all with the same first stage, reranker, graph and budget.

    Args:
        prepared: the result of :func:`pyterrier_garen.prepare` (BM25 index and groups).
        reranker: scores ``(qid, query, docno)`` rows (pointwise here; a listwise LLM reranker works too).
        navigator: scores ``(qid, query, docno=<group id>, text=<summary>)`` rows.
        budget: documents reranked per query (``c``).
        first_stage: defaults to PISA BM25 (k1=0.9, b=0.4), top 1000.
        doc_navigator: scorer of neighbouring documents for ``GAREN-doc``; defaults to ``reranker``.
        systems: the subset of names to build.
    """
    from pyterrier_adaptive import GAR

    from ._baselines import RGS, DocGAREN, SlideGAR, SlidingWindowReranker
    from ._garen import GAREN
    from ._navigators import VoteNavigator
    groups = prepared.groups
    bm25 = first_stage if first_stage is not None else prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)

    def garen(**kwargs):
        return GAREN(reranker, groups, kwargs.pop('navigator', navigator), budget=budget, **kwargs)

    factories = {
        'BM25': lambda: bm25 % budget,
        'Rerank': lambda: bm25 >> SlidingWindowReranker(reranker, budget=budget),
        'GAR': lambda: bm25 >> GAR(reranker, groups, num_results=budget, batch_size=16),
        'SlideGAR': lambda: bm25 >> SlideGAR(reranker, groups, budget=budget),
        'RGS': lambda: bm25 >> RGS(reranker, groups, budget=budget),
        'GAREN': lambda: bm25 >> garen(),
        'GAREN-explore': lambda: bm25 >> garen(strategy='explore'),
        'GAREN-exploit': lambda: bm25 >> garen(strategy='exploit'),
        'GAREN-noprop': lambda: bm25 >> garen(propagate=False),
        'GAREN-vote': lambda: bm25 >> garen(navigator=VoteNavigator()),
        'GAREN-doc': lambda: bm25 >> DocGAREN(reranker, groups, doc_navigator or reranker, budget=budget),
    }
    unknown = [s for s in systems if s not in factories]
    if unknown:
        raise ValueError(f'unknown systems {unknown}; choose from {SYSTEMS}')
    return {name: factories[name]() for name in systems}


def evaluation_qrels(dataset, *, binary: Optional[bool] = None) -> pd.DataFrame:
    """Qrels for nDCG/recall, labels as graded gains unless binary relevance is asked for or declared.

    Excluded documents (label -100, BRIGHT) are dropped here and removed from runs by the pipelines. The returned
    frame's ``attrs['labels']`` says which labels were used and why (``compare`` copies it to its result).

    Args:
        dataset: a :class:`~pyterrier_garen.LocalDataset` or any PyTerrier dataset with qrels.
        binary: ``True``: rel>0 becomes 1, everything else 0; ``False``: labels as stored; ``None`` (default): binary
            only for a collection that declares its codes are not gains (``LocalDataset.relevance``, e.g. Cranfield).
    """
    kind, reason = getattr(dataset, 'relevance', ('graded', 'the dataset declares no relevance kind'))
    if binary is not None:
        kind, reason = ('binary' if binary else 'graded'), 'asked for'
    qrels = dataset.get_qrels()
    qrels = qrels[qrels.label >= 0] if (qrels.label == -100).any() else qrels
    if kind == 'binary':
        qrels = qrels.assign(label=(qrels.label > 0).astype(int))
        qrels.attrs['labels'] = f'binary relevance (label>0 -> 1): {reason}'
    else:
        values = sorted(int(v) for v in qrels.label.unique())
        qrels.attrs['labels'] = f'graded relevance, labels as stored {values[:8]}: {reason}'
    return qrels


def compare(dataset=None, *, budget: int = 100, workdir: Optional[Union[str, Path]] = None,
            num_queries: Optional[int] = None, navigator: str = 'centroid', systems=SYSTEMS,
            binary: Optional[bool] = None, verbose: bool = False) -> pd.DataFrame:
    """Run GAREN and its baselines in one ``pt.Experiment`` with the CPU default components.

    Args:
        dataset: a collection folder, a name under ``$GAREN_DATA``, an ``irds:`` id, a dataset object, or ``None``
            for the synthetic collection (:func:`pyterrier_garen.synthetic.make_synthetic`).
        budget: documents reranked per query.
        workdir: where offline artifacts are built/reused (default ``$GAREN_CACHE/<name>``).
        num_queries: evaluate on the first N queries only.
        navigator: GAREN's navigator (see :func:`cpu_components`).
        systems: which systems to run.
        binary: relevance labels (see :func:`evaluation_qrels`): ``None`` follows the collection's declaration.
        verbose: progress bars.

    Returns:
        The ``pt.Experiment`` frame: ``name, nDCG@10, R@100`` and, against GAREN, paired t-test columns; its
        ``attrs['labels']`` says which relevance labels were used.
    """
    from ir_measures import R, nDCG

    from ._prepare import cache_dir, prepare
    from .datasets import RemoveExcluded, load_dataset
    if dataset is None:
        from .synthetic import make_synthetic
        dataset = make_synthetic(cache_dir() / 'synthetic' / 'collection')
        workdir = workdir or cache_dir() / 'synthetic'
    elif isinstance(dataset, (str, Path)):
        dataset = load_dataset(str(dataset))
    prepared = prepare(dataset, workdir, verbose=verbose)
    reranker, nav = cpu_components(prepared, navigator=navigator)
    pipelines = build_systems(prepared, reranker, nav, budget=budget, systems=systems)
    all_qrels = dataset.get_qrels()
    if (all_qrels.label == -100).any():
        pipelines = {name: pipe >> RemoveExcluded(all_qrels) for name, pipe in pipelines.items()}
    topics = dataset.get_topics()
    if num_queries:
        topics = topics.head(num_queries)
    names = list(pipelines)
    baseline = names.index('GAREN') if 'GAREN' in names else None
    qrels = evaluation_qrels(dataset, binary=binary)
    result = pt.Experiment(list(pipelines.values()), topics, qrels, [nDCG @ 10, R @ 100],
                           names=names, baseline=baseline, plan='tree', verbose=verbose)
    result.attrs['labels'] = qrels.attrs['labels']
    return result
