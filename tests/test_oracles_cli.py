"""Oracles for the command line's own pieces (the thirty-third mutation run): the share option's type, the Ray
options a command builds, the summariser a command builds, the usage errors of ``build-graph`` and the help that
shows every option's default. The commands themselves run in ``test_cli.py`` and ``test_robustness_cli.py``.
"""
import argparse
from types import SimpleNamespace

import pytest

from pyterrier_garen import __main__ as cli
from pyterrier_garen._errors import UsageError
from pyterrier_garen._ray import RayOptions


@pytest.mark.parametrize(('text', 'value'), [('0', 0.0), ('1', 1.0), ('0.25', 0.25), ('1e-1', 0.1), ('-0.0', 0.0)])
def test_a_share_from_0_to_1(text, value):
    assert cli._share(text) == value


@pytest.mark.parametrize('text', ['1.01', '-0.01', 'x', 'nan', 'inf', '', '50%'])
def test_a_share_outside_0_to_1_names_what_was_given(text):
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        cli._share(text)
    assert str(refused.value) == f'must be a number from 0 to 1, got {text!r}'


def _args(**kwargs):
    defaults = {'ray': None, 'workers': 2, 'gpus_per_worker': None}
    return SimpleNamespace(**{**defaults, **kwargs})


def test_ray_options_follow_the_flags():
    assert cli._ray_options(_args()) is None  # no --ray: one process
    assert cli._ray_options(_args(ray=''), gpus=1) == RayOptions(address=None, workers=2, num_gpus=1)
    assert cli._ray_options(_args(ray='auto', workers=5)) == RayOptions(address='auto', workers=5, num_gpus=0)
    assert cli._ray_options(_args(ray='ray://head:10001', gpus_per_worker=0.5), gpus=1) == RayOptions(
        address='ray://head:10001', workers=2, num_gpus=0.5)
    assert cli._ray_options(_args(ray='', gpus_per_worker=0.0), gpus=1).num_gpus == 0.0  # 0 given is not "unset"


def test_the_default_encoder_is_loaded_only_when_needed():
    assert cli._encoder('minilm') is None


def _summarizer_args(**kwargs):
    defaults = {'summarizer': 'llm', 'model': 'm', 'base_url': None, 'timeout': None, 'max_retries': None, 'ray': None,
                'max_tokens': None, 'max_doc_tokens': None, 'max_model_len': None, 'dtype': None,
                'enforce_eager': None, 'gpu_memory_utilization': None, 'tensor_parallel_size': None}
    if kwargs.get('base_url'):  # a server's options, given
        defaults.update(timeout=7.0, max_retries=4)
    return SimpleNamespace(**{**defaults, **kwargs})


def test_the_summariser_a_command_builds():
    from pyterrier_garen import ExtractiveSummarizer, LLMSummarizer, OpenAIEngine
    assert type(cli._summarizer(_summarizer_args(summarizer='extractive', model=None))) is ExtractiveSummarizer
    with pytest.raises(UsageError) as refused:
        cli._summarizer(_summarizer_args(model=None, base_url='http://h/v1'))
    assert str(refused.value) == '--summarizer llm needs --model (and --base-url for a server)'
    with pytest.raises(UsageError):
        cli._summarizer(_summarizer_args(model=''))
    summarizer = cli._summarizer(_summarizer_args(base_url='http://h:8000/v1'))
    assert type(summarizer) is LLMSummarizer
    engine = summarizer.engine
    assert type(engine) is OpenAIEngine
    assert (engine.base_url, engine.model, engine.timeout, engine.max_retries) == ('http://h:8000/v1', 'm', 7.0, 4)


def test_a_ray_summariser_is_a_recipe_each_actor_builds(monkeypatch):
    from pyterrier_garen import _ray
    made = []

    class Spec:
        def __init__(self, engine, **kwargs):
            made.append((engine, kwargs))

        def summarizer(self):
            return 'built by each actor'
    monkeypatch.setattr(_ray, 'EngineSpec', Spec)
    assert cli._summarizer(_summarizer_args(base_url='http://h/v1', ray='')) == 'built by each actor'
    assert cli._summarizer(_summarizer_args(ray='auto')) == 'built by each actor'
    assert made == [('openai', {'base_url': 'http://h/v1', 'model': 'm', 'timeout': 7.0, 'max_retries': 4}),
                    ('vllm', {'model': 'm'})]


