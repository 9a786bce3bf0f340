"""examples/derived_collections.py: the collections derived from the shared ones, on a small fake source."""
import json
from pathlib import Path

import pytest
from _scripts import load_script

from pyterrier_garen.datasets import load_dataset


def load_example():
    return load_script('examples/derived_collections.py')


def _collection(folder: Path, docs, queries, qrels):
    folder.mkdir(parents=True)
    (folder / 'docs.jsonl').write_text(''.join(json.dumps(d) + '\n' for d in docs), encoding='utf-8')
    (folder / 'queries.tsv').write_text(''.join(f'{q}\t{t}\n' for q, t in queries), encoding='utf-8')
    (folder / 'qrels.txt').write_text(''.join(f'{q} 0 {d} {r}\n' for q, d, r in qrels), encoding='utf-8')


@pytest.fixture
def source(tmp_path):
    root = tmp_path / 'data'
    _collection(root / 'scifact', [{'docno': '10', 'title': 'Gene therapy trial', 'text': 'long abstract one'},
                                   {'docno': '11', 'title': '', 'text': 'x' * 300}],
                [('1', 'gene therapy')], [('1', '10', 1)])
    _collection(root / 'cranfield', [{'docno': '1', 'title': 'wing flow', 'text': 'wing flow in a slipstream'},
                                     {'docno': '2', 'title': 'heat transfer', 'text': 'heat transfer at speed'}],
                [('1', 'slipstream wing'), ('2', 'heat')], [('1', '1', 2), ('2', '2', -1), ('2', '1', 3)])
    _collection(root / 'vaswani', [{'docno': '1', 'text': 'compact memories'}, {'docno': '7', 'text': 'analogue'}],
                [('1', 'memory')], [('1', '1', 1)])
    return root


def _docs(folder):
    return [json.loads(line) for line in (folder / 'docs.jsonl').read_text(encoding='utf-8').splitlines()]


def test_titles_union_and_what_each_declares(source, tmp_path):
    example = load_example()
    out = tmp_path / 'derived'
    example.main(['--out', str(out), '--data', str(source)])
    assert _docs(out / 'scifact-titles') == [{'docno': '10', 'text': 'Gene therapy trial'},
                                            {'docno': '11', 'text': 'x' * 200}]  # no title: its first 200 characters
    assert _docs(out / 'cranfield-titles') == [{'docno': '1', 'text': 'wing flow'},
                                              {'docno': '2', 'text': 'heat transfer'}]
    union = _docs(out / 'cranfield-plus-vaswani')
    assert [d['docno'] for d in union] == ['1', '2', 'v1', 'v7']  # Vaswani's '1' no longer clashes with Cranfield's
    assert union[2] == {'docno': 'v1', 'text': 'compact memories'}
    for name, relevance in (('scifact-titles', 'graded'), ('cranfield-titles', 'binary'),
                            ('cranfield-plus-vaswani', 'binary')):
        folder = out / name
        assert json.loads((folder / 'collection.json').read_text()) == {'relevance': relevance}
        assert 'examples/derived_collections.py' in (folder / 'SOURCE.md').read_text()
    assert '1 of them without a title' in (out / 'scifact-titles' / 'SOURCE.md').read_text()
    # queries and judgements are the first source's, byte for byte, and the folders load as collections
    qrels = (out / 'cranfield-plus-vaswani' / 'qrels.txt').read_bytes()
    assert qrels == (source / 'cranfield' / 'qrels.txt').read_bytes()
    dataset = load_dataset(str(out / 'cranfield-plus-vaswani'))
    assert len(dataset.get_topics()) == 2
    assert dataset.relevance[0] == 'binary'
    assert sorted(d['docno'] for d in dataset.get_corpus_iter()) == ['1', '2', 'v1', 'v7']
    assert not [p for p in out.iterdir() if p.name.startswith('.')]  # no temporary folder left behind


def test_an_existing_folder_is_never_written_over(source, tmp_path):
    example = load_example()
    out = tmp_path / 'derived'
    mine = out / 'cranfield-titles'
    mine.mkdir(parents=True)
    (mine / 'notes.txt').write_text('mine')
    with pytest.raises(FileExistsError, match='cranfield-titles exists; it is left as it is'):
        example.main(['--out', str(out), '--data', str(source), '--only', 'cranfield-titles'])
    assert [p.name for p in mine.iterdir()] == ['notes.txt']


def test_a_missing_source_names_the_folder_and_the_fix(tmp_path):
    example = load_example()
    with pytest.raises(ValueError, match=r'docs.jsonl, queries.tsv, qrels.txt missing; point \$GAREN_DATA'):
        example.main(['--out', str(tmp_path / 'o'), '--data', str(tmp_path / 'nothing'), '--only', 'scifact-titles'])
    assert not (tmp_path / 'o' / 'scifact-titles').exists()
    assert not [p for p in (tmp_path / 'o').iterdir()]


def test_from_the_command_line_an_existing_folder_is_one_error_line_with_status_2(source, tmp_path):
    import subprocess
    import sys

    from _scripts import ROOT
    (tmp_path / 'derived' / 'cranfield-titles').mkdir(parents=True)
    proc = subprocess.run([sys.executable, str(ROOT / 'examples' / 'derived_collections.py'), '--out',
                           str(tmp_path / 'derived'), '--data', str(source), '--only', 'cranfield-titles'],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == (f"error: {tmp_path / 'derived' / 'cranfield-titles'} exists; it is left as it is (remove "
                           "it yourself or choose another --out)\n")
