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


def test_ray_encoding_resumes_after_an_interruption(ray_cluster, tmp_path, monkeypatch):
    """Interrupted (the third finished chunk fails to be stored), then rerun: only the missing chunks go to the
    actors, and the index has the bytes of an uninterrupted Ray run."""
    import pyterrier_garen._encoding as encoding
    from pyterrier_garen._encoding import ChunkStore, partial_dir
    from pyterrier_garen._graphs import _with_title
    from pyterrier_garen.synthetic import make_synthetic

    from _tiny_encoder import build_tiny_sbert
    collection = make_synthetic(tmp_path / 'synthetic', docs_per_topic=8, queries_per_topic=1)  # 128 documents
    folder = build_tiny_sbert(tmp_path / 'tiny-sbert',
                              [_with_title(d)['text'] for d in collection.get_corpus_iter(verbose=False)])
    spec, options = f'sbert:{folder}', RayOptions(workers=2)
    monkeypatch.setattr(encoding, 'CHUNK', 16)  # 8 chunks
    whole = encode_corpus(collection, tmp_path / 'whole.flex', encoder=spec, ray=options, verbose=False)

    real_write, writes = ChunkStore.write, []

    def failing_write(self, chunk, vecs):
        if len(writes) == 2:
            raise KeyboardInterrupt
        writes.append(chunk)
        real_write(self, chunk, vecs)
    monkeypatch.setattr(ChunkStore, 'write', failing_write)
    path = tmp_path / 'v.flex'
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(collection, path, encoder=spec, ray=options, verbose=False)
    monkeypatch.setattr(ChunkStore, 'write', real_write)
    assert not path.exists()
    assert sorted(int(p.stem.split('-')[1]) for p in partial_dir(path).glob('chunk-*.npy')) == sorted(writes)

    real_chunks, sent = encoding.encode_chunks, []

    def recording(jobs, **kwargs):
        sent.extend(c for c, _ in jobs)
        return real_chunks(jobs, **kwargs)
    monkeypatch.setattr(encoding, 'encode_chunks', recording)
    encode_corpus(collection, path, encoder=spec, ray=options, verbose=False)
    assert sorted(sent) == sorted(set(range(8)) - set(writes))  # the finished chunks were not encoded again
    for name in ('vecs.f4', 'docnos.npids', 'pt_meta.json'):
        assert (path / name).read_bytes() == (Path(whole.index_path) / name).read_bytes(), name
    assert not partial_dir(path).exists()
