"""GAREN and its baselines as a function of reranker strength (simulated rerankers of controlled noise, and MiniLM).

    python examples/strength_sweep.py --dataset cranfield --workdir work/cranfield --out cranfield.csv \\
        --plot cranfield.png
    python examples/strength_sweep.py --dataset scifact --workdir work/scifact --out scifact.csv \\
        --sigmas 0.25 0.5 1 2 --noise-seeds 0 1 --partition-seeds 42 43
    python examples/strength_sweep.py --dataset vaswani --workdir work/vaswani --out vaswani.csv \\
        --budgets 50 100 200 400 --fusion 0.1

The simulated reranker (pyterrier_garen.analysis.SimulatedReranker) scores a document by its relevance label plus
a fixed Gaussian draw of standard deviation sigma: an ANALYSIS INSTRUMENT that reads the qrels, not a retrieval
model. Writes one CSV row per system x reranker x noise seed x partition seed x budget (system, reranker, sigma,
noise_seed, partition_seed, budget, nDCG@10, R@100), prints the mean (min-max over seeds) per system and strength
(per budget when there are several), paired t-tests against GAREN (per-query values averaged over seeds), a line
under the header for GAREN+ and for any variant with a first-stage fusion of its own (as compare's legend: which
rows have help the others lack), and with --plot draws each measure against sigma with the seed spread as a band
(one PNG per budget when there are several). --fusion W appends the same first-stage fusion (FirstStageFusion) to
every system, GAREN+ included in place of its own fusion; --tail-fusion T makes it depth-aware (weight W in the top
--fusion-head documents, T below them; --observed-fusion U adds the search's observation order there; every system
alike); --head-rerank N re-ranks every system's top N once more with its reranker before that fusion (HeadReranker);
--final-order sets every window search's final order; --listwise sees every reranker as a listwise one
(analysis.ListwiseView: the same verdicts, but scores that only order each call's documents, as an LLM's ranking),
so that final order 'auto' merges window positions ('dropped'), and GAR, which compares scores across its batches,
warns. Offline
artifacts (BM25 index, MiniLM vectors, graph, one partition per Leiden seed) are built once in --workdir and reused.
A budget of at least the collection's documents warns (--strict: an error). Beside the CSV, OUT.json records the
command, the code version, the numerics packages and the collection's fingerprint (examples/sweep_verdict.py
prints them, and says when the CSVs it reads were written by different code); OUT.perquery.csv.gz (OUT without
.csv) holds every query's values, for paired tests across collections (sweep_verdict.py --paired).
"""
import argparse
import os
import sys
import warnings

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')

