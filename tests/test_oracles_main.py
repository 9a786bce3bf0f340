"""Oracles for the command line's own code (``pyterrier_garen/__main__.py``): every flag of every command reaches
the library call it names, with the value typed; what each command prints; the refusals, as one line and exit
status 2. The library functions are replaced by recorders, so nothing is built (about a second in all).
"""
import argparse
import json
import sys
from types import SimpleNamespace

import pandas as pd
import pytest

import pyterrier_garen as garen
from pyterrier_garen import __main__ as cli
from pyterrier_garen import _compare, _graphs, _group_graph, _prepare, _tiny_model, datasets
from pyterrier_garen._ray import EngineSpec, RayOptions


class Recorder:
    """Stands in for a library function: remembers each call's arguments, returns ``result``."""

    def __init__(self, result=None):
        self.calls, self.result = [], result

    def __call__(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self.result(*args, **kwargs) if callable(self.result) else self.result


@pytest.fixture
def datasets_by_name(monkeypatch):
    """``--dataset X`` loads ``('dataset', X)``."""
    monkeypatch.setattr(datasets, 'load_dataset', lambda spec: ('dataset', spec))


def _fails(argv, capsys, status=2):
    with pytest.raises(SystemExit) as ex:
        cli.main(argv)
    assert ex.value.code == status
    return capsys.readouterr().err


# -- encode ------------------------------------------------------------------------------------------------------------
def test_encode_in_one_process_loads_the_encoder_first(monkeypatch, capsys, datasets_by_name):
    encode = Recorder('INDEX')
    monkeypatch.setattr(_graphs, 'encode_corpus', encode)
    loaded = Recorder('ENCODER')
    import pyterrier_garen._encoding as encoding
    monkeypatch.setattr(encoding, 'load_encoder', loaded)
    cli.main(['encode', '--dataset', 'd1', '--out', '/tmp/o', '--encoder', 'sbert:/m'])
    assert loaded.calls == [(('sbert:/m',), {})]
    assert encode.calls == [((('dataset', 'd1'), '/tmp/o'), {'encoder': 'ENCODER', 'verbose': True, 'ray': None})]
    assert capsys.readouterr().out == 'vectors: INDEX\n'
    # the packaged MiniLM is loaded only when something is encoded
    cli.main(['encode', '--dataset', 'd1', '--out', '/tmp/o'])
    assert encode.calls[-1][1]['encoder'] is None
    assert len(loaded.calls) == 1


def test_encode_on_ray_passes_the_spec_and_the_pool(monkeypatch, datasets_by_name):
    encode = Recorder('INDEX')
    monkeypatch.setattr(_graphs, 'encode_corpus', encode)
    cli.main(['encode', '--dataset', 'd', '--out', 'o', '--encoder', 'sbert:/m', '--ray'])
    assert encode.calls[-1][1] == {'encoder': 'sbert:/m', 'verbose': True,
                                   'ray': RayOptions(address=None, workers=2, num_gpus=0)}
    cli.main(['encode', '--dataset', 'd', '--out', 'o', '--ray', 'ray://h:1', '--workers', '3',
              '--gpus-per-worker', '0.5'])
    assert encode.calls[-1][1]['ray'] == RayOptions(address='ray://h:1', workers=3, num_gpus=0.5)
    assert encode.calls[-1][1]['encoder'] == 'minilm'


def test_ray_sizing_without_ray_is_refused_before_any_work(monkeypatch, capsys, datasets_by_name, groups_class):
    encode = Recorder('INDEX')
    monkeypatch.setattr(_graphs, 'encode_corpus', encode)
    err = _fails(['encode', '--dataset', 'd', '--out', 'o', '--workers', '4'], capsys)
    assert err == ('error: --workers sizes a Ray actor pool, but without --ray the encode command runs in this one '
                   'process: add --ray (a local cluster, or $RAY_ADDRESS) or --ray ADDRESS, or leave it out\n')
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--workers', '1', '--gpus-per-worker', '0'], capsys)
    assert err.startswith('error: --workers and --gpus-per-worker size a Ray actor pool, but without --ray the '
                          'summarize command runs')
    assert encode.calls == []
    assert groups_class.made == []  # refused before the groups were opened
    err = _fails(['encode', '--dataset', 'd', '--out', 'o', '--ray', '--workers', '0'], capsys)
    assert err == ("error: argument --workers: must be a whole number of at least 1, got '0' "
                   '(see python -m pyterrier_garen encode --help)\n')
    cli.main(['encode', '--dataset', 'd', '--out', 'o', '--ray', '--workers', '1'])
    assert encode.calls[-1][1]['ray'] == RayOptions(address=None, workers=1, num_gpus=0)


def test_a_bad_encoder_is_named_with_its_flag(monkeypatch, capsys, datasets_by_name):
    monkeypatch.setattr(_graphs, 'encode_corpus', Recorder())
    err = _fails(['encode', '--dataset', 'd', '--out', 'o', '--encoder', 'nonsense'], capsys)
    assert err.startswith('error: --encoder: unknown encoder \'nonsense\'')
    assert err.count('\n') == 1


# -- build-graph -------------------------------------------------------------------------------------------------------
def test_build_graph_dense_and_bm25(monkeypatch, capsys, datasets_by_name):
    encode, dense, bm25 = Recorder('VECTORS'), Recorder('DENSE'), Recorder('BM25')
    monkeypatch.setattr(_graphs, 'encode_corpus', encode)
    monkeypatch.setattr(_graphs, 'dense_corpus_graph', dense)
    monkeypatch.setattr(_graphs, 'bm25_corpus_graph', bm25)
    cli.main(['build-graph', '--dataset', 'd', '--vectors', 'v', '--k', '7'])
    assert encode.calls == [((('dataset', 'd'), 'v'), {'verbose': True})]
    assert dense.calls == [(('VECTORS',), {'k': 7})]
    assert capsys.readouterr().out == 'graph: DENSE\n'
    cli.main(['build-graph', '--dataset', 'd', '--kind', 'bm25', '--out', 'g'])
    assert bm25.calls == [((('dataset', 'd'), 'g'), {'k': 16})]
    assert capsys.readouterr().out == 'graph: BM25\n'


@pytest.mark.parametrize(('argv', 'message'), [
    (['--kind', 'dense'], 'error: build-graph --kind dense needs --vectors FOLDER'),
    (['--kind', 'bm25', '--vectors', 'v'], 'error: build-graph --kind bm25 needs --out FOLDER'),
    # an option the kind does not use was ignored without a word (session 40)
    (['--vectors', 'v', '--out', 'g'], 'error: build-graph --kind dense writes the graph inside --vectors'),
    (['--kind', 'bm25', '--vectors', 'v', '--out', 'g'], 'error: build-graph --kind bm25 reads no vectors')])
def test_build_graph_refuses_a_missing_folder_before_loading_anything(monkeypatch, capsys, argv, message):
    monkeypatch.setattr(datasets, 'load_dataset', Recorder(AssertionError))
    err = _fails(['build-graph', '--dataset', 'd', *argv], capsys)
    assert err.startswith(message)


# -- build-groups ------------------------------------------------------------------------------------------------------
def test_build_groups_passes_every_leiden_setting(monkeypatch, capsys):
    monkeypatch.setattr(_graphs, 'load_corpus_graph', lambda path: ('graph', path))
    built = Recorder(SimpleNamespace(group_stats=lambda: {'groups': 3}))
    monkeypatch.setattr(_group_graph.GroupCorpusGraph, 'from_corpus_graph', built)
    cli.main(['build-groups', '--graph', 'gr', '--out', 'o', '--max-group-size', '9', '--resolution', '1.5',
              '--randomness', '0.02', '--seed', '5', '--backend', 'leidenalg', '--overwrite'])
    assert built.calls == [((('graph', 'gr'), 'o'), {'max_group_size': 9, 'resolution': 1.5, 'randomness': 0.02,
                                                     'seed': 5, 'backend': 'leidenalg', 'overwrite': True,
                                                     'verbose': True})]
    assert json.loads(capsys.readouterr().out) == {'groups': 3}
    cli.main(['build-groups', '--graph', 'gr', '--out', 'o'])
    assert built.calls[-1][1] == {'max_group_size': 20, 'resolution': 1.0, 'randomness': 0.001, 'seed': 42,
                                  'backend': 'igraph', 'overwrite': False, 'verbose': True}


# -- summarize ---------------------------------------------------------------------------------------------------------
class _Groups:
    """A GroupCorpusGraph stand-in: records ``summarize`` and has summaries metadata."""

    made = []

    def __init__(self, path):
        self.path, self.calls = path, []
        self.meta = {'summaries': {'summarizer': 'x', 'path': str(path)}}
        _Groups.made.append(self)

    def summarize(self, *args, **kwargs):
        self.calls.append((args, kwargs))
        return self


@pytest.fixture
def groups_class(monkeypatch):
    _Groups.made = []
    monkeypatch.setattr(_group_graph, 'GroupCorpusGraph', _Groups)
    return _Groups


def test_summarize_extractive(capsys, datasets_by_name, groups_class):
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--batch-size', '8', '--overwrite',
              '--max-failed-share', '0.25'])
    (groups,) = groups_class.made
    (args, kwargs), = groups.calls
    assert type(args[0]).__name__ == 'ExtractiveSummarizer'
    assert args[1] == ('dataset', 'd')
    assert kwargs == {'batch_size': 8, 'overwrite': True, 'verbose': True, 'ray': None, 'max_failed_share': 0.25}
    assert json.loads(capsys.readouterr().out) == {'summarizer': 'x', 'path': 'g'}
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd'])
    assert groups_class.made[-1].calls[0][1] == {'batch_size': 32, 'overwrite': False, 'verbose': True,
                                                 'ray': None, 'max_failed_share': 0.1}


