"""The figure linter finds what breaks the lab's figure grammar, and save records or refuses it."""

import os

import matplotlib.pyplot as plt
import pytest

from ingestlab import direct_labels, figure_checks, figures


def test_the_grammar_check_finds_bars_on_a_log_axis_a_line_past_the_axes_and_an_engine_in_another_colour(tmp_path):
    fig, (bars, lines) = plt.subplots(1, 2, figsize=(6, 3))
    bars.barh(["a", "b"], [1, 1000])
    bars.set_xscale("log")
    lines.plot([0, 1], [0, 1], color="#0072B2", label="PostgreSQL")
    lines.plot([0, 1], [0, 1], color="#0072B2", label="MariaDB")  # PostgreSQL's blue
    lines.add_artist(plt.Line2D([0.5, 3.0], [0.5, 0.5], label="fit"))  # past the data's x-range
    lines.set_xlim(0, 1)
    lines.legend()
    problems = figure_checks.grammar_problems(fig)
    assert any("bars on a log axis" in p for p in problems)
    assert any("'fit' runs outside the axes" in p for p in problems)
    assert any("'MariaDB' is drawn in #0072b2" in p for p in problems)
    assert not any("'PostgreSQL'" in p for p in problems)
    fig.set_size_inches(7, 3)
    fig.savefig(tmp_path / "wide.png", dpi=figures.PNG_DPI, bbox_inches=fig.bbox_inches)  # a page's 7 in: 2 100 px
    assert not any(" in wide" in p for p in figure_checks.grammar_problems(fig, png=tmp_path / "wide.png"))
    fig.set_size_inches(8, 6)
    fig.savefig(tmp_path / "wide.png", dpi=figures.PNG_DPI, bbox_inches=fig.bbox_inches)
    wide = figure_checks.grammar_problems(fig, png=tmp_path / "wide.png")
    assert "drawn 8.00 in wide, not the 7 in of a page: its labels or legend do not fit" in wide, wide
    assert "6.00 in tall: a page figure is at most 5.5 in" in wide, wide
    figures.close(fig)


def test_more_than_four_engines_told_apart_by_colour_in_a_panel_break_the_grammar_their_shades_count_once():
    fig, ax = plt.subplots()
    engines = ["postgres", "mariadb", "duckdb", "clickhouse"]
    for i, engine in enumerate(engines):
        ax.plot([0, 1], [i, i], color=figures.ENGINE_STYLE[engine][0], label=engine)
    ax.plot([0, 1], [0, 2], color=figures.shade(figures.ENGINE_STYLE["postgres"][0], 0.45), label="postgres, off")
    assert figure_checks.grammar_problems(fig) == []  # four hues, five colours: PostgreSQL's shade is its own hue
    ax.lines[-1].remove()
    ax.plot([0, 1], [1, 3], color=figures.ENGINE_STYLE["rocksdb"][0], label="rocksdb")
    assert figure_checks.grammar_problems(fig) == []  # no legend: nothing to match by colour
    ax.legend()
    assert figure_checks.grammar_problems(fig) == [
        "panel 1: 5 engines' colours in one panel, which a reader must tell apart by colour (at most 4: split the "
        "panel, or name the series where they are drawn)"]
    figures.close(fig)


def test_more_than_five_colours_in_a_panel_break_the_grammar_greys_do_not_count():
    fig, ax = plt.subplots()
    shades = [figures.shade(figures.ENGINE_STYLE[e][0], t) for e in ("postgres", "mariadb") for t in (0, -0.35, 0.45)]
    for i, colour in enumerate(shades):  # two engines' hues, three shades each
        ax.plot([0, 1], [i, i], color=colour, label=f"series {i}")
    ax.plot([0, 1], [0, 5], color="0.5", label="reference")
    assert figure_checks.grammar_problems(fig) == ["panel 1: 6 colours of data in one panel (at most 5)"]
    ax.lines[0].remove()
    assert figure_checks.grammar_problems(fig) == []
    figures.close(fig)


def test_save_refuses_a_figure_that_breaks_the_grammar_when_strict_and_warns_otherwise(tmp_path, monkeypatch, caplog):
    def figure():
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.barh(["a", "b"], [1, 1000])
        ax.set_xscale("log")
        return fig

    monkeypatch.setenv(figures.CHECK_ENV, "strict")
    with pytest.raises(figure_checks.FigureGrammarError, match="bars on a log axis"):
        figures.save(figure(), "bad", notebook="x", directory=tmp_path)
    monkeypatch.setenv(figures.CHECK_ENV, "")
    figures.save(figure(), "bad", notebook="x", directory=tmp_path)
    assert "x/bad breaks the lab's figure grammar: panel 1: bars on a log axis" in caplog.text
    assert (tmp_path / "bad.png").exists()  # saved all the same: the run keeps what it drew
    # and recorded beside it, for `ingestlab figures` to refuse; drawn again without the fault, the record goes
    assert figure_checks.recorded_problems(tmp_path) == {"bad": ["panel 1: bars on a log axis"]}
    fixed = figure()
    fixed.axes[0].set_xscale("linear")
    figures.save(fixed, "bad", notebook="x", directory=tmp_path)
    assert figure_checks.recorded_problems(tmp_path) == {} and not (tmp_path / figure_checks.PROBLEMS_FILE).exists()


