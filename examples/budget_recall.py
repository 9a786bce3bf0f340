"""Why R@100 moves with the budget: the recall of what a search observed vs. the order it returns it in.

    python examples/budget_recall.py --dataset vaswani --workdir W/vaswani --out vaswani-budgets.csv \\
        --budgets 50 100 200 400 --sigmas 0.25 0.5 1 --minilm --systems GAR SlideGAR RGS GAREN GAREN+
    python examples/budget_recall.py --dataset vaswani --workdir W/vaswani --out vaswani-feedback.csv \\
        --budgets 100 --sigmas 0.25 2 100 --systems GAREN GAREN+ --variant GAREN-fb1:feedback=1 \\
        --variant "GAREN+-fb1:evidence_weight=0.5,feedback=1" --oracle-navigator --weights

Every system takes the same PISA BM25 top 1000, the same navigator (GAREN; --navigator, default the MiniLM
centroid navigator; ``vote`` uses no embeddings; GAREN rows of another navigator are named ``<system>@<navigator>``)
and the same reranker: the
simulated one (pyterrier_garen.analysis.SimulatedReranker, noise seed --noise-seed: an ANALYSIS INSTRUMENT that
reads the qrels; sigma 100 is a random reranker) or MiniLM (--minilm). --fusion W appends the same FirstStageFusion
to every system and variant, over the whole list (strength_sweep.py's ``--fusion W --observed-fusion 0``; GAREN+ then
drops its own, so a variant must not set ``fusion`` too; GAREN+'s depth-aware stage is the ``fsF+tailT+obsU``
orders below). Each run's documents are the ones
its search observed (at most the budget), so besides the returned order (``order=system``) the script re-orders
that same set and evaluates it again:

* ``score``: by the reranker's own score of each document (recomputed: both rerankers are deterministic);
* ``score+fsW``: that score order fused with the first-stage rank, ``1/(60+i) + W/(60+r)`` (FirstStageFusion's
  formula; no second term for a document outside the first-stage top 1000), one row per --weights W;
* ``fsF+tailT``: the search's own (unfused) order through ``FirstStageFusion(first, F, tail_weight=T, head=10)``
  (F = --fusion, or each of --head-weights; F = 0: the system's own top 10 untouched), exactly what
  ``--tail-fusion T`` of compare/strength_sweep.py returns, one row per F and --tail-weights T; ``+obsU``: with
  ``observed_weight=U`` (``--observed-fusion U``: the search's observation order, its ``iteration`` column, below
  the top 10), one row per --observed-weights U
  (computed from the same search, so the tail weights are compared on identical observed sets);
* ``head10``: the returned top 10 (what nDCG@10 sees), then the other documents by the reranker's score;
* ``first_stage``: by first-stage rank (documents outside it after, in the returned order);
* ``best``: by the relevance labels: no order of this set can do better (an upper bound, not a system).

``R@obs`` is the recall of the whole observed set (R@1000 of the run), the same for every order of a run: whether
a search found the relevant documents (navigation) or lost them in its order. --oracle-navigator adds each GAREN
row with analysis.SimulatedNavigator(noise=0) (a navigator that reads the qrels: best member label per group) as
``<system>@oracle-nav``. --partition-seed S runs the groups-based systems on the Leiden partition of seed S
(analysis.partition_groups; built once in the workdir). Appends one CSV row per (budget, reranker, system, order)
as it goes; run again, it skips the runs --out holds (an interrupted run resumes; a --out written with other
columns is refused) and its last table shows this collection's rows. --per-query FILE appends each query's values
of those rows (for paired tests across systems). It and --shares are written before --out, which marks a run
done: a rerun after a stop between the writes measures that run again and adds only the rows they lack.
--shares FILE also traces every GAREN search with ``adaptive_interleave`` and appends to FILE how it split its
expansions between the first stage and the groups (analysis.share_summary: per iteration, and each
query's last share, over the queries).
"""
import argparse
import functools
import operator
import os
import sys
import time

os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')

import ir_measures  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pyterrier as pt  # noqa: E402
from ir_measures import R, nDCG  # noqa: E402

import pyterrier_garen as garen  # noqa: E402
from pyterrier_garen import analysis  # noqa: E402
from pyterrier_garen.datasets import load_dataset  # noqa: E402

