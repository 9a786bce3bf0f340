"""Tiny random BERT models built locally in a second (no download), for trying an encoder or a cross-encoder where no
model can be fetched: a WordPiece tokenizer trained on the given texts and a 2-layer BERT with random weights, saved
as a transformers folder, a sentence-transformers folder (mean pooling) or a cross-encoder (one relevance logit).
Their scores are random but deterministic per seed: they show that the plumbing works, not what a model can do.
``pyterrier_garen.synthetic`` exports them."""
import functools
from pathlib import Path

__all__ = ['tiny_bert', 'tiny_sbert', 'tiny_cross_encoder']

SPECIAL = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]']


def _tokenizer(texts, max_length: int):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast
    tok = Tokenizer(models.WordPiece(unk_token='[UNK]'))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator(list(texts), trainers.WordPieceTrainer(vocab_size=400, special_tokens=SPECIAL,
                                                                  show_progress=False))
    cls, sep = tok.token_to_id('[CLS]'), tok.token_to_id('[SEP]')
    tok.post_processor = processors.TemplateProcessing(single='[CLS] $A [SEP]', pair='[CLS] $A [SEP] $B:1 [SEP]:1',
                                                       special_tokens=[('[CLS]', cls), ('[SEP]', sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token='[UNK]', pad_token='[PAD]', cls_token='[CLS]',
                                   sep_token='[SEP]', mask_token='[MASK]', model_max_length=max_length)


def _quiet(build):
    """No transformers progress bars ("Writing model shards", "Loading weights") while a tiny model is built."""
    @functools.wraps(build)
    def quiet(*args, **kwargs):
        from ._encoding import _quiet_loading
        with _quiet_loading():
            return build(*args, **kwargs)
    return quiet


def _config(vocab: int, **extra):
    from transformers import BertConfig
    return BertConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                      intermediate_size=64, max_position_embeddings=128, **extra)


@_quiet
def tiny_bert(folder, texts, *, seed: int = 0, max_length: int = 64) -> Path:
    """A transformers BERT folder (``AutoModel``/``AutoTokenizer``; ``pyterrier_dr.HgfBiEncoder.from_pretrained``)."""
    import torch
    from transformers import BertModel
    folder = Path(folder)
    tokenizer = _tokenizer(texts, max_length)
    torch.manual_seed(seed)
    BertModel(_config(len(tokenizer))).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@_quiet
def tiny_sbert(folder, texts, *, seed: int = 0, max_length: int = 64) -> Path:
    """A sentence-transformers folder (BERT + mean pooling; ``pyterrier_dr.SBertBiEncoder(folder)``)."""
    from sentence_transformers import SentenceTransformer, models
    folder = Path(folder)
    bert = tiny_bert(folder.with_name(folder.name + '-bert'), texts, seed=seed, max_length=max_length)
    word = models.Transformer(str(bert), max_seq_length=max_length)
    SentenceTransformer(modules=[word, models.Pooling(32, 'mean')], device='cpu').save(str(folder))
    return folder


@_quiet
def tiny_cross_encoder(folder, texts, *, seed: int = 0, max_length: int = 128) -> Path:
    """A cross-encoder folder (``sentence_transformers.CrossEncoder(folder)``: one logit per query-document pair)."""
    import torch
    from transformers import BertForSequenceClassification
    folder = Path(folder)
    tokenizer = _tokenizer(texts, max_length)
    torch.manual_seed(seed)
    # larger random weights than BERT's default: relevance logits spread far beyond float noise between batches
    config = _config(len(tokenizer), num_labels=1, initializer_range=0.5)
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
