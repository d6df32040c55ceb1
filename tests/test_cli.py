"""The ``ingestlab`` command as a user meets it: bad input, Ctrl-C, passwords."""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ingestlab.runner import HTML_ENV
from ingestlab.servers.base import is_running

BIN = Path(sys.executable).parent / "ingestlab"


def _cli(*args, env_extra=None, **kw):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=120, **kw)


@pytest.mark.parametrize("args, needle", [
    (["-p", "N", "0"], "N=0"),
    (["-p", "N", "-3"], "N=-3"),
    (["-p", "ENGINES", "oracle"], "ENGINES='oracle'"),
    (["-p", "ENGINES", "postgresql://u:pw@host:notaport/db"], "ENGINES="),
    (["-p", "SCENARIOS", "single_row,merge"], "SCENARIOS='merge'"),
    (["-p", "SCALE", "galactic"], "SCALE='galactic'"),
    (["-p", "NO_SUCH", "1"], "NO_SUCH"),
])
def test_bad_input_fails_before_any_server_starts(args, needle, tmp_path, cli_here):
    lab = tmp_path / "lab"
    res = cli_here("run", "01", "--out", tmp_path / "out", *args, env={"INGESTLAB_LAB_DIR": lab})
    assert res.returncode == 2, res.stderr
    assert needle in res.stderr and ("expected" in res.stderr or "parameter" in res.stderr)
    assert "Traceback" not in res.stderr
    assert "pw@" not in res.stderr
    assert not lab.exists(), "a server directory was created before validation"


def test_a_csv_scan_larger_than_the_free_disk_is_refused_before_any_file_is_written(tmp_path, cli_here):
    data, out = tmp_path / "data", tmp_path / "out"
    too_big = 4 * shutil.disk_usage(tmp_path).free / 1e6
    res = cli_here("run", "06", "--out", out, "-p", "DATA_DIR", data, "-p", "SIZES", f"1,{too_big:.0f}")
    assert res.returncode == 2, res.stderr
    assert "SIZES=" in res.stderr and "needs" in res.stderr and "GB available" in res.stderr
    assert "Traceback" not in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not data.exists() and not (out / "06_csv_scan").exists()


def test_unknown_notebook_lists_the_known_ones(tmp_path, cli_here):
    res = cli_here("run", "42", "--out", tmp_path)
    assert res.returncode == 2 and "01 (01_insert_anatomy)" in res.stderr


def test_ctrl_c_leaves_no_postgres_behind_and_keeps_partial_results(tmp_path):
    lab, out = tmp_path / "lab", tmp_path / "out"
    with open(tmp_path / "stderr", "w") as err:  # a file, not a pipe nobody reads while the run goes on
        proc = subprocess.Popen([str(BIN), "run", "01", "--out", str(out), "--no-progress", "-p", "REPEATS", "200",
                                 "-p", "VARIANTS", "sync_on", "-p", "ENGINES", "postgres"],
                                env={**os.environ, "INGESTLAB_LAB_DIR": str(lab)}, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=err, text=True)
    results = out / "01_insert_anatomy" / "results.parquet"
    # 6 s alone; once 90 s at the suite's busiest moment (its first minute, every worker starting kernels and servers)
    deadline = time.monotonic() + 240
    while not results.exists() and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    kernel_log = out / "01_insert_anatomy" / "kernel.log"
    assert results.exists(), ("the run never started measuring", (tmp_path / "stderr").read_text()[-2000:],
                              kernel_log.read_text()[-2000:] if kernel_log.exists() else "no kernel.log")
    pids = [int((d / "server.pid").read_text()) for d in lab.glob("postgres-*") if (d / "server.pid").exists()]
    assert pids
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
    proc.communicate(timeout=60)
    time.sleep(0.5)
    assert not any(is_running(pid) for pid in pids)
    assert not any(lab.glob("postgres-*/server.pid"))
    meta = json.loads((out / "01_insert_anatomy" / "run.json").read_text())
    assert meta["completed"] is False


