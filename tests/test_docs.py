"""Docs that cannot rot: runnable snippets of README.md, docs/*.md and the pt_docs pages are executed, the pt_docs
pages build with Sphinx, and every relative link points at a file in the repository.

A Markdown block is runnable when its info string is ``python runnable``; an rst block when its ``code-block``
has ``:class: runnable``. The blocks of one page run in order in one namespace, in an empty working folder, with
``$GAREN_CACHE`` pointed at the test cache (so the shared Cranfield artifacts are built once per session).
"""
import re
import textwrap
import warnings
from pathlib import Path

import pytest
from _scripts import load_script

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / 'README.md'
PT_DOCS = ROOT / 'pyterrier_garen' / 'pt_docs'
MARKDOWN = [README, *sorted((ROOT / 'docs').glob('*.md'))]
RST = sorted(PT_DOCS.glob('*.rst'))
# text that must never reach a user's terminal (third-party noise the project filters at its source)
NOISE = ('Pipeline Validation Report', 'NumPy array is not writable', 'Loading weights')
BARS = ('encoding documents', 'k-NN graph', 're-partitioning large groups', 'summarising groups')


def markdown_blocks(path):
    return re.findall(r'^```python runnable\n(.*?)^```', path.read_text(), flags=re.S | re.M)


def rst_blocks(path):
    blocks = []
    pattern = r'^\.\. code-block:: python\n((?:[ ]+:[\w-]+:.*\n)*)\n((?:[ ]+.*\n|\n)+)'
    for options, body in re.findall(pattern, path.read_text(), flags=re.M):
        if re.search(r':class:.*\brunnable\b', options):
            blocks.append(textwrap.dedent(body))
    return blocks


def _blocks(path):
    return markdown_blocks(path) if path.suffix == '.md' else rst_blocks(path)


PAGES = [p for p in MARKDOWN + RST if _blocks(p)]


@pytest.fixture
def docs_env(cranfield, work_dir, monkeypatch, tmp_path):
    monkeypatch.setenv('GAREN_CACHE', str(work_dir))
    monkeypatch.setenv('GAREN_DATA', str(cranfield.path.parent))
    cwd = tmp_path / 'cwd'
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def run_page(path, cwd, capfd):
    scope = {'__name__': '__main__'}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        for number, code in enumerate(_blocks(path), start=1):
            exec(compile(code, f'{path.name} (runnable block {number})', 'exec'), scope)  # noqa: S102
    out, err = capfd.readouterr()
    for w in caught:  # deprecations inside third-party code are hidden from users by default; nothing else is
        assert not issubclass(w.category, UserWarning), f'{path.name}: {w.category.__name__}: {w.message}'
        assert not any(n in str(w.message) for n in NOISE), f'{path.name}: {w.category.__name__}: {w.message}'
    for line in re.split(r'[\r\n]+', err):
        assert not line.strip() or line.lstrip().startswith(BARS), f'{path.name} wrote to stderr: {line!r}'
    assert not list(cwd.iterdir()), f'{path.name} wrote into the working folder: {list(cwd.iterdir())}'
    return scope, out


def test_there_are_runnable_pages():
    assert README in PAGES
    assert {p.name for p in PAGES} >= {'index.rst', 'artifacts.rst', 'online.rst', 'llm.rst', 'analysis.rst'}


@pytest.mark.parametrize('path', PAGES, ids=[p.name for p in PAGES])
def test_runnable_snippets(path, docs_env, capfd):
    run_page(path, docs_env, capfd)


def test_readme_quick_start_prints_a_table(docs_env, capfd):
    code = markdown_blocks(README)[0]
    assert code.rstrip().splitlines()[-1].startswith('print(')  # a script shows its result
    assert 'garen.prepare(dataset, verbose=True)' in code  # artifacts under the cache, progress shown
    scope, out = run_page(README, docs_env, capfd)
    assert list(scope['results'].name) == ['BM25', 'GAR', 'GAREN']
    assert scope['results']['R@100'].between(0, 1).all()
    assert re.search(r'^\s*\d+\s+GAREN\s+[0-9.]+\s+[0-9.]+', out, flags=re.M), out[-2000:]


def test_readme_names_exist():
    import pyterrier_garen
    text = README.read_text()
    for name in re.findall(r'garen\.([A-Za-z_]+)\(', text):
        assert hasattr(pyterrier_garen, name), name


