"""Which code produced a result: the git commit recorded beside saved measurements."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

__all__ = ['code_version']


def code_version(root: Optional[Union[str, Path]] = None) -> str:
    """The git commit of a checkout (``+changes`` when its ``pyterrier_garen`` files differ from it), or ``'unknown'``.

    Args:
        root: the checkout to ask; by default the one this package was imported from.
    """
    import subprocess
    root = Path(__file__).resolve().parents[1] if root is None else Path(root)
    try:
        head = subprocess.run(['git', '-C', str(root), 'rev-parse', '--short=8', 'HEAD'], capture_output=True,
                              text=True, timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(['git', '-C', str(root), 'status', '--porcelain', '--untracked-files=no', '--',
                                'pyterrier_garen'], capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return 'unknown'
    return head + ('+changes' if dirty else '')