def test_summarize_with_an_llm_in_one_process(monkeypatch, datasets_by_name, groups_class):
    openai, vllm = Recorder('OPENAI'), Recorder('VLLM')
    summarizer = Recorder(lambda engine: ('summarizer', engine))
    monkeypatch.setattr(garen, 'OpenAIEngine', openai)
    monkeypatch.setattr(garen, 'VLLMEngine', vllm)
    monkeypatch.setattr(garen, 'LLMSummarizer', summarizer)
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm1',
              '--base-url', 'http://h/v1', '--timeout', '5', '--max-retries', '1'])
    assert openai.calls == [(('http://h/v1', 'm1'), {'timeout': 5.0, 'max_retries': 1})]
    assert groups_class.made[-1].calls[0][0][0] == ('summarizer', 'OPENAI')
    assert groups_class.made[-1].calls[0][1]['ray'] is None
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm2'])
    assert vllm.calls == [(('m2',), {})]
    assert groups_class.made[-1].calls[0][0][0] == ('summarizer', 'VLLM')


def test_summarize_sets_the_answer_length_and_the_in_process_context(monkeypatch, capsys, datasets_by_name,
                                                                      groups_class):
    """The fixes a too-small context calls for (lower max_tokens=, a smaller max_model_len=) had no flag: a model of a
    2,048-token context could not summarise from the command line, nor one whose context does not fit the memory."""
    openai, vllm = Recorder('OPENAI'), Recorder('VLLM')
    summarizer = Recorder(lambda engine, **options: ('summarizer', engine, options))
    monkeypatch.setattr(garen, 'OpenAIEngine', openai)
    monkeypatch.setattr(garen, 'VLLMEngine', vllm)
    monkeypatch.setattr(garen, 'LLMSummarizer', summarizer)
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
              '--max-model-len', '8192', '--max-tokens', '256', '--max-doc-tokens', '64'])
    assert vllm.calls == [(('m',), {'max_model_len': 8192})]
    assert groups_class.made[-1].calls[0][0][0] == ('summarizer', 'VLLM', {'max_tokens': 256, 'max_doc_tokens': 64})
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
              '--base-url', 'http://h/v1', '--max-tokens', '300'])
    assert groups_class.made[-1].calls[0][0][0] == ('summarizer', 'OPENAI', {'max_tokens': 300})
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm', '--ray',
              '--max-model-len', '4096', '--max-tokens', '128'])
    (args, _), = groups_class.made[-1].calls
    assert args[0].engine == EngineSpec('vllm', model='m', max_model_len=4096)
    assert args[0].kwargs == {'max_tokens': 128}
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
                  '--base-url', 'http://h/v1', '--max-model-len', '4096'], capsys)
    assert err == ("error: --max-model-len sets up the in-process vLLM engine; a server's is its own "
                   '(vllm serve --max-model-len): leave it out with --base-url\n')
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--max-tokens', '0'], capsys)
    assert err == ("error: argument --max-tokens: must be a number of tokens >= 1, got '0' "
                   '(see python -m pyterrier_garen summarize --help)\n')


