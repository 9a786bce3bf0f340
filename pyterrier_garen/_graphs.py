"""Corpus graphs in pyterrier-adaptive's ``np_topk`` format: dense (MiniLM vectors) and BM25 (PISA).

Heavy dependencies (torch, sentence-transformers, pyterrier-dr, PISA) are imported inside the functions.
"""
from __future__ import annotations

import contextlib
import json
import re
import os
import sys
import warnings
from pathlib import Path
from typing import Iterator, List, Optional, Sequence, Union

import numpy as np
import pyterrier as pt

from ._encoding import minilm_encoder

__all__ = ['lookup_ids', 'minilm_encoder', 'encode_corpus', 'encoding_record', 'dense_corpus_graph', 'bm25_index',
           'bm25_corpus_graph', 'write_docnos', 'check_docnos', 'repair_docnos', 'load_corpus_graph']


@contextlib.contextmanager
def _tqdm_defaults(**defaults):
    """Within the block, ``pt.tqdm`` bars that third-party code opens get these defaults (e.g. ``desc``)."""
    original = pt.tqdm

    def tqdm(*args, **kwargs):
        return original(*args, **{**defaults, **kwargs})
    pt.tqdm = tqdm
    try:
        yield
    finally:
        pt.tqdm = original


def _with_title(doc: dict) -> dict:
    """``title + ' ' + text`` as the document text (what indexing every text field of a document gives)."""
    title = (doc.get('title') or '').strip()
    text = doc.get('text') or ''
    return {'docno': doc['docno'], 'text': f'{title} {text}' if title else text}


def encode_corpus(dataset, path: Union[str, Path], *, encoder=None, verbose: bool = True, ray=None,
                  batch_size: int = 32, precision: str = 'auto'):
    """Encode a corpus once and store its vectors in a ``pyterrier_dr.FlexIndex`` (reused when already built).

    Encoding is the slow step on a CPU, so every later step (kNN graph, reranker, navigators) reads the stored
    vectors instead of encoding again. Documents are sorted by length across the corpus and encoded in chunks of
    256; finished chunks are kept in ``<path>.partial`` until the index is complete, so an interrupted run (Ctrl-C,
    kill) continues from the last finished chunk, with the same bytes as an uninterrupted run.

    Args:
        dataset: anything with ``get_corpus_iter()`` yielding ``docno``/``text`` (and optionally ``title``).
        path: folder of the FlexIndex.
        encoder: any ``pyterrier_dr`` bi-encoder (``SBertBiEncoder``, ``HgfBiEncoder``, ``TasB``, ...) or a
            transformer adding ``doc_vec``; a spec string (``'minilm'``, ``'sbert:FOLDER'``, ``'hf:FOLDER'``,
            ``'package.module:factory'``, see ``load_encoder``); defaults to :func:`minilm_encoder`.
        verbose: show a progress bar.
        ray: encode in a Ray actor pool (``True``, a cluster address or ``RayOptions``); ``encoder`` is then a
            spec string or a zero-argument factory built in each actor (default :func:`minilm_encoder`). Same
            chunks, same order.
        batch_size: documents per model call.
        precision: ``'auto'`` (bfloat16 autocast of the matrix products on a CPU with native bfloat16, AMX or
            AVX-512 BF16, about 2.5x faster with MiniLM and within cosine 0.9999 of float32 per document, see
            ``bench/encode.py``; float32 elsewhere), ``'fp32'`` or ``'bf16'``. The folder records the precision
            used (:func:`encoding_record`); an existing folder is reused with ``'auto'`` whatever it records, and
            with ``'fp32'`` or ``'bf16'`` only when it records that precision.

    Raises:
        FileExistsError: the folder holds vectors of other documents, or of another precision than an explicit
            ``precision`` (or of unrecorded precision: encoded before the record was kept).

    Returns:
        The ``pyterrier_dr.FlexIndex``.
    """
    import pyterrier_dr

    from ._atomic import building, check_target, exclusive, read_meta, recover
    from ._encoding import encode_chunked, resolve_precision
    from ._params import check_positive
    check_positive(batch_size=batch_size)
    resolve_precision(precision)  # a bad value fails before anything is read or built
    with exclusive(path):  # a second run encoding the same folder waits, then reuses (the chunks are written once)
        recover(path)
        index = pyterrier_dr.FlexIndex(str(path), verbose=False)
        reused = read_meta(path) is not None
        if not reused:  # FlexIndex.built() takes any existing folder (an empty one too) for built
            check_target(Path(path), ('dense_index', 'flex'), overwrite=False)  # a user's folder: before encoding
            docs = list(_nonempty((_with_title(d) for d in dataset.get_corpus_iter(verbose=False)), dataset))
            store, vectors = encode_chunked(docs, path, encoder=encoder, batch_size=batch_size, precision=precision,
                                            ray=ray, verbose=verbose)
            with building(path, ('dense_index', 'flex'), record=True) as tmp:
                tmp.rmdir()  # FlexIndex's indexer creates the folder itself
                pyterrier_dr.FlexIndex(str(tmp), verbose=False).indexer().index(vectors)
                _write_encoding_record(tmp, store.manifest)
                repair_docnos(tmp / 'docnos.npids')  # before the files are recorded: a reuse rewrites nothing
            store.remove()
            index = pyterrier_dr.FlexIndex(str(path), verbose=False)
    from ._checks import check_flex, check_recorded_files
    if reused:
        check_recorded_files(path, 'vectors')  # the recorded files' sizes and SHA-256, before they are read
    check_flex(path)  # sizes, counts and links, before the vectors are trusted
    _check_precision(path, precision)
    if repair_docnos(Path(path) / 'docnos.npids'):
        index = pyterrier_dr.FlexIndex(str(path), verbose=False)  # reopen: the old lookup is cached
    _check_reused(index.docnos(), dataset, path, 'vectors')
    return index


