"""The kill rate of a `make mutation` run, per mutated file and in all, from mutmut's result files.

Reads ``mutants/**/*.py.meta`` (mutmut 3 writes each mutant's exit code there as it goes), so it
reports a finished run, a run cut short by the Makefile's time limit (the mutants never tried
are counted as "not checked") and a rerun of some survivors alike. The kill rate is
``killed / (killed + survived + timeout + suspicious)``: of the mutants that some test runs.

    python benchmarks/mutation_summary.py [mutants-folder]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

# mutmut 3's exit-code meanings (mutmut/stats.py); anything else is "suspicious", as there.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 35: "suspicious"}
STATUS.update({36: "timeout", -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "type check"})
STATUS.update({2: "interrupted", -11: "segfault", -9: "segfault", None: "not checked"})
COLUMNS = ["killed", "survived", "timeout", "suspicious", "no tests", "not checked"]
REACHED = ("killed", "survived", "timeout", "suspicious")


def count(folder: Path) -> dict:
    """``{source file: Counter of statuses}`` of every ``.meta`` file under ``folder``."""
    counts = {}
    for meta in sorted(folder.rglob("*.py.meta")):
        codes = json.loads(meta.read_text())["exit_code_by_key"].values()
        counts[str(meta.relative_to(folder))[: -len(".meta")]] = Counter(STATUS.get(code, "suspicious") for code in codes)
    return counts


def rate(counter: Counter) -> str:
    reached = sum(counter[s] for s in REACHED)
    return f"{100 * counter['killed'] / reached:.1f}%" if reached else "-"


def main(folder="mutants") -> int:
    counts = count(Path(folder))
    if not counts:
        print(f"no mutmut results under {folder}/: run `make mutation` (mutmut run) first")
        return 1
    total = sum(counts.values(), Counter())
    width = max(len(name) for name in counts)
    print(f"{'file':<{width}}  {'mutants':>7}  " + "  ".join(f"{c:>11}" for c in COLUMNS) + "  kill rate")
    for name, counter in [*counts.items(), ("all", total)]:
        cells = "  ".join(f"{counter[c]:>11}" for c in COLUMNS)
        print(f"{name:<{width}}  {sum(counter.values()):>7}  {cells}  {rate(counter):>9}")
    reached = sum(total[s] for s in REACHED)
    print(f"kill rate {rate(total)} of the {reached} mutants that tests reach ({total['killed']} killed)")
    if total["not checked"]:
        print(f"{total['not checked']} mutants were not checked: the run stopped early (time limit or Ctrl-C)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
