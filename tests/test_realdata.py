"""GAREN and its baselines on real collections (../shared/data; skipped when absent)."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pyterrier_garen import GAREN, GroupCorpusGraph, VoteNavigator, bm25_corpus_graph
from pyterrier_garen._compare import SYSTEMS, build_systems, compare, cpu_components
from pyterrier_garen._graphs import bm25_index

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope='module')
def cran_prepared(cranfield, cran_dir):
    from pyterrier_garen import prepare
    return prepare(cranfield, cran_dir)


@pytest.fixture(scope='module')
def cran_first_stage(cran_prepared, cranfield):
    return cran_prepared.bm25_index.bm25(num_results=1000)(cranfield.get_topics().head(40))


@pytest.mark.slow
def test_scifact_bm25_groups(scifact, work_dir):
    index = bm25_index(scifact, work_dir / 'scifact' / 'bm25.pisa')
    graph = bm25_corpus_graph(scifact, work_dir / 'scifact' / 'bm25.k16.graph', index=index)
    groups = GroupCorpusGraph.from_corpus_graph(graph, work_dir / 'scifact' / 'bm25.groups')
    stats = groups.group_stats()
    assert stats['docs'] == 5183
    sizes = groups.group_sizes
    assert sizes.sum() == 5183
    assert set(np.nonzero(sizes > 20)[0].tolist()) == set(stats['unsplittable'])
    assert 200 < stats['groups'] < 1000


def test_garen_batched_equals_per_query(cran_prepared, cran_first_stage):
    reranker, navigator = cpu_components(cran_prepared)
    garen = GAREN(reranker, cran_prepared.groups, navigator)
    batched = garen(cran_first_stage)
    single = pd.concat([garen(df) for _, df in cran_first_stage.groupby('qid', sort=False)], ignore_index=True)
    pd.testing.assert_frame_equal(batched.reset_index(drop=True), single.reset_index(drop=True))


def test_garen_budget_and_output(cran_prepared, cran_first_stage):
    reranker, navigator = cpu_components(cran_prepared)
    garen = cran_prepared.groups.garen(reranker, navigator, budget=60, trace=True)
    out = garen(cran_first_stage)
    assert list(out.columns) == ['qid', 'query', 'docno', 'score', 'rank', 'iteration', 'group']
    assert out.groupby('qid').size().max() <= 60
    assert (garen.last_stats.docs_reranked <= 60).all()
    # one reranker call per iteration: 1 + ceil((60 - 20) / 10) = 5 iterations
    assert (garen.last_stats.reranker_calls == 5).all()
    for _, df in out.groupby('qid'):
        assert (np.diff(df.score.to_numpy()) < 0).all()
    assert (out.group >= 0).all()
    # expansions happen at t = 1..4 <= tau_switch, so all of them explore
    assert {step['mode'] for step in garen.last_trace if 'mode' in step} == {'explore'}


def test_vote_navigator_runs_on_real_groups(cran_prepared, cran_first_stage):
    reranker, _ = cpu_components(cran_prepared)
    out = GAREN(reranker, cran_prepared.groups, VoteNavigator())(cran_first_stage)
    assert out.groupby('qid').size().max() <= 100


@pytest.mark.slow  # every system on 60 Cranfield queries (about 15 CPU-s; the default tier's CPU budget)
def test_all_systems_in_one_experiment(cranfield, cran_prepared):
    table = compare(cranfield, workdir=cran_prepared.workdir, num_queries=60)
    assert list(table.name) == SYSTEMS
    by = table.set_index('name')
    # adaptive retrieval reaches relevant documents beyond the first-stage top 100
    for system in ('GAR', 'SlideGAR', 'RGS', 'GAREN'):
        assert by.loc[system, 'R@100'] > by.loc['BM25', 'R@100'], system
    assert 'nDCG@10 p-value' in table.columns  # paired test against GAREN


def test_build_systems_rejects_unknown(cran_prepared):
    reranker, navigator = cpu_components(cran_prepared)
    with pytest.raises(ValueError, match='unknown systems'):
        build_systems(cran_prepared, reranker, navigator, systems=['BM25', 'Nope'])


def test_compare_example_is_the_compare_command():
    """examples/compare.py is `python -m pyterrier_garen compare` (its real run: tests/test_compare_output.py)."""
    env = {'HF_HUB_OFFLINE': '1', 'PATH': '/usr/bin:/bin', 'PYTHONPATH': str(ROOT)}
    proc = subprocess.run([sys.executable, str(ROOT / 'examples' / 'compare.py'), '--help'],
                          capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.startswith('usage: python -m pyterrier_garen compare')


@pytest.mark.slow
def test_scifact_minilm_groups_and_garen(scifact, minilm, work_dir):
    """The MiniLM path on SciFact: encodes 5,183 abstracts once (2-3 minutes on two cores), then groups and GAREN."""
    from ir_measures import R, nDCG

    from pyterrier_garen import prepare
    prepared = prepare(scifact, work_dir / 'scifact')
    groups = prepared.groups
    assert groups.doc_count == 5183
    assert set(np.nonzero(groups.group_sizes > 20)[0].tolist()) == set(groups.group_stats()['unsplittable'])
    assert groups.meta['source_graph']['meta']['k'] == 16
    table = compare(scifact, workdir=prepared.workdir, systems=['BM25', 'GAR', 'GAREN'])
    by = table.set_index('name')
    assert by.loc['GAREN', 'R@100'] > by.loc['BM25', 'R@100']
    assert by.loc['GAREN', 'nDCG@10'] > 0.5
    assert str(nDCG @ 10) in table.columns
    assert str(R @ 100) in table.columns
