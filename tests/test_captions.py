"""Captions say what a figure shows and what made it, beside the figure and never in it; figures fit the printed page."""

import hashlib

import matplotlib.figure
import matplotlib.pyplot as plt
import pandas as pd
import pytest

from ingestlab import captions, figure_checks, figures, findings, models, plots, published


def test_fit_to_print_gives_the_drawing_its_print_width_legend_outside_the_axes_included():
    # in the lab's theme, as every notebook draws (set here: a worker's earlier test may or may not have set it)
    with plt.rc_context():
        figures.use_article_theme()
        for made, printed in ((7.0, figures.PAGE_WIDTH), (4.0, figures.COLUMN_WIDTH)):
            fig, ax = plt.subplots(figsize=(made, 3.0))
            ax.plot([0, 1], [0, 1], label="one series")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
            fig.canvas.draw()
            size = ax.get_legend().get_texts()[0].get_fontsize()
            box = captions.fit_to_print(fig)
            drawn = fig.get_tightbbox(fig.canvas.get_renderer())
            assert abs(box.width - printed) < 0.01 and box.contains(drawn.x0, drawn.y0) and box.contains(drawn.x1, drawn.y1)
            assert abs(drawn.width + 2 * plt.rcParams["savefig.pad_inches"] - printed) < 0.01
            assert ax.get_legend().get_texts()[0].get_fontsize() == size  # the text keeps its size: the axes give way
            figures.close(fig)


def test_fit_to_print_takes_a_few_draws_where_the_axes_give_way_only_in_part(monkeypatch):
    """Axes placed in fractions of the figure (no layout engine) follow its width in part: stepping as if they
    followed it inch for inch took five draws for these (the width converged by halves), each a layout of every
    tick label; a step by the measured rate takes three."""
    draws = []
    draw = matplotlib.figure.Figure.draw_without_rendering

    def counted(fig):
        draws.append(fig.get_size_inches().copy())
        return draw(fig)

    monkeypatch.setattr(matplotlib.figure.Figure, "draw_without_rendering", counted)
    with plt.rc_context():
        figures.use_article_theme()
        for made in ((4.0, 3.0), (3.0, 2.5), (7.0, 3.6)):
            draws.clear()
            fig, ax = plt.subplots(figsize=made)
            ax.plot([0, 1], [0, 1], label="one series")
            ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
            box = captions.fit_to_print(fig)
            assert abs(box.width - figures.print_width(fig)) < 0.01
            assert len(draws) <= 3, [tuple(d.round(3)) for d in draws]
            figures.close(fig)


def test_fit_to_print_shrinks_a_tall_figure_no_further_than_its_smallest_readable_panel():
    """03's fit, three panels stacked: one step of the height left them 0.7 in tall, under the 0.8 a reader needs."""
    with plt.rc_context():
        figures.use_article_theme()
        for panels, tallest in ((3, figures.TALLEST[figures.PAGE_WIDTH]), (6, None)):
            fig, axes = plt.subplots(panels, 1, figsize=(7.0, 12.0), layout="constrained")
            for ax in axes:
                ax.plot([0, 1], [0, 1])
                ax.set(title="a panel", xlabel="x", ylabel="y")
            box = captions.fit_to_print(fig)
            assert captions.cramped(fig) == []
            if tallest is not None:  # three fit the page's height
                assert box.height <= tallest
            else:  # six do not: as short as they can be read, the grammar check says it is too tall
                smallest = min(ax.get_window_extent().height / fig.dpi for ax in axes)
                assert smallest < captions.MIN_AXES_IN[1] + 0.1 and box.height > figures.TALLEST[figures.PAGE_WIDTH]
            figures.close(fig)


def test_a_figure_saved_is_its_print_width_in_every_format(tmp_path, all_figure_formats):
    with plt.rc_context():
        figures.use_article_theme()
        fig, ax = plt.subplots(figsize=(3.0, 2.5))
        ax.plot([0, 1], [0, 1], label="one series")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1))
        figures.save(fig, "column", notebook="t", directory=tmp_path)
    assert figure_checks.png_size(tmp_path / "column.png")[0] == round(figures.COLUMN_WIDTH * figures.PNG_DPI)
    svg = (tmp_path / "column.svg").read_text()
    assert f'width="{figures.COLUMN_WIDTH * 72:g}pt"' in svg, svg[:400]
    assert f"/MediaBox [ 0 0 {figures.COLUMN_WIDTH * 72:g} ".encode() in (tmp_path / "column.pdf").read_bytes()


def test_declaring_another_print_width_is_refused():
    fig = plt.figure()
    try:
        with pytest.raises(ValueError, match="3.3 in .a column. or 7 in .a page. wide, not 5"):
            figures.print_width(fig, 5)
    finally:
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
    said = findings.fits(fits.assign(model_holds=True), "overhead", by=["variant"])  # lines that hold
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
    assert figure_checks.print_size_problems(tmp_path / "tall.png") == []


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
