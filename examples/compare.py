"""GAREN vs. its baselines in one pt.Experiment, on the CPU default components (MiniLM, extractive summaries).

    python examples/compare.py                          # offline synthetic collection (seconds; not a benchmark)
    python examples/compare.py --dataset ../shared/data/scifact --out scifact.csv
    python examples/compare.py --dataset irds:beir/scifact/test --budget 100

Offline artifacts (BM25 index, vectors, graph, groups) are built once under $GAREN_CACHE (default
~/.cache/pyterrier-garen) and reused.
"""
import argparse
import os
import sys

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402

from pyterrier_garen import SYSTEMS, compare  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', help='collection folder, name under $GAREN_DATA, or irds:<id> '
                                          '(default: the synthetic collection)')
    parser.add_argument('--budget', type=int, default=100, help='documents reranked per query (default 100)')
    parser.add_argument('--out', help='also write the table as CSV (name, nDCG@10, R@100)')
    parser.add_argument('--queries', type=int, help='only the first N queries')
    parser.add_argument('--navigator', default='centroid', choices=['centroid', 'summary', 'vote'])
    parser.add_argument('--systems', nargs='+', default=SYSTEMS, choices=SYSTEMS)
    parser.add_argument('--workdir', help='folder for offline artifacts')
    parser.add_argument('--verbose', action='store_true')
    args = parser.parse_args(argv)

    label = args.dataset or 'SYNTHETIC collection (generated, not a benchmark)'
    print(f'dataset: {label}; budget {args.budget}; navigator {args.navigator}; CPU components (MiniLM)',
          flush=True)
    table = compare(args.dataset, budget=args.budget, workdir=args.workdir, num_queries=args.queries,
                    navigator=args.navigator, systems=args.systems, verbose=args.verbose)
    with pd.option_context('display.width', 200, 'display.max_columns', 20):
        print(table.round(4).to_string(index=False))
    print(f'labels: {table.attrs.get("labels")}')
    if not args.dataset:
        print('NOTE: synthetic data; run with --dataset for real numbers.')
    if args.out:
        table[['name', 'nDCG@10', 'R@100']].to_csv(args.out, index=False)
        print(f'wrote {args.out}')


if __name__ == '__main__':
    main(sys.argv[1:])
