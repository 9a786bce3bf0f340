"""The sweep over several budgets in one run, with one fusion for every system, and the budget warnings."""
import re
import warnings

import pandas as pd
import pyterrier as pt
import pytest

import pyterrier_garen as garen
from pyterrier_garen import analysis
from _sweep_example import load_example, small_collection

COMMON = dict(sigmas=(0.5,), noise_seeds=(0,), partition_seeds=(42,), minilm=False, navigator='vote')


@pytest.fixture(scope='module')
def small(tmp_path_factory):
    return small_collection(tmp_path_factory.mktemp('budgets'))


def test_budgets_in_one_sweep_equal_one_sweep_per_budget(small):
    _, prepared = small
    systems = ['Rerank', 'SlideGAR', 'GAREN']
    both, perquery = analysis.strength_sweep(prepared, systems=systems, budgets=(20, 40), **COMMON)
    assert list(both.columns) == analysis.SWEEP_COLUMNS
    assert both.budget.tolist() == [20] * 3 + [40] * 3
    for budget in (20, 40):
        alone, _ = analysis.strength_sweep(prepared, systems=systems, budget=budget, **COMMON)
        assert (alone.budget == budget).all()
        pd.testing.assert_frame_equal(both[both.budget == budget].reset_index(drop=True), alone, check_dtype=False)
    assert both[both.budget == 20]['R@100'].tolist() != both[both.budget == 40]['R@100'].tolist()
    summary = analysis.sweep_summary(both, 'R@100')
    assert list(summary.index) == [(20, 'Rerank'), (20, 'SlideGAR'), (20, 'GAREN'), (40, 'Rerank'),
                                   (40, 'SlideGAR'), (40, 'GAREN')]
    tests = analysis.sweep_tests(perquery)
    assert set(tests.budget) == {20, 40}
    assert tests[tests.system == 'GAREN'].p_value.isna().all()
    with pytest.raises(ValueError, match='plot one at a time'):
        analysis.plot_strength_sweep(both)


def test_one_fusion_for_every_system(small):
    _, prepared = small
    systems = ['Rerank', 'GAREN', 'GAREN+']
    plain, _ = analysis.strength_sweep(prepared, systems=systems, budget=40, variants={'GAREN-f': {'fusion': 0.5}},
                                       **COMMON)
    fused, _ = analysis.strength_sweep(prepared, systems=systems, budget=40, fusion=0.5, **COMMON)
    plain, fused = plain.set_index('system'), fused.set_index('system')
    # GAREN followed by the fusion stage ranks as GAREN's own fusion option does (an independent code path)
    assert fused.loc['GAREN', 'nDCG@10'] == pytest.approx(plain.loc['GAREN-f', 'nDCG@10'])
    assert fused.loc['GAREN', 'nDCG@10'] != pytest.approx(plain.loc['GAREN', 'nDCG@10'])
    # GAREN+ gets the shared stage INSTEAD of its own fusion 0.1: the same as GAREN+ with fusion 0.5 inside
    plus = analysis.strength_sweep(prepared, systems=[], budget=40, **COMMON,
                                   variants={'P': {**garen._compare.GAREN_PLUS, 'fusion': 0.5}})[0]
    assert fused.loc['GAREN+', 'nDCG@10'] == pytest.approx(plus['nDCG@10'].iloc[0])


def test_the_sweep_says_which_rows_carry_a_fusion_of_their_own(small, tmp_path, capsys):
    """GAREN+ without the shared stage has a first-stage fusion no baseline row has; compare says so under its table,
    and so must the sweep's printout. A variant with its own fusion has it too, and under --fusion has both."""
    root, _ = small
    args = ['--dataset', str(root / 'collection'), '--workdir', str(root / 'work'), '--graph', 'bm25', '--no-minilm',
            '--navigator', 'vote', '--sigmas', '0.5', '--noise-seeds', '0', '--partition-seeds', '42', '--budget', '40',
            '--systems', 'Rerank', 'GAREN+', '--variant', 'F:fusion=0.2', '--variant', 'T:tau_switch=2',
            '--out', str(tmp_path / 'n.csv')]
    load_example().main(args)
    lines = capsys.readouterr().out.splitlines()
    plus = [line for line in lines if line.startswith('GAREN+:')]
    assert len(plus) == 1
    assert plus[0].endswith('Its fusion with the first stage would help any system and no other row has it here: '
                            '`--fusion 0.1` gives that same stage, its weights below the top 10 included, to every row '
                            '(GAREN+ then drops its own).')
    assert [line for line in lines if line.startswith(('F:', 'T:', 'F, T:'))] == [
        'F: GAREN with its own fusion with the first stage (fusion or tail_fusion or observed_fusion set), which no '
        'baseline row has here: `--fusion W` gives one stage to every row.']
    load_example().main([*args, '--fusion', '0.1'])
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith('GAREN+:')][0].endswith(
        "Here every row got the same fusion stage with the first stage, in place of GAREN+'s own.")
    assert [line for line in lines if line.startswith('F:')] == [
        'F: GAREN with its own fusion with the first stage (fusion or tail_fusion or observed_fusion set), applied '
        'before the shared stage, so the first stage counts twice there; GAREN+ runs the shared stage in place of its '
        'own.']
    load_example().main([*args[:args.index('--systems')], '--systems', 'Rerank', '--out', str(tmp_path / 'n.csv')])
    assert not [line for line in capsys.readouterr().out.splitlines() if line.startswith(('GAREN+:', 'F:'))]


