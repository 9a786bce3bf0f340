"""Sharing artifacts without surprises: one-line errors when the Hugging Face Hub cannot be reached, and the
offline route (a package file built with ``build_package``, served by any static HTTP server or copied as a file,
then loaded).

``pt.Artifact.from_url`` downloads ``http(s)://`` packages and loads an unpacked package folder given as a path; it
refuses ``file://`` URLs and package files. :func:`load_package` loads a package file (``.tar`` or ``.tar.lz4``)
from a path.
"""
from __future__ import annotations

import contextlib
import os
import socket
import tarfile
from pathlib import Path
from typing import Iterator, Optional, Union

from ._atomic import RESOURCE_FIXES, ArtifactKindError, building, exclusive, read_meta

__all__ = ['load_package', 'hub_errors', 'OFFLINE_ROUTE']

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
        **kwargs: passed to the artifact's constructor.

    Returns:
        The artifact (``pt.Artifact.load`` of the unpacked folder), e.g. a ``GroupCorpusGraph``.

    Raises:
        FileNotFoundError: ``package`` does not exist.
        ArtifactKindError: ``folder`` holds something that is not an unpacked package (left untouched).
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


def _unpack(package: Path, out: Path) -> None:
    import pyterrier as pt
    with contextlib.ExitStack() as stack:
        stream = stack.enter_context(open(package, 'rb'))
        if package.name.endswith('.lz4'):
            from lz4.frame import LZ4FrameFile
            stream = stack.enter_context(LZ4FrameFile(stream))
        tar = stack.enter_context(tarfile.open(fileobj=stream, mode='r|'))
        for member in tar:
            if (member.isfile() or member.isdir()) and pt.io.path_is_under_base(member.path, str(out)):
                tar.extract(member, out, set_attrs=False)
