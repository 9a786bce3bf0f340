"""Group summaries on a local Ray cluster (2 actors) over the Cranfield groups: same records as the single-process run,
nothing lost or duplicated when a worker fails, and a rerun after an interruption sends only the missing groups.

Marked ``ray`` (a local cluster takes a few seconds to start); ``.ci/run`` runs them with ``-m ray``.
"""
import json
import os
import shutil
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray, pytest.mark.filterwarnings('ignore::DeprecationWarning:ray.data.context')]
ray = pytest.importorskip('ray', reason="Ray is not installed (pip install 'pyterrier-garen[ray]')")

from _ray_engines import ray_test_engine  # noqa: E402

from pyterrier_garen import GroupCorpusGraph, RayOptions, SummarizerSpec  # noqa: E402

TESTS = Path(__file__).parent
BATCH = 16
MAX_TOKENS = 8


@pytest.fixture(scope='module')
def ray_cluster():
    """A local two-CPU cluster for this module; its workers import this checkout and the test engines."""
    path = os.pathsep.join([str(TESTS.parent), str(TESTS)] + ([os.environ['PYTHONPATH']]
                                                                if os.environ.get('PYTHONPATH') else []))
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 1024 ** 2, log_to_driver=False,
             runtime_env={'env_vars': {'PYTHONPATH': path, 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1'}})
    yield
    ray.shutdown()


@pytest.fixture(scope='module')
def engine_spec(tmp_path_factory):
    """The engine every test summarises with (see _ray_engines.ray_test_engine)."""
    return ray_test_engine(tmp_path_factory.mktemp('ray-model'))


@pytest.fixture(scope='module')
def bare_groups(cran_bm25_graph, tmp_path_factory):
    """Leiden groups of Cranfield's BM25 graph, without summaries (copied by each test)."""
    path = tmp_path_factory.mktemp('ray-groups') / 'groups'
    groups = GroupCorpusGraph.from_corpus_graph(cran_bm25_graph, path)
    assert groups.num_groups >= 100
    return path


def _copy(bare_groups, tmp_path):
    target = tmp_path / 'groups'
    shutil.copytree(bare_groups, target)
    return GroupCorpusGraph(target)


def _probed(engine_spec, tmp_path=None, **kwargs):
    """The LLM summariser on the test engine, with the probes of _ray_engines.ProbedSummarizer."""
    log_dir = None
    if tmp_path is not None:
        log_dir = tmp_path / 'sent'
        log_dir.mkdir(exist_ok=True)
        kwargs.update(marker_dir=str(tmp_path), log_dir=str(log_dir))
    return SummarizerSpec(engine_spec, summarizer='_ray_engines:ProbedSummarizer', max_tokens=MAX_TOKENS,
                          max_doc_tokens=24, retries=0, **kwargs), log_dir


def _sent(log_dir):
    """Docnos shown to the engine, by process."""
    return {p.stem: p.read_text().split() for p in log_dir.glob('*.log')}


def _lines(groups):
    return (groups.path / 'summaries.jsonl').read_text().splitlines()


@pytest.fixture(scope='module')
def reference(bare_groups, cranfield, engine_spec, tmp_path_factory):
    """The single-process run: summaries.jsonl lines and the summaries meta."""
    groups = _copy(bare_groups, tmp_path_factory.mktemp('ray-reference'))
    groups.summarize(_probed(engine_spec)[0].build(), cranfield, batch_size=BATCH)
    return _lines(groups), groups.meta['summaries']


def test_ray_records_equal_single_process(ray_cluster, bare_groups, cranfield, engine_spec, reference, tmp_path):
    groups = _copy(bare_groups, tmp_path)
    summarizer, log_dir = _probed(engine_spec, tmp_path)
    groups.summarize(summarizer, cranfield, batch_size=BATCH, ray=RayOptions(workers=2))
    lines, meta = reference
    assert _lines(groups) == lines  # same records, raw generations and provenance, in group order
    assert all(json.loads(line)['raw'] and all(json.loads(line)['raw']) for line in lines), 'no generations'
    assert groups.meta['summaries']['summarizer'] == meta['summarizer']
    assert groups.meta['summaries']['ray']['workers'] == 2
    sent = _sent(log_dir)
    assert len(sent) == 2, 'both actors should have summarised groups'
    docs = [d for docnos in sent.values() for d in docnos]
    assert set(docs) == set(groups.docnos_list())
    assert not (groups.path / 'summaries.partial.jsonl').exists()


def test_worker_failures_lose_and_duplicate_nothing(ray_cluster, bare_groups, cranfield, engine_spec, reference,
                                                    tmp_path):
    """One batch's worker process dies, another batch's summariser raises, once each: Ray retries both."""
    groups = _copy(bare_groups, tmp_path)
    crash, error = groups.group_members(groups.num_groups // 3)[0], groups.group_members(2 * groups.num_groups // 3)[0]
    summarizer, log_dir = _probed(engine_spec, tmp_path, failures={crash: 'exit', error: 'raise'})
    groups.summarize(summarizer, cranfield, batch_size=BATCH, ray=RayOptions(workers=2))
    assert (tmp_path / f'{crash}.failed').exists(), 'the crash was not injected'
    assert (tmp_path / f'{error}.failed').exists(), 'the error was not injected'
    lines = _lines(groups)
    assert lines == reference[0]
    assert [json.loads(line)['group'] for line in lines] == list(range(groups.num_groups))
    docs = [d for docnos in _sent(log_dir).values() for d in docnos]
    assert docs.count(crash) == 2  # each failed batch was sent again, once
    assert docs.count(error) == 2
    assert len(_sent(log_dir)) >= 3, 'the crashed actor should have been replaced by a new process'


def test_rerun_after_interruption_sends_only_missing_groups(ray_cluster, bare_groups, cranfield, engine_spec,
                                                            reference, tmp_path):
    groups = _copy(bare_groups, tmp_path)
    victim_group = groups.num_groups - 3
    victim = groups.group_members(victim_group)[0]
    broken, _ = _probed(engine_spec, tmp_path, failures={victim: 'raise'}, once=False)
    with pytest.raises(Exception, match='injected failure'):
        groups.summarize(broken, cranfield, batch_size=BATCH, ray=RayOptions(workers=2, max_retries=0))
    partial = groups.path / 'summaries.partial.jsonl'
    done = {json.loads(line)['group'] for line in partial.read_text().splitlines()}
    assert victim_group not in done
    assert len(done) < groups.num_groups
    assert not (groups.path / 'summaries.jsonl').exists()

    rerun_dir = tmp_path / 'rerun'
    rerun_dir.mkdir()
    summarizer, log_dir = _probed(engine_spec, rerun_dir)
    groups.summarize(summarizer, cranfield, batch_size=BATCH, ray=RayOptions(workers=2))
    sent = {d for docnos in _sent(log_dir).values() for d in docnos}
    missing = {d for g in range(groups.num_groups) if g not in done for d in groups.group_members(g)}
    assert sent == missing
    assert _lines(groups) == reference[0]


def test_live_engine_is_refused(bare_groups, cranfield, tmp_path):
    groups = _copy(bare_groups, tmp_path)
    from _stub_engine import StubEngine

    from pyterrier_garen import LLMSummarizer
    with pytest.raises(TypeError, match='live engine'):
        groups.summarize(LLMSummarizer(StubEngine(), max_tokens=MAX_TOKENS), cranfield, ray=RayOptions(workers=2))


def test_cli_summarize_on_ray(ray_cluster, bare_groups, cranfield, tmp_path, capsys):
    from pyterrier_garen import ExtractiveSummarizer
    from pyterrier_garen.__main__ import main
    groups = _copy(bare_groups, tmp_path)
    main(['summarize', '--groups', str(groups.path), '--dataset', str(cranfield.path), '--ray', '--workers', '2'])
    meta = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert meta['ray']['workers'] == 2
    assert meta['summarizer'] == ExtractiveSummarizer().config()
    reloaded = GroupCorpusGraph(groups.path)
    local = ExtractiveSummarizer().summarize([{'group': 0, 'docs': reloaded._member_texts(cranfield, [0])[0]}])[0]
    assert reloaded.summary_record(0)['summary'] == local['summary']
