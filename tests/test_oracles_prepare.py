"""Oracles for preparing a work folder (pyterrier_garen._prepare, without ``prepare`` itself) and for sharing
artifacts (pyterrier_garen._sharing): the default cache folder, the collection's fingerprint over its exact byte
layout, the folder name a dataset gets, the manifest that claims a work folder (who created it, prepare's own
leftovers, a manifest that is damaged or of another collection, a manifest written while waiting for the lock),
the refusal of duplicate docnos, what ``_fresh`` may remove (only a half-built folder in a work folder prepare
created), the docno check of a reused artifact, which failures are the network's, and loading a package file
(nothing outside the target folder is written, no link is made, the package's modes and times are not applied).
Every expected value is written out by hand (the twenty-eighth mutation run, docs/testing.md)."""
import errno
import hashlib
import io
import json
import os
import socket
import tarfile
import time
import urllib.error
from pathlib import Path
from types import SimpleNamespace

import pytest

from pyterrier_garen import _prepare, _sharing
from pyterrier_garen._atomic import ResourceError
from pyterrier_garen._prepare import (_check_manifest, _check_unique, _check_workdir, _dataset_name, _fresh,
                                      _matches_collection, cache_dir, collection_fingerprint)
from pyterrier_garen._sharing import (OFFLINE_ROUTE, PackageError, _network_cause, _strip_suffix, hub_errors,
                                      load_package)

FP = 'a' * 64
OTHER = '0123456789abcdef' * 4


