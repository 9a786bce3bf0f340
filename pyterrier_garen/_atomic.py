"""Safe writing of artifacts: build beside and swap, never through a link, stale temporaries cleaned up.

Every artifact the project writes goes through :func:`building` (a folder) or :func:`atomic_write` (one file):

* the new content is written to a fresh temporary created with ``O_EXCL`` next to the target (so an attacker's or
  a leftover symlink at a fixed name is never followed) and moved into place only when complete;
* an existing target is replaced only when it is an artifact of the same kind (recognised by its
  ``pt_meta.json``) and only when ``overwrite=True``; otherwise :class:`FileExistsError` names the path. The old
  artifact survives until the new one is complete;
* a lock file beside the target (``.<name>.lock``) makes concurrent builds of the same artifact fail clearly, and
  lets a build recognise the temporaries left by a killed build of the same artifact as stale and remove them;
  a get-or-build step holds it around the whole step (:func:`exclusive`), so a second run that needs the same
  artifact waits for the first and reuses what it built (resumable work kept beside the target, such as encoded
  chunks, is never written by two processes at once);
* the swap is recoverable at every instant (:func:`_swap`, :func:`recover`): an atomic exchange where the kernel
  offers one, else a backup folder that the next open or build of the path moves back, and that is never removed
  while it is the only complete copy;
* errors of the file system (disk full, no permission, read-only) become a :class:`ResourceError` naming the path,
  the cause and the fix (:func:`resource_error`, the one helper every reader and writer uses);
* a build may record the size and SHA-256 of each of its files in the artifact (:data:`FILES_RECORD`, written
  last inside the temporary: ``building(..., record=True)``, :func:`record_files`), which a reuse checks before it
  trusts them (:func:`pyterrier_garen._checks.check_recorded_files`).
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, Optional, Tuple, Union

__all__ = ['building', 'exclusive', 'clean_stale', 'recover', 'atomic_write', 'write_json', 'write_array', 'read_meta',
           'open_no_follow', 'resource_error', 'resource_errors', 'record_files', 'rerecord_file', 'file_sha256',
           'FILES_RECORD', 'ArtifactKindError', 'ArtifactBusyError', 'ResourceError']


class ArtifactBusyError(RuntimeError):
    """Another process is building the same artifact right now."""


class ArtifactKindError(FileExistsError):
    """The target path holds something that is not an artifact of the kind being built."""


class ResourceError(OSError):
    """The file system refused a read or a write (disk full, no permission, read-only): the message names the
    path, the cause and the fix."""

    def __str__(self):
        return self.strerror or super().__str__()


#: errno -> what to do, for the errors of the file system a user can fix (not bugs, not damaged data)
RESOURCE_FIXES = {
    errno.ENOSPC: 'free some disk space (or choose a folder on another disk) and rerun; finished steps are kept',
    errno.EDQUOT: 'the disk quota is exhausted: free some space (or choose another folder) and rerun',
    errno.EACCES: 'check the permissions (ls -l) or choose a folder you can {verb}',
    errno.EPERM: 'check the permissions (ls -l) or choose a folder you can {verb}',
    errno.EROFS: 'the file system is read-only: choose a writable folder to build in (a finished artifact can '
                 'still be read from it)',
}
_SHORT_WRITE = re.compile(r'\d+ requested and \d+ written')  # numpy's tofile on a full disk (no errno)


def resource_error(ex: BaseException, path: Union[str, Path], action: str = 'write') -> BaseException:
    """``ex`` as a :class:`ResourceError` naming ``path``, the cause and the fix when the file system refused
    (ENOSPC, EDQUOT, EACCES, EPERM, EROFS, or numpy's short write); otherwise ``ex`` unchanged.

    ``action`` is the verb of the message (``'write'``, ``'read'``, ``'build'``, ...). The one helper every
    reader and writer of the project uses (:func:`resource_errors`).
    """
    if isinstance(ex, ResourceError) or not isinstance(ex, OSError):
        return ex
    code = ex.errno
    if code is None and _SHORT_WRITE.search(str(ex)):
        code = errno.ENOSPC
    if code not in RESOURCE_FIXES:
        return ex
    verb = 'read' if action == 'read' else 'write to'
    where = ex.filename if ex.filename and str(ex.filename) != str(path) else None
    cause = os.strerror(code).lower() + (f' ({where})' if where else '')
    fix = RESOURCE_FIXES[code].format(verb=verb)
    return ResourceError(code, f'cannot {action} {path}: {cause}; {fix}', str(where or path))


@contextlib.contextmanager
def resource_errors(path: Union[str, Path], action: str = 'write') -> Iterator[None]:
    """Within the block, an error of the file system becomes a :class:`ResourceError` (see :func:`resource_error`)."""
    try:
        yield
    except OSError as ex:
        new = resource_error(ex, path, action)
        if new is ex:
            raise
        raise new from ex


def disk_full(folder: Union[str, Path]) -> bool:
    """Whether the file system holding ``folder`` has no free block left for this user."""
    try:
        stats = os.statvfs(folder)
    except (OSError, AttributeError):
        return False
    return stats.f_bavail == 0


def write_fd(fd: int, data) -> None:
    """Write all of ``data`` (bytes or a buffer) to a file descriptor, chunk by chunk; a short write raises."""
    view = memoryview(data).cast('B')
    while view:
        written = os.write(fd, view[:1 << 24])
        view = view[written:]


def write_array(array, path: Union[str, Path]) -> None:
    """Write a numpy array's raw bytes to a new file (like ``ndarray.tofile``, but a full disk or a refused write
    raises an ``OSError`` with its errno and the file's name, which :func:`resource_errors` turns into a message)."""
    import numpy as np
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        try:
            write_fd(fd, np.ascontiguousarray(array))
        finally:
            os.close(fd)
    except OSError as ex:
        ex.filename = ex.filename or str(path)
        raise


def read_meta(path: Union[str, Path]) -> Optional[Dict[str, Any]]:
    """The parsed ``pt_meta.json`` of a folder, ``None`` when there is none or it is not a JSON object.

    Raises:
        ResourceError: the file is there but cannot be read (no permission): not taken for "no artifact".
    """
    meta = Path(path) / 'pt_meta.json'
    if meta.is_symlink() or not meta.is_file():
        return None
    try:
        data = json.loads(meta.read_text(encoding='utf8'))
    except OSError as ex:
        if resource_error(ex, meta, 'read') is not ex:
            raise resource_error(ex, meta, 'read') from None
        return None
    except ValueError:
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
        if found is None and (path / 'pt_meta.json').is_file() and not (path / 'pt_meta.json').is_symlink():
            what = 'its pt_meta.json is damaged: not a JSON object'  # not "no pt_meta.json": the file is there
        if found is None and not any(path.iterdir()):
            return True  # an empty folder holds nothing to lose
        raise ArtifactKindError(f'{path} already exists and is not a {kind[0]}.{kind[1]} artifact ({what}); it is '
                                'left untouched: choose another output path or move it away')
    if not overwrite:
        raise FileExistsError(f'{path} already holds a {kind[0]}.{kind[1]} artifact; pass overwrite=True '
                              '(--overwrite) to replace it')
    return True


#: The build locks this process holds: (thread, lock file) -> depth. A thread that holds the lock of a path may
#: take it again (a get-or-build step around :func:`building`); another thread contends like another process.
_HELD: Dict[Tuple[int, str], int] = {}


def lock_file(path: Path) -> Path:
    """The build lock's file of ``path``: ``.<name>.lock`` beside it."""
    return path.parent / f'.{path.name}.lock'


@contextlib.contextmanager
def _lock(path: Path, wait: bool = False) -> Iterator[None]:
    """Hold the build lock of ``path`` (``.<name>.lock`` beside it, an ``flock``, released when the process dies).

    Busy: :class:`ArtifactBusyError`, or with ``wait`` a warning saying so, then the wait. Re-entrant within a
    thread. The holder removes the lock file as it releases; a waiter that then wins the lock of the removed file
    opens the new one and tries again, so two processes never both hold it.
    """
    import fcntl
    import threading
    lock_path = lock_file(path)
    key = (threading.get_ident(), os.path.abspath(lock_path))
    if key in _HELD:
        _HELD[key] += 1
        try:
            yield
        finally:
            _HELD[key] -= 1
        return
    told = False
    while True:
        try:
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except IsADirectoryError:
            raise ArtifactKindError(f'{lock_path} is a folder where the build lock of {path} goes; it is left '
                                    'untouched: move it away, or choose another output path') from None
        try:
            _check_lock_file(fd, lock_path, path)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as ex:
                if ex.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if not wait:
                    raise ArtifactBusyError(f'another process is building {path} right now; wait for it to '
                                            'finish') from None
                if not told:
                    import warnings
                    warnings.warn(f'another process is building {path}; waiting for it to finish (its lock is '
                                  f'{lock_path}), then using what it built', stacklevel=_outside_level())
                    told = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                current = os.stat(lock_path, follow_symlinks=False).st_ino
            except FileNotFoundError:
                current = None
        except BaseException:
            os.close(fd)
            raise
        if current == os.fstat(fd).st_ino:
            break
        os.close(fd)  # the lock of a file its holder removed while releasing it: take the new one
    _HELD[key] = 1
    try:
        yield
    finally:
        del _HELD[key]
        try:
            with contextlib.suppress(FileNotFoundError):
                lock_path.unlink()
        finally:
            os.close(fd)


def _check_lock_file(fd: int, lock_path: Path, path: Path) -> None:
    """Refuse a lock file that is not one: the package's locks are empty regular files, so a file with content (or a
    device, a pipe) at ``.<name>.lock`` is the user's, and is neither locked through nor removed on release."""
    import stat
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size:
        what = f'a file of {info.st_size} bytes' if stat.S_ISREG(info.st_mode) else 'not a regular file'
        raise ArtifactKindError(f'{lock_path} is {what}, where the (empty) build lock of {path} goes; it is left '
                                'untouched: move it away, or choose another output path')


def _outside_level() -> int:
    """The ``stacklevel`` (for a warning issued by the caller of this function) of the first frame outside this
    package and ``contextlib``: the line of the user's own code that asked for the artifact."""
    package = os.path.dirname(os.path.abspath(__file__))
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(package)
                                 or frame.f_code.co_filename == contextlib.__file__):
        frame, level = frame.f_back, level + 1
    return level


