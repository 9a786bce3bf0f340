"""docs/architecture.md's module map names every module of the package (so it cannot silently fall behind)."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_module_map_names_every_module():
    text = (ROOT / 'docs' / 'architecture.md').read_text()
    package = ROOT / 'pyterrier_garen'
    modules = [p for p in package.glob('*.py') if p.name != '__init__.py'] + \
        [p for p in package.glob('*/*.py') if p.name != '__init__.py']
    missing = [str(p.relative_to(package)) for p in modules if f'`{p.name}`' not in text and
               f'{p.parent.name}/{p.name}' not in text]
    assert not missing, f'docs/architecture.md does not mention {missing}; add them to its module map'
