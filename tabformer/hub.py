"""Read pretrained encoders from local files (no hub): tabformer's own saved folders and
``TransformerEncoder.save`` files, and Hugging Face text folders (:mod:`tabformer.hub_text`:
BERT, RoBERTa, DistilBERT, ELECTRA).
"""

from __future__ import annotations

import copy
import os

from .hub_text import FAMILIES, load_text_folder
from .hub_vision import load_timm_vit
from .nn.encoder import TransformerEncoder
from .nn.models import PretrainedEncoder
from .nn.positions import saved_encoder_config
from .nn.safe_load import UnsafeFileError
from .persistence import is_saved_folder, load_encoder
from .tokenizers.image import _pair

__all__ = [
    "FAMILIES",
    "configure_pretrained",
    "hf_cache_folder",
    "load_bert",
    "load_for_estimator",
    "load_pretrained",
    "load_text_folder",
    "load_timm_vit",
]

#: the name this loader had when it read BERT folders only; every family of FAMILIES loads
load_bert = load_text_folder


def load_pretrained(path, model: str | None = None, **kwargs) -> PretrainedEncoder | TransformerEncoder:
    """The encoder at ``path``, read without unpickling anything.

    - a folder written by ``PretrainedEncoder.save`` or by an estimator's ``save``: its
      :class:`PretrainedEncoder` (tokenizer, embedder, encoder);
    - a local Hugging Face text folder: :func:`load_text_folder` (``kwargs`` go to it);
    - a file written by ``TransformerEncoder.save``: that :class:`TransformerEncoder`;
    - with ``model`` (a timm ViT name), a timm checkpoint file: :func:`~tabformer.hub_vision.load_timm_vit`.

    Files written by ``PretrainedEncoder.save`` in tabformer 0.1 were pickles; they are
    refused with an error that says so.

    Parameters
    ----------
    path : str or os.PathLike
        A saved folder, a Hugging Face text folder or a ``TransformerEncoder.save`` file;
        or a hub name (``"bert-base-uncased"``, ``"timm/vit_tiny_patch16_224.augreg_in21k"``)
        already in the local Hugging Face cache (:func:`hf_cache_folder`).
    model : str or None, default=None
        The timm architecture of a ViT checkpoint at ``path`` (``"vit_small_patch16_224"``).
    **kwargs
        :func:`load_text_folder`'s options (``max_length``, ``dropout``, ``attention_dropout``);
        BERT folders only, anything else with options raises ``TypeError``.

    Returns
    -------
    PretrainedEncoder or TransformerEncoder
    """
    folder = os.fspath(path)
    if not os.path.exists(folder):
        folder = hf_cache_folder(folder) or folder
    if model is not None:
        if os.path.isdir(folder):  # a timm folder as the hub ships it
            folder = os.path.join(folder, "model.safetensors")
        return load_timm_vit(folder, model, **kwargs)
    if os.path.isdir(folder):
        if is_saved_folder(folder):
            if kwargs:
                raise TypeError(f"options {sorted(kwargs)} only apply to BERT folders")
            return load_encoder(folder)
        return load_text_folder(folder, **kwargs)
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


def load_for_estimator(path, model: str | None = None, **params):
    """``from_pretrained``'s loading: the encoder at ``path`` with the routed settings applied.

    ``tokenizer__*`` and ``encoder__*`` settings go to :func:`configure_pretrained` (for a
    timm ViT, ``tokenizer__image_size`` and ``tokenizer__pixel_scale`` go to the loader);
    the other parameters are returned for the estimator.

    Parameters
    ----------
    path : str or os.PathLike
        What :func:`load_pretrained` reads.
    model : str or None, default=None
        The timm architecture of a ViT checkpoint file.
    **params
        An estimator's parameters.

    Returns
    -------
    encoder : PretrainedEncoder or TransformerEncoder
    params : dict
        The parameters left for the estimator (``tokenizer__*`` too when ``encoder`` is a bare
        TransformerEncoder, whose tokenizer is fitted anew).

    Examples
    --------
    >>> encoder, rest = load_for_estimator("distilbert-folder/", tokenizer__max_length=256, lr=1e-4)  # doctest: +SKIP
    >>> rest  # doctest: +SKIP
    {'lr': 0.0001}
    """
    routed = {
        prefix: {key[len(prefix) + 2 :]: params.pop(key) for key in list(params) if key.startswith(prefix + "__")}
        for prefix in ("tokenizer", "encoder")
    }
    # A timm ViT is built for its image size and pixel scale: they go to the loader.
    options = {key: routed["tokenizer"].pop(key) for key in ("image_size", "pixel_scale") if model and key in routed["tokenizer"]}
    encoder = configure_pretrained(load_pretrained(path, model=model, **options), routed["tokenizer"], routed["encoder"])
    if not isinstance(encoder, PretrainedEncoder):  # a bare encoder: a new tokenizer is fitted
        params.update({f"tokenizer__{key}": value for key, value in routed["tokenizer"].items()})
    return encoder, params


#: encoder settings that only change training, not the weights: a pretrained encoder takes them
_ENCODER_TUNABLE = ("dropout", "attention_dropout", "ffn_dropout")
#: tokenizer settings that leave the ids and the embedder's shapes alone
_TOKENIZER_TUNABLE = ("max_length", "text_columns", "token_dropout", "random_shift")


