"""Oracles for the text rerankers (pyterrier_garen._text_rerankers): what ``CrossEncoderScorer`` sends its model and
makes of the answer, how it loads a model (device, length, the missing extra), ``with_text``'s fetch, and every
``compare --reranker`` spec: the builders, the factory's import, call and result, and each refusal's whole message.
No torch: the model is a scripted object and sentence-transformers a stand-in module (the thirty-fifth mutation run,
docs/testing.md). The real cross-encoder runs in tests/test_text_rerankers.py."""
import sys
import types

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen import _text_rerankers as tr
from pyterrier_garen._text_rerankers import (RERANKERS, CrossEncoderScorer, build_reranker, check_reranker,
                                             with_text)

NOT_CALLABLE = 42


def make_scorer(prepared):
    """A factory for ``factory:test_oracles_text_rerankers:make_scorer``: scores by the length of the docno."""
    return pt.apply.doc_score(lambda row: float(len(row['docno'])) + prepared.offset)


def make_nothing(prepared):
    return None


def make_function(prepared):
    return lambda frame: frame.assign(score=1.0)


class Namespace:
    class Inner:
        @staticmethod
        def make(prepared):
            return pt.apply.doc_score(lambda row: 7.0)


class Model:
    """A scripted CrossEncoder: records each call, answers the given scores."""

    def __init__(self, answer):
        self.answer = answer
        self.calls = []

    def predict(self, pairs, batch_size, show_progress_bar):
        self.calls.append((list(pairs), batch_size, show_progress_bar))
        return self.answer


def _frame(texts, **extra):
    n = len(texts)
    return pd.DataFrame({'qid': ['q1'] * n, 'query': ['the query'] * n, 'docno': [f'd{i}' for i in range(n)],
                         'text': texts, **extra})


# -- CrossEncoderScorer.transform ------------------------------------------------------------------------------------
def test_the_model_gets_query_text_pairs_and_its_scores_are_ranked():
    model = Model([0.5, 2.0, -1.0])
    scorer = CrossEncoderScorer(model, batch_size=7)
    out = scorer(_frame(['alpha', None, float('nan')]))
    # a missing text (None, or pandas' NaN) is sent as an empty text, not as 'None' or 'nan'
    assert model.calls == [([('the query', 'alpha'), ('the query', ''), ('the query', '')], 7, False)]
    assert out.docno.tolist() == ['d0', 'd1', 'd2']  # the rows as given
    assert out.score.tolist() == [0.5, 2.0, -1.0]
    assert out['rank'].tolist() == [1, 0, 2]
    assert out.score.dtype == np.float64


def test_a_two_column_answer_gives_its_first_column_and_an_old_rank_is_replaced():
    model = Model(np.array([[0.1, 9.0], [0.3, -9.0]], dtype=np.float32))
    out = CrossEncoderScorer(model, verbose=True)(_frame(['a', 'b'], rank=[0, 1], score=[5.0, 6.0]))
    assert model.calls[0][1:] == (32, True)  # the default batch size; a progress bar when verbose
    np.testing.assert_allclose(out.score, [0.1, 0.3], rtol=1e-6)
    assert out.score.dtype == np.float64  # float32 answers are widened
    assert out['rank'].tolist() == [1, 0]
    assert list(out.columns) == ['qid', 'query', 'docno', 'text', 'score', 'rank']


def test_text_from_another_column_and_numbers_as_text():
    model = Model([1.0])
    frame = pd.DataFrame({'qid': ['q1'], 'query': [123], 'docno': ['d0'], 'body': [4.5]})
    CrossEncoderScorer(model, text_field='body')(frame)
    assert model.calls[0][0] == [('123', '4.5')]


def test_an_empty_frame_gets_empty_score_and_rank_columns_without_calling_the_model():
    model = Model([])
    out = CrossEncoderScorer(model)(_frame([]))
    assert model.calls == []
    assert list(out.columns) == ['qid', 'query', 'docno', 'text', 'score', 'rank']
    assert (str(out.score.dtype), str(out['rank'].dtype)) == ('float64', 'int64')


def test_a_frame_without_the_text_column_is_refused_naming_it():
    with pytest.raises(pt.validate.InputValidationError) as refused:
        CrossEncoderScorer(Model([1.0]), text_field='body')(_frame(['a']))
    assert "missing_columns=['body']" in str(refused.value)  # the column asked for, not the default
    assert 'in transformer CrossEncoderScorer(' in str(refused.value)  # and the transformer that asked


def test_the_batch_size_must_be_positive():
    with pytest.raises(ValueError, match='batch_size'):
        CrossEncoderScorer(Model([]), batch_size=0)


