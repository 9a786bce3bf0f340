"""Safe writing of artifacts: build beside and swap, never through a link, stale temporaries cleaned up.

Every artifact the project writes goes through :func:`building` (a folder) or :func:`atomic_write` (one file):

* the new content is written to a fresh temporary created with ``O_EXCL`` next to the target (so an attacker's or
  a leftover symlink at a fixed name is never followed) and moved into place only when complete;
* an existing target is replaced only when it is an artifact of the same kind (recognised by its
  ``pt_meta.json``) and only when ``overwrite=True``; otherwise :class:`FileExistsError` names the path. The old
  artifact survives until the new one is complete;
* a lock file beside the target (``.<name>.lock``) makes concurrent builds of the same artifact fail clearly, and
  lets a build recognise the temporaries left by a killed build of the same artifact as stale and remove them.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple, Union

__all__ = ['building', 'clean_stale', 'atomic_write', 'write_json', 'read_meta', 'open_no_follow', 'ArtifactKindError',
           'ArtifactBusyError']


class ArtifactBusyError(RuntimeError):
    """Another process is building the same artifact right now."""


class ArtifactKindError(FileExistsError):
    """The target path holds something that is not an artifact of the kind being built."""


def read_meta(path: Union[str, Path]) -> Optional[Dict[str, Any]]:
    """The parsed ``pt_meta.json`` of a folder, ``None`` when there is none or it is not a JSON object."""
    meta = Path(path) / 'pt_meta.json'
    if meta.is_symlink() or not meta.is_file():
        return None
    try:
        data = json.loads(meta.read_text(encoding='utf8'))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _kind(meta: Optional[Dict[str, Any]]) -> Optional[Tuple[Any, Any]]:
    return None if meta is None else (meta.get('type'), meta.get('format'))


def check_target(path: Path, kind: Tuple[str, str], *, overwrite: bool) -> bool:
    """Whether ``path`` holds an artifact of ``kind`` to replace; raises when it must not be touched.

    Returns ``False`` when nothing is there.
    """
    if path.is_symlink():
        raise ArtifactKindError(f'{path} is a symbolic link; artifacts are never written through links, remove the '
                                'link or choose another output path')
    if not path.exists():
        return False
    if not path.is_dir():
        raise ArtifactKindError(f'{path} exists and is a file, not a {kind[0]}.{kind[1]} artifact; choose another '
                                'output path')
    found = _kind(read_meta(path))
    if found != tuple(kind):
        what = 'no pt_meta.json' if found is None else f'a {found[0]}.{found[1]} artifact'
        if found is None and not any(path.iterdir()):
            return True  # an empty folder holds nothing to lose
        raise ArtifactKindError(f'{path} already exists and is not a {kind[0]}.{kind[1]} artifact ({what}); it is '
                                'left untouched: choose another output path or move it away')
    if not overwrite:
        raise FileExistsError(f'{path} already holds a {kind[0]}.{kind[1]} artifact; pass overwrite=True '
                              '(--overwrite) to replace it')
    return True


@contextlib.contextmanager
def _lock(path: Path) -> Iterator[None]:
    import fcntl
    lock_path = path.parent / f'.{path.name}.lock'
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as ex:
            if ex.errno in (errno.EAGAIN, errno.EACCES):
                raise ArtifactBusyError(f'another process is building {path} right now; wait for it to '
                                        'finish') from None
            raise
        try:
            yield
        finally:
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
    finally:
        os.close(fd)


def stale_temporaries(path: Path) -> list:
    """Leftovers of earlier builds of ``path``: exactly the names this module's temporaries get beside it
    (``.<name>.<8 random characters>.tmp`` or ``.old``), so no other file of the user's is ever taken for one."""
    prefix = f'.{path.name}.'
    pattern = re.compile(re.escape(prefix) + r'[a-z0-9_]{8}\.(?:tmp|old)')
    return [p for p in path.parent.glob(f'{glob_escape(prefix)}*') if pattern.fullmatch(p.name)]


