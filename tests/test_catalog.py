"""Tests of the run catalogue: views over run folders, damaged runs listed, never a crash."""

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from ingestlab import catalog, workloads
from ingestlab.cli import main
from ingestlab.errors import ConfigError

FIXTURES = Path(__file__).parent / "fixtures" / "runs"


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


@pytest.fixture
def root(tmp_path):
    """The two committed runs plus damaged and unfinished copies, at different depths."""
    base = tmp_path / "runs"
    for side in ("a", "b"):
        _copy(FIXTURES / side, base / side)
    good = FIXTURES / "a" / "01_insert_anatomy"
    garbage = _copy(good, base / "garbage" / "01_insert_anatomy")
    (garbage / "run.json").write_text("{not json")
    truncated = _copy(good, base / "deep" / "er" / "truncated" / "01_insert_anatomy")
    data = (truncated / "results.parquet").read_bytes()
    (truncated / "results.parquet").write_bytes(data[: len(data) // 2])
    missing = _copy(good, base / "missing" / "01_insert_anatomy")
    (missing / "anatomy.parquet").unlink()
    unfinished = _copy(good, base / "unfinished" / "01_insert_anatomy")
    meta = json.loads((unfinished / "run.json").read_text())
    (unfinished / "run.json").write_text(json.dumps({**meta, "completed": False}))
    not_a_run = _copy(good, base / "list" / "01_insert_anatomy")
    (not_a_run / "run.json").write_text("[1, 2]")
    return base


def _sample_rows(paths) -> int:
    return sum(pq.read_metadata(p).num_rows for p in paths)


def test_runs_view_gives_every_run_folder_its_state_and_why(root):
    with catalog.Catalog(root) as cat:
        runs = cat.sql("SELECT folder, state, problem, notebook, scale, cores, revision FROM runs").set_index("folder")
    assert runs.loc["a/01_insert_anatomy", "state"] == "completed"
    assert runs.loc["unfinished/01_insert_anatomy", "state"] == "incomplete"
    assert runs.loc["a/01_insert_anatomy", "scale"] == "smoke"
    assert runs.loc["a/01_insert_anatomy", "cores"] > 0
    assert len(runs.loc["a/01_insert_anatomy", "revision"]) == 40
    broken = {"garbage/01_insert_anatomy": "run.json unreadable",
              "deep/er/truncated/01_insert_anatomy": "results.parquet unreadable",
              "missing/01_insert_anatomy": "anatomy.parquet missing",
              "list/01_insert_anatomy": "not a run's metadata"}
    for folder, why in broken.items():
        assert runs.loc[folder, "state"] == "corrupt"
        assert why in runs.loc[folder, "problem"]
    assert runs.loc["garbage/01_insert_anatomy", "notebook"] == "01_insert_anatomy"  # from the folder's name


def test_sql_count_of_samples_equals_the_rows_of_the_runs_sample_files(root, capsys):
    readable = [p for p in root.rglob("results.parquet") if "truncated" not in str(p)]
    assert main(["sql", "SELECT count(*) AS n FROM samples", "--root", str(root)]) == 0
    printed = int(capsys.readouterr().out.split()[-1])
    assert printed == _sample_rows(readable) > 0


def test_samples_carry_their_run_folder_notebook_and_table(root):
    with catalog.Catalog(root) as cat:
        per_run = cat.sql("SELECT folder, sample_table, notebook, count(*) AS n, min(elapsed_s) AS fastest "
                          "FROM samples GROUP BY ALL ORDER BY folder")
    assert set(per_run["sample_table"]) == {"results"}  # anatomy's per-component ms are not timed samples
    assert set(per_run["notebook"]) == {"01_insert_anatomy"}
    a = per_run.set_index("folder").loc["a/01_insert_anatomy"]
    assert a["n"] == _sample_rows([FIXTURES / "a" / "01_insert_anatomy" / "results.parquet"])
    assert a["fastest"] > 0


def test_a_completed_run_lacks_fits_csv_only_when_its_notebook_declares_no_fit(tmp_path):
    books = workloads.discover().values()
    fitless = next(b.stem for b in books if b.fit is None)
    for stem, state in (("01_insert_anatomy", "corrupt"), (fitless, "completed")):
        run = _copy(FIXTURES / "a" / "01_insert_anatomy", tmp_path / stem)
        (run / "fits.csv").unlink()
        meta = json.loads((run / "run.json").read_text())
        (run / "run.json").write_text(json.dumps({**meta, "notebook": stem}))
        assert catalog.probe(run).state == state, stem


def test_a_table_timed_in_seconds_is_a_sample_table_and_elapsed_s_unifies_both(tmp_path):
    run = _copy(FIXTURES / "a" / "01_insert_anatomy", tmp_path / "r" / "05_like")
    pd.DataFrame({"engine": ["postgres"] * 3, "method": ["bulk"] * 3, "seconds": [1.0, 2.0, 3.0]}) \
        .to_parquet(run / "loads.parquet")
    pd.DataFrame({"tool": ["dd"], "seconds": [0.5]}).to_parquet(run / "disk.parquet")  # no engine: calibration
    with catalog.Catalog(tmp_path / "r") as cat:
        loads = cat.sql("SELECT elapsed_s FROM samples WHERE sample_table = 'loads' ORDER BY 1")
        kinds = cat.sql("SELECT table_name, kind FROM files").set_index("table_name")["kind"]
    assert loads["elapsed_s"].tolist() == [1.0, 2.0, 3.0]
    assert kinds["disk"] == "table" and kinds["loads"] == "samples" and kinds["anatomy"] == "table"


def test_fits_view_reads_the_long_form_beside_older_wide_files(tmp_path):
    _copy(FIXTURES / "a", tmp_path / "r" / "new")
    old = _copy(FIXTURES / "b" / "01_insert_anatomy", tmp_path / "r" / "old" / "01_insert_anatomy")
    pd.DataFrame({"notebook": ["01_insert_anatomy"], "engine": ["postgres"], "variant": ["sync_on"],
                  "overhead_ms": [0.18], "overhead_ci_low_ms": [0.16], "overhead_ci_high_ms": [0.2]}) \
        .to_csv(old / "fits.csv", index=False)
    with catalog.Catalog(tmp_path / "r") as cat:
        fits = cat.sql("SELECT folder, term, estimate, overhead_ms FROM fits")
    new = fits[fits["folder"] == "new/01_insert_anatomy"]
    assert new["term"].notna().all() and new["overhead_ms"].isna().all()
    assert fits.loc[fits["folder"] == "old/01_insert_anatomy", "overhead_ms"].tolist() == [0.18]
    assert len(new) == len(pd.read_csv(FIXTURES / "a" / "01_insert_anatomy" / "fits.csv"))


def test_sql_writes_csv_and_parquet(root, tmp_path):
    query = "SELECT folder, count(*) AS n FROM samples GROUP BY 1 ORDER BY 1"
    assert main(["sql", query, "--root", str(root), "--csv", str(tmp_path / "o.csv")]) == 0
    assert main(["sql", query, "--root", str(root), "--parquet", str(tmp_path / "o.parquet")]) == 0
    csv, parquet = pd.read_csv(tmp_path / "o.csv"), pd.read_parquet(tmp_path / "o.parquet")
    assert csv["n"].tolist() == parquet["n"].tolist() and len(csv) == 6  # all but the truncated file


def test_runs_command_lists_every_run_with_its_state(root, capsys):
    assert main(["runs", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert "7 runs under" in out
    assert len(re.findall(r"\bcorrupt\b", out)) == 4 and "incomplete" in out


@pytest.mark.parametrize("argv", [["sql", "SELEC 1"], ["sql", "SELECT * FROM nowhere"], ["runs"]])
def test_bad_query_or_root_fails_in_one_line_with_exit_2(argv, tmp_path, capsys):
    root = tmp_path / "absent" if argv == ["runs"] else FIXTURES
    assert main([*argv, "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ingestlab: error:") and err.count("\n") == 1


def test_an_empty_root_gives_empty_views(tmp_path):
    with catalog.Catalog(tmp_path) as cat:
        assert cat.sql("SELECT count(*) AS n FROM samples")["n"].item() == 0
        assert cat.sql("SELECT count(*) AS n FROM runs")["n"].item() == 0
        assert list(cat.sql("SELECT * FROM fits").columns) == ["folder", *catalog.FIT_COLUMNS]


def test_a_missing_root_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="--root"):
        catalog.Catalog(tmp_path / "nope")


# -- another local user's inputs (issue V: items 2, 5, 7) --------------------------------------
@pytest.mark.parametrize("query", [
    "SELECT * FROM read_text('/etc/hostname')",
    "SELECT * FROM read_csv('/etc/passwd')",
    "COPY (SELECT 1) TO '{tmp}/written.csv'",
    "ATTACH '{tmp}/attached.db'",
    "INSTALL httpfs FROM community",
    "SET enable_external_access = true",
    "SET lock_configuration = false",
])
def test_a_catalogue_query_reads_the_runs_files_and_nothing_else(root, tmp_path, query):
    with catalog.Catalog(root) as cat:
        assert len(cat.sql("SELECT * FROM samples")) > 0  # its own files it reads
        with pytest.raises(ConfigError, match="SQL"):
            cat.sql(query.format(tmp=tmp_path))
    assert not (tmp_path / "written.csv").exists() and not (tmp_path / "attached.db").exists()


def test_export_writes_no_second_statement_and_never_through_a_link(root, tmp_path):
    odd = tmp_path / "a.csv' (FORMAT csv); COPY (SELECT 1) TO 'injected.csv"
    with catalog.Catalog(root) as cat:
        cat.export("SELECT count(*) AS n FROM runs", odd, "csv")
        assert pd.read_csv(odd)["n"].iloc[0] == len(cat.runs)
        secret = tmp_path / "secret"
        secret.write_text("root's\n")
        (tmp_path / "link.csv").symlink_to(secret)
        with pytest.raises(ConfigError, match="--csv=.*not a link"):
            cat.export("SELECT 1", tmp_path / "link.csv", "csv")
    assert secret.read_text() == "root's\n" and not list(tmp_path.glob("injected*"))


def test_run_folders_whose_names_look_like_globs_are_each_read_once(tmp_path):
    base = tmp_path / "runs"
    _copy(FIXTURES / "a", base / "exp1")
    _copy(FIXTURES / "a", base / "exp[1]")
    _copy(FIXTURES / "a", base / "exp*")
    with catalog.Catalog(base) as cat:
        counts = cat.sql("SELECT folder, count(*) AS n FROM samples GROUP BY 1 ORDER BY 1")
        fits = cat.sql("SELECT folder, count(*) AS n FROM fits GROUP BY 1 ORDER BY 1")
    folders = sorted({f.split("/")[0] for f in counts["folder"]})
    assert folders == ["exp*", "exp1", "exp[1]"]
    per_top = counts.assign(top=counts["folder"].str.split("/").str[0]).groupby("top")["n"].sum()
    assert per_top.nunique() == 1  # three copies of one run: the same count each, none twice, none dropped
    assert fits.assign(top=fits["folder"].str.split("/").str[0]).groupby("top")["n"].sum().nunique() == 1


def test_a_run_file_that_is_a_link_is_not_read_and_makes_the_run_corrupt(tmp_path):
    base = tmp_path / "runs"
    run = _copy(FIXTURES / "a" / "01_insert_anatomy", base / "planted" / "01_insert_anatomy")
    secret = tmp_path / "private.csv"
    secret.write_text("term,estimate\nroot's secret,1\n")
    secret.chmod(0o600)
    (run / "fits.csv").unlink()
    (run / "fits.csv").symlink_to(secret)
    probed = catalog.probe(run)
    assert probed.state == "corrupt" and probed.fits is None
    assert any("fits.csv: symbolic link, not read" in p for p in probed.problems)
    with catalog.Catalog(base) as cat:
        assert not cat.sql("SELECT * FROM fits").astype(str).apply(lambda c: c.str.contains("secret")).any().any()


def test_sigterm_during_a_long_query_ends_the_command_at_once_exit_143(root):
    import signal
    import subprocess
    import sys
    import time

    command = [str(Path(sys.executable).parent / "ingestlab"), "sql", "--root", str(root),
               "SELECT sum(hash(range)) FROM range(100000000000)"]  # minutes of work
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(3)  # the views are made and the query computes
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 143 and time.monotonic() - sent < 10, err
    assert "interrupted by SIGTERM" in err and "internal error" not in err
