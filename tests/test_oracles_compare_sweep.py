"""Oracles for the tables a comparison prints and a sweep reports (the twenty-eighth mutation run).

What ``compare`` prints around its table (``format_comparison``, the GAREN+ legend, the JSON record), the labels it
evaluates with (``evaluation_qrels``), and the sweep's per-query measures, summary cells and paired tests: every
value below is worked out by hand (or by a route other than the code's: the t statistic from its formula).
"""
import datetime
import json
import math
import os
import warnings

import numpy as np
import pandas as pd
import pytest

from pyterrier_garen._compare import evaluation_qrels, format_comparison, garen_plus_legend, save_comparison, \
    vectors_precision
from pyterrier_garen._sweep import _budget_keys, reranker_labels, _evaluate, judged_topics, plot_strength_sweep, \
    sweep_plot_file, sweep_summary, sweep_tests


class _Dataset:
    """A collection with the two methods evaluation reads (and, when given, a declared relevance kind)."""

    def __init__(self, qrels, topics=None, relevance=None):
        self._qrels, self._topics = qrels, topics
        if relevance is not None:
            self.relevance = relevance

    def get_qrels(self):
        return self._qrels.copy()

    def get_topics(self):
        return self._topics.copy()


def _qrels(labels, qid='q1'):
    return pd.DataFrame({'qid': [qid] * len(labels), 'docno': [f'd{i}' for i in range(len(labels))],
                         'label': labels})


# ---- evaluation_qrels: which labels are gains, and what the table says about them


def test_graded_labels_are_kept_as_stored_negative_ones_included_without_an_excluded_label():
    qrels = evaluation_qrels(_Dataset(_qrels([2, 0, -1, 1])))
    assert list(qrels.label) == [2, 0, -1, 1]
    assert qrels.attrs['labels'] == 'graded relevance, labels as stored [-1, 0, 1, 2]: the dataset declares no ' \
                                    'relevance kind'


def test_an_excluded_label_drops_every_negative_label():
    qrels = evaluation_qrels(_Dataset(_qrels([2, -100, -1, 0, 3])))
    assert list(qrels.docno) == ['d0', 'd3', 'd4']
    assert qrels.attrs['labels'].startswith('graded relevance, labels as stored [0, 2, 3]: ')
    # -99 and -101 are not the excluded label: nothing is dropped
    assert list(evaluation_qrels(_Dataset(_qrels([1, -99, -101]))).label) == [1, -99, -101]


def test_binary_when_asked_and_when_declared():
    asked = evaluation_qrels(_Dataset(_qrels([2, 0, -1, 1])), binary=True)
    assert list(asked.label) == [1, 0, 0, 1]
    assert asked.label.dtype.kind == 'i'
    assert asked.attrs['labels'] == 'binary relevance (label>0 -> 1): asked for'
    declared = _Dataset(_qrels([3, 0, 1]), relevance=('binary', 'collection.json says 1 is best'))
    qrels = evaluation_qrels(declared)
    assert list(qrels.label) == [1, 0, 1]
    assert qrels.attrs['labels'] == 'binary relevance (label>0 -> 1): collection.json says 1 is best'
    graded = evaluation_qrels(declared, binary=False)
    assert list(graded.label) == [3, 0, 1]
    assert graded.attrs['labels'] == 'graded relevance, labels as stored [0, 1, 3]: asked for'
    # binary with an excluded label: the excluded pair is gone, not turned into a 0
    both = evaluation_qrels(_Dataset(_qrels([2, -100, 0])), binary=True)
    assert (list(both.docno), list(both.label)) == (['d0', 'd2'], [1, 0])


def test_the_label_list_shows_the_eight_smallest_values():
    qrels = evaluation_qrels(_Dataset(_qrels([9, 3, 0, 7, 1, 5, 2, 8, 4, 6, 3])))
    assert qrels.attrs['labels'].startswith('graded relevance, labels as stored [0, 1, 2, 3, 4, 5, 6, 7]: ')


# ---- format_comparison: the header, the table and the legends


def _run(**changes):
    run = {'collection': 'mine', 'documents': 12345, 'queries': 40, 'total_queries': 40, 'judged_queries': 40,
           'labels': 'graded relevance, labels as stored [0, 1]: asked for', 'excluded_removed': False,
           'budget': 100, 'fusion': 0.0, 'final_order': None, 'first_stage': 'FS', 'reranker': 'RR',
           'navigator': 'NAV', 'groups': 'GROUPS', 'baseline': 'GAREN'}
    run.update(changes)
    return run


def _table(run=None, names=('BM25', 'GAREN')):
    table = pd.DataFrame({'name': list(names), 'nDCG@10': [0.123456, 0.5][:len(names)],
                          'R@100': [0.98766, 0.25][:len(names)]})
    if run is not None:
        table.attrs['run'] = run
    return table


