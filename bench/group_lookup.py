"""Benchmark: open a 1M-document GroupCorpusGraph and look up the groups of 10k random docnos.

    python bench/group_lookup.py                      # 1M documents, 10k lookups
    python bench/group_lookup.py --docs 200000 --lookups 5000

The artifact (synthetic planted graph, groups given as labels, so no Leiden run) is built once under
``$GAREN_BENCH_CACHE`` (default: the system temp folder) and reused. Every measurement runs in a fresh
subprocess (cold Python objects, warm OS page cache): ``open`` is ``GroupCorpusGraph(path)``, ``groups_of`` one
batched call for all docnos, ``group_of`` one call per docno; ``traced MB`` is the Python heap allocated by open +
lookups (tracemalloc), which stays far below one object per document.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def build(path: Path, num_docs: int) -> None:
    import numpy as np

    from pyterrier_garen import GroupCorpusGraph
    from pyterrier_garen.synthetic import planted_knn_graph
    edges, weights, _, subtopics = planted_knn_graph(num_docs, k=16, seed=0)
    docnos = [f'doc{i}' for i in range(num_docs)]
    GroupCorpusGraph.from_arrays(path, docnos, edges, weights, labels=np.asarray(subtopics))


def measure(path: Path, num_lookups: int, mode: str) -> dict:
    import tracemalloc

    import numpy as np

    from pyterrier_garen import GroupCorpusGraph
    tracemalloc.start()
    start = time.perf_counter()
    groups = GroupCorpusGraph(path)
    opened = time.perf_counter() - start
    rng = np.random.default_rng(1)
    wanted = [f'doc{i}' for i in rng.integers(0, groups.doc_count, size=num_lookups)]
    start = time.perf_counter()
    if mode == 'groups_of':
        found = groups.groups_of(wanted)
    else:
        found = [groups.group_of(d) for d in wanted]
    looked = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    assert min(found) >= 0
    return {'mode': mode, 'docs': groups.doc_count, 'lookups': num_lookups, 'open_s': round(opened, 4),
            'lookup_s': round(looked, 4), 'total_s': round(opened + looked, 4), 'traced_mb': round(peak / 2**20, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--docs', type=int, default=1_000_000)
    parser.add_argument('--lookups', type=int, default=10_000)
    parser.add_argument('--repeat', type=int, default=3, help='fresh processes per mode; the fastest is reported')
    parser.add_argument('--measure', help=argparse.SUPPRESS)
    parser.add_argument('--path', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(Path(args.path), args.lookups, args.measure)))
        return
    import pandas as pd
    cache = Path(os.environ.get('GAREN_BENCH_CACHE') or tempfile.gettempdir()) / f'garen-bench-lookup-{args.docs}'
    if not (cache / 'pt_meta.json').is_file():
        start = time.perf_counter()
        build(cache, args.docs)
        print(f'built {cache} in {time.perf_counter() - start:.1f} s', flush=True)
    rows = []
    for mode in ('groups_of', 'group_of'):
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, '--measure', mode, '--path', str(cache),
                                  '--lookups', str(args.lookups)], check=True, capture_output=True, text=True)
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        rows.append(min(runs, key=lambda r: r['total_s']))
    print(pd.DataFrame(rows).to_string(index=False))
    print(f'load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')


if __name__ == '__main__':
    main()
