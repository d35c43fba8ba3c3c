"""The ``nn.Module`` skorch trains: embedder + (CLS +) encoder + head."""

from __future__ import annotations

import importlib

import torch
from torch import nn

from .embedders.augment import Augmented
from .encoder import TransformerEncoder
from .late_fusion import LateFusionModel

__all__ = ["TabFormerModel", "LateFusionModel", "PretrainingModel", "PretrainedEncoder", "encode"]


def encode(
    embedder: nn.Module,
    encoder: TransformerEncoder,
    batch: dict,
    return_attention: bool = False,
    fusion_layer: int = 0,
    cls_only: bool = False,
):
    """Embed and encode a batch: ``(encoder output, token mask)``.

    Parameters
    ----------
    embedder : nn.Module
        ``embedder(**batch) -> (tokens (B, T, D), mask (B, T) bool or None)``.
    encoder : TransformerEncoder
    batch : dict of str to Tensor
        A tokenized batch, each tensor of shape (B, ...).
    return_attention : bool, default=False
        Also return the encoder's attention maps.
    fusion_layer : int, default=0
        ``> 0`` (mixed inputs): keep each modality to itself in the first
        ``fusion_layer`` layers, see :class:`TabFormerModel`.
    cls_only : bool, default=False
        The encoder's last layer computes the CLS output only: ``out`` is (B, 1, D).

    Returns
    -------
    out : Tensor of shape (B, 1+T, D), or ``(hidden, attention)`` if ``return_attention``
        The encoder output, CLS first; ``attention`` is a list (one per layer) of
        Tensor of shape (B, H, 1+T, 1+T).
    mask : bool Tensor of shape (B, T), or None
        ``True`` marks real tokens; ``None`` means no padding.
    """
    if fusion_layer:
        tokens, mask, groups = embedder.forward_with_groups(**batch)
        out = encoder(
            tokens, mask, return_attention=return_attention, token_groups=groups, grouped_layers=fusion_layer, cls_only=cls_only
        )
    else:
        tokens, mask = embedder(**batch)
        out = encoder(tokens, mask, return_attention=return_attention, cls_only=cls_only)
    return out, mask


class _SequenceModel(nn.Module):
    """What the models over one token sequence share: ``embedder`` and ``encoder`` submodules
    (and ``fusion_layer`` for mid fusion), read by :meth:`encode` and :meth:`forward_features`."""

    def encode(self, return_attention: bool = False, **batch):
        """Embed and encode a batch: ``(encoder output, token mask)``.

        Parameters
        ----------
        return_attention : bool, default=False
            Also return the encoder's attention maps.
        **batch : Tensor
            A tokenized batch (the tokenizer's arrays as tensors), each of shape (B, ...).

        Returns
        -------
        out : Tensor of shape (B, 1+T, D), or ``(hidden, attention)`` if ``return_attention``
            The encoder output, CLS first; ``attention`` is a list (one per layer) of
            Tensor of shape (B, H, 1+T, 1+T).
        mask : bool Tensor of shape (B, T), or None
            ``True`` marks real tokens; ``None`` means no padding.
        """
        return encode(self.embedder, self.encoder, batch, return_attention, getattr(self, "fusion_layer", 0))

    def forward_features(self, return_attention: bool = False, **batch):
        """The encoder output ``(B, 1+T, D)`` (and attention maps if asked).

        Parameters
        ----------
        return_attention : bool, default=False
            Also return the encoder's attention maps.
        **batch : Tensor
            A tokenized batch (the tokenizer's arrays as tensors), each of shape (B, ...).

        Returns
        -------
        hidden : Tensor of shape (B, 1+T, D)
            ``hidden[:, 0]`` is the CLS embedding.
        attention : list of Tensor of shape (B, H, 1+T, 1+T), only if ``return_attention``
        """
        return self.encode(return_attention, **batch)[0]


