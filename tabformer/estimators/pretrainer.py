"""Self-supervised pretraining as an sklearn transformer, generic over objectives.

``TabFormerPretrainer(objective=name)`` looks ``name`` up in
:data:`tabformer.pretraining.OBJECTIVES` (importing ``tabformer.pretraining.<name>``
first if it has not registered yet), builds it from the ``objective__*`` parameters,
and lets it do the modality-specific work: ``make_dataset`` (masks, augmented views)
and ``build_module`` (the loss module around the shared embedder and encoder). The
pretrainer only fits the tokenizer, builds embedder + encoder, and trains.
"""

from __future__ import annotations

import copy
import importlib

import numpy as np
import torch
from sklearn.base import TransformerMixin
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from torch import nn

from .._data import TensorDictDataset
from ..nn.models import PretrainedEncoder, encode
from ..pretraining import OBJECTIVES
from ._base import _TabFormerNet

__all__ = ["TabFormerPretrainer", "PretrainingModel"]


class PretrainingModel(nn.Module):
    """Holds the shared embedder and encoder next to the objective's loss module.

    ``forward(**inputs)`` is the objective's loss; ``forward_features(**batch)`` the
    encoder output ``(B, 1+T, D)`` used by ``transform``.
    """

    def __init__(self, embedder: nn.Module, encoder: nn.Module, objective: nn.Module):
        super().__init__()
        self.embedder = embedder
        self.encoder = encoder
        self.objective = objective

    def forward(self, **inputs) -> torch.Tensor:
        return self.objective(**inputs)

    def _encode(self, return_attention: bool = False, **batch):
        return encode(self.embedder, self.encoder, batch, return_attention)

    def forward_features(self, return_attention: bool = False, **batch):
        return self._encode(return_attention, **batch)[0]


class ObjectiveLoss(nn.Module):
    """skorch's criterion slot: the module already returns the loss."""

    def forward(self, loss, target=None):
        return loss


def get_objective(name):
    """The objective class registered as ``name``, importing its module on demand."""
    if not isinstance(name, str):
        raise TypeError(f"objective must be a registered name, got {type(name).__name__}")
    if name not in OBJECTIVES:
        try:
            importlib.import_module(f"tabformer.pretraining.{name}")
        except ImportError:
            pass
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; registered objectives: {sorted(OBJECTIVES)}")
    return OBJECTIVES[name]