def test_cli_budgets_fusion_and_strict(small, tmp_path, capsys):
    root, prepared = small
    args = ['--dataset', str(root / 'collection'), '--workdir', str(root / 'work'), '--graph', 'bm25', '--no-minilm',
            '--navigator', 'vote', '--sigmas', '0.5', '--noise-seeds', '0', '--partition-seeds', '42',
            '--systems', 'Rerank', 'GAREN']
    out, plot = tmp_path / 'b.csv', tmp_path / 'b.png'
    load_example().main([*args, '--budgets', '20', '40', '--fusion', '0.1', '--out', str(out), '--plot', str(plot)])
    table = pd.read_csv(out)
    assert list(table.columns) == analysis.SWEEP_COLUMNS
    assert table.budget.tolist() == [20, 20, 40, 40]
    assert (tmp_path / 'b.b20.png').stat().st_size > 0
    assert (tmp_path / 'b.b40.png').stat().st_size > 0
    expected, perquery = analysis.strength_sweep(prepared, systems=['Rerank', 'GAREN'], budgets=(20, 40),
                                                 fusion=0.1, **COMMON)
    pd.testing.assert_frame_equal(table, expected, check_dtype=False)
    # beside the CSV, its provenance: the command, this checkout's code, the collection, the CSV's own SHA-256
    import hashlib

    import pyterrier_garen as garen
    record = garen.read_sidecar(out)
    assert record['status'] == 'recorded'
    assert record['sha256'] == hashlib.sha256(out.read_bytes()).hexdigest()
    assert record['command'].startswith('python examples/strength_sweep.py --dataset ')
    assert '--budgets 20 40 --fusion 0.1' in record['command']
    assert record['code'] == garen.code_version()
    assert record['collection_sha256'] == garen.collection_fingerprint(prepared.dataset)
    assert (record['documents'], record['queries'], record['file']) == (160, perquery.qid.nunique(), 'b.csv')
    assert 'numpy' in record['packages']
    printed = capsys.readouterr().out
    assert f'(its provenance in {out}.json), its per-query values {tmp_path / "b.perquery.csv.gz"}' in printed
    # and every query's values, whose means are the CSV's (what sweep_verdict.py --paired tests)
    per = pd.read_csv(tmp_path / 'b.perquery.csv.gz')
    pd.testing.assert_frame_equal(per, perquery.astype({'qid': per.qid.dtype}), check_dtype=False)
    assert analysis.load_per_query({'c': out}).collection.unique().tolist() == ['c']
    # --fusion alone is GAREN+'s stage, and the line says so
    assert ('first-stage fusion 0.1 for every system, below the top 10 first-stage fusion 0.5, below the top 10 '
            'observation-order fusion 3;') in printed
    load_example().main([*args, '--budget', '40', '--head-rerank', '5', '--out', str(out)])
    expected, _ = analysis.strength_sweep(prepared, systems=['Rerank', 'GAREN'], budget=40, head_rerank=5, **COMMON)
    pd.testing.assert_frame_equal(pd.read_csv(out), expected, check_dtype=False)
    assert 'budget 40, navigator vote, top 5 re-ranked once more for every system that uses the reranker;' in \
        capsys.readouterr().out
    load_example().main([*args, '--budget', '40', '--fusion', '0.1', '--tail-fusion', '2', '--fusion-head', '3',
                         '--observed-fusion', '1', '--out', str(out)])
    expected, _ = analysis.strength_sweep(prepared, systems=['Rerank', 'GAREN'], budget=40, fusion=0.1,
                                          tail_fusion=2.0, fusion_head=3, observed_fusion=1.0, **COMMON)
    pd.testing.assert_frame_equal(pd.read_csv(out), expected, check_dtype=False)
    printed = capsys.readouterr().out
    assert 'below the top 3 first-stage fusion 2,' in printed
    assert 'below the top 3 observation-order fusion 1;' in printed
    load_example().main([*args, '--budget', '30', '--out', str(out)])
    assert pd.read_csv(out).budget.tolist() == [30, 30]
    # 160 documents: a budget of 160 warns, and --strict makes it an error
    with pytest.warns(UserWarning, match='at least the 160 documents'):
        load_example().main([*args, '--budget', '160', '--systems', 'Rerank', '--out', str(out)])
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        load_example().main([*args, '--budget', '160', '--systems', 'Rerank', '--strict', '--out', str(out)])
    assert refused.value.code == 2  # a user error, as on the command line (docs/robustness.md)
    said = capsys.readouterr().err
    assert said.startswith('error: ')
    assert 'at least the 160 documents' in said
    assert said.endswith('(--strict turns warnings into errors)\n')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        load_example().main([*args, '--budget', '159', '--systems', 'Rerank', '--strict', '--out', str(out)])


