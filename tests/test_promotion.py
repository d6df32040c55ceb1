"""Promoting a run's figures into the article's figures/: only whole runs, byte for byte, with SOURCE."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from ingestlab import promotion, report, workloads
from ingestlab.errors import ConfigError

BIN = Path(sys.executable).parent / "ingestlab"


@pytest.fixture(scope="module")
def run00(user_run, tmp_path_factory):
    """A copy of the session's real run of notebook 00 (published data, no server), its figures in its run folder.

    Its run.json is then made to say a committed tree and a quiet machine (load 0.5, others' CPU 2 %), whatever the
    checkout and the suite's other workers made of them: these tests are about the mechanics of
    promotion; refusing a run with uncommitted changes or from a loaded machine has its own tests.
    """
    assert user_run["returncode"] == 0, user_run["stderr"][-3000:]
    out = tmp_path_factory.mktemp("run")
    shutil.copytree(user_run["out"] / "00_published_results", out / "00_published_results")
    meta_path = out / "00_published_results" / "run.json"
    meta = json.loads(meta_path.read_text())
    meta["git"]["dirty"] = False
    meta["load_average"]["start"] = [0.5, 0.5, 0.5]
    meta["machine_cpu"] = {**meta.get("machine_cpu", {}), "others_cpu_share": 0.02}
    meta_path.write_text(json.dumps(meta))
    return out


def test_promotion_copies_every_figure_and_names_the_run_in_source(run00, tmp_path):
    to = tmp_path / "figures"
    (to / "00_published_results").mkdir(parents=True)
    (to / "00_published_results" / "stale.svg").write_text("<svg/>")  # a figure the notebook no longer makes
    done, left_out = promotion.promote(run00, ["00"], to=to)
    assert [(n, s) for n, _, s in done] == [("00_published_results", "-")] and left_out == []
    made = sorted((run00 / "00_published_results" / "figures").iterdir())
    copied = sorted(p for p in (to / "00_published_results").iterdir()
                    if p.name not in (promotion.SOURCE, promotion.FINDINGS))
    article = workloads.discover()["00_published_results"].article
    # the article's figures in every format with their captions; the notebook's other figures stay in the run
    assert len(made) > len(copied) == 4 * len(article) == 12
    made = [p for p in made if p.name.split(".")[0] in article]
    assert [p.name for p in copied] == [p.name for p in made]
    assert all(a.read_bytes() == b.read_bytes() for a, b in zip(made, copied))
    source = (to / "00_published_results" / promotion.SOURCE).read_text()
    meta = json.loads((run00 / "00_published_results" / "run.json").read_text())
    assert f"--out {run00}" in source and f"Revision: {meta['git']['revision'][:7]}" in source
    assert "Load average (1/5/15 min): [" in source and "Promoted by: ingestlab figures" in source
    # 00 has no SCALE: what it draws is said, not a bare "-"
    assert "Scale: - (none: the figures draw the seeds' published tables, at the seeds' own sizes)\n" in source
    for path in made:
        assert f"{hashlib.sha256(path.read_bytes()).hexdigest()}  {path.name}" in source


@pytest.mark.parametrize("case", ["file", "under_a_file", "read_only"])
def test_a_destination_that_cannot_take_figures_is_refused_before_any_is_removed(run00, tmp_path, case):
    to = tmp_path / "figures"
    kept = to / "00_published_results" / "fit.svg"
    kept.parent.mkdir(parents=True)
    kept.write_text("<svg/>")  # an earlier promotion's figure
    (tmp_path / "a-file").write_text("x")
    target = {"file": tmp_path / "a-file", "under_a_file": tmp_path / "a-file" / "figures", "read_only": to}[case]
    if case == "read_only":  # immutable: no file can be made in it, not even by root (as on a read-only mount)
        if subprocess.run(["chattr", "+i", str(to)], capture_output=True).returncode != 0:
            pytest.skip("chattr +i is not available here")
    try:
        with pytest.raises(ConfigError, match="--to="):
            promotion.promote(run00, ["00"], to=target)
    finally:
        subprocess.run(["chattr", "-i", str(to)], capture_output=True)
    assert kept.read_text() == "<svg/>"

def test_findings_state_the_runs_own_fits_and_headline_numbers(run00, tmp_path):
    to = tmp_path / "figures"
    promotion.promote(run00, ["00"], to=to)
    text = (to / "00_published_results" / promotion.FINDINGS).read_text()
    meta = json.loads((run00 / "00_published_results" / "run.json").read_text())
    fits = pd.read_csv(run00 / "00_published_results" / "fits.csv")
    assert f"Revision: {meta['git']['revision'][:7]}" in text and "ingestlab run 00_published_results" in text
    rows = [line.split(" | ") for line in text.splitlines() if line.startswith("| StarRocks |")]
    assert len(rows) == len(fits)  # every term of fits.csv, no more
    for row, fit in zip(rows, fits.to_dict("records")):
        assert (row[3], row[4]) == (fit["method"], fit["term"])
        if np.isfinite([fit["estimate"], fit["ci_low"], fit["ci_high"]]).all():  # at its interval's precision
            assert [row[5], *row[6].split(" to ")] == list(report.at_precision(fit["estimate"], fit["ci_low"],
                                                                               fit["ci_high"]))
        else:
            assert float(row[5]) == pytest.approx(fit["estimate"], rel=5e-4)  # 4 significant digits
    for name, value in meta["headline"].items():
        assert f"| `{name}` | {report.headline_value(value)} |" in text
    # a promotion of another run replaces the findings with that run's
    (to / "00_published_results" / promotion.FINDINGS).write_text("stale")
    promotion.promote(run00, ["00"], to=to)
    assert (to / "00_published_results" / promotion.FINDINGS).read_text() != "stale"


def test_each_figure_s_caption_goes_under_it_in_the_findings_and_the_generated_gallery(run00, tmp_path):
    from ingestlab import captions, figure_checks, figures

    to = tmp_path / "figures"
    (to / "07_compare_runs").mkdir(parents=True)
    (to / "07_compare_runs" / "ratios.png").write_bytes((run00 / "00_published_results" / "figures" / next(
        p.name for p in (run00 / "00_published_results" / "figures").glob("*.png"))).read_bytes())
    promotion.promote(run00, ["00"], to=to)
    dest = to / "00_published_results"
    findings = (dest / promotion.FINDINGS).read_text()
    gallery = (to / promotion.GALLERY).read_text()
    article = workloads.discover()["00_published_results"].article
    pngs = [dest / f"{name}.png" for name in article]  # in the order the notebook declares them
    assert sorted(dest.glob("*.png")) == sorted(pngs) and len(pngs) == 3
    assert findings.index("## Figures") > findings.index("## Fits")
    for png in pngs:
        said = (dest / f"{png.stem}{captions.CAPTION_SUFFIX}").read_text().strip()
        assert said.startswith("**") and "published by the seed" in said  # a title, then what it draws
        width = round(figure_checks.png_size(png)[0] / figures.PNG_DPI * 100)  # its print width, 100 px an inch
        assert f'<img src="{png.name}" width="{width}" alt="{png.stem}">\n\n{said}\n' in findings
        assert f'<img src="00_published_results/{png.name}" width="{width}" alt="{png.stem}">\n\n{said}\n' in gallery
    for text in (findings, gallery):
        assert [text.index(f'{png.name}" width') for png in pngs] == sorted(text.index(f'{png.name}" width')
                                                                           for png in pngs)
    # in notebook order; a folder promoted before captions left the images says where its caption is
    assert gallery.index("## 00_published_results") < gallery.index("## 07_compare_runs")
    assert "No caption file" in gallery.split("## 07_compare_runs")[1]


def test_a_headline_number_from_a_line_that_does_not_hold_says_so_in_the_findings(run00, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(run00, run)
    folder = run / "00_published_results"
    fits = pd.read_csv(folder / "fits.csv")
    first = fits.iloc[0]
    fits["model_holds"] = fits["model_holds"].astype(object)
    fits.loc[(fits["engine"] == first["engine"]) & (fits["variant"] == first["variant"]), "model_holds"] = False
    fits.to_csv(folder / "fits.csv", index=False)
    meta = json.loads((folder / "run.json").read_text())
    rejected, kept = f"{first['term']}_ms[{first['engine']} {first['variant']}]", "rows_per_s[somewhere else]"
    meta["headline"] = {rejected: [1552.0, -1426.0, 4531.0], kept: 3.0}
    (folder / "run.json").write_text(json.dumps(meta))
    text = promotion.findings_text(folder, meta)
    assert f"| `{rejected}` | 1600 (-1400 to 4500) — from a line that does not hold |" in text
    assert f"| `{kept}` | 3 |" in text


def _fit_rows(findings: Path) -> list[dict]:
    """The rows of a ``FINDINGS.md``'s fits table (engine, variant, model, method, term, estimate, CI, unit, points, holds)."""
    def number(text: str) -> float:
        return float("nan") if text in ("–", "") else float(text.replace(",", "").replace("−", "-"))

    rows = []
    for line in findings.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 10 and " to " in cells[6] and cells[0] != "engine" and not cells[0].startswith("---"):
            low, high = cells[6].split(" to ")
            rows.append({"term": cells[4], "estimate": number(cells[5]), "low": number(low), "high": number(high),
                         "unit": cells[7], "holds": cells[9], "line": line})
    return rows


#: A term that is a time a thing costs (``ms per statement``, ``s``), which cannot be below 0 (not a difference).
_COST_UNIT = re.compile(r"^(s|ms|µs)( per [^0-9].*)?$")


def test_promoted_findings_have_no_estimate_outside_its_interval_nor_a_cost_below_zero_said_to_hold():
    """W: 06 had a Theil–Sen estimate outside its own CI, 03 a fixed cost of −72 ms (CI −134 to −11) marked "model
    holds: yes". Every folder promoted since captions left the images (it has a caption file)."""
    from ingestlab import _paths, captions

    folders = sorted({f.parent for f in (_paths.REPO / "figures").glob(f"*/*{captions.CAPTION_SUFFIX}")})
    if not folders:
        pytest.skip("no folder promoted with caption files yet")
    rows = [row for folder in folders if (folder / promotion.FINDINGS).exists()
            for row in _fit_rows(folder / promotion.FINDINGS)]
    for row in rows:
        low, estimate, high = row["low"], row["estimate"], row["high"]
        if np.isfinite(low) and np.isfinite(high):
            slack = 1e-9 * max(abs(low), abs(high), 1.0)  # both written at the interval's precision
            assert low - slack <= estimate <= high + slack, row["line"]
        if _COST_UNIT.match(row["unit"]) and high < 0:
            assert row["holds"] != "yes", row["line"]


def test_the_fits_table_check_catches_an_estimate_outside_its_interval_and_a_negative_cost_said_to_hold(tmp_path):
    findings = tmp_path / promotion.FINDINGS
    findings.write_text("| engine | variant | model | method | term | estimate | 95 % CI | unit | points | model holds |\n"
                        "|---|---|---|---|---|---|---|---|---|---|\n"
                        "| postgres | overwrite | batch_time local | ols | overhead | -72.18 | -133.6 to -10.8 | ms per batch "
                        "| 15 | yes |\n"
                        "| duckdb | count | scan_time | theil_sen | per_gb | 2.036 | 2.055 to 2.143 | s per GB | 4 | yes |\n"
                        "| postgres | sync_on | sweep model | bootstrap_median_difference | effect[unlogged] | -0.1571 | "
                        "-0.1597 to -0.1541 | ms against no_key | 2000 | – |\n")
    cost, outside, difference = _fit_rows(findings)
    assert _COST_UNIT.match(cost["unit"]) and cost["high"] < 0 and cost["holds"] == "yes"  # what the test above refuses
    assert not outside["low"] <= outside["estimate"] <= outside["high"]
    assert not _COST_UNIT.match(difference["unit"])  # a difference may lie below 0


def test_an_unfinished_run_is_refused_when_named_and_left_out_otherwise(run00, tmp_path):
    broken = tmp_path / "run"
    shutil.copytree(run00, broken)
    meta_path = broken / "00_published_results" / "run.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "completed": False}))
    with pytest.raises(ConfigError, match="did not complete"):
        promotion.promote(broken, ["00"], to=tmp_path / "figures")
    with pytest.raises(ConfigError, match="at least one completed notebook"):
        promotion.promote(broken, to=tmp_path / "figures")
    assert not (tmp_path / "figures").exists()


@pytest.mark.parametrize("meta, said", [({"completed": True}, "no notebook, started_at, parameters"),
                                         ([1, 2], "no notebook, completed"),
                                         ("other", "it names '01_insert_anatomy'")])
def test_a_run_json_that_no_run_wrote_is_refused_with_what_it_lacks(run00, tmp_path, meta, said):
    forged = tmp_path / "run"
    shutil.copytree(run00, forged)
    meta_path = forged / "00_published_results" / "run.json"
    if meta == "other":
        meta = {**json.loads(meta_path.read_text()), "notebook": "01_insert_anatomy"}
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(ConfigError, match="not one `ingestlab run` wrote for 00_published_results") as refused:
        promotion.promote(forged, ["00"], to=tmp_path / "figures")
    assert said in str(refused.value)
    with pytest.raises(ConfigError, match="at least one completed notebook"):
        promotion.promote(forged, to=tmp_path / "figures")
    assert not (tmp_path / "figures").exists()


def test_the_figures_command_says_what_it_copied_or_fails_in_one_line(run00, tmp_path):
    res = subprocess.run([str(BIN), "figures", str(run00), "--to", str(tmp_path / "f")], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("00_published_results: figures of") and "(SCALE -)" in res.stdout
    res = subprocess.run([str(BIN), "figures", str(tmp_path / "nothing"), "--to", str(tmp_path / "f")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1 and "RUN_DIR" in res.stderr


def _with_meta(run00, tmp_path, name: str, **changes) -> Path:
    """A copy of ``run00`` whose run.json has ``changes`` (top-level keys, dicts merged one level deep)."""
    copy = tmp_path / name
    shutil.copytree(run00, copy)
    meta_path = copy / "00_published_results" / "run.json"
    meta = json.loads(meta_path.read_text())
    for key, value in changes.items():
        meta[key] = {**meta.get(key, {}), **value} if isinstance(value, dict) else value
    meta_path.write_text(json.dumps(meta))
    return copy


def test_a_resumed_run_names_the_revision_and_load_of_what_it_kept(run00, tmp_path):
    kept = {"at": "2026-01-02T03:04:05+00:00", "kept": 7, "measured": 2,
            "git_before": {"revision": "abcdef0123456789", "dirty": False},
            "load_average_before": {"start": [3.1, 2.0, 1.2]}}
    resumed = _with_meta(run00, tmp_path, "run", resumed=kept)
    # what it kept was measured on a loaded machine: refused, unless asked for
    with pytest.raises(ConfigError, match=r"loaded \(1-minute load average 3.1 at the start, above 1.5\)"):
        promotion.promote(resumed, ["00"], to=tmp_path / "figures")
    promotion.promote(resumed, ["00"], to=tmp_path / "figures", allow_loaded=True)
    source = (tmp_path / "figures" / "00_published_results" / promotion.SOURCE).read_text()
    assert "Revision: abcdef0, resumed at " in source  # what measured the kept configurations, then the resume
    assert ("Resumed: at 2026-01-02T03:04:05+00:00, 7 configurations kept from the earlier run's checkpoints "
            "(revision abcdef0, load average [3.1, 2.0, 1.2] at its start, the CPU other processes used then not "
            "recorded), 2 measured") in source
    assert "Machine: LOADED (1-minute load average 3.1 at the start" in source and "--allow-loaded" in source
    # what it kept was measured from uncommitted changes: refused, whatever is allowed
    dirty = _with_meta(run00, tmp_path, "dirty", resumed={**kept, "git_before": {"revision": "abcdef0", "dirty": True}})
    with pytest.raises(ConfigError, match="uncommitted changes"):
        promotion.promote(dirty, ["00"], to=tmp_path / "f2", allow_loaded=True)


def test_a_resume_that_only_draws_again_does_not_make_the_machine_that_measured_quiet(run00, tmp_path):
    """The quiet redraw of a run measured beside other work is still refused: the CPU others used while the kept
    configurations were measured (resumed.machine_cpu_before) counts, and SOURCE names it."""
    kept = {"at": "2026-01-02T03:04:05+00:00", "kept": 5, "measured": 0,
            "git_before": {"revision": "abcdef0123456789", "dirty": False},
            "load_average_before": {"start": [0.5, 0.5, 0.5]}, "machine_cpu_before": {"others_cpu_share": 0.31}}
    busy = _with_meta(run00, tmp_path, "busy", resumed=kept, machine_cpu={"others_cpu_share": 0.01})
    with pytest.raises(ConfigError, match="other processes used 31% of its CPU while it ran"):
        promotion.promote(busy, ["00"], to=tmp_path / "figures")
    quiet = _with_meta(run00, tmp_path, "quiet", resumed={**kept, "machine_cpu_before": {"others_cpu_share": 0.04}},
                       machine_cpu={"others_cpu_share": 0.01})
    promotion.promote(quiet, ["00"], to=tmp_path / "figures")
    source = (tmp_path / "figures" / "00_published_results" / promotion.SOURCE).read_text()
    assert "load average [0.5, 0.5, 0.5] at its start, other processes 4.0% of its CPU), 0 measured" in source
    assert "other processes used 4.0% of its CPU while it measured" in source


def test_a_busy_machine_that_only_draws_again_a_quiet_runs_figures_changes_no_number(run00, tmp_path):
    """The converse: a redraw (a resume that measured nothing) beside other work keeps the quiet run's numbers, so
    its own load is not the measurement's (it refused 00's redraw at load 4.5 beside the test suite)."""
    kept = {"at": "2026-01-02T03:04:05+00:00", "kept": 5, "measured": 0,
            "git_before": {"revision": "abcdef0123456789", "dirty": False},
            "load_average_before": {"start": [0.7, 0.5, 0.5]}, "machine_cpu_before": {"others_cpu_share": 0.03}}
    redrawn = _with_meta(run00, tmp_path, "redrawn", resumed=kept, load_average={"start": [4.5, 3.9, 2.0]},
                         machine_cpu={"others_cpu_share": 0.45})
    promotion.promote(redrawn, ["00"], to=tmp_path / "figures")
    source = (tmp_path / "figures" / "00_published_results" / promotion.SOURCE).read_text()
    assert "Machine: quiet (1-minute load average 0.7 at the start of the run that measured; other processes used " \
           "3.0% of its CPU while it measured" in source
    assert "[4.5, 3.9, 2.0] at the start" in source and "(of the resume, which measured nothing" in source
    measuring = _with_meta(run00, tmp_path, "measuring", resumed={**kept, "measured": 1},
                           load_average={"start": [4.5, 3.9, 2.0]})
    with pytest.raises(ConfigError, match=r"1-minute load average 4.5 at the start"):  # it measured there: refused
        promotion.promote(measuring, ["00"], to=tmp_path / "f2")


@pytest.mark.parametrize("change, said", [
    ({"git": {"dirty": True}}, "measured from a tree with uncommitted changes"),
    ({"load_average": {"start": [2.4, 1.0, 0.8]}}, "its machine was loaded (1-minute load average 2.4"),
    ({"machine_cpu": {"others_cpu_share": 0.25}}, "other processes used 25% of its CPU while it ran, above 10%"),
])
def test_a_run_from_a_dirty_tree_or_a_loaded_machine_is_not_promoted(run00, tmp_path, change, said):
    run = _with_meta(run00, tmp_path, "run", **change)
    with pytest.raises(ConfigError, match=re.escape(said)):
        promotion.promote(run, ["00"], to=tmp_path / "figures")
    with pytest.raises(ConfigError, match=re.escape(said)):  # not named: nothing left to promote, and why
        promotion.promotable(run)
    assert not (tmp_path / "figures").exists()
    res = subprocess.run([str(BIN), "figures", str(run), "00", "--to", str(tmp_path / "figures")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and len(res.stderr.splitlines()) == 1 and said in res.stderr, res.stderr


def test_a_quiet_runs_source_says_so_and_a_loaded_runs_caption_says_loaded_machine(run00, tmp_path):
    promotion.promote(run00, ["00"], to=tmp_path / "figures")
    source = (tmp_path / "figures" / "00_published_results" / promotion.SOURCE).read_text()
    assert ("Machine: quiet (1-minute load average 0.5 at the start; other processes used 2.0% of its CPU while it "
            "ran (others_cpu_share))") in source
    meta = json.loads((run00 / "00_published_results" / "run.json").read_text())
    assert "loaded machine" not in report.run_caption(meta)
    meta["load_average"]["start"] = [1.9, 1.0, 1.0]
    assert "loaded machine (load average 1.9 at the start)" in report.run_caption(meta)


def test_a_smoke_run_is_never_promoted_into_the_articles_figures(run00, tmp_path):
    smoke = tmp_path / "smoke"
    shutil.copytree(run00, smoke)
    meta_path = smoke / "00_published_results" / "run.json"
    meta_path.write_text(json.dumps({**json.loads(meta_path.read_text()), "parameters": {"scale": "smoke"}}))
    with pytest.raises(ConfigError, match="smoke run"):
        promotion.promote(smoke, ["00"], to=tmp_path / "figures")
    assert not (tmp_path / "figures").exists()


def test_a_run_that_saved_its_figures_as_png_only_is_not_promoted(run00, tmp_path):
    run = tmp_path / "png-only"
    shutil.copytree(run00, run)
    made = run / "00_published_results" / "figures"
    assert {p.suffix for p in made.iterdir()} == {".png", ".svg", ".pdf", ".md"}  # without the variable; captions
    assert json.loads((run / "00_published_results" / "run.json").read_text())["figure_formats"] == ["png", "svg",
                                                                                                     "pdf"]
    for path in made.glob("*.svg"):  # as $INGESTLAB_FIGURE_FORMATS=png,pdf saves them
        path.unlink()
    with pytest.raises(ConfigError, match=r"lack a format \(svg: \$INGESTLAB_FIGURE_FORMATS was set\)"):
        promotion.promote(run, ["00"], to=tmp_path / "figures")
    assert not (tmp_path / "figures").exists()


def test_source_names_the_libraries_a_run_measured_in_process_with_their_versions(tmp_path):
    """06's readers are libraries, not servers: its SOURCE said "Engines: none (published data)"."""
    folder = tmp_path / "06_csv_scan"
    folder.mkdir()
    meta = {"notebook": "06_csv_scan", "parameters": {"scale": "paper", "readers": ["duckdb", "chdb", "pandas_c"]},
            "engines": [], "software": {"packages": {"duckdb": "2.0.0", "chdb": "4.4.0", "pandas": "3.1.1"}},
            "git": {"revision": "0123456789", "dirty": False}}
    text = promotion.source_text(folder, meta, [], promoted_by="test")
    assert "Engines: DuckDB 2.0.0, chDB 4.4.0, pandas (C parser) 3.1.1\n" in text


def test_a_comparison_names_and_is_held_to_the_runs_that_measured_what_it_draws(tmp_path):
    """07 measures nothing: its SOURCE said "Engines: none: the figures draw the seeds' published tables" and gave
    only its own revision, while its figure drew two runs of 01 measured at two other revisions."""
    folder = tmp_path / "07_compare_runs"
    folder.mkdir()
    side = {"notebook": "01_insert_anatomy", "completed": True, "started_at": "2026-11-28T03:01:00+00:00",
            "parameters": {"scale": "paper", "engines": ["postgres", "duckdb"]},
            "engines": [{"engine": "postgres", "server_version": "18.6"}], "software": {"packages": {"duckdb": "2.0.0"}},
            "git": {"revision": "0f5461fab0", "dirty": False}, "load_average": {"start": [0.8, 1.0, 1.0]},
            "machine_cpu": {"others_cpu_share": 0.01}}
    meta = {"notebook": "07_compare_runs", "completed": True, "parameters": {"run_a": "x", "run_b": "y"},
            "engines": [], "git": {"revision": "1234567abc", "dirty": False}, "load_average": {"start": [0.5, 1, 1]},
            "compared": [{"role": "A", "folder": "runs/01k", **side},
                         {"role": "B", "folder": "runs/01l", **side, "git": {"revision": "89abcdef01", "dirty": False}}]}
    text = promotion.source_text(folder, meta, [], promoted_by="test")
    assert "Scale: paper (" in text
    assert "Engines: none measured by this run: it compares the runs named under Compared\n" in text
    assert ("Compared run A: runs/01k: 01_insert_anatomy, paper scale, run of 2026-11-28T03:01:00+00:00, git 0f5461f; "
            "engines: PostgreSQL 18.6, DuckDB 2.0.0; machine quiet (1-minute load average 0.8 at the start; other "
            "processes used 1.0% of its CPU while it ran (others_cpu_share))\n") in text
    assert "Compared run B: runs/01l: 01_insert_anatomy, paper scale, run of 2026-11-28T03:01:00+00:00, git 89abcde;" in text
    caption = report.run_caption(meta)
    # the caption names each run's scale, revision and load (its engines are in SOURCE: a caption stays short)
    assert "run A: paper scale, run of 2026-11-28 03:01 UTC, git 0f5461f, load average 0.8 at the start" in caption
    assert "run B: paper scale, run of 2026-11-28 03:01 UTC, git 89abcde" in caption
    assert promotion._unfit_compared(meta, allow_loaded=False) is None
    for change, said in (({"completed": False}, "it compares run B (runs/01l), which did not complete"),
                         ({"parameters": {"scale": "smoke"}}, "it compares run B (runs/01l), a smoke run"),
                         ({"git": {"revision": "89abcdef01", "dirty": True}},
                          "it compares run B (runs/01l), and was measured from a tree with uncommitted changes"),
                         ({"load_average": {"start": [3.0, 1, 1]}},
                          "it compares run B (runs/01l), and its machine was loaded (1-minute load average 3")):
        bad = {**meta, "compared": [meta["compared"][0], {**meta["compared"][1], **change}]}
        assert promotion._unfit_compared(bad, allow_loaded=False).startswith(said)
    loaded = {**meta, "compared": [meta["compared"][0], {**meta["compared"][1], "load_average": {"start": [3.0, 1, 1]}}]}
    assert promotion._unfit_compared(loaded, allow_loaded=True) is None
    assert "run B: paper scale, run of 2026-11-28 03:01 UTC, git 89abcde, loaded machine" in report.run_caption(loaded)


def test_a_run_whose_figure_broke_the_grammar_is_not_promoted_until_it_is_drawn_again(run00, tmp_path):
    """01's fit figure broke the grammar (seven colours in one panel) in every paper run, and was promoted all the same:
    save only warned."""
    from ingestlab import figure_checks

    run = tmp_path / "run"
    shutil.copytree(run00, run)
    made = run / "00_published_results" / "figures"
    (made / figure_checks.PROBLEMS_FILE).write_text(json.dumps({"doris_stream_load": ["panel 1: 7 colours of data in one "
                                                                                "panel (at most 5)"]}))
    said = "its figure doris_stream_load breaks the lab's figure grammar: panel 1: 7 colours of data in one panel"
    with pytest.raises(ConfigError, match=re.escape(said)):
        promotion.promote(run, ["00"], to=tmp_path / "figures")
    assert not (tmp_path / "figures").exists()
    (made / figure_checks.PROBLEMS_FILE).unlink()
    promotion.promote(run, ["00"], to=tmp_path / "figures")
    assert not list((tmp_path / "figures").rglob(figure_checks.PROBLEMS_FILE))  # the record is not an article figure


def test_a_diagnostic_figure_that_broke_the_grammar_stays_in_the_run_and_does_not_hold_back_the_article(run00, tmp_path):
    from ingestlab import figure_checks

    run = tmp_path / "run"
    shutil.copytree(run00, run)
    made = run / "00_published_results" / "figures"
    assert "csv_peak_memory" not in workloads.discover()["00_published_results"].article
    (made / figure_checks.PROBLEMS_FILE).write_text(json.dumps({"csv_peak_memory": ["panel 1: too small to read"]}))
    promotion.promote(run, ["00"], to=tmp_path / "figures")
    assert not list((tmp_path / "figures").rglob("csv_peak_memory.*"))


def test_a_notebook_declares_at_most_three_article_figures_each_one_of_its_own():
    def validate(**_):
        return None

    plotters = {name: "ingestlab.models:tidy" for name in "abcd"}
    assert workloads.Notebook(stem="93_toy", question="q", study="none", validate=validate, engine_parameter=None,
                              plotters=plotters).article == ("a", "b", "c")
    for article, said in ((("a", "b", "c", "d"), "at most 3"), (("a", "e"), "e is none of them")):
        with pytest.raises(ValueError, match=said):
            workloads.Notebook(stem="93_toy", question="q", study="none", validate=validate, engine_parameter=None,
                               plotters=plotters, article=article)
