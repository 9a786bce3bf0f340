"""The four artifacts prepare builds and reuses (PISA index, vectors, dense k-NN graph, BM25 graph) record the size
and SHA-256 of each of their files (``garen_files.json``); a reuse checks them first, so bytes damaged on disk at the
same size are an ArtifactError naming the artifact, the file and the fix, never a native abort or silently other
results (docs/robustness.md, "Artifacts")."""
import hashlib
import json
import shutil
import warnings

import numpy as np
import pytest

pytest.importorskip('pyterrier_dr', reason='the cpu extra (pyterrier-dr) is not installed')

from pyterrier_garen import ArtifactError, prepare  # noqa: E402
from pyterrier_garen._atomic import FILES_RECORD, record_files, rerecord_file  # noqa: E402
from pyterrier_garen._checks import check_recorded_files  # noqa: E402
from pyterrier_garen._encoding import encoder_slug  # noqa: E402
from pyterrier_garen._graphs import bm25_index  # noqa: E402
from pyterrier_garen.synthetic import make_synthetic  # noqa: E402

from test_robustness_boundaries import _read_only  # noqa: E402

K = 4
FIX = 'rerun (prepare rebuilds it; nothing else is lost)'


class Hashing:
    """8-dimensional vectors from a text's SHA-256 (the records, not the encoding, are under test)."""
    model_name = 'hashing-recorded-files'

    def encode_docs(self, texts, batch_size=None):
        return np.stack([np.frombuffer(hashlib.sha256(t.encode()).digest()[:8], dtype=np.uint8).astype(np.float32)
                         - 127.5 for t in texts])


ENCODER = Hashing()
FLEX = f'{encoder_slug(ENCODER)}.flex'
#: artifact -> (its folder in the workdir, the prepare that reuses it)
ARTIFACTS = {'PISA index': ('bm25.pisa', 'dense'), 'vectors': (FLEX, 'dense'),
             'dense k-NN graph': (f'{FLEX}/corpusgraph_k{K}', 'dense'),
             'BM25 corpus graph': (f'bm25.k{K}.graph', 'bm25')}


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    return make_synthetic(tmp_path_factory.mktemp('recorded') / 'c', docs_per_topic=6, queries_per_topic=1)


def _prepare(dataset, work, graph, k=K):
    return prepare(dataset, work, graph=graph, k=k, max_group_size=8, encoder=ENCODER,
                   vectors=graph == 'dense')


@pytest.fixture(scope='module')
def built(tiny, tmp_path_factory):
    """A finished workdir holding all four artifacts (copied by each test that changes it)."""
    work = tmp_path_factory.mktemp('built') / 'w'
    _prepare(tiny, work, 'dense')
    _prepare(tiny, work, 'bm25')
    return work


@pytest.fixture
def work(built, tmp_path):
    return shutil.copytree(built, tmp_path / 'w', symlinks=True)


def _snapshot(folder):
    """Every entry under ``folder``: its kind, and the bytes of each regular file."""
    return {str(p.relative_to(folder)): ('link' if p.is_symlink() else p.read_bytes() if p.is_file() else 'dir')
            for p in sorted(folder.rglob('*'))}


def _recorded(folder):
    return json.loads((folder / FILES_RECORD).read_text())['files']


def _flip(file):
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x55
    file.write_bytes(bytes(data))


def test_every_artifact_records_each_of_its_regular_files(built):
    for name, (folder, _) in ARTIFACTS.items():
        files = _recorded(built / folder)
        own = {str(p.relative_to(built / folder)) for p in (built / folder).rglob('*')
               if p.is_file() and not p.is_symlink() and p.name != FILES_RECORD}
        if name == 'vectors':  # the graph built inside the vectors' folder later is not theirs
            own = {f for f in own if not f.startswith('corpusgraph_k')}
        assert set(files) == own, name
        for file, entry in files.items():
            data = (built / folder / file).read_bytes()
            assert entry == {'size': len(data), 'sha256': hashlib.sha256(data).hexdigest()}
    assert 'fwd.termlex' in _recorded(built / 'bm25.pisa')
    assert 'docnos.npids' not in _recorded(built / FLEX / f'corpusgraph_k{K}')  # a link to the vectors' lookup


