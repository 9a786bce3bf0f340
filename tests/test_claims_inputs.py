"""What the verdicts refuse to read: sweep tables and per-query files that would make a mean or a paired test cover
other runs or other queries than it says (a missing noise seed, qids written two ways, a NaN, an empty file, files of
two collections under one name), cost rows that would go unused, and comparisons with no baseline."""
import json
import math

import pandas as pd
import pytest

from pyterrier_garen import analysis

from _scripts import load_script
from test_claims import rows
from test_claims_paired import means, per_query_rows, write_sweep


def test_a_baseline_without_a_noise_seed_the_system_has_is_refused():
    perquery = per_query_rows()  # S and B with noise seeds 0 and 1 on collections a and b
    lacking = perquery[~((perquery.system == 'B') & (perquery.noise_seed == 1) & (perquery.collection == 'b'))]
    # paired, S's mean on b would be over seeds 0 and 1 and B's over seed 0 alone: (.6 + .5) / 2 against .5
    with pytest.raises(ValueError, match=r'^b: B at budget 100 with sigma=1 has no run with noise seed 1, which S has; '
                                         r'the comparison pairs the seeds: run B with them too, or leave S\'s out$'):
        analysis.baseline_margins(means(lacking), 'S', ['B'])
    # the other way round is the documented pairing: a seed only the baseline ran does not count
    only_b = perquery[~((perquery.system == 'S') & (perquery.noise_seed == 1))]
    out = analysis.baseline_margins(means(only_b), 'S', ['B'], measures=['nDCG@10'])
    # seed 0 alone: a (.6 - .5), b (.6 - .5); mean .1
    assert out.delta.tolist() == [pytest.approx(.1)]


def test_a_baseline_with_none_of_the_systems_seeds_is_refused_too():
    perquery = per_query_rows()
    # on b, B ran seed 2 only: pairing would drop all its rows there and leave the cell out without a word
    other = perquery[~((perquery.system == 'B') & (perquery.collection == 'b'))]
    moved = perquery[(perquery.system == 'B') & (perquery.collection == 'b') & (perquery.noise_seed == 0)]
    table = means(pd.concat([other, moved.assign(noise_seed=2.0)], ignore_index=True))
    with pytest.raises(ValueError, match=r'^b: B at budget 100 with sigma=1 has no run with noise seed 0, 1, which S '
                                         r'has'):
        analysis.baseline_margins(table, 'S', ['B'])


def test_a_paired_test_over_queries_one_system_lacks_is_refused():
    perquery = per_query_rows()
    # B's qids written without their leading zero: '00' and '0' are different queries to the test
    renamed = perquery.assign(qid=perquery.qid.where(perquery.system == 'S', perquery.qid.str.lstrip('0')))
    with pytest.raises(ValueError, match=r"^the per-query rows of S and B at budget 100 with sigma=1 name different "
                                         r"queries \(3 and 3, 0 in common; e\.g\. \['00', '01', '02'\] in one only\); "
                                         r"the paired test needs both measured on the same queries"):
        analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=renamed)
    # one query missing for B on a: 3 against 2
    fewer = perquery[~((perquery.system == 'B') & (perquery.qid == '02') & (perquery.collection == 'a'))]
    with pytest.raises(ValueError, match=r'name different queries \(3 and 2, 2 in common; e\.g\. \[\'02\'\]'):
        analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=fewer)


def test_a_row_without_a_value_is_refused_wherever_it_is_read(tmp_path):
    table = means(per_query_rows())
    table.loc[3, 'R@100'] = math.nan
    said = r'^the sweep table: .* has no R@100 \(empty, NaN or not a number; 1 rows like this\); a sweep writes every'
    perquery = per_query_rows()
    perquery.loc[4, 'nDCG@10'] = math.nan
    with pytest.raises(ValueError, match=r'^the per-query rows: B simulated sigma=1\.0 noise_seed=0\.0 '
                                         r'partition_seed=42 budget=100 qid 01 has no nDCG@10'):
        analysis.baseline_margins(means(per_query_rows()), 'S', ['B'], perquery=perquery)
    for call in (lambda: analysis.baseline_margins(table, 'S', ['B']),
                 lambda: analysis.budget_values(table, ['S'], 'R@100'),
                 lambda: analysis.budget_monotonicity(table, ['S'])):
        with pytest.raises(ValueError, match=said):
            call()
    path = tmp_path / 'x.csv'
    table.drop(columns='collection').to_csv(path, index=False)
    with pytest.raises(ValueError, match=r'x\.csv: .* has no R@100'):
        analysis.load_sweeps({'x': path})