def test_build_systems_gives_every_system_the_same_fusion_and_final_order(small):
    from pyterrier_garen import GAREN, FirstStageFusion, SlideGAR, VoteNavigator, build_systems
    from pyterrier_garen.analysis import SimulatedReranker
    _, prepared = small
    reranker = SimulatedReranker(garen.evaluation_qrels(prepared.dataset), noise=0.5)
    pipes = build_systems(prepared, reranker, VoteNavigator(), systems=['BM25', 'GAR', 'SlideGAR', 'GAREN+'],
                          fusion=0.2, final_order='paper')

    def stages(pipe):
        return list(getattr(pipe, '_transformers', [pipe]))
    for name, pipe in pipes.items():
        last = stages(pipe)[-1]
        assert isinstance(last, FirstStageFusion), name
        assert last.weight == 0.2
    plus = next(t for t in stages(pipes['GAREN+']) if isinstance(t, GAREN))
    assert plus.fusion == 0
    assert plus.evidence_weight == 0.5
    assert plus.final_order == 'paper'
    assert next(t for t in stages(pipes['SlideGAR']) if isinstance(t, SlideGAR)).final_order == 'paper'
    alone = build_systems(prepared, reranker, VoteNavigator(), systems=['GAREN+'])['GAREN+']
    assert next(t for t in stages(alone) if isinstance(t, GAREN)).fusion == 0.1  # its own fusion without --fusion
    with pytest.raises(ValueError, match='fusion'):
        build_systems(prepared, reranker, VoteNavigator(), systems=['GAR'], fusion=-1)


