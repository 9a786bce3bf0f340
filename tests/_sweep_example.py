"""Shared by the sweep tests: the example script loaded as a module, and the small synthetic collection."""
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
