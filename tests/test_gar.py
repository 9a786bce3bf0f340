"""The project's GAR is pyterrier_adaptive.GAR's algorithm, inspectable by PyTerrier (no validation report)."""
import warnings

import pandas as pd
import pyterrier as pt
import pyterrier_adaptive
import pytest
from ir_measures import R
from _toy_graph import DictScorer, ToyGroupGraph, first_stage

from pyterrier_garen._gar import GAR

GRAPH = ToyGroupGraph({'a': ['x', 'y'], 'b': ['y', 'z'], 'c': ['z'], 'x': ['a'], 'y': ['b'], 'z': ['c']},
                      {'a': 0, 'x': 0, 'b': 1, 'y': 1, 'c': 2, 'z': 2})
SCORES = {'a': 1., 'b': 2., 'c': 0.5, 'x': 3., 'y': 0.2, 'z': 2.5}


def test_same_output_as_pyterrier_adaptive():
    inp = pd.concat([first_stage(['a', 'b', 'c']), first_stage(['c', 'a'], qid='q2', query='two')])
    ours = GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2)(inp)
    theirs = pyterrier_adaptive.GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2)(inp)
    pd.testing.assert_frame_equal(ours, theirs)


def test_inspectable_and_empty_in_empty_out():
    scorer = DictScorer(SCORES)
    gar = GAR(scorer, GRAPH, num_results=4)
    columns = ['qid', 'query', 'docno', 'score', 'rank']
    assert pt.inspect.transformer_outputs(gar, columns) == ['qid', 'query', 'docno', 'rank', 'score', 'iteration']
    out = gar(pd.DataFrame(columns=columns))
    assert len(out) == 0
    assert list(out.columns) == ['qid', 'query', 'docno', 'rank', 'score', 'iteration']
    assert scorer.num_calls == 0
    assert repr(gar).startswith('GAR(')
    assert 'num_results=4' in repr(gar)


def test_experiment_validates_without_a_report():
    topics = pd.DataFrame({'qid': ['q1'], 'query': ['query one']})
    qrels = pd.DataFrame({'qid': ['q1'], 'docno': ['z'], 'label': [1]})
    first = pt.Transformer.from_df(first_stage(['a', 'b', 'c']))  # z is reached only through the graph
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        table = pt.Experiment([first >> GAR(DictScorer(SCORES), GRAPH, num_results=4, batch_size=2)], topics, qrels,
                              [R @ 10], names=['GAR'])
    assert table['R@10'].iloc[0] == 1.0


class _Unruly(pt.Transformer):
    """DictScorer's scores, then one fault: ``'nan'`` (NaN for the docnos given), ``'drop'`` (no row for them) or
    ``'foreign'`` (one more row, for a docno never asked)."""

    def __init__(self, fault, docnos=('b',)):
        self.fault, self.docnos = fault, set(docnos)

    def transform(self, inp):
        out = DictScorer(SCORES)(inp)
        hit = out['docno'].isin(self.docnos)
        if self.fault == 'nan':
            return out.assign(score=out['score'].where(~hit, float('nan')))
        if self.fault == 'drop':
            return out[~hit]
        return pd.concat([out, out.head(1).assign(docno='ghost', score=99.)])


# By hand (first stage a, b, c; budget 4; batches of 2). Iteration 0 scores a (1) and b (unusable: -inf), so only
# a's neighbours x and y enter the frontier, both at 1. Iteration 1 scores x (3) and y (.2); the budget is spent.
# The order by score: x 3, a 1, y .2, then b, which has no usable score: .2 - 1.
@pytest.mark.parametrize('fault', ['nan', 'drop'])
def test_an_unusable_score_is_ranked_last_and_counted(fault):
    with pytest.warns(UserWarning, match=r'the reranker .* no usable score for 1 of 2 rows') as caught:
        out = GAR(_Unruly(fault), GRAPH, num_results=4, batch_size=2)(first_stage(['a', 'b', 'c']))
    assert list(out['docno']) == ['x', 'a', 'y', 'b']
    assert list(out['score']) == pytest.approx([3., 1., .2, -.8])
    assert list(out['rank']) == [0, 1, 2, 3]
    kind = '1 NaN or infinite, 0 missing' if fault == 'nan' else '0 NaN or infinite, 1 missing'
    assert any(kind in str(w.message) for w in caught)


