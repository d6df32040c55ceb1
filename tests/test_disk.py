"""The machine's own limits measured inside a run (``ingestlab.disk``)."""

from ingestlab import disk, results


def test_file_creation_is_timed_in_a_folder_of_its_own_which_is_removed(tmp_path):
    found = disk.file_create_us(tmp_path / "lab", n=20)
    assert found["directory"] == str(tmp_path / "lab") and found["n"] == 20
    assert 0 < found["p50_us"] <= found["p90_us"] < 1e6
    assert list((tmp_path / "lab").iterdir()) == []  # nothing left behind


def test_a_folder_that_takes_no_files_is_said_not_raised(tmp_path):
    (tmp_path / "a_file").write_text("")
    assert "Error" in disk.file_create_us(tmp_path / "a_file" / "lab")["error"]  # even as root: not a folder


def test_every_run_records_how_long_a_file_takes_to_create_where_the_lab_s_servers_keep_their_data(tmp_path,
                                                                                                 monkeypatch):
    monkeypatch.setenv("INGESTLAB_LAB_DIR", str(tmp_path / "lab"))
    found = results.host_info(tmp_path)["lab_file_create"]
    assert found["directory"] == str((tmp_path / "lab").resolve()) and found["p50_us"] > 0


def test_the_file_system_s_journal_is_read_from_the_kernel_and_said_only_for_ext(tmp_path):
    assert disk.journal("/proc") is None  # procfs: no journal to speak of
    found = disk.journal(tmp_path)
    assert (found is None) == (disk.mount_of(tmp_path)["fstype"] not in ("ext3", "ext4"))
    assert disk.file_create_us(tmp_path / "lab", n=5)["journal"] == found


def test_the_mount_holding_a_path_is_the_deepest_that_is_it_or_a_parent(tmp_path, monkeypatch):
    table = "/dev/vda / ext4 rw 0 0\nmem /mnt/a tmpfs rw 0 0\nmem2 /mnt/a/b tmpfs rw 0 0\n"
    real_read = disk.Path.read_text
    monkeypatch.setattr(disk.Path, "read_text",
                        lambda self, *a, **k: table if str(self) == "/proc/mounts" else real_read(self, *a, **k))
    assert disk.mount_of("/mnt/ab/c")["mount"] == "/"  # a sibling's prefix is no parent
    assert disk.mount_of("/mnt/a/c") == {"mount": "/mnt/a", "fstype": "tmpfs", "source": "mem"}
    assert disk.mount_of("/mnt/a/b")["mount"] == "/mnt/a/b"
