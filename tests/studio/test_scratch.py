"""Jobs' scratch folders: held while their job lives, swept once nobody holds them, never while someone does."""

import os
import subprocess
import sys

import pytest

from studio.lib import scratch


def test_a_held_folder_is_never_swept_and_a_released_one_is_gone(tmp_path):
    held = scratch.claim(tmp_path, "job-a")
    (held.path / "tmp.txt").write_text("x")
    assert scratch.sweep(tmp_path) == [] and (held.path / "tmp.txt").is_file()
    scratch.release(held)
    assert not held.path.exists()


def test_a_folder_whose_processes_all_died_is_swept(tmp_path):
    # A worker killed mid-job: its process claimed the folder and died without releasing it.
    code = (
        "import os, sys; from studio.lib import scratch; "
        "s = scratch.claim(sys.argv[1], 'job-b'); (s.path / 'left.txt').write_text('x'); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, cwd=os.getcwd())
    assert (tmp_path / "job-b" / "left.txt").is_file()
    assert scratch.sweep(tmp_path) == [tmp_path / "job-b"] and not (tmp_path / "job-b").exists()


def test_a_forked_child_keeps_the_folder_held_after_its_parent_let_go_of_the_lock(tmp_path):
    held = scratch.claim(tmp_path, "job-c")
    pid = os.fork()
    if pid == 0:  # the work horse: holds the inherited lock until it is killed
        os.pause()
        os._exit(0)
    try:
        os.close(held.fd)
        assert scratch.sweep(tmp_path) == [] and held.path.is_dir()
    finally:
        os.kill(pid, 9)
        os.waitpid(pid, 0)
    assert scratch.sweep(tmp_path) == [held.path]


def test_a_folder_held_elsewhere_cannot_be_claimed_twice(tmp_path):
    held = scratch.claim(tmp_path, "job-d")
    with pytest.raises(FileExistsError, match="held by another live process"):
        scratch.claim(tmp_path, "job-d")
    scratch.release(held)
