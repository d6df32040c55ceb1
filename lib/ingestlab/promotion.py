"""Promotion of a run's figures into the article's ``figures/``, with a SOURCE file naming the run."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

from ingestlab import _paths, report, results, safe_paths, summary, workloads
from ingestlab.errors import ConfigError

#: The file beside a notebook's promoted figures that says which run made them.
SOURCE = "SOURCE"
#: The file beside them that states what that run found (its fits and headline numbers).
FINDINGS = "FINDINGS.md"
#: A notebook's figures folder that holds no promoted run yet says why in this file (removed by promotion).
PENDING = "PENDING.md"
#: The gallery of every promoted figure with its caption, in the figures folder, written again by every promotion.
GALLERY = "README.md"


#: What every ``run.json`` of :class:`ingestlab.results.Run` holds; SOURCE and FINDINGS.md are written from them.
RUN_KEYS = ("notebook", "completed", "started_at", "parameters", "engines", "host", "git")


def promotable(run_dir: str | os.PathLike, notebooks: Iterable[str] | None = None, *, allow_loaded: bool = False
               ) -> tuple[list[tuple[Path, dict]], list[tuple[str, str]]]:
    """The notebook folders of ``run_dir`` whose figures may be promoted, and those that may not.

    A notebook's figures may be promoted when its run completed (not failed, interrupted or
    still running: its figures could be partial or stale), at paper scale, measured from a
    committed tree (no uncommitted changes, in the run or in the run a resumed one kept: the
    revision must say what measured), on a quiet machine (1-minute load average at the start at
    most :data:`ingestlab.report.QUIET_LOAD`, unless ``allow_loaded``), and saved figures, each
    in every format of :data:`ingestlab.results.FIGURE_FORMATS`, none of which broke the figure
    grammar when it was saved (:func:`ingestlab.figure_checks.recorded_problems`).

    Parameters
    ----------
    run_dir : path
        An ``ingestlab run --out`` folder.
    notebooks : iterable of str, optional
        Notebook ids or names to take; each must qualify. Default: every notebook folder of
        ``run_dir``, those that do not qualify returned apart with the reason.
    allow_loaded : bool
        Promote a run whose machine was loaded too (its SOURCE and its captions say so).

    Returns
    -------
    (list of (Path, dict), list of (str, str))
        Each promotable notebook's folder in ``run_dir`` with its ``run.json``; each
        notebook left out with why.

    Raises
    ------
    ConfigError
        For a folder that is not a run, or a named notebook that does not qualify; all checked
        before anything is copied.
    """
    from ingestlab import runner

    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise ConfigError("RUN_DIR", str(run_dir), "a run folder (the --out of an earlier `ingestlab run`)")
    named = [runner.find_notebook(n).stem for n in notebooks or []]
    stems = named or sorted(p.parent.name for p in run_dir.glob("*/run.json"))
    found, left_out = [], []
    for stem in stems:
        folder = run_dir / stem
        try:
            meta = json.loads((folder / "run.json").read_text())
        except (OSError, ValueError):
            meta, why = {}, f"it has no readable {folder}/run.json"
        else:
            missing = [k for k in RUN_KEYS if k not in meta] if isinstance(meta, dict) else list(RUN_KEYS)
            if missing or meta.get("notebook") != stem:
                why = (f"its run.json is not one `ingestlab run` wrote for {stem} ("
                       + (f"no {', '.join(missing)}" if missing else f"it names {meta.get('notebook')!r}") + ")")
                meta = meta if isinstance(meta, dict) else {}
            elif not meta.get("completed"):
                why = "its run did not complete (run.json), so its figures may be partial"
            else:
                why = None
            if why is None and summary.scale_of(meta) == "smoke":  # the article's figures never come from a CI-sized run
                why = "it is a smoke run (CI-sized, not comparable with the studies); promote a run made with -p SCALE paper"
            if why is None:
                why = _unfit_machine(meta, allow_loaded)
            if why is None:
                book = workloads.discover().get(stem)
                why = _unfit_compared(meta, allow_loaded, compares=book is not None and book.compares is not None)
        files = [p for p in article_files(folder) if p.suffix.lstrip(".") in results.FIGURE_FORMATS]
        if why is None and not files:
            why = f"it saved none of its article's figures in {folder / results.FIGURES_SUBDIR}"
        if why is None:
            why = _missing_formats(files)
        if why is None:
            why = _grammar_broken(folder, {p.stem for p in files})
        if why and named:
            raise ConfigError("NOTEBOOK", stem, f"a notebook of {run_dir} whose figures can be promoted ({why})")
        if why:
            left_out.append((stem, why))
        else:
            found.append((folder, meta))
    if not found and not named:
        raise ConfigError("RUN_DIR", str(run_dir), "a run folder with at least one completed notebook that saved "
                          "figures (" + ("; ".join(f"{s}: {w}" for s, w in left_out) or "none ran there") + ")")
    return found, left_out


def _missing_formats(files: list[Path]) -> str | None:
    """Why a run's figures cannot go into the article for want of a format (None: each is there in every format).

    Examples
    --------
    >>> _missing_formats([Path("a.png"), Path("a.svg"), Path("a.pdf")]) is None
    True
    >>> _missing_formats([Path("a.png"), Path("b.png"), Path("b.pdf")])
    'its figures a, b lack a format (pdf, svg: $INGESTLAB_FIGURE_FORMATS was set); the article takes png, svg and pdf'
    """
    saved: dict[str, set[str]] = {}
    for path in files:
        saved.setdefault(path.stem, set()).add(path.suffix.lstrip("."))
    short = sorted(stem for stem, formats in saved.items() if formats != set(results.FIGURE_FORMATS))
    if not short:
        return None
    missing = sorted(set(results.FIGURE_FORMATS) - set.intersection(*(saved[stem] for stem in short)))
    return (f"its figures {', '.join(short)} lack a format ({', '.join(missing)}: $INGESTLAB_FIGURE_FORMATS was set); "
            "the article takes png, svg and pdf")


def article_files(folder: Path) -> list[Path]:
    """The files of a run's figures that go into the article: its notebook's :attr:`~ingestlab.workloads.Notebook.article`
    figures in every format saved, with their captions, in the order it declares them (every figure, by name, for a
    folder no notebook declares)."""
    from ingestlab.captions import CAPTION_SUFFIX

    made = folder / results.FIGURES_SUBDIR
    return _in_article_order(folder.name, results.figure_files(made) + sorted(made.glob(f"*{CAPTION_SUFFIX}")))


def _in_article_order(stem: str, files: list[Path]) -> list[Path]:
    """``files`` of notebook ``stem``'s article figures, in its declared order; all of them by name for an undeclared one."""
    from ingestlab.captions import CAPTION_SUFFIX

    book = workloads.discover().get(stem)
    if book is None:
        return sorted(files)
    order = {name: i for i, name in enumerate(book.article)}
    names = {p: p.name.removesuffix(CAPTION_SUFFIX).removesuffix(p.suffix) for p in files}
    return sorted((p for p in files if names[p] in order), key=lambda p: (order[names[p]], p.name))


