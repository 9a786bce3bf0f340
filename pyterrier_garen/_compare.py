"""GAREN and its baselines side by side in one ``pt.Experiment`` (the main job: ``python -m pyterrier_garen compare``).
"""
from __future__ import annotations

import inspect
import warnings
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import pandas as pd
import pyterrier as pt

from . import _registry
from ._params import check_head_rerank, check_int, check_number
from ._provenance import code_version, package_versions

__all__ = ['SYSTEMS', 'NAVIGATORS', 'cpu_components', 'build_systems', 'compare', 'evaluation_qrels',
           'format_comparison']

#: Names of the systems :func:`compare` runs, in its table's order (declared in ``_registry.py``; a live list).
SYSTEMS = _registry.SYSTEM_NAMES
GAREN_PLUS = _registry.GAREN_PLUS
#: Names of GAREN's navigators (declared in ``_registry.py``; a live list).
NAVIGATORS = _registry.NAVIGATOR_NAMES
FIRST_STAGE = 'PISA BM25 (porter2, k1=0.9, b=0.4, title + text), top 1000'


def bm25_first_stage(prepared) -> pt.Transformer:
    """The first stage of every comparison and sweep (:data:`FIRST_STAGE`), over ``prepared``'s PISA index."""
    return prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)


def _count(n: Any, one: str, many: str) -> str:
    """``'1 query'``, ``'3 queries'`` (anything but the number 1 takes the plural)."""
    return f'{n} {one if n == 1 else many}'


def _over_limit(stats: Dict[str, Any]) -> str:
    """What the groups line adds when some groups exceed the size limit (Leiden could not split them: e.g.
    documents with one text), so that the header does not promise a limit the partition broke."""
    if not stats.get('over_limit'):
        return ''
    larger = _count(stats['over_limit'], 'group', 'groups')
    return f"; {larger} larger that Leiden could not split, up to {stats['max']}"


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
    from . import VectorScorer, minilm_encoder
    spec = _registry.navigator(navigator)
    encoder = minilm_encoder()
    reranker = VectorScorer(prepared.vectors, encoder)
    nav = spec.factory(prepared.groups, prepared, encoder)
    return reranker, nav


