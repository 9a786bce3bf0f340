"""Regenerate the generated blocks of README.md and docs/*.md from the commands they name.

A generated block is

    <!-- generated: COMMAND -->
    ...what COMMAND printed...
    <!-- end -->

(``<!-- generated (slow): COMMAND -->`` for commands that take minutes: benchmarks, full comparisons). COMMAND runs
in the repository root with the shell; its standard output replaces the block's body.

    python docs/regen.py            # rewrite the cheap blocks
    python docs/regen.py --slow     # ... and the slow ones too
    python docs/regen.py --check    # exit 1 listing the cheap blocks whose text differs from a fresh run

``docs/results.md``'s tables can be marked the same way (``<!-- generated (slow): python -m pyterrier_garen compare
--dataset cranfield --quiet -->``), so that ``--slow`` rewrites them from the command they name.

``tests/test_docs.py`` runs the cheap blocks' commands and fails when what is committed differs. The commands
this script offers itself (``--signature NAME``, ``--garen-plus``) print text derived from the code.

Benchmarks and full comparisons take minutes to hours, so their blocks render a saved output file instead:
``<!-- generated: python docs/regen.py --bench bench/results/NAME.json -->``. The file is written by the bench
script itself (``bench/_record.py``: the command line that wrote it, the date, the load average, the table's raw
values and the sentences the script derives from them); the block is cheap, so the test checks it against the
committed file, and rerunning the command the file names rewrites the file. To update a figure after changing the
code (e.g. ``bench/group_scale.py`` or ``bench/control_loop.py``):

    python bench/control_loop.py --repeat 5 --json bench/results/control_loop.json   # the command in the file
    python docs/regen.py                                                              # README blocks follow
    git add bench/results/control_loop.json README.md

(the exact command of each figure is the first line of its block in the README). Prose around a block states no
number of its own: what a run shows goes into the script's ``lines``. The README's results table and
``docs/results.md``'s comparison outputs come the same way from ``compare --json`` files (``--compare`` renders one
table of several runs, ``--compare-output`` what one run printed):

    python -m pyterrier_garen compare --dataset cranfield --quiet --json bench/results/compare-cranfield.json
    python docs/regen.py
"""
import argparse
import inspect
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / 'README.md', *sorted((ROOT / 'docs').glob('*.md'))]
BLOCK = re.compile(r'^<!-- generated(?P<slow> \(slow\))?: (?P<cmd>.+?) -->\n(?P<body>.*?)^<!-- end -->$',
                   flags=re.M | re.S)


def blocks(text):
    """``(match, slow, command, body)`` of every generated block in ``text``."""
    return [(m, bool(m.group('slow')), m.group('cmd'), m.group('body')) for m in BLOCK.finditer(text)]


def run(command: str, *, in_process: bool = False) -> str:
    """What ``command`` prints to standard output, run from the repository root.

    With ``in_process``, a ``python SCRIPT ARGS [| SHELL]`` command runs SCRIPT in this interpreter (as
    ``python SCRIPT`` would: ``__main__``, its folder first on ``sys.path``) and pipes what it printed through the
    shell part: the same text without starting an interpreter and importing pandas, scipy and the package again for
    each block (tests/test_docs.py checks some 45 blocks; a fresh process for each cost about two minutes).
    """
    if in_process:
        return _run_here(command)
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    if command.startswith('python '):
        command = f'"{sys.executable}" {command[len("python "):]}'
    proc = subprocess.run(command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True)  # noqa: S602
    if proc.returncode != 0:
        raise RuntimeError(f'{command!r} failed ({proc.returncode}): {proc.stderr[-2000:]}')
    out = proc.stdout
    return out if out.endswith('\n') else out + '\n'


def _run_here(command: str) -> str:
    import contextlib
    import io
    import runpy
    import shlex
    script, _, shell = command.partition(' | ')
    words = shlex.split(script)
    if len(words) < 2 or words[0] != 'python' or not words[1].endswith('.py'):
        return run(command)
    path = ROOT / words[1]
    out, err = io.StringIO(), io.StringIO()
    saved = sys.argv, list(sys.path), os.getcwd()
    try:
        sys.argv = [str(path), *words[2:]]
        sys.path.insert(0, str(path.parent))
        os.chdir(ROOT)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                runpy.run_path(str(path), run_name='__main__')
            except SystemExit as ended:
                if ended.code not in (None, 0):
                    raise RuntimeError(f'{command!r} failed ({ended.code}): {err.getvalue()[-2000:]}') from None
    finally:
        sys.argv, sys.path[:] = saved[0], saved[1]
        os.chdir(saved[2])
    text = out.getvalue()
    if shell:
        proc = subprocess.run(shell, shell=True, cwd=ROOT, input=text, capture_output=True, text=True)  # noqa: S602
        if proc.returncode != 0:
            raise RuntimeError(f'{shell!r} failed ({proc.returncode}): {proc.stderr[-2000:]}')
        text = proc.stdout
    return text if text.endswith('\n') else text + '\n'


