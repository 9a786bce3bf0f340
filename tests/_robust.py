"""Small collections for the robustness tests (seconds to index, no shared data needed)."""
import json
from pathlib import Path

from pyterrier_garen import LocalDataset
from pyterrier_garen.synthetic import make_synthetic


def gap_collection(folder: Path, *, first_run: int = 270) -> LocalDataset:
    """The synthetic collection (320 docs) renumbered with integer docnos 1..first_run, then first_run+3...

    Integer docnos in several runs are what npids 0.1.3's default inverse codec loses (the first run must be longer
    than npids' 256-id block to trigger it).
    """
    make_synthetic(folder / 'src', docs_per_topic=20, queries_per_topic=1)
    docs = [json.loads(line) for line in (folder / 'src' / 'docs.jsonl').read_text().splitlines()]
    numbers = list(range(1, first_run + 1)) + list(range(first_run + 3, first_run + 3 + len(docs) - first_run))
    rename = {d['docno']: str(n) for d, n in zip(docs, numbers)}
    out = folder / 'gaps'
    out.mkdir(parents=True, exist_ok=True)
    with (out / 'docs.jsonl').open('wt') as fout:
        for doc in docs:
            fout.write(json.dumps({**doc, 'docno': rename[doc['docno']]}) + '\n')
    (out / 'queries.tsv').write_text((folder / 'src' / 'queries.tsv').read_text())
    with (out / 'qrels.txt').open('wt') as fout:
        for line in (folder / 'src' / 'qrels.txt').read_text().splitlines():
            qid, it, docno, rel = line.split()
            fout.write(f'{qid} {it} {rename[docno]} {rel}\n')
    return LocalDataset(out)