def test_empty_files_are_refused_by_name(tmp_path):
    empty = tmp_path / 'empty.csv'
    empty.write_text('')
    with pytest.raises(ValueError, match=r"empty\.csv \(collection 'c'\) is empty: not even a header"):
        analysis.load_sweeps({'c': empty})
    header = tmp_path / 'header.csv'
    means(per_query_rows()).iloc[:0].drop(columns='collection').to_csv(header, index=False)
    with pytest.raises(ValueError, match=r"header\.csv \(collection 'c'\) holds no rows"):
        analysis.load_sweeps({'c': header})


def test_a_per_query_file_without_qids_is_refused(tmp_path):
    perquery = per_query_rows()
    a = write_sweep(tmp_path, 'a', perquery[perquery.collection == 'a'])
    side = analysis.per_query_path(a)
    pd.read_csv(side, dtype={'qid': str}).drop(columns='qid').to_csv(side, index=False, compression='gzip')
    with pytest.raises(ValueError, match=r'a\.perquery\.csv\.gz is not a per-query file of a sweep: no column qid'):
        analysis.load_per_query({'a': a})


def _record(path, **fields):
    (path.parent / f'{path.name}.json').write_text(json.dumps(fields))


def test_records_that_disagree_on_the_collection_or_its_queries_are_refused(tmp_path):
    perquery = per_query_rows()
    a = write_sweep(tmp_path, 'a', perquery[perquery.collection == 'a'])
    b = write_sweep(tmp_path, 'b', perquery[perquery.collection == 'b'])
    _record(a, collection_sha256='aaa', queries=3)
    _record(b, collection_sha256='bbb', queries=2)
    assert len(analysis.load_sweeps({'a': a, 'b': b})) == 8
    # the two files under one name: two collections
    with pytest.raises(ValueError, match=r'^a: .*a\.csv and .*b\.csv are sweeps of two different collections'):
        analysis.load_sweeps({'a': [a, b]})
    # the names swapped onto one collection
    _record(b, collection_sha256='aaa', queries=3)
    with pytest.raises(ValueError, match=r'^a and b are one collection'):
        analysis.load_sweeps({'a': a, 'b': b})
    # one collection, one reranker, two query counts: a mean over other queries
    _record(b, collection_sha256='aaa', queries=2)
    with pytest.raises(ValueError, match=r'^a: .*a\.csv ran 3 queries and .*b\.csv 2, both with sigma=1; systems are '
                                         r'compared over one set of queries'):
        analysis.load_sweeps({'a': [a, b]})
    # the record names the collection: given under the other collection's name, it is refused as a swap
    _record(a, collection='/data/a', collection_sha256='aaa', queries=3)
    _record(b, collection='b', collection_sha256='bbb', queries=2)
    assert len(analysis.load_sweeps({'a': a, 'b': b})) == 8
    assert len(analysis.load_sweeps({'mine': a})) == 4  # a name of one's own is fine
    with pytest.raises(ValueError, match=r'a\.csv is given as b, but its record says it is a sweep of a, which is '
                                         r'given too: are the two swapped\?'):
        analysis.load_sweeps({'b': a, 'a': b})
    # one collection's name is the last part of another's path: two collections, each claiming its own name
    _record(b, collection='/data/expanded/a', collection_sha256='ccc', queries=2)
    assert len(analysis.load_sweeps({'a': a, 'a-expanded': b})) == 8
    _record(b, collection_sha256='aaa', queries=2)
    # other rerankers in the second file: their own comparison, its own queries
    other = means(perquery[perquery.collection == 'b']).drop(columns='collection').assign(sigma=2.0)
    other.to_csv(b, index=False)
    assert len(analysis.load_sweeps({'a': [a, b]})) == 8


def test_cost_rows_name_their_reranker_as_the_sweep_does():
    from test_cost_matched import COSTS, table
    base = analysis.cost_matched_margins(table(), COSTS, 'GAREN+', ['RGS'], measures=['nDCG@10'])
    # 'sigma=1.0' is sigma=1: the same matches as a row for every reranker
    labelled = analysis.cost_matched_margins(table(), COSTS.assign(reranker='sigma=1.0'), 'GAREN+', ['RGS'],
                                             measures=['nDCG@10'])
    pd.testing.assert_frame_equal(labelled, base)
    for label in ('sigma 1', 'sigma=one', 'minilm'):
        with pytest.raises(ValueError, match=f"the cost table names the reranker '{label}'; name it as the sweep "
                                             "does, 'MiniLM' or 'sigma=S'"):
            analysis.cost_matched_margins(table(), COSTS.assign(reranker=label), 'GAREN+', ['RGS'])
    for value in (math.nan, math.inf, 0, 50.5):
        bad = COSTS.astype({'budget': object})
        bad.loc[0, 'budget'] = value
        with pytest.raises(ValueError, match=f"the cost table's budget must be a positive integer; got {value!r} for "
                                             r"GAREN\+"):
            analysis.cost_matched_margins(table(), bad, 'GAREN+', ['RGS'])