#: The file inside a FlexIndex folder built by :func:`encode_corpus` that says how its vectors were encoded.
ENCODING_RECORD = 'encoding.json'


def _write_encoding_record(folder: Path, manifest: dict) -> None:
    """Write :data:`ENCODING_RECORD`: the encoder, the precision the vectors were encoded with (``'auto'`` only
    when Ray actors each decided), the batch size and the versions of the packages that computed them."""
    from ._atomic import write_json
    from ._provenance import package_versions
    write_json(Path(folder) / ENCODING_RECORD, {
        'encoder': manifest.get('encoder'), 'precision': manifest.get('precision'),
        'batch_size': manifest.get('batch_size'), 'chunk': manifest.get('chunk'),
        'packages': package_versions(['torch', 'transformers', 'sentence-transformers', 'pyterrier-dr'])})


def encoding_record(path: Union[str, Path]) -> Optional[dict]:
    """How the vectors in a FlexIndex folder were encoded (:data:`ENCODING_RECORD`), or None when the folder does
    not say (vectors encoded by an earlier version of this package, or by another tool)."""
    import json
    try:
        record = json.loads((Path(path) / ENCODING_RECORD).read_text())
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) else None


def _check_precision(path, precision: str) -> None:
    """An explicit ``precision`` must be the one the reused vectors record (``'auto'`` takes any)."""
    if precision == 'auto':
        return
    recorded = (encoding_record(path) or {}).get('precision')
    if recorded != precision:
        said = f'records {recorded!r}' if recorded else 'does not record its precision (encoded before it was kept)'
        raise FileExistsError(f"{path} holds vectors that {said}, not precision={precision!r}: pass "
                              f"precision='auto' to reuse them, or another folder (or workdir) to encode anew")


def _check_reused(lookup, dataset, path, what: str) -> None:
    """A reused artifact must hold exactly the dataset's documents (not another corpus in the same folder)."""
    docnos = [str(d['docno']) for d in dataset.get_corpus_iter(verbose=False)]
    found = int((lookup_ids(lookup, docnos) >= 0).sum())
    if found != len(docnos) or len(lookup) != len(docnos):
        raise FileExistsError(f'{path} already holds {what} of other documents ({len(lookup)} docs, {found} of this '
                              f"collection's {len(docnos)}); choose another output folder (or remove that one)")


def _nonempty(docs: Iterator[dict], dataset) -> Iterator[dict]:
    """``docs`` unchanged, or a ValueError naming the dataset when it yields no document at all, or naming the
    first docno it yields twice (checked for any corpus iterator, before the document reaches an indexer)."""
    docs = iter(docs)
    first = next(docs, None)
    if first is None:
        raise ValueError(f'{dataset!r} has no documents; check its corpus (docs.jsonl) before indexing')
    seen = {str(first['docno'])}
    yield first
    for position, doc in enumerate(docs, start=2):
        docno = str(doc['docno'])
        if docno in seen:
            raise ValueError(f'{dataset!r} yields docno {docno!r} twice (again as document {position}); docnos must '
                             'be unique: remove or rename the duplicate documents')
        seen.add(docno)
        yield doc


def check_docnos(lookup, docnos: Optional[Sequence[str]] = None) -> None:
    """Verify that every docno round-trips through an ``npids`` lookup (npids 0.1.3 loses some; docs/decisions.md).

    Raises:
        ValueError: naming the first docnos that do not round-trip.
    """
    count = len(lookup)
    if docnos is None:
        docnos = [str(d) for d in lookup.fwd[np.arange(count)]]
    inv = np.asarray(lookup.inv[list(docnos)], dtype=np.int64)
    bad = np.nonzero(inv != np.arange(count))[0]
    if len(bad):
        sample = [docnos[i] for i in bad[:5]]
        raise ValueError(f'{len(bad)} of {count} docnos do not round-trip through the npids lookup (e.g. {sample}); '
                         'rebuild the artifact (pyterrier_garen._graphs.repair_docnos rewrites a lookup in place)')


