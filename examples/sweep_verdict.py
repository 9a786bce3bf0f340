"""Issue 16's three claims over strength-sweep CSVs, as Markdown tables: the verdict is one command.

    python examples/sweep_verdict.py cranfield=cranfield.csv vaswani=vaswani.csv \\
        scifact=scifact-simulated.csv,scifact-minilm.csv
    python examples/sweep_verdict.py cranfield=c.csv vaswani=v.csv --system GAREN+ --baselines GAR SlideGAR RGS \\
        --margin-budgets 100 200 --rerankers sigma=0.25 sigma=0.5 sigma=1 MiniLM --csv-dir verdict/

Each argument names a collection and the CSVs examples/strength_sweep.py wrote for it (comma-separated when a
collection was run in parts, e.g. the simulated rerankers on some queries and MiniLM on all). Prints:

1. budget monotonicity: --monotone systems' R@100 (or --monotone-measure) per collection, reranker and noise seed
   over the budgets run, and whether it never falls (--monotone-summary: counted per system and reranker);
2. margins: --system against the best of --baselines at --margin-budgets, nDCG@10 and R@100, mean over the
   collections (noise seeds paired), with the per-seed range and, per collection, the system minus that
   collection's best baseline;
3. strength response: --system's R@100 at --response-budget from sigma --weak to sigma --strong, per collection.

Each table ends with a count of what holds; table 1 is skipped when the CSVs hold one budget, table 2 when a
baseline has no rows (a sweep of one system). Values are means over partition seeds. Last comes where the CSVs
came from: the code version, date and query count each one's record (CSV.json, written by strength_sweep.py)
gives, and a warning when the files were written by different code or package versions, changed after their
record, or have none. --csv-dir also writes the three tables as CSV. Reads only the CSVs: nothing is run.

--paired also reads the per-query values strength_sweep.py writes beside each CSV (X.perquery.csv.gz; their means
must give the CSV's values). To table 1 it adds the paired t-test of each row's worst budget step over the
collection's queries (p; per query, averaged over partition seeds) and whether that step falls or rises at
p < --alpha (else tie). To table 2 it adds a two-sided p-value for each margin (per query, the system minus that
cell's best baseline, averaged over the paired noise seeds; the mean over collections tested against zero, each
collection's queries a stratum: analysis.stratified_paired_test), the margin's 1 - --alpha confidence interval
(low, high: analysis.stratified_paired_interval; it excludes 0 exactly when p < --alpha) and a verdict: ahead or
behind when p < --alpha, else tie.
"""
import argparse
import os
import sys

import numpy as np

from pyterrier_garen import analysis


def parse_files(items):
    """``['name=a.csv,b.csv', ...]`` -> ``{'name': ['a.csv', 'b.csv']}``; a malformed item exits with its message."""
    try:
        return analysis.parse_sweep_files(items)
    except ValueError as ex:
        raise SystemExit(f'error: {ex}') from ex


def markdown(frame):
    """A DataFrame as a Markdown table (numbers with 4 decimals, booleans yes/no, NaN as '-')."""
    def cell(value):
        if isinstance(value, (bool, np.bool_)):
            return 'yes' if value else 'no'
        if isinstance(value, (float, np.floating)):
            return '-' if value != value else f'{value:.4f}'
        return str(value)
    head = [str(c) for c in frame.columns]
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    lines += ['| ' + ' | '.join(cell(v) for v in row) + ' |' for row in frame.itertuples(index=False)]
    return '\n'.join(lines)


def signed(frame, columns):
    """``frame`` with ``columns`` written as signed differences (+.0123)."""
    out = frame.copy()
    for c in columns:
        out[c] = out[c].map(lambda v: '-' if v != v else f'{v:+.4f}')
    return out


def add_paired_arguments(parser, paired_help):
    """``--paired`` (with ``paired_help``) and ``--alpha``, as every verdict script takes them."""
    parser.add_argument('--paired', action='store_true', help=paired_help)
    parser.add_argument('--alpha', type=float, default=analysis.ALPHA,
                        help='significance level of the --paired verdict (default: %(default)s)')


def load_inputs(files, paired, system):
    """``(table, provenance, per-query values or None)`` of the CSVs; an unreadable file, or a table without rows
    of ``system``, exits with its message."""
    try:
        table = analysis.load_sweeps(files)
        provenance = analysis.sweep_provenance(files)
        perquery = analysis.load_per_query(files) if paired else None
    except (OSError, ValueError) as ex:
        raise SystemExit(f'error: {ex}') from ex
    present = set(table.system)
    if system not in present:
        raise SystemExit(f'error: no rows of {system} in the CSVs (systems there: {", ".join(sorted(present))}); '
                         'pass --system')
    return table, provenance, perquery


