"""Reranker strength as an experimental variable: every system over simulated rerankers of several strengths.

The sweep runs the systems of :func:`~pyterrier_garen._compare.build_systems` with a
:class:`~pyterrier_garen.analysis.SimulatedReranker` at each noise level ``sigma`` and noise seed, and with the
MiniLM reranker, over Leiden partitions built with several seeds (GAREN's results move with the partition about as
much as the effects measured, so every figure is reported over seeds). Public through
:mod:`pyterrier_garen.analysis`; ``examples/strength_sweep.py`` is its command line.
"""
from __future__ import annotations

import dataclasses
import math
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd
import pyterrier as pt

from . import _registry
from ._params import check_int, check_number

__all__ = ['SWEEP_SYSTEMS', 'SWEEP_COLUMNS', 'strength_sweep', 'partition_groups', 'sweep_summary',
           'sweep_tests', 'plot_strength_sweep', 'sweep_plot_file', 'AppendedTable']

#: Systems a sweep runs by default: those declared with ``sweep=True`` in ``_registry.py`` (a live list).
SWEEP_SYSTEMS = _registry.SWEEP_SYSTEM_NAMES
#: Columns of the sweep table, one row per system x reranker x noise seed x partition seed x budget.
SWEEP_COLUMNS = ['system', 'reranker', 'sigma', 'noise_seed', 'partition_seed', 'budget', 'nDCG@10', 'R@100']
KEYS = SWEEP_COLUMNS[:6]
MEASURES = ('nDCG@10', 'R@100')


def partition_groups(prepared, seed: int, *, summaries: bool = False, verbose: bool = False):
    """The groups of ``prepared``'s k-NN graph partitioned with Leiden seed ``seed`` (built once in its workdir).

    The seed :func:`~pyterrier_garen.prepare` used returns ``prepared.groups`` itself; another seed is written to
    ``<workdir>/<groups folder>.seed<seed>`` and reused on later calls.

    Args:
        prepared: the result of :func:`~pyterrier_garen.prepare`.
        seed: Leiden seed.
        summaries: also write extractive summaries (needed by the summary navigator only).
        verbose: progress bars.
    """
    from . import ExtractiveSummarizer, GroupCorpusGraph
    groups = prepared.groups
    partition = groups.meta.get('partition', {})
    recorded = partition.get('seed')  # None: groups built without a record of their seed (no seed matches)
    if recorded is not None and int(recorded) == int(seed):
        return groups
    params = {k: partition[k] for k in ('max_group_size', 'resolution', 'randomness', 'backend') if k in partition}
    path = Path(str(groups.path).rstrip('/') + f'.seed{int(seed)}')
    out = GroupCorpusGraph.from_corpus_graph(prepared.graph, path, seed=int(seed), verbose=verbose, **params)
    if summaries:
        out.summarize(ExtractiveSummarizer(), prepared.dataset, batch_size=64, verbose=verbose)
    return out


def _evaluate(run: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str]) -> pd.DataFrame:
    """Per-query nDCG@10 and R@100 of a run over ``qids`` (0 for a query the run holds nothing for)."""
    import ir_measures
    from ir_measures import R, nDCG
    measures = {'nDCG@10': nDCG @ 10, 'R@100': R @ 100}
    frame = pd.DataFrame({'query_id': run['qid'].astype(str), 'doc_id': run['docno'].astype(str),
                          'score': run['score'].astype(float)})
    judged = pd.DataFrame({'query_id': qrels['qid'].astype(str), 'doc_id': qrels['docno'].astype(str),
                           'relevance': qrels['label'].astype(int)})
    values = {(m.query_id, str(m.measure)): m.value
              for m in ir_measures.iter_calc(list(measures.values()), judged, frame)}
    return pd.DataFrame({'qid': list(qids), **{name: [values.get((q, str(measure)), 0.0) for q in qids]
                                                for name, measure in measures.items()}})



