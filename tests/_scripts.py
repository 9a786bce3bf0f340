"""Load one of the repository's scripts (examples/, docs/, notebooks/) as a module, as the tests of those scripts do."""
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_script(path: str):
    """The script at ``path`` (relative to the repository root), executed as a fresh module named after its file."""
    spec = importlib.util.spec_from_file_location(Path(path).stem, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