# -- loading a model -------------------------------------------------------------------------------------------------
class FakeCrossEncoder:
    made = []

    def __init__(self, name, **kwargs):
        FakeCrossEncoder.made.append((name, kwargs))


@pytest.fixture
def fake_st(monkeypatch):
    FakeCrossEncoder.made = []
    monkeypatch.setitem(sys.modules, 'sentence_transformers', types.SimpleNamespace(CrossEncoder=FakeCrossEncoder))
    return FakeCrossEncoder


@pytest.mark.parametrize(('kwargs', 'expected'), [
    ({}, {}),
    ({'device': 'cpu'}, {'device': 'cpu'}),
    ({'max_length': 128}, {'max_length': 128}),
    ({'device': 'cuda:1', 'max_length': 64}, {'device': 'cuda:1', 'max_length': 64}),
    ({'device': '', 'max_length': 0}, {}),  # empty values are "the model's own"
])
def test_a_named_model_is_loaded_once_with_the_device_and_length_given(fake_st, kwargs, expected):
    scorer = CrossEncoderScorer('some/model', **kwargs)
    assert fake_st.made == []  # not at construction
    first = scorer.cross_encoder
    assert scorer.cross_encoder is first
    assert isinstance(first, FakeCrossEncoder)
    assert fake_st.made == [('some/model', expected)]


def test_a_loaded_model_is_used_as_given(fake_st):
    model = Model([1.0])
    assert CrossEncoderScorer(model).cross_encoder is model
    assert fake_st.made == []


def test_without_sentence_transformers_the_error_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'sentence_transformers', None)  # import fails
    with pytest.raises(ImportError) as refused:
        _ = CrossEncoderScorer('some/model').cross_encoder
    assert str(refused.value) == ('CrossEncoderScorer needs sentence-transformers: pip install -e ".[cpu]" (in a '
                                  'clone of pyterrier-garen)')


def test_the_repr_rebuilds_the_scorer():
    assert repr(CrossEncoderScorer('m')) == "CrossEncoderScorer('m')"
    assert repr(CrossEncoderScorer('m', text_field='body', batch_size=8, max_length=256, device='cpu',
                                   verbose=True)) == \
        "CrossEncoderScorer('m', text_field='body', batch_size=8, max_length=256, device='cpu', verbose=True)"


# -- with_text -------------------------------------------------------------------------------------------------------
@pytest.fixture
def collection(tmp_path):
    from pyterrier_garen import LocalDataset
    (tmp_path / 'docs.jsonl').write_text('{"docno": "d0", "title": "T0", "text": "zero"}\n'
                                         '{"docno": "d1", "title": "T1", "text": "one one"}\n')
    (tmp_path / 'queries.tsv').write_text('q1\tthe query\n')
    return LocalDataset(tmp_path)


@pytest.mark.parametrize(('field', 'expected'), [(None, [4.0, 7.0]), ('text', [4.0, 7.0]), ('title', [2.0, 2.0])])
def test_with_text_fetches_the_field_before_the_reranker(collection, field, expected):
    seen = []

    def score(row):
        seen.append(sorted(row.index))
        return float(len(row[field or 'text']))
    reranker = pt.apply.doc_score(score)
    pipeline = with_text(collection, reranker) if field is None else with_text(collection, reranker, field=field)
    out = pipeline(pd.DataFrame({'qid': ['q1', 'q1'], 'query': ['x', 'x'], 'docno': ['d0', 'd1']}))
    assert out.sort_values('docno').score.tolist() == expected
    assert seen == [sorted(['docno', field or 'text', 'qid', 'query'])] * 2  # that field alone was fetched


# -- compare --reranker ----------------------------------------------------------------------------------------------
class _Named:
    """A placeholder compared by its name (an encoder given as text is refused as a path)."""

    def __init__(self, name):
        self.name = name

    def __eq__(self, other):
        return other == self.name

    __hash__ = None


class Prepared:
    offset = 0.5
    dataset = 'the dataset'
    vectors = 'the vectors'
    encoder = _Named('the encoder')


def test_the_registered_rerankers():
    assert list(RERANKERS) == ['minilm', 'cross-encoder', 'factory']


def test_minilm_is_the_stored_vector_scorer():
    from pyterrier_garen import VectorScorer
    reranker, text = build_reranker('minilm', Prepared())
    assert isinstance(reranker, VectorScorer)
    assert (reranker.vectors, reranker.encoder) == ('the vectors', 'the encoder')
    assert text == 'MiniLM cosine over stored vectors (VectorScorer)'


