"""Collections derived from the shared ones, to check a method on data none of its options were chosen on.

    python examples/derived_collections.py --out derived                          # all three, from $GAREN_DATA
    python examples/derived_collections.py --out derived --only scifact-titles
    python examples/strength_sweep.py --dataset derived/scifact-titles --workdir work/scifact-titles --out s.csv \
        --budgets 100 200 --fusion 0.1

- ``scifact-titles``: SciFact with every document cut down to its title. Short texts give BM25 and the k-NN graph
  less to work with, so the first stage is weaker than on SciFact itself.
- ``cranfield-titles``: Cranfield likewise (binary relevance, as for Cranfield).
- ``cranfield-plus-vaswani``: Cranfield's queries and judgements over Cranfield's documents plus Vaswani's
  (their docnos prefixed with ``v``), so 11,429 unjudged documents from another field sit in the same index, graph
  and groups.

Each folder is in the shared format (``docs.jsonl``, ``queries.tsv``, ``qrels.txt``, ``collection.json``,
``SOURCE.md``) and is used with ``--dataset FOLDER``. The source collections' licences apply to what is derived. An
existing folder is never written over (remove it yourself, or choose another ``--out``); a folder is written whole
into a temporary sibling first, then renamed, so an interrupted run leaves no half collection.
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pyterrier_garen.datasets import data_dir, load_dataset

#: name -> (what it is, source collections, how the documents are made, relevance declaration)
DERIVED = {
    'scifact-titles': ('SciFact, every document cut down to its title', ('scifact',), 'titles', 'graded'),
    'cranfield-titles': ('Cranfield, every document cut down to its title', ('cranfield',), 'titles', 'binary'),
    'cranfield-plus-vaswani': ("Cranfield's queries and judgements over Cranfield's and Vaswani's documents "
                               "(Vaswani's docnos prefixed with 'v')", ('cranfield', 'vaswani'), 'union', 'binary'),
}
#: characters of the text kept for a document without a title
NO_TITLE_CHARS = 200


def _documents(folder: Path):
    """The documents of a shared-format collection, read and checked by the package's own reader."""
    return load_dataset(str(folder)).get_corpus_iter(verbose=False)


def _write(name: str, source: Path, target: Path) -> dict:
    """Write one derived collection into ``target`` (a new folder); returns its counts."""
    what, sources, kind, relevance = DERIVED[name]
    first = source / sources[0]
    for folder in (source / s for s in sources):
        missing = [f for f in ('docs.jsonl', 'queries.tsv', 'qrels.txt') if not (folder / f).is_file()]
        if missing:
            raise ValueError(f'{folder}: {", ".join(missing)} missing; point $GAREN_DATA (or --data) at the folder '
                             f'that holds {", ".join(sources)}')
    target.mkdir(parents=True)
    counts = {'documents': 0, 'without_title': 0}
    with open(target / 'docs.jsonl', 'w', encoding='utf-8') as out:
        if kind == 'titles':
            for doc in _documents(first):
                title = str(doc.get('title') or '').strip()
                if not title:
                    counts['without_title'] += 1
                    title = str(doc.get('text') or '')[:NO_TITLE_CHARS]
                out.write(json.dumps({'docno': doc['docno'], 'text': title}) + '\n')
                counts['documents'] += 1
        else:
            for i, folder in enumerate(source / s for s in sources):
                for doc in _documents(folder):
                    if i:
                        doc = {**doc, 'docno': 'v' + str(doc['docno'])}
                    out.write(json.dumps({k: doc[k] for k in ('docno', 'title', 'text') if k in doc}) + '\n')
                    counts['documents'] += 1
    for file in ('queries.tsv', 'qrels.txt'):
        shutil.copyfile(first / file, target / file)
    (target / 'collection.json').write_text(json.dumps({'relevance': relevance}) + '\n', encoding='utf-8')
    (target / 'SOURCE.md').write_text(
        f'# {name}\n\n{what}.\n\nDerived by `examples/derived_collections.py` from {", ".join(sources)} (their '
        f'SOURCE.md files give provenance and licence, which apply here). {counts["documents"]} documents'
        + (f', {counts["without_title"]} of them without a title (their first {NO_TITLE_CHARS} characters kept)'
           if counts['without_title'] else '') + '; queries and judgements are those of ' + sources[0] + '.\n',
        encoding='utf-8')
    return counts


def derive(name: str, out: Path, source: Path = None) -> Path:
    """Build the derived collection ``name`` under ``out``; returns its folder. Refuses an existing folder."""
    if name not in DERIVED:
        raise ValueError(f'unknown derived collection {name!r}; choose from {", ".join(DERIVED)}')
    source = Path(source) if source else data_dir()
    final = Path(out) / name
    if final.exists():
        raise FileExistsError(f'{final} exists; it is left as it is (remove it yourself or choose another --out)')
    final.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f'.{name}.', dir=final.parent))
    try:
        counts = _write(name, source, scratch / name)
        os.replace(scratch / name, final)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f'{final}: {counts["documents"]} documents ({DERIVED[name][0]})')
    return final


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--out', required=True, help='folder to write the collections into (one sub-folder each)')
    parser.add_argument('--only', nargs='+', choices=list(DERIVED), help='only these (default: all)')
    parser.add_argument('--data', help='folder of the shared collections (default: $GAREN_DATA, else ../shared/data)')
    args = parser.parse_args(argv)
    for name in args.only or DERIVED:
        derive(name, Path(args.out), args.data)


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():  # a bad collection or option: one line 'error: ...', exit status 2
        sys.exit(main())
