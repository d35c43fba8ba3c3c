"""Load BERT-family weights from a local folder into tabformer's own modules (no hub).

The folder holds ``config.json``, ``model.safetensors`` (or ``pytorch_model.bin``) and
``vocab.txt``, as Hugging Face writes them. The weights map one-to-one:

==========================================  ==========================================
BERT                                        tabformer
==========================================  ==========================================
embeddings.word_embeddings                  embedder.word_embeddings (rows remapped)
embeddings.token_type_embeddings            embedder.token_type_embeddings
embeddings.word_embeddings[CLS] + type[0]   encoder.cls_token
embeddings.position_embeddings              encoder.positions (learned, CLS = 0)
embeddings.LayerNorm                        encoder.embedding_norm
layer.i.attention.self.{query,key,value}    layers[i].attention.{query,key,value}
layer.i.attention.output.dense / LayerNorm  layers[i].attention.out / norm1
layer.i.intermediate.dense                  layers[i].feed_forward.linear1
layer.i.output.dense / LayerNorm            layers[i].feed_forward.linear2 / norm2
==========================================  ==========================================

BERT puts ``[CLS]`` through the same embedding sum as every word; tabformer's encoder
prepends a learned CLS vector instead, so that vector is set to BERT's sum for the
``[CLS]`` id in segment 0, and both compute identical hidden states.
"""

from __future__ import annotations

import json
import os

import numpy as np
import torch

from .nn.encoder import TransformerEncoder
from .nn.models import PretrainedEncoder
from .nn.safe_load import UnsafeFileError, load_tensors
from .persistence import is_saved_folder, load_encoder
from .tokenizers.base import CLS
from .tokenizers.text import WordPieceTokenizer

__all__ = ["load_bert", "load_pretrained"]

_ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}


def _read_state(folder: str) -> dict:
    safetensors_path = os.path.join(folder, "model.safetensors")
    if os.path.exists(safetensors_path):
        from safetensors.torch import load_file

        state = load_file(safetensors_path)
    elif os.path.exists(os.path.join(folder, "pytorch_model.bin")):
        state = load_tensors(os.path.join(folder, "pytorch_model.bin"), "cpu", what="a BERT pytorch_model.bin")
    else:
        raise FileNotFoundError(f"{folder} has neither model.safetensors nor pytorch_model.bin")
    # Checkpoints saved from BertFor* models prefix every key with "bert.".
    return {key.removeprefix("bert."): value.float() for key, value in state.items()}


def _lowercase(folder: str) -> bool:
    path = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            return bool(json.load(handle).get("do_lower_case", True))
    return True