SYSTEMS = ('GAR', 'Rerank', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+')  # the default; any registered reranking system
FUSION_K = 60
HEAD = 10


def split_fusion(pipeline):
    """``(system, fusion stage)`` of ``system >> FirstStageFusion(...)`` (``(pipeline, None)`` without one)."""
    stages = pt.inspect.subtransformers(pipeline)['transformers'] if isinstance(pipeline, pt.Compose) else [pipeline]
    if len(stages) > 1 and isinstance(stages[-1], garen.FirstStageFusion):
        return functools.reduce(operator.rshift, stages[:-1]), stages[-1]
    return pipeline, None


def orders(run, scores, rank0, labels, weights):
    """``{order name: run re-ordered}`` for one system's run (``qid, docno`` in its returned order)."""
    run = run[['qid', 'docno']].reset_index(drop=True).assign(pos=lambda f: f.groupby('qid').cumcount())
    keys = list(zip(run.qid, run.docno))
    run['s'] = [scores.get(k, -np.inf) for k in keys]
    run['r0'] = [rank0.get(k, np.inf) for k in keys]
    run['label'] = [labels.get(k, 0.0) for k in keys]
    out = {'system': run}
    by_score = run.sort_values(['qid', 's', 'pos'], ascending=[True, False, True], kind='stable')
    out['score'] = by_score
    by_score = by_score.assign(i=by_score.groupby('qid').cumcount() + 1)
    for w in weights:
        fused = 1 / (FUSION_K + by_score.i) + np.where(np.isfinite(by_score.r0), w / (FUSION_K + by_score.r0), 0.)
        out[f'score+fs{w:g}'] = by_score.assign(f=fused).sort_values(['qid', 'f', 'i'], ascending=[True, False, True],
                                                                       kind='stable')
    head = run[run.pos < HEAD]
    out[f'head{HEAD}'] = pd.concat([head, by_score[by_score.pos >= HEAD].drop(columns='i')]).sort_values(
        'qid', kind='stable')
    out['first_stage'] = run.sort_values(['qid', 'r0', 'pos'], kind='stable')
    out['best'] = run.sort_values(['qid', 'label', 'pos'], ascending=[True, False, True], kind='stable')
    return out


def adaptive_searches(pipeline):
    """The GAREN stages of ``pipeline`` that set their first-stage share (``adaptive_interleave``), found through
    ``pt.inspect.subtransformers``."""
    if isinstance(pipeline, garen.GAREN):
        return [pipeline] if pipeline.adaptive_interleave else []
    found = []
    for sub in pt.inspect.subtransformers(pipeline).values():
        for stage in sub if isinstance(sub, list) else [sub]:
            found += adaptive_searches(stage)
    return found


def per_query(run, qrels, qids):
    """``{measure: [value per query of qids]}`` (nDCG@10, R@100 and R@1000 as ``R@obs``) of a run given in rank
    order; a query without documents counts 0."""
    frame = pd.DataFrame({'query_id': run.qid.astype(str), 'doc_id': run.docno.astype(str),
                          'score': -run.groupby('qid').cumcount().astype(float)})
    judged = pd.DataFrame({'query_id': qrels.qid.astype(str), 'doc_id': qrels.docno.astype(str),
                           'relevance': qrels.label.astype(int)})
    measures = {'nDCG@10': nDCG @ 10, 'R@100': R @ 100, 'R@obs': R @ 1000}
    values = {}
    for m in ir_measures.iter_calc(list(measures.values()), judged, frame):
        values.setdefault(str(m.measure), {})[m.query_id] = m.value
    return {name: [values.get(str(m), {}).get(q, 0.0) for q in qids] for name, m in measures.items()}


def without_excluded(run, stored):
    """``run`` without the (qid, docno) pairs ``stored`` marks excluded (label -100, BRIGHT), in its row order (the
    order it is measured in), as compare and the sweeps remove them before scoring."""
    excluded = stored[pd.to_numeric(stored.label, errors='coerce') == -100]
    if excluded.empty:
        return run
    drop = pd.MultiIndex.from_frame(run[['qid', 'docno']].astype(str)).isin(
        pd.MultiIndex.from_frame(excluded[['qid', 'docno']].astype(str)))
    return run[~drop]


def evaluate(run, qrels, qids):
    """Mean nDCG@10, R@100 and R@1000 over ``qids`` of a run given in rank order (0 for a missing query)."""
    return {name: float(np.mean(values)) for name, values in per_query(run, qrels, qids).items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--dataset', required=True)
    parser.add_argument('--workdir', required=True)
    parser.add_argument('--out', required=True, help='CSV, appended to')
    parser.add_argument('--budgets', type=int, nargs='+', default=[50, 100, 200, 400])
    parser.add_argument('--sigmas', type=float, nargs='*', default=[0.25, 0.5, 1.0], help='(none: MiniLM only)')
    parser.add_argument('--noise-seed', type=int, default=0)
    parser.add_argument('--minilm', action='store_true', help='also the MiniLM reranker')
    parser.add_argument('--systems', nargs='*', default=list(SYSTEMS),
                        choices=garen.system_names(reranks=True))
    parser.add_argument('--variant', action='append', default=[], metavar='NAME:KEY=VALUE,...',
                        help='an extra GAREN configuration (GAREN keyword arguments), repeatable')
    parser.add_argument('--navigator', default='centroid', choices=garen.NAVIGATORS,
                        help="GAREN's navigator (default: the MiniLM centroid navigator; vote: no embeddings)")
    parser.add_argument('--oracle-navigator', action='store_true',
                        help='also every GAREN system and variant with a navigator that reads the qrels')
    parser.add_argument('--fusion', type=float, default=0.1,
                        help='FirstStageFusion weight appended to every system (default 0.1; 0 = none)')
    parser.add_argument('--weights', type=float, nargs='*', default=[0.1, 0.5, 1.0, 2.0],
                        help='first-stage weights of the score+fs re-orderings')
    parser.add_argument('--tail-weights', type=float, nargs='*', default=[],
                        help='tail weights T of the fsF+tailT orders (depth-aware fusion below the top 10)')
    parser.add_argument('--observed-weights', type=float, nargs='*', default=[0.0],
                        help='observation-order weights U of the fsF+tailT+obsU orders (0: none)')
    parser.add_argument('--head-weights', type=float, nargs='*',
                        help='head weights F of the fsF+tailT orders (default: --fusion)')
    parser.add_argument('--partition-seed', type=int, help="Leiden seed of GAREN's groups (default: the prepared one)")
    parser.add_argument('--queries', type=int, help='only the first N judged queries')
    parser.add_argument('--per-query', metavar='FILE',
                        help='CSV, appended to: each query\'s nDCG@10, R@100 and R@obs per row of --out (for paired '
                             'tests across systems; columns as --out plus qid, without seconds)')
    parser.add_argument('--shares', metavar='FILE',
                        help="CSV, appended to: the first-stage share of the adaptive_interleave searches' expansions")
    args = parser.parse_args(argv)
    garen.check_outputs({'--out': args.out, '--per-query': args.per_query, '--shares': args.shares})
    cell_keys = ['collection', 'budget', 'reranker', 'system', 'noise_seed', 'partition_seed']
    out = analysis.AppendedTable(args.out, [*cell_keys, 'order', 'nDCG@10', 'R@100', 'R@obs', 'seconds'],
                                 keys=cell_keys)  # a rerun skips the runs it holds
    # written before --out, which marks a run done: a rerun after a stop between the two adds only what they lack
    per_query_table = analysis.AppendedTable(
        args.per_query, [*cell_keys, 'order', 'qid', 'nDCG@10', 'R@100', 'R@obs'],
        keys=[*cell_keys, 'order', 'qid'], flag='--per-query') if args.per_query else None
    shares_table = analysis.AppendedTable(
        args.shares, [*cell_keys, 'iteration', 'queries', 'mean', 'sd', 'q10', 'q90'],
        keys=[*cell_keys, 'iteration'], flag='--shares') if args.shares else None
    try:  # before any artifact is built
        variants = analysis.parse_variants(args.variant)
    except ValueError as ex:
        parser.error(str(ex))
    if not args.sigmas and not args.minilm:
        parser.error('--sigmas without values runs MiniLM only: add --minilm, or give at least one sigma')
    if not args.systems and not variants:
        parser.error('--systems without values runs nothing: name at least one system (or give a --variant)')

    dataset = load_dataset(args.dataset)
    dataset.get_topics(), dataset.get_qrels()  # a bad query or judgement line fails now, not after the offline steps
    prepared = garen.prepare(dataset, args.workdir)
    qrels = garen.evaluation_qrels(dataset)
    stored = dataset.get_qrels()  # BRIGHT's excluded documents (label -100) leave every run before it is measured
    topics = analysis.judged_topics(dataset, qrels, args.queries, context='budget_recall')
    qids = topics.qid.astype(str).tolist()
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    rank0 = {(str(q), str(d)): r + 1 for q, d, r in zip(first.qid, first.docno, first.groupby('qid').cumcount())}
    labels = {(str(q), str(d)): float(v) for q, d, v in zip(qrels.qid, qrels.docno, qrels.label)}
    source = pt.Transformer.from_df(first)
    if args.partition_seed is not None:
        import dataclasses
        prepared = dataclasses.replace(prepared, groups=analysis.partition_groups(prepared, args.partition_seed))
    main_suffix = '' if args.navigator == 'centroid' else f'@{args.navigator}'  # rows say which navigator ran
    minilm, main_navigator = garen.cpu_components(prepared, navigator=args.navigator)  # MiniLM: the CPU reranker
    navigators = {main_suffix: main_navigator}
    if args.oracle_navigator:
        navigators['@oracle-nav'] = analysis.SimulatedNavigator(qrels, prepared.groups, noise=0.0)
    rerankers = [(f'sigma={s:g}', analysis.SimulatedReranker(qrels, noise=s, seed=args.noise_seed))
                 for s in args.sigmas]
    if args.minilm:
        rerankers.append(('MiniLM', minilm))
    for budget in args.budgets:
        for kind, reranker in rerankers:
            runs = {}
            for suffix, navigator in navigators.items():
                names = [s for s in args.systems if s.startswith('GAREN') or suffix == main_suffix]
                built = garen.build_systems(prepared, reranker, navigator, budget=budget, first_stage=source,
                                            systems=names, fusion=args.fusion,
                                            observed_fusion=0.) if names else {}  # flat, as for the variants
                runs.update({name + (suffix if name.startswith('GAREN') else ''): pipeline  # baselines: no navigator
                             for name, pipeline in built.items()})
                for name, kwargs in variants.items():
                    pipeline = source >> garen.GAREN(reranker, prepared.groups, navigator, budget=budget, **kwargs)
                    if args.fusion:
                        pipeline = pipeline >> garen.FirstStageFusion(first, args.fusion)
                    runs[name + suffix] = pipeline
            for name, pipeline in runs.items():
                if out.holds(collection=args.dataset, budget=budget, reranker=kind, system=name,
                             noise_seed=args.noise_seed, partition_seed=args.partition_seed):
                    print(f'{args.dataset} {budget} {kind} {name}: in {args.out} already (kept)', flush=True)
                    continue
                start = time.time()
                system, fusion = split_fusion(pipeline)
                traced = adaptive_searches(system) if args.shares else []
                for stage in traced:
                    stage.trace = True
                raw = system(topics)
                run = fusion(raw) if fusion is not None else raw
                seconds = round(time.time() - start, 1)
                run = run.sort_values(['qid', 'rank'], kind='stable')
                tails = {f'fs{f:g}+tail{t:g}' + (f'+obs{u:g}' if u else ''):
                         garen.FirstStageFusion(first, f, tail_weight=t, observed_weight=u)(raw)
                         for f in (args.head_weights if args.head_weights is not None else [args.fusion])
                         for t in args.tail_weights for u in args.observed_weights}
                scored = reranker(run[['qid', 'query', 'docno']].drop_duplicates(['qid', 'docno']))
                scores = {(str(q), str(d)): float(s) for q, d, s in zip(scored.qid, scored.docno, scored.score)}
                rows = []
                reordered = orders(run.assign(qid=run.qid.astype(str), docno=run.docno.astype(str)), scores, rank0,
                                   labels, args.weights)
                for order, frame in tails.items():
                    frame = frame.sort_values(['qid', 'rank'], kind='stable')
                    reordered[order] = frame.assign(qid=frame.qid.astype(str), docno=frame.docno.astype(str))
                queries = []
                for order, frame in reordered.items():
                    values = per_query(without_excluded(frame, stored), qrels, qids)
                    cell = {'collection': args.dataset, 'budget': budget, 'reranker': kind, 'system': name,
                            'noise_seed': args.noise_seed, 'partition_seed': args.partition_seed, 'order': order}
                    rows.append({**cell, **{m: float(np.mean(v)) for m, v in values.items()}, 'seconds': seconds})
                    if args.per_query:
                        queries.append(pd.DataFrame({**cell, 'qid': qids, **values}))
                if queries:
                    per_query_table.append(pd.concat(queries), missing_only=True)
                if traced:  # every stage's rows in one write, checked against the rows of earlier runs only
                    shares = pd.concat([analysis.share_summary(analysis.first_stage_shares(stage.last_trace))
                                        for stage in traced]).assign(
                        collection=args.dataset, budget=budget, reranker=kind, system=name,
                        noise_seed=args.noise_seed, partition_seed=args.partition_seed)
                    shares_table.append(shares[shares_table.columns], missing_only=True)
                rows = pd.DataFrame(rows)
                out.append(rows)
                print(rows.round(4).to_string(header=False, index=False), flush=True)
    table = pd.read_csv(args.out, dtype={'collection': str})
    table = table[table.collection == args.dataset]  # the file may hold other collections' rows too
    with pd.option_context('display.width', 250, 'display.max_rows', 500):
        print(table.pivot_table(index=['reranker', 'system', 'order'], columns='budget', values='R@100',
                                sort=False).round(4).to_string())


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        main(sys.argv[1:])