def test_a_row_never_asked_about_is_ignored():
    with pytest.warns(UserWarning, match='not asked about'):
        out = GAR(_Unruly('foreign'), GRAPH, num_results=4, batch_size=2)(first_stage(['a', 'b', 'c']))
    # the scores of the well-behaved scorer: by hand, iteration 0 scores a (1), b (2); frontier x, y (from a, 1)
    # and y, z (from b, 2): y 2, z 2, x 1. Iteration 1 scores y (.2) and z (2.5).
    assert list(out['docno']) == ['z', 'b', 'a', 'y']
    assert 'ghost' not in set(out['docno'])
    pd.testing.assert_frame_equal(out, pyterrier_adaptive.GAR(DictScorer(SCORES), GRAPH, num_results=4,
                                                              batch_size=2)(first_stage(['a', 'b', 'c'])))


def test_scores_stay_finite_and_in_rank_order_per_query():
    """One query whose every score is unusable (its scores count down from 0), after one untouched (q0 comes
    first: GAR runs its queries in sorted order)."""
    inp = pd.concat([first_stage(['a', 'b'], qid='q1'), first_stage(['c', 'x'], qid='q0', query='two')])
    with pytest.warns(UserWarning, match='no usable score for 2 of 2 rows'):
        out = GAR(_Unruly('nan', docnos=('a', 'b')), ToyGroupGraph({}, {}), num_results=2, batch_size=2)(inp)
    assert list(out['qid']) == ['q0', 'q0', 'q1', 'q1']
    q1, q2 = out[out.qid == 'q1'], out[out.qid == 'q0']
    assert list(q1['score']) == [-1., -2.]
    assert list(q2['docno']) == ['x', 'c']
    assert list(q2['score']) == [3., .5]


@pytest.mark.parametrize('batch_size', [1, 3])
@pytest.mark.parametrize('enabled', [True, False])
def test_the_scorer_sees_what_pyterrier_adaptive_shows_it(batch_size, enabled):
    """Every scorer call gets the frame the original would give it (its columns and rows), and the output is the
    original's: with batches of one document, and with the graph off (plain re-ranking of the first stage). Where
    the original's batch has no rank column, ours adds the batch order as one (0, 1, ... per query), so that every
    call is a whole result frame, as every search of this package sends it (pyterrier_caching's scorer caches ask
    for one)."""
    inp = pd.concat([first_stage(['a', 'b', 'c']), first_stage(['c', 'a'], qid='q2', query='two')])
    ours, theirs = DictScorer(SCORES), DictScorer(SCORES)
    out = GAR(ours, GRAPH, num_results=4, batch_size=batch_size, enabled=enabled)(inp)
    expected = pyterrier_adaptive.GAR(theirs, GRAPH, num_results=4, batch_size=batch_size, enabled=enabled)(inp)
    pd.testing.assert_frame_equal(out, expected)
    assert len(ours.calls) == len(theirs.calls)
    for mine, original in zip(ours.calls, theirs.calls):
        original = original.reset_index(drop=True)
        if 'rank' not in original.columns:
            original['rank'] = original.groupby('qid', sort=False).cumcount()
        pd.testing.assert_frame_equal(mine.reset_index(drop=True), original, check_like=True, check_dtype=False)
        assert 'rank' in mine.columns


def test_defaults_and_settings_are_pyterrier_adaptives():
    scorer = DictScorer(SCORES)
    for kwargs in ({}, {'num_results': 7, 'batch_size': 3, 'backfill': False, 'enabled': False, 'verbose': True}):
        ours, theirs = GAR(scorer, GRAPH, **kwargs), pyterrier_adaptive.GAR(scorer, GRAPH, **kwargs)
        for name in ('num_results', 'batch_size', 'backfill', 'enabled', 'verbose'):
            assert getattr(ours, name) == getattr(theirs, name), (kwargs, name)
    assert GAR(scorer, GRAPH).num_results == 1000


