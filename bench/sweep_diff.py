"""Two sets of strength-sweep CSVs side by side: what one change of the sweep's command did to every row.

    python bench/sweep_diff.py --a cranfield=listwise-cranfield.csv --b cranfield=cranfield.csv \
        --names listwise pointwise
    python bench/sweep_diff.py --a cranfield=listwise-cranfield.csv --b cranfield=listwise-paper-cranfield.csv \
        --names dropped paper --systems SlideGAR GAREN GAREN+ --budgets 200 400

Each --a and --b names a collection and the CSVs examples/strength_sweep.py wrote for it (COLLECTION=PATH[,PATH...],
as examples/sweep_verdict.py takes them; repeat the option for more collections). Each measure is computed from the
per-query values beside each CSV (X.perquery.csv.gz), each side's averaged over its partition seeds, and rows are
matched on collection, system, reranker, sigma, noise seed, budget and query: only what both sides hold is compared
(a sweep run on the first 100 queries and one on all of them compare on those 100). Prints, per measure, one row
per collection, system, reranker and budget: A, B, A - B, the queries on which A is higher and lower, and the
two-sided paired t-test over the queries; with several collections, each row's mean over them; then, per system
and budget and per system: how many rows A is above, level with (|A - B| < 0.0005) and below B, A - B's mean, lowest
and highest value over the rows, and the rows where A is above or below B at p < 0.05. Reads only the files:
nothing is run. --out also writes the table as CSV.
"""
import argparse
import math
import sys

import pandas as pd
from scipy.stats import ttest_rel

from pyterrier_garen import analysis, check_outputs

KEYS = ['collection', 'system', 'reranker', 'sigma', 'noise_seed', 'budget']
MEASURES = ('nDCG@10', 'R@100')
LEVEL = 0.0005
ALPHA = analysis.ALPHA


def _config(frame):
    return frame.reranker.where(frame.reranker == 'MiniLM', 'sigma=' + frame.sigma.map('{:g}'.format))


def compare(a: pd.DataFrame, b: pd.DataFrame, names=('A', 'B')) -> pd.DataFrame:
    """Per-query tables of two sweeps (``load_per_query``'s columns) -> one row per matched key and measure.

    Columns: the keys, ``measure``, the two names, ``delta`` (first minus second), ``higher``/``lower`` (queries on
    which the first is above / below the second), ``queries`` and ``p`` (two-sided paired t-test; NaN when every
    difference is 0 or fewer than two queries).
    """
    first, second = names
    keys = ['collection', 'system', 'reranker', 'sigma', 'noise_seed', 'budget', 'qid']
    sides = []
    for frame in (a, b):
        frame = frame.assign(qid=frame.qid.astype(str), sigma=frame.sigma.fillna(-1.0),
                             noise_seed=frame.noise_seed.fillna(-1.0))
        sides.append(frame.groupby(keys, sort=False)[list(MEASURES)].mean())  # over partition seeds
    joined = sides[0].merge(sides[1], how='inner', left_index=True, right_index=True,
                            suffixes=('_a', '_b')).reset_index()
    rows = []
    for key, group in joined.groupby(KEYS, sort=False):
        for measure in MEASURES:
            x, y = group[f'{measure}_a'], group[f'{measure}_b']
            diff = x - y
            p = math.nan
            if len(group) > 1 and diff.abs().sum() > 0:
                p = float(ttest_rel(x, y).pvalue)
            rows.append({**dict(zip(KEYS, key)), 'measure': measure, first: x.mean(), second: y.mean(),
                         'delta': diff.mean(), 'higher': int((diff > 0).sum()), 'lower': int((diff < 0).sum()),
                         'queries': len(group), 'p': p})
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out['sigma'] = out.sigma.where(out.sigma >= 0)
    out['noise_seed'] = out.noise_seed.where(out.noise_seed >= 0)
    return out


def means(table: pd.DataFrame, names=('A', 'B')) -> pd.DataFrame:
    """Per measure, system, reranker and budget: the two sides and their difference averaged over the collections
    (each collection counts once, whatever its number of queries), and on how many collections the first is above
    the second by at least ``LEVEL`` (``ahead``) out of how many (``collections``)."""
    first, second = names
    keys = ['measure', 'system', 'reranker', 'sigma', 'budget']
    frame = table.assign(sigma=table.sigma.fillna(-1.0), ahead=table.delta >= LEVEL)
    out = (frame.groupby(keys, sort=False)
           .agg(**{first: (first, 'mean'), second: (second, 'mean'), 'delta': ('delta', 'mean'),
                   'ahead': ('ahead', 'sum'), 'collections': ('collection', 'nunique')}).reset_index())
    return out.assign(sigma=out.sigma.where(out.sigma >= 0))


