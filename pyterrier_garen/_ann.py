"""Approximate dense k-NN graphs for large corpora: FAISS HNSW links, re-scored by cosine similarity.

The exact graph (``pyterrier_dr.FlexIndex.corpus_graph``) compares every pair of documents, which takes hours on a
CPU beyond a few hundred thousand documents. ``FlexIndex.faiss_hnsw_graph`` exposes the level-0 links of a FAISS HNSW
index instead, built in roughly ``n log n``; its edges carry no similarity (weight 0), so they are re-scored here
from the stored vectors and the best ``k`` kept, in the same ``np_topk`` layout as the exact graph.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

__all__ = ['EXACT_KNN_LIMIT', 'hnsw_corpus_graph', 'rescore_candidates']

#: above this many documents :func:`pyterrier_garen.prepare` builds the approximate graph (see bench/dense_graph.py)
EXACT_KNN_LIMIT = 200_000


def _unit(vecs: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vecs, axis=-1, keepdims=True)
    return vecs / np.where(norms == 0, 1, norms)


def rescore_candidates(vectors: np.ndarray, candidates: np.ndarray, k: int, *,
                       batch_size: int = 2048) -> tuple:
    """The ``k`` most similar of each document's candidate neighbours, by cosine similarity.

    Args:
        vectors: ``(n, d)`` document vectors (any scale; compared by cosine).
        candidates: ``(n, m)`` candidate neighbour ids; a document's own id (pyterrier-adaptive's padding) and
            repeated ids are ignored.
        k: neighbours to keep.
        batch_size: documents per vectorised step.

    Returns:
        ``(edges, weights)``: ``(n, k)`` ``uint32`` ids by decreasing similarity and their ``float16`` cosine
        similarities; rows with fewer than ``k`` usable candidates are padded with the document itself, weight 0.
    """
    n, m = candidates.shape
    edges = np.empty((n, k), dtype=np.uint32)
    weights = np.zeros((n, k), dtype=np.float16)
    for start in range(0, n, batch_size):
        end = min(start + batch_size, n)
        ids = np.arange(start, end)
        cand = np.asarray(candidates[start:end], dtype=np.int64)
        sims = np.einsum('nd,nmd->nm', _unit(np.asarray(vectors[start:end], dtype=np.float32)),
                         _unit(np.asarray(vectors[cand.reshape(-1)], dtype=np.float32)).reshape(len(ids), m, -1))
        ordered = np.sort(cand, axis=1)
        repeated = np.zeros_like(cand, dtype=bool)
        repeated[:, 1:] = ordered[:, 1:] == ordered[:, :-1]
        # mask the self edge and every second copy of a repeated id (copies sit next to each other once sorted)
        order = np.argsort(cand, axis=1, kind='stable')
        dup = np.zeros_like(repeated)
        np.put_along_axis(dup, order, repeated, axis=1)
        sims[(cand == ids[:, None]) | dup] = -np.inf
        top = np.argsort(-sims, axis=1, kind='stable')[:, :k]
        top_sims = np.take_along_axis(sims, top, axis=1)
        top_ids = np.take_along_axis(cand, top, axis=1)
        usable = np.isfinite(top_sims)
        edges[start:end, :top.shape[1]] = np.where(usable, top_ids, ids[:, None])
        weights[start:end, :top.shape[1]] = np.where(usable, top_sims, 0)
        if top.shape[1] < k:
            edges[start:end, top.shape[1]:] = ids[:, None]
    return edges, weights


def _same_file(source: Path, target: Path) -> None:
    """``target`` holds ``source``'s bytes: a hard link where the file system allows one, else a copy (a symbolic
    link would point outside the artifact, and follow a rebuilt index's docnos)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copyfile(source, target)


