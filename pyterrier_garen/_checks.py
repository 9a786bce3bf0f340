"""The rules every file of an artifact is held to when it is opened, validated or packaged.

An artifact may come from a stranger (a shared folder, a download), so nothing read from it is trusted: not a
path (no file may be a link that leads outside the artifact), not a size (declared sizes must match the files),
not a type (``pt_meta.json`` must be a JSON object with the right fields, strict JSON only), not an id (neighbour
ids below ``doc_count``). Every refusal is an :class:`ArtifactError` that names the file and the fix; errors of
the file system (no permission, ...) name the file and the cause (:func:`pyterrier_garen._atomic.resource_error`).
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterable, Optional, Union

import numpy as np

from ._atomic import resource_errors

__all__ = ['ArtifactError', 'read_meta_file', 'check_links', 'check_np_topk', 'check_flex', 'metadata_adapter',
           'clean_file_temporaries', 'is_temporary', 'check_recorded_files']

DAMAGED = 'the artifact is damaged: rebuild or re-download it'


class ArtifactError(ValueError):
    """An artifact folder is incomplete, truncated, tampered with or inconsistent with its ``pt_meta.json``."""


def _not_strict(name: str):
    raise ValueError(f'{name} is not a JSON number')


def read_meta_file(folder: Union[str, Path], *, fix: str = DAMAGED) -> Dict[str, Any]:
    """The ``pt_meta.json`` of ``folder`` as a dict, held to strict rules (no link, not empty, strict JSON, an
    object); raises :class:`ArtifactError` naming the file and ``fix`` otherwise (``FileNotFoundError`` when absent).
    """
    meta = Path(folder) / 'pt_meta.json'
    if meta.is_symlink():
        raise ArtifactError(f'{meta} is a symbolic link; an artifact\'s files must lie inside its folder '
                            '(a shared artifact is untrusted input): replace the link by the file')
    if not meta.is_file():
        raise FileNotFoundError(f'{meta} is missing; {fix}')
    with resource_errors(meta, 'read'):
        data = meta.read_bytes()
    if not data.strip():
        raise ArtifactError(f'{meta} is empty (an interrupted copy?); {fix}')
    try:
        parsed = json.loads(data.decode('utf8'), parse_constant=_not_strict)
    except (ValueError, UnicodeDecodeError) as ex:
        raise ArtifactError(f'{meta} is not valid JSON ({ex}); {fix}') from None
    if not isinstance(parsed, dict):
        raise ArtifactError(f'{meta} is not a JSON object; {fix}')
    return parsed


def _inside(target: str, root: str) -> bool:
    return os.path.commonpath([root, target]) == root


def check_links(folder: Union[str, Path], *, allowed: Iterable[Union[str, Path]] = (), any_link: bool = False) -> None:
    """Refuse a file or folder of the artifact that is a link resolving outside it (or, with ``any_link``, any
    link at all); ``allowed`` are further folders links may lead into (an enclosing artifact)."""
    root = os.path.realpath(folder)
    roots = [root, *(os.path.realpath(a) for a in allowed)]
    for base, dirs, files in os.walk(folder):
        for name in dirs + files:
            item = os.path.join(base, name)
            if not os.path.islink(item):
                continue
            target = os.path.realpath(item)
            if any_link or not any(_inside(target, r) for r in roots):
                where = 'outside the artifact' if not _inside(target, root) else 'a link inside the artifact'
                raise ArtifactError(f'{item} is a symbolic link to {target} ({where}); an artifact\'s files must lie '
                                    'inside its folder (a shared artifact is untrusted input): replace the link by '
                                    'the file, or rebuild the artifact')


_TEMPORARY = re.compile(r'\.(?P<name>.+)\.[a-z0-9_]{8}\.tmp')


def is_temporary(name: str) -> bool:
    """Whether a file name is that of a temporary of :func:`~pyterrier_garen._atomic.atomic_write` (never shipped)."""
    return bool(_TEMPORARY.fullmatch(name))


def clean_file_temporaries(folder: Union[str, Path], names: Iterable[str]) -> int:
    """Remove the temporaries that a killed :func:`~pyterrier_garen._atomic.atomic_write` of one of ``names`` left
    inside ``folder``; returns how many."""
    names = set(names)
    removed = 0
    for entry in os.scandir(folder):
        match = _TEMPORARY.fullmatch(entry.name)
        if match and match['name'] in names and not entry.is_dir(follow_symlinks=False):
            os.unlink(entry.path)
            removed += 1
    return removed


def _count(meta: Dict[str, Any], key: str, file: Path) -> Optional[int]:
    value = meta.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ArtifactError(f'{file}: {key} must be a non-negative integer, got {value!r}; {DAMAGED}')
    return value


def check_np_topk(path: Union[str, Path]) -> Dict[str, Any]:
    """Check a pyterrier-adaptive ``np_topk`` corpus graph before it is opened: strict ``pt_meta.json``, no link
    out of the graph (a link into an enclosing artifact, as pyterrier-dr makes for ``docnos.npids``, is fine),
    array sizes that match the declared ``doc_count`` and ``k``, and every neighbour id below ``doc_count``.

    Returns the metadata. Raises :class:`ArtifactError` naming the file and the fix.
    """
    from npids import Lookup
    path = Path(path)
    meta = read_meta_file(path)
    meta_file = path / 'pt_meta.json'
    parent = path.parent
    check_links(path, allowed=[parent] if (parent / 'pt_meta.json').is_file() else [])
    k = _count(meta, 'k', meta_file)
    if not k:
        raise ArtifactError(f'{meta_file}: k must be a positive integer, got {meta.get("k")!r}; {DAMAGED}')
    files = {name: path / name for name in ('edges.u32.np', 'weights.f16.np', 'docnos.npids')}
    for file in files.values():
        if not file.is_file():
            raise ArtifactError(f'{file} is missing; the graph is incomplete: {DAMAGED}')
    with resource_errors(files['docnos.npids'], 'read'):
        try:
            with Lookup(str(files['docnos.npids'])) as lookup:
                docs = len(lookup)
        except OSError:
            raise
        except Exception as ex:  # noqa: BLE001 - npids raises assorted errors on a damaged file
            raise ArtifactError(f'{files["docnos.npids"]} cannot be read ({type(ex).__name__}: {ex}); {DAMAGED}') \
                from None
    declared = _count(meta, 'doc_count', meta_file)
    if declared is not None and declared != docs:
        raise ArtifactError(f'{meta_file} declares doc_count={declared}, but docnos.npids holds {docs} docnos; '
                            f'{DAMAGED}')
    for name, width in (('edges.u32.np', 4), ('weights.f16.np', 2)):
        with resource_errors(files[name], 'read'):
            size = files[name].stat().st_size
        if size != docs * k * width:
            raise ArtifactError(f'{files[name]} has {size} bytes, expected {docs * k * width} for {docs} documents '
                                f'and k={k} (truncated, or pt_meta.json declares the wrong sizes); {DAMAGED}')
    if docs:
        with resource_errors(files['edges.u32.np'], 'read'):
            edges = np.memmap(files['edges.u32.np'], mode='r', dtype=np.uint32)
            step = 1 << 24
            top = max(int(edges[i:i + step].max()) for i in range(0, len(edges), step))
            del edges
        if top >= docs:
            raise ArtifactError(f'{files["edges.u32.np"]} names neighbour id {top}, but the graph has only {docs} '
                                f'documents (ids 0..{docs - 1}); {DAMAGED}')
    return meta


def check_flex(path: Union[str, Path]) -> Dict[str, Any]:
    """Check a ``pyterrier_dr.FlexIndex`` (vectors) before it is reused: strict ``pt_meta.json``, no link out of
    it, ``vecs.f4`` of ``doc_count`` x ``vec_size`` floats and ``docnos.npids`` holding ``doc_count`` docnos."""
    from npids import Lookup
    path = Path(path)
    meta = read_meta_file(path, fix='the vectors are damaged: delete the folder to encode again')
    meta_file = path / 'pt_meta.json'
    kind = (meta.get('type'), meta.get('format'))
    if kind != ('dense_index', 'flex'):  # another artifact (a PISA index, a graph): not damaged vectors, not ours
        from ._atomic import ArtifactKindError
        held = f'a {kind[0]}.{kind[1]} artifact' if None not in kind else f'{meta_file} names no dense_index.flex'
        raise ArtifactKindError(f'{path} holds {held}, not vectors (dense_index.flex); it is left untouched: choose '
                                'another folder for the vectors')
    check_links(path)
    docs, dim = _count(meta, 'doc_count', meta_file), _count(meta, 'vec_size', meta_file)
    for name in ('vecs.f4', 'docnos.npids'):
        if not (path / name).is_file():
            raise ArtifactError(f'{path / name} is missing; the vectors are incomplete: delete the folder to encode '
                                'again')
    if docs is not None and dim is not None:
        with resource_errors(path / 'vecs.f4', 'read'):
            size = (path / 'vecs.f4').stat().st_size
        if size != docs * dim * 4:
            raise ArtifactError(f'{path / "vecs.f4"} has {size} bytes, expected {docs * dim * 4} for {docs} vectors '
                                f'of {dim} floats (truncated, or pt_meta.json declares the wrong sizes); delete the '
                                'folder to encode again')
        with resource_errors(path / 'docnos.npids', 'read'):
            try:
                with Lookup(str(path / 'docnos.npids')) as lookup:
                    count = len(lookup)
            except OSError:
                raise
            except Exception as ex:  # noqa: BLE001 - npids raises assorted errors on a damaged file
                raise ArtifactError(f'{path / "docnos.npids"} cannot be read ({type(ex).__name__}: {ex}); delete the '
                                    'folder to encode again') from None
        if count != docs:
            raise ArtifactError(f'{meta_file} declares doc_count={docs}, but docnos.npids holds {count} docnos; delete '
                                'the folder to encode again')
    return meta


def _recorded(folder: Path, fix: str) -> Optional[Dict[str, Any]]:
    """The ``files`` of the folder's :data:`~pyterrier_garen._atomic.FILES_RECORD`; ``None`` when there is none."""
    from ._atomic import FILES_RECORD
    record = folder / FILES_RECORD
    if not record.is_symlink() and not record.exists():
        return None
    if record.is_symlink() or not record.is_file():
        raise ArtifactError(f'{record} is not a file (a link or a folder), where the build recorded the size and '
                            f'SHA-256 of each file; {fix}')
    with resource_errors(record, 'read'):
        data = record.read_bytes()
    try:
        files = json.loads(data.decode('utf8'), parse_constant=_not_strict).get('files')
    except (ValueError, UnicodeDecodeError, AttributeError):
        files = None
    good = isinstance(files, dict) and all(
        isinstance(entry, dict) and isinstance(entry.get('sha256'), str) and isinstance(entry.get('size'), int)
        and not name.startswith('/') and '..' not in name.split('/') and name not in ('', '.')
        for name, entry in files.items())
    if not good:
        raise ArtifactError(f'{record} is damaged (not the record of the files\' sizes and SHA-256 its build '
                            f'writes); {fix}')
    return files