import pandas as pd  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import analysis  # noqa: E402
from pyterrier_garen.datasets import load_dataset  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', help='collection folder, name under $GAREN_DATA, or irds:<id> '
                                          '(default: the synthetic collection, not a benchmark)')
    parser.add_argument('--workdir', required=True, help='folder for offline artifacts (reused across runs)')
    parser.add_argument('--out', required=True, help='CSV of the sweep table')
    parser.add_argument('--plot', help='PNG of nDCG@10 and R@100 against sigma')
    parser.add_argument('--tests', help='also write the paired t-tests as CSV')
    parser.add_argument('--sigmas', type=float, nargs='*', default=[0.25, 0.5, 1.0, 2.0],
                        help='noise levels of the simulated reranker (none given: MiniLM only)')
    parser.add_argument('--noise-seeds', type=int, nargs='+', default=[0, 1])
    parser.add_argument('--partition-seeds', type=int, nargs='+', default=[42, 43])
    parser.add_argument('--no-minilm', action='store_true', help='skip the MiniLM reranker')
    parser.add_argument('--systems', nargs='+', default=list(analysis.SWEEP_SYSTEMS), choices=garen.SYSTEMS,
                        metavar='SYSTEM', help='registered systems (default: those the sweep declares)')
    budgets = parser.add_mutually_exclusive_group()
    budgets.add_argument('--budget', type=int, help='documents reranked per query (default: 100)')
    budgets.add_argument('--budgets', type=int, nargs='+', help='several budgets in one sweep, e.g. 50 100 200')
    analysis.add_fusion_arguments(parser)
    parser.add_argument('--final-order', choices=['auto', 'paper', 'score', 'dropped'],
                        help="every window search's final_order (default: each search's own default)")
    parser.add_argument('--listwise', action='store_true',
                        help='every reranker seen as a listwise one (analysis.ListwiseView): scores that only order '
                             "each call's documents, as an LLM's ranking; final order 'auto' is then 'dropped'")
    parser.add_argument('--strict', action='store_true',
                        help='turn warnings (a budget of at least the collection size, or one that leaves a search '
                             'no adaptive step) into errors')
    parser.add_argument('--queries', type=int, help='only the first N judged queries')
    parser.add_argument('--navigator', default='centroid', choices=garen.NAVIGATORS)
    parser.add_argument('--variant', action='append', default=[], metavar='NAME:KEY=VALUE,...',
                        help='an extra GAREN configuration, e.g. "GAREN-t2:tau_switch=2" (repeatable)')
    parser.add_argument('--graph', default='dense', choices=['dense', 'bm25'],
                        help='k-NN graph for the groups (bm25 needs no MiniLM: use with --no-minilm --navigator vote)')
    parser.add_argument('--verbose', action='store_true')
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    if not args.sigmas and args.no_minilm:
        parser.error('--sigmas without values runs MiniLM only, and --no-minilm leaves no reranker')

    budget_list = args.budgets or [100 if args.budget is None else args.budget]
    flags = {'sigmas': '--sigmas', 'noise_seeds': '--noise-seeds', 'partition_seeds': '--partition-seeds',
             'budgets': '--budgets' if args.budgets else '--budget', 'num_queries': '--queries',
             'variants': '--variant', 'systems': '--systems'}
    try:  # before any artifact is built
        variants = analysis.parse_variants(args.variant)
        analysis.check_sweep_arguments(sigmas=args.sigmas, noise_seeds=args.noise_seeds,
                                       partition_seeds=args.partition_seeds, budgets=budget_list,
                                       num_queries=args.queries, names=flags, variants=variants,
                                       systems=args.systems)
    except ValueError as ex:
        parser.error(str(ex))
    garen.check_outputs({'--out': args.out, '--out (its per-query values)': str(analysis.per_query_path(args.out)),
                         '--plot': args.plot, '--tests': args.tests})  # before the sweep, not after it
    if args.dataset:
        dataset = load_dataset(args.dataset)
    else:
        from pyterrier_garen.synthetic import make_synthetic
        dataset = make_synthetic(os.path.join(args.workdir, 'collection'))
    dataset.get_topics(), dataset.get_qrels()  # a bad query or judgement line fails now, not after the offline steps
    analysis.judged_topics(dataset, garen.evaluation_qrels(dataset), context='strength_sweep')  # nothing to measure
    prepared = garen.prepare(dataset, args.workdir, graph=args.graph, vectors=args.graph == 'dense',
                             verbose=args.verbose)
    args.tail_fusion, args.observed_fusion = analysis.resolve_fusion(args.fusion, args.tail_fusion,
                                                                     args.observed_fusion)  # what ran, as printed
    with warnings.catch_warnings():
        if args.strict:
            warnings.simplefilter('error', UserWarning)
        try:
            table, perquery = analysis.strength_sweep(
                prepared, sigmas=args.sigmas, noise_seeds=args.noise_seeds, partition_seeds=args.partition_seeds,
                minilm=not args.no_minilm, systems=args.systems, budgets=budget_list, num_queries=args.queries,
                navigator=args.navigator, variants=variants, fusion=args.fusion,
                final_order=args.final_order, tail_fusion=args.tail_fusion, fusion_head=args.fusion_head,
                observed_fusion=args.observed_fusion, listwise=args.listwise, head_rerank=args.head_rerank,
                verbose=args.verbose)
        except UserWarning as ex:  # only with --strict: a user error, exit status 2 as the command line's
            print(f'error: {ex} (--strict turns warnings into errors)', file=sys.stderr)
            raise SystemExit(2) from ex
    table.to_csv(args.out, index=False)
    # the per-query values beside it, for paired tests over collections (examples/sweep_verdict.py --paired)
    perquery.to_csv(analysis.per_query_path(args.out), index=False, compression={'method': 'gzip', 'mtime': 0})
    label = args.dataset or 'SYNTHETIC collection (not a benchmark)'
    # beside the CSV: the command, code, packages and collection that wrote it (examples/sweep_verdict.py shows it)
    side = garen.write_sidecar(args.out, command=garen.command_line([__file__, *argv]), collection=label,
                               collection_sha256=garen.collection_fingerprint(dataset),
                               documents=len(prepared.groups), queries=int(perquery.qid.nunique()),
                               vectors_precision=analysis.vectors_precision(prepared))
    extra = ''.join(f', {part}' for part in analysis.describe_fusion(args.fusion, args.tail_fusion, args.fusion_head,
                                                                       args.observed_fusion,
                                                                       head_rerank=args.head_rerank)) + \
        (f', final order {args.final_order}' if args.final_order else '') + \
        (', every reranker seen as listwise' if args.listwise else '')
    print(f'{label}: {perquery.qid.nunique()} queries, budget {" ".join(map(str, budget_list))}, navigator '
          f'{args.navigator}{extra}; noise seeds {args.noise_seeds}, partition seeds {args.partition_seeds}')
    # which rows carry a first-stage fusion of their own (GAREN+, a variant), as compare's legend says it
    shared = bool(args.fusion or args.tail_fusion is not None or args.observed_fusion)
    for note in analysis.own_fusion_notes(args.systems, variants, shared=shared):
        print(f'\n{note}')
    with pd.option_context('display.width', 250, 'display.max_columns', 20, 'display.max_colwidth', 30):
        for measure in ('nDCG@10', 'R@100'):
            print(f'\n{measure}: mean (min-max over seeds)')
            print(analysis.sweep_summary(table, measure).to_string())
        if 'GAREN' in args.systems:
            tests = analysis.sweep_tests(perquery, baseline='GAREN')
            if args.tests:
                tests.to_csv(args.tests, index=False)
            print('\npaired t-tests against GAREN (per-query values averaged over seeds)')
            shown = tests[tests.system != 'GAREN'].assign(sigma=tests.sigma.map(lambda s: f'{s:g}'))
            print(shown.round(4).to_string(index=False))
    plots = []
    if args.plot:
        root, ext = os.path.splitext(args.plot)
        for budget in budget_list:
            path = args.plot if len(budget_list) == 1 else f'{root}.b{budget}{ext}'
            analysis.sweep_plot_file(table[table.budget == budget], path, title=f'{label}, budget {budget}')
            plots.append(path)
    print(f'\nwrote {args.out} (its provenance in {side}), its per-query values '
          f'{analysis.per_query_path(args.out)}' + (f' and {" ".join(plots)}' if plots else ''))


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        main(sys.argv[1:])
