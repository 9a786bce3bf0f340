"""Corpus encoding on a local Ray cluster (2 actors): the FlexIndex holds the same vectors, in the same document order,
as the single-process path. Marked ``ray``."""
import itertools
import os
from pathlib import Path

import numpy as np
import pytest

pytestmark = [pytest.mark.ray, pytest.mark.filterwarnings('ignore::DeprecationWarning:ray.data.context')]
ray = pytest.importorskip('ray', reason="Ray is not installed (pip install 'pyterrier-garen[ray]')")

from pyterrier_garen import RayOptions, encode_corpus, minilm_encoder  # noqa: E402

TESTS = Path(__file__).parent
DOCS = 120


class _Head:
    """The first DOCS documents of a collection."""

    def __init__(self, dataset):
        self.dataset = dataset

    def get_corpus_iter(self, verbose=False):
        return itertools.islice(self.dataset.get_corpus_iter(verbose=False), DOCS)


@pytest.fixture(scope='module')
def ray_cluster():
    path = os.pathsep.join([str(TESTS.parent)] + ([os.environ['PYTHONPATH']] if os.environ.get('PYTHONPATH') else []))
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=256 * 1024 ** 2, log_to_driver=False,
             runtime_env={'env_vars': {'PYTHONPATH': path, 'HF_HUB_OFFLINE': '1', 'TRANSFORMERS_OFFLINE': '1'}})
    yield
    ray.shutdown()


def test_ray_encoding_equals_single_process(ray_cluster, cranfield, minilm, tmp_path):
    head = _Head(cranfield)
    local = encode_corpus(head, tmp_path / 'local.flex', encoder=minilm, verbose=False)
    distributed = encode_corpus(head, tmp_path / 'ray.flex', verbose=False,
                                ray=RayOptions(workers=2), encoder=minilm_encoder)
    expected = [d['docno'] for d in head.get_corpus_iter()]
    a = {d['docno']: d['doc_vec'] for d in local.get_corpus_iter()}
    b = [(d['docno'], d['doc_vec']) for d in distributed.get_corpus_iter()]
    assert [docno for docno, _ in b] == expected  # document order
    assert len(a) == DOCS
    np.testing.assert_allclose(np.stack([v for _, v in b]), np.stack([a[d] for d in expected]), atol=1e-5)


def test_ray_encoding_refuses_a_live_encoder(cranfield, minilm, tmp_path):
    with pytest.raises(TypeError, match='factory'):
        encode_corpus(_Head(cranfield), tmp_path / 'x.flex', encoder=minilm, ray=RayOptions(workers=2),
                      verbose=False)
    assert not (tmp_path / 'x.flex').exists()
