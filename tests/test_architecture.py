"""The package's shape: no import cycles (module-level or lazy), every module importable on its own, every
transformer inspectable by PyTerrier with a repr that rebuilds it."""
import ast
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import pyterrier_garen

PACKAGE_DIR = Path(pyterrier_garen.__file__).parent
MODULES = sorted(m.name for m in pkgutil.iter_modules([str(PACKAGE_DIR)]) if m.name != '__main__')


def _imports(module: str) -> set:
    """Package modules that ``module`` imports anywhere in its body (top level or inside functions)."""
    path = PACKAGE_DIR / f'{module}.py'
    # a subpackage (e.g. _engines) is one node: its modules' imports of the package (``from .. import``) count
    paths, top = ([path], 1) if path.exists() else (sorted((PACKAGE_DIR / module).glob('*.py')), 2)
    found = set()
    for node in (n for p in paths for n in ast.walk(ast.parse(p.read_text()))):
        if isinstance(node, ast.ImportFrom) and node.level not in (0, top):
            continue  # within the subpackage
        if isinstance(node, ast.ImportFrom):
            if node.level and node.module:
                found.add(node.module.split('.')[0])
            elif node.level:  # from . import name
                found.update(alias.name for alias in node.names if alias.name in MODULES)
            elif node.module and node.module.startswith('pyterrier_garen.'):
                found.add(node.module.split('.')[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split('.')[1] for a in node.names if a.name.startswith('pyterrier_garen.'))
    return (found & set(MODULES)) - {module}


def test_no_import_cycles():
    graph = {m: _imports(m) for m in MODULES}
    state = {}
    cycle = []

    def visit(node, stack):
        state[node] = 'open'
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 'open':
                cycle.extend(stack[stack.index(nxt):] + [nxt] if nxt in stack else [node, nxt])
                return True
            if nxt not in state and visit(nxt, stack + [nxt]):
                return True
        state[node] = 'done'
        return False
    for module in MODULES:
        if module not in state and visit(module, [module]):
            break
    assert not cycle, f'import cycle: {" -> ".join(cycle)}'


def test_every_module_imports_alone_in_a_fresh_interpreter():
    code = ('import importlib, sys\n'
            f'for name in {MODULES!r}:\n'
            '    importlib.import_module("pyterrier_garen." + name)\n'
            'print("ok")\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]


def test_examples_bench_and_notebooks_use_public_names_only():
    root = PACKAGE_DIR.parent
    offenders = []
    for folder in ('examples', 'bench', 'notebooks'):
        for path in sorted((root / folder).glob('*.py')):
            for node in ast.walk(ast.parse(path.read_text())):
                names = ([node.module or ''] if isinstance(node, ast.ImportFrom) else
                         [a.name for a in node.names] if isinstance(node, ast.Import) else [])
                offenders += [f'{path.relative_to(root)}: {n}' for n in names
                            if n.startswith('pyterrier_garen._') and not n.startswith('pyterrier_garen.__')]
    assert not offenders, offenders


@pytest.fixture(scope='module')
def toy():
    sys.path.insert(0, str(Path(__file__).parent))
    from _stub_engine import StubEngine
    from _toy_graph import DictScorer, ToyGroupGraph
    return DictScorer({'a': 1.}), ToyGroupGraph({'a': ['b']}, {'a': 0, 'b': 0}), StubEngine()


def _transformers(toy):
    import pyterrier_garen as garen
    scorer, graph, engine = toy
    return [
        garen.GAREN(scorer, graph, garen.VoteNavigator(), strategy='explore', budget=50),
        garen.DocGAREN(scorer, graph, scorer, keep=5),
        garen.SlideGAR(scorer, graph, keep=5),
        garen.RGS(scorer, graph, stride=5),
        garen.SlidingWindowReranker(scorer, budget=40),
        garen.VoteNavigator(),
        garen.VectorScorer(None),
        garen.CentroidNavigator(graph, None),
        garen.SummaryNavigator(graph),
        garen.YesNoScorer(engine, batch_size=4),
        garen.ListwiseReranker(engine, window=10, stride=5),
    ]


def test_repr_rebuilds_the_object(toy):
    import pyterrier_garen as garen
    scorer, graph, engine = toy
    namespace = {**{name: getattr(garen, name) for name in garen.__all__}, 'scorer': scorer, 'graph': graph,
                 'engine': engine}
    for transformer in _transformers(toy):
        text = repr(transformer).replace(repr(scorer), 'scorer').replace(repr(graph), 'graph')
        text = text.replace(repr(engine), 'engine')
        rebuilt = eval(text, namespace)  # noqa: S307 - our own reprs
        assert repr(rebuilt) == repr(transformer)
    assert "strategy='explore'" in repr(_transformers(toy)[0])


def test_repr_of_every_registered_system_rebuilds_it():
    """The stages of every system in the registry (what compare runs), built from toy components; inspection of
    the same objects: tests/test_inspect.py."""
    import pyterrier_garen as garen
    from pyterrier_garen import _registry
    from pyterrier_garen._gar import GAR
    sys.path.insert(0, str(Path(__file__).parent))
    from _toy_graph import toy_components
    c, _ = toy_components()
    parts = {'reranker': c.reranker, 'navigator': c.navigator, 'groups': c.groups}
    namespace = {**{name: getattr(garen, name) for name in garen.__all__}, 'GAR': GAR, **parts}
    for name in _registry.system_names():
        pipeline = _registry.system(name).factory(c)
        for stage in getattr(pipeline, '_transformers', [pipeline]):
            if not type(stage).__module__.startswith('pyterrier_garen'):
                continue
            text = repr(stage)
            for key, part in parts.items():
                text = text.replace(repr(part), key)
            assert repr(eval(text, namespace)) == repr(stage), name  # noqa: S307 - our own reprs
