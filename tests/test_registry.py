"""The registry is the one place to add a system, a navigator or an engine: a toy registered there (and nowhere
else) runs in compare, on the command line, in the sweep and in the batched == per-query check."""
import pytest
from _toy_graph import assert_batched_equals_per_query, toy_components

import pyterrier_garen as garen
from pyterrier_garen import _registry
from pyterrier_garen._driver import WindowSearch


class TopWindow(WindowSearch):
    """A toy search: re-ranks the first-stage top ``budget`` in windows of ``budget`` (one call per query)."""

    columns = ()

    def __init__(self, reranker, *, budget: int = 100):
        self.reranker = reranker
        self.budget = budget

    def _search(self, state):
        ranking = state.r0[:self.budget]
        state.observed.update((d, 1) for d in ranking)
        ranking = yield 'rerank', ranking
        return ranking


@pytest.fixture
def toy_system():
    """Registers ``Toy`` (counting its builds) and removes it afterwards, whatever the test did."""
    builds = []

    def factory(c):
        builds.append(c.groups)
        return c.first_stage >> TopWindow(c.reranker, budget=c.budget)
    spec = _registry.register_system(_registry.System('Toy', factory, groups=True, text='a toy'))
    yield spec, builds
    _registry.unregister('Toy')
    assert 'Toy' not in garen.SYSTEMS


def test_registered_system_is_listed_everywhere(toy_system):
    from pyterrier_garen.__main__ import build_parser
    from pyterrier_garen.analysis import SWEEP_SYSTEMS
    assert garen.SYSTEMS[-1] == 'Toy'
    assert 'Toy' in SWEEP_SYSTEMS
    args = build_parser().parse_args(['compare', '--systems', 'BM25', 'Toy'])
    assert args.systems == ['BM25', 'Toy']
    assert 'Toy' in build_parser().parse_args(['compare']).systems  # the default is every registered system


def test_a_system_declared_reranker_free_is_left_out_of_the_cost_count(capsys):
    """bench/reranker_load.py counts the reranker's work of the systems that use one: which they are comes from the
    declarations (``reranks``), not from a name written in the script (it was ``!= 'BM25'``)."""
    from _scripts import load_script
    script = load_script('bench/reranker_load.py')
    _registry.register_system(_registry.System('Toy-first', lambda c: c.first_stage % c.budget, groups=False,
                                               reranks=False, adapts_above=0))
    try:
        with pytest.raises(SystemExit) as ended:  # refused before any collection is loaded
            script.main(['--collections', 'none', '--systems', 'GAREN', 'Toy-first'])
        assert ended.value.code == 2
        said = capsys.readouterr().err
        assert "reranker-free system(s) ['Toy-first']" in said
        assert f'choose from {_registry.system_names(reranks=True)}' in said
    finally:
        _registry.unregister('Toy-first')


def test_every_compare_reranker_is_described_in_its_help():
    """``_text_rerankers.RERANKERS`` is what ``compare --reranker NAME[:ARGUMENT]`` accepts; its help is written by
    hand, so a builder added there without a word in the help would be a choice no user can find."""
    import re

    from pyterrier_garen.__main__ import build_parser
    from pyterrier_garen._text_rerankers import RERANKERS
    commands = next(a for a in build_parser()._actions if a.__class__.__name__ == '_SubParsersAction')
    text = next(a.help for a in commands.choices['compare']._actions if '--reranker' in a.option_strings)
    missing = [name for name in RERANKERS if not re.search(rf'(?<![\w-]){re.escape(name)}(?![\w-])', text)]
    assert not missing, f"compare's --reranker help does not describe {missing} (pyterrier_garen/__main__.py)"


def test_registered_system_runs_batched_equals_per_query(toy_system):
    spec, builds = toy_system
    components, inp = toy_components(budget=12)
    run = assert_batched_equals_per_query(spec.factory(components), inp)
    assert (run.groupby('qid').size() == 12).all()
    assert builds == [components.groups]


