"""``%%claude`` in a real JupyterLab, driven by a real headless Chromium (Selenium, Debian's
chromium and chromedriver), against the real CLI and the mock model: what a person sees.

Each step leaves a screenshot in ``test-artifacts/notebook-browser/``. If the browser stack is
missing and cannot be installed, the test fails naming what is missing.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from claude_sdkurl.testing import MockMessagesAPI, Reply, offline_env
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use
from tests.servers import BrowserSteps, JupyterLabServer, ServerUnavailable, chromium
from tests.test_notebook_magic import STORY, clis_with

pytestmark = [pytest.mark.realcli]

ARTIFACTS = Path(__file__).parent.parent / "test-artifacts" / "notebook-browser"
ANSWER = "Hello **bold world**, a list:\n\n- first item\n- second item\n\n| col | val |\n|---|---|\n| a | 1 |\n"
CODE = "Two blocks:\n\n```python\ntotal = 6 * 7\nprint(total)\n```\n\nand a shell one:\n\n```bash\necho $HOME\n```\n"
PRICES = ("Plans: $5 a month and $50 a year.\n\n| plan | price |\n|---|---|\n| pro | $20 |\n\n"
          "Euler: $e^{i\\pi}+1=0$, and $$x^2$$\n\nAn old silent pond\nA frog jumps into the pond\nSplash! Silence again\n")


def answer(request: RecordedRequest) -> Reply | str:
    results = request.tool_results()
    if results:
        return text(f"tool said: {results[-1].get('content')}")
    prompt = request.last_user_text()
    if "Say hi" in prompt:
        # paced so a partial answer stays on the page ~1 s (at 0.04 s a chunk it was ~0.25 s, and a
        # slow render could miss it: seen once)
        return Reply([{"type": "text", "text": ANSWER}], chunk=6, delay=0.15)
    if prompt.startswith("make "):
        name = prompt.split()[-1]
        return tool_use("Bash", {"command": f"touch {name}", "description": f"Create the empty file {name}"})
    if "prices" in prompt:
        return text(PRICES)
    if "some code" in prompt:
        return text(CODE)
    if "think first" in prompt:
        return Reply([{"type": "thinking", "thinking": "Weighing the options.", "signature": "s"},
                      {"type": "text", "text": "Thought it through."}], on_start=lambda: time.sleep(2.0), delay=1.0)  # fmt: skip
    if "endless" in prompt:
        return Reply([{"type": "text", "text": STORY * 4}], chunk=20, delay=0.05)
    if prompt.startswith("echo: "):
        return text(f"answer to: {prompt[6:]}")
    return text("ok")


@pytest.fixture
def lab(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path) -> Iterator[JupyterLabServer]:
    # (IS_SANDBOX: as root, the CLI takes bypassPermissions only in a sandbox; step 7a uses it)
    options = {"cli_path": str(cli_paths["stdio"]), "env": {**offline_env(api.url, home), "IS_SANDBOX": "1"}, "cwd": str(home / "work")}
    setup = ("from claude_sdkurl import ClaudeAgentOptions\nimport claude_sdkurl.notebook as nb\n"
             f"nb.configure(ClaudeAgentOptions(**{options!r}))\n%load_ext claude_sdkurl\nprint('ready')")  # fmt: skip
    notebook = {"cells": [{"cell_type": "code", "execution_count": None, "id": "setup", "metadata": {}, "outputs": [],
                           "source": setup}],
                "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
                "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    (home / "work" / "claude.ipynb").write_text(json.dumps(notebook))
    server = JupyterLabServer(home / "work")
    try:
        server.start()
    except ServerUnavailable as e:
        pytest.fail(str(e))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def browser() -> Iterator[Any]:
    try:
        binary, driver_path = chromium()
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except (ServerUnavailable, ImportError) as e:
        pytest.fail(f"the browser stack is not usable: {e}")
    options = webdriver.ChromeOptions()
    options.binary_location = binary
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--window-size=1400,1100", "--disable-dev-shm-usage"):  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(driver_path), options=options)
    try:
        yield driver
    finally:
        driver.quit()


class Page(BrowserSteps):
    """The notebook as the person sees it."""

    def __init__(self, driver: Any) -> None:
        from selenium.webdriver.common.by import By

        super().__init__(driver, ARTIFACTS)
        self.by = By

    def cells(self) -> list[Any]:
        return list(self.d.find_elements(self.by.CSS_SELECTOR, ".jp-Notebook .jp-CodeCell"))

    def output(self, index: int) -> Any:
        return self.cells()[index].find_element(self.by.CSS_SELECTOR, ".jp-Cell-outputWrapper")

    def output_text(self, index: int) -> str:
        return str(self.output(index).text)

    def run_new_cell(self, source: str) -> int:
        """Type ``source`` into the empty cell at the end (edit mode after the last Shift+Enter) and run it."""
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.keys import Keys

        index = len(self.cells()) - 1
        editor = self.cells()[index].find_element(self.by.CSS_SELECTOR, ".cm-content")
        editor.click()
        lines = source.split("\n")
        keys: list[str] = []
        for i, line in enumerate(lines):
            keys.append(line)
            if i < len(lines) - 1:
                keys.append(Keys.ENTER)
        editor.send_keys(*keys)
        ActionChains(self.d).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
        return index

    def click_button(self, index: int, label: str, prefix: bool = False) -> None:
        def fits(text: str) -> bool:
            return text.startswith(label) if prefix else text == label

        button = self.wait(lambda: next((b for b in self.output(index).find_elements(self.by.CSS_SELECTOR, "button")
                                         if fits(b.text.strip()) and b.is_enabled()), None), 30, f"a {label!r} button")  # fmt: skip
        button.click()

    def running(self, index: int) -> bool:
        """Whether the cell's prompt shows it running (``[*]``)."""
        return "[*]" in str(self.cells()[index].find_element(self.by.CSS_SELECTOR, ".jp-InputPrompt").text)


