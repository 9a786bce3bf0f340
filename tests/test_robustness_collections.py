"""Bad collection files give a ValueError naming the file, the line and the problem; labels are never silently
binarised (issue 9, "Collections" and "Evaluation")."""
import json

import pytest

from pyterrier_garen import LocalDataset
from pyterrier_garen._compare import evaluation_qrels

DOC = '{"docno": "d1", "text": "a"}\n'


def _write(folder, docs=DOC, queries=b'q1\thello world\n', qrels=b'q1 0 d1 1\n', declaration=None):
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (('docs.jsonl', docs), ('queries.tsv', queries), ('qrels.txt', qrels)):
        (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode())
    if declaration is not None:
        (folder / 'collection.json').write_text(json.dumps(declaration))
    return LocalDataset(folder)


def _docs(ds):
    return list(ds.get_corpus_iter(verbose=False))


@pytest.mark.parametrize('name', ['docs.jsonl', 'queries.tsv', 'qrels.txt'])
def test_non_utf8_names_file_line_and_byte(tmp_path, name):
    files = {'docs.jsonl': DOC.encode() + b'{"docno": "d2", "text": "caf\xe9"}\n',
             'queries.tsv': b'q1\thello\nq2\tcaf\xe9\n', 'qrels.txt': b'q1 0 d1 1\nq1 0 d\xe9 1\n'}
    ds = _write(tmp_path, **{name.split('.')[0] if name != 'docs.jsonl' else 'docs': files[name]})
    read = {'docs.jsonl': lambda: _docs(ds), 'queries.tsv': ds.get_topics, 'qrels.txt': ds.get_qrels}[name]
    with pytest.raises(ValueError, match=rf'{name} line 2: byte 0xe9 at column \d+ is not UTF-8; re-save'):
        read()


def test_bom_is_dropped(tmp_path):
    ds = _write(tmp_path, docs=b'\xef\xbb\xbf' + DOC.encode(), queries=b'\xef\xbb\xbf1\thello\n',
                qrels=b'\xef\xbb\xbf1 0 d1 1\n')
    assert list(ds.get_topics().qid) == ['1']
    assert ds.docnos() == ['d1']
    assert list(ds.get_qrels().qid) == ['1']


@pytest.mark.parametrize(('queries', 'words'), [
    (b'q1\thello\textra\n', 'got 3 columns'),
    (b'q1 hello\n', 'got no tab'),
    (b'\thello\n', 'empty qid'),
    (b'q1\t  \n', "query 'q1' has no text"),
    (b'q 1\thello\n', "qid 'q 1' contains whitespace"),
    (b'q1\ta\nq1\tb\n', "line 2: duplicate qid 'q1'"),
    (b'\n\n', 'holds no queries'),
    (b'qid\tquery\nq1\thello\n', r"line 1: 'qid\\tquery' is a header line, which queries.tsv does not have; remove"),
    (b'\nquery-id\ttext\nq1\thello\n', 'line 2: .* is a header line'),
])
def test_bad_queries(tmp_path, queries, words):
    ds = _write(tmp_path, queries=queries)
    with pytest.raises(ValueError, match=words):
        ds.get_topics()


def test_a_query_named_like_a_header_below_the_first_line_is_a_query(tmp_path):
    assert _write(tmp_path, queries=b'q1\thello\nid\ttext\n').get_topics().qid.tolist() == ['q1', 'id']


