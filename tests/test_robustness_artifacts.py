"""Artifacts: only own-kind artifacts are replaced and only when asked, the old one survives a failed rebuild, no
writing through links, stale temporaries cleaned, cheap checks on open and a full validate() (issue 9, "Nothing is
ever lost" and "Artifacts")."""
import json
import os
import shutil

import numpy as np
import pytest

from pyterrier_garen import ArtifactError, ExtractiveSummarizer, GroupCorpusGraph
from pyterrier_garen._atomic import ArtifactKindError
from pyterrier_garen._graphs import load_corpus_graph, write_docnos
from pyterrier_garen._summaries import PARTIAL, PARTIAL_META

N = 60


def _arrays(seed=0):
    rng = np.random.default_rng(seed)
    docnos = [f'd{i:03d}' for i in range(N)]
    edges = np.stack([(np.arange(1, 5) + i) % N for i in range(N)])
    weights = rng.random(edges.shape).astype(np.float32) + 0.1
    labels = np.arange(N) // 6
    return docnos, edges, weights, labels


def _build(path, seed=0, **kwargs):
    docnos, edges, weights, labels = _arrays(seed)
    return GroupCorpusGraph.from_arrays(path, docnos, edges, weights, labels=labels, max_group_size=6, **kwargs)


def _corpus():
    return [{'docno': f'd{i:03d}', 'text': f'word{i % 7} topic{i // 6} text'} for i in range(N)]


@pytest.fixture
def built(tmp_path):
    return _build(tmp_path / 'g')


def test_a_folder_of_other_files_is_never_replaced(tmp_path):
    target = tmp_path / 'out'
    target.mkdir()
    (target / 'thesis.tex').write_text('mine')
    for overwrite in (False, True):
        with pytest.raises(ArtifactKindError, match=r'out already exists and is not a corpus_graph.garen_groups '
                                                    r'artifact \(no pt_meta.json\); it is left untouched'):
            _build(target, overwrite=overwrite)
    assert (target / 'thesis.tex').read_text() == 'mine'


def test_another_kind_of_artifact_is_not_replaced(tmp_path):
    target = tmp_path / 'out'
    target.mkdir()
    (target / 'pt_meta.json').write_text(json.dumps({'type': 'sparse_index', 'format': 'pisa'}))
    with pytest.raises(ArtifactKindError, match='not a corpus_graph.garen_groups artifact .a sparse_index.pisa'):
        _build(target, overwrite=True)


def test_own_kind_replaced_only_when_asked(built, tmp_path):
    with pytest.raises(FileExistsError, match='built differently'):
        _build(tmp_path / 'g', seed=1, resolution=0.5)
    again = _build(tmp_path / 'g', seed=1, resolution=0.5, overwrite=True)
    assert again.meta['partition']['resolution'] == 0.5
    assert built.meta['partition']['resolution'] == 1.0


