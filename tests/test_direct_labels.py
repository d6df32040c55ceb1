"""Direct labels: a line's name where it ends, a value beside its point, clear of the data and of one another."""

import matplotlib.pyplot as plt
import matplotlib.text
import numpy as np
import pandas as pd

from ingestlab import direct_labels, figure_checks, figures, plots


def _end_label_boxes(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    (ends,) = [a for ax in fig.axes for a in ax.artists if isinstance(a, direct_labels.EndLabels)]
    return ends, [matplotlib.text.Text.get_window_extent(label, renderer) for label in ends.labels]


def test_direct_labels_sit_right_of_the_axes_in_the_order_the_lines_end_never_overlapping_even_after_a_resize():
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.set(xlim=(0, 10.5), ylim=(0, 3.2))
    ends_at = [1.00, 1.01, 1.02, 0.99, 3.0]  # four lines ending within 3 % of each other, one far above
    for i, y in enumerate(ends_at):
        plots.draw_model(ax, np.linspace(0, 10, 50), 0.5, (y - 0.5) / 10, np.nan, np.nan,
                           color=figures.LAB_COLOURS[i], label=f"series {i}")
    direct_labels.label_ends(ax, [(f"series {i}\nsecond line", figures.LAB_COLOURS[i],
                             *direct_labels.line_end(line)) for i, line in enumerate(ax.lines)], note="what lines mean")
    for height in (3.6, 2.4):  # drawn at its size, then shrunk as fit_to_print shrinks a figure
        fig.set_size_inches(6, height)
        ends, boxes = _end_label_boxes(fig)
        axes_box = ax.get_window_extent()
        assert all(b.x0 >= axes_box.x1 for b in boxes)
        assert all(axes_box.y0 - 1 <= b.y0 and b.y1 <= axes_box.y1 + 1 for b in boxes)
        by_end = sorted(range(5), key=lambda i: -ends_at[i])
        by_label = sorted(range(5), key=lambda i: -boxes[i].y0)
        assert by_label == by_end  # read top to bottom, the labels keep the order of the line ends
        assert not any(boxes[a].overlaps(boxes[b]) for a in range(5) for b in range(a + 1, 5))
        # the lone line's label stays level with its end
        far = ax.transData.transform((10, 3.0))[1]
        assert boxes[4].y0 <= far <= boxes[4].y1
    assert ends.note.get_text() == "what lines mean"
    assert figure_checks.grammar_problems(fig) == []
    figures.close(fig)


def test_a_value_label_sits_where_no_line_crosses_it_and_no_other_label_or_point_is():
    """00's upsert figure: "9,783" and "468" were struck through by the line rising to the next point."""
    data = pd.DataFrame({"statistic": ["a", "b", "c", "d"] * 2, "ms": [10.0, 100.0, 1000.0, 1010.0, 12.0, 90.0, 1100.0, 990.0],
                         "engine": ["one"] * 4 + ["two"] * 4})
    ax = plots.plot_sweep(data, x="statistic", y="ms", hue="engine", logy=True, annotate=True, fmt="{:,.0f}")
    fig = ax.figure
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    lines = direct_labels.drawn_lines(ax)
    boxes = [figure_checks._text_box(t, renderer) for t in ax.texts]
    assert len(boxes) == 8
    crossed = [t.get_text() for t, box in zip(ax.texts, boxes) if any(p.intersects_bbox(box, filled=False) for p in lines)]
    assert not crossed, crossed
    assert not figure_checks._overlapping_labels(fig)
    figures.close(fig)


def test_the_lines_a_label_keeps_clear_of_are_the_drawn_lines_of_two_points_or_more():
    fig, ax = plt.subplots()
    ax.plot([0, 1], [0, 1])
    ax.plot([0.5], [0.5], "o")  # a point: no line to strike a label
    ax.plot([0, 1], [1, 0], ls="none", marker="s")  # markers alone
    hidden, = ax.plot([0, 1], [0.5, 0.5])
    hidden.set_visible(False)
    (path,) = direct_labels.drawn_lines(ax)
    assert np.allclose(path.vertices, ax.transData.transform([(0, 0), (1, 1)]))
    figures.close(fig)