@pytest.mark.parametrize('name', ARTIFACTS)
def test_a_byte_flipped_in_any_recorded_file_is_named_and_nothing_is_touched(name, tiny, work):
    folder, graph = ARTIFACTS[name]
    path = work / folder
    for file in sorted(_recorded(path)):
        if file == 'pt_meta.json':  # damaged JSON is named by the readers of pt_meta.json
            continue
        original = (path / file).read_bytes()
        _flip(path / file)
        before = _snapshot(work)
        with pytest.raises(ArtifactError) as refused:
            _prepare(tiny, work, graph)
        assert str(refused.value) == (
            f'{path} ({name}) is damaged: {file} differs from what was built (same size, another SHA-256) (checked '
            f'against {FILES_RECORD}, written when it was built); the file was damaged on disk or replaced: delete '
            f'{path} and {FIX}')
        assert _snapshot(work) == before  # the folder is left untouched (and nothing else is written)
        (path / file).write_bytes(original)
    assert _prepare(tiny, work, graph).groups.validate()['ok']


@pytest.mark.parametrize('name', ARTIFACTS)
def test_a_missing_recorded_file_is_named(name, tiny, work):
    folder, graph = ARTIFACTS[name]
    path = work / folder
    victim = sorted(f for f in _recorded(path) if f != 'pt_meta.json')[-1]
    (path / victim).unlink()
    with pytest.raises(ArtifactError, match=rf'\({name}\) is damaged: {victim} is missing \(checked against '
                                            rf'{FILES_RECORD}.*delete {path} and rerun'):
        _prepare(tiny, work, graph)


def test_a_flipped_termlex_is_an_error_not_a_native_abort(tiny, work):
    """The damage measured in the issue: PISA aborted the whole process on its next search."""
    _flip(work / 'bm25.pisa' / 'fwd.termlex')
    with pytest.raises(ArtifactError, match=r'bm25.pisa \(PISA index\) is damaged: fwd.termlex differs'):
        bm25_index(tiny, work / 'bm25.pisa')


def test_every_problem_is_listed(tiny, work):
    path = work / 'bm25.pisa'
    recorded = sorted(f for f in _recorded(path) if f != 'pt_meta.json')
    for file in recorded:
        (path / file).write_bytes(b'')
    with pytest.raises(ArtifactError) as refused:
        bm25_index(tiny, path)
    assert f'and {len(recorded) - 5} more (checked' in str(refused.value)
    assert f'{recorded[0]} has 0 bytes, not the {_recorded(path)[recorded[0]]["size"]} built' in str(refused.value)


def test_a_link_at_a_recorded_files_name_is_named(tiny, work):
    path = work / FLEX
    (path / 'vecs.f4').rename(work / 'elsewhere.f4')
    (path / 'vecs.f4').symlink_to(work / 'elsewhere.f4')
    with pytest.raises(ArtifactError, match=r'vecs.f4 is not a regular file \(a link or a folder\)'):
        _prepare(tiny, work, 'dense')


@pytest.mark.parametrize('content', [b'', b'{"files": [1]}', b'not json', b'{"files": {"../x": '
                                     b'{"size": 1, "sha256": "00"}}}'])
def test_a_damaged_record_is_named(content, tiny, work):
    (work / 'bm25.pisa' / FILES_RECORD).write_bytes(content)
    with pytest.raises(ArtifactError, match=rf'{FILES_RECORD} is damaged \(not the record of the files\' sizes and '
                                            rf'SHA-256 its build writes\); delete {work / "bm25.pisa"} and rerun'):
        bm25_index(tiny, work / 'bm25.pisa')