def regenerate(path: Path, *, slow: bool = False, check: bool = False):
    """Rewrite (or with ``check``, compare) the blocks of one page; returns the commands whose text differed."""
    text = path.read_text()
    differ, pieces, last = [], [], 0
    for match, is_slow, command, body in blocks(text):
        pieces.append(text[last:match.start('body')])
        fresh = run(command) if (slow or not is_slow) else body
        if fresh != body:
            differ.append(command)
        pieces.append(fresh)
        last = match.end('body')
    pieces.append(text[last:])
    if not check and differ:
        path.write_text(''.join(pieces))
    return differ


# ---------------------------------------------------------------------------------------------------------------------
# text derived from the code
# ---------------------------------------------------------------------------------------------------------------------
def signature(name: str) -> str:
    """``Name(arg, ..., *, option=default, ...)`` wrapped at 116 characters, in backticks (a Markdown paragraph)."""
    import pyterrier_garen
    obj = getattr(pyterrier_garen, name)
    params = [p for p in inspect.signature(obj).parameters.values() if p.name != 'self']
    parts, star = [], False
    for p in params:
        if p.kind is p.KEYWORD_ONLY and not star:
            parts.append('*')
            star = True
        default = getattr(p.default, 'value', p.default)  # an Enum default shows as the value it accepts
        parts.append(p.name if p.default is p.empty else f'{p.name}={default!r}')
    lines, line = [], f'`{name}('
    for i, part in enumerate(parts):
        piece = part + (', ' if i < len(parts) - 1 else ')`')
        if len(line) + len(piece) > 116:
            lines.append(line.rstrip())
            line = ''
        line += piece
    lines.append(line)
    return '\n'.join(lines)


def _cell(value, spec: str) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return '—'
    return format(value, spec) if spec else str(value)


def render_bench(path) -> str:
    """The Markdown of a bench output file (``bench/_record.py``): its command, date and load, caption, table, lines."""
    import json
    record = json.loads((ROOT / path).read_text())
    where = f"{record['date']}; load average {record['load_average']} on {record['cores']} cores"
    if record.get('code'):
        where += f"; code {record['code']}"
    head = f"`{record['command']}` ({where}): {record['caption']}"
    if record.get('transcribed'):
        head += f" ({record['transcribed']})"
    out = [head, '']
    if record['columns']:
        out.append('| ' + ' | '.join(h for h, _, _ in record['columns']) + ' |')
        out.append('|' + '---|' * len(record['columns']))
        for row in record['rows']:
            out.append('| ' + ' | '.join(_cell(row.get(k), spec) for _, k, spec in record['columns']) + ' |')
    if record['lines']:
        out += ['', *record['lines']]
    return '\n'.join(out).rstrip('\n')


NAMES = {'scifact': 'SciFact', 'vaswani': 'Vaswani', 'cranfield': 'Cranfield'}


def _load(paths):
    import json
    return [json.loads((ROOT / p).read_text()) for p in paths]


def _collection(record) -> str:
    name = str(record['run']['collection'])
    return NAMES.get(name, name)


def _runs(records) -> list:
    return [f"`{r['command']}` ({r['date']}; load average {r['load_average']} on {r['cores']} cores"
            + (f"; code {r['code']}" if r.get('code') else '') + ')' for r in records]


def render_compare(paths) -> str:
    """One table of ``nDCG@10 / R@100`` per system and collection from ``compare --json`` files, the commands that
    wrote them, and the paired t-tests of GAR against GAREN."""
    records = _load(paths)
    systems = list(dict.fromkeys(row['name'] for r in records for row in r['rows']))
    cell = {(_collection(r), row['name']): row for r in records for row in r['rows']}

    def fmt(v):
        return f'{v:.3f}'.lstrip('0') if v is not None else '—'
    out = ['Written by ' + '; '.join(_runs(records)) + '. nDCG@10 / R@100:', '',
           '| system | ' + ' | '.join(f"{_collection(r)} ({r['run']['queries']} q)" for r in records) + ' |',
           '|' + '---|' * (len(records) + 1)]
    for name in systems:
        row = [cell.get((_collection(r), name)) for r in records]
        out.append(f'| {name} | ' + ' | '.join(f"{fmt(c['nDCG@10'])} / {fmt(c['R@100'])}" if c else '—'
                                                for c in row) + ' |')
    tests = []
    for r in records:
        gar = cell.get((_collection(r), 'GAR'))
        if gar and gar.get('R@100 p-value') is not None:
            garen = cell[(_collection(r), 'GAREN')]
            side = 'higher' if gar['R@100'] > garen['R@100'] else 'lower'
            tests.append(f"{_collection(r)} {side}, p={gar['R@100 p-value']:.2g}")
    if tests:
        out += ['', "GAR's R@100 against GAREN's (two-sided paired t-test that `compare` prints): " + '; '.join(tests)
                + '.']
    packages = _packages(records)
    if packages:
        out += ['', packages]
    return '\n'.join(out)