def test_a_url_password_reaches_no_output(tmp_path, lab_tmp):
    from ingestlab.engines.postgres.server import PostgresServer

    with PostgresServer(lab_tmp / "pg") as server:
        secret = server.password
        url = f"postgresql://postgres:{secret}@/postgres?host={server.socket_dir}"
        res = _cli("run", "01", "--out", str(tmp_path / "out"), "--no-progress", "-p", "ENGINES", url,
                   "-p", "REPEATS", "1", "-p", "N", "200", "-p", "PROFILE_N", "2",
                   env_extra={"INGESTLAB_LAB_DIR": str(tmp_path / "lab"), HTML_ENV: "1"})
    assert res.returncode == 0, res.stderr[-3000:]
    assert secret not in res.stdout + res.stderr
    assert "--existing" not in res.stdout + res.stderr  # a kernel's standalone banner, printed when it has no parent pid
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert any(p.name == "fits.csv" for p in files)
    for p in files:
        assert secret.encode() not in p.read_bytes(), p
    nb = (tmp_path / "out" / "01_insert_anatomy" / "01_insert_anatomy.ipynb").read_text()
    assert "postgres:***@" in nb
    # the bounds of the run's waits on the target, stated before it started
    assert "a connection attempt times out after 5 s, a statement's wait for a lock after 60 s" in res.stderr
    # the executed notebook as HTML beside it, its figures embedded (and, above, no password in it)
    html = (tmp_path / "out" / "01_insert_anatomy" / "01_insert_anatomy.html").read_text()
    shown = sum("image/png" in out.get("data", {}) for cell in json.loads(nb)["cells"] for out in cell.get("outputs", []))
    assert shown >= 3 and html.count("data:image/png;base64,") >= shown and "postgres:***@" in html
    # what the machine's other processes used meanwhile (this URL target's server among them), and the run itself
    cpu = json.loads((tmp_path / "out" / "01_insert_anatomy" / "run.json").read_text())["machine_cpu"]
    assert 0 <= cpu["others_cpu_share"] <= 1 and 0.05 < cpu["run_cpu_share"] <= 1 and cpu["readings"] >= 2