def test_files_not_in_the_record_are_ignored(tiny, work):
    for folder, _ in ARTIFACTS.values():
        (work / folder / 'added-later.bin').write_bytes(b'another parameter set, a FAISS index, ...')
    assert _prepare(tiny, work, 'dense').groups.validate()['ok']
    assert _prepare(tiny, work, 'bm25').groups.validate()['ok']
    # PISA adds the files of another BM25 parameter set to the index folder: not recorded, not checked
    pisa = bm25_index(tiny, work / 'bm25.pisa')
    query = tiny.get_topics()['query'].iloc[0]
    assert len(pisa.bm25(k1=1.2, b=0.75, num_results=3).search(query)) == 3
    assert any(p.name.startswith('bm25.k1-1.2.b-0.75') for p in (work / 'bm25.pisa').iterdir())
    assert check_recorded_files(work / 'bm25.pisa', 'PISA index') is True


def test_an_artifact_without_a_record_is_reused_unchecked(tiny, work):
    """Built by an earlier version: reused as before, and no record is written on reuse."""
    for folder, _ in ARTIFACTS.values():
        (work / folder / FILES_RECORD).unlink()
        assert check_recorded_files(work / folder, 'x') is False
    _flip(work / FLEX / 'vecs.f4')  # unchecked: what earlier versions did
    before = _snapshot(work)
    _prepare(tiny, work, 'dense')
    _prepare(tiny, work, 'bm25')
    assert not [f for f, _ in ARTIFACTS.values() if (work / f / FILES_RECORD).exists()]
    assert {f: v for f, v in _snapshot(work).items() if 'groups' not in f} == \
        {f: v for f, v in before.items() if 'groups' not in f}


def test_a_finished_workdir_on_a_read_only_mount_is_reused_without_writing(tiny, work, monkeypatch):
    before = _snapshot(work)
    with monkeypatch.context() as patch:
        _read_only(patch, work)
        with warnings.catch_warnings():
            warnings.simplefilter('error')
            for graph in ('dense', 'bm25'):
                assert _prepare(tiny, work, graph).groups.num_groups > 0
    assert _snapshot(work) == before


def test_a_second_prepare_with_another_k_works(tiny, work):
    flex_record = (work / FLEX / FILES_RECORD).read_bytes()
    for graph in ('dense', 'bm25'):
        for k in (8, 2, K, 8):  # a larger graph built beside, a smaller one cut from a larger, then reuses
            prepared = _prepare(tiny, work, graph, k=k)
            assert prepared.groups.validate()['ok']
    assert check_recorded_files(work / FLEX / 'corpusgraph_k8', 'dense k-NN graph') is True
    # cut from corpusgraph_k4 and written as a graph of its own, with its own record
    assert check_recorded_files(work / FLEX / 'corpusgraph_k2', 'dense k-NN graph') is True
    for k in (2, K, 8):
        assert check_recorded_files(work / f'bm25.k{k}.graph', 'BM25 corpus graph') is True
    assert (work / FLEX / FILES_RECORD).read_bytes() == flex_record
    _flip(work / FLEX / 'corpusgraph_k2' / 'weights.f16.np')  # the graph cut to k=2 is checked when reused
    with pytest.raises(ArtifactError, match=r'corpusgraph_k2 \(dense k-NN graph\) is damaged: weights.f16.np'):
        _prepare(tiny, work, 'dense', k=2)


def test_a_package_of_a_pisa_index_round_trips(tiny, work, tmp_path):
    import pyterrier_pisa

    from pyterrier_garen import load_package
    package = pyterrier_pisa.PisaIndex(str(work / 'bm25.pisa')).build_package(str(tmp_path / 'p.tar.lz4'),
                                                                                verbose=False)
    loaded = load_package(package, tmp_path / 'unpacked')
    assert (tmp_path / 'unpacked' / FILES_RECORD).read_bytes() == (work / 'bm25.pisa' / FILES_RECORD).read_bytes()
    assert check_recorded_files(tmp_path / 'unpacked', 'PISA index') is True
    reused = bm25_index(tiny, tmp_path / 'unpacked')
    query = tiny.get_topics()['query'].iloc[0]
    assert reused.bm25(num_results=5).search(query).docno.tolist() == \
        loaded.bm25(num_results=5).search(query).docno.tolist()
    _flip(tmp_path / 'unpacked' / 'inv.docs')
    with pytest.raises(ArtifactError, match=r'unpacked \(PISA index\) is damaged: inv.docs differs'):
        bm25_index(tiny, tmp_path / 'unpacked')


