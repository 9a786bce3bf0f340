"""What each declaration in ``_registry.py`` promises, checked for every registered system, navigator and engine, so
that an addition made by following docs/architecture.md only half fails here instead of passing silently (found by
walking through that section as a new contributor, session 34).

- ``groups=False`` lets the sweep run a system once and copy its row to every Leiden seed: its ranking must not
  move on another partition of the same k-NN edges.
- ``reranks`` says whether the reranker changes a system's ranking (``compare --head-rerank`` adds a reranker call
  to exactly these): a system declared ``reranks=True`` must move with another reranker, one declared ``False`` not.
- A navigator is called once for all queries of a batch: each row's score must not depend on the other rows.
- An engine short name is resolved inside a Ray actor: its target must name an ``Engine`` class here already, one
  that takes the ``model`` every ``EngineSpec`` passes it.
- ``head_inside`` says whether a system's factory makes ``compare --head-rerank``'s call itself: declared ``True``
  it must send the reranker more with ``head_rerank`` set, declared ``False`` not (``HeadReranker`` is appended).
- ``own_fusion`` says whether a system's factory carries a first-stage fusion it drops under the shared stage: a
  system declared ``own_fusion=False`` must build the same ranking whatever the shared fusion weights.
"""
import dataclasses
import hashlib
import importlib
import inspect
from types import SimpleNamespace

import numpy as np
import pyterrier as pt
import pytest
from _toy_graph import HashScorer, ToyGroupGraph, assert_batched_equals_per_query, toy_components
from _vector_stubs import TableVectors

from pyterrier_garen import _registry


def _repartitioned(graph):
    """The same k-NN edges under another partition (what a second Leiden seed changes): 7 groups dealt round-robin
    instead of 6 blocks of 10, so every group changes."""
    return ToyGroupGraph(graph.adjacency, {d: i % 7 for i, d in enumerate(sorted(graph.groups))})


@pytest.mark.parametrize('name', _registry.system_names(groups=False))
def test_a_system_declared_partition_free_ranks_alike_on_another_partition(name):
    components, inp = toy_components()
    other = dataclasses.replace(components, groups=_repartitioned(components.groups))
    spec = _registry.system(name)
    one = spec.factory(components)(inp).reset_index(drop=True)[['qid', 'docno', 'rank']]
    two = spec.factory(other)(inp).reset_index(drop=True)[['qid', 'docno', 'rank']]
    assert one.equals(two), f'{name} is declared groups=False, but its ranking moves with the partition'


def test_the_check_catches_a_partition_reader_declared_partition_free():
    # the check above is no tautology: GAREN reads the partition, so declared groups=False it would fail there
    components, inp = toy_components()
    other = dataclasses.replace(components, groups=_repartitioned(components.groups))
    garen = _registry.system('GAREN').factory
    assert not garen(components)(inp)[['qid', 'docno']].reset_index(drop=True).equals(
        garen(other)(inp)[['qid', 'docno']].reset_index(drop=True))


@pytest.mark.parametrize('name', _registry.system_names())
def test_a_system_moves_with_the_reranker_exactly_when_declared_so(name):
    components, inp = toy_components()
    spec = _registry.system(name)
    other = dataclasses.replace(components, reranker=HashScorer('another reranker'))
    one = spec.factory(components)(inp).reset_index(drop=True)[['qid', 'docno', 'rank']]
    two = spec.factory(other)(inp).reset_index(drop=True)[['qid', 'docno', 'rank']]
    if spec.reranks:
        assert not one.equals(two), f'{name} is declared reranks=True, but another reranker leaves it unchanged'
    else:
        assert one.equals(two), f'{name} is declared reranks=False, but its ranking moves with the reranker'


def test_the_reranker_check_catches_a_wrong_declaration():
    # no tautology: BM25 is the same under any reranker, so declared reranks=True it would fail above
    components, inp = toy_components()
    bm25 = _registry.system('BM25').factory
    assert bm25(components)(inp).equals(bm25(dataclasses.replace(components, reranker=HashScorer('x')))(inp))


class _Sent(pt.Transformer):
    """The reranker given, counting the rows sent to it."""

    def __init__(self, reranker):
        self.reranker = reranker
        self.rows = 0

    def transform(self, inp):
        self.rows += len(inp)
        return self.reranker(inp)