def configure_pretrained(pretrained, tokenizer_params=None, encoder_params=None):
    """A copy of ``pretrained`` with the routed settings the weights allow, or a clear error.

    ``encoder__dropout``, ``encoder__attention_dropout``, ``encoder__ffn_dropout`` rebuild the
    encoder with the same weights; an architecture setting (``d_model``, ``n_layers``,
    ``n_heads``...) must equal the weights' own. ``tokenizer__max_length`` (up to the
    encoder's positions), ``text_columns``, ``token_dropout`` and ``random_shift`` change the
    fitted tokenizer (and the embedder where it keeps the setting); a setting that would
    change the vocabulary or the pixels' layout must equal the tokenizer's.

    Parameters
    ----------
    pretrained : PretrainedEncoder or TransformerEncoder
    tokenizer_params, encoder_params : dict or None
        ``tokenizer__*`` and ``encoder__*`` settings without their prefix.

    Returns
    -------
    PretrainedEncoder or TransformerEncoder
        A new object; ``pretrained`` is left unchanged.

    Raises
    ------
    ValueError
        For a setting that contradicts the weights, or an unknown one.

    Examples
    --------
    >>> encoder = TransformerEncoder(d_model=16, n_layers=1, n_heads=2)
    >>> configure_pretrained(encoder, encoder_params={"dropout": 0.2}).config["dropout"]
    0.2
    """
    pretrained = copy.deepcopy(pretrained)
    encoder = pretrained.encoder if isinstance(pretrained, PretrainedEncoder) else pretrained
    encoder = _configure_encoder(encoder, dict(encoder_params or {}))
    if not isinstance(pretrained, PretrainedEncoder):
        return encoder
    pretrained.encoder = encoder
    tokenizer, current = pretrained.tokenizer, pretrained.tokenizer.get_params(deep=False)
    tokenizer_params = dict(tokenizer_params or {})
    fitted_size = getattr(tokenizer, "image_size_", None)
    wanted = tokenizer_params.get("image_size")
    if wanted is not None and fitted_size is not None and _pair(wanted) == fitted_size:
        current = {**current, "image_size": wanted}  # the size the weights saw: images are resized to it
    _check_settings("tokenizer", tokenizer_params, current, _TOKENIZER_TUNABLE, type(tokenizer).__name__)
    for key, value in tokenizer_params.items():
        positions = encoder.config["max_length"] if encoder.config["positions"] else None
        if key == "max_length" and positions is not None and value > positions:
            raise ValueError(f"tokenizer__max_length={value} exceeds the {positions} positions of the pretrained encoder")
        tokenizer.set_params(**{key: value})
        if hasattr(pretrained.embedder, key):  # settings the embedder applies (word dropout, shifts)
            setattr(pretrained.embedder, key, value)
    return pretrained


def _configure_encoder(encoder: TransformerEncoder, params: dict) -> TransformerEncoder:
    config = saved_encoder_config(encoder.config)  # one unpickled from before positions_scale: its raw table
    _check_settings("encoder", params, config, _ENCODER_TUNABLE, "TransformerEncoder")
    if all(params.get(key, config[key]) == config[key] for key in _ENCODER_TUNABLE):
        return encoder
    rebuilt = TransformerEncoder(**{**config, **{key: params[key] for key in _ENCODER_TUNABLE if key in params}})
    rebuilt.load_state_dict(encoder.state_dict())
    return rebuilt.train(encoder.training)


def _check_settings(prefix: str, params: dict, current: dict, tunable: tuple, owner: str) -> None:
    """Refuse unknown settings and, outside ``tunable``, any that differ from the weights' own."""
    for key, value in params.items():
        if key not in current:
            raise ValueError(f"{prefix}__{key}: not a parameter of {owner}; it has {sorted(current)}")
        if key not in tunable and value != current[key]:
            raise ValueError(
                f"{prefix}__{key}={value!r} contradicts the pretrained weights ({key}={current[key]!r}); drop it to "
                f"keep the weights, or train from scratch. Changeable: {[k for k in tunable if k in current]}"
            )


def hf_cache_folder(name: str, revision: str = "main") -> str | None:
    """The snapshot folder of a model in the local Hugging Face cache, or ``None``; no network.

    The cache is ``$HF_HUB_CACHE``, else ``$HF_HOME/hub``, else ``~/.cache/huggingface/hub``;
    a model ``org/name`` lives in ``models--org--name/snapshots/<commit>/``, the commit of
    ``revision`` being written in ``models--org--name/refs/<revision>`` (without that
    file, a single snapshot is taken).

    Parameters
    ----------
    name : str
        A hub model id, ``"org/name"`` or ``"name"``.
    revision : str, default="main"
        A branch or tag with a ``refs`` file, or a commit hash.

    Returns
    -------
    str or None

    Examples
    --------
    >>> hf_cache_folder("no-such-org/no-such-model") is None
    True
    """
    home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    cache = os.environ.get("HF_HUB_CACHE") or os.path.join(home, "hub")
    repo = os.path.join(cache, "models--" + name.replace("/", "--"))
    ref = os.path.join(repo, "refs", revision)
    commit = revision
    if os.path.isfile(ref):
        with open(ref, encoding="utf-8") as handle:
            commit = handle.read().strip()
    folder = os.path.join(repo, "snapshots", commit)
    if not os.path.isdir(folder) and revision == "main" and os.path.isdir(os.path.dirname(folder)):
        snapshots = os.listdir(os.path.dirname(folder))  # copied caches may lack refs/: one snapshot is unambiguous
        folder = os.path.join(repo, "snapshots", snapshots[0]) if len(snapshots) == 1 else folder
    return folder if os.path.isdir(folder) else None
