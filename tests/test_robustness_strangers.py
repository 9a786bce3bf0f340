"""Artifacts from strangers and errors of the file system (issue 18, classes 3 and 4).

Every file of an artifact is held to the same rules on open and in ``validate()``: no link out of the artifact,
summary records of the right JSON types and each group once, graph sizes and neighbour ids that fit the declared
``doc_count``, a ``pt_meta.json`` that is strict JSON (and only strict JSON is written). Disk full, permission
denied and read-only file systems are reported with the path, the cause and the fix, by readers and writers alike.
Faults are injected by monkeypatching the OS calls, never by filling a real disk.
"""
import errno
import io
import json
import os

import numpy as np
import pytest

from pyterrier_garen import ArtifactError, ExtractiveSummarizer, GroupCorpusGraph
from pyterrier_garen._graphs import load_corpus_graph, write_docnos

N = 40


def _arrays():
    docnos = [f'd{i:02d}' for i in range(N)]
    edges = np.stack([(np.arange(1, 4) + i) % N for i in range(N)])
    return docnos, edges, np.full(edges.shape, 0.5, dtype=np.float32)


def _build(path):
    docnos, edges, weights = _arrays()
    return GroupCorpusGraph.from_arrays(path, docnos, edges, weights, labels=np.arange(N) // 5, max_group_size=5)


def _corpus():
    return [{'docno': f'd{i:02d}', 'text': f'word{i % 3} topic{i // 5}'} for i in range(N)]


@pytest.fixture
def summarised(tmp_path):
    groups = _build(tmp_path / 'g')
    return groups.summarize(ExtractiveSummarizer(), _corpus())


def _strict(text):
    def refuse(name):
        raise ValueError(name)
    return json.loads(text, parse_constant=refuse)


# -- class 3: strangers' artifacts ---------------------------------------------------------------------------------
def test_summaries_file_that_is_a_link_out_is_refused_on_open_and_in_validate(summarised, tmp_path):
    outside = tmp_path / 'elsewhere.jsonl'
    outside.write_bytes((summarised.path / 'summaries.jsonl').read_bytes())
    os.unlink(summarised.path / 'summaries.jsonl')
    os.symlink(outside, summarised.path / 'summaries.jsonl')
    with pytest.raises(ArtifactError, match=r'summaries.jsonl is a symbolic link to .*elsewhere.jsonl \(outside the '
                                            r'artifact\)'):
        GroupCorpusGraph(summarised.path)


def test_a_link_inside_is_refused_too(summarised):
    os.symlink('group_of.u32.np', summarised.path / 'extra.np')
    with pytest.raises(ArtifactError, match=r'extra.np is a symbolic link'):
        GroupCorpusGraph(summarised.path)


def _rewrite_summaries(path, edit):
    lines = (path / 'summaries.jsonl').read_text().splitlines()
    (path / 'summaries.jsonl').write_text('\n'.join(edit(lines)) + '\n')


@pytest.mark.parametrize(('edit', 'words'), [
    (lambda lines: [json.dumps({**json.loads(lines[0]), 'group': '0'})] + lines[1:],
     r'line 1 is not a valid summary record \("group" must be an integer, got \'0\'\)'),
    (lambda lines: [json.dumps({**json.loads(lines[0]), 'group': 0.0})] + lines[1:],
     r'line 1 is not a valid summary record \("group" must be an integer, got 0.0\)'),
    (lambda lines: [json.dumps({**json.loads(lines[0]), 'concept': ['a', 'b']})] + lines[1:],
     r'"concept" must be a string'),
    (lambda lines: ['[1, 2]'] + lines[1:], r'a JSON list, not an object'),
    (lambda lines: lines + [lines[3]], r'line 9 repeats group 3 \(first on line 4\)'),
    (lambda lines: [lines[0].replace('}', ', "score": NaN}')] + lines[1:], r'line 1 is not a valid summary record'),
])
def test_summary_records_of_wrong_types_or_repeated_fail_validate(summarised, edit, words):
    _rewrite_summaries(summarised.path, edit)
    with pytest.raises(ArtifactError, match=words):
        GroupCorpusGraph(summarised.path).validate()
    with pytest.raises(ArtifactError, match=words):
        GroupCorpusGraph(summarised.path).summary(0)


def _np_topk(path, edges, *, k=None, doc_count=None):
    path.mkdir()
    n = len(edges)
    np.asarray(edges, dtype=np.uint32).tofile(path / 'edges.u32.np')
    np.full(np.shape(edges), 0.5, dtype=np.float16).tofile(path / 'weights.f16.np')
    write_docnos([f'd{i:02d}' for i in range(n)], path / 'docnos.npids')
    (path / 'pt_meta.json').write_text(json.dumps({'type': 'corpus_graph', 'format': 'np_topk',
                                                   'doc_count': n if doc_count is None else doc_count,
                                                   'k': np.shape(edges)[1] if k is None else k}))
    return path


@pytest.mark.parametrize(('meta', 'words'), [
    ({'k': 10**9}, r'edges.u32.np has 480 bytes, expected 160000000000 for 40 documents and k=1000000000'),
    ({'doc_count': 10**12}, r'declares doc_count=1000000000000, but docnos.npids holds 40 docnos'),
    ({'k': -3}, r'k must be a non-negative integer, got -3'),
    ({'k': 'three'}, r'k must be a non-negative integer'),
])
def test_graph_declaring_absurd_sizes_is_refused_naming_the_file(tmp_path, meta, words):
    _, edges, _ = _arrays()
    path = _np_topk(tmp_path / 'graph', edges, **meta)
    with pytest.raises(ArtifactError, match=words):
        load_corpus_graph(path)


def test_graph_with_neighbour_ids_beyond_doc_count_is_refused(tmp_path):
    _, edges, _ = _arrays()
    edges = edges.copy()
    edges[7, 2] = N + 5
    path = _np_topk(tmp_path / 'graph', edges)
    with pytest.raises(ArtifactError, match=r'graph/edges.u32.np names neighbour id 45, but the graph has only 40 '
                                            r'documents \(ids 0..39\)'):
        load_corpus_graph(path)


def test_graph_with_empty_meta_is_a_clear_error(tmp_path):
    _, edges, _ = _arrays()
    path = _np_topk(tmp_path / 'graph', edges)
    (path / 'pt_meta.json').write_text('')
    with pytest.raises(ArtifactError, match=r'graph/pt_meta.json is empty \(an interrupted copy\?\); the graph is '
                                            r'damaged'):
        load_corpus_graph(path)


def test_dense_graph_with_empty_meta_is_a_clear_error(tmp_path):
    pyterrier_dr = pytest.importorskip('pyterrier_dr')
    from pyterrier_garen._graphs import dense_corpus_graph
    indexer = pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex')).indexer()
    rng = np.random.default_rng(0)
    indexer.index([{'docno': f'd{i:02d}', 'doc_vec': rng.random(8).astype(np.float32)} for i in range(N)])
    index = pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex'))
    graph = dense_corpus_graph(index, k=3)
    (graph.path / 'pt_meta.json').write_text('')
    with pytest.raises(ArtifactError, match=r'corpusgraph_k3 \(dense k-NN graph\) is damaged: pt_meta.json has 0 '
                                            r'bytes, not the \d+ built'):  # the record of its files, checked first
        dense_corpus_graph(pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex')), k=3)
    (graph.path / 'garen_files.json').unlink()  # a graph built by an earlier version
    with pytest.raises(ArtifactError, match=r'corpusgraph_k3/pt_meta.json is empty'):
        dense_corpus_graph(pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex')), k=3)


def test_group_meta_that_is_empty_or_not_strict(summarised):
    (summarised.path / 'pt_meta.json').write_text('')
    with pytest.raises(ArtifactError, match=r'pt_meta.json is empty'):
        GroupCorpusGraph(summarised.path)
    (summarised.path / 'pt_meta.json').write_text('{"type": "corpus_graph", "doc_count": NaN}')
    with pytest.raises(ArtifactError, match=r'pt_meta.json is not valid JSON \(NaN is not a JSON number\)'):
        GroupCorpusGraph(summarised.path)


def test_only_strict_json_is_written(tmp_path):
    groups = _build(tmp_path / 'g')  # labels given: no Leiden run, so no modularity
    meta = _strict((groups.path / 'pt_meta.json').read_text())
    assert meta['partition']['modularity'] is None


# -- class 4: errors of the file system ----------------------------------------------------------------------------
def _fd_path(fd):
    try:
        return os.readlink(f'/proc/self/fd/{fd}')
    except OSError:
        return ''


def _full_disk(monkeypatch, folder, after=0):
    """Writes to files under ``folder`` fail with ENOSPC once ``after`` bytes went through (os.write and Python
    file objects alike)."""
    folder = str(folder)
    budget = [after]
    real_write, real_open = os.write, io.open

    def write(fd, data):
        if _fd_path(fd).startswith(folder):
            if budget[0] < len(data):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            budget[0] -= len(data)
        return real_write(fd, data)

    class Full:
        def __init__(self, raw):
            self._raw = raw

        def write(self, data):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self._raw.close()

        def __getattr__(self, name):
            return getattr(self._raw, name)

    def open_(file, mode='r', *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        name = _fd_path(file) if isinstance(file, int) else str(file)
        if name.startswith(folder) and set(mode) & set('wax+'):
            return Full(handle)
        return handle
    monkeypatch.setattr(os, 'write', write)
    monkeypatch.setattr(io, 'open', open_)
    monkeypatch.setattr('builtins.open', open_)


def test_full_disk_during_build_groups_names_path_cause_and_fix(tmp_path, monkeypatch, capsys):
    from pyterrier_garen.__main__ import main
    graph = _build(tmp_path / 'source')
    _full_disk(monkeypatch, tmp_path / 'out', after=100)
    with pytest.raises(SystemExit) as info:
        main(['build-groups', '--graph', str(graph.path), '--out', str(tmp_path / 'out' / 'groups'),
              '--max-group-size', '5'])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f'error: cannot build {tmp_path / "out" / "groups"}: no space left on device')
    assert 'free some disk space' in err
    assert sorted(p.name for p in (tmp_path / 'out').iterdir()) == []  # no half-built folder, no temporary


def test_full_disk_while_summaries_are_appended(tmp_path, monkeypatch):
    groups = _build(tmp_path / 'g')
    _full_disk(monkeypatch, tmp_path / 'g' / 'summaries.partial.jsonl')
    with pytest.raises(OSError, match=r'cannot write .*g/summaries.partial.jsonl: no space left on device; free '
                                      r'some disk space'):
        groups.summarize(ExtractiveSummarizer(), _corpus())


def test_permission_denied_on_docnos_is_not_called_damage(summarised, monkeypatch):
    real_open = io.open

    def open_(file, *args, **kwargs):
        if str(file).endswith('docnos.npids'):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(file))
        return real_open(file, *args, **kwargs)
    monkeypatch.setattr(io, 'open', open_)
    monkeypatch.setattr('builtins.open', open_)
    with pytest.raises(OSError) as info:
        GroupCorpusGraph(summarised.path)
    message = str(info.value)
    assert f'cannot read {summarised.path / "docnos.npids"}: permission denied' in message
    assert 'check the permissions' in message
    assert 'damaged' not in message


def test_read_only_artifact_folder_when_summarising(tmp_path, monkeypatch):
    groups = _build(tmp_path / 'g')
    real_open = os.open
    folder = str(groups.path)

    def open_(path, flags, *args, **kwargs):
        if str(path).startswith(folder) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)
    monkeypatch.setattr(os, 'open', open_)
    with pytest.raises(OSError) as info:
        groups.summarize(ExtractiveSummarizer(), _corpus())
    assert 'read-only file system' in str(info.value)
    assert folder in str(info.value)
    assert 'choose a writable folder' in str(info.value)


def test_truncated_vectors_are_refused_before_reuse(tmp_path):
    pyterrier_dr = pytest.importorskip('pyterrier_dr')
    from pyterrier_garen._graphs import encode_corpus
    rng = np.random.default_rng(0)
    pyterrier_dr.FlexIndex(str(tmp_path / 'v.flex')).indexer().index(
        [{'docno': f'd{i:02d}', 'doc_vec': rng.random(8).astype(np.float32)} for i in range(N)])
    data = (tmp_path / 'v.flex' / 'vecs.f4').read_bytes()
    (tmp_path / 'v.flex' / 'vecs.f4').write_bytes(data[:-32])

    class Corpus:
        def get_corpus_iter(self, verbose=False):
            return iter(_corpus())
    with pytest.raises(ArtifactError, match=r'v.flex/vecs.f4 has 1248 bytes, expected 1280 for 40 vectors of 8 floats'):
        encode_corpus(Corpus(), tmp_path / 'v.flex', verbose=False)


def _no_space(monkeypatch, folder):
    """A full disk under ``folder``: writes fail with ENOSPC and statvfs reports no free block."""
    _full_disk(monkeypatch, folder)
    real = os.statvfs

    def statvfs(path):
        result = real(path)
        if os.path.realpath(path).startswith(str(folder)):
            return os.statvfs_result((*result[:4], 0, *result[5:]))
        return result
    monkeypatch.setattr(os, 'statvfs', statvfs)


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    from pyterrier_garen.synthetic import make_synthetic
    return make_synthetic(tmp_path_factory.mktemp('tiny') / 'c', docs_per_topic=6, queries_per_topic=1)


def _write_groups(tiny, target, monkeypatch):
    _no_space(monkeypatch, target)
    _build(target / 'g')


def _write_summaries(tiny, target, monkeypatch):
    groups = _build(target / 'g')
    _no_space(monkeypatch, target)
    groups.summarize(ExtractiveSummarizer(), _corpus())


def _write_manifest(tiny, target, monkeypatch):
    from pyterrier_garen._prepare import _check_workdir
    _no_space(monkeypatch, target)
    _check_workdir(target / 'w', 'f' * 64, 'tiny')


def _write_pisa(tiny, target, monkeypatch):
    import pyterrier_pisa

    from pyterrier_garen._graphs import bm25_index

    def native_failure(self, *args, **kwargs):
        raise RuntimeError('pisa: could not write the forward index')  # what native code says: no errno
    monkeypatch.setattr(pyterrier_pisa.PisaIndex, 'index', native_failure)
    _no_space(monkeypatch, target)
    bm25_index(tiny, target / 'x.pisa')


def _write_vectors(tiny, target, monkeypatch):
    from pyterrier_garen._graphs import encode_corpus

    from test_robustness_swap import FakeEncoder
    _no_space(monkeypatch, target)
    encode_corpus(tiny, target / 'v.flex', encoder=FakeEncoder(), verbose=False)


def _write_bm25_graph(tiny, target, monkeypatch):
    from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index
    index = bm25_index(tiny, target.parent / 'pisa')
    _no_space(monkeypatch, target)
    bm25_corpus_graph(tiny, target / 'x.graph', index=index, k=3)


@pytest.mark.parametrize('writer', [_write_groups, _write_summaries, _write_manifest, _write_pisa, _write_vectors,
                                    _write_bm25_graph],
                         ids=['groups', 'summaries', 'prepare.json', 'pisa', 'vectors', 'bm25-graph'])
def test_every_writer_names_path_cause_and_fix_on_a_full_disk(tiny, tmp_path, monkeypatch, writer):
    target = tmp_path / 'disk'
    target.mkdir()
    with pytest.raises(OSError) as info:
        writer(tiny, target, monkeypatch)
    message = str(info.value)
    assert message.startswith('cannot ')
    assert str(target) in message
    assert 'no space left on device' in message
    assert 'free some disk space' in message


@pytest.mark.parametrize(('edit', 'words'), [
    (lambda entry: 'x', r"entry is 'x', not an object"),  # was an AttributeError's traceback
    (lambda entry: {**entry, 'count': str(entry['count'])}, r'entry has "count" \'8\', not an integer'),  # was
    # "holds 8 records, pt_meta.json says 8"
    (lambda entry: {k: v for k, v in entry.items() if k != 'summarizer'}, r'entry names no "summarizer"'),  # was
    # "error: summarizer" (a KeyError)
])
def test_an_edited_summaries_record_is_named_and_summarize_overwrite_repairs_it(summarised, edit, words):
    meta = json.loads((summarised.path / 'pt_meta.json').read_text())
    meta['summaries'] = edit(meta['summaries'])
    (summarised.path / 'pt_meta.json').write_text(json.dumps(meta))
    (summarised.path / 'summaries.partial.json').write_text(json.dumps({'summarizer': ExtractiveSummarizer().config(),
                                                                        'started': 1.0}))  # a run's leftover
    said = (r'pt_meta.json: its "summaries" ' + words + r', unlike the record a summarisation writes; it was edited '
            r'or damaged: summarise again with overwrite=True \(summarize --overwrite\)')
    with pytest.raises(ArtifactError, match=said):
        GroupCorpusGraph(summarised.path).summary(0)
    with pytest.raises(ArtifactError, match=said):
        GroupCorpusGraph(summarised.path).validate()
    with pytest.raises(ArtifactError, match=said):
        GroupCorpusGraph(summarised.path).summarize(ExtractiveSummarizer(), _corpus())
    GroupCorpusGraph(summarised.path).summarize(ExtractiveSummarizer(), _corpus(), overwrite=True)
    assert GroupCorpusGraph(summarised.path).validate()['summaries'] == 8