@contextlib.contextmanager
def exclusive(path: Union[str, Path]) -> Iterator[None]:
    """Hold the build lock of ``path`` for the block, waiting (with a warning) while another process or thread holds
    it. A get-or-build step takes it around "reuse what is built, else build it", so two runs that need the same
    artifact at once build it once: the second waits, then reuses it. Inside, :func:`building`, :func:`recover`
    and :func:`clean_stale` of the same path take the lock again without waiting (re-entrant)."""
    path = Path(path)
    with contextlib.ExitStack() as stack:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(_lock(path, wait=True))
        except ArtifactKindError:
            raise
        except OSError as ex:
            if ex.errno == errno.ELOOP:
                raise ArtifactKindError(f'{lock_file(path)} is a symbolic link where the '
                                        f'build lock of {path} goes; a lock file is never opened through a link: '
                                        'remove the link and rerun') from None
            if ex.errno not in (errno.EROFS, errno.EACCES, errno.EPERM):
                raise resource_error(ex, path, 'build') from None
            # a folder this user cannot write to: nothing can be built there, and what is built is read unlocked
            # (a build inside the block fails with its own message naming the folder)
        yield


def stale_temporaries(path: Path) -> list:
    """Leftovers of earlier builds of ``path``: exactly the names this module's temporaries get beside it
    (``.<name>.<8 random characters>.tmp``, ``.old`` or ``.del``), so no other file of the user's is ever taken for
    one. A ``.old`` folder may hold the only copy of the previous artifact (see :func:`recover`)."""
    prefix = f'.{path.name}.'
    pattern = re.compile(re.escape(prefix) + r'[a-z0-9_]{8}\.(?:tmp|old|del)')
    return [p for p in path.parent.glob(f'{glob_escape(prefix)}*') if pattern.fullmatch(p.name)]


