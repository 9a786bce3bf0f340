"""Issue 16's margin with every system at its own best weight of the shared fusion stage.

    python examples/fusion_weights.py 0.1:cranfield=cranfield.csv 0.1:vaswani=vaswani.csv \\
        1:cranfield=fusion1-cranfield.csv 1:vaswani=fusion1-vaswani.csv --paired

Each argument is WEIGHT:COLLECTION=PATH[,PATH...]: the CSVs examples/strength_sweep.py wrote for that collection
with --fusion WEIGHT (comma-separated when it was run in parts). Every weight must name the same collections; a
CSV whose provenance record shows another --fusion than its WEIGHT is refused.
Prints, per budget (--margin-budgets), reranker (--rerankers) and measure:

1. each system's value at each weight (the mean over the collections) and the weight where it is best (the lighter
   one on a tie);
2. --system at its best weight against the best of --baselines, each at its own best weight, on the mean over the
   collections (analysis.fusion_weight_margins); with --paired, also each margin's p-value, interval and verdict,
   as sweep_verdict.py --paired gives them.

A sweep at --fusion 0 (WEIGHT 0) has no shared stage, and GAREN+ then runs its own fusion: --own-fusion systems are
left out at weight 0, so none is chosen at a weight where it alone is fused.

The weights are chosen on the same queries they are judged on, for every system alike: the table is an upper bound
of what tuning the stage could give each system, not a setting to ship. Last comes where the CSVs came from. Reads
only the CSVs: nothing is run.
"""
import argparse
import os
import shlex
import sys

import pandas as pd

import pyterrier_garen as garen
from pyterrier_garen import analysis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling script's helpers
from sweep_verdict import (add_paired_arguments, markdown, parse_checked, parse_files,  # noqa: E402
                           print_provenance, signed)


def parse_weighted(items):
    """``['0.1:a=x.csv,y.csv', '1:a=z.csv']`` -> ``{0.1: {'a': ['x.csv', 'y.csv']}, 1.0: {'a': ['z.csv']}}``."""
    out = {}
    for item in items:
        weight, sep, rest = item.partition(':')
        try:
            w = float(weight)
        except ValueError:
            w = float('nan')
        if not sep or not 0 <= w < float('inf'):
            raise SystemExit(f'error: {item!r}: expected WEIGHT:COLLECTION=PATH[,PATH...] with WEIGHT the --fusion the '
                             f'sweep ran with, e.g. 0.1:cranfield=cranfield.csv')
        for name, paths in parse_files([rest]).items():
            out.setdefault(w, {}).setdefault(name, []).extend(paths)
    collections = {w: sorted(files) for w, files in out.items()}
    if len({tuple(c) for c in collections.values()}) > 1:
        raise SystemExit('error: every weight must name the same collections; got ' +
                         '; '.join(f'{w:g}: {", ".join(c)}' for w, c in sorted(collections.items())))
    return out


def recorded_weight(command):
    """The ``--fusion`` a recorded strength_sweep command ran with (0 when it names none), or None for no record."""
    if command in (None, '-'):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    for k, word in enumerate(words):
        value = word.split('=', 1)[1] if word.startswith('--fusion=') else \
            words[k + 1] if word == '--fusion' and k + 1 < len(words) else None
        if value is not None:
            try:
                return float(value)
            except ValueError:
                return None
    return 0.0


