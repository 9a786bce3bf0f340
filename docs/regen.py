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


def run(command: str) -> str:
    env = {**os.environ, 'HF_HUB_OFFLINE': '1', 'PYTHONPATH': str(ROOT) + os.pathsep + os.environ.get('PYTHONPATH', '')}
    if command.startswith('python '):
        command = f'"{sys.executable}" {command[len("python "):]}'
    proc = subprocess.run(command, shell=True, cwd=ROOT, env=env, capture_output=True, text=True)  # noqa: S602
    if proc.returncode != 0:
        raise RuntimeError(f'{command!r} failed ({proc.returncode}): {proc.stderr[-2000:]}')
    out = proc.stdout
    return out if out.endswith('\n') else out + '\n'


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument('--slow', action='store_true', help='also run the slow blocks\' commands')
    parser.add_argument('--check', action='store_true', help='only compare; exit 1 when a cheap block differs')
    parser.add_argument('--signature', metavar='NAME', help='print the signature of pyterrier_garen.NAME')
    parser.add_argument('--garen-plus', action='store_true', help='print the GAREN+ legend line of compare')
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    if args.signature:
        sys.stdout.write(signature(args.signature) + "\n")
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
