"""What a user sees when the Ray actors cannot be built, on a real local cluster started by the job itself (in a
child process, as the command line runs it): an engine or an encoder the driver can look up is refused before any
actor starts, what only an actor can find is one line, and neither prints Ray's tracebacks (the actor's traceback
and Ray Data's came to ~390 lines before). Marked ``ray``."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.ray]
pytest.importorskip('ray', reason="Ray is not installed (pip install 'pyterrier-garen[ray]')")

TESTS = Path(__file__).parent

SCRIPT = r'''
import json, sys
from pyterrier_garen._errors import command_errors
from pyterrier_garen._ray import EngineSpec, RayOptions, summarize_batches

class NoModel:
    """Known only where the actor runs: the model is not on its node."""
    def __init__(self, model, **kwargs):
        raise ValueError(f'no model {model!r} on this node; download it first')

GROUPS = [[{'group': 0, 'docs': [{'text': 'a'}]}]]
OPTIONS = dict(workers=1, init_kwargs={'num_cpus': 1, 'include_dashboard': False,
                                       'object_store_memory': 128 * 1024 ** 2})
for spec, options in ((EngineSpec('no_such_mod_zz:Engine', model='m'), RayOptions(**OPTIONS)),
                      (EngineSpec('openai', model='m'), RayOptions(num_cpus=64, **OPTIONS))):
    try:
        list(summarize_batches(spec, GROUPS, options=options))
    except ValueError as ex:
        print(json.dumps([type(ex).__name__, str(ex)]), flush=True)
with command_errors():  # as the command line ends: one line 'error: ...', exit status 2
    list(summarize_batches(EngineSpec(NoModel, model='m'), GROUPS, options=RayOptions(**OPTIONS)))
'''


def test_actors_that_cannot_be_built_are_one_line_each_without_ray_tracebacks(tmp_path):
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join([str(TESTS.parent)] + ([os.environ['PYTHONPATH']]
                                                                              if os.environ.get('PYTHONPATH') else [])),
           'RAY_ADDRESS': '', 'HF_HUB_OFFLINE': '1'}
    done = subprocess.run([sys.executable, '-c', SCRIPT], env=env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    names = "['openai', 'transformers', 'vllm']"
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        ['ValueError', f"no module 'no_such_mod_zz' (from engine 'no_such_mod_zz:Engine'); use one of {names}, an "
                       'Engine class, or a "package.module:Class" path'],
        ['RayResourceError', 'each Ray actor asks for 64 CPUs (num_cpus=64), but the local Ray cluster started for '
                             'this job has 1, so no actor could start; ask for at most 1 (num_cpus=...)']]
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: a Ray actor could not build the summariser SummarizerSpec(EngineSpec('NoModel', model='m')): "
        "ValueError: no model 'm' on this node; download it first (each actor builds its own where it runs: on a "
        "cluster, install or fix it on the cluster's nodes)")
    assert 'Traceback' not in done.stderr + done.stdout
    assert 'raise' not in done.stderr + done.stdout