@pytest.mark.parametrize('path', MARKDOWN + RST, ids=[p.name for p in MARKDOWN + RST])
def test_links_point_into_the_repository(path):
    text = path.read_text()
    assert 'DESIGN.md' not in text  # not part of the repository
    links = re.findall(r'\]\(([^)#\s]+)(?:#[^)]*)?\)', text) + re.findall(r':doc:`(?:[^<`]*<)?([^>`]+)>?`', text)
    for link in links:
        if re.match(r'[a-z]+://', link):
            continue
        base = path.parent / link
        assert base.exists() or base.with_suffix('.rst').exists(), f'{path.name} links to missing {link}'


@pytest.mark.parametrize('path', MARKDOWN, ids=[p.name for p in MARKDOWN])
def test_no_code_block_is_empty(path):
    """A fenced block holds something: an empty one is a table or an output that was meant to be pasted."""
    blocks = re.findall(r'^```[^\n]*\n(.*?)^```', path.read_text(), flags=re.M | re.S)
    empty = [i for i, block in enumerate(blocks) if not block.strip()]
    assert not empty, f'{path.name}: fenced blocks {empty} (counted from 0) are empty'


@pytest.mark.filterwarnings('ignore:The mapping interface for autodoc options')
def test_pt_docs_build_with_sphinx(tmp_path):
    pytest.importorskip('sphinx', reason='the test extra (sphinx) is not installed')
    from sphinx.cmd.build import build_main
    conf = tmp_path / 'conf'
    conf.mkdir()
    (conf / 'conf.py').write_text("project = 'pyterrier-garen'\n"
                                  "extensions = ['sphinx.ext.autodoc', 'sphinx.ext.napoleon']\n"
                                  "autodoc_typehints = 'none'\n")
    log = tmp_path / 'warnings.txt'
    status = build_main(['-b', 'html', '-q', '-c', str(conf), '-d', str(tmp_path / 'doctrees'), '-w', str(log),
                         str(PT_DOCS), str(tmp_path / 'html')])
    warnings_text = log.read_text()
    assert status == 0, warnings_text
    assert not warnings_text.strip(), warnings_text
    for page in RST:
        assert (tmp_path / 'html' / f'{page.stem}.html').is_file()


# ---------------------------------------------------------------------------------------------------------------------
# docs that cannot drift: generated blocks, options, paths (docs/regen.py)

def _regen():
    return load_script('docs/regen.py')


@pytest.mark.slow  # about 60 s: .ci/run's slow tier runs it
def test_generated_blocks_match_a_fresh_run():
    """Every cheap ``<!-- generated: CMD -->`` block holds what CMD prints now (python docs/regen.py rewrites them;
    its scripts run in this interpreter here, ``python docs/regen.py --check`` runs each in a fresh one)."""
    regen = _regen()
    found = 0
    for page in regen.PAGES:
        for _, slow, command, body in regen.blocks(page.read_text()):
            found += 1
            if not slow:
                assert body == regen.run(command, in_process=True), \
                    f'{page.name}: rerun `python docs/regen.py` ({command})'
    assert found >= 3


def test_generated_signature_is_the_code_s():
    import inspect

    import pyterrier_garen
    text = README.read_text()
    shown = re.search(r'`GAREN\((.*?)\)`', text, flags=re.S).group(1)
    names = [p.split('=')[0].strip() for p in shown.replace('\n', ' ').split(',') if p.strip() != '*']
    assert names == [p for p in inspect.signature(pyterrier_garen.GAREN).parameters if p != 'self']


def _command_options():
    from pyterrier_garen.__main__ import build_parser
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == '_SubParsersAction')
    return {name: {o for a in p._actions for o in a.option_strings} for name, p in sub.choices.items()}


@pytest.mark.parametrize('path', MARKDOWN + RST, ids=[p.name for p in MARKDOWN + RST])
def test_command_lines_in_the_docs_exist(path):
    """``python -m pyterrier_garen CMD --option`` in the docs: CMD is a command and every option is one of its."""
    commands = _command_options()
    for line in path.read_text().splitlines():
        for match in re.finditer(r'(?:python -m pyterrier_garen|pyterrier-garen) ([a-z][\w-]*)([^`|]*)', line):
            command = match.group(1)
            assert command in commands, f'{path.name}: unknown command {command!r} in {line.strip()!r}'
            for option in re.findall(r'(?<![\w-])(--[a-z][\w-]*)', match.group(2)):
                assert option in commands[command], f'{path.name}: {command} has no {option} ({line.strip()!r})'