def test_tail_fusion_is_one_stage_for_every_system_and_equals_the_stage_on_the_plain_run(small, tmp_path):
    from pyterrier_garen import GAREN, FirstStageFusion, VoteNavigator, build_systems
    from pyterrier_garen.analysis import SimulatedReranker
    _, prepared = small
    reranker = SimulatedReranker(garen.evaluation_qrels(prepared.dataset), noise=0.5)

    def stages(pipe):
        return list(getattr(pipe, '_transformers', [pipe]))
    # --tail-fusion without --fusion still appends the stage (head kept as the system left it), so GAREN+ drops its
    # own fusion there too
    pipes = build_systems(prepared, reranker, VoteNavigator(), systems=['GAR', 'SlideGAR', 'GAREN+'],
                          tail_fusion=0.7, fusion_head=5)
    for name, pipe in pipes.items():
        last = stages(pipe)[-1]
        assert isinstance(last, FirstStageFusion), name
        assert (last.weight, last.tail_weight, last.head) == (0, 0.7, 5)
    plus = next(t for t in stages(pipes['GAREN+']) if isinstance(t, GAREN))
    assert (plus.fusion, plus.tail_fusion, plus.observed_fusion) == (0, None, 0)
    # --observed-fusion alone appends it too
    pipes = build_systems(prepared, reranker, VoteNavigator(), systems=['RGS', 'GAREN+'], observed_fusion=1.5)
    for name, pipe in pipes.items():
        last = stages(pipe)[-1]
        assert (last.weight, last.tail_weight, last.observed_weight, last.head) == (0, None, 1.5, 10), name
    plus = next(t for t in stages(pipes['GAREN+']) if isinstance(t, GAREN))
    assert (plus.fusion, plus.tail_fusion, plus.observed_fusion) == (0, None, 0)
    with pytest.raises(ValueError, match='observed_fusion'):
        build_systems(prepared, reranker, VoteNavigator(), systems=['GAR'], observed_fusion=-1)
    with pytest.raises(ValueError, match='tail_fusion'):
        build_systems(prepared, reranker, VoteNavigator(), systems=['GAR'], tail_fusion=-1)
    # the sweep's row equals GAREN's plain run through the stage, evaluated here (head 3, so that nDCG@10 sees the
    # tail; with budget 40 every order has the same R@100)
    topics = analysis.judged_topics(prepared.dataset, garen.evaluation_qrels(prepared.dataset))
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    table, _ = analysis.strength_sweep(prepared, systems=['GAREN'], budget=40, fusion=0.1, tail_fusion=2.0,
                                       fusion_head=3, **COMMON)
    plain = build_systems(prepared, SimulatedReranker(garen.evaluation_qrels(prepared.dataset), noise=0.5, seed=0),
                          VoteNavigator(), systems=['GAREN'], budget=40,
                          first_stage=pt.Transformer.from_df(first))['GAREN'](topics)
    run = FirstStageFusion(first, 0.1, tail_weight=2.0, head=3)(plain)
    from pyterrier_garen._sweep import _evaluate
    expected = _evaluate(run, garen.evaluation_qrels(prepared.dataset), topics.qid.astype(str).tolist())
    assert table['R@100'].iloc[0] == pytest.approx(expected['R@100'].mean())
    assert table['nDCG@10'].iloc[0] == pytest.approx(expected['nDCG@10'].mean())
    whole, _ = analysis.strength_sweep(prepared, systems=['GAREN'], budget=40, fusion=0.1, observed_fusion=0.,
                                       **COMMON)  # the flat fusion over the whole list
    assert table['nDCG@10'].iloc[0] != pytest.approx(whole['nDCG@10'].iloc[0])
    head10, _ = analysis.strength_sweep(prepared, systems=['GAREN'], budget=40, fusion=0.1, tail_fusion=2.0, **COMMON)
    assert head10['nDCG@10'].iloc[0] == pytest.approx(whole['nDCG@10'].iloc[0])  # the top 10 is the same


def test_compare_cli_passes_the_depth_aware_fusion(monkeypatch, capsys):
    import pyterrier_garen._compare as compare_module
    from pyterrier_garen.__main__ import main
    seen = {}

    def recorded(dataset=None, **kwargs):
        seen.update(kwargs)
        return pd.DataFrame({'name': ['GAREN'], 'nDCG@10': [0.5], 'R@100': [0.7]})
    monkeypatch.setattr(compare_module, 'compare', recorded)
    main(['compare', '--fusion', '0.1', '--tail-fusion', '1', '--observed-fusion', '2', '--fusion-head', '5',
          '--quiet'])
    assert (seen['fusion'], seen['tail_fusion'], seen['observed_fusion'], seen['fusion_head']) == (0.1, 1.0, 2.0, 5)
    main(['compare', '--quiet'])
    assert (seen['fusion'], seen['tail_fusion'], seen['observed_fusion'], seen['fusion_head']) == (0.0, None, None, 10)
    main(['compare', '--fusion', '0.1', '--quiet'])  # compare() resolves the None to GAREN+'s stage
    assert (seen['fusion'], seen['tail_fusion'], seen['observed_fusion']) == (0.1, None, None)
    main(['compare', '--fusion', '0.1', '--observed-fusion', '0', '--quiet'])
    assert (seen['fusion'], seen['tail_fusion'], seen['observed_fusion']) == (0.1, None, 0.0)


def test_garen_plus_legend_says_whether_the_baselines_got_its_fusion():
    from pyterrier_garen.__main__ import build_parser
    from pyterrier_garen._compare import garen_plus_legend
    alone, shared = garen_plus_legend(), garen_plus_legend(shared=True)
    assert 'no other row has it here: `--fusion 0.1` gives that same stage' in alone
    assert 'no other row' not in shared
    assert 'Here every row got the same fusion stage' in shared
    # the flag the legend names is compare's own and, alone, gives GAREN+'s three weights
    from pyterrier_garen._compare import GAREN_PLUS, resolve_fusion
    args = build_parser().parse_args(['compare', '--fusion', '0.1'])
    assert (args.fusion, *resolve_fusion(args.fusion, args.tail_fusion, args.observed_fusion)) == (0.1, 0.5, 3.0)
    assert (GAREN_PLUS['fusion'], GAREN_PLUS['tail_fusion'], GAREN_PLUS['observed_fusion']) == (0.1, 0.5, 3.0)


