"""Benchmark: how much of its budget each system of `compare` spends, with the first stage whole or cut short.

    python bench/budget_spent.py      # cranfield, vaswani, scifact; budgets 100 400; depths 1000 and 10
    python bench/budget_spent.py --collections cranfield --budgets 100 --depths 10

A budget is the most documents a search may re-rank per query. A search that stops before it leaves model calls
unspent that a rival of the same budget makes, so a table of equal budgets is only fair when each search says how
much it spent. For each collection, budget and first-stage depth (BM25's top `depth`: 1000 is what `compare` uses;
10 stands for a first stage shorter than GAREN's window of 20, as `bm25 % 10 >> GAREN` or a rare query on a small
collection gives), this prints, for every registered system with MiniLM as the reranker and the centroid navigator,
and for SlideGAR(fill=True) and RGS(backfill=True) (`SlideGAR fill`, `RGS backfill`: the two baselines with the fill
their reference code lacks), the documents re-ranked per query (mean and minimum), the number of queries that
stopped short of the budget, and nDCG@10 and R@100.
Artifacts are built once in the collection's workdir under $GAREN_CACHE (the one `prepare` uses) and reused.
"""
import argparse
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402
from ir_measures import R, nDCG  # noqa: E402

import pyterrier_garen as garen  # noqa: E402


def measure(collection: str, budgets, depths) -> pd.DataFrame:
    from _judged import judged_collection, score
    _, prepared, _, topics, judged = judged_collection(collection)
    reranker, navigator = garen.cpu_components(prepared)
    whole = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=max(depths))(topics)
    rows = []
    for depth in depths:
        first = whole[whole['rank'] < depth]
        source = pt.Transformer.from_df(first)
        for budget in budgets:
            systems = garen.build_systems(prepared, reranker, navigator, budget=budget, first_stage=source)
            # the two baselines with the fill their reference code lacks (off by default), beside their own rows
            systems['SlideGAR fill'] = source >> garen.SlideGAR(reranker, prepared.groups, budget=budget, fill=True)
            systems['RGS backfill'] = source >> garen.RGS(reranker, prepared.groups, budget=budget, backfill=True)
            for name, pipeline in systems.items():
                run = pipeline(topics)
                sizes = run.groupby('qid').size().reindex(topics.qid.astype(str)).fillna(0)
                scores = score(run, judged, [nDCG @ 10, R @ 100])
                rows.append({'collection': collection, 'depth': depth, 'budget': budget, 'system': name,
                             'docs_mean': sizes.mean(), 'docs_min': int(sizes.min()),
                             'short': int((sizes < min(budget, depth) if name in ('BM25', 'Rerank')
                                           else sizes < budget).sum()),
                             'queries': len(sizes), 'nDCG@10': scores[nDCG @ 10], 'R@100': scores[R @ 100]})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[2].strip().split('\n')[0])
    parser.add_argument('--collections', nargs='+', default=['cranfield', 'vaswani', 'scifact'])
    parser.add_argument('--budgets', nargs='+', type=int, default=[100, 400])
    parser.add_argument('--depths', nargs='+', type=int, default=[1000, 10])
    args = parser.parse_args(argv)
    from _judged import measure_each
    table = measure_each(args.collections, measure, args.budgets, args.depths)
    wide = table.pivot_table(index=['collection', 'depth', 'budget'], columns='system',
                             values='docs_mean', sort=False).round(1)
    print('documents re-ranked per query (mean); BM25 and Rerank stop at the first stage\'s depth\n')
    print(wide.to_string())
    for column in ('nDCG@10', 'R@100'):
        print(f'\n{column}\n')
        print(table.pivot_table(index=['collection', 'depth', 'budget'], columns='system', values=column,
                                sort=False).round(4).to_string())
    short = table[table.short > 0]
    print('\nqueries that stopped short of the budget (BM25 and Rerank: of min(budget, depth))\n')
    print(short[['collection', 'depth', 'budget', 'system', 'short', 'queries', 'docs_min']].to_string(index=False)
          if len(short) else 'none')


if __name__ == '__main__':
    main()
