"""Why GAREN does (not) beat GAR here: how often the navigator scored and GAREN expanded the gold groups.

    python examples/diagnose.py --dataset scifact
    python examples/diagnose.py --dataset vaswani --navigator vote
    python examples/diagnose.py --dataset vaswani --json bench/results/diagnose-vaswani.json   # the README's figures

Prints, over queries with relevant documents: relevant documents and their groups, the share of gold groups the
navigator scored and the share GAREN expanded (paper Appendix C.3), the share of relevant documents each method
observed within the budget, and recall by hop distance from the first-stage top 20 (doc graph and group graph).
"""
import argparse
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402
from pyterrier_adaptive import GAR  # noqa: E402

from pyterrier_garen import GAREN, NAVIGATORS, check_outputs, prepare  # noqa: E402
from pyterrier_garen import cpu_components, evaluation_qrels  # noqa: E402
from pyterrier_garen.analysis import gold_group_diagnostics, gold_hops, judged_topics, recall_by_hop  # noqa: E402
from pyterrier_garen.datasets import load_dataset  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', required=True)
    parser.add_argument('--navigator', default='centroid', choices=NAVIGATORS)
    parser.add_argument('--budget', type=int, default=100)
    parser.add_argument('--json', metavar='PATH', help='also write the figures as JSON (what docs/regen.py renders)')
    args = parser.parse_args()
    check_outputs({'--json': args.json})  # before the run, not after it
    dataset = load_dataset(args.dataset)
    dataset.get_topics(), dataset.get_qrels()  # a bad query or judgement line fails now, not after the offline steps
    qrels = evaluation_qrels(dataset)
    # the queries with a relevant document, as the sweeps': the counts and means below were over every query
    topics = judged_topics(dataset, qrels)
    if topics.empty:
        raise SystemExit(f'error: none of the {len(dataset.get_topics())} queries of {args.dataset} has a relevant '
                         'document (a label above 0) in the qrels, so there is no gold group to diagnose')
    prepared = prepare(dataset)
    reranker, navigator = cpu_components(prepared, navigator=args.navigator)
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    garen = GAREN(reranker, prepared.groups, navigator, budget=args.budget, trace=True)
    runs = {'BM25': first[first['rank'] < args.budget], 'GAR': GAR(reranker, prepared.groups, num_results=args.budget,
                                                                   batch_size=16)(first),
            'GAREN': garen(first)}
    diag = gold_group_diagnostics(garen.last_trace, prepared.groups, qrels)
    diag = diag[diag.gold_groups > 0]
    print(f'{args.dataset}: {len(diag)} queries; {diag.gold_groups.mean():.2f} gold groups per query; '
          f'navigator scored {diag.scored.sum() / diag.gold_groups.sum():.1%} of them, '
          f'GAREN expanded {diag.selected.sum() / diag.gold_groups.sum():.1%}')
    hops = gold_hops(prepared.groups, first, qrels)
    by_hop = {}
    for column in ('doc_hop', 'group_hop'):
        table = recall_by_hop(hops, runs, hop_column=column)
        print(f'\nrecall of relevant documents by {column} (from the BM25 top 20):')
        by_hop[column] = table.pivot(index='hop', columns='system', values='recall').round(3) \
            .join(table.drop_duplicates('hop').set_index('hop').gold)
        print(by_hop[column].to_string())
    observed = {name: float(run.groupby('qid').size().mean()) for name, run in runs.items()}
    print('\nmean documents returned per query:', {k: round(v, 1) for k, v in observed.items()})
    stats = pd.Series(garen.last_stats[['groups_scored', 'navigator_calls', 'reranker_calls']].mean()).round(1)
    print(stats.to_string())
    if args.json:
        import datetime
        import json
        import shlex
        import sys
        record = {'command': shlex.join(['python', 'examples/diagnose.py', *sys.argv[1:]]),
                  'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d'),
                  'load_average': round(os.getloadavg()[0], 1), 'cores': os.cpu_count(), 'dataset': args.dataset,
                  'queries': len(diag), 'gold_groups_per_query': float(diag.gold_groups.mean()),
                  'scored_share': float(diag.scored.sum() / diag.gold_groups.sum()),
                  'expanded_share': float(diag.selected.sum() / diag.gold_groups.sum()),
                  'stats': {k: float(v) for k, v in stats.items()},
                  'recall_by_hop': {c: json.loads(t.to_json(orient='index')) for c, t in by_hop.items()}}
        with open(args.json, 'w') as f:
            f.write(json.dumps(record, indent=1) + '\n')
        print(f'wrote {args.json}')


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        main()
