"""One call that builds (or reuses) every offline artifact of a collection in a work folder."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

__all__ = ['Prepared', 'prepare', 'cache_dir']


def cache_dir() -> Path:
    """Where prepared artifacts go by default: ``$GAREN_CACHE``, else ``~/.cache/pyterrier-garen``."""
    return Path(os.environ.get('GAREN_CACHE') or Path.home() / '.cache' / 'pyterrier-garen')


@dataclass
class Prepared:
    """The offline artifacts of one collection (see :func:`prepare`)."""
    dataset: Any
    workdir: Path
    bm25_index: Any
    vectors: Any  # pyterrier_dr.FlexIndex, or None for graph='bm25' without vectors
    graph: Any  # the pyterrier-adaptive corpus graph the groups were built from
    groups: Any  # GroupCorpusGraph, with extractive summaries


def prepare(dataset, workdir: Optional[Union[str, Path]] = None, *, graph: str = 'dense', k: int = 16,
            max_group_size: int = 20, seed: int = 42, summarizer=None, vectors: bool = True,
            verbose: bool = False) -> Prepared:
    """Build or reuse, in ``workdir``: a PISA index, MiniLM vectors, a k-NN graph and summarised groups.

    Each step is skipped when its artifact is already built, so a second call is instant.

    Args:
        dataset: a :class:`~pyterrier_garen.LocalDataset` or any PyTerrier dataset with a corpus.
        workdir: output folder; defaults to ``cache_dir()/<dataset name>``.
        graph: ``'dense'`` (exact cosine MiniLM k-NN) or ``'bm25'`` (PISA BM25 k-NN).
        k: neighbours per document.
        max_group_size: Leiden re-partitioning threshold.
        seed: Leiden seed.
        summarizer: group summariser; defaults to :class:`~pyterrier_garen.ExtractiveSummarizer`.
        vectors: encode the corpus with MiniLM (needed by the CPU reranker and navigators).
        verbose: progress bars.
    """
    from ._graphs import bm25_corpus_graph, bm25_index, dense_corpus_graph, encode_corpus
    from ._group_graph import GroupCorpusGraph
    from ._summaries import ExtractiveSummarizer
    if graph not in ('dense', 'bm25'):
        raise ValueError(f'graph must be "dense" or "bm25", got {graph!r}')
    name = getattr(dataset, 'name', None) or str(dataset).replace('/', '_').replace(':', '_')
    workdir = Path(workdir) if workdir is not None else cache_dir() / name
    workdir.mkdir(parents=True, exist_ok=True)
    pisa = bm25_index(dataset, workdir / 'bm25.pisa')
    flex = encode_corpus(dataset, workdir / 'minilm.flex', verbose=verbose) if (vectors or graph == 'dense') \
        else None
    if graph == 'dense':
        knn = dense_corpus_graph(flex, k=k, verbose=verbose)
    else:
        knn = bm25_corpus_graph(dataset, workdir / f'bm25.k{k}.graph', index=pisa, k=k)
    groups = GroupCorpusGraph.from_corpus_graph(knn, workdir / f'{graph}.k{k}.s{max_group_size}.groups',
                                                max_group_size=max_group_size, seed=seed, verbose=verbose)
    groups.summarize(summarizer or ExtractiveSummarizer(), dataset, batch_size=64, verbose=verbose)
    return Prepared(dataset, workdir, pisa, flex, knn, groups)
