"""One call that builds (or reuses) every offline artifact of a collection in a work folder."""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Union

__all__ = ['Prepared', 'prepare', 'cache_dir', 'collection_fingerprint', 'corpus_fingerprint']

MANIFEST = 'prepare.json'
LOCK = '.prepare.lock'

#: neighbours per document of the k-NN graph when none is asked for
DEFAULT_K = 16


def cache_dir() -> Path:
    """Where prepared artifacts go by default: ``$GAREN_CACHE``, else ``~/.cache/pyterrier-garen``."""
    return Path(os.environ.get('GAREN_CACHE') or Path.home() / '.cache' / 'pyterrier-garen')


@dataclass
class Prepared:
    """The offline artifacts of one collection (see :func:`prepare`)."""
    dataset: Any
    workdir: Path
    bm25_index: Any
    vectors: Any  # pyterrier_dr.FlexIndex, or None for graph='bm25' without vectors
    graph: Any  # the pyterrier-adaptive corpus graph the groups were built from
    groups: Any  # GroupCorpusGraph, with extractive summaries
    encoder: Any = None  # the encoder of ``vectors`` (for query vectors); None: the packaged MiniLM


def collection_fingerprint(dataset) -> str:
    """SHA-256 identifying a collection's content, what a result was measured on: ``dataset.fingerprint()`` when it
    has one (``LocalDataset``: its files), else a hash of every document (docno, title, text) from
    ``get_corpus_iter()``."""
    if hasattr(dataset, 'fingerprint'):
        return str(dataset.fingerprint())
    digest = hashlib.sha256()
    for doc in dataset.get_corpus_iter(verbose=False):
        for field in ('docno', 'title', 'text'):
            digest.update(str(doc.get(field) or '').encode('utf8', 'surrogatepass'))
            digest.update(b'\0')
        digest.update(b'\1')
    return digest.hexdigest()


def corpus_fingerprint(dataset) -> str:
    """SHA-256 of what :func:`prepare` builds from, the documents: it names the default workdir and ``prepare.json``
    records it. ``dataset.corpus_fingerprint()`` when it has one (``LocalDataset``: ``docs.jsonl``), else
    :func:`collection_fingerprint`. Mending a query or a judgement therefore keeps the artifacts."""
    if hasattr(dataset, 'corpus_fingerprint'):
        return str(dataset.corpus_fingerprint())
    return collection_fingerprint(dataset)


def _earlier_fingerprint(dataset) -> Optional[Callable[[], str]]:
    """How versions before ``corpus_fingerprint`` keyed this dataset's workdir, when it differs (computed on demand:
    it reads every file of the collection again); None when it is the same key."""
    if not hasattr(dataset, 'corpus_fingerprint'):
        return None
    return functools.lru_cache(maxsize=None)(lambda: collection_fingerprint(dataset))


def _dataset_name(dataset) -> str:
    name = getattr(dataset, 'name', None) or getattr(dataset, '_irds_id', None) or str(dataset)
    # a default repr's memory address changes in every process: it would give each run a new default workdir
    name = re.sub(r'\s+at\s+0x[0-9a-fA-F]+', '', str(name))
    return ''.join(c if c.isalnum() or c in '-_.' else '_' for c in str(name)).strip('._') or 'collection'


