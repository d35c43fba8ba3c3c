"""Hugging Face text encoders (BERT, RoBERTa, XLM-R, DistilBERT, ELECTRA) from a local folder.

The folder holds ``config.json``, ``model.safetensors`` (or ``pytorch_model.bin``) and a
tokenizer (``tokenizer.json``, else ``vocab.txt``), as ``save_pretrained`` writes them. All
four families are post-LN encoders with learned positions and an embedding LayerNorm, so
they map one-to-one onto :class:`~tabformer.nn.TransformerEncoder`; what differs is written
down per family in :data:`FAMILIES` (key names, config names, position offset, token types):

==========================================  ==========================================
Hugging Face (BERT names)                   tabformer
==========================================  ==========================================
embeddings.word_embeddings                  embedder.word_embeddings (rows remapped)
embeddings.token_type_embeddings            embedder.token_type_embeddings
word_embeddings[CLS] + token_type[0]        encoder.cls_token
embeddings.position_embeddings[offset:]     encoder.positions (learned, CLS = 0)
embeddings.LayerNorm                        encoder.embedding_norm
layer.i.attention.self.{query,key,value}    layers[i].attention.{query,key,value}
layer.i.attention.output.dense / LayerNorm  layers[i].attention.out / norm1
layer.i.intermediate.dense                  layers[i].feed_forward.linear1
layer.i.output.dense / LayerNorm            layers[i].feed_forward.linear2 / norm2
==========================================  ==========================================

The models put their ``[CLS]`` (``<s>``) through the same embedding sum as every word;
tabformer's encoder prepends a learned CLS vector instead, so that vector is set to the
model's sum for the CLS id in segment 0, and both compute identical hidden states.
RoBERTa numbers positions from ``pad_token_id + 1``: its table is read from that row on.
A family without token types (DistilBERT) gets zero segment embeddings; one with a single
type (RoBERTa) uses it for both segments of a pair.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field

import numpy as np
import torch

from .nn.encoder import TransformerEncoder
from .nn.models import PretrainedEncoder
from .nn.safe_load import load_tensors
from .tokenizers._vocab import bert_settings
from .tokenizers.base import CLS
from .tokenizers.pretrained_text import PretrainedTextTokenizer
from .tokenizers.text import WordPieceTokenizer

__all__ = ["FAMILIES", "TextFamily", "load_text_folder"]

_ACTIVATIONS = {"gelu": "gelu", "relu": "relu"}

_BERT_CONFIG = {
    "d_model": "hidden_size",
    "n_layers": "num_hidden_layers",
    "n_heads": "num_attention_heads",
    "d_ff": "intermediate_size",
    "dropout": "hidden_dropout_prob",
    "attention_dropout": "attention_probs_dropout_prob",
    "activation": "hidden_act",
    "n_positions": "max_position_embeddings",
    "layer_norm_eps": "layer_norm_eps",
    "type_vocab_size": "type_vocab_size",
}
_BERT_LAYER = {
    "attention.self.query": "attention.query",
    "attention.self.key": "attention.key",
    "attention.self.value": "attention.value",
    "attention.output.dense": "attention.out",
    "attention.output.LayerNorm": "norm1",
    "intermediate.dense": "feed_forward.linear1",
    "output.dense": "feed_forward.linear2",
    "output.LayerNorm": "norm2",
}
_EMBEDDINGS = {
    "words": "embeddings.word_embeddings.weight",
    "positions": "embeddings.position_embeddings.weight",
    "types": "embeddings.token_type_embeddings.weight",
    "norm": "embeddings.LayerNorm",
}


@dataclass(frozen=True)
class TextFamily:
    """How one Hugging Face ``model_type`` maps onto tabformer's text encoder.

    Parameters
    ----------
    prefix : str
        Key prefix in checkpoints of the model with a task head (``"bert."``); the bare model has none.
    config : dict
        Tabformer setting -> ``config.json`` key.
    layer : str
        Key of layer ``i``, a format string (``"encoder.layer.{i}."``).
    layer_names : dict
        Key inside a layer -> tabformer name inside ``encoder.layers.i``.
    defaults : dict
        Settings the family's ``config.json`` does not write.
    embeddings : dict
        Role (words, positions, types, norm, projection) -> key; a family without ``types``
        has no segments; ``projection`` maps narrower embeddings to the hidden size (ELECTRA).
    position_offset : str or None
        ``config.json`` key whose value + 1 is the first position id (RoBERTa: ``pad_token_id``).
    ignored : tuple of str
        Key prefixes of a bare model's checkpoint that are heads or buffers, not the encoder.
    """

    prefix: str
    config: dict = field(default_factory=lambda: dict(_BERT_CONFIG))
    layer: str = "encoder.layer.{i}."
    layer_names: dict = field(default_factory=lambda: dict(_BERT_LAYER))
    defaults: dict = field(default_factory=dict)
    embeddings: dict = field(default_factory=lambda: dict(_EMBEDDINGS))
    position_offset: str | None = None
    ignored: tuple = ("pooler.", "embeddings.position_ids", "embeddings.token_type_ids")


#: supported ``model_type`` -> its mapping
FAMILIES = {
    "bert": TextFamily(prefix="bert."),
    "roberta": TextFamily(prefix="roberta.", position_offset="pad_token_id"),
    "xlm-roberta": TextFamily(prefix="roberta.", position_offset="pad_token_id"),  # RoBERTa's layout, Unigram words
    "electra": TextFamily(prefix="electra.", embeddings={**_EMBEDDINGS, "projection": "embeddings_project"}),
    "distilbert": TextFamily(
        prefix="distilbert.",
        config={
            "d_model": "dim",
            "n_layers": "n_layers",
            "n_heads": "n_heads",
            "d_ff": "hidden_dim",
            "dropout": "dropout",
            "attention_dropout": "attention_dropout",
            "activation": "activation",
            "n_positions": "max_position_embeddings",
        },
        defaults={"layer_norm_eps": 1e-12, "type_vocab_size": 0},
        layer="transformer.layer.{i}.",
        layer_names={
            "attention.q_lin": "attention.query",
            "attention.k_lin": "attention.key",
            "attention.v_lin": "attention.value",
            "attention.out_lin": "attention.out",
            "sa_layer_norm": "norm1",
            "ffn.lin1": "feed_forward.linear1",
            "ffn.lin2": "feed_forward.linear2",
            "output_layer_norm": "norm2",
        },
        embeddings={key: value for key, value in _EMBEDDINGS.items() if key != "types"},
        ignored=("embeddings.position_ids",),
    ),
}


def _read_file(path: str) -> dict:
    if path.endswith(".safetensors"):
        from safetensors.torch import load_file

        return load_file(path)
    return load_tensors(path, "cpu", what="a pytorch_model.bin")


def _read_state(folder: str, family: TextFamily) -> tuple[dict, str]:
    """The checkpoint's tensors as float32, keyed as the bare model's, and the key prefix taken off."""
    for name in ("model.safetensors", "pytorch_model.bin"):
        if os.path.exists(os.path.join(folder, name)):
            state = _read_file(os.path.join(folder, name))
            break
        if os.path.exists(os.path.join(folder, f"{name}.index.json")):  # sharded: save_pretrained(max_shard_size=...)
            with open(os.path.join(folder, f"{name}.index.json"), encoding="utf-8") as handle:
                shards = sorted(set(json.load(handle)["weight_map"].values()))
            outside = [shard for shard in shards if os.path.basename(shard) != shard or shard in ("", ".", "..")]
            if outside:  # as tabformer.load: every file read lies inside the folder
                raise ValueError(f"{name}.index.json names weight files outside {folder}: {outside[:3]}")
            state = {key: value for shard in shards for key, value in _read_file(os.path.join(folder, shard)).items()}
            break
    else:
        raise FileNotFoundError(f"{folder} has neither model.safetensors nor pytorch_model.bin (nor their sharded .index.json)")
    # Checkpoints saved from *For<Task> models prefix every encoder key ("bert.", "roberta.");
    # the rest is their task head, which tabformer replaces, as AutoModel does.
    prefix, words = (family.prefix if any(key.startswith(family.prefix) for key in state) else ""), family.embeddings["words"]
    wrapped = {key.removesuffix(words) for key in state if key.endswith(f".{words}")}
    if not prefix and words not in state and len(wrapped) == 1:
        # A wrapper's prefix ("module." of DataParallel, "model." of a training module) is taken off, as timm
        # does, where unambiguous: one prefix holds the words and every key has it, or it ends in the family's.
        (wrapper,) = wrapped
        if wrapper.endswith(f".{family.prefix}") or all(key.startswith(wrapper) for key in state):
            prefix = wrapper
    if prefix:
        state = {key.removeprefix(prefix): value for key, value in state.items() if key.startswith(prefix)}
    return {key: value.float() for key, value in state.items()}, prefix


def _read_config(folder: str) -> tuple[dict, str, TextFamily]:
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{folder!r} is not a folder (expected config.json, model.safetensors and a tokenizer)")
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{folder} has no config.json; a Hugging Face text model folder holds config.json (model_type one of "
            f"{sorted(FAMILIES)}), model.safetensors or pytorch_model.bin, and tokenizer.json or vocab.txt, "
            "as save_pretrained writes them"
        )
    with open(path, encoding="utf-8") as handle:
        try:
            config = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(config, dict):
        raise ValueError(f"{path} holds a {type(config).__name__}, not the object of settings that save_pretrained writes")
    model_type = config.get("model_type", "bert")  # BERT's first configs had none
    if not isinstance(model_type, str):
        raise ValueError(f"{path} sets model_type to {json.dumps(model_type)}; expected one of {sorted(FAMILIES)}")
    if model_type not in FAMILIES:
        raise ValueError(
            f"{folder} holds a {model_type!r} model; the text families that load are {sorted(FAMILIES)} "
            "(post-LN encoders with learned positions)"
        )
    return config, model_type, FAMILIES[model_type]


def _settings(config: dict, family: TextFamily) -> dict:
    decoder = [key for key in ("is_decoder", "add_cross_attention") if config.get(key)]
    if decoder:  # a causal mask (or cross-attention) that the encoder, attending both ways, would silently drop
        raise ValueError(
            f"config.json sets {', '.join(f'{key}=true' for key in decoder)}: a decoder, whose tokens attend only to "
            "earlier ones; tabformer's encoder attends both ways and would compute another function. Load an encoder "
            "checkpoint (BertModel, BertForMaskedLM...)"
        )
    positions = config.get("position_embedding_type", "absolute")
    if positions not in (None, "absolute"):  # transformers 4's relative_key(_query): distance terms inside attention
        raise ValueError(
            f"config.json sets position_embedding_type {positions!r}; tabformer's encoder has absolute learned positions only"
        )
    settings = dict(family.defaults)
    settings.update({ours: config[theirs] for ours, theirs in family.config.items() if theirs in config})
    missing = [family.config[key] for key in ("d_model", "n_layers", "n_heads", "d_ff") if key not in settings]
    if missing:
        raise ValueError(f"config.json lacks {missing}, which a {family.prefix.rstrip('.')} model needs")
    settings.setdefault("n_positions", 512)
    settings.setdefault("layer_norm_eps", 1e-12)
    settings.setdefault("type_vocab_size", 2)
    if settings.get("activation", "gelu") not in _ACTIVATIONS:
        raise ValueError(f"activation {settings['activation']!r} is not supported (tabformer has exact 'gelu' and 'relu')")
    if config.get("embedding_size", settings["d_model"]) != settings["d_model"]:
        if "projection" not in family.embeddings:
            raise ValueError(f"embedding_size differs from the hidden size, which {family.prefix.rstrip('.')} models never do")
        settings["embedding_size"] = config["embedding_size"]
    return settings


def _check_complete(state: dict, family: TextFamily, settings: dict, model_type: str, prefix: str) -> None:
    """Raise ``ValueError`` naming every tensor the encoder needs that the checkpoint lacks."""
    roles = [role for role in ("words", "positions", "types") if role in family.embeddings]
    needed = [family.embeddings[role] for role in roles]
    needed += [f"{family.embeddings['norm']}.{kind}" for kind in ("weight", "bias")]
    if "embedding_size" in settings:
        needed += [f"{family.embeddings['projection']}.{kind}" for kind in ("weight", "bias")]
    layers = [family.layer.format(i=i) for i in range(int(settings["n_layers"]))]
    needed += [f"{layer}{name}.{kind}" for layer in layers for name in family.layer_names for kind in ("weight", "bias")]
    missing = sorted(prefix + key for key in needed if key not in state)
    if missing:
        words = family.embeddings["words"]
        wrapped = sorted({key.removesuffix(words) for key in state if key.endswith(f".{words}")})
        found = f"it holds {words} under the prefixes {wrapped}" if wrapped else f"its keys begin {sorted(state)[:3]}"
        raise ValueError(f"the {model_type} checkpoint lacks {len(missing)} tensor(s) the encoder needs: {missing[:8]}; {found}")


#: tabformer key ending -> the setting behind each dimension of its tensor ("width": the embeddings';
#: a key not listed is a layer's, every dimension the hidden size)
_DIMS = {
    "word_embeddings.weight": (None, "width"),
    "token_type_embeddings.weight": (None, "width"),
    "positions.embedding.weight": ("n_positions", "width"),
    "embedding_norm.weight": ("width",),
    "embedding_norm.bias": ("width",),
    "embedding_projection.weight": ("d_model", "width"),
    "linear1.weight": ("d_ff", "d_model"),
    "linear1.bias": ("d_ff",),
    "linear2.weight": ("d_model", "d_ff"),
}


def _check_shapes(module, target: dict, origin: dict, shapes: dict, config: dict, family: TextFamily, offset: int, prefix: str):
    """Raise ``ValueError`` naming the first checkpoint tensor whose shape ``config.json`` contradicts.

    ``origin`` maps a tabformer key to the checkpoint's own key, ``shapes`` that key to its shape
    in the file; the shape ``config.json`` implies is the module's (built from it, on the meta device).
    """
    expected = module.state_dict()
    fields = {name: family.config[name] for name in ("d_model", "d_ff", "n_positions")}
    fields["width"] = "embedding_size" if "embedding_size" in config else fields["d_model"]
    for ours, theirs in origin.items():
        want, got = tuple(expected[ours].shape), tuple(target[ours].shape)
        if want == got:
            continue
        dims = next((dims for end, dims in _DIMS.items() if ours.endswith(end)), ("d_model",) * len(want))
        implied, blamed = list(shapes[theirs]), []
        for i, (wanted, found) in enumerate(zip(want, got)):
            if wanted != found:
                implied[i] = wanted + (offset if dims[i] == "n_positions" else 0)  # RoBERTa's table has offset rows more
                field = fields[dims[i]]
                default = "" if field in config else ", the default: config.json lacks it"
                blamed.append(f"{field}={implied[i]}{default} where the weights have {shapes[theirs][i]}")
        raise ValueError(
            f"config.json disagrees with the checkpoint: its tensor {prefix + theirs!r} has shape {tuple(shapes[theirs])}, but "
            f"config.json implies {tuple(implied)} ({'; '.join(blamed)}). Correct config.json to the weights"
        )


def _tokenizer(folder: str, max_length: int):
    has = {name: os.path.exists(os.path.join(folder, name)) for name in ("tokenizer.json", "vocab.json", "merges.txt")}
    if has["tokenizer.json"] or (has["vocab.json"] and has["merges.txt"]):
        return PretrainedTextTokenizer(tokenizer_file=folder, max_length=max_length).fit([""])
    if os.path.exists(os.path.join(folder, "vocab.txt")):
        return WordPieceTokenizer(
            vocab_file=os.path.join(folder, "vocab.txt"), max_length=max_length, **bert_settings(folder)
        ).fit([""])
    raise FileNotFoundError(
        f"{folder} has no tokenizer.json, vocab.json + merges.txt or vocab.txt; save the model's fast tokenizer there "
        "(AutoTokenizer.from_pretrained(...).save_pretrained(folder) writes tokenizer.json)"
    )


def _build_modules(settings, tokenizer, n_positions, dropout, attention_dropout):
    """The post-LN encoder and the tokenizer's embedder shaped as ``settings`` say, weights not yet loaded."""
    encoder = TransformerEncoder(
        d_model=settings["d_model"],
        n_layers=settings["n_layers"],
        n_heads=settings["n_heads"],
        d_ff=settings["d_ff"],
        dropout=settings.get("dropout", 0.1) if dropout is None else dropout,
        attention_dropout=settings.get("attention_dropout", 0.1) if attention_dropout is None else attention_dropout,
        activation=_ACTIVATIONS[settings.get("activation", "gelu")],
        norm_first=False,
        positions="learned",
        max_length=n_positions,
        embedding_norm=True,
        layer_norm_eps=settings["layer_norm_eps"],
        embedding_size=settings.get("embedding_size"),
    )
    embedder = tokenizer.build_embedder(encoder.embedding_size)
    return encoder, embedder