@pytest.mark.parametrize("notebook, url", [
    ("01", "arangodb://root:hunter2@127.0.0.1:1/db"),  # an engine notebook 01 cannot measure
    ("04", "arangodb://root:hunter2@127.0.0.1:1/db"),  # nor 04
    ("02", "mysql://root@127.0.0.1:1/db?passwd=hunter2&label=a,mysql://root@127.0.0.1:1/db?passwd=hunter2&label=a"),
])
def test_a_refused_url_shows_no_password(tmp_path, cli_here, notebook, url):
    """Refused before any run starts (exit 2), the URL named masked, in the terminal and in what the run leaves."""
    res = cli_here("run", notebook, "--out", tmp_path / "out", "--no-progress", "-p", "ENGINES", url,
                   env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    assert res.returncode == 2, res.stderr[-2000:]
    assert "hunter2" not in res.stdout + res.stderr and "***" in res.stderr
    for path in [p for p in tmp_path.rglob("*") if p.is_file()]:
        assert b"hunter2" not in path.read_bytes(), path

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures" / "real-output"
FIXTURES = sorted(CORPUS.glob("*/*.txt")) if CORPUS.is_dir() else []


@pytest.mark.skipif(not FIXTURES, reason=f"real-output corpus not found at {CORPUS}")
@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_profile_command_reads_every_real_output_file(path, capsys):
    from ingestlab import profiles
    from ingestlab.cli import main

    body = path.read_text(encoding="utf-8").partition("# ---- verbatim sample below this line ----\n")[2]
    assert main(["profile", "--json", str(path)]) == 0
    anatomy = json.loads(capsys.readouterr().out)
    assert anatomy == json.loads(json.dumps(profiles.anatomy(profiles.parse(body))))  # this file's anatomy, whole
    assert anatomy["kind"] == profiles.detect(body)
    assert anatomy["kind"] == path.parent.name or anatomy["kind"].startswith(path.parent.name.split("_")[0])
    # the numbers the file states itself, where it states each once
    if path.parent.name == "postgres_explain":
        for key, name in (("planning_ms", "Planning Time"), ("execution_ms", "Execution Time")):
            (stated,) = re.findall(rf'(?i)"?{name}"?:\s*([\d.]+)', body)
            assert anatomy[key] == float(stated), key
    if path.parent.name == "stream_load_response":
        stated = re.findall(r"""["'][Ss]tatus["']\s*:\s*["'](\w+)""", body)[-1]
        assert anatomy["status"] == anatomy["load"]["status"] == stated
        times = re.findall(r'"LoadTimeMs"\s*:\s*(\d+)', body)
        assert anatomy["total_ms"] == (float(times[-1]) if times else None)
    assert main(["profile", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.splitlines()[0].startswith(anatomy["kind"])
    for key in ("total_ms", "planning_ms", "execution_ms"):  # each headline number, on its own line
        if anatomy[key] is not None:
            label = key.removesuffix("_ms")
            assert re.search(rf"^  {label} +{re.escape(f'{anatomy[key]:,.3f}')} ms", text, re.M), (key, text)


@pytest.mark.parametrize("body", [
    "Insert on t  (cost=0.00..0.01 rows=0 width=0) (actual time=0.05..0.05 rows=0 loops=1)\n"
    "  ->  Result  (cost=0.00..0.01 rows=1 width=44) (actual time=0.001..0.001 rows=1 loops=1)\n"
    "Planning Time: 0.030 ms\n",  # cut before its Execution Time
    '{"Status": "Success", "NumberLoadedRows": ',
    "garbage that is no profile at all\n",
])
def test_profile_command_reports_a_corrupt_file_clearly(body, tmp_path, capsys):
    from ingestlab.cli import main

    path = tmp_path / "bad.txt"
    path.write_text(body)
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ingestlab: error:") and "line" in err and "Traceback" not in err


def test_profile_command_says_how_many_lines_it_skipped_and_lists_them_in_json(tmp_path, capsys):
    from ingestlab.cli import main

    path = tmp_path / "profile.txt"
    path.write_text("Query:\n  Summary:\n     - Total: 1ms\n  ### pasted twice ###\n  ----------\n")
    assert main(["profile", str(path)]) == 0
    text = capsys.readouterr().out
    assert "  2 lines not understood, skipped: see --json" in text.splitlines()
    assert main(["profile", "--json", str(path)]) == 0
    skipped = json.loads(capsys.readouterr().out)["skipped"]
    assert [(s["line_no"], s["text"]) for s in skipped] == [(4, "  ### pasted twice ###"), (5, "  ----------")]
    assert all(s["reason"] for s in skipped)
    path.write_text("Query:\n  Summary:\n     - Total: 1ms\n")
    assert main(["profile", str(path)]) == 0
    assert "skipped" not in capsys.readouterr().out


@pytest.mark.parametrize("url", ["arangodb://u:secret@127.0.0.1:1/db", "yugabytedb://u:secret@127.0.0.1:1/db"])
def test_a_server_url_on_a_closed_port_fails_fast_in_one_line_and_writes_nothing(url, tmp_path, cli_here):
    out = tmp_path / "out"
    started = time.monotonic()  # against a run refused before its pre-flight, under the same load
    assert cli_here("run", "03", "-p", "SCALE", "galactic", "--out", out).returncode == 2
    refused = time.monotonic() - started
    started = time.monotonic()
    res = cli_here("run", "03", "-p", "ENGINES", url, "--out", out, env={"INGESTLAB_LAB_DIR": tmp_path / "lab"})
    assert time.monotonic() - started < refused + 6  # no connect timeout waited out (a driver's default: 30 s or more)
    assert res.returncode == 3  # a failed pre-flight check, not a bad value (issue V, 14)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach" in lines[0] and url.replace("secret", "***") in lines[0]
    assert "Traceback" not in res.stderr and "secret" not in res.stdout + res.stderr
    assert not out.exists() and not (tmp_path / "lab").exists()


@pytest.mark.parametrize("content, needle", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe", "a UTF-8 text file"),  # a binary file
    ("N: 200\nSCALE: smoke\n".encode("latin-1") + b"# caf\xe9\n", "byte 25 is not UTF-8"),  # latin-1 text
    (b"# " + b"x" * 1_000_001, "at most 1,000,000 bytes"),  # not a parameters file
])
def test_a_parameters_file_that_is_not_utf8_yaml_is_refused_in_one_line(tmp_path, capsys, content, needle):
    from ingestlab.cli import main

    params = tmp_path / "params.yaml"
    params.write_bytes(content)
    assert main(["run", "01", "-f", str(params), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ingestlab: error: -f=") and needle in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("target", ["folder", "/dev/zero"])
def test_profile_of_a_folder_or_an_endless_device_is_refused_without_reading_it(tmp_path, capsys, target):
    from ingestlab.cli import main

    path = tmp_path if target == "folder" else target
    assert main(["profile", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ingestlab: error: ") and "not a regular file" in err and len(err.strip().splitlines()) == 1
