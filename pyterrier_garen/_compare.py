"""GAREN and its baselines side by side in one ``pt.Experiment`` (the main job: ``python -m pyterrier_garen compare``).
"""
from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any, Dict, Optional, Tuple, Union

import pandas as pd
import pyterrier as pt

__all__ = ['SYSTEMS', 'NAVIGATORS', 'cpu_components', 'build_systems', 'compare', 'evaluation_qrels',
           'format_comparison']

SYSTEMS = ['BM25', 'Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN-explore', 'GAREN-exploit', 'GAREN-noprop',
           'GAREN-vote', 'GAREN-doc', 'GAREN+']
#: The frozen configuration of GAREN's options beyond the paper behind the ``GAREN+`` system (chosen on the shipped
#: collections with the strength sweep; every variant tried is in docs/results.md).
GAREN_PLUS = {'evidence_weight': 0.5, 'fusion': 0.1}
NAVIGATORS = ('centroid', 'summary', 'vote')
_NAVIGATOR_TEXT = {'centroid': 'query vs. group centroid (CentroidNavigator)',
                   'summary': "query vs. the summary's vector (SummaryNavigator)",
                   'vote': 'connectivity votes (VoteNavigator)'}
FIRST_STAGE = 'PISA BM25 (porter2, k1=0.9, b=0.4, title + text), top 1000'


def _window() -> int:
    """GAREN's default window ``w`` (every windowed baseline here uses the same)."""
    from . import GAREN
    return inspect.signature(GAREN).parameters['window'].default


def cpu_components(prepared, *, navigator: str = 'centroid') -> Tuple[pt.Transformer, pt.Transformer]:
    """The CPU default reranker (MiniLM cosine over stored vectors) and navigator of a prepared collection.

    Args:
        prepared: the result of :func:`pyterrier_garen.prepare`.
        navigator: ``'centroid'`` (query vs. mean member vector; best recall on the reference runs), ``'summary'``
            (query vs. the extractive summary's vector) or ``'vote'`` (the paper's connectivity heuristic).

    Returns:
        ``(reranker, navigator)``.

    Raises:
        ValueError: for an unknown navigator name.
    """
    from . import CentroidNavigator, SummaryNavigator, VectorScorer, VoteNavigator, minilm_encoder
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
                  systems=SYSTEMS, fusion: float = 0.0, final_order: Optional[str] = None,
                  verbose: bool = False) -> Dict[str, pt.Transformer]:
    """Pipelines named as in :data:`SYSTEMS`, all with the same first stage, reranker, graph and budget.

    Args:
        prepared: the result of :func:`pyterrier_garen.prepare` (BM25 index and groups).
        reranker: scores ``(qid, query, docno)`` rows (pointwise here; a listwise LLM reranker works too).
        navigator: scores ``(qid, query, docno=<group id>, text=<summary>)`` rows.
        budget: documents reranked per query (``c``); a budget below the window (20) warns, because every
            adaptive method then only re-ranks the first-stage top ``budget``.
        first_stage: defaults to PISA BM25 (k1=0.9, b=0.4), top 1000.
        doc_navigator: scorer of neighbouring documents for ``GAREN-doc``; defaults to ``reranker``.
        systems: the subset of names to build.
        fusion: weight of :class:`~pyterrier_garen.FirstStageFusion` (with ``first_stage``) appended to every
            system (0 = none); GAREN+ then runs without its own ``fusion``, so every row gets the same help.
        final_order: every window search's ``final_order`` (None: each search's default).
        verbose: one progress bar per system (over queries) while it runs (:func:`compare` shows one bar over
            the systems instead).

    Raises:
        ValueError: for an unknown system name or a non-positive budget.
    """
    from . import GAREN, RGS, DocGAREN, FirstStageFusion, SlideGAR, SlidingWindowReranker, VoteNavigator
    from ._params import check_nonnegative
    from ._gar import GAR
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f'unknown systems {unknown}; choose from {SYSTEMS}')
    if not isinstance(budget, int) or budget < 1:
        raise ValueError(f'budget must be a positive integer (documents reranked per query), got {budget!r}')
    window = _window()
    if budget < window:
        warnings.warn(f'budget={budget} is below the window of {window} documents: GAR, SlideGAR, RGS and GAREN '
                      f'then only re-rank the first-stage top {budget} (no adaptive step); use a budget of at least '
                      f'{window}, e.g. 100 as in the paper', stacklevel=2)
    groups = prepared.groups
    bm25 = first_stage if first_stage is not None else prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)

    check_nonnegative(fusion=fusion)
    opts = {'final_order': final_order} if final_order is not None else {}  # for every window search
    plus = {**GAREN_PLUS, 'fusion': 0.0} if fusion else GAREN_PLUS  # the shared fusion stage replaces its own

    def garen(**kwargs):
        return GAREN(reranker, groups, kwargs.pop('navigator', navigator), budget=budget, verbose=verbose,
                     **{**opts, **kwargs})

    factories = {
        'BM25': lambda: bm25 % budget,
        'Rerank': lambda: bm25 >> SlidingWindowReranker(reranker, budget=budget, verbose=verbose, **opts),
        'GAR': lambda: bm25 >> GAR(reranker, groups, num_results=budget, batch_size=16, verbose=verbose),
        'SlideGAR': lambda: bm25 >> SlideGAR(reranker, groups, budget=budget, verbose=verbose, **opts),
        'RGS': lambda: bm25 >> RGS(reranker, groups, budget=budget, verbose=verbose, **opts),
        'GAREN': lambda: bm25 >> garen(),
        'GAREN-explore': lambda: bm25 >> garen(strategy='explore'),
        'GAREN-exploit': lambda: bm25 >> garen(strategy='exploit'),
        'GAREN-noprop': lambda: bm25 >> garen(propagate=False),
        'GAREN-vote': lambda: bm25 >> garen(navigator=VoteNavigator()),
        'GAREN-doc': lambda: bm25 >> DocGAREN(reranker, groups, doc_navigator or reranker, budget=budget,
                                              verbose=verbose, **opts),
        'GAREN+': lambda: bm25 >> garen(**plus),
    }
    pipelines = {name: factories[name]() for name in systems}
    if fusion:
        pipelines = {name: pipe >> FirstStageFusion(bm25, fusion) for name, pipe in pipelines.items()}
    return pipelines