def lookup_ids(lookup, docnos: Sequence[str]) -> np.ndarray:
    """Internal ids of docnos in an ``npids`` lookup; -1 for docnos it does not hold.

    Depending on its codec, npids answers -1 for an unknown docno or raises ``LookupError``/``ValueError`` (e.g. a
    non-numeric docno in an integer codec) or ``OverflowError`` (a number longer than the codec's integers); all
    become -1 here, and so does a docno that an integer codec reads as the number of another (``'007'`` for
    ``'7'``).
    """
    docnos = [str(d) for d in docnos]
    if not docnos:
        return np.zeros(0, dtype=np.int64)
    try:
        ids = np.asarray(lookup.inv[docnos], dtype=np.int64)
    except (LookupError, ValueError, OverflowError):  # OverflowError: a number too long for an integer codec
        ids = np.asarray([_lookup_one(lookup, d) for d in docnos], dtype=np.int64)
    ids[(ids < 0) | (ids >= len(lookup))] = -1
    return _held(lookup, docnos, ids)


def _held(lookup, docnos: List[str], ids: np.ndarray) -> np.ndarray:
    """``ids`` with -1 where the document found is not the docno asked for. npids' integer inverses parse the
    number, so they answer ``'007'`` with the id of ``'7'``; its hash inverse compares the docno itself, but skips
    NUL bytes in the hash and reads stored docnos without their trailing NULs, so it answers ``'7\\0'`` with the id
    of ``'7'``: a docno holding a NUL is always checked against the document found."""
    from npids import codecs
    inv = getattr(lookup.inv, 'codec', None)
    check = ids >= 0
    if isinstance(inv, codecs.inv['hash']):
        check &= np.fromiter(('\0' in d for d in docnos), dtype=bool, count=len(docnos))
    found = np.flatnonzero(check)
    if len(found):
        held = np.asarray(lookup.fwd[ids[found]]).astype(str)  # as text: a numpy string drops trailing NULs
        ids[[i for i, h in zip(found.tolist(), held.tolist()) if h != docnos[i]]] = -1
    return ids


def _lookup_one(lookup, docno: str) -> int:
    try:
        return int(lookup.inv[docno])
    except (LookupError, ValueError, OverflowError):
        return -1


#: npids' FwdLookupBuilder chooses a block's codec from its first ``min_block`` docnos (its default, 2**8)
_NPIDS_BLOCK = 256


def prints_as_itself(digits: Union[str, bytes]) -> bool:
    """Whether a run of digits (text or bytes) is how its number prints: no leading zero, unless it is ``0``. npids
    stores such docnos as numbers, so only these come back as they were (``'007'`` would come back as ``'7'``)."""
    return len(digits) == 1 or digits[:1] not in ('0', b'0')


def _encode_rest(fmt, rest: List[str]) -> Optional[bytes]:
    """The bytes npids' ``fmt.encode`` writes for each of ``rest``, concatenated; None if any does not encode.

    Vectorised for the codecs textual docnos end up in (``fixedbytes``, ``intstored``, ``hexdigest``); None for the
    others (npids' consecutive-run codecs, UUIDs).
    """
    name = getattr(fmt, 'NAME', None)
    if not rest:
        return b''
    if name == 'fixedbytes':
        prefix, length = fmt.prefix, fmt.length
        raw = [d.encode() for d in rest]
        if max(map(len, raw)) > length or not all(r.startswith(prefix) for r in raw):
            return None
        table = np.array(raw, dtype=f'S{length}').view(np.uint8).reshape(len(raw), length)
        return np.ascontiguousarray(table[:, len(prefix):]).tobytes()  # the suffix, NUL-padded
    if name == 'intstored':
        prefix, cut = fmt.prefix, len(fmt.prefix)
        digits = [d[cut:] for d in rest]
        # npids keeps a docno when its trailing ASCII digit run follows the block's prefix exactly and prints back
        # as itself (no leading zero); the prefix (from npids' own seeding) never ends in a digit
        if not all(d.startswith(prefix) for d in rest) or \
                not all(s.isascii() and s.isdigit() and prints_as_itself(s) for s in digits):
            return None
        numbers = [int(s) for s in digits]
        if max(numbers) >= 1 << (8 * fmt.int_bytes):
            return None
        return np.asarray(numbers, dtype=np.dtype(f'u{fmt.int_bytes}')).tobytes()
    if name == 'hexdigest':  # e.g. zero-padded numbers: the last ``length`` characters as bytes, after a prefix
        prefix, length = fmt.prefix, fmt.length
        alphabet = frozenset('0123456789ABCDEF' if fmt.upper else '0123456789abcdef')
        if not all(len(d) == len(prefix) + length and d.startswith(prefix) for d in rest):
            return None
        digits = ''.join(d[len(prefix):] for d in rest)
        if not alphabet.issuperset(digits):
            return None
        return bytes.fromhex(digits)
    return None