@pytest.mark.parametrize('name', _registry.system_names())
def test_a_system_makes_the_head_call_itself_exactly_when_declared_so(name):
    # head_inside: the factory passes c.head_rerank to its search (one more call, inside); every other row gets
    # HeadReranker from build_systems, so its factory must ignore it (else the call is made twice, or never)
    components, inp = toy_components()
    spec = _registry.system(name)
    sent = []
    for depth in (0, 5):
        counting = _Sent(components.reranker)
        spec.factory(dataclasses.replace(components, reranker=counting, head_rerank=depth))(inp)
        sent.append(counting.rows)
    if spec.head_inside:
        assert sent[1] > sent[0], f'{name} is declared head_inside=True, but its factory makes no head call'
    else:
        assert sent[1] == sent[0], f'{name} reads head_rerank but is declared head_inside=False'


@pytest.mark.parametrize('name', _registry.system_names())
def test_a_system_drops_a_fusion_of_its_own_under_the_shared_stage_exactly_when_declared_so(name):
    # build_systems appends the shared stage to every row; a factory that reads the fusion weights (GAREN+ drops its
    # own fusion then) must say so, or fusion_weight_margins compares it, fused, at weight 0 with unfused rows
    components, inp = toy_components()
    spec = _registry.system(name)
    shared = dataclasses.replace(components, fusion=0.3, tail_fusion=0.5, observed_fusion=3.0)
    one = spec.factory(components)(inp).reset_index(drop=True)[['qid', 'docno', 'rank']]
    two = spec.factory(shared)(inp).reset_index(drop=True)[['qid', 'docno', 'rank']]
    if spec.own_fusion:
        assert not one.equals(two), f'{name} is declared own_fusion=True, but the shared stage leaves it unchanged'
    else:
        assert one.equals(two), (f'{name} changes under the shared fusion stage (a fusion of its own it drops?) but '
                                 'is declared own_fusion=False')


class _HashEncoder:
    """A vector per text from its hash (any text: queries and summaries alike), 8 floats."""

    @staticmethod
    def _vec(text):
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], 'big')
        return np.random.default_rng(seed).standard_normal(8).astype(np.float32)

    def encode_queries(self, texts):
        return np.array([self._vec(t) for t in texts])

    encode_docs = encode_queries


@pytest.mark.parametrize('name', _registry.navigator_names())
def test_every_registered_navigator_builds_and_gives_each_query_its_own_run_inside_garen(name, tmp_path):
    from pyterrier_garen import GroupCorpusGraph
    spec = _registry.navigator(name)
    components, inp = toy_components()
    toy = components.groups
    docs = list(toy.groups)
    at = {d: i for i, d in enumerate(docs)}
    edges = np.array([[at[n] for n in toy.neighbours(d)] for d in docs])
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'g', docs, edges, np.linspace(1, .5, edges.size).reshape(
        edges.shape), labels=[toy.group_of(d) for d in docs])  # the toy graph as the artifact the vector ones need
    if spec.summaries:  # a navigator that reads summaries refuses groups without them
        from pyterrier_garen import ExtractiveSummarizer
        groups.summarize(ExtractiveSummarizer(), [{'docno': d, 'text': f'words of {d} and group {toy.group_of(d)}'}
                                                  for d in docs])
    components = dataclasses.replace(components, groups=groups)
    prepared = SimpleNamespace(vectors=TableVectors(tmp_path / 'v.npids', {d: _HashEncoder._vec(d) for d in docs}),
                               groups=groups)
    navigator = spec.factory(components.groups, prepared, _HashEncoder() if spec.encoder else None)
    garen = _registry.system('GAREN').factory(dataclasses.replace(components, navigator=navigator))
    assert_batched_equals_per_query(garen, inp)


@pytest.mark.parametrize('name', _registry.engine_names())
def test_every_engine_short_name_names_an_engine_class(name):
    from pyterrier_garen._engines import Engine
    module, _, attribute = _registry.engine(name).target.partition(':')
    found = getattr(importlib.import_module(module), attribute)  # the lazy exports: no model library loads
    assert isinstance(found, type)
    assert issubclass(found, Engine)
    # EngineSpec(name, model=...) requires the model (provenance, before any engine is built) and passes it on
    parameters = inspect.signature(found.__init__).parameters.values()
    assert any(p.name == 'model' or p.kind is p.VAR_KEYWORD for p in parameters), \
        f'{found.__name__} takes no model argument, which EngineSpec({name!r}, model=...) passes to it'
