"""Oracles for the build lock (pyterrier_garen._atomic._lock and exclusive): a busy lock refuses or waits (saying
so once), is re-entrant only within the thread holding it, never has two holders although each holder removes the
lock file as it releases, and a folder nobody can write to is read without one. A second thread stands in for a
second process (see tests/_locks.py); tests/test_concurrent_builds.py runs every get-or-build step twice at once."""
import errno
import threading
import time
import warnings
from pathlib import Path

import pytest

import pyterrier_garen._atomic as atomic
from pyterrier_garen._atomic import ArtifactBusyError, ResourceError

from _locks import held_elsewhere

KIND = ('test_artifact', 'v1')


def _build(path, text='new'):
    with atomic.building(path, KIND) as tmp:
        atomic.write_json(tmp / 'pt_meta.json', {'type': KIND[0], 'format': KIND[1]})
        (tmp / 'data.txt').write_text(text)


def test_a_busy_lock_is_refused_naming_the_path(tmp_path):
    path = tmp_path / 'g'
    with held_elsewhere(path):
        with pytest.raises(ArtifactBusyError) as info:
            with atomic._lock(path):
                pass
        assert str(info.value) == f'another process is building {path} right now; wait for it to finish'
        with pytest.raises(ArtifactBusyError):
            _build(path)
    assert not path.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no temporary, no lock file left


def test_the_lock_is_re_entrant_only_in_its_own_thread(tmp_path):
    path, lock_file = tmp_path / 'g', tmp_path / '.g.lock'

    def other_thread_gets_it():
        got = []

        def attempt():
            try:
                with atomic._lock(path):
                    got.append(True)
            except ArtifactBusyError:
                got.append(False)
        thread = threading.Thread(target=attempt)
        thread.start()
        thread.join(10)
        return got == [True]

    with atomic.exclusive(path):
        with atomic._lock(path):
            _build(path)  # building takes it a third time
        assert lock_file.exists()  # the inner releases leave the outer hold in place
        assert not other_thread_gets_it()
    assert not lock_file.exists()
    assert other_thread_gets_it()
    assert (path / 'data.txt').read_text() == 'new'
    assert atomic._HELD == {}


def test_exclusive_waits_for_the_holder_and_says_so_once(tmp_path):
    path = tmp_path / 'g'
    entered = threading.Event()

    def waiter():
        with atomic.exclusive(path):
            entered.set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        with held_elsewhere(path):
            thread = threading.Thread(target=waiter)
            thread.start()
            deadline = time.monotonic() + 10
            while not caught and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not entered.wait(0.3)  # still waiting while the other holds the lock
        thread.join(10)
    assert entered.is_set()
    assert [str(w.message) for w in caught] == [
        f'another process is building {path}; waiting for it to finish (its lock is {tmp_path / ".g.lock"}), then '
        'using what it built']
    # it points at the user's line that asked for the artifact (waiter's `with`), not at the package or contextlib
    assert (caught[0].filename, caught[0].lineno) == (__file__, waiter.__code__.co_firstlineno + 1)
    assert not (tmp_path / '.g.lock').exists()


def test_two_holders_never_overlap_although_each_removes_the_lock_file(tmp_path):
    """A waiter can win the lock of a file its holder has just removed; it must then take the new file (else it and
    a newcomer that created the new file would both hold "the" lock)."""
    path = tmp_path / 'g'
    inside, most, entries = [0], [0], [0]
    guard = threading.Lock()

    def worker():
        for _ in range(60):
            with warnings.catch_warnings():
                warnings.simplefilter('ignore')
                with atomic.exclusive(path):
                    with guard:
                        inside[0] += 1
                        entries[0] += 1
                        most[0] = max(most[0], inside[0])
                    time.sleep(0.0005)
                    with guard:
                        inside[0] -= 1
    threads = [threading.Thread(target=worker) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert (entries[0], most[0]) == (360, 1)
    assert not (tmp_path / '.g.lock').exists()


@pytest.mark.parametrize('code', [errno.EROFS, errno.EACCES, errno.EPERM])
def test_a_folder_nobody_can_write_is_read_without_a_lock(tmp_path, monkeypatch, code):
    def refused(path, wait=False):
        raise OSError(code, 'refused', str(tmp_path / '.g.lock'))
    monkeypatch.setattr(atomic, '_lock', refused)
    ran = []
    with atomic.exclusive(tmp_path / 'g'):
        ran.append(True)
    assert ran == [True]


def test_a_full_disk_when_locking_names_the_path_and_the_fix(tmp_path, monkeypatch):
    def full(path, wait=False):
        raise OSError(errno.ENOSPC, 'No space left on device')
    monkeypatch.setattr(atomic, '_lock', full)
    with pytest.raises(ResourceError) as info:
        with atomic.exclusive(tmp_path / 'g'):
            pass
    assert str(info.value) == (f'cannot build {tmp_path / "g"}: no space left on device; free some disk space (or '
                               'choose a folder on another disk) and rerun; finished steps are kept')


def test_exclusive_makes_the_parent_folder(tmp_path):
    path = tmp_path / 'a' / 'b' / 'g'
    with atomic.exclusive(path):
        assert (tmp_path / 'a' / 'b' / '.g.lock').is_file()
    assert sorted(p.name for p in (tmp_path / 'a' / 'b').iterdir()) == []


def test_the_lock_file_is_never_followed_through_a_link(tmp_path):
    theirs = tmp_path / 'theirs.txt'
    theirs.write_text('keep me')
    (tmp_path / '.g.lock').symlink_to(theirs)
    with pytest.raises(atomic.ArtifactKindError) as info:
        with atomic.exclusive(tmp_path / 'g'):
            pass
    assert str(info.value) == (f'{tmp_path / ".g.lock"} is a symbolic link where the build lock of {tmp_path / "g"} '
                               'goes; a lock file is never opened through a link: remove the link and rerun')
    assert theirs.read_text() == 'keep me'
    assert Path(tmp_path / '.g.lock').is_symlink()


@pytest.mark.parametrize('entry', ['text', 'folder'])
def test_a_user_file_at_the_lock_path_is_refused_and_kept(tmp_path, entry):
    """The package's lock files are empty; a file with content (or a folder) named ``.<name>.lock`` is the user's:
    the build is refused before it starts, and the file is neither written nor removed."""
    lock = tmp_path / '.g.lock'
    if entry == 'text':
        lock.write_text('my notes')
        what = 'a file of 8 bytes'
    else:
        lock.mkdir()
        (lock / 'x').write_text('mine')
        what = None
    with pytest.raises(atomic.ArtifactKindError) as info:
        with atomic.exclusive(tmp_path / 'g'):
            pass
    if what:
        assert str(info.value) == (f'{lock} is {what}, where the (empty) build lock of {tmp_path / "g"} goes; it '
                                   'is left untouched: move it away, or choose another output path')
        assert lock.read_text() == 'my notes'
    else:
        assert str(info.value).startswith(f'{lock} is a folder where the build lock of {tmp_path / "g"} goes')
        assert (lock / 'x').read_text() == 'mine'
    with pytest.raises(atomic.ArtifactKindError):
        with atomic.building(tmp_path / 'g', ('t', 'f')) as tmp:
            raise AssertionError(f'built into {tmp}')
    assert not (tmp_path / 'g').exists()


def test_an_empty_lock_file_left_by_a_killed_build_is_taken_and_removed(tmp_path):
    (tmp_path / '.g.lock').write_text('')
    with atomic.exclusive(tmp_path / 'g'):
        assert (tmp_path / '.g.lock').exists()
    assert not (tmp_path / '.g.lock').exists()
