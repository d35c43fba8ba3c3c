"""The base of the classifier and the regressor: ``fusion``, streamed fits, ``new_categories``,
``ensemble_size``, the collapse check's answers."""

from __future__ import annotations

from numbers import Integral

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from ._categories import NEW_CATEGORIES_CONSTRAINT
from ._collapse import check_samples, early_stopping_advice, is_constant
from ._ensemble import ENSEMBLE_CONSTRAINT, EnsembleMixin
from ._finetuning import FineTuningNet
from ._params import FINE_TUNING_CONSTRAINTS
from ._recipes import late_fusion_suits
from ._streaming import StreamingMixin

__all__ = ["CLSHeadNet"]


class CLSHeadNet(EnsembleMixin, StreamingMixin, FineTuningNet):
    """What the classifier and regressor share: ``fusion``, streamed fits, ``new_categories``,
    ``ensemble_size``, the target check."""

    _parameter_constraints = {
        **FINE_TUNING_CONSTRAINTS,
        "fusion": [StrOptions({"auto", "early", "late"}), Interval(Integral, 0, None, closed="left")],
        "fit_sample_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left")],
        "new_categories": NEW_CATEGORIES_CONSTRAINT,
        "ensemble_size": ENSEMBLE_CONSTRAINT,
    }

    def __init__(
        self,
        tokenizer="auto",
        encoder=None,
        *,
        fusion="auto",
        fit_sample_size="auto",
        new_categories="error",
        ensemble_size="auto",
        **kwargs,
    ):
        super().__init__(tokenizer, encoder, **kwargs)
        self.fusion = fusion
        self.fit_sample_size = fit_sample_size
        self.new_categories = new_categories
        self.ensemble_size = ensemble_size

    def _collapse_advice(self) -> str:
        return early_stopping_advice(self) or (
            f"try more epochs (max_epochs; resolved: {self._setting('max_epochs')}), another learning rate "
            f"(lr; resolved: {self._setting('lr')}), or check that the features carry signal"
        )

    def _constant_answers(self, data: dict, labels=None):
        """The answers (rows, k) on the check's full sample of ``data`` when every row gets the same, else None.

        Reads a first look of a few rows before the full sample (``_collapse.check_samples``):
        the first look that varies ends the check.
        """
        forward = lambda inputs: self._collapse_answers(self.module_(**inputs).float()).cpu().numpy()  # noqa: E731
        for tokens in check_samples(data, labels):
            answers = self.collect(tokens, forward, trim=True).astype(np.float64)
            answers = answers.reshape(len(answers), -1)
            if not is_constant(len(answers), answers.sum(0), np.square(answers).sum(0)):
                return None
        return answers

    def fusion_mode(self):
        """The ``fusion`` fit uses: ``"early"``, ``"late"`` or an int of modality-only layers.

        ``"auto"`` resolves (once the tokenizer is fitted, and is then kept in
        ``resolved_params_["fusion"]``) to ``"late"`` for mixed inputs with an image column
        and at least one other modality, when the encoders start fresh; to ``"early"``
        otherwise (docs/mixed.md has the measurements behind it).

        Returns
        -------
        str or int
        """
        if isinstance(self.fusion, bool):  # an Integral to sklearn's check, not a layer count
            raise ValueError(f"fusion must be 'auto', 'early', 'late' or a number of modality-only layers, got {self.fusion!r}")
        if isinstance(self.fusion, str) and self.fusion == "auto":
            resolved = getattr(self, "resolved_params_", None)
            if resolved is None:  # before fit: nothing to read the inputs from yet
                return "auto"
            if "fusion" not in resolved:
                resolved["fusion"] = self._auto_fusion()
            return resolved["fusion"]
        fusion = self.fusion if isinstance(self.fusion, str) else int(self.fusion)
        if getattr(self, "resolved_params_", None) is not None:  # "yours where given", as for lr and batch_size
            self.resolved_params_["fusion"] = fusion
        return fusion

    def _auto_fusion(self) -> str:
        # Late fusion led early fusion on both image + text sets at 3 seeds on validation
        # (emoji +0.9 points, desktop icons about +4) and was level with it on table + text (tweets);
        # it needs fresh encoders (one per modality), so a warm start or a freeze keeps early.
        tokenizer = getattr(self, "tokenizer_", None)
        if not hasattr(tokenizer, "segment_kind") or self.encoder is not None or self.freeze_encoder or self.freeze_embedder:
            return "early"
        return "late" if late_fusion_suits([tokenizer.segment_kind(sub) for _, sub, _ in tokenizer.transformers_]) else "early"