def build_systems(prepared, reranker: pt.Transformer, navigator: pt.Transformer, *, budget: int = 100,
                  first_stage: Optional[pt.Transformer] = None, doc_navigator: Optional[pt.Transformer] = None,
                  systems: Optional[Sequence[str]] = None, fusion: float = 0.0,
                  final_order: Optional[str] = None, verbose: bool = False, tail_fusion: Optional[float] = None,
                  fusion_head: int = 10, observed_fusion: Optional[float] = None,
                  head_rerank: int = 0) -> Dict[str, pt.Transformer]:
    """Pipelines named as in :data:`SYSTEMS`, all with the same first stage, reranker, graph and budget.

    Args:
        prepared: the result of :func:`pyterrier_garen.prepare` (BM25 index and groups).
        reranker: scores ``(qid, query, docno)`` rows (pointwise here; a listwise LLM reranker works too).
        navigator: scores ``(qid, query, docno=<group id>, text=<summary>)`` rows.
        budget: documents reranked per query (``c``); a budget that leaves some of ``systems`` no adaptive step
            (at most the window of 20 for a window search, GAR's batch of 16, 1 for RGS) warns, naming them: they
            then only re-rank the first-stage top ``budget``.
        first_stage: defaults to PISA BM25 (k1=0.9, b=0.4), top 1000.
        doc_navigator: scorer of neighbouring documents for ``GAREN-doc``; defaults to ``reranker``, whose scores
            of every unobserved neighbour then go beyond the budget (:data:`GAREN_DOC_LEGEND`).
        systems: the subset of names to build.
        fusion: weight of :class:`~pyterrier_garen.FirstStageFusion` (with ``first_stage``) appended to every
            system (0 = none); GAREN+ then runs without its own ``fusion``, so every row gets the same help. With
            neither ``tail_fusion`` nor ``observed_fusion`` given, the stage takes GAREN+'s depth-aware weights
            below the head (:func:`resolve_fusion`), so it is the stage GAREN+ carries, at weight ``fusion``.
        final_order: every window search's ``final_order`` (None: each search's default).
        verbose: one progress bar per system (over queries) while it runs (:func:`compare` shows one bar over
            the systems instead).
        tail_fusion: depth-aware fusion: that stage's weight below its first ``fusion_head`` documents
            (``FirstStageFusion(tail_weight=...)``; None = ``fusion`` for the whole list). When set the stage is
            appended to every system even with ``fusion`` 0 (whose head then keeps the system's own order).
        fusion_head: documents above the tail (default 10, what nDCG@10 sees).
        observed_fusion: that stage's weight of each search's observation order below the head
            (``FirstStageFusion(observed_weight=...)``, by the ``iteration`` column every adaptive search writes;
            plain re-ranking, which writes none, by the first stage's order; 0 = none; None = 0, or GAREN+'s weight
            when ``fusion`` is set and ``tail_fusion`` is None); when set the stage is appended to every system
            likewise. ``observed_fusion=0`` with ``fusion`` alone is the flat fusion over the whole list.
        head_rerank: documents re-ranked once more by ``reranker`` at the end of every system that uses it (0 =
            none), before the shared fusion: the GAREN systems make the call inside the search, before their
            propagation and own fusion (``GAREN(head_rerank=...)``), the others get
            :class:`~pyterrier_garen.HeadReranker` appended (``System.head_inside`` says which).

    Raises:
        ValueError: for an unknown system name, a non-positive budget or a ``head_rerank`` of 1 or below 0.
    """
    systems = list(SYSTEMS if systems is None else systems)
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise ValueError(f'unknown systems {unknown}; choose from {SYSTEMS}')
    repeated = sorted({s for s in systems if systems.count(s) > 1})
    if repeated:
        raise ValueError(f'systems repeat {" ".join(repeated)}: give each system once (each is one row of the '
                         'table)')
    check_int('budget', budget, low=1, note='documents reranked per query')
    window = _window()
    limits = {name: _registry.system(name).adapts_above for name in systems}  # System.adapts_above
    bound = [name for name, limit in limits.items() if budget <= (window if limit is None else limit)]
    if bound:
        warnings.warn(f'budget={budget} leaves {", ".join(bound)} no adaptive step: they re-rank only the first-stage '
                      f'top {budget} (a window search looks further only at a budget above its window of {window} '
                      f'documents, GAR above its batch of {_registry.GAR_BATCH}); use a larger budget, e.g. 100 as in '
                      'the paper', stacklevel=2)
    bm25 = first_stage if first_stage is not None else bm25_first_stage(prepared)
    tail_fusion, observed_fusion = resolve_fusion(fusion, tail_fusion, observed_fusion)
    check_int('fusion_head', fusion_head, low=0, note='documents above the tail fusion')
    check_head_rerank(head_rerank)
    components = _registry.Components(first_stage=bm25, reranker=reranker, groups=prepared.groups,
                                      navigator=navigator, budget=budget, doc_navigator=doc_navigator,
                                      verbose=verbose, final_order=final_order, fusion=fusion,
                                      tail_fusion=tail_fusion, observed_fusion=observed_fusion,
                                      head_rerank=head_rerank)
    from . import FirstStageFusion, HeadReranker
    pipelines = {}
    for name in systems:
        spec = _registry.system(name)
        pipe = spec.factory(components)
        if head_rerank and spec.reranks and not spec.head_inside:  # the call GAREN's searches make inside
            pipe = pipe >> HeadReranker(reranker, head_rerank)
        if components.shared_fusion:  # the same stage for every system (GAREN+ then runs without its own fusion)
            pipe = pipe >> FirstStageFusion(bm25, fusion, **fusion_stage(tail_fusion, fusion_head, observed_fusion))
        pipelines[name] = pipe
    return pipelines


def resolve_fusion(fusion: float, tail_fusion: Optional[float] = None,
                   observed_fusion: Optional[float] = None) -> Tuple[Optional[float], float]:
    """The weights below the head of the stage shared by every system: ``(tail_fusion, observed_fusion)``.

    A fusion weight given alone (``fusion > 0``, both others None) means the stage GAREN+ carries, at that weight
    in the head: its own ``tail_fusion`` and ``observed_fusion`` (:data:`GAREN_PLUS`) below it. So ``--fusion 0.1``
    gives every baseline exactly GAREN+'s help, and GAREN+'s row is the one it has without ``--fusion``. Any
    other combination is taken as given (None observation weight = 0); ``observed_fusion=0`` with ``fusion`` alone
    is the flat fusion over the whole list. Raises ``ValueError`` for a negative weight.
    """
    check_number('fusion', fusion, low=0, note='first-stage fusion weight, 0 = off')
    check_number('tail_fusion', tail_fusion, low=0, none_ok=True, note='first-stage weight below the head, None = off')
    check_number('observed_fusion', observed_fusion, low=0, none_ok=True,
                 note="observation-order weight below the head, 0 = off, None = GAREN+'s with --fusion alone")
    if fusion and tail_fusion is None and observed_fusion is None:
        return GAREN_PLUS['tail_fusion'], GAREN_PLUS['observed_fusion']
    return tail_fusion, observed_fusion or 0.


