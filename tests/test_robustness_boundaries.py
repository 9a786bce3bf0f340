"""Bad data at the boundary, leftovers, read-only reuse and the command line's error line (issue 18, classes 5, 7
and 8): repaired or refused before it reaches an engine, counted and said; nothing left behind that a rerun keeps
or a package ships; a finished workdir is usable without writing to it."""
import errno
import io
import json
import os
import threading
import warnings

import numpy as np
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen import GAREN, ExtractiveSummarizer, GroupCorpusGraph, LocalDataset, prepare
from pyterrier_garen.synthetic import make_synthetic

from _toy_graph import DictScorer, ToyGroupGraph, first_stage

DOCS = [f'd{i}' for i in range(12)]
GRAPH = ToyGroupGraph({d: [DOCS[(i + 1) % 12], DOCS[(i + 2) % 12]] for i, d in enumerate(DOCS)},
                      {d: i // 3 for i, d in enumerate(DOCS)})
SCORES = {d: (7 * i) % 12 for i, d in enumerate(DOCS)}  # not the first-stage order


@pytest.fixture(scope='module')
def tiny(tmp_path_factory):
    return make_synthetic(tmp_path_factory.mktemp('tiny') / 'c', docs_per_topic=6, queries_per_topic=1)


# -- class 5: bad data ------------------------------------------------------------------------------------------
def _garen(reranker):
    return GAREN(reranker, GRAPH, DictScorer({}), window=4, keep=2, budget=8)


def test_one_qid_carrying_two_queries_is_refused_naming_it():
    frame = pd.concat([first_stage(DOCS[:6], 'q1', 'first text'), first_stage(DOCS[6:], 'q1', 'other text')])
    with pytest.raises(ValueError, match=r"qid 'q1' carries 2 different queries \(e.g. 'first text' and 'other "
                                         r"text'; 1 qids like this\)"):
        _garen(DictScorer(SCORES))(frame)


class Meddler(pt.Transformer):
    """Scores like DictScorer, then edits the frame it was given in place (reverses docnos, renames qids)."""

    def transform(self, inp):
        out = inp.assign(score=[float(SCORES[d]) for d in inp['docno']])
        inp['docno'] = inp['docno'].to_numpy()[::-1]
        inp['qid'] = 'someone else'
        return out


def test_a_reranker_editing_its_input_in_place_changes_nothing():
    expected = _garen(DictScorer(SCORES))(first_stage(DOCS))
    got = _garen(Meddler())(first_stage(DOCS))
    assert got['docno'].tolist() == expected['docno'].tolist()


class Corpus:
    """A corpus iterator that is not a LocalDataset (no validation of its own)."""

    def __init__(self, docs):
        self.docs = docs

    def __repr__(self):
        return 'Corpus()'

    def get_corpus_iter(self, verbose=False):
        return iter([dict(d) for d in self.docs])


def _with_duplicate(tiny):
    docs = list(tiny.get_corpus_iter(verbose=False))
    return Corpus(docs[:10] + [{**docs[11], 'docno': docs[3]['docno']}] + docs[10:]), docs[3]['docno']


def test_duplicate_docnos_refused_before_prepare_creates_anything(tiny, tmp_path):
    corpus, docno = _with_duplicate(tiny)
    with pytest.raises(ValueError, match=rf"Corpus\(\) yields docno '{docno}' twice \(again as document 11\)"):
        prepare(corpus, tmp_path / 'w', graph='bm25', vectors=False)
    assert not (tmp_path / 'w').exists()


def test_duplicate_docnos_refused_by_the_indexers(tiny, tmp_path):
    from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index
    corpus, docno = _with_duplicate(tiny)
    with pytest.raises(ValueError, match=rf"yields docno '{docno}' twice"):
        bm25_index(corpus, tmp_path / 'x.pisa')
    with pytest.raises(ValueError, match=rf"yields docno '{docno}' twice"):
        bm25_corpus_graph(corpus, tmp_path / 'x.graph', index=bm25_index(tiny, tmp_path / 'ok.pisa'))
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith('.lock')) == ['ok.pisa']


def test_control_characters_in_queries_never_reach_pisa(tiny, tmp_path):
    from pyterrier_garen._frames import clean_queries
    from pyterrier_garen._graphs import bm25_index
    folder = tmp_path / 'c'
    folder.mkdir()
    for name in ('docs.jsonl', 'qrels.txt'):
        (folder / name).write_bytes((tiny.path / name).read_bytes())
    topics = tiny.get_topics()
    lines = [f'{q}\t{t}' for q, t in zip(topics.qid, topics['query'])]
    lines[0] = lines[0].replace(' ', ' \x00', 1)
    lines[1] = lines[1] + '\x07'
    (folder / 'queries.tsv').write_text('\n'.join(lines) + '\n')
    with pytest.warns(UserWarning, match=r'queries.tsv: 2 queries held control characters \(NUL, ...\), replaced '
                                         r'by spaces \(line 1, 2\)'):
        cleaned = LocalDataset(folder).get_topics()
    assert cleaned['query'].iloc[0] == ' '.join(topics['query'].iloc[0].split())
    bm25 = bm25_index(tiny, tmp_path / 'x.pisa').bm25(num_results=5)
    assert len(bm25(cleaned.head(2))) == 10
    other = pd.DataFrame({'qid': ['a', 'b'], 'query': ['one\x00two', 'plain']})  # e.g. an ir_datasets topics frame
    with pytest.warns(UserWarning, match=r"1 queries held control characters .* \(qids \['a'\]\)"):
        assert clean_queries(other)['query'].tolist() == ['one two', 'plain']
    with pytest.raises(ValueError, match=r"the queries of qids \['z'\] hold nothing but control characters"):
        clean_queries(pd.DataFrame({'qid': ['z'], 'query': ['\x00\x01']}))


# -- class 7: leftovers, read-only reuse, concurrent prepare -------------------------------------------------------
N = 30


def _groups(path):
    docnos = [f'd{i:02d}' for i in range(N)]
    edges = np.stack([(np.arange(1, 4) + i) % N for i in range(N)])
    return GroupCorpusGraph.from_arrays(path, docnos, edges, np.full(edges.shape, 0.5, np.float32),
                                        labels=np.arange(N) // 5, max_group_size=5)


class Killed(BaseException):
    pass


def test_kill_while_summaries_are_written_leaves_nothing_shipped_or_kept(tmp_path, monkeypatch):
    corpus = [{'docno': f'd{i:02d}', 'text': f'word{i % 3} topic{i // 5}'} for i in range(N)]
    groups = _groups(tmp_path / 'g')
    real_replace, real_unlink = os.replace, os.unlink
    dead = []

    def replace(source, target, **kwargs):
        if str(target).endswith('summaries.jsonl'):
            dead.append(True)
            raise Killed  # kill -9 between writing the temporary and renaming it: no handler runs
        return real_replace(source, target, **kwargs)
    with monkeypatch.context() as patch:
        patch.setattr(os, 'replace', replace)
        patch.setattr(os, 'unlink', lambda p, **kw: None if dead else real_unlink(p, **kw))
        with pytest.raises(Killed):
            groups.summarize(ExtractiveSummarizer(), corpus)
    leftovers = [p.name for p in groups.path.iterdir() if p.name.startswith('.summaries.jsonl.')]
    assert leftovers  # what the kill leaves inside the artifact ...
    package = GroupCorpusGraph(groups.path).build_package(str(tmp_path / 'p.tar.lz4'), verbose=False)
    shipped = [entry['path'] for entry in json.loads(open(f'{package}.json').read())['contents']]
    assert 'pt_meta.json' in shipped
    assert not [n for n in shipped if n.startswith('.')]  # ... is never shipped
    GroupCorpusGraph(groups.path).summarize(ExtractiveSummarizer(), corpus)
    assert sorted(p.name for p in groups.path.iterdir() if p.name.startswith('.') or 'summaries' in p.name) == \
        ['summaries.jsonl']  # ... and the rerun removes it


def _read_only(monkeypatch, folder):
    """Every write, rename, removal or creation under ``folder`` fails with EROFS (a read-only mount)."""
    folder = os.path.realpath(folder)

    def under(path, dir_fd=None):
        if dir_fd is not None:
            path = os.path.join(os.readlink(f'/proc/self/fd/{dir_fd}'), path)
        elif isinstance(path, int):
            path = os.readlink(f'/proc/self/fd/{path}')
        return os.path.realpath(path).startswith(folder)

    def refuse(path):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))

    def guard(real, *, check_flags=False, check_mode=False, paths=1):
        def call(*args, **kwargs):
            targets = args[:paths]
            if check_flags and not args[1] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC):
                return real(*args, **kwargs)
            if check_mode and not set(args[1] if len(args) > 1 else kwargs.get('mode', 'r')) & set('wax+'):
                return real(*args, **kwargs)
            for target in targets:
                if under(target, kwargs.get('dir_fd')):
                    refuse(target)
            return real(*args, **kwargs)
        return call
    monkeypatch.setattr(os, 'open', guard(os.open, check_flags=True))
    monkeypatch.setattr(io, 'open', guard(io.open, check_mode=True))
    monkeypatch.setattr('builtins.open', io.open)
    for name in ('mkdir', 'unlink', 'remove', 'rmdir', 'chmod', 'utime'):
        monkeypatch.setattr(os, name, guard(getattr(os, name)))
    for name in ('replace', 'rename', 'symlink'):
        monkeypatch.setattr(os, name, guard(getattr(os, name), paths=2))


