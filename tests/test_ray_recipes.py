"""The Ray module without a cluster: recipes, options, the missing-extra error, refusals (fast, default tier)."""
import sys

import pytest

from pyterrier_garen import ExtractiveSummarizer, LLMSummarizer, RayOptions, SummarizerSpec
from pyterrier_garen._ray import EngineSpec, _ModelOnly, _import_ray, as_recipe, encode_docs, ray_options


def test_missing_ray_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, 'ray', None)  # makes `import ray` fail
    with pytest.raises(ImportError, match=r"pip install -e '\.\[ray\]'"):
        _import_ray()


def test_engine_spec_needs_a_model_and_hides_secrets():
    with pytest.raises(ValueError, match='model='):
        EngineSpec('vllm')
    spec = EngineSpec('openai', base_url='http://h:8000/v1', model='m', api_key='sk-secret-123')
    assert 'sk-secret-123' not in repr(spec)
    assert 'sk-secret-123' not in repr(spec.summarizer())
    assert "api_key='***'" in repr(spec)
    assert spec.model == 'm'


def test_unknown_engine_name_is_explained():
    with pytest.raises(ValueError, match='unknown engine'):
        EngineSpec('nope', model='m').build()


def test_summarizer_spec_config_without_building_the_engine():
    spec = EngineSpec('vllm', model='Qwen/Qwen3-4B').summarizer(max_tokens=128)
    config = spec.config()  # vLLM is not needed: only the model id is read
    assert config == LLMSummarizer(_ModelOnly('Qwen/Qwen3-4B'), max_tokens=128).config()
    assert config['model'] == 'Qwen/Qwen3-4B'
    assert config['max_tokens'] == 128


def test_recipes_and_refusals():
    from _stub_engine import StubEngine
    extractive = ExtractiveSummarizer(num_terms=5)
    assert as_recipe(extractive).config() == extractive.config()
    spec = EngineSpec('vllm', model='m')
    assert isinstance(as_recipe(spec), SummarizerSpec)
    with pytest.raises(TypeError, match='live engine'):
        as_recipe(LLMSummarizer(StubEngine()))
    with pytest.raises(TypeError, match='EngineSpec'):
        SummarizerSpec(StubEngine())
    with pytest.raises(TypeError, match='factory'):
        encode_docs([], factory=ExtractiveSummarizer(), options=RayOptions())


def test_ray_options():
    assert ray_options(None) is None
    assert ray_options(False) is None
    assert ray_options(True) == RayOptions()
    assert ray_options('auto').address == 'auto'
    assert ray_options(RayOptions(workers=3), workers=None).workers == 3
    with pytest.raises(ValueError, match='workers'):
        RayOptions(workers=0)
    with pytest.raises(TypeError, match='ray='):
        ray_options(3)
    assert RayOptions(address='ray://h:10001', workers=4, num_gpus=1).describe() == {
        'address': 'ray://h:10001', 'workers': 4, 'num_cpus': 1, 'num_gpus': 1}
