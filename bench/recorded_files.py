"""What checking an artifact's recorded files (garen_files.json) costs on each reuse, on a collection's full size.

Builds, in a temporary folder (or --out, a new or empty folder, kept), the four artifacts prepare reuses with
their records: a PISA index, vectors of 384 float32 per
document (MiniLM's size, from a hashing encoder, so no model is loaded), the dense k=16 graph over them and the BM25
k=16 graph. Then it times reusing all four through the public builders with their records, and again with the
records removed (an artifact of an earlier version, reused unchecked): the difference is the check (best of five
each; the files are in the page cache).

    python bench/recorded_files.py --dataset ../shared/data/vaswani
"""
import argparse
import hashlib
import tempfile
import time
from pathlib import Path

import numpy as np

from pyterrier_garen import LocalDataset, bm25_corpus_graph, bm25_index, dense_corpus_graph, encode_corpus


class HashingEncoder:
    """A vector per text from a generator seeded by the text's hash: MiniLM's size, no model."""
    model_name = 'hashing-384'

    def encode_docs(self, texts, batch_size=None):
        seeds = [int.from_bytes(hashlib.sha256(t.encode()).digest()[:8], 'little') for t in texts]
        return np.stack([np.random.default_rng(s).standard_normal(384).astype(np.float32) for s in seeds])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--dataset', required=True, help='a collection folder (docs.jsonl, queries.tsv, qrels.txt)')
    parser.add_argument('--out', help='a new or empty folder to build the artifacts in, kept afterwards (default: a '
                                      'temporary folder, removed at the end)')
    args = parser.parse_args(argv)
    if args.out is None:
        with tempfile.TemporaryDirectory() as scratch:
            return measure(LocalDataset(args.dataset), Path(scratch))
    out = Path(args.out)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SystemExit(f'error: --out {out} exists and is not an empty folder; give a new one (this script builds '
                         'four artifacts there and never writes over what a folder holds)')
    return measure(LocalDataset(args.dataset), out)


def measure(dataset, out: Path) -> None:
    encoder = HashingEncoder()

    def reuse():
        index = bm25_index(dataset, out / 'bm25.pisa')
        bm25_corpus_graph(dataset, out / 'bm25.k16.graph', index=index, k=16)
        dense_corpus_graph(encode_corpus(dataset, out / 'v.flex', encoder=encoder, verbose=False, precision='fp32'),
                           k=16)

    def best(runs=5):
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            reuse()
            times.append(time.perf_counter() - start)
        return min(times)

    reuse()  # builds the four, each with its record
    records = [out / 'bm25.pisa', out / 'bm25.k16.graph', out / 'v.flex', out / 'v.flex' / 'corpusgraph_k16']
    size = sum(f.stat().st_size for r in records for f in r.rglob('*') if f.is_file() and f.parent == r)
    checked = best()
    for record in records:
        (record / 'garen_files.json').unlink()
    unchecked = best()
    print(f'reusing the four artifacts ({size / 1e6:.1f} MB of files): {checked:.3f} s with their records, '
          f'{unchecked:.3f} s without: the check costs {checked - unchecked:.3f} s')


if __name__ == '__main__':
    from pyterrier_garen import command_errors
    with command_errors():
        main()
