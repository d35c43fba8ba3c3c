"""Saved encoders: :class:`~tabformer.nn.PretrainedEncoder` folders, the encoder inside an
estimator's folder, and the weights file every folder shares.

A ``PretrainedEncoder`` folder holds ``config.json`` (``"object": "pretrained_encoder"``:
the tokenizer's state, the embedder's spec and the encoder's constructor arguments),
``model.safetensors`` (``embedder.*`` and ``encoder.*``) and the tokenizer's files. The
modules are rebuilt from the config (random weights, right shapes) and the tensors
loaded strictly, every name and shape checked first.
"""

from __future__ import annotations

import os
import re

import torch
from safetensors.torch import load_file

from ..nn.embedders import build_embedder
from ..nn.encoder import TransformerEncoder
from ..nn.ensemble import EnsembleModel
from ..nn.models import FOLDER_IO, LateFusionModel, PretrainedEncoder
from ..nn.positions import saved_encoder_config
from ._files import Reader, Writer
from ._format import CONFIG_FILE, WEIGHTS_FILE, PersistenceError, header, qualified_name
from .tokenizers import tokenizer_from_json, tokenizer_to_json

__all__ = [
    "save_pretrained_encoder",
    "load_pretrained_encoder",
    "load_encoder",
    "encoder_to_folder",
    "encoder_from_folder",
    "load_weights",
    "offline_spec",
]


def offline_spec(spec):
    """``spec`` with pretrained-stem weight files left out: ``model.safetensors`` holds every
    tensor, so loading a hybrid image model needs neither the weights package nor the file."""
    if isinstance(spec, list):
        return [offline_spec(item) for item in spec]
    if not isinstance(spec, dict):
        return spec
    out = {key: offline_spec(value) for key, value in spec.items()}
    if out.get("kind") == "hybrid":
        out["weights"] = None
    return out


_OLD_STEM_KEY = re.compile(r"^(.*\.stem\.)(\d+)\.(.*)$")


def _renamed_stem_keys(state: dict, expected: dict) -> dict:
    """Hybrid image models saved before any timm CNN could be a stem held EfficientNet's
    stem as a Sequential (``stem.0`` conv, ``stem.1`` BatchNorm, ``stem.<2+i>`` block ``i``);
    the stem is now timm's features-only model (``stem.features.conv_stem``...)."""
    out = {}
    for key, value in state.items():
        match = _OLD_STEM_KEY.match(key)
        if match and key not in expected:
            prefix, index, rest = match.group(1), int(match.group(2)), match.group(3)
            part = ("conv_stem", "bn1")[index] if index < 2 else f"blocks.{index - 2}"
            key = f"{prefix}features.{part}.{rest}"
        out[key] = value
    return out


def load_weights(module: torch.nn.Module, reader: Reader, select: str | tuple | None = None, member: str = "") -> None:
    """Load ``model.safetensors`` into ``module`` strictly; errors name the tensor.

    Parameters
    ----------
    select : str or tuple of str, optional
        Only the tensors whose names start with these prefixes (an encoder read out of a
        whole model's file).
    member : str, default=""
        A prefix read before ``select`` and dropped: ``"members.0."``, an ensemble's first member.
    """
    path = reader.path(WEIGHTS_FILE)
    try:
        state = load_file(str(path), device="cpu")
    except Exception as error:  # safetensors raises its own error types
        raise PersistenceError(f"{path} is not a readable safetensors file ({str(error)[:200]}); it was not loaded") from None
    if member:
        state = {key[len(member) :]: value for key, value in state.items() if key.startswith(member)}
    if select is not None:
        state = {key: value for key, value in state.items() if key.startswith(select)}
    expected = {key: tuple(value.shape) for key, value in module.state_dict().items()}
    state = _renamed_stem_keys(state, expected)
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        parts = [f"lacks tensor(s) {missing[:5]}"] if missing else []
        parts += [f"holds tensor(s) {unexpected[:5]} the model does not have"] if unexpected else []
        raise PersistenceError(f"{path} does not match the model config.json describes: it {' and '.join(parts)}")
    for key, shape in expected.items():
        if tuple(state[key].shape) != shape:
            raise PersistenceError(
                f"{path}: tensor {key!r} has shape {list(state[key].shape)}, but the model config.json describes "
                f"needs {list(shape)}; the weights do not belong to this config"
            )
    module.load_state_dict(state, strict=True)


