"""The relay's page in a real headless Chromium (Selenium, Debian's chromium and chromedriver),
watching a batch of five items run by the real CLI against the mock model: a row per session,
one Bash call allowed and another denied from the page, a long turn interrupted; what a person
sees. Screenshots in ``test-artifacts/relay-browser/``. The page as a person uses it day to day
(states, decisions, subagents, the phone, restarts, new sessions): tests/test_relay_console_browser.py.
"""

from __future__ import annotations

import json
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl import relay
from claude_sdkurl.batch import run_batch
from claude_sdkurl.testing import MockMessagesAPI, Reply
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use
from tests.conftest import OptionsFactory
from tests.servers import BrowserSteps
from tests.test_notebook_browser import browser  # noqa: F401 - the fixture

pytestmark = [pytest.mark.realcli]

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts" / "relay-browser"
PROMPTS = ["item 1: touch one", "item 2: touch two", "item 3: a long answer", "item 4: say hello", "item 5: say goodbye"]


def model(request: RecordedRequest) -> Reply:
    prompt = request.last_user_text()
    if request.tool_results():
        return text("refused" if request.tool_results()[-1].get("is_error") else "touched")
    if "touch" in prompt:
        return tool_use("Bash", {"command": f"touch {prompt.split()[-1]}.txt"})
    if "long" in prompt:
        return Reply([{"type": "text", "text": "**Counting** words: " + "word " * 1500 + "END"}], delay=0.05, chunk=10)
    return text(f"Here is **{prompt.split()[-1]}**, in Markdown:\n\n- one\n- two\n")


@pytest.mark.parametrize("transport", ["websocket"], indirect=True)  # (stdio: tests/test_relay_console_browser.py)
def test_a_person_watches_a_batch_allows_denies_and_interrupts_from_the_page(
    browser: Any, make_options: OptionsFactory, api: MockMessagesAPI, home: Path  # noqa: F811
) -> None:
    from selenium.webdriver.common.by import By

    api.responder = model
    options = make_options(can_use_tool=relay.ask(timeout=300), include_partial_messages=True)
    outcome: dict[str, Any] = {}
    with relay.serve(port=0, announce=False, steer=True) as served:
        page = BrowserSteps(browser, ARTIFACTS)
        browser.get(served.url)
        page.wait(lambda: browser.find_element(By.ID, "conn").text == "connected", 120, "the page's connection")
        assert "token=" not in browser.current_url  # the token left the address bar (a cookie holds it)
        runner = threading.Thread(target=lambda: outcome.update(result=run_batch(PROMPTS, options, max_concurrency=5, retry=None)))
        runner.start()
        try:
            page.wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#sessions li")) == 5, 120, "a row per item of the batch")
            page.wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, "#asks .ask")) == 2, 120, "the two Bash calls waiting")
            page.shot("two-calls-waiting")

            def click(shown: str, button: str) -> bool:  # (the list is redrawn as it changes: found afresh)
                for ask in browser.find_elements(By.CSS_SELECTOR, "#asks .ask"):
                    if shown in ask.text:
                        ask.find_element(By.CSS_SELECTOR, button).click()
                        return True
                return False

            page.wait(lambda: click("touch one.txt", "button.allow"), 120, "Allow clicked")
            page.wait(lambda: click("touch two.txt", "button.deny"), 120, "Deny clicked")
            page.wait(lambda: not browser.find_elements(By.CSS_SELECTOR, "#asks .ask"), 120, "the decisions taken")
            page.shot("decided")
            long_key = page.wait(lambda: next((s.key for s in served.hub.sessions.values()
                                               if any("a long answer" in line for _, _, line in s.history)), None),
                                 120, "the long item's session")  # fmt: skip
            page.wait(lambda: browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{long_key}"]').click() or True,
                      120, "the long item chosen")
            page.wait(lambda: "word word" in browser.find_element(By.ID, "live").text, 120, "the long answer streaming")
            page.shot("long-answer-streaming")
            page.wait(lambda: browser.find_element(By.ID, "interrupt").click() or True, 120, "Interrupt clicked")
            page.wait(lambda: all(r.get_attribute("data-state") in ("ended", "failed", "interrupted")
                                  for r in browser.find_elements(By.CSS_SELECTOR, "#sessions li")), 120, "every item over")  # fmt: skip
            transcript = browser.find_element(By.ID, "transcript").text
            assert "interrupt sent" in transcript and "END" not in transcript
            row = browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{long_key}"]')
            assert row.get_attribute("data-state") == "interrupted", row.text  # stopped, not failed (issue 59)
            page.shot("all-over")
            # another item's transcript: Markdown rendered, the tool call folded
            first_key = next(s.key for s in served.hub.sessions.values() if any("touch one" in line for _, _, line in s.history))
            page.wait(lambda: browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{first_key}"]').click() or True,
                      120, "the allowed item chosen")
            page.wait(lambda: "touched" in browser.find_element(By.ID, "transcript").text, 120, "the allowed item's transcript")
            result_line = browser.find_element(By.CSS_SELECTOR, "#transcript .result").text
            assert "2 turns" in result_line or " 1 turn" in result_line and "1 turns" not in result_line, result_line
            folded = browser.find_element(By.CSS_SELECTOR, "#transcript details.tool")
            assert "Bash: touch one.txt" in folded.text and folded.get_attribute("open") is None
            page.shot("allowed-item")
        finally:
            runner.join(300)
        assert len(served.hub.sessions) == 5
    result = outcome["result"]
    items = {item.prompt: item for item in result.items}
    assert (home / "work" / "one.txt").exists() and not (home / "work" / "two.txt").exists()
    assert items[PROMPTS[0]].text == "touched"
    assert items[PROMPTS[1]].text == "refused"
    assert "END" not in (items[PROMPTS[2]].text or "")