def _backups(path: Path) -> list:
    """The ``.old`` folders beside ``path`` that hold a backup of a previous artifact (newest first)."""
    found = [p for p in stale_temporaries(path) if p.name.endswith('.old') and not p.is_symlink()
             and (p / BACKUP).exists()]
    return sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True)


def recover(path: Union[str, Path]) -> Optional[Path]:
    """Undo an interrupted swap of ``path``: when ``path`` is missing and a backup of the previous artifact is
    beside it (``.<name>.<8 chars>.old/artifact``), move the backup back (with a warning saying so); when ``path``
    holds a finished artifact, remove what killed builds left beside it (best effort: not on a read-only mount).

    Called before anything else by every builder and reader of an artifact path. Costs one directory listing when
    there is nothing to do, and writes nothing then (a finished artifact on a read-only mount stays usable).
    Returns the backup restored from, else ``None``.
    """
    import warnings
    path = Path(path)
    if not path.parent.is_dir() or not stale_temporaries(path):
        return None
    backups = _backups(path)
    if path.exists() or path.is_symlink():
        if not path.is_symlink() and read_meta(path) is not None:
            with contextlib.suppress(OSError, ArtifactBusyError), _lock(path):
                _remove_stale(path)
        elif backups:  # never removed while the path holds no finished artifact (see _remove_stale)
            warnings.warn(f'{path} is not a finished artifact, but a backup of the previous one is beside it in '
                          f'{backups[0]}; move that folder\'s "{BACKUP}" to {path} to get it back', stacklevel=3)
        return None
    if not backups:
        return None
    try:
        with _lock(path):
            backups = _backups(path)
            if path.exists() or path.is_symlink() or not backups:
                return None
            _rename(backups[0] / BACKUP, path)
            _remove(backups[0])
    except ArtifactBusyError:  # a build is swapping it right now
        return None
    except OSError as ex:
        raise resource_error(ex, path, f'restore the previous artifact from {backups[0].name} to') from None
    warnings.warn(f'{path} was missing after an interrupted rebuild; the previous artifact was restored from its '
                  f'backup {backups[0].name}', stacklevel=3)
    return backups[0]


