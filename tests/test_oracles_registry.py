"""Oracles for the one place systems, navigators and engines are declared (pyterrier_garen._registry) and for how
``build_systems`` gives every system the same help (pyterrier_garen._compare): what each registered system is built
from, GAREN+'s frozen options with and without the shared stage, the stage each row gets, the fusion weights a
command line's options resolve to, the registry's names, flags and errors. Expected values are written out by hand
from the declarations in docs/architecture.md and the issue-16 notes (the twenty-third mutation run,
docs/testing.md); nothing runs a search, so the file takes a few seconds."""
import dataclasses
import types

import pyterrier as pt
import pytest
from _toy_graph import DictScorer, ToyGroupGraph

import pyterrier_garen
from pyterrier_garen import _registry as registry
from pyterrier_garen._compare import build_systems, describe_fusion, fusion_stage, resolve_fusion
from pyterrier_garen._registry import Components, System

ALL = ['BM25', 'Rerank', 'GAR', 'SlideGAR', 'RGS', 'GAREN', 'GAREN-explore', 'GAREN-exploit', 'GAREN-noprop',
       'GAREN-vote', 'GAREN-doc', 'GAREN+']
GROUP_SYSTEMS = ['GAREN', 'GAREN-explore', 'GAREN-exploit', 'GAREN-noprop', 'GAREN-vote', 'GAREN+']
# GAREN+'s frozen options (docs/results.md, issue 16's passes), typed out rather than read from GAREN_PLUS
PLUS = {'evidence_weight': 0.5, 'dropped_vote': 0.0, 'adaptive_interleave': 0.5, 'vote_weight': 0.02,
        'frontier': 0.25, 'fusion': 0.1, 'tail_fusion': 0.5, 'observed_fusion': 3.0}


@pytest.fixture
def parts():
    """Components whose every field differs from its default, so a factory that drops one is seen."""
    graph = ToyGroupGraph({'a': ['b']}, {'a': 0, 'b': 0})
    first = pt.Transformer.identity()
    return Components(first_stage=first, reranker=DictScorer({}), groups=graph, navigator=DictScorer({}),
                      budget=37, doc_navigator=DictScorer({}), verbose=True, final_order='paper')


@pytest.fixture
def scratch_name():
    """A system name registered by a test, removed afterwards whatever happens."""
    name = 'Oracle-scratch'
    yield name
    for table in (registry._SYSTEMS, registry._NAVIGATORS, registry._ENGINES):
        table.pop(name, None)
    registry._sync()


def _search(pipeline):
    """``first_stage >> search``: the search, after checking the first stage is the given one."""
    stages = list(pipeline)
    assert len(stages) == 2
    return stages[1]


# ---- Components


@pytest.mark.parametrize(('fusion', 'tail', 'observed', 'shared'), [
    (0.0, None, 0.0, False),
    (0.1, None, 0.0, True),
    (0.0, 0.0, 0.0, True),      # a tail weight of 0 is set: the stage is appended (its head keeps the system's order)
    (0.0, None, 2.0, True),
    (0.0, 0.5, 3.0, True),
])
def test_shared_fusion_is_any_weight_set(fusion, tail, observed, shared):
    c = Components(None, None, None, None, fusion=fusion, tail_fusion=tail, observed_fusion=observed)
    assert c.shared_fusion is shared


def test_components_defaults_and_derived_options():
    reranker, doc = object(), object()
    c = Components('f', reranker, 'g', 'n')
    assert (c.budget, c.doc_navigator, c.verbose, c.final_order) == (100, None, False, None)
    assert (c.fusion, c.tail_fusion, c.observed_fusion) == (0.0, None, 0.0)
    assert c.search_options == {}
    assert c.doc_scorer is reranker
    c = Components('f', reranker, 'g', 'n', doc_navigator=doc, final_order='reranker')
    assert c.search_options == {'final_order': 'reranker'}
    assert c.doc_scorer is doc


# ---- what each registered system is built from


