"""Oracles for ``strength_sweep`` itself, the function every verdict of issue 16 is computed with: each argument
reaches the runs it names, and each cell equals a pipeline built and scored here by hand (``ir_measures`` over
``pt`` pipelines), on the small synthetic collection (160 documents, a BM25 graph, no MiniLM; seconds).

The MiniLM reranker and the query encoder are replaced by stand-ins (the package's public names, patched), so that
what the sweep hands them can be seen and no model is loaded.
"""
import dataclasses
import math
import re
import shutil
import warnings

import ir_measures
import pandas as pd
import pytest

import pyterrier_garen as garen
from pyterrier_garen import FirstStageFusion, GAREN, HeadReranker, SlidingWindowReranker, VoteNavigator, analysis
from pyterrier_garen import _registry
from pyterrier_garen.analysis import SimulatedReranker
from pyterrier_garen.datasets import remove_excluded
from _sweep_example import small_collection, unmatched_copy

ONE = dict(sigmas=(0.5,), noise_seeds=(0,), partition_seeds=(42,), minilm=False, navigator='vote')


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    return small_collection(tmp_path_factory.mktemp('sweep-run'))


def _bm25(prepared):
    return prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)


def _judged(dataset, qrels, n=None):
    """The qids a sweep evaluates, worked out here: dataset order, at least one label above 0, the first n."""
    relevant = set(qrels[qrels.label > 0].qid.astype(str))
    qids = [q for q in dataset.get_topics().qid.astype(str) if q in relevant]
    return qids[:n] if n else qids


def _scores(run, qrels, qids):
    """Mean nDCG@10 and R@100 over ``qids`` by ir_measures, a query missing from the run counting 0."""
    frame = pd.DataFrame({'query_id': run.qid.astype(str), 'doc_id': run.docno.astype(str),
                          'score': run.score.astype(float)})
    judged = pd.DataFrame({'query_id': qrels.qid.astype(str), 'doc_id': qrels.docno.astype(str),
                           'relevance': qrels.label.astype(int)})
    found = {(m.query_id, str(m.measure)): m.value
             for m in ir_measures.iter_calc([ir_measures.nDCG @ 10, ir_measures.R @ 100], judged, frame)}
    return {name: sum(found.get((q, name), 0.0) for q in qids) / len(qids) for name in ('nDCG@10', 'R@100')}


def _by_hand(prepared, system, qids, qrels=None):
    qrels = garen.evaluation_qrels(prepared.dataset) if qrels is None else qrels
    topics = prepared.dataset.get_topics()
    topics = topics[topics.qid.astype(str).isin(qids)]
    return _scores((_bm25(prepared) >> system)(topics), qrels, qids)


def _cell(table, system, **where):
    rows = table[table.system == system]
    for key, value in where.items():
        rows = rows[rows[key] == value]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def _assert_cell(row, expected):
    assert row['nDCG@10'] == pytest.approx(expected['nDCG@10'], abs=1e-12)
    assert row['R@100'] == pytest.approx(expected['R@100'], abs=1e-12)


def test_by_default_minilm_is_swept_too_with_the_centroid_navigator(small, monkeypatch):
    _, prepared = small
    qrels = garen.evaluation_qrels(prepared.dataset)
    made = []
    monkeypatch.setattr(garen, 'minilm_encoder', lambda: 'encoder')
    monkeypatch.setattr(garen, 'VectorScorer', lambda vecs, enc: SimulatedReranker(qrels, noise=1.0, seed=2))
    centroid = _registry.navigator('centroid')

    def factory(groups, prep, enc):
        made.append(enc)
        return VoteNavigator()

    _registry.register_navigator(dataclasses.replace(centroid, factory=factory), replace=True)
    try:
        table, _ = analysis.strength_sweep(prepared, systems=['GAREN'], sigmas=(), noise_seeds=(0,),
                                           partition_seeds=(42,), budget=30, num_queries=2)
    finally:
        _registry.register_navigator(centroid, replace=True)
    assert made == ['encoder']
    assert table.reranker.tolist() == ['MiniLM']


def test_num_queries_takes_the_first_judged_queries_and_every_cell_is_their_mean(small):
    _, prepared = small
    qrels = garen.evaluation_qrels(prepared.dataset)
    table, perquery = analysis.strength_sweep(prepared, systems=['Rerank'], budget=40, num_queries=3, **ONE)
    qids = _judged(prepared.dataset, qrels, 3)
    assert len(qids) == 3
    assert perquery.qid.tolist() == qids
    assert table.reranker.tolist() == ['simulated']
    expected = _by_hand(prepared, SlidingWindowReranker(SimulatedReranker(qrels, noise=0.5, seed=0)), qids)
    _assert_cell(_cell(table, 'Rerank'), expected)