def test_input_without_a_score_is_refused_naming_gar():
    gar = GAR(DictScorer(SCORES), GRAPH, num_results=4)
    with pytest.raises(pt.validate.InputValidationError, match='GAR'):
        gar(first_stage(['a', 'b']).drop(columns=['score']))
    with pytest.raises(pt.validate.InputValidationError, match='GAR'):
        pt.inspect.transformer_outputs(gar, ['qid', 'query', 'docno'])
    empty = gar(pd.DataFrame(columns=['qid', 'query', 'docno', 'score', 'rank']))
    assert {c: str(t) for c, t in empty.dtypes.items()} == {
        'qid': 'object', 'query': 'object', 'docno': 'object', 'rank': 'float64', 'score': 'float64',
        'iteration': 'float64'}


class _SizedGraph(ToyGroupGraph):
    def __len__(self):
        return 6


@pytest.mark.parametrize(('budget', 'warns'), [(5, False), (6, True), (7, True)])
def test_a_budget_that_covers_the_collection_warns(budget, warns):
    graph = _SizedGraph(GRAPH.adjacency, GRAPH.groups)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        GAR(DictScorer(SCORES), graph, num_results=budget)(first_stage(['a', 'b', 'c']))
    said = [str(w.message) for w in caught if 'documents of the collection' in str(w.message)]
    assert said == ([f'GAR: budget={budget} is at least the 6 documents of the collection, so every adaptive search '
                     're-ranks the whole corpus and all find the same documents, differing only in their order; use a '
                     'budget below the collection size to compare the searches'] if warns else [])


class _ListwiseStage(pt.Transformer):
    """Declares window-relative scores: each call's rows scored by their position in the call (best first)."""
    listwise = True

    def transform(self, inp):
        return inp.assign(score=[float(len(inp) - i) for i in range(len(inp))])


def test_gar_warns_that_a_listwise_scorer_does_not_compare_across_batches(recwarn):
    graph = GRAPH
    identity = pt.Transformer.from_df(pd.DataFrame({'qid': [], 'docno': []}))
    for scorer in (_ListwiseStage(), identity >> _ListwiseStage()):
        with pytest.warns(UserWarning, match=r'^GAR: GAR ranks the documents of all its batches together by score, '
                          r'but the reranker \(_ListwiseStage\) declares listwise = True') as caught:
            GAR(scorer, graph, num_results=10)
        assert len(caught) == 1
        assert str(caught[0].message) == (
            'GAR: GAR ranks the documents of all its batches together by score, but the reranker (_ListwiseStage) '
            'declares listwise = True: its scores only order the documents of one call, so documents from different '
            'calls are compared by their places in their own calls (the best of every call tie); use SlideGAR (GAR '
            'for listwise rerankers) or a pointwise scorer')
        assert caught[0].filename == __file__
    recwarn.clear()
    GAR(pt.apply.score(lambda row: 1.0), graph, num_results=10)  # a pointwise scorer: nothing to say
    assert not [w for w in recwarn if 'listwise' in str(w.message)]


class _AdaptiveIds:
    """A graph with pyterrier-adaptive's convention: an integer names a document by internal id (its place in
    ``docnos``), a string by docno. GAR given integer docnos must read them as the docnos they print as."""

    docnos = ['10', '11', '12', '0', '1', '2']
    links = {'10': ['0', '1'], '11': ['2'], '12': ['1']}

    def __len__(self):
        return len(self.docnos)

    def neighbours(self, docno):
        if isinstance(docno, str):
            return list(self.links.get(docno, []))
        return [self.docnos.index(n) for n in self.links.get(self.docnos[docno], [])]


