"""``pt.inspect`` is true for every transformer: rebuilt from its own attributes it is the same object (same repr,
the very same arguments), and the one repr mechanism (``Rebuildable``) covers every transformer and summariser."""
import inspect

import pandas as pd
import pyterrier as pt
import pytest
from _stub_engine import StubEngine
from _toy_graph import DictScorer, ToyGroupGraph, toy_components

import pyterrier_garen as garen
from pyterrier_garen import _registry, analysis
from pyterrier_garen._driver import pipeline_stages
from pyterrier_garen._gar import GAR
from pyterrier_garen._params import Rebuildable

SCORER = DictScorer({'a': 1.})
GRAPH = ToyGroupGraph({'a': ['b']}, {'a': 0, 'b': 0})
ENGINE = StubEngine()
QRELS = pd.DataFrame({'qid': ['q1'], 'docno': ['a'], 'label': [1]})


class Encoder:
    """A stand-in query encoder (never called here): only its identity matters."""


ENCODER = Encoder()


def _exported():
    """One instance of every transformer the package exports (non-default arguments where they exist)."""
    return [
        garen.GAREN(SCORER, GRAPH, garen.VoteNavigator(), strategy='explore', budget=50, fusion=0.5),
        garen.DocGAREN(SCORER, GRAPH, SCORER, keep=5),
        garen.SlideGAR(SCORER, GRAPH, keep=5),
        garen.RGS(SCORER, GRAPH, stride=5, queue_size=25),
        garen.SlidingWindowReranker(SCORER, budget=40),
        garen.VoteNavigator(),
        garen.VectorScorer(None, encoder=ENCODER),
        garen.CentroidNavigator(GRAPH, None, ENCODER),
        garen.SummaryNavigator(GRAPH, encoder=ENCODER),
        garen.YesNoScorer(ENGINE, batch_size=4, max_doc_tokens=64),
        garen.ListwiseReranker(ENGINE, window=10, stride=5),
        garen.FirstStageFusion(SCORER, weight=0.3),
        garen.HeadReranker(SCORER, depth=10),
        garen.CrossEncoderScorer('some/local-folder', batch_size=8, max_length=128),
        garen.RemoveExcluded(QRELS),
        GAR(SCORER, GRAPH, num_results=30),
        analysis.SimulatedReranker(QRELS, noise=0.5, seed=3),
        analysis.SimulatedNavigator(QRELS, GRAPH, noise=0.5, aggregate='mean'),
        analysis.ListwiseView(SCORER),
    ]


def _registered():
    """Every transformer of every registered system's pipeline, built by its registry factory."""
    components, _ = toy_components()
    out = []
    for name in _registry.system_names():
        pipeline = _registry.system(name).factory(components)
        stages = pipeline_stages(pipeline)
        out += [(name, t) for t in stages if type(t).__module__.startswith('pyterrier_garen')]
    return out


def _same(a, b):
    if a is b:
        return True
    try:
        return bool(a == b)
    except Exception:  # frames: element-wise ==
        return False


def _check_rebuilds(transformer):
    attributes = pt.inspect.transformer_attributes(transformer)
    signature = [p for p in inspect.signature(type(transformer).__init__).parameters if p != 'self']
    assert [a.name for a in attributes] == signature, transformer
    rebuilt = pt.inspect.transformer_apply_attributes(transformer)
    assert type(rebuilt) is type(transformer)
    assert repr(rebuilt) == repr(transformer)
    for before, after in zip(attributes, pt.inspect.transformer_attributes(rebuilt), strict=True):
        assert _same(before.value, after.value), (transformer, before.name)
        assert before.value is after.value or not hasattr(before.value, 'transform'), (transformer, before.name)


@pytest.mark.parametrize('transformer', _exported(), ids=lambda t: type(t).__name__)
def test_every_exported_transformer_rebuilds_from_its_attributes(transformer):
    _check_rebuilds(transformer)


@pytest.mark.parametrize(('name', 'transformer'), _registered(),
                         ids=[f'{name}-{type(t).__name__}' for name, t in _registered()])
def test_every_registered_system_rebuilds_from_its_attributes(name, transformer):
    _check_rebuilds(transformer)


def test_the_list_covers_every_exported_transformer():
    public = {name for name in garen.__all__
              if isinstance(getattr(garen, name), type) and issubclass(getattr(garen, name), pt.Transformer)}
    public |= {name for name in analysis.__all__
               if isinstance(getattr(analysis, name), type) and issubclass(getattr(analysis, name), pt.Transformer)}
    assert public <= {type(t).__name__ for t in _exported()}


def test_vector_components_report_the_encoder_given_even_after_loading_it():
    scorer = garen.VectorScorer(None, encoder=ENCODER)
    assert scorer.model is ENCODER  # loaded (cached privately)
    values = {a.name: a.value for a in pt.inspect.transformer_attributes(scorer)}
    assert values['encoder'] is ENCODER
    assert pt.inspect.transformer_apply_attributes(scorer).encoder is ENCODER
    default = garen.VectorScorer(None)
    assert {a.name: a.value for a in pt.inspect.transformer_attributes(default)}['encoder'] is None


def test_one_repr_mechanism():
    """Every transformer and both summarisers use Rebuildable; none writes its own __repr__."""
    classes = [type(t) for t in _exported()] + [garen.ExtractiveSummarizer, garen.LLMSummarizer]
    for cls in classes:
        assert issubclass(cls, Rebuildable), cls
        owner = next(k for k in cls.__mro__ if '__repr__' in vars(k))
        assert owner is Rebuildable, (cls, owner)
    assert repr(garen.ExtractiveSummarizer(num_sentences=2)) == 'ExtractiveSummarizer(num_sentences=2)'
    assert repr(garen.LLMSummarizer(ENGINE, retries=0)) == f'LLMSummarizer({ENGINE!r}, retries=0)'
    assert repr(analysis.SimulatedReranker(QRELS, noise=0.5)) == 'SimulatedReranker(<DataFrame of 1 rows>, noise=0.5)'