def fusion_stage(tail_fusion: Optional[float], fusion_head: int, observed_fusion: float) -> Dict[str, Any]:
    """The depth-aware keyword arguments of ``FirstStageFusion`` (none when neither tail option is set)."""
    stage: Dict[str, Any] = {}
    if tail_fusion is not None:
        stage['tail_weight'] = tail_fusion
    if observed_fusion:
        stage['observed_weight'] = observed_fusion
    return {**stage, 'head': fusion_head} if stage else {}


def _head_rerank_argument(text: str) -> int:
    """``--head-rerank``'s value, checked when the command line is read (before anything is built)."""
    import argparse
    try:
        value = int(text)
        check_head_rerank(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f'{text!r}: must be 0 (none) or a whole number of at least 2 '
                                         'documents') from None
    return value


def add_fusion_arguments(parser) -> None:
    """The shared-stage options of the commands that compare systems (``compare``, ``examples/strength_sweep.py``):
    the fusion options append ONE :class:`~pyterrier_garen.FirstStageFusion` to every system, ``--head-rerank`` ONE
    more reranker call before it (:class:`~pyterrier_garen.HeadReranker`, or inside GAREN's searches before their
    propagation), so every system gets the same help."""
    parser.add_argument('--fusion', type=float, default=0.0, metavar='W',
                        help="fuse every system's final ranking with the first stage, weight W (FirstStageFusion; "
                             "GAREN+ then runs without its own fusion); 0 = none. Alone it is GAREN+'s stage: "
                             f"below the top --fusion-head documents --tail-fusion {GAREN_PLUS['tail_fusion']:g} "
                             f"--observed-fusion {GAREN_PLUS['observed_fusion']:g} (add --observed-fusion 0 for "
                             'W over the whole list)')
    parser.add_argument('--tail-fusion', type=float, metavar='T',
                        help='depth-aware fusion: below the top --fusion-head documents, fuse with the first stage '
                             'at weight T instead (the same stage for every system); default: --fusion for the '
                             "whole list, or GAREN+'s with --fusion alone")
    parser.add_argument('--fusion-head', type=int, default=10, metavar='H',
                        help='documents above the tail fusion (default 10, what nDCG@10 sees)')
    parser.add_argument('--head-rerank', type=_head_rerank_argument, default=0, metavar='N',
                        help="re-rank every system's top N once more with its reranker, one call for all queries, "
                             "before the shared fusion (HeadReranker; GAREN's searches make it inside, before their "
                             'propagation and own fusion); N more documents sent per query, none of them new; '
                             '0 = none (the default)')
    parser.add_argument('--observed-fusion', type=float, metavar='U',
                        help="depth-aware fusion: below the top --fusion-head documents, add each search's "
                             'observation order (when it first saw a document) at weight U (the same stage for '
                             "every system); 0 = none (the default, or GAREN+'s with --fusion alone)")


def describe_fusion(fusion: float, tail_fusion: Optional[float], fusion_head: int,
                    observed_fusion: float, *, head_rerank: int = 0) -> List[str]:
    """The phrases that say which shared stages a comparison applied (none for none): the head re-rank, then the
    fusion."""
    parts = [f'top {head_rerank} re-ranked once more for every system that uses the reranker'] if head_rerank else []
    if fusion:
        parts.append(f'first-stage fusion {fusion:g} for every system')
    if tail_fusion is not None:
        parts.append(f'below the top {fusion_head} first-stage fusion {tail_fusion:g}')
    if observed_fusion:
        parts.append(f'below the top {fusion_head} observation-order fusion {observed_fusion:g}')
    return parts


