"""Benchmark: how much of its budget RGS spends, and what spending the rest on the first stage does.

    python bench/rgs_backfill.py                                  # cranfield, vaswani, scifact; budgets 100 200 400
    python bench/rgs_backfill.py --collections cranfield --budgets 100 --sigmas 1
    python bench/rgs_backfill.py --bullet2      # issue 16's bullet 2 cells, beside the committed sweeps

RGS (``garen.RGS``) ends, as its reference code does, when no document of its queue has an unseen neighbour left,
with the rest of the budget unspent. ``RGS(backfill=True)`` lets the next unseen first-stage documents enter the
queue there and the search go on. For each collection, budget and reranker (the simulated reranker at each sigma,
noise seed 0, and MiniLM), this prints the documents RGS re-ranked per query (mean), and nDCG@10 and R@100 over the
judged queries, without and with the backfill. No fusion: RGS's own list. Artifacts are built once in the
collection's workdir under $GAREN_CACHE (the one ``prepare`` uses) and reused.
"""
import argparse
import os

os.environ.setdefault('HF_HUB_OFFLINE', '1')

import ir_measures  # noqa: E402
import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402
from ir_measures import R, nDCG  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import LocalDataset, analysis, data_dir  # noqa: E402


def measure(collection: str, budgets, sigmas, minilm: bool = True) -> pd.DataFrame:
    from _judged import judged_collection, score
    _, prepared, qrels, topics, judged = judged_collection(collection)
    source = pt.Transformer.from_df(prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics))
    rerankers = [(f'sigma={s:g}', analysis.SimulatedReranker(qrels, noise=s, seed=0)) for s in sigmas]
    if minilm:
        rerankers.append(('MiniLM', garen.cpu_components(prepared, navigator='vote')[0]))
    rows = []
    for budget in budgets:
        for kind, reranker in rerankers:
            row = {'collection': collection, 'budget': budget, 'reranker': kind}
            for backfill, tag in ((False, 'ref'), (True, 'fill')):
                run = (source >> garen.RGS(reranker, prepared.graph, budget=budget, backfill=backfill))(topics)
                scores = score(run, judged, [nDCG @ 10, R @ 100])
                sizes = run.groupby('qid').size().reindex(topics.qid.astype(str)).fillna(0)
                row.update({f'docs_{tag}': sizes.mean(), f'short_{tag}': int((sizes < budget).sum()),
                            f'nDCG@10_{tag}': scores[nDCG @ 10], f'R@100_{tag}': scores[R @ 100]})
            row['nDCG@10_delta'] = row['nDCG@10_fill'] - row['nDCG@10_ref']
            row['R@100_delta'] = row['R@100_fill'] - row['R@100_ref']
            rows.append(row)
    return pd.DataFrame(rows)


#: issue 16's bullet 2 as docs/results.md judges it (seventeenth pass): the committed sweeps of each collection
SWEEPS = {'cranfield': ['cranfield.csv', 'cranfield-seeds23.csv'],
          'scifact': ['scifact-simulated.csv', 'scifact-seeds23.csv', 'scifact-minilm.csv'],
          'vaswani': ['vaswani.csv', 'vaswani-seeds23.csv']}
SWEEP_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'results', 'sweeps')


def _per_query(run, judged, qids):
    """Mean nDCG@10 and R@100 over ``qids``, a query missing from the run counting 0 (as strength_sweep does)."""
    found = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(
        [nDCG @ 10, R @ 100], judged, run.rename(columns={'qid': 'query_id', 'docno': 'doc_id'}))}
    return {name: sum(found.get((q, name), 0.0) for q in qids) / len(qids) for name in ('nDCG@10', 'R@100')}


