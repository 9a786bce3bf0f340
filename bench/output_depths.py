"""Benchmark: every system of the comparison at other output depths, as the budget grows.

    python bench/output_depths.py      # cranfield, vaswani, scifact; budgets 50 to 400; fusion 0 and 0.1 (~15 min)
    python bench/output_depths.py --collections cranfield --budgets 100 --fusions 0.1

The paper judges a search by nDCG@10 and R@100 at one budget. A user who keeps the top 20 or 50 for a next stage
sees the order between those depths too. For each collection and budget this prints, for the registered systems
(plain re-ranking, GAR, SlideGAR, RGS, GAREN, GAREN+) with MiniLM as the reranker and the centroid navigator,
nDCG@10/20/50, R@20/50/100 and AP@100, without a fusion stage and with the one `compare --fusion W` gives every
system. Then two summaries: GAREN+ minus the best of GAR, SlideGAR and RGS under each fusion (mean over the
collections, and on how many it is ahead), and each system's measures as the budget grows (mean over the
collections), with every fall marked. Artifacts are built once in the collection's workdir under $GAREN_CACHE.
"""
import argparse
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402
from ir_measures import AP, R, nDCG  # noqa: E402

import pyterrier_garen as garen  # noqa: E402

SYSTEMS = ['Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+']
BASELINES = ['GAR', 'SlideGAR', 'RGS']
MEASURES = [nDCG @ 10, nDCG @ 20, nDCG @ 50, R @ 20, R @ 50, R @ 100, AP @ 100]


def measure(collection: str, budgets, fusions) -> pd.DataFrame:
    from _judged import judged_collection, score
    _, prepared, _, topics, judged = judged_collection(collection)
    reranker, navigator = garen.cpu_components(prepared)
    rows = []
    for budget in budgets:
        for fusion in fusions:
            systems = garen.build_systems(prepared, reranker, navigator, budget=budget, systems=SYSTEMS,
                                          fusion=fusion)
            for name, pipeline in systems.items():
                scores = score(pipeline(topics), judged, MEASURES)
                rows.append({'collection': collection, 'budget': budget, 'fusion': fusion, 'system': name,
                             **{str(m): scores[m] for m in MEASURES}})
    return pd.DataFrame(rows)


def margins(table: pd.DataFrame) -> pd.DataFrame:
    """GAREN+ minus the best of GAR, SlideGAR and RGS, per measure: mean over collections and collections ahead."""
    names = [str(m) for m in MEASURES]
    rows = []
    for (budget, fusion), part in table.groupby(['budget', 'fusion'], sort=True):
        ours = part[part.system == 'GAREN+'].set_index('collection')[names]
        best = part[part.system.isin(BASELINES)].groupby('collection')[names].max()
        delta = ours - best.loc[ours.index]
        rows.append({'budget': budget, 'fusion': fusion,
                     **{m: f'{delta[m].mean():+.4f} ({int((delta[m] > 0).sum())}/{len(delta)})' for m in names}})
    return pd.DataFrame(rows)


def growth(table: pd.DataFrame) -> pd.DataFrame:
    """Each system's measures as the budget grows (mean over collections); '!' marks a fall from the budget
    before."""
    names = [str(m) for m in MEASURES]
    table = table.assign(system=pd.Categorical(table.system, categories=SYSTEMS, ordered=True))
    mean = table.groupby(['fusion', 'system', 'budget'], observed=True)[names].mean().sort_index()
    rows = []
    for (fusion, system), part in mean.groupby(level=[0, 1], sort=False, observed=True):
        part = part.droplevel([0, 1])
        cells = {m: ' '.join(f'{v:.4f}' + ('!' if i and v < part[m].iloc[i - 1] else ' ')
                             for i, v in enumerate(part[m])) for m in names}
        rows.append({'fusion': fusion, 'system': system, **cells})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[2].strip().split('\n')[0])
    parser.add_argument('--collections', nargs='+', default=['cranfield', 'vaswani', 'scifact'])
    parser.add_argument('--budgets', nargs='+', type=int, default=[50, 100, 200, 400])
    parser.add_argument('--fusions', nargs='+', type=float, default=[0.0, 0.1])
    parser.add_argument('--out', help='also write every row as CSV to this file')
    args = parser.parse_args(argv)
    from _judged import measure_each
    table = measure_each(args.collections, measure, args.budgets, args.fusions)
    pd.set_option('display.width', 250)
    for (collection, budget), part in table.groupby(['collection', 'budget'], sort=False):
        print(f'\n{collection}, budget {budget}\n')
        print(part.drop(columns=['collection', 'budget']).round(4).to_string(index=False))
    print('\nGAREN+ minus the best of GAR, SlideGAR and RGS: mean over the collections (collections ahead)\n')
    print(margins(table).to_string(index=False))
    print(f'\nmean over the collections at budgets {" ".join(map(str, args.budgets))} (! a fall from the budget '
          'before)\n')
    print(growth(table).to_string(index=False))
    if args.out:
        table.to_csv(args.out, index=False)


if __name__ == '__main__':
    main()
