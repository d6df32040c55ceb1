"""Captions say what a figure shows and what made it, and figures fit the printed page."""

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


def _texts(fig):
    return [t.get_text() for t in fig.texts]


def _two_variants_fitted():
    # two commit variants' totals against statements, fitted and drawn: the long-form fits and the axes
    figures.use_article_theme()
    data = pd.DataFrame({"n_statements": [1, 10, 1000] * 2, "total_s": [0.02, 0.05, 3.0, 0.01, 0.02, 0.15],
                         "variant": ["sync_on"] * 3 + ["sync_off"] * 3})
    fits = models.tidy(models.fit_overhead(data, by=["variant"], robust=False), model="overhead",
                       terms=models.OVERHEAD_TERMS)
    return fits, plots.plot_fit(data, fits, x="n_statements", y="total_s", hue="variant")


def test_caption_titles_the_figure_and_names_engine_scale_disk_and_run_below_everything(tmp_path):
    fits, ax = _two_variants_fitted()
    fig = captions.caption(ax.figure, "Total time against statements", run=_META)
    title, caption = _texts(fig)
    assert title == "Total time against statements"
    for part in ("PostgreSQL 18.6", "smoke scale", "not a result", "disk profile cloud-375", "2026-11-24 05:01 UTC",
                 "git 0123456", "uncommitted"):
        assert part in caption.replace("\n", " ")
    assert caption.count("PostgreSQL") == 1  # one engine restarted per variant is still one engine
    renderer = fig.canvas.get_renderer()
    below = fig.texts[1].get_window_extent(renderer).y1
    assert below <= ax.get_legend().get_window_extent(renderer).y0 + 1  # under the legend, not over it
    assert fig.texts[0].get_window_extent(renderer).y0 >= ax.get_window_extent(renderer).y1
    # axis labels carry their unit; identifiers are named in the legend, with each fit's CI
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("statements per run", "total time (s)")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert all(text.startswith(("synchronous_commit on: ", "synchronous_commit off: ")) for text in legend)
    assert all("95 % CI" in text and "ms per statement" in text and "n = 3, rough" in text for text in legend)
    figures.save(fig, "captioned", notebook="t", directory=tmp_path)


def test_caption_states_the_finding_under_the_figure_and_above_what_made_it(tmp_path):
    fits, ax = _two_variants_fitted()
    said = findings.fits(fits, "overhead", by=["variant"])
    assert said.startswith("Fitted overhead: synchronous_commit on 2.98 ms per statement (95 % CI 2.60–3.36; n = 3, rough)")
    fig = captions.caption(ax.figure, "Total time against statements", run=_META, finding=f"**{said}**")
    title, finding, made = _texts(fig)
    assert finding.replace("\n", " ") == said  # markdown's emphasis dropped, wrapped to the figure
    renderer = fig.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in fig.texts]
    assert boxes[1].y1 <= ax.get_legend().get_window_extent(renderer).y0 + 1  # under the legend
    assert boxes[2].y1 <= boxes[1].y0 + 1  # what made it comes last
    assert made.startswith("PostgreSQL 18.6 · smoke scale")
    figures.save(fig, "found", notebook="t", directory=tmp_path)


def test_a_tall_drawing_narrower_than_the_page_keeps_its_long_caption_on_the_page(tmp_path):
    """The caption wraps at the drawing's width: for a drawing narrower than the page it takes more lines than the room
    reckoned at the page's width, and the figure shrinks once more for them (05's methods figure was 2 710 px tall)."""
    with plt.rc_context():
        figures.use_article_theme()
        fig, ax = plt.subplots(figsize=(4.5, 12.0))
        ax.plot(range(30), range(30))
        captions.caption(fig, "A tall panel", run=_META, finding="A finding that runs to several lines. " * 16)
        figures.save(fig, "tall", notebook="t", directory=tmp_path)
    width, height = figure_checks.png_size(tmp_path / "tall.png")
    assert height <= figures.MAX_PNG_PX[1] and width < figures.MAX_PNG_PX[0], (width, height)


def test_a_caption_never_breaks_a_line_inside_95_percent_ci():
    """textwrap breaks at any space: "… (95" / "% CI 2.0–4.0)" was printed under 03's and 06's figures."""
    said = " ".join(f"{'w' * (i % 5 + 1)} (95 % CI)" for i in range(40))  # "95 % CI" at every offset of a line
    with plt.rc_context():
        figures.use_article_theme()
        fig, ax = plt.subplots(figsize=(7.0, 2.5))
        ax.plot([1, 2], [1, 2])
        captions.caption(fig, "Times", run=_META, finding=said)
        _, finding, _ = _texts(fig)
        plt.close(fig)
    lines = finding.splitlines()
    assert len(lines) >= 3 and finding.replace("\n", " ") == said
    assert not [line for line in lines if line.endswith(("95", "%")) or line.startswith(("%", "CI)"))], lines


def test_caption_of_a_published_table_names_the_seed_and_versions():
    fig = plt.figure()
    captions.caption(fig, "Seed", data=published.load("starrocks_insert_scenarios"))
    assert _texts(fig)[1].replace("\n", " ").startswith(
        "published by the seed starrocks-insert-overhead.ru.txt: StarRocks")
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