@pytest.mark.parametrize(('baselines', 'measures', 'message'), [
    ([], ['nDCG@10'], 'no baselines given: name at least one system to compare with'),
    (['RGS', 'GAREN+'], ['nDCG@10'], r"GAREN\+ is both the system and one of its baselines"),
    (['RGS', 'RGS'], ['nDCG@10'], 'the baselines repeat RGS: name each once'),
    (['RGS'], ['nDCG@20'], 'no measure nDCG@20 in a sweep table; choose from nDCG@10, R@100'),
])
def test_a_comparison_without_a_baseline_of_its_own_is_refused(baselines, measures, message):
    from test_cost_matched import COSTS, table
    with pytest.raises(ValueError, match=message):
        analysis.baseline_margins(table(), 'GAREN+', baselines, measures=measures)
    with pytest.raises(ValueError, match=message):
        analysis.cost_matched_margins(table(), COSTS, 'GAREN+', baselines, measures=measures)


def test_coverage_gaps_say_why_no_cell_is_left():
    table = rows(('a', 'S', 'sigma=1', 0, 42, 100, .5, .5), ('a', 'B', 'sigma=1', 0, 42, 100, .4, .4),
                 ('a', 'S', 'sigma=1', 0, 42, 200, .5, .5),
                 ('b', 'S', 'sigma=1', 0, 42, 100, .5, .5), ('b', 'S', 'sigma=1', 0, 42, 200, .5, .5))
    assert analysis.baseline_margins(table, 'S', ['B']).empty
    assert analysis.coverage_gaps(table, ['S', 'B']) == ['a: B has no rows for sigma=1 at budget 200',
                                                         'b: no rows of B']
    assert analysis.coverage_gaps(table, ['S', 'B'], budgets=[100]) == ['b: no rows of B']


def test_the_scripts_say_why_and_refuse_in_one_line(tmp_path, capsys):
    perquery = per_query_rows()
    a = write_sweep(tmp_path, 'a', perquery[perquery.collection == 'a'])
    b = write_sweep(tmp_path, 'b', perquery[perquery.collection == 'b'])
    script = load_script('examples/sweep_verdict.py')
    script.main([f'a={a}', f'b={b}', '--system', 'S', '--baselines', 'B', '--rerankers', 'sigma=1',
                 '--margin-budgets', '50'])
    printed = capsys.readouterr().out
    assert 'no cell has S, B in every collection (a: S has no rows for sigma=1 at budget 50; ' in printed
    lacking = perquery[~((perquery.system == 'B') & (perquery.noise_seed == 1))]
    c = write_sweep(tmp_path, 'c', lacking[lacking.collection == 'a'])
    with pytest.raises(SystemExit, match=r'^error: a: B at budget 100 with sigma=1 has no run with noise seed 1'):
        script.main([f'a={c}', '--system', 'S', '--baselines', 'B', '--rerankers', 'sigma=1'])


def test_measures_written_as_words_and_the_whole_message():
    table = means(per_query_rows())
    table['R@100'] = table['R@100'].astype(object)
    table.loc[3, 'R@100'] = 'n/a'
    with pytest.raises(ValueError) as info:
        analysis.baseline_margins(table, 'S', ['B'])
    row = table.loc[3]
    assert str(info.value) == (f'the sweep table: {row.system} simulated sigma=1.0 noise_seed={row.noise_seed} '
                               'partition_seed=42 budget=100 has no R@100 (empty, NaN or not a number; 1 rows like '
                               'this); a sweep writes every value: rerun it, or remove the row')


def test_a_swap_is_seen_through_a_recorded_path_with_a_trailing_slash(tmp_path):
    perquery = per_query_rows()
    a = write_sweep(tmp_path, 'a', perquery[perquery.collection == 'a'])
    b = write_sweep(tmp_path, 'b', perquery[perquery.collection == 'b'])
    _record(a, collection='/data/x/a/')
    _record(b, collection='b')
    assert len(analysis.load_sweeps({'a': a, 'b': b})) == 8
    with pytest.raises(ValueError, match='is given as b, but its record says it is a sweep of a'):
        analysis.load_sweeps({'b': a, 'a': b})


