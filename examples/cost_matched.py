"""Issue 16's margin at no more reranker work: each baseline against --system given at most that baseline's cost.

    python bench/reranker_load.py --budgets 50 100 200 400 --systems Rerank GAR SlideGAR RGS GAREN GAREN+ \\
        --listwise --out costs.csv
    python examples/cost_matched.py cranfield=c.csv vaswani=v.csv scifact=s.csv --costs costs.csv --paired

A sweep's budget counts distinct documents, as the papers count it, but the searches differ in how often they show
the reranker the same document (RGS re-ranks its queue after every expansion), and with an LLM reranker every
document shown is prompt text. So for every baseline at every budget, and in each collection, this takes --system at
its largest budget of the CSVs whose documents sent per query (--costs, written by bench/reranker_load.py --out)
are at most the baseline's (times 1 + --slack), and compares the two on the mean over the collections
(analysis.cost_matched_margins). A cell is left out when the system's smallest budget already costs more than the
baseline in some collection. With --paired, also each margin's p-value, interval and verdict, as sweep_verdict.py
--paired gives them. Measure the costs with the sweep's --listwise and --head-rerank. GAR's and GAREN's counts
are set by the budget; SlideGAR's and most of all RGS's depend on the reranker, so a cost table may give a row per
reranker (bench/reranker_load.py --sigma S writes 'sigma=S' in its reranker column, MiniLM 'MiniLM'); a row without
a reranker holds for every reranker without one of its own. Then each system's value at every budget
(analysis.budget_values): where a reranker's top 10 falls as every system's budget grows, the system's larger
matched budget costs it top-10 quality. Last comes where the CSVs came from. Reads only the CSVs: nothing is run.
"""
import argparse
import os
import sys

import pandas as pd

from pyterrier_garen import analysis, check_outputs

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # the sibling script's helpers
from sweep_verdict import (add_paired_arguments, load_inputs, markdown, parse_checked, print_gaps,  # noqa: E402
                           parse_files, print_provenance, signed)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('files', nargs='+', metavar='COLLECTION=PATH[,PATH...]')
    parser.add_argument('--costs', required=True, nargs='+',
                        help='documents sent per query (bench/reranker_load.py --out); several files are joined')
    parser.add_argument('--system', default='GAREN+', help='the system given at most each baseline\'s cost')
    parser.add_argument('--baselines', nargs='+',
                        help='the baselines (default: GAR SlideGAR RGS, without --system)')
    parser.add_argument('--budgets', type=int, nargs='+', default=None,
                        help='the baselines\' budgets to compare at (default: every budget of the CSVs)')
    parser.add_argument('--rerankers', nargs='+', default=['sigma=0.25', 'sigma=0.5', 'sigma=1', 'MiniLM'],
                        help="rerankers compared ('sigma=S' or 'MiniLM')")
    parser.add_argument('--slack', type=float, default=0.0,
                        help='how much more the system may send, as a share of the baseline\'s cost (default 0)')
    parser.add_argument('--csv', help='also write the table as CSV')
    add_paired_arguments(parser, "each margin's p-value and verdict, from the per-query files beside the CSVs")
    args = parse_checked(parser, argv)
    files = parse_files(args.files)
    read = [p for paths in files.values() for p in paths]
    check_outputs({'--csv': args.csv}, inputs=read + [str(analysis.per_query_path(p)) for p in read] + args.costs)
    table, provenance, perquery = load_inputs(files, args.paired, args.system)
    try:
        costs = pd.concat([pd.read_csv(path, dtype={'collection': str}) for path in args.costs],  # '007' stays
                          ignore_index=True)
        margins = analysis.cost_matched_margins(table, costs, args.system, args.baselines, budgets=args.budgets,
                                                rerankers=args.rerankers, perquery=perquery, alpha=args.alpha,
                                                slack=args.slack)
    except (OSError, ValueError) as ex:
        raise SystemExit(f'error: {ex}') from ex
    collections = list(dict.fromkeys(table.collection))
    print(f'collections: {", ".join(collections)}; {args.system} at no more documents sent than each of '
          f'{", ".join(args.baselines)}' + (f' (+{args.slack:.0%})' if args.slack else '') + '\n')
    per = [c for c in margins.columns if c.startswith('delta:')]
    interval = ['low', 'high'] if perquery is not None else []
    print(markdown(signed(margins, ['delta', *per, *interval])))
    print_gaps(margins, table, [args.system, *args.baselines], args.budgets, args.rerankers,
               otherwise=f'in some collection {args.system}\'s smallest budget already sends more documents than '
                         'the baseline at each budget asked for (see the cost table; --slack allows more)')
    print(f'\nholds in {int(margins.holds.sum())} of {len(margins)} cells' +
          ('' if perquery is None else '; ' + ', '.join(f'{int((margins.verdict == v).sum())} {v}' for v in
                                                      ('ahead', 'tie', 'behind')) + f' at p < {args.alpha:g}'))
    print('\n**Each system\'s value by budget** (mean over the collections; analysis.budget_values)\n')
    for measure in ('nDCG@10', 'R@100'):
        values = analysis.budget_values(table, [args.system, *args.baselines], measure, rerankers=args.rerankers)
        print(f'{measure}\n')
        print(markdown(values))
        print()
    print_provenance(provenance)
    if args.csv:
        margins.to_csv(args.csv, index=False)
        print(f'\nwrote {args.csv}')


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a usage error: one line 'error: ...', exit status 2
        main(sys.argv[1:])
