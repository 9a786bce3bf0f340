"""The tiny model builder: single-token answers, a chat template, a scripted variant that really writes its script."""
import json

import pytest

pytest.importorskip('transformers', reason='the tiny model needs transformers (the cpu extra)')
torch = pytest.importorskip('torch', reason='the tiny model needs torch (the cpu extra)')

from pyterrier_garen.__main__ import main  # noqa: E402
from pyterrier_garen._tiny_model import TINY_MARKER, build_tiny_model  # noqa: E402


@pytest.fixture(scope='module')
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp('tiny')
    return build_tiny_model(root / 'random'), build_tiny_model(root / 'scripted', scripted=True,
                                                                  script='[3] > [1] > [2]')


def greedy(path, messages, max_new_tokens=12):
    from transformers import AutoModelForCausalLM, AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).eval()
    inputs = tokenizer.apply_chat_template(messages, add_generation_prompt=True, return_tensors='pt',
                                           return_dict=True)
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
    return tokenizer.decode(out[0, inputs['input_ids'].shape[1]:], skip_special_tokens=True), tokenizer


def test_answer_words_are_single_tokens_and_the_template_is_qwen_style(models):
    from transformers import AutoTokenizer
    tokenizer = AutoTokenizer.from_pretrained(models[0])
    for word in ['yes', 'no', '[', ']', '>', '0', '7']:
        assert len(tokenizer.encode(word, add_special_tokens=False)) == 1, word
    text = tokenizer.apply_chat_template([{'role': 'user', 'content': 'hi'}], tokenize=False,
                                         add_generation_prompt=True)
    assert text == '<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n'
    assert tokenizer.eos_token == '<|im_end|>'
    config = json.loads((models[0] / 'config.json').read_text())
    assert (config['num_hidden_layers'], config['hidden_size'], config['num_attention_heads']) == (2, 256, 4)
    generation = json.loads((models[0] / 'generation_config.json').read_text())
    assert generation['repetition_penalty'] != 1.0  # like a real model's defaults, which greedy requests override


@pytest.mark.parametrize('prompt', ['rank these: [1] a [2] b [3] c', 'anything else at all'])
def test_scripted_model_writes_its_script_whatever_the_prompt(models, prompt):
    text, _ = greedy(models[1], [{'role': 'system', 'content': 'Rank.'}, {'role': 'user', 'content': prompt}])
    assert text == '[3] > [1] > [2]'


def test_random_model_writes_printable_text(models):
    text, _ = greedy(models[0], [{'role': 'user', 'content': 'what is a boundary layer?'}], max_new_tokens=20)
    assert text.strip()
    assert all(c.isprintable() or c == '\n' for c in text)


def test_builder_never_replaces_a_folder_it_did_not_build(tmp_path, models):
    (tmp_path / 'mine.txt').write_text('keep me')
    with pytest.raises(ValueError, match='not a tiny model'):
        build_tiny_model(tmp_path)
    assert (tmp_path / 'mine.txt').read_text() == 'keep me'
    with pytest.raises(ValueError, match='repeats a piece'):
        build_tiny_model(tmp_path / 'new', scripted=True, script='[1] > [2] > [2]')


def test_command_line_builds_a_scripted_model(tmp_path, capsys):
    main(['tiny-model', '--out', str(tmp_path / 'm'), '--scripted'])
    assert 'tiny model:' in capsys.readouterr().out
    assert json.loads((tmp_path / 'm' / TINY_MARKER).read_text())['script'] == '[2] > [1]'
    main(['tiny-model', '--out', str(tmp_path / 'm')])  # rebuilding its own folder is allowed
    assert json.loads((tmp_path / 'm' / TINY_MARKER).read_text())['kind'] == 'random'
