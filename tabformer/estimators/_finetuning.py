"""``FineTuningNet``: a :class:`~tabformer.estimators._base.TabFormerNet` with a head on the
encoder, that may start from pretrained weights and keep parts of them fixed. The
classifier, regressor and tagger are fine-tuning nets; the pretrainer is not (it has no
head and never freezes what it trains)."""

from __future__ import annotations

import torch

from ..nn.models import LateFusionModel, TabFormerModel
from ._base import TabFormerNet
from ._params import FINE_TUNING_CONSTRAINTS
from ._probe import probe_recipe
from ._recipes import AUTO, _base_recipe
from ._text_recipes import load_text_stems
from ._util import construct

__all__ = ["FineTuningNet"]


class FineTuningNet(TabFormerNet):
    """Base of the estimators with a head: adds ``freeze_encoder`` and ``freeze_embedder``.

    Subclasses implement ``build_head(d_model) -> nn.Module``, which reads the encoder
    output ``(B, 1+T, D)``.
    """

    _parameter_constraints = FINE_TUNING_CONSTRAINTS

    def __init__(
        self, tokenizer="auto", encoder=None, *, freeze_encoder=False, freeze_embedder=False, module=TabFormerModel, **kwargs
    ):
        super().__init__(tokenizer, encoder, module=module, **kwargs)
        self.freeze_encoder = freeze_encoder
        self.freeze_embedder = freeze_embedder

    def set_params(self, **params):
        """scikit-learn's ``set_params``; on a fitted model ``freeze_encoder`` and ``freeze_embedder``
        take effect at once (a linear probe unfrozen for fine-tuning, or the reverse).

        The flags were read only when the module was built, so a fitted model kept training
        (or kept frozen) whatever they said (a review's find). Changing one rebuilds the
        optimizer for the weights that now train; its moments start over. A recipe's ``lr``
        (``lr="auto"``) becomes the new state's: the probe recipe's when frozen, fine-tuning's when not.

        Parameters
        ----------
        **params : estimator parameters

        Returns
        -------
        self
        """
        super().set_params(**params)
        module = self.__dict__.get("module_")
        if {"freeze_encoder", "freeze_embedder"} & set(params) and getattr(self, "initialized_", False) and module is not None:
            if not hasattr(module, "encoder") or hasattr(module, "members") or self._freezes_random_weights():
                raise ValueError(
                    "freezing needs one pretrained encoder (fusion='early', `encoder`, ensemble_size=1); this model was built "
                    "without one, so freezing would fix randomly initialised weights: fit a new model instead"
                )
            module.freeze_encoder, module.freeze_embedder = bool(self.freeze_encoder), bool(self.freeze_embedder)
            module.encoder.requires_grad_(not self.freeze_encoder)
            module.embedder.requires_grad_(not self.freeze_embedder)
            self._follow_probe_rate()
            self.initialize_optimizer()
        return self

    def _follow_probe_rate(self) -> None:
        """A recipe's ``lr`` follows ``freeze_encoder`` set after a fit: a linear probe unfrozen for fine-tuning kept the
        probe's rate (1e-2 for images, 33x the fine-tuning recipe's 3e-4) for the whole pretrained encoder."""
        resolved, kind = getattr(self, "resolved_params_", None), getattr(self.tokenizer_, "kind", None)
        # Mixed inputs are left alone: their recipe depends on the columns of X (a frame of texts takes the text one).
        if not resolved or "lr" not in resolved or self.lr != AUTO or kind == "mixed" or self._pretrained() is None:
            return
        resolved["lr"] = probe_recipe(self, kind, True).get("lr", _base_recipe(self, kind, True).get("lr", resolved["lr"]))

    def fusion_mode(self):
        """``"early"``, ``"late"`` or a number of modality-only layers (mid fusion).

        Only estimators with a ``fusion`` parameter read mixed inputs any other way.
        """
        return "early"

    def build_head(self, d_model: int) -> torch.nn.Module:  # pragma: no cover - interface
        """The task's head, configured by ``head__*``; subclasses implement it.

        Parameters
        ----------
        d_model : int
            Width of the encoder output ``(B, 1+T, D)`` the head reads (``D == d_model``).

        Returns
        -------
        nn.Module
        """
        raise NotImplementedError

    def _freezes_random_weights(self) -> bool:
        # An embedder comes pretrained only with a PretrainedEncoder; an encoder also as a module or file of its own.
        if self.freeze_embedder and self._pretrained() is None:
            return True
        return bool(self.freeze_encoder) and self.encoder is None and self._pretrained() is None

    def initialize_module(self):
        """Build ``module_``: embedder, encoder (fresh or warm-started) and head, frozen as asked.

        A :class:`~tabformer.nn.models.TabFormerModel` (early or mid fusion), or a
        :class:`~tabformer.nn.models.LateFusionModel` for ``fusion="late"``.

        Returns
        -------
        self
        """
        fusion = self.fusion_mode()
        if self._freezes_random_weights() and fusion != "late":  # late fusion has its own error below
            part = "embedder" if self.freeze_embedder else "encoder"
            raise ValueError(
                f"freeze_{part}=True would freeze a randomly initialised {part}; it needs a PretrainedEncoder as `encoder` "
                f"(e.g. TabFormerPretrainer().fit(X).encoder_ or load_bert(path)), got {type(self.encoder).__name__}"
            )
        encoder = self.build_encoder()
        embedder = self.build_embedder(encoder.embedding_size)  # ELECTRA-style: tokens narrower than d_model
        head = self.build_head(encoder.d_model)
        if fusion == "late":
            self.module_ = self._late_fusion_model(embedder, encoder, head)
        else:
            kwargs = self.get_params_for("module")
            if fusion != "early" and fusion > 0:
                kwargs["fusion_layer"] = fusion
            if self.freeze_embedder:
                kwargs["freeze_embedder"] = True
            parts = dict(embedder=embedder, encoder=encoder, head=head, freeze_encoder=self.freeze_encoder)
            self.module_ = construct(self.module, {**kwargs, **parts}, "module")
        if getattr(self, "text_stem_weights_", None):  # a text column's frozen MiniLM stem (``_text_recipes``)
            load_text_stems(self.module_, self.text_stem_weights_)
        return self

    def _late_fusion_model(self, embedder, encoder, head) -> LateFusionModel:
        if self.encoder is not None:
            raise ValueError(
                "fusion='late' builds one fresh encoder per modality; warm-starting from `encoder` needs fusion='early'"
            )
        for name in ("freeze_encoder", "freeze_embedder"):
            if getattr(self, name):
                raise ValueError(
                    f"{name}=True with fusion='late' would freeze randomly initialised weights; "
                    "it needs fusion='early' and a pretrained `encoder`"
                )
        if not hasattr(embedder, "forward_groups"):
            raise ValueError(
                f"fusion='late' needs mixed inputs (a MixedTokenizer); the tokenizer is {type(self.tokenizer_).__name__}"
            )
        encoders = [encoder] + [self.build_encoder() for _ in embedder.group_names[1:]]
        return LateFusionModel(embedder, encoders, head, freeze_encoder=self.freeze_encoder)
