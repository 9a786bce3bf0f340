"""Benchmark: corpus encoding with MiniLM, documents per CPU-second, the earlier path and today's side by side.

    python bench/encode.py                          # 256 Cranfield documents, one process
    python bench/encode.py --docs 300 --collection scifact --ray

On the same documents (the first --docs of the collection, title + text):

* ``before``: what ``encode_corpus`` did before (``minilm_encoder() >> FlexIndex(...).indexer()``: PyTerrier's
  batches of 100 documents, each sorted by length by sentence-transformers, float32);
* ``now``: ``encode_corpus`` (documents sorted by length across the corpus, chunks of 256 kept for resuming,
  bfloat16 autocast of the matrix products where the CPU has native bfloat16, AMX or AVX-512 BF16), once with
  ``precision='auto'`` and once with ``precision='fp32'``;
* with ``--ray``: the same two on a local Ray cluster (the earlier ``encode_docs`` actor pool vs chunked
  encoding), CPU time counted inside the actors around the encoder calls (model loading and Ray's own processes
  are not counted on either side).

CPU time (``time.process_time``), not wall time, is what is compared: the machine is shared. Each vector is
compared with the earlier path's vector of the same document (cosine); the script fails when any is below 0.9999.
"""
import argparse
import itertools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault('HF_HUB_OFFLINE', '1')
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

import pyterrier_garen as garen  # noqa: E402


class Head:
    """The first ``n`` documents of a collection."""

    def __init__(self, dataset, n):
        self.dataset, self.n = dataset, n

    def get_corpus_iter(self, verbose=False):
        return itertools.islice(self.dataset.get_corpus_iter(verbose=False), self.n)


class TimedEncoder:
    """Wraps an encoder; adds the CPU seconds of every encoding call to a per-process file (for Ray actors)."""

    def __init__(self, encoder, log):
        self.encoder, self.log, self.spent = encoder, log, 0.0

    def _timed(self, fn, *args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            self.spent += time.process_time() - start
            Path(self.log, f'{os.getpid()}.cpu').write_text(str(self.spent))

    def encode_docs(self, texts, batch_size=None):
        return self._timed(self.encoder.encode_docs, texts, batch_size=batch_size)

    def __call__(self, frame):
        return self._timed(self.encoder, frame)


class TimedFactory:
    def __init__(self, log):
        self.log = log

    def __call__(self):
        return TimedEncoder(garen.minilm_encoder(), self.log)


def actor_cpu(log):
    return sum(float(p.read_text()) for p in Path(log).glob('*.cpu'))


def vectors(index):
    return {d['docno']: np.asarray(d['doc_vec'], dtype=np.float32) for d in index.get_corpus_iter(verbose=False)}


def min_cosine(got, ref):
    keys = sorted(ref)
    a, b = np.stack([got[k] for k in keys]), np.stack([ref[k] for k in keys])
    return float(((a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)).min())


def _with_title(doc):
    title = (doc.get('title') or '').strip()
    return {'docno': doc['docno'], 'text': f"{title} {doc.get('text') or ''}" if title else doc.get('text') or ''}


def before_local(docs, path):
    import pyterrier_dr
    items = [_with_title(d) for d in docs.get_corpus_iter()]
    (garen.minilm_encoder() >> pyterrier_dr.FlexIndex(str(path), verbose=False).indexer()).index(items)
    return pyterrier_dr.FlexIndex(str(path), verbose=False)


def before_ray(docs, path, factory, workers):
    import pyterrier_dr
    items = [_with_title(d) for d in docs.get_corpus_iter()]
    indexer = pyterrier_dr.FlexIndex(str(path), verbose=False).indexer()
    indexer.index(garen.encode_docs(items, factory=factory, options=garen.RayOptions(workers=workers)))
    return pyterrier_dr.FlexIndex(str(path), verbose=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--collection', default='cranfield')
    parser.add_argument('--docs', type=int, default=256)
    parser.add_argument('--threads', type=int, default=None, help='torch threads (default: torch\'s own)')
    parser.add_argument('--ray', action='store_true', help='also the Ray path (a local cluster of --workers)')
    parser.add_argument('--workers', type=int, default=2)
    args = parser.parse_args()
    import torch
    if args.threads:
        torch.set_num_threads(args.threads)
    docs = Head(garen.LocalDataset(garen.data_dir(args.collection)), args.docs)
    garen.minilm_encoder()  # load the model once, outside the timings
    tmp = Path(tempfile.mkdtemp())
    rows = []
    try:
        def run(name, fn, cpu=None):
            start_cpu, start = time.process_time(), time.perf_counter()
            index = fn(tmp / name)
            spent = (cpu() if cpu else time.process_time() - start_cpu)
            rows.append((name, spent, time.perf_counter() - start, vectors(index)))
            print(f'{name}: {args.docs / spent:.1f} docs per CPU-second', file=sys.stderr, flush=True)

        run('before', lambda p: before_local(docs, p))
        run('now', lambda p: garen.encode_corpus(docs, p, verbose=False))
        run('now-fp32', lambda p: garen.encode_corpus(docs, p, verbose=False, precision='fp32'))
        if args.ray:
            import ray
            path = os.pathsep.join([str(Path(__file__).resolve().parents[1]), os.environ.get('PYTHONPATH', '')])
            ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False,
                     runtime_env={'env_vars': {'PYTHONPATH': path, 'HF_HUB_OFFLINE': '1'}})
            try:
                for name, fn in (('ray-before', lambda p, f: before_ray(docs, p, f, args.workers)),
                                 ('ray-now', lambda p, f: garen.encode_corpus(
                                     docs, p, encoder=f, verbose=False, ray=garen.RayOptions(workers=args.workers)))):
                    log = tmp / f'{name}.log'
                    log.mkdir()
                    run(name, lambda p, fn=fn, log=log: fn(p, TimedFactory(str(log))),
                        cpu=lambda log=log: actor_cpu(log))
            finally:
                ray.shutdown()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    ref = rows[0][3]
    base = {'before': rows[0][1]}
    print(f'\n{args.collection}, first {args.docs} documents; torch threads {torch.get_num_threads()}; native '
          f'bfloat16: {garen.native_bf16()}; load average {os.getloadavg()[0]:.1f}\n')
    print('| path | CPU s | docs per CPU-second | × before | wall s | min cosine to before |')
    print('|---|---|---|---|---|---|')
    worst = 1.0
    for name, spent, wall, vecs in rows:
        key = 'ray-before' if name.startswith('ray') else 'before'
        base.setdefault(key, spent)
        cos = min_cosine(vecs, ref)
        worst = min(worst, cos)
        print(f'| {name} | {spent:.2f} | {args.docs / spent:.1f} | {base[key] / spent:.2f} | {wall:.1f} | '
              f'{cos:.6f} |')
    if worst < 0.9999:
        raise SystemExit(f'a vector differs from the earlier path\'s by cosine {worst:.6f} < 0.9999')


if __name__ == '__main__':
    main()
