"""Shared by the sweep tests: the example script loaded as a module, and the small synthetic collection."""
import importlib.util
from pathlib import Path

import pyterrier_garen as garen
from pyterrier_garen.synthetic import make_synthetic

EXAMPLE = Path(__file__).resolve().parents[1] / 'examples' / 'strength_sweep.py'


def load_example():
    spec = importlib.util.spec_from_file_location('strength_sweep', EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def small_collection(root: Path):
    """The synthetic collection, small (160 docs, 16 queries), with a BM25 graph: no MiniLM needed (seconds)."""
    dataset = make_synthetic(root / 'collection', docs_per_topic=10, queries_per_topic=1)
    return root, garen.prepare(dataset, root / 'work', graph='bm25', vectors=False)
