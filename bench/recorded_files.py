"""What checking an artifact's recorded files (garen_files.json) costs on each reuse, on a collection's full size.

Builds, in --out, the four artifacts prepare reuses with their records: a PISA index, vectors of 384 float32 per
document (MiniLM's size, from a hashing encoder, so no model is loaded), the dense k=16 graph over them and the BM25
k=16 graph; then times check_recorded_files on each (best of five; the files are in the page cache).

    python bench/recorded_files.py --dataset ../shared/data/vaswani --out /tmp/recorded
"""
import argparse
import hashlib
import json
import shutil
import time
from pathlib import Path

import numpy as np

from pyterrier_garen import LocalDataset
from pyterrier_garen._checks import check_recorded_files
from pyterrier_garen._graphs import bm25_corpus_graph, bm25_index, dense_corpus_graph, encode_corpus


class HashingEncoder:
    """A vector per text from a generator seeded by the text's hash: MiniLM's size, no model."""
    model_name = 'hashing-384'

    def encode_docs(self, texts, batch_size=None):
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], 'little') for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(384).astype(np.float32) for s in seeds])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--dataset', required=True, help='a collection folder (docs.jsonl, queries.tsv, qrels.txt)')
    parser.add_argument('--out', required=True, help='a folder for the artifacts (replaced)')
    args = parser.parse_args(argv)
    out = Path(args.out)
    shutil.rmtree(out, ignore_errors=True)
    dataset = LocalDataset(args.dataset)
    index = bm25_index(dataset, out / 'bm25.pisa')
    bm25_corpus_graph(dataset, out / 'bm25.k16.graph', index=index, k=16)
    flex = encode_corpus(dataset, out / 'v.flex', encoder=HashingEncoder(), verbose=False, precision='fp32')
    dense_corpus_graph(flex, k=16)
    artifacts = {'PISA index': out / 'bm25.pisa', 'vectors': out / 'v.flex',
                 'dense graph': out / 'v.flex' / 'corpusgraph_k16', 'BM25 graph': out / 'bm25.k16.graph'}
    total_bytes = total_seconds = 0.0
    for what, path in artifacts.items():
        files = json.loads((path / 'garen_files.json').read_text())['files']
        size = sum(entry['size'] for entry in files.values())
        times = []
        for _ in range(5):
            start = time.perf_counter()
            assert check_recorded_files(path, what)
            times.append(time.perf_counter() - start)
        total_bytes, total_seconds = total_bytes + size, total_seconds + min(times)
        print(f'{what:12s} {len(files):3d} files {size / 1e6:7.2f} MB  best {min(times) * 1e3:6.1f} ms')
    print(f'all four: {total_bytes / 1e6:.1f} MB in {total_seconds:.3f} s')


if __name__ == '__main__':
    main()
