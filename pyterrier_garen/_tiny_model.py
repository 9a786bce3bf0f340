"""A tiny Qwen3-style causal LM built locally, so the LLM path can run for real with no download.

:func:`build_tiny_model` writes a Hugging Face model folder (``config.json``, ``model.safetensors``, a byte-level BPE
``tokenizer.json`` trained on the spot, a Qwen-style chat template and a ``generation_config.json``) that vLLM,
``transformers`` and a ``vllm`` OpenAI-compatible server all load. Two kinds:

* random (default): randomly initialised weights; answers are nonsense but deterministic, and yes/no probabilities
  are spread over (0, 1). Good for checking plumbing: prompt sizes, token accounting, engine agreement.
* scripted (``scripted=True``): the attention and MLP outputs are zeroed, so each position sees only its own token,
  and the output layer is wired so that greedy decoding writes a fixed ``script`` (by default ``[2] > [1]``) and
  then the end-of-turn token, whatever the prompt. Good for exercising reordering and parsing with a real engine.

The ``generation_config.json`` carries sampling defaults like a real Qwen model's (temperature, top-k, top-p,
repetition penalty): a server that applies them to requests that do not say otherwise decodes differently from
greedy in-process decoding, which is what an engine must guard against.

Needs ``torch``, ``transformers``, ``tokenizers`` and ``safetensors`` (the ``cpu`` extra has them); imported lazily.
"""
from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Iterable, Optional, Union

__all__ = ['build_tiny_model', 'TINY_MARKER']

TINY_MARKER = 'garen_tiny_model.json'
SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>']
THINK_TOKENS = ['<think>', '</think>']
# Qwen2-style split: letters with one leading non-letter, single digits, punctuation runs, newlines, spaces
_SPLIT = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
          r"|\s+(?!\S)|\s+")
# no leading-space convention: words, digits, punctuation runs and whitespace runs are separate pieces, so a space is
# a token of its own and never part of the word after it
_SPLIT_SEPARATE = r"\p{L}+|\p{N}|[^\s\p{L}\p{N}]+|\s+"
SPACES = ('leading', 'separate')
CHAT_TEMPLATE = (
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
# sampling defaults like those a Qwen model ships with; greedy requests must override every one of them
GENERATION_DEFAULTS = {'do_sample': True, 'temperature': 0.7, 'top_p': 0.8, 'top_k': 20, 'repetition_penalty': 1.05}
# words that must be single tokens (answers, ranking syntax); digits and brackets are single bytes anyway
_SINGLE = ['yes', 'no', '[', ']', '>', '{', '}'] + [str(d) for d in range(10)]
_SINGLE_LEADING = [' >', ' [']  # with the leading-space convention
_WORDS = ('the of and to in a is that for it as with was on be by this are from at or an which have not has were '
          'flow pressure heat boundary layer wing surface speed theory results model query document passage group '
          'summary concept relevant search answer ranking order number method data system study effect').split()


def _default_texts(seed: int):
    """Some text to train the tokenizer on when none is given: the package prompts and random word salad."""
    rng = random.Random(seed)
    prompts = Path(__file__).parent / 'prompts'
    texts = [p.read_text(encoding='utf8') for p in sorted(prompts.glob('*.txt'))]
    for _ in range(2000):
        texts.append(' '.join(rng.choice(_WORDS) for _ in range(rng.randint(5, 30))) + '.')
    return texts


def _training_texts(texts: Iterable[str], seed: int, repeats: int = 200):
    rng = random.Random(seed)
    for text in texts:
        yield text
    # make sure the answer words merge into single tokens, with and without a leading space and after newlines
    for _ in range(repeats):
        yield 'yes\nno\n yes no yes. no. ' + ' > '.join(f'[{rng.randint(1, 20)}]' for _ in range(5))


def _train_tokenizer(texts: Iterable[str], vocab_size: int, seed: int, spaces: str = 'leading'):
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_SPLIT if spaces == 'leading' else _SPLIT_SEPARATE), behavior='isolated'),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIAL_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    # a small vocabulary has few merges: the answer words must be frequent enough to get theirs
    repeats = 200 if vocab_size >= 1024 else 4000
    tokenizer.train_from_iterator(_training_texts(texts, seed, repeats), trainer=trainer)
    return tokenizer


def _finish_tokenizer(tokenizer, spaces: str = 'leading'):
    from tokenizers import AddedToken
    tokenizer.add_tokens([AddedToken(t, special=False, normalized=False) for t in THINK_TOKENS])
    for word in _SINGLE + (_SINGLE_LEADING if spaces == 'leading' else []):
        ids = tokenizer.encode(word, add_special_tokens=False).ids
        if len(ids) != 1:
            raise RuntimeError(f'the tiny tokenizer splits {word!r} into {len(ids)} tokens; train it on more text '
                               '(texts=...) or with a larger vocab_size')
    return tokenizer


