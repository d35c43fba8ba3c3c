"""`make mutation`'s report (benchmarks/mutation_summary.py) reads mutmut's result files, finished or cut short."""

import json
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "mutation_summary.py"


def write_meta(folder, name, codes):
    path = folder / f"{name}.meta"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"exit_code_by_key": {f"{name}.x__mutmut_{i}": c for i, c in enumerate(codes)}}))


def summary(folder):
    return subprocess.run([sys.executable, str(SCRIPT), str(folder)], capture_output=True, text=True)


def test_the_kill_rate_counts_the_mutants_tests_reach_and_names_the_unchecked(tmp_path):
    write_meta(tmp_path, "pkg/a.py", [1, 1, 3, 0, 33, 36])  # 3 killed, 1 survived, 1 no tests, 1 timeout
    write_meta(tmp_path, "pkg/b.py", [1, 0, None, None])  # cut short: 2 never tried
    result = summary(tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[1].split() == ["pkg/a.py", "6", "3", "1", "1", "0", "1", "0", "60.0%"]
    assert lines[2].split() == ["pkg/b.py", "4", "1", "1", "0", "0", "0", "2", "50.0%"]
    assert lines[3].split() == ["all", "10", "4", "2", "1", "0", "1", "2", "57.1%"]
    assert "kill rate 57.1% of the 7 mutants that tests reach (4 killed)" in result.stdout
    assert "2 mutants were not checked: the run stopped early" in result.stdout


def test_no_results_is_said_not_crashed_on(tmp_path):
    result = summary(tmp_path / "mutants")
    assert result.returncode == 1 and "no mutmut results under" in result.stdout
