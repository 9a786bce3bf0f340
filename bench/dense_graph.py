"""Benchmark: exact vs approximate dense k-NN graph (build time, recall@16 against exact), 100k documents.

    python bench/dense_graph.py                       # 100k SYNTHETIC vectors (384-d, clustered), k=16
    python bench/dense_graph.py --docs 20000 --ef-search 32 64 128 --hops 1 2
    python bench/dense_graph.py --ef-search 32 64 --json bench/results/dense_graph.json   # the README's figures

The vectors are synthetic (no encoder runs): ``--clusters`` random unit centres in 384 dimensions, each document a
centre plus Gaussian noise, normalised, so that near neighbours are meaningful. They are stored in a
``pyterrier_dr.FlexIndex``; the exact graph is ``FlexIndex.corpus_graph(k)`` (all pairs), the approximate one
``pyterrier_garen._ann.hnsw_corpus_graph`` (FAISS HNSW level-0 links via ``faiss_hnsw_graph``, re-scored by cosine,
best k kept; the HNSW index is built once and shared by the rows, so the first approximate row includes it).
recall@k is the mean share of each document's exact k neighbours that the approximate graph holds.
Needs the ``ann`` extra (faiss-cpu).
"""
import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np


def synthetic_vectors(num_docs: int, dim: int, clusters: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim)).astype(np.float32)
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    vecs = centres[rng.integers(0, clusters, num_docs)] + rng.normal(0, noise / np.sqrt(dim), (num_docs, dim)) \
        .astype(np.float32)
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--docs', type=int, default=100_000)
    parser.add_argument('--dim', type=int, default=384)
    parser.add_argument('--clusters', type=int, default=5000)
    parser.add_argument('--noise', type=float, default=1.0)
    parser.add_argument('--k', type=int, default=16)
    parser.add_argument('--neighbours', type=int, default=32, help='HNSW links per document (level 0)')
    parser.add_argument('--ef-search', type=int, nargs='+', default=[64], help='HNSW search depths to compare')
    parser.add_argument('--hops', type=int, nargs='*', default=[1], help='link-candidate variants (hops) to compare')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--json', metavar='PATH', help='also write the table for docs/regen.py (bench/_record.py)')
    args = parser.parse_args()
    import pandas as pd
    import pyterrier_dr

    from pyterrier_garen import hnsw_corpus_graph
    vecs = synthetic_vectors(args.docs, args.dim, args.clusters, args.noise, args.seed)
    rows = []
    with tempfile.TemporaryDirectory(dir=os.environ.get('GAREN_BENCH_TMP')) as tmp:
        index = pyterrier_dr.FlexIndex(str(Path(tmp) / 'vecs.flex'))
        index.indexer().index({'docno': f'd{i}', 'doc_vec': v} for i, v in enumerate(vecs))
        wall, cpu = time.perf_counter(), time.process_time()
        exact = np.asarray(index.corpus_graph(args.k).edges_data)
        rows.append({'graph': 'exact (pyterrier_dr corpus_graph)', 'seconds': time.perf_counter() - wall,
                     'cpu_s': time.process_time() - cpu, f'recall@{args.k}': 1.0})
        exact_sorted = np.sort(exact.astype(np.int64), axis=1)
        variants = [(f'HNSW search (ef {ef}), re-scored', dict(search=True, ef_search=ef)) for ef in args.ef_search] \
            + [(f'HNSW {args.neighbours} links, {h} hop(s), re-scored', dict(search=False, hops=h)) for h in args.hops]
        for name, options in variants:
            wall, cpu = time.perf_counter(), time.process_time()
            approx = np.asarray(hnsw_corpus_graph(index, k=args.k, neighbours=args.neighbours, **options).edges_data)
            seconds, cpu_s = time.perf_counter() - wall, time.process_time() - cpu
            hits = sum(np.isin(a, e).sum() for a, e in zip(approx.astype(np.int64), exact_sorted))
            rows.append({'graph': name, 'seconds': seconds, 'cpu_s': cpu_s, f'recall@{args.k}': hits / exact.size})
    table = pd.DataFrame(rows).round(3)
    caption = f'{args.docs:,} synthetic {args.dim}-d vectors ({args.clusters:,} clusters), k={args.k}'
    print(caption)
    print(table.to_string(index=False))
    print(f'load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    if args.json:
        record(args.json, table.to_dict('records'), caption, args.k)


def record(path, rows, caption: str, k: int, **extra):
    """The output file of ``--json`` (``bench/_record.py``), read by ``docs/regen.py``."""
    from _record import save
    save(path, rows=rows, caption=caption, **extra, columns=[
        ('graph', 'graph', ''), ('seconds', 'seconds', '.1f'), ('CPU s', 'cpu_s', '.1f'),
        (f'recall@{k}', f'recall@{k}', '.3f')])


if __name__ == '__main__':
    main()
