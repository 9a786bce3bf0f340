"""Shared by the sweep tests: the example script loaded as a module, and the small synthetic collection."""
import shutil
from pathlib import Path

from _scripts import load_script

import pyterrier_garen as garen
from pyterrier_garen.synthetic import make_synthetic


def load_example():
    return load_script('examples/strength_sweep.py')


def small_collection(root: Path):
    """The synthetic collection, small (160 docs, 16 queries), with a BM25 graph: no MiniLM needed (seconds)."""
    dataset = make_synthetic(root / 'collection', docs_per_topic=10, queries_per_topic=1)
    return root, garen.prepare(dataset, root / 'work', graph='bm25', vectors=False)


def unmatched_copy(root: Path, folder: Path, count: int):
    """A copy of ``root/collection`` whose first ``count`` queries share no term with any document: the copy, and
    the qids of those queries."""
    shutil.copytree(root / 'collection', folder)
    lines = (folder / 'queries.tsv').read_text().splitlines()
    (folder / 'queries.tsv').write_text(''.join(
        (line.split('\t')[0] + '\tzzqx yywv\n') if i < count else line + '\n' for i, line in enumerate(lines)))
    return garen.LocalDataset(folder), [line.split('\t')[0] for line in lines[:count]]
