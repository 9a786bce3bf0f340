"""Benchmark: control-loop overhead of the adaptive searches with zero-cost models, side by side in one run.

    python bench/control_loop.py                     # vaswani, BM25 top 1000, budget 100, all 93 queries
    python bench/control_loop.py --repeat 5 --profile GAREN
    python bench/control_loop.py --repeat 5 --json bench/results/control_loop.json   # the README's figures
    python bench/control_loop.py --first-call GAREN     # one system's first call, cold (a fresh process each)

The reranker and the navigator cost (almost) nothing: they look each row's score up in a fixed table by docno (or
group id), so what is timed is each search's own work: windows, graph and group look-ups, frames. The first stage is
computed once beforehand. All systems run in turn, ``--repeat`` rounds interleaved (so load drift hits them alike);
each system's fastest round is reported, in milliseconds per query, wall clock and CPU, with its ratio to
``pyterrier_adaptive.GAR`` measured in the same run. Artifacts (PISA index, BM25 k-NN graph, groups) are built once
under ``$GAREN_CACHE`` (``prepare(..., graph='bm25', vectors=False)``).
"""
import argparse
import os
import time

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402


class TableScorer(pt.Transformer):
    """Scores rows by looking ``docno`` up in a fixed table (0 for unknown keys): a model that costs nothing."""

    def __init__(self, table: pd.Series):
        self.table = table

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        scores = inp['docno'].astype(str).map(self.table).fillna(0.).to_numpy(dtype=float)
        return inp.assign(score=scores)


def systems(prepared, budget: int):
    import pyterrier_adaptive

    from pyterrier_garen import GAREN, RGS, SlideGAR, SlidingWindowReranker
    groups = prepared.groups
    rng = np.random.default_rng(0)
    docnos = groups.docnos_list()
    scorer = TableScorer(pd.Series(rng.random(len(docnos)), index=docnos))
    navigator = TableScorer(pd.Series(rng.random(groups.num_groups), index=[str(g) for g in range(groups.num_groups)]))
    return {
        'GAR': pyterrier_adaptive.GAR(scorer, groups, num_results=budget, batch_size=16),
        'GAREN': GAREN(scorer, groups, navigator, budget=budget),
        'SlideGAR': SlideGAR(scorer, groups, budget=budget),
        'RGS': RGS(scorer, groups, budget=budget),
        'sliding window': SlidingWindowReranker(scorer, budget=budget),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', default='vaswani')
    parser.add_argument('--budget', type=int, default=100)
    parser.add_argument('--depth', type=int, default=1000, help='first-stage depth')
    parser.add_argument('--repeat', type=int, default=3)
    parser.add_argument('--profile', help='run this system once under cProfile and print the top functions')
    parser.add_argument('--json', metavar='PATH', help='also write the table for docs/regen.py (bench/_record.py)')
    parser.add_argument('--first-call', metavar='SYSTEM', help="time this system's first call in this process, caches "
                        'cold (no warm-up; run it in a fresh process for each system), then exit')
    args = parser.parse_args()
    from pyterrier_garen import LocalDataset, data_dir, prepare
    dataset = LocalDataset(data_dir(args.dataset))
    prepared = prepare(dataset, graph='bm25', vectors=False)
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=args.depth)(dataset.get_topics())
    num_queries = first.qid.nunique()
    built = systems(prepared, args.budget)
    if args.first_call:
        cpu = time.process_time()
        built[args.first_call](first)
        cpu = time.process_time() - cpu
        print(f'{args.first_call}: first call {cpu / num_queries * 1e3:.2f} CPU ms per query (cold caches)')
        return
    for system in built.values():  # warm every cache (neighbour and docno look-ups, memory maps) once
        system(first)
    if args.profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        profiler.runcall(built[args.profile], first)
        pstats.Stats(profiler).sort_stats(os.environ.get('PROFILE_SORT', 'tottime')).print_stats(25)
        return
    best = {name: (np.inf, np.inf) for name in built}
    for _ in range(args.repeat):
        for name, system in built.items():
            wall, cpu = time.perf_counter(), time.process_time()
            out = system(first)
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            assert out.groupby('qid').size().max() <= args.budget + 1000
            best[name] = (min(best[name][0], wall), min(best[name][1], cpu))
    gar_wall, gar_cpu = best['GAR']
    rows = [{'system': name, 'ms/query': round(wall / num_queries * 1e3, 2), 'cpu ms/query': round(cpu / num_queries
             * 1e3, 2), 'x GAR (wall)': round(wall / gar_wall, 2), 'x GAR (cpu)': round(cpu / gar_cpu, 2)}
            for name, (wall, cpu) in best.items()]
    caption = (f'{args.dataset}: {num_queries} queries, BM25 top {args.depth}, budget {args.budget}, zero-cost '
               f'models, best of {args.repeat} interleaved rounds')
    print(caption)
    print(pd.DataFrame(rows).to_string(index=False))
    print(f'load average during the run: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')
    if args.json:
        from _record import save
        cpu = {r['system']: r['x GAR (cpu)'] for r in rows}
        save(args.json, caption=caption + ' (GAR is `pyterrier_adaptive.GAR`)', rows=rows, columns=[
            ('system', 'system', ''), ('ms/query', 'ms/query', '.2f'), ('CPU ms/query', 'cpu ms/query', '.2f'),
            ('× GAR (wall)', 'x GAR (wall)', '.2f'), ('× GAR (CPU)', 'x GAR (cpu)', '.2f')],
            lines=[f"GAREN's control loop costs {cpu['GAREN']:.2f}× GAR's CPU time per query."] if 'GAREN' in cpu
            else [])


if __name__ == '__main__':
    main()