def test_a_listwise_reranker_is_said_in_the_header_and_under_a_gar_row():
    names = ('BM25', 'GAR')
    lines = format_comparison(_table(_run(listwise=True), names)).splitlines()
    assert lines[4] == 'reranker:    RR; listwise (scores that only order each call)'
    gar = [line for line in lines if line.startswith('GAR:')]
    assert gar == ['GAR: it ranks the documents of all its batches together by score, and this reranker\'s scores '
                   'only order each call, so its order (its nDCG@10 above all) says little about GAR; SlideGAR is '
                   'GAR\'s form for listwise rerankers (measured in docs/results.md, "a listwise reranker").']
    plain = format_comparison(_table(_run(listwise=False), names)).splitlines()
    assert plain[4] == 'reranker:    RR'
    assert not [line for line in plain if line.startswith('GAR:')]
    assert not [line for line in format_comparison(_table(_run(listwise=True), ('BM25', 'GAREN'))).splitlines()
                if line.startswith('GAR:')]  # no GAR row, nothing to say


def test_header_of_a_plain_run():
    lines = format_comparison(_table(_run())).splitlines()
    assert lines[:8] == [
        'collection:  mine, 12,345 documents; 40 queries',
        'labels:      graded relevance, labels as stored [0, 1]: asked for',
        'budget:      100 documents reranked per query',
        'first stage: FS',
        'reranker:    RR',
        'navigator:   NAV',
        'groups:      GROUPS',
        '']


def test_header_says_which_queries_which_labels_which_order_and_which_fusion():
    run = _run(queries=30, total_queries=225, judged_queries=29, excluded_removed=True, final_order='score',
               fusion=0.1, tail_fusion=0.5, fusion_head=20, observed_fusion=3.0)
    lines = format_comparison(_table(run)).splitlines()
    assert lines[0] == 'collection:  mine, 12,345 documents; 30 queries (first 30 of 225), 29 with relevance labels'
    assert lines[1] == ('labels:      graded relevance, labels as stored [0, 1]: asked for; excluded documents '
                        '(label -100) removed from every run')
    assert lines[2] == ('budget:      100 documents reranked per query; final order score; first-stage fusion 0.1 '
                        'for every system; below the top 20 first-stage fusion 0.5; below the top 20 '
                        'observation-order fusion 3')
    # one query short of all of them, and every query judged but one
    one_short = format_comparison(_table(_run(queries=39, total_queries=40, judged_queries=38))).splitlines()[0]
    assert one_short == 'collection:  mine, 12,345 documents; 39 queries (first 39 of 40), 38 with relevance labels'


def test_a_run_recorded_without_fusion_says_no_fusion():
    run = _run()
    del run['fusion']
    assert format_comparison(_table(run)).splitlines()[2] == 'budget:      100 documents reranked per query'


def test_a_wide_table_prints_every_column_on_one_line_whatever_the_display_options():
    table = _table(_run())
    for i in range(40):
        table[f'measure number {i}'] = [0.25, 0.5]
    with pd.option_context('display.width', 40, 'display.max_columns', 3):
        lines = format_comparison(table).splitlines()
    assert lines[8].split()[:3] == ['name', 'nDCG@10', 'R@100']
    assert len(lines[8].split()) == 3 + 3 * 40
    assert len(lines) == 8 + 3 + 3  # the header, the table, the significance legend


def test_a_fusion_without_its_head_reads_the_default_head_of_ten():
    run = _run(fusion=0.0, tail_fusion=0.25)
    assert format_comparison(_table(run)).splitlines()[2] == ('budget:      100 documents reranked per query; below '
                                                              'the top 10 first-stage fusion 0.25')


def test_table_cells_counts_as_integers_and_the_significance_legend():
    table = _table(_run(judged_queries=37))
    table['R@100 +'] = [7.0, np.nan]
    table['R@100 -'] = [12.0, np.nan]
    table['R@100 p-value'] = [0.012345678, np.nan]
    lines = format_comparison(table).splitlines()
    head, first, second = lines[8:11]
    assert head.split() == ['name', 'nDCG@10', 'R@100', 'R@100', '+', 'R@100', '-', 'R@100', 'p-value']
    assert first.split() == ['BM25', '0.1235', '0.9877', '7', '12', '0.0123']
    assert second.split() == ['GAREN', '0.5000', '0.2500']  # the baseline's empty cells print as nothing
    assert lines[11:] == [
        '',
        '"<measure> +" / "<measure> -": queries on which a system scores higher / lower than GAREN (the baseline, '
        'hence its empty row);',
        '"<measure> p-value": two-sided paired t-test against GAREN over 37 queries, not corrected for multiple '
        'comparisons.']
    assert list(table['R@100 +'].iloc[:1]) == [7.0]  # the caller's frame is not changed


