"""What ``fit`` checks once the tokenizer is fitted, before the module is built and trained."""

from __future__ import annotations

from numbers import Integral

from skorch import NeuralNet

from ._params import check_training_memory
from ._util import encoder_settings

__all__ = ["check_before_training", "check_positions"]


def check_before_training(estimator, data) -> None:
    """What ``fit`` checks once the tokenizer is fitted, before the module is built: the training memory
    (:func:`check_training_memory`) and the encoder's positions (:func:`check_positions`)."""
    check_positions(estimator)
    check_training_memory(estimator, data)


def check_positions(estimator) -> None:
    """Refuse a text tokenizer whose ``max_length`` exceeds the positions of the encoder ``fit`` will build.

    The fit went through on short texts and ``predict`` failed on the first long one ("sequence needs
    position 701 but the encoder was built with max_length=512").

    Parameters
    ----------
    estimator : TabFormerNet, with a fitted ``tokenizer_``
    """
    longest = getattr(estimator.tokenizer_, "max_length", None)
    settings = encoder_settings(estimator)
    kind = settings.get("positions")
    if kind is None and "positions" not in NeuralNet.get_params_for(estimator, "encoder"):
        kind = getattr(estimator.tokenizer_, "default_positions", None)  # what build_encoder sets when the user did not
    positions = settings.get("max_length") if kind else None  # no position table: any length reads
    if isinstance(longest, Integral) and isinstance(positions, Integral) and longest > positions:
        pretrained = estimator.encoder is not None or estimator._pretrained() is not None
        raise ValueError(
            f"tokenizer__max_length={longest} is longer than the encoder's {positions} positions: texts of more than "
            f"{positions} sub-words would fail at predict. Pass tokenizer__max_length={positions} or less"
            + ("" if pretrained else f", or encoder__max_length={longest} (a from-scratch encoder's positions)")
        )