def judged_topics(dataset, qrels: pd.DataFrame, num_queries: Optional[int] = None, *,
                  context: Optional[str] = None) -> pd.DataFrame:
    """The topics of ``dataset`` with at least one relevant label (``label > 0``) in ``qrels``, in the dataset's
    order; the first ``num_queries`` of them when given: the queries every sweep and diagnostic script evaluates.

    Raises:
        ValueError: for a ``num_queries`` that is not None or a positive integer; with ``context`` (the caller's
            name, which starts the message), also when no query has a relevant label: nothing could be measured.
    """
    check_int('num_queries', num_queries, low=1, none_ok=True, note='None: every judged query')
    every = dataset.get_topics()
    topics = every[every.qid.astype(str).isin(set(qrels[qrels.label > 0].qid.astype(str)))]
    if context is not None and topics.empty:
        raise ValueError(f'{context}: none of the {len(every)} queries of {dataset!r} has a relevant document (a '
                         'label above 0) in the qrels, so there is nothing to measure; check the qrels (relevant '
                         'documents need a positive label)')
    return topics.head(num_queries) if num_queries else topics


def check_sweep_arguments(*, sigmas: Sequence[float] = (), noise_seeds: Sequence[int] = (0,),
                          partition_seeds: Sequence[int] = (42,), budgets: Sequence[int] = (100,),
                          num_queries: Optional[int] = None, names: Optional[Dict[str, str]] = None,
                          variants: Optional[Dict[str, Dict[str, Any]]] = None,
                          systems: Optional[Sequence[str]] = None) -> None:
    """``ValueError`` naming the first bad argument of a sweep, before anything is built or run.

    Each list must be non-empty (``sigmas`` may be empty: MiniLM only) and hold each value once (a repeated value
    would run the same configuration twice and count its queries twice in the paired tests); the seeds and
    budgets are integers (budgets positive), the sigmas finite and non-negative, ``num_queries`` None or positive.
    ``names`` says what to call an argument in the message (a command line passes its flags, e.g.
    ``{'budgets': '--budgets'}``); by default a list is named by its parameter and one of its values in the
    singular (``budgets repeat 50``, ``budget must be a positive integer``). ``variants`` are checked as
    :func:`check_variants` does. ``systems`` (None: the default) must be registered names, each once.
    """
    names = names or {}
    check_variants(variants or {}, flag=names.get('variants', 'variant'))
    if systems is not None:
        for name in systems:
            _registry.system(name)  # an unknown name is refused, listing the known ones
        repeated = sorted({s for s in systems if list(systems).count(s) > 1})
        if repeated:
            raise ValueError(f'{names.get("systems", "systems")} repeat {" ".join(repeated)}: give each system once '
                             f'(each is one row per configuration)')
    checks = {'sigmas': ('sigma', lambda n, v: check_number(n, v, low=0, note='noise of the simulated reranker')),
              'noise_seeds': ('noise_seed', lambda n, v: check_int(n, v)),
              'partition_seeds': ('partition_seed', lambda n, v: check_int(n, v)),
              'budgets': ('budget', lambda n, v: check_int(n, v, low=1, note='documents reranked per query'))}
    given = {'sigmas': sigmas, 'noise_seeds': noise_seeds, 'partition_seeds': partition_seeds, 'budgets': budgets}
    for name, (one, check) in checks.items():
        values = list(given[name])
        if not values and name != 'sigmas':
            raise ValueError(f'{names.get(name, name)} is empty; give at least one value')
        for value in values:
            check(names.get(name, one), value)
        repeated = sorted({v for v in values if values.count(v) > 1})
        if repeated:
            raise ValueError(f'{names.get(name, name)} repeat {" ".join(f"{v:g}" for v in repeated)}: give each '
                             f'value once (got {" ".join(f"{v:g}" for v in values)})')
    check_int(names.get('num_queries', 'num_queries'), num_queries, low=1, none_ok=True,
              note='None: every judged query')