def _grammar_broken(folder: Path, names: set[str]) -> str | None:
    """Why a run's figures ``names`` cannot go into the article for breaking the figure grammar (None: none does).

    :func:`ingestlab.figures.save` records what it finds beside the figures; a figure that
    breaks the grammar is drawn again (``ingestlab run … --resume`` redraws without measuring)
    once its drawing is fixed, not promoted. A diagnostic figure (not in the article) is not held to it.
    """
    from ingestlab import figure_checks

    found = {name: problems for name, problems in figure_checks.recorded_problems(folder / results.FIGURES_SUBDIR).items()
             if name in names}
    if not found:
        return None
    name, problems = next(iter(found.items()))
    more = f" (and {len(found) - 1} more figures)" if len(found) > 1 else ""
    return (f"its figure {name} breaks the lab's figure grammar: {'; '.join(problems)}{more}; fix its drawing and "
            "draw it again (ingestlab run … --resume measures nothing it kept)")


def _unfit_machine(meta: dict, allow_loaded: bool) -> str | None:
    """Why a completed paper run's numbers cannot stand for the revision or the machine (None: they can)."""
    gits = [meta.get("git") or {}, (meta.get("resumed") or {}).get("git_before") or {}]
    dirty = [g for g in gits if g.get("dirty")]
    if dirty:
        return (f"it was measured from a tree with uncommitted changes (revision {(dirty[0].get('revision') or '?')[:7]}"
                " plus them), so no revision says what measured it; commit, then run it again")
    load, others = report.start_load(meta), report.others_cpu_share(meta)
    if load is not None and load > report.QUIET_LOAD and not allow_loaded:
        return (f"its machine was loaded (1-minute load average {load:g} at the start, above {report.QUIET_LOAD:g}); "
                "run it again on a quiet machine, or pass --allow-loaded (SOURCE then says so)")
    if others is not None and others > report.QUIET_OTHERS and not allow_loaded:
        return (f"its machine was loaded (other processes used {others:.0%} of its CPU while it ran, above "
                f"{report.QUIET_OTHERS:.0%}); run it again on a quiet machine, or pass --allow-loaded (SOURCE then "
                "says so)")
    return None