class TabFormerModel(_SequenceModel):
    """Embed a tokenized batch, encode it, and apply the head.

    Parameters
    ----------
    embedder : nn.Module
        ``embedder(**batch) -> (tokens (B, T, D), mask (B, T) bool or None)``, built by a
        tokenizer's ``build_embedder``.
    encoder : TransformerEncoder
    head : nn.Module
        Reads the encoder output ``(B, 1+T, D)``.
    freeze_encoder : bool, default=False
        The encoder's parameters get no gradient and the encoder runs in eval mode
        (no dropout).
    freeze_embedder : bool, default=False
        The same for the embedder (word, patch, cell and position embeddings): no
        gradient, eval mode (its dropout off, its BatchNorm statistics fixed). Its
        train-time augmentations (``random_shift``; token, category, sentence and
        segment dropout) still follow this model's training mode, through the
        embedders' ``augment`` flag (:class:`~tabformer.nn.embedders.augment.Augmented`).
        With ``freeze_encoder`` only the head trains: a true linear/MLP probe.
    fusion_layer : int, default=0
        Mixed inputs: the first ``fusion_layer`` encoder layers attend within each
        modality only (CLS reads all of them); the rest attend across modalities.
        0 is early fusion; ``Nagrani et al. (2021)`` call ``k > 0`` mid fusion.
    """

    def __init__(
        self,
        embedder: nn.Module,
        encoder: TransformerEncoder,
        head: nn.Module,
        freeze_encoder: bool = False,
        fusion_layer: int = 0,
        freeze_embedder: bool = False,
    ):
        super().__init__()
        self.embedder = embedder
        self.encoder = encoder
        self.head = head
        self.freeze_encoder = freeze_encoder
        self.freeze_embedder = freeze_embedder
        self.fusion_layer = int(fusion_layer)
        if self.fusion_layer:
            if not hasattr(embedder, "forward_with_groups"):
                raise ValueError(f"mid fusion needs mixed inputs (a MixedTokenizer); the embedder is {type(embedder).__name__}")
            if not 0 < self.fusion_layer <= encoder.n_layers:
                raise ValueError(f"fusion layer must be in [0, {encoder.n_layers}] (the encoder's n_layers), got {fusion_layer}")
        if freeze_encoder:
            self.encoder.requires_grad_(False)
        if freeze_embedder:
            self.embedder.requires_grad_(False)

    def train(self, mode: bool = True):
        """``nn.Module.train(mode)``, but frozen parts stay in eval mode (no dropout); returns self.

        A frozen embedder's augmentations follow ``mode`` all the same: eval mode alone would
        turn them off, and a frozen embedder's inputs need them as much as a trained one's.

        Parameters
        ----------
        mode : bool, default=True
            Training mode (True) or eval mode (False).
        """
        super().train(mode)
        if self.freeze_encoder:
            self.encoder.eval()
        # getattr: modules pickled before freeze_embedder existed still load.
        frozen = bool(getattr(self, "freeze_embedder", False))
        if frozen:
            self.embedder.eval()
        for module in self.embedder.modules():
            if isinstance(module, Augmented):  # None once unfrozen: back to following its own mode
                module.augment = mode if frozen else None
        return self

    def forward_head(self, hidden: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Apply the head to the encoder output.

        Parameters
        ----------
        hidden : Tensor of shape (B, 1+T, D)
            The encoder output, CLS first.
        mask : bool Tensor of shape (B, T) or None, default=None
            ``True`` marks real tokens; passed on to heads that pool over tokens
            (``head.uses_mask``), ignored by the others.

        Returns
        -------
        Tensor
            Logits or predictions of shape (B, n_outputs) (CLS heads), or
            (B, T, n_outputs) (the token head).
        """
        if getattr(self.head, "uses_mask", False):
            return self.head(hidden, mask)
        return self.head(hidden)

    def forward(self, **batch) -> torch.Tensor:
        """Embed, encode and apply the head: a batch -> encoder output (B, 1+T, D) -> head output.

        Parameters
        ----------
        **batch : Tensor
            A tokenized batch (the tokenizer's arrays as tensors), each of shape (B, ...).

        Returns
        -------
        Tensor of shape (B, n_outputs), or (B, T, n_outputs) for the token head
        """
        # A head that reads CLS alone lets the last layer skip every other token's output.
        cls_only = getattr(self.head, "reads_cls_only", False)
        hidden, mask = encode(self.embedder, self.encoder, batch, False, getattr(self, "fusion_layer", 0), cls_only)
        return self.forward_head(hidden, mask)


class PretrainingModel(_SequenceModel):
    """The shared embedder and encoder next to a pretraining objective's head.

    ``forward(**inputs)`` returns what the head predicts from the objective's views
    (``head(embedder, encoder, **inputs)``); the objective's ``loss`` scores it. The head
    receives the embedder and encoder as arguments instead of holding them, so the state
    dict holds each weight once: ``embedder.*``, ``encoder.*``, ``head.*``.
    ``forward_features(**batch)`` is the encoder output ``(B, 1+T, D)`` of plain
    (uncorrupted) tokens, what ``transform`` reads.

    Parameters
    ----------
    embedder : nn.Module
        The shared embedder, built by the tokenizer's ``build_embedder``.
    encoder : TransformerEncoder
        The shared encoder.
    head : nn.Module
        The objective's head (its ``build_head``), called as
        ``head(embedder, encoder, **inputs)``.
    """

    def __init__(self, embedder: nn.Module, encoder: TransformerEncoder, head: nn.Module):
        super().__init__()
        self.embedder = embedder
        self.encoder = encoder
        self.head = head

    def forward(self, **inputs):
        """What the objective's head predicts from its views of a batch.

        Parameters
        ----------
        **inputs : Tensor
            The objective's dataset batch (its ``make_dataset``), each of shape (B, ...):
            corrupted tokens and labels for ``"mlm"``, ``"view1/*"`` and ``"view2/*"`` for
            ``"simclr"``.

        Returns
        -------
        The head's predictions, read by the objective's ``loss``: for ``"mlm"`` a list of
        (logits Tensor of shape (n, V), target Tensor of shape (n,)) for the ``n``
        masked positions; for ``"simclr"`` a Tensor of shape (2B, k) of projections.
        """
        return self.head(self.embedder, self.encoder, **inputs)


class PretrainedEncoder(_SequenceModel):
    """A fitted tokenizer with its trained embedder and encoder: what warm-starts a new task.

    Tables only need the encoder, but for text the word embeddings live in the embedder
    and the ids in the tokenizer's vocabulary, so all three travel together. Passing a
    ``PretrainedEncoder`` as an estimator's ``encoder`` makes ``fit`` reuse (copies of)
    its fitted tokenizer and embedder instead of fitting new ones.

    Parameters
    ----------
    tokenizer : fitted tabformer tokenizer
    embedder : nn.Module built by ``tokenizer.build_embedder``
    encoder : TransformerEncoder
    """

    def __init__(self, tokenizer, embedder: nn.Module, encoder: TransformerEncoder):
        super().__init__()
        self.tokenizer = tokenizer
        self.embedder = embedder
        self.encoder = encoder

    @property
    def d_model(self) -> int:
        """Token width ``D`` of the encoder (and of the embedder's tokens)."""
        return self.encoder.d_model

    def forward(self, return_attention: bool = False, **batch):
        """Embed and encode a batch: the encoder output ``(B, 1+T, D)``, as :meth:`forward_features`.

        Parameters
        ----------
        return_attention : bool, default=False
            Also return the per-layer attention maps, each of shape (B, H, 1+T, 1+T).
        **batch : Tensor
            A tokenized batch, each array of shape (B, ...).
        """
        return self.forward_features(return_attention, **batch)

    def save(self, path) -> None:
        """Write a folder: ``config.json`` (tokenizer state, embedder and encoder
        architecture), ``model.safetensors`` and the tokenizer's files (``vocab.txt``...).

        No pickle; :meth:`load`, ``tabformer.load`` and ``encoder=path`` read it back.

        Parameters
        ----------
        path : str or os.PathLike
            The folder to write.
        """
        _folder_io("save")(self, path)

    @classmethod
    def load(cls, path, map_location="cpu") -> PretrainedEncoder:
        """Read a folder written by :meth:`save`, or the tokenizer, embedder and encoder of an
        estimator's saved folder (``TabFormerPretrainer(...).fit(X).save(folder)``).

        Nothing is unpickled.

        Parameters
        ----------
        path : str or os.PathLike
            The saved folder.
        map_location : str or torch.device, default="cpu"
            Device the weights are loaded onto.

        Returns
        -------
        PretrainedEncoder
        """
        return _folder_io("load")(path, map_location)


#: ``{"save": fn(encoder, path), "load": fn(path, map_location)}``: the folder format of
#: :meth:`PretrainedEncoder.save`/``load``. :mod:`tabformer.persistence` fills it when
#: tabformer is imported; ``nn`` cannot import the tokenizers a PretrainedEncoder holds.
FOLDER_IO: dict = {}


def _folder_io(name: str):
    if name not in FOLDER_IO:
        # ``import tabformer`` is lazy (issue 18), so ``from tabformer import PretrainedEncoder``
        # alone never ran tabformer.persistence, and ``load`` failed on a fresh interpreter.
        importlib.import_module(__name__.split(".")[0] + ".persistence")
    return FOLDER_IO[name]