def clean_stale(path: Union[str, Path]) -> int:
    """Remove the temporaries that killed builds of ``path`` left beside it (skipped while a build runs).

    Returns how many were removed.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return 0
    try:
        with _lock(path):
            stale = stale_temporaries(path)
            for item in stale:
                _remove(item)
            return len(stale)
    except ArtifactBusyError:  # being built right now: its temporary is not stale
        return 0


def glob_escape(text: str) -> str:
    return ''.join(f'[{c}]' if c in '*?[' else c for c in text)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


@contextlib.contextmanager
def building(path: Union[str, Path], kind: Tuple[str, str], *, overwrite: bool = False) -> Iterator[Path]:
    """Build a folder artifact beside ``path`` and swap it in when the block completes.

    Yields the temporary folder to write into (it must end up with a ``pt_meta.json``). Stale temporaries of
    ``path`` from killed builds are removed first. On an exception the temporary is removed and ``path`` is
    unchanged.

    Raises:
        FileExistsError: ``path`` holds an artifact of this kind and ``overwrite`` is false.
        ArtifactKindError: ``path`` is a link, a file or a folder that is not an artifact of this kind.
        RuntimeError: another process is building the same path.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace = check_target(path, kind, overwrite=overwrite)
    with _lock(path):
        for stale in stale_temporaries(path):
            _remove(stale)
        tmp = Path(tempfile.mkdtemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent))
        try:
            yield tmp
            if read_meta(tmp) is None:
                raise RuntimeError(f'internal error: the build of {path} wrote no pt_meta.json')
            _no_escaping_links(tmp)
            os.chmod(tmp, 0o755)
            if replace and path.exists():
                old = Path(tempfile.mkdtemp(prefix=f'.{path.name}.', suffix='.old', dir=path.parent))
                os.replace(path, old / 'artifact')  # the old one stays whole until the new one is in place
                os.replace(tmp, path)
                _remove(old)
            else:
                os.replace(tmp, path)
        finally:
            if tmp.exists():
                _remove(tmp)


def _no_escaping_links(folder: Path) -> None:
    """Refuse to publish a folder holding a symlink that resolves outside it."""
    root = folder.resolve()
    for item in folder.rglob('*'):
        if item.is_symlink():
            target = item.resolve()
            if root != target and root not in target.parents:
                raise ArtifactKindError(f'{item.relative_to(folder)} is a link to {target}, outside the artifact; '
                                        'refusing to package it')


def open_no_follow(path: Union[str, Path], mode: str = 'at'):
    """Open a file inside an artifact for appending/reading without following a symbolic link at that name."""
    flags = {'a': os.O_WRONLY | os.O_CREAT | os.O_APPEND, 'r': os.O_RDONLY, 'w': os.O_WRONLY | os.O_CREAT}[mode[0]]
    if '+' in mode:
        flags = (flags & ~(os.O_WRONLY | os.O_RDONLY)) | os.O_RDWR
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW, 0o644)
    except OSError as ex:
        if ex.errno == errno.ELOOP:
            raise ArtifactKindError(f'{path} is a symbolic link; files inside an artifact are never written or read '
                                    'through links (the artifact may have been tampered with)') from None
        raise
    return os.fdopen(fd, mode, **({} if 'b' in mode else {'encoding': 'utf8'}))


def atomic_write(path: Union[str, Path], data: Union[str, bytes]) -> None:
    """Replace one file atomically: a fresh ``O_EXCL`` temporary beside it, fsync, rename (a link is replaced,
    never followed)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, 'wb') as fout:
            fout.write(data.encode('utf8') if isinstance(data, str) else data)
            fout.flush()
            os.fsync(fout.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def write_json(path: Union[str, Path], data: Dict[str, Any]) -> None:
    """:func:`atomic_write` of a JSON object (sorted keys, indented)."""
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True))
