"""Benchmark: what each system of `compare` asks of its reranker at one budget, counting repeats.

    python bench/reranker_load.py      # cranfield, vaswani, scifact; budgets 100 and 200
    python bench/reranker_load.py --collections cranfield --budgets 100 --queries 50
    python bench/reranker_load.py --budgets 50 100 200 400 --systems Rerank GAR SlideGAR RGS GAREN GAREN+ \
        --listwise --out costs.csv       # the costs examples/cost_matched.py reads
    python bench/reranker_load.py --budgets 50 100 200 400 --systems Rerank GAR SlideGAR RGS GAREN GAREN+ \
        --cache-scores --out cached.csv  # each document scored once per query

A budget counts distinct documents re-ranked per query, as the papers count it. The searches differ in how often
they show the reranker the same document: a window search carries its kept top into the next window, and RGS
re-ranks its queue again after every expansion. With an LLM reranker the cost is the documents sent (each one is
prompt text), so two systems of the same budget can differ in cost. For each collection and budget this runs every
system of `compare` that uses the reranker (BM25 aside) with MiniLM as the reranker, through a counting stage, and
prints per query (mean): the reranker calls that held the query (one window each), the documents sent counting
repeats, the distinct ones, and the documents sent per distinct document. Artifacts are built once in the
collection's workdir under $GAREN_CACHE (the one `prepare` uses) and reused.

--sigma S (with --noise-seed N) measures the sweep's simulated reranker at that noise instead of MiniLM.
--cache-scores puts pyterrier_caching's scorer cache (Sqlite3ScorerCache, a fresh one per system and budget)
between each search and the reranker, so a document is scored once per query however often a search shows it: the
rankings are the same (the reranker is pointwise) and the reranker work is the distinct documents. It cannot go
with --listwise (a listwise reranker's scores hold for one window only). --listwise wraps the reranker as
strength_sweep.py --listwise does (its scores seen as one window's order only), so the searches take their listwise
paths; --head-rerank N gives every system the one more call over its top N, as strength_sweep.py --head-rerank N
does; --out also writes the table as CSV (collection, budget, system, reranker, calls, sent, distinct,
sent_per_distinct, queries).
"""
import argparse
import contextlib
import os
from collections import defaultdict

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import analysis  # noqa: E402


class CountingReranker(pt.Transformer):
    """The reranker it wraps, counting per query the calls that held the query and the documents each call sent."""

    def __init__(self, reranker: pt.Transformer):
        self.reranker = reranker
        self.calls = defaultdict(int)
        self.sent = defaultdict(int)
        self.distinct = defaultdict(set)
        if hasattr(reranker, 'listwise'):  # a listwise reranker stays one behind the counter
            self.listwise = reranker.listwise

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        for qid, docnos in inp.groupby('qid', sort=False)['docno']:
            self.calls[qid] += 1
            self.sent[qid] += len(docnos)
            self.distinct[qid].update(docnos)
        return self.reranker(inp)


