"""Captions say what a figure shows and what made it, beside the figure and never in it; figures fit the printed page."""

import hashlib

import matplotlib.pyplot as plt
import pandas as pd

from ingestlab import captions, figure_checks, figures, findings, models, plots, published


def test_fit_to_page_shrinks_a_figure_whose_legend_sticks_out_until_everything_fits():
    # in the lab's theme, as every notebook draws (set here: a worker's earlier test may or may not have set it)
    with plt.rc_context():
        figures.use_article_theme()
        fig, ax = plt.subplots(figsize=(7.0, 3.0))
        ax.plot([0, 1], [0, 1], label="a long legend entry " * 3)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
        fig.canvas.draw()
        size = ax.get_legend().get_texts()[0].get_fontsize()
        assert fig.get_tightbbox(fig.canvas.get_renderer()).width > 7.33
        captions.fit_to_page(fig)
        assert fig.get_tightbbox(fig.canvas.get_renderer()).width <= figures.MAX_PNG_PX[0] / figures.PNG_DPI
        assert ax.get_legend().get_texts()[0].get_fontsize() == size  # the text keeps its size: the axes give way
        figures.close(fig)


_META = {"parameters": {"scale": "smoke", "disk_profile": "cloud-375"}, "started_at": "2026-11-24T05:01:02+00:00",
         "engines": [{"engine": "postgres", "server_version": "18.6"}, {"engine": "postgres", "server_version": "18.6"}],
         "git": {"revision": "0123456789abcdef", "dirty": True}, "host": {"cpu_cores": 2}}


def _said(folder, name):
    return (folder / f"{name}{captions.CAPTION_SUFFIX}").read_text()


def _two_variants_fitted():
    # two commit variants' totals against statements, fitted and drawn: the long-form fits and the axes
    figures.use_article_theme()
    data = pd.DataFrame({"n_statements": [1, 10, 1000] * 2, "total_s": [0.02, 0.05, 3.0, 0.01, 0.02, 0.15],
                         "variant": ["sync_on"] * 3 + ["sync_off"] * 3})
    fits = models.tidy(models.fit_overhead(data, by=["variant"], robust=False), model="overhead",
                       terms=models.OVERHEAD_TERMS)
    return fits, plots.plot_fit(data, fits, x="n_statements", y="total_s", hue="variant")


def test_a_caption_goes_beside_the_figure_naming_engine_scale_disk_and_run_and_nothing_of_it_into_the_image(
        tmp_path, all_figure_formats):
    fits, ax = _two_variants_fitted()
    fig = captions.caption(ax.figure, "Total time against statements", run=_META)
    assert fig.texts == []  # an article sets its captions in text
    made = captions.of(fig).provenance
    for part in ("PostgreSQL 18.6", "smoke scale", "not a result", "disk profile cloud-375", "2026-11-24 05:01 UTC",
                 "git 0123456", "uncommitted"):
        assert part in made
    assert made.count("PostgreSQL") == 1  # one engine restarted per variant is still one engine
    # axis labels carry their unit; identifiers are named in the legend, with each fit's CI
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("statements per run", "total time (s)")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all(text.startswith(("synchronous_commit on: ", "synchronous_commit off: ")) for text in legend)
    assert all("95 % CI" in text and "ms per statement" in text and "n = 3, rough" in text for text in legend)
    figures.save(fig, "captioned", notebook="t", directory=tmp_path)
    text = _said(tmp_path, "captioned")
    assert text.startswith("**Total time against statements.**") and f"*{made}*" in text
    svg = (tmp_path / "captioned.svg").read_text()  # its text: axes, ticks, legend, no caption or provenance
    assert "Total time against statements" not in svg and "cloud-375" not in svg and "0123456" not in svg
    assert "statements per run" in svg


def test_a_caption_states_the_finding_after_its_title_and_before_what_made_it(tmp_path):
    fits, ax = _two_variants_fitted()
    said = findings.fits(fits, "overhead", by=["variant"])
    assert said.startswith("Fitted overhead: synchronous_commit on 2.98 ms per statement (95 % CI 2.60–3.36; n = 3, rough)")
    fig = captions.caption(ax.figure, "Total time against statements", run=_META, finding=f"**{said}**")
    figures.save(fig, "found", notebook="t", directory=tmp_path)
    first, made = _said(tmp_path, "found").strip().split("\n\n")
    assert first == f"**Total time against statements.** {said}"  # the finding's own emphasis dropped
    assert made.startswith("*PostgreSQL 18.6 · smoke scale")


def test_a_figure_saved_again_without_a_caption_keeps_no_earlier_caption(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2])
    figures.save(captions.caption(fig, "First", run=_META), "again", notebook="t", directory=tmp_path)
    assert _said(tmp_path, "again").startswith("**First.**")
    fig, ax = plt.subplots()
    ax.plot([1, 2], [1, 2])
    figures.save(fig, "again", notebook="t", directory=tmp_path)
    assert not (tmp_path / f"again{captions.CAPTION_SUFFIX}").exists()


def test_a_tall_drawing_is_fitted_to_the_page(tmp_path):
    """05's methods figure was 2 710 px tall."""
    with plt.rc_context():
        figures.use_article_theme()
        fig, ax = plt.subplots(figsize=(4.5, 12.0))
        ax.plot(range(30), range(30))
        captions.caption(fig, "A tall panel", run=_META, finding="A finding that runs to several lines. " * 16)
        figures.save(fig, "tall", notebook="t", directory=tmp_path)
    width, height = figure_checks.png_size(tmp_path / "tall.png")
    assert height <= figures.MAX_PNG_PX[1] and width < figures.MAX_PNG_PX[0], (width, height)


def test_caption_of_a_published_table_names_the_seed_and_versions():
    fig = plt.figure()
    captions.caption(fig, "Seed", data=published.load("starrocks_insert_scenarios"))
    assert captions.of(fig).provenance.startswith("published by the seed starrocks-insert-overhead.ru.txt: StarRocks")
    figures.close(fig)


def test_the_same_captioned_figure_of_the_same_run_saves_to_the_same_svg_bytes(tmp_path, all_figure_formats):
    figures.use_article_theme()
    data = pd.DataFrame({"scenario": ["single_row"] * 3, "elapsed_ms": [0.07, 0.5, 90.0], "variant": ["sync_on"] * 3})
    digests = []
    for run in range(2):
        fig = captions.caption(plots.plot_latency(data, hue="variant").figure, "Latency", run=_META)
        figures.save(fig, "same", notebook="t", directory=tmp_path / str(run))
        digests.append(hashlib.sha256((tmp_path / str(run) / "same.svg").read_bytes()).hexdigest())
    assert digests[0] == digests[1]