def _script_pieces(script: str):
    """Split ``script`` into distinct pieces: a greedy chain where each piece names the next must not repeat one."""
    import re
    pieces = [p for p in re.split(r'(?<=\S)(?=\s+>)', script) if p]
    if len(set(pieces)) != len(pieces):
        raise ValueError(f'script {script!r} repeats a piece ({pieces}); each " > "-separated part must be distinct')
    return pieces


def _add_vocab_entries(tokenizer, pieces):
    """Add ``pieces`` to the BPE vocabulary without merges: the model can emit them, input text never produces them.

    Returns the tokenizer (rebuilt) and the id of each piece (an existing token is reused).
    """
    from tokenizers import Tokenizer
    state = json.loads(tokenizer.to_str())
    vocab = state['model']['vocab']
    added = {t['content']: t['id'] for t in state['added_tokens']}
    table = _bytes_to_unicode()
    first_free = max(list(vocab.values()) + list(added.values())) + 1
    ids = []
    for piece in pieces:
        mapped = ''.join(table[b] for b in piece.encode('utf8'))
        if mapped not in vocab:
            vocab[mapped] = first_free
            first_free += 1
        ids.append(vocab[mapped])
    return Tokenizer.from_str(json.dumps(state)), ids


def _bytes_to_unicode():
    """GPT-2's reversible byte -> printable character table (what byte-level BPE vocabularies are written in)."""
    printable = list(range(ord('!'), ord('~') + 1)) + list(range(ord('¡'), ord('¬') + 1)) + \
        list(range(ord('®'), ord('ÿ') + 1))
    chars = printable[:]
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return dict(zip(printable, (chr(c) for c in chars), strict=True))


def _check_target(path: Path) -> None:
    if path.exists() and not path.is_dir():
        raise ValueError(f'{path} exists and is not a folder; choose another --out')
    if path.is_dir() and any(path.iterdir()) and not (path / TINY_MARKER).is_file():
        raise ValueError(f'{path} is a non-empty folder that is not a tiny model built here; choose an empty or new '
                         'folder (nothing in it is deleted)')


def build_tiny_model(path: Union[str, Path], *, scripted: bool = False, script: str = '[2] > [1]',
                     texts: Optional[Iterable[str]] = None, vocab_size: int = 2048, num_layers: int = 2,
                     hidden_size: int = 256, num_heads: int = 4, max_position_embeddings: int = 4096,
                     spaces: str = 'leading', seed: int = 0) -> Path:
    """Write a tiny Qwen3 causal LM with its own tokenizer to ``path`` (a few seconds on a CPU, no download).

    Args:
        path: the model folder (created; a previous tiny model there is replaced, any other non-empty folder is an
            error).
        scripted: wire the output layer so that greedy decoding writes ``script`` then ends the turn.
        script: the scripted answer; its ``>``-separated parts must be distinct (e.g. ``'[2] > [1] > [3]'``).
        texts: text to train the tokenizer on (e.g. a collection's documents); None: the package prompts plus
            generated text.
        vocab_size: BPE vocabulary size (the trained vocabulary may be smaller on little text); the tokenizers of
            different sizes cut the same text at very different places (a small one has few characters per token).
        num_layers: transformer layers.
        hidden_size: model width.
        num_heads: attention heads (key/value heads: half as many).
        max_position_embeddings: the longest sequence the model accepts (engines' ``max_model_len`` must not exceed
            it).
        spaces: ``'leading'``: a word's leading space belongs to it (``' flow'``, as in GPT-2, Llama or Qwen);
            ``'separate'``: spaces are tokens of their own and words carry none.
        seed: seed of the weights and of the generated training text.

    Returns:
        The model folder, loadable by ``vllm.LLM``, ``transformers.AutoModelForCausalLM`` and a vLLM server.

    Raises:
        ValueError: ``path`` is a file or a non-empty folder that is not a tiny model, or the script repeats a part.
    """
    import torch
    from transformers import GenerationConfig, PreTrainedTokenizerFast, Qwen3Config, Qwen3ForCausalLM

    if spaces not in SPACES:
        raise ValueError(f'spaces must be one of {SPACES}, got {spaces!r}')
    path = Path(path)
    _check_target(path)
    pieces = _script_pieces(script) if scripted else []
    tokenizer = _train_tokenizer(texts if texts is not None else _default_texts(seed), vocab_size, seed, spaces)
    piece_ids = []
    if pieces:
        tokenizer, piece_ids = _add_vocab_entries(tokenizer, pieces)
    tokenizer = _finish_tokenizer(tokenizer, spaces)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token=None, eos_token='<|im_end|>',
                                   pad_token='<|endoftext|>', unk_token=None, model_max_length=max_position_embeddings,
                                   clean_up_tokenization_spaces=False)
    fast.chat_template = CHAT_TEMPLATE
    eos_id = fast.convert_tokens_to_ids('<|im_end|>')
    pad_id = fast.convert_tokens_to_ids('<|endoftext|>')
    vocab = len(fast)
    vocab_padded = (vocab + 63) // 64 * 64

    config = Qwen3Config(vocab_size=vocab_padded, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
                         num_hidden_layers=num_layers, num_attention_heads=num_heads,
                         num_key_value_heads=max(1, num_heads // 2), head_dim=hidden_size // num_heads,
                         max_position_embeddings=max_position_embeddings, rope_theta=10000.0, tie_word_embeddings=False,
                         bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id, initializer_range=0.05,
                         use_sliding_window=False, torch_dtype='float32')
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config).to(torch.float32).eval()
    with torch.no_grad():
        head = model.lm_head.weight
        # spread the logits (std ~ 3) so greedy choices and P(yes) do not hinge on rounding
        head.normal_(0.0, 3.0 / hidden_size ** 0.5)
        head[vocab:] = 0.0
        if pieces:
            _wire_script(model, piece_ids, eos_id, vocab, seed)
        else:
            _block_unsafe(model, _unsafe_ids(fast, eos_id))
    path.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(path, safe_serialization=True)
    fast.save_pretrained(path)
    GenerationConfig(bos_token_id=pad_id, eos_token_id=eos_id, pad_token_id=pad_id,
                     **GENERATION_DEFAULTS).save_pretrained(path)
    marker = {'kind': 'scripted' if scripted else 'random', 'script': script if scripted else None,
              'vocab_size': vocab, 'num_layers': num_layers, 'hidden_size': hidden_size, 'num_heads': num_heads,
              'max_position_embeddings': max_position_embeddings, 'spaces': spaces, 'seed': seed}
    (path / TINY_MARKER).write_text(json.dumps(marker, indent=2) + '\n', encoding='utf8')
    return path


