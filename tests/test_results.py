import json
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from ingestlab.results import FIT_COLUMNS, Run, load_run


def test_run_json_is_written_at_once_and_marked_completed_by_finish(tmp_path):
    run = Run("nb", {"TARGET": "mysql://root:hunter2@127.0.0.1:3306/db", "N": 3}, tmp_path)
    meta = json.loads((tmp_path / "run.json").read_text())
    assert meta["completed"] is False
    assert meta["parameters"]["TARGET"] == "mysql://root:***@127.0.0.1:3306/db"
    assert meta["host"]["cpu_cores"] and meta["software"]["python"]
    assert "revision" in meta["git"]
    run.append(pd.DataFrame({"elapsed_s": [0.1], "warmup": [True]}), engine="e")
    run.append(pd.DataFrame({"elapsed_s": [0.2], "warmup": [False]}), engine="e")
    fits = pd.DataFrame({c: [1.0] for c in FIT_COLUMNS} | {"engine": ["e"], "variant": ["v"], "term": ["overhead"]})
    with pytest.raises(ValueError, match="long form"):
        run.finish(fits=fits.drop(columns=["model"]))  # a wide or partial table is refused, the run left open
    assert json.loads((tmp_path / "run.json").read_text())["completed"] is False
    run.finish(fits=fits)
    frame, meta = load_run(tmp_path)
    assert meta["completed"] is True and meta["warmup"]["results"] == 1
    assert frame["elapsed_s"].tolist() == [0.1, 0.2]
    written = pd.read_csv(tmp_path / "fits.csv")
    assert list(written.columns) == FIT_COLUMNS and written["notebook"].tolist() == ["nb"]
    assert "hunter2" not in "".join(p.read_text(errors="ignore") for p in tmp_path.iterdir() if p.suffix != ".parquet")


def test_a_killed_run_keeps_its_samples_and_says_incomplete(tmp_path):
    code = textwrap.dedent(f"""
        import os, pandas as pd
        from ingestlab.results import Run
        run = Run("nb", {{}}, {str(tmp_path)!r})
        run.append(pd.DataFrame({{"elapsed_s": [0.5, 0.6], "warmup": [False, False]}}))
        os._exit(9)  # dies without finishing, as a killed kernel would
    """)
    assert subprocess.run([sys.executable, "-c", code]).returncode == 9
    frame, meta = load_run(tmp_path)
    assert meta["completed"] is False
    assert frame["elapsed_s"].tolist() == [0.5, 0.6]
