"""Benchmark: model-call accounting of GAREN's lock-step batching, and its speed-up with a fixed-latency engine.

    python bench/model_calls.py                        # vaswani, BM25 top 1000, budget 100, 93 queries, 50 ms/call
    python bench/model_calls.py --queries 20 --latency 0.2
    python bench/model_calls.py --json bench/results/model_calls.json   # the README's figures

The reranker and navigator look scores up in a fixed table (no model runs) and sleep ``--latency`` seconds per
call, like a remote engine whose cost is dominated by a fixed per-request latency. GAREN runs once over all ``Q``
queries (batched: one reranker call per iteration for all queries, one navigator call per expansion step) and once
per query. Printed: per step of the batched run, the model called, the queries and rows in that call; then calls,
mean queries per call and wall time of both runs, and the speed-up. Artifacts come from
``prepare(..., graph='bm25', vectors=False)`` under ``$GAREN_CACHE``.
"""
import argparse
import os
import time

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402


class SlowTable(pt.Transformer):
    """Scores rows by table look-up after sleeping ``latency`` seconds; logs every call (queries, rows)."""

    def __init__(self, table: pd.Series, latency: float, role: str, log: list):
        self.table = table
        self.latency = latency
        self.role = role
        self.log = log

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        time.sleep(self.latency)
        self.log.append({'model': self.role, 'queries': inp['qid'].nunique(), 'rows': len(inp)})
        return inp.assign(score=inp['docno'].astype(str).map(self.table).fillna(0.).to_numpy(dtype=float))


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', default='vaswani')
    parser.add_argument('--queries', type=int, default=None, help='number of queries (default: all)')
    parser.add_argument('--budget', type=int, default=100)
    parser.add_argument('--latency', type=float, default=0.05, help='seconds per model call')
    parser.add_argument('--json', metavar='PATH', help='also write the summary for docs/regen.py (bench/_record.py)')
    args = parser.parse_args()
    from pyterrier_garen import GAREN, LocalDataset, data_dir, prepare
    dataset = LocalDataset(data_dir(args.dataset))
    prepared = prepare(dataset, graph='bm25', vectors=False)
    topics = dataset.get_topics()
    topics = topics.head(args.queries) if args.queries else topics
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    groups = prepared.groups
    rng = np.random.default_rng(0)
    docnos = groups.docnos_list()
    doc_table = pd.Series(rng.random(len(docnos)), index=docnos)
    group_table = pd.Series(rng.random(groups.num_groups), index=[str(g) for g in range(groups.num_groups)])
    log: list = []
    garen = GAREN(SlowTable(doc_table, args.latency, 'reranker', log), groups,
                  SlowTable(group_table, args.latency, 'navigator', log), budget=args.budget)
    num_queries = first.qid.nunique()
    garen.reranker.latency = garen.navigator.latency = 0.
    garen(first)  # warm the caches (memory maps, neighbour and member look-ups) once, untimed
    garen.reranker.latency = garen.navigator.latency = args.latency
    log.clear()
    start = time.perf_counter()
    batched = garen(first)
    batched_s = time.perf_counter() - start
    steps = pd.DataFrame(log)
    log.clear()
    start = time.perf_counter()
    single = pd.concat([garen(q) for _, q in first.groupby('qid', sort=False)])
    single_s = time.perf_counter() - start
    per_query_calls = len(log)
    key = ['qid', 'docno']
    same = batched.sort_values(key)[key + ['rank']].reset_index(drop=True) \
        .equals(single.sort_values(key)[key + ['rank']].reset_index(drop=True))
    steps.index = pd.RangeIndex(1, len(steps) + 1, name='call')
    caption = (f'{args.dataset}: {num_queries} queries, BM25 top 1000, budget {args.budget}, {args.latency * 1e3:.0f}'
               ' ms per model call')
    print(caption)
    print('batched run, call by call:')
    print(steps.to_string())
    summary = pd.DataFrame([
        {'run': 'batched (lock-step)', 'model calls': len(steps),
         'queries per call': round(steps.queries.mean(), 1), 'seconds': round(batched_s, 2)},
        {'run': 'one query at a time', 'model calls': per_query_calls,
         'queries per call': 1.0, 'seconds': round(single_s, 2)},
    ])
    print(summary.to_string(index=False))
    print(f'speed-up of batching: x{single_s / batched_s:.1f}; same rankings: {same}')
    if args.json:
        from _record import save
        by_model = steps.groupby('model').agg(calls=('rows', 'size'), rows=('rows', 'max'))
        detail = ' and '.join(f"{int(r.calls)} {m} calls of up to {int(r.rows):,} rows" for m, r in by_model.iterrows())
        save(args.json, caption=caption, rows=summary.to_dict('records'), columns=[
            ('run', 'run', ''), ('model calls', 'model calls', ','), ('queries per call', 'queries per call', '.1f'),
            ('seconds', 'seconds', '.2f')],
            lines=[f'The lock-step run makes {detail}, '
                   + (f'all {steps.queries.max()} queries in every call' if steps.queries.min() == num_queries else
                      f'{steps.queries.min()} to {steps.queries.max()} queries in a call')
                   + f'; one query at a time takes ×{single_s / batched_s:.1f} its wall time'
                   + ('; the rankings are the same.' if same else '; THE RANKINGS DIFFER.')])


if __name__ == '__main__':
    main()