def test_an_in_process_summariser_needs_vllm(monkeypatch):
    import pyterrier_garen
    made = []
    monkeypatch.setattr(pyterrier_garen, 'VLLMEngine', lambda model: made.append(model) or 'engine', raising=False)
    monkeypatch.setattr(pyterrier_garen, 'LLMSummarizer', lambda engine: ('summarizer of', engine), raising=False)
    assert cli._summarizer(_summarizer_args()) == ('summarizer of', 'engine')
    assert made == ['m']


@pytest.mark.parametrize(('kind', 'vectors', 'out', 'message'), [
    ('dense', None, 'g', 'build-graph --kind dense needs --vectors FOLDER (a FlexIndex, see the encode command)'),
    ('dense', '', 'g', 'build-graph --kind dense needs --vectors FOLDER (a FlexIndex, see the encode command)'),
    ('bm25', 'v', None, 'build-graph --kind bm25 needs --out FOLDER (where the graph is written)')])
def test_build_graph_says_which_folder_is_missing_before_reading_anything(kind, vectors, out, message, monkeypatch):
    monkeypatch.setattr(cli, '_dataset', lambda spec: pytest.fail('the dataset was read'))
    with pytest.raises(UsageError) as refused:
        cli._cmd_build_graph(SimpleNamespace(kind=kind, vectors=vectors, out=out, dataset='d', k=4))
    assert str(refused.value) == message


def _help(**kwargs):
    parser = argparse.ArgumentParser(prog='p', formatter_class=cli._HelpFormatter)
    parser.add_argument('name', help='a positional')
    parser.add_argument('--flag', action='store_true', help='a flag')
    parser.add_argument('--on', action='store_false', help='keep on')
    parser.add_argument('--list', nargs='+', default=[50, 100], help='budgets')
    parser.add_argument('--need', required=True, help='needed')
    parser.add_argument('--said', default=3, help='its default is said here')
    parser.add_argument('--hidden', default=argparse.SUPPRESS, help='suppressed')
    parser.add_argument('--none', help='nothing unless given')
    parser.add_argument('--bare', default=2)
    formatter = parser._get_formatter()
    return {a.dest: formatter._get_help_string(a) for a in parser._actions}


def test_help_shows_every_options_default():
    shown = _help()
    assert shown['name'] == 'a positional'
    assert shown['flag'] == 'a flag (default: off)'
    assert shown['on'] == 'keep on (default: on)'
    assert shown['list'] == 'budgets (default: 50 100)'
    assert shown['need'] == 'needed (required)'
    assert shown['said'] == 'its default is said here'
    assert shown['hidden'] == 'suppressed'
    assert shown['none'] == 'nothing unless given (default: None)'
    assert shown['bare'] == ' (default: 2)'
    assert shown['help'] == 'show this help message and exit'


def test_an_encoder_spec_that_cannot_load_is_a_usage_error_naming_the_option(monkeypatch):
    from pyterrier_garen import _encoding
    asked = []

    def refuse(spec):
        asked.append(spec)
        raise ValueError(f'cannot load {spec!r}')
    monkeypatch.setattr(_encoding, 'load_encoder', refuse)
    with pytest.raises(UsageError) as refused:
        cli._encoder('sbert:/models/e5')
    assert str(refused.value) == "--encoder: cannot load 'sbert:/models/e5'"
    assert refused.value.__cause__ is None
    assert asked == ['sbert:/models/e5']
    monkeypatch.setattr(_encoding, 'load_encoder', lambda spec: ('encoder', spec))
    assert cli._encoder('hf:/models/x') == ('encoder', 'hf:/models/x')


def test_build_graph_builds_the_graph_it_was_asked_for(monkeypatch, capsys):
    from pyterrier_garen import _graphs
    calls = []
    monkeypatch.setattr(cli, '_dataset', lambda spec: ('dataset', spec))
    monkeypatch.setattr(_graphs, 'encode_corpus', lambda dataset, out, verbose=False: calls.append(
        ('encode', dataset, out, verbose)) or 'vectors')
    monkeypatch.setattr(_graphs, 'dense_corpus_graph', lambda vectors, k: calls.append(('dense', vectors, k)) or 'G1')
    monkeypatch.setattr(_graphs, 'bm25_corpus_graph', lambda dataset, out, k: calls.append(('bm25', dataset, out, k))
                        or 'G2')
    cli._cmd_build_graph(SimpleNamespace(kind='dense', vectors='/v', out=None, dataset='d', k=7))
    cli._cmd_build_graph(SimpleNamespace(kind='bm25', vectors=None, out='/g', dataset='e', k=9))
    assert calls == [('encode', ('dataset', 'd'), '/v', True), ('dense', 'vectors', 7),
                     ('bm25', ('dataset', 'e'), '/g', 9)]
    assert capsys.readouterr().out == 'graph: G1\ngraph: G2\n'