class _Done(pt.Transformer):
    """Passes its input through, advances a progress bar and records the documents of each query in ``counts``
    under ``name``: ``system >> _Done(bar, name, counts)``."""

    def __init__(self, progress, name: str, counts: Optional[Dict[str, pd.Series]] = None):
        self.progress = progress
        self.name = name
        self.counts = counts

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        if self.counts is not None:
            self.counts[self.name] = inp.groupby(inp['qid'].astype(str)).size() if len(inp) else pd.Series(dtype=int)
        self.progress.set_postfix_str(f'{self.name} done', refresh=False)
        self.progress.update(1)
        return inp


def budget_spent(counts: Dict[str, pd.Series], qids: Sequence[str], budget: int) -> Dict[str, Dict[str, Any]]:
    """The systems that returned fewer documents than ``budget`` for some of ``qids``: ``{name: {'mean': documents
    per query, 'short': queries below the budget, 'queries': len(qids)}}``, in the order of ``counts`` (a query
    without rows counts 0). Every system here returns each document it re-ranked, so the count is what it spent."""
    qids = [str(q) for q in qids]
    spent = {}
    for name, sizes in counts.items():
        per_query = sizes.reindex(qids).fillna(0)
        short = int((per_query < budget).sum())
        if short:
            spent[name] = {'mean': round(float(per_query.mean()), 1), 'short': short, 'queries': len(qids)}
    return spent


def spent_legend(spent: Dict[str, Dict[str, Any]], budget: int) -> str:
    """The line under a table saying which systems re-ranked fewer documents than the budget (see
    :func:`budget_spent`), or '' when every system spent it on every query."""
    if not spent:
        return ''
    parts = [f"{name} {info['mean']:g} ({info['short']} of {_count(info['queries'], 'query', 'queries')} short)"
             for name, info in spent.items()]
    text = (f'Budget spent: fewer than {budget} documents per query (mean) for ' + ', '.join(parts)
            + '. A search stops short when nothing new is left within its reach; BM25 and plain re-ranking hold at '
            'most what the first stage found (docs/results.md, "every search spends its budget").')
    if 'SlideGAR' in spent:
        text += (' SlideGAR(fill=True) takes the rest from the neighbours of the documents it dropped (measured in '
                 'docs/results.md, "SlideGAR\'s fill").')
    return text


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


def check_some_query_judged(topics: pd.DataFrame, total_queries: int, qrels: pd.DataFrame, dataset) -> None:
    """``ValueError`` when no query of ``topics`` (the first ``len(topics)`` of ``total_queries``) has a judgement
    in ``qrels``: ``pt.Experiment`` would refuse the run only after every offline step and every system had run,
    with advice (``filter_by_topics``) that ``compare`` has no option for.

    A query whose judgements are all 0 is judged (measured as 0): the warning about relevant documents covers it.
    """
    judged = set(qrels.qid.astype(str))
    qids = topics.qid.astype(str)
    if qids.isin(judged).any():
        return
    asked = _count(len(topics), 'query', 'queries')
    first = f'qid {qids.iloc[0]!r}'
    if not judged:
        raise ValueError(f'compare: the qrels of {dataset} hold no judgement to evaluate the {asked} with (a label '
                         'of -100 excludes a document, it does not judge it); add judgements "qid 0 docno label" for '
                         'them')
    example = f'e.g. {sorted(judged)[0]!r}'
    later = int(dataset.get_topics().qid.astype(str).isin(judged).sum()) if len(topics) < total_queries else 0
    if later:
        fix = (f'they are the first {len(topics)} of the {total_queries} queries, and {later} later ones are '
               f'judged: evaluate more queries (--queries, num_queries) or put judged queries first')
    else:
        fix = ('check that the qrels name the queries by the qids of the queries file, exactly as written '
               "('007' is not '7')")
    raise ValueError(f'compare: none of the {asked} evaluated ({first}, ...) has a judgement in the qrels ({example}, '
                     f'...), so nothing can be measured; {fix}')


