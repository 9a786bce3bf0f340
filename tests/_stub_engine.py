"""A deterministic rule-based :class:`Engine` for tests: no model, every call recorded.

* tokens are whitespace-separated words (``count_tokens``/``truncate``);
* ranking prompts (``rankllm`` / ``reasoning``) are answered by ordering the ``[i]`` documents by word overlap with the
  query (ties by identifier), in the format each prompt asks for;
* summary prompts are answered with a JSON object built from the documents' words;
* yes/no: ``P(yes) = overlap / (overlap + 1)``.

``responder(conversation) -> str or None`` overrides the answer of ``generate`` (None: the rule answer).
"""
import json
import re

from pyterrier_garen._engines import Engine, Generation

_WORD = re.compile(r'\w+')
_DOC_LINE = re.compile(r'^\[(\d+)\] (.*)$', re.M)


def words(text):
    return set(_WORD.findall(text.lower()))


def overlap(query, doc):
    return len(words(query) & words(doc))


def query_of(conversation):
    user = [m['content'] for m in conversation if m['role'] == 'user'][0]
    match = re.search(r'^Search query: (.*)$', user, re.M) or re.search(r'^\[Query\]\n(.*)$', user, re.M) \
        or re.search(r'^<Query>: (.*)$', user, re.M)
    return match.group(1) if match else ''


def docs_of(conversation):
    user = [m['content'] for m in conversation if m['role'] == 'user'][0]
    return [(int(i), text) for i, text in _DOC_LINE.findall(user)]


class StubEngine(Engine):
    model = 'stub/rules'

    def __init__(self, *, context_length=4096, responder=None):
        self._context_length = context_length
        self.responder = responder
        self.log = []  # (method, conversations, kwargs) per call

    def __repr__(self):
        return 'StubEngine()'

    @property
    def context_length(self):
        return self._context_length

    def count_tokens(self, text):
        return len(text.split())

    def truncate(self, text, max_tokens):
        return ' '.join(text.split()[:max(0, max_tokens)])

    def count_conversation_tokens(self, conversation):
        return sum(self.count_tokens(m['content']) + 8 for m in conversation)

    def rule_answer(self, conversation):
        system = conversation[0]['content'] if conversation[0]['role'] == 'system' else ''
        if 'JSON' in system:
            docs = docs_of(conversation)
            common = sorted(set.intersection(*[words(t) for _, t in docs])) if docs else []
            return json.dumps({'fingerprints': [{'doc': i, 'one_line': t[:30]} for i, t in docs],
                               'common_theme': ' '.join(common[:5]), 'concept': ' '.join(common[:3]) or 'empty',
                               'summary': f'{len(docs)} documents about ' + (' '.join(common[:8]) or 'nothing') + '.'})
        query, docs = query_of(conversation), docs_of(conversation)
        order = sorted(docs, key=lambda d: (-overlap(query, d[1]), d[0]))
        ranking = ' > '.join(f'[{i}]' for i, _ in order)
        if '[Reasoning Trace]' in system:
            return f'[Reasoning Trace]\nStep 1: look for [1] words of the query\n[Document Ranking]\n{ranking}'
        return f'<answer> {ranking} '

    def generate(self, conversations, *, max_tokens, stop=None):
        self.log.append(('generate', list(conversations), {'max_tokens': max_tokens, 'stop': stop}))
        result = []
        for conversation in conversations:
            text = self.responder(conversation) if self.responder else None
            if text is None:
                text = self.rule_answer(conversation)
            prompt_tokens = self.count_conversation_tokens(conversation)
            assert prompt_tokens + max_tokens <= self.context_length, 'prompt + answer exceed the context'
            result.append(Generation(text=text, prompt_tokens=prompt_tokens,
                                     completion_tokens=min(max_tokens, len(text.split()))))
        return result

    def yes_no(self, conversations, *, yes='yes', no='no'):
        self.log.append(('yes_no', list(conversations), {}))
        result = []
        for conversation in conversations:
            user = [m['content'] for m in conversation if m['role'] == 'user'][0]
            doc = user.split('<Document>: ', 1)[1]
            k = overlap(query_of(conversation), doc)
            result.append(Generation(text=yes if k else no, prompt_tokens=self.count_conversation_tokens(conversation),
                                     completion_tokens=1, probability=k / (k + 1)))
        return result