def test_bm25_is_the_first_stage_cut_to_the_budget(parts):
    pipeline = registry.system('BM25').factory(parts)
    first, cut = list(pipeline)
    assert first is parts.first_stage
    assert type(cut).__name__ == 'RankCutoff'
    assert cut.k == 37


def test_rerank_and_the_baselines_get_every_component(parts):
    rerank = _search(registry.system('Rerank').factory(parts))
    assert type(rerank) is pyterrier_garen.SlidingWindowReranker
    assert (rerank.reranker, rerank.budget, rerank.verbose, rerank.final_order) == (parts.reranker, 37, True, 'paper')
    for name, cls in (('SlideGAR', pyterrier_garen.SlideGAR), ('RGS', pyterrier_garen.RGS)):
        search = _search(registry.system(name).factory(parts))
        assert type(search) is cls
        assert search.reranker is parts.reranker
        assert search.graph is parts.groups
        assert (search.budget, search.verbose, search.final_order) == (37, True, 'paper')
    gar = _search(registry.system('GAR').factory(parts))
    assert type(gar).__name__ == 'GAR'
    assert gar.scorer is parts.reranker
    assert gar.corpus_graph is parts.groups
    assert (gar.num_results, gar.batch_size, gar.verbose) == (37, 16, True)


def test_the_garen_family(parts):
    expected = {  # name -> (strategy, propagate, navigator class or None for the given one)
        'GAREN': ('explore_exploit', True, None),
        'GAREN-explore': ('explore', True, None),
        'GAREN-exploit': ('exploit', True, None),
        'GAREN-noprop': ('explore_exploit', False, None),
        'GAREN-vote': ('explore_exploit', True, pyterrier_garen.VoteNavigator),
    }
    for name, (strategy, propagate, navigator) in expected.items():
        garen = _search(registry.system(name).factory(parts))
        assert type(garen) is pyterrier_garen.GAREN, name
        assert garen.strategy.value == strategy, name
        assert garen.propagate is propagate, name
        if navigator is None:
            assert garen.navigator is parts.navigator, name
        else:
            assert type(garen.navigator) is navigator, name
        assert garen.reranker is parts.reranker
        assert garen.groups is parts.groups
        assert (garen.budget, garen.verbose, garen.final_order) == (37, True, 'paper')
        assert (garen.fusion, garen.vote_weight, garen.frontier) == (0.0, 0.0, 0.0), name
    doc = _search(registry.system('GAREN-doc').factory(parts))
    assert type(doc) is pyterrier_garen.DocGAREN
    assert doc.navigator is parts.doc_navigator
    assert doc.reranker is parts.reranker
    assert (doc.budget, doc.verbose, doc.final_order) == (37, True, 'paper')


def test_garen_plus_carries_its_frozen_options_and_drops_its_fusion_when_shared(parts):
    own = _search(registry.system('GAREN+').factory(parts))
    assert {key: getattr(own, key) for key in PLUS} == PLUS
    assert (own.budget, own.verbose, own.final_order, own.navigator) == (37, True, 'paper', parts.navigator)
    for shared in ({'fusion': 0.3}, {'tail_fusion': 0.0}, {'observed_fusion': 1.0}):
        plus = _search(registry.system('GAREN+').factory(dataclasses.replace(parts, **shared)))
        assert (plus.fusion, plus.tail_fusion, plus.observed_fusion) == (0.0, None, 0.0), shared
        rest = {key: value for key, value in PLUS.items() if 'fusion' not in key}
        assert {key: getattr(plus, key) for key in rest} == rest


def test_factories_without_final_order_keep_each_search_default(parts):
    plain = dataclasses.replace(parts, final_order=None)
    for name in ('Rerank', 'SlideGAR', 'RGS', 'GAREN', 'GAREN-doc', 'GAREN+'):
        assert _search(registry.system(name).factory(plain)).final_order == 'auto', name


# ---- build_systems: the same stage for every row


def _prepared(parts):
    return types.SimpleNamespace(groups=parts.groups)


def _stage(pipeline):
    last = list(pipeline)[-1]
    assert type(last) is pyterrier_garen.FirstStageFusion
    return last