def test_a_system_measured_on_fewer_queries_than_its_baseline_is_refused():
    perquery = per_query_rows()
    fewer = perquery[~((perquery.system == 'S') & (perquery.qid == '02') & (perquery.collection == 'a'))]
    with pytest.raises(ValueError, match=r"name different queries \(2 and 3, 2 in common; e\.g\. \['02'\] in one "
                                         r"only\)"):
        analysis.baseline_margins(means(perquery), 'S', ['B'], perquery=fewer)


def test_cost_budgets_and_reranker_names_at_their_edges():
    from test_cost_matched import COSTS, table
    # budget 1 is a budget; a word is not
    one = pd.concat([COSTS, pd.DataFrame([('c1', 'BM25', 1, 0.)], columns=['collection', 'system', 'budget', 'sent'])],
                    ignore_index=True)
    base = analysis.cost_matched_margins(table(), COSTS, 'GAREN+', ['RGS'], measures=['nDCG@10'])
    pd.testing.assert_frame_equal(analysis.cost_matched_margins(table(), one, 'GAREN+', ['RGS'], measures=['nDCG@10']),
                                  base)
    words = COSTS.astype({'budget': object})
    words.loc[2, 'budget'] = 'lots'
    with pytest.raises(ValueError, match="the cost table's budget must be a positive integer; got 'lots'"):
        analysis.cost_matched_margins(table(), words, 'GAREN+', ['RGS'])
    # 'MiniLM' rows are kept apart from the sigma rows: a MiniLM cost of 0 for RGS changes nothing under sigma 1
    minilm = pd.concat([COSTS.assign(reranker=None), COSTS[COSTS.system == 'RGS'].assign(reranker='MiniLM', sent=0.)],
                       ignore_index=True)
    pd.testing.assert_frame_equal(
        analysis.cost_matched_margins(table(), minilm, 'GAREN+', ['RGS'], measures=['nDCG@10']), base)
    with pytest.raises(ValueError, match="names the reranker 'noise=1'"):
        analysis.cost_matched_margins(table(), COSTS.assign(reranker='noise=1'), 'GAREN+', ['RGS'])


def test_coverage_gaps_count_what_they_leave_out():
    specs = [('a', 'S', f'sigma={s}', 0, 42, b, .5, .5) for s in (0.25, 0.5, 1) for b in (100, 200)]
    specs += [('a', 'B', 'sigma=1', 0, 42, 100, .4, .4)]
    table = rows(*specs)
    # B lacks five of the six (reranker, budget) pairs: two are named, three counted
    assert analysis.coverage_gaps(table, ['S', 'B']) == [
        'a: B has no rows for sigma=0.25 at budget 100, sigma=0.5 at budget 100 and 3 more']
    # only the rerankers asked for; a first system absent does not stop the second from being looked at
    assert analysis.coverage_gaps(table, ['X', 'B'], rerankers=['sigma=1']) == [
        'a: no rows of X', 'a: B has no rows for sigma=1 at budget 200']
    # a table without a collection column names no collection; the list stops at `limit`
    flat = table.drop(columns='collection')
    assert analysis.coverage_gaps(flat, ['X', 'B'], rerankers=['sigma=1'], budgets=[200]) == [
        'no rows of X', 'B has no rows for sigma=1 at budget 200']
    many = [f'X{i}' for i in range(7)]
    assert analysis.coverage_gaps(table, many) == [f'a: no rows of X{i}' for i in range(5)]
    assert len(analysis.coverage_gaps(table, many, limit=6)) == 6


def test_coverage_gaps_name_two_and_count_from_the_third():
    # B lacks exactly two pairs: both named, nothing counted; exactly three: two named and 1 more
    two = rows(*[('a', 'S', 'sigma=1', 0, 42, b, .5, .5) for b in (100, 200, 400)],
               ('a', 'B', 'sigma=1', 0, 42, 100, .4, .4))
    assert analysis.coverage_gaps(two, ['B']) == ['a: B has no rows for sigma=1 at budget 200, sigma=1 at budget 400']
    three = rows(*[('a', 'S', 'sigma=1', 0, 42, b, .5, .5) for b in (50, 100, 200, 400)],
                 ('a', 'B', 'sigma=1', 0, 42, 100, .4, .4))
    assert analysis.coverage_gaps(three, ['B']) == [
        'a: B has no rows for sigma=1 at budget 50, sigma=1 at budget 200 and 1 more']