def compare(dataset=None, *, budget: int = 100, workdir: Optional[Union[str, Path]] = None,
            num_queries: Optional[int] = None, navigator: str = 'centroid', systems: Optional[Sequence[str]] = None,
            binary: Optional[bool] = None, fusion: float = 0.0, final_order: Optional[str] = None,
            verbose: bool = False, reranker: str = 'minilm', tail_fusion: Optional[float] = None,
            fusion_head: int = 10, observed_fusion: Optional[float] = None, head_rerank: int = 0) -> pd.DataFrame:
    """Run GAREN and its baselines in one ``pt.Experiment`` with the CPU default components.

    Offline artifacts are built on the first call (a PISA index, MiniLM vectors, a k-NN graph, summarised groups;
    minutes for a few thousand documents on a CPU) and reused afterwards.

    Args:
        dataset: a collection folder, a name under ``$GAREN_DATA``, an ``irds:`` id, a dataset object, or ``None``
            for the synthetic collection (:func:`pyterrier_garen.synthetic.make_synthetic`).
        budget: documents reranked per query (``c``).
        workdir: where offline artifacts are built/reused (default ``$GAREN_CACHE/<name>``).
        num_queries: evaluate on the first N queries only; of them, the measures are over those with a relevant
            document (a label above 0), as every sweep's (``attrs['run']['relevant_queries']`` counts them).
        navigator: GAREN's navigator (see :func:`cpu_components`).
        systems: which systems to run (names from :data:`SYSTEMS`).
        binary: relevance labels (see :func:`evaluation_qrels`): ``None`` follows the collection's declaration.
        fusion: first-stage fusion weight applied to every system (:func:`build_systems`; 0 = none); alone, the
            stage GAREN+ carries (:func:`resolve_fusion`).
        tail_fusion: that fusion's weight below its first ``fusion_head`` documents (:func:`build_systems`).
        fusion_head: documents above the tail fusion.
        observed_fusion: that fusion's weight of the observation order below the head (:func:`build_systems`).
        head_rerank: documents every system's reranker re-ranks once more at its end, before any fusion
            (:func:`build_systems`; 0 = none).
        final_order: every window search's ``final_order`` (None: each search's default).
        verbose: progress bars: one per offline step that builds something, one over the systems.
        reranker: the reranker of every system: ``'minilm'`` (default), ``'cross-encoder:NAME_OR_FOLDER'`` or
            ``'factory:package.module:function'`` (see ``pyterrier_garen._text_rerankers.RERANKERS``).

    Returns:
        The ``pt.Experiment`` frame: ``name, nDCG@10, R@100`` and, when GAREN is among the systems, paired t-test
        columns against it. ``frame.attrs['labels']`` says which relevance labels were used, ``frame.attrs['run']``
        describes everything that ran; :func:`format_comparison` prints both.
    """
    from ir_measures import R, nDCG

    from . import RemoveExcluded, prepare
    from ._driver import COVERS_COLLECTION, check_first_stage, is_listwise, warn_budget_covers_collection
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
    _registry.navigator(navigator)  # an unknown name fails before anything is built
    check_int('num_queries', num_queries, low=1, none_ok=True, note='None: all queries')
    tail_fusion, observed_fusion = resolve_fusion(fusion, tail_fusion, observed_fusion)  # what the table reports
    check_head_rerank(head_rerank)
    from ._text_rerankers import build_reranker, check_reranker
    check_reranker(reranker)  # a spec that cannot work fails before anything is built
    # the queries and judgements are read before anything is built: a bad line fails in seconds, not after the
    # offline steps (and mending it keeps what they built: the workdir is the documents', corpus_fingerprint)
    from ._frames import check_one_query_per_qid, clean_queries
    topics = clean_queries(dataset.get_topics(), dataset)  # repaired at the boundary: PISA fails on a NUL
    check_one_query_per_qid(topics, dataset)
    total_queries = len(topics)
    if num_queries:
        topics = topics.head(num_queries)
    all_qrels = dataset.get_qrels()
    qrels = evaluation_qrels(dataset, binary=binary)
    check_some_query_judged(topics, total_queries, qrels, dataset)
    relevant = set(qrels.loc[qrels.label > 0, 'qid'].astype(str))
    measured = topics[topics.qid.astype(str).isin(relevant)]
    if measured.empty:
        warnings.warn(f'compare: none of the {_count(len(topics), "query", "queries")} evaluated has a relevant '
                      'document (a label above 0), so every measure is 0 and no system can be told from another; '
                      'check the qrels (relevant documents need a positive label)', stacklevel=2)
        measured = topics
    # the measures are over the queries with a relevant document, as every sweep's (judged_topics): a query judged
    # only 0 or below scores 0 in every system, and counting it lowered every mean and diluted the paired tests
    prepared = prepare(dataset, workdir, verbose=verbose)
    # the first stage once: checked here, then every system starts from these results (as strength_sweep's do)
    first = bm25_first_stage(prepared)(measured)
    judged = measured[measured.qid.astype(str).isin(set(qrels.qid.astype(str)))]  # what the measures are over
    check_first_stage(first, judged, context='compare')
    warn_budget_covers_collection(budget, len(prepared.groups), context='compare')
    spec, (reranker, nav) = reranker, cpu_components(prepared, navigator=navigator)
    reranker_text = 'MiniLM cosine over stored vectors (VectorScorer)'
    if spec != 'minilm':
        reranker, reranker_text = build_reranker(spec, prepared)
    pipelines = build_systems(prepared, reranker, nav, budget=budget, systems=systems, fusion=fusion,
                              final_order=final_order, tail_fusion=tail_fusion, fusion_head=fusion_head,
                              observed_fusion=observed_fusion, first_stage=pt.Transformer.from_df(first),
                              head_rerank=head_rerank)
    excluded = bool((all_qrels.label == -100).any())
    names = list(pipelines)
    baseline = names.index('GAREN') if 'GAREN' in names else None
    progress = pt.tqdm(total=len(names), desc=f'running {len(names)} systems on {len(measured)} queries',
                       unit='system', disable=not verbose)
    counts: Dict[str, pd.Series] = {}  # documents per query of each system, before any excluded are removed
    systems_run = [pipe >> _Done(progress, name, counts) for name, pipe in pipelines.items()]
    if excluded:
        systems_run = [pipe >> RemoveExcluded(all_qrels) for pipe in systems_run]
    # validate='ignore': every pipeline here is known to produce qid, docno, score (and a custom first stage or
    # reranker need not be inspectable); verbose=False: one bar over the systems instead of the tree's dump.
    with progress, warnings.catch_warnings():
        # scipy's paired t-test on fewer than two queries, or on equal values, warns and gives NaN: the table shows
        # an empty p-value, which says the same
        warnings.filterwarnings('ignore', category=RuntimeWarning, module=r'scipy\.')
        # compare said it for the collection (above); each search would say it again
        warnings.filterwarnings('ignore', message=COVERS_COLLECTION, category=UserWarning)
        table = pt.Experiment(systems_run, measured, qrels, [nDCG @ 10, R @ 100], names=names, baseline=baseline,
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
        'relevant_queries': int(topics.qid.astype(str).isin(relevant).sum()),  # the queries measured (when any)
        'labels': qrels.attrs['labels'],
        'excluded_removed': excluded,
        'budget': budget,
        'fusion': fusion,
        'final_order': final_order,
        'first_stage': FIRST_STAGE,
        'reranker': reranker_text,
        'listwise': is_listwise(reranker),  # window positions only: GAR's order is then not meaningful
        'navigator': _registry.navigator(navigator).text,
        'groups': f"{_count(stats['groups'], 'Leiden group', 'Leiden groups')} (max size "
                  f"{partition.get('max_group_size', '?')}{_over_limit(stats)}) of a MiniLM "
                  f"k-NN graph, extractive summaries",
        'baseline': names[baseline] if baseline is not None else None,
        # how the vectors were encoded, as recorded with them (None: built before the record was kept)
        'vectors_precision': vectors_precision(prepared),
        # the systems that re-ranked fewer documents than the budget on some query with first-stage results
        'spent': budget_spent(counts, first['qid'].astype(str).unique(), budget),
        # GAREN-doc's document navigator (build_systems' default): its scores are the reranker's own
        'doc_navigator': 'reranker',
    }
    if tail_fusion is not None or observed_fusion:
        table.attrs['run'].update(tail_fusion=tail_fusion, fusion_head=fusion_head, observed_fusion=observed_fusion)
    if head_rerank:
        table.attrs['run']['head_rerank'] = head_rerank
    return table