def test_one_query_is_one_query():
    table = _table(_run(queries=1, total_queries=1, judged_queries=1))
    table['R@100 p-value'] = [np.nan, np.nan]
    lines = format_comparison(table).splitlines()
    assert lines[0] == 'collection:  mine, 12,345 documents; 1 query'
    assert lines[-1] == ('"<measure> p-value": two-sided paired t-test against GAREN over 1 query, not corrected for '
                         'multiple comparisons.')
    first = format_comparison(_table(_run(queries=1, total_queries=2, judged_queries=0))).splitlines()[0]
    assert first == 'collection:  mine, 12,345 documents; 1 query (first 1 of 2), 0 with relevance labels'


def test_a_plain_experiment_frame_prints_its_table_and_names_no_baseline():
    table = _table()
    assert format_comparison(table).splitlines()[0].split() == ['name', 'nDCG@10', 'R@100']
    assert len(format_comparison(table).splitlines()) == 3
    table['nDCG@10 p-value'] = [0.5, np.nan]
    lines = format_comparison(table).splitlines()
    assert lines[-1] == ('"<measure> p-value": two-sided paired t-test against the baseline over the queries, not '
                         'corrected for multiple comparisons.')
    # a run that names no baseline and has no tests: no legend
    assert '<measure>' not in format_comparison(_table(_run(baseline=None)))


GAREN_PLUS_OPTIONS = ('evidence_weight=0.5, dropped_vote=0.0, adaptive_interleave=0.5, vote_weight=0.02, '
                      'frontier=0.25, fusion=0.1, tail_fusion=0.5, observed_fusion=3.0')


def test_garen_plus_legend_with_and_without_a_shared_fusion():
    opening = (f'GAREN+: GAREN with options beyond the paper ({GAREN_PLUS_OPTIONS}), frozen after the '
               "reranker-strength sweep on the shipped collections (docs/results.md); GAREN is the paper's algorithm. ")
    assert garen_plus_legend() == opening + (
        'Its fusion with the first stage would help any system and no other row has it here: `--fusion 0.1` gives '
        'that same stage, its weights below the top 10 included, to every row (GAREN+ then drops its own).')
    assert garen_plus_legend(shared=True) == opening + ('Here every row got the same fusion stage with the first '
                                                        "stage, in place of GAREN+'s own.")


@pytest.mark.parametrize(('changes', 'shared'), [({}, False), ({'fusion': 0.1}, True), ({'tail_fusion': 0.0}, True),
                                             ({'tail_fusion': None}, False), ({'observed_fusion': 2.0}, True),
                                             ({'observed_fusion': 0.0}, False)])
def test_the_garen_plus_legend_follows_the_shared_fusion(changes, shared):
    text = format_comparison(_table(_run(**changes), names=('GAREN', 'GAREN+')))
    assert text.splitlines()[-1] == garen_plus_legend(shared=shared)
    assert text.splitlines()[-2] == ''
    assert text.splitlines()[0] == 'collection:  mine, 12,345 documents; 40 queries'  # the header stays
    assert len(text.splitlines()) == 8 + 3 + 3 + 2  # header, table, significance legend, GAREN+ legend


def test_no_garen_plus_legend_without_its_row_or_without_names():
    assert 'GAREN+:' not in format_comparison(_table(_run(), names=('GAREN', 'GAREN-doc')))
    assert 'GAREN+:' not in format_comparison(pd.DataFrame({'nDCG@10': [0.5]}))


# ---- the JSON record and the recorded precision


def test_comparison_record(tmp_path):
    table = _table(_run(budget=50))
    table['R@100 p-value'] = [0.25, np.nan]
    path = tmp_path / 'new' / 'folder' / 'compare.json'
    before = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
    save_comparison(table, path, command='compare --json x')
    after = datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
    text = path.read_text()
    assert text.endswith('}\n')
    assert text.startswith('{\n "command"')
    record = json.loads(text)
    assert record['command'] == 'compare --json x'
    assert record['date'] in (before, after)
    assert record['cores'] == os.cpu_count()
    assert isinstance(record['load_average'], float)
    assert record['load_average'] == round(record['load_average'], 1)
    assert abs(record['load_average'] - os.getloadavg()[0]) < 5
    assert record['run'] == _run(budget=50)
    assert record['rows'] == [{'name': 'BM25', 'nDCG@10': 0.123456, 'R@100': 0.98766, 'R@100 p-value': 0.25},
                              {'name': 'GAREN', 'nDCG@10': 0.5, 'R@100': 0.25, 'R@100 p-value': None}]
    assert set(record) == {'command', 'date', 'load_average', 'cores', 'code', 'packages', 'cpu_native_bf16', 'run',
                           'rows'}
    assert record['packages']['pandas'] == pd.__version__
    save_comparison(_table(), path, command='again')  # a plain frame: no run, replaces the file
    assert json.loads(path.read_text())['run'] == {}
    assert sorted(p.name for p in path.parent.iterdir()) == ['compare.json']