def replica(budgets=(100, 200), sigmas=(0.25, 0.5, 1.0), noise_seeds=(0, 1, 2, 3), fusion=0.1) -> pd.DataFrame:
    """Bullet 2's cells with RGS as the reference code and with the backfill, under the shared fusion stage the
    sweeps gave every system (``--fusion 0.1``: GAREN+'s whole stage), on the queries the sweeps used (SciFact's
    simulated rows: its first 100 judged queries). One row per collection, budget, reranker and noise seed, with
    RGS, GAR and SlideGAR as the committed sweeps recorded them."""
    tail, observed = analysis.resolve_fusion(fusion)
    rows = []
    for collection, files in SWEEPS.items():
        committed = analysis.load_sweeps({collection: [os.path.join(SWEEP_DIR, f) for f in files]})
        committed = committed[committed.budget.isin(budgets)]
        dataset = LocalDataset(data_dir(collection))
        prepared = garen.prepare(dataset)
        qrels = garen.evaluation_qrels(dataset)
        judged = qrels.rename(columns={'qid': 'query_id', 'docno': 'doc_id', 'label': 'relevance'})
        minilm = garen.cpu_components(prepared, navigator='vote')[0]
        rerankers = [('simulated', s, n) for s in sigmas for n in noise_seeds] + [('MiniLM', float('nan'), None)]
        for kind, sigma, seed in rerankers:
            topics = analysis.judged_topics(dataset, qrels, 100 if collection == 'scifact' and seed is not None
                                            else None)
            qids = topics.qid.astype(str).tolist()
            first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
            stage = garen.FirstStageFusion(first, fusion, tail_weight=tail, observed_weight=observed)
            reranker = minilm if seed is None else analysis.SimulatedReranker(qrels, noise=sigma, seed=seed)
            for budget in budgets:
                row = {'collection': collection, 'budget': budget,
                       'reranker': 'MiniLM' if seed is None else f'sigma={sigma:g}', 'noise_seed': seed}
                here = committed[(committed.reranker == kind) & (committed.budget == budget)]
                here = here[here.sigma.isna()] if seed is None else here[(here.sigma == sigma)
                                                                        & (here.noise_seed == seed)]
                for backfill, tag in ((False, 'ref'), (True, 'fill')):
                    search = pt.Transformer.from_df(first) >> garen.RGS(reranker, prepared.graph, budget=budget,
                                                                         backfill=backfill) >> stage
                    values = _per_query(search(topics), judged, qids)
                    row.update({f'{m}_{tag}': v for m, v in values.items()})
                for measure in ('nDCG@10', 'R@100'):
                    means = here.groupby('system')[measure].mean()
                    row.update({f'{measure}_{name}': means.get(name) for name in ('RGS', 'GAR', 'SlideGAR')})
                rows.append(row)
                print(row, flush=True)
    return pd.DataFrame(rows)


def replica_summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per budget, reranker and measure: means over noise seeds, then over collections (the verdict's reading)."""
    per = rows.groupby(['collection', 'budget', 'reranker']).mean(numeric_only=True).groupby(
        ['budget', 'reranker']).mean(numeric_only=True)
    out = []
    for (budget, reranker), row in per.iterrows():
        for measure in ('nDCG@10', 'R@100'):
            other = max(('GAR', 'SlideGAR'), key=lambda name: row[f'{measure}_{name}'])
            best = row[f'{measure}_{other}']
            out.append({'budget': budget, 'reranker': reranker, 'measure': measure,
                        'RGS_committed': row[f'{measure}_RGS'], 'RGS_ref': row[f'{measure}_ref'],
                        'RGS_fill': row[f'{measure}_fill'], 'other': other, 'other_value': best,
                        'best_before': 'RGS' if row[f'{measure}_ref'] > best else other,
                        'best_with_fill': 'RGS' if row[f'{measure}_fill'] > best else other})
    return pd.DataFrame(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--collections', nargs='+', default=['cranfield', 'vaswani', 'scifact'])
    parser.add_argument('--budgets', type=int, nargs='+', default=[100, 200, 400])
    parser.add_argument('--sigmas', type=float, nargs='*', default=[0.25, 0.5, 1.0])
    parser.add_argument('--no-minilm', action='store_true', help='skip the MiniLM reranker')
    parser.add_argument('--bullet2', action='store_true',
                        help="instead: issue 16's bullet 2 cells (budgets 100 and 200, sigma .25/.5/1 with noise "
                             'seeds 0-3, MiniLM; the shared fusion 0.1), RGS without and with the backfill, beside '
                             'the committed sweeps')
    args = parser.parse_args(argv)
    if args.bullet2:
        summary = replica_summary(replica())
        print('RGS_committed: RGS in the committed sweeps; RGS_ref: recomputed here; RGS_fill: backfill=True; other: '
              'the better of GAR and SlideGAR (their means); best_*: the best baseline without and with the backfill')
        print(summary.round(4).to_string(index=False))
        return summary
    table = pd.concat([measure(name, args.budgets, args.sigmas, minilm=not args.no_minilm)
                       for name in args.collections], ignore_index=True)
    columns = ['collection', 'budget', 'reranker', 'docs_ref', 'docs_fill', 'short_ref', 'nDCG@10_ref',
               'nDCG@10_fill', 'nDCG@10_delta', 'R@100_ref', 'R@100_fill', 'R@100_delta']
    print('docs_*: documents re-ranked per query (mean); short_*: queries below the budget; '
          'ref: as the reference code; fill: backfill=True')
    print(table[columns].round(4).to_string(index=False))
    print(f"\nmean delta over the {len(table)} rows: nDCG@10 {table['nDCG@10_delta'].mean():+.4f}, "
          f"R@100 {table['R@100_delta'].mean():+.4f}")
    return table


if __name__ == '__main__':
    main()
