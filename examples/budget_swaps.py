"""Why one system's R@100 moved as its budget grew: the documents only the larger budget re-ranked ("late"), and the
earlier ones they pushed out of the top 100 (pyterrier_garen.analysis.budget_swaps).

    python examples/budget_swaps.py --dataset cranfield --workdir W/cranfield --partition-seed 43
    python examples/budget_swaps.py --dataset vaswani --system GAR --budgets 100 200 400 --sigma 0.25

The system (a registered name, default GAREN+) runs at each --budgets value on the same PISA BM25 top 1000 with the
MiniLM reranker, or with the simulated one (--sigma S, --noise-seed N: an analysis instrument that reads the qrels),
and the MiniLM centroid navigator over the Leiden partition of --partition-seed. --fusion W appends the shared
first-stage fusion stage of compare and strength_sweep.py (alone: GAREN+'s own stage), so a row here is a row of
their tables. For each pair of consecutive budgets it prints R@--depth at both, how many queries the larger search
continued (its first iterations re-ranked exactly the smaller run's documents), the late documents per query in the
top --depth and in the top 10, the relevant documents they brought in (gained), the relevant documents the smaller
run returned below --depth that the larger one lifts into it (promoted), and the relevant documents of the smaller
run's top --depth that fell below it (lost). Each query's R@depth changes by (gained + promoted - lost) / relevant.
"""
import argparse
import dataclasses
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')

import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import analysis  # noqa: E402
from pyterrier_garen.datasets import load_dataset, remove_excluded  # noqa: E402


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', required=True, help='a collection folder, a name under $GAREN_DATA, or irds:<id>')
    parser.add_argument('--workdir', help="prepare()'s folder (default: the cache)")
    parser.add_argument('--system', default='GAREN+')
    parser.add_argument('--budgets', type=int, nargs='+', default=[100, 200])
    parser.add_argument('--depth', type=int, default=100, help='the recall cut-off (default 100)')
    parser.add_argument('--partition-seed', type=int, default=42)
    parser.add_argument('--sigma', type=float, help='the simulated reranker at this noise instead of MiniLM')
    parser.add_argument('--noise-seed', type=int, default=0)
    parser.add_argument('--fusion', type=float, default=0.1,
                        help='the shared fusion stage of every comparison (default 0.1, as the committed sweeps)')
    args = parser.parse_args(argv)
    budgets = sorted(set(args.budgets))
    if len(budgets) < 2:
        parser.error('give at least two --budgets to compare')
    if args.depth < 1:
        parser.error(f'--depth {args.depth}: the recall cut-off must be at least 1')
    dataset = load_dataset(args.dataset)
    dataset.get_topics(), dataset.get_qrels()  # a bad query or judgement line fails now, not after the offline steps
    runs, qrels, topics = run_budgets(dataset, args.workdir, args.system, budgets, partition_seed=args.partition_seed,
                                      sigma=args.sigma, noise_seed=args.noise_seed, fusion=args.fusion)
    relevant = qrels[qrels.label > 0]
    label = f'sigma={args.sigma:g} (noise seed {args.noise_seed})' if args.sigma is not None else 'MiniLM'
    print(f'{args.dataset}: {args.system}, {label}, partition {args.partition_seed}, fusion {args.fusion:g}; '
          f'{len(topics)} queries\n')
    print(f'| budgets | R@{args.depth} before | after | continued | late | late in top 10 | gained | promoted '
          '| lost |')
    print('|---|---|---|---|---|---|---|---|---|')
    for small, large in zip(budgets, budgets[1:]):
        swaps = analysis.budget_swaps(runs[small], runs[large], relevant, depth=args.depth)
        values = [recall(runs[b], relevant, args.depth) for b in (small, large)]
        continued = swaps.prefix.dropna()
        print(f'| {small} -> {large} | {values[0]:.4f} | {values[1]:.4f} | {int(continued.sum())} of {len(continued)} '
              f'| {swaps.late.mean():.2f} | {swaps.late_head.mean():.2f} | {int(swaps.gained.sum())} '
              f'| {int(swaps.promoted.sum())} | {int(swaps.lost.sum())} |')


def run_budgets(dataset, workdir, name, budgets, *, partition_seed=42, sigma=None, noise_seed=0, fusion=0.1):
    """``({budget: run}, qrels, topics)``: system ``name`` at each budget, as a sweep row of it would run."""
    prepared = garen.prepare(dataset, workdir)
    groups = analysis.partition_groups(prepared, partition_seed)
    prepared = dataclasses.replace(prepared, groups=groups)
    reranker, navigator = garen.cpu_components(prepared)
    qrels = garen.evaluation_qrels(dataset)
    stored = dataset.get_qrels()
    if sigma is not None:
        reranker = analysis.SimulatedReranker(qrels, noise=sigma, seed=noise_seed)
    topics = analysis.judged_topics(dataset, qrels, context='budget_swaps')
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    source = pt.Transformer.from_df(first)
    runs = {}
    for budget in budgets:
        system = garen.build_systems(prepared, reranker, navigator, budget=budget, first_stage=source,
                                     systems=[name], fusion=fusion)[name]
        run = system(topics)
        runs[budget] = remove_excluded(run, stored) if (stored.label == -100).any() else run
    return runs, qrels, topics


def recall(run, relevant, depth):
    """R@depth by ir_measures (the run ordered by its score, as the sweeps evaluate it), averaged over the queries
    with relevant documents; a query the run holds nothing for counts 0."""
    import ir_measures
    from ir_measures import R
    judged = pd.DataFrame({'query_id': relevant.qid.astype(str), 'doc_id': relevant.docno.astype(str),
                           'relevance': relevant.label.astype(int)})
    frame = pd.DataFrame({'query_id': run.qid.astype(str), 'doc_id': run.docno.astype(str),
                          'score': run.score.astype(float)})
    values = {m.query_id: m.value for m in ir_measures.iter_calc([R @ depth], judged, frame)}
    qids = judged.query_id.unique()
    return sum(values.get(q, 0.) for q in qids) / len(qids)


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        main()