def test_comparison_record_dates_in_utc_takes_the_one_minute_load_and_writes_any_value_as_text(tmp_path,
                                                                                              monkeypatch):
    import time
    utc = datetime.datetime.now(datetime.timezone.utc)
    # a zone whose date differs from UTC's now: 14 hours ahead after 10:00 UTC, 12 behind before 12:00 UTC
    zone = 'Etc/GMT-14' if utc.hour >= 11 else 'Etc/GMT+12'
    monkeypatch.setenv('TZ', zone)
    time.tzset()
    try:
        monkeypatch.setattr(os, 'getloadavg', lambda: (1.26, 2.5, 3.5))
        table = _table(_run(collection=tmp_path / 'mine', documents=np.int64(7)))
        path = tmp_path / 'compare.json'
        save_comparison(table, path, command='c')
        record = json.loads(path.read_text())
    finally:
        monkeypatch.delenv('TZ')
        time.tzset()
    assert record['date'] == datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d')
    assert record['load_average'] == 1.3
    assert record['run']['collection'] == str(tmp_path / 'mine')
    assert record['run']['documents'] == '7'


class _Vectors:
    def __init__(self, path):
        self.index_path = path


class _Prepared:
    def __init__(self, vectors):
        self.vectors = vectors


def test_vectors_precision_reads_the_record_beside_the_vectors(tmp_path):
    from pyterrier_garen._graphs import ENCODING_RECORD
    assert vectors_precision(_Prepared(None)) is None
    assert vectors_precision(_Prepared(_Vectors(tmp_path))) is None  # no record: built before it was kept
    (tmp_path / ENCODING_RECORD).write_text(json.dumps({'precision': 'bf16', 'model': 'm'}))
    assert vectors_precision(_Prepared(_Vectors(tmp_path))) == 'bf16'
    assert vectors_precision(_Prepared(_Vectors(str(tmp_path)))) == 'bf16'
    (tmp_path / ENCODING_RECORD).write_text(json.dumps({'model': 'm'}))
    assert vectors_precision(_Prepared(_Vectors(tmp_path))) is None
    (tmp_path / ENCODING_RECORD).write_text(json.dumps(['bf16']))
    assert vectors_precision(_Prepared(_Vectors(tmp_path))) is None


# ---- the sweep's per-query measures and judged topics


def test_per_query_measures_by_hand():
    qrels = pd.DataFrame({'qid': ['q1', 'q1', 'q1', 'q2', 'q3'], 'docno': ['d1', 'd2', 'd3', 'd9', 'd5'],
                          'label': [2, 1, 0, 1, 1]})
    # q1: ranks d3 (0), d1 (2), d4 (unjudged); q3: d5 at rank 1 among 101 documents
    run = pd.DataFrame({'qid': ['q1', 'q1', 'q1'] + ['q3'] * 3,
                        'docno': ['d3', 'd1', 'd4', 'x1', 'd5', 'x2'],
                        'score': [3, 2, 1, 9.5, 9.0, 8.5]})
    out = _evaluate(run, qrels, ['q2', 'q1', 'q3'])
    assert list(out.columns) == ['qid', 'nDCG@10', 'R@100']
    assert list(out.qid) == ['q2', 'q1', 'q3']
    dcg = 2 / math.log2(3)
    ideal = 2 + 1 / math.log2(3)
    assert out['nDCG@10'].tolist() == pytest.approx([0.0, dcg / ideal, 1 / math.log2(3)])
    assert out['R@100'].tolist() == pytest.approx([0.0, 0.5, 1.0])


def test_per_query_measures_read_integer_qids_docnos_and_labels_as_text():
    qrels = pd.DataFrame({'qid': [1, 1], 'docno': [10, 11], 'label': [1.0, 0.0]})
    run = pd.DataFrame({'qid': [1, 1], 'docno': [11, 10], 'score': ['2', '1']})
    out = _evaluate(run, qrels, ['1'])
    assert out['nDCG@10'].tolist() == pytest.approx([1 / math.log2(3)])
    assert out['R@100'].tolist() == [1.0]


def test_ndcg_counts_only_the_first_ten_and_an_unjudged_query_scores_zero():
    qrels = pd.DataFrame({'qid': ['q', 'q'], 'docno': ['a', 'b'], 'label': [1, 1]})
    docnos = ['a'] + [f'x{i}' for i in range(9)] + ['b']  # a at rank 1, b at rank 11
    run = pd.DataFrame({'qid': 'q', 'docno': docnos, 'score': np.arange(11, 0, -1, dtype=float)})
    out = _evaluate(run, qrels, ['q', 'nobody'])
    assert out['nDCG@10'].tolist() == pytest.approx([1 / (1 + 1 / math.log2(3)), 0.0])
    assert out['R@100'].tolist() == [1.0, 0.0]


def test_recall_counts_only_the_first_hundred():
    qrels = pd.DataFrame({'qid': ['q'] * 2, 'docno': ['a', 'b'], 'label': [1, 1]})
    docnos = [f'x{i}' for i in range(99)] + ['a', 'b']  # a at rank 100, b at rank 101
    run = pd.DataFrame({'qid': 'q', 'docno': docnos, 'score': np.arange(101, 0, -1, dtype=float)})
    assert _evaluate(run, qrels, ['q'])['R@100'].tolist() == [0.5]