@pytest.mark.parametrize('path', MARKDOWN + RST, ids=[p.name for p in MARKDOWN + RST])
def test_paths_in_the_docs_exist(path):
    """Repository paths the docs name in backticks (``bench/encode.py``, ``docs/llm.md``, ...) exist."""
    text = path.read_text()
    for name in re.findall(r'`((?:docs|bench|examples|notebooks|tests|pyterrier_garen|\.ci)/[\w./-]*\w)`', text):
        assert (ROOT / name).exists(), f'{path.name} names {name}, which does not exist'
    assert not re.search(r'pyterrier-garen/cranfield(?![-\w])', text), \
        f'{path.name}: the workdir is <collection>-<fingerprint>'
    assert "pip install 'pyterrier-garen[" not in text.replace("once it is, `pip install 'pyterrier-garen[", ''), \
        f'{path.name}: the package is not on PyPI; from a clone it is pip install -e ".[extra]"'


# ---------------------------------------------------------------------------------------------------------------------
# figures from saved outputs: README blocks render files that bench scripts and compare write (--json)

def _saved_outputs():
    """``(page, option, path)`` of every ``python docs/regen.py --bench|--compare|--compare-output PATH...`` block."""
    regen = _regen()
    found = []
    for page in regen.PAGES:
        for _, _, command, _ in regen.blocks(page.read_text()):
            match = re.fullmatch(r'python docs/regen\.py --(bench|compare|compare-output) (.+)', command)
            if match:
                found += [(page.name, match.group(1), p) for p in match.group(2).split()]
    return found


def test_saved_outputs_name_the_command_that_rewrites_them():
    """Each saved output names the command that wrote it, which writes that very file again (``--json PATH``)."""
    import json
    outputs = _saved_outputs()
    assert {o for _, o, _ in outputs} == {'bench', 'compare', 'compare-output'}
    assert len(outputs) >= 10
    options = _command_options()
    for page, _, path in outputs:
        record = json.loads((ROOT / path).read_text())
        assert re.fullmatch(r'\d{4}-\d\d-\d\d', record['date']), (page, path)
        command = record['command']
        assert re.search(rf'--json {re.escape(path)}(\s|$)', command), f'{path}: {command!r} writes another file'
        script = re.match(r'python (bench/\w+\.py|examples/\w+\.py|-m pyterrier_garen compare) ', command)
        assert script, f'{path}: {command!r} is not a bench script, an example or compare'
        if script.group(1).endswith('.py'):
            assert "'--json'" in (ROOT / script.group(1)).read_text(), f'{script.group(1)} has no --json option'
        else:
            assert '--json' in options['compare']


def test_a_saved_output_renders_as_written(tmp_path, monkeypatch):
    """bench/_record.py's file, rendered by docs/regen.py --bench: the command, date and load, the caption, the
    table in each column's format (thousands separators, fixed decimals, a dash for a missing value), the lines."""
    import sys
    monkeypatch.syspath_prepend(str(ROOT / 'bench'))
    sys.modules.pop('_record', None)
    from _record import save
    regen = _regen()
    path = save(tmp_path / 'x.json', caption='two sizes', command='python bench/x.py --json X',
                columns=[('docs', 'docs', ','), ('CPU s', 'cpu', '.2f'), ('name', 'name', '')],
                rows=[{'docs': 400000, 'cpu': 36.4, 'name': 'a'}, {'docs': 1000000, 'cpu': None, 'name': 'b'}],
                lines=['One line.'])
    record = __import__('json').loads(path.read_text())
    monkeypatch.setattr(regen, 'ROOT', tmp_path)
    assert regen.render_bench('x.json') == (
        f"`python bench/x.py --json X` ({record['date']}; load average {record['load_average']} on "
        f"{record['cores']} cores; code {record['code']}): two sizes\n\n| docs | CPU s | name |\n|---|---|---|\n"
        "| 400,000 | 36.40 | a |\n"
        "| 1,000,000 | — | b |\n\nOne line.")


def test_performance_and_results_state_no_figure_of_their_own():
    """Outside the generated blocks (and code), the README's Performance and Measured results sections quote no
    measured figure: decimals, percentages, ratios and counts come from the saved outputs."""
    regen = _regen()
    text = README.read_text()
    for title in ('## Performance', '## Measured results'):
        section = text[text.index(title):]
        section = section[:section.index('\n## ', 1)]
        bare = regen.BLOCK.sub('', section)
        bare = re.sub(r'`[^`]*`', '', re.sub(r'^```.*?^```', '', bare, flags=re.S | re.M))
        for allowed in ('k1=0.9', 'b=0.4', '1e-4', 'ef 64', '200,000', 'k=16', 'Qwen3-Reranker-4B', '80B'):
            bare = bare.replace(allowed, '')
        figures = re.findall(r'\d+\.\d+|\d+(?:,\d{3})+|\d+\s*%|×\s*\d|\bp\s*=\s*\d|\d+ (?:µs|ms|s|GB|CPU-s)\b',
                             bare)
        assert not figures, f'{title}: figures outside generated blocks: {figures}'


