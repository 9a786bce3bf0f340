"""Benchmark: group construction time and group statistics on the shared collections.

    python bench/groups.py                         # scifact, vaswani, cranfield; BM25 and MiniLM graphs
    python bench/groups.py --collections cranfield --graphs bm25
    python bench/groups.py --graphs dense --json bench/results/groups.json     # the README's figures

Graphs and vectors are built once in the collection's workdir under $GAREN_CACHE (the one ``prepare`` uses) and
reused, so the timings below are for the Leiden partition (with recursive re-partitioning) and the artifact write,
per backend. Prints one row per (collection, graph, backend).
"""
import argparse
import os
import shutil
import tempfile
import time

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402

from pyterrier_garen import GroupCorpusGraph, LocalDataset, data_dir  # noqa: E402
from pyterrier_garen import bm25_corpus_graph, bm25_index, dense_corpus_graph, encode_corpus, prepare  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--collections', nargs='+', default=['scifact', 'vaswani', 'cranfield'])
    parser.add_argument('--graphs', nargs='+', default=['bm25', 'dense'], choices=['bm25', 'dense'])
    parser.add_argument('--backends', nargs='+', default=['igraph', 'leidenalg'], choices=['igraph', 'leidenalg'])
    parser.add_argument('--max-group-size', type=int, default=20)
    parser.add_argument('--json', metavar='PATH', help='also write the table for docs/regen.py (bench/_record.py)')
    args = parser.parse_args()
    rows = []
    for name in args.collections:
        dataset = LocalDataset(data_dir(name))
        # the collection's workdir (<name>-<fingerprint>), as prepare builds it: nothing is rebuilt when cached
        work = prepare(dataset, **({'graph': 'bm25', 'vectors': False} if args.graphs == ['bm25'] else {})).workdir
        for kind in args.graphs:
            if kind == 'bm25':
                index = bm25_index(dataset, work / 'bm25.pisa')
                graph = bm25_corpus_graph(dataset, work / 'bm25.k16.graph', index=index)
            else:
                graph = dense_corpus_graph(encode_corpus(dataset, work / 'minilm.flex', verbose=True))
            for backend in args.backends:
                out = tempfile.mkdtemp()
                start = time.perf_counter()
                groups = GroupCorpusGraph.from_corpus_graph(graph, f'{out}/groups', backend=backend,
                                                            max_group_size=args.max_group_size)
                seconds = time.perf_counter() - start
                stats = groups.group_stats()
                rows.append({'collection': name, 'graph': 'MiniLM' if kind == 'dense' else kind, 'backend': backend,
                             'docs': stats['docs'],
                             'groups': stats['groups'], 'min': stats['min'], 'max': stats['max'],
                             'mean': round(stats['mean'], 2), 'singletons': stats['singletons'],
                             'unsplittable': len(stats['unsplittable']),
                             'modularity': round(groups.meta['partition']['modularity'], 3),
                             'leiden_calls': groups.meta['partition']['leiden_calls'], 'seconds': round(seconds, 2)})
                shutil.rmtree(out)
                print(rows[-1], flush=True)
    print(pd.DataFrame(rows).to_string(index=False))
    if args.json:
        from _record import save
        for row in rows:
            row['sizes'] = f"{row['min']} / {row['max']} / {row['mean']:.1f}"
        over = sum(r['max'] > args.max_group_size for r in rows)
        save(args.json, rows=rows, caption='Leiden partition + recursive re-partition + artifact write on cached '
             f'graphs (k=16), max_group_size={args.max_group_size}', columns=[
                 ('collection', 'collection', ''), ('graph', 'graph', ''), ('backend', 'backend', ''),
                 ('docs', 'docs', ','), ('groups', 'groups', ','), ('size min / max / mean', 'sizes', ''),
                 ('singletons', 'singletons', ','), ('modularity', 'modularity', '.3f'),
                 ('Leiden calls', 'leiden_calls', ','), ('seconds', 'seconds', '.2f')],
             lines=[f'{over} of the {len(rows)} partitions keep a group over {args.max_group_size} documents; '
                    f"{sum(r['unsplittable'] for r in rows)} groups are reported unsplittable."])


if __name__ == '__main__':
    main()