PROGRAM = textwrap.dedent(
    """
    import json, sys
    from claude_sdkurl import ClaudeAgentOptions, ResultMessage, query
    from claude_sdkurl.approvals import parking
    config = json.loads(sys.argv[1])
    options = ClaudeAgentOptions(cli_path=config["cli"], env=config["env"], cwd=config["cwd"], allowed_tools=["Bash"],
                                 hooks={"PreToolUse": [parking(lambda name, tool_input: "park" if "danger" in str(tool_input) else None)]})
    for prompt in ("item 1: please touch parked", "item 2: say hello"):
        result = [m for m in query(prompt, options) if isinstance(m, ResultMessage)][-1]
        print(prompt, result.terminal_reason, result.session_id, flush=True)
    """
)


def stored_model(log: Path) -> Any:
    def answer(request: RecordedRequest) -> Reply:
        prompt = request.last_user_text()
        if request.tool_results():
            return text("touched it")
        if "touch parked" in prompt:
            return tool_use("Bash", {"command": f"echo ran >> {log} # danger"})
        return text(f"Answer to: {prompt}")

    return answer


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_after_the_program_exits_its_sessions_are_listed_side_by_side_a_parked_call_approved_and_one_continued(
    browser: Any, make_options: OptionsFactory, api: MockMessagesAPI, home: Path, tmp_path: Path  # noqa: F811
) -> None:
    """Issue 59, items 3, 4 and 5: a program parks a call and ends; another serves the relay with
    the same options. The page lists both sessions (stored) and the parked call; two transcripts
    side by side; Approve runs the call once, here; a message continues the other session; at
    390 px the parked call's buttons are on the screen."""
    import subprocess
    import sys

    from selenium.webdriver.common.by import By

    log = tmp_path / "ran.log"
    api.responder = stored_model(log)
    options = make_options(allowed_tools=["Bash"])
    config = {"cli": options.cli_path, "env": options.env, "cwd": options.cwd}
    program = subprocess.run([sys.executable, "-c", PROGRAM, json.dumps(config)], capture_output=True, text=True, timeout=300)
    assert program.returncode == 0, program.stderr[-2000:]
    assert "tool_deferred" in program.stdout and not log.exists(), program.stdout  # parked, not run; the program is gone
    with relay.serve(port=0, announce=False, steer=True, options=options) as served:
        page = BrowserSteps(browser, ARTIFACTS)
        browser.get(served.url)
        page.wait(lambda: browser.find_element(By.ID, "conn").text == "connected", 120, "the page's connection")
        page.wait(lambda: len(browser.find_elements(By.CSS_SELECTOR, '#sessions li[data-state="stored"]')) == 2, 60, "both sessions, stored")
        parked_box = page.wait(lambda: browser.find_elements(By.CSS_SELECTOR, "#parked .parked"), 60, "the parked call")[0]
        assert "Bash: echo ran" in parked_box.text and "danger" in parked_box.text

        rows = browser.find_elements(By.CSS_SELECTOR, '#sessions li[data-state="stored"]')
        keys = [r.get_attribute("data-key") for r in rows]
        by_title = {r.get_attribute("data-key"): r.text for r in rows}
        parked_key = next(k for k in keys if "touch parked" in by_title[k])
        plain_key = next(k for k in keys if k != parked_key)
        browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{parked_key}"]').click()
        page.wait(lambda: "please touch parked" in browser.find_element(By.ID, "transcript").text, 60, "the parked session's transcript")
        browser.find_element(By.ID, "pin").click()
        browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{plain_key}"]').click()
        page.wait(lambda: "Answer to: item 2" in browser.find_element(By.ID, "transcript").text, 60, "the other transcript")
        pane = browser.find_element(By.CSS_SELECTOR, "#beside .pane")
        assert "please touch parked" in pane.text and "Answer to: item 2" not in pane.text
        left, right = browser.find_element(By.TAG_NAME, "main").rect, pane.rect
        assert right["x"] >= left["x"] + left["width"] - 1 and abs(right["y"] - left["y"]) < 5  # side by side
        page.shot("stored-side-by-side")

        browser.set_window_size(390, 844)
        try:
            page.wait(lambda: browser.execute_script("return window.innerWidth") <= 400, 10, "a phone-wide window")
            width = browser.execute_script("return document.documentElement.clientWidth")
            browser.find_element(By.ID, "badge").click()  # "1 waiting for you": the drawer, at what waits
            page.wait(lambda: browser.find_element(By.ID, "left").is_displayed(), 10, "the drawer open")
            box = browser.find_element(By.ID, "left").rect
            for button in browser.find_elements(By.CSS_SELECTOR, "#parked button"):  # on the screen, not clipped by the list
                assert button.rect["x"] >= 0 and button.rect["x"] + button.rect["width"] <= width + 1
                assert button.rect["y"] + button.rect["height"] <= box["y"] + box["height"] + 1
            page.shot("parked-phone-390px")
            browser.find_element(By.ID, "sessions-toggle").click()
        finally:
            browser.set_window_size(1280, 900)

        page.wait(lambda: browser.find_element(By.CSS_SELECTOR, "#parked .parked button.allow").click() or True, 30, "Approve clicked")
        page.wait(lambda: not browser.find_elements(By.CSS_SELECTOR, "#parked .parked"), 120, "the parked call decided")
        page.wait(lambda: log.exists() and log.read_text() == "ran\n", 120, "the approved call run")
        parked_id = parked_key.split(":", 1)[1]
        page.wait(lambda: (lambda s: s is not None and s.state == "ended")(served.hub.by_session_id(parked_id)), 120, "the resumed run over")
        pane = browser.find_element(By.CSS_SELECTOR, "#beside .pane")  # the pinned session, now live here
        page.wait(lambda: "touched it" in pane.text, 60, "the resumed run shown in its pane")
        assert pane.get_attribute("data-key") == served.hub.by_session_id(parked_id).key
        page.shot("parked-approved")

        browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{plain_key}"]').click()
        page.wait(lambda: not browser.find_element(By.ID, "compose").get_attribute("hidden"), 30, "the continue box")
        assert browser.find_element(By.ID, "send").text == "Continue"
        browser.find_element(By.ID, "message").send_keys("item 3: and one more")
        browser.find_element(By.ID, "send").click()
        page.wait(lambda: "Answer to: item 3: and one more" in browser.find_element(By.ID, "transcript").text, 120,
                  "the continued turn, followed live")  # fmt: skip
        shown = browser.find_element(By.ID, "transcript").text  # the stored turns above the one run here
        assert shown.index("Answer to: item 2") < shown.index("resumed here") < shown.index("item 3: and one more"), shown
        page.shot("continued")
    assert log.read_text() == "ran\n"  # once
    continued = [r for r in api.message_requests() if "and one more" in json.dumps(r.messages())]
    assert continued and "Answer to: item 2" in json.dumps(continued[0].messages())  # resumed with its history


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_mode_chosen_on_the_page_decides_the_next_tool_call(
    browser: Any, make_options: OptionsFactory, api: MockMessagesAPI, home: Path  # noqa: F811
) -> None:
    """Issue 59, item 2, in the browser: the bar's list shows the session's permission mode; a
    person picks ``dontAsk``; the row says so, and the next tool call is refused without asking."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from claude_sdkurl import ClaudeClient, PermissionResultAllow, ResultMessage
    from tests.test_realcli_relay import steering_model

    api.responder = steering_model
    asked: list[str] = []

    def allow(tool_name: str, tool_input: dict[str, Any], context: Any) -> PermissionResultAllow:
        asked.append(tool_input.get("command", ""))
        return PermissionResultAllow()

    with relay.serve(port=0, announce=False, steer=True) as served:
        page = BrowserSteps(browser, ARTIFACTS)
        browser.get(served.url)
        page.wait(lambda: browser.find_element(By.ID, "conn").text == "connected", 120, "the page's connection")
        with ClaudeClient(make_options(can_use_tool=allow)) as client:
            client.query("touch first")
            assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "touched"
            assert asked == ["touch first.txt"]
            key = served.hub.running_sessions()[0].key
            page.wait(lambda: browser.find_element(By.CSS_SELECTOR, f'#sessions li[data-key="{key}"]').click() or True, 60, "the session chosen")
            chooser = page.wait(lambda: (lambda e: e if e.is_displayed() else None)(browser.find_element(By.ID, "mode-select")), 60, "the mode list")
            assert Select(chooser).first_selected_option.text == "default"
            Select(chooser).select_by_visible_text("dontAsk")
            row = f'#sessions li[data-key="{key}"]'
            page.wait(lambda: "dontAsk" in browser.find_element(By.CSS_SELECTOR, row).text, 60, "the row showing the new mode")
            assert served.hub.session(key).permission_mode == "dontAsk"  # type: ignore[union-attr]
            page.shot("mode-changed")
            client.query("touch second")
            assert [m for m in client.receive_response() if isinstance(m, ResultMessage)][0].result == "refused"
        assert asked == ["touch first.txt"] and not (home / "work" / "second.txt").exists()