def test_finished_workdir_on_a_read_only_mount_is_reused(tiny, tmp_path, monkeypatch):
    work = tmp_path / 'w'
    first = prepare(tiny, work, graph='bm25', vectors=False)
    before = sorted(str(p.relative_to(work)) for p in work.rglob('*'))
    with monkeypatch.context() as patch:
        _read_only(patch, work)
        with warnings.catch_warnings():
            warnings.simplefilter('error')  # nothing to say either
            again = prepare(tiny, work, graph='bm25', vectors=False)
        assert again.groups.path == first.groups.path
        assert again.groups.validate()['summaries'] == first.groups.num_groups
    assert sorted(str(p.relative_to(work)) for p in work.rglob('*')) == before


def test_the_default_k_on_a_collection_of_16_documents_or_fewer_warns_of_nothing(tmp_path):
    """compare (and every prepare with the default k) warned that k=16 was more than a 12-document collection's 11
    other documents, so that --strict could not pass there whatever the user chose: only a k asked for is told."""
    folder = tmp_path / 'twelve'
    folder.mkdir()
    words = ['heat', 'flow', 'wing', 'shock', 'layer', 'jet']
    (folder / 'docs.jsonl').write_text(''.join(json.dumps({'docno': f'd{i}', 'text': f'{words[i % 6]} {words[i // 2]} '
                                                                                     f'text {i}'}) + '\n'
                                               for i in range(12)))
    (folder / 'queries.tsv').write_text('q1\theat flow\n')
    (folder / 'qrels.txt').write_text('q1 0 d0 1\n')
    dataset = LocalDataset(folder)
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        prepared = prepare(dataset, tmp_path / 'w')
    assert prepared.graph.edges_data.shape == (12, 11)  # every other document
    assert [set(map(int, prepared.graph.neighbours(i))) for i in range(12)] == [set(range(12)) - {i} for i in range(12)]
    assert prepared.groups.path.name.startswith('dense.k16.')  # the names of k=16, as before
    with pytest.warns(UserWarning, match=r'^k=16 neighbours asked for, but each of the 12 documents has only 11'):
        prepare(dataset, tmp_path / 'w', k=16)
    with pytest.raises(ValueError, match='k'):
        prepare(dataset, tmp_path / 'w', k=0)
    # the BM25 graph likewise: it takes every other document without a word, and is named by k=16 (session 40,
    # when it began to warn about a k above the collection, as the dense graph does)
    with warnings.catch_warnings():
        warnings.simplefilter('error', UserWarning)
        bm25 = prepare(dataset, tmp_path / 'w', graph='bm25')
    assert bm25.graph.edges_data.shape == (12, 11)
    assert bm25.groups.path.name.startswith('bm25.k16.')
    assert (tmp_path / 'w' / 'bm25.k16.graph').is_dir()