def test_given_qrels_drive_the_simulated_reranker_the_queries_and_the_evaluation(small):
    _, prepared = small
    full = garen.evaluation_qrels(prepared.dataset)
    keep = _judged(prepared.dataset, full)[2:7]  # five queries, not the first ones
    own = full[full.qid.astype(str).isin(keep)].copy()
    # grade 2 where the collection says 1: the simulated reranker and nDCG both see the new grades
    own['label'] = own.label * 2
    table, perquery = analysis.strength_sweep(prepared, systems=['Rerank'], budget=40, qrels=own,
                                              **{**ONE, 'sigmas': (1.0,)})
    assert perquery.qid.tolist() == keep
    expected = _by_hand(prepared, SlidingWindowReranker(SimulatedReranker(own, noise=1.0, seed=0)), keep, own)
    _assert_cell(_cell(table, 'Rerank'), expected)
    plain = _by_hand(prepared, SlidingWindowReranker(SimulatedReranker(full, noise=1.0, seed=0)), keep, full)
    assert plain['nDCG@10'] != pytest.approx(expected['nDCG@10'])  # the grades matter to the values


def test_every_system_by_default_and_the_labels_of_the_rerankers(small):
    _, prepared = small
    table, _ = analysis.strength_sweep(prepared, budget=40, num_queries=2, **ONE)
    assert table.system.tolist() == list(analysis.SWEEP_SYSTEMS)
    # the systems issue 16 compares are among them
    assert {'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN+'} <= set(analysis.SWEEP_SYSTEMS)
    assert set(table.reranker) == {'simulated'}
    assert set(table.sigma) == {0.5}
    assert set(table.noise_seed) == {0.0}


def test_the_first_stage_is_pisa_bm25_at_compares_settings_run_once(small):
    _, prepared = small

    class Counting:
        def __init__(self, index):
            self.index, self.calls = index, []

        def bm25(self, **kwargs):
            self.calls.append(kwargs)
            return self.index.bm25(**kwargs)

        def __getattr__(self, name):
            return getattr(self.index, name)

    counting = Counting(prepared.bm25_index)
    shared = dataclasses.replace(prepared, bm25_index=counting)
    analysis.strength_sweep(shared, systems=['BM25', 'Rerank', 'GAR', 'GAREN'], budgets=(20, 40), num_queries=2,
                            **{**ONE, 'sigmas': (0.5, 1.0)})
    # one BM25 top 1000 for every system, reranker and budget: the first stage compare reports (FIRST_STAGE)
    assert counting.calls == [{'k1': 0.9, 'b': 0.4, 'num_results': 1000}]
    from pyterrier_garen._compare import FIRST_STAGE
    for setting in ('k1=0.9', 'b=0.4', 'top 1000'):
        assert setting in FIRST_STAGE


def test_a_budget_at_least_the_collection_warns_naming_the_sweep(small):
    _, prepared = small
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        analysis.strength_sweep(prepared, systems=['BM25', 'SlideGAR', 'GAREN'], budgets=(20, 160), num_queries=1,
                                **ONE)
    covering = [str(w.message) for w in caught if 'is at least the 160 documents' in str(w.message)]
    # once, for the collection; not again by each search
    assert len(covering) == 1
    assert covering[0].startswith('strength_sweep: budget=160 is at least the 160 documents')


def _sigma_two(small):
    """``(prepared, judged qids, the simulated reranker at sigma 2, the sweep's arguments for it)``."""
    _, prepared = small
    qrels = garen.evaluation_qrels(prepared.dataset)
    return prepared, _judged(prepared.dataset, qrels), SimulatedReranker(qrels, noise=2.0, seed=0), \
        {**ONE, 'sigmas': (2.0,)}


def test_final_order_reaches_every_search_and_the_variants(small):
    prepared, qids, reranker, kwargs = _sigma_two(small)
    table, _ = analysis.strength_sweep(prepared, systems=['GAREN'], budget=30, final_order='paper',
                                       variants={'GAREN-t1': {'tau_switch': 1}}, **kwargs)
    for name, options in (('GAREN', {}), ('GAREN-t1', {'tau_switch': 1})):
        paper = _by_hand(prepared, GAREN(reranker, prepared.groups, VoteNavigator(), budget=30,
                                         final_order='paper', **options), qids)
        _assert_cell(_cell(table, name), paper)
    default = _by_hand(prepared, GAREN(reranker, prepared.groups, VoteNavigator(), budget=30), qids)
    assert default['nDCG@10'] != pytest.approx(_cell(table, 'GAREN')['nDCG@10'])  # the paper's order is another