def test_weights_damaged_at_their_size_are_not_reused(built, tmp_path):
    """A flipped byte keeps every size right: a reuse used to take the file as the graph's weights."""
    file = tmp_path / 'g' / 'weights.f16.np'
    data = bytearray(file.read_bytes())
    data[len(data) // 2] ^= 0x55
    file.write_bytes(bytes(data))
    with pytest.raises(ArtifactError) as refused:
        _build(tmp_path / 'g')
    assert str(refused.value) == (f'{tmp_path / "g"} failed validation: weights.f16.np differs from what was built '
                                  '(weights_sha256 in pt_meta.json); the file was replaced or tampered with; rebuild '
                                  'the groups with overwrite=True (build-groups --overwrite), or delete '
                                  f'{tmp_path / "g"} and rerun prepare')
    assert file.read_bytes() == bytes(data)  # left as it is
    again = _build(tmp_path / 'g', overwrite=True)
    assert again.validate()['ok']
    assert _build(tmp_path / 'g').path == again.path  # reused as it is once whole


@pytest.mark.parametrize(('name', 'said'), [
    ('group_of.u32.np', '1 members are listed in a group that group_of.u32.np disagrees with (e.g. document 0 is '
                        'listed in group 0, but group_of says 1)'),
    ('group_members.u32.np', 'group_members.u32.np lists some documents twice and others not at all'),
    ('edges.u32.np', 'docnos.npids or edges.u32.np differ from what was built (graph_sha256 in pt_meta.json); the '
                     'files were replaced or tampered with')])
def test_group_files_damaged_at_their_size_are_not_reused(built, tmp_path, name, said):
    # a valid id put in another's place keeps every size and range right; show --validate found it, a reuse did not
    file = tmp_path / 'g' / name
    ids = np.fromfile(file, dtype='<u4')
    ids[0] = 1 if name == 'group_of.u32.np' else ids[1]  # document 0 (of group 0) said to be in group 1; or a twin
    if name == 'edges.u32.np':
        ids[0] = (ids[0] + 7) % N
    ids.tofile(file)
    with pytest.raises(ArtifactError) as refused:
        _build(tmp_path / 'g')
    assert str(refused.value) == (f'{tmp_path / "g"} failed validation: {said}; rebuild the groups with '
                                  f'overwrite=True (build-groups --overwrite), or delete {tmp_path / "g"} and rerun '
                                  'prepare')


def test_failed_rebuild_keeps_the_old_artifact(built, tmp_path, monkeypatch):
    import pyterrier_garen._group_builder as builder
    before = (tmp_path / 'g' / 'pt_meta.json').read_text()

    def boom(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C in the middle of the rebuild
    monkeypatch.setattr(builder, 'write_docnos', boom)
    with pytest.raises(KeyboardInterrupt):
        _build(tmp_path / 'g', seed=1, overwrite=True)
    assert (tmp_path / 'g' / 'pt_meta.json').read_text() == before
    assert GroupCorpusGraph(tmp_path / 'g').validate()['ok']
    assert sorted(p.name for p in tmp_path.iterdir()) == ['g']  # no temporary left behind


def test_stale_temporaries_of_a_killed_build_are_removed(tmp_path):
    (tmp_path / '.g.abcd1234.tmp').mkdir()  # what a kill -9 leaves
    (tmp_path / '.g.abcd1234.tmp' / 'edges.u32.np').write_bytes(b'x' * 10)
    (tmp_path / '.other.x.tmp').mkdir()  # another artifact's: not ours to touch
    _build(tmp_path / 'g')
    assert sorted(p.name for p in tmp_path.iterdir()) == ['.other.x.tmp', 'g']


def test_output_path_that_is_a_link_is_refused(tmp_path):
    (tmp_path / 'elsewhere').mkdir()
    os.symlink(tmp_path / 'elsewhere', tmp_path / 'g')
    with pytest.raises(ArtifactKindError, match='is a symbolic link; artifacts are never written through links'):
        _build(tmp_path / 'g')
    assert list((tmp_path / 'elsewhere').iterdir()) == []


def test_summaries_never_write_through_planted_links(built, tmp_path):
    victim = tmp_path / 'victim.txt'
    victim.write_text('precious')
    summarizer = ExtractiveSummarizer()
    built.summary_store().begin(summarizer.config())  # an unfinished run to resume ...
    os.symlink(victim, built.path / PARTIAL)  # ... whose partial file was replaced by a link
    with pytest.raises(ArtifactKindError, match='is a symbolic link'):
        built.summarize(summarizer, _corpus())
    assert victim.read_text() == 'precious'
    os.unlink(built.path / PARTIAL)
    os.symlink(victim, built.path / 'summaries.jsonl')  # the final file is replaced, never followed
    built.summarize(ExtractiveSummarizer(), _corpus())
    assert victim.read_text() == 'precious'
    assert not (built.path / 'summaries.jsonl').is_symlink()


def test_package_refuses_files_outside_the_artifact(built, tmp_path):
    secret = tmp_path / 'secret.txt'
    secret.write_text('x')
    os.symlink(secret, built.path / 'extra.txt')
    with pytest.raises(ArtifactError, match='outside the artifact'):
        list(built._package_files())


def test_partial_summaries_with_garbage_lines_resume(built):
    summarizer = ExtractiveSummarizer()
    store = built.summary_store()
    store.begin(summarizer.config())
    store.add([{'group': g, 'concept': f'c{g}', 'summary': 's'} for g in range(4)])
    with (built.path / PARTIAL).open('a') as fout:
        fout.write('{"group": 4, "conc\n')  # a garbage line in the middle
        fout.write('not json\n')
        fout.write(json.dumps({'group': 99, 'concept': 'x'}) + '\n')  # a group that does not exist
    store.add([{'group': 5, 'concept': 'c5', 'summary': 's'}])
    with pytest.warns(UserWarning, match=r'summaries.partial.jsonl: 3 unreadable lines \(line 5, 6, 7\) skipped; 5 '
                                         r'valid records kept'):
        built.summarize(summarizer, _corpus())
    records = [built.summary_record(g) for g in range(built.num_groups)]
    assert [r['concept'] for r in records[:4]] == ['c0', 'c1', 'c2', 'c3']  # kept, not redone
    assert records[5]['concept'] == 'c5'
    assert records[4]['concept'] != 'c4'  # redone by the summariser
    assert not (built.path / PARTIAL).exists()
    assert not (built.path / PARTIAL_META).exists()


def test_unreadable_partial_config_names_the_fix(built):
    (built.path / PARTIAL_META).write_text('{oops')
    with pytest.raises(ValueError, match='is not valid JSON; pass overwrite=True'):
        built.summarize(ExtractiveSummarizer(), _corpus())


@pytest.mark.parametrize(('damage', 'words'), [
    (lambda p: (p / 'pt_meta.json').write_text('{not json'), 'pt_meta.json is not valid JSON'),
    (lambda p: (p / 'pt_meta.json').write_text('[1, 2]'), 'is not a JSON object'),
    (lambda p: _edit_meta(p, format_version=99), 'format_version 99, but this pyterrier-garen reads version 1'),
    (lambda p: _edit_meta(p, num_groups='many'), 'lacks a valid doc_count, k or num_groups'),
    (lambda p: _truncate(p / 'docnos.npids'), r'docnos.npids has \d+ bytes, expected'),
    (lambda p: _truncate(p / 'edges.u32.np'), r'edges.u32.np has \d+ bytes, expected 960'),
    (lambda p: (p / 'group_of.u32.np').unlink(), 'group_of.u32.np is missing'),
    (lambda p: ((p / 'group_of.u32.np').unlink(), (p / 'group_of.u32.np').mkdir()),
     r'group_of.u32.np is not a file; the artifact is incomplete'),  # was "is missing" while a folder is there
])
def test_damage_is_caught_on_open(built, damage, words):
    damage(built.path)
    with pytest.raises(ArtifactError, match=words):
        GroupCorpusGraph(built.path)


def _edit_meta(path, **changes):
    meta = json.loads((path / 'pt_meta.json').read_text())
    meta.update(changes)
    (path / 'pt_meta.json').write_text(json.dumps(meta))


def _truncate(path):
    data = path.read_bytes()
    path.write_bytes(data[:len(data) // 2])


def test_validate_finds_disagreeing_partition_arrays(built):
    group_of = np.fromfile(built.path / 'group_of.u32.np', dtype=np.uint32)
    group_of[0] = 3  # doc 0 is listed among group 0's members
    group_of.tofile(built.path / 'group_of.u32.np')
    groups = GroupCorpusGraph(built.path)  # sizes are right: opening is cheap and passes
    with pytest.raises(ArtifactError, match=r'1 members are listed in a group that group_of.u32.np disagrees with '
                                            r'\(e.g. document 0 is listed in group 0, but group_of says 3\)'):
        groups.validate()


def test_validate_finds_docnos_replaced_by_others_of_the_same_count(built):
    os.unlink(built.path / 'docnos.npids')
    write_docnos([f'x{i:03d}' for i in range(N)], built.path / 'docnos.npids')
    with pytest.raises(ArtifactError, match='docnos.npids or edges.u32.np differ from what was built'):
        GroupCorpusGraph(built.path).validate()


def test_validate_passes_and_counts_summaries(built):
    built.summarize(ExtractiveSummarizer(), _corpus())
    assert GroupCorpusGraph(built.path).validate() == {'docs': N, 'groups': 10, 'summaries': 10, 'ok': True}


def test_a_reuse_does_not_read_the_summaries(built, tmp_path):
    # the summaries have their own reader (and summarize(overwrite=True) its fix): a damaged file of them does not
    # stop the groups from being reused
    built.summarize(ExtractiveSummarizer(), _corpus())
    (built.path / 'summaries.jsonl').write_text('{oops\n')
    with pytest.raises(ArtifactError, match='summaries.jsonl line 1 is not a valid summary record'):
        GroupCorpusGraph(built.path).validate()
    assert _build(tmp_path / 'g').path == built.path
    assert (built.path / 'summaries.jsonl').read_text() == '{oops\n'  # left as it is


def test_folder_without_meta_given_to_load(tmp_path):
    (tmp_path / 'x').mkdir()
    with pytest.raises(FileNotFoundError, match=r"is not a built artifact \(no pt_meta.json\)"):
        load_corpus_graph(tmp_path / 'x')
    with pytest.raises(FileNotFoundError, match='is not a built GroupCorpusGraph'):
        GroupCorpusGraph(tmp_path / 'x')


def test_show_validate_from_the_command_line(built, capsys):
    from pyterrier_garen.__main__ import main
    main(['show', '--groups', str(built.path), '--validate', '--limit', '0'])
    assert json.loads(capsys.readouterr().out.splitlines()[0]) == {'validate': {'docs': N, 'groups': 10,
                                                                                  'summaries': 0, 'ok': True}}
    shutil.copy(built.path / 'group_of.u32.np', built.path / 'x')
    np.zeros(N, dtype=np.uint32).tofile(built.path / 'group_of.u32.np')
    with pytest.raises(SystemExit) as info:
        main(['show', '--groups', str(built.path), '--validate'])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith('error: ')
    assert 'failed validation' in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(('kwargs', 'words'), [
    ({'resolution': float('nan')}, 'resolution must be a finite number > 0, got nan'),
    ({'resolution': 0}, 'resolution must be a finite number > 0, got 0'),
    ({'randomness': -1.0}, 'randomness must be a finite number > 0, got -1.0'),
    ({'max_group_size': 1}, 'max_group_size must be an integer >= 2, got 1'),
    ({'seed': 1.5}, 'seed must be an integer, got 1.5'),
])
def test_bad_partition_parameters_build_nothing(tmp_path, kwargs, words):
    docnos, edges, weights, _ = _arrays()
    with pytest.raises(ValueError, match=words):
        GroupCorpusGraph.from_arrays(tmp_path / 'g', docnos, edges, weights, **kwargs)
    assert list(tmp_path.iterdir()) == []


def test_bad_summarize_batch_size(built):
    with pytest.raises(ValueError, match='batch_size must be a positive integer, got 0'):
        built.summarize(ExtractiveSummarizer(), _corpus(), batch_size=0)


def test_deleted_summaries_are_named_and_summarize_overwrite_repairs_them(built, tmp_path, capsys):
    # pt_meta.json records summaries whose file is gone: opening failed first, so summarize --overwrite (the fix the
    # damaged-file errors name) could not repair it; only build-groups --overwrite could
    from pyterrier_garen.__main__ import main
    corpus = tmp_path / 'corpus'
    corpus.mkdir()
    (corpus / 'docs.jsonl').write_text(''.join(json.dumps(d) + '\n' for d in _corpus()))
    (corpus / 'queries.tsv').write_text('q1\tword1\n')
    (corpus / 'qrels.txt').write_text('q1 0 d001 1\n')
    built.summarize(ExtractiveSummarizer(), _corpus())
    kept = (built.path / 'summaries.jsonl').read_bytes()
    os.unlink(built.path / 'summaries.jsonl')
    lost = (f'{built.path}/summaries.jsonl is missing, but pt_meta.json records 10 summaries; summarise again '
            '(summarize, or groups.summarize(summarizer, dataset)), or rebuild or re-download the artifact')
    with pytest.raises(ArtifactError) as info:
        GroupCorpusGraph(built.path).summary(0)  # never read as groups without summaries
    assert str(info.value) == lost
    with pytest.raises(ArtifactError, match='failed validation: ' + lost.replace('(', r'\(').replace(')', r'\)')):
        GroupCorpusGraph(built.path).validate()
    main(['summarize', '--groups', str(built.path), '--dataset', str(corpus), '--overwrite'])
    assert (built.path / 'summaries.jsonl').read_bytes() == kept
    assert GroupCorpusGraph(built.path).validate()['summaries'] == 10
    capsys.readouterr()