def check_recorded_files(folder: Union[str, Path], what: str, fix: Optional[str] = None) -> bool:
    """Check that every file the build recorded in ``folder``'s :data:`~pyterrier_garen._atomic.FILES_RECORD` is
    still there with its recorded size and SHA-256 (files not in the record are not looked at). Reads only.

    ``what`` names the artifact in the message (``'PISA index'``, ``'vectors'``, ...); ``fix`` says how to rebuild
    it (default: delete the folder and rerun prepare). Returns ``False`` when the
    folder holds no record (built by an earlier version: not checked), ``True`` when every recorded file matches.

    Raises:
        ArtifactError: naming the artifact, every recorded file that is missing, not a regular file, or differs in
            size or SHA-256, and the fix (delete the folder and rerun: prepare rebuilds it).
    """
    import stat

    from ._atomic import FILES_RECORD, file_sha256
    folder = Path(folder)
    fix = fix or f'delete {folder} and rerun (prepare rebuilds it; nothing else is lost)'
    files = _recorded(folder, fix)
    if files is None:
        return False
    problems = []
    for name, entry in sorted(files.items()):
        file = folder / name
        with resource_errors(file, 'read'):
            try:
                info = os.lstat(file)
            except (FileNotFoundError, NotADirectoryError):
                problems.append(f'{name} is missing')
                continue
            if not stat.S_ISREG(info.st_mode):
                problems.append(f'{name} is not a regular file (a link or a folder)')
            elif info.st_size != entry['size']:
                problems.append(f'{name} has {info.st_size} bytes, not the {entry["size"]} built')
            elif file_sha256(file) != entry['sha256'].lower():
                problems.append(f'{name} differs from what was built (same size, another SHA-256)')
    if problems:
        shown = ', '.join(problems[:5]) + (f' and {len(problems) - 5} more' if len(problems) > 5 else '')
        raise ArtifactError(f'{folder} ({what}) is damaged: {shown} (checked against {FILES_RECORD}, written when '
                            f'it was built); the file was damaged on disk or replaced: {fix}')
    return True


#: files by which a folder is recognised as a GroupCorpusGraph even when its pt_meta.json is lost
GROUP_FILES = frozenset({'group_of.u32.np', 'group_offsets.u64.np', 'group_members.u32.np'})


def metadata_adapter(path: str, listing: list) -> Optional[Dict[str, Any]]:
    """PyTerrier's ``pyterrier.artifact.metadata_adapter`` hook: ``pt.Artifact.load`` asks it about a folder whose
    ``pt_meta.json`` does not say what it is. A folder holding a GroupCorpusGraph's files is named one, so that
    :class:`~pyterrier_garen.GroupCorpusGraph` opens it and explains what is wrong (instead of "No implementation
    found ... type=(unknown)")."""
    if GROUP_FILES & set(listing or ()):
        return {'type': 'corpus_graph', 'format': 'garen_groups', 'package_hint': 'pyterrier-garen'}
    return None