def test_registered_system_runs_in_compare(toy_system, cranfield, cran_dir):
    table = garen.compare(cranfield, workdir=cran_dir, systems=['BM25', 'Toy'], num_queries=5)
    assert table.name.tolist() == ['BM25', 'Toy']
    assert len(toy_system[1]) == 1


def test_partition_dependence_comes_from_the_declaration(toy_system, tmp_path):
    """``groups=True``: built once per partition; re-declared ``groups=False``: once, its row repeated per seed."""
    from pyterrier_garen import analysis
    from pyterrier_garen.synthetic import make_synthetic
    spec, builds = toy_system
    dataset = make_synthetic(tmp_path / 'collection', docs_per_topic=6, queries_per_topic=1)
    prepared = garen.prepare(dataset, tmp_path / 'work', graph='bm25', vectors=False)
    kwargs = dict(sigmas=(0.5,), noise_seeds=(0,), partition_seeds=(42, 7), minilm=False, navigator='vote',
                  systems=['Toy'])
    table, _ = analysis.strength_sweep(prepared, **kwargs)
    assert len(builds) == 2  # one build per partition
    assert builds[0] is not builds[1]
    assert sorted(table.partition_seed) == [7, 42]
    builds.clear()
    _registry.register_system(_registry.System('Toy', spec.factory, groups=False), replace=True)
    again, _ = analysis.strength_sweep(prepared, **kwargs)
    assert len(builds) == 1  # the partitions share one run ...
    assert sorted(again.partition_seed) == [7, 42]  # ... reported for each seed
    assert again['nDCG@10'].nunique() == 1


def test_registered_navigator_is_a_choice_and_builds(monkeypatch):
    from pyterrier_garen.__main__ import build_parser
    made = []
    spec = _registry.Navigator('toy-nav', lambda groups, prepared, encoder: made.append(groups) or 'nav',
                               text='a toy navigator')
    _registry.register_navigator(spec)
    try:
        assert build_parser().parse_args(['compare', '--navigator', 'toy-nav']).navigator == 'toy-nav'
        assert _registry.navigator('toy-nav').factory('groups', None, None) == 'nav'
        assert made == ['groups']
    finally:
        _registry.unregister('toy-nav')
    assert 'toy-nav' not in garen.NAVIGATORS
    with pytest.raises(SystemExit):
        build_parser().parse_args(['compare', '--navigator', 'toy-nav'])


def test_engine_short_names_resolve_through_the_registry():
    from pyterrier_garen._ray import _resolve
    assert _registry.engine_names() == ['vllm', 'openai', 'transformers']
    assert _resolve('openai') is garen.OpenAIEngine
    _registry.register_engine(_registry.EngineName('toy-engine', 'pyterrier_garen:VoteNavigator'))
    try:
        assert _resolve('toy-engine') is garen.VoteNavigator
    finally:
        _registry.unregister('toy-engine')
    with pytest.raises(ValueError, match='unknown engine'):
        _resolve('toy-engine')


def test_declarations_are_checked():
    with pytest.raises(ValueError, match='already registered'):
        _registry.register_system(_registry.System('GAREN', lambda c: None, groups=True))
    with pytest.raises(ValueError, match='non-empty name'):
        _registry.register_system(_registry.System(' ', lambda c: None, groups=False))
    with pytest.raises(ValueError, match="unknown system 'Nope'.*GAREN"):
        _registry.system('Nope')
    with pytest.raises(KeyError, match='Nope'):
        _registry.unregister('Nope')
    with pytest.raises(ValueError, match="unknown extra 'no-such-extra'"):
        _registry.missing_extras(['no-such-extra'])
    # partition dependence as declared: only the GAREN family uses the groups; GAREN-doc follows k-NN edges only
    assert _registry.system_names(groups=True) == ['GAREN', 'GAREN-explore', 'GAREN-exploit', 'GAREN-noprop',
                                                   'GAREN-vote', 'GAREN+']