def test_judged_topics_keep_the_dataset_order_and_need_a_relevant_label():
    topics = pd.DataFrame({'qid': ['q4', 'q3', 'q1', 'q2'], 'query': ['d', 'c', 'a', 'b']})
    qrels = pd.DataFrame({'qid': ['q1', 'q2', 'q3', 'q5', 'q4'], 'docno': ['x'] * 5, 'label': [0, 1, 2, 1, -1]})
    dataset = _Dataset(qrels, topics)
    assert judged_topics(dataset, qrels).qid.tolist() == ['q3', 'q2']
    assert judged_topics(dataset, qrels, 1).qid.tolist() == ['q3']
    assert judged_topics(dataset, qrels, 5).qid.tolist() == ['q3', 'q2']
    assert judged_topics(dataset, qrels).columns.tolist() == ['qid', 'query']
    numbered = _Dataset(qrels.assign(qid=[1, 2, 3, 5, 4]), topics.assign(qid=['4', '3', '1', '2']))
    assert judged_topics(numbered, numbered.get_qrels()).qid.tolist() == ['3', '2']
    with pytest.raises(ValueError) as refused:
        judged_topics(dataset, qrels, 0)
    assert str(refused.value) == 'num_queries must be a positive integer or None, got 0 (None: every judged query)'
    assert judged_topics(dataset, qrels, context='sweep').qid.tolist() == ['q3', 'q2']  # judged: no refusal
    unjudged = qrels.assign(label=[0, 0, -1, 0, -1])
    assert judged_topics(dataset, unjudged).empty  # without a context, an empty frame
    with pytest.raises(ValueError) as refused:
        judged_topics(dataset, unjudged, context='sweep')
    assert str(refused.value) == (f'sweep: none of the 4 queries of {dataset!r} has a relevant document (a label '
                                  'above 0) in the qrels, so there is nothing to measure; check the qrels (relevant '
                                  'documents need a positive label)')


# ---- sweep tables: keys, summary cells and paired tests


def _sweep_rows(rows):
    return pd.DataFrame(rows, columns=['system', 'reranker', 'sigma', 'noise_seed', 'partition_seed', 'budget',
                                       'nDCG@10', 'R@100'])


def test_config_and_budget_keys():
    frame = _sweep_rows([('A', 'simulated', 0.25, 0, 42, 100, 0, 0), ('A', 'simulated', 1.0, 0, 42, 100, 0, 0),
                         ('A', 'MiniLM', np.nan, np.nan, 42, 100, 0, 0), ('A', 'simulated', 10.0, 0, 42, 100, 0, 0),
                         ('A', 'simulated', 1e-5, 0, 42, 100, 0, 0)])
    assert list(reranker_labels(frame)) == ['sigma=0.25', 'sigma=1', 'MiniLM', 'sigma=10', 'sigma=1e-05']
    assert _budget_keys(frame) == []
    assert _budget_keys(frame.drop(columns='budget')) == []
    assert _budget_keys(frame.assign(budget=[50, 50, 100, 50, 50])) == ['budget']


def test_summary_cells_columns_and_rows_by_hand():
    rows = []
    for system, base in (('B', 0.5), ('A', 0.2)):
        for sigma in (10.0, 2.0):
            for seed, step in ((0, 0.0), (1, 0.1)):
                rows.append((system, 'simulated', sigma, seed, 42, 100, base + step - sigma / 100, 0.9))
        rows.append((system, 'MiniLM', np.nan, np.nan, 42, 100, base + 0.3, 0.9))
        rows.append((system, 'MiniLM', np.nan, np.nan, 43, 100, base + 0.2, 0.9))
    out = sweep_summary(_sweep_rows(rows))
    assert list(out.columns) == ['sigma=2', 'sigma=10', 'MiniLM']  # by the number, not the text
    assert list(out.index) == ['B', 'A']
    # B at sigma 2: 0.48 and 0.58; at sigma 10: 0.40 and 0.50; MiniLM: 0.8 and 0.7
    assert out.loc['B'].tolist() == ['0.5300 (0.480-0.580)', '0.4500 (0.400-0.500)', '0.7500 (0.700-0.800)']
    assert out.loc['A', 'sigma=2'] == '0.2300 (0.180-0.280)'
    assert sweep_summary(_sweep_rows(rows), 'R@100').loc['A', 'MiniLM'] == '0.9000 (0.900-0.900)'