@pytest.mark.parametrize(('line', 'words'), [
    ({'docno': 'd1', 'text': ['a', 'b']}, '"text" must be a string, got a JSON list'),
    ({'docno': 'd1', 'text': {'x': 1}}, '"text" must be a string, got a JSON object'),
    ({'docno': 'd1', 'text': 'a', 'title': 3}, '"title" must be a string, got a number'),
    ({'docno': True, 'text': 'a'}, 'needs a "docno" string .or integer., got a boolean'),
    ({'docno': 1.5, 'text': 'a'}, 'got a number'),
    ({'docno': None, 'text': 'a'}, 'got a null'),
    ({'text': 'a'}, 'got none'),
    ({'docno': '', 'text': 'a'}, 'empty docno'),
    ({'docno': 'd 1', 'text': 'a'}, "docno 'd 1' contains whitespace"),
    (['d1', 'a'], 'expected a JSON object'),
])
def test_bad_document_fields(tmp_path, line, words):
    ds = _write(tmp_path, docs=DOC + json.dumps(line) + '\n')
    with pytest.raises(ValueError, match=rf'docs.jsonl line 2: .*{words}'):
        _docs(ds)


def test_integer_docno_and_null_text_are_accepted(tmp_path):
    ds = _write(tmp_path, docs='{"docno": 7, "text": null, "title": "t"}\n', qrels=b'q1 0 7 1\n')
    assert _docs(ds) == [{'docno': '7', 'text': '', 'title': 't'}]


@pytest.mark.parametrize('docs', ['', '\n  \n'])
def test_empty_docs(tmp_path, docs):
    ds = _write(tmp_path, docs=docs)
    with pytest.raises(ValueError, match='docs.jsonl holds no documents'):
        _docs(ds)


@pytest.mark.parametrize(('qrels', 'words'), [
    (b'q1 0 d1 x\n', "relevance 'x' is not an integer"),
    (b'q1 d1 1\n', 'expected "qid 0 docno relevance"'),
    (b'q1 0 d1 1\nq1 0 d1 2\n', "line 2: qid 'q1' judges docno 'd1' again .first on line 1."),
])
def test_bad_qrels(tmp_path, qrels, words):
    ds = _write(tmp_path, qrels=qrels)
    with pytest.raises(ValueError, match=words):
        ds.get_qrels()


def test_graded_labels_kept_by_default(tmp_path):
    ds = _write(tmp_path, docs=DOC + '{"docno": "d2", "text": "b"}\n', qrels=b'q1 0 d1 2\nq1 0 d2 1\n')
    qrels = evaluation_qrels(ds)
    assert sorted(qrels.label) == [1, 2]
    assert qrels.attrs['labels'].startswith('graded relevance, labels as stored [1, 2]')
    binary = evaluation_qrels(ds, binary=True)
    assert sorted(binary.label) == [1, 1]
    assert binary.attrs['labels'] == 'binary relevance (label>0 -> 1): asked for'


def test_declared_binary(tmp_path):
    ds = _write(tmp_path, qrels=b'q1 0 d1 3\n', declaration={'relevance': 'binary'})
    qrels = evaluation_qrels(ds)
    assert list(qrels.label) == [1]
    assert 'declared in' in qrels.attrs['labels']
    assert 'collection.json' in qrels.attrs['labels']
    assert list(evaluation_qrels(ds, binary=False).label) == [3]


def test_bad_declaration(tmp_path):
    ds = _write(tmp_path, declaration={'relevance': 'yes'})
    with pytest.raises(ValueError, match='"relevance" must be "binary" or "graded"'):
        evaluation_qrels(ds)


def test_cranfield_is_recognised_by_content_not_name(cranfield, tmp_path):
    qrels = evaluation_qrels(cranfield)
    assert set(qrels.label) == {0, 1}
    assert 'Cranfield' in qrels.attrs['labels']
    fake = _write(tmp_path / 'cranfield', qrels=b'q1 0 d1 2\n')  # another collection in a folder of that name
    assert list(evaluation_qrels(fake).label) == [2]


def test_fingerprint_follows_content(tmp_path):
    a = _write(tmp_path / 'a')
    b = _write(tmp_path / 'b')
    assert a.fingerprint() == b.fingerprint()
    (tmp_path / 'b' / 'docs.jsonl').write_text(DOC + '{"docno": "d2", "text": "b"}\n')
    assert a.fingerprint() != LocalDataset(tmp_path / 'b').fingerprint()