def _unfit_compared(meta: dict, allow_loaded: bool, *, compares: bool = False) -> str | None:
    """Why the runs a run draws without measuring (its ``compared``) cannot stand behind its figures (None: they can).

    Each is held to what a measuring run is held to: completed, paper scale, a committed
    tree, a quiet machine (unless ``allow_loaded``). A run of a notebook that ``compares``
    (its declaration's :attr:`~ingestlab.workloads.Notebook.compares`) must name them.

    Examples
    --------
    >>> quiet = {"role": "A", "folder": "runs/a", "completed": True, "parameters": {"scale": "paper"},
    ...          "git": {"revision": "0f5461f", "dirty": False}, "load_average": {"start": [0.9, 1, 1]},
    ...          "machine_cpu": {"others_cpu_share": 0.01}}
    >>> _unfit_compared({"compared": [quiet, dict(quiet, role="B")]}, False) is None
    True
    >>> _unfit_compared({"compared": [quiet, dict(quiet, role="B", parameters={"scale": "smoke"})]}, False)
    'it compares run B (runs/a), a smoke run (CI-sized); compare runs made with -p SCALE paper'
    >>> _unfit_compared({}, False, compares=True)
    "it names no run it compares (run.json's compared), so nothing says what measured the data it draws"
    """
    if compares and not meta.get("compared"):
        return "it names no run it compares (run.json's compared), so nothing says what measured the data it draws"
    for run in meta.get("compared") or []:
        name = f"run {run.get('role')} ({run.get('folder')})"
        if not run.get("completed"):
            return f"it compares {name}, which did not complete"
        if summary.scale_of(run) == "smoke":
            return f"it compares {name}, a smoke run (CI-sized); compare runs made with -p SCALE paper"
        why = _unfit_machine(run, allow_loaded)
        if why:
            return f"it compares {name}, and " + why.removeprefix("it ")
    return None


def _compared_lines(meta: dict) -> list[str]:
    # SOURCE's lines on the runs a run compares (a notebook that declares ``compares``): what measured its data
    lines = []
    for run in meta.get("compared") or []:
        engines = report.engines_of(run)
        lines.append(f"Compared run {run.get('role')}: {run.get('folder')}: {run.get('notebook')}, "
                     f"{summary.scale_of(run)} scale, run of {run.get('started_at')}" + report.revisions_of(run)
                     + "; engines: " + (", ".join(engines) if engines else "none recorded")
                     + f"; machine {_machine_words(run)}")
    return lines