def test_build_systems_without_fusion_appends_nothing(parts):
    pipes = build_systems(_prepared(parts), parts.reranker, parts.navigator, budget=37, first_stage=parts.first_stage)
    assert list(pipes) == ALL
    assert all(type(list(pipe)[-1]) is not pyterrier_garen.FirstStageFusion for pipe in pipes.values())
    plus = _search(pipes['GAREN+'])
    assert (plus.fusion, plus.tail_fusion, plus.observed_fusion) == (0.1, 0.5, 3.0)


def test_build_systems_gives_every_row_garen_plus_stage(parts):
    pipes = build_systems(_prepared(parts), parts.reranker, parts.navigator, budget=37, first_stage=parts.first_stage,
                          fusion=0.2, systems=['BM25', 'GAR', 'RGS', 'GAREN+'], final_order='paper')
    assert list(pipes) == ['BM25', 'GAR', 'RGS', 'GAREN+']
    for name, pipe in pipes.items():
        stage = _stage(pipe)
        assert stage.first_stage is parts.first_stage, name
        assert (stage.weight, stage.tail_weight, stage.observed_weight, stage.head) == (0.2, 0.5, 3.0, 10), name
    plus = list(pipes['GAREN+'])[1]
    assert (plus.fusion, plus.tail_fusion, plus.observed_fusion, plus.final_order) == (0.0, None, 0.0, 'paper')
    assert list(pipes['RGS'])[1].final_order == 'paper'


def test_build_systems_stage_as_given(parts):
    pipes = build_systems(_prepared(parts), parts.reranker, parts.navigator, first_stage=parts.first_stage,
                          systems=['SlideGAR', 'GAREN+'], tail_fusion=0.7, fusion_head=4)
    for pipe in pipes.values():
        stage = _stage(pipe)
        assert (stage.weight, stage.tail_weight, stage.observed_weight, stage.head) == (0.0, 0.7, 0.0, 4)
    flat = build_systems(_prepared(parts), parts.reranker, parts.navigator, first_stage=parts.first_stage,
                         systems=['GAR'], fusion=0.4, observed_fusion=0)
    stage = _stage(flat['GAR'])
    assert (stage.weight, stage.tail_weight, stage.observed_weight) == (0.4, None, 0.0)  # one weight, whole list


def test_build_systems_passes_every_component_on(parts):
    pipes = build_systems(_prepared(parts), parts.reranker, parts.navigator, budget=37, first_stage=parts.first_stage,
                          doc_navigator=parts.doc_navigator, verbose=True, systems=['GAREN', 'GAREN-doc'])
    garen, doc = list(pipes['GAREN'])[1], list(pipes['GAREN-doc'])[1]
    assert (garen.reranker, garen.navigator, garen.groups) == (parts.reranker, parts.navigator, parts.groups)
    assert (garen.budget, garen.verbose) == (37, True)
    assert (doc.reranker, doc.navigator, doc.budget, doc.verbose) == (parts.reranker, parts.doc_navigator, 37, True)


def test_an_observation_weight_alone_is_a_shared_stage(parts):
    pipes = build_systems(_prepared(parts), parts.reranker, parts.navigator, first_stage=parts.first_stage,
                          systems=['GAR', 'GAREN+'], observed_fusion=1.5)
    for pipe in pipes.values():
        stage = _stage(pipe)
        assert (stage.weight, stage.tail_weight, stage.observed_weight, stage.head) == (0.0, None, 1.5, 10)
    plus = list(pipes['GAREN+'])[1]
    assert (plus.fusion, plus.tail_fusion, plus.observed_fusion) == (0.0, None, 0.0)