def test_summarize_passes_the_in_process_engine_s_options_to_vllm(monkeypatch, capsys, datasets_by_name,
                                                                  groups_class):
    """A GPU without bfloat16 (a T4, a V100) needs dtype float16, which the command line could not set; nor could it
    turn off CUDA graphs, share a GPU, or split a model over GPUs."""
    vllm = Recorder('VLLM')
    monkeypatch.setattr(garen, 'VLLMEngine', vllm)
    monkeypatch.setattr(garen, 'LLMSummarizer', Recorder(lambda engine, **options: ('summarizer', engine)))
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm', '--dtype',
              'float16', '--enforce-eager', '--gpu-memory-utilization', '0.45', '--tensor-parallel-size', '2'])
    assert vllm.calls == [(('m',), {'dtype': 'float16', 'enforce_eager': True, 'gpu_memory_utilization': 0.45,
                                    'tensor_parallel_size': 2})]
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm', '--ray',
              '--dtype', 'bfloat16'])
    (args, _), = groups_class.made[-1].calls
    assert args[0].engine == EngineSpec('vllm', model='m', dtype='bfloat16')
    for flag in (['--dtype', 'float16'], ['--enforce-eager'], ['--gpu-memory-utilization', '0.5'],
                 ['--tensor-parallel-size', '2']):
        err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
                      '--base-url', 'http://h/v1', *flag], capsys)
        assert err == (f"error: {flag[0]} sets up the in-process vLLM engine; a server's is its own (vllm serve "
                       f'{flag[0]}): leave it out with --base-url\n')
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
                  '--tensor-parallel-size', '0'], capsys)
    assert err.startswith("error: argument --tensor-parallel-size: must be a number of GPUs >= 1, got '0'")
    for share in ('0', '1.5', 'half'):
        err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
                      '--gpu-memory-utilization', share], capsys)
        assert err.startswith('error: argument --gpu-memory-utilization: must be a number ')
        assert repr(share) in err
    assert len(vllm.calls) == 1  # nothing ran for a refused command
    assert len(groups_class.made) == 2


