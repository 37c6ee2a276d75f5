"""The relay's page as a person uses it (issue 71), in a real headless Chromium against the real
CLI and the mock model: what waits for them and how they decide it (Always allow, edit then
allow), the states, the model switch, a subagent's progress, the phone, the small defects, the
dark theme; a restart of the session host under an open tab; a session started from the page,
a call parked while the page is open, a stored session continued again and again, three panes.

Each state is shot at 1280 and 390 px (``test-artifacts/relay-console/``), and each shot is
checked: it is the viewport's size, not blank, and at 390 px the page neither scrolls sideways
nor as a whole (the watched session fills the screen).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import ClaudeClient, ResultMessage, query, relay
from claude_sdkurl.approvals import parking
from claude_sdkurl.testing import MockMessagesAPI, Reply
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use
from tests.conftest import OptionsFactory
from tests.servers import BrowserSteps, free_port
from tests.test_notebook_browser import browser  # noqa: F401 - the fixture

pytestmark = [pytest.mark.realcli]

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts" / "relay-console"


class Console(BrowserSteps):
    """The page as a person sees it, with each state shot at both widths and checked."""

    def __init__(self, driver: Any, folder: Path) -> None:
        from selenium.webdriver.common.by import By

        super().__init__(driver, folder)
        self.by = By
        self.shots: list[Path] = []

    def el(self, css: str) -> Any:
        return self.d.find_element(self.by.CSS_SELECTOR, css)

    def els(self, css: str) -> list[Any]:
        return list(self.d.find_elements(self.by.CSS_SELECTOR, css))

    def js(self, script: str, *args: Any) -> Any:
        return self.d.execute_script(script, *args)

    def width(self, width: int, height: int) -> None:
        if self.js("return window.innerWidth") != width:
            self.d.set_window_size(width, height)
            self.wait(lambda: abs(self.js("return window.innerWidth") - width) <= 20, 10, f"a window {width} px wide")
            time.sleep(0.2)  # (the page redraws on resize)

    def states(self, name: str, phone: Any = None, wide: Any = None) -> None:
        """This state shot at 1280 px and at 390 px (``wide``/``phone`` check it first)."""
        for width, height, check in ((1280, 900, wide), (390, 844, phone)):
            self.width(width, height)
            if check is not None:
                check()
            if width == 390:
                self.fits_a_phone()
            self.shot(f"{name}-{width}px")
            self.checked(width)
        self.width(1280, 900)

    def fits_a_phone(self) -> None:
        """Nothing sideways, and the page itself does not scroll: the transcript does."""
        sideways, tall, high = self.js("const e = document.scrollingElement; return [e.scrollWidth - e.clientWidth, e.scrollHeight, innerHeight]")
        assert sideways <= 1 and tall <= high + 1, (sideways, tall, high)

    def checked(self, width: int) -> None:
        from PIL import Image

        (shot,) = sorted(self.folder.glob(f"{self.step:02d}-*.png"))
        self.shots.append(shot)
        with Image.open(shot) as image:
            size = image.size
            colours = image.convert("RGB").getcolors(maxcolors=1 << 20)
        viewport = tuple(self.js("return [innerWidth, innerHeight]"))
        assert size == viewport and abs(size[0] - width) <= 20, (shot.name, size, viewport)
        assert colours is None or len(colours) > 30, (shot.name, "a blank page")

    def within(self, element: Any) -> bool:
        """The element is shown and wholly inside the window."""
        r = self.js("return arguments[0].getBoundingClientRect().toJSON()", element)
        w, h = self.js("return [innerWidth, innerHeight]")
        return bool(element.is_displayed() and r["left"] >= 0 and r["top"] >= 0 and r["right"] <= w + 1 and r["bottom"] <= h + 1)

    def row(self, key: str) -> Any:
        return self.el(f'#sessions li[data-key="{key}"]')

    def click_text(self, css: str, label: str) -> bool:
        for element in self.els(css):
            if element.text == label or element.text.startswith(label):
                element.click()
                return True
        return False


def prompt_of(request: RecordedRequest) -> str:
    """The last thing a person or a program said (not a tool's result)."""
    for message in reversed(request.messages()):
        content = message.get("content")
        if message.get("role") != "user":
            continue
        if isinstance(content, str):
            return content
        texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
        if texts and not any(b.get("type") == "tool_result" for b in content):
            return texts[-1]
    return ""


def console_model(request: RecordedRequest) -> Reply:
    if "HELPER-TASK" in json.dumps(request.messages()[:1]):  # the subagent's own calls (a command the CLI asks about)
        return tool_use("Bash", {"command": "touch helper.txt"}) if not request.tool_results() else text("helper says hi")
    said = prompt_of(request).strip()  # (exact: the CLI's own notices say other things)
    if request.tool_results():
        return text("the helper said hi" if said == "ask a helper" else "touched")
    if said in ("touch first", "touch again"):
        return tool_use("Bash", {"command": "touch a.txt"})
    if said == "touch b":
        return tool_use("Bash", {"command": "touch b.txt"})
    if said == "ask a helper":
        return tool_use("Agent", {"description": "helper", "prompt": "HELPER-TASK: say hi", "subagent_type": "general-purpose",
                                  "run_in_background": False})  # fmt: skip
    if said == "a long answer":
        return Reply([{"type": "text", "text": "Counting: " + "word " * 3000 + "END"}], delay=0.05, chunk=10)
    return text(f"hi from {request.body.get('model') if isinstance(request.body, dict) else '?'}")


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_person_decides_edits_allows_always_switches_the_model_follows_a_subagent_and_interrupts_on_a_phone(
    browser: Any, make_options: OptionsFactory, api: MockMessagesAPI, home: Path  # noqa: F811
) -> None:
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    api.responder = console_model
    asked: list[str] = []
    ask = relay.ask(timeout=300)

    def counted(tool_name: str, tool_input: dict[str, Any], context: Any) -> Any:
        asked.append(str(tool_input.get("command")))
        return ask(tool_name, tool_input, context)

    work = home / "work"
    options = make_options(can_use_tool=counted, include_partial_messages=True, allowed_tools=["Agent"])
    results: list[ResultMessage] = []
    with relay.serve(port=0, announce=False, steer=True, models=("claude-haiku-4-5",)) as served:
        page = Console(browser, ARTIFACTS / "person")
        browser.get(served.url)
        page.wait(lambda: page.el("#conn").text == "connected", 120, "the page's connection")
        with ClaudeClient(options) as client:
            reader = threading.Thread(target=lambda: results.extend(m for m in client.receive_messages() if isinstance(m, ResultMessage)))
            reader.start()
            key = page.wait(lambda: served.hub.running_sessions()[0].key, 60, "the client's session")
            page.wait(lambda: page.row(key).get_attribute("data-state") == "idle", 60, "an idle client reads idle")
            assert "idle" in page.el("#chosen-title").text and page.el("#interrupt").get_attribute("hidden")  # nothing to interrupt
            page.states("idle")

            # a call waits: the row, the title, the badge; the card beside the transcript, in reach on a phone
            client.query("touch first")
            page.wait(lambda: page.row(key).get_attribute("data-state") == "waiting", 60, "the row waiting for you")
            assert "waiting for you" in page.row(key).text and browser.title.startswith("(1) ") and page.el("#badge").text == "1 waiting for you"
            card = page.wait(lambda: page.els("#main-asks .ask"), 30, "the call beside the transcript")[0]
            labels = [b.text for b in card.find_elements(page.by.TAG_NAME, "button")]
            assert labels == ["Allow", "Deny", "Always allow Bash(touch a.txt) in this session", "Edit"], labels
            page.states("waiting", phone=lambda: page.wait(lambda: page.within(page.el("#main-asks .ask button.allow")), 10, "Allow within a phone's screen"))
            page.wait(lambda: page.click_text("#main-asks .ask button", "Always allow"), 30, "Always allow clicked")
            page.wait(lambda: len(results) == 1 and page.row(key).get_attribute("data-state") == "idle", 60, "the turn over")
            assert browser.title == "claude_sdkurl relay" and not page.el("#badge").is_displayed()
            client.query("touch again")  # the rule the CLI keeps for the session: not asked again
            page.wait(lambda: len(results) == 2, 60, "the second touch")
            assert asked == ["touch a.txt"] and results[1].result == "touched"

            # edit, then allow: what runs is what the person wrote
            client.query("touch b")
            page.wait(lambda: page.click_text("#main-asks .ask button", "Edit"), 60, "Edit clicked")
            area = page.el("#main-asks .ask textarea")
            area.send_keys(Keys.CONTROL, "a")
            area.send_keys('{"command": "touch edited.txt"}')
            page.states("editing")
            assert page.el("#main-asks .ask textarea").get_attribute("value") == '{"command": "touch edited.txt"}'  # kept through the redraws
            page.wait(lambda: page.click_text("#main-asks .ask button", "Allow as edited"), 30, "Allow as edited clicked")
            page.wait(lambda: len(results) == 3, 60, "the edited call's turn")
            assert (work / "edited.txt").exists() and not (work / "b.txt").exists() and asked == ["touch a.txt", "touch b.txt"]

            # the model, the mode the CLI refuses, a long refusal in the header, one IDE button
            header = page.el("header").rect["height"]
            Select(page.el("#model-select")).select_by_visible_text("claude-haiku-4-5")
            page.wait(lambda: "claude-haiku-4-5" in page.row(key).text, 60, "the row showing the new model")
            Select(page.el("#mode-select")).select_by_visible_text("bypassPermissions")
            page.wait(lambda: "the CLI refused" in (page.el("#notice").get_attribute("title") or ""), 60, "the refusal")
            page.wait(lambda: Select(page.el("#mode-select")).first_selected_option.text == "default", 10, "the mode in force selected again")
            assert page.el("header").rect["height"] == header  # the notice is cut, not wrapped under the title
            assert [page.el(f"#{b}").is_displayed() for b in ("bind-ide", "unbind-ide")] == [True, False]
            client.query("say hi")
            page.wait(lambda: len(results) == 4, 60, "a turn on the new model")
            assert api.message_requests()[-1].body["model"] == "claude-haiku-4-5" and results[3].result == "hi from claude-haiku-4-5"
            page.wait(lambda: re.search(r"context [\d.]+k? / [\d.]+[kM] \(\d", page.el("#context").text), 30, "the context in use")
            page.states("model-switched")

            # a subagent: its progress (task_* lines), its own call asked and answered inside its fold, its turns and cost
            client.query("ask a helper")
            fold = page.wait(lambda: page.els("#transcript details.subagent"), 60, "the subagent's fold")[0]
            fold.find_element(page.by.TAG_NAME, "summary").click()
            page.wait(lambda: page.els("#main-asks .ask") and "touch helper.txt" in page.el("#main-asks .ask").text, 60, "the helper's call waiting")
            page.wait(lambda: "asks to use Bash: touch helper.txt" in fold.find_element(page.by.CSS_SELECTOR, ".sub").text, 30,
                      "the question inside the fold")  # fmt: skip
            assert "started: helper (general-purpose)" in fold.find_element(page.by.CSS_SELECTOR, ".sub").text
            page.wait(lambda: page.click_text("#main-asks .ask button", "Allow"), 30, "the helper's call allowed")
            page.wait(lambda: "completed: helper says hi" in fold.text, 60, "the subagent's end inside its fold")
            summary = fold.find_element(page.by.TAG_NAME, "summary").text
            assert re.search(r"completed · 1 tool call · 2 turns · \d+ tokens · ≈\$[\d.e-]+$", summary), summary
            outside = page.js("return [...document.querySelectorAll('#transcript > .note')].map(e => e.textContent).join('|')")
            assert "touch helper.txt" not in outside and (work / "helper.txt").exists()  # "asks to use" and "answered" sit inside the fold
            assert "permission answered: allow" in fold.find_element(page.by.CSS_SELECTOR, ".sub").text
            page.wait(lambda: "the helper said hi" in page.js("return [...document.querySelectorAll('#transcript > .turn')].map(e => {"
                                                              "const c = e.cloneNode(true); c.querySelectorAll('.sub').forEach(x => x.remove());"
                                                              "return c.textContent; }).join('|')"), 60, "the parent's answer, apart")  # fmt: skip
            page.states("subagent")
            page.wait(lambda: page.row(key).get_attribute("data-state") == "idle", 120, "the helper's turns over")

            # a long answer on a phone: the stream follows its end, Interrupt and the box in reach; then interrupted
            page.width(390, 844)
            done = len(results)
            client.query("a long answer")
            page.wait(lambda: "word word" in page.el("#live").text, 60, "the long answer streaming")
            for _ in range(3):
                assert page.js("const t = document.getElementById('transcript'); return t.scrollTop + t.clientHeight >= t.scrollHeight - 60")
                time.sleep(0.3)
            assert page.within(page.el("#interrupt")) and page.within(page.el("#send")) and page.within(page.el("#message"))
            page.fits_a_phone()
            page.shot("streaming-390px")
            page.checked(390)
            page.width(1280, 900)
            page.shot("streaming-1280px")
            page.checked(1280)
            page.el("#interrupt").click()
            page.wait(lambda: len(results) > done and page.row(key).get_attribute("data-state") == "interrupted", 60, "the turn interrupted")
            shown = page.el("#transcript").text
            assert "turn interrupted" in shown and "ede_diagnostic" not in shown and "END" not in shown
            assert page.el("#transcript .result.stopped").text.startswith("interrupted · ")
            assert not [p for p in page.els("#transcript .prompt") if "interrupted" in p.text]  # not a prompt bubble
            page.states("interrupted")

            # "started" once; the row's turns are the results' turns; the dark theme
            assert len([n for n in page.els("#transcript .note") if "started (" in n.text]) == 1
            counted_turns = sum(int(m.group(1)) for m in re.finditer(r"· (\d+) turns?", "\n".join(r.text for r in page.els("#transcript .result"))))
            assert counted_turns >= len(results) and f"· {counted_turns} turns" in page.row(key).text, (counted_turns, page.row(key).text)
            page.el("#theme").click()
            assert page.js("return getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
            page.states("dark")
            browser.refresh()  # the choice is kept
            page.wait(lambda: page.el("#conn").text == "connected", 60, "the page again")
            assert page.js("return getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
            page.el("#theme").click()
            page.el("#theme").click()
            assert page.js("return getComputedStyle(document.body).backgroundColor") == "rgb(250, 250, 250)"
        reader.join(60)
    assert len(page.shots) == 16


# ---------------------------------------------------------------- restarts


def start_host(sock: Path, port: int, home: Path, *extra: str) -> tuple[subprocess.Popen[str], str]:
    """``python -m claude_sdkurl.host --relay``, as a deployer starts it: the process and the
    page's link it printed."""
    proc = subprocess.Popen([sys.executable, "-m", "claude_sdkurl.host", "--socket", str(sock), "--relay", f"127.0.0.1:{port}", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "HOME": str(home)})  # fmt: skip
    assert proc.stderr is not None
    said = []
    while "watch at " not in (line := proc.stderr.readline()):
        said.append(line)
        assert line and len(said) < 50, (said, proc.poll())
    return proc, line.split("watch at ", 1)[1].strip()


def stop_host(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    for stream in (proc.stdout, proc.stderr):
        if stream is not None:
            stream.close()


def test_a_tab_left_open_survives_a_restart_of_the_host_and_says_where_a_new_link_is(browser: Any, home: Path, tmp_path: Path) -> None:  # noqa: F811
    """The session host with its page, restarted under an open tab: while it is down the tab
    says it is not answering and retries; back with the same token (``--relay-token-file``) the
    tab rejoins by itself and says the relay restarted; back with a new token it says its link
    no longer works and where the new one is printed (and the new link works)."""
    import shutil
    import tempfile

    base = Path(tempfile.mkdtemp(prefix="claude-sdkurl-console-"))
    sock, token_file, port = base / "host" / "host.sock", tmp_path / "relay.token", free_port()
    procs: list[subprocess.Popen[str]] = []
    try:
        proc, url = start_host(sock, port, home, "--relay-token-file", str(token_file))
        procs.append(proc)
        page = Console(browser, ARTIFACTS / "restart")
        browser.get(url)
        page.wait(lambda: page.el("#conn").text == "connected", 60, "the page's connection")
        first = page.js("return state.instance")
        stop_host(proc)
        page.wait(lambda: "not answering" in page.el("#banner").text, 60, "the tab saying the relay is gone")
        page.states("host-down")
        proc, again = start_host(sock, port, home, "--relay-token-file", str(token_file))
        procs.append(proc)
        assert again == url  # the same link
        page.wait(lambda: page.el("#conn").text == "connected" and not page.el("#banner").is_displayed(), 60, "the tab back by itself")
        assert page.js("return state.instance") != first and "the relay restarted" in page.el("#notice").get_attribute("title")
        stop_host(proc)
        proc, fresh = start_host(sock, port, home)  # no token file: a new token
        procs.append(proc)
        assert fresh != url
        page.wait(lambda: "link no longer works" in page.el("#banner").text, 60, "the tab saying its link is stale")
        assert "session host's standard error" in page.el("#banner").text and page.el("#conn").text == "new token"
        page.states("new-token")
        browser.get(fresh)
        page.wait(lambda: page.el("#conn").text == "connected" and not page.el("#banner").is_displayed(), 60, "the new link")
    finally:
        for proc in procs:
            stop_host(proc)
        shutil.rmtree(base, ignore_errors=True)


# ---------------------------------------------------------------- new sessions, parked live, continued again, three panes


def later_model(log: Path) -> Any:
    from tests.test_relay_browser import stored_model

    stored = stored_model(log)  # (a parked call, "touched it", "Answer to: ...") and a call from the page

    def answer(request: RecordedRequest) -> Reply:
        if "page: touch" in prompt_of(request) and not request.tool_results():
            return tool_use("Bash", {"command": "touch from-the-page.txt"})
        return stored(request)

    return answer


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_sessions_started_parked_and_continued_again_from_the_page_side_by_side(
    browser: Any, make_options: OptionsFactory, api: MockMessagesAPI, home: Path, tmp_path: Path  # noqa: F811
) -> None:
    from selenium.webdriver.support.ui import Select

    log = tmp_path / "ran.log"
    api.responder = later_model(log)
    work = home / "work"
    (work / "sub").mkdir()
    parked_options = make_options(hooks={"PreToolUse": [parking(lambda name, tool_input: "park" if "danger" in str(tool_input) else None)]})
    allowed = relay.NewSessions(make_options(), (str(work),), permission_modes=("default", "acceptEdits"))
    with relay.serve(port=0, announce=False, steer=True, options=parked_options, new_sessions=allowed) as served:
        page = Console(browser, ARTIFACTS / "later")
        browser.get(served.url)
        page.wait(lambda: page.el("#conn").text == "connected", 120, "the page's connection")

        # a call parked while the page is open: listed at once, counted, its run reads "parked"
        parked_at = [m for m in query("item 1: please touch parked", parked_options) if isinstance(m, ResultMessage)][-1]
        assert parked_at.terminal_reason == "tool_deferred"
        page.wait(lambda: page.els("#parked .parked"), 30, "the parked call, with no reload")
        first = served.hub.by_session_id(parked_at.session_id)
        assert first is not None
        page.wait(lambda: page.row(first.key).get_attribute("data-state") == "parked", 30, "the run reading parked")
        assert browser.title.startswith("(1) ") and page.el("#badge").text == "1 waiting for you"
        page.states("parked-live")
        page.wait(lambda: page.el("#parked .parked button.allow").click() or True, 30, "Approve clicked")
        page.wait(lambda: log.exists() and log.read_text() == "ran\n", 120, "the approved call run")

        # the session continued, and continued again, before and after a reload
        def over(n: int) -> Any:
            runs = [s for s in served.hub.sessions.values() if s.session_id == parked_at.session_id]
            return runs[-1] if len(runs) == n and not runs[-1].running else None

        run = page.wait(lambda: over(2), 120, "the resumed run over")
        page.wait(lambda: page.row(run.key).click() or True, 30, "the resumed run chosen")

        def go_on(n: int, said: str) -> Any:
            page.wait(lambda: page.el("#send").text == "Continue" and page.el("#compose").is_displayed(), 30, "the Continue box")
            page.el("#message").send_keys(said)
            page.el("#send").click()
            ran = page.wait(lambda: over(n), 120, f"continued: run {n}")
            page.wait(lambda: f"Answer to: {said}" in page.el("#transcript").text, 60, "the continued turn, followed to its run")
            return ran

        run = go_on(3, "and again 1")
        shown = page.el("#transcript").text
        assert shown.index("please touch parked") < shown.index("resumed here") < shown.index("Answer to: and again 1"), shown
        assert len([r for r in page.els("#sessions li") if parked_at.session_id[:8] in r.text]) == 1  # one row for the session
        browser.refresh()
        page.wait(lambda: page.el("#conn").text == "connected", 60, "the page again")
        page.wait(lambda: page.row(run.key).click() or True, 30, "the session chosen after the reload")
        page.wait(lambda: "please touch parked" in page.el("#transcript").text and "Answer to: and again 1" in page.el("#transcript").text,
                  60, "every turn after the reload")  # fmt: skip
        page.states("continued-again")
        run = go_on(4, "and again 2")  # and again, after the reload
        shown = page.el("#transcript").text
        assert "Answer to: and again 1" in shown.split("resumed here")[0] and "Answer to: and again 2" in shown.split("resumed here")[1], shown

        # two sessions started from the page, in folders of the allowed root
        for folder, mode, prompt_text in (("sub", "default", "page: touch it"), (str(work), "acceptEdits", "")):
            page.el("#new-session").click()
            page.wait(lambda: page.el("#new-form").is_displayed(), 10, "the new session form")
            page.el("#new-cwd").clear()
            page.el("#new-cwd").send_keys(folder)
            Select(page.el("#new-mode")).select_by_visible_text(mode)
            page.el("#new-prompt").send_keys(prompt_text)
            before = {s.key for s in served.hub.sessions.values()}
            page.el("#new-start").click()
            made = page.wait(lambda: [s for s in served.hub.sessions.values() if s.key not in before and s.started_by_page], 120, "the new session")[0]
            page.wait(lambda: page.js("return state.chosen") == made.key, 30, "the new session chosen")
            if prompt_text:
                page.wait(lambda: page.row(made.key).get_attribute("data-state") == "waiting", 120, "its call waiting for a person")
                assert made.cwd == str(work / "sub") and made.permission_mode == "default"
                page.el("#pin").click()
                pinned_waiting = made
            else:
                page.wait(lambda: page.row(made.key).get_attribute("data-state") == "idle", 120, "the second one idle")
                assert made.cwd == str(work) and "acceptEdits" in page.row(made.key).text
                page.el("#pin").click()
                pinned_idle = made
        page.wait(lambda: page.row(run.key).click() or True, 30, "the continued session in the main pane")

        # three panes at 1280 px, each readable, each with its own box or approvals
        panes = page.wait(lambda: (lambda p: p if len(p) == 3 else None)([e for e in page.els(".pane") if e.is_displayed()]), 30, "three panes")
        for pane in panes:
            assert pane.rect["width"] >= 300, pane.rect
            title = pane.find_element(page.by.CSS_SELECTOR, ".title")
            assert page.js("return arguments[0].scrollWidth <= arguments[0].clientWidth + 1", title) and " · " in title.text, title.text
        assert not page.el("#pin").is_displayed()  # no room for a fourth
        waiting = page.el(f'.pane.pinned[data-key="{pinned_waiting.key}"]')
        idle = page.el(f'.pane.pinned[data-key="{pinned_idle.key}"]')
        assert waiting.find_element(page.by.CSS_SELECTOR, ".pane-asks .ask button.allow").is_displayed()
        page.states("three-panes")
        waiting.find_element(page.by.CSS_SELECTOR, ".pane-asks .ask button.allow").click()
        page.wait(lambda: (work / "sub" / "from-the-page.txt").exists(), 120, "the pinned pane's call allowed and run")
        idle.find_element(page.by.CSS_SELECTOR, ".compose textarea").send_keys("hello from a pane")
        idle.find_element(page.by.CSS_SELECTOR, ".compose button").click()
        page.wait(lambda: "Answer to: hello from a pane" in idle.text, 120, "the answer in that pane")
        assert "Answer to: hello from a pane" not in page.el("#transcript").text
        page.wait(lambda: page.row(pinned_idle.key).click() or True, 30, "the idle one chosen")
        page.wait(lambda: page.el("#end").is_displayed(), 30, "End, for a session started from the page")
        page.el("#end").click()
        page.wait(lambda: page.row(pinned_idle.key).get_attribute("data-state") == "ended" and page.el("#send").text == "Continue", 60,
                  "the session ended from the page (its transcript stays: it can be continued)")  # fmt: skip
    assert log.read_text() == "ran\n"  # once
    assert len(page.shots) == 6