def vectors_precision(prepared) -> Optional[str]:
    """The precision the prepared MiniLM vectors were encoded with (``'fp32'``, ``'bf16'``), as their folder records
    it (:func:`~pyterrier_garen._graphs.encoding_record`), or None."""
    from ._graphs import encoding_record
    path = getattr(prepared.vectors, 'index_path', None)
    record = encoding_record(path) if path is not None else None
    return record.get('precision') if record else None


def format_comparison(table: pd.DataFrame) -> str:
    """What :func:`compare` ran, its table and a two-line legend of the significance columns, as text.

    Args:
        table: the frame :func:`compare` returned (a plain ``pt.Experiment`` frame prints without the header).
    """
    run: Dict[str, Any] = table.attrs.get('run', {})
    lines = []
    if run:
        queries = _count(run['queries'], 'query', 'queries')
        if run['queries'] < run['total_queries']:
            queries += f" (first {run['queries']} of {run['total_queries']})"
        if run['judged_queries'] < run['queries']:
            queries += f", {run['judged_queries']} with relevance labels"
        relevant = run.get('relevant_queries', run['judged_queries'])
        if 0 < relevant < run['judged_queries']:
            queries += f', {relevant} with a relevant document (label > 0): the measures are over those {relevant}'
        lines += [f"collection:  {run['collection']}, {run['documents']:,} documents; {queries}",
                  f"labels:      {run['labels']}" + ('; excluded documents (label -100) removed from every run'
                                                     if run['excluded_removed'] else ''),
                  f"budget:      {run['budget']} documents reranked per query"
                  + (f"; final order {run['final_order']}" if run.get('final_order') else '')
                  + ''.join(f'; {part}' for part in describe_fusion(run.get('fusion', 0.), run.get('tail_fusion'),
                                                                     run.get('fusion_head', 10),
                                                                     run.get('observed_fusion', 0.),
                                                                     head_rerank=run.get('head_rerank', 0))),
                  f"first stage: {run['first_stage']}",
                  f"reranker:    {run['reranker']}" + ('; listwise (scores that only order each call)'
                                                         if run.get('listwise') else ''),
                  f"navigator:   {run['navigator']}",
                  f"groups:      {run['groups']}",
                  '']
    shown = table.copy()
    for col in shown.columns:
        if col.endswith(' +') or col.endswith(' -'):
            shown[col] = [('' if pd.isna(v) else str(int(v))) for v in shown[col]]
        elif col.endswith(' p-value'):  # a table of the baseline alone holds None there, which pandas prints
            shown[col] = pd.to_numeric(shown[col], errors='coerce')
    lines.append(shown.round(4).to_string(index=False, na_rep=''))  # every column, unwrapped, whatever the options
    baseline = run.get('baseline') if run else None
    if baseline is None and any(c.endswith(' p-value') for c in table.columns):
        baseline = 'the baseline'
    if baseline:
        n = run.get('relevant_queries') or run.get('judged_queries', 'the')
        lines += ['',
                  f'"<measure> +" / "<measure> -": queries on which a system scores higher / lower than {baseline} '
                  f'(the baseline, hence its empty row);',
                  f'"<measure> p-value": two-sided paired t-test against {baseline} over '
                  f'{_count(n, "query", "queries")}, not corrected '
                  f'for multiple comparisons.']
    if 'name' in table.columns and 'GAREN+' in set(table['name']):
        shared = bool(run.get('fusion') or run.get('tail_fusion') is not None or run.get('observed_fusion'))
        lines += ['', garen_plus_legend(shared=shared)]
    if 'name' in table.columns and 'RGS' in set(table['name']):
        lines += ['', RGS_LEGEND]
    if run.get('listwise') and 'name' in table.columns and 'GAR' in set(table['name']):
        lines += ['', GAR_LISTWISE_LEGEND]
    if run.get('doc_navigator') == 'reranker' and 'name' in table.columns and 'GAREN-doc' in set(table['name']):
        lines += ['', GAREN_DOC_LEGEND]
    if run.get('spent'):
        lines += ['', spent_legend(run['spent'], run['budget'])]
    return '\n'.join(lines)