def source_text(folder: Path, meta: dict, files: list[Path], *, promoted_by: str) -> str:
    """The text of ``SOURCE``: the command, scale, parameters, revision, times, host and load of the run.

    Parameters
    ----------
    folder : Path
        The notebook's folder in the run (``<out>/<notebook>``).
    meta : dict
        Its ``run.json``.
    files : list of Path
        The figure files promoted (their SHA-256 digests are listed).
    promoted_by : str
        The command that promoted them.
    """
    from ingestlab import runner

    params = meta.get("parameters", {})
    declared = runner.declared_parameters(runner.find_notebook(folder.name))
    given = " ".join(f"-p {k.upper()} {','.join(map(str, v)) if isinstance(v, list) else v}"
                     for k, v in params.items() if v is not None and k.upper() in declared)  # not derived values
    git = meta.get("git", {})
    revision = (git.get("revision") or "unknown")[:7] + (" with uncommitted changes" if git.get("dirty") else "")
    if (meta.get("resumed") or {}).get("git_before"):  # the revision that measured first, the one that drew too
        revision = report.revisions_of(meta).removeprefix(", git ") or revision
    host = meta.get("host", {})
    load = meta.get("load_average", {})
    servers = {f"{e.get('engine')} {e.get('server_version', '')} {e.get('variant', '')}".strip()
               for e in meta.get("engines", [])}
    engines = sorted(servers) + report.libraries_of(meta)
    scale = summary.scale_of(meta)
    compared = meta.get("compared") or []
    if compared and scale == "-":  # a run that only compares has no scale of its own: the runs it compares have
        scale = ", ".join(dict.fromkeys(summary.scale_of(run) for run in compared))
    lines = [
        f"Made by: ingestlab run {folder.name} {given} --out {folder.parent}".replace("  ", " "),
        f"Scale: {scale}" + (f" ({summary.SCALE_NOTE[scale]})" if scale in summary.SCALE_NOTE else
                             " (none: the figures draw the seeds' published tables, at the seeds' own sizes)"
                             if scale == "-" and not engines else ""),
        f"Parameters (resolved): {json.dumps(params, default=str)}",
        f"Revision: {revision}",
        f"Ran: {meta.get('started_at')} to {meta.get('ended_at')} (UTC) on {host.get('cpu_model')}, "
        f"{host.get('cpu_cores')} cores, {round((host.get('ram_bytes') or 0) / 2**30)} GiB",
        "Load average (1/5/15 min): " + (f"{load.get('start')} at the start, {load.get('end')} at the end"
                                         if load else "not recorded by this run")
        + ("" if report.measured_here(meta) else " (of the resume, which measured nothing: the measuring run's "
                                                 "is under Resumed)"),
        "Machine: " + _machine_words(meta),
        "Engines: " + (", ".join(engines) if engines else
                       "none measured by this run: it compares the runs named under Compared" if compared else
                       "none: the figures draw the seeds' published tables"),
        *_compared_lines(meta),
    ]
    resumed = meta.get("resumed")
    if resumed:
        before = resumed.get("git_before") or {}
        lines.append(f"Resumed: at {resumed.get('at')}, {resumed.get('kept')} configurations kept from the earlier "
                     f"run's checkpoints (revision {(before.get('revision') or 'unknown')[:7]}"
                     + (" with uncommitted changes" if before.get("dirty") else "")
                     + f", load average {(resumed.get('load_average_before') or {}).get('start', 'not recorded')} "
                     f"at its start, {_others_words(resumed.get('machine_cpu_before'))}), "
                     f"{resumed.get('measured')} measured in the resumed run")
    lines += [f"Note: {n}" for n in meta.get("notes", [])]
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines.append(f"Promoted by: {promoted_by}, {stamp}")
    lines.append("Files (SHA-256):")
    lines += [f"  {hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}" for p in files]
    return "\n".join(lines) + "\n"


def _others_words(cpu: dict | None) -> str:
    # the earlier run's others_cpu_share, in words
    share = (cpu or {}).get("others_cpu_share")
    return (f"other processes {share:.1%} of its CPU" if isinstance(share, (int, float))
            else "the CPU other processes used then not recorded")


def _machine_words(meta: dict) -> str:
    load, others = report.start_load(meta), report.others_cpu_share(meta)
    measuring = "" if report.measured_here(meta) else " of the run that measured"
    said = [f"1-minute load average {load:g} at the start{measuring}" if load is not None else
            "its load average at the start is not recorded",
            f"other processes used {others:.1%} of its CPU while it {'measured' if measuring else 'ran'} "
            "(others_cpu_share)" if others is not None else
            "the CPU other processes used while it ran is not recorded by this run"]
    steal = (meta.get("machine_cpu") or {}).get("steal_share")
    if isinstance(steal, (int, float)) and steal >= 0.01:
        said.append(f"its virtual machine's host kept {steal:.1%} of its CPU from it (steal)")
    loaded = (load is not None and load > report.QUIET_LOAD) or (others is not None and others > report.QUIET_OTHERS)
    if loaded:
        return (f"LOADED ({'; '.join(said)}; above {report.QUIET_LOAD:g} or {report.QUIET_OTHERS:.0%}: promoted with "
                "--allow-loaded, its numbers may carry other jobs' noise)")
    return f"quiet ({'; '.join(said)})"