def clean_stale(path: Union[str, Path]) -> int:
    """Remove the temporaries that killed builds of ``path`` left beside it (skipped while a build runs).

    First restores a backup when ``path`` is missing (:func:`recover`); a backup is removed only once ``path``
    holds a finished artifact again. Takes the lock (a write) only when there is something to remove. Returns how
    many were removed.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return 0
    recover(path)
    if not stale_temporaries(path):
        return 0
    try:
        with _lock(path):
            return _remove_stale(path)
    except ArtifactBusyError:  # being built right now: its temporary is not stale
        return 0


def _remove_stale(path: Path) -> int:
    """Remove leftovers (the lock held); backups only when ``path`` holds a finished artifact."""
    finished = not path.is_symlink() and read_meta(path) is not None
    removed = 0
    for item in stale_temporaries(path):
        if item.name.endswith('.old') and (item / BACKUP).exists() and not finished:
            continue  # possibly the only complete copy
        _remove(item)
        removed += 1
    return removed


def glob_escape(text: str) -> str:
    return ''.join(f'[{c}]' if c in '*?[' else c for c in text)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def _rename(source: Path, target: Path) -> None:
    os.replace(source, target)


def _step(name: str) -> None:
    """A point between two steps of a swap (tests interrupt the swap here; see ``SWAP_STEPS``)."""


#: The points of :func:`_swap` at which an interruption leaves a state worth testing.
SWAP_STEPS = ('start', 'exchanged', 'backup-folder-made', 'old-moved-aside', 'new-moved-in', 'old-marked-deleted')
BACKUP = 'artifact'
USE_EXCHANGE = True  # renameat2(RENAME_EXCHANGE) when the kernel and file system offer it (tests switch it off)


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``); ``False`` when not supported."""
    if not USE_EXCHANGE or not sys.platform.startswith('linux'):
        return False
    import ctypes
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return False
    if renameat2(-100, os.fsencode(a), -100, os.fsencode(b), 2) == 0:  # AT_FDCWD, RENAME_EXCHANGE
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _discard(folder: Path, path: Path) -> None:
    """Remove a replaced artifact: renamed to ``.<name>.<8 chars>.del`` first (one atomic step), so a half-removed
    folder is never taken for a backup."""
    import secrets
    trash = path.parent / f'.{path.name}.{secrets.token_hex(4)}.del'
    _rename(folder, trash)
    _step('old-marked-deleted')
    _remove(trash)


