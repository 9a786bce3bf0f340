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

from _ray_engines import RAY_TEST_ENGINE  # noqa: E402

from pyterrier_garen import GroupCorpusGraph  # noqa: E402
from pyterrier_garen._ray import EngineSpec, RayOptions  # noqa: E402

TESTS = Path(__file__).parent
BATCH = 16


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
    """The engine every test summarises with (see _ray_engines.RAY_TEST_ENGINE)."""
    return RAY_TEST_ENGINE(tmp_path_factory.mktemp('ray-model'))


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


def _faulty(engine_spec, tmp_path, **kwargs):
    log_dir = tmp_path / 'sent'
    log_dir.mkdir(exist_ok=True)
    spec = EngineSpec('_ray_engines:FaultyEngine', model=engine_spec.model, inner=engine_spec,
                      marker=str(tmp_path / 'failed.marker'), log_dir=str(log_dir), **kwargs)
    return spec.summarizer(max_tokens=24), log_dir


def _sent(log_dir):
    """Docnos shown to the engine, by process."""
    return {p.stem: p.read_text().split() for p in log_dir.glob('*.log')}


def _lines(groups):
    return (groups.path / 'summaries.jsonl').read_text().splitlines()


@pytest.fixture(scope='module')
def reference(bare_groups, cranfield, engine_spec, tmp_path_factory):
    """The single-process run: summaries.jsonl lines and the summaries meta."""
    groups = _copy(bare_groups, tmp_path_factory.mktemp('ray-reference'))
    groups.summarize(engine_spec.summarizer(max_tokens=24).build(), cranfield, batch_size=BATCH)
    return _lines(groups), groups.meta['summaries']


def test_ray_records_equal_single_process(ray_cluster, bare_groups, cranfield, engine_spec, reference, tmp_path):
    groups = _copy(bare_groups, tmp_path)
    summarizer, log_dir = _faulty(engine_spec, tmp_path)
    groups.summarize(summarizer, cranfield, batch_size=BATCH, ray=RayOptions(workers=2))
    lines, meta = reference
    assert _lines(groups) == lines  # same records (and provenance), in group order
    assert groups.meta['summaries']['summarizer'] == meta['summarizer']
    assert groups.meta['summaries']['ray']['workers'] == 2
    sent = _sent(log_dir)
    assert len(sent) == 2, 'both actors should have summarised groups'
    docs = [d for docnos in sent.values() for d in docnos]
    assert set(docs) == set(groups.docnos_list())
    assert not (groups.path / 'summaries.partial.jsonl').exists()


@pytest.mark.parametrize('mode', ['exit', 'raise'])
def test_worker_failure_loses_and_duplicates_nothing(ray_cluster, bare_groups, cranfield, engine_spec, reference,
                                                     tmp_path, mode):
    """A batch whose worker process dies (``exit``) or whose engine raises (``raise``) once is retried by Ray."""
    groups = _copy(bare_groups, tmp_path)
    victim = groups.group_members(groups.num_groups // 2)[0]
    summarizer, log_dir = _faulty(engine_spec, tmp_path, fail_docno=victim, mode=mode)
    groups.summarize(summarizer, cranfield, batch_size=BATCH, ray=RayOptions(workers=2))
    assert (tmp_path / 'failed.marker').exists(), 'the failure was not injected'
    lines = _lines(groups)
    assert lines == reference[0]
    ids = [json.loads(line)['group'] for line in lines]
    assert ids == list(range(groups.num_groups))
    docs = [d for docnos in _sent(log_dir).values() for d in docnos]
    assert victim in docs


def test_rerun_after_interruption_sends_only_missing_groups(ray_cluster, bare_groups, cranfield, engine_spec,
                                                            reference, tmp_path):
    groups = _copy(bare_groups, tmp_path)
    victim_group = groups.num_groups - 3
    victim = groups.group_members(victim_group)[0]
    broken, _ = _faulty(engine_spec, tmp_path, fail_docno=victim, once=False)
    with pytest.raises(Exception, match='injected failure'):
        groups.summarize(broken, cranfield, batch_size=BATCH, ray=RayOptions(workers=2, max_retries=0))
    partial = groups.path / 'summaries.partial.jsonl'
    done = {json.loads(line)['group'] for line in partial.read_text().splitlines()}
    assert victim_group not in done
    assert len(done) < groups.num_groups
    assert not (groups.path / 'summaries.jsonl').exists()

    rerun_dir = tmp_path / 'rerun'
    rerun_dir.mkdir()
    summarizer, log_dir = _faulty(engine_spec, rerun_dir)
    groups.summarize(summarizer, cranfield, batch_size=BATCH, ray=RayOptions(workers=2))
    sent = {d for docnos in _sent(log_dir).values() for d in docnos}
    missing = {d for g in range(groups.num_groups) if g not in done for d in groups.group_members(g)}
    assert sent == missing
    assert _lines(groups) == reference[0]


def test_live_engine_is_refused(bare_groups, cranfield, engine_spec, tmp_path):
    groups = _copy(bare_groups, tmp_path)
    from _stub_engine import StubEngine

    from pyterrier_garen import LLMSummarizer
    with pytest.raises(TypeError, match='live engine'):
        groups.summarize(LLMSummarizer(StubEngine(), max_tokens=24), cranfield, ray=RayOptions(workers=2))


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
