"""notebooks/analysis.ipynb is what notebooks/build.py writes: executed, on public names only, and free of ANSI
escapes (coloured pipeline dumps) and of the machine paths of whoever ran it."""
import json
import re
from pathlib import Path

import pytest
from _scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / 'notebooks' / 'analysis.ipynb'
MACHINE_PATH = re.compile(r'(/home/|/root/|/work/|/tmp/|/Users/|/private/var/|site-packages|[A-Z]:\\\\)')


@pytest.fixture(scope='module')
def notebook():
    return json.loads(NOTEBOOK.read_text())


def _text(value):
    return ''.join(value) if isinstance(value, list) else str(value)


def _outputs(cell):
    for out in cell.get('outputs', []):
        if 'text' in out:
            yield _text(out['text'])
        for mime, data in out.get('data', {}).items():
            if mime.startswith('text/') or mime == 'application/json':
                yield _text(data)
        if out.get('output_type') == 'error':
            yield '\n'.join(out.get('traceback', []))


def test_notebook_is_the_builders_output(notebook):
    build = load_script('notebooks/build.py')
    expected = [text.format(dataset='cranfield') for _, text in build.CELLS]
    assert [_text(c['source']) for c in notebook['cells']] == expected, 'rerun python notebooks/build.py'


def test_notebook_was_executed_without_errors(notebook):
    code = [c for c in notebook['cells'] if c['cell_type'] == 'code']
    assert code
    assert all(c.get('execution_count') for c in code)
    assert not [o for c in code for o in c.get('outputs', []) if o.get('output_type') == 'error']
    assert not [o for c in code for o in c.get('outputs', []) if o.get('name') == 'stderr'], 'stderr in outputs'
    assert any(o.get('data', {}).get('image/png') for c in code for o in c.get('outputs', []))


def test_no_ansi_escapes_or_machine_paths(notebook):
    for index, cell in enumerate(notebook['cells']):
        for text in [_text(cell['source']), *_outputs(cell)]:
            assert '\x1b[' not in text, f'cell {index}: ANSI escape in {text[:200]!r}'
            match = MACHINE_PATH.search(text)
            assert not match, f'cell {index}: machine path {text[max(0, match.start() - 60):match.end() + 60]!r}'


def test_public_names_only(notebook):
    for index, cell in enumerate(notebook['cells']):
        if cell['cell_type'] != 'code':
            continue
        source = _text(cell['source'])
        assert not re.search(r'pyterrier_garen\._\w+', source), f'cell {index}: private module'
        assert not re.search(r'garen\._\w+', source), f'cell {index}: private name'
        for module in re.findall(r'^\s*(?:from|import)\s+([\w.]+)', source, flags=re.M):
            assert not module.startswith('pyterrier_adaptive'), f'cell {index}: use the project names ({module})'