def _cell(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return report.short_number(float(value)) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else str(value).replace("|", "\\|")


def _at_precision(estimate, low, high) -> tuple[str, str, str]:
    """A fit term's cells: at its interval's precision (:func:`ingestlab.report.at_precision`) where it has one."""
    values = [_float(v) for v in (estimate, low, high)]
    if all(v is not None and math.isfinite(v) for v in values):
        return report.at_precision(*values)
    return _cell(estimate), _cell(low), _cell(high)


def _float(value) -> float | None:
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def findings_text(folder: Path, meta: dict) -> str:
    """The text of ``FINDINGS.md``: what the run in ``folder`` found, from its own ``fits.csv`` and ``run.json``.

    The notebook's question (its workload's declaration), the command, revision, times and
    load of the run, its headline numbers, and every fit term of ``fits.csv`` with its 95 %
    interval and whether the model held, then every figure with its caption under it — written
    from the run it promotes, so the findings and the figures can never disagree. A number with an interval is written at the interval's
    precision (:func:`ingestlab.report.at_precision`), others with 4 significant digits
    (:func:`ingestlab.report.short_number`).
    """
    import pandas as pd

    from ingestlab import runner
    from ingestlab.models import model_holds

    book = runner.declaration(runner.find_notebook(folder.name))
    source = source_text(folder, meta, [], promoted_by="").splitlines()
    made_by = next(line for line in source if line.startswith("Made by: ")).removeprefix("Made by: ")
    lines = [f"# {folder.name}: what the promoted run found", "",
             f"**{book.question}** Reproduces: {book.study}. Measures: {book.measures}.", "",
             f"- Command: `{made_by}`"]
    lines += [f"- {line}" for line in source[1:] if line.split(":")[0] in ("Scale", "Revision", "Ran", "Engines")
              or line.startswith(("Load average", "Compared run"))]
    fits_path = folder / "fits.csv"
    fits = pd.read_csv(fits_path) if fits_path.exists() else None
    headline = meta.get("headline") or {}
    if headline:
        lines += ["", "## Headline numbers", "", "| quantity | value (95 % CI where given) |", "|---|---|"]
        lines += [f"| `{r.quantity}` | {r.value} |" for r in report.headline_table(headline, fits=fits).itertuples()]
    if fits is not None:
        lines += ["", "## Fits (`fits.csv`)", "",
                  "| engine | variant | model | method | term | estimate | 95 % CI | unit | points | model holds |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in fits.to_dict("records"):
            holds = {True: "yes", False: "**no**", None: "–"}[model_holds(r.get("model_holds"))]
            estimate, low, high = _at_precision(r["estimate"], r["ci_low"], r["ci_high"])
            lines.append(f"| {_cell(r['engine'])} | {_cell(r['variant'])} | {_cell(r['model'])} | {r['method']} | "
                         f"{r['term']} | {estimate} | {low} to {high} | "
                         f"{_cell(r['unit'])} | {_cell(r['n_points'])} | {holds} |")
    pngs = [p for p in article_files(folder) if p.suffix == ".png"]
    if pngs:
        lines += ["", "## Figures", ""]
        for png in pngs:
            lines += _figure_entry(png, png.name)
    lines += ["", f"Written by `ingestlab figures` from {folder} on "
              f"{dt.datetime.now(dt.timezone.utc).strftime('%Y-%m-%d %H:%M UTC')}; the figures beside this file "
              "come from the same run (see `SOURCE`)."]
    return "\n".join(lines) + "\n"


def _figure_entry(png: Path, src: str) -> list[str]:
    """A figure at its print width (100 px an inch, as drawn) and its caption under it, as Markdown lines."""
    from ingestlab.captions import CAPTION_SUFFIX
    from ingestlab.figure_checks import png_size
    from ingestlab.figures import PNG_DPI

    text = png.with_name(png.stem + CAPTION_SUFFIX)
    said = (text.read_text().strip() if text.is_file() else
            "*No caption file: this figure was promoted before captions left the images; its caption is in it.*")
    return [f'<img src="{src}" width="{round(png_size(png)[0] / PNG_DPI * 100)}" alt="{png.stem}">', "", said, ""]


def gallery_text(root: Path) -> str:
    """The text of the gallery ``figures/README.md``: every promoted figure with its caption, in notebook order."""
    lines = ["# The article's figures", "",
             "Generated by `ingestlab figures` at every promotion (do not edit): each promoted figure at its print "
             "width (100 px an inch), its caption under it, notebook by notebook. Each notebook's folder holds its "
             "figures as PNG, SVG and PDF, the run that made them (`SOURCE`) and what that run found "
             "(`FINDINGS.md`).", ""]
    for notebook in sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()):
        pngs = _in_article_order(notebook.name, list(notebook.glob("*.png")))
        if pngs:
            lines += [f"## {notebook.name}", "", f"Made by the run in [`SOURCE`]({notebook.name}/{SOURCE}); its "
                      f"numbers: [`FINDINGS.md`]({notebook.name}/{FINDINGS}).", ""]
            for png in pngs:
                lines += _figure_entry(png, f"{notebook.name}/{png.name}")
    return "\n".join(lines).rstrip("\n") + "\n"


def _check_writable(root: Path) -> None:
    """Refuse, in one line, a destination that is a file or where no file can be made.

    Raises
    ------
    ConfigError
        ``--to`` names a file (or a path under one), or a folder that cannot be written
        (read-only mount, no permission).
    """
    existing = next((p for p in (root, *root.parents) if os.path.lexists(p)), None)
    if existing is not None and not existing.is_dir():
        raise ConfigError("--to", str(root), f"a folder ({existing} is a file)")
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".ingestlab-probe-", dir=root)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ConfigError("--to", str(root), f"a folder the lab can write in ({exc.strerror or exc})") from None


