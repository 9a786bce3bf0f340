"""Offline jobs on a Ray cluster (Ray Data): group summaries and corpus encoding in a pool of actors.

This is the only module of the package that imports ``ray``, and it does so inside the functions that need it, so
``import pyterrier_garen`` stays light. Nothing here changes *what* the offline jobs produce: every actor runs the
same summariser (or encoder) code as the single-process path, on the same batches, and the driver writes the results
through the same summary store (or FlexIndex indexer).

Models are never shipped to the actors. Each actor builds its own from a small picklable recipe:

* :class:`EngineSpec`: which :class:`~pyterrier_garen._engines.Engine` to construct, with which arguments
  (``EngineSpec('vllm', model='Qwen/Qwen3-4B')``);
* :class:`SummarizerSpec`: an LLM summariser over an engine spec (``EngineSpec(...).summarizer(max_tokens=512)``);
  summarisers without a model (:class:`~pyterrier_garen.ExtractiveSummarizer`) are sent as they are;
* for encoding, a zero-argument factory such as :func:`~pyterrier_garen.minilm_encoder`.

:class:`RayOptions` says where to run (a cluster address, or a local cluster) and how many actors to use.
"""
from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _registry
from ._redact import secret_name

__all__ = ['RayOptions', 'EngineSpec', 'SummarizerSpec', 'ray_options', 'as_recipe', 'summarize_batches', 'encode_docs',
           'encode_into']

_EXTRA_HINT = "pip install -e '.[ray]' (in a clone of pyterrier-garen)"



def _import_ray():
    """``(ray, ray.data)``, or an ImportError naming the extra to install."""
    try:
        ray = importlib.import_module('ray')
        data = importlib.import_module('ray.data')
    except ImportError as ex:
        raise ImportError(f'running offline jobs on Ray needs Ray Data, which is not installed; install the extra '
                          f'with `{_EXTRA_HINT}` (or `pip install "ray[data]"`)') from ex
    return ray, data


def _resolve(target: Union[str, type, Callable]) -> Callable:
    """A class or factory from an object, a short engine name or a ``'module:attribute'`` path."""
    if not isinstance(target, str):
        return target
    # short engine names are declared in _registry.py (resolved inside the actor: no model library on the driver)
    path = _registry.engine(target).target if target in _registry.engine_names() else target
    module, sep, attr = path.partition(':')
    if not sep:
        raise ValueError(f'unknown engine {target!r}: use one of {sorted(_registry.engine_names())}, an Engine '
                         'class, or a "package.module:Class" path')
    try:
        found = importlib.import_module(module)
    except ModuleNotFoundError as ex:
        if ex.name is None or not (module == ex.name or module.startswith(ex.name + '.')):
            raise  # the module exists but needs something missing: its own message says what
        raise ValueError(f'no module {ex.name!r} (from engine {target!r}); use one of '
                         f'{sorted(_registry.engine_names())}, an Engine class, or a "package.module:Class" path') \
            from None
    try:
        return getattr(found, attr)
    except AttributeError as ex:
        raise ValueError(f'{module} has no {attr!r} (from engine {target!r})') from ex


def check_engine(target: Union[str, type, Callable], *, installed: bool = False) -> None:
    """Refuse, on the driver and before any actor starts, an engine the actors could not build: a name that is no
    registered engine and no ``'package.module:Class'`` path (``EngineSpec('nosuch')``), with ``_resolve``'s message;
    with ``installed`` (the actors run this Python: a local cluster this job started), also a registered engine
    whose modules are not installed (ImportError naming the extra, as the engine says without Ray) and a path whose
    module is not there. Modules are looked up (``importlib.util.find_spec``), never imported."""
    if not isinstance(target, str):
        return
    names = sorted(_registry.engine_names())
    registered = {_registry.engine(name).target: _registry.engine(name) for name in names}
    declared = _registry.engine(target) if target in names else registered.get(target)
    if declared is None and ':' not in target:
        raise ValueError(f'unknown engine {target!r}: use one of {names}, an Engine class, or a '
                         '"package.module:Class" path')
    if not installed:
        return
    if declared is not None:
        from ._engines._base import _EXTRA_HINTS, require_message
        what = declared.target.partition(':')[2]
        extra = next((e for e in declared.extras if e in _EXTRA_HINTS), 'vllm')
        for module in declared.requires:
            if not _findable(module):
                raise ImportError(require_message(module, what, extra))
        return
    module = target.partition(':')[0]
    if not _findable(module):
        raise ValueError(f'no module {module!r} (from engine {target!r}); use one of {names}, an Engine class, or a '
                         '"package.module:Class" path')