def _swap(tmp: Path, path: Path) -> None:
    """Put the finished ``tmp`` at ``path``, replacing what is there; recoverable at every instant.

    With an atomic exchange ``path`` always holds the old or the new artifact. Otherwise the old one is moved into
    a backup folder (``.<name>.<8 chars>.old/artifact``) before the new one moves in; an interruption in between
    leaves ``path`` missing, and the next build or open of ``path`` moves the backup back (:func:`recover`).
    """
    _step('start')
    if _exchange(tmp, path):
        _step('exchanged')  # path: the new artifact; tmp: the old one
        _discard(tmp, path)
        return
    old = Path(tempfile.mkdtemp(prefix=f'.{path.name}.', suffix='.old', dir=path.parent))
    _step('backup-folder-made')
    _rename(path, old / BACKUP)
    try:
        _step('old-moved-aside')  # path missing: only the backup holds the old artifact
        _rename(tmp, path)
    except BaseException:  # Ctrl-C or a failed rename: put the old one back at once (a kill leaves it to recover)
        if not path.exists() and (old / BACKUP).exists():
            _rename(old / BACKUP, path)
        raise
    _step('new-moved-in')
    _discard(old, path)


#: The file inside a folder artifact in which its build records the size and SHA-256 of each of its regular files
#: (links excluded): ``{"format_version": 1, "files": {"<path inside the folder>": {"size": N, "sha256": HEX}}}``.
#: Files added later (another BM25 parameter set of PISA, a graph inside the vectors' folder) are not in it.
FILES_RECORD = 'garen_files.json'


def file_sha256(path: Union[str, Path]) -> str:
    """The SHA-256 (hex) of a file's content, read in chunks of 1 MiB without following a link at ``path``."""
    digest = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, 'rb') as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def _entry(file: Path) -> Dict[str, Any]:
    return {'size': os.lstat(file).st_size, 'sha256': file_sha256(file)}


def record_files(folder: Union[str, Path]) -> Dict[str, Dict[str, Any]]:
    """Write :data:`FILES_RECORD` in ``folder``: the size and SHA-256 of every regular file under it (links, and
    the record itself, left out). Called last in a build, when no file of the artifact changes any more. Returns
    the files recorded."""
    import stat
    folder = Path(folder)
    files = {}
    for base, dirs, names in os.walk(folder):  # links to folders are not followed
        dirs.sort()
        for name in sorted(names):
            file = Path(base) / name
            relative = file.relative_to(folder).as_posix()
            if relative != FILES_RECORD and stat.S_ISREG(os.lstat(file).st_mode):
                files[relative] = _entry(file)
    write_json(folder / FILES_RECORD, {'format_version': 1, 'files': files})
    return files


def rerecord_file(file: Union[str, Path]) -> bool:
    """After the project itself rewrote ``file`` in place (e.g. a repaired ``docnos.npids``): its new size and
    SHA-256 in the :data:`FILES_RECORD` of its folder, when that records it. Writes nothing otherwise; returns
    whether the record was updated."""
    file = Path(file)
    record = file.parent / FILES_RECORD
    if record.is_symlink() or not record.is_file():
        return False
    try:
        data = json.loads(record.read_text(encoding='utf8'))
    except ValueError:
        return False  # a damaged record: the next reuse names it
    files = data.get('files') if isinstance(data, dict) else None
    if not isinstance(files, dict) or file.name not in files:
        return False
    files[file.name] = _entry(file)
    write_json(record, data)
    return True