def parse_variants(texts: Sequence[str], *, flag: str = '--variant') -> Dict[str, Dict[str, Any]]:
    """``['NAME:key=value,key=value', ...]`` -> ``{NAME: {key: value}}`` (a command line's GAREN variants), then
    checked as :func:`check_variants` checks them. Values are Python literals, or a bare word as text
    (``final_order=paper``). ``ValueError`` for an item without ``=``, an empty name or a name given twice."""
    import ast
    variants: Dict[str, Dict[str, Any]] = {}
    for text in texts:
        name, _, spec = str(text).partition(':')
        name = name.strip()
        if not name:
            raise ValueError(f'{flag} {text!r}: give the variant a name, e.g. "GAREN-t2:tau_switch=2"')
        if name in variants:
            raise ValueError(f'{flag} {name!r} is given twice; give each variant a name of its own')
        kwargs: Dict[str, Any] = {}
        for item in filter(None, (part.strip() for part in spec.split(','))):
            key, sep, value = item.partition('=')
            if not sep or not key.strip():
                raise ValueError(f'{flag} {text!r}: expected NAME:key=value,key=value (got {item!r})')
            try:
                kwargs[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                kwargs[key.strip()] = value.strip()  # a bare word, e.g. final_order=paper
        variants[name] = kwargs
    check_variants(variants, flag=flag)
    return variants


class _GroupsShape:
    """What GAREN's constructor asks of its groups, before any artifact exists (:func:`check_variants`)."""

    def group_of(self, docno):  # pragma: no cover - never called
        raise NotImplementedError

    group_members = summary = neighbours = group_of


def check_variants(variants: Dict[str, Dict[str, Any]], *, flag: str = 'variant') -> None:
    """``ValueError`` naming the first bad GAREN variant of a sweep, before anything is built or run.

    A variant may not take a registered system's name (its row would replace that system's, under that name), and
    its options must be GAREN's keyword options with values GAREN accepts. ``budget`` is the sweep's to set.
    """
    import inspect

    from ._garen import GAREN
    options = [name for name, parameter in inspect.signature(GAREN.__init__).parameters.items()
               if parameter.kind == parameter.KEYWORD_ONLY and name != 'budget']
    for name, kwargs in variants.items():
        if name in _registry.SYSTEM_NAMES:
            raise ValueError(f'{flag} {name!r} takes the name of a registered system, whose row it would replace; '
                             'give the variant a name of its own (e.g. "GAREN-t2:tau_switch=2")')
        unknown = [key for key in kwargs if key not in options]
        if unknown:
            what = ('the sweep sets it (--budgets)' if unknown[0] == 'budget' else
                    f'GAREN has no option {unknown[0]!r}; its options are {", ".join(options)}')
            raise ValueError(f'{flag} {name!r}: {unknown[0]!r} cannot be set here: {what}')
        try:
            placeholder = pt.Transformer.identity()  # the sizes and options are checked here, not the models
            GAREN(placeholder, _GroupsShape(), placeholder, **kwargs)
        except (TypeError, ValueError) as ex:
            raise ValueError(f'{flag} {name!r}: {ex}') from None


def strength_sweep(prepared, *, sigmas: Sequence[float] = (0.25, 0.5, 1.0, 2.0), noise_seeds: Sequence[int] = (0, 1),
                   partition_seeds: Sequence[int] = (42, 43), minilm: bool = True,
                   systems: Optional[Sequence[str]] = None, budget: int = 100, num_queries: Optional[int] = None,
                   navigator: str = 'centroid', qrels: Optional[pd.DataFrame] = None,
                   variants: Optional[Dict[str, Dict[str, Any]]] = None, budgets: Optional[Sequence[int]] = None,
                   fusion: float = 0.0, final_order: Optional[str] = None, tail_fusion: Optional[float] = None,
                   fusion_head: int = 10, observed_fusion: Optional[float] = None, listwise: bool = False,
                   head_rerank: int = 0,
                   verbose: bool = False) -> Tuple[pd.DataFrame, pd.DataFrame]:
    """Run every system with simulated rerankers of several strengths (and MiniLM) over several partitions.

    All systems take the same BM25 top 1000 (computed once) and the same budget. The reranker is a
    :class:`~pyterrier_garen.analysis.SimulatedReranker` over the evaluation qrels (``label + sigma * z``) for each
    ``sigma`` and noise seed, and the MiniLM reranker of :func:`~pyterrier_garen._compare.cpu_components` (which
    has no noise seed). GAREN's navigator is the real CPU navigator (``navigator``) of each partition. Systems that
    do not use the groups (Rerank, GAR, SlideGAR, RGS: their graph is the k-NN graph, the same for every partition)
    run once per reranker; their row is repeated for each partition seed.

    Args:
        prepared: the result of :func:`~pyterrier_garen.prepare` (its Leiden seed is one partition; others are
            built with :func:`partition_groups`).
        sigmas: noise levels (may be empty with ``minilm``: MiniLM only).
        noise_seeds: noise seeds of the simulated reranker.
        partition_seeds: Leiden seeds.
        minilm: also run the MiniLM reranker.
        systems: registered system names (default :data:`SWEEP_SYSTEMS`); those declared with ``groups=True`` run
            once per partition, the others once (their row repeated for each partition seed).
        budget: documents reranked per query (when ``budgets`` is not given).
        budgets: several budgets, each run in turn (the table's ``budget`` column tells them apart).
        num_queries: only the first N queries (with judgements).
        navigator: ``'centroid'``, ``'summary'`` or ``'vote'`` (see ``cpu_components``).
        qrels: judgements for the simulated reranker and the evaluation; default the collection's evaluation qrels.
        variants: extra GAREN configurations, ``{name: GAREN keyword arguments}`` (e.g.
            ``{'GAREN-t2': {'tau_switch': 2}}``), run like the GAREN systems (same reranker, navigator, budget).
        fusion: weight of :class:`~pyterrier_garen.FirstStageFusion` appended to every system and variant (0 =
            none); GAREN+ then runs without its own ``fusion``. Alone (``tail_fusion`` and ``observed_fusion``
            None) it is the stage GAREN+ carries, at this weight (:func:`~pyterrier_garen._compare.resolve_fusion`).
        final_order: every window search's ``final_order`` (None: each search's default); variants too unless
            they set their own.
        tail_fusion: that fusion's weight below its first ``fusion_head`` documents (depth-aware fusion, see
            :class:`~pyterrier_garen.FirstStageFusion`; None = ``fusion`` for the whole list), for every system
            and variant alike.
        fusion_head: documents above the tail fusion.
        observed_fusion: that fusion's weight of each search's observation order below the head (0 = none; None:
            0, or GAREN+'s with ``fusion`` alone).
        head_rerank: documents re-ranked once more by the reranker at the end of every system and variant that
            uses it, before the shared fusion (as in :func:`~pyterrier_garen.build_systems`: GAREN and its variants
            make the call inside the search, before propagation; 0 = none; a variant may set its own).
        listwise: every reranker seen as a listwise one (:class:`~pyterrier_garen.analysis.ListwiseView`): the same
            verdicts, but each call's scores only order that call's documents, as an LLM's ranking does (the
            searches' ``final_order='auto'`` then merges window positions, ``'dropped'``).
        verbose: progress bars.

    Returns:
        ``(table, perquery)``: ``table`` has :data:`SWEEP_COLUMNS` (``reranker`` is ``'simulated'`` or
        ``'MiniLM'``; ``sigma`` and ``noise_seed`` are NaN for MiniLM); ``perquery`` adds ``qid`` and holds every
        query's values, for paired tests (:func:`sweep_tests`).
    """
    # public names (resolved lazily by the package), so that module moves inside the package do not matter here
    from . import GAREN, FirstStageFusion, VectorScorer, minilm_encoder
    from ._params import check_head_rerank
    from ._compare import bm25_first_stage, build_systems, evaluation_qrels, fusion_stage, resolve_fusion
    from ._driver import COVERS_COLLECTION, check_first_stage, warn_budget_covers_collection
    from ._errors import each_warning_once
    from ._simulation import ListwiseView, SimulatedReranker
    from .datasets import remove_excluded
    budgets = [budget] if budgets is None else list(budgets)
    check_sweep_arguments(sigmas=sigmas, noise_seeds=noise_seeds, partition_seeds=partition_seeds, budgets=budgets,
                          num_queries=num_queries, variants=variants, systems=systems)
    tail_fusion, observed_fusion = resolve_fusion(fusion, tail_fusion, observed_fusion)  # variants get it too
    check_head_rerank(head_rerank)
    head = {'head_rerank': head_rerank} if head_rerank else {}  # the variants make the call inside, as GAREN does
    if not list(sigmas) and not minilm:
        raise ValueError('no reranker to sweep: give at least one sigma, or minilm=True (MiniLM only)')
    systems = list(SWEEP_SYSTEMS if systems is None else systems)
    depends = {name: _registry.system(name).groups for name in systems}  # unknown names fail here, before any run
    nav_spec = _registry.navigator(navigator)
    dataset = prepared.dataset
    stored = dataset.get_qrels()
    qrels = evaluation_qrels(dataset) if qrels is None else qrels
    topics = judged_topics(dataset, qrels, num_queries, context='strength_sweep')  # before any run
    qids = topics.qid.astype(str).tolist()
    first = bm25_first_stage(prepared)(topics)
    check_first_stage(first, topics, context='strength_sweep')
    source = pt.Transformer.from_df(first)
    budgets = [int(b) for b in budgets]
    warned = [warn_budget_covers_collection(b, len(prepared.groups), context='strength_sweep') for b in budgets]
    options = {'final_order': final_order} if final_order is not None else {}
    excluded = (stored.label == -100).any()
    encoder = minilm_encoder() if (minilm or nav_spec.encoder) else None
    partitions = {int(s): partition_groups(prepared, s, summaries=nav_spec.summaries, verbose=verbose)
                  for s in partition_seeds}
    navigators = {s: nav_spec.factory(g, prepared, encoder) for s, g in partitions.items()}
    rerankers: List[Tuple[str, float, float, pt.Transformer]] = [
        ('simulated', float(sigma), float(seed), SimulatedReranker(qrels, noise=float(sigma), seed=int(seed)))
        for sigma in sigmas for seed in noise_seeds]
    if minilm:
        rerankers.append(('MiniLM', math.nan, math.nan, VectorScorer(prepared.vectors, encoder)))
    if listwise:
        rerankers = [(kind, sigma, seed, ListwiseView(reranker)) for kind, sigma, seed, reranker in rerankers]
    frames = []
    with each_warning_once(), warnings.catch_warnings():  # every run of the loop builds its pipelines anew
        if any(warned):  # the sweep said it for the collection (above); each search would say it again
            warnings.filterwarnings('ignore', message=COVERS_COLLECTION, category=UserWarning)
        for b, (kind, sigma, noise_seed, reranker) in ((b, r) for b in budgets for r in rerankers):
            for i, (pseed, groups) in enumerate(partitions.items()):
                names = [s for s in systems if depends[s] or i == 0]
                if not names and not variants:
                    continue
                with warnings.catch_warnings():
                    if i > 0:  # the first partition's call named every system this budget leaves no step
                        warnings.filterwarnings('ignore', message=r'budget=\d+ leaves .* no adaptive step',
                                                category=UserWarning)
                    pipelines = build_systems(dataclasses.replace(prepared, groups=groups), reranker,
                                              navigators[pseed], budget=b, first_stage=source, systems=names,
                                              fusion=fusion, tail_fusion=tail_fusion, fusion_head=fusion_head,
                                              observed_fusion=observed_fusion, head_rerank=head_rerank, **options)
                for name, kwargs in (variants or {}).items():
                    pipelines[name] = source >> GAREN(reranker, groups, navigators[pseed], budget=b,
                                                      **{**options, **head, **kwargs})
                    if fusion or tail_fusion is not None or observed_fusion:
                        stage = fusion_stage(tail_fusion, fusion_head, observed_fusion)
                        pipelines[name] = pipelines[name] >> FirstStageFusion(first, fusion, **stage)
                for name, pipeline in pipelines.items():
                    run = pipeline(topics)
                    if excluded:
                        run = remove_excluded(run, stored)
                    values = _evaluate(run, qrels, qids)
                    seeds = [pseed] if name in (variants or {}) or depends[name] else list(partitions)
                    for seed in seeds:
                        frames.append(values.assign(system=name, reranker=kind, sigma=sigma, noise_seed=noise_seed,
                                                    partition_seed=seed, budget=b))
                    if verbose:
                        pt.tqdm.write(f'{name} {kind} sigma={sigma} noise_seed={noise_seed} partition_seed={pseed} '
                                      f'budget={b}: ' + ', '.join(f'{m}={values[m].mean():.4f}' for m in MEASURES))
    perquery = pd.concat(frames, ignore_index=True)[KEYS + ['qid', *MEASURES]]
    table = (perquery.groupby(KEYS, sort=False, dropna=False)[list(MEASURES)].mean().reset_index())
    return table[SWEEP_COLUMNS], perquery


def reranker_labels(frame: pd.DataFrame) -> np.ndarray:
    """Each sweep row's reranker as the summaries and verdicts name it: ``'MiniLM'`` or ``'sigma=<sigma>'`` (``%g``:
    ``sigma=1``, ``sigma=0.25``)."""
    return np.where(frame.reranker == 'MiniLM', 'MiniLM', 'sigma=' + frame.sigma.map('{:g}'.format))


def _budget_keys(frame: pd.DataFrame) -> List[str]:
    """``['budget']`` when a table holds several budgets (then every summary is per budget), else ``[]``."""
    return ['budget'] if 'budget' in frame.columns and frame['budget'].nunique() > 1 else []


def sweep_summary(table: pd.DataFrame, measure: str = 'nDCG@10') -> pd.DataFrame:
    """Mean with min-max over seeds, one row per system (per budget and system when there are several budgets), one
    column per reranker (``sigma=...`` / ``MiniLM``)."""
    frame = table.assign(config=reranker_labels(table))
    rows = [*_budget_keys(frame), 'system']
    stats = frame.groupby([*rows, 'config'], sort=False)[measure].agg(['mean', 'min', 'max'])
    cells = stats.apply(lambda r: f"{r['mean']:.4f} ({r['min']:.3f}-{r['max']:.3f})", axis=1)
    out = cells.unstack('config')
    order = sorted((c for c in out.columns if c != 'MiniLM'), key=lambda c: float(c.split('=')[1]))
    out = out[order + (['MiniLM'] if 'MiniLM' in out.columns else [])]
    keys = list(dict.fromkeys(zip(*[frame[r] for r in rows]))) if len(rows) > 1 else list(dict.fromkeys(frame.system))
    return out.reindex(keys)


def sweep_tests(perquery: pd.DataFrame, baseline: str = 'GAREN') -> pd.DataFrame:
    """Paired t-tests of every system against ``baseline`` at each reranker strength (and budget).

    Each query's value is first averaged over the noise and partition seeds of a (system, reranker, sigma, budget),
    so the test is over queries and the seeds' spread does not count as extra samples.

    Returns:
        ``budget, reranker, sigma, system, measure, mean, baseline_mean, delta, wins, losses, p_value`` (NaN for the
        baseline itself; ``budget`` only when ``perquery`` has one).
    """
    from scipy.stats import ttest_rel
    frame = perquery.assign(config=reranker_labels(perquery))
    per_budget = 'budget' in frame.columns
    if not per_budget:  # one (unnamed) budget
        frame = frame.assign(budget=0)
    rows = []
    for (budget, config, system), df in frame.groupby(['budget', 'config', 'system'], sort=False):
        base = frame[(frame.budget == budget) & (frame.config == config) & (frame.system == baseline)]
        if base.empty:
            continue
        sigma = df.sigma.iloc[0]
        for measure in MEASURES:
            ours = df.groupby('qid')[measure].mean()
            theirs = base.groupby('qid')[measure].mean().reindex(ours.index)
            diff = ours - theirs
            p_value = math.nan
            if system != baseline and diff.count() > 1 and diff.abs().sum() > 0:  # a test needs two queries
                p_value = float(ttest_rel(ours, theirs).pvalue)
            rows.append((budget, df.reranker.iloc[0], sigma, system, measure, ours.mean(), theirs.mean(), diff.mean(),
                         int((diff > 0).sum()), int((diff < 0).sum()), p_value))
    out = pd.DataFrame(rows, columns=['budget', 'reranker', 'sigma', 'system', 'measure', 'mean', 'baseline_mean',
                                      'delta', 'wins', 'losses', 'p_value'])
    return out if per_budget else out.drop(columns='budget')


def plot_strength_sweep(table: pd.DataFrame, measure: str = 'nDCG@10', *, systems: Optional[Sequence[str]] = None,
                        ax=None):
    """A measure against the noise ``sigma`` per system (mean over seeds, min-max band); MiniLM at the right.

    The x axis is categorical (the sigmas in order, then ``MiniLM``), so MiniLM's point is not placed on the
    noise scale; it is drawn unconnected with a min-max error bar. A table of several budgets must be cut to one
    first (``table[table.budget == 100]``).
    """
    if _budget_keys(table):
        budgets = sorted(int(b) for b in table.budget.unique())
        raise ValueError(f'the table holds budgets {budgets}; plot one at a time, e.g. '
                         f'table[table.budget == {int(table.budget.iloc[0])}]')
    import matplotlib.pyplot as plt
    ax = ax or plt.subplots(figsize=(6, 4))[1]
    sims = table[table.reranker != 'MiniLM']
    sigmas = sorted(sims.sigma.dropna().unique())
    has_minilm = (table.reranker == 'MiniLM').any()
    for name in systems or list(dict.fromkeys(table.system)):
        df = sims[sims.system == name].groupby('sigma')[measure].agg(['mean', 'min', 'max']).reindex(sigmas)
        x = np.arange(len(sigmas))
        line, = ax.plot(x, df['mean'], marker='o', label=name)
        ax.fill_between(x, df['min'], df['max'], color=line.get_color(), alpha=0.15)
        if has_minilm:
            m = table[(table.reranker == 'MiniLM') & (table.system == name)][measure]
            if len(m):
                ax.errorbar([len(sigmas)], [m.mean()], yerr=[[m.mean() - m.min()], [m.max() - m.mean()]],
                            color=line.get_color(), marker='s', capsize=3)
    labels = [f'{s:g}' for s in sigmas] + (['MiniLM'] if has_minilm else [])
    ax.set_xticks(np.arange(len(labels)))
    ax.set_xticklabels(labels)
    ax.set_xlabel('simulated reranker noise sigma (weaker to the right)')
    ax.set_ylabel(measure)
    ax.legend(fontsize=7, ncol=2)
    return ax


def sweep_plot_file(table: pd.DataFrame, path: Union[str, Path], *, title: str = '') -> None:
    """Both measures side by side, written to ``path`` (PNG)."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, measure in zip(axes, MEASURES):
        plot_strength_sweep(table, measure, ax=ax)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class AppendedTable:
    """A CSV a script appends its rows to, one measured cell at a time, so that a run that was stopped resumes.

    Opening it reads the rows the file already holds: :meth:`holds` says whether a cell (its ``keys``) is among them,
    so the script skips it rather than measuring and writing it twice. A file whose header is not ``columns``
    (another script's, or an older version's) is refused when opened, before any work: appending would put values
    under the wrong names. An empty or missing file starts with the header. Nothing already in the file is changed.
    """

    def __init__(self, path: Union[str, Path], columns: Sequence[str], keys: Sequence[str], flag: str = '--out'):
        from ._errors import UsageError
        self.path, self.columns, self.keys = Path(path), list(columns), list(keys)
        self._held = set()
        if self.path.is_file() and self.path.stat().st_size:
            held = pd.read_csv(self.path, dtype=str, keep_default_na=False)
            if list(held.columns) != self.columns:
                raise UsageError(f'{flag} {path} holds the columns {list(held.columns)}, not the '
                                 f'{self.columns} this command writes; appending would put values under the wrong '
                                 'names: give another file')
            self._held = set(held[self.keys].itertuples(index=False, name=None))

    def holds(self, **cell: Any) -> bool:
        """Whether the file holds a row of this cell (its ``keys``, compared as written: None as empty)."""
        return tuple(_as_written(cell[k]) for k in self.keys) in self._held

    def append(self, rows: pd.DataFrame, missing_only: bool = False) -> int:
        """Append ``rows`` (exactly :attr:`columns`); the header too when the file is new or empty.

        With ``missing_only``, a row whose cell the file already holds is left out: a file written beside another
        (per-query rows beside their means) may hold a cell's rows from a run stopped before the other file was
        written, and that cell is measured again. Returns the number of rows written.
        """
        if list(rows.columns) != self.columns:
            raise ValueError(f'rows with the columns {list(rows.columns)} cannot go to {self.path}, which holds '
                             f'{self.columns}')
        keys = [tuple(map(_as_written, key)) for key in rows[self.keys].itertuples(index=False, name=None)]
        if missing_only:
            rows = rows[[key not in self._held for key in keys]]
        if not len(rows):
            return 0
        new = not self.path.is_file() or not self.path.stat().st_size
        rows.to_csv(self.path, mode='a', header=new, index=False)
        self._held.update(keys)
        return len(rows)


def _as_written(value: Any) -> str:
    """A value as a CSV cell reads back as text: None and NaN are empty."""
    return '' if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)