@pytest.fixture
def umask():
    """A known umask (022), restored afterwards, so that file modes can be pinned."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def _manifest(workdir):
    return json.loads((workdir / 'prepare.json').read_text())


def _listing(folder):
    return sorted(p.name for p in folder.iterdir())


# ---- cache_dir


def test_cache_dir_is_garen_cache_when_set(monkeypatch, tmp_path):
    monkeypatch.setenv('GAREN_CACHE', str(tmp_path / 'c'))
    monkeypatch.setenv('HOME', '/nowhere/home')
    assert cache_dir() == tmp_path / 'c'


@pytest.mark.parametrize('value', [None, ''])
def test_cache_dir_falls_back_to_the_home_cache(monkeypatch, value):
    if value is None:
        monkeypatch.delenv('GAREN_CACHE', raising=False)
    else:
        monkeypatch.setenv('GAREN_CACHE', value)
    monkeypatch.setenv('HOME', '/nowhere/home')
    assert cache_dir() == Path('/nowhere/home/.cache/pyterrier-garen')


# ---- collection_fingerprint


class _Corpus:
    """A dataset without ``fingerprint()``: only ``get_corpus_iter``, which records its ``verbose`` argument."""

    def __init__(self, docs):
        self.docs = docs
        self.verbose = []

    def get_corpus_iter(self, verbose=True):
        self.verbose.append(verbose)
        return iter(self.docs)


def test_fingerprint_hashes_docno_title_text_with_separators():
    corpus = _Corpus([{'docno': 'd1', 'text': 'a b'},  # no title
                      {'docno': 'd2', 'title': 'T', 'text': 'x\ud800', 'extra': 'ignored'},  # a lone surrogate
                      {'docno': 'd3', 'title': None, 'text': ''}])
    layout = (b'd1\x00\x00a b\x00\x01'
              b'd2\x00T\x00x\xed\xa0\x80\x00\x01'
              b'd3\x00\x00\x00\x01')
    assert collection_fingerprint(corpus) == hashlib.sha256(layout).hexdigest()
    assert corpus.verbose == [False]  # no progress bar


def test_fingerprint_of_an_empty_corpus_is_the_empty_hash():
    assert collection_fingerprint(_Corpus([])) == 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'


def test_fingerprint_separators_keep_fields_apart():
    one = collection_fingerprint(_Corpus([{'docno': 'ab', 'text': 'c'}]))
    two = collection_fingerprint(_Corpus([{'docno': 'a', 'title': 'b', 'text': 'c'}]))
    three = collection_fingerprint(_Corpus([{'docno': 'a', 'text': ''}, {'docno': 'bc', 'text': ''}]))
    four = collection_fingerprint(_Corpus([{'docno': 'a', 'text': 'bc'}]))
    assert len({one, two, three, four}) == 4


def test_fingerprint_method_of_the_dataset_wins():
    dataset = SimpleNamespace(fingerprint=lambda: 1234, get_corpus_iter=lambda **kwargs: pytest.fail('iterated'))
    assert collection_fingerprint(dataset) == '1234'


# ---- _dataset_name


@pytest.mark.parametrize(('dataset', 'name'), [
    (SimpleNamespace(name='scifact'), 'scifact'),
    (SimpleNamespace(name='msmarco/passage dev:small'), 'msmarco_passage_dev_small'),
    (SimpleNamespace(name='..hidden.'), 'hidden'),
    (SimpleNamespace(name='__a__b__'), 'a__b'),
    (SimpleNamespace(name='_ x'), 'x'),  # the space becomes '_', and both are stripped
    (SimpleNamespace(name='-a.b_c-'), '-a.b_c-'),  # '-' is kept at the ends, '.' and '_' inside
    (SimpleNamespace(name='X.x_X'), 'X.x_X'),  # only '.' and '_' are stripped
    (SimpleNamespace(name='Résumé²'), 'Résumé²'),  # letters and digits of any script
    (SimpleNamespace(name='../..'), 'collection'),
    (SimpleNamespace(name='/'), 'collection'),
    (SimpleNamespace(name='', _irds_id='beir/scifact/test'), 'beir_scifact_test'),
    (SimpleNamespace(name=None, _irds_id='irds-id'), 'irds-id'),
    (SimpleNamespace(name='named', _irds_id='irds-id'), 'named'),
    (SimpleNamespace(name=42), '42'),
])
def test_dataset_name(dataset, name):
    assert _dataset_name(dataset) == name


def test_dataset_name_falls_back_to_str():
    class Nameless:
        def __str__(self):
            return '<my corpus #1>'
    assert _dataset_name(Nameless()) == 'my_corpus__1'

    class Default:
        pass
    # the default repr holds the object's address, which differs in each process: it is left out
    assert _dataset_name(Default()) == ('test_oracles_prepare.test_dataset_name_falls_back_to_str._locals_.'
                                        'Default_object')
    assert _dataset_name(SimpleNamespace(name='<corpus object at 0x7F3a9c>')) == 'corpus_object'
    assert _dataset_name(SimpleNamespace(name='at 0x12 x')) == 'at_0x12_x'  # only a repr's " at 0x..." goes

    class Empty:
        name = ''
        _irds_id = ''

        def __str__(self):
            return ''
    assert _dataset_name(Empty()) == 'collection'


# ---- _check_workdir and _check_manifest


def test_a_new_workdir_is_created_and_recorded(tmp_path):
    work = tmp_path / 'a' / 'b' / 'w'  # parents are made too
    assert _check_workdir(work, FP, 'tiny') is True
    assert _manifest(work) == {'collection': 'tiny', 'corpus_sha256': FP, 'created': True}
    assert _listing(work) == ['prepare.json']  # the lock is gone


def test_an_existing_empty_folder_counts_as_created(tmp_path):
    work = tmp_path / 'w'
    work.mkdir()
    assert _check_workdir(work, FP, 'tiny') is True
    assert _manifest(work)['created'] is True


def test_an_existing_folder_with_the_users_files_is_not_owned(tmp_path):
    work = tmp_path / 'w'
    work.mkdir()
    (work / 'notes.txt').write_text('mine')
    assert _check_workdir(work, FP, 'tiny') is False
    assert _manifest(work) == {'collection': 'tiny', 'corpus_sha256': FP, 'created': False}
    assert (work / 'notes.txt').read_text() == 'mine'
    assert _listing(work) == ['notes.txt', 'prepare.json']
    assert _check_workdir(work, FP, 'tiny') is False  # and stays so


@pytest.mark.parametrize(('leftovers', 'created'), [
    (['.prepare.lock'], True),
    (['.prepare.json.abcd_123.tmp'], True),  # a killed write of prepare.json
    (['.prepare.lock', '.prepare.json.zzzzzzzz.tmp', '.prepare.json.00000000.tmp'], True),
    (['.prepare.json.abc1234.tmp'], False),  # 7 characters: not tempfile's
    (['.prepare.json.abcd12345.tmp'], False),
    (['.prepare.json.ABCD1234.tmp'], False),
    (['.prepare.json.abcd1234.old'], False),
    (['prepare.json.abcd1234.tmp'], False),
    (['x.prepare.lock'], False),
    (['.prepare.lockx'], False),
    (['.prepare.lock', 'data'], False),
])
def test_prepares_own_leftovers_do_not_make_a_folder_the_users(tmp_path, leftovers, created):
    work = tmp_path / 'w'
    work.mkdir()
    for name in leftovers:
        (work / name).write_text('')
    assert _check_workdir(work, FP, 'tiny') is created
    assert _manifest(work)['created'] is created


def test_a_symlinked_workdir_of_the_users_is_not_owned(tmp_path):
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'keep.txt').write_text('mine')
    (tmp_path / 'w').symlink_to(mine)
    assert _check_workdir(tmp_path / 'w', FP, 'tiny') is False
    assert (mine / 'keep.txt').read_text() == 'mine'


@pytest.mark.parametrize('created', [True, False])
def test_a_recorded_workdir_is_reused_without_writing(tmp_path, created):
    work = tmp_path / 'w'
    work.mkdir()
    text = json.dumps({'collection': 'x', 'corpus_sha256': FP, 'created': created})
    (work / 'prepare.json').write_text(text)
    (work / 'notes.txt').write_text('mine')
    os.utime(work / 'prepare.json', (1_000_000, 1_000_000))
    assert _check_workdir(work, FP, 'another name') is created
    assert (work / 'prepare.json').read_text() == text
    assert (work / 'prepare.json').stat().st_mtime == 1_000_000
    assert _listing(work) == ['notes.txt', 'prepare.json']  # no lock taken


def _refusal(work, collection, stored):
    return (f'{work} holds artifacts prepared for other documents ({collection}, fingerprint {stored}; these '
            f'documents are aaaaaaaaaaaa); its artifacts are not reused: pass another workdir, or delete that one '
            f'to rebuild there')


def test_a_workdir_of_another_collection_is_refused(tmp_path):
    work = tmp_path / 'w'
    _check_workdir(work, OTHER, 'scifact')
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(work, FP, 'tiny')
    assert str(refused.value) == _refusal(work, 'scifact', '0123456789ab')
    assert _manifest(work)['corpus_sha256'] == OTHER  # untouched


class _Earlier:
    """The key an earlier version recorded (all of a collection's files), counting how often it is asked for."""

    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


@pytest.mark.parametrize(('stored', 'earlier', 'asked'), [
    ({'corpus_sha256': FP}, OTHER, 0),  # today's record: the earlier key is not computed
    ({'collection_sha256': FP}, OTHER, 0),  # an earlier record of a dataset keyed by its documents anyway
    ({'collection_sha256': OTHER}, OTHER, 1),  # an earlier record of these very files
    ({'collection_sha256': FP, 'corpus_sha256': FP}, None, 0),
])
def test_a_workdir_of_these_documents_is_reused_whichever_version_recorded_it(tmp_path, stored, earlier, asked):
    work = tmp_path / 'w'
    work.mkdir()
    text = json.dumps({'collection': 'x', **stored, 'created': True})
    (work / 'prepare.json').write_text(text)
    key = _Earlier(earlier)
    assert _check_workdir(work, FP, 'tiny', key if earlier else None) is True
    assert key.calls == asked
    assert (work / 'prepare.json').read_text() == text  # an earlier record is read as it is, never rewritten


@pytest.mark.parametrize(('stored', 'earlier', 'shown'), [
    ({'corpus_sha256': OTHER}, OTHER, '0123456789ab'),  # today's record of other documents
    ({'corpus_sha256': OTHER, 'collection_sha256': FP}, None, '0123456789ab'),  # today's key decides
    ({'collection_sha256': OTHER}, FP[:-1] + 'b', '0123456789ab'),  # the files changed since
    ({'collection_sha256': OTHER}, None, '0123456789ab'),  # no earlier key to compare with
    ({'corpus_sha256': None, 'collection_sha256': FP}, None, 'None'),
])
def test_a_workdir_of_other_documents_is_refused_whichever_version_recorded_it(tmp_path, stored, earlier, shown):
    work = tmp_path / 'w'
    work.mkdir()
    (work / 'prepare.json').write_text(json.dumps({'collection': 'x', **stored, 'created': True}))
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(work, FP, 'tiny', _Earlier(earlier) if earlier else None)
    assert str(refused.value) == _refusal(work, 'x', shown)


def test_a_record_without_the_collections_name_is_refused_naming_it_unknown(tmp_path):
    work = tmp_path / 'w'
    work.mkdir()
    (work / 'prepare.json').write_text(json.dumps({'corpus_sha256': OTHER, 'created': True}))
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(work, FP, 'tiny')
    assert str(refused.value) == _refusal(work, '?', '0123456789ab')


@pytest.mark.parametrize(('meta', 'shown'), [({'type': 'sparse_index', 'format': 'pisa'}, 'sparse_index.pisa'),
                                             ({'type': 'corpus_graph'}, 'corpus_graph.?')])
def test_an_artifact_given_as_the_workdir_is_refused_naming_its_kind(tmp_path, meta, shown):
    from pyterrier_garen._atomic import ArtifactKindError
    work = tmp_path / 'w'
    work.mkdir()
    (work / 'pt_meta.json').write_text(json.dumps(meta))
    with pytest.raises(ArtifactKindError) as refused:
        _check_workdir(work, FP, 'tiny')
    assert str(refused.value) == (f'{work} is an artifact ({shown}, its pt_meta.json), not a work folder; prepare '
                                  'would write its own folders inside it. Choose another --workdir (e.g. a new '
                                  'folder beside it)')
    assert _listing(work) == ['pt_meta.json']  # nothing written in it


def test_a_pt_meta_json_that_cannot_be_read_is_taken_for_an_artifact(tmp_path, monkeypatch):
    from pyterrier_garen import _atomic
    work = tmp_path / 'w'
    work.mkdir()
    (work / 'pt_meta.json').write_text('{}')

    def read_meta(path):
        raise ResourceError(errno.EACCES, f'cannot read {path}/pt_meta.json: permission denied', 'x')
    monkeypatch.setattr(_atomic, 'read_meta', read_meta)
    with pytest.raises(_atomic.ArtifactKindError, match=r'^\S+ is an artifact \(\?\.\?, its pt_meta.json\), not a work '
                                                        'folder'):
        _check_workdir(work, FP, 'tiny')
    assert _listing(work) == ['pt_meta.json']


@pytest.mark.parametrize('data', [b'{not json', b'[1, 2]', b'"aaaa"', b'null', b'', b'{"collection": "x"}',
                                  b'\xf6\x9c garbage', b'{"corpus_sha256": "' + b'\xff' * 4 + b'"}'])
def test_a_damaged_manifest_is_named_as_damaged(tmp_path, data):
    work = tmp_path / 'w'
    work.mkdir()
    (work / 'prepare.json').write_bytes(data)
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(work, FP, 'tiny')
    assert str(refused.value) == (
        f'{work / "prepare.json"} is damaged (not the JSON record of the documents this workdir was prepared for), '
        'so its artifacts are not reused: if the workdir was prepared for these documents, delete that file and '
        'rerun (prepare records it again and reuses what it holds); otherwise pass another workdir')
    assert (work / 'prepare.json').read_bytes() == data


@pytest.mark.parametrize('kind', ['content', 'folder', 'link'])
def test_a_prepare_lock_of_the_users_is_refused_and_kept(tmp_path, kind):
    """Every lock of the package is an empty file: what else is at .prepare.lock is the user's (was deleted)."""
    work = tmp_path / 'w'
    work.mkdir()
    lock = work / '.prepare.lock'
    if kind == 'content':
        lock.write_text('my notes')
        what = 'a file of 8 bytes, where the (empty) build lock of'
    elif kind == 'folder':
        lock.mkdir()
        what = 'a folder, where the (empty) lock of'
    else:
        lock.symlink_to(tmp_path / 'elsewhere')
        what = 'a symbolic link, where the (empty) lock of'
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(work, FP, 'tiny')
    assert str(refused.value).startswith(f'{lock} is {what} {work / "prepare.json"} goes; it is left untouched: '
                                         'move it away, or choose another')
    assert _listing(work) == ['.prepare.lock']  # no manifest written: the workdir is not claimed
    assert lock.read_text() == 'my notes' if kind == 'content' else lock.is_dir() or lock.is_symlink()


def test_a_workdir_that_is_a_file_is_named(tmp_path):
    (tmp_path / 'w').write_text('mine')
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(tmp_path / 'w', FP, 'tiny')
    assert str(refused.value) == (f'{tmp_path / "w"} is a file, not a work folder; it is left untouched: pass a '
                                  'folder (or a path that does not exist yet) as the workdir')
    assert (tmp_path / 'w').read_text() == 'mine'


def test_a_folder_at_the_manifests_name_is_left_as_it_is(tmp_path):
    work = tmp_path / 'w'
    (work / 'prepare.json').mkdir(parents=True)
    (work / 'prepare.json' / 'mine.txt').write_text('mine')
    with pytest.raises(FileExistsError, match=r'prepare.json is not a file, where prepare records which documents'):
        _check_workdir(work, FP, 'tiny')
    assert _listing(work) == ['prepare.json']  # no lock, no temporary left
    assert (work / 'prepare.json' / 'mine.txt').read_text() == 'mine'


@pytest.mark.parametrize(('stored', 'owned'), [
    ({'corpus_sha256': FP}, False),  # no 'created': not owned
    ({'corpus_sha256': FP, 'created': True}, True),
    ({'corpus_sha256': FP, 'created': None}, False),
    # hand-edited: only the boolean prepare writes counts; anything else leaves the user's folders alone
    ({'corpus_sha256': FP, 'created': 1}, False),
    ({'corpus_sha256': FP, 'created': 'false'}, False),
    ({'corpus_sha256': FP, 'created': 'true'}, False),
    ({'corpus_sha256': FP, 'created': [True]}, False),
])
def test_check_manifest_returns_created(tmp_path, stored, owned):
    (tmp_path / 'prepare.json').write_text(json.dumps(stored))
    assert _check_manifest(tmp_path / 'prepare.json', tmp_path, FP) is owned


def test_a_manifest_that_cannot_be_read_is_a_resource_error(tmp_path, monkeypatch):
    manifest = tmp_path / 'prepare.json'
    manifest.write_text(json.dumps({'corpus_sha256': FP, 'created': True}))

    def refused(self, *args, **kwargs):
        raise PermissionError(errno.EACCES, 'Permission denied', str(self))
    monkeypatch.setattr(Path, 'read_text', refused)
    with pytest.raises(ResourceError) as error:
        _check_manifest(manifest, tmp_path, FP)
    assert str(error.value) == (f'cannot read {manifest}: permission denied; check the permissions (ls -l) or '
                                'choose a folder you can read')


def test_a_workdir_that_cannot_be_made_is_a_resource_error(tmp_path, monkeypatch):
    work = tmp_path / 'w'

    def read_only(self, *args, **kwargs):
        raise OSError(errno.EROFS, 'Read-only file system', str(self))
    monkeypatch.setattr(Path, 'mkdir', read_only)
    with pytest.raises(ResourceError) as error:
        _check_workdir(work, FP, 'tiny')
    assert str(error.value) == (f'cannot prepare {work}: read-only file system; the file system is read-only: '
                                'choose a writable folder to build in (a finished artifact can still be read from '
                                'it)')


def _while_locked(monkeypatch, action):
    """Run ``action(fd)`` when _check_workdir has the lock (what another prepare did while this one waited)."""
    import fcntl
    real = fcntl.flock

    def flock(fd, operation):
        real(fd, operation)
        action(fd)
    monkeypatch.setattr(fcntl, 'flock', flock)


def test_the_lock_file_is_made_with_mode_644(tmp_path, monkeypatch, umask):
    modes = []
    _while_locked(monkeypatch, lambda fd: modes.append(os.fstat(fd).st_mode & 0o7777))
    _check_workdir(tmp_path / 'w', FP, 'tiny')
    assert modes == [0o644]


@pytest.mark.parametrize('created', [True, False])
def test_a_manifest_written_while_waiting_for_the_lock_is_the_answer(tmp_path, monkeypatch, created):
    work = tmp_path / 'w'
    text = json.dumps({'collection': 'x', 'corpus_sha256': FP, 'created': created})
    _while_locked(monkeypatch, lambda fd: (work / 'prepare.json').write_text(text))
    assert _check_workdir(work, FP, 'tiny') is created
    assert (work / 'prepare.json').read_text() == text  # not rewritten
    assert _listing(work) == ['prepare.json']  # the lock file went with the wait: nothing of prepare's is left


def test_a_lock_removed_by_the_prepare_that_recorded_the_workdir_first_is_not_an_error(tmp_path, monkeypatch):
    work = tmp_path / 'w'
    text = json.dumps({'collection': 'x', 'corpus_sha256': FP, 'created': True})

    def finished(fd):  # the other prepare recorded the workdir and removed its lock file while this one waited
        (work / 'prepare.json').write_text(text)
        (work / '.prepare.lock').unlink()
    _while_locked(monkeypatch, finished)
    assert _check_workdir(work, FP, 'tiny') is True
    assert _listing(work) == ['prepare.json']


def test_a_manifest_of_another_collection_written_while_waiting_is_refused(tmp_path, monkeypatch):
    work = tmp_path / 'w'
    text = json.dumps({'collection': 'scifact', 'corpus_sha256': OTHER, 'created': True})
    _while_locked(monkeypatch, lambda fd: (work / 'prepare.json').write_text(text))
    with pytest.raises(FileExistsError) as refused:
        _check_workdir(work, FP, 'tiny')
    assert str(refused.value) == _refusal(work, 'scifact', '0123456789ab')


def test_an_earlier_versions_manifest_written_while_waiting_is_read_with_the_earlier_key(tmp_path, monkeypatch):
    work = tmp_path / 'w'
    text = json.dumps({'collection': 'x', 'collection_sha256': OTHER, 'created': True})
    _while_locked(monkeypatch, lambda fd: (work / 'prepare.json').write_text(text))
    key = _Earlier(OTHER)
    assert _check_workdir(work, FP, 'tiny', key) is True
    assert key.calls == 1
    assert (work / 'prepare.json').read_text() == text


def test_a_folder_prepare_made_stays_its_own_whatever_appears_in_it(tmp_path, monkeypatch):
    work = tmp_path / 'w'
    _while_locked(monkeypatch, lambda fd: (work / 'early.txt').write_text('x'))
    assert _check_workdir(work, FP, 'tiny') is True
    assert _manifest(work)['created'] is True


# ---- _check_unique


def test_unique_docnos_pass():
    assert _check_unique(['a', 'b', 'A', 'a '], 'ds') is None
    assert _check_unique([], 'ds') is None


@pytest.mark.parametrize(('docnos', 'docno', 'position'), [
    (['a', 'b', 'a'], 'a', 3),
    (['x', 'y', 'y', 'x'], 'y', 3),  # the first docno seen again, not the first docno
    (['1', '2', '3', '4', '5', '2', '1'], '2', 6),
])
def test_a_duplicate_docno_is_named_with_its_position(docnos, docno, position):
    with pytest.raises(ValueError) as refused:
        _check_unique(docnos, 'DS')
    assert str(refused.value) == (f"'DS' yields docno {docno!r} twice (again as document {position}); docnos must "
                                  'be unique: remove or rename the duplicate documents')


# ---- _fresh


def _half_built(path):
    path.mkdir(parents=True)
    (path / 'part.bin').write_text('half')
    return path


def _finished(path):
    _half_built(path)
    (path / 'pt_meta.json').write_text('{}')
    return path


@pytest.mark.parametrize('owned', [True, False])
def test_fresh_leaves_a_missing_path_alone(tmp_path, owned):
    assert _fresh(tmp_path / 'bm25.pisa', owned) is None
    assert _listing(tmp_path) == []


@pytest.mark.parametrize('owned', [True, False])
def test_fresh_keeps_a_finished_artifact(tmp_path, owned):
    path = _finished(tmp_path / 'bm25.pisa')
    _fresh(path, owned)
    assert sorted(p.name for p in path.iterdir()) == ['part.bin', 'pt_meta.json']


def test_fresh_removes_a_half_built_folder_of_prepares_own(tmp_path):
    _half_built(tmp_path / 'bm25.pisa')
    _fresh(tmp_path / 'bm25.pisa', True)
    assert _listing(tmp_path) == []


def test_fresh_refuses_a_half_built_folder_that_may_be_the_users(tmp_path):
    path = _half_built(tmp_path / 'bm25.pisa')
    with pytest.raises(FileExistsError, match='bm25.pisa exists but is not a finished artifact'):
        _fresh(path, False)
    assert (path / 'part.bin').read_text() == 'half'


@pytest.mark.parametrize('owned', [True, False])
def test_fresh_never_follows_a_link(tmp_path, owned):
    target = _half_built(tmp_path / 'users')
    (tmp_path / 'w').mkdir()
    (tmp_path / 'w' / 'bm25.pisa').symlink_to(target)
    (tmp_path / 'w' / 'dangling.pisa').symlink_to(tmp_path / 'nothing')
    _fresh(tmp_path / 'w' / 'bm25.pisa', owned)
    _fresh(tmp_path / 'w' / 'dangling.pisa', owned)
    assert (target / 'part.bin').read_text() == 'half'
    assert (tmp_path / 'w' / 'bm25.pisa').is_symlink()
    assert (tmp_path / 'w' / 'dangling.pisa').is_symlink()


def test_fresh_keeps_a_folder_whose_meta_is_not_a_file_only_when_not_owned(tmp_path):
    path = _half_built(tmp_path / 'bm25.pisa')
    (path / 'pt_meta.json').mkdir()
    with pytest.raises(FileExistsError):
        _fresh(path, False)
    assert path.is_dir()
    _fresh(path, True)
    assert not path.exists()


@pytest.mark.parametrize('owned', [True, False])
def test_fresh_removes_temporaries_of_killed_builds_either_way(tmp_path, owned):
    path = _finished(tmp_path / 'bm25.pisa')
    (tmp_path / '.bm25.pisa.abc12345.tmp').mkdir()
    (tmp_path / '.bm25.pisa.notes').write_text('mine')  # the user's, although it starts like a temporary
    _fresh(path, owned)
    assert _listing(tmp_path) == ['.bm25.pisa.notes', 'bm25.pisa']


@pytest.mark.parametrize('owned', [True, False])
def test_fresh_refuses_a_file_at_an_artifacts_name_and_keeps_it(tmp_path, owned):
    path = tmp_path / 'bm25.pisa'
    path.write_text('notes')
    with pytest.raises(FileExistsError) as refused:
        _fresh(path, owned)
    assert str(refused.value) == (f'{path} is a file where prepare builds an artifact folder; move the file away, or '
                                  'pass another workdir')
    assert path.read_text() == 'notes'


# ---- _matches_collection


@pytest.fixture
def lookup(tmp_path):
    from npids import Lookup
    Lookup.build(['d1', 'd2', 'd3'], str(tmp_path / 'docnos.npids'))
    with Lookup(str(tmp_path / 'docnos.npids')) as opened:
        yield opened


@pytest.mark.parametrize(('docnos', 'matches'), [
    (['d1', 'd2', 'd3'], True),
    (['d3', 'd1', 'd2'], True),  # any order
    (['d1', 'd2', 'd4'], False),  # as many, one unknown
    (['d1', 'd2'], False),  # fewer
    (['d1', 'd2', 'd3', 'd4'], False),  # more
    ([], False),
])
def test_matches_collection(lookup, docnos, matches):
    assert _matches_collection(lookup, docnos) is matches


# ---- _network_cause and hub_errors


def _named(name, base=Exception, message='', **attributes):
    """An exception of a class called ``name``, derived from ``base``, with ``attributes`` set."""
    ex = type(name, (base,), {})(message)
    for key, value in attributes.items():
        setattr(ex, key, value)
    return ex


@pytest.mark.parametrize(('ex', 'cause'), [
    (ConnectionRefusedError(111, 'Connection refused'), 'ConnectionRefusedError: [Errno 111] Connection refused'),
    (TimeoutError('timed out'), 'TimeoutError: timed out'),
    (TimeoutError(), 'TimeoutError: TimeoutError'),  # no message: the name again
    (OSError('something odd\nsecond line'), 'OSError: something odd'),  # first line only
    (socket.gaierror(-2, 'Name or service not known'), 'gaierror: [Errno -2] Name or service not known'),
    (socket.gaierror(2, 'temporary failure'), 'gaierror: [Errno 2] temporary failure'),  # macOS: EAI_AGAIN is 2
    (socket.herror(1, 'Unknown host'), 'herror: [Errno 1] Unknown host'),  # h_errno 1, not EPERM
    (OSError(errno.ENETUNREACH, 'Network is unreachable'), 'OSError: [Errno 101] Network is unreachable'),
    (urllib.error.URLError(ConnectionRefusedError(111, 'Connection refused')),
     'URLError: [Errno 111] Connection refused'),  # the reason, not "<urlopen error ...>"
    (_named('ReadTimeout', message='read timed out'), 'ReadTimeout: read timed out'),  # not an OSError
    (_named('ConnectError', message='[Errno 111]'), 'ConnectError: [Errno 111]'),
    (_named('OfflineModeIsEnabled', message='offline'), 'OfflineModeIsEnabled: offline'),
    (_named('NameResolutionError', message='no DNS'), 'NameResolutionError: no DNS'),
    (_named('LocalNetworkError'), 'LocalNetworkError: LocalNetworkError'),
    (_named('ProxyError', message='407'), 'ProxyError: 407'),
    (_named('MaxRetryError', message='outer', reason=ConnectionResetError(104, 'reset')),
     None),  # a reason alone does not make a failure the network's
])
def test_network_causes(ex, cause):
    assert _network_cause(ex) == cause


def test_a_cause_is_cut_at_200_characters():
    ex = TimeoutError('x' * 199 + 'yz' + 'w' * 50)
    assert _network_cause(ex) == 'TimeoutError: ' + 'x' * 199 + 'y'


@pytest.mark.parametrize('ex', [
    FileNotFoundError(errno.ENOENT, 'No such file or directory', 'a.tar'),
    FileExistsError(errno.EEXIST, 'File exists'),
    PermissionError(errno.EACCES, 'Permission denied'),
    IsADirectoryError(errno.EISDIR, 'Is a directory'),
    NotADirectoryError(errno.ENOTDIR, 'Not a directory'),
    OSError(errno.ENOSPC, 'No space left on device'),  # a full disk while downloading is not the network's
    OSError(errno.EDQUOT, 'Disk quota exceeded'),
    OSError(errno.EROFS, 'Read-only file system'),
    ResourceError(errno.ENOSPC, 'cannot write /x: no space left on device; free some disk space', '/x'),
    ResourceError(errno.EACCES, 'cannot write /x: permission denied; check the permissions', '/x'),
    ValueError('bad value'),
    KeyError('Timeouts'),  # the message is not the name
    _named('HTTPError', OSError, 'boom', code=503),  # the server answered
    _named('HfHubHTTPError', OSError, 'not found', response=object()),
    _named('ConnectTimeout', message='x', code=0),  # a code of 0 is an answer too
    _named('ConnectTimeout', message='x', response=''),
])
def test_not_network_failures(ex):
    assert _network_cause(ex) is None


def test_the_chain_is_followed_through_cause_and_context():
    top = RuntimeError('wrapped')
    top.__cause__ = ConnectionResetError(104, 'Connection reset by peer')
    top.__context__ = None
    assert _network_cause(top) == 'ConnectionResetError: [Errno 104] Connection reset by peer'
    top = RuntimeError('wrapped')
    top.__context__ = ValueError('inner')
    top.__context__.__context__ = TimeoutError('deep')
    assert _network_cause(top) == 'TimeoutError: deep'
    both = RuntimeError('both')  # __cause__ comes first
    both.__cause__ = ValueError('explicit')
    both.__context__ = TimeoutError('implicit')
    assert _network_cause(both) is None


def test_an_answer_of_the_server_stops_the_chain():
    top = _named('HTTPError', message='404', code=404)
    top.__context__ = ConnectionResetError(104, 'reset')
    assert _network_cause(top) is None


def test_a_chain_ends_and_a_loop_in_it_ends():
    assert _network_cause(ValueError('alone')) is None

    class Loop(Exception):
        visits = 0

        @property
        def __cause__(self):
            type(self).visits += 1
            if type(self).visits > 5:
                raise RecursionError('the chain is walked again and again')
            return self
    assert _network_cause(Loop('x')) is None
    a, b = ValueError('a'), KeyError('b')
    a.__context__, b.__context__ = b, a
    assert _network_cause(a) is None


@pytest.mark.parametrize(('offline', 'note'), [(None, ''), ('', ''), ('0', ''), ('1', ' (HF_HUB_OFFLINE is set)'),
                                               ('true', ' (HF_HUB_OFFLINE is set)')])
def test_hub_errors_makes_one_line(monkeypatch, offline, note):
    if offline is None:
        monkeypatch.delenv('HF_HUB_OFFLINE', raising=False)
    else:
        monkeypatch.setenv('HF_HUB_OFFLINE', offline)
    with pytest.raises(ConnectionError) as error:
        with hub_errors("from_hf('me/g')"):
            raise ConnectionRefusedError(111, 'Connection refused')
    assert str(error.value) == (f"from_hf('me/g'): the Hugging Face Hub cannot be reached{note} "
                                f'(ConnectionRefusedError: [Errno 111] Connection refused); {OFFLINE_ROUTE}')
    assert error.value.__cause__ is None
    assert error.value.__suppress_context__ is True
    assert OFFLINE_ROUTE.startswith('offline route: groups.build_package("groups.tar.lz4")')
    assert 'garen.load_package("groups.tar.lz4")' in OFFLINE_ROUTE


@pytest.mark.parametrize('ex', [ValueError('x'), FileNotFoundError(errno.ENOENT, 'gone'),
                                OSError(errno.ENOSPC, 'No space left on device'),
                                ResourceError(errno.EROFS, 'cannot write /x: read-only file system', '/x')])
def test_hub_errors_passes_other_errors_unchanged(ex):
    with pytest.raises(type(ex)) as error:
        with hub_errors('to_hf'):
            raise ex
    assert error.value is ex


def test_hub_errors_lets_a_result_through():
    with hub_errors('to_hf'):
        value = 3
    assert value == 3


# ---- load_package


@pytest.fixture
def loads(monkeypatch):
    """``pt.Artifact.load`` replaced by a recorder: (path, kwargs) of every call."""
    import pyterrier as pt
    calls = []

    def load(path, **kwargs):
        calls.append((path, kwargs))
        return 'loaded'
    monkeypatch.setattr(pt.Artifact, 'load', staticmethod(load))
    return calls


def _tar(members):
    """The bytes of an uncompressed tar: ``members`` maps a name to bytes (a file), None (a folder) or a
    ``TarInfo`` to add as it is."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        for name, data in members.items():
            if isinstance(data, tarfile.TarInfo):
                tar.addfile(data)
            elif data is None:
                info = tarfile.TarInfo(name)
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


PACKAGE = {'pt_meta.json': b'{"type": "x"}', 'sub': None, 'sub/data.bin': b'\x00\x01'}


def _unpacked(folder):
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(folder.rglob('*'))}


def test_a_folder_is_loaded_as_it_is(tmp_path, loads):
    assert load_package(tmp_path, memo_limit=5) == 'loaded'
    assert loads == [(str(tmp_path), {'memo_limit': 5})]


def test_a_missing_package_is_refused(tmp_path, loads):
    with pytest.raises(FileNotFoundError, match='build_package'):
        load_package(tmp_path / 'groups.tar.lz4')
    assert loads == []


@pytest.mark.parametrize(('name', 'unpacked'), [('groups.tar', 'groups'), ('g.v1.tar.lz4', 'g.v1'),
                                                ('groups.pkg', 'groups.pkg.unpacked')])
def test_a_package_is_unpacked_beside_it(tmp_path, loads, name, unpacked):
    data = _tar(PACKAGE)
    if name.endswith('.lz4'):
        import lz4.frame
        data = lz4.frame.compress(data)
    (tmp_path / name).write_bytes(data)
    assert load_package(tmp_path / name, memo_limit=None) == 'loaded'
    assert len(loads) == 2  # the unpacked temporary opens before it is moved in, then the folder is loaded
    assert Path(loads[0][0]).name.startswith(f'.{unpacked}.')
    assert loads[0][1] == {}  # the package is checked alone: the caller's arguments are for the folder's class
    assert loads[1] == (str(tmp_path / unpacked), {'memo_limit': None})
    assert _unpacked(tmp_path / unpacked) == {'pt_meta.json': b'{"type": "x"}', 'sub': None,
                                              'sub/data.bin': b'\x00\x01'}
    assert _listing(tmp_path) == sorted([name, unpacked])


def test_a_package_is_unpacked_where_asked(tmp_path, loads):
    """Also in a folder whose parent does not exist yet (pt.io.finalized_directory failed there with an
    UnboundLocalError)."""
    (tmp_path / 'groups.tar').write_bytes(_tar(PACKAGE))
    load_package(str(tmp_path / 'groups.tar'), folder=str(tmp_path / 'else' / 'in' / 'here'))
    assert loads[1:] == [(str(tmp_path / 'else' / 'in' / 'here'), {})]
    assert _unpacked(tmp_path / 'else' / 'in' / 'here')['sub/data.bin'] == b'\x00\x01'
    assert not (tmp_path / 'groups').exists()


def test_an_unpacked_folder_is_loaded_without_reading_the_package(tmp_path, loads):
    (tmp_path / 'groups.tar').write_bytes(b'not a tar at all')
    (tmp_path / 'groups').mkdir()
    (tmp_path / 'groups' / 'pt_meta.json').write_text('{}')
    load_package(tmp_path / 'groups.tar')
    assert loads == [(str(tmp_path / 'groups'), {})]


def test_a_damaged_package_leaves_no_folder(tmp_path, loads):
    (tmp_path / 'groups.tar').write_bytes(b'not a tar at all' * 100)
    with pytest.raises(PackageError, match=r'groups.tar cannot be read \(ReadError: .*nothing was unpacked'):
        load_package(tmp_path / 'groups.tar')
    assert _listing(tmp_path) == ['groups.tar']
    assert loads == []


def _link(name, target, kind):
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info


def test_nothing_outside_the_folder_and_no_link_is_unpacked(tmp_path, loads):
    outside = tmp_path / 'outside.txt'
    (tmp_path / 'share').mkdir()
    package = tmp_path / 'share' / 'groups.tar'
    package.write_bytes(_tar({'pt_meta.json': b'{}',
                              '../../outside.txt': b'overwritten',
                              'sub/../../../outside.txt': b'overwritten',
                              str(outside): b'overwritten',
                              'link': _link('link', str(outside), tarfile.SYMTYPE),
                              'hard': _link('hard', 'pt_meta.json', tarfile.LNKTYPE),
                              'fifo': _link('fifo', '', tarfile.FIFOTYPE)}))
    outside.write_text('the user\'s')
    with pytest.raises(PackageError, match="holds '../../outside.txt', a path outside the folder"):
        load_package(package)
    assert outside.read_text() == 'the user\'s'
    assert _listing(tmp_path / 'share') == ['groups.tar']  # refused as a whole: no folder, no temporary
    assert loads == []


def test_the_packages_modes_and_times_are_not_applied(tmp_path, loads, umask):
    info = tarfile.TarInfo('data.bin')
    info.size, info.mode, info.mtime = 2, 0o600, 1_000_000
    folder = tarfile.TarInfo('ro')
    folder.type, folder.mode, folder.mtime = tarfile.DIRTYPE, 0o500, 1_000_000
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode='w') as tar:
        tar.addfile(info, io.BytesIO(b'ab'))
        tar.addfile(folder)
        meta = tarfile.TarInfo('pt_meta.json')
        meta.size = 2
        tar.addfile(meta, io.BytesIO(b'{}'))
    (tmp_path / 'g.tar').write_bytes(buffer.getvalue())
    before = time.time() - 60
    load_package(tmp_path / 'g.tar')
    data = (tmp_path / 'g' / 'data.bin').stat()
    assert data.st_mode & 0o7777 == 0o644
    assert data.st_mtime > before
    assert (tmp_path / 'g' / 'ro').stat().st_mode & 0o7777 == 0o700  # tarfile's own safe mode, not 0o500


@pytest.mark.parametrize(('name', 'stripped'), [
    ('groups.tar.lz4', 'groups'), ('groups.tar', 'groups'), ('a.tar.tar', 'a.tar'), ('.tar', ''),
    ('groups.TAR', 'groups.TAR.unpacked'), ('groups.lz4', 'groups.lz4.unpacked'),
    ('groups.tar.gz', 'groups.tar.gz.unpacked'), ('groups', 'groups.unpacked'),
])
def test_strip_suffix(name, stripped):
    assert _strip_suffix(name) == stripped


def test_the_modules_say_what_they_export():
    assert _prepare.__all__ == ['Prepared', 'prepare', 'cache_dir', 'collection_fingerprint', 'corpus_fingerprint']
    assert _sharing.__all__ == ['load_package', 'hub_errors', 'OFFLINE_ROUTE', 'PackageError']