def _check_workdir(workdir: Path, fingerprint: str, name: str,
                   earlier: Optional[Callable[[], str]] = None) -> bool:
    """Refuse a workdir prepared for other documents, else record these in it (``prepare.json``).

    ``earlier``: the key versions before ``corpus_fingerprint`` recorded for this collection (see
    :func:`_check_manifest`). Returns whether prepare created the workdir (then it owns every folder at an
    artifact's name in it).
    """
    if workdir.exists() and not workdir.is_dir():  # named, not its .prepare.lock ("not a directory")
        raise FileExistsError(f'{workdir} is a file, not a work folder; it is left untouched: pass a folder (or a '
                              'path that does not exist yet) as the workdir')
    manifest = workdir / MANIFEST
    if manifest.is_file():  # read without a lock (written atomically): a finished workdir may be read-only
        return _check_manifest(manifest, workdir, fingerprint, earlier)
    if manifest.exists():  # a folder (or a link to one): not prepare's record, never replaced
        raise FileExistsError(f'{manifest} is not a file, where prepare records which documents the workdir holds; '
                              'it is left untouched: move it away and rerun, or pass another workdir')
    from ._atomic import ArtifactKindError, read_meta
    try:
        kind = read_meta(workdir)
    except (OSError, ValueError):
        kind = {}
    if kind is not None:  # a folder holding a pt_meta.json is an artifact: prepare's folders would be put inside it
        what = '.'.join(str(kind.get(k, '?')) for k in ('type', 'format')) if isinstance(kind, dict) else '?'
        raise ArtifactKindError(f'{workdir} is an artifact ({what}, its pt_meta.json), not a work folder; prepare '
                                'would write its own folders inside it. Choose another --workdir (e.g. a new folder '
                                'beside it)')
    import fcntl

    from ._atomic import _check_lock_file, resource_errors, write_json
    with resource_errors(workdir, 'prepare'):
        try:
            workdir.mkdir(parents=True)
            made = True
        except FileExistsError:
            made = False
        lock = workdir / LOCK
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as ex:
            if ex.errno not in (errno.EISDIR, errno.ELOOP):
                raise
            what = 'a folder' if ex.errno == errno.EISDIR else 'a symbolic link'
            raise ArtifactKindError(f'{lock} is {what}, where the (empty) lock of {manifest} goes; it is left '
                                    'untouched: move it away, or choose another workdir') from None
        try:
            _check_lock_file(fd, lock, manifest)  # a file with content is the user's: never locked nor removed
            fcntl.flock(fd, fcntl.LOCK_EX)  # a prepare started at the same moment records the workdir first
            if manifest.is_file():  # written by a prepare that held the lock first; its lock file is not needed now
                with contextlib.suppress(FileNotFoundError):
                    lock.unlink()
                return _check_manifest(manifest, workdir, fingerprint, earlier)
            # prepare's own bookkeeping (the lock, a killed write's temporary of prepare.json) is not the user's
            mine = re.compile(rf'{re.escape(LOCK)}|\.{re.escape(MANIFEST)}\.[a-z0-9_]{{8}}\.tmp')
            created = made or not [p for p in workdir.iterdir() if not mine.fullmatch(p.name)]
            write_json(manifest, {'collection': name, 'corpus_sha256': fingerprint, 'created': created})
            lock.unlink()  # safe: from now on every prepare reads the manifest and writes it never again
        finally:
            os.close(fd)
    return created


def _check_manifest(manifest: Path, workdir: Path, fingerprint: str,
                    earlier: Optional[Callable[[], str]] = None) -> bool:
    """Whether prepare created the workdir ``manifest`` records, after checking it records these documents:
    ``corpus_sha256`` equal to ``fingerprint``, or, written by an earlier version, ``collection_sha256`` equal to
    ``fingerprint`` (a dataset whose whole content is its documents) or to ``earlier()`` (all of a
    ``LocalDataset``'s files, as they are now). ``FileExistsError`` otherwise."""
    from ._atomic import resource_errors
    with resource_errors(manifest, 'read'):
        try:
            text = manifest.read_text(encoding='utf8')
        except UnicodeDecodeError:
            text = ''
    try:
        stored = json.loads(text)
    except ValueError:
        stored = None
    if not isinstance(stored, dict) or not {'corpus_sha256', 'collection_sha256'} & set(stored):
        raise FileExistsError(
            f'{manifest} is damaged (not the JSON record of the documents this workdir was prepared for), so its '
            'artifacts are not reused: if the workdir was prepared for these documents, delete that file and rerun '
            '(prepare records it again and reuses what it holds); otherwise pass another workdir')
    if 'corpus_sha256' in stored:
        same = stored['corpus_sha256'] == fingerprint
        recorded = stored['corpus_sha256']
    else:
        recorded = stored.get('collection_sha256')
        same = recorded is not None and (recorded == fingerprint or (earlier is not None and recorded == earlier()))
    if not same:
        raise FileExistsError(
            f'{workdir} holds artifacts prepared for other documents ({stored.get("collection", "?")}, '
            f'fingerprint {str(recorded)[:12]}; these documents are {fingerprint[:12]}); its '
            'artifacts are not reused: pass another workdir, or delete that one to rebuild there')
    return stored.get('created') is True  # only prepare's own record makes its folders removable, not "false"


def _check_unique(docnos, dataset) -> None:
    if len(set(docnos)) != len(docnos):
        seen: set = set()
        for position, docno in enumerate(docnos, start=1):
            if docno in seen:
                raise ValueError(f'{dataset!r} yields docno {docno!r} twice (again as document {position}); docnos '
                                 'must be unique: remove or rename the duplicate documents')
            seen.add(docno)