def measure(collection: str, budgets, num_queries=None, systems=None, listwise=False, head_rerank=0,
            cache_scores=False, sigma=None, noise_seed=0) -> pd.DataFrame:
    from _judged import judged_collection
    _, prepared, qrels, topics, _ = judged_collection(collection)
    if num_queries:
        topics = topics.head(num_queries)
    reranker, navigator = garen.cpu_components(prepared)
    if sigma is not None:  # the sweep's simulated reranker at that noise
        reranker = garen.analysis.SimulatedReranker(qrels, noise=sigma, seed=noise_seed)
    if listwise:
        reranker = garen.analysis.ListwiseView(reranker)
    names = systems or garen.system_names(reranks=True)
    rows = []
    for budget in budgets:
        for name in names:
            counting = CountingReranker(reranker)
            if cache_scores:
                from pyterrier_caching import Sqlite3ScorerCache
                scoring = Sqlite3ScorerCache(None, counting)  # a temporary cache, removed on leaving the block
            else:
                scoring = contextlib.nullcontext(counting)
            with scoring as scorer:
                garen.build_systems(prepared, scorer, navigator, budget=budget, systems=[name],
                                    head_rerank=head_rerank)[name](topics)
            qids = topics.qid.astype(str)
            calls = pd.Series([counting.calls[q] for q in qids])
            sent = pd.Series([counting.sent[q] for q in qids])
            distinct = pd.Series([len(counting.distinct[q]) for q in qids])
            rows.append({'collection': collection, 'budget': budget, 'system': name,
                         'reranker': 'MiniLM' if sigma is None else f'sigma={sigma:g}', 'calls': calls.mean(),
                         'sent': sent.mean(), 'distinct': distinct.mean(), 'sent_per_distinct': sent.sum() /
                         max(distinct.sum(), 1), 'queries': len(qids)})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[2].strip().split('\n')[0])
    parser.add_argument('--collections', nargs='+', default=['cranfield', 'vaswani', 'scifact'])
    parser.add_argument('--budgets', nargs='+', type=int, default=[100, 200])
    parser.add_argument('--queries', type=int, default=None, help='the first N judged queries only (default: all)')
    parser.add_argument('--systems', nargs='+', default=None,
                        help='systems of compare that use the reranker (default: all of them)')
    parser.add_argument('--listwise', action='store_true', help='MiniLM seen as a listwise reranker')
    parser.add_argument('--head-rerank', type=int, default=0, help='one more call over every top N (default: none)')
    parser.add_argument('--sigma', type=float, default=None,
                        help='the simulated reranker at this noise instead of MiniLM (as strength_sweep.py --sigmas)')
    parser.add_argument('--noise-seed', type=int, default=0, help='its noise seed (default 0)')
    parser.add_argument('--cache-scores', action='store_true',
                        help="a scorer cache (pyterrier_caching) between each search and MiniLM")
    parser.add_argument('--out', default=None, help='also write the table as CSV')
    args = parser.parse_args(argv)
    if args.cache_scores and args.listwise:
        parser.error('--cache-scores cannot go with --listwise: a listwise reranker\'s scores hold for one window only')
    reranking = garen.system_names(reranks=True)  # declared in the registry: BM25 and any other row without one
    unknown = [s for s in args.systems or () if s not in reranking]
    if unknown:
        parser.error(f'--systems: unknown or reranker-free system(s) {unknown}; choose from {reranking}')
    try:  # before anything is built: --queries -2 was every query but the last two, 0 every query
        analysis.check_sweep_arguments(
            sigmas=[] if args.sigma is None else [args.sigma], noise_seeds=[args.noise_seed], budgets=args.budgets,
            num_queries=args.queries, names={'sigmas': '--sigma', 'sigma': '--sigma', 'noise_seed': '--noise-seed',
                                             'budgets': '--budgets', 'budget': '--budgets', 'num_queries': '--queries'})
    except ValueError as ex:
        parser.error(str(ex))
    garen.check_outputs({'--out': args.out})  # before the runs, not after them
    from _judged import measure_each
    table = measure_each(args.collections, measure, args.budgets, args.queries, args.systems, args.listwise,
                         args.head_rerank, args.cache_scores, args.sigma, args.noise_seed)
    if args.out:
        table.to_csv(args.out, index=False)
    print('per query (mean): reranker calls holding the query, documents sent (counting repeats), distinct documents, '
          'and documents sent per distinct document\n')
    for column in ('calls', 'sent', 'distinct', 'sent_per_distinct'):
        print(f'{column}\n')
        print(table.pivot_table(index=['collection', 'budget'], columns='system', values=column,
                                sort=False).round(2 if column == 'sent_per_distinct' else 1).to_string())
        print()


if __name__ == '__main__':
    with garen.command_errors():  # a usage error: one line 'error: ...', exit status 2
        main()