def summary(table: pd.DataFrame, by=('measure', 'system')) -> pd.DataFrame:
    """Per group of ``by``: the rows where the first sweep is above, level with (within ``LEVEL``) and below the
    second, the mean, lowest and highest difference, and the rows where it is above or below at p < ``ALPHA``."""
    frame = table.assign(side=pd.cut(table.delta, [-math.inf, -LEVEL, LEVEL - 1e-15, math.inf],
                                      labels=['below', 'level', 'above']),
                         up=(table.delta > 0) & (table.p < ALPHA), down=(table.delta < 0) & (table.p < ALPHA))
    groups = frame.groupby(list(by), sort=False, observed=True)
    sides = groups.side.value_counts().unstack().reindex(columns=['above', 'level', 'below'], fill_value=0)
    stats = groups.agg(mean=('delta', 'mean'), low=('delta', 'min'), high=('delta', 'max'),
                       up=('up', 'sum'), down=('down', 'sum'))
    return sides.join(stats).rename(columns={'up': f'above p<{ALPHA:g}', 'down': f'below p<{ALPHA:g}'})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    files = 'COLLECTION=CSV[,CSV...]'
    parser.add_argument('--a', action='append', required=True, metavar=files, help='the first sweep')
    parser.add_argument('--b', action='append', required=True, metavar=files, help='the second sweep')
    parser.add_argument('--names', nargs=2, default=['A', 'B'], help='what to call the two sides')
    parser.add_argument('--systems', nargs='+', help='only these systems')
    parser.add_argument('--budgets', nargs='+', type=int, help='only these budgets')
    parser.add_argument('--out', help='also write the table as CSV')
    args = parser.parse_args(argv)
    if args.names[0] == args.names[1]:
        parser.error('--names must differ')
    try:
        a, b = analysis.load_per_query(analysis.parse_sweep_files(args.a)), \
            analysis.load_per_query(analysis.parse_sweep_files(args.b))
    except ValueError as ex:
        parser.error(str(ex))
    read = [p for item in (args.a, args.b) for paths in analysis.parse_sweep_files(item).values() for p in paths]
    check_outputs({'--out': args.out}, inputs=read + [str(analysis.per_query_path(p)) for p in read])
    table = compare(a, b, args.names)
    if table.empty:
        raise SystemExit('error: the two sides hold no row in common (collection, system, reranker, sigma, noise '
                         'seed and budget)')
    for flag, column, chosen in (('--systems', 'system', args.systems), ('--budgets', 'budget', args.budgets)):
        if chosen:
            held = list(dict.fromkeys(table[column]))
            if not set(chosen) & set(held):
                raise SystemExit(f'error: {flag} {" ".join(map(str, chosen))} selects no row the two sides hold in '
                                 f'common; choose from {" ".join(map(str, held))}')
            table = table[table[column].isin(chosen)]
    if args.out:
        table.to_csv(args.out, index=False)
    shown = table.assign(reranker=_config(table)).drop(columns=['sigma', 'noise_seed'])
    with pd.option_context('display.width', 250, 'display.max_rows', 1000):
        for measure in MEASURES:
            print(f'\n{measure}: {args.names[0]} - {args.names[1]}')
            print(shown[shown.measure == measure].drop(columns='measure').round(4).to_string(index=False))
        if table.collection.nunique() > 1:
            mean = means(table, args.names)
            mean = mean.assign(reranker=_config(mean)).drop(columns='sigma')
            for measure in MEASURES:
                print(f'\n{measure}: mean over the collections ({args.names[0]} ahead by at least {LEVEL} on how many)')
                print(mean[mean.measure == measure].drop(columns='measure').round(4).to_string(index=False))
        for by in (('measure', 'system', 'budget'), ('measure', 'system')):
            print(f'\nrows where {args.names[0]} is above, level with (|delta| < {LEVEL}) and below {args.names[1]}, '
                  f'the difference (mean, lowest, highest) and the rows above and below at p < {ALPHA:g}, by '
                  + ', '.join(by))
            print(summary(table, by).round(4).to_string())


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a usage error: one line 'error: ...', exit status 2
        main(sys.argv[1:])