def test_integer_docnos_are_read_as_their_text():
    scores = {'10': 5, '11': 4, '12': 3, '0': 6, '1': 1, '2': 2}
    text = first_stage(['10', '11', '12'])
    as_text = GAR(DictScorer(scores), _AdaptiveIds(), num_results=5, batch_size=2)(text)
    as_int = GAR(DictScorer(scores), _AdaptiveIds(), num_results=5, batch_size=2)(text.assign(docno=[10, 11, 12]))
    # batch 1: 10, 11 (first stage); frontier of 10 and 11: 0, 1, 2 -> batch 2: 0, 1; batch 3: 12 (budget 5).
    # Read as internal ids, 10 and 11 name no document here (pyterrier-adaptive's graphs raise or return others).
    assert as_text.docno.tolist() == ['0', '10', '11', '12', '1']
    pd.testing.assert_frame_equal(as_int, as_text)


def test_tied_first_stage_scores_follow_the_rank_not_the_row_order():
    inp = first_stage(['a', 'b', 'c']).assign(score=1.0)  # ranks 0, 1, 2; equal scores
    gar = GAR(DictScorer(SCORES), GRAPH, num_results=2, batch_size=2, enabled=False)
    # budget 2: the first two by rank, a and b (row order reversed would give c and b)
    assert sorted(gar(inp).docno) == ['a', 'b']
    assert sorted(gar(inp.iloc[::-1]).docno) == ['a', 'b']


def test_a_duplicate_docno_keeps_its_best_placed_row_with_a_warning():
    inp = pd.concat([first_stage(['a', 'b', 'c']), first_stage(['a']).assign(score=-5.0, rank=9)])
    gar = GAR(DictScorer(SCORES), GRAPH, num_results=2, batch_size=2, enabled=False)
    # budget 2: a (score 3) and b (2); a's repeat at score -5 must not move it last (b and c would be taken)
    with pytest.warns(UserWarning, match='dropped 1 duplicate docnos'):
        assert sorted(gar(inp).docno) == ['a', 'b']


def test_a_nan_first_stage_score_is_taken_last():
    inp = first_stage(['a', 'b', 'c']).assign(score=[float('nan'), 2.0, 1.0])
    gar = GAR(DictScorer(SCORES), GRAPH, num_results=2, batch_size=2, enabled=False)
    assert sorted(gar(inp).docno) == ['b', 'c']


@pytest.mark.parametrize('option', ['backfill', 'enabled', 'verbose'])
def test_a_boolean_option_given_text_is_refused(option):
    with pytest.raises(ValueError, match=f'{option} must be True or False'):
        GAR(DictScorer(SCORES), GRAPH, **{option: 'no'})


def test_without_a_rank_column_the_scores_order_and_the_best_row_of_a_docno_is_kept():
    # a (3), b (2), c (1), then a again at -5: kept at 3, so budget 2 takes a and b (at -5 it would take b and c)
    inp = pd.concat([first_stage(['a', 'b', 'c']), first_stage(['a']).assign(score=-5.0)]).drop(columns=['rank'])
    gar = GAR(DictScorer(SCORES), GRAPH, num_results=2, batch_size=2, enabled=False)
    with pytest.warns(UserWarning, match='dropped 1 duplicate docnos'):
        assert sorted(gar(inp).docno) == ['a', 'b']
    # 40 equal scores and no rank: the row order decides (a stable sort), whatever the sort's size
    many = [f'd{i:02d}' for i in range(40)]
    ties = first_stage(many).drop(columns=['rank']).assign(score=1.0)
    assert sorted(GAR(DictScorer({}), GRAPH, num_results=5, batch_size=5, enabled=False)(ties).docno) == many[:5]


def test_scores_and_ranks_held_as_text_order_as_the_numbers_they_hold():
    # a run read with dtype=str: '10' must rank below '9', and a score of '12' above '9'
    inp = first_stage(['a', 'b', 'c']).assign(score=['9', '9', '12'], rank=['10', '9', '0'])
    gar = GAR(DictScorer(SCORES), GRAPH, num_results=2, batch_size=2, enabled=False)
    # c (12) first, then of the tied a and b the one ranked 9, b (as text '10' < '9' would put a first)
    assert sorted(gar(inp).docno) == ['b', 'c']
