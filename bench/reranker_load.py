"""Benchmark: what each system of `compare` asks of its reranker at one budget, counting repeats.

    python bench/reranker_load.py      # cranfield, vaswani, scifact; budgets 100 and 200
    python bench/reranker_load.py --collections cranfield --budgets 100 --queries 50

A budget counts distinct documents re-ranked per query, as the papers count it. The searches differ in how often
they show the reranker the same document: a window search carries its kept top into the next window, and RGS
re-ranks its queue again after every expansion. With an LLM reranker the cost is the documents sent (each one is
prompt text), so two systems of the same budget can differ in cost. For each collection and budget this runs every
system of `compare` (BM25 aside) with MiniLM as the reranker, through a counting stage, and prints per query (mean):
the reranker calls that held the query (one window each), the documents sent counting repeats, the distinct ones,
and the documents sent per distinct document. Artifacts are built once in the collection's workdir under
$GAREN_CACHE (the one `prepare` uses) and reused.
"""
import argparse
import os
from collections import defaultdict

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402

import pyterrier_garen as garen  # noqa: E402


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


def measure(collection: str, budgets, num_queries=None) -> pd.DataFrame:
    from _judged import judged_collection
    _, prepared, _, topics, _ = judged_collection(collection)
    if num_queries:
        topics = topics.head(num_queries)
    reranker, navigator = garen.cpu_components(prepared)
    names = [name for name in garen.SYSTEMS if name != 'BM25']
    rows = []
    for budget in budgets:
        for name in names:
            counting = CountingReranker(reranker)
            garen.build_systems(prepared, counting, navigator, budget=budget, systems=[name])[name](topics)
            qids = topics.qid.astype(str)
            calls = pd.Series([counting.calls[q] for q in qids])
            sent = pd.Series([counting.sent[q] for q in qids])
            distinct = pd.Series([len(counting.distinct[q]) for q in qids])
            rows.append({'collection': collection, 'budget': budget, 'system': name, 'calls': calls.mean(),
                         'sent': sent.mean(), 'distinct': distinct.mean(), 'sent_per_distinct': sent.sum() /
                         max(distinct.sum(), 1), 'queries': len(qids)})
    return pd.DataFrame(rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[2].strip().split('\n')[0])
    parser.add_argument('--collections', nargs='+', default=['cranfield', 'vaswani', 'scifact'])
    parser.add_argument('--budgets', nargs='+', type=int, default=[100, 200])
    parser.add_argument('--queries', type=int, default=None, help='the first N judged queries only (default: all)')
    args = parser.parse_args(argv)
    from _judged import measure_each
    table = measure_each(args.collections, measure, args.budgets, args.queries)
    print('per query (mean): reranker calls holding the query, documents sent (counting repeats), distinct documents, '
          'and documents sent per distinct document\n')
    for column in ('calls', 'sent', 'distinct', 'sent_per_distinct'):
        print(f'{column}\n')
        print(table.pivot_table(index=['collection', 'budget'], columns='system', values=column,
                                sort=False).round(2 if column == 'sent_per_distinct' else 1).to_string())
        print()


if __name__ == '__main__':
    main()