def load_text_folder(
    path, max_length: int | None = None, dropout: float | None = None, attention_dropout: float | None = None
) -> PretrainedEncoder:
    """Build a :class:`~tabformer.nn.models.PretrainedEncoder` from a local Hugging Face text folder.

    Parameters
    ----------
    path : str or PathLike
        Folder with ``config.json`` (``model_type`` one of :data:`FAMILIES`),
        ``model.safetensors`` or ``pytorch_model.bin`` (or their shards with the ``.index.json``),
        and ``tokenizer.json`` or ``vocab.txt``. Keys may carry a task model's prefix (``bert.``),
        and around it one wrapper's on every key (``module.``, ``model.``), taken off.
    max_length : int or None, default=None
        Tokenizer truncation length (CLS and separators included); ``None`` keeps
        ``min(128, positions)``. The encoder keeps every pretrained position.
    dropout, attention_dropout : float or None
        Override the config's hidden / attention dropout for fine-tuning.

    Returns
    -------
    PretrainedEncoder
        Fitted tokenizer (:class:`~tabformer.tokenizers.PretrainedTextTokenizer` for a
        ``tokenizer.json``, :class:`~tabformer.tokenizers.WordPieceTokenizer` for a
        ``vocab.txt``), :class:`~tabformer.nn.embedders.text.TextEmbedder` and post-LN
        :class:`~tabformer.nn.encoder.TransformerEncoder`, in eval mode.

    Raises
    ------
    ValueError
        For an unsupported ``model_type`` or activation, a vocabulary that does not match
        the word embeddings, a ``max_length`` beyond the positions, weights left unmapped, or
        a ``config.json`` that contradicts the tensors' shapes (naming the tensor and the setting).

    Examples
    --------
    >>> encoder = load_text_folder("distilbert-base-uncased/", max_length=256)  # doctest: +SKIP
    >>> encoder.encoder.config["n_layers"]  # doctest: +SKIP
    6
    """
    folder = os.fspath(path)
    config, model_type, family = _read_config(folder)
    state, prefix = _read_state(folder, family)  # first: an unsafe weights file is refused before anything else
    settings = _settings(config, family)
    offset = 0 if family.position_offset is None else int(config.get(family.position_offset, 1)) + 1
    n_positions = int(settings["n_positions"]) - offset
    if max_length is not None and max_length > n_positions:
        raise ValueError(f"max_length={max_length} exceeds the {n_positions} positions of the {model_type} weights")
    tokenizer = _tokenizer(folder, int(max_length or min(128, n_positions)))
    # On the meta device: no memory and no random initial weights, all of which the checkpoint
    # replaces below (load_state_dict(assign=True); a parameter it misses raises). For MiniLM,
    # drawing them was a fifth of the load time. Hugging Face skips them the same way.
    with torch.device("meta"):
        encoder, embedder = _build_modules(settings, tokenizer, n_positions, dropout, attention_dropout)
    _check_complete(state, family, settings, model_type, prefix)
    shapes = {key: tuple(value.shape) for key, value in state.items()}
    # tabformer key -> the checkpoint's, for the tensors copied as they are
    origin = {"encoder.positions.embedding.weight": family.embeddings["positions"]}
    norms = [("embedding_norm", family.embeddings["norm"])]
    if encoder.embedding_projection is not None:  # ELECTRA-small: embeddings narrower than the layers
        norms.append(("embedding_projection", family.embeddings["projection"]))
    origin.update({f"encoder.{ours}.{kind}": f"{theirs}.{kind}" for ours, theirs in norms for kind in ("weight", "bias")})
    for i in range(encoder.n_layers):
        for theirs, ours in family.layer_names.items():
            for kind in ("weight", "bias"):
                origin[f"encoder.layers.{i}.{ours}.{kind}"] = f"{family.layer.format(i=i)}{theirs}.{kind}"
    target = {ours: state.pop(theirs) for ours, theirs in origin.items()}
    target["encoder.positions.embedding.weight"] = target["encoder.positions.embedding.weight"][offset:]
    origin["embedder.word_embeddings.weight"] = family.embeddings["words"]
    words = state.pop(family.embeddings["words"])
    source = torch.as_tensor(np.asarray(tokenizer.source_ids_))
    if int(source.max()) >= words.shape[0]:
        raise ValueError(f"the tokenizer has {tokenizer.vocab_size_} tokens but the word embeddings have {words.shape[0]} rows")
    if "types" in family.embeddings:
        origin["embedder.token_type_embeddings.weight"] = family.embeddings["types"]
        types = state.pop(family.embeddings["types"])
    else:
        types = torch.zeros(1, words.shape[1])
    # A single segment (RoBERTa) serves both parts of a pair; tabformer's pairs use ids 0 and 1.
    types = types if types.shape[0] > 1 else types.expand(2, -1).clone()
    embedder.token_type_embeddings = torch.nn.Embedding(types.shape[0], encoder.embedding_size)
    target["embedder.word_embeddings.weight"] = words[source]
    target["embedder.token_type_embeddings.weight"] = types
    if words.shape[1] == types.shape[1]:  # else _check_shapes names the one config.json contradicts
        target["encoder.cls_token"] = (words[source[CLS]] + types[0]).reshape(1, 1, -1)
    leftover = [key for key in state if not key.startswith(family.ignored)]
    if leftover:
        raise ValueError(f"unexpected {model_type} weights not mapped onto tabformer: {[prefix + key for key in leftover[:5]]}")
    pretrained = PretrainedEncoder(tokenizer, embedder, encoder)
    _check_shapes(pretrained, target, origin, shapes, config, family, offset, prefix)
    target = {key: value.to(torch.float32).contiguous() for key, value in target.items()}  # fp32 whatever the file holds
    missing, unexpected = pretrained.load_state_dict(target, strict=False, assign=True)
    unloaded = [key for key in missing if not key.startswith("tokenizer")]
    if unloaded or unexpected:  # pragma: no cover - guards the mapping above
        raise RuntimeError(f"{model_type} mapping incomplete: missing {unloaded}, unexpected {unexpected}")
    return pretrained.eval()