def test_listwise_gives_every_search_the_same_verdicts_as_window_positions(small):
    # ListwiseView keeps each window's order and drops the scale, so by an independent route: the sliding window
    # (one list sorted in place) is unchanged, GAREN with 'auto' is the pointwise GAREN with final_order='dropped',
    # and GAR, which compares scores across batches, changes (and says so)
    prepared, qids, reranker, kwargs = _sigma_two(small)
    with pytest.warns(UserWarning, match='GAR: GAR ranks the documents of all its batches together by score'):
        table, _ = analysis.strength_sweep(prepared, systems=['Rerank', 'GAR', 'GAREN'], budget=120, listwise=True,
                                           **kwargs)
    pointwise, _ = analysis.strength_sweep(prepared, systems=['Rerank', 'GAR', 'GAREN'], budget=120, **kwargs)
    _assert_cell(_cell(table, 'Rerank'), _by_hand(prepared, SlidingWindowReranker(reranker, budget=120), qids))
    _assert_cell(_cell(table, 'Rerank'), _cell(pointwise, 'Rerank'))
    dropped = _by_hand(prepared, GAREN(reranker, prepared.groups, VoteNavigator(), budget=120, final_order='dropped'),
                       qids)
    _assert_cell(_cell(table, 'GAREN'), dropped)
    assert dropped != _by_hand(prepared, GAREN(reranker, prepared.groups, VoteNavigator(), budget=120), qids)
    assert _cell(table, 'GAR')['nDCG@10'] != pytest.approx(_cell(pointwise, 'GAR')['nDCG@10'])
    assert table.reranker.tolist() == ['simulated'] * 3  # the kind of verdict; the command line says listwise


def test_the_head_rerank_reaches_every_system_and_variant_before_the_shared_fusion(small):
    prepared, qids, reranker, kwargs = _sigma_two(small)
    listwise = analysis.ListwiseView(reranker)
    first = _bm25(prepared)(prepared.dataset.get_topics())
    table, _ = analysis.strength_sweep(prepared, systems=['Rerank', 'GAREN'], budget=60, listwise=True,
                                       head_rerank=20, fusion=0.1, observed_fusion=0.0,
                                       variants={'GAREN-t1': {'tau_switch': 1}}, **kwargs)
    stage = FirstStageFusion(first, 0.1)
    # the sliding window gets the stage; GAREN and its variants make the call inside, before propagation
    searches = {'Rerank': SlidingWindowReranker(listwise, budget=60) >> HeadReranker(listwise, 20),
                'GAREN': GAREN(listwise, prepared.groups, VoteNavigator(), budget=60, head_rerank=20),
                'GAREN-t1': GAREN(listwise, prepared.groups, VoteNavigator(), budget=60, tau_switch=1,
                                  head_rerank=20)}
    for name, search in searches.items():
        _assert_cell(_cell(table, name), _by_hand(prepared, search >> stage, qids))
    without, _ = analysis.strength_sweep(prepared, systems=['GAREN'], budget=60, listwise=True, fusion=0.1,
                                         observed_fusion=0.0, **kwargs)
    assert _cell(without, 'GAREN')['nDCG@10'] != pytest.approx(_cell(table, 'GAREN')['nDCG@10'])
    with pytest.raises(ValueError, match='head_rerank must be'):
        analysis.strength_sweep(prepared, systems=['GAREN'], head_rerank=1, **kwargs)