class TabFormerPretrainer(_TabFormerNet, TransformerMixin, NeuralNet):
    """Pretrain embedder + encoder without labels; ``transform`` gives CLS embeddings.

    Parameters
    ----------
    objective : str, default="mlm"
        Name in :data:`tabformer.pretraining.OBJECTIVES`. ``"mlm"``: masked tokens for
        text, and on mixed DataFrames also masked categorical cells. ``"simclr"``:
        contrastive views of images, and of mixed rows (image augmentations, random
        cell corruption of table columns, masking and cropping of text; see
        :mod:`tabformer.pretraining.mixed`). Its parameters route as
        ``objective__<name>`` (e.g. ``objective__mask_prob=0.15``).
    tokenizer : str or tokenizer instance, default="auto"
        As the classifier's; ``"auto"`` picks WordPiece for a list/Series of str.
    encoder : None, TransformerEncoder, PretrainedEncoder or path, default=None
        ``None`` builds a fresh encoder from ``encoder__*``; a ``PretrainedEncoder``
        (e.g. loaded MiniLM) continues pretraining from it with its own tokenizer.
    lr : float, default=1e-3
    max_epochs : int, default=20
    lr_schedule : {"cosine", "warmup_linear"} or None, default="cosine"
        Cosine decay of the learning rate to 0 over ``max_epochs``, or BERT's per-batch
        linear warm-up and decay (see the classifier).
    batch_size : int, default=128
    validation_fraction : float or None, default=0.1
        Rows held out to watch the objective's loss for early stopping.
    patience : int or None, default=5
    random_state : int or None, default=None
        Seeds initialisation, shuffling, the split and the objective's randomness.
    pooling : {"cls", "mean", "cls+mean"}, default="cls"
        What ``transform`` returns per row: the CLS output (d_model values), the mean
        of the CLS and real-token outputs, or both side by side (2 * d_model values,
        what DINO feeds its linear probes; on Fashion-MNIST it lifted a SimCLR probe
        from 0.797 to 0.819, docs/images.md).
    device : str, default="cpu"
    verbose : int, default=1
    **kwargs
        ``tokenizer__*``, ``encoder__*``, ``objective__*`` and skorch's own parameters.

    Attributes
    ----------
    objective_ : the objective instance used in ``fit``
    tokenizer_ : fitted tokenizer
    module_ : PretrainingModel
    encoder_ : PretrainedEncoder
        A copy of the fitted tokenizer, embedder and encoder: pass it as ``encoder=`` to
        a classifier or tagger to warm-start it.
    history_ : skorch History

    Examples
    --------
    >>> pre = TabFormerPretrainer(objective="mlm", max_epochs=2, verbose=0)      # doctest: +SKIP
    >>> emb = pre.fit(unlabeled_texts).transform(texts)                           # doctest: +SKIP
    >>> TabFormerClassifier(encoder=pre.encoder_).fit(few_texts, few_labels)      # doctest: +SKIP
    """

    prefixes_ = _TabFormerNet.prefixes_ + ["objective"]

    def __init__(
        self,
        objective="mlm",
        tokenizer="auto",
        encoder=None,
        *,
        module=PretrainingModel,
        criterion=ObjectiveLoss,
        optimizer=torch.optim.AdamW,
        lr=1e-3,
        max_epochs=20,
        batch_size=128,
        lr_schedule="cosine",
        train_split="auto",
        validation_fraction=0.1,
        patience=5,
        random_state=None,
        pooling="cls",
        dataset=TensorDictDataset,
        verbose=1,
        device="cpu",
        **kwargs,
    ):
        super().__init__(
            module=module, criterion=criterion, optimizer=optimizer, lr=lr, max_epochs=max_epochs,
            batch_size=batch_size, train_split=train_split, dataset=dataset, verbose=verbose,
            device=device, **kwargs,
        )
        self.objective = objective
        self.tokenizer = tokenizer
        self.encoder = encoder
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.random_state = random_state
        self.lr_schedule = lr_schedule
        self.pooling = pooling

    # The pretrainer has no head and never freezes what it is training.
    freeze_encoder = False

    def initialize_module(self):
        encoder = self.build_encoder()
        pretrained = self._pretrained()
        embedder = copy.deepcopy(pretrained.embedder) if pretrained is not None else self.tokenizer_.build_embedder(encoder.d_model)
        loss_module = self.objective_.build_module(self.tokenizer_, embedder, encoder)
        self.module_ = self.module(embedder=embedder, encoder=encoder, objective=loss_module, **self.get_params_for("module"))
        return self

    def _drop_last_in_training(self) -> bool:
        # An objective may ask for full batches only (SimCLR: few negatives are noise).
        return bool(getattr(getattr(self, "objective_", None), "drop_last", False))

    def fit(self, X, y=None, **fit_params):
        """Pretrain on unlabeled ``X``.

        Parameters
        ----------
        X : inputs the tokenizer accepts (list/Series of str for ``"mlm"``), n_samples rows
        y : ignored (accepted so the pretrainer sits in a Pipeline)

        Returns
        -------
        self
        """
        if self.pooling not in ("cls", "mean", "cls+mean"):
            raise ValueError(f"pooling must be 'cls', 'mean' or 'cls+mean', got {self.pooling!r}")
        objective_class = get_objective(self.objective)
        self.objective_ = objective_class(**self.get_params_for("objective"))
        with self._seeded():
            batch = self._fit_tokenizer(X)
            dataset = self.objective_.make_dataset(batch, self.tokenizer_, self.random_state)
            self._train_new_module(dataset, None, **fit_params)
        return self

    def partial_fit(self, X, y=None, **fit_params):
        """Continue pretraining on ``X`` with the fitted tokenizer (fits if unfitted)."""
        if not hasattr(self, "tokenizer_") or not self.initialized_:
            return self.fit(X, y, **fit_params)
        dataset = self.objective_.make_dataset(self.tokenize(X), self.tokenizer_, self.random_state)
        with self._seeded():
            NeuralNet.partial_fit(self, dataset, None, **fit_params)
        return self

    def transform(self, X):
        """CLS embeddings of the pretrained encoder.

        Parameters
        ----------
        X : inputs the tokenizer accepts, n_samples rows

        Returns
        -------
        ndarray of shape (n_samples, d_model), or (n_samples, 2 * d_model) with
        ``pooling="cls+mean"``; float32
        """
        check_is_fitted(self)
        return self.forward_features(X, pooling=self.pooling)

    @property
    def encoder_(self) -> PretrainedEncoder:
        check_is_fitted(self)
        return copy.deepcopy(PretrainedEncoder(self.tokenizer_, self.module_.embedder, self.module_.encoder)).cpu().eval()

    def get_feature_names_out(self, input_features=None):
        check_is_fitted(self)
        width = self.module_.encoder.d_model * (2 if self.pooling == "cls+mean" else 1)
        return np.asarray([f"embedding{i}" for i in range(width)], dtype=object)

    def score(self, X, y=None):
        """Minus the objective's loss on ``X`` (higher is better, as sklearn expects)."""
        check_is_fitted(self)
        dataset = self.objective_.make_dataset(self.tokenize(X), self.tokenizer_, self.random_state)
        losses, sizes = [], []
        self.module_.eval()
        with torch.no_grad():
            for batch, target in self.get_iterator(dataset, training=False):
                batch = {k: v.to(self.device) for k, v in batch.items()}
                losses.append(float(self.module_(**batch)))
                sizes.append(len(target))
        return -float(np.average(losses, weights=sizes))

    def check_data(self, X, y):
        pass

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.required = False
        return tags
