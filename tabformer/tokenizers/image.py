"""Images as ViT patch tokens (optionally through a pretrained convolutional stem).

Host half (:class:`PatchTokenizer`): reads numpy arrays, PIL images or image files,
brings them to one size and channel count, and returns ``{"pixels": (N, C, H, W)}``
float32 in ``[0, 1]``. The per-channel normalisation is *fitted* here but *applied* in
the embedder, because augmentations (SimCLR's colour jitter, crops) are defined on
``[0, 1]`` images and must run between the two.

Device half (:class:`~tabformer.nn.embedders.image.PatchEmbedder`,
:class:`~tabformer.nn.embedders.image.HybridEmbedder`): normalise, cut into
``P x P`` patches with a strided convolution (or take the cells of a CNN feature map),
and add learned 2-D position embeddings (one per grid cell), so the encoder itself is
left without positions (``default_positions = None``).
"""

from __future__ import annotations

import numpy as np
import torch
from sklearn.utils.validation import check_is_fitted

from ..nn.embedders.backbone import check_backbone, load_backbone
from ._image_io import read_images
from ._pixels import check_pixels, fit_pixel_scale, pixel_kind
from .base import BaseTokenizer, register_tokenizer

__all__ = ["PatchTokenizer"]


def _to_unit_float(array: np.ndarray, scale: float) -> np.ndarray:
    if array.dtype == bool:
        return array.astype(np.float32)
    return np.clip(array.astype(np.float32) / np.float32(scale), 0.0, 1.0)


