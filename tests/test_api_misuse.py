"""Mistakes a PyTerrier user makes through the Python API (found by an audit as such a user, session 35): each is
refused with a message naming the problem and the fix, or warned about, where it used to be a raw error from inside
or a silently wrong result."""
import warnings

import numpy as np
import pandas as pd
import pytest
from _toy_graph import first_stage

import pyterrier_garen as garen
from pyterrier_garen import FirstStageFusion, GroupCorpusGraph


@pytest.fixture
def four(tmp_path):
    """Four documents in two groups {a, b} {c, d}."""
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', ['a', 'b', 'c', 'd'], np.array([[1], [0], [3], [2]]),
                                        np.ones((4, 1), dtype=np.float32), labels=[0, 0, 1, 1])


@pytest.mark.parametrize(('value', 'hint'), [('a', ' (a docno? its group is group_of(docno))'), (None, ''),
                                             (1.0, ''), (True, ''), (np.bool_(False), '')])
@pytest.mark.parametrize('method', ['group_members', 'group_member_ids', 'summary', 'summary_record'])
def test_what_is_no_group_id_is_refused_by_every_group_method(four, method, value, hint):
    # True used to be group 1, 1.0 group 1, None a bare int() error, 'a' "invalid literal for int()"
    with pytest.raises(TypeError) as info:
        getattr(four, method)(value)
    assert str(info.value) == f'a group id is an integer from 0 to 1, got {value!r}{hint}'


def test_a_group_id_as_text_or_a_numpy_integer_is_the_group(four):
    # a navigator's rows carry the group id as text in their docno column
    assert four.group_members('1') == four.group_members(np.int64(1)) == four.group_members(1) == ['c', 'd']
    assert four.summary('0') == ''
    with pytest.raises(IndexError, match='^group 2 does not exist; group ids run from 0 to 1$'):
        four.group_members('2')


def test_one_docno_and_several_are_not_mixed_up(four):
    with pytest.raises(TypeError) as info:
        four.groups_of('ab')  # used to look up 'a' and 'b' one character at a time: [0, 0]
    assert str(info.value) == ("groups_of takes a sequence of docnos, got the single docno 'ab'; use group_of(docno), "
                               "or groups_of([docno])")
    for several in (['a', 'c'], ('a',), np.array(['a']), pd.Series(['a'])):
        with pytest.raises(TypeError) as info:
            four.group_of(several)  # used to answer -1: the text of a list is no docno
        assert str(info.value) == (f'group_of takes one docno, got a {type(several).__name__}; use groups_of(docnos) '
                                   'for several')
    assert four.groups_of(['c', 'zz']).tolist() == [1, -1]
    assert four.group_of('c') == 1


@pytest.mark.parametrize('summarizer', [None, garen.ExtractiveSummarizer, 'extractive'])
def test_summarize_needs_a_summariser_instance(four, summarizer):
    what = 'the class ExtractiveSummarizer' if summarizer is garen.ExtractiveSummarizer else \
        type(summarizer).__name__
    with pytest.raises(TypeError) as info:
        four.summarize(summarizer, [{'docno': d, 'text': d} for d in 'abcd'])
    assert str(info.value) == ('summarize needs a summariser instance (garen.ExtractiveSummarizer(), '
                               f'garen.LLMSummarizer(engine)), got {what}')
    assert not four.has_summaries


def test_fusion_given_a_weight_where_the_first_stage_goes_is_refused():
    with pytest.raises(TypeError) as info:
        FirstStageFusion(0.1)
    assert str(info.value) == ("FirstStageFusion's first argument is the first stage (a transformer such as BM25, or "
                               "its result frame), got float 0.1; e.g. FirstStageFusion(bm25, 0.1)")


def test_fusion_with_the_first_stage_of_other_queries_warns_and_leaves_their_order():
    run = pd.concat([first_stage(['x', 'y'], qid='q1'), first_stage(['x', 'y'], qid='q2')], ignore_index=True)
    r0 = first_stage(['y', 'x'], qid='q1')  # q2 has no first-stage ranking (say, 'Q2' in another file)
    with pytest.warns(UserWarning, match='have no first-stage ranking') as caught:
        out = FirstStageFusion(r0, 1.0)(run)
    assert len(caught) == 1
    assert str(caught[0].message).endswith(": 1 of the 2 queries have no first-stage ranking (e.g. qid 'q2'; the "
                                           "first stage's qids include ['q1']), so their order is left as it was: is "
                                           "the first stage of these topics? (qids are compared as text)")
    # q1 fused: x = 1/61 + 1/62, y = 1/62 + 1/61: a tie, input order kept; q2 as it came
    assert out.groupby('qid')['docno'].apply(list).to_dict() == {'q1': ['x', 'y'], 'q2': ['x', 'y']}
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        FirstStageFusion(r0, 0.0)(run)  # a weight of 0 fuses nothing: nothing to warn about