@pytest.mark.parametrize(('flags', 'named', 'leave'), [
    (['--model', 'm'], '--model', 'it'), (['--max-model-len', '512'], '--max-model-len', 'it'),
    (['--timeout', '5'], '--timeout', 'it'), (['--enforce-eager'], '--enforce-eager', 'it'),
    (['--max-tokens', '10', '--base-url', 'http://h/v1'], '--base-url', '--base-url --max-tokens')])
def test_an_llm_option_without_the_llm_summariser_is_refused(capsys, datasets_by_name, groups_class, flags, named,
                                                             leave):
    """The extractive summariser (the default) runs no model: these options did nothing, without a word."""
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', *flags], capsys)
    assert err == (f'error: {named} is an option of the LLM summariser, and the extractive summariser (the default) '
                   f'runs no model: add --summarizer llm --model MODEL, or leave {leave} out\n')
    assert groups_class.made == []


def test_server_options_without_a_server_are_refused(capsys, datasets_by_name, groups_class):
    for flag in (['--timeout', '5'], ['--max-retries', '1']):
        err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm', *flag],
                     capsys)
        assert err == (f'error: {flag[0]} applies to requests to a server (--base-url), and the in-process vLLM '
                       'engine sends none: add --base-url URL, or leave it out\n')
    assert groups_class.made == []


def test_summarize_with_an_llm_on_ray_sends_recipes(datasets_by_name, groups_class):
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm',
              '--base-url', 'http://h/v1', '--ray', '--workers', '4'])
    (args, kwargs), = groups_class.made[-1].calls
    assert args[0].engine == EngineSpec('openai', base_url='http://h/v1', model='m', timeout=60.0, max_retries=3)
    # a client of a server needs no GPU; in-process vLLM one per actor unless told otherwise
    assert kwargs['ray'] == RayOptions(address=None, workers=4, num_gpus=0)
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm', '--model', 'm', '--ray'])
    (args, kwargs), = groups_class.made[-1].calls
    assert args[0].engine == EngineSpec('vllm', model='m')
    assert kwargs['ray'] == RayOptions(address=None, workers=2, num_gpus=1)
    cli.main(['summarize', '--groups', 'g', '--dataset', 'd', '--ray', '--gpus-per-worker', '2'])
    assert groups_class.made[-1].calls[0][1]['ray'] == RayOptions(address=None, workers=2, num_gpus=2)


def test_summarize_llm_without_a_model_is_refused(capsys, datasets_by_name, groups_class):
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', '--summarizer', 'llm'], capsys)
    assert err == 'error: --summarizer llm needs --model (and --base-url for a server)\n'


@pytest.mark.parametrize('text', ['0', '1', '0.5', '1e-3'])
def test_a_share_from_zero_to_one(text):
    assert cli._share(text) == float(text)


@pytest.mark.parametrize('text', ['-0.1', '1.01', 'nan', 'half', 'inf'])
def test_anything_else_is_not_a_share(text):
    with pytest.raises(argparse.ArgumentTypeError, match=f"^must be a number from 0 to 1, got '{text}'$"):
        cli._share(text)