def test_resolve_fusion_by_hand():
    from pyterrier_garen.analysis import resolve_fusion
    assert resolve_fusion(0.1) == (0.5, 3.0)  # alone: GAREN+'s weights below the head, whatever the head weight
    assert resolve_fusion(0.7, None, None) == (0.5, 3.0)
    assert resolve_fusion(0.1, 1.0) == (1.0, 0.)  # a tail weight given: no observation term unless asked
    assert resolve_fusion(0.1, None, 0.) == (None, 0.)  # the flat fusion
    assert resolve_fusion(0.1, None, 2.0) == (None, 2.0)
    assert resolve_fusion(0.) == (None, 0.)  # no fusion: nothing below the head either
    assert resolve_fusion(0., 0.4) == (0.4, 0.)
    assert resolve_fusion(0., None, 1.5) == (None, 1.5)
    said = {'fusion': 'fusion must be a finite number >= 0, got -0.1 (first-stage fusion weight, 0 = off)',
            'tail_fusion': 'tail_fusion must be a finite number >= 0 or None, got -1.0 (first-stage weight below the '
                           'head, None = off)',
            'observed_fusion': "observed_fusion must be a finite number >= 0 or None, got -1.0 (observation-order "
                               "weight below the head, 0 = off, None = GAREN+'s with --fusion alone)"}
    for bad in (dict(fusion=-0.1), dict(fusion=0.1, tail_fusion=-1.), dict(fusion=0.1, observed_fusion=-1.)):
        name = next(k for k, v in bad.items() if v < 0)
        with pytest.raises(ValueError, match=f'^{re.escape(said[name])}$'):  # each error names its parameter
            resolve_fusion(**bad)


def test_fusion_alone_gives_every_system_garen_plus_stage_and_leaves_garen_plus_as_it_is(small):
    """``--fusion 0.1`` is GAREN+'s own stage: GAREN+'s ranking is the one it has without the flag, every document
    of every query in the same place (budget 40, where the order below the top 10 differs between the stages), and
    a baseline's is its plain ranking through ``FirstStageFusion(first, 0.1, tail_weight=0.5, observed_weight=3)``."""
    from pyterrier_garen import FirstStageFusion, VoteNavigator, build_systems
    from pyterrier_garen.analysis import SimulatedReranker
    _, prepared = small
    qrels = garen.evaluation_qrels(prepared.dataset)
    topics = analysis.judged_topics(prepared.dataset, qrels)
    first = prepared.bm25_index.bm25(k1=0.9, b=0.4, num_results=1000)(topics)
    source = pt.Transformer.from_df(first)

    def runs(**fusion):
        pipes = build_systems(prepared, SimulatedReranker(qrels, noise=1.0, seed=3), VoteNavigator(), budget=40,
                              first_stage=source, systems=['GAR', 'SlideGAR', 'GAREN+'], **fusion)
        return {name: {q: g.sort_values('rank').docno.tolist() for q, g in pipe(topics).groupby('qid')}
                for name, pipe in pipes.items()}
    alone, shared, flat = runs(), runs(fusion=0.1), runs(fusion=0.1, observed_fusion=0.)
    assert shared['GAREN+'] == alone['GAREN+']
    assert flat['GAREN+'] != alone['GAREN+']  # the flat stage is another order: the check above can fail
    for name in ('GAR', 'SlideGAR'):
        plain = {q: pd.DataFrame({'qid': q, 'docno': d, 'rank': range(len(d))}) for q, d in alone[name].items()}
        for stage, kwargs in ((shared, dict(tail_weight=0.5, observed_weight=3.)), (flat, {})):
            if kwargs:  # the observation order comes from the search's iteration column: run it again, unfused
                pipe = build_systems(prepared, SimulatedReranker(qrels, noise=1.0, seed=3), VoteNavigator(),
                                     budget=40, first_stage=source, systems=[name])[name]
                fused = FirstStageFusion(first, 0.1, **kwargs)(pipe(topics))
            else:
                fused = FirstStageFusion(first, 0.1)(pd.concat(plain.values()))
            expected = {q: g.sort_values('rank').docno.tolist() for q, g in fused.groupby('qid')}
            assert stage[name] == expected, name
        assert shared[name] != flat[name], name