#: The line under a table with an RGS row: the search here most prone to leave part of its budget unspent.
RGS_LEGEND = ('RGS: as its reference code, it ends when no document of its queue has an unseen neighbour left, so it '
              'can re-rank fewer documents than the budget; RGS(backfill=True) spends the rest on the first stage '
              '(measured in docs/results.md, "RGS\'s unspent budget"). It re-ranks its queue after every expansion, '
              'so for the same budget it sends the reranker more documents than the other searches '
              '(bench/reranker_load.py counts them).')


#: The line under a table with a GAR row when the reranker is listwise: GAR compares scores across its batches.
GAR_LISTWISE_LEGEND = ('GAR: it ranks the documents of all its batches together by score, and this reranker\'s '
                       'scores only order each call, so its order (its nDCG@10 above all) says little about GAR; '
                       'SlideGAR is GAR\'s form for listwise rerankers (measured in docs/results.md, "a listwise '
                       'reranker").')


#: The line under a table with a GAREN-doc row whose document navigator is the reranker (``compare``'s): the
#: budget counts the documents it re-ranks, not the reranker's scores it navigates by.
GAREN_DOC_LEGEND = ('GAREN-doc: its navigator scores documents, and here it is the reranker itself, so it has the '
                    'reranker\'s score of every unobserved neighbour of each window before choosing which to re-rank: '
                    'the reranker scores several times the budget in distinct documents per query (bench/'
                    'reranker_load.py counts them), so its row is not at the budget of the others.')


