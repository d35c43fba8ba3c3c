"""Where the random numbers of a batch's masks come from: the dataset's one stream (training), or one per row (scoring).

Training draws each batch's masks from the dataset's generator, so every access hides new cells. ``score`` turns on
``seed_rows``: each row then draws from a generator seeded by (the dataset's seed, the row's index), so a row hides the
same cells whatever batch it sits in, and the score no longer depends on ``iterator_valid__batch_size``.
"""

from __future__ import annotations

import torch

__all__ = ["Draws", "RowSeededMasks", "row_seed"]

_MASK64 = (1 << 64) - 1


def _mix64(value: int) -> int:
    """SplitMix64's step: nearby inputs give unrelated 64-bit outputs."""
    value = (value + 0x9E3779B97F4A7C15) & _MASK64
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & _MASK64
    return value ^ (value >> 31)


def row_seed(seed: int, row: int) -> int:
    """The seed of row ``row``'s masks under ``seed`` (63 bits).

    Parameters
    ----------
    seed, row : int
        The dataset's seed and the row's index in it.

    Returns
    -------
    seed : int

    Examples
    --------
    >>> row_seed(0, 1) == row_seed(0, 1) != row_seed(0, 2)
    True
    """
    return _mix64((_mix64(int(seed) & _MASK64) + int(row)) & _MASK64) >> 1


class Draws:
    """The uniform and integer draws of one batch's masks.

    Parameters
    ----------
    generator : torch.Generator
        The dataset's stream, each batch drawing its next numbers.
    rows : sequence of int or None, default=None
        The batch's row indices, used with ``seed``.
    seed : int or None, default=None
        With a seed, row ``i`` of the batch draws from its own generator seeded by ``row_seed(seed, rows[i])``:
        its numbers do not depend on the other rows of the batch.
    """

    def __init__(self, generator: torch.Generator, rows=None, seed: int | None = None):
        self.generator = generator
        self.row_generators = None
        if seed is not None:
            self.row_generators = [torch.Generator().manual_seed(row_seed(seed, int(row))) for row in rows]

    @property
    def per_row(self) -> bool:
        """True when each row draws from its own generator (a draw is then never skipped for a batch)."""
        return self.row_generators is not None

    def rand(self, shape) -> torch.Tensor:
        """Uniform floats in [0, 1) of ``shape`` (first dimension: the batch's rows)."""
        if self.row_generators is None:
            return torch.rand(shape, generator=self.generator)
        return self._per_row(shape, torch.float32, lambda g: torch.rand(tuple(shape[1:]), generator=g))

    def randint(self, low: int, high: int, shape) -> torch.Tensor:
        """Integers in [low, high) of ``shape`` (first dimension: the batch's rows)."""
        if self.row_generators is None:
            return torch.randint(low, high, shape, generator=self.generator)
        return self._per_row(shape, torch.long, lambda g: torch.randint(low, high, tuple(shape[1:]), generator=g))

    def _per_row(self, shape, dtype, draw) -> torch.Tensor:
        if not self.row_generators:
            return torch.empty(tuple(shape), dtype=dtype)
        return torch.stack([draw(generator) for generator in self.row_generators])


class RowSeededMasks:
    """Mixin of the masking datasets: ``seed_rows`` picks where a batch's draws come from (see the module docstring).

    The dataset keeps its generator as ``self.generator``; with ``seed_rows`` True, rows draw from
    ``row_seed(self.generator.initial_seed(), index)``.
    """

    #: False: fresh masks at every access (training); True: each row's masks fixed by its index (``score``).
    seed_rows = False

    def draws(self, indices) -> Draws:
        """The draws of the batch of rows ``indices``.

        Parameters
        ----------
        indices : sequence of int
            The rows of the batch, as ``__getitems__`` receives them.

        Returns
        -------
        draws : Draws
        """
        seed = self.generator.initial_seed() if self.seed_rows else None
        return Draws(self.generator, indices, seed)