def held_rerankers(table):
    """The rerankers the sweep rows hold, named as ``--rerankers`` names them (``sigma=0.5``, ``MiniLM``)."""
    return sorted(set(analysis.reranker_labels(table)))


def print_gaps(result, table, systems, budgets, rerankers, otherwise='at the budgets and rerankers asked for'):
    """Under an empty table of cells, why: what the CSVs lack of the systems, budgets and rerankers asked for
    (``otherwise``: the reason when they lack nothing); under a table that has cells, the cells asked for that some
    collection holds but not every one (they were left out without a word)."""
    if len(result):
        held, budgets_held = held_rerankers(table), set(table.budget)
        gaps = analysis.coverage_gaps(table, systems,
                                      budgets=None if budgets is None else [b for b in budgets if b in budgets_held],
                                      rerankers=None if rerankers is None else [r for r in rerankers if r in held])
        if gaps:
            print('\nleft out, as not every collection has them for ' + ', '.join(systems) + f': {"; ".join(gaps)}')
        return
    gaps = analysis.coverage_gaps(table, systems, budgets=budgets, rerankers=rerankers)
    if gaps:
        print('\nno cell has ' + ', '.join(systems) + f' in every collection ({"; ".join(gaps)})')
    else:
        print(f'\nno cell: {otherwise}')


def print_provenance(provenance, columns=('collection', 'file', 'status', 'code', 'date', 'queries')):
    """Where the CSVs came from: their records as a table (``columns``), then the notes a reader must know."""
    print('**Where the CSVs came from**\n')
    print(markdown(provenance[list(columns)]))
    print()
    for note in analysis.provenance_notes(provenance):
        print(f'- {note}')


#: the baselines of every verdict when --baselines is not given (less the system under test)
BASELINES = ('GAR', 'SlideGAR', 'RGS')


