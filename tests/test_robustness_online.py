"""Online input: bad parameters, first-stage frames, scores of rerankers/navigators, group ids and vectors of another
corpus give an error or a counted, named warning (issue 9, "Online")."""
import math
import warnings

import numpy as np
import pandas as pd
import pytest

from pyterrier_garen import (GAREN, RGS, CentroidNavigator, GroupCorpusGraph, HeadReranker, SlideGAR,
                             SlidingWindowReranker, YesNoScorer)
from pyterrier_garen._engines import Engine, Generation
from pyterrier_garen._gar import GAR

from _toy_graph import DictScorer, ToyGroupGraph, first_stage
from _vector_stubs import TableVectors

DOCS = [f'd{i}' for i in range(12)]
GRAPH = ToyGroupGraph({d: [DOCS[(i + 1) % 12], DOCS[(i + 2) % 12]] for i, d in enumerate(DOCS)},
                      {d: i // 3 for i, d in enumerate(DOCS)})


def _garen(reranker=None, navigator=None, **kwargs):
    return GAREN(reranker or DictScorer({d: 12 - i for i, d in enumerate(DOCS)}), GRAPH,
                 navigator or DictScorer({}), **{'window': 4, 'keep': 2, 'budget': 8, **kwargs})


@pytest.mark.parametrize(('kwargs', 'words'), [
    ({'p': 0.0}, 'p must be a number strictly between 0 and 1, got 0.0'),
    ({'p': 1.5}, 'p must be a number strictly between 0 and 1, got 1.5'),
    ({'p': float('nan')}, 'p must be a number strictly between 0 and 1, got nan'),
    ({'p': True}, 'p must be a number strictly between 0 and 1, got True'),
    ({'alpha': float('nan')}, 'alpha must be a finite number >= 0, got nan'),
    ({'alpha': -0.1}, 'alpha must be a finite number >= 0, got -0.1'),
    ({'alpha': math.inf}, 'alpha must be a finite number >= 0, got inf'),
])
def test_bad_parameters(kwargs, words):
    with pytest.raises(ValueError, match=words):
        _garen(**kwargs)


def test_plain_corpus_graph_where_groups_are_needed():
    class PlainGraph:
        def neighbours(self, docno):
            return []
    with pytest.raises(TypeError, match='GAREN needs a group graph .a GroupCorpusGraph., got PlainGraph without '
                                        'group_of, group_members, summary; build one with GroupCorpusGraph'):
        GAREN(DictScorer({}), PlainGraph(), DictScorer({}))


@pytest.mark.parametrize(('column', 'value', 'words'), [
    ('qid', None, '1 first-stage rows have no qid'),
    ('qid', np.nan, '1 first-stage rows have no qid'),
    ('query', None, r"1 first-stage rows have no query \(None/NaN\) \(qids \['q1'\]\)"),
    ('docno', None, '1 first-stage rows have no docno'),
])
def test_first_stage_rows_without_ids(column, value, words):
    inp = first_stage(DOCS).astype({column: object})
    inp.loc[3, column] = value
    with pytest.raises(ValueError, match=words):
        _garen()(inp)


def test_integer_qids_answered_as_strings_are_kept():
    class StrQids(DictScorer):
        def transform(self, inp):
            return super().transform(inp).assign(qid=inp['qid'].astype(str))
    inp = first_stage(DOCS).assign(qid=7)
    ranked = SlidingWindowReranker(StrQids({'d11': 99.}), window=4, stride=2, budget=12)(inp)
    assert ranked.docno.iloc[0] == 'd11'


@pytest.mark.parametrize(('scores', 'error', 'words'), [
    (['high'] * 12, ValueError, "returned 12 scores that are not numbers .e.g. 'high'."),
])
def test_non_numeric_scores_are_an_error(scores, error, words):
    class Bad(DictScorer):
        def transform(self, inp):
            return inp.assign(score=scores[:len(inp)])
    with pytest.raises(error, match=words):
        SlidingWindowReranker(Bad({}), window=12, stride=6, budget=12)(first_stage(DOCS))


def test_nan_and_infinite_scores_are_counted_and_ranked_last():
    class Nan(DictScorer):
        def transform(self, inp):
            values = np.linspace(1, 2, len(inp))
            values[0], values[1] = np.nan, np.inf
            return inp.assign(score=values)
    with pytest.warns(UserWarning, match=r'gave no usable score for 2 of 12 rows \(2 NaN or infinite, 0 missing'):
        ranked = SlidingWindowReranker(Nan({}), window=12, stride=6, budget=12)(first_stage(DOCS))
    assert set(ranked.docno.iloc[-2:]) == {'d0', 'd1'}


def test_answers_for_other_queries_are_named():
    class Other(DictScorer):
        def transform(self, inp):
            return super().transform(inp).assign(qid='someone-else')
    with pytest.warns(UserWarning, match=r'returned 12 rows for queries or documents it was not asked about'):
        SlidingWindowReranker(Other({}), window=12, stride=6, budget=12)(first_stage(DOCS))


def test_a_second_answer_with_another_score_is_named_and_the_first_is_used():
    class Twice(DictScorer):
        """Answers every row, then d0 again with the best score and d1 again with its own score."""
        def transform(self, inp):
            out = super().transform(inp)
            again = out[out.docno.isin(['d0', 'd1'])].assign(score=lambda f: np.where(f.docno == 'd0', 99., f.score))
            return pd.concat([out, again], ignore_index=True)
    scores = {d: 12 - i for i, d in enumerate(DOCS)}
    scores['d0'] = 0.  # its first answer ranks it last; the second (99) would rank it first
    with pytest.warns(UserWarning, match=r"returned 1 more rows with another score for a \(qid, docno\) it had "
                                         r"already scored \(qid/docno e.g. \['q1/d0'\]\); its first score of each is "
                                         "used"):
        ranked = SlidingWindowReranker(Twice(scores), window=12, stride=6, budget=12)(first_stage(DOCS))
    assert ranked.docno.tolist() == [*DOCS[1:], 'd0']  # d1's repeated answer, with the same score, is no conflict


def test_a_second_answer_that_is_nan_where_the_first_was_a_number_is_named():
    class Then(DictScorer):
        """Answers every row, then d2 again: NaN after its number, and d3 again: a number after NaN."""
        def transform(self, inp):
            out = super().transform(inp)
            out.loc[out.docno == 'd3', 'score'] = np.nan
            again = out[out.docno.isin(['d2', 'd3'])].assign(score=lambda f: np.where(f.docno == 'd2', np.nan, 5.))
            return pd.concat([out, again], ignore_index=True)
    with pytest.warns(UserWarning, match=r'returned 2 more rows with another score for a \(qid, docno\)'):
        SlidingWindowReranker(Then({d: 12 - i for i, d in enumerate(DOCS)}), window=12, stride=6,
                              budget=12)(first_stage(DOCS))


def _groups(tmp_path):
    docnos = [f'd{i:02d}' for i in range(20)]
    edges = np.stack([[(i + 1) % 20, (i + 2) % 20] for i in range(20)])
    return GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, np.ones(edges.shape), labels=np.arange(20) // 5)


class FakeEncoder:
    def encode_queries(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)

    def encode_docs(self, texts):
        return np.ones((len(texts), 4), dtype=np.float32)


def random_vectors(path, docnos):
    """A FlexIndex stand-in holding random vectors for ``docnos``."""
    return TableVectors(path, dict(zip(docnos, np.random.default_rng(0).random((len(docnos), 4), np.float32))))


def _nav_frame(gids):
    return pd.DataFrame({'qid': ['q'] * len(gids), 'query': ['x'] * len(gids), 'docno': gids})


def test_a_yes_no_navigator_over_groups_without_summaries_says_so_once(tmp_path):
    # a generic scorer cannot tell it is navigating: each group was sent '' and every group tied, without a word
    from _stub_engine import StubEngine

    from pyterrier_garen import YesNoScorer
    groups = _groups(tmp_path)  # from_arrays: no summaries
    navigator = YesNoScorer(StubEngine())
    search = GAREN(DictScorer({f'd{i:02d}': 20 - i for i in range(20)}), groups, navigator, budget=8, window=4,
                   keep=2, group_budget=2, propagate=False)
    with pytest.warns(UserWarning, match='empty') as caught:
        search(first_stage(['d00', 'd01', 'd02', 'd03', 'd04', 'd05']))
    said = [str(w.message) for w in caught if 'empty' in str(w.message)]
    sent = navigator.empty_texts
    assert sent >= 2
    assert said == [
        f"{navigator!r}: all 2 rows have an empty 'text', so the model judges them on the query alone and cannot "
        'tell them apart (counted in .empty_texts; said once). As a navigator: summarise the groups first '
        '(groups.summarize(garen.ExtractiveSummarizer(), dataset); garen.prepare does it); as a reranker: put the '
        "documents' text in that column (pt.text.get_text(dataset, 'text') in front)"]
    # the count goes on, the warning is not repeated; reset_stats starts both again
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        navigator(_nav_frame(['0', '1', '2']).assign(text=['', 'sea', None]))
    assert navigator.empty_texts == sent + 2
    navigator.reset_stats()
    assert navigator.empty_texts == 0
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        navigator(_nav_frame(['0', '1', '2']).assign(text=['   ', 'sea', 'lava']))  # some empty: counted only
    assert navigator.empty_texts == 1
    with pytest.warns(UserWarning, match=r"all 3 rows have an empty 'text'"):
        navigator(_nav_frame(['0', '1', '2']).assign(text=['   ', '', None]))


def test_a_listwise_reranker_counts_documents_without_text(tmp_path):
    from _stub_engine import StubEngine

    from pyterrier_garen import ListwiseReranker
    reranker = ListwiseReranker(StubEngine(), window=4, stride=2)
    docs = pd.DataFrame({'qid': 'q', 'query': 'sea lava', 'docno': ['a', 'b', 'c', 'd', 'e'],
                         'text': ['sea', '', 'lava', float('nan'), 'sea lava']})
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)  # a few empty documents are the collection's: counted only
        out = reranker(docs)
    assert reranker.empty_texts == 2
    assert out.docno.tolist()[:3] == ['e', 'a', 'c']
    # the text column present but empty everywhere (a frame without its documents' text)
    with pytest.warns(UserWarning, match=r"^ListwiseReranker\(.*\): all 5 rows have an empty 'text', so the model "
                                         r'judges them on the query alone'):
        reranker(docs.assign(text=''))
    assert reranker.empty_texts == 7


def test_a_call_of_empty_texts_is_said_once_until_reset_stats():
    from _stub_engine import StubEngine

    from pyterrier_garen import ListwiseReranker
    reranker = ListwiseReranker(StubEngine(), window=4, stride=2)
    docs = pd.DataFrame({'qid': 'q', 'query': 'sea lava', 'docno': ['a', 'b'], 'text': ['', ' ']})
    with pytest.warns(UserWarning, match=r"all 2 rows have an empty 'text'"):
        reranker(docs)
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        reranker(docs)  # a second call of empty texts: counted, not said again
    assert reranker.empty_texts == 4
    reranker.reset_stats()
    with pytest.warns(UserWarning, match=r"all 2 rows have an empty 'text'"):
        reranker(docs)
    assert reranker.empty_texts == 2


def test_vectors_of_another_corpus(tmp_path):
    groups = _groups(tmp_path)
    other = random_vectors(tmp_path / 'other.npids', [f'x{i:02d}' for i in range(20)])
    with pytest.raises(ValueError, match='none of the 20 documents of the groups is in the vectors'):
        CentroidNavigator(groups, other, FakeEncoder())(_nav_frame(['0', '1']))
    partial = random_vectors(tmp_path / 'part.npids', [f'd{i:02d}' for i in range(10)])
    with pytest.warns(UserWarning, match='10 of 20 group documents have no stored vector'):
        CentroidNavigator(groups, partial, FakeEncoder())(_nav_frame(['0']))


@pytest.mark.parametrize('gid', ['4', '-1', 'g7', '1.5'])
def test_group_id_not_in_artifact(tmp_path, gid):
    groups = _groups(tmp_path)
    vectors = random_vectors(tmp_path / 'v.npids', groups.docnos_list())
    with pytest.raises(ValueError, match=rf"docno '{gid}' is not a group id of this artifact \(ids run from 0 to 3\)"):
        CentroidNavigator(groups, vectors, FakeEncoder())(_nav_frame(['0', gid]))


def test_docno_not_in_artifact_has_no_group(tmp_path):
    groups = _groups(tmp_path)
    assert groups.group_of('nope') == -1
    assert list(groups.neighbours('nope')) == []
    with pytest.raises(IndexError, match='group 9 does not exist; group ids run from 0 to 3'):
        groups.group_members(9)


@pytest.mark.parametrize('make', [
    lambda g: GAREN(DictScorer({}), g, DictScorer({}), window=4, keep=2, budget=8),
    lambda g: SlideGAR(DictScorer({}), g, window=4, keep=2, budget=8),
    lambda g: RGS(DictScorer({}), g, budget=8),
    lambda g: GAR(DictScorer({}), g, num_results=8, batch_size=4),
], ids=['GAREN', 'SlideGAR', 'RGS', 'GAR'])
def test_a_first_stage_over_other_docnos_than_the_graph_is_named(tmp_path, make):
    search = make(_groups(tmp_path))  # docnos d00 ... d19
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # the graph's own docnos: not a word
        search(first_stage(['d00', 'd01', 'd02']))
    name = type(search).__name__
    with pytest.warns(UserWarning, match=rf"^{name}: 2 of the 3 documents at the top of the first stage \(its first "
                                         r"20 per query\) are not in the graph \(e\.g\. docno 'd1'\); the search "
                                         r're-ranks them but follows no link from them\. .*read runs with '
                                         r'dtype=str\)$') as record:
        search(first_stage(['d00', 'd1', 'd2']))  # a run read with numbers, leading zeros lost
    assert sum('not in the graph' in str(w.message) for w in record) == 1


class OddEngine(Engine):
    """A custom engine whose yes/no probabilities are unusable."""
    model = 'odd'

    def __init__(self, values):
        self.values = values

    @property
    def context_length(self):
        return 4096

    def generate(self, conversations, *, max_tokens, stop=None):
        return [Generation(text='') for _ in conversations]

    def yes_no(self, conversations, *, yes='yes', no='no'):
        return [Generation(text='', probability=v) for v, _ in zip(self.values, conversations)]


def test_unusable_yes_no_probabilities_are_counted():
    scorer = YesNoScorer(OddEngine([None, float('nan'), 1.5, -0.1, 0.7]))
    frame = pd.DataFrame({'qid': ['q'] * 5, 'query': ['x'] * 5, 'docno': list('abcde'), 'text': ['t'] * 5})
    with pytest.warns(UserWarning, match=r'4 rows scored 0 because the engine request failed or its answer was '
                                         r"unusable .*the engine gave probability None, not a number in \[0, 1\]"):
        out = scorer(frame)
    assert list(out.sort_values('docno').score) == [0.0, 0.0, 0.0, 0.0, 0.7]
    assert scorer.failed == 4


def test_reranker_vectors_of_another_corpus(tmp_path):
    from pyterrier_garen import VectorScorer
    other = random_vectors(tmp_path / 'o.npids', [f'x{i:02d}' for i in range(20)])
    frame = pd.DataFrame({'qid': ['q'] * 12, 'query': ['x'] * 12, 'docno': [f'd{i:02d}' for i in range(12)]})
    with pytest.raises(ValueError, match='none of the 12 documents to score is in the vectors'):
        VectorScorer(other, FakeEncoder())(frame)
    some = random_vectors(tmp_path / 's.npids', [f'd{i:02d}' for i in range(6)])
    scorer = VectorScorer(some, FakeEncoder())
    with pytest.warns(UserWarning, match='6 of 12 documents have no stored vector and score 0'):
        out = scorer(frame)
    scorer(frame)
    assert scorer.missing_vectors == 12
    assert (out.set_index('docno').loc[[f'd{i:02d}' for i in range(6, 12)], 'score'] == 0).all()


@pytest.mark.parametrize('docid', [20, -1, 2.0])
def test_internal_id_out_of_range(tmp_path, docid):
    with pytest.raises(IndexError, match=rf'document id {docid!r} is not in .*internal ids run from 0 to 19'):
        _groups(tmp_path).neighbours(docid)


# -- components a user passes in the wrong place (a hostile-user audit): named at construction or at the first call ---

@pytest.mark.parametrize(('make', 'message'), [
    (lambda: GAREN(DictScorer({}), GRAPH, None),
     'GAREN needs a navigator: a pt.Transformer that scores groups, e.g. garen.VoteNavigator() or '
     'garen.CentroidNavigator(groups, prepared.vectors); got NoneType'),  # was a bare StopIteration at the first call
    (lambda: GAREN(None, GRAPH, DictScorer({})),
     'GAREN needs a reranker: a pt.Transformer that scores (qid, query, docno) rows, e.g. '
     'garen.VectorScorer(prepared.vectors); got NoneType'),
    (lambda: SlidingWindowReranker('cross-encoder'),
     'SlidingWindowReranker needs a reranker: a pt.Transformer that scores (qid, query, docno) rows, e.g. '
     'garen.VectorScorer(prepared.vectors); got str'),
    (lambda: HeadReranker(None),
     'HeadReranker needs a reranker: a pt.Transformer that scores (qid, query, docno) rows, e.g. '
     'garen.VectorScorer(prepared.vectors); got NoneType'),
    (lambda: GAR(None, GRAPH),
     'GAR needs a scorer: a pt.Transformer that scores (qid, query, docno) rows, e.g. '
     'garen.VectorScorer(prepared.vectors); got NoneType'),
    (lambda: RGS(DictScorer({}), None)(first_stage(DOCS)),
     'RGS needs a corpus graph with neighbours(docno) (a GroupCorpusGraph or a pyterrier-adaptive CorpusGraph), got '
     'NoneType'),  # when run (built without a graph, it checks its sizes); was AttributeError: ... 'neighbours'
    (lambda: SlideGAR(DictScorer({}), '/data/groups'),
     "SlideGAR needs a corpus graph, got the path '/data/groups'; open it first: GroupCorpusGraph(path), or "
     'pt.Artifact.load(path) for a pyterrier-adaptive graph'),
])
def test_a_missing_or_misplaced_component_is_named(make, message):
    with pytest.raises(TypeError) as refused:
        make()
    assert str(refused.value) == message


def test_a_path_where_groups_are_needed_says_to_open_it():
    from pyterrier_garen._params import check_groups
    with pytest.raises(TypeError) as refused:
        check_groups('/data/groups', 'GAREN')
    assert str(refused.value) == ("GAREN needs a group graph (a GroupCorpusGraph), got the path '/data/groups'; open "
                                  'it first: GroupCorpusGraph(path)')


class _TextScorer:
    """A text-reading reranker given to a search without ``with_text`` (it reads ``text`` as a column)."""
    def __call__(self, frame):
        return frame.assign(score=[float(len(t)) for t in frame['text']])

    def __repr__(self):
        return 'TextScorer()'


def test_a_reranker_reading_text_it_is_not_sent_names_with_text():
    # the first stage holds text (bm25 >> pt.text.get_text(...) >> search), but a search sends qid, query, docno,
    # score, rank only; this used to be the model's own KeyError: 'text'
    inp = first_stage(DOCS).assign(text='some words')
    expected = ("the reranker TextScorer() reads the column(s) ['text'], which it is not sent: it gets ['qid', "
                "'query', 'docno', 'score', 'rank'] and no document text (a graph search also scores documents the "
                'first stage did not return), so it must fetch what it reads itself: pass garen.with_text(dataset, '
                "reranker), which is pt.text.get_text(dataset, 'text') >> reranker")
    for search in (_garen(reranker=_TextScorer()), SlidingWindowReranker(_TextScorer(), budget=8)):
        with pytest.raises(ValueError) as refused:
            search(inp)
        assert str(refused.value) == expected
        assert isinstance(refused.value.__cause__, KeyError)


def test_a_reranker_missing_another_field_names_that_field_and_its_own_key_errors_stay_its_own():
    import pyterrier as pt
    titles = pt.apply.doc_score(lambda row: len(row['title']))
    with pytest.raises(ValueError, match=r"^the reranker .* reads the column\(s\) \['title'\], which it is not sent: .*"
                                         r"pass garen.with_text\(dataset, reranker, field='title'\), which is "
                                         r"pt.text.get_text\(dataset, 'title'\) >> reranker$"):
        _garen(reranker=titles)(first_stage(DOCS))
    lookup = pt.apply.doc_score(lambda row: {'d0': 1.}[row['docno']])  # its own KeyError of a docno: left alone
    with pytest.raises(KeyError, match="'d1'"):
        _garen(reranker=lookup)(first_stage(DOCS))
    vocabulary = pt.apply.doc_score(lambda row: {'x': 1.}[row['query'].split()[0]])  # of a query term: left alone
    with pytest.raises(KeyError, match="^'apple'$"):
        _garen(reranker=vocabulary)(first_stage(DOCS, query='apple pie'))


def test_a_navigator_reading_a_column_it_is_not_sent_is_named():
    class TitleNavigator:
        def __call__(self, frame):
            return frame.assign(score=[len(t) for t in frame['title']])

        def __repr__(self):
            return 'TitleNavigator()'
    with pytest.raises(ValueError) as refused:
        _garen(navigator=TitleNavigator())(first_stage(DOCS))
    assert str(refused.value) == ("the navigator TitleNavigator() reads the column(s) ['title'], which it is not sent: "
                                  "it gets ['qid', 'query', 'docno', 'text', 'vote'] (docno = the group id, text = "
                                  'its summary)')


@pytest.mark.parametrize(('vectors', 'what'), [('/data/minilm.flex', "the path '/data/minilm.flex'"),
                                                (None, 'NoneType'), (GRAPH, 'ToyGroupGraph')])
def test_vectors_that_are_no_flexindex_are_named(vectors, what):
    from pyterrier_garen import VectorScorer
    frame = pd.DataFrame({'qid': ['q'], 'query': ['x'], 'docno': ['d1']})
    with pytest.raises(TypeError) as refused:
        VectorScorer(vectors, FakeEncoder())(frame)  # was AttributeError: ... has no attribute 'payload'
    assert str(refused.value) == (f'VectorScorer needs the corpus vectors as a pyterrier_dr.FlexIndex, got {what}; '
                                  'pass prepared.vectors (garen.prepare), the result of garen.encode_corpus, or '
                                  'pyterrier_dr.FlexIndex(path) for a built index folder')


@pytest.mark.parametrize(('component', 'encoder', 'what', 'fix'), [
    ('SummaryNavigator', 'vectors', 'TableVectors',
     'SummaryNavigator takes no vectors (it encodes the summaries): SummaryNavigator(groups), or '
     'SummaryNavigator(groups, encoder=prepared.encoder)'),
    ('CentroidNavigator', '/data/minilm.flex', "the path '/data/minilm.flex'",
     'pass the encoder that encoded the vectors (encoder=prepared.encoder), or None for the packaged MiniLM'),
    ('VectorScorer', 'vectors', 'TableVectors',
     'pass the encoder that encoded the vectors (encoder=prepared.encoder), or None for the packaged MiniLM')])
def test_vectors_given_where_the_encoder_goes_are_refused_when_built(tmp_path, component, encoder, what, fix):
    # SummaryNavigator(groups, prepared.vectors), written as CentroidNavigator(groups, prepared.vectors) is: an
    # AttributeError ('FlexIndex' object has no attribute 'encode_docs') at the first navigator call, mid-search
    import pyterrier_garen as garen
    vectors = random_vectors(tmp_path / 'v', DOCS)
    encoder = vectors if encoder == 'vectors' else encoder
    args = {'SummaryNavigator': (GRAPH, encoder), 'CentroidNavigator': (GRAPH, vectors, encoder),
            'VectorScorer': (vectors, encoder)}[component]
    with pytest.raises(TypeError) as refused:
        getattr(garen, component)(*args)
    assert str(refused.value) == (f'{component}: the encoder must be a pyterrier_dr bi-encoder (with encode_queries), '
                                  f'got {what}; {fix}')


def test_a_summary_navigator_over_groups_without_summaries_is_refused(tmp_path):
    from pyterrier_garen import SummaryNavigator
    groups = _groups(tmp_path)  # from_arrays: no summaries yet; every group's summary is '', so all would tie
    navigator = SummaryNavigator(groups, encoder=FakeEncoder())
    with pytest.raises(ValueError) as refused:
        navigator(_nav_frame(['0', '1']))
    assert str(refused.value) == (f'{navigator!r}: {groups!r} holds no summaries, so every group would get the same '
                                  'score; summarise the groups first (groups.summarize(garen.ExtractiveSummarizer(), '
                                  'dataset); garen.prepare does it), or navigate with '
                                  'garen.CentroidNavigator(groups, vectors), which needs none')
