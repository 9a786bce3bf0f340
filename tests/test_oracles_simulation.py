"""The simulated instruments against values worked out by hand: every sweep in bench/results reads its reranker's
verdicts from these classes, so a change in a draw, a rank or a label rule would silently change every table.

Written after the fifteenth mutation run (docs/testing.md) found these properties unpinned.
"""
import hashlib
from statistics import NormalDist

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen.analysis import ListwiseView, SimulatedNavigator, SimulatedReranker, stable_noise

QRELS = pd.DataFrame({'qid': ['1', '1', '1', '1', '2', '2'],
                      'docno': ['a', 'b', 'c', 'z', 'a', 'b'],
                      'label': [2, 0, -1, 1, 1, 3]})


def frame(pairs):
    return pd.DataFrame({'qid': [q for q, _ in pairs], 'query': 'text', 'docno': [d for _, d in pairs]})


# -- stable_noise ---------------------------------------------------------------------------------------------------
def test_stable_noise_is_the_documented_draw():
    # the draws every committed sweep used: (qid, key, sigma, seed) joined by U+001F, BLAKE2b with an 8-byte
    # digest, its top 53 bits k, u = (k + 1/2) / 2^53, z = the standard normal quantile of u, times sigma
    text = '1\x1fd3\x1f1.0\x1f0'
    k = int(hashlib.blake2b(text.encode('utf8'), digest_size=8).hexdigest(), 16) >> 11
    assert k == 8357468134786171
    assert stable_noise('1', 'd3', 1.0, 0) == NormalDist().inv_cdf((k + 0.5) / 2 ** 53) == 1.460075628601686
    # each of the four values is part of the key: another query, strength or seed is another draw
    assert stable_noise('2', 'd3', 1.0, 0) == 0.16261756835258498
    assert stable_noise('1', 'd3', 2.0, 0) == 0.9344976951971582  # 2 x z of its own, not 2 x 1.46
    assert stable_noise('1', 'd3', 1.0, 7) == -0.26507692872072985
    assert stable_noise('1', 'd3', 1, 0) == stable_noise(1, 'd3', 1.0, 0)  # sigma 1 and 1.0, qid 1 and '1': one key
    assert stable_noise('1', 'd3', 0.0, 0) == 0.0 == stable_noise('1', 'd3', 0, 5)


# -- the label rule ------------------------------------------------------------------------------------------------
def test_labels_graded_and_binary():
    pairs = [('1', 'a'), ('1', 'b'), ('1', 'c'), ('1', 'z'), ('1', 'unjudged'), ('2', 'b')]
    graded = SimulatedReranker(QRELS)(frame(pairs))
    assert graded.score.tolist() == [2.0, 0.0, 0.0, 1.0, 0.0, 3.0]  # a negative code counts as 0
    binary = SimulatedReranker(QRELS, binary=True)(frame(pairs))
    assert binary.score.tolist() == [1.0, 0.0, 0.0, 1.0, 0.0, 1.0]  # judged 0 and -1 stay 0


def test_the_exact_oracle_ties_and_a_tiny_noise_breaks_the_ties_in_the_label_order():
    # docs/decisions.md, "The exact oracle ties": at noise 0 the three unjudged-or-0 documents and the two judged 1
    # tie; at 1e-6 no two scores tie and every label still comes before the lower ones (|1e-6 z| < 1e-5 here)
    pairs = [('1', d) for d in ['b', 'c', 'u1', 'u2', 'z', 'z2', 'a']]
    qrels = pd.concat([QRELS, pd.DataFrame({'qid': ['1'], 'docno': ['z2'], 'label': [1]})])
    exact = SimulatedReranker(qrels)(frame(pairs)).set_index('docno').score
    assert exact.to_dict() == {'b': 0.0, 'c': 0.0, 'u1': 0.0, 'u2': 0.0, 'z': 1.0, 'z2': 1.0, 'a': 2.0}
    tiny = SimulatedReranker(qrels, noise=1e-6)(frame(pairs)).set_index('docno').score
    assert tiny.nunique() == len(pairs)
    assert (tiny - exact).abs().max() < 1e-5
    assert tiny[['b', 'c', 'u1', 'u2']].max() < tiny[['z', 'z2']].min() <= tiny[['z', 'z2']].max() < tiny['a']


@pytest.mark.parametrize('qrels', [None, [('1', 'a', 1)], 'qrels.txt', QRELS.rename(columns={'label': 'rel'})])
def test_qrels_that_are_not_a_judgement_frame_are_named(qrels):
    for cls, args in ((SimulatedReranker, ()), (SimulatedNavigator, (None,))):
        with pytest.raises(ValueError, match=rf'^{cls.__name__}: qrels must be a DataFrame with qid, docno and '
                                             r'label columns; missing \['):
            cls(qrels, *args)


@pytest.mark.parametrize(('cls', 'args'), [(SimulatedReranker, ()), (SimulatedNavigator, (None,))])
def test_bad_noise_and_seed_are_named_with_the_class(cls, args):
    with pytest.raises(ValueError, match=rf'^{cls.__name__}: noise \(sigma\)'):
        cls(QRELS, *args, noise=-0.5)
    with pytest.raises(ValueError, match=rf'^{cls.__name__}: seed'):
        cls(QRELS, *args, seed=1.5)


