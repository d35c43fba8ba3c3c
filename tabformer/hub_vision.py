"""timm Vision Transformers (ViT, DeiT) from a local checkpoint file into PatchTokenizer + the shared encoder.

timm reads the file (``create_model(name, pretrained=True)`` with the tensors as its
``pretrained_cfg`` ``state_dict`` source), so its own checkpoint filter applies: position
embeddings are resampled (bicubic) to the requested image size. The timm model then maps
one-to-one onto tabformer's modules, pre-LN:

=============================================  ==========================================
timm VisionTransformer                         tabformer
=============================================  ==========================================
pretrained_cfg mean / std                      tokenizer.mean_ / std_ (PixelNorm)
patch_embed.proj (conv P x P, stride P)        embedder.projection
pos_embed[:, 1:]                               embedder.positions (grid, row-major)
cls_token + pos_embed[:, 0]                    encoder.cls_token (the encoder adds no positions)
blocks.i.norm1 / norm2                         layers[i].norm1 / norm2
blocks.i.attn.qkv (split in three)             layers[i].attention.{query,key,value}
blocks.i.attn.proj                             layers[i].attention.out
blocks.i.mlp.fc1 / fc2                         layers[i].feed_forward.linear1 / linear2
blocks.i.ls1 / ls2 (LayerScale, DeiT-3)        folded into attention.out / linear2
norm                                           encoder.final_norm
=============================================  ==========================================
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .nn.embedders.backbone import check_backbone, check_covered, read_weights
from .nn.encoder import TransformerEncoder
from .nn.models import PretrainedEncoder
from .tokenizers.image import PatchTokenizer

__all__ = ["load_timm_vit"]


def load_timm_vit(path, model: str, image_size=None, pixel_scale="auto") -> PretrainedEncoder:
    """Build a :class:`~tabformer.nn.PretrainedEncoder` from a timm ViT checkpoint file.

    Parameters
    ----------
    path : str or path-like
        A ``.safetensors`` (or tensors-only ``.pth``) file with timm's key names, as
        ``save_file(model.state_dict(), path)`` or the Hugging Face hub's timm folders hold.
    model : str
        The timm architecture, e.g. ``"vit_small_patch16_224"`` or ``"deit_tiny_patch16_224"``.
    image_size : None, int or (int, int), default=None
        Size every image is resized to; ``None`` keeps the model's. Position embeddings
        are interpolated to it (timm's resampling). Must be a multiple of the patch size.
    pixel_scale : "auto" or float, default="auto"
        Divisor bringing the pixels to ``[0, 1]``. The tokenizer is fitted here, not on your
        data: ``"auto"`` fits it for uint8 images (divided by 255), with the pixel rule of
        every image input, so float images are refused rather than divided by 255 (pass
        ``1.0`` for floats in ``[0, 1]``; an explicit number skips the rule).

    Returns
    -------
    PretrainedEncoder
        A fitted colour :class:`~tabformer.tokenizers.PatchTokenizer` (grey images are
        replicated), its :class:`~tabformer.nn.embedders.image.PatchEmbedder` and a pre-LN
        :class:`~tabformer.nn.TransformerEncoder`, in eval mode; its output equals timm's
        ``forward_features``.

    Raises
    ------
    ValueError
        If ``model`` is not a plain timm ViT with a class token (register tokens,
        pre-norm, QK-norm, distillation tokens, a hybrid CNN stem, parallel blocks...), or the
        file does not fit it.

    Examples
    --------
    >>> encoder = load_timm_vit("vit_tiny.safetensors", "vit_tiny_patch16_224", image_size=64)  # doctest: +SKIP
    >>> encoder.tokenizer.grid_shape_  # doctest: +SKIP
    (4, 4)
    """
    import timm
    from timm.models.vision_transformer import VisionTransformer, checkpoint_filter_fn

    check_backbone(model)
    with torch.device("meta"):  # the bare architecture, to refuse early what cannot load
        skeleton = timm.create_model(model, num_classes=0)
    if not isinstance(skeleton, VisionTransformer):
        raise ValueError(f"{model} is a {type(skeleton).__name__}, not a timm VisionTransformer (ViT, DeiT)")
    patch = tuple(getattr(skeleton.patch_embed, "patch_size", (1, 1)))
    if image_size is not None:
        image_size = _check_image_size(image_size, patch, model)
    state = read_weights(path, model)
    saved = getattr(state.get("patch_embed.proj.weight"), "shape", ())
    if len(saved) == 4 and tuple(saved[-2:]) != patch:  # timm would resample them (FlexiViT-style), silently
        raise ValueError(
            f"{path} holds {saved[-2]}x{saved[-1]} patches (patch_embed.proj), {model} has {patch[0]}x{patch[1]}: "
            f"pass the timm model name the file was saved from (a *_patch{saved[-2]}_* model)"
        )
    # num_classes=0: timm drops the checkpoint's classifier, whatever its number of classes.
    options = {"num_classes": 0} if image_size is None else {"num_classes": 0, "img_size": image_size}
    try:
        vit = timm.create_model(model, pretrained=True, pretrained_cfg_overlay={"state_dict": state}, **options)
    except RuntimeError as error:
        raise ValueError(f"{path} does not fit {model}: {str(error)[:500]}") from None
    # The check sees the tensors as timm loaded them: its ViT filter drops pre_logits (older in21k files) and
    # converts other layouts (CLIP, DINOv2); an unfiltered file would be refused for tensors timm never uses.
    # timm's DeiT entry points (deit.py) load with adapt_layer_scale (gamma_1 -> ls1.gamma), its ViT ones without.
    adapt = timm.models.model_entrypoint(timm.models.get_arch_name(model)).__module__.endswith(".deit")
    check_covered(vit, checkpoint_filter_fn(state, vit, adapt_layer_scale=adapt), model, path)
    _check_plain(vit, model)
    vit.eval()
    width = vit.embed_dim
    patch = vit.patch_embed.patch_size
    if patch[0] != patch[1]:
        raise ValueError(f"{model} has {patch[0]}x{patch[1]} patches; tabformer's patches are square")
    height, width_px = vit.patch_embed.img_size
    tokenizer = PatchTokenizer(patch_size=patch[0], image_size=(height, width_px), normalize=False, pixel_scale=pixel_scale)
    tokenizer.fit(np.zeros((1, height, width_px, 3), dtype=np.uint8))
    config = vit.pretrained_cfg or {}
    tokenizer.mean_ = np.asarray(config.get("mean", (0.5,) * 3), dtype=float)
    tokenizer.std_ = np.asarray(config.get("std", (0.5,) * 3), dtype=float)
    blocks = list(vit.blocks)
    encoder = TransformerEncoder(
        d_model=width,
        n_layers=len(blocks),
        n_heads=blocks[0].attn.num_heads,
        d_ff=blocks[0].mlp.fc1.out_features,
        dropout=0.0,
        attention_dropout=0.0,
        activation="gelu",
        norm_first=True,
        positions=None,
        layer_norm_eps=vit.norm.eps,
    )
    embedder = tokenizer.build_embedder(width)
    prefix = 0 if vit.no_embed_class else 1
    cls_position = 0 if vit.no_embed_class else vit.pos_embed[:, :1]
    target = {
        "embedder.projection.weight": vit.patch_embed.proj.weight,
        "embedder.projection.bias": _bias(vit.patch_embed.proj, width),
        "embedder.positions.weight": vit.pos_embed[:, prefix:],
        "encoder.cls_token": vit.cls_token + cls_position,
        "encoder.final_norm.weight": vit.norm.weight,
        "encoder.final_norm.bias": vit.norm.bias,
    }
    for i, block in enumerate(blocks):
        target.update({f"encoder.layers.{i}.{name}": value for name, value in _block_weights(block, width).items()})
    pretrained = PretrainedEncoder(tokenizer, embedder, encoder)
    missing, unexpected = pretrained.load_state_dict({k: v.detach().clone() for k, v in target.items()}, strict=False)
    unloaded = [key for key in missing if not key.startswith("embedder.norm.")]
    if unloaded or unexpected:  # pragma: no cover - guards the mapping above
        raise RuntimeError(f"ViT mapping incomplete: missing {unloaded}, unexpected {unexpected}")
    return pretrained.eval()


def _check_image_size(image_size, patch, model: str):
    """``image_size`` as ints, or an error naming the nearest sizes the model's patches tile."""
    single = isinstance(image_size, (int, np.integer)) and not isinstance(image_size, bool)
    sides = (image_size, image_size) if single else image_size
    if not isinstance(sides, (tuple, list)) or len(sides) != 2 or not all(isinstance(side, (int, np.integer)) for side in sides):
        raise ValueError(f"image_size must be an int or a (height, width) pair of ints, got {image_size!r}")
    if all(side > 0 and side % size == 0 for side, size in zip(sides, patch)):
        return int(image_size) if single else tuple(int(side) for side in sides)
    nearest = {
        tuple(max(rounding(side / size) * size, size) for side, size in zip(sides, patch)): None
        for rounding in (math.floor, math.ceil)
    }
    shown = [size[0] if single and size[0] == size[1] else size for size in nearest]
    raise ValueError(
        f"image_size={image_size!r} is not a multiple of {model}'s patch size {patch[0]}x{patch[1]}, which its "
        f"pretrained weights fix: pass an image_size that is, e.g. the nearest {' or '.join(map(str, shown))}"
    )


def _check_plain(vit, model: str) -> None:
    """Refuse the ViT variants tabformer's encoder does not compute."""
    from timm.layers import PatchEmbed
    from timm.models.vision_transformer import Block

    problems = []
    if vit.cls_token is None:
        problems.append("no class token")
    if getattr(vit, "num_reg_tokens", 0) or getattr(vit, "num_prefix_tokens", 1) != 1 - (vit.cls_token is None):
        problems.append("register or distillation tokens")
    if vit.pos_embed is None:
        problems.append("no absolute position embedding")
    if not isinstance(vit.norm_pre, nn.Identity) or not isinstance(getattr(vit.patch_embed, "norm", nn.Identity()), nn.Identity):
        problems.append("a pre-norm")
    if getattr(vit, "dynamic_img_size", False):
        problems.append("dynamic image size")
    if not isinstance(vit.patch_embed, PatchEmbed):  # a hybrid ViT's CNN stem (HybridEmbed) has no linear patches
        problems.append(f"a {type(vit.patch_embed).__name__} patch embedding (a CNN stem, not linear patches)")
    # Parallel and post-norm blocks order their sub-layers otherwise; reading their tensors
    # as a pre-LN block's would load without error and compute something else.
    unusual = sorted({type(block).__name__ for block in vit.blocks if type(block) is not Block})
    if unusual:
        problems.append(f"{'/'.join(unusual)} blocks (tabformer computes timm's pre-norm Block)")
        raise ValueError(f"{model} does not map onto tabformer's encoder: {', '.join(dict.fromkeys(problems))}")
    block = vit.blocks[0]
    attn, mlp = block.attn, block.mlp
    for part in ("q_norm", "k_norm", "norm"):
        if not isinstance(getattr(attn, part, nn.Identity()), nn.Identity):
            problems.append(f"attention {part}")
    if not hasattr(attn, "qkv") or not hasattr(mlp, "fc1") or not isinstance(getattr(mlp, "norm", nn.Identity()), nn.Identity):
        problems.append(f"{type(attn).__name__}/{type(mlp).__name__} blocks")
    act = getattr(mlp, "act", None)
    if not isinstance(block.norm1, nn.LayerNorm) or not isinstance(block.norm2, nn.LayerNorm):
        problems.append(f"{type(block.norm1).__name__} norms (tabformer has LayerNorm)")
    if not (isinstance(act, nn.GELU) and act.approximate == "none"):
        problems.append(f"activation {act!r} (tabformer has exact GELU)")
    if problems:
        raise ValueError(f"{model} does not map onto tabformer's encoder: {', '.join(dict.fromkeys(problems))}")


def _bias(linear: nn.Module, width: int) -> torch.Tensor:
    return linear.bias if linear.bias is not None else torch.zeros(width)


def _block_weights(block, width: int) -> dict:
    """One timm block's tensors under tabformer's names; LayerScale folded into the output layers."""
    qkv_weight = block.attn.qkv.weight
    qkv_bias = _bias(block.attn.qkv, 3 * width)
    scale1 = getattr(block.ls1, "gamma", torch.ones(width))
    scale2 = getattr(block.ls2, "gamma", torch.ones(width))
    out = {}
    for index, name in enumerate(("query", "key", "value")):
        out[f"attention.{name}.weight"] = qkv_weight[index * width : (index + 1) * width]
        out[f"attention.{name}.bias"] = qkv_bias[index * width : (index + 1) * width]
    out["attention.out.weight"] = block.attn.proj.weight * scale1[:, None]
    out["attention.out.bias"] = _bias(block.attn.proj, width) * scale1
    out["feed_forward.linear1.weight"] = block.mlp.fc1.weight
    out["feed_forward.linear1.bias"] = _bias(block.mlp.fc1, block.mlp.fc1.out_features)
    out["feed_forward.linear2.weight"] = block.mlp.fc2.weight * scale2[:, None]
    out["feed_forward.linear2.bias"] = _bias(block.mlp.fc2, width) * scale2
    for name in ("norm1", "norm2"):
        out[f"{name}.weight"] = getattr(block, name).weight
        out[f"{name}.bias"] = getattr(block, name).bias
    return out
