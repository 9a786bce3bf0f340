"""Tiny random BERT models built locally (no download); the builders live in ``pyterrier_garen.synthetic``."""
from pyterrier_garen.synthetic import tiny_bert as build_tiny_bert  # noqa: F401
from pyterrier_garen.synthetic import tiny_cross_encoder as build_tiny_cross_encoder  # noqa: F401
from pyterrier_garen.synthetic import tiny_sbert as build_tiny_sbert  # noqa: F401