def promote(run_dir: str | os.PathLike, notebooks: Iterable[str] | None = None, *,
            to: str | os.PathLike | None = None, allow_loaded: bool = False) -> list[tuple[str, Path, str]]:
    """Copy the article's figures of completed notebooks of ``run_dir`` into ``<to>/<notebook>/`` with a SOURCE file.

    The article's figures are those each notebook declares (:attr:`ingestlab.workloads.Notebook.article`,
    at most three; :func:`article_files`); its other figures stay in the run as diagnostics.
    Each figure's caption file (``<name>.caption.md``) goes with it, and into ``FINDINGS.md`` under
    it; the gallery ``<to>/README.md`` (:func:`gallery_text`) is written again from every notebook's
    folder. Each notebook's earlier figures there (PNG, SVG, PDF, captions and SOURCE) are removed
    first, so no figure of another run stays beside them. Every notebook is checked
    (:func:`promotable`) before anything is copied.

    Parameters
    ----------
    run_dir : path
        An ``ingestlab run --out`` folder.
    notebooks : iterable of str, optional
        Notebook ids or names (default: every notebook folder with figures).
    to : path, optional
        Default: the repository's ``figures/`` (``$INGESTLAB_FIGURES_DIR`` when set).
    allow_loaded : bool
        Also promote runs made on a loaded machine (see :func:`promotable`).

    Returns
    -------
    (list of (str, Path, str), list of (str, str))
        Each notebook promoted, the folder written and the run's scale; each left out, with why.
    """
    safe_paths.check_folder(run_dir, "RUN_DIR")  # its files are copied where others read them
    root = Path(to) if to else _paths.figures_dir()
    safe_paths.check_folder(root, "--to")
    chosen, left_out = promotable(run_dir, notebooks, allow_loaded=allow_loaded)
    _check_writable(root)  # before any earlier figure is removed
    command = "ingestlab figures " + " ".join([str(run_dir), *(notebooks or []),
                                                *(["--allow-loaded"] if allow_loaded else [])])
    from ingestlab.captions import CAPTION_SUFFIX

    done = []
    for folder, meta in chosen:
        files = article_files(folder)
        dest = root / folder.name
        dest.mkdir(parents=True, exist_ok=True)
        for old in [*results.figure_files(dest), *dest.glob(f"*{CAPTION_SUFFIX}"), dest / SOURCE, dest / FINDINGS,
                    dest / PENDING]:
            old.unlink(missing_ok=True)
        for path in files:
            shutil.copyfile(path, dest / path.name)
        (dest / SOURCE).write_text(source_text(folder, meta, files, promoted_by=command))
        (dest / FINDINGS).write_text(findings_text(folder, meta))
        done.append((folder.name, dest, summary.scale_of(meta)))
    if done:
        (root / GALLERY).write_text(gallery_text(root))
    return done, left_out