def test_read_only_workdir_that_needs_building_names_the_fix(tiny, tmp_path, monkeypatch):
    work = tmp_path / 'w'
    prepare(tiny, work, graph='bm25', vectors=False)
    with monkeypatch.context() as patch:
        _read_only(patch, work)
        with pytest.raises(OSError, match=r'read-only file system.*choose a writable folder'):
            prepare(tiny, work, graph='bm25', vectors=False, k=3)  # another graph: something to build


def test_two_prepares_started_at_once_on_a_fresh_workdir(tiny, tmp_path, monkeypatch):
    """The second starts while the first is writing prepare.json (its temporary is in the workdir): neither may
    record the workdir as not created by prepare."""
    import tempfile

    from pyterrier_garen._prepare import _check_workdir, corpus_fingerprint
    work = tmp_path / 'w'
    fingerprint = corpus_fingerprint(tiny)
    real = tempfile.mkstemp
    first_inside, second_arrived = threading.Event(), threading.Event()
    order = []

    def mkstemp(*args, **kwargs):
        order.append(threading.current_thread().name)
        if len(order) == 1:
            result = real(*args, **kwargs)
            first_inside.set()
            second_arrived.wait(timeout=3)
            return result
        second_arrived.set()
        return real(*args, **kwargs)
    monkeypatch.setattr(tempfile, 'mkstemp', mkstemp)
    results = {}

    def run(name):
        results[name] = _check_workdir(work, fingerprint, 'tiny')
    one = threading.Thread(target=run, args=('one',), name='one')
    one.start()
    assert first_inside.wait(timeout=30)
    two = threading.Thread(target=run, args=('two',), name='two')
    two.start()
    one.join(60)
    two.join(60)
    assert results == {'one': True, 'two': True}
    assert json.loads((work / 'prepare.json').read_text())['created'] is True
    assert sorted(p.name for p in work.iterdir()) == ['prepare.json']