def test_build_systems_gives_every_reranking_row_the_head_call(parts):
    pipes = build_systems(_prepared(parts), parts.reranker, parts.navigator, budget=37, first_stage=parts.first_stage,
                          head_rerank=7, fusion=0.2)
    assert list(pipes) == ALL
    for name, pipe in pipes.items():
        stages = list(pipe)
        assert type(stages[-1]) is pyterrier_garen.FirstStageFusion, name  # the shared stage stays last
        if name == 'BM25':  # no reranker, no call
            assert not any(type(stage) is pyterrier_garen.HeadReranker for stage in stages), name
        elif name in GROUP_SYSTEMS:  # inside the search, before its propagation
            assert len(stages) == 3, name
            assert stages[1].head_rerank == 7, name
        else:  # the stage, after the search and before the fusion
            assert len(stages) == 4, name
            head = stages[2]
            assert type(head) is pyterrier_garen.HeadReranker, name
            assert (head.reranker, head.depth) == (parts.reranker, 7), name
    plus = list(pipes['GAREN+'])[1]  # under the shared stage GAREN+ drops its own fusion, as without the call
    assert (plus.fusion, plus.tail_fusion, plus.observed_fusion) == (0.0, None, 0.0)
    # without a shared fusion GAREN+ keeps its own, after the call inside it
    alone = build_systems(_prepared(parts), parts.reranker, parts.navigator, first_stage=parts.first_stage,
                          head_rerank=2, systems=['GAREN+', 'SlideGAR'])
    plus = _search(alone['GAREN+'])
    assert (plus.head_rerank, plus.fusion, plus.tail_fusion, plus.observed_fusion) == (2, 0.1, 0.5, 3.0)
    assert type(list(alone['SlideGAR'])[-1]) is pyterrier_garen.HeadReranker
    none = build_systems(_prepared(parts), parts.reranker, parts.navigator, first_stage=parts.first_stage)
    assert all(getattr(_search(none[n]), 'head_rerank', 0) == 0 for n in GROUP_SYSTEMS)
    assert not any(type(s) is pyterrier_garen.HeadReranker for pipe in none.values() for s in list(pipe))


@pytest.mark.parametrize('depth', [1, -1, 2.5, True])
def test_a_head_call_of_one_document_or_a_non_integer_is_refused(parts, depth):
    with pytest.raises(ValueError, match=r'^head_rerank must be '):
        build_systems(_prepared(parts), parts.reranker, parts.navigator, first_stage=parts.first_stage,
                      head_rerank=depth)


def test_the_head_call_messages():
    from pyterrier_garen._compare import check_head_rerank
    check_head_rerank(0)
    check_head_rerank(2)
    with pytest.raises(ValueError) as info:
        check_head_rerank(-1)
    assert str(info.value) == ('head_rerank must be an integer >= 0, got -1 (documents re-ranked once more per '
                               'query, 0 = none)')
    with pytest.raises(ValueError) as info:
        check_head_rerank(1)
    assert str(info.value) == 'head_rerank must be 0 (none) or at least 2: one document has no order to change'


def test_build_systems_refuses_unknown_names_and_bad_budgets(parts):
    prepared = _prepared(parts)
    with pytest.raises(ValueError, match=r"unknown systems \['Nope'\]"):
        build_systems(prepared, parts.reranker, parts.navigator, first_stage=parts.first_stage, systems=['GAR', 'Nope'])
    with pytest.raises(ValueError, match=r'^systems repeat GAR RGS: give each system once \(each is one row of the '
                                         r'table\)$'):
        build_systems(prepared, parts.reranker, parts.navigator, first_stage=parts.first_stage,
                      systems=['RGS', 'GAR', 'GAREN', 'GAR', 'RGS'])
    with pytest.raises(ValueError, match=r'^budget must be a positive integer, got 0 \(documents reranked per '
                                         r'query\)$'):
        build_systems(prepared, parts.reranker, parts.navigator, first_stage=parts.first_stage, budget=0)
    with pytest.raises(ValueError, match=r'^fusion_head must be an integer >= 0, got -1 \(documents above the tail '
                                         r'fusion\)$'):
        build_systems(prepared, parts.reranker, parts.navigator, first_stage=parts.first_stage, fusion=0.1,
                      fusion_head=-1)
    with pytest.warns(UserWarning, match='budget=1 leaves GAR no adaptive step'):  # the smallest budget is allowed
        one = build_systems(prepared, parts.reranker, parts.navigator, first_stage=parts.first_stage, budget=1,
                            systems=['GAR'], fusion=0.1, fusion_head=0)
    assert _stage(one['GAR']).head == 0