def _unsafe_ids(fast, eos_id: int):
    """Tokens a random model should never write: broken UTF-8, control characters, special and think tokens.

    Engines decode such tokens differently (a partial UTF-8 sequence is held back by vLLM's incremental
    detokenizer), which would make "the same greedy text" depend on the engine rather than the model.
    """
    table = {c: b for b, c in _bytes_to_unicode().items()}
    unsafe = []
    specials = set(fast.all_special_ids) | {fast.convert_tokens_to_ids(t) for t in THINK_TOKENS}
    for token_id in range(len(fast)):
        if token_id == eos_id:
            continue
        if token_id in specials:
            unsafe.append(token_id)
            continue
        token = fast.convert_ids_to_tokens(token_id)
        try:
            text = bytes(table[c] for c in token).decode('utf8')
        except (KeyError, UnicodeDecodeError):
            unsafe.append(token_id)
            continue
        if any(not (c.isprintable() or c in '\n ') for c in text):
            unsafe.append(token_id)
    return unsafe


def _block_unsafe(model, unsafe) -> None:
    """Give every embedding a shared component along dimension 0 and let unsafe tokens' output rows read it
    negatively: after the final RMSNorm that component is large and positive, so their logits are far below the rest.
    """
    model.model.embed_tokens.weight[:, 0] = 0.5
    head = model.lm_head.weight
    head[:, 0] = 0.0
    head[unsafe, 0] = -10.0


def _wire_script(model, piece_ids, eos_id: int, vocab: int, seed: int) -> None:
    """Zero the blocks' outputs and set the output layer so greedy decoding follows ``piece_ids`` then ``eos_id``.

    The last hidden state is then the (normalised) embedding of the current token. Every embedding gets a shared
    component along dimension 0; the first piece's output row reads that component (so any token is followed by the
    first piece), and each piece's successor row reads the piece's own embedding direction, with a larger weight.
    """
    import torch
    generator = torch.Generator().manual_seed(seed + 1)
    for layer in model.model.layers:
        layer.self_attn.o_proj.weight.zero_()
        layer.mlp.down_proj.weight.zero_()
    model.model.norm.weight.fill_(1.0)
    emb = model.model.embed_tokens.weight
    hidden = emb.shape[1]
    emb.copy_(torch.randn(emb.shape, generator=generator))
    emb[:, 0] = 1.0
    head = model.lm_head.weight
    head.zero_()

    def direction(token):
        vector = emb[token].clone()
        vector[0] = 0.0
        return vector / vector.norm()

    # the final RMSNorm leaves an embedding of norm ~sqrt(hidden) about as it is: h[0] ~ 1 and |h| ~ sqrt(hidden),
    # so the first piece scores ~5 after any token and a piece's successor ~10 after the piece (noise ~0.6)
    head[piece_ids[0], 0] = 5.0
    chain = list(piece_ids) + [eos_id]
    for current, following in zip(chain[:-1], chain[1:], strict=True):
        head[following] += 10.0 / hidden ** 0.5 * direction(current)
    head[vocab:] = 0.0
