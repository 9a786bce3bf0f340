"""Benchmark: group construction (Leiden + recursive split + write) on synthetic k-NN graphs of growing size.

    python bench/group_scale.py                       # 100k, 400k, 1M documents
    python bench/group_scale.py --sizes 100000 400000 --repeat 2
    python bench/group_scale.py --sizes 400000 1000000 --json bench/results/group_scale.json   # the README's figures

The graphs come from :func:`pyterrier_garen.synthetic.planted_knn_graph` (k=16, planted topics of ~200 documents
split into subtopics of ~15), so Leiden finds real communities and has re-partitioning work to do. Each size runs
in a fresh subprocess, which times ``GroupCorpusGraph.from_arrays`` end to end (docno sorting, symmetrising, Leiden,
recursive split, writing and reopening the artifact) and reports its own peak RSS. The per-stage times and the
marginal CPU time per document between the two largest sizes give the 4.6M-document (DBpedia-entity) estimate
printed last. Wall-clock times depend on the load of the machine (the load average is printed with the table); CPU
time much less so.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np


def _child_env() -> dict:
    """The children import this checkout's package (``python bench/x.py`` puts only ``bench/`` on the path)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return {**os.environ, 'PYTHONPATH': os.pathsep.join(filter(None, [root, os.environ.get('PYTHONPATH')]))}