def test_build_systems_defaults(parts):
    """Budget 100, no progress bars, and PISA BM25 with k1 0.9, b 0.4, top 1000 when no first stage is given."""
    asked = []

    class Index:
        def bm25(self, **kwargs):
            asked.append(kwargs)
            return parts.first_stage
    prepared = types.SimpleNamespace(groups=parts.groups, bm25_index=Index())
    pipes = build_systems(prepared, parts.reranker, parts.navigator, systems=['RGS', 'GAREN'])
    assert asked == [{'k1': 0.9, 'b': 0.4, 'num_results': 1000}]
    for pipe in pipes.values():
        first, search = list(pipe)
        assert first is parts.first_stage
        assert (search.budget, search.verbose, search.final_order) == (100, False, 'auto')
    given = build_systems(prepared, parts.reranker, parts.navigator, first_stage=pt.Transformer.identity(),
                          systems=['GAR'])
    assert len(asked) == 1  # a given first stage: the index is not asked
    assert list(given['GAR'])[1].verbose is False


# ---- the weights the command line's fusion options resolve to


@pytest.mark.parametrize(('given', 'resolved'), [
    ((0.0, None, None), (None, 0.0)),
    ((0.1, None, None), (0.5, 3.0)),     # --fusion alone: GAREN+'s stage below the head
    ((0.3, 0.2, None), (0.2, 0.0)),
    ((0.3, None, 0.0), (None, 0.0)),     # --observed-fusion 0: flat fusion over the whole list
    ((0.3, None, 2.0), (None, 2.0)),
    ((0.0, 0.5, None), (0.5, 0.0)),
    ((0.0, None, 1.5), (None, 1.5)),
])
def test_resolve_fusion(given, resolved):
    assert resolve_fusion(*given) == resolved


@pytest.mark.parametrize(('given', 'message'), [
    ((-0.1, None, None), 'fusion must be a finite number >= 0, got -0.1 (first-stage fusion weight, 0 = off)'),
    ((0.1, -1.0, None), 'tail_fusion must be a finite number >= 0 or None, got -1.0 (first-stage weight below the '
                        'head, None = off)'),
    ((0.1, None, -1.0), "observed_fusion must be a finite number >= 0 or None, got -1.0 (observation-order weight "
                        "below the head, 0 = off, None = GAREN+'s with --fusion alone)"),
    ((None, None, None), 'fusion must be a finite number >= 0, got None (first-stage fusion weight, 0 = off)'),
])
def test_resolve_fusion_refuses_negative_weights(given, message):
    with pytest.raises(ValueError) as info:
        resolve_fusion(*given)
    assert str(info.value) == message


def test_fusion_stage_and_its_description():
    assert fusion_stage(None, 10, 0.0) == {}
    assert fusion_stage(0.0, 7, 0.0) == {'tail_weight': 0.0, 'head': 7}
    assert fusion_stage(None, 7, 2.0) == {'observed_weight': 2.0, 'head': 7}
    assert fusion_stage(0.5, 3, 1.0) == {'tail_weight': 0.5, 'observed_weight': 1.0, 'head': 3}
    assert describe_fusion(0.0, None, 10, 0.0) == []
    assert describe_fusion(0.1, 0.5, 10, 3.0) == ['first-stage fusion 0.1 for every system',
                                                  'below the top 10 first-stage fusion 0.5',
                                                  'below the top 10 observation-order fusion 3']
    assert describe_fusion(0.0, 0.25, 4, 0.0) == ['below the top 4 first-stage fusion 0.25']
    assert describe_fusion(0.1, None, 10, 0.0, head_rerank=20) == [
        'top 20 re-ranked once more for every system that uses the reranker', 'first-stage fusion 0.1 for every system']
    assert describe_fusion(0.0, None, 10, 0.0, head_rerank=5) == [
        'top 5 re-ranked once more for every system that uses the reranker']


# ---- the registry's names, flags and errors