def _packages(records) -> str:
    """The line naming the numerics packages the runs had (``compare --json`` records them), or ''."""
    seen = [r['packages'] for r in records if r.get('packages')]
    if not seen:
        return ''
    names = list(dict.fromkeys(n for p in seen for n in p))
    versions = [', '.join(sorted({p.get(n, '?') for p in seen})) for n in names]
    return ('Package versions of these runs (a figure can move with them and with the CPU, through the MiniLM vectors, '
            'their k-NN graph and the Leiden groups: docs/decisions.md, "Figures belong to the artifacts"): '
            + ', '.join(f'{n} {v}' for n, v in zip(names, versions)) + '.' + _precision(records))


def _precision(records) -> str:
    """The sentence saying how the runs' MiniLM vectors were encoded: as recorded with the vectors
    (``run.vectors_precision``) where every run has it, else what a fresh encoding on that CPU takes."""
    recorded = {(r.get('run') or {}).get('vectors_precision') for r in records}
    words = {'bf16': 'with bfloat16 matrix products', 'fp32': 'in float32',
             'auto': 'in the precision each Ray actor chose for its CPU'}
    if recorded and None not in recorded:
        how = ' / '.join(words.get(p, p) for p in sorted(recorded))
        return f' The MiniLM vectors of these runs were encoded {how} (as recorded with the vectors).'
    bf16 = {r.get('cpu_native_bf16') for r in records} - {None}
    if not bf16:
        return ''
    if bf16 == {True}:
        return (' Fresh MiniLM vectors there were encoded with bfloat16 matrix products (a CPU with native bfloat16, '
                "`precision='auto'`).")
    if bf16 == {False}:
        return ' Fresh MiniLM vectors there were encoded in float32 (no native bfloat16).'
    return ' The runs differ in whether fresh MiniLM vectors took bfloat16.'


def render_compare_output(path) -> str:
    """What ``compare`` printed (its header, table and legends, in a code block), rebuilt from its ``--json`` file by
    the same formatter."""
    import pandas as pd

    from pyterrier_garen._compare import format_comparison
    record, = _load([path])
    table = pd.DataFrame(record['rows'])
    table.attrs['run'] = record['run']
    table.attrs['labels'] = record['run'].get('labels')
    packages = _packages([record])
    return ('\n'.join(_runs([record])) + ':\n\n```\n' + format_comparison(table) + '\n```'
            + (f'\n\n{packages}' if packages else ''))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--slow', action='store_true', help='also run the slow blocks\' commands')
    parser.add_argument('--check', action='store_true', help='only compare; exit 1 when a cheap block differs')
    parser.add_argument('--signature', metavar='NAME', help='print the signature of pyterrier_garen.NAME')
    parser.add_argument('--garen-plus', action='store_true', help='print the GAREN+ legend line of compare')
    parser.add_argument('--bench', metavar='PATH', help='print the Markdown of a saved bench output file')
    parser.add_argument('--compare', nargs='+', metavar='PATH', help='print one table from compare --json files')
    parser.add_argument('--compare-output', metavar='PATH', help="print compare's own output from its --json file")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.signature:
        sys.stdout.write(signature(args.signature) + "\n")
        return 0
    for option, render in (('bench', render_bench), ('compare', render_compare),
                           ('compare_output', render_compare_output)):
        if getattr(args, option):
            sys.stdout.write(render(getattr(args, option)) + "\n")
            return 0
    if args.garen_plus:
        from pyterrier_garen._compare import garen_plus_legend
        sys.stdout.write(garen_plus_legend() + "\n")
        return 0
    stale = {}
    for page in PAGES:
        differ = regenerate(page, slow=args.slow, check=args.check)
        if differ:
            stale[page.relative_to(ROOT)] = differ
    for page, commands in stale.items():
        sys.stdout.write(f"{page}: {'differs' if args.check else 'regenerated'}: {'; '.join(commands)}\n")
    return 1 if (args.check and stale) else 0


if __name__ == '__main__':
    sys.exit(main())