@pytest.mark.timeout(900)  # JupyterLab's start and the walk: 300 s together under load (154 s + 145 s)
def test_a_person_in_jupyterlab(lab: JupyterLabServer, browser: Any, api: MockMessagesAPI, home: Path) -> None:
    api.responder = answer
    page = Page(browser)
    browser.get(f"{lab.url}/lab/tree/claude.ipynb?token={lab.token}")
    page.wait(lambda: page.cells() and page.cells()[0].find_element(page.by.CSS_SELECTOR, ".cm-content").is_displayed(), 90, "the notebook")
    page.wait(lambda: "Idle" in browser.find_element(page.by.CSS_SELECTOR, ".jp-StatusBar-Widget").text, 90, "the kernel, idle")
    for no in browser.find_elements(page.by.XPATH, "//button[normalize-space()='No']"):  # the news question
        no.click()
    page.shot("opened")
    page.cells()[0].find_element(page.by.CSS_SELECTOR, ".cm-content").click()
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(browser).key_down(Keys.SHIFT).send_keys(Keys.ENTER).key_up(Keys.SHIFT).perform()
    page.wait(lambda: "ready" in page.output_text(0), 90, "the setup cell's output")
    page.wait(lambda: len(page.cells()) == 2, 10, "a new cell below")

    # 1. The answer streams in as rendered Markdown.
    cell = page.run_new_cell("%%claude\nSay hi")
    page.wait(lambda: "bold world" in page.output_text(cell) and "second item" not in page.output_text(cell), 30, "part of the answer")
    page.shot("streaming")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the turn's footer")
    out = page.output(cell)
    assert [e.text for e in out.find_elements(page.by.CSS_SELECTOR, ".jp-RenderedMarkdown strong")][:1] == ["bold world"]
    assert [e.text for e in out.find_elements(page.by.CSS_SELECTOR, ".jp-RenderedMarkdown li")] == ["first item", "second item"]
    assert out.find_elements(page.by.CSS_SELECTOR, ".jp-RenderedMarkdown table")
    assert "**" not in page.output_text(cell) and "|---|" not in page.output_text(cell)  # rendered, not source
    page.shot("answered")

    # 1b. Money is money, LaTeX is math, the model's line breaks stay.
    cell = page.run_new_cell("%%claude\nprices please")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the prices answer")
    page.wait(lambda: page.output(cell).find_elements(page.by.CSS_SELECTOR, "mjx-container"), 15, "MathJax typesetting the LaTeX")
    out = page.output(cell)
    plans = out.find_element(page.by.XPATH, ".//p[contains(., 'Plans:')]")
    assert "$5 a month and $50 a year" in plans.text
    assert not plans.find_elements(page.by.CSS_SELECTOR, "mjx-container, em"), plans.get_attribute("innerHTML")
    cells = [td.text for td in out.find_elements(page.by.CSS_SELECTOR, "td")]
    assert "$20" in cells, cells
    euler = out.find_element(page.by.XPATH, ".//p[contains(., 'Euler')]")
    assert len(euler.find_elements(page.by.CSS_SELECTOR, "mjx-container")) == 2  # inline and display math
    assert "\\" not in plans.text and "\\" not in euler.text.replace("\\pi", "")
    pond = out.find_element(page.by.XPATH, ".//p[contains(., 'silent pond')]")
    assert len(pond.find_elements(page.by.TAG_NAME, "br")) == 2, pond.get_attribute("innerHTML")
    page.shot("money-math-and-lines")

    # 1c. Before the first word: a waiting line at once, counting; thinking folded when it comes.
    cell = page.run_new_cell("%%claude\nthink first")
    ran = time.monotonic()
    page.wait(lambda: "waiting for Claude" in page.output_text(cell), 2, "the waiting line")
    print(f"cell run -> waiting line in the browser: {time.monotonic() - ran:.2f} s")
    assert time.monotonic() - ran < 0.5 + 0.5  # the line is the turn's first output (0.5 s asked; a margin for the browser)
    page.wait(lambda: "waiting for Claude… 1 s" in page.output_text(cell), 5, "the seconds counting")
    page.shot("waiting")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the answer after thinking")
    thought = page.output(cell).find_element(page.by.XPATH, ".//summary[contains(., 'Thought')]")
    assert "Weighing the options." not in page.output_text(cell)  # folded
    thought.click()
    page.wait(lambda: "Weighing the options." in page.output_text(cell), 5, "the thinking, unfolded")
    assert "…" not in page.output_text(cell)
    page.shot("thought")

    # 1d. Code blocks of an answer: "Copy" puts the code on the clipboard, "Insert as a new cell"
    #     makes a cell below with it (a shell block as a %%bash cell). The package's JupyterLab
    #     extension adds the buttons; nothing else of the page has them.
    browser.execute_cdp_cmd("Browser.grantPermissions", {"origin": lab.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    cell = page.run_new_cell("%%claude\nsome code please")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the answer with code")
    bars = page.wait(lambda: (lambda b: b if len(b) == 2 else None)(page.output(cell).find_elements(page.by.CSS_SELECTOR, ".claude-sdkurl-code-actions")),
                     10, "a Copy / Insert bar under each code block")  # fmt: skip
    assert [[b.text for b in bar.find_elements(page.by.TAG_NAME, "button")] for bar in bars] == [["Copy", "Insert as a new cell"]] * 2
    assert not page.output(0).find_elements(page.by.CSS_SELECTOR, ".claude-sdkurl-code-actions")  # only answers get them
    bars[1].find_element(page.by.XPATH, ".//button[.='Copy']").click()
    page.wait(lambda: bars[1].find_element(page.by.XPATH, ".//button[1]").text == "Copied", 5, "the copy done")
    copied = browser.execute_async_script("navigator.clipboard.readText().then(arguments[0], e => arguments[0]('error: ' + e))")
    assert copied == "echo $HOME", copied
    count = len(page.cells())
    bars[0].find_element(page.by.XPATH, ".//button[.='Insert as a new cell']").click()
    page.wait(lambda: len(page.cells()) == count + 1, 5, "a new cell")
    inserted = page.cells()[cell + 1].find_element(page.by.CSS_SELECTOR, ".cm-content")
    assert inserted.text == "total = 6 * 7\nprint(total)", inserted.text
    bars[1].find_element(page.by.XPATH, ".//button[.='Insert as a new cell']").click()
    page.wait(lambda: len(page.cells()) == count + 2, 5, "a second new cell")
    # below the first, in the answer's order (it landed above it)
    assert [page.cells()[cell + i].find_element(page.by.CSS_SELECTOR, ".cm-content").text for i in (1, 2)] == [
        "total = 6 * 7\nprint(total)", "%%bash\necho $HOME"]
    page.shot("code-copied-and-inserted")
    page.cells()[-1].find_element(page.by.CSS_SELECTOR, ".cm-content").click()  # back to the empty cell at the end

    # 2. Allow: the command runs, its result comes back to the model and into the page.
    cell = page.run_new_cell("%%claude\nmake allowed.txt")
    page.wait(lambda: "Claude asks to use Bash" in page.output_text(cell), 30, "the approval")
    card = page.output(cell).find_element(page.by.CSS_SELECTOR, ".widget-html")
    assert "Create the empty file allowed.txt" in card.text  # what the model says the call is for
    assert [e.text for e in card.find_elements(page.by.TAG_NAME, "pre")] == ["touch allowed.txt"]  # the command, as code
    assert "Bash touch allowed.txt" not in card.text  # the folded call above has the one-line summary; the card, the code
    page.shot("asked")
    page.click_button(cell, "Allow")
    page.wait(lambda: "tool said" in page.output_text(cell) and "this turn" in page.output_text(cell), 30, "the tool's result")
    assert "✔ Allowed: Bash touch allowed.txt" in page.output_text(cell) and (home / "work" / "allowed.txt").exists()
    assert not page.output(cell).find_elements(page.by.CSS_SELECTOR, ".jupyter-widgets, button")  # a line, not a widget
    tool = page.output(cell).find_element(page.by.XPATH, ".//summary[contains(., 'Bash touch allowed.txt')]")
    tool.click()  # open the folded call: its input and output
    page.wait(lambda: "(Bash completed with no output)" in page.output_text(cell), 5, "the tool's output, unfolded")
    page.shot("allowed")

    # 3. Deny: never runs; the model hears why.
    cell = page.run_new_cell("%%claude\nmake denied.txt")
    page.click_button(cell, "Deny")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the turn's end after a denial")
    assert "Denied" in page.output_text(cell) and "denied this in the notebook" in page.output_text(cell)
    assert not (home / "work" / "denied.txt").exists()
    page.shot("denied")

    # 4. The stop button mid-stream: stopped within a second, partial answer kept, no CLI left.
    cell = page.run_new_cell("%%claude\nTell me an endless story")
    page.wait(lambda: "Paragraph 2:" in page.output_text(cell), 30, "the story streaming")
    page.shot("before-stop")
    stop = browser.find_element(page.by.CSS_SELECTOR, "[data-command='notebook:interrupt-kernel']")
    pressed = time.monotonic()
    stop.click()
    page.wait(lambda: "Stopped" in page.output_text(cell), 5, "the stop")
    assert time.monotonic() - pressed < 2.0
    page.wait(lambda: "Idle" in browser.find_element(page.by.CSS_SELECTOR, ".jp-StatusBar-Widget").text, 5, "the kernel, idle again")
    idle_after = time.monotonic() - pressed
    print(f"stop pressed -> kernel idle in the browser: {idle_after:.2f} s")
    assert idle_after < 3.0
    # one quiet line: no error output, no traceback (a re-raised cancel printed 30 lines)
    assert not page.output(cell).find_elements(page.by.CSS_SELECTOR, "[data-mime-type='application/vnd.jupyter.stderr']")
    assert "Traceback" not in page.output_text(cell) and "CancelledError" not in page.output_text(cell)
    assert "Paragraph 1:" in page.output_text(cell) and "Paragraph 40:" not in page.output_text(cell)
    page.wait(lambda: not clis_with(home), 3, "no CLI left after the stop")
    footer = [line for line in page.output_text(cell).splitlines() if "this turn" in line]
    assert all("⚠" not in f and "error_during_execution" not in f and " 0 in / 0 out" not in f for f in footer), footer
    page.shot("stopped")

    # 5. The next cell goes on with the conversation.
    cell = page.run_new_cell("%%claude\nSay hi again")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the next turn")
    assert "Tell me an endless story" in str(api.message_requests()[-1].messages())
    page.shot("went-on")

    # 5b. A stopped batch: one line of progress and one line of error, no traceback.
    before = set(clis_with(home))  # the conversation's own CLI stays
    cell = page.run_new_cell("from claude_sdkurl.batch import run_batch\n"
                             "res = run_batch(['quick 1', 'endless 2', 'endless 3'], nb.agent().options, max_concurrency=3, progress=True)")  # fmt: skip
    page.wait(lambda: "1/3" in page.output_text(cell) and "2 running" in page.output_text(cell), 60, "one item done, two running")
    browser.find_element(page.by.CSS_SELECTOR, "[data-command='notebook:interrupt-kernel']").click()
    page.wait(lambda: "BatchStopped" in page.output_text(cell), 10, "the batch stopped")
    shown = page.output_text(cell)
    assert "stopped after" in shown and "1 done, 2 interrupted" in shown and "failed" not in shown, shown
    errors = page.output(cell).find_elements(page.by.CSS_SELECTOR, "[data-mime-type='application/vnd.jupyter.stderr']")
    assert [e.text.strip().splitlines() for e in errors] == [["BatchStopped: run_batch stopped: 1 done, 2 interrupted; the interrupted ones "
                                                              "are marked fault='stopped' in this exception's .result (pass it as resume= to go on)"]]  # fmt: skip
    page.wait(lambda: set(clis_with(home)) <= before, 5, "no CLI of the batch left after its stop")
    page.shot("batch-stopped")

    # 7. What a newcomer following the guide runs into (issue 48's items 1-6), each as a person does it.
    # 7a. bypassPermissions on the running conversation: a new CLI in that mode, nothing asked,
    #     said once in the notebook's words (a raw ControlRequestError before).
    cell = page.run_new_cell("%%claude --permission-mode bypassPermissions\nmake bypassed.txt")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the bypassed turn")
    assert (home / "work" / "bypassed.txt").exists() and "ControlRequestError" not in page.output_text(cell)
    assert "Every tool runs without asking" in page.output_text(cell) and not page.output(cell).find_elements(page.by.CSS_SELECTOR, "button")
    page.shot("7a-bypass")
    # 7b. The guide's rule as written, unquoted: one rule, no usage error.
    cell = page.run_new_cell("%%claude --allowed-tools Read,Bash(touch *)\nmake ruled.txt")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the ruled turn")
    assert (home / "work" / "ruled.txt").exists() and "unrecognized" not in page.output_text(cell)
    page.shot("7b-rule-as-written")
    # 7c. $var on the magic line, as every IPython magic expands it.
    cell = page.run_new_cell("import os\nsub = os.path.abspath('sub')\nos.makedirs(sub, exist_ok=True)")
    cell = page.run_new_cell("%%claude --allowed-tools Bash --cwd $sub\nmake dollar.txt")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the turn in $sub")
    assert (home / "work" / "sub" / "dollar.txt").exists() and "does not exist" not in page.output_text(cell)
    page.shot("7c-dollar-var")
    # 7d. A background turn's Allow while another cell sleeps in plain code: acted on at once.
    cell = page.run_new_cell("%%claude --bg\nmake bg.txt")
    page.wait(lambda: "Claude asks to use Bash" in page.output_text(cell), 30, "the background turn's card")
    sleeper = page.run_new_cell("import time\ntime.sleep(8)\nprint('slept')")
    page.wait(lambda: page.running(sleeper), 5, "the sleeping cell running")
    time.sleep(0.7)
    clicked = time.monotonic()
    page.click_button(cell, "Allow")
    page.wait(lambda: (home / "work" / "bg.txt").exists(), 5, "the allowed call run during the sleep")
    print(f"click during a sleeping cell -> call run: {time.monotonic() - clicked:.2f} s")
    assert page.running(sleeper) and "slept" not in page.output_text(sleeper)
    time.sleep(0.5)  # (the click's own status messages, had there been any, are in by now)
    assert "Busy" in browser.find_element(page.by.CSS_SELECTOR, ".jp-StatusBar-Widget").text  # not "Idle" beside a running cell
    page.shot("7d-background-click-during-sleep")
    page.wait(lambda: "slept" in page.output_text(sleeper) and "this turn" in page.output_text(cell), 30, "both ended")
    # 7e. "Always allow" holds for this conversation only: a --new one asks again.
    cell = page.run_new_cell("%%claude\nmake always.txt")
    page.click_button(cell, "Always allow", prefix=True)
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the always-allowed turn")
    assert "Always allowed" in page.output_text(cell) and (home / "work" / "always.txt").exists()
    (home / "work" / "always.txt").unlink()
    cell = page.run_new_cell("%%claude --new\nmake always.txt")
    page.wait(lambda: "Claude asks to use Bash" in page.output_text(cell), 30, "asked again in a new conversation")
    page.shot("7e-asked-again-after-new")
    page.click_button(cell, "Deny")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the denied turn")
    assert not (home / "work" / "always.txt").exists()
    # 7f. %autoawait off: the card's buttons work (they looked live and did nothing).
    page.run_new_cell("%autoawait off")
    cell = page.run_new_cell("%%claude\nmake plain.txt")
    page.click_button(cell, "Allow")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the plain-waiting cell's end after Allow")
    assert (home / "work" / "plain.txt").exists() and "Allowed" in page.output_text(cell)
    page.shot("7f-autoawait-off")
    page.run_new_cell("%autoawait on")

    # 9. The relay's page beside the notebook (a /ws frontend here, as the page writes the same
    #    lines): a message sent into the notebook's conversation is answered apart, and the next
    #    cell shows its own answer (it showed the page's, one turn behind for good); the page's
    #    Interrupt stops a cell as the stop button does (it ended as an error).
    import websockets.sync.client

    cell = page.run_new_cell("from claude_sdkurl import relay as _relay\n"
                             "_r = _relay.serve(port=0, steer=True, announce=False)\nprint(_r.port, _r.token)")  # fmt: skip
    page.wait(lambda: len(page.output_text(cell).split()) == 2, 30, "the relay's port and token")
    port, token = page.output_text(cell).split()
    cell = page.run_new_cell("%%claude --new\necho: first")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the first turn with the relay watching")
    with websockets.sync.client.connect(f"ws://127.0.0.1:{port}/ws?token={token}", open_timeout=10) as ws:
        ws.send(json.dumps({"type": "user", "message": {"role": "user", "content": "echo: from the page"}, "parent_tool_use_id": None}))
        deadline = time.monotonic() + 60
        while json.loads(ws.recv(timeout=max(0.1, deadline - time.monotonic()))).get("result") != "answer to: from the page":
            pass
    cell = page.run_new_cell("%%claude\necho: what now")
    page.wait(lambda: "this turn" in page.output_text(cell), 30, "the cell after the page's message")
    shown = page.output_text(cell)
    assert "outside this notebook" in shown and "answer to: what now" in shown and "answer to: from the page" not in shown  # folded
    page.shot("9a-a-message-from-the-page-apart")
    cell = page.run_new_cell("print(repr(_claude.text))")
    page.wait(lambda: "answer to" in page.output_text(cell), 30, "_claude's text")
    assert page.output_text(cell).strip() == repr("answer to: what now")
    cell = page.run_new_cell("%%claude\nTell me an endless story")
    page.wait(lambda: "Paragraph 2:" in page.output_text(cell), 30, "the story streaming")
    with websockets.sync.client.connect(f"ws://127.0.0.1:{port}/ws?token={token}", open_timeout=10) as ws:
        ws.send(json.dumps({"type": "control_request", "request_id": "page-stop", "request": {"subtype": "interrupt"}}))
        page.wait(lambda: "Stopped from the relay's page" in page.output_text(cell), 15, "the page's interrupt as a stop")
    shown = page.output_text(cell)
    assert "error_during_execution" not in shown and "⚠" not in shown
    page.shot("9b-interrupted-from-the-page")
    page.run_new_cell("_r.close()")

    # 8. Restarting the kernel mid-turn (how most people end a runaway cell): the cut answer ends
    #    with its "stopped" line, in the cell and in the saved file. The kernel sends it, but
    #    JupyterLab has dropped the cell's request by then; the package's extension writes it.
    cell = page.run_new_cell("%%claude\nTell me an endless story")
    page.wait(lambda: "Paragraph 2:" in page.output_text(cell), 30, "the story streaming")
    browser.find_element(page.by.CSS_SELECTOR, "[data-command='notebook:restart-kernel']").click()
    confirm = page.wait(lambda: next((b for b in browser.find_elements(page.by.CSS_SELECTOR, ".jp-Dialog button")
                                      if b.text.strip() == "Restart"), None), 10, "the restart question")  # fmt: skip
    confirm.click()
    page.wait(lambda: "Stopped: the kernel restarted" in page.output_text(cell), 10, "the stopped line after the restart")
    assert page.output_text(cell).count("Stopped: the kernel restarted") == 1 and "%%claude --continue" in page.output_text(cell)
    page.wait(lambda: not clis_with(home), 10, "no CLI left after the restart")
    page.wait(lambda: "Idle" in browser.find_element(page.by.CSS_SELECTOR, ".jp-StatusBar-Widget").text, 60, "the new kernel, idle")
    page.shot("8-restarted-mid-turn")

    # 6. Saved, then opened again in a new JupyterLab page: the decisions read as plain lines,
    #    no widget is left to restore ("Error displaying widget: model not found" before).
    ActionChains(browser).key_down(Keys.CONTROL).send_keys("s").key_up(Keys.CONTROL).perform()
    saved = home / "work" / "claude.ipynb"
    page.wait(lambda: "Denied:" in saved.read_text(), 15, "the notebook saved")
    outputs = [o for c in json.loads(saved.read_text())["cells"] for o in c.get("outputs", [])]
    assert not [o for o in outputs if "application/vnd.jupyter.widget-view+json" in o.get("data", {})]
    assert any("✔ **Allowed:** `Bash touch allowed.txt`" in "".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    assert any("Stopped: the kernel restarted" in "".join(o.get("data", {}).get("text/markdown", "")) for o in outputs)
    browser.get(f"{lab.url}/lab/tree/claude.ipynb?token={lab.token}")
    # both decisions rendered (under two CPU burners the page was read once the first was, before
    # the second cell's output was drawn)
    page.wait(lambda: all(line in browser.find_element(page.by.CSS_SELECTOR, ".jp-Notebook").text
                          for line in ("Allowed: Bash touch allowed.txt", "Denied: Bash touch denied.txt")), 60,
              "the saved decisions, reopened")  # fmt: skip
    shown = browser.find_element(page.by.CSS_SELECTOR, ".jp-Notebook").text
    assert "Denied: Bash touch denied.txt" in shown
    assert "Error displaying widget" not in shown and "model not found" not in shown
    line = browser.find_element(page.by.XPATH, "//p[contains(., 'Allowed:')]")
    browser.execute_script("arguments[0].scrollIntoView({block: 'center'})", line)
    page.shot("reopened")