def test_summary_without_minilm_and_per_budget():
    rows = [('S', 'simulated', 0.5, 0, 42, 200, 0.6, 0.1), ('S', 'simulated', 0.5, 0, 42, 50, 0.2, 0.1),
            ('T', 'simulated', 0.5, 0, 42, 200, 0.7, 0.1), ('T', 'simulated', 0.5, 0, 42, 50, 0.3, 0.1)]
    out = sweep_summary(_sweep_rows(rows))
    assert list(out.columns) == ['sigma=0.5']
    assert list(out.index) == [(200, 'S'), (50, 'S'), (200, 'T'), (50, 'T')]
    assert out['sigma=0.5'].tolist() == ['0.6000 (0.600-0.600)', '0.2000 (0.200-0.200)', '0.7000 (0.700-0.700)',
                                         '0.3000 (0.300-0.300)']


def _t_test_p(diffs):
    """Two-sided paired t-test from its formula: t = mean / (sd / sqrt(n)), n - 1 degrees of freedom."""
    from scipy.stats import t
    diffs = np.asarray(diffs, dtype=float)
    n = len(diffs)
    stat = diffs.mean() / (diffs.std(ddof=1) / math.sqrt(n))
    return 2 * t.sf(abs(stat), n - 1)


def _perquery(rows):
    return pd.DataFrame(rows, columns=['system', 'reranker', 'sigma', 'noise_seed', 'partition_seed', 'budget',
                                       'qid', 'nDCG@10', 'R@100'])


def test_paired_tests_average_the_seeds_first():
    # X's nDCG@10 per query over two partition seeds: q1 (0.6, 0.2) -> 0.4, q2 (0.5, 0.5) -> 0.5, q3 (0.9, 0.7) -> 0.8
    # GAREN's: q1 0.5, q2 0.3, q3 0.4 (both seeds alike). Diffs: -0.1, 0.2, 0.4; one loss, two wins.
    # Seed by seed it would be 4 wins and 1 loss (and a tie): averaging first is what the docstring says.
    x = {('q1', 42): 0.6, ('q1', 43): 0.2, ('q2', 42): 0.5, ('q2', 43): 0.5, ('q3', 42): 0.9, ('q3', 43): 0.7}
    g = {'q1': 0.5, 'q2': 0.3, 'q3': 0.4}
    rows = []
    for (qid, seed), value in x.items():
        rows.append(('X', 'simulated', 0.5, 0, seed, 100, qid, value, 1.0))
        rows.append(('GAREN', 'simulated', 0.5, 0, seed, 100, qid, g[qid], 1.0))
    out = sweep_tests(_perquery(rows))
    assert list(out.columns) == ['budget', 'reranker', 'sigma', 'system', 'measure', 'mean', 'baseline_mean',
                                 'delta', 'wins', 'losses', 'p_value']
    ndcg = out[(out.system == 'X') & (out.measure == 'nDCG@10')].iloc[0]
    assert (ndcg.budget, ndcg.reranker, ndcg.sigma) == (100, 'simulated', 0.5)
    assert (ndcg['mean'], ndcg.baseline_mean, ndcg.delta) == pytest.approx((1.7 / 3, 1.2 / 3, 0.5 / 3))
    assert (ndcg.wins, ndcg.losses) == (2, 1)
    assert ndcg.p_value == pytest.approx(_t_test_p([-0.1, 0.2, 0.4]))
    recall = out[(out.system == 'X') & (out.measure == 'R@100')].iloc[0]
    assert (recall.delta, recall.wins, recall.losses) == (0, 0, 0)
    assert math.isnan(recall.p_value)  # no difference at all: no test
    assert out.system.tolist() == ['X', 'X', 'GAREN', 'GAREN']  # in the order the systems come
    assert out.measure.tolist() == ['nDCG@10', 'R@100'] * 2
    own = out[out.system == 'GAREN']
    assert len(own) == 2
    assert own.p_value.isna().all()
    assert (own.delta == 0).all()


def test_paired_tests_per_reranker_per_budget_and_without_a_budget_column():
    rows = []
    for budget, lift in ((50, 0.1), (200, -0.2)):
        for qid, base in (('a', 0.3), ('b', 0.6), ('c', 0.1), ('d', 0.5)):
            extra = {'a': 0.0, 'b': 0.05, 'c': -0.1, 'd': 0.2}[qid]
            rows.append(('GAREN', 'MiniLM', np.nan, np.nan, 42, budget, qid, base, base))
            rows.append(('Y', 'MiniLM', np.nan, np.nan, 42, budget, qid, base + lift + extra, base))
    rows.append(('Z', 'simulated', 1.0, 0, 42, 50, 'a', 0.9, 0.9))  # no GAREN at sigma 1: no row at all
    out = sweep_tests(_perquery(rows))
    y = out[(out.system == 'Y') & (out.measure == 'nDCG@10')].set_index('budget')
    assert y.loc[50, 'delta'] == pytest.approx(0.1 + 0.0375)
    assert y.loc[200, 'delta'] == pytest.approx(-0.2 + 0.0375)
    assert (y.loc[50, 'wins'], y.loc[50, 'losses']) == (3, 0)  # query c: 0.1 - 0.1, a tie
    assert (y.loc[200, 'wins'], y.loc[200, 'losses']) == (0, 3)  # query d: -0.2 + 0.2
    assert y.loc[50, 'p_value'] == pytest.approx(_t_test_p([0.1, 0.15, 0.0, 0.3]))
    assert y.loc[200, 'p_value'] == pytest.approx(_t_test_p([-0.2, -0.15, -0.3, 0.0]))
    assert y.reranker.tolist() == ['MiniLM', 'MiniLM']
    assert y.sigma.isna().all()
    assert 'Z' not in set(out.system)
    # another baseline
    other = sweep_tests(_perquery(rows), baseline='Y')
    garen = other[(other.system == 'GAREN') & (other.measure == 'nDCG@10')].set_index('budget')
    assert garen.loc[50, 'delta'] == pytest.approx(-(0.1 + 0.0375))
    # one unnamed budget: no budget column
    single = sweep_tests(_perquery(rows).drop(columns='budget').query('system != "Z"').iloc[:8])
    assert 'budget' not in single.columns
    assert single[(single.system == 'Y') & (single.measure == 'nDCG@10')].delta.tolist() == pytest.approx([0.1375])