# -- class 8: the command line's error line ------------------------------------------------------------------------
def test_error_line_starts_a_line_of_its_own_after_a_progress_bar(capsys):
    import argparse

    from pyterrier_garen._errors import run_command

    def fail(args):
        bar = pt.tqdm(total=10, desc='working', unit='step')
        bar.update(3)
        raise ValueError('the input is bad; fix it')
    with pytest.raises(SystemExit) as info:
        run_command(argparse.ArgumentParser(), [], fail)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert 'error: the input is bad; fix it\n' in err
    line = [text for text in err.replace('\r', '\n').split('\n') if 'error:' in text]
    assert line == ['error: the input is bad; fix it']
    assert err[:err.index('error:')].endswith('\n')  # the bar's line was ended first


# -- the workdir is the documents' ------------------------------------------------------------------------------
def _cache_listing(cache):
    return sorted(p.name for p in cache.iterdir())


def test_mending_queries_or_judgements_keeps_the_workdir_and_its_artifacts(tmp_path, monkeypatch):
    """The error messages of LocalDataset tell a user to mend a query line or a judgement; doing so must not cost a
    rebuild (with LLM summaries, hours) nor refuse the workdir given before."""
    from pyterrier_garen._prepare import _dataset_name
    cache = tmp_path / 'cache'
    monkeypatch.setenv('GAREN_CACHE', str(cache))
    folder = tmp_path / 'c'
    dataset = make_synthetic(folder, docs_per_topic=6, queries_per_topic=1)
    first = prepare(dataset, graph='bm25', vectors=False, k=3)
    assert first.workdir == cache / f'{_dataset_name(dataset)}-{dataset.corpus_fingerprint()[:12]}'
    assert json.loads((first.workdir / 'prepare.json').read_text()) == {
        'collection': _dataset_name(dataset), 'corpus_sha256': dataset.corpus_fingerprint(), 'created': True}
    def stamps():
        return {str(p.relative_to(first.workdir)): p.stat().st_mtime_ns for p in first.workdir.rglob('*')}
    built = stamps()
    before = dataset.fingerprint()
    with open(folder / 'queries.tsv', 'a') as out:
        out.write('mended\tanother query\n')
    with open(folder / 'qrels.txt', 'a') as out:
        out.write('mended 0 ' + next(dataset.get_corpus_iter(verbose=False))['docno'] + ' 1\n')
    (folder / 'collection.json').write_text('{"relevance": "binary"}')
    mended = LocalDataset(folder)
    assert mended.fingerprint() != before
    assert prepare(mended, graph='bm25', vectors=False, k=3).workdir == first.workdir
    assert prepare(mended, first.workdir, graph='bm25', vectors=False, k=3).workdir == first.workdir
    assert stamps() == built  # nothing rebuilt or rewritten
    assert _cache_listing(cache) == [first.workdir.name]
    # other documents are another collection: refused in that workdir, their own folder by default
    with open(folder / 'docs.jsonl', 'a') as out:
        out.write('{"docno": "extra", "text": "one more document"}\n')
    changed = LocalDataset(folder)
    with pytest.raises(FileExistsError, match='holds artifacts prepared for other documents'):
        prepare(changed, first.workdir, graph='bm25', vectors=False, k=3)
    assert prepare(changed, graph='bm25', vectors=False, k=3).workdir.name.endswith(
        changed.corpus_fingerprint()[:12])
    assert len(_cache_listing(cache)) == 2


