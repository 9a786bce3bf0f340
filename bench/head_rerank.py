"""Probe: one more listwise call over each system's top 20, before the shared fusion stage.

    python bench/head_rerank.py      # cranfield, vaswani, scifact; budgets 100 and 200; MiniLM and sigma 1
    python bench/head_rerank.py --collections vaswani --budgets 100 --depth 20 --sigmas

With a listwise reranker, GAREN's and SlideGAR's ranks below the kept top h are merged from window positions
(`final_order='dropped'`): one document per window at each position, so ranks 11 to 19 are the best rejects of the last
windows, ordered by recency and never compared with each other. RGS's are the rest of a queue that its windows sorted
several times (bench/reranker_load.py: at budget 100 it sends the reranker 2.25 to 2.45 times the documents GAREN+
sends). The shared stage (`--fusion 0.1`) lets those ranks into the top 10. This probe asks how much of RGS's lead at
nDCG@10 one more call closes: every system's top `depth` documents are re-ranked once more by the same listwise reranker
(documents it has seen: no new document, `depth` more sent per query), then the shared stage runs as before. It prints,
per collection and budget, nDCG@10 and R@100 of SlideGAR, RGS and GAREN+ with and without that call, then the mean over
the collections and GAREN+ minus the best baseline. Every reranker (MiniLM, and the simulated reranker at each
`--sigmas`, noise seed 0) is seen through `analysis.ListwiseView`, as in the listwise sweeps; the collections' default
partition is the sweeps' partition 42. GAR is left out: with a listwise reranker it ranks its batches by their places
(docs/results.md, "a listwise reranker"). The call is the shipped stage `HeadReranker`, put there by
`build_systems(head_rerank=depth)` (`compare --head-rerank N`, `strength_sweep.py --head-rerank N`); this script was the
probe that preceded it and now runs it.
"""
import argparse
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402
from ir_measures import R, nDCG  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import analysis  # noqa: E402

SYSTEMS = ['SlideGAR', 'RGS', 'GAREN+']


def measure(collection: str, budgets, depth: int, sigmas) -> pd.DataFrame:
    from _judged import judged_collection, score
    _, prepared, qrels, topics, judged = judged_collection(collection)
    minilm, navigator = garen.cpu_components(prepared)
    rerankers = {'MiniLM': minilm}
    rerankers.update((f'sigma={sigma:g}', analysis.SimulatedReranker(qrels, noise=sigma, seed=0)) for sigma in sigmas)
    rows = []
    for label, reranker in rerankers.items():
        listwise = analysis.ListwiseView(reranker)
        for budget in budgets:
            for head, call in (('no', 0), ('yes', depth)):
                pipelines = garen.build_systems(prepared, listwise, navigator, budget=budget, systems=SYSTEMS,
                                                fusion=0.1, head_rerank=call)
                for name, system in pipelines.items():
                    values = score(system(topics), judged, [nDCG @ 10, R @ 100])
                    rows.append({'collection': collection, 'reranker': label, 'budget': budget, 'system': name,
                                 'head_rerank': head, 'nDCG@10': values[nDCG @ 10], 'R@100': values[R @ 100]})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[2].strip().split('\n')[0])
    parser.add_argument('--collections', nargs='+', default=['cranfield', 'vaswani', 'scifact'])
    parser.add_argument('--budgets', nargs='+', type=int, default=[100, 200])
    parser.add_argument('--depth', type=int, default=20, help='documents re-ranked once more (default: 20)')
    parser.add_argument('--sigmas', nargs='*', type=float, default=[1.0],
                        help='simulated rerankers (noise seed 0) beside MiniLM (default: 1)')
    args = parser.parse_args(argv)
    from _judged import measure_each
    table = measure_each(args.collections, measure, args.budgets, args.depth, args.sigmas)
    pd.set_option('display.width', 200)
    print(table.round(4).to_string(index=False))
    keys = ['reranker', 'budget', 'head_rerank']
    mean = table.groupby(keys + ['system'], sort=False)[['nDCG@10', 'R@100']].mean()
    print('\nmean over the collections\n')
    print(mean.unstack('system').round(4).to_string())
    print('\nGAREN+ minus the best of SlideGAR and RGS (mean over the collections)\n')
    for (label, budget, head), part in mean.groupby(level=keys, sort=False):
        part = part.droplevel(keys)
        gap = part.loc['GAREN+'] - part.drop(index='GAREN+').max()
        print(f'{label}, budget {budget}, head re-rank {head}: nDCG@10 {gap["nDCG@10"]:+.4f}, '
              f'R@100 {gap["R@100"]:+.4f}')


if __name__ == '__main__':
    main()