def test_missing_columns_are_refused_by_name():
    with pytest.raises(pt.validate.InputValidationError, match=r"SimulatedReranker\(.*missing_columns=\['docno'\]"):
        SimulatedReranker(QRELS)(pd.DataFrame({'qid': ['1'], 'query': ['x']}))
    with pytest.raises(pt.validate.InputValidationError, match=r"SimulatedNavigator\(.*missing_columns=\['qid'\]"):
        SimulatedNavigator(QRELS, Groups({}))(pd.DataFrame({'docno': ['1']}))


def test_labels_read_as_text_are_numbers_and_other_labels_are_named():
    text = QRELS.astype({'label': str})
    assert SimulatedReranker(text)(frame([('1', 'a'), ('1', 'c'), ('2', 'b')])).score.tolist() == [2.0, 0.0, 3.0]
    for bad in ('high', None, float('nan'), float('inf')):
        qrels = QRELS.astype({'label': object})
        qrels.loc[4, 'label'] = bad
        for cls, args in ((SimulatedReranker, ()), (SimulatedNavigator, (None,))):
            with pytest.raises(ValueError, match=rf"^{cls.__name__}: qrels labels must be finite numbers \(relevance "
                                                 rf"grades\); 1 are not, the first for qid '2', docno 'a': "):
                cls(qrels, *args)


def test_a_missing_label_of_a_nullable_column_is_named():
    # pandas' nullable dtypes hold <NA>, which numpy's finiteness check cannot read unless converted to float first
    qrels = QRELS.assign(label=pd.array([True, False, False, True, None, True], dtype='boolean'))
    for cls, args in ((SimulatedReranker, ()), (SimulatedNavigator, (None,))):
        with pytest.raises(ValueError, match=rf"^{cls.__name__}: qrels labels must be finite numbers \(relevance "
                                             r"grades\); 1 are not, the first for qid '2', docno 'a': <NA>; fix or "
                                             r'drop those rows of the qrels$'):
            cls(qrels, *args)
    judged = qrels.assign(label=pd.array([True, False, False, True, True, True], dtype='boolean'))
    assert SimulatedReranker(judged)(frame([('1', 'a'), ('1', 'b'), ('2', 'a')])).score.tolist() == [1.0, 0.0, 1.0]


def test_one_pair_judged_twice_differently_is_refused_and_alike_twice_is_read_once():
    # which label a dict kept would depend on the row order: refused, naming the pair and both labels as read
    twice = pd.concat([QRELS, pd.DataFrame({'qid': ['2'], 'docno': ['b'], 'label': [1]})], ignore_index=True)
    for cls, args in ((SimulatedReranker, ()), (SimulatedNavigator, (None,))):
        with pytest.raises(ValueError, match=rf"^{cls.__name__}: the qrels judge qid '2', docno 'b' twice with "
                                             r"different labels \(3 and 1\); keep one judgement per pair$"):
            cls(twice, *args)
    # the same judgement twice, and -1 next to 0 (both read as 0), or 1 next to 2 under binary=True, agree
    alike = pd.concat([QRELS, QRELS.iloc[[0]], pd.DataFrame({'qid': ['1'], 'docno': ['b'], 'label': [-1]})],
                      ignore_index=True)
    assert SimulatedReranker(alike)(frame([('1', 'a'), ('1', 'b')])).score.tolist() == [2.0, 0.0]
    graded_twice = pd.concat([QRELS, pd.DataFrame({'qid': ['2'], 'docno': ['b'], 'label': [1]})], ignore_index=True)
    assert SimulatedReranker(graded_twice, binary=True)(frame([('2', 'b')])).score.tolist() == [1.0]


def test_qrels_without_a_row_are_a_random_scorer_and_say_so():
    empty = QRELS.iloc[:0]
    with pytest.warns(UserWarning, match=r'^SimulatedReranker: the qrels hold no judgement, so every document scores '
                                         r'0 plus the noise: a random scorer'):
        reranker = SimulatedReranker(empty, noise=1.0)
    assert reranker(frame([('1', 'd3')])).score.tolist() == [1.460075628601686]  # the pinned draw above, label 0


# -- score and rank ------------------------------------------------------------------------------------------------
def test_rank_is_per_query_by_descending_score_ties_in_input_order():
    # two queries interleaved; query 1 has a tie (b and unjudged both 0) and query 2 comes first in the frame
    pairs = [('2', 'x'), ('1', 'b'), ('2', 'b'), ('1', 'a'), ('1', 'unjudged'), ('2', 'a'), ('1', 'z')]
    out = SimulatedReranker(QRELS)(frame(pairs))
    assert out.docno.tolist() == [d for _, d in pairs]  # rows stay where they were
    assert out.score.tolist() == [0.0, 0.0, 3.0, 2.0, 0.0, 1.0, 1.0]
    assert out['rank'].tolist() == [2, 2, 0, 0, 3, 1, 1]
    assert out['rank'].dtype == np.int64
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'rank']