def _findable(module: str) -> bool:
    """Whether ``module`` can be imported, looked up without importing it (its parent packages are imported)."""
    import importlib.util
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package that is missing (or is no package)
        return False


def _shown(name: Any, value: Any) -> Any:
    if secret_name(str(name)) and not (value is None or (isinstance(value, str) and value == 'EMPTY')):
        return '***'
    if isinstance(value, dict):  # e.g. default_headers={'Authorization': ...}: each entry by its own name
        return {k: _shown(k, v) for k, v in value.items()}
    from ._redact import shown_url  # a credential inside a URL (user:KEY@host, ?api-key=KEY) is hidden too
    return shown_url(value)


def _masked(kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """``kwargs`` for display: values of secret names (:func:`pyterrier_garen._redact.secret_name`, also inside
    dicts) as ``'***'``, credentials inside URLs hidden."""
    return {k: _shown(k, v) for k, v in kwargs.items()}


# ---------------------------------------------------------------------------------------------------------------------
# recipes built inside the actors
# ---------------------------------------------------------------------------------------------------------------------
class EngineSpec:
    """A picklable recipe for an LLM engine, built where it runs (in each Ray actor) instead of being shipped.

    Args:
        engine: ``'vllm'``, ``'transformers'``, ``'openai'``, an :class:`~pyterrier_garen._engines.Engine` subclass,
            or a ``'package.module:Class'`` path.
        **kwargs: the engine's constructor arguments; ``model`` is required (it is recorded as provenance before
            any engine is built). E.g. ``EngineSpec('vllm', model='Qwen/Qwen3-4B', max_model_len=8192)`` or
            ``EngineSpec('openai', base_url='http://node1:8000/v1', model='Qwen/Qwen3-4B')``.

    Raises:
        ValueError: without ``model``.
    """

    def __init__(self, engine: Union[str, type], **kwargs):
        if not kwargs.get('model'):
            raise ValueError(f'EngineSpec({engine!r}, ...) needs model=..., the model id recorded with the summaries')
        self.engine = engine
        self.kwargs = kwargs

    @property
    def model(self) -> str:
        return str(self.kwargs['model'])

    def __repr__(self):
        engine = self.engine if isinstance(self.engine, str) else getattr(self.engine, '__name__', repr(self.engine))
        args = ''.join(f', {k}={v!r}' for k, v in _masked(self.kwargs).items())
        return f'EngineSpec({engine!r}{args})'

    def __eq__(self, other):
        return isinstance(other, EngineSpec) and (self.engine, self.kwargs) == (other.engine, other.kwargs)

    def output_settings(self) -> Dict[str, Any]:
        """What the engine built from this recipe will report as its output settings
        (``Engine.output_settings``), without building it; ``{}`` for an engine class that declares none, or one
        named by a module this driver cannot import (the actors check the config they build against this)."""
        try:
            engine = _resolve(self.engine)
        except (ImportError, ValueError):
            return {}
        of = getattr(engine, 'output_settings_of', None)
        return of(self.kwargs) if callable(of) else {}

    def build(self):
        """Construct the engine (loads the model)."""
        return _resolve(self.engine)(**self.kwargs)

    def summarizer(self, **kwargs) -> 'SummarizerSpec':
        """A :class:`SummarizerSpec` of an LLM summariser on this engine (keyword arguments: ``LLMSummarizer``'s)."""
        return SummarizerSpec(self, **kwargs)


class _ModelOnly:
    """Stands in for an engine where only its model id and output settings are needed (the summariser's
    provenance), never called."""

    def __init__(self, model: str, settings: Optional[Dict[str, Any]] = None):
        self.model = model
        self.settings = settings or {}

    def output_settings(self) -> Dict[str, Any]:
        return dict(self.settings)

    def __getattr__(self, name):
        raise RuntimeError(f'the engine of {self.model!r} is only built inside the Ray actors')


_LLM_SUMMARIZER = 'pyterrier_garen:LLMSummarizer'


class SummarizerSpec:
    """A picklable recipe for an LLM summariser: each Ray actor builds its own engine and summariser from it.

    Args:
        engine: an :class:`EngineSpec`.
        summarizer: the summariser class or ``'module:Class'`` path (default ``LLMSummarizer``); it is called as
            ``summarizer(engine, **kwargs)``.
        **kwargs: the summariser's options (``max_tokens``, ``max_doc_tokens``, ``batch_size``, ``retries``).
    """

    def __init__(self, engine: EngineSpec, *, summarizer: Union[str, type] = _LLM_SUMMARIZER, **kwargs):
        if not isinstance(engine, EngineSpec):
            raise TypeError(f'SummarizerSpec needs an EngineSpec, got {type(engine).__name__}; e.g. '
                            "EngineSpec('vllm', model='Qwen/Qwen3-4B').summarizer()")
        self.engine = engine
        self.summarizer = summarizer
        self.kwargs = kwargs

    def __repr__(self):
        kwargs = self.kwargs if self.summarizer == _LLM_SUMMARIZER else {'summarizer': self.summarizer, **self.kwargs}
        args = ''.join(f', {k}={v!r}' for k, v in _masked(kwargs).items())
        return f'SummarizerSpec({self.engine!r}{args})'

    def build(self):
        """Construct the engine and the summariser (loads the model)."""
        return _resolve(self.summarizer)(self.engine.build(), **self.kwargs)

    def config(self) -> Dict[str, Any]:
        """The summariser's config (model id, prompt hash, options), computed without building the engine.

        Every actor checks that the summariser it builds reports the same config.
        """
        return _resolve(self.summarizer)(_ModelOnly(self.engine.model, self.engine.output_settings()),
                                         **self.kwargs).config()


class _AsIs:
    """A model-free summariser (e.g. ExtractiveSummarizer), pickled to the actors as it is."""

    def __init__(self, summarizer):
        self.summarizer = summarizer

    def __repr__(self):
        return repr(self.summarizer)

    def build(self):
        return self.summarizer

    def config(self) -> Dict[str, Any]:
        return self.summarizer.config()


def as_recipe(summarizer) -> Union[SummarizerSpec, _AsIs]:
    """What is sent to the actors for ``summarizer``: its recipe; a summariser holding a live engine is refused."""
    if isinstance(summarizer, (SummarizerSpec, _AsIs)):
        return summarizer
    if isinstance(summarizer, EngineSpec):
        return summarizer.summarizer()
    if getattr(summarizer, 'engine', None) is not None:
        raise TypeError(f'{summarizer!r} holds a live engine, which is never shipped to Ray actors (each actor loads '
                        'its own model); pass a recipe instead, e.g. '
                        "EngineSpec('vllm', model='Qwen/Qwen3-4B').summarizer(max_tokens=1024)")
    if not callable(getattr(summarizer, 'summarize', None)):
        raise TypeError(f'{summarizer!r} is not a Summarizer or a SummarizerSpec')
    return _AsIs(summarizer)


# ---------------------------------------------------------------------------------------------------------------------
# where to run
# ---------------------------------------------------------------------------------------------------------------------
@dataclass
class RayOptions:
    """Where and how an offline job runs on Ray.

    Args:
        address: the cluster (``'auto'``, ``'ray://head:10001'``, ``'head:6379'``); None: the cluster named by
            ``$RAY_ADDRESS`` if set, else one already running on this machine (``ray start``; ``ray.init`` joins
            it, and it is left running), else a new local cluster on this machine (shut down when the job ends).
            When Ray is already initialised in this process, that connection is used and left open.
        workers: actors in the pool (one engine or encoder each).
        num_cpus: CPUs reserved per actor.
        num_gpus: GPUs reserved per actor (1 for a ``VLLMEngine`` on one GPU; 0 for an ``OpenAIEngine`` client).
        max_retries: retries of a batch whose summariser raised (a transient error); a worker process that dies
            is always restarted and its batch retried by Ray.
        init_kwargs: extra arguments for ``ray.init`` (``runtime_env``, ``num_cpus`` of a local cluster, ...).
    """
    address: Optional[str] = None
    workers: int = 2
    num_cpus: float = 1
    num_gpus: float = 0
    max_retries: int = 3
    init_kwargs: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        from ._params import check_int, check_nonnegative, check_positive
        check_positive(workers=self.workers)
        check_int('max_retries', self.max_retries, low=0)
        check_nonnegative(num_cpus=self.num_cpus, num_gpus=self.num_gpus)

    def describe(self) -> Dict[str, Any]:
        """What is recorded in an artifact about the run (no secrets: the address only)."""
        return {'address': self.address, 'workers': int(self.workers), 'num_cpus': self.num_cpus,
                'num_gpus': self.num_gpus}


def ray_options(ray: Union[None, bool, str, RayOptions], **overrides) -> Optional[RayOptions]:
    """Normalise a ``ray=`` argument: None/False (no Ray), True (default options), an address, or RayOptions."""
    if ray is None or ray is False:
        return None
    if ray is True:
        options = RayOptions()
    elif isinstance(ray, str):
        options = RayOptions(address=ray)
    elif isinstance(ray, RayOptions):
        options = ray
    else:
        raise TypeError(f'ray= takes True, a cluster address or RayOptions(...); got {type(ray).__name__}')
    if overrides:
        options = RayOptions(**{**options.__dict__, **{k: v for k, v in overrides.items() if v is not None}})
    return options


@contextlib.contextmanager
def _session(options: RayOptions, verbose: bool, check: Optional[Callable[[], None]] = None):
    """Connect to (or start) a Ray cluster for one job; disconnect afterwards unless the caller had connected.

    When this job started a local cluster, its actors run this Python on this machine: the cluster's CPUs and GPUs
    are checked against what each actor asks for (:func:`check_resources`), and ``check()`` is called (what the
    actors need is installed here), both before any actor starts."""
    ray, data = _import_ray()
    started = False
    if not ray.is_initialized():
        kwargs = {'logging_level': logging.INFO if verbose else logging.WARNING, 'log_to_driver': verbose,
                  **options.init_kwargs}
        check_reachable(options.address or os.environ.get('RAY_ADDRESS'))
        try:
            ray.init(address=options.address, **kwargs)
        except ConnectionError as ex:  # a cluster that answers but refuses this driver (e.g. its authentication
            # token): the command line read a bare ConnectionError as a failed dataset download
            address = options.address or os.environ.get('RAY_ADDRESS') or 'this machine'
            raise RayAddressError(f'Ray could not join the cluster at {address} ({type(ex).__name__}: {ex}); Ray\'s '
                                  'log lines above say why (e.g. an authentication token the cluster refuses); pass '
                                  'the address of a cluster this machine may join, or leave the address out to '
                                  'start a local cluster for this job') from None
        except ValueError as ex:  # Ray's "Invalid address format: junk" does not say where the address came from
            if options.address or not os.environ.get('RAY_ADDRESS'):
                raise
            raise RayAddressError(f"$RAY_ADDRESS={os.environ['RAY_ADDRESS']!r}, which ray.init reads when no "
                                  f'address is given: {ex}; set it to a cluster\'s address (head:6379, '
                                  'ray://head:10001) or unset it to start a local cluster for this job') from None
        started = True
    try:
        if started and _started_here(ray):
            if check is not None:
                check()
            check_resources(ray.cluster_resources(), options)
        ctx = data.DataContext.get_current()
        saved = {k: getattr(ctx, k) for k in ('enable_progress_bars', 'print_on_execution_start',
                                               'retried_map_errors', 'max_map_retries')}
        saved_order = ctx.execution_options.preserve_order
        ctx.enable_progress_bars = verbose
        ctx.print_on_execution_start = verbose
        # an exception raised by the summariser/encoder is retried in the same actor up to max_retries times
        ctx.retried_map_errors = options.max_retries > 0
        ctx.max_map_retries = options.max_retries
        try:
            yield ray, data
        finally:
            for k, v in saved.items():
                setattr(ctx, k, v)
            ctx.execution_options.preserve_order = saved_order
    finally:
        if started:
            ray.shutdown()


def _started_here(ray) -> bool:
    """Whether ``ray.init`` started a local cluster (this driver is its head node) rather than connecting to one."""
    node = getattr(getattr(getattr(ray, '_private', None), 'worker', None), '_global_node', None)
    return getattr(node, 'head', None) is True


class RayResourceError(ValueError):
    """Each actor asks for more CPUs or GPUs than the local cluster has: Ray would wait for them for ever."""


def check_resources(resources: Dict[str, float], options: RayOptions) -> None:
    """:class:`RayResourceError` when one actor asks for more CPUs or GPUs than ``resources`` (a local cluster's
    ``ray.cluster_resources()``) hold: no actor could start, and Ray Data waits for one without end (``summarize
    --ray`` with vLLM on a machine without a GPU printed "pending: 1 CPU, 1 GPU" until it was stopped)."""
    for name, asked, option, flag in (('GPU', options.num_gpus, 'num_gpus', ', --gpus-per-worker'),
                                      ('CPU', options.num_cpus, 'num_cpus', '')):
        have = float(resources.get(name, 0))
        if asked and asked > have:
            fix = ('pass --gpus-per-worker 0 (num_gpus=0) for an engine that needs no GPU here (an OpenAI-compatible '
                   'server, vLLM on CPU), or run where a GPU is' if name == 'GPU' else
                   f'ask for at most {have:g} (num_cpus=...)')
            raise RayResourceError(f'each Ray actor asks for {asked:g} {name}{"" if asked == 1 else "s"} '
                                   f'({option}={asked:g}{flag}), but the local Ray cluster started for this job has '
                                   f'{have:g}, so no actor could start; {fix}')


class ActorBuildError(ValueError):
    """A Ray actor could not build its summariser or encoder, for a reason a user can fix (a missing package, a
    model that is not there); the message is that reason, in one line."""


def build_in_actor(build: Callable[[], Any]) -> Tuple[Any, str]:
    """In an actor: ``(build(), '')``, or ``(None, 'Type: message')`` when building raised a user error (what the
    command line shows in one line). The actor then answers every batch with that error, which the driver raises
    (:func:`raise_build_error`): an actor that died in its constructor came back through hundreds of lines of Ray's
    tracebacks. Anything else is a bug and raises here, keeping its traceback."""
    try:
        return build(), ''
    except Exception as ex:  # noqa: BLE001 - sorted into user errors and bugs by the command line's own rule
        from ._errors import user_message
        message = user_message(ex)
        if message is None:
            raise
        return None, f'{type(ex).__name__}: {message}'


#: starts the error an actor answers when its model failed on a batch (after it was built)
CALL_FAILED = 'call: '


def call_error(ex: Exception) -> str:
    """``'Type: message'`` for an error of a built summariser's call that no retry can mend (a ``ValueError``: a
    prompt that cannot fit the model's context), what the command line shows in one line; ``''`` for a bug and for
    an ``OSError`` (a connection that may come back), which Ray retries and reports with its traceback."""
    from ._errors import user_message
    message = None if isinstance(ex, OSError) else user_message(ex)
    return f'{type(ex).__name__}: {message}' if message is not None else ''


def raise_build_error(error: str, what: str) -> None:
    """On the driver: :class:`ActorBuildError` for the ``error`` an actor answered (see :func:`build_in_actor`), or
    the summariser's own one-line error on a batch (:data:`CALL_FAILED`)."""
    if error.startswith(CALL_FAILED):
        raise ActorBuildError(f'{what} failed in a Ray actor: {error[len(CALL_FAILED):]}')
    raise ActorBuildError(f'a Ray actor could not build {what}: {error} (each actor builds its own where it runs: on '
                          "a cluster, install or fix it on the cluster's nodes)")


class RayAddressError(ValueError):
    """No Ray cluster answers at the address given (a wrong host or port, or a cluster that is not running)."""


def check_reachable(address: Optional[str], timeout: float = 5.0) -> None:
    """:class:`RayAddressError` naming ``address`` and the fix when nothing accepts a connection there within
    ``timeout`` seconds: ``ray.init`` retries an unreachable cluster without end (and prints a line every few
    seconds). Only ``host:port`` and ``ray://host:port`` are tried; ``'auto'``, ``'local'`` and None are Ray's."""
    import socket
    if not address or address in ('auto', 'local'):
        return
    text = address[len('ray://'):] if address.startswith('ray://') else address
    host, sep, port = text.rpartition(':')
    if not sep or not port.isdigit() or '/' in text:
        return  # not host:port: Ray's own parser says what is wrong with it
    try:
        with socket.create_connection((host.strip('[]') or '127.0.0.1', int(port)), timeout=timeout):
            pass
    except OSError as ex:
        raise RayAddressError(f'no Ray cluster answers at {address} ({type(ex).__name__}: {ex.strerror or ex}); '
                              f'start one there (ray start --head --port {port}), pass the address of a running '
                              'one, or leave the address out to start a local cluster for this job') from None


def _compute(data, options: RayOptions) -> Dict[str, Any]:
    return {'compute': data.ActorPoolStrategy(size=int(options.workers)), 'num_cpus': options.num_cpus,
            'num_gpus': options.num_gpus or None}


# ---------------------------------------------------------------------------------------------------------------------
# summaries
# ---------------------------------------------------------------------------------------------------------------------
class _SummarizeWorker:
    """One Ray actor: builds its summariser (and engine) once, then answers whole summariser batches."""

    def __init__(self, recipe, expected: Dict[str, Any]):
        self.summarizer, self.error = build_in_actor(recipe.build)
        if self.error:
            return
        config = self.summarizer.config()
        if config != expected:
            raise ValueError(f'the summariser built in a Ray actor reports config {config}, the driver expected '
                             f'{expected}; the recipe {recipe!r} does not describe it fully')

    def _tokens(self) -> Tuple[int, int]:
        stats = self.summarizer.stats() if callable(getattr(self.summarizer, 'stats', None)) else {}
        return int(stats.get('prompt_tokens', 0)), int(stats.get('completion_tokens', 0))

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        out: Dict[str, list] = {'batch': [], 'records': [], 'prompt_tokens': [], 'completion_tokens': [],
                                'pid': [], 'error': []}
        if self.error:  # the summariser could not be built: every batch answers why (raised by the driver)
            n = len(batch['batch'])
            out.update(batch=[int(b) for b in batch['batch']], records=['[]'] * n, prompt_tokens=[0] * n,
                       completion_tokens=[0] * n, pid=[os.getpid()] * n, error=[self.error] * n)
        for batch_id, payload in zip(batch['batch'], batch['payload']) if not self.error else ():
            groups = json.loads(payload)
            before = self._tokens()
            try:
                records = self.summarizer.summarize(groups)
            except Exception as ex:  # noqa: BLE001 - a user error is answered (one line), anything else raised
                error = call_error(ex)
                if not error:
                    raise  # a bug, or an error that may pass (a connection): Ray retries the batch
                for key, value in (('batch', int(batch_id)), ('records', '[]'), ('prompt_tokens', 0),
                                   ('completion_tokens', 0), ('pid', os.getpid()), ('error', CALL_FAILED + error)):
                    out[key].append(value)
                continue
            if len(records) != len(groups):
                raise RuntimeError(f'{self.summarizer!r} returned {len(records)} records for {len(groups)} groups')
            after = self._tokens()
            out['batch'].append(int(batch_id))
            out['records'].append(json.dumps([[g['group'], r] for g, r in zip(groups, records)]))
            out['prompt_tokens'].append(after[0] - before[0])
            out['completion_tokens'].append(after[1] - before[1])
            out['pid'].append(os.getpid())
            out['error'].append('')
        return {k: np.asarray(v, dtype=object if k in ('records', 'error') else np.int64) for k, v in out.items()}


def summarize_batches(summarizer, batches: Sequence[Sequence[Dict[str, Any]]], *, options: RayOptions,
                      config: Optional[Dict[str, Any]] = None,
                      verbose: bool = False) -> Iterator[Tuple[List[Tuple[int, Dict[str, Any]]], Dict[str, int]]]:
    """Summarise batches of groups in a Ray actor pool; yields ``(records, stats)`` per batch as batches finish.

    Each batch is exactly one summariser call, as in the single-process path, so a deterministic summariser gives
    the same records. ``records`` is a list of ``(group id, record)``; ``stats`` holds the batch's
    ``prompt_tokens``/``completion_tokens`` and the ``pid`` of the actor. Batches finish in any order, and after a
    worker failure a batch can arrive twice: the caller must accept each group once (the summary store does).

    Args:
        summarizer: a :class:`SummarizerSpec` (an LLM summariser, built in each actor) or a model-free summariser.
        batches: lists of ``{'group': int, 'docs': [...]}`` dicts.
        options: where to run and how many actors.
        config: the config the summariser must report (default: the recipe's).
        verbose: Ray's logs and progress bars.
    """
    recipe = as_recipe(summarizer)
    engine = recipe.engine.engine if isinstance(recipe, SummarizerSpec) else None
    check_engine(engine)  # a name that is no engine: refused before Ray starts
    expected = config if config is not None else recipe.config()
    if not batches:
        return
    with _session(options, verbose, check=lambda: check_engine(engine, installed=True)) as (_, data):
        items = [{'batch': i, 'payload': json.dumps(list(b))} for i, b in enumerate(batches)]
        # one block per batch: a failure re-runs one summariser batch, not a whole block of them
        ds = data.from_items(items, override_num_blocks=len(items))
        out = ds.map_batches(_SummarizeWorker, batch_size=1, fn_constructor_kwargs={'recipe': recipe,
                                                                                    'expected': expected},
                             **_compute(data, options))
        for row in out.iter_rows():
            if row['error']:
                raise_build_error(str(row['error']), f'the summariser {recipe!r}')
            records = [(int(g), r) for g, r in json.loads(row['records'])]
            yield records, {'batch': int(row['batch']), 'prompt_tokens': int(row['prompt_tokens']),
                            'completion_tokens': int(row['completion_tokens']), 'pid': int(row['pid'])}


# ---------------------------------------------------------------------------------------------------------------------
# encoding
# ---------------------------------------------------------------------------------------------------------------------
class _EncodeWorker:
    """One Ray actor: builds its document encoder once (``factory()``), then encodes batches of documents."""

    def __init__(self, factory: Callable[[], Any]):
        self.encoder, self.error = build_in_actor(factory)

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        import pandas as pd
        if self.error:  # the encoder could not be built: every batch answers why (raised by the driver)
            n = len(batch['pos'])
            return {'pos': np.asarray(batch['pos'], dtype=np.int64), 'docno': np.asarray(batch['docno'], dtype=object),
                    'doc_vec': np.zeros((n, 1), dtype=np.float32), 'error': np.asarray([self.error] * n, dtype=object)}
        frame = pd.DataFrame({'docno': [str(d) for d in batch['docno']], 'text': [str(t) for t in batch['text']]})
        encoded = self.encoder(frame)
        if len(encoded) != len(frame) or list(encoded['docno']) != list(frame['docno']):
            raise RuntimeError(f'{self.encoder!r} did not return one vector per document in input order')
        return {'pos': np.asarray(batch['pos'], dtype=np.int64), 'docno': np.asarray(frame['docno'], dtype=object),
                'doc_vec': np.stack([np.asarray(v, dtype=np.float32) for v in encoded['doc_vec']]),
                'error': np.asarray([''] * len(frame), dtype=object)}


def encode_docs(docs: Iterable[Dict[str, Any]], *, factory: Callable[[], Any], options: RayOptions,
                batch_size: int = 256, verbose: bool = False) -> Iterator[Dict[str, Any]]:
    """Encode documents in a Ray actor pool; yields ``{'docno', 'doc_vec'}`` in the input order.

    Args:
        docs: ``{'docno', 'text'}`` dicts (the text to encode).
        factory: a picklable zero-argument callable returning a document encoder transformer (adds ``doc_vec``),
            e.g. :func:`~pyterrier_garen.minilm_encoder`; called once in each actor.
        options: where to run and how many actors.
        batch_size: documents per actor call.
        verbose: Ray's logs and progress bars.

    Raises:
        TypeError: ``factory`` is a live transformer rather than a factory.
    """
    import pyterrier as pt
    if isinstance(factory, pt.Transformer) or not callable(factory):
        raise TypeError(f'{factory!r} is not an encoder factory: on Ray each actor builds its own encoder, so pass a '
                        'zero-argument callable (e.g. pyterrier_garen.minilm_encoder or functools.partial(...))')
    return _encoded(docs, factory, options, batch_size, verbose)


def _encoded(docs, factory, options: RayOptions, batch_size: int, verbose: bool) -> Iterator[Dict[str, Any]]:
    from ._prompts import text_or_empty  # a missing text is encoded as an empty one, not as the word 'nan'
    items = [{'pos': i, 'docno': str(d['docno']), 'text': text_or_empty(d.get('text'))} for i, d in enumerate(docs)]
    if not items:
        return
    with _session(options, verbose) as (_, data):
        data.DataContext.get_current().execution_options.preserve_order = True
        # at least one block per actor, at most 32 per actor (each block is one task, retried as a whole)
        workers = int(options.workers)
        blocks = min(len(items), max(workers, min(-(-len(items) // batch_size), 32 * workers)))
        ds = data.from_items(items, override_num_blocks=blocks)
        out = ds.map_batches(_EncodeWorker, batch_size=batch_size, fn_constructor_kwargs={'factory': factory},
                             **_compute(data, options))
        expected = 0
        for batch in out.iter_batches(batch_size=None, batch_format='numpy'):
            failed = [str(e) for e in batch['error'] if e]
            if failed:
                raise_build_error(failed[0], f'the encoder {factory!r}')
            for pos, docno, vec in zip(batch['pos'], batch['docno'], batch['doc_vec']):
                if int(pos) != expected:  # preserve_order guarantees this; a silent reorder would corrupt the index
                    raise RuntimeError(f'Ray returned document {int(pos)} where {expected} was expected')
                expected += 1
                yield {'docno': str(docno), 'doc_vec': vec}
        if expected != len(items):
            raise RuntimeError(f'Ray returned {expected} vectors for {len(items)} documents')


def encode_into(indexer, docs: Iterable[Dict[str, Any]], *, encoder: Callable[[], Any],
                ray: Union[bool, str, RayOptions] = True, batch_size: int = 256, verbose: bool = False):
    """Encode ``docs`` in a Ray actor pool and write the vectors, in document order, with ``indexer``.

    Args:
        indexer: e.g. ``FlexIndex(path).indexer()`` (anything whose ``index()`` takes ``{'docno', 'doc_vec'}``).
        docs: ``{'docno', 'text'}`` dicts.
        encoder: a zero-argument encoder factory, e.g. :func:`~pyterrier_garen.minilm_encoder`.
        ray: True, a cluster address or :class:`RayOptions`.
        batch_size: documents per actor call.
        verbose: Ray's logs and progress bars.
    """
    return indexer.index(encode_docs(docs, factory=encoder, options=ray_options(ray), batch_size=batch_size,
                                     verbose=verbose))

