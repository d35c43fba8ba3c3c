"""SimCLR (Chen et al., 2020): contrast two augmented views of each image.

Each image gives two views; both go through the shared embedder and encoder, the CLS
embeddings through a 2-layer projection head, and NT-Xent pulls the two projections of
one image together while pushing away the other ``2B - 2`` in the batch. After
pretraining only the embedder and encoder are kept: the pretrainer's ``transform``
returns CLS embeddings, before the projection head (which SimCLR found to discard
information useful downstream).
"""

from __future__ import annotations

import numbers

import torch
from torch import nn

from .losses import nt_xent_loss
from .registry import register_objective
from .views import VIEWS, MixedTwoViewDataset, TwoViewDataset, image_augmentation, view_batch

__all__ = ["SimCLR", "ContrastiveHead", "ProjectionHead"]


class ProjectionHead(nn.Module):
    """``Linear -> (BatchNorm) -> ReLU -> Linear``: SimCLR's 2-layer MLP on the CLS embedding.

    Parameters
    ----------
    d_model : int
        Width ``D`` of the CLS embedding.
    hidden : int
        Hidden width.
    out : int
        Projection width ``k``.
    batch_norm : bool, default=True
        BatchNorm after the first layer.
    """

    def __init__(self, d_model: int, hidden: int, out: int, batch_norm: bool = True):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_model, hidden),
            nn.BatchNorm1d(hidden) if batch_norm else nn.Identity(),
            nn.ReLU(),
            nn.Linear(hidden, out),
        )

    def forward(self, cls: torch.Tensor) -> torch.Tensor:
        """Project CLS embeddings: ``(N, D)`` -> ``(N, k)``."""
        return self.net(cls)


class ContrastiveHead(nn.Module):
    """Both views through the shared embedder and encoder in one pass, CLS through the projection.

    ``forward(embedder, encoder, **inputs)`` reads ``"view1/<key>"`` and ``"view2/<key>"``
    (images: ``<key>`` is ``pixels``; mixed rows: ``"<segment>/<array>"``) and returns
    the ``(2B, k)`` projections, first view first. One pass means one set of kernel
    launches, and the BatchNorm in the projection sees all ``2B`` rows. The embedder and
    encoder are arguments, not submodules, so a state dict holds them once.

    Parameters
    ----------
    projection : nn.Module
        Maps ``(2B, D)`` CLS embeddings to ``(2B, k)`` projections, e.g. :class:`ProjectionHead`.
    """

    def __init__(self, projection: nn.Module):
        super().__init__()
        self.projection = projection

    def forward(self, embedder: nn.Module, encoder: nn.Module, **inputs) -> torch.Tensor:
        """Embed, encode and project both views in one pass.

        Parameters
        ----------
        embedder : nn.Module
            The shared embedder.
        encoder : TransformerEncoder
            The shared encoder.
        **inputs : Tensor
            ``"view1/<key>"`` and ``"view2/<key>"`` arrays, first dimension ``B``.

        Returns
        -------
        projections : Tensor of shape (2B, k)
            Rows ``0..B-1`` are the first view, ``B..2B-1`` the second.
        """
        first, second = (view_batch(inputs, view) for view in VIEWS)
        both = {key: _cat_views(value, second[key]) for key, value in first.items()}
        tokens, mask = embedder(**both)
        return self.projection(encoder(tokens, mask)[:, 0])


def _cat_views(first: torch.Tensor, second: torch.Tensor) -> torch.Tensor:
    # Training batches come with each view's text cut to its own longest text: pad the
    # narrower with zeros (padding, masked out) so that both views stack into one batch.
    if first.ndim == 2 and first.shape[1] != second.shape[1]:
        width = max(first.shape[1], second.shape[1])
        first, second = (nn.functional.pad(view, (0, width - view.shape[1])) for view in (first, second))
    return torch.cat([first, second])