def test_names_in_registration_order_and_by_flag():
    assert registry.system_names() == ALL
    assert registry.SYSTEM_NAMES == ALL
    assert registry.system_names(sweep=False) == ['BM25', 'GAREN-doc']
    assert registry.SWEEP_SYSTEM_NAMES == [name for name in ALL if name not in ('BM25', 'GAREN-doc')]
    assert registry.system_names(groups=True) == GROUP_SYSTEMS
    assert registry.system_names(sweep=True, groups=False) == ['Rerank', 'GAR', 'SlideGAR', 'RGS']
    assert registry.navigator_names() == registry.NAVIGATOR_NAMES == ['centroid', 'summary', 'vote']
    assert registry.engine_names() == ['vllm', 'openai', 'transformers']


def test_navigator_and_engine_declarations():
    centroid, summary, vote = (registry.navigator(n) for n in ('centroid', 'summary', 'vote'))
    assert (centroid.encoder, centroid.summaries, centroid.extras) == (True, False, ('cpu',))
    assert (summary.encoder, summary.summaries, summary.extras) == (True, True, ('cpu',))
    assert (vote.encoder, vote.summaries, vote.extras) == (False, False, ())
    assert type(vote.factory(None, None, None)) is pyterrier_garen.VoteNavigator
    assert [(e.target, e.extras) for e in map(registry.engine, registry.engine_names())] == [
        ('pyterrier_garen:VLLMEngine', ('vllm',)), ('pyterrier_garen:OpenAIEngine', ('openai',)),
        ('pyterrier_garen:TransformersEngine', ('cpu',))]


def test_register_and_unregister_update_the_live_lists(scratch_name):
    spec = System(scratch_name, lambda c: c.first_stage, sweep=False, groups=True)
    assert registry.register_system(spec) is spec
    assert registry.SYSTEM_NAMES[-1] == scratch_name
    assert scratch_name not in registry.SWEEP_SYSTEM_NAMES
    assert registry.system(scratch_name) is spec
    with pytest.raises(ValueError, match=f"a system named '{scratch_name}' is already registered"):
        registry.register_system(System(scratch_name, spec.factory, groups=True))
    again = System(scratch_name, spec.factory, groups=True, sweep=True)
    assert registry.register_system(again, replace=True) is again
    assert registry.SWEEP_SYSTEM_NAMES[-1] == scratch_name
    registry.unregister(scratch_name)
    assert scratch_name not in registry.SYSTEM_NAMES
    assert scratch_name not in registry.SWEEP_SYSTEM_NAMES
    with pytest.raises(KeyError, match=f"nothing named '{scratch_name}' is registered"):
        registry.unregister(scratch_name)


def test_a_name_registered_as_two_kinds_is_removed_only_by_its_kind(scratch_name):
    # names are unique per kind: unregister('vote') must not silently take a system and the built-in navigator
    registry.register_system(System(scratch_name, lambda c: c.first_stage, groups=False))
    registry.register_navigator(registry.Navigator(scratch_name, lambda g, p, e: None))
    with pytest.raises(ValueError, match=f"^'{scratch_name}' is registered as a system and as a navigator; pass "
                                         "kind= to say which to remove$"):
        registry.unregister(scratch_name)
    assert scratch_name in registry.SYSTEM_NAMES
    assert scratch_name in registry.NAVIGATOR_NAMES
    registry.unregister(scratch_name, kind='navigator')
    assert scratch_name in registry.SYSTEM_NAMES
    assert scratch_name not in registry.NAVIGATOR_NAMES
    with pytest.raises(KeyError, match=f"nothing named '{scratch_name}' is registered as a navigator"):
        registry.unregister(scratch_name, kind='navigator')
    with pytest.raises(ValueError, match=r"unknown kind 'systems'; choose from \['system', 'navigator', 'engine'\]"):
        registry.unregister(scratch_name, kind='systems')
    registry.unregister(scratch_name)  # now one kind only
    assert scratch_name not in registry.SYSTEM_NAMES


def test_a_built_in_navigator_survives_a_system_of_its_name(scratch_name):
    registry.register_system(System('vote', lambda c: c.first_stage, groups=False))
    try:
        registry.unregister('vote', kind='system')
    finally:
        assert 'vote' in registry.NAVIGATOR_NAMES
    assert registry.SYSTEM_NAMES == ALL


