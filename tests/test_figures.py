import matplotlib.pyplot as plt
import pytest

from ingestlab import figures


def test_save_writes_png_svg_pdf_into_the_notebook_folder(tmp_path):
    figures.use_article_theme()
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    paths = figures.save(fig, "line", notebook="99_test", directory=tmp_path / "99_test")
    figures.close(fig)
    assert sorted(p.suffix for p in paths) == [".pdf", ".png", ".svg"]
    assert all(p.stat().st_size > 0 and p.parent.name == "99_test" for p in paths)


def test_save_uses_figures_dir_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("INGESTLAB_FIGURES_DIR", str(tmp_path))
    fig = plt.figure()
    figures.save(fig, "empty", notebook="nb")
    figures.close(fig)
    assert (tmp_path / "nb" / "empty.png").exists()


def test_save_rejects_path_like_names(tmp_path):
    fig = plt.figure()
    with pytest.raises(ValueError, match="name"):
        figures.save(fig, "../escape", notebook="nb", directory=tmp_path)
    figures.close(fig)