def test_excluded_documents_leave_every_run_before_it_is_scored(small, tmp_path):
    root, _ = small
    folder = tmp_path / 'collection'
    shutil.copytree(root / 'collection', folder)
    dataset = garen.LocalDataset(folder)
    first = _bm25(garen.prepare(dataset, tmp_path / 'plain', graph='bm25', vectors=False))(dataset.get_topics())
    judged = dataset.get_qrels()
    judged = set(zip(judged.qid.astype(str), judged.docno.astype(str)))
    # BRIGHT's convention: label -100 excludes a document; here the three best BM25 documents not judged
    excluded = (first[[(q, d) not in judged for q, d in zip(first.qid.astype(str), first.docno.astype(str))]]
                .sort_values(['qid', 'rank']).groupby('qid').head(3))
    with (folder / 'qrels.txt').open('a') as out:
        out.writelines(f'{q} 0 {d} -100\n' for q, d in zip(excluded.qid, excluded.docno))
    prepared = garen.prepare(dataset, tmp_path / 'work', graph='bm25', vectors=False)
    qrels = garen.evaluation_qrels(dataset)
    assert (dataset.get_qrels().label == -100).sum() == len(excluded)
    assert not (qrels.label == -100).any()
    table, _ = analysis.strength_sweep(prepared, systems=['Rerank'], budget=40, **{**ONE, 'sigmas': (2.0,)})
    qids = _judged(dataset, qrels)
    topics = dataset.get_topics()
    run = (_bm25(prepared) >> SlidingWindowReranker(SimulatedReranker(qrels, noise=2.0, seed=0)))(topics)
    kept = remove_excluded(run, dataset.get_qrels())
    assert len(kept) == len(run) - len(excluded)
    _assert_cell(_cell(table, 'Rerank'), _scores(kept, qrels, qids))
    assert _scores(run, qrels, qids)['nDCG@10'] != pytest.approx(_cell(table, 'Rerank')['nDCG@10'])


def test_each_partition_gets_its_own_navigator_from_the_declared_factory(small, monkeypatch):
    _, prepared = small
    calls = []
    encoder = object()
    monkeypatch.setattr(garen, 'minilm_encoder', lambda: encoder)

    def factory(groups, prep, enc):
        calls.append((groups, prep, enc))
        return VoteNavigator()

    _registry.register_navigator(_registry.Navigator('probe', factory, text='a probe', encoder=True,
                                                     summaries=True))
    try:
        analysis.strength_sweep(prepared, systems=['GAREN'], budget=30, num_queries=1,
                                **{**ONE, 'navigator': 'probe', 'partition_seeds': (42, 11)})
    finally:
        _registry.unregister('probe')
    assert [c[0].meta['partition']['seed'] for c in calls] == [42, 11]
    assert calls[0][0] is prepared.groups
    assert str(calls[1][0].path).endswith('.seed11')
    assert calls[1][0].summary(0)  # a navigator that reads summaries gets a partition that has them
    assert all(c[1] is prepared and c[2] is encoder for c in calls)


def test_no_encoder_is_loaded_when_nothing_needs_one(small, monkeypatch):
    _, prepared = small

    def no_model():
        raise AssertionError('the MiniLM encoder was loaded for a sweep that needs none')

    monkeypatch.setattr(garen, 'minilm_encoder', no_model)
    table, _ = analysis.strength_sweep(prepared, systems=['GAREN'], budget=30, num_queries=1, **ONE)
    assert len(table) == 1


def test_the_minilm_row_scores_the_stored_vectors_with_the_query_encoder(small, monkeypatch):
    _, prepared = small
    qrels = garen.evaluation_qrels(prepared.dataset)
    vectors, encoder, made = object(), object(), []

    def scorer(vecs, enc):  # stands in for VectorScorer: another simulated reranker, so its cell can be checked
        made.append((vecs, enc))
        return SimulatedReranker(qrels, noise=1.5, seed=9)

    monkeypatch.setattr(garen, 'minilm_encoder', lambda: encoder)
    monkeypatch.setattr(garen, 'VectorScorer', scorer)
    table, _ = analysis.strength_sweep(dataclasses.replace(prepared, vectors=vectors), systems=['Rerank'],
                                       budget=40, **{**ONE, 'minilm': True})
    assert made == [(vectors, encoder)]
    assert table.reranker.tolist() == ['simulated', 'MiniLM']
    minilm = _cell(table, 'Rerank', reranker='MiniLM')
    assert math.isnan(minilm.sigma)
    assert math.isnan(minilm.noise_seed)
    qids = _judged(prepared.dataset, qrels)
    _assert_cell(minilm, _by_hand(prepared, SlidingWindowReranker(SimulatedReranker(qrels, noise=1.5, seed=9)), qids))