@contextlib.contextmanager
def building(path: Union[str, Path], kind: Tuple[str, str], *, overwrite: bool = False,
             record: bool = False) -> Iterator[Path]:
    """Build a folder artifact beside ``path`` and swap it in when the block completes.

    Yields the temporary folder to write into (it must end up with a ``pt_meta.json``). With ``record``, the size
    and SHA-256 of each of its files are recorded in it (:func:`record_files`) once the block completes, before the
    swap. An interrupted swap of
    ``path`` is undone first (:func:`recover`), then stale temporaries of ``path`` from killed builds are removed.
    On an exception the temporary is removed and ``path`` is unchanged. Errors of the file system (disk full, no
    permission, read-only) name the path, the cause and the fix (:func:`resource_error`).

    Raises:
        FileExistsError: ``path`` holds an artifact of this kind and ``overwrite`` is false.
        ArtifactKindError: ``path`` is a link, a file or a folder that is not an artifact of this kind.
        RuntimeError: another process is building the same path.
    """
    path = Path(path)
    with resource_errors(path, 'build'):
        path.parent.mkdir(parents=True, exist_ok=True)
        recover(path)
        replace = check_target(path, kind, overwrite=overwrite)
        with _lock(path):
            _remove_stale(path)
            tmp = Path(tempfile.mkdtemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent))
            try:
                try:
                    yield tmp
                except Exception as ex:
                    if not isinstance(ex, OSError) and disk_full(path.parent):  # native code (PISA) has no errno
                        raise ResourceError(errno.ENOSPC, f'cannot build {path}: no space left on device (the build '
                                            f'failed with {type(ex).__name__}: {str(ex)[:200]}); '
                                            f'{RESOURCE_FIXES[errno.ENOSPC]}', str(path)) from ex
                    raise
                if read_meta(tmp) is None:
                    raise RuntimeError(f'internal error: the build of {path} wrote no pt_meta.json')
                _no_escaping_links(tmp)
                if record:
                    record_files(tmp)
                os.chmod(tmp, 0o755)
                if replace and path.exists():
                    _swap(tmp, path)
                else:
                    _rename(tmp, path)
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
    """Open a file inside an artifact without following a symbolic link at that name; ``mode`` as for
    :func:`open` (``'w'`` truncates, ``'a'`` appends, ``'+'`` adds the other direction)."""
    flags = {'a': os.O_WRONLY | os.O_CREAT | os.O_APPEND, 'r': os.O_RDONLY,
             'w': os.O_WRONLY | os.O_CREAT | os.O_TRUNC}[mode[0]]
    if '+' in mode:
        flags = (flags & ~(os.O_WRONLY | os.O_RDONLY)) | os.O_RDWR
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW, 0o644)
    except OSError as ex:
        if ex.errno == errno.ELOOP:
            raise ArtifactKindError(f'{path} is a symbolic link; files inside an artifact are never written or read '
                                    'through links (the artifact may have been tampered with)') from None
        raise resource_error(ex, path, 'read' if mode[0] == 'r' else 'write') from None
    return os.fdopen(fd, mode, **({} if 'b' in mode else {'encoding': 'utf8'}))


def atomic_write(path: Union[str, Path], data: Union[str, bytes]) -> None:
    """Replace one file atomically: a fresh ``O_EXCL`` temporary beside it, fsync, rename (a link is replaced,
    never followed; a folder at ``path`` is an :class:`ArtifactKindError` naming it, left as it is)."""
    path = Path(path)
    with resource_errors(path):
        fd, tmp = tempfile.mkstemp(prefix=f'.{path.name}.', suffix='.tmp', dir=path.parent)
        try:
            try:
                os.fchmod(fd, 0o644)
                write_fd(fd, data.encode('utf8') if isinstance(data, str) else data)
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.replace(tmp, path)
            except IsADirectoryError:  # named by its temporary otherwise
                raise ArtifactKindError(f'{path} is a folder where this file is written; it is left untouched: move '
                                        'it away and rerun, or choose another path') from None
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def write_json(path: Union[str, Path], data: Dict[str, Any]) -> None:
    """:func:`atomic_write` of a JSON object (sorted keys, indented). Strict JSON only: NaN and infinities are
    refused (other tools reject them), so a writer stores ``None`` for an undefined number."""
    atomic_write(path, json.dumps(data, indent=1, sort_keys=True, allow_nan=False))
