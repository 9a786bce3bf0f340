"""Oracles for reading a user's collection (pyterrier_garen.datasets): the exact error for each malformed line of
docs.jsonl, queries.tsv and qrels.txt (file, line number counting blank lines, problem, fix), byte-order marks and
CRLF, documents as read (stripped docnos, integer docnos, missing text and titles), topic order and control
characters, qrels labels as stored (graded, negative, -100) and binarised only on request, the relevance declaration,
the fingerprint's byte layout, the text loader, ``load_dataset`` and ``data_dir``, the offline probe of an
``irds:`` id, and BRIGHT's -100 exclusion. Every expected value is worked out by hand (the thirtieth mutation run,
docs/testing.md)."""
import errno
import hashlib
import math
import json
import os
import re
import warnings
from pathlib import Path

import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_garen import datasets
from pyterrier_garen._atomic import ResourceError
from pyterrier_garen._errors import DatasetUnavailableError
from pyterrier_garen.datasets import LocalDataset, RemoveExcluded, data_dir, load_dataset, remove_excluded

DOC = b'{"docno": "d1", "text": "a"}\n'


def _write(folder: Path, docs=DOC, queries=b'q1\thello\n', qrels=b'q1 0 d1 1\n', declaration=None) -> LocalDataset:
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in (('docs.jsonl', docs), ('queries.tsv', queries), ('qrels.txt', qrels),
                       ('collection.json', declaration)):
        if data is not None:
            (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode('utf8'))
    return LocalDataset(folder)


def _docs(ds):
    return list(ds.get_corpus_iter(verbose=False))


def _raises(call, message):
    """``call()`` raises ValueError whose text is exactly ``message``."""
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == message