def _fresh(path: Path, owned: bool) -> None:
    """Before building ``path``: a folder left without ``pt_meta.json`` is a half-built piece of an interrupted
    run. Remove it when this workdir is prepare's own, else say so (it may be the user's). Temporaries of killed
    builds beside it are removed either way."""
    from ._atomic import clean_stale
    clean_stale(path)
    if path.is_symlink() or not path.exists() or (path / 'pt_meta.json').is_file():
        return
    if not path.is_dir():  # prepare never writes a file at an artifact's name: not its own, whoever owns the folder
        raise FileExistsError(f'{path} is a file where prepare builds an artifact folder; move the file away, or '
                              'pass another workdir')
    if owned:
        shutil.rmtree(path)
        return
    raise FileExistsError(f'{path} exists but is not a finished artifact (no pt_meta.json): an interrupted build? '
                          'delete it to rebuild, or pass another workdir')


def _matches_collection(lookup, docnos) -> bool:
    from ._graphs import lookup_ids
    return len(lookup) == len(docnos) and bool((lookup_ids(lookup, docnos) >= 0).all())


def prepare(dataset, workdir: Optional[Union[str, Path]] = None, *, graph: str = 'dense', k: Optional[int] = None,
            max_group_size: int = 20, seed: int = 42, summarizer=None, vectors: bool = True, encoder=None,
            precision: str = 'auto', verbose: bool = False) -> Prepared:
    """Build or reuse, in ``workdir``: a PISA index, dense vectors (MiniLM unless ``encoder`` says otherwise), a
    k-NN graph and summarised groups.

    Each step is skipped when its artifact is already built (its ``pt_meta.json`` exists and its documents are the
    collection's), so a second call is instant. Every step builds beside its final folder and swaps it in, so an
    interrupted run (Ctrl-C, kill) leaves either the finished artifact or nothing at that name; a rerun continues
    with the missing steps (summaries resume group by group). Artifacts are reused only for the same documents:
    the workdir records a fingerprint of them (:func:`corpus_fingerprint`, in ``prepare.json``), and artifact names
    carry every parameter that shapes them. Queries and judgements are not part of it: mending them keeps the
    artifacts. A workdir an earlier version recorded by all of a collection's files is still reused while those
    files are unchanged.

    Args:
        dataset: a :class:`~pyterrier_garen.LocalDataset` or any PyTerrier dataset with a corpus.
        workdir: output folder; defaults to ``cache_dir()/<dataset name>-<fingerprint>`` (its first 12 hex digits).
        graph: ``'dense'`` (cosine MiniLM k-NN: exact up to ``EXACT_KNN_LIMIT`` = 200,000 documents, FAISS HNSW
            above, see ``pyterrier_garen._ann``) or ``'bm25'`` (PISA BM25 k-NN).
        k: neighbours per document; None: 16, or every other document of a collection of 16 documents or fewer
            (the artifacts keep the names of k=16). A k given is used as given: above the number of other
            documents it is lowered with a warning.
        max_group_size: Leiden re-partitioning threshold.
        seed: Leiden seed.
        summarizer: group summariser; defaults to :class:`~pyterrier_garen.ExtractiveSummarizer`.
        vectors: encode the corpus (needed by the CPU reranker and navigators).
        encoder: the dense encoder: None (the packaged MiniLM), any ``pyterrier_dr`` bi-encoder
            (``SBertBiEncoder(folder)``, ``HgfBiEncoder.from_pretrained(folder)``, ``TasB``, ...) or a spec string
            (``'sbert:FOLDER'``, ``'hf:FOLDER'``, ``'package.module:factory'``; see ``load_encoder``). Its identity
            names the vectors and the dense graph's groups (``<model>-<hash>.flex``; MiniLM keeps ``minilm.flex``),
            so vectors of different encoders never mix; the workdir is the collection's either way. Pass
            ``prepared.encoder`` to ``VectorScorer``/``CentroidNavigator`` so queries use the same encoder.
        precision: how the corpus is encoded (see :func:`~pyterrier_garen.encode_corpus`): ``'auto'`` (bfloat16
            matrix products on a CPU with native bfloat16, float32 elsewhere; reuses vectors of either), ``'fp32'``
            or ``'bf16'`` (reuses only vectors recorded as encoded so). The vectors' folder records what was used.
        verbose: progress bars.

    Raises:
        FileExistsError: ``workdir`` was prepared for another collection, holds a folder at an artifact's name
            that prepare did not make, or holds vectors encoded with another precision than an explicit one.
    """
    from ._encoding import encoder_slug, load_encoder
    from ._graphs import bm25_corpus_graph, bm25_index, dense_corpus_graph, encode_corpus
    from ._group_graph import GroupCorpusGraph
    from ._summaries import ExtractiveSummarizer
    from ._params import check_choice, check_int, check_positive
    from ._encoding import resolve_precision
    check_choice('graph', graph, ('dense', 'bm25'))
    resolve_precision(precision)  # a bad value fails before anything is built
    if k is not None:
        check_positive(k=k)
    check_int('max_group_size', max_group_size, low=2)  # as the group builder checks them, before anything is built
    check_int('seed', seed)
    summarizer = summarizer or ExtractiveSummarizer()
    name = _dataset_name(dataset)
    fingerprint, earlier = corpus_fingerprint(dataset), _earlier_fingerprint(dataset)
    if workdir is None:
        workdir = cache_dir() / f'{name}-{fingerprint[:12]}'
        if earlier is not None and not workdir.exists():  # the folder an earlier version named by all the files
            before = cache_dir() / f'{name}-{earlier()[:12]}'
            workdir = before if before.is_dir() else workdir
    workdir = Path(workdir)
    docnos = [str(d['docno']) for d in dataset.get_corpus_iter(verbose=False)]
    _check_unique(docnos, dataset)  # before anything is created or indexed
    if len(docnos) < 2:  # before the workdir is made: a refused collection leaves nothing in the cache
        raise ValueError(f'{dataset!r} has {len(docnos)} document(s); GAREN needs a collection of at least two')
    owned = _check_workdir(workdir, fingerprint, name, earlier)
    # the default k on a small collection: every other document in the dense graph, said by nothing (only a k asked
    # for is warned about); the BM25 graph takes k as it is, as it always has
    k, graph_k = (DEFAULT_K, min(DEFAULT_K, len(docnos) - 1)) if k is None else (k, k)

    _fresh(workdir / 'bm25.pisa', owned)
    pisa = bm25_index(dataset, workdir / 'bm25.pisa')  # PISA's native log stays quiet
    flex = None
    slug = encoder_slug(encoder)  # 'minilm' for the packaged MiniLM: the names earlier versions used
    if isinstance(encoder, str) and slug != 'minilm':
        encoder = load_encoder(encoder)
    elif slug == 'minilm':
        encoder = None
    if vectors or graph == 'dense':
        _fresh(workdir / f'{slug}.flex', owned)
        flex = encode_corpus(dataset, workdir / f'{slug}.flex', encoder=encoder, verbose=verbose, precision=precision)
        if not _matches_collection(flex.docnos(), docnos):
            raise FileExistsError(f'{workdir / f"{slug}.flex"} holds vectors of other documents than {dataset!r}; '
                                  'delete it or pass another workdir')
    if graph == 'dense':
        from ._ann import EXACT_KNN_LIMIT, hnsw_corpus_graph
        if len(docnos) > EXACT_KNN_LIMIT:  # all pairs take hours on a CPU beyond this size (bench/dense_graph.py)
            knn = hnsw_corpus_graph(flex, k=graph_k)
        else:
            knn = dense_corpus_graph(flex, k=graph_k, verbose=verbose)
    else:
        _fresh(workdir / f'bm25.k{k}.graph', owned)
        # named by the k asked for (as the groups are); built with at most every other document, as the dense graph
        knn = bm25_corpus_graph(dataset, workdir / f'bm25.k{k}.graph', index=pisa, k=graph_k)  # pads a short list
    if not _matches_collection(knn._docnos, docnos):
        raise FileExistsError(f'the corpus graph {getattr(knn, "path", knn)} is of other documents than {dataset!r}; '
                              'delete it or pass another workdir')
    # one groups folder per summariser: summaries made by another (possibly costly LLM) run are never replaced
    summarized = hashlib.sha256(json.dumps(summarizer.config(), sort_keys=True, default=str).encode()).hexdigest()[:8]
    kind = graph if graph == 'bm25' or slug == 'minilm' else f'{graph}-{slug}'
    groups_path = workdir / f'{kind}.k{k}.s{max_group_size}.seed{seed}.sum-{summarized}.groups'
    _fresh(groups_path, owned)
    groups = GroupCorpusGraph.from_corpus_graph(knn, groups_path,
                                                max_group_size=max_group_size, seed=seed, verbose=verbose)
    groups.summarize(summarizer, dataset, batch_size=64, verbose=verbose)
    return Prepared(dataset, workdir, pisa, flex, knn, groups, encoder)