def test_variants_get_the_shared_stage_the_systems_get(small):
    _, prepared = small
    qrels = garen.evaluation_qrels(prepared.dataset)
    qids = _judged(prepared.dataset, qrels)
    topics = prepared.dataset.get_topics()
    first = _bm25(prepared)(topics)
    reranker = SimulatedReranker(qrels, noise=2.0, seed=0)
    kwargs = {**ONE, 'sigmas': (2.0,)}
    variant = {'GAREN-t1': {'tau_switch': 1}}

    def fused(weight, **stage):
        run = (_bm25(prepared) >> GAREN(reranker, prepared.groups, VoteNavigator(), budget=30, tau_switch=1)
               >> FirstStageFusion(first, weight, **stage))(topics)
        return _scores(run, qrels, qids)

    plain = _by_hand(prepared, GAREN(reranker, prepared.groups, VoteNavigator(), budget=30, tau_switch=1), qids)
    none, _ = analysis.strength_sweep(prepared, systems=[], budget=30, variants=variant, **kwargs)
    _assert_cell(_cell(none, 'GAREN-t1'), plain)
    # --fusion alone: GAREN+'s stage (tail 0.5 below a head of 10, observation weight 3) at this weight
    alone, _ = analysis.strength_sweep(prepared, systems=[], budget=30, variants=variant, fusion=0.3, **kwargs)
    expected = fused(0.3, tail_weight=0.5, head=10, observed_weight=3.0)
    _assert_cell(_cell(alone, 'GAREN-t1'), expected)
    assert expected['nDCG@10'] != pytest.approx(plain['nDCG@10'])
    # a tail weight alone is a shared stage too, with the head given
    tail, _ = analysis.strength_sweep(prepared, systems=[], budget=30, variants=variant, tail_fusion=0.5,
                                      fusion_head=5, **kwargs)
    expected = fused(0.0, tail_weight=0.5, head=5)
    _assert_cell(_cell(tail, 'GAREN-t1'), expected)
    assert expected['nDCG@10'] != pytest.approx(plain['nDCG@10'])


def test_verbose_prints_one_line_a_run_and_quiet_prints_none(small, capfd):
    _, prepared = small
    capfd.readouterr()
    analysis.strength_sweep(prepared, systems=['Rerank', 'GAREN'], budget=40, num_queries=2,
                            **{**ONE, 'partition_seeds': (42, 13)})
    assert capfd.readouterr() == ('', '')
    table, _ = analysis.strength_sweep(prepared, systems=['Rerank'], budget=40, num_queries=2, verbose=True,
                                       **{**ONE, 'partition_seeds': (42, 14)})
    row = _cell(table, 'Rerank', partition_seed=42)
    line = (f"Rerank simulated sigma=0.5 noise_seed=0.0 partition_seed=42 budget=40: "
            f"nDCG@10={row['nDCG@10']:.4f}, R@100={row['R@100']:.4f}")
    out, err = capfd.readouterr()
    assert line in out.splitlines()
    assert err  # the new partition's progress bars


# -- partition_groups: the other Leiden partitions of a sweep --------------------------------------------------------
class _Unrecorded:
    """Groups whose metadata records no partition (as a hand-made artifact may): any seed needs a new partition."""

    def __init__(self, path):
        self.path, self.meta = path, {}


def test_the_seed_prepare_used_is_the_prepared_groups_themselves(small):
    _, prepared = small
    assert prepared.groups.meta['partition']['seed'] == 42
    assert analysis.partition_groups(prepared, 42) is prepared.groups


@pytest.mark.parametrize('seed', [1, -1, -2, 0])
def test_groups_without_a_recorded_seed_match_no_seed(small, tmp_path, seed):
    _, prepared = small
    stub = dataclasses.replace(prepared, groups=_Unrecorded(tmp_path / 'g'))
    out = analysis.partition_groups(stub, seed)
    assert out.path == tmp_path / f'g.seed{seed}'
    assert out.meta['partition']['seed'] == seed
    assert out.meta['partition']['max_group_size'] == 20  # nothing recorded: the builder's defaults


def test_another_seed_keeps_the_prepared_partition_settings_and_writes_beside_it(small, tmp_path, capfd):
    _, prepared = small
    settings = {'max_group_size': 7, 'resolution': 1.5, 'randomness': 0.01, 'backend': 'leidenalg'}
    own = garen.GroupCorpusGraph.from_corpus_graph(prepared.graph, tmp_path / 'own.groups', seed=3, **settings)
    stub = dataclasses.replace(prepared, groups=own)
    capfd.readouterr()
    out = analysis.partition_groups(stub, 5)
    assert capfd.readouterr().err == ''  # quiet by default
    assert out.path == tmp_path / 'own.groups.seed5'
    assert {k: out.meta['partition'][k] for k in (*settings, 'seed')} == {**settings, 'seed': 5}
    assert max(len(out.group_member_ids(g)) for g in range(out.num_groups)) <= 7
    # the same partition built here by hand: the sweep's is that one, member for member
    alone = garen.GroupCorpusGraph.from_corpus_graph(prepared.graph, tmp_path / 'alone', seed=5, **settings)
    assert [out.group_members(g) for g in range(out.num_groups)] == \
        [alone.group_members(g) for g in range(alone.num_groups)]
    assert not out.summary(0)  # no summaries unless asked for