def test_a_cross_encoder_reads_the_text_of_the_prepared_collection(monkeypatch):
    fetched = []
    monkeypatch.setattr(tr, 'with_text', lambda dataset, reranker: fetched.append((dataset, reranker)) or 'piped')
    reranker, text = build_reranker('cross-encoder:org/model:v2', Prepared())
    assert reranker == 'piped'
    (dataset, scorer), = fetched
    assert dataset == 'the dataset'
    assert isinstance(scorer, CrossEncoderScorer)
    assert scorer.model == 'org/model:v2'  # everything after the first colon
    assert text == 'cross-encoder org/model:v2 over the document text (CrossEncoderScorer)'


@pytest.mark.parametrize('spec', ['factory:test_oracles_text_rerankers:make_scorer',
                                  'factory:test_oracles_text_rerankers:Namespace.Inner.make'])
def test_a_factory_is_called_with_the_prepared_artifacts(spec):
    reranker, text = build_reranker(spec, Prepared())
    assert text == spec[len('factory:'):] + '(prepared)'
    out = reranker(pd.DataFrame({'qid': ['q'], 'query': ['x'], 'docno': ['abc']}))
    assert out.score.tolist() == ([3.5] if spec.endswith('make_scorer') else [7.0])


@pytest.mark.parametrize(('spec', 'kind'), [('factory:test_oracles_text_rerankers:make_nothing', 'NoneType'),
                                            ('factory:test_oracles_text_rerankers:make_function', 'function')])
def test_a_factory_that_returns_no_transformer_is_refused_naming_what_it_returned(spec, kind):
    with pytest.raises(TypeError) as refused:
        build_reranker(spec, Prepared())
    assert str(refused.value) == (f'--reranker {spec} returned {kind}, not a pt.Transformer; return a transformer '
                                  'that adds a score to every (qid, docno) row it is given (wrap a function of a '
                                  'frame in pt.apply.generic)')


@pytest.mark.parametrize(('spec', 'message'), [
    ('bogus', "unknown reranker 'bogus': use one of minilm, cross-encoder, factory (minilm, "
              'cross-encoder:NAME_OR_FOLDER, factory:package.module:function)'),
    ('MiniLM', "unknown reranker 'MiniLM': use one of minilm, cross-encoder, factory (minilm, "
               'cross-encoder:NAME_OR_FOLDER, factory:package.module:function)'),
    ('cross-encoder', 'the cross-encoder reranker needs a model: --reranker cross-encoder:NAME_OR_FOLDER'),
    ('cross-encoder:', 'the cross-encoder reranker needs a model: --reranker cross-encoder:NAME_OR_FOLDER'),
    ('factory', '--reranker factory:MODULE:FUNCTION, got factory:'),
    ('factory:json', '--reranker factory:MODULE:FUNCTION, got factory:json'),
    ('factory::loads', '--reranker factory:MODULE:FUNCTION, got factory::loads'),
    ('factory:json:', '--reranker factory:MODULE:FUNCTION, got factory:json:'),
    ('factory:no_such_module_zz:f', "--reranker factory:no_such_module_zz:f: cannot find f in no_such_module_zz "
                                    "(ModuleNotFoundError: No module named 'no_such_module_zz')"),
    ('factory:json:loads:x', "--reranker factory:json:loads:x: cannot find loads:x in json (AttributeError: module "
                             "'json' has no attribute 'loads:x')"),  # the module ends at the first colon
    ('factory:json:nope', "--reranker factory:json:nope: cannot find nope in json (AttributeError: module 'json' "
                          "has no attribute 'nope')"),
    ('factory:test_oracles_text_rerankers:Namespace.Nope.make',
     '--reranker factory:test_oracles_text_rerankers:Namespace.Nope.make: cannot find Namespace.Nope.make in '
     "test_oracles_text_rerankers (AttributeError: type object 'Namespace' has no attribute 'Nope')"),
    ('factory:test_oracles_text_rerankers:NOT_CALLABLE',
     '--reranker factory:test_oracles_text_rerankers:NOT_CALLABLE: NOT_CALLABLE is a int, not a function of prepared'),
])
def test_each_spec_that_cannot_work_is_refused_before_anything_is_built(spec, message):
    with pytest.raises(ValueError) as refused:
        check_reranker(spec)
    assert str(refused.value) == message
    with pytest.raises(ValueError) as again:
        build_reranker(spec, Prepared())
    assert str(again.value) == message


@pytest.mark.parametrize('spec', ['minilm', 'minilm:ignored', 'cross-encoder:x', 'factory:json:loads',
                                  'factory:os.path:join', 'factory:test_oracles_text_rerankers:make_nothing'])
def test_specs_that_can_work_pass_the_check(spec):
    assert check_reranker(spec) is None  # the factory is imported, not called: its result is checked when built