@pytest.mark.parametrize(('what', 'pattern'), [
    ('a user\'s own encoder', r'garen\.prepare\(dataset, encoder='),
    ('an interrupted encoding that resumes', r'raise KeyboardInterrupt[\s\S]*except KeyboardInterrupt[\s\S]*prepare\('),
    ('a cross-encoder inside GAREN', r'CrossEncoderScorer\([\s\S]*\.garen\('),
    ('sharing without a network', r'build_package\([\s\S]*load_package\([\s\S]*pt\.Artifact\.load\('),
])
def test_issue_19_done_when_is_shown_by_a_runnable_snippet(what, pattern):
    """Issue 19's user stories each have a snippet that ``test_runnable_snippets`` executes."""
    assert any(re.search(pattern, code) for page in PAGES for code in _blocks(page)), f'no runnable snippet: {what}'


def _python_snippets(path):
    """Every Python code block (runnable or not) and every inline code span of a page that parses as Python."""
    import ast
    text = path.read_text()
    if path.suffix == '.md':
        pieces = re.findall(r'^```python[^\n]*\n(.*?)^```', text, flags=re.S | re.M) + re.findall(r'`([^`\n]+)`', text)
    else:
        pieces = [textwrap.dedent(b) for _, b in re.findall(
            r'^\.\. code-block:: python\n((?:[ ]+:[\w-]+:.*\n)*)\n((?:[ ]+.*\n|\n)+)', text, flags=re.M)]
        pieces += re.findall(r'``([^`\n]+)``', text)
    trees = []
    for piece in pieces:
        try:
            trees.append(ast.parse(piece.replace('...', 'x')))
        except SyntaxError:
            continue
    return trees


def _accepts(obj, keywords):
    import inspect
    try:
        params = inspect.signature(obj).parameters
    except (TypeError, ValueError):
        return []
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return []
    return [k for k in keywords if k not in params]


@pytest.mark.parametrize('path', MARKDOWN + RST, ids=[p.name for p in MARKDOWN + RST])
def test_calls_in_the_docs_exist(path):
    """``garen.NAME(...)`` and ``groups.METHOD(...)`` in the docs' code (blocks and inline): the name exists and
    takes every keyword shown."""
    import ast

    import pyterrier_garen
    owners = {'garen': pyterrier_garen, 'pyterrier_garen': pyterrier_garen,
              'groups': pyterrier_garen.GroupCorpusGraph, 'prepared.groups': pyterrier_garen.GroupCorpusGraph}
    problems = []
    for tree in _python_snippets(path):
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            owner = ast.unparse(node.func.value)
            if owner not in owners:
                continue
            target = getattr(owners[owner], node.func.attr, None)
            if target is None:
                problems.append(f'{owner}.{node.func.attr} does not exist')
                continue
            wrong = _accepts(target, [k.arg for k in node.keywords if k.arg])
            problems += [f'{owner}.{node.func.attr}() takes no {k}=' for k in wrong]
    assert not problems, f'{path.name}: {problems}'


def _fusion_options():
    """The options ``analysis.add_fusion_arguments`` gives a script that calls it (strength_sweep.py)."""
    import argparse

    from pyterrier_garen.analysis import add_fusion_arguments
    parser = argparse.ArgumentParser()
    add_fusion_arguments(parser)
    return {o for action in parser._actions for o in action.option_strings}


@pytest.mark.parametrize('path', MARKDOWN + RST, ids=[p.name for p in MARKDOWN + RST])
def test_script_options_in_the_docs_exist(path):
    """``python bench/x.py --option`` / ``python examples/x.py --option`` in the docs: the script exists and defines
    every option shown."""
    for line in path.read_text().splitlines():
        for script, rest in re.findall(r'python ((?:bench|examples|notebooks|docs)/[\w/]+\.py)([^`|;]*)', line):
            assert (ROOT / script).is_file(), f'{path.name}: {script} does not exist'
            source = (ROOT / script).read_text()
            for sibling in re.findall(r'^from (\w+) import', source, re.M):  # options a sibling script adds
                if (ROOT / script).with_name(f'{sibling}.py').is_file():
                    source += (ROOT / script).with_name(f'{sibling}.py').read_text()
            forwards = re.search(r"main\(\['([\w-]+)', \*sys\.argv\[1:\]\]\)", source)  # a command's alias
            for option in re.findall(r'(?<![\w-])(--[a-z][\w-]*)', rest):
                known = option in _command_options()[forwards.group(1)] if forwards else \
                    f"'{option}'" in source or ('add_fusion_arguments(' in source and option in _fusion_options())
                assert known, f'{path.name}: {script} has no {option} ({line.strip()!r})'