def test_summaries_when_asked_are_the_extractive_ones_and_verbose_shows_progress(small, tmp_path, capfd):
    _, prepared = small
    stub = dataclasses.replace(prepared, groups=_Unrecorded(tmp_path / 'g'))
    capfd.readouterr()
    out = analysis.partition_groups(stub, 4, summaries=True, verbose=True)
    assert 'summarising groups' in capfd.readouterr().err  # the summariser's progress bar
    alone = garen.GroupCorpusGraph.from_corpus_graph(prepared.graph, tmp_path / 'alone', seed=4)
    alone.summarize(garen.ExtractiveSummarizer(), prepared.dataset)
    assert [out.summary(g) for g in range(out.num_groups)] == [alone.summary(g) for g in range(alone.num_groups)]
    assert all(out.summary(g) for g in range(out.num_groups))


def test_each_warning_of_the_runs_is_shown_once(small):
    _, prepared = small
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')  # Python's own rule would show every one of them
        analysis.strength_sweep(prepared, systems=['Rerank', 'GAREN'], budgets=(10,), num_queries=2,
                                **{**ONE, 'sigmas': (0.5, 1.0), 'partition_seeds': (42, 17)})
    below = [str(w.message) for w in caught if 'no adaptive step' in str(w.message)]
    # four runs of the loop (two sigmas, two partitions) build the systems, each time with the same advice
    assert below == ['budget=10 leaves GAREN no adaptive step: they re-rank only the first-stage top 10 (a window '
                     'search looks further only at a budget above its window of 20 documents, GAR above its batch of '
                     '16); use a larger budget, e.g. 100 as in the paper']


def test_queries_the_first_stage_finds_nothing_for_are_said_once_and_score_zero(small, tmp_path):
    root, prepared = small
    dataset, (first, *_) = unmatched_copy(root, tmp_path / 'collection', 3)
    # the documents are the collection's: its workdir serves the copy as it is (the workdir is the documents')
    mine = garen.prepare(dataset, root / 'work', graph='bm25', vectors=False)
    message = (rf"^strength_sweep: the first stage finds no document for 3 of the 16 queries \(e\.g\. qid "
               rf"'{first}', 'zzqx yywv'\); every system starts from it, so these queries are absent from every run "
               r"and score 0 for all of them$")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        table, perquery = analysis.strength_sweep(mine, systems=['Rerank', 'GAREN'], budget=40,
                                                  **{**ONE, 'partition_seeds': (42, 43)})
    said = [str(w.message) for w in caught if 'finds no document' in str(w.message)]
    assert len(said) == 1  # once for the sweep, not for each run
    assert re.match(message, said[0])
    qrels = garen.evaluation_qrels(dataset)
    qids = _judged(dataset, qrels)
    _assert_cell(_cell(table, 'Rerank', partition_seed=43),
                 _by_hand(mine, SlidingWindowReranker(SimulatedReranker(qrels, noise=0.5, seed=0), budget=40), qids))
    lost = [line.split('\t')[0] for line in (tmp_path / 'collection' / 'queries.tsv').read_text().splitlines()[:3]]
    silent = perquery[perquery.qid.astype(str).isin(lost)]
    assert len(silent) == 3 * 2 * 2  # three queries, two systems, two partitions
    assert (silent[['nDCG@10', 'R@100']] == 0).all().all()


def test_a_sweep_the_first_stage_finds_nothing_for_is_refused(small, tmp_path):
    root, _ = small
    dataset, (first, *_) = unmatched_copy(root, tmp_path / 'collection', 16)
    mine = garen.prepare(dataset, root / 'work', graph='bm25', vectors=False)
    with pytest.raises(ValueError, match=rf"^strength_sweep: the first stage finds no document for any of the 16 "
                                         rf"queries \(e\.g\. qid '{first}', 'zzqx yywv'\), so every system would "
                                         r"return nothing: no query shares an indexed term with the documents"):
        analysis.strength_sweep(mine, systems=['Rerank'], budget=40, **ONE)