def _write_forward(docnos: List[str], path: Union[str, Path]) -> bool:
    """Write the forward part of an npids lookup exactly as ``npids.Lookup.build(docnos, path, build_inv=False)``.

    npids encodes docno by docno in Python (about 4 CPU-s per million). When one codec holds every docno, which is
    what npids' own builder then writes as a single block, the block is written here at once, byte for byte the
    same file (``tests/test_docno_writer.py`` compares them). Returns False, having written nothing, when the
    docnos would need more than one block or a codec this does not vectorise; the caller then uses npids.
    """
    from npids import codecs
    from npids.utils import FileManager
    seeds = docnos[:_NPIDS_BLOCK]
    formats = {name: cls() for name, cls in codecs.fwd.items()}  # npids' order decides ties, as in its builder
    for docno in seeds:
        for name in list(formats):
            if not formats[name].seed(docno):
                del formats[name]
    if not formats:
        return False
    fmt = min(formats.values(), key=lambda f: f.size())
    encoded = [fmt.encode(d) for d in seeds]
    rest = _encode_rest(fmt, docnos[_NPIDS_BLOCK:])
    if rest is None or any(e is None for e in encoded):
        return False
    with FileManager(str(path), 'a') as out:
        out.write_header(0, len(seeds), {'format': fmt.NAME, **fmt.config()})
        out.write(b''.join(encoded))
        out.write(rest)
        if len(docnos) >= _NPIDS_BLOCK:  # npids writes the block's full count once it is past its seeds
            out.write_doc_count(len(docnos))
        out.flush()
    return True


def _write_one_block(docnos: List[str], path: Union[str, Path]) -> None:
    """npids' forward block, written vectorised when one codec holds every docno, else by npids' own builder."""
    if not _write_forward(docnos, path):
        from npids import Lookup
        _remove_file(Path(path))
        Lookup.build(docnos, str(path), build_inv=False, return_self=False)


def _write_fixed(docnos: List[str], path: Union[str, Path]) -> None:
    """One ``fixedbytes`` block (their common prefix, then each docno's rest NUL-padded): holds any docnos."""
    from npids import codecs
    from npids.utils import FileManager
    raw = [d.encode() for d in docnos]
    fmt = codecs.fwd['fixedbytes'](prefix=os.path.commonprefix(raw).decode(errors='ignore'),
                                   length=max(map(len, raw)))
    _remove_file(Path(path))
    with FileManager(str(path), 'a') as out:
        out.write_header(0, len(docnos), {'format': fmt.NAME, **fmt.config()})
        out.write(_encode_rest(fmt, docnos))
        out.flush()


def check_storable_docnos(docnos: Sequence[str]) -> None:
    """Refuse docnos an npids lookup cannot give back as they are, naming a few and the fix.

    Raises:
        ValueError: a docno ends in NUL (npids reads fixed-width bytes, which drop a trailing NUL, so the lookup
            would answer another docno), or is not valid Unicode text (a lone surrogate, e.g. from bytes decoded
            with ``surrogateescape``: it has no UTF-8 bytes to store).
    """
    nul = [d for d in docnos if d.endswith('\0')]
    if nul:
        raise ValueError(f'a docno ending in a NUL character cannot be stored by npids ({len(nul)} of them, e.g. '
                         f'{nul[:3]}); strip it from the docnos')
    bad = []
    for d in docnos:
        try:
            d.encode('utf8')
        except UnicodeEncodeError:
            bad.append(d)
    if bad:
        raise ValueError(f'a docno that is not valid Unicode text (a lone surrogate) has no UTF-8 bytes to store '
                         f'({len(bad)} of them, e.g. {bad[:3]}); decode the docnos with their real encoding')


def write_docnos(docnos: Sequence[str], path: Union[str, Path]) -> None:
    """Write an ``npids`` docno lookup that round-trips every docno, in the given order, atomically.

    npids 0.1.3 picks its inverse (docno -> id) codec from the data; for integer-like docnos that form several runs
    (1..374, 377..425) it picks ``intsequencemulti``, which answers -1 for part of them. This writer builds the
    forward part as npids does (:func:`_write_forward`), then the inverse with the codec npids would choose unless
    that is ``intsequencemulti``, which is replaced by npids' hash codec (correct for any docnos). npids' forward
    builder can also write a broken block (a hexdigest block, chosen from 4-character docnos, that meets a shorter
    one later); then the forward part is written again as one ``fixedbytes`` block, which holds any docnos. The
    result is checked and moved into place only when complete; readers need nothing but plain ``npids.Lookup``.

    Raises:
        ValueError: for duplicate docnos, fewer than two, or any :func:`check_storable_docnos` refuses.
    """
    docnos = [str(d) for d in docnos]
    if len(set(docnos)) != len(docnos):
        raise ValueError('write_docnos needs unique docnos')
    if len(docnos) < 2:
        raise ValueError(f'a docno lookup needs at least 2 documents, got {len(docnos)} (npids 0.1.3 cannot store '
                         'a single docno); add documents to the collection')
    check_storable_docnos(docnos)
    path = Path(path)
    tmp = path.with_name(f'.{path.name}.{os.getpid()}.tmp')
    _remove_file(tmp)
    try:
        try:
            _write_lookup(docnos, tmp, _write_one_block)
        except (IndexError, ValueError, ArithmeticError):  # a broken npids block: the fail-safe layout (re-checked)
            _write_lookup(docnos, tmp, _write_fixed)
        _remove_file(path)  # never write through a link left at the final name
        os.replace(tmp, path)
    finally:
        _remove_file(tmp)