def _quiet_qrels(ds, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter('error')  # any warning fails the test
        return ds.get_qrels(**kwargs)


# -- the folder -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize('present', [['corpus.jsonl'], ['queries.jsonl'], ['corpus.jsonl', 'queries.jsonl']])
def test_a_folder_laid_out_as_beirs_is_told_how_to_convert(tmp_path, present):
    for name in present:
        (tmp_path / name).write_text('{"_id": "d1", "text": "a"}\n')
    with pytest.raises(FileNotFoundError) as caught:
        LocalDataset(tmp_path)
    assert str(caught.value) == (f"docs.jsonl is missing from the collection folder '{tmp_path}'; it is laid out as "
                                 "BEIR's (corpus.jsonl, queries.jsonl, qrels/): write its documents as docs.jsonl "
                                 '("_id" renamed "docno"), its queries as queries.tsv ("qid<TAB>query") and its '
                                 'judgements as qrels.txt ("qid 0 docno label"), or load it as irds:beir/<name>')


def test_a_missing_folder_or_file_is_named(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        LocalDataset(str(tmp_path / 'nope'))
    assert str(caught.value) == (f"collection folder '{tmp_path / 'nope'}' does not exist; pass a folder holding "
                                 'docs.jsonl, queries.tsv and qrels.txt (or set $GAREN_DATA)')
    (tmp_path / 'c').mkdir()
    (tmp_path / 'c' / 'queries.tsv').write_text('q1\thello\n')
    with pytest.raises(FileNotFoundError) as caught:
        LocalDataset(tmp_path / 'c')
    assert str(caught.value) == (f"docs.jsonl is missing from the collection folder '{tmp_path / 'c'}'; a "
                                 'collection folder holds docs.jsonl, queries.tsv and qrels.txt')
    (tmp_path / 'c' / 'queries.tsv').unlink()
    (tmp_path / 'c' / 'docs.jsonl').write_bytes(DOC)
    with pytest.raises(FileNotFoundError) as caught:
        LocalDataset(tmp_path / 'c')
    assert str(caught.value) == (f"queries.tsv is missing from the collection folder '{tmp_path / 'c'}'; a "
                                 'collection folder holds docs.jsonl, queries.tsv and qrels.txt')
    (tmp_path / 'c' / 'queries.tsv').mkdir()  # a folder of that name is not the file
    with pytest.raises(FileNotFoundError, match='queries.tsv is missing'):
        LocalDataset(tmp_path / 'c')


def test_name_repr_and_languages(tmp_path):
    ds = _write(tmp_path / 'my-coll', qrels=None)  # qrels.txt is optional until evaluation
    assert ds.name == 'my-coll'
    assert ds.path == tmp_path / 'my-coll'
    assert repr(ds) == f"LocalDataset('{tmp_path / 'my-coll'}')"
    assert ds.get_corpus_lang() == 'en'
    assert ds.get_topics_lang() == 'en'
    with pytest.raises(FileNotFoundError) as caught:
        ds.get_qrels()
    assert str(caught.value) == f"qrels.txt is missing from '{tmp_path / 'my-coll'}'; it is needed for evaluation"


# -- reading lines: UTF-8, BOM, CRLF, blank lines ----------------------------------------------------------------
def test_crlf_bom_and_blank_lines_in_every_file(tmp_path):
    bom = b'\xef\xbb\xbf'
    ds = _write(tmp_path,
                docs=bom + b'{"docno": "d1", "text": "caf\xc3\xa9 \xe6\x97\xa5"}\r\n\r\n   \r\n'
                b'{"docno": "d2", "text": "b"}\r\n',
                queries=bom + b'q1\thello world\r\n\r\n\t\r\nq2\t\xf0\x9f\x98\x80 smile\r\n',
                qrels=bom + b'q1 0 d1 2\r\n\r\nq2\t0\td2\t1\r\n')
    assert _docs(ds) == [{'docno': 'd1', 'text': 'café 日'}, {'docno': 'd2', 'text': 'b'}]
    topics = ds.get_topics()
    assert list(topics.columns) == ['qid', 'query']
    assert topics.values.tolist() == [['q1', 'hello world'], ['q2', '\U0001F600 smile']]
    assert _quiet_qrels(ds).values.tolist() == [['q1', 'd1', 2], ['q2', 'd2', 1]]


def test_a_bom_is_dropped_at_the_start_of_every_line(tmp_path):
    # two files joined with cat: the second part's BOM starts a line in the middle; left there, it would hide in
    # that line's first id ('\ufeffq2' judged by nothing, 'q2' of the qrels matching no query)
    bom = b'\xef\xbb\xbf'
    ds = _write(tmp_path, docs=bom + DOC + bom + b'{"docno": "d2", "text": "b"}\n',
                queries=bom + b'q1\thello\n' + bom + b'q2\tworld\n', qrels=bom + b'q1 0 d1 1\n' + bom + b'q2 0 d2 1\n')
    assert _docs(ds) == [{'docno': 'd1', 'text': 'a'}, {'docno': 'd2', 'text': 'b'}]
    assert ds.get_topics().values.tolist() == [['q1', 'hello'], ['q2', 'world']]
    assert _quiet_qrels(ds).values.tolist() == [['q1', 'd1', 1], ['q2', 'd2', 1]]


@pytest.mark.parametrize(('name', 'data', 'what', 'value', 'code', 'char'), [
    ('queries.tsv', 'q1\thello\nq\u200b2\tworld\n', 'qid', 'q\u200b2', '200B', 'ZERO WIDTH SPACE'),
    ('queries.tsv', 'q1\thello\nq2\ufeff\tworld\n', 'qid', 'q2\ufeff', 'FEFF', 'ZERO WIDTH NO-BREAK SPACE'),
    ('docs.jsonl', '{"docno": "d1", "text": "a"}\n{"docno": "d\u20602", "text": "b"}\n', 'docno', 'd\u20602', '2060',
     'WORD JOINER'),
    ('qrels.txt', 'q1 0 d1 1\nq1 0 d\u200d1x 1\n', 'docno', 'd\u200d1x', '200D', 'ZERO WIDTH JOINER'),
    ('qrels.txt', 'q1 0 d1 1\n\u200eq1 0 d2 1\n', 'qid', '\u200eq1', '200E', 'LEFT-TO-RIGHT MARK'),
])
def test_an_invisible_character_in_an_id_is_refused(tmp_path, name, data, what, value, code, char):
    ds = _write(tmp_path, **{{'docs.jsonl': 'docs', 'queries.tsv': 'queries', 'qrels.txt': 'qrels'}[name]: data})
    read = {'docs.jsonl': lambda: _docs(ds), 'queries.tsv': ds.get_topics, 'qrels.txt': ds.get_qrels}[name]
    _raises(read, f'{tmp_path / name} line 2: {what} {value!r} contains the invisible character U+{code} ({char}); '
                  f'remove it from the {what}')


@pytest.mark.parametrize(('name', 'data', 'what', 'value', 'kind'), [
    # JSON escapes give ids no index can store as they are (npids drops a trailing NUL, UTF-8 has no surrogates)
    ('docs.jsonl', '{"docno": "d1", "text": "a"}\n{"docno": "d2\\u0000", "text": "b"}\n', 'docno', 'd2\0',
     'a NUL character'),
    ('docs.jsonl', '{"docno": "d1", "text": "a"}\n{"docno": "d\\ud8002", "text": "b"}\n', 'docno', 'd\ud8002',
     'the lone surrogate U+D800 (no valid Unicode text)'),
    ('queries.tsv', 'q1\thello\nq\x002\tworld\n', 'qid', 'q\x002', 'a NUL character'),
])
def test_a_nul_or_a_lone_surrogate_in_an_id_is_refused(tmp_path, name, data, what, value, kind):
    ds = _write(tmp_path, **{{'docs.jsonl': 'docs', 'queries.tsv': 'queries'}[name]: data})
    read = {'docs.jsonl': lambda: _docs(ds), 'queries.tsv': ds.get_topics}[name]
    _raises(read, f'{tmp_path / name} line 2: {what} {value!r} contains {kind}; remove it from the {what}')


@pytest.mark.parametrize('qrels', [b'', b'\n\n', b'\xef\xbb\xbf\r\n  \r\n'])
def test_a_qrels_file_without_judgements_is_refused(tmp_path, qrels):
    ds = _write(tmp_path, qrels=qrels)
    _raises(ds.get_qrels, f'{tmp_path / "qrels.txt"} holds no judgements, so nothing can be evaluated; add lines '
                          '"qid 0 docno relevance", or remove the file')


@pytest.mark.parametrize(('name', 'data', 'line', 'byte', 'column'), [
    ('docs.jsonl', DOC + b'\n{"docno": "d2", "text": "caf\xe9"}\n', 3, 'e9', 29),
    ('queries.tsv', b'q1\thello\n\nq2\tcaf\xe9\n', 3, 'e9', 7),
    ('qrels.txt', b'q1 0 d1 1\nq1 0 d\x92 1\n', 2, '92', 7),
    ('queries.tsv', b'\xff\xfeq\x001\x00', 1, 'ff', 1),  # UTF-16: the BOM check does not hide it
])
def test_bytes_that_are_not_utf8_are_named(tmp_path, name, data, line, byte, column):
    ds = _write(tmp_path, **{{'docs.jsonl': 'docs', 'queries.tsv': 'queries', 'qrels.txt': 'qrels'}[name]: data})
    read = {'docs.jsonl': lambda: _docs(ds), 'queries.tsv': ds.get_topics, 'qrels.txt': ds.get_qrels}[name]
    _raises(read, f'{tmp_path / name} line {line}: byte 0x{byte} at column {column} is not UTF-8; re-save the file as '
                  'UTF-8 (e.g. iconv -f latin1 -t utf8)')


def test_a_refused_read_is_a_resource_error(tmp_path, monkeypatch):
    ds = _write(tmp_path)
    real_open = Path.open

    def refuse(self, *args, **kwargs):
        if self.name == 'queries.tsv':
            raise PermissionError(errno.EACCES, 'Permission denied', str(self))
        return real_open(self, *args, **kwargs)

    monkeypatch.setattr(Path, 'open', refuse)  # root may read anything, so the refusal is simulated
    with pytest.raises(ResourceError) as caught:
        ds.get_topics()
    assert str(caught.value) == (f'cannot read {tmp_path / "queries.tsv"}: permission denied; check the permissions '
                                 '(ls -l) or choose a folder you can read')
    assert caught.value.errno == errno.EACCES


def test_another_os_error_passes_through(tmp_path):
    ds = _write(tmp_path)
    (tmp_path / 'docs.jsonl').unlink()
    (tmp_path / 'docs.jsonl').mkdir()
    with pytest.raises(IsADirectoryError):
        _docs(ds)


# -- documents ----------------------------------------------------------------------------------------------------
def test_documents_as_read(tmp_path):
    lines = [{'docno': ' d3 ', 'text': '  keep  spaces  ', 'title': 'T'},
             {'docno': 0, 'text': 'zero is a docno'},
             {'docno': -7, 'text': None, 'title': None},
             {'docno': 'd1', 'title': 'no text', 'extra': [1, 2]},
             {'docno': 12345678901234567890, 'text': 'big'}]
    ds = _write(tmp_path, docs=''.join(json.dumps(d) + '\n' for d in lines))
    assert _docs(ds) == [{'docno': 'd3', 'text': '  keep  spaces  ', 'title': 'T'},
                         {'docno': '0', 'text': 'zero is a docno'},
                         {'docno': '-7', 'text': '', 'title': ''},
                         {'docno': 'd1', 'text': '', 'title': 'no text'},
                         {'docno': '12345678901234567890', 'text': 'big'}]
    assert ds.docnos() == ['d3', '0', '-7', 'd1', '12345678901234567890']
    assert ds.has_titles() is True


def test_has_titles_only_when_a_document_has_one(tmp_path):
    assert _write(tmp_path / 'a', docs=DOC + b'{"docno": "d2", "text": "b"}\n').has_titles() is False
    assert _write(tmp_path / 'b', docs=DOC + b'{"docno": "d2", "text": "b", "title": ""}\n').has_titles() is True


def test_the_corpus_iterator_with_and_without_a_progress_bar(tmp_path, capsys):
    ds = _write(tmp_path / 'coll', docs=DOC + b'{"docno": "d2", "text": "b", "title": "t"}\n')
    expected = [{'docno': 'd1', 'text': 'a'}, {'docno': 'd2', 'text': 'b', 'title': 't'}]
    assert list(ds.get_corpus_iter(verbose=False)) == expected
    assert capsys.readouterr().err == ''
    assert list(ds.get_corpus_iter()) == expected
    err = capsys.readouterr().err
    assert 'coll docs: 100%' in err
    assert '2/2' in err
    assert 'doc/s' in err


@pytest.mark.parametrize(('line', 'problem'), [
    (b'{"docno": "d2", "text": ', 'not valid JSON (Expecting value); each line must be one JSON object like '
                                 '{"docno": "d1", "text": "..."}'),
    (b'{"docno": "d2"} {"docno": "d3"}', 'not valid JSON (Extra data); each line must be one JSON object like '
                                        '{"docno": "d1", "text": "..."}'),
    (b'["d2", "b"]', 'expected a JSON object like {"docno": "d1", "text": "..."}, got a JSON list'),
    (b'"d2"', 'expected a JSON object like {"docno": "d1", "text": "..."}, got a string'),
    (b'2.5', 'expected a JSON object like {"docno": "d1", "text": "..."}, got a number'),
    (b'7', 'expected a JSON object like {"docno": "d1", "text": "..."}, got a number'),
    (b'null', 'expected a JSON object like {"docno": "d1", "text": "..."}, got a null'),
    (b'false', 'expected a JSON object like {"docno": "d1", "text": "..."}, got a boolean'),
    (b'{"text": "b"}', 'a document needs a "docno" string (or integer), got none'),
    # another collection's name for it (BEIR's corpus.jsonl: "_id") is pointed at, the first of several
    (b'{"_id": "d2", "text": "b"}', 'a document needs a "docno" string (or integer), got none (this line has '
                                    '"_id": rename that field to "docno")'),
    (b'{"id": 2, "docid": "x", "text": "b"}', 'a document needs a "docno" string (or integer), got none (this line '
                                              'has "id": rename that field to "docno")'),
    (b'{"docno": null, "_id": "d2", "text": "b"}', 'a document needs a "docno" string (or integer), got a null'),
    (b'{"doc_id": "d2", "text": "b"}', 'a document needs a "docno" string (or integer), got none (this line has '
                                      '"doc_id": rename that field to "docno")'),
    (b'{"docid": "d2", "doc_id": 3, "text": "b"}', 'a document needs a "docno" string (or integer), got none (this '
                                                   'line has "doc_id": rename that field to "docno")'),
    (b'{"docid": "d2", "text": "b"}', 'a document needs a "docno" string (or integer), got none (this line has '
                                     '"docid": rename that field to "docno")'),
    (b'{"docno": null, "text": "b"}', 'a document needs a "docno" string (or integer), got a null'),
    (b'{"docno": true, "text": "b"}', 'a document needs a "docno" string (or integer), got a boolean'),
    (b'{"docno": 2.0, "text": "b"}', 'a document needs a "docno" string (or integer), got a number'),
    (b'{"docno": ["d2"], "text": "b"}', 'a document needs a "docno" string (or integer), got a JSON list'),
    (b'{"docno": {"id": 2}, "text": "b"}', 'a document needs a "docno" string (or integer), got a JSON object'),
    (b'{"docno": "", "text": "b"}', 'empty docno; every docno must be a non-empty string'),
    (b'{"docno": "  ", "text": "b"}', 'empty docno; every docno must be a non-empty string'),
    (b'{"docno": "d 2", "text": "b"}', "docno 'd 2' contains whitespace, which TREC run and qrels files cannot hold; "
                                      'use docnos without spaces or tabs'),
    (b'{"docno": "d\\t2", "text": "b"}', "docno 'd\\t2' contains whitespace, which TREC run and qrels files cannot "
                                        'hold; use docnos without spaces or tabs'),
    (b'{"docno": "d\\u00a02", "text": "b"}', "docno 'd\\xa02' contains whitespace, which TREC run and qrels files "
                                            'cannot hold; use docnos without spaces or tabs'),
    (b'{"docno": "d2", "text": 3}', '"text" must be a string, got a number; join or convert it before writing '
                                   'docs.jsonl'),
    (b'{"docno": "d2", "text": ["a", "b"]}', '"text" must be a string, got a JSON list; join or convert it before '
                                            'writing docs.jsonl'),
    (b'{"docno": "d2", "text": "b", "title": false}', '"title" must be a string, got a boolean; join or convert it '
                                                     'before writing docs.jsonl'),
    (b'{"docno": "d2", "text": "b", "title": {"a": 1}}', '"title" must be a string, got a JSON object; join or '
                                                        'convert it before writing docs.jsonl'),
])
def test_each_malformed_document_line_is_named(tmp_path, line, problem):
    ds = _write(tmp_path, docs=DOC + b'\n  \n' + line + b'\n' + b'{"docno": "d9", "text": "z"}\n')
    _raises(lambda: _docs(ds), f'{tmp_path / "docs.jsonl"} line 4: {problem}')


@pytest.mark.parametrize(('docs', 'docno', 'line', 'first'), [
    (DOC + b'\n{"docno": "d2", "text": "b"}\n\n{"docno": "d1", "text": "c"}\n', 'd1', 5, 1),  # blank lines count
    (b'\n{"docno": "d2", "text": "b"}\n{"docno": 7, "text": "x"}\n{"docno": "7", "text": "y"}\n', '7', 4, 3),
    (b'{"docno": "d2", "text": "b"}\n{"docno": " d1", "text": "x"}\n\n\n{"docno": "d1 ", "text": "y"}\n', 'd1', 5, 2),
])
def test_a_duplicate_docno_names_both_lines(tmp_path, docs, docno, line, first):
    # defect mended in this run: the error named the document's position ("document 3"), not its line
    ds = _write(tmp_path, docs=docs)
    _raises(ds.docnos, f"{tmp_path / 'docs.jsonl'} line {line}: duplicate docno {docno!r} (first on line {first}); "
                       'docnos must be unique')


@pytest.mark.parametrize('docs', [b'', b'\n', b'\xef\xbb\xbf\r\n \t \r\n'])
def test_a_file_without_documents(tmp_path, docs):
    ds = _write(tmp_path, docs=docs)
    _raises(ds.docnos, f'{tmp_path / "docs.jsonl"} holds no documents; add one JSON object per line like '
                       '{"docno": "d1", "text": "..."}')


# -- topics --------------------------------------------------------------------------------------------------------
def test_topics_keep_file_order_and_are_stripped(tmp_path):
    ds = _write(tmp_path, queries=b'q10\t  two  words  \n q2 \tMalcolm X\n\nq1\tc\xc2\xa0d\n')
    topics = ds.get_topics()
    assert topics.values.tolist() == [['q10', 'two  words'], ['q2', 'Malcolm X'], ['q1', 'c\xa0d']]
    topics.loc[0, 'query'] = 'changed'  # a copy: the next call is not affected
    assert ds.get_topics().loc[0, 'query'] == 'two  words'
    assert ds.get_topics(variant='test').values.tolist()[0] == ['q10', 'two  words']


@pytest.mark.parametrize(('queries', 'problem'), [
    (b'q2 hello', "expected two tab-separated columns \"qid<TAB>query\", got no tab in 'q2 hello'; replace tabs inside "
                  'the query text by spaces'),
    (b'q2\thello\tworld', "expected two tab-separated columns \"qid<TAB>query\", got 3 columns in "
                          "'q2\\thello\\tworld'; replace tabs inside the query text by spaces"),
    (b'q2\thello\t', "expected two tab-separated columns \"qid<TAB>query\", got 3 columns in 'q2\\thello\\t'; replace "
                     'tabs inside the query text by spaces'),
    (b'q2 ' + b'x' * 100, "expected two tab-separated columns \"qid<TAB>query\", got no tab in 'q2 " + 'x' * 77
     + "'; replace tabs inside the query text by spaces"),
    (b'\thello', 'empty qid; every qid must be a non-empty string'),
    (b' \thello', 'empty qid; every qid must be a non-empty string'),
    (b'q 2\thello', "qid 'q 2' contains whitespace, which TREC run and qrels files cannot hold; use qids without "
                    'spaces or tabs'),
    (b'q2\t   ', "query 'q2' has no text; remove the line or add the query text"),
    (b'q2\t\x00\x07', "query 'q2' has no text; remove the line or add the query text"),
    (b'q1\tagain', "duplicate qid 'q1'"),
    (b' q1 \tagain', "duplicate qid 'q1'"),
])
def test_each_malformed_query_line_is_named(tmp_path, queries, problem):
    ds = _write(tmp_path, queries=b'q1\thello\n\n' + queries + b'\r\nq9\tlast\n')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        _raises(ds.get_topics, f'{tmp_path / "queries.tsv"} line 3: {problem}')


@pytest.mark.parametrize('queries', [b'', b'\n\r\n', b'\t\n  \n'])
def test_a_file_without_queries(tmp_path, queries):
    ds = _write(tmp_path, queries=queries)
    _raises(ds.get_topics, f'{tmp_path / "queries.tsv"} holds no queries; add lines "qid<TAB>query"')


def test_control_characters_are_replaced_with_one_warning(tmp_path):
    ds = _write(tmp_path, queries=b'q1\tplain\nq2\ta\x00b\x07  c\nq3\tx\x7fy\xc2\x9fz\nq4\tkeep\xc2\xa0this\n')
    with pytest.warns(UserWarning, match='control characters') as caught:
        topics = ds.get_topics()
    assert [str(w.message) for w in caught] == [
        f'{tmp_path / "queries.tsv"}: 2 queries held control characters (NUL, ...), replaced by spaces (line 2, 3)']
    assert topics.values.tolist() == [['q1', 'plain'], ['q2', 'a b c'], ['q3', 'x y z'], ['q4', 'keep\xa0this']]


@pytest.mark.parametrize(('count', 'shown'), [(5, '1, 3, 5, 7, 9'), (6, '1, 3, 5, 7, 9, ...')])
def test_the_warning_shows_five_lines_at_most(tmp_path, count, shown):
    queries = b''.join(b'q%d\tx\x01y\n\n' % i for i in range(count))  # on lines 1, 3, 5, ...
    ds = _write(tmp_path, queries=queries)
    with pytest.warns(UserWarning, match='control characters') as caught:
        ds.get_topics()
    assert [str(w.message) for w in caught] == [
        f'{tmp_path / "queries.tsv"}: {count} queries held control characters (NUL, ...), replaced by spaces '
        f'(line {shown})']


def test_no_warning_without_control_characters(tmp_path):
    ds = _write(tmp_path, queries=b'q1\tclean text\n')
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        assert ds.get_topics().values.tolist() == [['q1', 'clean text']]


# -- qrels ---------------------------------------------------------------------------------------------------------
def test_qrels_labels_are_kept_as_stored(tmp_path):
    ds = _write(tmp_path, docs=b''.join(b'{"docno": "d%d", "text": "x"}\n' % i for i in range(1, 6)),
                queries=b'q1\ta\nq2\tb\n',
                qrels=b'q2 Q0 d5 3\n\nq1 0 d1 -100\nq1\t0\td2   -1\nq1 0 d3 0\nq1 7 d4 +2\n   \nq2 0 d1 1\n')
    qrels = _quiet_qrels(ds)
    assert list(qrels.columns) == ['qid', 'docno', 'label']
    assert qrels.values.tolist() == [['q2', 'd5', 3], ['q1', 'd1', -100], ['q1', 'd2', -1], ['q1', 'd3', 0],
                                     ['q1', 'd4', 2], ['q2', 'd1', 1]]
    assert qrels.label.dtype == 'int64'
    binary = _quiet_qrels(ds, binary=True)
    assert binary.values.tolist() == [['q2', 'd5', 1], ['q1', 'd1', 0], ['q1', 'd2', 0], ['q1', 'd3', 0],
                                      ['q1', 'd4', 1], ['q2', 'd1', 1]]
    assert binary.label.dtype == 'int64'
    assert _quiet_qrels(ds, variant='test', binary=False).label.tolist() == [3, -100, -1, 0, 2, 1]


GRADES = ('write relevance labels as small integer grades (0 or below: not relevant; 1, 2, ...: relevant), as '
          'trec_eval reads them')


@pytest.mark.parametrize(('line', 'problem'), [
    (b'q1 0 d2', "expected \"qid 0 docno relevance\", got 'q1 0 d2'"),
    (b'  q1 0 d2 1 extra  ', "expected \"qid 0 docno relevance\", got 'q1 0 d2 1 extra'"),
    (b'q1 0 d2 1 ' + b'z' * 90, "expected \"qid 0 docno relevance\", got 'q1 0 d2 1 " + 'z' * 70 + "'"),
    (b'q1 0 d2 x', "relevance 'x' is not an integer; " + GRADES),
    (b'q1 0 d2 1.0', "relevance '1.0' is not an integer; " + GRADES),
    (b'q1 0 d2 1_0', "relevance '1_0' is not an integer; " + GRADES),  # int() alone reads 10: mended in this run
    (b'q1 0 d2 \xef\xbc\x93', "relevance '\uff13' is not an integer; " + GRADES),  # a full-width 3: int() alone reads 3
    (b'q1 0 d2 --1', "relevance '--1' is not an integer; " + GRADES),
    (b'q1 0 d2 1-', "relevance '1-' is not an integer; " + GRADES),
    (b'q1 0 d2 2147483648', "relevance '2147483648' is out of range; " + GRADES),  # 2 ** 31
    (b'q1 0 d2 -2147483649', "relevance '-2147483649' is out of range; " + GRADES),
    (b'q1 0 d2 99999999999999999999', "relevance '99999999999999999999' is out of range; " + GRADES),
    (b'q1 X d1 0', "qid 'q1' judges docno 'd1' again (first on line 1); keep one judgement per pair"),
])
def test_each_malformed_qrels_line_is_named(tmp_path, line, problem):
    ds = _write(tmp_path, docs=DOC + b'{"docno": "d2", "text": "b"}\n',
                qrels=b'q1 0 d1 1\n\nq2 0 d1 1\n' + line + b'\n')
    _raises(ds.get_qrels, f'{tmp_path / "qrels.txt"} line 4: {problem}')


def test_the_same_docno_under_two_queries_is_no_duplicate(tmp_path):
    ds = _write(tmp_path, queries=b'q1\ta\nq2\tb\n', qrels=b'q1 0 d1 1\nq2 0 d1 0\n')
    assert _quiet_qrels(ds).values.tolist() == [['q1', 'd1', 1], ['q2', 'd1', 0]]


def test_unknown_documents_and_queries_give_one_warning_with_counts(tmp_path):
    ds = _write(tmp_path, queries=b'q1\ta\nq2\tb\n',
                qrels=b'q1 0 d1 1\nq1 0 zz 1\nq3 0 d1 2\nq3 0 yy 0\nq2 0 xx 0\n')
    with pytest.warns(UserWarning, match='not in the collection') as caught:
        qrels = ds.get_qrels()
    assert [str(w.message) for w in caught] == [
        f'{tmp_path / "qrels.txt"}: 3 qrels name docnos and 2 name qids that are not in the collection (e.g. docno '
        "'zz' on line 2, qid 'q3' on line 3); they cannot be retrieved and only lower recall "
        "(check that the qrels are this collection's, else remove those lines)"]
    assert len(qrels) == 5
    only_qid = _write(tmp_path / 'b', queries=b'q1\ta\n', qrels=b'q1 0 d1 1\nq4 0 d1 1\n')
    with pytest.warns(UserWarning, match='not in the collection') as caught:
        only_qid.get_qrels()
    assert [str(w.message) for w in caught] == [
        f'{tmp_path / "b" / "qrels.txt"}: 0 qrels name docnos and 1 name qids that are not in the collection (e.g. '
        "qid 'q4' on line 2); they cannot be retrieved and only lower recall "
        "(check that the qrels are this collection's, else remove those lines)"]


def test_an_unknown_docno_is_given_with_the_line_of_the_file_it_is_on(tmp_path):
    ds = _write(tmp_path, queries=b'q1\ta\n', qrels=b'\nq1 0 d1 1\n\nq1 0 cafe\xcc\x81 1\n')  # blank lines count
    with pytest.warns(UserWarning, match='not in the collection') as caught:
        ds.get_qrels()
    assert "(e.g. docno 'cafe\u0301' on line 4)" in str(caught[0].message)


def test_the_unknown_qrels_are_told_once_per_collection_object(tmp_path):
    # compare reads the qrels twice (the exclusions, then the evaluation labels): one warning, not two
    ds = _write(tmp_path, queries=b'q1\ta\n', qrels=b'q1 0 d1 1\nq1 0 zz 1\n')
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        first = ds.get_qrels()
        second = ds.get_qrels(binary=True)
    assert [str(w.message).split(': ', 1)[1] for w in caught] == [
        "1 qrels name docnos and 0 name qids that are not in the collection (e.g. docno 'zz' on line 2); they cannot "
        'be retrieved and only lower recall (check that the qrels are this collection\'s, else remove those lines)']
    assert len(first) == len(second) == 2
    with pytest.warns(UserWarning, match='1 qrels name docnos'):  # another object of the same folder tells it again
        datasets.LocalDataset(tmp_path).get_qrels()


def test_integer_docnos_match_their_qrels(tmp_path):
    ds = _write(tmp_path, docs=b'{"docno": 7, "text": "a"}\n{"docno": " 8 ", "text": "b"}\n', queries=b'1\tq\n',
                qrels=b'1 0 7 1\n1 0 8 0\n')
    assert _quiet_qrels(ds).values.tolist() == [['1', '7', 1], ['1', '8', 0]]


# -- the relevance declaration -----------------------------------------------------------------------------------
@pytest.mark.parametrize(('declaration', 'kind'), [
    (b'{"relevance": "binary"}', 'binary'),
    (b'{"relevance": "graded"}', 'graded'),
    (b'{"name": "mine"}', 'graded'),
    (b'\xef\xbb\xbf{"relevance": "binary"}\r\n', 'binary'),
])
def test_a_declaration_is_read(tmp_path, declaration, kind):
    ds = _write(tmp_path, declaration=declaration)
    assert ds.relevance == (kind, f'declared in {tmp_path / "collection.json"}')


def test_without_a_declaration_labels_are_graded(tmp_path):
    assert _write(tmp_path / 'a').relevance == ('graded', 'no collection.json declaring otherwise')
    assert _write(tmp_path / 'b', qrels=None).relevance == ('graded', 'no collection.json declaring otherwise')


@pytest.mark.parametrize(('declaration', 'problem'), [
    (b'', 'expected a JSON object like {"relevance": "binary"}'),
    (b'{relevance: binary}', 'expected a JSON object like {"relevance": "binary"}'),
    (b'["binary"]', 'expected a JSON object like {"relevance": "binary"}'),
    (b'"binary"', 'expected a JSON object like {"relevance": "binary"}'),
    (b'{"relevance": "Binary"}', '"relevance" must be "binary" or "graded", got \'Binary\''),
    (b'{"relevance": true}', '"relevance" must be "binary" or "graded", got True'),
    (b'{"relevance": null}', '"relevance" must be "binary" or "graded", got None'),
])
def test_a_bad_declaration_is_named(tmp_path, declaration, problem):
    ds = _write(tmp_path, declaration=declaration)
    _raises(lambda: ds.relevance, f'{tmp_path / "collection.json"}: {problem}')


def test_cranfield_is_recognised_by_the_bytes_of_its_qrels(tmp_path):
    source = data_dir('cranfield') / 'qrels.txt'
    if not source.is_file():
        pytest.skip(f'{source} not found')
    data = source.read_bytes()
    assert hashlib.sha256(data).hexdigest() == 'de3766abab3e87394f21e1438ddda34aaea82d1697639ead1fa3c32286ea0424'
    ds = _write(tmp_path / 'anything', qrels=data)
    assert ds.relevance == ('binary', 'Cranfield: codes 1-4 rank 1 as most relevant and are not gains')
    assert _write(tmp_path / 'changed', qrels=data + b'\n').relevance[0] == 'graded'  # one byte more
    declared = _write(tmp_path / 'declared', qrels=data, declaration=b'{"relevance": "graded"}')
    assert declared.relevance[0] == 'graded'  # a declaration wins


# -- the fingerprint -----------------------------------------------------------------------------------------------
def _by_hand(files: dict) -> str:
    """The fingerprint's layout, written out: for each of the four files in this order, its name, NUL, its bytes
    (nothing when absent), NUL. It names the folder of every artifact built for a collection, so it must not drift."""
    data = b''
    for name in ('docs.jsonl', 'queries.tsv', 'qrels.txt', 'collection.json'):
        data += name.encode() + b'\0' + files.get(name, b'') + b'\0'
    return hashlib.sha256(data).hexdigest()


def test_the_fingerprint_byte_for_byte(tmp_path):
    ds = _write(tmp_path, qrels=None)
    assert ds.fingerprint() == _by_hand({'docs.jsonl': DOC, 'queries.tsv': b'q1\thello\n'})
    big = b''.join(b'{"docno": "d%07d", "text": "%s"}\n' % (i, b'w' * 40) for i in range(40000))  # > 2 MiB
    assert len(big) > 2 * (1 << 20)
    ds = _write(tmp_path, docs=big, qrels=b'q1 0 d0000001 1\n', declaration=b'{"relevance": "binary"}')
    assert ds.fingerprint() == _by_hand({'docs.jsonl': big, 'queries.tsv': b'q1\thello\n',
                                         'qrels.txt': b'q1 0 d0000001 1\n',
                                         'collection.json': b'{"relevance": "binary"}'})


def test_the_corpus_fingerprint_is_the_documents_file_alone(tmp_path):
    """What the workdir is named by: the same layout as the fingerprint, over docs.jsonl only."""
    ds = _write(tmp_path / 'a', qrels=b'q1 0 d1 1\n', declaration=b'{"relevance": "binary"}')
    by_hand = hashlib.sha256(b'docs.jsonl\0' + DOC + b'\0').hexdigest()
    assert ds.corpus_fingerprint() == by_hand
    assert ds.corpus_fingerprint() != ds.fingerprint()
    mended = [_write(tmp_path / 'q', queries=b'q1\thello!\n'), _write(tmp_path / 'r', qrels=b'q1 0 d1 2\n'),
              _write(tmp_path / 'n', qrels=None), _write(tmp_path / 'j', declaration=b'{}')]
    assert {m.corpus_fingerprint() for m in mended} == {by_hand}
    assert _write(tmp_path / 'd', docs=DOC + b'\n').corpus_fingerprint() != by_hand


def test_the_fingerprint_follows_content_only(tmp_path):
    base = _write(tmp_path / 'a').fingerprint()
    assert _write(tmp_path / 'other-name').fingerprint() == base  # not the folder's name
    (tmp_path / 'a' / 'SOURCE.md').write_text('notes')  # nor other files
    os.utime(tmp_path / 'a' / 'docs.jsonl', (1, 1))  # nor times
    assert LocalDataset(tmp_path / 'a').fingerprint() == base
    changed = [_write(tmp_path / 'd', docs=DOC + b'\n').fingerprint(),
               _write(tmp_path / 'q', queries=b'q1\thello!\n').fingerprint(),
               _write(tmp_path / 'r', qrels=b'q1 0 d1 2\n').fingerprint(),
               _write(tmp_path / 'n', qrels=None).fingerprint(),
               _write(tmp_path / 'j', declaration=b'{}').fingerprint()]
    assert len(set(changed + [base])) == 6
    # the same bytes in another file are another collection
    swapped = _write(tmp_path / 's', docs=DOC, queries=b'q1\thello\n', qrels=None, declaration=b'q1 0 d1 1\n')
    assert swapped.fingerprint() != base


# -- the text loader -----------------------------------------------------------------------------------------------
@pytest.fixture
def titled(tmp_path):
    return _write(tmp_path / 'titled', docs=b'{"docno": "d1", "text": "one", "title": "T1"}\n'
                                            b'{"docno": "d2", "text": "two"}\n')


def test_the_text_loader_adds_fields_by_docno(titled):
    inp = pd.DataFrame({'qid': ['q1', 'q1', 'q1'], 'docno': ['d2', 'd2', 'd1'], 'score': [3., 2., 1.]})
    out = titled.text_loader()(inp)
    assert list(out.columns) == ['qid', 'docno', 'score', 'text', 'title']
    assert out.text.tolist() == ['two', 'two', 'one']
    assert out.title.tolist() == ['', '', 'T1']
    assert list(inp.columns) == ['qid', 'docno', 'score']  # the input is left alone
    assert titled.text_loader('title')(inp).columns.tolist() == ['qid', 'docno', 'score', 'title']
    assert titled.text_loader(['text'])(inp).text.tolist() == ['two', 'two', 'one']
    assert titled.text_loader(('title', 'text'))(inp).columns.tolist()[-2:] == ['title', 'text']
    assert pt.text.get_text(titled, 'text')(inp).text.tolist() == ['two', 'two', 'one']


def test_the_text_loader_refuses_docnos_the_collection_lacks_and_reads_integer_ones(tmp_path, titled):
    inp = pd.DataFrame({'qid': ['q1'] * 5, 'docno': ['d2', 'zz', 'd1', 'zz', 'y'], 'score': [5., 4., 3., 2., 1.]})
    with pytest.raises(ValueError) as refused:
        titled.text_loader()(inp)
    assert str(refused.value) == (f"LocalDataset('{titled.path}').text_loader('*'): 2 docno(s) of the input are not "
                                  "in the collection (e.g. ['zz', 'y']): load the text from the collection the run "
                                  'was retrieved from')
    numbered = _write(tmp_path / 'n', docs=b'{"docno": "7", "text": "seven"}\n{"docno": 12, "text": "twelve"}\n')
    out = numbered.text_loader()(pd.DataFrame({'qid': ['q', 'q'], 'docno': [12, 7]}))
    assert out.text.tolist() == ['twelve', 'seven']
    assert out.docno.tolist() == [12, 7]  # the input's docnos are left as they were


def test_without_titles_only_text_is_added(tmp_path):
    ds = _write(tmp_path, docs=DOC)
    out = ds.text_loader('*')(pd.DataFrame({'qid': ['q1'], 'docno': ['d1']}))
    assert out.columns.tolist() == ['qid', 'docno', 'text']
    assert out.text.tolist() == ['a']
    assert ds.text_loader('title')(pd.DataFrame({'docno': ['d1']})).title.tolist() == ['']


def test_the_text_loader_repr_and_its_check(titled):
    assert repr(titled.text_loader()) == f"LocalDataset('{titled.path}').text_loader('*')"
    assert repr(titled.text_loader(['title'])) == f"LocalDataset('{titled.path}').text_loader(['title'])"
    with pytest.raises(pt.validate.InputValidationError) as refused:
        titled.text_loader()(pd.DataFrame({'qid': ['q1']}))
    assert f"in transformer LocalDataset('{titled.path}').text_loader('*') does not match" in str(refused.value)
    assert "missing_columns=['docno']" in str(refused.value)
    with pytest.raises(pt.validate.InputValidationError) as refused:
        RemoveExcluded(QRELS)(pd.DataFrame({'qid': ['1'], 'docno': ['b']}))
    assert 'in transformer RemoveExcluded' in str(refused.value)
    assert "missing_columns=['score']" in str(refused.value)


# -- data_dir and load_dataset -----------------------------------------------------------------------------------
def test_data_dir_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv('GAREN_DATA', str(tmp_path / 'data'))
    assert data_dir() == tmp_path / 'data'
    assert data_dir('scifact') == tmp_path / 'data' / 'scifact'
    assert data_dir('') == tmp_path / 'data'


def test_data_dir_without_the_environment(tmp_path, monkeypatch):
    monkeypatch.delenv('GAREN_DATA', raising=False)
    # the package as if installed at tmp/install/lib/pyterrier_garen: its candidate is tmp/install/shared/data
    monkeypatch.setattr(datasets, '__file__', str(tmp_path / 'install' / 'lib' / 'pyterrier_garen' / 'datasets.py'))
    (tmp_path / 'project').mkdir()
    monkeypatch.chdir(tmp_path / 'project')
    assert data_dir() == tmp_path / 'shared' / 'data'  # neither exists: the one next to the working folder
    (tmp_path / 'install' / 'shared' / 'data').mkdir(parents=True)
    assert data_dir() == tmp_path / 'install' / 'shared' / 'data'  # the one next to the package exists
    (tmp_path / 'shared' / 'data').mkdir(parents=True)
    assert data_dir() == tmp_path / 'shared' / 'data'  # next to the working folder comes first
    assert data_dir('cranfield') == tmp_path / 'shared' / 'data' / 'cranfield'
    monkeypatch.setenv('GAREN_DATA', '')  # empty counts as unset
    assert data_dir() == tmp_path / 'shared' / 'data'


def test_load_dataset_from_a_folder_or_a_name(tmp_path, monkeypatch):
    _write(tmp_path / 'data' / 'mine')
    _write(tmp_path / 'here' / 'mine', docs=b'{"docno": "local", "text": "x"}\n')
    monkeypatch.setenv('GAREN_DATA', str(tmp_path / 'data'))
    by_path = load_dataset(str(tmp_path / 'data' / 'mine'))
    assert isinstance(by_path, LocalDataset)
    assert by_path.path == tmp_path / 'data' / 'mine'
    (tmp_path / 'elsewhere').mkdir()
    monkeypatch.chdir(tmp_path / 'elsewhere')
    assert load_dataset('mine').path == tmp_path / 'data' / 'mine'
    monkeypatch.chdir(tmp_path / 'here')
    assert load_dataset('mine').docnos() == ['local']  # a folder under the working folder comes first


def test_an_unknown_name_or_id(tmp_path, monkeypatch):
    monkeypatch.setenv('GAREN_DATA', str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError) as caught:
        load_dataset('nothing')
    assert str(caught.value) == (f"'nothing' is neither a collection folder nor a collection under {tmp_path}; pass "
                                 'a folder with docs.jsonl, queries.tsv and qrels.txt, or an id like irds:beir/scifact')
    (tmp_path / 'nearly').mkdir()  # a folder without the files is no collection
    with pytest.raises(FileNotFoundError, match='docs.jsonl is missing'):
        load_dataset('nearly')
    with pytest.raises(ValueError) as caught:
        load_dataset('irds:no-such/collection')
    assert re.fullmatch(r"'irds:no-such/collection' is not a known dataset id \(.*irds:no-such/collection.*\); see "
                        r'https://ir-datasets.com for ids \(irds:<id>\) or pass a collection folder', str(caught.value))


def test_an_id_whose_lookup_raises_a_bare_key_error(monkeypatch):
    def refuse(spec):
        raise KeyError

    monkeypatch.setattr(pt, 'get_dataset', refuse)
    with pytest.raises(ValueError) as caught:
        load_dataset('irds:x')
    assert str(caught.value) == ("'irds:x' is not a known dataset id (); see https://ir-datasets.com for ids "
                                 '(irds:<id>) or pass a collection folder')


class _Remote:
    """A stand-in for a PyTerrier dataset: its corpus iterator prints to fd 2, then yields or fails."""

    def __init__(self, failure=None):
        self.failure = failure
        self.calls = []

    def get_corpus_iter(self, **kwargs):
        self.calls.append(kwargs)
        os.write(2, b'retrying download...\n')
        if self.failure is not None:
            raise self.failure
        yield {'docno': 'd1', 'text': 'x'}
        raise AssertionError('only the first document is read')


def test_a_dataset_that_can_be_read_is_returned_with_what_it_printed(monkeypatch, capfd):
    remote = _Remote()
    monkeypatch.setattr(pt, 'get_dataset', lambda spec: remote if spec == 'irds:ok' else None)
    assert load_dataset('irds:ok') is remote
    assert remote.calls == [{'verbose': False}]
    assert capfd.readouterr().err == 'retrying download...\n'
    os.write(2, b'fd 2 is back\n')
    assert capfd.readouterr().err == 'fd 2 is back\n'


def test_an_offline_dataset_is_one_clear_error(monkeypatch, capfd):
    remote = _Remote(ConnectionError('no route'))
    monkeypatch.setattr(pt, 'get_dataset', lambda spec: remote)
    with pytest.raises(DatasetUnavailableError) as caught:
        load_dataset('irds:vaswani')
    assert str(caught.value) == (
        'irds:vaswani is not downloaded yet and the network cannot be reached (ConnectionError); download it first '
        'on a machine with network access (ir_datasets keeps it under ~/.ir_datasets, or $IR_DATASETS_HOME) and copy '
        'that folder here, or pass a local collection folder')
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
    assert capfd.readouterr().err == ''  # the downloader's retries are held back
    os.write(2, b'fd 2 is back\n')
    assert capfd.readouterr().err == 'fd 2 is back\n'


def test_another_failure_passes_through(monkeypatch, capfd):
    failure = RuntimeError('corrupt archive')
    monkeypatch.setattr(pt, 'get_dataset', lambda spec: _Remote(failure))
    with pytest.raises(RuntimeError) as caught:
        load_dataset('irds:broken')
    assert caught.value is failure
    assert capfd.readouterr().err == ''


def test_an_empty_corpus_and_output_that_is_not_utf8_pass_the_probe(monkeypatch, capfd):
    class Empty:
        def get_corpus_iter(self, verbose=True):
            os.write(2, b'progress \xff\xfe done\n')  # a downloader's bytes need not be UTF-8
            return iter(())
    empty = Empty()
    monkeypatch.setattr(pt, 'get_dataset', lambda spec: empty)
    assert load_dataset('irds:empty') is empty
    assert capfd.readouterr().err == 'progress \ufffd\ufffd done\n'


def test_a_dataset_without_a_corpus_is_not_probed(monkeypatch):
    class TopicsOnly:
        pass

    only = TopicsOnly()
    monkeypatch.setattr(pt, 'get_dataset', lambda spec: only)
    assert load_dataset('irds:topics-only') is only


# -- BRIGHT's excluded documents ---------------------------------------------------------------------------------
QRELS = pd.DataFrame({'qid': ['1', '1', '1', '1', '2', '2'],
                      'docno': ['b', 'c', 'd', 'e', 'a', 'zz'],
                      'label': [-100, -1, -100, -2, -100, 1]})


def test_only_minus_100_is_removed_per_query_and_ranks_follow_scores():
    run = pd.DataFrame({'qid': ['1'] * 5 + ['2'] * 3,
                        'docno': ['a', 'b', 'c', 'd', 'e', 'a', 'b', 'c'],
                        'score': [5., 9., 3., 2., 3., 1., 4., 2.],
                        'rank': [1, 0, 2, 4, 3, 2, 0, 1],
                        'extra': list('ABCDEFGH')})
    out = remove_excluded(run, QRELS)
    # query 1 loses b and d (-100), keeps c (-1) and e (-2); query 2 loses a; ties keep their order (c before e)
    assert out.docno.tolist() == ['a', 'c', 'e', 'b', 'c']
    assert out['rank'].tolist() == [0, 1, 2, 0, 1]
    assert out.extra.tolist() == ['A', 'C', 'E', 'G', 'H']
    assert out.index.tolist() == [0, 2, 4, 6, 7]
    assert len(run) == 8  # the input is left alone
    assert run['rank'].tolist() == [1, 0, 2, 4, 3, 2, 0, 1]


def test_without_a_rank_column_none_is_added():
    run = pd.DataFrame({'qid': ['1', '1', '1'], 'docno': ['c', 'b', 'a'], 'score': [1., 2., 3.]})
    out = remove_excluded(run, QRELS)
    assert out.columns.tolist() == ['qid', 'docno', 'score']
    assert out.docno.tolist() == ['c', 'a']


def test_integer_qids_and_docnos_match_string_qrels():
    run = pd.DataFrame({'qid': [1, 1, 1, 2], 'docno': [10, 20, 30, 10], 'score': [3., 2., 1., 1.],
                        'rank': [0, 1, 2, 0]})
    qrels = pd.DataFrame({'qid': ['1', '2'], 'docno': ['20', '99'], 'label': [-100, -100]})
    out = remove_excluded(run, qrels)
    assert out.values.tolist() == [[1, 10, 3., 0], [1, 30, 1., 1], [2, 10, 1., 0]]
    out = RemoveExcluded(qrels)(run)
    assert out.docno.tolist() == [10, 30, 10]
    assert out['rank'].tolist() == [0, 1, 0]


def test_a_run_of_one_excluded_row_ends_empty():
    run = pd.DataFrame({'qid': ['1'], 'docno': ['b'], 'score': [1.], 'rank': [0]})
    assert remove_excluded(run, QRELS).docno.tolist() == []
    kept = pd.DataFrame({'qid': ['1'], 'docno': ['c'], 'score': [1.], 'rank': [0]})
    assert remove_excluded(kept, QRELS).docno.tolist() == ['c']


def test_another_excluded_label():
    run = pd.DataFrame({'qid': ['1'] * 4, 'docno': ['b', 'c', 'd', 'e'], 'score': [4., 3., 2., 1.],
                        'rank': [0, 1, 2, 3]})
    assert remove_excluded(run, QRELS, excluded_label=-1).docno.tolist() == ['b', 'd', 'e']
    assert RemoveExcluded(QRELS, excluded_label=-2)(run).docno.tolist() == ['b', 'c', 'd']
    assert RemoveExcluded(QRELS)(run).docno.tolist() == ['c', 'e']
    assert RemoveExcluded(QRELS, excluded_label=-2)(run)['rank'].tolist() == [0, 1, 2]


def test_nothing_to_remove_leaves_the_run_as_it_is():
    run = pd.DataFrame({'qid': ['1', '1'], 'docno': ['a', 'c'], 'score': [1., 2.], 'rank': [7, 3]})
    # no -100 in the qrels at all: the run comes back as it is, its ranks not recomputed
    pd.testing.assert_frame_equal(remove_excluded(run, QRELS[QRELS.label != -100]), run)
    # excluded documents, none of them in the run: nothing is dropped, the ranks follow the scores
    out = remove_excluded(run, QRELS)
    assert out.docno.tolist() == ['a', 'c']
    assert out['rank'].tolist() == [1, 0]
    empty = run.iloc[:0]
    assert remove_excluded(empty, QRELS).columns.tolist() == ['qid', 'docno', 'score', 'rank']
    assert remove_excluded(empty, QRELS).empty


def test_remove_excluded_as_a_transformer():
    qrels = QRELS.copy()
    stage = RemoveExcluded(qrels, excluded_label=-1)
    assert stage.qrels is qrels
    assert stage.excluded_label == -1
    assert repr(stage) == 'RemoveExcluded(<DataFrame of 6 rows>, excluded_label=-1)'
    assert repr(RemoveExcluded(qrels)) == 'RemoveExcluded(<DataFrame of 6 rows>)'
    with pytest.raises(Exception, match='score'):
        stage(pd.DataFrame({'qid': ['1'], 'docno': ['c']}))



def test_a_file_that_cannot_be_read_is_named_with_the_fix(tmp_path, monkeypatch):
    import errno
    from pyterrier_garen._atomic import ResourceError
    dataset = _write(tmp_path / 'c')
    real_open = Path.open

    def refuse(self, *args, **kwargs):
        if self.name == 'queries.tsv':
            raise PermissionError(errno.EACCES, 'Permission denied', str(self))
        return real_open(self, *args, **kwargs)
    monkeypatch.setattr(Path, 'open', refuse)
    with pytest.raises(ResourceError) as refused:
        dataset.get_topics()
    path = tmp_path / 'c' / 'queries.tsv'
    assert str(refused.value) == (f'cannot read {path}: permission denied; check the permissions (ls -l) or choose a '
                                  'folder you can read')


def test_only_line_ends_are_stripped_from_a_line(tmp_path):
    dataset = _write(tmp_path / 'c', queries=b'q1\tmalcolm X\r\nq2\tXX\n')
    assert dataset.get_topics()['query'].tolist() == ['malcolm X', 'XX']


def test_the_widest_labels_a_c_int_holds_are_read(tmp_path):
    ds = _write(tmp_path, docs=DOC + b'{"docno": "d2", "text": "b"}\n',
                qrels=b'q1 0 d1 2147483647\nq1 0 d2 -2147483648\n')
    assert _quiet_qrels(ds).label.tolist() == [2 ** 31 - 1, -2 ** 31]


def test_a_negative_label_is_kept_and_scores_as_not_relevant(tmp_path):
    """evaluation_qrels keeps a label below 0 as written (BRIGHT's -100 is removed from runs by RemoveExcluded);
    ir_measures, which every comparison scores with, gives it no gain: the same values as a 0."""
    import ir_measures
    from ir_measures import AP, R, nDCG

    from pyterrier_garen import evaluation_qrels
    docs = b''.join(b'{"docno": "d%d", "text": "t"}\n' % i for i in range(3))
    run = pd.DataFrame({'query_id': ['q1'] * 3, 'doc_id': ['d0', 'd1', 'd2'], 'score': [3.0, 2.0, 1.0]})
    values = []
    for label in (b'-1', b'-5', b'0'):
        ds = _write(tmp_path / label.decode(), docs=docs, qrels=b'q1 0 d0 ' + label + b'\nq1 0 d2 1\n',
                    declaration=b'{"relevance": "graded"}')
        qrels = evaluation_qrels(ds)
        assert qrels.label.tolist() == [int(label), 1]
        judged = qrels.rename(columns={'qid': 'query_id', 'docno': 'doc_id', 'label': 'relevance'})
        values.append(ir_measures.calc_aggregate([nDCG @ 10, R @ 100, AP], judged, run))
    assert values[0] == values[1] == values[2]
    assert values[2][nDCG @ 10] == pytest.approx(1 / math.log2(4))  # d2 at rank 3, the ideal at rank 1


@pytest.mark.parametrize('field', ['body', 'Text', ['text', 'abstract']])
def test_the_text_loader_refuses_a_field_documents_do_not_have(titled, field):
    # every row used to get '' for it, so a reranker scored empty texts without a word
    inp = pd.DataFrame({'qid': ['q1'], 'docno': ['d1']})
    unknown = [f for f in ([field] if isinstance(field, str) else field) if f not in ('text', 'title')]
    with pytest.raises(ValueError) as refused:
        pt.text.get_text(titled, field)(inp)
    assert str(refused.value) == (f"LocalDataset('{titled.path}').text_loader({field!r}): docs.jsonl documents have "
                                  f"the fields text and title (optional), not {unknown}; load \"text\" "
                                  "(pt.text.get_text(dataset, 'text')) or name that field in the reranker (e.g. "
                                  "text_field='text')")