def check_recorded_weights(provenance):
    """SystemExit when a CSV's record says its sweep ran with another ``--fusion`` than the weight it is given."""
    for row in provenance.itertuples():
        ran = recorded_weight(row.command)
        if ran is not None and abs(ran - row.weight) > 1e-12:
            raise SystemExit(f'error: {row.weight:g}:{row.collection}={row.file}: its record says the sweep ran with '
                             f'--fusion {ran:g} ({row.command}); give it as {ran:g}:{row.collection}={row.file}')


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('files', nargs='+', metavar='WEIGHT:COLLECTION=PATH[,PATH...]')
    parser.add_argument('--system', default='GAREN+', help='the system compared (default: GAREN+)')
    parser.add_argument('--baselines', nargs='+',
                        help='the baselines (default: GAR SlideGAR RGS, without --system)')
    parser.add_argument('--own-fusion', nargs='*', default=None, metavar='SYSTEM',
                        help='systems that run a fusion stage of their own in a sweep without the shared one (weight '
                             '0): left out at weight 0, where only they are fused (default: the systems declared so '
                             'in the registry, GAREN+)')
    parser.add_argument('--margin-budgets', type=int, nargs='+', default=[100, 200])
    parser.add_argument('--rerankers', nargs='+', default=['sigma=0.25', 'sigma=0.5', 'sigma=1', 'MiniLM'],
                        help="rerankers compared ('sigma=S' or 'MiniLM'; one the CSVs lack is skipped)")
    add_paired_arguments(parser, "each margin's p-value and verdict, from the per-query files beside the CSVs")
    args = parse_checked(parser, argv)
    weighted = parse_weighted(args.files)
    try:
        tables = {w: analysis.load_sweeps(files) for w, files in weighted.items()}
        perqueries = {w: analysis.load_per_query(files) for w, files in weighted.items()} if args.paired else None
        provenance = pd.concat([analysis.sweep_provenance(files).assign(weight=w) for w, files in weighted.items()],
                               ignore_index=True)
        check_recorded_weights(provenance)  # a mislabelled weight would move the best-weight table silently
        values, margins = analysis.fusion_weight_margins(tables, args.system, args.baselines,
                                                         budgets=args.margin_budgets, rerankers=args.rerankers,
                                                         perqueries=perqueries, alpha=args.alpha,
                                                         own_fusion=args.own_fusion)
    except (OSError, ValueError) as ex:
        raise SystemExit(f'error: {ex}') from ex
    weights = sorted(tables)
    collections = sorted(next(iter(weighted.values())))
    print(f'collections: {", ".join(collections)}; fusion weights: {", ".join(f"{w:g}" for w in weights)}; '
          f'{args.system} against the best of {", ".join(args.baselines)}, each at its own best weight\n')
    declared = args.own_fusion if args.own_fusion is not None else garen.system_names(own_fusion=True)
    own = [n for n in declared if 0 in tables and (tables[0].system == n).any()]
    if own:
        print(f'weight 0 has no shared stage: {", ".join(own)} ran there with {"its" if len(own) == 1 else "their"} '
              'own fusion, the others with none, so it is left out at weight 0 (-)\n')
    print('**1. Each system at each weight (mean over the collections)**\n')
    shown = values.rename(columns={w: f'{w:g}' for w in weights})
    print(markdown(shown.assign(best_weight=shown.best_weight.map(lambda w: '-' if w != w else f'{w:g}'))))
    print(f'\n**2. {args.system} at its best weight against the best baseline at its own**\n')
    per = [c for c in margins.columns if c.startswith('delta:')]
    interval = ['low', 'high'] if perqueries is not None else []
    shown = signed(margins, ['delta', 'delta_min', 'delta_max', *per, *interval])
    for column in ('weight', 'best_weight'):
        shown[column] = shown[column].map(lambda w: f'{w:g}')
    print(markdown(shown))
    print(f'\n{int(margins.holds.sum())} of {len(margins)} cells hold' +
          ('' if perqueries is None else '; ' + ', '.join(f'{int((margins.verdict == v).sum())} {v}' for v in
                                                         ('ahead', 'tie', 'behind')) + f' at p < {args.alpha:g}'))
    print()
    print_provenance(provenance.assign(weight=provenance.weight.map(lambda w: f'{w:g}')),
                     ('weight', 'collection', 'file', 'status', 'code', 'date', 'queries'))


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a usage error: one line 'error: ...', exit status 2
        main(sys.argv[1:])
