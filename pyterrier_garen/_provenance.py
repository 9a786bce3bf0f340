"""Which code produced a result: the git commit and the numerics packages recorded beside saved measurements."""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Union

__all__ = ['code_version', 'package_versions', 'NUMERIC_PACKAGES']

#: Distributions whose versions can move a figure: the encoder's numerics (torch, transformers, tokenizers,
#: sentence-transformers), the k-NN graph and the partition (numpy, faiss, igraph, leidenalg), BM25 (PISA) and
#: the evaluation. MiniLM vectors that move slightly can change k-NN neighbours, then the Leiden groups.
NUMERIC_PACKAGES = ('torch', 'transformers', 'tokenizers', 'sentence-transformers', 'numpy', 'scipy', 'pandas',
                    'faiss-cpu', 'igraph', 'leidenalg', 'pyterrier', 'pyterrier-dr', 'pyterrier-pisa',
                    'pyterrier-adaptive', 'ir-measures')


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


def package_versions(names=None) -> dict:
    """``{distribution: version}`` of the installed :data:`NUMERIC_PACKAGES` (or ``names``); absent ones are left out.

    Read from the installed metadata, so nothing is imported (torch stays unloaded).
    """
    from importlib import metadata
    out = {}
    for name in (NUMERIC_PACKAGES if names is None else names):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out