def one(num_docs: int, k: int, seed: int) -> dict:
    """Build one artifact; returns its timings and statistics (runs in the child process)."""
    from pyterrier_garen import GroupCorpusGraph
    from pyterrier_garen.synthetic import planted_knn_graph
    edges, weights, topics, _ = planted_knn_graph(num_docs, k=k, seed=seed)
    docnos = [f'doc{i}' for i in range(num_docs)]  # not in string order: the builder must sort and remap
    with tempfile.TemporaryDirectory(dir=os.environ.get('GAREN_BENCH_TMP')) as tmp:
        wall, cpu = time.perf_counter(), time.process_time()
        groups = GroupCorpusGraph.from_arrays(f'{tmp}/groups', docnos, edges, weights)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        stats = groups.group_stats()
        part = groups.meta['partition']  # the builder records the partition's statistics and stage times
    stages, cpu_stages = part['stage_seconds'], part['stage_cpu_seconds']
    return {'docs': num_docs, 'seconds': round(wall, 2), 'cpu_s': round(cpu, 2),
            'us_per_doc': round(wall / num_docs * 1e6, 1),
            'symmetrise_s': round(stages['symmetrise'], 2), 'leiden_s': round(stages['leiden'], 2),
            'split_s': round(stages['split'], 2),
            'other_s': round(wall - sum(stages.values()), 2),
            # the same stages in process CPU time (the shares of the estimate below use these)
            'symmetrise_cpu_s': round(cpu_stages['symmetrise'], 2), 'leiden_cpu_s': round(cpu_stages['leiden'], 2),
            'split_cpu_s': round(cpu_stages['split'], 2),
            'other_cpu_s': round(cpu - sum(cpu_stages.values()), 2),
            'peak_rss_gb': round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2),
            'groups': stats['groups'], 'mean_size': round(stats['mean'], 2), 'median': stats['median'],
            'max': stats['max'], 'singletons': stats['singletons'], 'unsplittable': len(stats['unsplittable']),
            'leiden_calls': part['leiden_calls'], 'modularity': round(part['modularity'], 3),
            'planted_topics': int(topics.max()) + 1}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--sizes', nargs='+', type=int, default=[100_000, 400_000, 1_000_000])
    parser.add_argument('--k', type=int, default=16)
    parser.add_argument('--repeat', type=int, default=1, help='runs per size; the fastest is reported')
    parser.add_argument('--seed', type=int, default=0)
    parser.add_argument('--estimate', type=int, default=4_600_000, help='size to extrapolate to (DBpedia: 4.6M)')
    parser.add_argument('--json', metavar='PATH', help='also write the table for docs/regen.py (bench/_record.py)')
    parser.add_argument('--one', type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.k, args.seed)))
        return
    import pandas as pd
    rows = []
    for size in args.sizes:
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, '--one', str(size), '--k', str(args.k),
                                  '--seed', str(args.seed)], check=True, capture_output=True, text=True,
                                 env=_child_env())
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        rows.append(min(runs, key=lambda r: r['seconds']))
        print(rows[-1], flush=True)
    table = pd.DataFrame(rows)
    wall_stages = ['symmetrise_s', 'leiden_s', 'split_s', 'other_s']  # in the JSON lines above
    print(table.drop(columns=['planted_topics'] + wall_stages).to_string(index=False))
    print(f'load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    lines = derived(rows, args.estimate)
    print('\n'.join(lines))
    if args.json:
        record(args.json, rows, lines, k=args.k, seed=args.seed, repeat=args.repeat)


def derived(rows, estimate_size: int):
    """The sentences printed under the table: growth of CPU time per document, the estimate, the group limits."""
    lines = []
    for a, b in zip(rows, rows[1:]):
        growth = (b['cpu_s'] / a['cpu_s']) / (b['docs'] / a['docs'])
        lines.append(f'CPU time per document grows ×{growth:.2f} from {a["docs"]:,} to {b["docs"]:,} documents '
                     '(1.00 = linear).')
    # the estimate: CPU time (steadier than wall clock on a shared machine) and peak RSS continued along the straight
    # line through the two largest sizes, i.e. at the marginal cost per document measured there; the stage shares
    # are those of the largest size
    a, b = (rows[-2], rows[-1]) if len(rows) >= 2 else ({k: 0 for k in rows[-1]}, rows[-1])

    def extend(key):
        slope = (b[key] - a[key]) / (b['docs'] - a['docs'])
        return b[key] + slope * (estimate_size - b['docs'])
    shares = {s: b[f'{s}_cpu_s'] / b['cpu_s'] for s in ('symmetrise', 'leiden', 'split', 'other')}
    lines.append(f'Estimate for {estimate_size:,} documents (along the line through {a["docs"]:,} and {b["docs"]:,}): '
                 f'{extend("cpu_s"):.0f} CPU-s (CPU shares at {b["docs"]:,}: '
                 + ', '.join(f'{s} {v:.0%}' for s, v in shares.items())
                 + f'), peak RSS ~{extend("peak_rss_gb"):.1f} GB.')
    lines.append(f'Largest group: {max(r["max"] for r in rows)} documents; singletons: '
                 f'{sum(r["singletons"] for r in rows)}; unsplittable groups: {sum(r["unsplittable"] for r in rows)}.')
    return lines


def record(path, rows, lines, *, k: int, seed: int, repeat: int, **extra):
    """The output file of ``--json`` (``bench/_record.py``), read by ``docs/regen.py``."""
    from _record import save
    save(path, rows=rows, lines=lines, **extra,
         caption=f'synthetic k-NN graphs with planted topics, k={k}, seed {seed}, fastest of {repeat} run(s) per '
                 'size, each in a fresh process',
         columns=[('docs', 'docs', ','), ('seconds', 'seconds', '.2f'), ('CPU s', 'cpu_s', '.2f'),
                  ('symmetrise CPU s', 'symmetrise_cpu_s', '.2f'), ('Leiden CPU s', 'leiden_cpu_s', '.2f'),
                  ('split CPU s', 'split_cpu_s', '.2f'), ('other CPU s', 'other_cpu_s', '.2f'),
                  ('Leiden calls', 'leiden_calls', ','), ('groups', 'groups', ','), ('max', 'max', ''),
                  ('modularity', 'modularity', '.3f'), ('peak RSS GB', 'peak_rss_gb', '.2f')])


if __name__ == '__main__':
    np.seterr(all='raise')
    main()
