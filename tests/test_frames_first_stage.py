"""``first_stage`` (R_0 of every query) against the same rules written with plain pandas frame operations."""
import warnings

import numpy as np
import pandas as pd
import pytest

from pyterrier_garen._frames import check_one_query_per_qid, first_stage


def _reference(inp):
    """Sort the frame by rank (else descending score; stable), drop repeated (qid, docno), group by qid in order
    of first appearance: the documented rules, with pandas doing each step on the whole frame."""
    by = [c for c in ('rank', 'score') if c in inp.columns][:1]
    frame = inp.sort_values(by, ascending='rank' in by, kind='stable') if by else inp
    frame = frame.assign(docno=frame['docno'].astype(str))
    dropped = int(frame.duplicated(['qid', 'docno']).sum())
    frame = frame[~frame.duplicated(['qid', 'docno'])]
    out = [(qid, group['query'].iloc[0], group['docno'].tolist()) for qid, group in frame.groupby('qid', sort=False)]
    return out, dropped


def _frame(rng, kind):
    n = 60
    qids = rng.choice(['q1', 'q2', 'q3', 'q10'], n)  # interleaved, not sorted
    frame = pd.DataFrame({'qid': qids, 'query': [f'text of {q}' for q in qids],
                          'docno': rng.choice([f'd{i}' for i in range(25)], n)})  # repeated docnos within a query
    if kind == 'rank':
        frame['rank'] = rng.integers(0, 8, n)  # ties in rank: input order decides
    elif kind == 'score':
        frame['score'] = rng.choice([0.5, 1.0, 2.0, np.nan], n)  # ties and missing scores (last)
    elif kind == 'int docnos':
        frame['docno'] = rng.integers(0, 25, n)  # compared as strings
        frame['score'] = rng.random(n)
    frame.index = rng.permutation(np.arange(100, 100 + n))  # labels are not positions
    return frame


@pytest.mark.parametrize('kind', ['rank', 'score', 'int docnos'])
@pytest.mark.parametrize('seed', [0, 1, 2])
def test_first_stage_matches_the_frame_operations(kind, seed):
    inp = _frame(np.random.default_rng(seed), kind)
    expected, dropped = _reference(inp)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        got = first_stage(inp)
    assert got == expected
    assert [type(d) for _, _, docs in got for d in docs] == [str] * sum(len(docs) for _, _, docs in got)
    messages = [str(w.message) for w in caught if 'duplicate docnos' in str(w.message)]
    assert dropped > 0
    assert messages == [f'None: dropped {dropped} duplicate docnos (kept the first occurrence of each per query)']


def test_first_stage_of_integer_qids_and_an_empty_frame():
    inp = pd.DataFrame({'qid': [7, 3, 7, 3], 'query': ['a', 'b', 'a', 'b'], 'docno': ['x', 'y', 'z', 'x'],
                        'rank': [1, 0, 0, 1]})
    # qids in order of first appearance after sorting by rank: 3's rank 0 comes before 7's
    assert first_stage(inp) == [(3, 'b', ['y', 'x']), (7, 'a', ['z', 'x'])]
    assert first_stage(inp.iloc[:0]) == []


def test_one_query_per_qid_names_the_first_clashing_qid():
    frame = pd.DataFrame({'qid': ['a', 'b', 'b', 'c', 'c', 'c', 'a'],
                          'query': ['x', 'y', 'z', 'u', 'v', 'w', None]})  # a missing query is not a second one
    with pytest.raises(ValueError, match=r"qid 'b' carries 2 different queries \(e.g. 'y' and 'z'; 2 qids like"):
        check_one_query_per_qid(frame)
    check_one_query_per_qid(frame[frame.qid == 'a'])  # one query and a missing one: accepted


def test_a_frame_with_neither_rank_nor_score_is_refused():
    # its row order may be no ranking (a shuffled or concatenated frame): every stage refuses it, as GAREN's
    # docstring says ("plus rank or score"); it used to be read in row order here and refused by the head call
    inp = pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['a', 'a'], 'docno': ['x', 'y']})
    with pytest.raises(ValueError, match=r'needs a rank or score column .*frame.assign\(rank='):
        first_stage(inp)