def test_the_default_seed_is_0():
    pairs = [('1', d) for d in 'abcz']
    default = SimulatedReranker(QRELS, noise=1.0)(frame(pairs)).score.tolist()
    assert default == SimulatedReranker(QRELS, noise=1.0, seed=0)(frame(pairs)).score.tolist()
    assert default[0] == 2.0 + stable_noise('1', 'a', 1.0, 0)
    assert default != SimulatedReranker(QRELS, noise=1.0, seed=1)(frame(pairs)).score.tolist()


@pytest.mark.parametrize('make', [lambda: SimulatedReranker(QRELS, noise=0.5, seed=2, binary=True),
                                  lambda: SimulatedNavigator(QRELS, Groups({0: ['a', 'b']}), noise=0.5, seed=2,
                                                             aggregate='mean', binary=True)])
def test_rebuilt_from_its_attributes_it_scores_the_same(make):
    instrument = make()
    rebuilt = pt.inspect.transformer_apply_attributes(instrument)
    rows = frame([('1', '0'), ('2', '0')]) if isinstance(instrument, SimulatedNavigator) else frame([('2', 'b')])
    pd.testing.assert_frame_equal(rebuilt(rows), instrument(rows))
    assert rebuilt.binary is True
    assert rebuilt.qrels is QRELS


# -- the navigator -------------------------------------------------------------------------------------------------
class Groups:
    """``group_members`` from ``{group id: members}``, empty groups included (ToyGroupGraph builds its groups from
    the documents' labels, so it cannot hold one)."""

    def __init__(self, members):
        self.members = members

    @property
    def num_groups(self):
        return max(self.members, default=-1) + 1

    def group_members(self, gid):
        return self.members.get(gid, [])


def test_navigator_default_seed_is_0_and_a_bad_aggregate_is_named():
    groups, rows = Groups({0: ['a'], 1: ['b']}), frame([('1', '0'), ('1', '1')])
    default = SimulatedNavigator(QRELS, groups, noise=1.0)(rows).score.tolist()
    assert default == [2.0 + stable_noise('1', 'group:0', 1.0, 0), stable_noise('1', 'group:1', 1.0, 0)]
    with pytest.raises(ValueError, match=r"^SimulatedNavigator: aggregate must be one of \('max', 'mean'\), got 'sum'"):
        SimulatedNavigator(QRELS, groups, aggregate='sum')


def test_navigator_aggregates_member_labels_and_scores_an_empty_group_0():
    groups = Groups({0: ['a', 'b', 'c'], 1: ['z', 'unjudged'], 2: []})
    rows = frame([('1', '0'), ('1', '1'), ('1', '2'), ('2', '0')])
    assert SimulatedNavigator(QRELS, groups)(rows).score.tolist() == [2.0, 1.0, 0.0, 3.0]
    # mean of (2, 0, 0), (1, 0), nothing, (1, 3, 0: c unjudged for query 2)
    assert SimulatedNavigator(QRELS, groups, aggregate='mean')(rows).score.tolist() == [2 / 3, 0.5, 0.0, 4 / 3]
    # binary: (1, 0, 0), (1, 0), nothing, (1, 1, 0)
    assert SimulatedNavigator(QRELS, groups, aggregate='mean', binary=True)(rows).score.tolist() == [
        1 / 3, 0.5, 0.0, 2 / 3]
    noisy = SimulatedNavigator(QRELS, groups, noise=0.5, seed=4)(rows)
    assert noisy.score.tolist()[2] == stable_noise('1', 'group:2', 0.5, 4)  # the empty group: noise alone
    assert noisy['rank'].tolist() == list(np.argsort(np.argsort(-noisy.score.to_numpy()[:3], kind='stable'))) + [0]


# -- the listwise view ---------------------------------------------------------------------------------------------
def test_listwise_view_scores_n_minus_position_per_query():
    # three queries interleaved, on a frame whose index is not 0..n-1
    pairs = [('1', 'a'), ('2', 'a'), ('3', 'q'), ('1', 'z'), ('2', 'b'), ('1', 'b'), ('3', 'r')]
    rows = frame(pairs).set_axis([10, 11, 12, 13, 14, 15, 16])
    out = ListwiseView(SimulatedReranker(QRELS))(rows)
    # query 1: a (2), z (1), b (0) -> 3, 2, 1; query 2: b (3), a (1) -> 2, 1; query 3: tie, input order -> 2, 1
    assert out.docno.tolist() == [d for _, d in pairs]
    assert out.score.tolist() == [3.0, 1.0, 2.0, 2.0, 2.0, 1.0, 1.0]
    assert out['rank'].tolist() == [0, 1, 0, 1, 0, 2, 1]
    assert out['rank'].dtype == np.int64
    assert out.score.dtype == np.float64
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'rank']
    empty = ListwiseView(SimulatedReranker(QRELS))(rows.iloc[:0])
    assert len(empty) == 0
    assert list(empty.columns) == list(out.columns)