def _resize(images: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    from torchvision.transforms.v2 import functional as TF

    return TF.resize(images, list(size), antialias=True).clamp_(0.0, 1.0)


# ----------------------------------------------------------------------------- tokenizer
@register_tokenizer("patch", "image")
class PatchTokenizer(BaseTokenizer):
    """ViT tokenizer: an image becomes a grid of ``P x P`` patches.

    Parameters
    ----------
    patch_size : int, default=4
        Side ``P`` of the square patches; the image side must be divisible by it
        (set ``image_size`` to resize otherwise). Not used with a ``backbone``, whose
        feature-map cells are the tokens.
    image_size : None, int or (int, int), default=None
        Size ``(H, W)`` every image is resized to (torchvision v2, antialiased).
        ``None`` keeps the training images' common size and rejects any other size
        with an error naming the image.
    accept_any_size : bool, default=True
        With ``image_size``, resize images of any size. ``False`` resizes only images of
        the training images' common size and rejects others as ``image_size=None`` does:
        what the estimators' recipes set when they upscale small images on their own, so
        a single ``(H, W, 3)`` image (read as ``H`` grey images) is not stretched silently.
    normalize : bool, default=True
        Standardise each channel with the mean and std fitted on the training
        pixels. Ignored with a pretrained ``backbone``, which gets the normalisation
        its weights were trained with.
    pixel_scale : "auto" or float, default="auto"
        Divisor bringing pixels to ``[0, 1]``. ``"auto"``: 255 for uint8 (the dtype's
        maximum for other integer types), 1 for float images within ``[0, 1]``, and
        the largest training value for other float images (e.g. 16 for
        ``load_digits().images``).
    backbone : None or str, default=None
        Hybrid ViT: any timm CNN name (``"tf_efficientnet_lite0"``, ``"resnet18"``...)
        whose feature map after stage ``backbone_blocks`` becomes the tokens, projected
        to ``d_model`` by a 1x1 conv.
    backbone_blocks : int, default=2
        The timm feature stage kept (EfficientNet-Lite0: 2 gives stride 4 and 24
        channels, 3 gives stride 8 and 40 channels; ResNet-18: 2 gives stride 4, 64).
    backbone_weights : "auto", None or path, default="auto"
        ``"auto"`` loads the ImageNet weights shipped by the pip package in
        :data:`~tabformer.nn.embedders.backbone.BACKBONES` (error naming the install
        line if missing); ``None`` starts from random weights; a path loads a timm
        checkpoint (``.safetensors`` or a tensors-only ``.pth``) through timm.
    freeze_backbone : bool, default=True
        Keep the stem's weights and BatchNorm statistics fixed (eval mode).
    random_shift : int, default=0
        Translate each training image by up to this many pixels in each direction
        (zero fill), drawn afresh for every batch by the embedder in train mode only:
        ``predict`` and ``transform`` never see it. +-2 pixels lifted a small ViT on
        3,750 Fashion-MNIST images from 0.926 to 0.959 (a plain-PyTorch ViT, measured on 2 CPU cores).
    conv_stem : tuple of int, default=()
        Widths of 3x3 convolution + BatchNorm + GELU layers, trained with the model, that
        run at full resolution before the patches are cut (a convolutional stem, after
        Xiao et al. 2021; see :func:`~tabformer.nn.embedders.image.make_conv_stem`).
        ``()`` is the plain ViT. Not used with a ``backbone``. ``(32, 64)`` with 2x2 patches
        lifted 8x8 digits from 0.90 (plain patches) and 0.94 (the pretrained stem) to
        0.98-0.99 on a validation split (docs/defaults.md).

    Attributes
    ----------
    image_size_ : (int, int)
        ``(H, W)`` every image is brought to.
    input_size_ : (int, int) or None
        The training images' common size, which ``transform`` requires (None: any size,
        with ``image_size`` and ``accept_any_size``).
    n_channels_ : int
        1 (grey) or 3 (colour). Grey images are replicated when the tokenizer was
        fitted on colour ones; colour *arrays* are rejected by a grey tokenizer, while
        PIL images and files are converted to the fitted mode (``"L"`` or ``"RGB"``).
    pixel_scale_ : float
        Divisor that brings the pixels to ``[0, 1]``.
    mean_, std_ : ndarray of shape (n_channels,), one value per channel
        Per-channel statistics of the training pixels in ``[0, 1]`` (0 and 1 without
        ``normalize`` or with a ``backbone``); applied by the embedder.
    grid_shape_ : (int, int)
        Token grid ``(h, w)``; the sequence has ``h * w`` tokens.
    n_tokens_ : int
        ``h * w``.

    Examples
    --------
    >>> import numpy as np
    >>> images = np.random.default_rng(0).integers(0, 256, (5, 28, 28), dtype=np.uint8)
    >>> tok = PatchTokenizer(patch_size=7).fit(images)
    >>> tok.transform(images)["pixels"].shape, tok.grid_shape_
    ((5, 1, 28, 28), (4, 4))
    """

    fit_reads_target = False  # its image size and pixel statistics come from X alone

    default_positions = None  # the embedders add their own 2-D positions
    kind = "image"

    def __init__(
        self,
        patch_size=4,
        image_size=None,
        normalize=True,
        pixel_scale="auto",
        backbone=None,
        backbone_blocks=2,
        backbone_weights="auto",
        freeze_backbone=True,
        random_shift=0,
        conv_stem=(),
        accept_any_size=True,
    ):
        self.patch_size = patch_size
        self.image_size = image_size
        self.normalize = normalize
        self.pixel_scale = pixel_scale
        self.backbone = backbone
        self.backbone_blocks = backbone_blocks
        self.backbone_weights = backbone_weights
        self.freeze_backbone = freeze_backbone
        self.random_shift = random_shift
        self.conv_stem = conv_stem
        self.accept_any_size = accept_any_size

    # ------------------------------------------------------------------ host half
    def fit(self, X, y=None):
        """Learn size, channels, pixel scale and per-channel statistics from ``X``.

        Parameters
        ----------
        X : ndarray (N, H, W) or (N, H, W, C), or list of arrays, PIL images or paths
            Training images, channels last (``C`` = 1 or 3).
        y : ignored
            Not used, present for API consistency.

        Returns
        -------
        self : PatchTokenizer
            The fitted tokenizer.

        Raises
        ------
        ValueError
            If a setting is invalid, an image cannot be read or has a bad shape, the images
            differ in size without ``image_size``, or the size is not divisible by ``patch_size``.
        TypeError
            If ``X`` is not an array or a list.
        """
        self._check_params()
        images = read_images(X)
        check_pixels(images)
        scale = fit_pixel_scale(images) if self.pixel_scale == "auto" else float(self.pixel_scale)
        kinds = {pixel_kind(a.dtype) for a in ([images] if isinstance(images, np.ndarray) else images)}
        self.pixel_kind_ = kinds.pop() if len(kinds) == 1 else None
        if isinstance(images, np.ndarray):
            self.n_channels_ = images.shape[-1]
            sizes = {images.shape[1:3]}
        else:
            self.n_channels_ = 3 if any(image.shape[-1] == 3 for image in images) else 1
            sizes = {image.shape[:2] for image in images}
        if self.image_size is None or not self.accept_any_size:
            if len(sizes) > 1:
                first = images[0].shape[:2]
                index = next(i for i, image in enumerate(images) if image.shape[:2] != first)
                raise ValueError(
                    f"images differ in size: image 0 is {first[0]}x{first[1]}, image {index} is "
                    f"{images[index].shape[0]}x{images[index].shape[1]}; set image_size to resize them "
                    "(tokenizer__image_size; tokenizer__image__image_size for mixed inputs)"
                )
            self.input_size_ = tuple(int(s) for s in sizes.pop())
        else:
            self.input_size_ = None
        self.image_size_ = self.input_size_ if self.image_size is None else _pair(self.image_size)
        self.pixel_scale_ = scale
        pixels = self._to_tensor(images)
        if self.normalize and self.backbone is None:
            self.mean_ = pixels.mean(dim=(0, 2, 3)).double().numpy()
            std = pixels.std(dim=(0, 2, 3)).double().numpy()
            self.std_ = np.where(std > 1e-6, std, 1.0)
        else:
            self.mean_, self.std_ = np.zeros(self.n_channels_), np.ones(self.n_channels_)
        self.grid_shape_ = self._grid_shape()
        return self

    def transform(self, X) -> dict:
        """Read, scale, channel-match and resize images to the fitted size.

        Parameters
        ----------
        X : ndarray (N, H, W) or (N, H, W, C), or list of arrays, PIL images or paths
            Images, channels last.

        Returns
        -------
        batch : dict
            ``{"pixels": float32 ndarray of shape (N, C, H, W) in [0, 1]}``, ``C = n_channels_``
            and ``(H, W) = image_size_``.

        Raises
        ------
        ValueError
            If an image cannot be read, has colour channels for a grey tokenizer, has
            another size than in ``fit`` while ``image_size`` is None, or breaks the pixel
            rule (NaN/inf or negative pixels, another pixel kind or scale than at ``fit``;
            see docs/reliability.md).
        """
        check_is_fitted(self, "image_size_")
        images = read_images(X, colour=self.n_channels_ == 3)
        kind = getattr(self, "pixel_kind_", None) if self.pixel_scale == "auto" else None  # see _pixels.py
        check_pixels(images, kind, self.pixel_scale_ if kind in ("float", "integer") else None)
        return {"pixels": self._to_tensor(images).numpy()}

    def __setstate__(self, state):
        # A tokenizer pickled before conv stems existed: the plain ViT it was fitted as.
        state.setdefault("conv_stem", ())
        super().__setstate__(state)

    def _check_params(self):
        if not isinstance(self.patch_size, (int, np.integer)) or self.patch_size < 1:
            raise ValueError(f"patch_size must be a positive int, got {self.patch_size!r}")
        if self.image_size is not None:
            _pair(self.image_size)
        if not (self.pixel_scale == "auto" or (isinstance(self.pixel_scale, (int, float)) and self.pixel_scale > 0)):
            raise ValueError(f"pixel_scale must be 'auto' or a positive number, got {self.pixel_scale!r}")
        if not isinstance(self.random_shift, (int, np.integer)) or self.random_shift < 0:
            raise ValueError(f"random_shift must be a non-negative int, got {self.random_shift!r}")
        widths = self.conv_stem
        valid = isinstance(widths, (tuple, list)) and all(
            isinstance(w, (int, np.integer)) and not isinstance(w, bool) and w > 0 for w in widths
        )
        if not valid:
            raise ValueError(f"conv_stem must be a tuple of positive ints (layer widths), got {widths!r}")
        if self.backbone is not None:
            check_backbone(self.backbone)
            if len(widths):
                raise ValueError(f"conv_stem={tuple(widths)!r} and backbone={self.backbone!r} are two stems: set one of them")

    def _to_tensor(self, images) -> torch.Tensor:
        """Scaled, channel-matched and resized (N, C, H, W) float32 tensor."""
        if isinstance(images, np.ndarray):
            pixels = torch.from_numpy(_to_unit_float(images, self.pixel_scale_)).permute(0, 3, 1, 2)
            pixels = self._match_channels(pixels, 0)
            return self._match_size(pixels, range(len(pixels))).contiguous()
        out = torch.empty(len(images), self.n_channels_, *self.image_size_)
        for index, image in enumerate(images):
            pixels = torch.from_numpy(_to_unit_float(image, self.pixel_scale_)).permute(2, 0, 1)[None]
            out[index] = self._match_size(self._match_channels(pixels, index), [index])[0]
        return out

    def _match_channels(self, pixels: torch.Tensor, index: int) -> torch.Tensor:
        channels = pixels.shape[1]
        if channels == self.n_channels_:
            return pixels
        if channels == 1:
            return pixels.expand(-1, self.n_channels_, -1, -1)
        raise ValueError(f"image {index} has {channels} channels but the tokenizer was fitted on grey images (1 channel)")

    def _match_size(self, pixels: torch.Tensor, indices) -> torch.Tensor:
        size = tuple(pixels.shape[-2:])
        if self.image_size is None:
            fitted = self.image_size_
        else:  # resized to image_size: from any size, or (the recipes' upscale) from the training images' only
            fitted = None if getattr(self, "accept_any_size", True) else getattr(self, "input_size_", None)
        if fitted is not None and size != fitted:
            first = next(iter(indices))
            one_image = size[1] in (3, 4) and self.n_channels_ == 3  # (H, W, 3) given alone: H grey images
            hint = "; if X is one colour image of shape (H, W, 3), pass [X] or X[None]" if one_image else ""
            raise ValueError(
                f"image {first} is {size[0]}x{size[1]} but the tokenizer was fitted on "
                f"{fitted[0]}x{fitted[1]} images; set image_size to resize "
                f"(tokenizer__image_size; tokenizer__image__image_size for mixed inputs){hint}"
            )
        return pixels if size == self.image_size_ else _resize(pixels, self.image_size_)

    def _grid_shape(self) -> tuple[int, int]:
        height, width = self.image_size_
        if self.backbone is not None:
            stem = load_backbone(self.backbone, self.backbone_blocks, weights=None)
            try:
                with torch.no_grad():
                    shape = stem.eval()(torch.zeros(1, 3, height, width)).shape
            except RuntimeError as error:  # a stage whose kernel is larger than what is left of the image
                raise ValueError(
                    f"{height}x{width} images are too small for {self.backbone!r} with backbone_blocks={self.backbone_blocks}"
                    f" ({str(error).splitlines()[0][:120]}); set image_size (tokenizer__image_size) larger or fewer "
                    "backbone_blocks"
                ) from None
            return int(shape[2]), int(shape[3])
        if height % self.patch_size or width % self.patch_size:
            one_image = width in (3, 4) and self.n_channels_ == 1  # (H, W, 3) read as H grey images of W x 3
            hint = "; if X is one colour image of shape (H, W, 3), pass [X] or X[None]" if one_image else ""
            raise ValueError(
                f"image size {height}x{width} is not divisible by patch_size={self.patch_size}; "
                f"choose another patch_size or set image_size{hint}"
            )
        return height // self.patch_size, width // self.patch_size

    # ---------------------------------------------------------------- device half
    @property
    def n_tokens_(self) -> int:
        """Tokens per image: ``h * w`` cells of the token grid."""
        check_is_fitted(self, "grid_shape_")
        return self.grid_shape_[0] * self.grid_shape_[1]

    def embedder_spec(self) -> dict:
        """Describe the embedder these pixels need: patches (strided conv) or, with a ``backbone``, a CNN stem.

        Returns
        -------
        spec : dict
            ``{"kind": "patch", "n_channels", "image_size", "patch_size", "mean", "std", "random_shift", "conv_stem"}``
            or ``{"kind": "hybrid", "backbone", "blocks", "weights", "grid_shape", "image_size", "freeze",
            "random_shift"}`` (see :mod:`tabformer.nn.embedders.image`).
        """
        check_is_fitted(self, "grid_shape_")
        if self.backbone is not None:
            weights = (
                self.backbone_weights
                if self.backbone_weights is None or self.backbone_weights == "auto"
                else str(self.backbone_weights)
            )
            return {
                "kind": "hybrid",
                "n_channels": int(self.n_channels_),
                "backbone": self.backbone,
                "blocks": int(self.backbone_blocks),
                "weights": weights,
                "grid_shape": list(self.grid_shape_),
                "image_size": list(self.image_size_),
                "freeze": bool(self.freeze_backbone),
                "random_shift": int(self.random_shift),
            }
        return {
            "kind": "patch",
            "n_channels": int(self.n_channels_),
            "image_size": list(self.image_size_),
            "patch_size": int(self.patch_size),
            "mean": [float(v) for v in self.mean_],
            "std": [float(v) for v in self.std_],
            "random_shift": int(self.random_shift),
            "conv_stem": [int(width) for width in self.conv_stem],
        }

    def token_labels(self, batch) -> list[list[str]]:
        """``"r{row}c{col}"`` of every patch, for :func:`tabformer.inspection.explain`.

        Parameters
        ----------
        batch : dict
            Output of :meth:`transform`; only its length (``pixels``) is read.

        Returns
        -------
        labels : list of N lists of str
            The same ``h * w`` labels for every image, row-major.
        """
        check_is_fitted(self, "grid_shape_")
        height, width = self.grid_shape_
        labels = [f"r{r}c{c}" for r in range(height) for c in range(width)]
        return [labels] * len(batch["pixels"])

    def get_feature_names_out(self, input_features=None):
        """Label of each patch token, ``"r{row}c{col}"``, row-major."""
        check_is_fitted(self, "grid_shape_")
        return np.asarray(self.token_labels({"pixels": [None]})[0], dtype=object)

    def __sklearn_tags__(self):
        """The base tokenizer's tags, taking 3-D (image) arrays rather than 2-D tables."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.three_d_array = True
        return tags


def _pair(size) -> tuple[int, int]:
    if isinstance(size, (int, np.integer)) and size > 0:
        return int(size), int(size)
    if isinstance(size, (tuple, list)) and len(size) == 2 and all(isinstance(s, (int, np.integer)) and s > 0 for s in size):
        return int(size[0]), int(size[1])
    raise ValueError(f"image_size must be None, a positive int or a pair (H, W), got {size!r}")