@pytest.mark.parametrize("formats", ["png", "png,svg,pdf"])
def test_tick_labels_printed_over_one_another_are_found_in_the_figure_as_saved(tmp_path, monkeypatch, formats):
    """07's paper figure: an axis over 15 decades printed "0.01 100,000,000,…" as one smear under each panel.
    Checked after the save (at 300 dpi, then the figure's own): measured with the saving renderer, '0.25' and '0.50' of
    01's latency axis, far apart on the page, came out over one another."""
    def figure(ticks):
        fig, ax = plt.subplots(figsize=(3.3, 2))
        ax.plot([1, 2], [1, 2], "o")
        ax.set_xticks([1, 1.5, 2], ticks)
        return fig

    monkeypatch.setenv(figures.CHECK_ENV, "strict")
    monkeypatch.setenv("INGESTLAB_FIGURE_FORMATS", formats)
    figures.save(figure(["0.25", "0.50", "0.75"]), "fine", notebook="x", directory=tmp_path)
    # which neighbouring pair is found first depends on the machine's fonts: either is the smear
    with pytest.raises(figure_checks.FigureGrammarError,
                       match="x tick labels '1,000,000,000(,000)?' and '1,000,000,000,000(,000)?' "
                       "are printed over one another"):
        figures.save(figure(["1,000,000,000", "1,000,000,000,000", "1,000,000,000,000,000"]), "smear", notebook="x",
                     directory=tmp_path)


def test_every_figure_the_tests_save_is_held_to_the_grammar(tmp_path):
    """tests/conftest.py makes the check strict for the whole session: every notebook nbval runs (00–07 at their
    smoke defaults) and every real run of the CLI tests saves its figures through :func:`figures.save`, which then
    raises on a figure that breaks the grammar, failing that test."""
    assert os.environ[figures.CHECK_ENV] == "strict"
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.barh(["a", "b"], [1, 1000])
    ax.set_xscale("log")
    with pytest.raises(figure_checks.FigureGrammarError):
        figures.save(fig, "bars_on_log", notebook="t", directory=tmp_path)


def test_a_direct_label_naming_an_engine_in_another_colour_breaks_the_grammar():
    fig, ax = plt.subplots(figsize=(5, 3))
    ax.plot([1, 2], [1, 2], color=figures.ENGINE_STYLE["mariadb"][0])
    direct_labels.label_ends(ax, [("PostgreSQL, defaults", figures.ENGINE_STYLE["mariadb"][0], 2, 2)])
    (problem,) = figure_checks.grammar_problems(fig)
    assert problem.startswith("'PostgreSQL, defaults' is drawn in #009e73, not in PostgreSQL's #0072B2")
    figures.close(fig)


def test_a_log_axis_over_less_than_a_decade_is_reported_and_one_over_a_decade_is_not():
    import matplotlib.pyplot as plt

    from ingestlab import figure_checks

    fig, (short, long_) = plt.subplots(1, 2, figsize=(6, 2.5))
    for ax, top in ((short, 1.45), (long_, 14.5)):  # 05's bulk panel: 0.72 to 1.45 s on a log axis
        ax.plot([1, 2], [0.72, top], "o")
        ax.set_yscale("log")
        ax.set_ylim(0.7, top * 1.02)
    problems = figure_checks.grammar_problems(fig)
    assert [p for p in problems if "less than one decade" in p] == [
        "panel 1: a log y axis over less than one decade (0.7 to 1.48): a linear axis reads better"]
    plt.close(fig)


def test_values_of_crossing_series_at_one_x_are_written_apart():
    # 00's upsert_batch_times: "1,841" printed over "1,538" where two series cross at P99
    import matplotlib.pyplot as plt
    import pandas as pd

    from ingestlab import figure_checks, plots

    data = pd.DataFrame({"statistic": ["P90", "P99", "P90", "P99"], "ms": [948.0, 1538.0, 468.0, 1841.0],
                         "engine": ["arangodb", "arangodb", "postgres", "postgres"]})
    ax = plots.plot_sweep(data, x="statistic", y="ms", hue="engine", logy=True, annotate=True, fmt="{:,.0f}")
    ax.set_ylim(10, 1_000_000)  # five decades: the two values 4 pt apart
    ax.figure.canvas.draw()
    assert not [p for p in figure_checks.grammar_problems(ax.figure, drawn=True) if "printed over" in p]
    plt.close(ax.figure)
