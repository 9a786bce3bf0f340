"""GAREN vs. its baselines in one pt.Experiment, on the CPU default components (MiniLM, extractive summaries).

The same as ``python -m pyterrier_garen compare`` (every option: ``--help``):

    python examples/compare.py                          # offline synthetic collection (seconds; not a benchmark)
    python examples/compare.py --dataset ../shared/data/scifact --out scifact.csv
    python examples/compare.py --dataset irds:beir/scifact/test --budget 100

Offline artifacts (BM25 index, vectors, graph, groups) are built once under $GAREN_CACHE (default
~/.cache/pyterrier-garen) and reused.
"""
import os
import sys

os.environ.setdefault('HF_HUB_OFFLINE', '1')

from pyterrier_garen.__main__ import main  # noqa: E402

if __name__ == '__main__':
    main(['compare', *sys.argv[1:]])