class _Done(pt.Transformer):
    """Passes its input through and advances a progress bar: ``system >> _Done(bar, name)``."""

    def __init__(self, progress, name: str):
        self.progress = progress
        self.name = name

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        self.progress.set_postfix_str(f'{self.name} done', refresh=False)
        self.progress.update(1)
        return inp


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
            binary: Optional[bool] = None, fusion: float = 0.0, final_order: Optional[str] = None,
            verbose: bool = False) -> pd.DataFrame:
    """Run GAREN and its baselines in one ``pt.Experiment`` with the CPU default components.

    Offline artifacts are built on the first call (a PISA index, MiniLM vectors, a k-NN graph, summarised groups;
    minutes for a few thousand documents on a CPU) and reused afterwards.

    Args:
        dataset: a collection folder, a name under ``$GAREN_DATA``, an ``irds:`` id, a dataset object, or ``None``
            for the synthetic collection (:func:`pyterrier_garen.synthetic.make_synthetic`).
        budget: documents reranked per query (``c``).
        workdir: where offline artifacts are built/reused (default ``$GAREN_CACHE/<name>``).
        num_queries: evaluate on the first N queries only.
        navigator: GAREN's navigator (see :func:`cpu_components`).
        systems: which systems to run (names from :data:`SYSTEMS`).
        binary: relevance labels (see :func:`evaluation_qrels`): ``None`` follows the collection's declaration.
        fusion: first-stage fusion weight applied to every system (:func:`build_systems`; 0 = none).
        final_order: every window search's ``final_order`` (None: each search's default).
        verbose: progress bars: one per offline step that builds something, one over the systems.

    Returns:
        The ``pt.Experiment`` frame: ``name, nDCG@10, R@100`` and, when GAREN is among the systems, paired t-test
        columns against it. ``frame.attrs['labels']`` says which relevance labels were used, ``frame.attrs['run']``
        describes everything that ran; :func:`format_comparison` prints both.
    """
    from ir_measures import R, nDCG

    from . import RemoveExcluded, prepare
    from ._driver import warn_budget_covers_collection
    from ._prepare import cache_dir
    from .datasets import load_dataset
    label = None
    if dataset is None:
        from .synthetic import make_synthetic
        dataset = make_synthetic(cache_dir() / 'synthetic' / 'collection')
        workdir = workdir or cache_dir() / 'synthetic'
        label = 'SYNTHETIC (generated in seconds; shows that everything runs, not a benchmark)'
    elif isinstance(dataset, (str, Path)):
        dataset = load_dataset(str(dataset))
    if navigator not in NAVIGATORS:
        raise ValueError(f'navigator must be one of {NAVIGATORS}, got {navigator!r}')
    if num_queries is not None and num_queries < 1:
        raise ValueError(f'num_queries must be a positive integer (or None for all queries), got {num_queries!r}')
    prepared = prepare(dataset, workdir, verbose=verbose)
    warn_budget_covers_collection(budget, len(prepared.groups), context='compare')
    reranker, nav = cpu_components(prepared, navigator=navigator)
    pipelines = build_systems(prepared, reranker, nav, budget=budget, systems=systems, fusion=fusion,
                              final_order=final_order)
    all_qrels = dataset.get_qrels()
    excluded = bool((all_qrels.label == -100).any())
    if excluded:
        pipelines = {name: pipe >> RemoveExcluded(all_qrels) for name, pipe in pipelines.items()}
    topics = dataset.get_topics()
    total_queries = len(topics)
    if num_queries:
        topics = topics.head(num_queries)
    qrels = evaluation_qrels(dataset, binary=binary)
    names = list(pipelines)
    baseline = names.index('GAREN') if 'GAREN' in names else None
    progress = pt.tqdm(total=len(names), desc=f'running {len(names)} systems on {len(topics)} queries',
                       unit='system', disable=not verbose)
    systems_run = [pipe >> _Done(progress, name) for name, pipe in pipelines.items()]
    # validate='ignore': every pipeline here is known to produce qid, docno, score (and a custom first stage or
    # reranker need not be inspectable); verbose=False: one bar over the systems instead of the tree's dump.
    with progress:
        table = pt.Experiment(systems_run, topics, qrels, [nDCG @ 10, R @ 100], names=names, baseline=baseline,
                              plan='tree', verbose=False, validate='ignore')
    measures = [str(nDCG @ 10), str(R @ 100)]
    table = table[['name', *measures, *[c for c in table.columns if c not in ('name', *measures)]]]
    stats = prepared.groups.group_stats()
    partition = prepared.groups.meta.get('partition', {})
    table.attrs['labels'] = qrels.attrs['labels']
    table.attrs['run'] = {
        'collection': label or str(getattr(dataset, 'name', None) or dataset),
        'documents': stats['docs'],
        'queries': len(topics),
        'total_queries': total_queries,
        'judged_queries': int(topics.qid.astype(str).isin(qrels.qid.astype(str)).sum()),
        'labels': qrels.attrs['labels'],
        'excluded_removed': excluded,
        'budget': budget,
        'fusion': fusion,
        'final_order': final_order,
        'first_stage': FIRST_STAGE,
        'reranker': 'MiniLM cosine over stored vectors (VectorScorer)',
        'navigator': _NAVIGATOR_TEXT[navigator],
        'groups': f"{stats['groups']} Leiden groups (max size {partition.get('max_group_size', '?')}) of a MiniLM "
                  f"k-NN graph, extractive summaries",
        'baseline': names[baseline] if baseline is not None else None,
    }
    return table