# -- prepare, show, tiny-model -----------------------------------------------------------------------------------------
def test_prepare_passes_every_setting(monkeypatch, capsys, datasets_by_name):
    stats = {'groups': 4}
    done = Recorder(SimpleNamespace(groups=SimpleNamespace(path='/w/g', group_stats=lambda: stats)))
    monkeypatch.setattr(_prepare, 'prepare', done)
    cli.main(['prepare', '--dataset', 'd', '--workdir', 'w', '--graph', 'bm25', '--k', '8', '--max-group-size', '6',
              '--seed', '3'])
    assert done.calls == [((('dataset', 'd'), 'w'), {'graph': 'bm25', 'k': 8, 'max_group_size': 6, 'seed': 3,
                                                     'encoder': None, 'verbose': True})]
    assert capsys.readouterr().out == 'groups: /w/g\n{"groups": 4}\n'
    cli.main(['prepare', '--dataset', 'd'])  # k: prepare's default (16, fewer on a small collection)
    assert done.calls[-1] == ((('dataset', 'd'), None), {'graph': 'dense', 'k': None, 'max_group_size': 20,
                                                         'seed': 42, 'encoder': None, 'verbose': True})
    import pyterrier_garen._encoding as encoding
    monkeypatch.setattr(encoding, 'load_encoder', lambda spec: ('loaded', spec))
    cli.main(['prepare', '--dataset', 'd', '--encoder', 'hf:/m'])
    assert done.calls[-1][1]['encoder'] == ('loaded', 'hf:/m')


class _Shown:
    """A built GroupCorpusGraph of five groups; group g holds g+1 documents, group 3 has no summary."""

    num_groups = 5

    opened = []

    def __init__(self, path):
        self.path = path
        _Shown.opened.append(path)

    def validate(self):
        return {'ok': True}

    def group_stats(self):
        return {'groups': 5}

    def group_member_ids(self, g):
        return list(range(g + 1))

    def group_members(self, g):
        return [f'd{g}-{i}' for i in range(g + 12)]

    def summary(self, g):
        return '' if g == 3 else f'summary {g}'


def test_show_prints_stats_then_the_first_groups_or_those_asked_for(monkeypatch, capsys):
    monkeypatch.setattr(_group_graph, 'GroupCorpusGraph', _Shown)
    _Shown.opened = []
    cli.main(['show', '--groups', 'g', '--limit', '2'])
    assert _Shown.opened == ['g']
    members = [f'd0-{i}' for i in range(10)]
    assert capsys.readouterr().out.splitlines() == [
        '{"groups": 5}', f'--- group 0 (1 docs): {members}', 'summary 0',
        f"--- group 1 (2 docs): {[f'd1-{i}' for i in range(10)]}", 'summary 1']
    cli.main(['show', '--groups', 'g', '--group', '3', '--group', '4', '--validate'])
    out = capsys.readouterr().out.splitlines()
    assert out[:2] == ['{"validate": {"ok": true}}', '{"groups": 5}']
    assert out[2:] == [f"--- group 3 (4 docs): {[f'd3-{i}' for i in range(10)]}", '(no summary)',
                       f"--- group 4 (5 docs): {[f'd4-{i}' for i in range(10)]}", 'summary 4']
    cli.main(['show', '--groups', 'g', '--limit', '9'])  # no more groups than there are
    assert sum(line.startswith('--- group') for line in capsys.readouterr().out.splitlines()) == 5
    cli.main(['show', '--groups', 'g'])
    assert sum(line.startswith('--- group') for line in capsys.readouterr().out.splitlines()) == 5


@pytest.mark.parametrize('group', ['5', '-1'])
def test_show_names_a_group_that_does_not_exist(monkeypatch, capsys, group):
    monkeypatch.setattr(_group_graph, 'GroupCorpusGraph', _Shown)
    err = _fails(['show', '--groups', 'g', '--group', '0', '--group', group], capsys)
    assert err.endswith(f'error: --group {group} does not exist in g; group ids run from 0 to 4\n')


def test_tiny_model_with_and_without_a_collection(monkeypatch, capsys):
    built = Recorder('/m')
    monkeypatch.setattr(_tiny_model, 'build_tiny_model', built)
    docs = [{'docno': 'a', 'title': 'T', 'text': 'one'}, {'docno': 'b', 'text': 'two'},
            {'docno': 'c', 'title': 'only', 'text': None}]
    loaded = []

    def corpus(verbose):
        assert verbose is False  # no progress bar over the documents
        return iter(docs)

    monkeypatch.setattr(datasets, 'load_dataset',
                        lambda spec: loaded.append(spec) or SimpleNamespace(get_corpus_iter=corpus))
    cli.main(['tiny-model', '--out', 'o', '--dataset', 'd', '--scripted', '--script', '[1] > [2]', '--seed', '4'])
    assert built.calls == [(('o',), {'scripted': True, 'script': '[1] > [2]', 'texts': ['T one', 'two', 'only'],
                                     'seed': 4})]
    assert loaded == ['d']
    assert capsys.readouterr().out == 'tiny model: /m\n'
    cli.main(['tiny-model', '--out', 'o'])
    assert built.calls[-1] == (('o',), {'scripted': False, 'script': '[2] > [1]', 'texts': None, 'seed': 0})


