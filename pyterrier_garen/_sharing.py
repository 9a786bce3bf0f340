"""Sharing artifacts without surprises: one-line errors when the Hugging Face Hub cannot be reached, and the
offline route (a package file built with ``build_package``, served by any static HTTP server or copied as a file,
then loaded).

``pt.Artifact.from_url`` downloads ``http(s)://`` packages and loads an unpacked package folder given as a path; it
refuses ``file://`` URLs and package files. :func:`load_package` loads a package file (``.tar`` or ``.tar.lz4``)
from a path.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import socket
import tarfile
from pathlib import Path
from typing import Iterator, Optional, Union

from ._atomic import RESOURCE_FIXES, ArtifactKindError, building, exclusive, read_meta, resource_error
from ._checks import ArtifactError, read_meta_file
from ._errors import one_line

__all__ = ['load_package', 'hub_errors', 'OFFLINE_ROUTE', 'PackageError']

OFFLINE_ROUTE = ('offline route: groups.build_package("groups.tar.lz4"), copy that file or serve its folder '
                 '(python -m http.server), then garen.load_package("groups.tar.lz4") or '
                 'pt.Artifact.from_url("http://HOST:PORT/groups.tar.lz4") (README "Sharing")')

_NETWORK_NAMES = ('Connect', 'Timeout', 'OfflineModeIsEnabled', 'NameResolution', 'NetworkError', 'ProxyError')
#: OSErrors of the local file system, not of the network (a missing file, no permission, a full or read-only disk)
_LOCAL_ERRORS = (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)
_LOCAL_ERRNOS = tuple(RESOURCE_FIXES)  # a full, read-only or refused disk: the codes ResourceError names


def _network_cause(ex: BaseException) -> Optional[str]:
    """A short description of the network failure behind ``ex`` (its chain included), or None."""
    seen = set()
    while ex is not None and id(ex) not in seen:
        seen.add(id(ex))
        name = type(ex).__name__
        if getattr(ex, 'code', None) is not None or getattr(ex, 'response', None) is not None:
            return None  # the server answered (an HTTP status): not a network failure
        is_oserror = (isinstance(ex, OSError) and not isinstance(ex, _LOCAL_ERRORS)
                      and (isinstance(ex, (socket.gaierror, socket.herror)) or ex.errno not in _LOCAL_ERRNOS))
        if is_oserror or any(n in name for n in _NETWORK_NAMES):
            reason = getattr(ex, 'reason', None) or ex
            return f'{name}: {str(reason).splitlines()[0][:200] if str(reason) else name}'
        ex = ex.__cause__ or ex.__context__
    return None


@contextlib.contextmanager
def hub_errors(action: str) -> Iterator[None]:
    """Within the block, a failure to reach the Hub becomes one ``ConnectionError`` line naming the cause and the
    offline route (other errors pass unchanged)."""
    try:
        yield
    except Exception as ex:  # noqa: BLE001 - only network failures are rewritten, the rest re-raised as they are
        cause = _network_cause(ex)
        if cause is None:
            raise
        offline = ' (HF_HUB_OFFLINE is set)' if os.environ.get('HF_HUB_OFFLINE') not in (None, '', '0') else ''
        raise ConnectionError(f'{action}: the Hugging Face Hub cannot be reached{offline} ({cause}); '
                              f'{OFFLINE_ROUTE}') from None


def _strip_suffix(name: str) -> str:
    for suffix in ('.tar.lz4', '.tar'):
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name + '.unpacked'


def load_package(package: Union[str, Path], folder: Optional[Union[str, Path]] = None, **kwargs):
    """Load an artifact from a package file on disk (what ``build_package`` writes), or an unpacked folder.

    Args:
        package: a ``.tar.lz4`` / ``.tar`` package file, or a folder holding an unpacked package (``pt_meta.json``).
        folder: where a package file is unpacked; default: beside it, without the ``.tar.lz4`` suffix. A folder
            there holding an artifact (``pt_meta.json``) is loaded as it is (unpacked before); an empty folder is
            filled; anything else there (a file, a link, a folder of other files) is refused, left untouched. The
            package is unpacked beside the folder and moved in when complete; a killed load leaves no folder, and
            its temporary is removed by the next load.
        **kwargs: passed to the artifact's constructor (the package is checked without them: one its class refuses
            is that class's error, and the unpacked folder is kept).

    Returns:
        The artifact (``pt.Artifact.load`` of the unpacked folder), e.g. a ``GroupCorpusGraph``.

    Raises:
        FileNotFoundError: ``package`` does not exist.
        ArtifactKindError: ``folder`` holds something that is not an unpacked package (left untouched).
        PackageError: the package is empty, truncated or damaged (or differs from the ``expected_sha256`` of the
            ``.json`` record ``build_package`` wrote beside it), holds a link, a device, a path outside the folder
            or more than ``MAX_MEMBERS`` members, or holds no artifact that opens; nothing is written at
            ``folder`` then.
    """
    import pyterrier as pt
    package = Path(package)
    if package.is_dir():
        return pt.Artifact.load(str(package), **kwargs)
    if not package.is_file():
        raise FileNotFoundError(f'package {str(package)!r} does not exist (build one with '
                                'artifact.build_package(path))')
    target = Path(folder) if folder is not None else package.with_name(_strip_suffix(package.name))
    with exclusive(target):  # a second load of the same folder waits, then reuses what the first unpacked
        if target.is_symlink() or read_meta(target) is None:
            _check_destination(package, target)
            with building(target, _UNPACKED) as out:  # a killed load's temporary is removed by the next one
                _unpack(package, out)
    return pt.Artifact.load(str(target), **kwargs)


_UNPACKED = ('unpacked', 'package')  # no existing artifact is ever replaced: _check_destination refuses them first


def _check_destination(package: Path, target: Path) -> None:
    """Refuse a destination that holds something of the user's (a link, a file, a folder with files but no
    ``pt_meta.json``) before anything is unpacked; an empty folder is filled."""
    if target.is_symlink():
        what = 'is a symbolic link'
    elif target.exists() and not target.is_dir():
        what = 'is a file'
    elif target.is_dir() and any(target.iterdir()):
        what = 'is a folder that holds files but no valid pt_meta.json (not an unpacked package)'
    else:
        return
    raise ArtifactKindError(f'cannot unpack {package} into {target}: it {what}; it is left untouched: pass another '
                            'folder (load_package(package, folder=...)) or move it away')


#: members a package may hold: an artifact has a few files; millions of (empty) members are an attack on the disk
MAX_MEMBERS = 100_000
_LZ4_MAGIC = b'\x04\x22\x4d\x18'
_READ_ERRORS = (tarfile.TarError, EOFError, RuntimeError, UnicodeDecodeError, OSError)  # lz4: RuntimeError


class PackageError(ArtifactError):
    """A package file is damaged, hostile or holds no artifact; nothing was written at the destination."""


def _refuse(package: Path, problem: str) -> PackageError:
    return PackageError(f'package {package} {problem}; nothing was unpacked: re-download it, or rebuild it with '
                        'artifact.build_package(path)')


def _unpack(package: Path, out: Path) -> None:
    """Unpack ``package`` into the fresh folder ``out``: regular files and folders only, each inside ``out``; the
    result must match the package's ``.json`` record (when beside it) and open as an artifact."""
    _check_record(package)
    with open(package, 'rb') as stream:
        compressed = stream.read(4) == _LZ4_MAGIC  # by content, not by name: build_package always compresses
    if not compressed and package.stat().st_size == 0:
        raise _refuse(package, 'is empty (an interrupted copy or download?)')
    try:
        with contextlib.ExitStack() as stack:
            stream = stack.enter_context(open(package, 'rb'))
            if compressed:
                from lz4.frame import LZ4FrameFile
                stream = stack.enter_context(LZ4FrameFile(stream))
            tar = stack.enter_context(tarfile.open(fileobj=stream, mode='r|'))
            seen = set()
            for count, member in enumerate(tar, 1):
                name = _member_path(package, member, count, seen)
                if member.isdir():
                    (out / name).mkdir(0o700, parents=True, exist_ok=True)  # tarfile's mode; the package's is not used
                    continue
                (out / name).parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(out / name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
                with os.fdopen(fd, 'wb') as fout:
                    shutil.copyfileobj(tar.extractfile(member), fout)
            stream.read()  # to the end: a cut lz4 stream fails here, not silently
    except PackageError:
        raise
    except _READ_ERRORS as ex:
        if isinstance(ex, OSError) and resource_error(ex, out, 'write') is not ex:
            raise
        raise _refuse(package, f'cannot be read ({type(ex).__name__}: {one_line(ex)[:200] or "truncated"}): it is '
                      'truncated, damaged or not a .tar/.tar.lz4 package') from None
    _check_unpacked(package, out)


def _member_path(package: Path, member: tarfile.TarInfo, count: int, seen: set) -> str:
    """The member's path inside the destination; refuses links, devices, paths that leave the folder, repeats."""
    if count > MAX_MEMBERS:
        raise _refuse(package, f'holds more than {MAX_MEMBERS} members (an artifact has a few files)')
    if not (member.isfile() or member.isdir()):
        kind = 'a symbolic link' if member.issym() else 'a hard link' if member.islnk() else 'a device or pipe'
        raise _refuse(package, f'holds {member.name!r}, {kind}; a package holds only files and folders')
    parts = member.name.replace('\\', '/').split('/')
    if member.name.startswith('/') or '..' in parts:
        raise _refuse(package, f'holds {member.name!r}, a path outside the folder it is unpacked to')
    name = '/'.join(p for p in parts if p not in ('', '.'))
    if not name or name in seen:
        raise _refuse(package, f'holds {member.name!r} {"twice" if name else "(an empty name)"}')
    seen.add(name)
    return name


def _check_record(package: Path) -> None:
    """The package's ``.json`` record (written beside it by ``build_package``), when there: the file's sha256."""
    record = package.with_name(package.name + '.json')
    try:
        expected = json.loads(record.read_text(encoding='utf8')).get('expected_sha256')
    except (OSError, ValueError, AttributeError):
        return  # no record (a package copied alone), or not one of build_package's
    if not isinstance(expected, str):
        return
    digest = hashlib.sha256()
    with open(package, 'rb') as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b''):
            digest.update(chunk)
    if digest.hexdigest() != expected.lower():
        raise _refuse(package, f'differs from what was built (its sha256 is not the expected_sha256 of {record.name}):'
                      ' it is truncated or damaged')


def _check_unpacked(package: Path, out: Path) -> None:
    """The unpacked folder must be an artifact that opens, before it is moved to the destination. It is opened
    without the caller's arguments: an argument its class refuses is the caller's mistake, said by that class when
    :func:`load_package` opens the folder, not a damaged package."""
    import pyterrier as pt
    try:
        read_meta_file(out, fix='')
        artifact = pt.Artifact.load(str(out))
        if getattr(artifact, 'has_summaries', None) is not None and artifact.meta.get('summaries') is not None:
            artifact.summary_record(0)  # the summaries it records are there and readable (opening reads none)
    except Exception as ex:  # noqa: BLE001 - whatever the artifact's class raises, said in the one line
        if isinstance(ex, OSError) and resource_error(ex, out, 'read') is not ex:
            raise
        detail = one_line(str(ex).replace(f'{out}{os.sep}', '').replace(str(out), 'the package'))
        raise _refuse(package, f'holds no artifact that opens ({type(ex).__name__}: {detail.rstrip("; ")[:300]})'
                      ) from None