def load_bert(
    path, max_length: int | None = None, dropout: float | None = None, attention_dropout: float | None = None
) -> PretrainedEncoder:
    """Build a :class:`~tabformer.nn.models.PretrainedEncoder` from a local BERT folder.

    Parameters
    ----------
    path : str or PathLike
        Folder with ``config.json``, ``model.safetensors`` and ``vocab.txt``.
    max_length : int or None, default=None
        Tokenizer truncation length (CLS and [SEP] included); ``None`` keeps
        ``min(128, max_position_embeddings)``. The encoder keeps every pretrained position.
    dropout, attention_dropout : float or None
        Override the config's ``hidden_dropout_prob`` / ``attention_probs_dropout_prob``
        for fine-tuning (dropout costs a visible share of a CPU step).

    Returns
    -------
    PretrainedEncoder
        Fitted :class:`~tabformer.tokenizers.WordPieceTokenizer` (the folder's
        vocabulary), :class:`~tabformer.nn.embedders.text.TextEmbedder` and
        :class:`~tabformer.nn.encoder.TransformerEncoder` (post-LN, exact GELU, learned
        positions, embedding LayerNorm), in eval mode.
    """
    folder = os.fspath(path)
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder!r} is not a folder (expected config.json, model.safetensors, vocab.txt)")
    with open(os.path.join(folder, "config.json"), encoding="utf-8") as handle:
        config = json.load(handle)
    if config.get("model_type", "bert") not in ("bert",):
        raise ValueError(
            f"{folder} holds a {config.get('model_type')!r} model; only BERT-family weights (model_type 'bert') load"
        )
    activation = config.get("hidden_act", "gelu")
    if activation not in _ACTIVATIONS:
        raise ValueError(f"hidden_act {activation!r} is not supported (tabformer has exact 'gelu' and 'relu')")
    n_positions = int(config.get("max_position_embeddings", 512))
    state = _read_state(folder)

    tokenizer = WordPieceTokenizer(
        vocab_file=os.path.join(folder, "vocab.txt"),
        lowercase=_lowercase(folder),
        max_length=int(max_length or min(128, n_positions)),
    ).fit([""])
    encoder = TransformerEncoder(
        d_model=config["hidden_size"],
        n_layers=config["num_hidden_layers"],
        n_heads=config["num_attention_heads"],
        d_ff=config["intermediate_size"],
        dropout=config.get("hidden_dropout_prob", 0.1) if dropout is None else dropout,
        attention_dropout=config.get("attention_probs_dropout_prob", 0.1) if attention_dropout is None else attention_dropout,
        activation=_ACTIVATIONS[activation],
        norm_first=False,
        positions="learned",
        max_length=n_positions,
        embedding_norm=True,
        layer_norm_eps=config.get("layer_norm_eps", 1e-12),
    )
    embedder = tokenizer.build_embedder(encoder.d_model)
    if config.get("type_vocab_size", 2) != embedder.token_type_embeddings.num_embeddings:
        embedder.token_type_embeddings = torch.nn.Embedding(config["type_vocab_size"], encoder.d_model)

    words = state.pop("embeddings.word_embeddings.weight")
    if words.shape[0] != tokenizer.vocab_size_:
        raise ValueError(f"vocab.txt has {tokenizer.vocab_size_} tokens but the word embeddings have {words.shape[0]} rows")
    types = state.pop("embeddings.token_type_embeddings.weight")
    source = torch.as_tensor(np.asarray(tokenizer.source_ids_))
    target = {
        "embedder.word_embeddings.weight": words[source],
        "embedder.token_type_embeddings.weight": types,
        "encoder.cls_token": (words[source[CLS]] + types[0]).reshape(1, 1, -1),
        "encoder.positions.embedding.weight": state.pop("embeddings.position_embeddings.weight"),
        "encoder.embedding_norm.weight": state.pop("embeddings.LayerNorm.weight"),
        "encoder.embedding_norm.bias": state.pop("embeddings.LayerNorm.bias"),
    }
    names = {
        "attention.self.query": "attention.query",
        "attention.self.key": "attention.key",
        "attention.self.value": "attention.value",
        "attention.output.dense": "attention.out",
        "attention.output.LayerNorm": "norm1",
        "intermediate.dense": "feed_forward.linear1",
        "output.dense": "feed_forward.linear2",
        "output.LayerNorm": "norm2",
    }
    for i in range(encoder.n_layers):
        for bert_name, ours in names.items():
            for kind in ("weight", "bias"):
                target[f"encoder.layers.{i}.{ours}.{kind}"] = state.pop(f"encoder.layer.{i}.{bert_name}.{kind}")
    leftover = [k for k in state if not k.startswith("pooler.") and not k.endswith("position_ids")]
    if leftover:
        raise ValueError(f"unexpected BERT weights not mapped onto tabformer: {leftover[:5]}")
    pretrained = PretrainedEncoder(tokenizer, embedder, encoder)
    missing, unexpected = pretrained.load_state_dict(target, strict=False)
    unloaded = [k for k in missing if not k.startswith("tokenizer")]
    if unloaded or unexpected:  # pragma: no cover - guards the mapping above
        raise RuntimeError(f"BERT mapping incomplete: missing {unloaded}, unexpected {unexpected}")
    return pretrained.eval()


def load_pretrained(path, **kwargs) -> PretrainedEncoder | TransformerEncoder:
    """The encoder at ``path``, read without unpickling anything.

    - a folder written by ``PretrainedEncoder.save`` or by an estimator's ``save``: its
      :class:`PretrainedEncoder` (tokenizer, embedder, encoder);
    - a local BERT folder: :func:`load_bert` (``kwargs`` go to it);
    - a file written by ``TransformerEncoder.save``: that :class:`TransformerEncoder`.

    Files written by ``PretrainedEncoder.save`` in tabformer 0.1 were pickles; they are
    refused with an error that says so.

    Parameters
    ----------
    path : str or os.PathLike
        A saved folder, a BERT folder or a ``TransformerEncoder.save`` file.
    **kwargs
        :func:`load_bert`'s options (``max_length``, ``dropout``, ``attention_dropout``);
        BERT folders only, anything else with options raises ``TypeError``.

    Returns
    -------
    PretrainedEncoder or TransformerEncoder
    """
    folder = os.fspath(path)
    if os.path.isdir(folder):
        if is_saved_folder(folder):
            if kwargs:
                raise TypeError(f"options {sorted(kwargs)} only apply to BERT folders")
            return load_encoder(folder)
        return load_bert(folder, **kwargs)
    if kwargs:
        raise TypeError(f"options {sorted(kwargs)} only apply to BERT folders")
    if not os.path.exists(folder):
        raise FileNotFoundError(
            f"{folder!r} does not exist (expected a saved folder, a BERT folder or a TransformerEncoder.save file)"
        )
    try:
        return TransformerEncoder.load(folder)
    except UnsafeFileError as error:
        raise UnsafeFileError(
            f"{error} Note: PretrainedEncoder.save files of tabformer 0.1 were such pickles; re-save a trusted one "
            "as a folder with PretrainedEncoder.save(folder)."
        ) from None
