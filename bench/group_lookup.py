"""Benchmark: open a 1M-document GroupCorpusGraph and look up the groups of 10k random docnos.

    python bench/group_lookup.py                      # 1M documents, 10k lookups
    python bench/group_lookup.py --docs 200000 --lookups 5000
    python bench/group_lookup.py --json bench/results/group_lookup.json   # the README's figures

The artifact (synthetic planted graph, groups given as labels, so no Leiden run) is built once under
``$GAREN_BENCH_CACHE`` (default: the system temp folder) and reused. Every measurement runs in a fresh
subprocess (cold Python objects, warm OS page cache): ``open`` is ``GroupCorpusGraph(path)``, ``groups_of`` one
batched call for all docnos, ``group_of`` one call per docno, ``group_of_npids`` the same through npids' vectorised
look-up once per docno (the route before ``_docno_index``), for comparison; ``traced MB`` is the Python heap
allocated by open + lookups (tracemalloc), which stays far below one object per document (measured on a second
instance, since tracemalloc slows every allocation). Per-docno times are wall clock and process CPU time of the
look-ups alone, on the first instance, untraced.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def _child_env() -> dict:
    """The children import this checkout's package (``python bench/x.py`` puts only ``bench/`` on the path)."""
    root = str(Path(__file__).resolve().parents[1])
    return {**os.environ, 'PYTHONPATH': os.pathsep.join(filter(None, [root, os.environ.get('PYTHONPATH')]))}


def build(path: Path, num_docs: int) -> None:
    import numpy as np

    from pyterrier_garen import GroupCorpusGraph
    from pyterrier_garen.synthetic import planted_knn_graph
    edges, weights, _, subtopics = planted_knn_graph(num_docs, k=16, seed=0)
    docnos = [f'doc{i}' for i in range(num_docs)]
    GroupCorpusGraph.from_arrays(path, docnos, edges, weights, labels=np.asarray(subtopics))


def _look_up(groups, wanted, mode: str):
    if mode == 'groups_of':
        return groups.groups_of(wanted)
    if mode == 'group_of':
        return [groups.group_of(d) for d in wanted]
    # the route before the fast path: one vectorised npids look-up per docno (its inverse lookup, as _graphs did)
    return [int(groups.group_ids[int(groups._docnos.inv[[d]][0])]) for d in wanted]


def measure(path: Path, num_lookups: int, mode: str) -> dict:
    import tracemalloc

    import numpy as np

    from pyterrier_garen import GroupCorpusGraph
    rng = np.random.default_rng(1)
    doc_count = int(json.loads((path / 'pt_meta.json').read_text())['doc_count'])
    wanted = [f'doc{i}' for i in rng.integers(0, doc_count, size=num_lookups)]
    # timed without tracemalloc (which slows every allocation several-fold), then the heap measured on a second,
    # fresh instance doing the same work
    start = time.perf_counter()
    groups = GroupCorpusGraph(path)
    opened = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    found = _look_up(groups, wanted, mode)
    looked, cpu = time.perf_counter() - start, time.process_time() - cpu
    assert min(found) >= 0
    tracemalloc.start()
    _look_up(GroupCorpusGraph(path), wanted, mode)
    _, peak = tracemalloc.get_traced_memory()
    return {'mode': mode, 'docs': groups.doc_count, 'lookups': num_lookups, 'open_s': round(opened, 4),
            'lookup_s': round(looked, 4), 'us_per_docno': round(looked / num_lookups * 1e6, 1),
            'cpu_us_per_docno': round(cpu / num_lookups * 1e6, 1), 'total_s': round(opened + looked, 4),
            'traced_mb': round(peak / 2**20, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--docs', type=int, default=1_000_000)
    parser.add_argument('--lookups', type=int, default=10_000)
    parser.add_argument('--repeat', type=int, default=3, help='fresh processes per mode; the fastest is reported')
    parser.add_argument('--json', metavar='PATH', help='also write the table for docs/regen.py (bench/_record.py)')
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
    for mode in ('groups_of', 'group_of', 'group_of_npids'):
        runs = []
        for _ in range(args.repeat):
            out = subprocess.run([sys.executable, __file__, '--measure', mode, '--path', str(cache),
                                  '--lookups', str(args.lookups)], check=True, capture_output=True, text=True,
                                 env=_child_env())
            runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        rows.append(min(runs, key=lambda r: r['total_s']))
    print(pd.DataFrame(rows).to_string(index=False))
    print(f'load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    if args.json:
        from _record import save
        by = {r['mode']: r for r in rows}
        save(args.json, rows=rows, caption=f'{args.docs:,}-document GroupCorpusGraph (memory-mapped), {args.lookups:,} '
             f'random docnos, fastest of {args.repeat} fresh processes per route', columns=[
                 ('route', 'mode', ''), ('open s', 'open_s', '.3f'), ('look-ups s', 'lookup_s', '.3f'),
                 ('µs per docno', 'us_per_docno', '.1f'), ('CPU µs per docno', 'cpu_us_per_docno', '.1f'),
                 ('Python heap MB', 'traced_mb', '.1f')],
             lines=[f"One `group_of` call costs {by['group_of']['cpu_us_per_docno']:.1f} µs of CPU, "
                    f"{by['group_of_npids']['cpu_us_per_docno'] / by['group_of']['cpu_us_per_docno']:.0f}× less than "
                    'the earlier route through npids (`group_of_npids`), measured side by side.'])


if __name__ == '__main__':
    main()