def test_a_window_of_one_names_a_fix_that_is_allowed():
    from pyterrier_garen._driver import check_window
    with pytest.raises(ValueError) as info:
        check_window(1, 1, 10)
    assert str(info.value) == ('keep (h=1) must be smaller than window (w=1), otherwise no new document can enter the '
                               'window; so the window must hold at least 2 (e.g. window=20, keep=10)')
    with pytest.raises(ValueError, match='; e.g. keep=2$'):
        check_window(5, 5, 10)


def test_remove_excluded_reads_labels_held_as_text_and_names_missing_columns():
    run = pd.DataFrame({'qid': ['1', '1', '1'], 'docno': ['a', 'b', 'c'], 'score': [3., 2., 1.], 'rank': [0, 1, 2]})
    qrels = pd.DataFrame({'qid': ['1', '1'], 'docno': ['a', 'c'], 'label': ['-100', '1']})  # read with dtype=str
    out = garen.remove_excluded(run, qrels)
    assert out[['docno', 'rank']].values.tolist() == [['b', 0], ['c', 1]]
    with pytest.raises(ValueError) as info:
        garen.remove_excluded(run, qrels.rename(columns={'label': 'relevance'}))
    assert str(info.value) == ("remove_excluded: the qrels lack the column(s) ['label']; they need qid, docno and "
                               "label (got ['qid', 'docno', 'relevance']), as dataset.get_qrels() gives them")


def test_a_collection_given_as_dot_is_named_by_its_folder(tmp_path, monkeypatch):
    folder = tmp_path / 'my-collection'
    folder.mkdir()
    (folder / 'docs.jsonl').write_text('{"docno": "d1", "text": "one"}\n{"docno": "d2", "text": "two"}\n')
    (folder / 'queries.tsv').write_text('q1\tone\n')
    monkeypatch.chdir(folder)
    assert garen.LocalDataset('.').name == 'my-collection'  # was '' (the header said LocalDataset('.'))
    monkeypatch.chdir(folder / '..')
    assert garen.LocalDataset('my-collection').name == 'my-collection'
    assert garen.LocalDataset('my-collection/.').name == 'my-collection'


def test_a_simulated_navigator_given_document_rows_names_them(four):
    # put in the reranker's place, it gets docnos: this was int()'s "invalid literal for int() with base 10: 'a'"
    from pyterrier_garen.analysis import SimulatedNavigator
    qrels = pd.DataFrame({'qid': ['q1'], 'docno': ['a'], 'label': [1]})
    navigator = SimulatedNavigator(qrels, four)
    with pytest.raises(ValueError) as info:
        navigator(pd.DataFrame({'qid': ['q1'], 'query': ['x'], 'docno': ['a']}))
    assert str(info.value) == (f"{navigator!r}: docno 'a' is not a group id of this artifact (ids run from 0 to 1); a "
                               'group navigator scores group ids, as GAREN sends them (DocGAREN\'s navigator scores '
                               'documents: give it a document scorer such as VectorScorer)')
    scored = navigator(pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['x', 'x'], 'docno': ['0', '1']}))
    assert scored.score.tolist()[:2] == [1.0, 0.0]  # noise 0: group 0 holds the relevant a, group 1 nothing


def test_fusion_with_a_transformer_first_stage_names_a_missing_query_column():
    import pyterrier as pt

    asked = []
    bm25 = pt.apply.generic(lambda queries: asked.append(queries) or first_stage(['a', 'b']))
    run = first_stage(['b', 'a']).drop(columns=['query'])
    with pytest.raises(ValueError, match=r"FirstStageFusion.*has no query column, which the first stage needs"):
        FirstStageFusion(bm25, 1.0)(run)
    assert asked == []  # refused before the first stage was asked anything without its queries
    # a frame needs no query column; at weight 2, a (first-stage rank 1) passes b: 1/62 + 2/61 > 1/61 + 2/62
    assert FirstStageFusion(first_stage(['a', 'b']), 2.0)(run).docno.tolist() == ['a', 'b']


@pytest.mark.parametrize(('qrels', 'label', 'match'), [
    (None, -100, 'qrels must be a qrels frame'),
    (pd.DataFrame({'qid': ['1'], 'docno': ['a']}), -100, r"lack the column\(s\) \['label'\]"),
    ('qrels', 'x', 'excluded_label must be a finite number'),
    ('qrels', None, 'excluded_label must be a finite number'),
    ('qrels', True, 'excluded_label must be a finite number'),
])
def test_remove_excluded_refuses_what_would_remove_nothing_or_fail_later(qrels, label, match):
    if isinstance(qrels, str):
        qrels = pd.DataFrame({'qid': ['1'], 'docno': ['a'], 'label': [-100]})
    with pytest.raises(ValueError, match=match):
        garen.RemoveExcluded(qrels, excluded_label=label)
    with pytest.raises(ValueError, match=match):
        garen.remove_excluded(first_stage(['a', 'b'], qid='1'), qrels, excluded_label=label)