def test_sweep_variants_get_the_resolved_stage_too(small):
    """In the sweep a variant with GAREN+'s search options and ``fusion`` alone gets the same stage as the GAREN+
    row: both rows equal, at a budget (150 of 160 documents) where R@100 depends on the order below the top 10."""
    _, prepared = small
    search = {k: v for k, v in garen._compare.GAREN_PLUS.items() if k not in ('fusion', 'tail_fusion',
                                                                          'observed_fusion')}
    common = {**COMMON, 'sigmas': (1.0,)}
    shared, _ = analysis.strength_sweep(prepared, systems=['GAREN+'], budget=150, fusion=0.1,
                                        variants={'V': search}, **common)
    flat, _ = analysis.strength_sweep(prepared, systems=['GAREN+'], budget=150, fusion=0.1, observed_fusion=0.,
                                      variants={'V': search}, **common)
    for table in (shared, flat):
        rows = table.set_index('system')
        assert rows.loc['V', 'R@100'] == pytest.approx(rows.loc['GAREN+', 'R@100'])
        assert rows.loc['V', 'nDCG@10'] == pytest.approx(rows.loc['GAREN+', 'nDCG@10'])
    assert shared.set_index('system').loc['V', 'R@100'] != pytest.approx(flat.set_index('system').loc['V', 'R@100'])


def test_minilm_only_sweep_and_no_reranker(small, tmp_path):
    """``--sigmas`` without values sweeps MiniLM alone; with ``--no-minilm`` too nothing is left, which is an error
    that says so (the function likewise)."""
    root, prepared = small
    with pytest.raises(ValueError, match='no reranker to sweep'):
        analysis.strength_sweep(prepared, systems=['GAR'], sigmas=(), noise_seeds=(0,), partition_seeds=(42,),
                                minilm=False)
    args = ['--dataset', str(root / 'collection'), '--workdir', str(root / 'work'), '--graph', 'bm25',
            '--navigator', 'vote', '--partition-seeds', '42', '--systems', 'GAR', '--out', str(tmp_path / 'x.csv')]
    with pytest.raises(SystemExit):
        load_example().main([*args, '--no-minilm', '--sigmas'])