@register_objective("simclr")
class SimCLR:
    """SimCLR contrastive objective for images (:class:`~tabformer.tokenizers.PatchTokenizer`).

    Parameters
    ----------
    temperature : float, default=0.5
        NT-Xent temperature; lower sharpens the contrast between positives and negatives.
    projection_dim : int, default=64
        Output width of the projection head.
    projection_hidden : int or None, default=None
        Hidden width of the projection head; ``None`` means ``d_model``.
    projection_batch_norm : bool, default=True
        BatchNorm in the projection head.
    crop_scale, crop_ratio, flip_p, jitter_p, brightness, contrast, saturation, hue, grayscale_p, blur_p, blur_sigma, blur_kernel
        Augmentation settings, see :func:`~tabformer.pretraining.views.image_augmentation`;
        ``crop_scale`` must lie in ``(0, 1]`` and ``blur_kernel`` be odd (checked before training).
    corruption_rate : float, default=0.3
        Mixed rows only: share of table cells replaced, in each view, by the same
        column's value in a random row (SCARF).
    text_mask_prob : float, default=0.15
        Mixed rows only: share of real words replaced by ``[MASK]`` in each view.
    text_crop : float, default=0.7
        Mixed rows only: each view keeps a random contiguous span of at least this
        share of a text's words.

    Raises
    ------
    ValueError, TypeError
        From :meth:`build_head` (``temperature <= 0``), :meth:`make_transform` (a tokenizer
        that is not a fitted image tokenizer) or the mixed dataset (a rate out of range).

    Notes
    -----
    ``drop_last = True`` asks the pretrainer's training loader to drop the last, smaller
    batch: a batch of a few images has too few negatives and gives noisy gradients.

    With a :class:`~tabformer.tokenizers.MixedTokenizer` (a DataFrame with text, image
    and table columns) the views come from
    :class:`~tabformer.pretraining.views.MixedTwoViewDataset`: every image column is
    augmented as above, table cells and texts as described by the three mixed-only
    parameters.
    """

    #: NT-Xent contrasts each image with the others of its batch: a batch of one has none
    min_batch_rows = 2

    drop_last = True

    def __init__(
        self,
        temperature=0.5,
        projection_dim=64,
        projection_hidden=None,
        projection_batch_norm=True,
        crop_scale=(0.3, 1.0),
        crop_ratio=(3 / 4, 4 / 3),
        flip_p=0.5,
        jitter_p=0.8,
        brightness=0.4,
        contrast=0.4,
        saturation=0.4,
        hue=0.1,
        grayscale_p=0.2,
        blur_p=0.5,
        blur_sigma=(0.1, 2.0),
        blur_kernel=3,
        corruption_rate=0.3,
        text_mask_prob=0.15,
        text_crop=0.7,
    ):
        self.temperature = temperature
        self.projection_dim = projection_dim
        self.projection_hidden = projection_hidden
        self.projection_batch_norm = projection_batch_norm
        self.crop_scale = crop_scale
        self.crop_ratio = crop_ratio
        self.flip_p = flip_p
        self.jitter_p = jitter_p
        self.brightness = brightness
        self.contrast = contrast
        self.saturation = saturation
        self.hue = hue
        self.grayscale_p = grayscale_p
        self.blur_p = blur_p
        self.blur_sigma = blur_sigma
        self.blur_kernel = blur_kernel
        self.corruption_rate = corruption_rate
        self.text_mask_prob = text_mask_prob
        self.text_crop = text_crop

    _AUGMENT = (
        "crop_scale",
        "crop_ratio",
        "flip_p",
        "jitter_p",
        "brightness",
        "contrast",
        "saturation",
        "hue",
        "grayscale_p",
        "blur_p",
        "blur_sigma",
        "blur_kernel",
    )

    @staticmethod
    def _check_tokenizer(tokenizer):
        if not hasattr(tokenizer, "image_size_") or not hasattr(tokenizer, "n_channels_"):
            raise TypeError(
                f"objective='simclr' augments images and needs a fitted PatchTokenizer, got {type(tokenizer).__name__}"
            )

    def make_transform(self, tokenizer):
        """The torchvision v2 view transform for this tokenizer's images.

        Parameters
        ----------
        tokenizer : PatchTokenizer
            A fitted image tokenizer (its ``image_size_`` and ``n_channels_`` are read).

        Returns
        -------
        transform : callable
            ``(C, H, W) -> (C, H, W)`` random view (:func:`~tabformer.pretraining.views.image_augmentation`).

        Raises
        ------
        TypeError
            If ``tokenizer`` is not a fitted image tokenizer.
        """
        self._check_tokenizer(tokenizer)
        return image_augmentation(
            tokenizer.image_size_, tokenizer.n_channels_, **{name: getattr(self, name) for name in self._AUGMENT}
        )

    def _check_views(self) -> None:
        """Refuse view settings that train nothing or fail deep inside torchvision, naming the setting."""
        low, high = self.crop_scale
        if not 0 < low <= high <= 1:
            raise ValueError(f"objective__crop_scale must be (low, high) with 0 < low <= high <= 1, got {self.crop_scale!r}")
        kernel = self.blur_kernel
        if isinstance(kernel, bool) or not isinstance(kernel, numbers.Integral) or kernel < 1 or kernel % 2 == 0:
            raise ValueError(f"objective__blur_kernel must be an odd int >= 1 (Gaussian blur), got {kernel!r}")

    def make_dataset(self, batch, tokenizer, random_state=None):
        """Dataset of two fresh views per image or, for a :class:`~tabformer.tokenizers.MixedTokenizer`, per mixed row.

        Parameters
        ----------
        batch : dict of ndarray
            The fitted tokenizer's ``transform`` output for ``N`` rows (images: ``batch["pixels"]``,
            ``(N, C, H, W)`` in ``[0, 1]``).
        tokenizer : BaseTokenizer
            The fitted image or mixed tokenizer.
        random_state : int or None, default=None
            Seed of the views.

        Returns
        -------
        dataset : TwoViewDataset or MixedTwoViewDataset
            ``N`` items ``({"view1/<key>": ..., "view2/<key>": ...}, 0)``.
        """
        self._check_views()
        if getattr(tokenizer, "kind", None) == "mixed":
            return MixedTwoViewDataset(
                batch, tokenizer, self.make_transform, self.corruption_rate, self.text_mask_prob, self.text_crop, random_state
            )
        transform = self.make_transform(tokenizer)  # checks the tokenizer reads images first (not KeyError 'pixels')
        return TwoViewDataset(batch["pixels"], transform, random_state)

    def build_head(self, tokenizer, embedder, d_model: int) -> ContrastiveHead:
        """A fresh projection head; the shared embedder and encoder are passed at each call.

        Parameters
        ----------
        tokenizer : BaseTokenizer
            The fitted tokenizer (unused).
        embedder : nn.Module
            The shared embedder (unused).
        d_model : int
            Width ``D`` of the CLS embedding.

        Returns
        -------
        head : ContrastiveHead

        Raises
        ------
        ValueError
            If ``temperature <= 0``.
        """
        if not self.temperature > 0:
            raise ValueError(f"objective__temperature must be > 0, got {self.temperature!r}")
        dim = self.projection_dim
        if isinstance(dim, bool) or not (isinstance(dim, numbers.Integral) and dim > 0):
            # 0 projected every row to nothing: a constant loss, nothing trained, only torch's zero-element warning
            raise ValueError(f"objective__projection_dim must be an int > 0, got {self.projection_dim!r}")
        return ContrastiveHead(
            ProjectionHead(d_model, self.projection_hidden or d_model, self.projection_dim, self.projection_batch_norm)
        )

    def loss(self, projections: torch.Tensor) -> torch.Tensor:
        """NT-Xent between the first and second half of ``projections`` (the two views).

        Parameters
        ----------
        projections : Tensor of shape (2B, k)
            The head's output, first view first.

        Returns
        -------
        loss : scalar Tensor
        """
        half = len(projections) // 2
        return nt_xent_loss(projections[:half], projections[half:], self.temperature)