def test_a_default_workdir_an_earlier_version_named_is_still_found(tmp_path, monkeypatch):
    """Earlier versions named the default workdir by all of a collection's files and recorded that key: while those
    files are unchanged, the folder is found and reused as it is."""
    from pyterrier_garen._prepare import _dataset_name
    cache = tmp_path / 'cache'
    monkeypatch.setenv('GAREN_CACHE', str(cache))
    folder = tmp_path / 'c'
    dataset = make_synthetic(folder, docs_per_topic=6, queries_per_topic=1)
    name = _dataset_name(dataset)
    earlier = cache / f'{name}-{dataset.fingerprint()[:12]}'
    prepare(dataset, earlier, graph='bm25', vectors=False, k=3)
    record = json.dumps({'collection': name, 'collection_sha256': dataset.fingerprint(), 'created': True})
    (earlier / 'prepare.json').write_text(record)  # as an earlier version wrote it
    assert prepare(dataset, graph='bm25', vectors=False, k=3).workdir == earlier
    assert (earlier / 'prepare.json').read_text() == record
    assert _cache_listing(cache) == [earlier.name]
    # once a query is mended the earlier key no longer matches: the folder of today's key is made
    with open(folder / 'queries.tsv', 'a') as out:
        out.write('mended\tanother query\n')
    again = prepare(LocalDataset(folder), graph='bm25', vectors=False, k=3)
    assert again.workdir == cache / f'{name}-{dataset.corpus_fingerprint()[:12]}'
    assert _cache_listing(cache) == sorted([earlier.name, again.workdir.name])
    assert (earlier / 'prepare.json').read_text() == record  # the earlier folder is left as it was