def format_comparison(table: pd.DataFrame) -> str:
    """What :func:`compare` ran, its table and a two-line legend of the significance columns, as text.

    Args:
        table: the frame :func:`compare` returned (a plain ``pt.Experiment`` frame prints without the header).
    """
    run: Dict[str, Any] = table.attrs.get('run', {})
    lines = []
    if run:
        queries = f"{run['queries']} queries" + (f" (first {run['queries']} of {run['total_queries']})"
                                                   if run['queries'] < run['total_queries'] else '')
        if run['judged_queries'] < run['queries']:
            queries += f", {run['judged_queries']} with relevance labels"
        lines += [f"collection:  {run['collection']}, {run['documents']:,} documents; {queries}",
                  f"labels:      {run['labels']}" + ('; excluded documents (label -100) removed from every run'
                                                     if run['excluded_removed'] else ''),
                  f"budget:      {run['budget']} documents reranked per query"
                  + (f"; final order {run['final_order']}" if run.get('final_order') else '')
                  + (f"; first-stage fusion {run['fusion']:g} for every system" if run.get('fusion') else ''),
                  f"first stage: {run['first_stage']}",
                  f"reranker:    {run['reranker']}",
                  f"navigator:   {run['navigator']}",
                  f"groups:      {run['groups']}",
                  '']
    shown = table.copy()
    for col in shown.columns:
        if col.endswith(' +') or col.endswith(' -'):
            shown[col] = [('' if pd.isna(v) else str(int(v))) for v in shown[col]]
    with pd.option_context('display.width', 250, 'display.max_columns', 30):
        lines.append(shown.round(4).to_string(index=False, na_rep=''))
    baseline = run.get('baseline') if run else None
    if baseline is None and any(c.endswith(' p-value') for c in table.columns):
        baseline = 'the baseline'
    if baseline:
        n = run.get('judged_queries', 'the')
        lines += ['',
                  f'"<measure> +" / "<measure> -": queries on which a system scores higher / lower than {baseline} '
                  f'(the baseline, hence its empty row);',
                  f'"<measure> p-value": two-sided paired t-test against {baseline} over {n} queries, not corrected '
                  f'for multiple comparisons.']
    return '\n'.join(lines)
