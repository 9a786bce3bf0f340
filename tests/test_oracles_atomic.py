"""Oracles for safe writing (pyterrier_garen._atomic): the messages of a refused read or write, the formats and
modes of what is written, the names of temporaries, recovery and cleanup with their counts and their re-checks under
the lock, the atomic exchange with relative paths, links inside and outside an artifact, and short writes. Every
expected value is written out by hand (the twenty-first mutation run, docs/testing.md)."""
import contextlib
import errno
import json
import os
import re
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import pyterrier_garen._atomic as atomic
from pyterrier_garen._atomic import ResourceError

from _locks import held_elsewhere

KIND = ('test_artifact', 'v1')
TEMPORARY = r'[a-z0-9_]{8}'  # what tempfile puts between prefix and suffix


@pytest.fixture
def umask():
    """A known umask (022), restored afterwards, so that file modes can be pinned."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _artifact(folder, text='old'):
    """A finished artifact of KIND at ``folder``."""
    folder.mkdir(parents=True)
    (folder / 'pt_meta.json').write_text(json.dumps({'type': KIND[0], 'format': KIND[1]}))
    (folder / 'data.txt').write_text(text)
    return folder


def _leftover(path, random, suffix, backup=None):
    """A leftover of a killed build beside ``path``: ``.<name>.<random>.<suffix>``; a backup holds ``artifact``."""
    item = path.parent / f'.{path.name}.{random}.{suffix}'
    item.mkdir()
    if backup is not None:
        _artifact(item / 'artifact', backup)
    return item


def _build(path, write, **kwargs):
    """Build an artifact of KIND at ``path``, ``write(tmp)`` filling the temporary folder."""
    with atomic.building(path, KIND, **kwargs) as tmp:
        write(tmp)


# ---- resource_error: which errors become a ResourceError, and its message


def test_resource_error_leaves_other_errors_alone(tmp_path):
    value = ValueError('not a file system error')
    assert atomic.resource_error(value, tmp_path) is value
    already = ResourceError(errno.ENOSPC, 'cannot write x: ...', 'x')
    assert atomic.resource_error(already, tmp_path) is already
    missing = FileNotFoundError(errno.ENOENT, 'No such file or directory', 'x')
    assert atomic.resource_error(missing, tmp_path) is missing


def test_resource_error_message_names_the_path_cause_and_fix():
    ex = PermissionError(errno.EACCES, 'Permission denied', '/data/out')
    new = atomic.resource_error(ex, '/data/out')  # the default action is 'write'
    assert isinstance(new, ResourceError)
    assert str(new) == ('cannot write /data/out: permission denied; check the permissions (ls -l) or choose a '
                        'folder you can write to')
    assert (new.errno, new.filename) == (errno.EACCES, '/data/out')
    read = atomic.resource_error(ex, '/data/out', 'read')
    assert str(read) == ('cannot read /data/out: permission denied; check the permissions (ls -l) or choose a '
                         'folder you can read')


def test_resource_error_names_the_inner_file_that_failed():
    ex = OSError(errno.EROFS, 'Read-only file system', '/data/out/part.bin')
    new = atomic.resource_error(ex, '/data/out', 'build')
    assert str(new) == ('cannot build /data/out: read-only file system (/data/out/part.bin); the file system is '
                        'read-only: choose a writable folder to build in (a finished artifact can still be read '
                        'from it)')
    assert new.filename == '/data/out/part.bin'


def test_resource_error_without_a_file_name_names_the_path():
    new = atomic.resource_error(OSError(errno.EDQUOT, 'Disk quota exceeded'), Path('/q/x'))
    assert str(new) == ('cannot write /q/x: disk quota exceeded; the disk quota is exhausted: free some space (or '
                        'choose another folder) and rerun')
    assert (new.errno, new.filename) == (errno.EDQUOT, '/q/x')


def test_numpys_short_write_is_a_full_disk_only_without_an_errno():
    short = OSError('1000 requested and 12 written')
    new = atomic.resource_error(short, '/d/a.bin')
    assert str(new) == ('cannot write /d/a.bin: no space left on device; free some disk space (or choose a folder on '
                        'another disk) and rerun; finished steps are kept')
    assert new.errno == errno.ENOSPC
    # with an errno of its own, the errno decides, whatever the text says
    denied = PermissionError(errno.EACCES, '1000 requested and 12 written')
    assert atomic.resource_error(denied, '/d/a.bin').errno == errno.EACCES
    other = OSError(errno.EIO, '1000 requested and 12 written')
    assert atomic.resource_error(other, '/d/a.bin') is other


# ---- disk_full, and a build that fails on a full disk


def test_disk_full_reads_the_free_blocks(tmp_path, monkeypatch):
    assert atomic.disk_full(tmp_path) is False  # pytest's folder has room
    assert atomic.disk_full(tmp_path / 'missing') is False
    monkeypatch.setattr(os, 'statvfs', lambda folder: SimpleNamespace(f_bavail=0))
    assert atomic.disk_full(tmp_path) is True
    monkeypatch.setattr(os, 'statvfs', lambda folder: SimpleNamespace(f_bavail=1))
    assert atomic.disk_full(tmp_path) is False


def test_a_build_failing_without_an_errno_on_a_full_disk_says_so(tmp_path, monkeypatch):
    path = tmp_path / 'out'
    monkeypatch.setattr(os, 'statvfs', lambda folder: SimpleNamespace(f_bavail=0))
    with pytest.raises(ResourceError) as info:
        with atomic.building(path, KIND):
            raise RuntimeError('native code stopped')
    assert info.value.errno == errno.ENOSPC
    assert str(info.value).startswith(f'cannot build {path}: no space left on device (the build failed with '
                                      'RuntimeError: native code stopped); free some disk space')
    assert not path.exists()
    monkeypatch.setattr(os, 'statvfs', lambda folder: SimpleNamespace(f_bavail=7))
    with pytest.raises(RuntimeError, match='native code stopped'):
        with atomic.building(path, KIND):
            raise RuntimeError('native code stopped')


# ---- write_fd and write_array


def test_write_fd_goes_on_after_a_short_write(tmp_path, monkeypatch):
    real_write = os.write
    sizes = []

    def three_at_a_time(fd, data):
        sizes.append(len(data))
        return real_write(fd, data[:3])
    monkeypatch.setattr(os, 'write', three_at_a_time)
    target = tmp_path / 'out.bin'
    atomic.write_array(np.arange(5, dtype=np.uint16), target)
    assert target.read_bytes() == bytes([0, 0, 1, 0, 2, 0, 3, 0, 4, 0])
    assert sizes == [10, 7, 4, 1]


def test_write_array_mode_truncation_and_links(tmp_path, umask):
    fresh = tmp_path / 'fresh.bin'
    atomic.write_array(np.array([7], dtype=np.uint8), fresh)
    assert fresh.stat().st_mode & 0o777 == 0o644
    target = tmp_path / 'a.bin'
    target.write_bytes(b'0123456789abcdef')
    atomic.write_array(np.array([1, 2], dtype=np.uint8), target)
    assert target.read_bytes() == b'\x01\x02'  # the longer old content is cut
    theirs = tmp_path / 'theirs.bin'
    theirs.write_bytes(b'keep')
    link = tmp_path / 'link.bin'
    link.symlink_to(theirs)
    with pytest.raises(OSError) as info:
        atomic.write_array(np.array([1], dtype=np.uint8), link)
    assert info.value.errno == errno.ELOOP
    assert theirs.read_bytes() == b'keep'


def test_write_array_names_the_file_when_a_write_fails(tmp_path, monkeypatch):
    def full(fd, data):
        raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(os, 'write', full)
    with pytest.raises(OSError) as info:
        atomic.write_array(np.zeros(4), tmp_path / 'z.bin')
    assert info.value.filename == str(tmp_path / 'z.bin')
    opened = OSError(errno.ENOSPC, 'No space left on device', 'the-name-it-had')
    monkeypatch.setattr(os, 'write', lambda fd, data: (_ for _ in ()).throw(opened))
    with pytest.raises(OSError) as info:
        atomic.write_array(np.zeros(4), tmp_path / 'y.bin')
    assert info.value.filename == 'the-name-it-had'


# ---- read_meta


def test_read_meta_refuses_links_and_what_is_not_an_object(tmp_path):
    real = _artifact(tmp_path / 'real')
    linked = tmp_path / 'linked'
    linked.mkdir()
    (linked / 'pt_meta.json').symlink_to(real / 'pt_meta.json')
    assert atomic.read_meta(real) == {'type': 'test_artifact', 'format': 'v1'}
    assert atomic.read_meta(linked) is None
    listed = tmp_path / 'listed'
    listed.mkdir()
    (listed / 'pt_meta.json').write_text('[1, 2]')
    assert atomic.read_meta(listed) is None
    (listed / 'pt_meta.json').write_text('{"type": ')
    assert atomic.read_meta(listed) is None
    assert atomic.read_meta(tmp_path / 'nothing') is None


def test_read_meta_unreadable_is_an_error_not_no_artifact(tmp_path, monkeypatch):
    folder = _artifact(tmp_path / 'a')
    meta = folder / 'pt_meta.json'
    real_read_text = Path.read_text

    def denied(self, *args, **kwargs):
        if self == meta:
            raise PermissionError(errno.EACCES, 'Permission denied', str(meta))
        return real_read_text(self, *args, **kwargs)
    monkeypatch.setattr(Path, 'read_text', denied)
    with pytest.raises(ResourceError) as info:
        atomic.read_meta(folder)
    assert str(info.value) == (f'cannot read {meta}: permission denied; check the permissions (ls -l) or choose a '
                               'folder you can read')

    def broken(self, *args, **kwargs):
        raise OSError(errno.EIO, 'Input/output error', str(meta))
    monkeypatch.setattr(Path, 'read_text', broken)
    assert atomic.read_meta(folder) is None  # not a refusal a user can fix: no artifact there


# ---- check_target


def test_check_target_says_whether_there_is_something_to_replace(tmp_path):
    assert atomic.check_target(tmp_path / 'missing', KIND, overwrite=False) is False
    (tmp_path / 'empty').mkdir()
    assert atomic.check_target(tmp_path / 'empty', KIND, overwrite=False) is True
    _artifact(tmp_path / 'full')
    assert atomic.check_target(tmp_path / 'full', KIND, overwrite=True) is True


# ---- backups, recover, clean_stale


@pytest.mark.parametrize(('meta', 'what'), [
    (None, 'no pt_meta.json'),
    (b'{"type": "test_art', 'its pt_meta.json is damaged: not a JSON object'),  # was "no pt_meta.json" too
    (b'\xf6\x00', 'its pt_meta.json is damaged: not a JSON object'),
    (b'[1]', 'its pt_meta.json is damaged: not a JSON object'),
])
def test_check_target_tells_a_damaged_pt_meta_from_none(tmp_path, meta, what):
    path = tmp_path / 'a'
    path.mkdir()
    (path / 'edges.u32.np').write_bytes(b'data')
    if meta is not None:
        (path / 'pt_meta.json').write_bytes(meta)
    with pytest.raises(atomic.ArtifactKindError) as refused:
        atomic.check_target(path, KIND, overwrite=True)
    assert str(refused.value) == (f'{path} already exists and is not a test_artifact.v1 artifact ({what}); it is '
                                  'left untouched: choose another output path or move it away')
    assert (path / 'edges.u32.np').read_bytes() == b'data'


def test_backups_are_old_folders_holding_an_artifact_newest_first(tmp_path):
    path = tmp_path / 'g'
    older = _leftover(path, 'zzzzzzzz', 'old', backup='older')  # the larger name is the older one
    newer = _leftover(path, 'aaaaaaaa', 'old', backup='newer')
    os.utime(older, ns=(1_000_000_000, 1_000_000_000))
    os.utime(newer, ns=(2_000_000_000, 2_000_000_000))
    _leftover(path, 'bbbbbbbb', 'tmp', backup='a build')   # holds "artifact", but a build's temporary
    _leftover(path, 'cccccccc', 'old')                      # an .old folder without a backup in it
    (path.parent / f'.{path.name}.dddddddd.old').symlink_to(newer)  # a link is never a backup
    assert atomic._backups(path) == [newer, older]


def test_recover_writes_nothing_when_there_is_nothing_to_do(tmp_path, monkeypatch):
    path = _artifact(tmp_path / 'g')

    def no_lock(p):
        raise AssertionError('recover took the lock with nothing to do')
    monkeypatch.setattr(atomic, '_lock', no_lock)
    assert atomic.recover(path) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == ['g']


def test_recover_skips_cleanup_while_a_build_holds_the_lock(tmp_path):
    path = _artifact(tmp_path / 'g')
    leftover = _leftover(path, 'abcdefgh', 'tmp')
    with held_elsewhere(path):
        assert atomic.recover(path) is None
        assert leftover.exists()  # a running build's temporary is not stale
    assert atomic.recover(path) is None
    assert not leftover.exists()


def test_recover_cleanup_is_best_effort(tmp_path, monkeypatch):
    path = _artifact(tmp_path / 'g')
    leftover = _leftover(path, 'abcdefgh', 'tmp')

    def read_only(p):
        raise OSError(errno.EROFS, 'Read-only file system', str(p))
    monkeypatch.setattr(atomic, '_lock', read_only)
    assert atomic.recover(path) is None
    assert leftover.exists()


def test_recover_rechecks_under_the_lock(tmp_path, monkeypatch):
    """Between the first look and the lock another process may have restored or rebuilt the path."""
    path = tmp_path / 'g'
    backup = _leftover(path, 'abcdefgh', 'old', backup='previous')
    real_lock = atomic._lock

    @contextlib.contextmanager
    def rebuilt_meanwhile(p):
        _artifact(path, 'rebuilt')
        with real_lock(p):
            yield
    monkeypatch.setattr(atomic, '_lock', rebuilt_meanwhile)
    assert atomic.recover(path) is None
    assert (path / 'data.txt').read_text() == 'rebuilt'
    assert (backup / 'artifact' / 'data.txt').read_text() == 'previous'


def test_recover_rechecks_the_backups_under_the_lock(tmp_path, monkeypatch):
    path = tmp_path / 'g'
    backup = _leftover(path, 'abcdefgh', 'old', backup='previous')
    answers = [[backup], []]  # another process restored it between the two looks
    monkeypatch.setattr(atomic, '_backups', lambda p: answers.pop(0))
    assert atomic.recover(path) is None
    assert not path.exists()


def test_recover_names_the_backup_when_it_cannot_restore(tmp_path, monkeypatch):
    path = tmp_path / 'g'
    _leftover(path, 'abcdefgh', 'old', backup='previous')

    def denied(source, target):
        raise PermissionError(errno.EACCES, 'Permission denied')
    monkeypatch.setattr(atomic, '_rename', denied)
    with pytest.raises(ResourceError) as info:
        atomic.recover(path)
    assert str(info.value) == (f'cannot restore the previous artifact from .g.abcdefgh.old to {path}: permission '
                               'denied; check the permissions (ls -l) or choose a folder you can write to')


def test_clean_stale_counts_what_it_removed(tmp_path):
    assert atomic.clean_stale(tmp_path / 'no-such-folder' / 'g') == 0
    path = tmp_path / 'g'
    assert atomic.clean_stale(path) == 0
    for random in ('aaaaaaaa', 'bbbbbbbb'):
        _leftover(path, random, 'tmp')
    _leftover(path, 'cccccccc', 'del')
    (tmp_path / '.g.too-long-name.tmp').mkdir()  # not a name this module gives: the user's, kept
    assert atomic.clean_stale(path) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ['.g.too-long-name.tmp']
    _leftover(path, 'dddddddd', 'tmp')
    with held_elsewhere(path):
        assert atomic.clean_stale(path) == 0
    assert atomic.clean_stale(path) == 1


def test_remove_stale_keeps_every_backup_but_removes_everything_after_one(tmp_path, monkeypatch):
    path = tmp_path / 'g'  # missing: a backup may be the only copy
    backup = _leftover(path, 'aaaaaaaa', 'old', backup='only copy')
    rest = [_leftover(path, random, 'tmp') for random in ('bbbbbbbb', 'cccccccc')]
    monkeypatch.setattr(atomic, 'stale_temporaries', lambda p: [backup] + rest)  # the backup comes first
    assert atomic._remove_stale(path) == 2
    assert backup.exists()
    assert not any(r.exists() for r in rest)


def test_stale_names_with_glob_characters(tmp_path):
    assert atomic.glob_escape('a*b?c[d]e') == 'a[*]b[?]c[[]d]e'
    path = tmp_path / 'run[1]*'
    leftover = _leftover(path, 'abcdefgh', 'tmp')
    (tmp_path / '.run1x.abcdefgh.tmp').mkdir()  # what the unescaped pattern would also match
    assert atomic.stale_temporaries(path) == [leftover]


# ---- _remove


def test_remove_files_links_and_folders(tmp_path, monkeypatch):
    target = tmp_path / 'theirs'
    target.mkdir()
    (target / 'f').write_text('x')
    link = tmp_path / 'link'
    link.symlink_to(target)
    atomic._remove(link)
    assert not link.is_symlink()  # the link goes, never what it points to
    assert (target / 'f').read_text() == 'x'
    single = tmp_path / 'single'
    single.write_text('x')
    atomic._remove(single)
    assert not single.exists()
    atomic._remove(tmp_path / 'never-there')  # nothing to remove is not an error
    stuck = tmp_path / 'stuck'
    stuck.mkdir()
    (stuck / 'f').write_text('x')
    real_unlink = os.unlink

    def refuse(p, *args, **kwargs):
        if os.fspath(p) == 'f' or os.fspath(p).endswith('/f'):
            raise PermissionError(errno.EACCES, 'Permission denied', os.fspath(p))
        return real_unlink(p, *args, **kwargs)
    monkeypatch.setattr(os, 'unlink', refuse)
    atomic._remove(stuck)  # best effort: a part that cannot go stays, and nothing is raised
    assert (stuck / 'f').exists()


# ---- _exchange


def test_exchange_swaps_two_folders_given_relative_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path('a').mkdir()
    Path('a/x').write_text('from a')
    Path('b').mkdir()
    Path('b/y').write_text('from b')
    if not atomic._exchange(Path('a'), Path('b')):
        pytest.skip('this kernel or file system has no atomic exchange')
    assert os.listdir('a') == ['y']
    assert os.listdir('b') == ['x']


def test_exchange_with_a_missing_side_raises_its_errno(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    if not atomic._exchange(tmp_path / 'a', tmp_path / 'b'):
        pytest.skip('this kernel or file system has no atomic exchange')
    with pytest.raises(OSError) as info:
        atomic._exchange(tmp_path / 'a', tmp_path / 'missing')
    assert (info.value.errno, info.value.strerror, info.value.filename) == (
        errno.ENOENT, os.strerror(errno.ENOENT), str(tmp_path / 'missing'))


def test_exchange_falls_back_when_the_system_has_none(tmp_path, monkeypatch):
    import ctypes
    (tmp_path / 'a').mkdir()
    (tmp_path / 'b').mkdir()
    monkeypatch.setattr(ctypes, 'CDLL', lambda *args, **kwargs: SimpleNamespace())  # no renameat2 in libc
    assert atomic._exchange(tmp_path / 'a', tmp_path / 'b') is False
    refused = SimpleNamespace(renameat2=lambda *args: -1)
    monkeypatch.setattr(ctypes, 'CDLL', lambda *args, **kwargs: refused)
    for code in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EXDEV):
        monkeypatch.setattr(ctypes, 'get_errno', lambda code=code: code)
        assert atomic._exchange(tmp_path / 'a', tmp_path / 'b') is False
    monkeypatch.setattr(ctypes, 'get_errno', lambda: errno.EACCES)
    with pytest.raises(PermissionError):
        atomic._exchange(tmp_path / 'a', tmp_path / 'b')
    monkeypatch.setattr(atomic, 'USE_EXCHANGE', False)
    assert atomic._exchange(tmp_path / 'a', tmp_path / 'b') is False


def test_a_rebuild_at_a_relative_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    _artifact(Path('out'))
    with atomic.building('out', KIND, overwrite=True) as tmp:
        (tmp / 'pt_meta.json').write_text(json.dumps({'type': KIND[0], 'format': KIND[1]}))
        (tmp / 'data.txt').write_text('new')
    assert Path('out/data.txt').read_text() == 'new'
    assert sorted(os.listdir('.')) == ['out']


# ---- links inside a finished build


def test_a_build_may_link_inside_itself_but_not_out(tmp_path):
    with atomic.building(tmp_path / 'ok', KIND) as tmp:
        (tmp / 'pt_meta.json').write_text(json.dumps({'type': KIND[0], 'format': KIND[1]}))
        (tmp / 'sub').mkdir()
        (tmp / 'sub' / 'data.txt').write_text('x')
        (tmp / 'alias.txt').symlink_to(Path('sub') / 'data.txt')
        (tmp / 'itself').symlink_to('.')
    assert (tmp_path / 'ok' / 'alias.txt').read_text() == 'x'
    outside = tmp_path / 'secret.txt'
    outside.write_text('not yours')
    def leak(tmp):
        (tmp / 'pt_meta.json').write_text(json.dumps({'type': KIND[0], 'format': KIND[1]}))
        (tmp / 'sub').mkdir()
        (tmp / 'sub' / 'leak.txt').symlink_to(outside)
    with pytest.raises(atomic.ArtifactKindError, match='sub/leak.txt is a link to .*secret.txt, outside the '
                                                       'artifact'):
        _build(tmp_path / 'bad', leak)
    assert not (tmp_path / 'bad').exists()
    assert outside.read_text() == 'not yours'


# ---- open_no_follow


def test_open_no_follow_modes(tmp_path, umask):
    path = tmp_path / 'f.txt'
    with atomic.open_no_follow(path) as out:  # the default appends text, in UTF-8
        out.write('é')
    with atomic.open_no_follow(path, 'at') as out:
        out.write('!')
    assert path.read_bytes() == 'é!'.encode('utf8')
    assert path.stat().st_mode & 0o777 == 0o644
    with atomic.open_no_follow(path, 'rt') as fin:
        assert fin.read() == 'é!'
    with atomic.open_no_follow(path, 'rb') as fin:
        assert fin.read() == b'\xc3\xa9!'
    with atomic.open_no_follow(path, 'r+b') as both:
        assert both.read(2) == b'\xc3\xa9'
        both.write(b'?')
    assert path.read_bytes() == b'\xc3\xa9?'
    other = tmp_path / 'g.txt'
    with atomic.open_no_follow(other, 'a+') as both:
        both.write('ab')
        both.seek(0)
        assert both.read() == 'ab'
    with atomic.open_no_follow(tmp_path / 'new.txt', 'wt') as out:
        out.write('w')
    assert (tmp_path / 'new.txt').read_text() == 'w'


def test_open_no_follow_w_replaces_the_content_as_open_does(tmp_path):
    path = tmp_path / 'f.txt'
    path.write_text('a much longer old text')
    with atomic.open_no_follow(path, 'w') as out:
        out.write('new')
    assert path.read_text() == 'new'


def test_open_no_follow_errors(tmp_path, monkeypatch):
    real = tmp_path / 'real.txt'
    real.write_text('x')
    link = tmp_path / 'link.txt'
    link.symlink_to(real)
    with pytest.raises(atomic.ArtifactKindError, match='is a symbolic link'):
        atomic.open_no_follow(link, 'rt')
    with pytest.raises(FileNotFoundError):  # not a refusal a user fixes by permissions: as the system says
        atomic.open_no_follow(tmp_path / 'missing.txt', 'rt')

    def denied(path, flags, mode=0o777):
        raise PermissionError(errno.EACCES, 'Permission denied', os.fspath(path))
    monkeypatch.setattr(os, 'open', denied)
    for mode, verb, fix in (('rt', 'read', 'read'), ('rb', 'read', 'read'), ('at', 'write', 'write to'),
                            ('r+b', 'read', 'read')):
        with pytest.raises(ResourceError) as info:
            atomic.open_no_follow(real, mode)
        assert str(info.value) == (f'cannot {verb} {real}: permission denied; check the permissions (ls -l) or '
                                   f'choose a folder you can {fix}')


# ---- atomic_write and write_json


def test_atomic_write_goes_through_a_temporary_beside_the_target(tmp_path, monkeypatch, umask):
    path = tmp_path / 'data.json'
    moves = []
    real_replace = os.replace
    monkeypatch.setattr(os, 'replace', lambda a, b: (moves.append((Path(a), Path(b))), real_replace(a, b)))
    atomic.atomic_write(path, 'é')
    [(source, target)] = moves
    assert target == path
    assert source.parent == tmp_path
    assert re.fullmatch(r'\.data\.json\.' + TEMPORARY + r'\.tmp', source.name)
    assert path.read_bytes() == b'\xc3\xa9'
    assert path.stat().st_mode & 0o777 == 0o644
    atomic.atomic_write(path, b'\x00\x01')
    assert path.read_bytes() == b'\x00\x01'


def test_atomic_write_failures_leave_no_temporary(tmp_path, monkeypatch):
    path = tmp_path / 'data.json'
    path.write_text('old')

    def broken(a, b):
        raise OSError(errno.EIO, 'Input/output error')
    monkeypatch.setattr(os, 'replace', broken)
    with pytest.raises(OSError) as info:
        atomic.atomic_write(path, 'new')
    assert info.value.errno == errno.EIO
    assert sorted(os.listdir(tmp_path)) == ['data.json']
    assert path.read_text() == 'old'


def test_atomic_write_error_after_the_rename_is_raised_as_it_is(tmp_path, monkeypatch):
    """A file system may report a failure of a rename that happened: the temporary is gone, the error stays."""
    path = tmp_path / 'data.json'
    real_replace = os.replace

    def moved_then_failed(a, b):
        real_replace(a, b)
        raise OSError(errno.EIO, 'Input/output error')
    monkeypatch.setattr(os, 'replace', moved_then_failed)
    with pytest.raises(OSError) as info:
        atomic.atomic_write(path, 'new')
    assert info.value.errno == errno.EIO
    assert os.listdir(tmp_path) == ['data.json']


@pytest.mark.parametrize('writer', [lambda path: atomic.atomic_write(path, 'x'),
                                    lambda path: atomic.write_json(path, {'a': 1})])
def test_atomic_write_over_a_folder_names_it_and_leaves_it(tmp_path, writer):
    path = tmp_path / 'summaries.jsonl'
    path.mkdir()
    (path / 'mine.txt').write_text('mine')
    with pytest.raises(atomic.ArtifactKindError) as info:
        writer(path)
    assert str(info.value) == (f'{path} is a folder where this file is written; it is left untouched: move it away '
                               'and rerun, or choose another path')
    assert os.listdir(tmp_path) == ['summaries.jsonl']  # no temporary left
    assert (path / 'mine.txt').read_text() == 'mine'


def test_atomic_write_refused_names_the_target(tmp_path, monkeypatch):
    import tempfile

    def denied(**kwargs):
        raise PermissionError(errno.EACCES, 'Permission denied')
    monkeypatch.setattr(tempfile, 'mkstemp', denied)
    with pytest.raises(ResourceError) as info:
        atomic.atomic_write(tmp_path / 'data.json', 'x')
    assert str(info.value) == (f'cannot write {tmp_path / "data.json"}: permission denied; check the permissions '
                               '(ls -l) or choose a folder you can write to')


def test_write_json_format(tmp_path):
    path = tmp_path / 'meta.json'
    atomic.write_json(path, {'b': 1, 'a': [1, 'é']})
    assert path.read_text(encoding='utf8') == '{\n "a": [\n  1,\n  "\\u00e9"\n ],\n "b": 1\n}'
    with pytest.raises(ValueError, match='Out of range float values are not JSON compliant'):
        atomic.write_json(tmp_path / 'nan.json', {'x': float('nan')})
    assert sorted(os.listdir(tmp_path)) == ['meta.json']


IN_A_C_LOCALE = '''
import sys
from pathlib import Path
import pyterrier_garen._atomic as atomic
folder = Path(sys.argv[1])
assert sys.flags.utf8_mode == 0
(folder / 'm').mkdir()
(folder / 'm' / 'pt_meta.json').write_bytes('{"type": "\\u00e9", "format": "v1"}'.encode('utf8'))
print(atomic.read_meta(folder / 'm'))
with atomic.open_no_follow(folder / 'f.txt', 'at') as out:
    out.write('\\u00e9')
with atomic.open_no_follow(folder / 'f.txt', 'rt') as fin:
    print(fin.read() == '\\u00e9')
atomic.atomic_write(folder / 'g.txt', '\\u00e9')
'''


def test_artifacts_are_utf8_in_any_locale(tmp_path):
    """A user whose locale is plain C (ASCII) reads and writes the same bytes as everyone else."""
    import subprocess
    import sys
    env = dict(os.environ, LC_ALL='C', LANG='C', PYTHONCOERCECLOCALE='0', PYTHONUTF8='0', PYTHONIOENCODING='utf8',
               PYTHONPATH=str(Path(atomic.__file__).parents[1]))
    done = subprocess.run([sys.executable, '-c', IN_A_C_LOCALE, str(tmp_path)], env=env, capture_output=True,
                          text=True, encoding='utf8', timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split('\n')[:2] == ["{'type': 'é', 'format': 'v1'}", 'True']
    assert (tmp_path / 'f.txt').read_bytes() == (tmp_path / 'g.txt').read_bytes() == b'\xc3\xa9'


# ---- the result files a user names: never written through a link left beside them


def test_result_records_never_write_through_a_link_beside_them(tmp_path):
    """``compare --json PATH`` and a sweep's provenance record wrote ``PATH.tmp`` and then renamed it: a link left at
    that name sent the write to wherever it pointed."""
    import pandas as pd

    from pyterrier_garen._compare import save_comparison
    from pyterrier_garen._provenance import write_sidecar
    theirs = tmp_path / 'theirs.txt'
    theirs.write_text('keep me')
    table = pd.DataFrame({'name': ['GAREN'], 'nDCG@10': [0.5]})
    table.attrs['run'] = {'budget': 100}
    out = tmp_path / 'compare.json'
    (tmp_path / 'compare.json.tmp').symlink_to(theirs)
    save_comparison(table, out, command='compare --json compare.json')
    record = json.loads(out.read_text())
    assert (record['command'], record['run'], record['rows']) == ('compare --json compare.json', {'budget': 100},
                                                                 [{'name': 'GAREN', 'nDCG@10': 0.5}])
    csv = tmp_path / 'run.csv'
    csv.write_text('system,R@100\nGAR,0.5\n')
    (tmp_path / 'run.csv.json.tmp').symlink_to(theirs)
    assert write_sidecar(csv, command='sweep --out run.csv', queries=3) == tmp_path / 'run.csv.json'
    record = json.loads((tmp_path / 'run.csv.json').read_text())
    assert (record['file'], record['command'], record['queries']) == ('run.csv', 'sweep --out run.csv', 3)
    assert theirs.read_text() == 'keep me'
    assert not out.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith('.')) == []