# -- compare -----------------------------------------------------------------------------------------------------------
def _table():
    table = pd.DataFrame({'name': ['BM25', 'GAREN'], 'nDCG@10': [0.5, 0.625], 'R@100': [0.75, 0.875],
                          'nDCG@10 p-value': [0.04, None]})
    table.attrs['run'] = {}
    return table


def _formatted(table):
    """Stands in for format_comparison: 'THE TABLE' for the frame compare returned."""
    return 'THE TABLE' if table.name.tolist() == ['BM25', 'GAREN'] else 'ANOTHER'


@pytest.fixture
def fake_compare(monkeypatch):
    run = Recorder(lambda *a, **k: _table())
    monkeypatch.setattr(_compare, 'compare', run)
    monkeypatch.setattr(_compare, 'format_comparison', _formatted)
    return run


def test_compare_passes_every_option(fake_compare, capsys, tmp_path):
    cli.main(['compare', '--dataset', 'd', '--budget', '50', '--workdir', 'w', '--queries', '7', '--navigator', 'vote',
              '--systems', 'GAR', 'GAREN', '--binary', '--fusion', '0.2', '--final-order', 'paper', '--quiet',
              '--reranker', 'factory:m:f', '--tail-fusion', '0.5', '--fusion-head', '5', '--observed-fusion', '2',
              '--head-rerank', '20'])
    assert fake_compare.calls == [(('d',), {
        'budget': 50, 'workdir': 'w', 'num_queries': 7, 'navigator': 'vote', 'systems': ['GAR', 'GAREN'],
        'binary': True, 'fusion': 0.2, 'final_order': 'paper', 'verbose': False, 'reranker': 'factory:m:f',
        'tail_fusion': 0.5, 'fusion_head': 5, 'observed_fusion': 2.0, 'head_rerank': 20})]
    assert capsys.readouterr().out == 'THE TABLE\n'
    cli.main(['compare', '--graded'])
    args, kwargs = fake_compare.calls[-1]
    assert args == (None,)
    assert kwargs == {'budget': 100, 'workdir': None, 'num_queries': None, 'navigator': 'centroid',
                      'systems': list(_compare.SYSTEMS), 'binary': False, 'fusion': 0.0, 'final_order': None,
                      'verbose': True, 'reranker': 'minilm', 'tail_fusion': None, 'fusion_head': 10,
                      'observed_fusion': None, 'head_rerank': 0}
    assert capsys.readouterr().out == 'THE TABLE\nNOTE: synthetic data; run with --dataset for real numbers.\n'
    cli.main(['compare'])
    assert fake_compare.calls[-1][1]['binary'] is None


def test_compare_writes_the_csv_and_the_record(fake_compare, capsys, tmp_path, monkeypatch):
    saved = Recorder()
    monkeypatch.setattr(_compare, 'save_comparison', saved)
    out, record = tmp_path / 't.csv', tmp_path / 't.json'
    argv = ['compare', '--dataset', 'my data', '--out', str(out), '--json', str(record), '--quiet']
    cli.main(argv)
    assert pd.read_csv(out).to_dict('list') == {'name': ['BM25', 'GAREN'], 'nDCG@10': [0.5, 0.625],
                                                'R@100': [0.75, 0.875]}
    (args, kwargs), = saved.calls
    pd.testing.assert_frame_equal(args[0], _table())
    assert args[1] == str(record)
    assert kwargs == {'command': f"python -m pyterrier_garen compare --dataset 'my data' --out {out} --json "
                                 f"{record} --quiet"}
    assert capsys.readouterr().out == f'THE TABLE\nwrote {out}\nwrote {record}\n'