@pytest.mark.slow
def test_saved_model_call_counts_match_a_fresh_run(vaswani, tmp_path):
    """The one saved bench output that is deterministic: model calls of bench/model_calls.py (no latency needed)."""
    import json
    import subprocess
    import sys
    saved = json.loads((ROOT / 'bench/results/model_calls.json').read_text())
    out = tmp_path / 'calls.json'
    subprocess.run([sys.executable, 'bench/model_calls.py', '--latency', '0', '--json', str(out)], cwd=ROOT,
                   check=True, capture_output=True, env={**__import__('os').environ, 'PYTHONPATH': str(ROOT)})
    fresh = json.loads(out.read_text())
    assert [r['model calls'] for r in fresh['rows']] == [r['model calls'] for r in saved['rows']]
    assert fresh['lines'][0].split(', ')[0] == saved['lines'][0].split(', ')[0]  # calls per model, rows per call


def test_saved_runs_name_their_packages_and_the_line_under_a_table_says_them():
    """``package_versions`` reads installed metadata (an absent distribution is left out, nothing is imported), and
    ``docs/regen.py`` writes one line of them under a table: versions that differ between runs joined, the bfloat16
    sentence only when every run says the same, nothing at all for runs that recorded no packages."""
    import numpy
    from pyterrier_garen._provenance import package_versions
    assert package_versions(['numpy', 'no-such-distribution-here']) == {'numpy': numpy.__version__}
    regen = _regen()
    runs = [{'packages': {'torch': '2.13.0', 'numpy': '2.4.6'}, 'cpu_native_bf16': True},
            {'packages': {'torch': '2.14.1', 'numpy': '2.4.6'}, 'cpu_native_bf16': True}]
    line = regen._packages(runs)
    assert line.endswith(': torch 2.13.0, 2.14.1, numpy 2.4.6. Fresh MiniLM vectors there were encoded with '
                         "bfloat16 matrix products (a CPU with native bfloat16, `precision='auto'`).")
    runs[1]['cpu_native_bf16'] = False
    assert regen._packages(runs).endswith('numpy 2.4.6. The runs differ in whether fresh MiniLM vectors took bfloat16.')
    runs[0]['cpu_native_bf16'] = runs[1]['cpu_native_bf16'] = None
    assert regen._packages(runs).endswith('numpy 2.4.6.')
    assert regen._packages([{'rows': []}]) == ''
    # where every run recorded how its vectors were encoded (compare's run.vectors_precision), that is said instead
    runs = [{'packages': {'numpy': '2.4.6'}, 'cpu_native_bf16': False, 'run': {'vectors_precision': 'bf16'}},
            {'packages': {'numpy': '2.4.6'}, 'cpu_native_bf16': False, 'run': {'vectors_precision': 'bf16'}}]
    assert regen._packages(runs).endswith('numpy 2.4.6. The MiniLM vectors of these runs were encoded with bfloat16 '
                                          'matrix products (as recorded with the vectors).')
    runs[1]['run']['vectors_precision'] = 'fp32'
    assert regen._packages(runs).endswith('encoded with bfloat16 matrix products / in float32 (as recorded with the '
                                          'vectors).')
    runs[1]['run']['vectors_precision'] = None  # one run without the record: the CPU's sentence again
    assert regen._packages(runs).endswith('numpy 2.4.6. Fresh MiniLM vectors there were encoded in float32 (no native '
                                          'bfloat16).')
    import json
    for name in ('cranfield', 'scifact', 'vaswani'):  # the README's runs say what they ran with
        record = json.loads((ROOT / 'bench' / 'results' / f'compare-{name}.json').read_text())
        assert {'torch', 'transformers', 'leidenalg', 'pyterrier'} <= set(record['packages']), name
        assert record['cpu_native_bf16'] in (True, False), name


def test_a_block_run_in_process_prints_what_a_fresh_interpreter_prints():
    regen = _regen()
    command = 'python docs/regen.py --signature GAREN | sed -n 1p'
    here = regen.run(command, in_process=True)
    assert here == regen.run(command)
    assert here.startswith('`GAREN(')
    assert here.count('\n') == 1
    with pytest.raises(RuntimeError, match=r"(?s)failed \(2\).*unrecognized arguments: --no-such"):
        regen.run('python docs/regen.py --no-such', in_process=True)