@pytest.mark.parametrize(('kwargs', 'message'), [
    ({'budgets': [50, 100, 50]}, 'budgets repeat 50: give each value once (got 50 100 50)'),
    ({'budgets': []}, 'budgets is empty; give at least one value'),
    ({'budgets': [100, 0]}, 'budget must be a positive integer, got 0 (documents reranked per query)'),
    ({'sigmas': [0.5, 1.0, 0.5]}, 'sigmas repeat 0.5: give each value once (got 0.5 1 0.5)'),
    ({'sigmas': [-0.25]}, 'sigma must be a finite number >= 0, got -0.25 (noise of the simulated reranker)'),
    ({'noise_seeds': [1, 1]}, 'noise_seeds repeat 1: give each value once (got 1 1)'),
    ({'noise_seeds': [True]}, 'noise_seed must be an integer, got True'),
    ({'partition_seeds': [43, 42, 43]}, 'partition_seeds repeat 43: give each value once (got 43 42 43)'),
    ({'partition_seeds': [42.5]}, 'partition_seed must be an integer, got 42.5'),
    ({'num_queries': 0}, 'num_queries must be a positive integer or None, got 0 (None: every judged query)'),
    ({'systems': ['GAREN', 'RGS', 'GAREN']}, 'systems repeat GAREN: give each system once (each is one row per '
                                             'configuration)'),
    ({'systems': ['GAREN', 'Nope']}, "unknown system 'Nope'; choose from ['BM25', 'Rerank', 'GAR', 'SlideGAR', "
                                     "'RGS', 'GAREN', 'GAREN-explore', 'GAREN-exploit', 'GAREN-noprop', "
                                     "'GAREN-vote', 'GAREN-doc', 'GAREN+']"),
    # a GAREN variant: its name must be its own, its options GAREN's, their values ones GAREN accepts
    ({'variants': {'GAREN': {'p': 0.5}}}, "variant 'GAREN' takes the name of a registered system, whose row it would "
                                          'replace; give the variant a name of its own (e.g. "GAREN-t2:tau_switch=2")'),
    ({'variants': {'RGS': {}}}, "variant 'RGS' takes the name of a registered system, whose row it would replace; "
                                'give the variant a name of its own (e.g. "GAREN-t2:tau_switch=2")'),
    ({'variants': {'X': {'budget': 50}}}, "variant 'X': 'budget' cannot be set here: the sweep sets it (--budgets)"),
    ({'variants': {'X': {'p': 0.5, 'tau': 2}}}, "variant 'X': 'tau' cannot be set here: GAREN has no option 'tau'; "
                                                'its options are window, keep, group_budget, tau_switch, strategy, '
                                                'propagate, p, alpha, evidence_weight, interleave, '
                                                'adaptive_interleave, switch_members, fusion, tail_fusion, '
                                                'observed_fusion, member_order, final_order, feedback, '
                                                'link_feedback, dropped_vote, vote_weight, frontier, '
                                                'first_stage_floor, head_rerank, trace, verbose'),
    ({'variants': {'X': {'p': 1.5}}}, "variant 'X': p must be a number strictly between 0 and 1, got 1.5"),
    ({'variants': {'ok': {'p': 0.5}, 'X': {'window': 5, 'keep': 9}}},
     "variant 'X': keep (h=9) must be smaller than window (w=5), otherwise no new document can enter the window; "
     'e.g. keep=2'),
])
def test_sweep_arguments_are_checked_before_anything_runs(small, kwargs, message):
    """A repeated value would run one configuration twice and count its queries twice in the paired tests; zero
    queries used to mean every query. Each is refused by name, before a partition or a run is built (the whole
    message pinned: the seeds' errors carry no note)."""
    message = f'^{re.escape(message)}$'
    with pytest.raises(ValueError, match=message):
        analysis.check_sweep_arguments(**kwargs)
    root, prepared = small
    full = {'sigmas': [0.5], 'noise_seeds': [0], 'partition_seeds': [42], 'budgets': [20], 'systems': ['GAR'],
            **kwargs}
    with pytest.raises(ValueError, match=message):
        analysis.strength_sweep(prepared, minilm=False, **full)
    analysis.check_sweep_arguments(sigmas=[], noise_seeds=[0, 1], partition_seeds=[42], budgets=[50, 100],
                                   num_queries=3)  # MiniLM only, distinct values: accepted
    analysis.check_sweep_arguments(variants={'GAREN-t2': {'tau_switch': 2, 'final_order': 'paper'}, 'Y': {}})


def test_cli_names_the_flag_of_a_bad_sweep_argument(small, tmp_path, capsys):
    """The script refuses a repeated budget, seed or sigma and ``--queries 0`` with the flag's name, before it
    prepares anything (the workdir is not created); ``--budget`` and ``--budgets`` together are refused even when
    ``--budget`` is the default value (argparse cannot tell a given default from an absent flag otherwise)."""
    root, _ = small
    work = tmp_path / 'never'
    args = ['--dataset', str(root / 'collection'), '--workdir', str(work), '--out', str(tmp_path / 'x.csv')]
    for extra, said in [(['--budgets', '100', '100'], '--budgets repeat 100'),
                        (['--queries', '0'], '--queries must be a positive integer'),
                        (['--noise-seeds', '0', '0'], '--noise-seeds repeat 0'),
                        (['--sigmas', '1', '1'], '--sigmas repeat 1'),
                        (['--budget', '0'], '--budget must be a positive integer'),
                        (['--budget', '100', '--budgets', '200'], 'not allowed with argument --budget'),
                        (['--variant', 'X:nonsense=1'], "--variant 'X': 'nonsense' cannot be set here"),
                        (['--variant', 'GAREN+:p=0.5'], "--variant 'GAREN+' takes the name of a registered system"),
                        (['--variant', 'X:p=0.5', '--variant', 'X:p=0.7'], "--variant 'X' is given twice"),
                        (['--systems', 'RGS', 'GAR', 'RGS'], '--systems repeat RGS: give each system once')]:
        with pytest.raises(SystemExit):
            load_example().main([*args, *extra])
        assert said in capsys.readouterr().err
    assert not work.exists()