def test_compare_strict_turns_a_warning_into_an_error(monkeypatch, capsys):
    import warnings

    def warns(*args, **kwargs):
        warnings.warn('compare: budget=5 is below the window', UserWarning, stacklevel=2)
        return _table()

    monkeypatch.setattr(_compare, 'compare', warns)
    monkeypatch.setattr(_compare, 'format_comparison', _formatted)
    with pytest.warns(UserWarning, match='below the window'):
        cli.main(['compare', '--quiet'])
    assert capsys.readouterr().out.startswith('THE TABLE\n')
    err = _fails(['compare', '--quiet', '--strict'], capsys)
    assert err == 'error: compare: budget=5 is below the window (--strict turns warnings into errors)\n'


def test_strict_leaves_other_kinds_of_warning_alone(monkeypatch, capsys):
    import warnings

    def deprecated(*args, **kwargs):  # a library's deprecation is not the user's to fix
        warnings.warn('an old keyword', DeprecationWarning, stacklevel=2)
        return _table()

    monkeypatch.setattr(_compare, 'compare', deprecated)
    monkeypatch.setattr(_compare, 'format_comparison', _formatted)
    with pytest.warns(DeprecationWarning, match='an old keyword'):
        cli.main(['compare', '--quiet', '--strict'])
    assert capsys.readouterr().out == 'THE TABLE\nNOTE: synthetic data; run with --dataset for real numbers.\n'


# -- the parser's help and main ---------------------------------------------------------------------------------------
def _help_of(parser, dest):
    action = next(a for a in parser._actions if a.dest == dest)
    return cli._HelpFormatter('prog')._get_help_string(action)


def test_help_shows_each_default_in_its_own_form():
    parser = argparse.ArgumentParser()
    parser.add_argument('--flag', action='store_true', help='a switch')
    parser.add_argument('--on', action='store_false', help='keep it')
    parser.add_argument('--many', nargs='+', default=['a', 'b'], help='a list')
    parser.add_argument('--tuple', nargs='+', default=(1, 2), help='a tuple')
    parser.add_argument('--need', required=True, help='needed')
    parser.add_argument('--said', default=3, help='three (default: three)')
    parser.add_argument('--hidden', default=argparse.SUPPRESS, help='not shown')
    parser.add_argument('--none', help='nothing')
    parser.add_argument('--bare', default=4)
    parser.add_argument('place', help='a positional')
    assert _help_of(parser, 'flag') == 'a switch (default: off)'
    assert _help_of(parser, 'on') == 'keep it (default: on)'
    assert _help_of(parser, 'many') == 'a list (default: a b)'
    assert _help_of(parser, 'tuple') == 'a tuple (default: 1 2)'
    assert _help_of(parser, 'need') == 'needed (required)'
    assert _help_of(parser, 'said') == 'three (default: three)'
    assert _help_of(parser, 'hidden') == 'not shown'
    assert _help_of(parser, 'none') == 'nothing (default: None)'
    assert _help_of(parser, 'bare') == ' (default: 4)'
    assert _help_of(parser, 'place') == 'a positional'


def test_main_reads_the_command_line_when_given_no_arguments(monkeypatch, fake_compare, capsys):
    monkeypatch.setattr(sys, 'argv', ['pyterrier-garen', 'compare', '--dataset', 'from-argv', '--quiet'])
    cli.main()
    assert fake_compare.calls[-1][0] == ('from-argv',)
    err = _fails(['no-such-command'], capsys)
    assert err.startswith('error: argument COMMAND: invalid choice')


@pytest.mark.parametrize(('argv', 'said'), [
    (['show', '--groups', 'g', '--limit', '-1'], "argument --limit: must be a number of groups >= 0, got '-1' "
                                                 "(see python -m pyterrier_garen show --help)"),
    (['show', '--groups', 'g', '--limit', '2.5'], "argument --limit: must be a number of groups >= 0, got '2.5' "
                                                  "(see python -m pyterrier_garen show --help)"),
    (['compare', '--queries', '0'], "argument --queries: must be a number of queries >= 1, got '0' "
                                    "(see python -m pyterrier_garen compare --help)"),
    (['compare', '--queries', '-3'], "argument --queries: must be a number of queries >= 1, got '-3' "
                                     "(see python -m pyterrier_garen compare --help)"),
])
def test_a_count_out_of_range_is_refused_by_its_flag_before_anything_opens(argv, said, capsys):
    # `show --limit -1` used to show no group at all; `compare --queries 0` named the API's num_queries
    assert _fails(argv, capsys) == f'error: {said}\n'