def test_a_rewrite_of_the_projects_own_follows_in_the_record(tmp_path):
    folder = tmp_path / 'a'
    (folder / 'sub').mkdir(parents=True)
    (folder / 'pt_meta.json').write_text('{}')
    (folder / 'sub' / 'x.bin').write_bytes(b'x' * 10)
    (folder / 'link').symlink_to('pt_meta.json')
    assert set(record_files(folder)) == {'pt_meta.json', 'sub/x.bin'}
    assert check_recorded_files(folder, 'test') is True
    (folder / 'pt_meta.json').write_text('{"a": 1}')
    assert rerecord_file(folder / 'pt_meta.json') is True
    assert check_recorded_files(folder, 'test') is True
    assert rerecord_file(folder / 'link') is False  # not recorded: nothing written
    assert rerecord_file(tmp_path / 'elsewhere.bin') is False


def test_the_benchmark_never_writes_into_a_folder_that_holds_something(tmp_path, capsys):
    from _scripts import load_script
    script = load_script('bench/recorded_files.py')
    mine = tmp_path / 'mine'
    mine.mkdir()
    (mine / 'notes.txt').write_text('kept')
    with pytest.raises(SystemExit, match=r'--out .*mine exists and is not an empty folder; give a new one'):
        script.main(['--dataset', str(tmp_path / 'unused'), '--out', str(mine)])
    assert [p.name for p in mine.iterdir()] == ['notes.txt']
    assert (mine / 'notes.txt').read_text() == 'kept'


@pytest.mark.parametrize('name', ['dense k-NN graph', 'BM25 corpus graph'])
def test_a_graph_loaded_outside_prepare_is_checked_against_its_record(name, work, capsys):
    """build-groups (load_corpus_graph) read a graph whose bytes were damaged at the same size without a word, and
    grouped documents by neighbours that were never computed."""
    from pyterrier_garen import __main__ as cli
    from pyterrier_garen._graphs import load_corpus_graph
    path = work / ARTIFACTS[name][0]
    assert load_corpus_graph(path) is not None  # as built: loads
    edges = sorted(f for f in _recorded(path) if f.endswith('.np') and 'edges' in f)
    assert edges, _recorded(path)
    _flip(path / edges[0])
    before = _snapshot(work)
    with pytest.raises(ArtifactError) as refused:
        load_corpus_graph(path)
    assert str(refused.value) == (
        f'{path} (corpus graph) is damaged: {edges[0]} differs from what was built (same size, another SHA-256) '
        f'(checked against {FILES_RECORD}, written when it was built); the file was damaged on disk or replaced: '
        'rebuild it with the build-graph command (or bm25_corpus_graph / dense_corpus_graph) into a new folder')
    with pytest.raises(SystemExit) as status:
        cli.main(['build-groups', '--graph', str(path), '--out', str(work / 'groups')])
    assert status.value.code != 0
    err = capsys.readouterr().err
    assert err.count('\n') == 1
    assert 'is damaged' in err
    assert _snapshot(work) == before  # nothing was built, nothing changed


@pytest.mark.parametrize('name', ARTIFACTS)
def test_a_reuse_hashes_each_recorded_file_once(name, tiny, work, monkeypatch):
    """load_corpus_graph's own check came on top of the BM25 graph's: every file of a reused graph was hashed twice."""
    from pyterrier_garen import _atomic
    folder, graph = ARTIFACTS[name]
    hashed = []
    original = _atomic.file_sha256

    def counting(path):
        hashed.append(str(path))
        return original(path)
    monkeypatch.setattr(_atomic, 'file_sha256', counting)
    _prepare(tiny, work, graph)
    mine = sorted(h for h in hashed if h.startswith(str(work / folder) + '/') and '/corpusgraph_k' not in
                  h[len(str(work / folder)):])
    assert mine == sorted(str(work / folder / f) for f in _recorded(work / folder))
