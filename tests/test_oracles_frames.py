"""The frame plumbing every search shares, against values worked out by hand: the errors that name a bad first
stage, which qid a clash names, the topics' cleaning, and the columns and types of a written ranking.

Written after the eighteenth mutation run (docs/testing.md) found these unpinned.
"""
import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen._frames import check_one_query_per_qid, clean_queries, first_stage, ranking_frame


class Context:
    def __repr__(self):
        return 'Search()'


def frame(qids, queries, docnos):
    return pd.DataFrame({'qid': qids, 'query': queries, 'docno': docnos, 'score': np.arange(len(qids), 0, -1.)})


def test_a_first_stage_without_queries_is_named():
    with pytest.raises(pt.validate.InputValidationError, match=r"Search\(\).*missing_columns=\['query'\]"):
        first_stage(frame(['1'], ['a'], ['d']).drop(columns=['query']), Context())


@pytest.mark.parametrize(('column', 'message'), [
    ('qid', "Search(): 1 first-stage rows have no qid (None/NaN); every row needs its qid"),
    ('docno', "Search(): 2 first-stage rows have no docno (None/NaN) (qids ['1', '2']); every row needs its docno"),
    ('query', "Search(): 2 first-stage rows have no query (None/NaN) (qids ['1', '2']); every row needs its query"),
])
def test_rows_without_a_value_are_counted_and_named(column, message):
    rows = frame(['2', '1', '1', '3', '3', '3', '4', '5', '6', '7'], ['b', 'a', 'a'] + ['c'] * 7,
                 [f'd{i}' for i in range(10)])
    rows.loc[[0, 1] if column != 'qid' else [1], column] = None
    with pytest.raises(ValueError, match='^' + message.replace('(', r'\(').replace(')', r'\)')
                       .replace('[', r'\[').replace(']', r'\]') + '$'):
        first_stage(rows, Context())


def test_six_qids_without_docnos_name_the_first_five_sorted():
    rows = frame([str(q) for q in (9, 3, 7, 1, 5, 2)], 'q', [None] * 6)
    with pytest.raises(ValueError, match=r"\(qids \['1', '2', '3', '5', '7'\]\)"):
        first_stage(rows, Context())


def test_a_clash_names_the_first_qid_to_appear_and_the_context():
    # z appears first, a second; both carry two texts
    rows = frame(['z', 'a', 'z', 'a'], ['one', 'two', 'three', 'four'], ['d1', 'd2', 'd3', 'd4'])
    words = r"^Search\(\): qid 'z' carries 2 different queries \(e.g. 'one' and 'three'; 2 qids like this\)"
    with pytest.raises(ValueError, match=words):
        first_stage(rows, Context())
    with pytest.raises(ValueError, match=words):
        check_one_query_per_qid(rows, Context())


def test_clean_queries_leaves_frames_without_queries_and_names_its_source():
    no_query = pd.DataFrame({'qid': ['1'], 'text': ['a\tb']})
    assert clean_queries(no_query) is no_query
    with pytest.warns(UserWarning, match=r"^the topics: 1 queries held control characters"):
        out = clean_queries(pd.DataFrame({'qid': ['1', '2'], 'query': ['a\tb', 'c']}))
    assert out['query'].tolist() == ['a b', 'c']


def test_ranking_frame_columns_values_and_types():
    out = ranking_frame([('q1', 'first query', ['d3', 'd1'], {'iteration': [2, 1]}),
                         ('q2', 'second query', ['d9'], {'iteration': [4]})], columns=['iteration'])
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'rank', 'iteration']
    assert out['query'].tolist() == ['first query', 'first query', 'second query']
    assert out.score.tolist() == [2.0, 1.0, 1.0]
    assert out['rank'].tolist() == [0, 1, 0]
    assert out.iteration.tolist() == [2, 1, 4]
    assert [out[c].dtype for c in ('score', 'rank', 'iteration')] == [np.float64, np.int64, np.int64]
    empty = ranking_frame([], columns=['iteration'])
    assert list(empty.columns) == list(out.columns)
    assert [empty[c].dtype for c in ('score', 'rank', 'iteration')] == [np.float64, np.int64, np.int64]