def garen_plus_legend(shared: bool = False) -> str:
    """The line that says what the ``GAREN+`` row is (printed under the table, quoted by the README); ``shared``:
    the table was run with one fusion stage for every row (``--fusion`` and the like), which replaces GAREN+'s own."""
    options = ', '.join(f'{k}={v}' for k, v in GAREN_PLUS.items())
    options_shared = f"--fusion {GAREN_PLUS['fusion']:g}"  # alone, GAREN+'s whole stage (resolve_fusion)
    return (f'GAREN+: GAREN with options beyond the paper ({options}), frozen after the reranker-strength sweep on '
            'the shipped collections (docs/results.md); GAREN is the paper\'s algorithm. '
            + ('Here every row got the same fusion stage with the first stage, in place of GAREN+\'s own.' if shared
               else f'Its fusion with the first stage would help any system and no other row has it here: '
                    f'`{options_shared}` gives that same stage, its weights below the top 10 included, to every '
                    'row (GAREN+ then drops its own).'))


#: GAREN's options that fuse its ranking with the first stage (what the shared stage gives every row).
OWN_FUSION_OPTIONS = ('fusion', 'tail_fusion', 'observed_fusion')


def own_fusion_notes(systems: Sequence[str], variants: Optional[Dict[str, Dict[str, Any]]] = None, *,
                     shared: bool = False) -> List[str]:
    """The lines a comparison that prints no ``compare`` table (``examples/strength_sweep.py``) prints beside its
    tables: the GAREN+ legend when GAREN+ is among ``systems``, and which ``variants`` carry a first-stage fusion of
    their own (``fusion``, ``tail_fusion`` or ``observed_fusion`` set), which no baseline has without the shared
    stage (``shared``: a shared stage was given) and which comes on top of it with one."""
    notes = [garen_plus_legend(shared=shared)] if 'GAREN+' in systems else []
    own = [name for name, kwargs in (variants or {}).items()
           if kwargs.get('fusion') or kwargs.get('tail_fusion') is not None or kwargs.get('observed_fusion')]
    if own:
        options = ' or '.join(OWN_FUSION_OPTIONS)
        notes.append(f'{", ".join(own)}: GAREN with its own fusion with the first stage ({options} set), '
                     + ('applied before the shared stage, so the first stage counts twice there; GAREN+ runs the '
                        'shared stage in place of its own.' if shared else
                        'which no baseline row has here: `--fusion W` gives one stage to every row.'))
    return notes


def _native_bf16() -> Optional[bool]:
    """Whether a fresh encoding here takes bfloat16 (``precision='auto'``), when torch is installed; None otherwise."""
    try:
        from ._encoding import native_bf16
        return bool(native_bf16())
    except ImportError:
        return None


def save_comparison(table: pd.DataFrame, path, *, command: str) -> None:
    """Write :func:`compare`'s table (every column), what ran and the command and date as JSON (``compare --json``;
    ``docs/regen.py --compare`` renders these files into the README). Written to a fresh temporary file beside it,
    then moved (:func:`~pyterrier_garen._atomic.atomic_write`)."""
    import datetime
    import json
    import os
    path = Path(path)
    record = {'command': command, 'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d'),
              'load_average': round(os.getloadavg()[0], 1), 'cores': os.cpu_count(), 'code': code_version(),
              'packages': package_versions(), 'cpu_native_bf16': _native_bf16(), 'run': table.attrs.get('run', {}),
              'rows': json.loads(table.to_json(orient='records'))}  # NaN (the baseline's tests) -> null
    from ._atomic import atomic_write
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, json.dumps(record, indent=1, default=str) + '\n')  # a fresh temporary: no link followed