def parse_checked(parser, argv):
    """``parser.parse_args(argv)``, refusing a list option that repeats a value and an ``--alpha`` outside (0, 1)
    with the fix; ``--baselines`` left out is :data:`BASELINES` without ``--system`` (so ``--system RGS`` is
    compared with GAR and SlideGAR)."""
    args = parser.parse_args(argv)
    for action in parser._actions:  # a value given twice would count its cells twice ('16 of 16 cells hold')
        values = getattr(args, action.dest, None)
        if action.option_strings and isinstance(values, list):
            repeated = list(dict.fromkeys(v for v in values if values.count(v) > 1))
            if repeated:
                parser.error(f'{action.option_strings[0]} repeats {" ".join(map(str, repeated))}: give each value once')
    if not 0 < args.alpha < 1:
        parser.error(f'--alpha {args.alpha:g}: the significance level must lie strictly between 0 and 1, e.g. 0.05')
    if getattr(args, 'baselines', ()) is None:
        args.baselines = [b for b in BASELINES if b != args.system]
    return args


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('files', nargs='+', metavar='COLLECTION=PATH[,PATH...]')
    parser.add_argument('--system', default='GAREN+', help='the system whose claims are checked (default: GAREN+)')
    parser.add_argument('--baselines', nargs='+',
                        help='the baselines (default: GAR SlideGAR RGS, without --system)')
    parser.add_argument('--monotone', nargs='+', default=['GAREN', 'GAREN+'],
                        help='systems whose R@100 must not fall with the budget')
    parser.add_argument('--monotone-measure', default='R@100', choices=['R@100', 'nDCG@10'],
                        help='the measure of table 1 (default: R@100)')
    parser.add_argument('--monotone-summary', action='store_true',
                        help='table 1 counted per system and reranker (analysis.monotonicity_summary) instead of '
                             'one row per collection and noise seed')
    parser.add_argument('--margin-budgets', type=int, nargs='+', default=[100, 200])
    parser.add_argument('--rerankers', nargs='+', default=['sigma=0.25', 'sigma=0.5', 'sigma=1', 'MiniLM'],
                        help="rerankers checked in tables 1 and 2 ('sigma=S' or 'MiniLM')")
    parser.add_argument('--response-budget', type=int, default=100)
    parser.add_argument('--weak', type=float, default=2.0)
    parser.add_argument('--strong', type=float, default=0.25)
    parser.add_argument('--csv-dir', help='also write monotonicity.csv, margins.csv and response.csv here')
    add_paired_arguments(parser, "table 2 with each margin's p-value and verdict, from the per-query files beside "
                                 "the CSVs")
    args = parse_checked(parser, argv)
    files = parse_files(args.files)
    table, provenance, perquery = load_inputs(files, args.paired, args.system)
    absent = [s for s in args.baselines if s not in set(table.system)]
    try:
        report = analysis.claims_report(table, args.system, args.baselines, monotone=args.monotone,
                                        monotone_measure=args.monotone_measure,
                                        margin_budgets=args.margin_budgets, rerankers=args.rerankers,
                                        budget=args.response_budget, weak=args.weak, strong=args.strong,
                                        perquery=perquery, alpha=args.alpha)
    except ValueError as ex:  # e.g. runs that cannot be paired
        raise SystemExit(f'error: {ex}') from ex
    collections = list(dict.fromkeys(table.collection))
    print(f'collections: {", ".join(collections)}; {args.system} against the best of {", ".join(args.baselines)}\n')
    held = held_rerankers(table)
    chosen = [r for r in args.rerankers if r in held]
    unnamed = [r for r in held if r not in args.rerankers]
    if unnamed:  # their rows left tables 1 and 2 without a word (a sweep's sigma=2 falling with the budget)
        print(f'left out: the CSVs also hold {" ".join(unnamed)}, which --rerankers does not name (tables 1 and 2 '
              f'show {" ".join(chosen) or "none"}); name {"it" if len(unnamed) == 1 else "them"} in --rerankers to see '
              f'{"its" if len(unnamed) == 1 else "their"} rows\n')
    why_empty = None if chosen else (f'none of --rerankers {" ".join(args.rerankers)} is in the CSVs (they hold '
                                     f'{" ".join(held)})')

    mono = report['monotonicity']
    print(f'**1. {args.monotone_measure} as the budget grows ({", ".join(args.monotone)})**\n')
    shown = mono.assign(noise_seed=mono.noise_seed.map(lambda s: '-' if s < 0 else str(s)),
                        worst_step=mono.worst_step.map(lambda v: f'{v:+.4f}'))
    if table.budget.nunique() < 2:
        print(f'skipped: one budget ({", ".join(map(str, sorted(set(table.budget))))}) in the CSVs\n')
    elif len(mono) == 0:
        print(f'skipped: {why_empty or "no row of " + " ".join(args.monotone) + " in the CSVs"}\n')
    else:
        print(markdown(signed(analysis.monotonicity_summary(mono), ['worst_step']) if args.monotone_summary else shown))
        print(f'\n{int(mono.never_falls.sum())} of {len(mono)} rows never fall' +
              ('' if perquery is None else '; worst steps: ' + ', '.join(
                  f'{int((mono.step_verdict == v).sum())} {v}' for v in ('rises', 'tie', 'falls')) +
               f' at p < {args.alpha:g}') + '\n')

    margins = report['margins']
    print(f'**2. {args.system} against the best baseline (mean over {len(collections)} collections)**\n')
    if absent:  # e.g. a sweep of one system, read for tables 1 and 3
        print(f'skipped: no rows of {", ".join(absent)} in the CSVs\n')
    else:
        per = [c for c in margins.columns if c.startswith('delta:')]
        interval = ['low', 'high'] if perquery is not None else []
        print(markdown(signed(margins, ['delta', 'delta_min', 'delta_max', *per, *interval])))
        print_gaps(margins, table, [args.system, *args.baselines], args.margin_budgets, args.rerankers)
        print(f'\n{int(margins.holds.sum())} of {len(margins)} cells hold' +
              ('' if perquery is None else '; ' + ', '.join(f'{int((margins.verdict == v).sum())} {v}' for v in
                                                          ('ahead', 'tie', 'behind')) + f' at p < {args.alpha:g}') +
              '\n')

    response = report['response']
    print(f'**3. {args.system} R@100 at budget {args.response_budget}, sigma {args.weak:g} -> {args.strong:g}**\n')
    if len(response) == 0:
        sigmas = sorted(set(table.sigma[table.reranker != 'MiniLM']))
        print(f'skipped: no collection has {args.system} at budget {args.response_budget} with both sigma '
              f'{args.weak:g} and sigma {args.strong:g} (the CSVs hold budgets '
              f'{" ".join(map(str, sorted(set(table.budget))))} and sigmas {" ".join(f"{v:g}" for v in sigmas)}; '
              'see --response-budget, --weak, --strong)')
    else:
        print(markdown(signed(response, ['rise', 'rise_min', 'rise_max'])))
        print(f'\nrises on {int(response.rises.sum())} of {len(response)} collections')

    print()
    print_provenance(provenance)

    if args.csv_dir:
        os.makedirs(args.csv_dir, exist_ok=True)
        for name, frame in report.items():
            frame.to_csv(os.path.join(args.csv_dir, f'{name}.csv'), index=False)
        print(f'\nwrote {", ".join(f"{n}.csv" for n in report)} to {args.csv_dir}')


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a usage error: one line 'error: ...', exit status 2
        main(sys.argv[1:])