def test_a_system_declares_whether_it_reads_the_partition():
    with pytest.raises(TypeError, match='groups'):
        System('X', lambda c: None)  # no default: the sweep would copy one seed's row to every seed


@pytest.mark.parametrize(('extras', 'error', 'said'), [
    (('vlm',), ValueError, "the system 'X': unknown extra 'vlm'; the extras of setup.cfg are ['ann', 'cpu', 'openai', "
                           "'ray', 'vllm', 'vllm-cpu'] (a new extra also needs its modules in "
                           "_registry.EXTRA_MODULES)"),
    ('cpu', TypeError, "the system 'X': extras must be a tuple of extra names, got the text 'cpu'; write ('cpu',)"),
])
def test_an_extra_setup_cfg_does_not_declare_is_refused_on_registering(extras, error, said):
    with pytest.raises(error) as refused:
        registry.register_system(System('X', lambda c: None, groups=False, extras=extras))
    assert str(refused.value) == said
    assert registry.SYSTEM_NAMES == ALL


def test_the_extras_known_to_the_registry_are_those_of_setup_cfg():
    import configparser
    from pathlib import Path
    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[1] / 'setup.cfg')
    assert sorted(registry.EXTRA_MODULES) == sorted(set(cfg['options.extras_require']) - {'test'})


@pytest.mark.parametrize('name', ['', '   ', None, 3])
def test_a_declaration_needs_a_name(name):
    with pytest.raises(ValueError, match='a system needs a non-empty name'):
        registry.register_system(System(name, lambda c: None, groups=False))
    assert registry.SYSTEM_NAMES == ALL


def test_unknown_names_list_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown system 'Nope'; choose from \['BM25', 'Rerank'"):
        registry.system('Nope')
    with pytest.raises(ValueError, match=r"unknown navigator \['vote'\]; choose from \['centroid', 'summary', "
                                         r"'vote'\]"):
        registry.navigator(['vote'])  # not hashable: the same message, not a TypeError
    with pytest.raises(ValueError, match="unknown engine 'vlm'"):
        registry.engine('vlm')


def test_missing_extras_checks_modules_without_importing_them(monkeypatch):
    monkeypatch.setattr(registry, 'EXTRA_MODULES', {'present': ('json', 'csv'), 'absent': ('json', 'no_such_mod_zz'),
                                                    'gone': ('no_such_mod_zz',)})
    assert registry.missing_extras(['present', 'absent', 'gone']) == ['absent', 'gone']
    with pytest.raises(ValueError, match="missing_extras: unknown extra 'undeclared'"):
        registry.missing_extras(['present', 'undeclared'])
    assert registry.missing_extras([]) == []


@pytest.mark.parametrize(('kind', 'register', 'make'), [
    ('navigator', registry.register_navigator, lambda name, text: registry.Navigator(name, lambda g, p, e: None,
                                                                                     text=text)),
    ('engine', registry.register_engine, lambda name, text: registry.EngineName(name, text)),
])
def test_navigators_and_engines_refuse_a_second_declaration_by_name(scratch_name, kind, register, make):
    first = make(scratch_name, 'first')
    assert register(first) is first
    with pytest.raises(ValueError, match=f"^a {kind} named '{scratch_name}' is already registered; pick another name "
                                         'or pass replace=True$'):
        register(make(scratch_name, 'second'))
    second = make(scratch_name, 'second')
    assert register(second, replace=True) is second
    assert getattr(registry, kind)(scratch_name) is second
    with pytest.raises(ValueError, match=f"^a {kind} needs a non-empty name, got ''$"):
        register(make('', 'none'))


def test_system_names_by_whether_they_use_the_reranker():
    # the --systems choices of examples/budget_recall.py and final_order.py: every system a reranker changes
    assert registry.system_names(reranks=False) == ['BM25']
    assert registry.system_names(reranks=True) == [name for name in ALL if name != 'BM25']
    assert registry.system_names(reranks=True, groups=False, sweep=True) == ['Rerank', 'GAR', 'SlideGAR', 'RGS']