def test_paired_tests_skip_a_reranker_without_the_baseline_wherever_it_comes_and_align_queries():
    rows = [('Z', 'simulated', 1.0, 0, 42, 100, 'a', 0.9, 0.9),  # first, and no GAREN at sigma 1
            ('W', 'simulated', 2.0, 0, 42, 100, 'a', 0.4, 0.5),  # one row: one query, one seed
            ('GAREN', 'simulated', 2.0, 0, 42, 100, 'a', 0.4, 0.5),
            ('GAREN', 'simulated', 2.0, 0, 42, 100, 'e', 0.8, 0.5),  # a query W was not run on
            ('V', 'MiniLM', np.nan, np.nan, 42, 100, 'a', 0.2, 0.5),
            ('GAREN', 'MiniLM', np.nan, np.nan, 42, 100, 'a', 0.3, 0.5)]
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # one query: no t-test, and no warning from trying one
        out = sweep_tests(_perquery(rows))
    assert out.system.tolist() == ['W', 'W', 'GAREN', 'GAREN', 'V', 'V', 'GAREN', 'GAREN']
    w = out[(out.system == 'W') & (out.measure == 'nDCG@10')].iloc[0]
    assert (w.reranker, w.sigma, w['mean'], w.baseline_mean, w.delta) == ('simulated', 2.0, 0.4, 0.4, 0.0)
    assert math.isnan(w.p_value)
    garen = out[(out.system == 'GAREN') & (out.measure == 'nDCG@10') & (out.sigma == 2.0)].iloc[0]
    assert garen['mean'] == pytest.approx(0.6)
    v = out[(out.system == 'V') & (out.measure == 'nDCG@10')].iloc[0]
    assert v.reranker == 'MiniLM'
    assert (v.delta, v.wins, v.losses) == (pytest.approx(-0.1), 0, 1)
    assert math.isnan(v.p_value)


def test_two_queries_are_enough_for_a_test():
    rows = [('U', 'simulated', 0.5, 0, 42, 100, 'a', 0.5, 0.5), ('U', 'simulated', 0.5, 0, 42, 100, 'b', 0.9, 0.5),
            ('GAREN', 'simulated', 0.5, 0, 42, 100, 'a', 0.4, 0.5),
            ('GAREN', 'simulated', 0.5, 0, 42, 100, 'b', 0.6, 0.5)]
    u = sweep_tests(_perquery(rows)).iloc[0]
    assert (u.system, u.measure) == ('U', 'nDCG@10')
    assert u.p_value == pytest.approx(_t_test_p([0.1, 0.3]))
    assert u.p_value == pytest.approx(0.2952, abs=1e-4)  # t = 0.2 / (0.1414 / 1.414) = 2, one degree of freedom


# ---- the sweep's plot