def hnsw_corpus_graph(index, *, k: int = 16, search: bool = True, neighbours: int = 32, ef_construction: int = 40,
                      ef_search: int = 64, hops: int = 1, batch_size: int = 2048):
    """An approximate cosine k-NN graph of a ``pyterrier_dr.FlexIndex``, built once beside it and then reused.

    With ``search=True`` (default) every document is searched in a FAISS HNSW index of the vectors (``neighbours``
    links per document at level 0, ``ef_search`` candidates per search) and its ``k + 1`` best hits are the
    candidates.
    With ``search=False`` the candidates are the level-0 links of ``index.faiss_hnsw_graph(neighbours)`` (weight 0)
    and, with ``hops=2``, their links too. Either way they are re-scored by cosine similarity
    (:func:`rescore_candidates`) and the best ``k`` kept. HNSW prunes its links for navigability, so the links
    alone miss many true neighbours; ``bench/dense_graph.py`` measures build time and recall against the exact graph.

    Args:
        index: a built ``pyterrier_dr.FlexIndex``.
        k: neighbours per document.
        search: search the HNSW index per document (else use its links as the candidates).
        neighbours: HNSW links per document at level 0 (``M = neighbours / 2``).
        ef_construction: FAISS HNSW construction depth.
        ef_search: FAISS HNSW search depth (with ``search``).
        hops: without ``search``: 1 (the links) or 2 (the links and their links) as candidates.
        batch_size: documents per re-scoring step.

    Returns:
        A pyterrier-adaptive ``np_topk`` corpus graph.

    Raises:
        ImportError: when ``faiss`` is not installed (``pip install -e ".[ann]" (in a clone of pyterrier-garen)``).
    """
    from ._atomic import ArtifactKindError, building, exclusive, recover, write_array, write_json
    from ._checks import check_recorded_files
    from ._graphs import check_docnos, load_corpus_graph
    from ._params import check_choice, check_positive
    check_positive(k=k, neighbours=neighbours, ef_construction=ef_construction, ef_search=ef_search,
                   batch_size=batch_size)
    if not search and neighbours < k:
        raise ValueError(f'neighbours ({neighbours}) must be at least k ({k}): k is chosen among them')
    check_choice('hops', hops, (1, 2))
    how = f'search{ef_search}' if search else f'h{hops}'
    path = Path(index.index_path) / f'hnsw_n-{neighbours}_ef-{ef_construction}_{how}.k{k}.rescored.graph'
    with exclusive(path):  # a second run building the same graph waits, then reuses it
        recover(path)
        reused = (path / 'pt_meta.json').is_file()
        if reused:  # its recorded files, before anything reads them (a graph built here is not read back twice)
            check_recorded_files(path, 'approximate dense k-NN graph')
        else:
            try:
                import faiss  # noqa: F401
            except ImportError as ex:
                raise ImportError('the approximate k-NN graph needs faiss: pip install -e ".[ann]" '
                                  '(in a clone of pyterrier-garen)') from ex
            vectors, _ = index.payload(return_docnos=False)
            if search:
                # every document as a query of a FAISS HNSW index of the unit vectors (built here: pyterrier_dr 0.8
                # writes its HNSW index without storage, and faiss 1.15 refuses to read that file back)
                import faiss
                hnsw = faiss.IndexHNSWFlat(vectors.shape[1], max(2, neighbours // 2), faiss.METRIC_INNER_PRODUCT)
                hnsw.hnsw.efConstruction = ef_construction
                chunks = range(0, len(vectors), 65536)
                for s in chunks:
                    hnsw.add(_unit(np.asarray(vectors[s:s + 65536], dtype=np.float32)))
                hnsw.hnsw.efSearch = max(ef_search, k + 1)
                candidates = np.concatenate([hnsw.search(_unit(np.asarray(vectors[s:s + 65536], dtype=np.float32)),
                                                         k + 1)[1] for s in chunks])
                candidates = np.where(candidates < 0, np.arange(len(vectors))[:, None], candidates)
                del hnsw
            else:
                # pyterrier_dr 0.8 caches the HNSW index and its graph under the same key: keep them apart
                key = ('faiss_hnsw', neighbours // 2, ef_construction)
                other = index._cache.pop(key, None)
                try:
                    candidates = np.asarray(index.faiss_hnsw_graph(neighbours,
                                                                   ef_construction=ef_construction).edges_data)
                finally:
                    if other is not None:
                        index._cache[key] = other
                if hops == 2:
                    candidates = np.concatenate([candidates, candidates[candidates].reshape(len(candidates), -1)],
                                                axis=1)
            # keep one step's gathered vectors near 256 MB
            step = max(1, min(batch_size, 2**28 // (candidates.shape[1] * vectors.shape[1] * 4)))
            edges, weights = rescore_candidates(vectors, candidates, k, batch_size=step)
            meta = {'type': 'corpus_graph', 'format': 'np_topk', 'package_hint': 'pyterrier-adaptive',
                    'doc_count': int(edges.shape[0]), 'k': int(k),
                    'approximate': {'method': 'faiss_hnsw_search' if search else 'faiss_hnsw_links',
                                    'neighbours': neighbours, 'ef_construction': ef_construction,
                                    'ef_search': ef_search if search else None, 'hops': None if search else hops}}
            try:  # a temporary of its own, swapped in whole, recording its files' sizes and SHA-256
                with building(path, ('corpus_graph', 'np_topk'), record=True) as tmp:
                    write_array(edges, tmp / 'edges.u32.np')
                    write_array(weights, tmp / 'weights.f16.np')
                    _same_file(Path(index.index_path) / 'docnos.npids', tmp / 'docnos.npids')
                    write_json(tmp / 'pt_meta.json', meta)
            except ArtifactKindError:
                raise
            except FileExistsError:  # the same kind of artifact is there now: built by another process meanwhile
                pass
    graph = load_corpus_graph(path, check_records=False)
    check_docnos(graph._docnos)
    return graph
