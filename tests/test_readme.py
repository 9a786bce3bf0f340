"""The README's Python quick start runs as written (paths pointed at the test collections and cache)."""
import re
from pathlib import Path

README = Path(__file__).resolve().parent.parent / 'README.md'


def test_readme_quick_start_runs(cranfield, work_dir):
    blocks = re.findall(r'```python\n(.*?)```', README.read_text(), flags=re.S)
    code = blocks[0]
    assert "garen.LocalDataset('../shared/data/cranfield')" in code
    code = code.replace("'../shared/data/cranfield'", repr(str(cranfield.path)))
    code = code.replace("'work/cranfield'", repr(str(work_dir / 'cranfield')))
    code = code.replace('pt.Experiment(', 'result = pt.Experiment(', 1)
    scope = {}
    exec(compile(code, str(README), 'exec'), scope)  # noqa: S102
    result = scope['result']
    assert list(result.name) == ['BM25', 'GAR', 'GAREN']
    assert result['R@100'].between(0, 1).all()


def test_readme_names_exist():
    import pyterrier_garen
    text = README.read_text()
    for name in re.findall(r'garen\.([A-Za-z_]+)\(', text):
        assert hasattr(pyterrier_garen, name), name