def test_the_plot_refuses_several_budgets_and_draws_means_on_a_categorical_axis():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_rgba
    rows = [('A', 'simulated', 2.0, 0, 42, 100, 0.2, 0.5), ('A', 'simulated', 2.0, 1, 42, 100, 0.4, 0.5),
            ('A', 'simulated', 0.5, 0, 42, 100, 0.7, 0.5), ('A', 'MiniLM', np.nan, np.nan, 42, 100, 0.6, 0.5),
            ('A', 'MiniLM', np.nan, np.nan, 43, 100, 0.3, 0.5), ('B', 'simulated', 2.0, 0, 42, 100, 0.1, 0.5),
            ('B', 'MiniLM', np.nan, np.nan, 42, 100, 0.05, 0.5)]
    table = _sweep_rows(rows)
    with pytest.raises(ValueError, match=r'budgets \[100, 400\].*table\[table.budget == 400\]'):
        plot_strength_sweep(table.assign(budget=[400] + [100] * 6))
    ax = plot_strength_sweep(table)
    assert tuple(ax.figure.get_size_inches()) == (6, 4)
    assert [t.get_text() for t in ax.get_xticklabels()] == ['0.5', '2', 'MiniLM']
    assert ax.get_xlabel() == 'simulated reranker noise sigma (weaker to the right)'
    assert ax.get_ylabel() == 'nDCG@10'
    a, b = [line for line in ax.lines if line.get_label() in ('A', 'B')]
    assert list(a.get_xdata()) == [0, 1]
    assert a.get_ydata().tolist() == pytest.approx([0.7, 0.3])
    assert a.get_marker() == 'o'
    # B has no run at sigma 0.5: a gap there, not its sigma-2 value moved to the left
    assert np.isnan(b.get_ydata()[0])
    assert b.get_ydata()[1] == pytest.approx(0.1)
    # the min-max band: A's from 0.7 (sigma 0.5) down to 0.2-0.4 (sigma 2), in A's colour
    from matplotlib.collections import PolyCollection
    band, band_b = [c for c in ax.collections if isinstance(c, PolyCollection)]
    ys = band.get_paths()[0].vertices[:, 1]
    assert (ys.min(), ys.max()) == pytest.approx((0.2, 0.7))
    assert tuple(band.get_facecolor()[0]) == pytest.approx(to_rgba(a.get_color(), 0.15))
    assert tuple(band_b.get_facecolor()[0]) == pytest.approx(to_rgba(b.get_color(), 0.15))
    # MiniLM's points at x = 2, each system its own: A's mean 0.45 with a bar 0.3-0.6, B's 0.05
    at_minilm = [line for line in ax.lines if list(line.get_xdata()) == [2]]
    points = [line for line in at_minilm if line.get_marker() == 's']
    assert [p.get_ydata().tolist() for p in points] == [pytest.approx([0.45]), pytest.approx([0.05])]
    assert [p.get_color() for p in points] == [a.get_color(), b.get_color()]
    caps = sorted(float(line.get_ydata()[0]) for line in at_minilm if line.get_marker() != 's')
    assert caps == pytest.approx([0.05, 0.05, 0.3, 0.6])
    assert {line.get_markersize() for line in at_minilm if line.get_marker() != 's'} == {6.0}  # capsize 3
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ['A', 'B']
    assert {t.get_fontsize() for t in legend.get_texts()} == {7.0}
    assert legend._ncols == 2
    # on axes that already hold a line the colour cycles are out of step: the band still takes its line's colour
    busy = plt.subplots()[1]
    busy.plot([0], [0])
    plot_strength_sweep(table, ax=busy)
    line_a = next(line for line in busy.lines if line.get_label() == 'A')
    band_a = next(c for c in busy.collections if isinstance(c, PolyCollection))
    assert tuple(band_a.get_facecolor()[0]) == pytest.approx(to_rgba(line_a.get_color(), 0.15))
    only_b = plot_strength_sweep(table[table.reranker != 'MiniLM'], 'R@100', systems=['B'])
    assert [t.get_text() for t in only_b.get_xticklabels()] == ['0.5', '2']  # no MiniLM column without MiniLM
    assert [line.get_label() for line in only_b.lines if not line.get_label().startswith('_')] == ['B']
    plt.close('all')


def test_the_plot_file_holds_both_measures_side_by_side(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from pyterrier_garen import _sweep
    plt.close('all')
    drawn, closed = [], []
    real_plot, real_close = _sweep.plot_strength_sweep, plt.close
    monkeypatch.setattr(_sweep, 'plot_strength_sweep',
                        lambda table, measure='nDCG@10', **kw: drawn.append((measure, kw['ax'])) or real_plot(
                            table, measure, **kw))
    monkeypatch.setattr(plt, 'close', lambda fig=None: closed.append(fig) or real_close(fig))
    table = _sweep_rows([('A', 'simulated', 0.5, 0, 42, 100, 0.6, 0.5), ('A', 'simulated', 1.0, 0, 42, 100, 0.4, 0.3)])
    path = tmp_path / 'sweep.png'
    sweep_plot_file(table, path, title='T')
    assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    width, height = int.from_bytes(path.read_bytes()[16:20], 'big'), int.from_bytes(path.read_bytes()[20:24], 'big')
    assert (width, height) == (1320, 495)  # 12 x 4.5 inches at 110 dots per inch
    assert [m for m, _ in drawn] == ['nDCG@10', 'R@100']
    (fig,) = closed
    assert [ax.get_subplotspec().get_geometry()[:2] for _, ax in drawn] == [(1, 2), (1, 2)]
    assert [ax.get_subplotspec().num1 for _, ax in drawn] == [0, 1]
    assert len(fig.axes) == 2
    assert fig._suptitle.get_text() == 'T'
    assert plt.get_fignums() == []
    sweep_plot_file(table, tmp_path / 'untitled.png')
    assert closed[1]._suptitle.get_text() == ''
