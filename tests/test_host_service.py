"""The session host as a service, without a CLI (issue 68): where its page's address is found
(``relay.url`` beside the socket, 0600, gone at the stop), its socket's folder inside a shared
folder such as a Compose volume, and the guide's recipes being the files the recipe tests run
(``tests/test_realcli_service_recipes.py`` starts them)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from claude_sdkurl.host import HostError, _server

from .machines import read_unit
from .test_realcli_service_recipes import RECIPES, run


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder under /tmp of its own, 0755, as a shared volume's mount point (pytest's own
    are 0700 all the way)."""
    folder = Path(tempfile.mkdtemp(prefix="csk-svc-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def start_host(sock: Path, *flags: str) -> subprocess.Popen[str]:
    host = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), *flags], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    assert host.stdout is not None
    line = host.stdout.readline()
    assert "session host at" in line, (line, host.stderr.read() if host.poll() is not None and host.stderr else "")
    return host


def stop(host: subprocess.Popen[str]) -> int:
    if host.poll() is None:
        host.send_signal(signal.SIGTERM)
    try:
        return host.wait(30)
    finally:
        for stream in (host.stdout, host.stderr):
            if stream is not None:
                stream.close()


def test_the_pages_address_is_beside_the_socket_0600_and_gone_at_the_stop(base: Path) -> None:
    """Under a service manager, standard error is in the journal: the address to open, with its
    token, is in ``relay.url`` in the host's private folder, 0600 (a token is a secret), the
    same the host prints; a second host refused on the socket leaves it alone; the stop removes
    it (the token opens nothing any more)."""
    sock = base / "host" / "host.sock"
    host = start_host(sock, "--relay", "127.0.0.1:0")
    try:
        page = sock.parent / "relay.url"
        info = os.stat(page)
        assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.getuid()
        url = page.read_text()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/\?token=\S{16,}\n", url), url
        assert host.stderr is not None
        printed = host.stderr.readline()
        assert printed.split("watch at ", 1)[1] == url, printed  # the one the host serves
        second = subprocess.run([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), "--relay", "127.0.0.1:0"],
                                capture_output=True, text=True, timeout=60)  # fmt: skip
        assert second.returncode == 2 and "already serves" in second.stderr
        assert page.read_text() == url  # the refused one wrote nothing
        assert [p.name for p in sock.parent.iterdir() if p.name.startswith(".relay.url")] == []  # no temporary left
    finally:
        code = stop(host)
    assert code == 0 and not page.exists()


def test_without_a_page_no_address_is_written(base: Path) -> None:
    sock = base / "host" / "host.sock"
    host = start_host(sock)
    try:
        assert not (sock.parent / "relay.url").exists()
    finally:
        assert stop(host) == 0


def test_in_a_shared_folder_the_host_makes_a_private_one_and_says_so_when_given_the_shared_one(base: Path) -> None:
    """A volume's mount point (here 0755, ours) is no place for the socket itself: refused, with
    the path that works in the message; that path's folder the host makes 0700."""
    with pytest.raises(HostError, match=re.escape(f"give the socket a folder of its own, which the host makes 0700: {base}/host/host.sock")):
        _server.private_dir(base)
    _server.private_dir(base / "host")
    info = os.stat(base / "host")
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.getuid()
    assert stat.S_IMODE(os.stat(base).st_mode) == 0o755  # the shared folder is left as it was


def test_the_guide_shows_the_recipe_files_and_the_units_hold_only_what_the_emulation_knows() -> None:
    """Each ``<!-- recipe: NAME -->`` block of the deployment guide is its file of
    examples/deploy/ word for word, and the units use only directives that tests/machines.py
    does what systemd does with."""
    for name in RECIPES:
        assert run(name).exists()
    host_unit, web_unit = (read_unit(run(name)) for name in ("systemd-host", "systemd-web"))
    assert host_unit["Service"]["RuntimeDirectoryMode"] == ["0700"]
    assert "SESSION_HOST=/run/claude-host/host.sock" in web_unit["Service"]["Environment"]


def test_a_unit_with_a_directive_the_emulation_does_not_know_is_refused(tmp_path: Path) -> None:
    unit = tmp_path / "x.service"
    unit.write_text("[Service]\nUser=a\nPrivateTmp=yes\nExecStart=/bin/true\n")
    with pytest.raises(AssertionError, match="does not know"):
        read_unit(unit)
    unit.write_text("[Service]\nExecStart=/bin/true --socket %t/x.sock\n")
    with pytest.raises(AssertionError, match="not emulated"):
        read_unit(unit)