def _write_lookup(docnos: List[str], tmp: Path, forward) -> None:
    """``forward`` writes the forward part at ``tmp``; then the inverse is added and every docno checked."""
    from npids import Lookup, codecs
    from npids.builder import InvLookupBuilder
    from npids.utils import FileManager
    forward(docnos, tmp)
    with Lookup(str(tmp)) as lookup, FileManager(str(tmp), 'a') as writer:
        fwd = lookup.fwd
        single = len(fwd.codecs) == 1 and isinstance(fwd.codecs[0].fmt, codecs.fwd['intsequence'])
        if not single and not codecs.inv['intstored'].condition(fwd) and \
                codecs.inv['intsequencemulti'].condition(fwd):
            codecs.inv['hash'].build(fwd, writer)
            inv_built = True
        else:
            inv_built = False
    if not inv_built:
        InvLookupBuilder.build(str(tmp))
    with Lookup(str(tmp)) as lookup:
        if len(lookup) != len(docnos):
            raise ValueError(f'the npids lookup holds {len(lookup)} docnos, {len(docnos)} were written')
        check_docnos(lookup, docnos)


def repair_docnos(path: Union[str, Path]) -> bool:
    """Rewrite a project-written ``docnos.npids`` whose inverse lookup loses docnos (same ids, working codec).

    Used on the artifacts this project builds through other libraries (FlexIndex vectors, BM25 graphs), whose
    writers choose npids' default codecs. Returns ``True`` when the file was rewritten.
    """
    from npids import Lookup
    path = Path(path)
    with Lookup(str(path)) as lookup:
        try:
            check_docnos(lookup)
            return False
        except ValueError:
            docnos = [str(d) for d in lookup.fwd[np.arange(len(lookup))]]
    from ._atomic import rerecord_file, resource_errors
    with resource_errors(path):
        write_docnos(docnos, path)
        rerecord_file(path)  # a rewrite of the project's own: the artifact's record of its files follows it
    return True