# -- session 40: an outside audit of the command line ----------------------------------------------------------------
def test_compare_checks_its_outputs_before_the_run(fake_compare, capsys, tmp_path):
    folder = tmp_path / 'a folder'
    folder.mkdir()
    same = tmp_path / 'same.csv'
    for argv, message in (
            (['--out', str(folder)], f'--out {folder} is a folder'),
            (['--out', str(same), '--json', str(same)], f'--out and --json both name {same}'),
    ):
        err = _fails(['compare', '--quiet', *argv], capsys)
        assert message in err
    assert fake_compare.calls == []  # refused before the experiment, not after it
    cli.main(['compare', '--quiet', '--out', str(tmp_path / 'new' / 'dir' / 't.csv')])  # missing folders are made
    assert (tmp_path / 'new' / 'dir' / 't.csv').is_file()


def test_compare_out_replaces_a_link_and_never_writes_through_it(fake_compare, capsys, tmp_path):
    mine = tmp_path / 'mine.txt'
    mine.write_text('the user\'s own file\n')
    link = tmp_path / 'link.csv'
    link.symlink_to(mine)
    cli.main(['compare', '--quiet', '--out', str(link)])
    assert mine.read_text() == 'the user\'s own file\n'
    assert not link.is_symlink()
    assert pd.read_csv(link).name.tolist() == ['BM25', 'GAREN']


@pytest.mark.parametrize('argv', [
    ['compare', '--workdir', ''], ['compare', '--dataset', ''], ['compare', '--out', ''],
    ['prepare', '--dataset', 'd', '--workdir', ''], ['build-groups', '--graph', '', '--out', 'o'],
])
def test_an_empty_path_is_refused_not_read_as_the_current_folder(argv, fake_compare, capsys):
    empty = argv[argv.index('') - 1]
    err = _fails(argv, capsys)
    assert err.startswith(f'error: {empty} is empty (an unset shell variable?)')
    assert fake_compare.calls == []


@pytest.mark.parametrize('argv', [
    ['--api-key', 'sk-SECRET123'], ['--api-key=sk-SECRET123'], ['--hf-token', 'sk-SECRET123', '--x'],
])
def test_an_unknown_credential_option_is_not_echoed(argv, capsys):
    err = _fails(['summarize', '--groups', 'g', '--dataset', 'd', *argv], capsys)
    assert 'SECRET123' not in err
    assert 'unrecognized arguments: ' in err
    assert '<hidden>' in err
    assert '$OPENAI_API_KEY' in err


def test_an_unknown_option_without_a_credential_is_echoed_as_typed(capsys):
    err = _fails(['compare', '--budgt', '5'], capsys)
    # named by the command's own parser: its --help lists the option meant (session 40; the top one's did not)
    assert err == 'error: unrecognized arguments: --budgt 5 (see python -m pyterrier_garen compare --help)\n'
    assert 'OPENAI' not in err


def test_prepare_checks_the_group_size_before_building_anything(tmp_path, capsys, datasets_by_name):
    # the collection stands in (a tuple): anything built from it would fail, so only a check before it passes
    err = _fails(['prepare', '--dataset', 'd', '--workdir', str(tmp_path / 'w'), '--max-group-size', '1'], capsys)
    assert 'max_group_size must be an integer >= 2' in err
    assert not (tmp_path / 'w').exists()


def test_hiding_the_values_of_credential_options():
    from pyterrier_garen._redact import hide_option_values
    words = ['plain', '--api-key', 'sk-1', 'after', '--hf-token=abc', '--password', '--verbose', '--max-tokens', '9']
    # the value after a credential option, unless it is an option itself; --max-tokens is no credential
    assert hide_option_values(words) == ['plain', '--api-key', '<hidden>', 'after', '--hf-token=<hidden>',
                                         '--password', '--verbose', '--max-tokens', '9']


def test_the_whole_message_for_an_unknown_credential_option(capsys):
    err = _fails(['compare', '--api-key', 'sk-SECRET123'], capsys)
    assert err == ('error: unrecognized arguments: --api-key <hidden>; a key is read from the environment '
                   '($OPENAI_API_KEY), never from an option (see python -m pyterrier_garen compare --help)\n')


def test_compare_refuses_an_output_folder_it_cannot_write_before_the_run(fake_compare, capsys, tmp_path, monkeypatch):
    import os
    locked = tmp_path / 'locked'
    locked.mkdir()
    real = os.access
    # as on a read-only mount (root passes permission bits, so the folder's mode alone would not show it)
    monkeypatch.setattr(os, 'access', lambda path, mode, **kw: False if os.path.realpath(path) == str(locked)
                        else real(path, mode, **kw))
    err = _fails(['compare', '--quiet', '--out', str(locked / 't.csv')], capsys)
    assert err.startswith(f'error: --out {locked / "t.csv"}: its folder {locked} cannot be written to; choose')
    assert fake_compare.calls == []
