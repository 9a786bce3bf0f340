import subprocess
import sys

import pyterrier as pt
import pytest

import pyterrier_garen


def test_import_is_light():
    code = ('import sys, pyterrier_garen; '
            'heavy = [m for m in ("torch", "vllm", "igraph", "leidenalg", "openai", "sentence_transformers") '
            'if m in sys.modules]; print(",".join(heavy))')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == '', f'import pyterrier_garen pulled in: {out.stdout.strip()}'


def test_version():
    assert pyterrier_garen.__version__.count('.') == 2


@pytest.mark.parametrize('name', pyterrier_garen.__all__)
def test_public_names_resolve(name):
    assert getattr(pyterrier_garen, name) is not None


def test_unknown_name():
    with pytest.raises(AttributeError):
        pyterrier_garen.NoSuchThing  # noqa: B018


def test_artifact_entry_points_load():
    eps = [ep for ep in pt.utils.entry_points('pyterrier.artifact') if ep.value.startswith('pyterrier_garen')]
    assert [ep.name for ep in eps] == ['corpus_graph.garen_groups']
    for ep in eps:
        cls = ep.load()
        assert issubclass(cls, pt.Artifact)
        assert f'{cls.ARTIFACT_TYPE}.{cls.ARTIFACT_FORMAT}' == ep.name


def test_cli_help():
    out = subprocess.run([sys.executable, '-m', 'pyterrier_garen', '--help'], capture_output=True, text=True,
                         check=True)
    for command in ('build-graph', 'build-groups', 'summarize', 'prepare', 'show'):
        assert command in out.stdout
