"""Final order over budgets: each window search with final_order='paper' and its alternatives, budget by budget.

    python examples/final_order.py --dataset cranfield --workdir W/cranfield --out final_order.csv \\
        --budgets 100 200 --sigmas 0.5 1 --minilm
    python examples/final_order.py --dataset cranfield --workdir W/cranfield --out listwise.csv \\
        --budgets 200 --sigmas 0.5 --listwise --orders paper dropped --systems GAREN SlideGAR
    python examples/final_order.py --dataset cranfield --workdir W/cranfield --out feedback.csv \\
        --budgets 100 --sigmas 0.25 2 100 --systems GAREN GAREN+ --orders auto --feedback 1 3

All systems take the same PISA BM25 top 1000 and the MiniLM centroid navigator (GAREN); the reranker is the
simulated one (pyterrier_garen.analysis.SimulatedReranker, noise seed 0: an ANALYSIS INSTRUMENT that reads the
qrels), MiniLM with --minilm, each seen as a listwise reranker (analysis.ListwiseView) with --listwise. Appends one
CSV row per (budget, reranker, system:final_order) as it goes (so an interrupted run keeps what it measured; run
again, it skips the rows --out holds) and prints the table of each measure at the end, for this collection's rows.
A --out written with other columns is refused. GAR orders by score already and runs once per reranker and budget.
"""
import argparse
import inspect
import os
import sys
import time

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')

import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from ir_measures import R, nDCG  # noqa: E402

from pyterrier_garen import analysis  # noqa: E402
from pyterrier_garen.datasets import load_dataset  # noqa: E402

SYSTEMS = ('GAR', 'Rerank', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+')  # the default; any registered reranking system


def searches(name, build, order, feedback):
    """``{row name: pipeline}`` for one system (built by ``build_systems``), final order and feedback weights."""
    pipeline = build([name], order)[name]
    out = {f'{name}:{order}': pipeline}
    for beta in feedback:  # GAREN / GAREN+ with reranker feedback in navigation, otherwise the same
        first, search = pt.inspect.subtransformers(pipeline)['transformers']  # first stage >> the search
        params = {k: getattr(search, k) for k in inspect.signature(garen.GAREN).parameters}
        out[f'{name}-fb{beta:g}:{order}'] = first >> garen.GAREN(**{**params, 'feedback': beta})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', required=True)
    parser.add_argument('--workdir', required=True)
    parser.add_argument('--out', required=True, help='CSV, appended to')
    parser.add_argument('--budgets', type=int, nargs='+', default=[50, 100, 200, 400])
    parser.add_argument('--sigmas', type=float, nargs='+', default=[0.5, 1.0])
    parser.add_argument('--minilm', action='store_true', help='also the MiniLM reranker')
    parser.add_argument('--listwise', action='store_true', help='every reranker seen as listwise (ListwiseView)')
    parser.add_argument('--systems', nargs='+', default=list(SYSTEMS),
                        choices=garen.system_names(reranks=True))
    parser.add_argument('--orders', nargs='+', default=['paper', 'score'],
                        choices=['auto', 'paper', 'score', 'dropped'])
    parser.add_argument('--feedback', type=float, nargs='*', default=[], help="GAREN's feedback weights to add")
    parser.add_argument('--queries', type=int, help='only the first N judged queries')
    args = parser.parse_args(argv)
    try:  # before any artifact is built
        analysis.check_sweep_arguments(sigmas=args.sigmas, budgets=args.budgets, num_queries=args.queries,
                                       names={'sigmas': '--sigmas', 'sigma': '--sigmas', 'budgets': '--budgets',
                                              'budget': '--budgets', 'num_queries': '--queries'})
    except ValueError as ex:
        parser.error(str(ex))
    garen.check_outputs({'--out': args.out})
    # appended to cell by cell: a rerun after an interruption skips the cells the file holds
    out = analysis.AppendedTable(args.out, ['collection', 'budget', 'reranker', 'system', 'nDCG@10', 'R@100',
                                            'seconds'], keys=['collection', 'budget', 'reranker', 'system'])
    dataset = load_dataset(args.dataset)
    dataset.get_topics(), dataset.get_qrels()  # a bad query or judgement line fails now, not after the offline steps
    prepared = garen.prepare(dataset, args.workdir)
    qrels = garen.evaluation_qrels(dataset)
    stored = dataset.get_qrels()  # BRIGHT's excluded documents (label -100) leave every run, as in compare's
    excluded = bool((stored.label == -100).any())
    topics = analysis.judged_topics(dataset, qrels, args.queries, context='final_order')
    source = pt.Transformer.from_df(prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics))
    encoder = garen.minilm_encoder()
    navigator = garen.CentroidNavigator(prepared.groups, prepared.vectors, encoder)
    rerankers = [(f'sigma={s:g}', analysis.SimulatedReranker(qrels, noise=s, seed=0)) for s in args.sigmas]
    if args.minilm:
        rerankers.append(('MiniLM', garen.VectorScorer(prepared.vectors, encoder)))
    if args.listwise:
        rerankers = [(f'{name} listwise', analysis.ListwiseView(r)) for name, r in rerankers]
    for budget in args.budgets:
        for kind, reranker in rerankers:
            def build(names, order, reranker=reranker, budget=budget):
                return garen.build_systems(prepared, reranker, navigator, budget=budget, first_stage=source,
                                           systems=names, final_order=order)
            runs = {}
            for name in args.systems:
                if name == 'GAR':  # orders by score already
                    runs['GAR'] = build(['GAR'], None)['GAR']
                    continue
                for order in args.orders:
                    runs.update(searches(name, build, order, args.feedback if name.startswith('GAREN') else []))
            for name, pipeline in runs.items():
                if out.holds(collection=args.dataset, budget=budget, reranker=kind, system=name):
                    print(f'{args.dataset} {budget} {kind} {name}: in {args.out} already (kept)', flush=True)
                    continue
                start = time.time()
                if excluded:
                    pipeline = pipeline >> garen.RemoveExcluded(stored)
                values = pt.Experiment([pipeline], topics, qrels, [nDCG @ 10, R @ 100], names=[name],
                                       validate='ignore').iloc[0]
                row = pd.DataFrame([{'collection': args.dataset, 'budget': budget, 'reranker': kind, 'system': name,
                                     'nDCG@10': values['nDCG@10'], 'R@100': values['R@100'],
                                     'seconds': round(time.time() - start, 1)}])
                out.append(row)
                print(row.to_string(header=False, index=False), flush=True)
    table = pd.read_csv(args.out, dtype={'collection': str})
    table = table[table.collection == args.dataset]  # the file may hold other collections' rows too
    with pd.option_context('display.width', 250, 'display.max_rows', 500):
        for measure in ('nDCG@10', 'R@100'):
            print(f'\n{measure}')
            print(table.pivot_table(index=['reranker', 'system'], columns='budget', values=measure,
                                    sort=False).round(4).to_string())


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        main(sys.argv[1:])
