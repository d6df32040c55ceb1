"""The house style and the one save path: formats, folders, display, the engines' colours."""

import hashlib
import os

import IPython
import IPython.display
import matplotlib.colors
import matplotlib.pyplot as plt
import numpy as np
import pytest

from ingestlab import figure_checks, figures, labels, plots, results


@pytest.fixture(autouse=True)
def _every_format(all_figure_formats):
    """The saving helper is tested as a user's run uses it: every format (the other tests save PNG only)."""


def test_save_writes_png_svg_pdf_into_the_folder_and_closes_the_figure(tmp_path):
    figures.use_article_theme()
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    assert figures.save(fig, "line", notebook="99_test", directory=tmp_path / "99_test") is None
    paths = sorted((tmp_path / "99_test").iterdir())
    assert [p.name for p in paths] == ["line.pdf", "line.png", "line.svg"]
    assert all(p.stat().st_size > 0 for p in paths)
    assert fig.number not in plt.get_fignums()  # this figure closed (another test on the worker may hold its own)


def test_save_writes_only_the_formats_the_environment_names(tmp_path, monkeypatch):
    monkeypatch.setenv(results.FIGURE_FORMATS_ENV, "png,pdf")
    figures.save(plt.figure(), "some", notebook="99_test", directory=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.pdf", "some.png"]
    monkeypatch.setenv(results.FIGURE_FORMATS_ENV, "pdf")  # no PNG: the grammar's size check reads it
    with pytest.raises(ValueError, match="INGESTLAB_FIGURE_FORMATS='pdf' is not valid"):
        figures.save(plt.figure(), "more", notebook="99_test", directory=tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["some.pdf", "some.png"]
    plt.close("all")


def test_save_uses_figures_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_FIGURES_DIR", str(tmp_path))
    fig = plt.figure()
    figures.save(fig, "empty", notebook="nb")
    assert (tmp_path / "nb" / "empty.png").exists()
    assert not plt.fignum_exists(fig.number)  # closed (another test's figures may be open)


def test_save_displays_the_saved_png_once_under_ipython_only(tmp_path, monkeypatch):
    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    fig = plt.figure(figsize=(3.3, 2))
    figures.save(fig, "outside", notebook="nb", directory=tmp_path)
    assert shown == []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    figures.save(fig, "inside", notebook="nb", directory=tmp_path)
    # the very file in the folder, embedded (whatever the kernel's backend), shown at ~100 px per inch
    (image,) = shown
    assert isinstance(image, IPython.display.Image) and image.data == (tmp_path / "inside.png").read_bytes()
    assert image.width == 330 and not plt.fignum_exists(fig.number)  # closed (another test's figures may be open)


def test_under_ipython_a_captioned_figure_is_shown_with_its_caption_under_it_as_text(tmp_path, monkeypatch):
    from ingestlab import captions

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    fig = captions.caption(plt.figure(figsize=(3.3, 2)), "A title", finding="What it shows (n = 3).")
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())  # after pyplot has made the figure
    figures.save(fig, "said", notebook="nb", directory=tmp_path)
    image, text = shown
    assert isinstance(image, IPython.display.Image) and isinstance(text, IPython.display.Markdown)
    assert text.data == (tmp_path / "said.caption.md").read_text() == "**A title.** What it shows (n = 3).\n"


def test_every_promoted_figure_with_a_caption_file_keeps_the_caption_out_of_its_image():
    """An article sets its captions in text: a figure's SVG holds its axes, ticks, legend and panel titles only."""
    import html

    from ingestlab import _paths, captions

    said = sorted((_paths.REPO / "figures").glob(f"*/*{captions.CAPTION_SUFFIX}"))
    if not said:
        pytest.skip("no figure promoted with its caption file yet")
    for text_file in said:
        svg = html.unescape(text_file.with_name(text_file.name.removesuffix(captions.CAPTION_SUFFIX) + ".svg").read_text())
        title = text_file.read_text().split("**")[1].rstrip(".")
        provenance = text_file.read_text().strip().splitlines()[-1].strip("*")
        assert title[:40] not in svg and provenance[:40] not in svg, text_file


def test_every_promoted_article_figure_prints_at_a_column_or_a_page_and_no_text_under_7_pt():
    """W: the PDF 3.3 or 7 in wide (±0.05), at most 3 or 5.5 in tall; the SVG, at that very size (user units are
    points), sets no text under 7 pt. Figures promoted since captions left the images (they have a caption file)."""
    import re

    from ingestlab import _paths, captions

    said = sorted((_paths.REPO / "figures").glob(f"*/*{captions.CAPTION_SUFFIX}"))
    if not said:
        pytest.skip("no figure promoted with its caption file yet")
    for text_file in said:
        stem = text_file.with_name(text_file.name.removesuffix(captions.CAPTION_SUFFIX))
        box = re.search(rb"/MediaBox \[ *0 0 ([\d.]+) ([\d.]+) *\]", stem.with_suffix(".pdf").read_bytes())
        width, height = (float(v) / 72 for v in box.groups())
        printed = min(figures.TALLEST, key=lambda size: abs(size - width))
        assert abs(width - printed) <= 0.05 and height <= figures.TALLEST[printed] + 0.05, (stem, width, height)
        svg = stem.with_suffix(".svg").read_text()
        size = re.search(r'<svg [^>]*width="([\d.]+)pt" height="[\d.]+pt" viewBox="0 0 ([\d.]+) ', svg)
        assert abs(float(size[1]) - float(size[2])) < 0.01 and abs(float(size[1]) / 72 - printed) <= 0.05, stem
        assert "scale(" not in svg, stem  # no text drawn at another size than its font's
        fonts = [float(v) for v in re.findall(r"font-size: ?([\d.]+)px", svg)]
        assert fonts and min(fonts) >= figures.SMALLEST_PT - 0.01, (stem, min(fonts))


def test_save_rejects_path_like_names(tmp_path):
    fig = plt.figure()
    with pytest.raises(ValueError, match="name"):
        figures.save(fig, "../escape", notebook="nb", directory=tmp_path)
    figures.close(fig)


def _cie_lab(colour: str) -> np.ndarray:
    # sRGB (D65) to CIE L*a*b*, the space whose distances (ΔE*ab) a reader's eye roughly follows
    rgb = np.asarray(matplotlib.colors.to_rgb(colour))
    linear = np.where(rgb > 0.04045, ((rgb + 0.055) / 1.055) ** 2.4, rgb / 12.92)
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) @ linear
    f = np.where(xyz / (w := np.array([0.95047, 1.0, 1.08883])) > 0.008856, np.cbrt(xyz / w), 7.787 * xyz / w + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def test_no_colour_stands_for_two_engines_and_any_two_engines_colours_are_far_enough_apart_to_tell():
    from ingestlab.engines import registry

    classes = registry.classes()
    identity = {name: cls.STYLE.configuration_of or name for name, cls in classes.items()}
    identity |= {name: name.split("_")[0] for name in figures.READER_STYLE}  # a library's readers: one library
    identity["chdb"] = "clickhouse"  # ClickHouse's reader is ClickHouse
    owners: dict[str, set[str]] = {}
    for name, (colour, _) in figures.ENGINE_STYLE.items():
        if name != "read_floor":
            owners.setdefault(colour.upper(), set()).add(identity[name])
    assert {c: o for c, o in owners.items() if len(o) > 1} == {}
    for name, cls in classes.items():  # a configuration keeps its engine's colour and takes another marker
        if cls.STYLE.configuration_of:
            parent = classes[cls.STYLE.configuration_of].STYLE
            assert cls.STYLE.colour == parent.colour and cls.STYLE.marker != parent.marker, name
    colours = sorted(owners)
    closest = min((float(np.linalg.norm(_cie_lab(a) - _cie_lab(b))), a, b)
                  for i, a in enumerate(colours) for b in colours[i + 1:])
    assert closest[0] >= 18, closest
    # nor is one a shade of another: a shade is that engine's condition (figure_checks counts hues by it)
    assert not [(a, b) for a in colours for b in colours if a != b and figure_checks.is_shade_of(a, b)]
    greys = set(figures.CONDITION_GREYS) | {"#999999"}
    assert not greys & set(owners) and all(len(set(matplotlib.colors.to_rgb(g))) == 1 for g in greys)


def test_every_engine_has_one_colour_and_marker_and_its_conditions_take_shades_of_that_colour_and_shapes():
    styles = list(figures.ENGINE_STYLE.values())
    assert len(set(styles)) == len(styles)  # no two engines look alike
    assert all(c not in figures.CONDITION_GREYS for c, _ in styles)
    levels = ["PostgreSQL, sync on", "PostgreSQL, sync off", "MariaDB", "PostgreSQL 15"]
    colours, shapes = figures.palette(levels), figures.markers(levels)
    assert colours["PostgreSQL, sync on"] == "#0072B2" and colours["MariaDB"] == "#009E73"
    assert figure_checks.is_shade_of(colours["PostgreSQL, sync off"], "#0072B2")
    assert colours["PostgreSQL, sync off"] != colours["PostgreSQL, sync on"]
    assert shapes["PostgreSQL, sync on"] == "o" and shapes["PostgreSQL 15"] == "s"
    assert shapes["PostgreSQL, sync off"] == "^"  # a shade and a shape no other level has tell conditions apart
    # the two versions a figure sets side by side differ in colour, at any minor version
    assert colours["PostgreSQL 15"] != colours["PostgreSQL, sync on"]
    assert figures.palette(["PostgreSQL 15.18, defaults"])["PostgreSQL 15.18, defaults"] == "#56B4E9"
    five = [f"PostgreSQL, variant {i}" for i in range(5)] + [f"MariaDB, variant {i}" for i in range(4)]
    colours, shapes = figures.palette(five), figures.markers(five)  # notebook 04: five a panel
    assert len(set(colours.values())) == 9 and all(figure_checks.is_shade_of(colours[v], "#0072B2") for v in five[:5])
    assert len({shapes[v] for v in five[:5]}) == 5 and shapes[five[0]] == shapes[five[5]] == "o"
    assert plots.FAILED_MARKER not in shapes.values()  # a filled ✕ would read as a run that did not finish
    versions = ["PostgreSQL 18.6, defaults", "PostgreSQL 18.6, async", "PostgreSQL 15.18, defaults", "PostgreSQL 15.18, async"]
    shapes = figures.markers(versions)  # 05: PG 18's light blue beside PG 15's sky blue differ in shape too
    assert len(set(shapes.values())) == 4 and shapes[versions[2]] == "s"


def test_a_level_or_legend_entry_names_its_engine_by_id_by_name_or_by_name_and_version():
    assert figures.engine_of("postgres15") == "postgres15"
    assert figures.engine_of("PostgreSQL: 0.3 ms per statement") == "postgres"
    # the longest name first: "PostgreSQL 15" is not PostgreSQL 18 with a version
    assert (figures.engine_of("PostgreSQL 15.18, defaults"), figures.engine_of("PostgreSQL 18.6, defaults")) == (
        "postgres15", "postgres")
    for engine in figures.ENGINE_STYLE:
        assert figures.engine_of(engine) == engine
        assert figures.engine_of(f"{labels.label(engine)}, defaults") == engine, engine


def test_within_conditions_of_an_engine_levels_naming_none_take_its_colour_and_a_bad_name_is_refused():
    levels = ["shared-data 4.0.5", "shared-nothing 4.0.4", "shared-nothing 4.0.5"]
    assert set(figures.palette(levels).values()) <= set(figures.CONDITION_GREYS)  # outside: conditions' greys
    colour, marker = figures.ENGINE_STYLE["starrocks"]
    for name in ("starrocks", "StarRocks"):  # its id, or its name as the published tables write it
        with figures.conditions_of(name):
            colours, shapes = figures.palette(levels), figures.markers(levels)
            assert figures.palette(["MariaDB"])["MariaDB"] == "#009E73"  # a level naming an engine keeps its own
        assert colours[levels[0]] == colour and shapes[levels[0]] == marker
        assert len(set(colours.values())) == 3 and all(figure_checks.is_shade_of(c, colour) for c in colours.values())
        assert len(set(shapes.values())) == 3
    assert figures.palette(levels) != colours  # the block ended
    for engine, (colour, _) in figures.ENGINE_STYLE.items():  # every engine's conditions start from its own colour
        with figures.conditions_of(engine):
            assert figures.palette(["on", "off"])["on"].lower() == colour.lower(), engine
    with pytest.raises(ValueError, match="not an engine of the lab"):
        with figures.conditions_of("sqlite"):
            pass


def test_the_same_figure_saves_to_the_same_svg_bytes(tmp_path):
    figures.use_article_theme()
    digests = []
    for run in range(2):
        fig, ax = plt.subplots()
        ax.plot([1, 2, 3], [3, 1, 2])
        ax.set_xlim(0, 3.5)  # a clip path (every axes clips its lines): its id was random before the theme fixed the salt
        figures.save(fig, "same", notebook="t", directory=tmp_path / str(run))
        digests.append(hashlib.sha256((tmp_path / str(run) / "same.svg").read_bytes()).hexdigest())
    assert digests[0] == digests[1]


def test_save_writes_into_the_open_runs_folder_and_never_into_the_repository(tmp_path, monkeypatch):
    from ingestlab import _paths
    from ingestlab.results import Run

    monkeypatch.delenv(_paths.FIGURES_ENV, raising=False)
    monkeypatch.setenv("INGESTLAB_RESULTS_DIR", str(tmp_path / "results"))
    assert figures.destination("98_no_run") == tmp_path / "results" / "98_no_run" / "figures"
    run = Run("99_test", {}, tmp_path / "run")
    figures.save(plt.figure(), "empty", notebook="99_test")
    assert sorted(p.name for p in run.figures_dir.iterdir()) == ["empty.pdf", "empty.png", "empty.svg"]
    assert not (_paths.REPO / "figures" / "99_test").exists()


def test_a_notebook_s_tables_show_whole_names():
    from ingestlab import report

    long = {f"doris_sync_1row_interval_slope[30 clients, nereids planner {on}]": 1.0 for on in ("on", "off")}
    figures.use_article_theme()
    html = report.headline_table(long)._repr_html_()
    assert all(name in html for name in long) and "…" not in html


def test_each_pytest_process_saves_figures_into_its_own_scratch_folder():
    # xdist's workers inherited the controller's folder: two wrote one notebook's figure at once (CI, 2026-11-29)
    if "ingestlab-test-" not in os.environ["INGESTLAB_FIGURES_DIR"]:
        pytest.skip("INGESTLAB_FIGURES_DIR was set by the user, and conftest.py keeps it")
    scratch = os.environ["_INGESTLAB_TEST_SCRATCH"]  # set by the repository's conftest.py to this process's own folder
    assert os.environ["INGESTLAB_FIGURES_DIR"] == os.path.join(scratch, "figures")
    assert os.environ["INGESTLAB_RESULTS_DIR"] == os.path.join(scratch, "results")


def test_the_grammar_is_checked_on_the_drawing_at_its_print_size_not_where_a_save_at_300_dpi_left_the_labels(
        tmp_path, monkeypatch):
    """Notebook 08's round trips, two panels side by side: saved at 300 dpi, each y label stayed placed in that save's
    pixels, and the check (reading them after the save) found the left title printed over the right y label."""
    monkeypatch.setenv(figures.CHECK_ENV, "strict")
    figures.use_article_theme()
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.4), layout="constrained")
    for ax, title in zip(axes, ("MariaDB semi-sync", "PostgreSQL + 1 sync standby")):
        for slope in (0.0, 1.0):
            ax.plot([0, 2, 4, 6, 10], [0.3 + slope * x for x in (0, 2, 4, 6, 10)], marker="o", label=f"commit {slope:g} round trips")
        ax.set(title=title, xlabel="round trip added, measured (ms)", ylabel="time per statement (ms)")
    fig.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=1)
    figures.save(fig, "side_by_side", notebook="99_test", directory=tmp_path)  # strict: a grammar problem raises