def test_variants_are_parsed_from_the_command_line_as_written():
    parsed = analysis.parse_variants(['GAREN-t2:tau_switch=2', ' B : p = 0.7 , final_order=paper,strategy="explore" ',
                                      'C', 'D:', 'E:propagate=False,tail_fusion=None'])
    assert parsed == {'GAREN-t2': {'tau_switch': 2}, 'B': {'p': 0.7, 'final_order': 'paper', 'strategy': 'explore'},
                      'C': {}, 'D': {}, 'E': {'propagate': False, 'tail_fusion': None}}
    assert type(parsed['GAREN-t2']['tau_switch']) is int
    assert analysis.parse_variants([]) == {}


@pytest.mark.parametrize(('texts', 'message'), [
    (['X:p'], "--variant 'X:p': expected NAME:key=value,key=value (got 'p')"),
    (['X:=3'], "--variant 'X:=3': expected NAME:key=value,key=value (got '=3')"),
    ([':p=0.5'], "--variant ':p=0.5': give the variant a name, e.g. \"GAREN-t2:tau_switch=2\""),
    (['A:p=0.5', ' A :p=0.7'], "--variant 'A' is given twice; give each variant a name of its own"),
    (['A:p=7'], "--variant 'A': p must be a number strictly between 0 and 1, got 7"),  # and checked
])
def test_a_malformed_variant_is_refused_naming_it(texts, message):
    with pytest.raises(ValueError, match=f'^{re.escape(message)}$'):
        analysis.parse_variants(texts)


def test_a_variant_is_named_by_the_flag_the_caller_gives():
    bad = {'X': {'p': 2}}
    said = "'X': p must be a number strictly between 0 and 1, got 2"
    for kwargs, flag in [({}, 'variant'), ({'names': {'budgets': '--budgets'}}, 'variant'),
                         ({'names': {'variants': '--variant'}}, '--variant')]:
        with pytest.raises(ValueError, match=f'^{re.escape(flag)} {re.escape(said)}$'):
            analysis.check_sweep_arguments(variants=bad, **kwargs)
    with pytest.raises(ValueError, match=f'^variant {re.escape(said)}$'):
        analysis.check_variants(bad)
    # a value may hold '=': the first '=' of an item splits it
    with pytest.raises(ValueError, match=r"^--variant 'X': member_order must be one of \('first_stage', 'evidence'\), "
                                         r"got 'a=b'$"):
        analysis.parse_variants(['X:member_order="a=b"'])


def test_qrels_without_a_relevant_document_are_refused_before_anything_runs(small, tmp_path):
    """Labels 0 and below only: the sweep ran every system over no query, then failed inside its summary with
    numpy's ``ufunc 'add' did not contain a loop`` (and the script after prepare had built every artifact)."""
    import dataclasses
    import shutil
    root, prepared = small
    folder = shutil.copytree(root / 'collection', tmp_path / 'unjudged')
    lines = (folder / 'qrels.txt').read_text().splitlines()
    (folder / 'qrels.txt').write_text(''.join(' '.join(line.split()[:3] + [str(-(i % 2))]) + '\n'
                                              for i, line in enumerate(lines)))  # labels 0 and -1
    dataset = garen.LocalDataset(folder)
    said = (rf"^strength_sweep: none of the {len(dataset.get_topics())} queries of {re.escape(repr(dataset))} has a "
            r'relevant document \(a label above 0\) in the qrels, so there is nothing to measure; check the qrels')
    with pytest.raises(ValueError, match=said):
        analysis.strength_sweep(dataclasses.replace(prepared, dataset=dataset), systems=['GAREN'], budget=40, **COMMON)
    work = tmp_path / 'never'
    with pytest.raises(ValueError, match=said):
        load_example().main(['--dataset', str(folder), '--workdir', str(work), '--out', str(tmp_path / 'x.csv'),
                             '--no-minilm', '--sigmas', '0.5', '--budget', '40'])
    assert not work.exists()  # refused before prepare built anything


def test_a_budget_that_leaves_no_adaptive_step_is_said_once_over_several_partitions(small):
    """Each partition after the first runs only the systems that use the groups: it said the same advice again,
    naming a subset of the systems."""
    _, prepared = small
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter('always')
        analysis.strength_sweep(prepared, systems=['Rerank', 'SlideGAR', 'GAREN'], budget=10, sigmas=(0.5,),
                                noise_seeds=(0,), partition_seeds=(42, 43), minilm=False, navigator='vote')
    said = [str(w.message) for w in record if 'no adaptive step' in str(w.message)]
    assert len(said) == 1, said
    assert said[0].startswith('budget=10 leaves SlideGAR, GAREN no adaptive step')