def _remove_file(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def load_corpus_graph(path: Union[str, Path], *, check_records: bool = True):
    """Load any pyterrier-adaptive corpus graph from a folder.

    Before it is read, the graph's files are checked against the sizes and SHA-256 its build recorded
    (``garen_files.json``); ``check_records=False`` leaves that to a caller that has just checked them (with its own
    words) or just built the graph.

    ``pyterrier_adaptive.CorpusGraph.load`` fails because it instantiates the abstract class
    (pyterrier_adaptive#7), so the concrete class is found through ``pt.Artifact.load``.
    """
    from ._atomic import recover
    from ._checks import check_np_topk, check_recorded_files, read_meta_file
    path = Path(path)
    recover(path)  # an interrupted rebuild's swap is undone first
    if not path.is_dir():
        raise FileNotFoundError(f'corpus graph folder {str(path)!r} does not exist')
    if not (path / 'pt_meta.json').is_file() and not (path / 'pt_meta.json').is_symlink():
        raise FileNotFoundError(f'{str(path)!r} is not a built artifact (no pt_meta.json); build a graph with the '
                                'build-graph command (or bm25_corpus_graph / dense_corpus_graph)')
    meta = read_meta_file(path, fix='the graph is damaged: rebuild it with the build-graph command')
    if meta.get('type') != 'corpus_graph':
        hint = ''
        if (meta.get('type'), meta.get('format')) == ('dense_index', 'flex'):  # build-graph --vectors V writes inside
            built = sorted(p.name for p in path.glob('corpusgraph_k*') if (p / 'pt_meta.json').is_file())
            hint = (f"; the dense graph built from these vectors is the folder inside it, e.g. "
                    f"{str(path / built[0])!r}" if built else '; build its dense graph with build-graph --vectors')
        raise ValueError(f'{str(path)!r} holds a {meta.get("type")}.{meta.get("format")} artifact, not a corpus '
                         f'graph{hint}')
    if meta.get('format') in ('np_topk', 'numpy_kmax'):
        check_np_topk(path)  # sizes, neighbour ids and links, before pyterrier-adaptive trusts them
    # bytes damaged on disk at the same size pass every check above: the SHA-256 of each file the build recorded
    if check_records:
        check_recorded_files(path, 'corpus graph', fix='rebuild it with the build-graph command (or '
                                                       'bm25_corpus_graph / dense_corpus_graph) into a new folder')
    return pt.Artifact.load(str(path))


def dense_corpus_graph(index, *, k: int = 16, verbose: bool = False):
    """The exact cosine k-NN graph of the vectors in a FlexIndex (``np_topk`` format, built once, then reused).

    Uses ``pyterrier_dr.FlexIndex.corpus_graph`` and checks that its docno lookup round-trips. ``verbose`` shows
    its progress bar while the graph is built. A ``k`` below that of a graph already built in the folder is cut from
    it and stored as ``corpusgraph_k<k>`` (:func:`_cut_graph`), so every k asked for has its folder.
    """
    import shutil

    from ._params import check_positive
    check_positive(k=k)
    docnos = Path(index.index_path) / 'docnos.npids'
    if docnos.is_file() and not docnos.is_symlink() and repair_docnos(docnos):
        index = type(index)(str(index.index_path))
    count = len(index)
    if count < 2:
        raise ValueError(f'{index.index_path} holds {count} vector(s): a k-NN graph needs at least two documents')
    if k > count - 1:  # pyterrier_dr would fail inside torch (or list a document as its own neighbour)
        warnings.warn(f'k={k} neighbours asked for, but each of the {count} documents has only {count - 1} others: '
                      f'the graph links every document to all of them (k={count - 1})', stacklevel=2)
        k = count - 1
    batch = graph_batch(count, k)
    half_built = Path(index.index_path) / f'corpusgraph_k{k}'
    from ._atomic import exclusive, record_files
    from ._checks import check_np_topk, check_recorded_files
    # pyterrier_dr builds the graph inside the vectors' folder, in place: the folder's lock keeps a second run from
    # taking a graph being written for a half-built one (it waits, then reuses the graph)
    with exclusive(index.index_path) if not (half_built / 'pt_meta.json').is_file() else contextlib.nullcontext():
        if half_built.is_dir() and not half_built.is_symlink() and not (half_built / 'pt_meta.json').is_file():
            shutil.rmtree(half_built)  # an interrupted build (pyterrier_dr writes pt_meta.json last)
        larger = _larger_graph(Path(index.index_path), k)
        reused = (half_built / 'pt_meta.json').is_file()
        if larger is not None or reused:  # the recorded files of the graph used, before anything reads them
            check_recorded_files(larger or half_built, 'dense k-NN graph')
        for built in Path(index.index_path).glob('corpusgraph_k*/pt_meta.json'):  # pyterrier_dr may reuse any
            check_np_topk(built.parent)
        if larger is not None:  # pyterrier_dr would load it through an abstract class, and fail (pyterrier_dr 0.x)
            graph = _cut_graph(larger, half_built, k)
        else:
            with warnings.catch_warnings(), _tqdm_defaults(desc=f'k-NN graph (k={k})', disable=not verbose):
                # pyterrier_dr hands the memory-mapped (read-only) vectors to torch, which only reads them
                warnings.filterwarnings('ignore', message='The given NumPy array is not writable')
                graph = index.corpus_graph(k, batch_size=batch)
            if not reused:  # built in place by pyterrier_dr (pt_meta.json last): its files recorded once complete
                record_files(half_built)
    check_docnos(graph._docnos)
    return graph


#: Rows of a larger dense graph copied at once while it is cut to a smaller k (bounds the memory of a cut).
_CUT_ROWS = 1 << 18


def _cut_graph(larger: Path, path: Path, k: int):
    """The graph of ``k`` neighbours at ``path``, written from the first ``k`` neighbours (and weights) of each
    document in the built, checked graph ``larger`` of the same vectors, and loaded from there.

    Cutting reads the larger graph once instead of comparing every pair of vectors again. The result is a graph of
    its own, written as every artifact is (:func:`~pyterrier_garen._atomic.building`: a temporary folder, its files
    recorded in ``garen_files.json``, then renamed into place), so ``corpusgraph_k<k>`` exists afterwards as the
    README promises and a later reader checks it like a built one. It holds a copy of the vectors' docno lookup
    (pyterrier_dr links to it, but a link out of a temporary folder is never published) and records ``cut_from``.
    On a folder this user cannot write to, the cut stays in memory (as it was before it was stored), with a warning.
    """
    import errno
    import shutil

    from ._atomic import ResourceError, building, open_no_follow, read_meta, write_json
    meta = read_meta(larger)  # its pt_meta.json was checked strictly (check_np_topk) before this is called
    count, wide = int(meta['doc_count']), int(meta['k'])
    try:
        with building(path, ('corpus_graph', 'np_topk'), record=True) as tmp:
            for name, dtype in (('edges.u32.np', np.uint32), ('weights.f16.np', np.float16)):
                rows = np.memmap(larger / name, mode='r', dtype=dtype, shape=(count, wide))
                with open_no_follow(tmp / name, 'wb') as out:
                    for start in range(0, count, _CUT_ROWS):
                        out.write(np.ascontiguousarray(rows[start:start + _CUT_ROWS, :k]).tobytes())
                del rows
            shutil.copyfile(larger / 'docnos.npids', tmp / 'docnos.npids')  # follows pyterrier_dr's link
            write_json(tmp / 'pt_meta.json', {**meta, 'k': k, 'cut_from': larger.name})
    except ResourceError as ex:
        if ex.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
            raise
        warnings.warn(f'{ex}; the graph of k={k} is {larger} cut to k={k} in memory, not stored', stacklevel=3)
        return pt.Artifact.load(str(larger)).to_limit_k(k)
    return load_corpus_graph(path, check_records=False)  # just written and recorded (its layout is checked)


def _larger_graph(folder: Path, k: int) -> Optional[Path]:
    """The built ``corpusgraph_k<K>`` of a FlexIndex folder with the smallest ``K`` above ``k``, when there is no
    ``corpusgraph_k<k>`` (the graph pyterrier_dr would cut down to ``k`` neighbours), else ``None``."""
    if (folder / f'corpusgraph_k{k}' / 'pt_meta.json').is_file():
        return None
    found = [(int(m.group(1)), p.parent) for p in folder.glob('corpusgraph_k*/pt_meta.json')
             if (m := re.fullmatch(r'corpusgraph_k([0-9]+)', p.parent.name)) and int(m.group(1)) > k]
    return min(found)[1] if found else None


#: Vectors compared at once while ``pyterrier_dr`` builds a dense k-NN graph (its own default).
GRAPH_BATCH = 8192


def graph_batch(count: int, k: int) -> int:
    """The batch size for ``FlexIndex.corpus_graph`` over ``count`` vectors: :data:`GRAPH_BATCH`, unless that leaves
    a last batch of at most ``k`` vectors, inside which ``pyterrier_dr`` cannot take a top ``k`` (a collection of
    8,200 documents would fail); then ``count`` split into batches of equal size (at most one apart). The graph is
    exact either way: the batches only order the work."""
    rest = count % GRAPH_BATCH
    if count <= GRAPH_BATCH or rest == 0 or rest > k:
        return GRAPH_BATCH
    batches = -(-count // GRAPH_BATCH)
    return -(-count // batches)


@contextlib.contextmanager
def _quiet_native_output(enabled: bool = True):
    """Silence what native code (PISA's indexer) prints straight to the process's stdout/stderr."""
    if not enabled:
        yield
        return
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(os.devnull, 'wb') as devnull:
        os.dup2(devnull.fileno(), 1)
        os.dup2(devnull.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)


def bm25_index(dataset, path: Union[str, Path], *, threads: int = 1, stemmer: str = 'porter2',
               verbose: bool = False):
    """A PISA index of a corpus (title + text), built once and reused."""
    import pyterrier_pisa

    from ._atomic import building, exclusive, recover
    with exclusive(path):  # a second run indexing the same folder waits, then reuses
        recover(path)
        index = pyterrier_pisa.PisaIndex(str(path), stemmer=stemmer, threads=threads, text_field='text')
        if not index.built():
            docs = list(_nonempty((_with_title(d) for d in dataset.get_corpus_iter(verbose=False)), dataset))
            with building(path, ('sparse_index', 'pisa'), record=True) as tmp:
                tmp.rmdir()
                new = pyterrier_pisa.PisaIndex(str(tmp), stemmer=stemmer, threads=threads, text_field='text')
                with _quiet_native_output(not verbose):
                    new.index(docs)
                    new.bm25(k1=0.9, b=0.4)  # PISA compiles its BM25 block-max index on first use
            index = pyterrier_pisa.PisaIndex(str(path), stemmer=stemmer, threads=threads, text_field='text')
        else:  # before PISA reads a file: a damaged one may abort the whole process in native code
            from ._checks import check_recorded_files
            check_recorded_files(path, 'PISA index')
    return index


def _record(meta_file: Path, **fields) -> None:
    """Add ``fields`` to the ``pt_meta.json`` a library wrote (inside a build's temporary folder)."""
    from ._atomic import write_json
    write_json(meta_file, {**json.loads(meta_file.read_text(encoding='utf8')), **fields})


def bm25_corpus_graph(dataset, path: Union[str, Path], *, index=None, k: int = 16, k1: float = 0.9,
                      b: float = 0.4, batch_size: int = 1024):
    """A BM25 k-NN graph: each document, used as a query, links to its top-k BM25 documents (``np_topk``).

    Follows ``pyterrier_adaptive.CorpusGraph.from_retriever``, feeding documents in string-sorted docno order so
    that the npids lookup it writes round-trips (checked).

    Args:
        dataset: the collection (``get_corpus_iter()``).
        path: output folder of the graph (must not exist).
        index: a built ``pyterrier_pisa.PisaIndex``; built next to ``path`` when not given.
        k: neighbours per document; above the collection's other documents, it is cut to them with a warning (as
            for the dense graph), and the graph records the k it holds.
    """
    from ._params import check_positive
    check_positive(k=k, batch_size=batch_size)
    path = Path(path)
    from ._atomic import exclusive
    with exclusive(path):  # a second run building the same graph waits, then reuses it
        return _bm25_corpus_graph(dataset, path, index=index, k=k, k1=k1, b=b, batch_size=batch_size)


def _bm25_k(k: int, count: int) -> int:
    """``k``, or at most every other of ``count`` documents, with a warning (as the dense graph cuts it).

    ``from_retriever`` pads each document's list up to ``k`` with the document itself, so a ``k`` beyond the
    collection wrote ``count * k`` padded edges (180 MB of them for k=100000 on 300 documents) under the ``k`` asked.
    """
    if k <= count - 1:
        return k
    warnings.warn(f'k={k} neighbours asked for, but each of the {count} documents has only {count - 1} others: '
                  f'the graph lists at most all of them, those BM25 retrieves (k={count - 1})', stacklevel=4)
    return count - 1


def _bm25_corpus_graph(dataset, path: Path, *, index, k: int, k1: float, b: float, batch_size: int):
    from pyterrier_adaptive import CorpusGraph

    from ._atomic import ArtifactKindError, check_target, read_meta, recover
    recover(path)
    if (path / 'pt_meta.json').exists():
        meta = read_meta(path)  # None: damaged, which load_corpus_graph names
        kind = (meta.get('type'), meta.get('format')) if meta is not None else None
        if meta is not None and (kind != ('corpus_graph', 'np_topk')
                                 or meta.get('package_hint') != 'pyterrier-adaptive'):
            # a group graph, vectors, or a k-NN graph of pyterrier-dr (a dense graph): never the BM25 graph asked for
            held = f'a {kind[0]}.{kind[1]} artifact' if kind != ('corpus_graph', 'np_topk') else \
                'a corpus graph not built from a retriever (pyterrier-dr\'s dense graph has no package_hint)'
            raise ArtifactKindError(f'{path} holds {held}, not a BM25 corpus graph; it is left untouched: choose '
                                    'another output folder')
        from ._checks import check_recorded_files
        check_recorded_files(path, 'BM25 corpus graph')
        graph = load_corpus_graph(path, check_records=False)  # checked just above, with prepare's fix
        if not (path / 'docnos.npids').is_symlink() and repair_docnos(path / 'docnos.npids'):
            graph = load_corpus_graph(path, check_records=False)
        check_docnos(graph._docnos)
        _check_reused(graph._docnos, dataset, path, 'BM25 graph')  # first: k is then cut to this collection
        k = _bm25_k(k, len(graph._docnos))
        stored_k = getattr(graph, 'k', None) or (getattr(graph, 'meta', None) or {}).get('k')
        # a graph built before k was cut to the collection holds k above its documents' others (self-padded): the
        # same neighbours as the graph of every other document
        if stored_k is not None and min(int(stored_k), len(graph._docnos) - 1) != k:
            raise FileExistsError(f'{path} already holds a BM25 graph with k={stored_k}, not k={k}; choose another '
                                  'output folder (or remove that one)')
        recorded = (meta or {}).get('bm25')  # graphs built before this was recorded carry none: not checkable
        if isinstance(recorded, dict) and (recorded.get('k1'), recorded.get('b')) != (float(k1), float(b)):
            raise FileExistsError(f'{path} already holds a BM25 graph built with k1={recorded.get("k1")}, '
                                  f'b={recorded.get("b")}, not k1={k1}, b={b}; choose another output folder (or '
                                  'pass the same parameters)')
        return graph
    check_target(path, ('corpus_graph', 'np_topk'), overwrite=False)  # a folder of the user's: before any indexing
    docs: List[dict] = sorted(_nonempty((_with_title(d) for d in dataset.get_corpus_iter(verbose=False)), dataset),
                              key=lambda d: d['docno'])
    # PISA tokenises the query text itself; documents with no indexable term simply get no neighbours
    # (from_retriever then links them to themselves, which group building and GAREN ignore).
    if len(docs) < 2:
        raise ValueError(f'{dataset!r} has {len(docs)} document(s); a corpus graph needs at least two')
    k = _bm25_k(k, len(docs))  # before anything is retrieved or written: the graph records the k it holds
    if index is None:
        index = bm25_index(dataset, str(path) + '.pisa')
    retriever = index.bm25(k1=k1, b=b, num_results=k + 1)
    from ._atomic import building
    with building(path, ('corpus_graph', 'np_topk'), record=True) as tmp:
        tmp.rmdir()
        CorpusGraph.from_retriever(retriever, iter(docs), str(tmp), k=k, batch_size=batch_size)
        repair_docnos(tmp / 'docnos.npids')
        _record(tmp / 'pt_meta.json', bm25={'k1': float(k1), 'b': float(b)})  # what a later reuse checks
    graph = load_corpus_graph(path, check_records=False)  # just built and recorded
    check_docnos(graph._docnos)
    return graph