# ----------------------------------------------------------------------------- writing
def encoder_to_folder(encoder, writer: Writer) -> None:
    """Write a PretrainedEncoder or a TransformerEncoder as a folder through ``writer``."""
    if isinstance(encoder, PretrainedEncoder):
        config = header("pretrained_encoder")
        config["tokenizer"] = tokenizer_to_json(encoder.tokenizer, writer, "tokenizer")
        config["embedder"] = encoder.tokenizer.embedder_spec()
        config["encoder"] = dict(encoder.encoder.config)
    elif isinstance(encoder, TransformerEncoder):
        config = header("transformer_encoder")
        config["encoder"] = dict(encoder.config)
    else:
        raise PersistenceError(f"cannot save a {type(encoder).__name__} as an encoder folder")
    config["n_parameters"] = sum(p.numel() for p in encoder.parameters())
    writer.tensors(WEIGHTS_FILE, encoder.state_dict())
    writer.finish_arrays()
    config["files"] = writer.listed()
    writer.json(CONFIG_FILE, config)


def save_pretrained_encoder(encoder: PretrainedEncoder, path) -> None:
    """``PretrainedEncoder.save``: a folder, no pickle."""
    writer = Writer()
    encoder_to_folder(encoder, writer)
    writer.commit(path)


# ----------------------------------------------------------------------------- reading
def encoder_from_folder(reader: Reader, config: dict, kind: str):
    """The encoder a folder describes: a PretrainedEncoder (from a PretrainedEncoder folder or
    an estimator's folder) or a TransformerEncoder, weights loaded, on the CPU, in eval mode."""
    if kind == "transformer_encoder":
        encoder = TransformerEncoder(**saved_encoder_config(config["encoder"]))
        load_weights(encoder, reader)
        return encoder.eval()
    member = ""
    if kind == "pretrained_encoder":
        tokenizer_state, spec, encoder_config = config["tokenizer"], config["embedder"], config["encoder"]
    elif kind == "estimator":
        module = config["module"]
        # An ensemble (``ensemble_size``) warm-starts from its first member, as one model would.
        member = "members.0." if module["class"] == qualified_name(EnsembleModel, "module") else ""
        if module["class"] == qualified_name(LateFusionModel, "module") or (len(module["encoders"]) != 1 and not member):
            raise PersistenceError(
                f"{reader.folder} holds a late-fusion model (one encoder per modality); only a model with one encoder "
                "(fusion='early' or mid fusion) can warm-start another as its encoder"
            )
        tokenizer_state, spec, encoder_config = config["tokenizer"], module["embedder"], module["encoders"][0]
    else:
        raise PersistenceError(f"{reader.path(CONFIG_FILE)} holds a {kind!r}, not an encoder or an estimator")
    tokenizer = tokenizer_from_json(tokenizer_state, reader, "tokenizer")
    encoder = TransformerEncoder(**saved_encoder_config(encoder_config))
    embedder = build_embedder(offline_spec(spec), encoder.embedding_size)
    pretrained = PretrainedEncoder(tokenizer, embedder, encoder)
    load_weights(pretrained, reader, select=("embedder.", "encoder."), member=member)
    return pretrained.eval()


def _seeded_build(function, *args):
    """Build modules without touching the caller's random state (their weights are replaced anyway)."""
    with torch.random.fork_rng(devices=[]):
        return function(*args)


def load_encoder(path, map_location="cpu", trusted=()):
    """The encoder of any saved folder: a PretrainedEncoder (from a PretrainedEncoder folder or
    an estimator's), or a TransformerEncoder (a folder holding one alone)."""
    reader = Reader(os.fspath(path), trusted)
    config, kind = reader.open()
    return _seeded_build(encoder_from_folder, reader, config, kind).to(map_location)


def load_pretrained_encoder(path, map_location="cpu", trusted=()):
    """``PretrainedEncoder.load``: a PretrainedEncoder folder, or the encoder of an estimator's folder."""
    encoder = load_encoder(path, map_location, trusted)
    if not isinstance(encoder, PretrainedEncoder):
        raise PersistenceError(f"{path} holds a TransformerEncoder alone; load it with tabformer.load")
    return encoder


FOLDER_IO.update(save=save_pretrained_encoder, load=load_pretrained_encoder)
