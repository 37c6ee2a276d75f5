"""``%%claude`` in a real Jupyter kernel (as a frontend drives it), the real CLI, the mock model.

Widget clicks are sent as the browser sends them (a comm message on the shell channel), the
stop button as JupyterLab's (the kernel manager's interrupt). The browser itself: test_notebook_browser.
"""

from __future__ import annotations

import base64
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from typing import Any
from pathlib import Path

import pytest

from claude_sdkurl.testing import MockMessagesAPI, Reply
from claude_sdkurl.testing.mock_api import RecordedRequest, text, tool_use
from tests.kernel import VIEW, Kernel

pytestmark = [pytest.mark.realcli, pytest.mark.foreign_fds]

STORY = "\n\n".join(f"Paragraph {i}: " + "word " * 40 for i in range(12))  # ~2.6k characters


def clis_with(home: Path) -> list[int]:
    """Live processes started with ``home`` as HOME (the CLIs of this test; ours or orphaned)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                env = f.read()
            with open(f"/proc/{entry}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if f"HOME={home}".encode() in env.split(b"\0") and state != "Z":
            found.append(int(entry))
    return found


@pytest.fixture
def nb(cli_paths: dict[str, Path], api: MockMessagesAPI, home: Path, transport: str) -> Iterator[Kernel]:
    """A kernel with the extension loaded and every cell pointed at the real CLI and the mock."""
    from claude_sdkurl.testing import offline_env

    options = {"cli_path": str(cli_paths[transport]), "env": offline_env(api.url, home), "cwd": str(home / "work"),
               "transport": transport}  # fmt: skip
    with Kernel(cwd=str(home / "work")) as k:
        k.ok(f"from claude_sdkurl import ClaudeAgentOptions\nimport claude_sdkurl.notebook as _nb\n"
             f"_nb.configure(ClaudeAgentOptions(**{options!r}))\n%load_ext claude_sdkurl")  # fmt: skip
        yield k
        if k.km.is_alive():
            k.run("_nb.agent().close()", timeout=30)
    deadline = time.monotonic() + 10
    while clis_with(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert clis_with(home) == [], "a CLI outlived its kernel"


def script(api: MockMessagesAPI, answer: Callable[[RecordedRequest], Reply | str]) -> None:
    api.responder = answer


def run_touch(request: RecordedRequest) -> Reply:
    """The model: a prompt ``touch ...`` is run as that Bash command, then "did it"; any other
    prompt is answered "answer to: <prompt>"."""
    if request.tool_results():
        return text("did it")
    prompt = request.last_user_text()
    return tool_use("Bash", {"command": prompt}) if prompt.startswith("touch ") else text(f"answer to: {prompt}")


def requests_with(api: MockMessagesAPI, prompt: str) -> list[RecordedRequest]:
    """The model requests whose last user text is ``prompt`` (a turn's, not a side request's)."""
    return [r for r in api.message_requests() if r.last_user_text() == prompt]


@pytest.mark.parametrize("transport", ["stdio", "websocket"], indirect=True)
def test_cells_stream_markdown_and_go_on_with_one_conversation(nb: Kernel, api: MockMessagesAPI) -> None:
    api.enqueue(Reply([{"type": "text", "text": STORY}], chunk=40, delay=0.02))
    cell = nb.submit("%%claude\nTell me a long story")
    # The answer shows while it streams, not only at the end.
    nb.wait_for(lambda: "Paragraph 1:" in cell.text() and not cell.done.is_set(), 30, "text before the turn ends")
    assert cell.done.wait(60) and not cell.errors()
    shown = cell.text()
    for i in range(12):
        assert f"Paragraph {i}:" in shown
    assert "this turn" in shown and "this session" in shown and "out tokens" in shown
    # throttled: far fewer updates than the ~65 deltas
    assert nb.update_count < 60, nb.update_count
    assert shown.count("Paragraph 5:") == 1  # once: streamed, not shown again whole
    # each output's plain text is its own text (a notebook read in a terminal, a diff, nbconvert
    # to text), not "<IPython.core.display.Markdown object>"
    plain = [o["data"].get("text/plain", "") for o in cell.outputs if "text/markdown" in o.get("data", {})]
    assert plain and not [p for p in plain if "IPython.core.display" in p]
    assert any("Paragraph 5:" in p for p in plain)
    out = nb.ok("print(_claude.text == " + repr(STORY) + ", _claude.cost_usd > 0, _claude.result.subtype)")
    assert out.text().strip() == "True True success"

    script(api, lambda r: text(f"answer to: {r.last_user_text()}"))
    nb.ok("%%claude\nWhat did I ask for?")
    (last,) = requests_with(api, "What did I ask for?")
    assert "Tell me a long story" in str(last.messages()) and "Paragraph 11" in str(last.messages())
    # the second turn's own cost (a difference of the CLI's running totals) has no float noise
    cost = nb.ok("print(repr(_claude.cost_usd))").text().strip()
    assert float(cost) > 0 and len(cost) <= 12, cost

    nb.ok("%%claude --new\nHello again")
    (fresh,) = requests_with(api, "Hello again")
    assert "Tell me a long story" not in str(fresh.messages())

    line = nb.ok("%claude --model claude-sonnet-4-6 Say one line")
    (one,) = requests_with(api, "Say one line")
    assert "answer to: Say one line" in line.text() and one.body["model"] == "claude-sonnet-4-6"
    assert "`claude-sonnet-4-6`" in line.text()  # the footer names the model that answered ...
    footer = next(f for f in line.text().splitlines() if "this turn" in f)
    assert footer.count("`claude-") == 1, footer  # ... this turn's alone, not every model of the session (issue 60, item 5)
    assert "Hello again" in str(one.messages())  # the line magic went on with the conversation


@pytest.mark.parametrize("transport", ["stdio", "websocket"], indirect=True)
def test_approval_buttons_allow_deny_and_always(nb: Kernel, api: MockMessagesAPI, home: Path, transport: str) -> None:
    work = home / "work"

    def answer(request: RecordedRequest) -> Reply:
        results = request.tool_results()
        if results:
            content = results[-1].get("content")
            return text(f"tool said: {content}")
        name = request.last_user_text().split()[-1]
        return tool_use("Bash", {"command": f"touch {name}", "description": f"Create the empty file {name}"})

    script(api, answer)
    cell = nb.submit("%%claude\nmake a.txt")
    allow = nb.button("Allow")
    assert not cell.done.is_set()  # the cell waits, and the kernel still took the buttons
    card = str(nb.comms.values())
    # the card: the tool, what the model says the call is for, the whole command as code
    assert "Claude asks to use Bash" in card and "Create the empty file a.txt" in card and "<pre>touch a.txt</pre>" in card
    nb.click(allow)
    assert cell.done.wait(60) and not cell.errors()
    assert (work / "a.txt").exists()
    # the card is replaced by a line saying what was decided, its widgets closed: the saved
    # notebook holds Markdown only, nothing to restore
    assert "✔ **Allowed:** `Bash touch a.txt`" in cell.text()
    assert not [o for o in cell.outputs if VIEW in o.get("data", {})]
    assert nb.widgets(lambda s: "Claude asks" in str(s.get("value", ""))) == []

    cell = nb.submit("%%claude\nmake b.txt")
    nb.click(nb.button("Deny"))
    assert cell.done.wait(60) and not cell.errors()
    assert not (work / "b.txt").exists()
    assert "✘ **Denied:**" in cell.text() and not [o for o in cell.outputs if VIEW in o.get("data", {})]
    denied = api.message_requests()[-1].tool_results()[-1]
    assert denied.get("is_error") and "denied this in the notebook" in str(denied["content"])

    if transport == "websocket":  # 2.1.120 suggests no rule for a call: no "Always allow" offered
        cell = nb.submit("%%claude\nmake c.txt")
        nb.click(nb.button("Allow"))
        assert cell.done.wait(60) and (work / "c.txt").exists()
        assert nb.widgets(lambda s: str(s.get("description", "")).startswith("Always")) == []
        return
    # "Always allow" adds the rule the CLI suggests for that call, and says so on the button:
    # the same command runs unasked, another command of the same tool asks again
    cell = nb.submit("%%claude\nmake c.txt")
    nb.click(nb.button("Always allow Bash(touch c.txt)"))
    assert cell.done.wait(60) and (work / "c.txt").exists()
    (work / "c.txt").unlink()
    cell = nb.ok("%%claude\nmake c.txt")  # no button this time
    assert (work / "c.txt").exists()
    assert nb.widgets(lambda s: s.get("description") == "Allow" and not s.get("disabled")) == []
    cell = nb.submit("%%claude\nmake d.txt")
    nb.click(nb.button("Deny"))  # asked again: Bash as a whole was not allowed
    assert cell.done.wait(60) and not (work / "d.txt").exists()
    # a cell that changes the flags gets a new CLI of the conversation: the rule goes with it,
    # and only it
    (work / "c.txt").unlink()
    nb.ok("%%claude --max-budget-usd 5\nmake c.txt")
    assert (work / "c.txt").exists()
    cell = nb.submit("%%claude --max-budget-usd 5\nmake e.txt")
    nb.click(nb.button("Deny"))
    assert cell.done.wait(60) and not (work / "e.txt").exists()
    # the rule was given for that conversation: a --new one asks again (it ran unasked there)
    (work / "c.txt").unlink()
    cell = nb.submit("%%claude --new\nmake c.txt")
    nb.click(nb.button("Deny"))
    assert cell.done.wait(60) and not (work / "c.txt").exists()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)  # 2.1.120 suggests no rule: no "Always allow"
@pytest.mark.parametrize("flag", ["--continue", "--resume"])
def test_always_allow_does_not_follow_a_cell_into_a_resumed_or_continued_conversation(nb: Kernel, api: MockMessagesAPI,
                                                                                     home: Path, flag: str) -> None:  # fmt: skip
    """Issue 57, item 14: "Always allow" is given for the conversation it was asked in: after it,
    a cell with ``--resume <another session>`` or ``--continue`` asks again (--new is tested above)."""
    work = home / "work"
    script(api, run_touch)
    nb.ok("%%claude\nhello")
    other = nb.ok("print(_claude.session_id)").text().strip()  # a session to resume later
    cell = nb.submit("%%claude --new\ntouch c.txt")
    nb.click(nb.button("Always allow Bash(touch c.txt)"))
    assert cell.done.wait(60) and (work / "c.txt").exists()
    (work / "c.txt").unlink()
    nb.ok("%%claude\ntouch c.txt")  # the rule holds in its own conversation: no button
    assert (work / "c.txt").exists()
    (work / "c.txt").unlink()
    line = f"%%claude --resume {other}" if flag == "--resume" else "%%claude --continue"
    cell = nb.submit(f"{line}\ntouch c.txt")
    nb.click(nb.button("Deny"))  # asked again
    assert cell.done.wait(60) and not (work / "c.txt").exists()


def test_a_cell_without_permission_flags_is_back_to_the_base_rules(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    work = home / "work"
    api.responder = lambda r: text("done") if r.tool_results() else tool_use("Bash", {"command": f"touch {r.last_user_text().split()[-1]}"})
    nb.ok("%%claude --allowed-tools Bash\nmake a.txt")  # allowed by the flag: no button
    assert (work / "a.txt").exists()
    cell = nb.submit("%%claude\nmake b.txt")  # the flag dropped: asked again
    nb.click(nb.button("Deny"))
    assert cell.done.wait(60) and not (work / "b.txt").exists()
    nb.ok("%%claude --permission-mode acceptEdits\nmake c.txt")  # the mode allows touch: no button
    assert (work / "c.txt").exists()
    cell = nb.submit("%%claude\nmake d.txt")  # the mode dropped: back to default, asked
    nb.click(nb.button("Deny"))
    assert cell.done.wait(60) and not (work / "d.txt").exists()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_with_a_dataframe_and_a_figure(nb: Kernel, api: MockMessagesAPI) -> None:
    nb.ok("import pandas as pd, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
          "df = pd.DataFrame({'city': ['Oslo', 'Lima', 'Pune'] * 10, 'temp': [float(i) for i in range(30)]})\n"
          "fig, ax = plt.subplots(figsize=(2, 1.5)); ax.plot([1, 3, 2])\n"
          "import hashlib; from claude_sdkurl.notebook import figure_png\n"
          "print(hashlib.sha256(figure_png(fig)).hexdigest())")  # fmt: skip
    digest = nb.ok("print(hashlib.sha256(figure_png(fig)).hexdigest())").text().strip()
    api.enqueue(text("A line going up then down."))
    nb.ok("%%claude --with df fig\nWhat do you see?")
    content = api.message_requests()[-1].last_user_content()
    images = [b for b in content if b.get("type") == "image"]
    assert len(images) == 1 and images[0]["source"]["media_type"] == "image/png"
    png = base64.b64decode(images[0]["source"]["data"])
    assert png.startswith(b"\x89PNG") and hashlib.sha256(png).hexdigest() == digest  # byte for byte
    words = " ".join(b.get("text", "") for b in content)
    assert "30 rows × 2 columns" in words and "- city (" in words and "- temp (float64)" in words
    assert "0,Oslo,0.0" in words and "What do you see?" in words


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_help_shows_the_flags_and_starts_nothing(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    for cell in ("%%claude --help\nwhatever", "%claude -h"):
        shown = nb.ok(cell).text()
        assert "--kernel-tools" in shown and "--permission-mode" in shown and "show this help" in shown
    assert api.message_requests() == [] and clis_with(home) == []


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_bad_flags_and_variables_start_nothing(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    nb.ok("class Shy:\n    def __repr__(self): raise RuntimeError('no looking')\nshy = Shy()")
    cases = {
        "%%claude --modle x\nhi": "unrecognized arguments: --modle",  # (x may open the prompt: the line can)
        "%%claude --with nope\nhi": "no variable named 'nope' in the notebook",
        "%%claude --with shy\nhi": "--with shy: it cannot be shown (RuntimeError: no looking)",
        "%%claude\n   ": "nothing to ask",
        "%%claude --permission-mode yolo\nhi": "invalid choice: 'yolo'",
        "%claude": "nothing to ask",
    }
    for code, message in cases.items():
        cell = nb.run(code)
        assert message in cell.text(), (code, cell.text())
        assert "Traceback" not in str(cell.outputs)  # a usage message, not a crash
    assert api.message_requests() == [] and clis_with(home) == []


@pytest.mark.parametrize("transport", ["stdio", "websocket"], indirect=True)
def test_stop_button_interrupts_and_the_next_cell_goes_on(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    api.enqueue(Reply([{"type": "text", "text": STORY * 4}], chunk=20, delay=0.05))
    cell = nb.submit("%%claude\nTell me an endless story")
    queued = nb.submit("print('ran after the stop')")  # as "Run all" sends the next cell
    nb.wait_for(lambda: "Paragraph 2:" in cell.text(), 30, "streaming")
    assert clis_with(home)
    pressed = time.monotonic()
    nb.interrupt()
    assert cell.done.wait(10)
    assert cell.ended is not None and cell.ended - pressed < 1.0, cell.ended - pressed
    shown = cell.text()
    assert "Paragraph 1:" in shown and "Paragraph 40" not in shown and "■ Stopped" in shown
    # the interrupted turn's result (when it came before the CLI was stopped) is not shown as
    # an error, and its missing usage is not shown as zero tokens
    footer = [line for line in shown.splitlines() if "this turn" in line]
    assert all("⚠" not in f and "error_during_execution" not in f and " 0 in / 0 out" not in f for f in footer), footer
    nb.wait_for(lambda: not clis_with(home), 2, "no CLI left")
    assert time.monotonic() - pressed < 1.0  # interrupt and stop, both within a second
    # one quiet note, no traceback (a re-raised cancel printed 30 lines of asyncio internals),
    # and the cell queued behind it ("Run all") does not run
    assert cell.errors() == [] and "Traceback" not in shown and "CancelledError" not in shown
    nb.wait_for(lambda: queued.status is not None, 10, "the queued cell's reply")
    assert queued.status == "aborted" and queued.text() == "", (queued.status, queued.text())

    api.enqueue(text("Where were we? The story."))
    nb.ok("%%claude\nGo on")
    sent = str(api.message_requests()[-1].messages())
    assert "Tell me an endless story" in sent and "Go on" in sent  # the same conversation, from its transcript


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_background_turn_leaves_the_kernel_free(nb: Kernel, api: MockMessagesAPI) -> None:
    api.enqueue(Reply([{"type": "text", "text": STORY}], chunk=40, delay=0.03))
    t0 = time.monotonic()
    cell = nb.ok("%%claude --bg\nA story, in the background")
    assert time.monotonic() - t0 < 2
    assert nb.ok("print(6 * 7)").text().strip() == "42"  # another cell ran meanwhile
    nb.button("Stop")
    nb.wait_for(lambda: "this turn" in cell.text(), 30, "the background turn's footer")
    assert "Paragraph 11:" in cell.text()  # it went into its own cell
    assert nb.ok("print(_claude.result.subtype)").text().strip() == "success"


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_kernel_tools_read_and_run_code_after_approval(nb: Kernel, api: MockMessagesAPI) -> None:
    nb.ok("import pandas as pd\nsales = pd.DataFrame({'q': [1, 2, 3]})\ncount = 41")
    steps = iter([tool_use("mcp__kernel__list_variables", {}), tool_use("mcp__kernel__read_variable", {"name": "sales"}),
                  text("read them")])  # fmt: skip
    script(api, lambda r: next(steps))
    asked = nb.ok("%%claude --kernel-tools\nWhat is in my kernel?")
    assert "CanUseToolShadowedWarning" not in asked.text()  # no warning about the notebook's own rules
    results = [str(r.tool_results()) for r in api.message_requests() if r.tool_results()]
    assert "count: int = 41" in results[0] and "sales: DataFrame 3×1" in results[0]
    assert "3 rows × 1 columns" in results[1] and "- q (int64)" in results[1]

    steps = iter([tool_use("mcp__kernel__run_code", {"code": "count = count + 1\ncount * 2"}), text("ran it")])
    script(api, lambda r: next(steps))
    cell = nb.submit("%%claude --allow-kernel-exec\nAdd one to count")
    allow = nb.button("Allow")  # running code in the kernel is asked every time
    card = next(str(s.get("value")) for s in nb.comms.values() if "Claude asks" in str(s.get("value", "")))
    assert "Claude asks to use run_code (kernel)" in card and "<pre>count = count + 1\ncount * 2</pre>" in card  # lines kept
    nb.click(allow)
    assert cell.done.wait(60) and not cell.errors()
    assert "CanUseToolShadowedWarning" not in cell.text()
    # outside the card too, the call reads as the card does: its name and its code as code
    assert "mcp__kernel__run_code" not in cell.text() and "run_code (kernel)" in cell.text()
    assert "```python\ncount = count + 1\ncount * 2\n```" in cell.text()
    assert "84" in str(api.message_requests()[-1].tool_results())
    assert nb.ok("print(count)").text().strip() == "42"

    # a rule that allows the tool does not skip the buttons, and there is no "Always allow"
    steps = iter([tool_use("mcp__kernel__run_code", {"code": "count = 0"}), text("tried")])
    script(api, lambda r: next(steps))
    cell = nb.submit("%%claude --allow-kernel-exec --allowed-tools mcp__kernel__run_code\nReset count")
    deny = nb.button("Deny")
    assert nb.widgets(lambda s: s.get("description") == "Always allow" and not s.get("disabled")) == []
    nb.click(deny)
    assert cell.done.wait(60) and not cell.errors()
    refused = api.message_requests()[-1].tool_results()[-1]
    assert refused.get("is_error") and "denied this in the notebook" in str(refused["content"])
    assert nb.ok("print(count)").text().strip() == "42"


@pytest.mark.parametrize("transport", ["stdio", "websocket"], indirect=True)
@pytest.mark.parametrize("how", ["shutdown", "kill"])
def test_shutting_the_kernel_down_mid_turn_stops_the_cli(nb: Kernel, api: MockMessagesAPI, home: Path, how: str) -> None:
    api.enqueue(Reply([{"type": "text", "text": STORY * 4}], chunk=20, delay=0.05))
    cell = nb.submit("%%claude\nA long one")
    nb.wait_for(lambda: "Paragraph 1:" in cell.text(), 30, "streaming")
    assert clis_with(home)
    # "Shut down" / "Restart" (a shutdown request), or a kernel that died or was killed
    nb.km.shutdown_kernel(now=how == "kill")
    deadline = time.monotonic() + 10
    while clis_with(home) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert clis_with(home) == []


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_stream_text_of_a_burst_is_whole_and_light(nb: Kernel, api: MockMessagesAPI) -> None:
    story = "".join(f"Line {i:05d} of the story.\n\n" if i % 3 == 2 else f"Line {i:05d} of the story. " for i in range(1000))
    api.enqueue(Reply([{"type": "text", "text": story}], chunk=10))
    nb.ok("from claude_sdkurl import query\nfrom claude_sdkurl.display import stream_text\n"
          "it = query('a long one', _nb.agent().options.__class__(**{**_nb.agent().options.__dict__, 'include_partial_messages': True}))\n"
          "first = next(it)\nimport time; time.sleep(3)")  # the answer queues up meanwhile: a burst  # fmt: skip
    before = nb.update_count
    cell = nb.ok("result = stream_text(it)\nresult")
    shown = "".join(o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {}) and "Line" in o["data"]["text/markdown"])
    assert shown.replace("\n", "") == story.replace("\n", "")  # whole, in order
    assert "rate exceeded" not in cell.text()
    assert "| cost (session so far) |" in cell.text()  # the result table came too
    assert nb.update_count - before < 300  # ~3,000 deltas


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_display_of_every_message_is_quiet(nb: Kernel, api: MockMessagesAPI) -> None:
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), text("first"), text("second"))
    cell = nb.ok("from claude_sdkurl import ClaudeSDKClient\nfrom IPython.display import display\nimport dataclasses\n"
                 "opts = dataclasses.replace(_nb.agent().options, include_partial_messages=True, allowed_tools=['Bash'])\n"
                 "with ClaudeSDKClient(opts) as c:\n"
                 "    for p in ['one', 'two']:\n"
                 "        c.query(p)\n"
                 "        for m in c.receive_response():\n"
                 "            display(m)\n"
                 "            if type(m).__name__ == 'AssistantMessage':\n"
                 "                for b in m.content:\n"
                 "                    display(b)\n")  # fmt: skip
    markdown = [o["data"]["text/markdown"] for o in cell.outputs if "text/markdown" in o.get("data", {})]
    assert not any(m.startswith("*stream:") for m in markdown)  # no line per delta
    assert sum(m.startswith("*session `") for m in markdown) == 1  # one init line for the session
    assert any(m.startswith("<details><summary>⚙ <code>Bash echo hi</code>") for m in markdown)  # a tool block
    assert all("text/html" not in o.get("data", {}) for o in cell.outputs)


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_stopping_run_batch_stops_its_clis(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    def answer(request: RecordedRequest) -> Reply:
        if "quick" in request.last_user_text():
            return text("quick answer")
        return Reply([{"type": "text", "text": STORY * 4}], chunk=10, delay=0.05)

    script(api, answer)
    cell = nb.submit("from claude_sdkurl.batch import run_batch\n"
                     "res = run_batch(['quick 1', 'slow 2', 'slow 3', 'quick 4', 'slow 5'], _nb.agent().options, "
                     "max_concurrency=5, progress=True)")  # fmt: skip
    nb.wait_for(lambda: "running" in cell.text(), 10, "a progress line before any item ended")
    nb.wait_for(lambda: "2/5" in cell.text() and len(clis_with(home)) == 3, 30, "the quick items done, three running")
    pressed = time.monotonic()
    nb.interrupt()
    assert cell.done.wait(10)
    assert cell.ended is not None and cell.ended - pressed < 3.0
    nb.wait_for(lambda: not clis_with(home), 2, "no CLI left")
    # one line for the stop, no traceback: the items that ended and those the stop cut short
    assert "stopped after" in cell.text() and "2 done, 3 interrupted" in cell.text() and "failed" not in cell.text()
    assert [e["traceback"] for e in cell.errors()] == [["BatchStopped: run_batch stopped: 2 done, 3 interrupted; the interrupted "
                                                        "ones are marked fault='stopped' in this exception's .result (pass it as "
                                                        "resume= to go on)"]]  # fmt: skip
    summary = nb.ok("import sys\nr = sys.last_value.result\nprint([(i.index, i.ok, i.fault) for i in r.items])").text()
    assert summary.strip() == "[(0, True, None), (1, False, 'stopped'), (2, False, 'stopped'), (3, True, None), (4, False, 'stopped')]"
    shown = nb.ok("r").text()  # the result as a notebook shows it
    assert shown.startswith("**2** done, **3** interrupted, **0** failed") and "■ interrupted" in shown


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_with_top_level_await_off_the_magic_waits_plainly(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    nb.ok("%autoawait off")
    api.enqueue(text("plain **wait**"))
    assert "plain **wait**" in nb.ok("%%claude\nhello").text()
    api.enqueue(Reply([{"type": "text", "text": STORY * 4}], chunk=20, delay=0.05))
    cell = nb.submit("%%claude\nA long one")
    queued = nb.submit("print('ran after the stop')")
    nb.wait_for(lambda: "Paragraph 1:" in cell.text(), 30, "streaming")
    pressed = time.monotonic()
    nb.interrupt()
    assert cell.done.wait(10) and cell.ended is not None and cell.ended - pressed < 1.5
    assert "■ Stopped" in cell.text() and cell.errors() == [] and "KeyboardInterrupt" not in cell.text()
    nb.wait_for(lambda: queued.status is not None, 10, "the queued cell's reply")
    assert queued.status == "aborted" and queued.text() == ""
    nb.wait_for(lambda: not clis_with(home), 2, "no CLI left")
    nb.ok("%unload_ext claude_sdkurl")
    assert "UsageError" in nb.run("%%claude\nhello").text()  # the magic is gone with the extension


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_each_flag_reaches_the_cli(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    other = home / "work" / "other"
    other.mkdir()

    script(api, run_touch)
    # --allowed-tools: no button
    nb.ok("%%claude --allowed-tools Bash\ntouch here.txt")
    assert (home / "work" / "here.txt").exists()
    # --permission-mode on the live CLI: plan mode refuses to run the tool (no button either)
    nb.ok("%%claude --allowed-tools Bash --permission-mode plan\ntouch planned.txt")
    assert not (home / "work" / "planned.txt").exists()
    first = nb.ok("print(_claude.session_id)").text().strip()
    # --max-budget-usd: a new CLI for the same conversation, stopped at the budget
    cell = nb.ok("%%claude --max-budget-usd 0.00001\nspend")
    assert "error_max_budget_usd" in cell.text()
    assert nb.ok("print(_claude.session_id)").text().strip() == first
    # --new, then --resume the first conversation by id, then --continue the latest one
    nb.ok("%%claude --new\nsomething else")
    nb.ok(f"%%claude --resume {first}\nback to the first")
    (back,) = requests_with(api, "back to the first")
    assert "touch here.txt" in str(back.messages()) and "something else" not in str(back.messages())
    nb.ok("%%claude --continue\nand on")
    (on,) = requests_with(api, "and on")
    assert "back to the first" in str(on.messages())
    # --cwd: the command runs there
    nb.ok(f"%%claude --new --allowed-tools Bash --cwd {other}\ntouch there.txt")
    assert (other / "there.txt").exists()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_an_approval_in_a_background_turn_while_other_cells_run(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    steps = iter([tool_use("Bash", {"command": "touch bg.txt"}), text("done in the background"), text("and the next one")])
    script(api, lambda r: next(steps))
    cell = nb.ok("%%claude --bg\nmake bg.txt")  # returns at once
    allow = nb.button("Allow")
    assert nb.ok("print(sum(range(10)))").text().strip() == "45"  # the kernel runs cells while the turn waits
    after = nb.submit("%%claude\nthe next one")  # waits for the background turn, without holding the kernel:
    time.sleep(0.5)
    nb.click(allow)  # its button still works
    nb.wait_for(lambda: "done in the background" in cell.text(), 30, "the background turn's answer")
    assert (home / "work" / "bg.txt").exists()
    assert after.done.wait(30) and "and the next one" in after.text()
    # a finished background turn leaves no Stop button (nor any widget) in its cell
    nb.wait_for(lambda: not [o for o in cell.outputs if VIEW in o.get("data", {})], 5, "the Stop button gone")
    assert nb.widgets(lambda s: s.get("description") == "Stop") == []


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_waiting_line_at_once_then_thinking_folded(nb: Kernel, api: MockMessagesAPI) -> None:
    """Before the first word (a cold CLI takes seconds, a thinking model more) the cell says what
    it is waiting for, with the seconds, from the moment the cell runs; thinking shows as a
    folded block when it arrives; the line is gone once the answer is there."""
    slow = Reply([{"type": "thinking", "thinking": "Let me weigh **both** options.", "signature": "s"},
                  {"type": "text", "text": "Take the second one."}],
                 on_start=lambda: time.sleep(2.5), delay=0.8)  # fmt: skip
    api.enqueue(slow)
    cell = nb.submit("%%claude\nWhich one?")
    nb.wait_for(lambda: "starting Claude Code…" in cell.text(), 0.5 + 0.5, "the starting line")  # within 0.5 s of the reply
    assert cell.ended is None and time.monotonic() - cell.started < 1.0
    nb.wait_for(lambda: "waiting for Claude… 1 s" in cell.text() or "waiting for Claude… 2 s" in cell.text(), 10,
                "the waiting line counting seconds")  # fmt: skip
    nb.wait_for(lambda: "thinking…" in cell.text() or "Thought" in cell.text(), 15, "thinking")
    assert cell.done.wait(30)
    shown = cell.text()
    assert "<details><summary>Thought" in shown and "Let me weigh **both** options." in shown
    assert shown.index("Let me weigh") < shown.index("Take the second one.")
    assert "…" not in shown  # every status line emptied at the end
    # a tool call's result sends the model a new request: a new waiting line below the call
    api.enqueue(tool_use("Bash", {"command": "echo hi"}), Reply([{"type": "text", "text": "done"}], on_start=lambda: time.sleep(2.0)))
    cell = nb.submit("%%claude --allowed-tools Bash\nRun it")
    nb.wait_for(lambda: "Bash echo hi" in cell.text() and "waiting for Claude…" in cell.text(), 20, "waiting after the tool")
    at = cell.text()
    assert at.index("Bash echo hi") < at.index("waiting for Claude…")
    assert cell.done.wait(30) and "…" not in cell.text() and "done" in cell.text()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_card_still_showing_when_the_cli_dies_is_closed_as_undecided(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """The CLI dies while a person has not decided: the card does not stay clickable (a click
    then would decide for a turn that is gone); it becomes the line saying nothing was decided."""
    import signal

    api.enqueue(tool_use("Bash", {"command": "touch never.txt"}))
    cell = nb.submit("%%claude\nmake never.txt")
    nb.button("Allow")  # the card is up
    (pid,) = [p for p in clis_with(home) if b"--output-format" in open(f"/proc/{p}/cmdline", "rb").read()]
    os.kill(pid, signal.SIGKILL)
    assert cell.done.wait(30)
    shown = cell.text()
    assert "■ **Not decided: the turn ended:** `Bash touch never.txt`" in shown and "ProcessError" in shown
    assert not [o for o in cell.outputs if VIEW in o.get("data", {})]
    assert nb.widgets(lambda s: s.get("description") == "Allow") == []
    assert not (home / "work" / "never.txt").exists() and clis_with(home) == []


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_the_guides_flags_as_written_and_variables_in_the_line(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """``--allowed-tools Read,Bash(touch *)`` as the guide writes it, unquoted, is one rule (it
    was a usage error, "unrecognized arguments: *)"); ``$var`` and ``{expr}`` on the magic line
    are expanded as IPython expands every magic's line (``--cwd $other`` was "Working directory
    does not exist: $other")."""
    other = home / "work" / "other"
    other.mkdir()

    script(api, run_touch)
    cell = nb.ok("%%claude --allowed-tools Read,Bash(touch *)\ntouch unquoted.txt")
    assert (home / "work" / "unquoted.txt").exists() and "unrecognized" not in cell.text()
    assert VIEW not in str(cell.outputs)  # allowed by the rule: no approval card
    nb.ok(f"other = {str(other)!r}\nfirst = _claude.session_id")
    cell = nb.ok("%%claude --new --allowed-tools Bash --cwd $other\ntouch dollar.txt")
    assert (other / "dollar.txt").exists()
    # the user's own rule skips the buttons: said once, in the notebook's words, not as the SDK's
    # warning (pink, with a file path and "can_use_tool")
    assert "`Bash` runs without asking (your `--allowed-tools`)" in cell.text()
    assert "CanUseToolShadowedWarning" not in cell.text() and "can_use_tool" not in cell.text()
    cell = nb.ok("%%claude --new --allowed-tools Bash --cwd {other}\ntouch braces.txt")
    assert (other / "braces.txt").exists() and "without asking" not in cell.text()
    nb.ok("%%claude --resume $first\nback to the first")
    (back,) = requests_with(api, "back to the first")
    assert "touch unquoted.txt" in str(back.messages()) and "touch braces.txt" not in str(back.messages())
    # a prompt begun on the %%claude line goes on in the cell (it was "unrecognized arguments")
    cell = nb.ok("%%claude --new explain this\nand that")
    assert requests_with(api, "explain this\n\nand that") and "unrecognized" not in cell.text()
    assert requests_with(api, "only the line") == [] and nb.ok("%%claude only the line\n")
    assert len(requests_with(api, "only the line")) == 1


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_cli_error_in_colour_is_shown_as_plain_text(nb: Kernel, tmp_path: Path) -> None:
    """A CLI that fails with a coloured error line (terminal escapes): the cell's Markdown note
    shows its words, not the escape codes (Markdown showed them as boxes). A stand-in CLI: it
    only has to fail so."""
    cli = tmp_path / "claude"
    cli.write_text("#!/bin/sh\n"
                   "case \"$1\" in --version) echo '2.1.330 (Claude Code)'; exit 0;; esac\n"
                   "printf '\\033[31mError:\\033[0m \\033[1mthe flag is refused\\033[0m\\n' >&2\n"
                   "exit 1\n")  # fmt: skip
    cli.chmod(0o755)
    nb.ok(f"_nb.configure(__import__('dataclasses').replace(_nb.agent().options, cli_path={str(cli)!r}))")
    cell = nb.run("%%claude\nhello", timeout=60)
    notes = "".join(str(o["data"]["text/markdown"]) for o in cell.outputs if "text/markdown" in o.get("data", {}))
    assert "ProcessError" in notes and "the flag is refused" in notes
    assert "\x1b" not in notes and "[31m" not in notes
    # said once: no pink copy of it on the cell's standard error (issue 60, item 8)
    assert [o for o in cell.outputs if o.get("output_type") == "stream" and "refused" in o.get("text", "")] == []


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_bypass_permissions_on_a_running_conversation(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """``--permission-mode bypassPermissions`` on a conversation whose CLI runs: a new CLI of the
    same conversation launched in that mode (the live one refused it: a raw ControlRequestError,
    "not launched with --dangerously-skip-permissions"); the next cell without it is back to
    asking. (As root, the CLI takes bypass only in a sandbox: IS_SANDBOX=1 here.)"""
    nb.ok("import dataclasses\n_o = _nb.agent().options\n"
          "_nb.configure(dataclasses.replace(_o, env={**_o.env, 'IS_SANDBOX': '1'}))")  # fmt: skip

    script(api, run_touch)
    nb.ok("%%claude\nremember the word kiwi")
    cell = nb.ok("%%claude --permission-mode bypassPermissions\ntouch bypassed.txt")
    assert (home / "work" / "bypassed.txt").exists() and "ControlRequestError" not in cell.text()
    assert not [o for o in cell.outputs if VIEW in o.get("data", {})]  # no card: nothing asked
    (bypassed,) = requests_with(api, "touch bypassed.txt")
    assert "remember the word kiwi" in str(bypassed.messages())  # the same conversation
    assert "`--permission-mode bypassPermissions`" in cell.text()  # said once, in the notebook's words
    cell = nb.submit("%%claude\ntouch asked.txt")
    nb.click(nb.button("Deny"))  # back to the base mode: asked
    assert cell.done.wait(60) and not (home / "work" / "asked.txt").exists()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_background_turns_buttons_act_while_another_cell_runs_plain_code(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """A ``--background`` turn's Allow and Stop while another cell sleeps in plain code: acted on
    at once, not when that cell ends (a click 0.7 s into a ``time.sleep(8)`` cell was acted on at
    8.2 s). The clicks are handled on a kernel subshell of the package's own."""
    steps = iter([tool_use("Bash", {"command": "touch early.txt"}), text("done early"), Reply([{"type": "text", "text": STORY * 8}], chunk=20, delay=0.05)])  # fmt: skip
    script(api, lambda r: next(steps))
    cell = nb.ok("%%claude --bg\nmake early.txt")
    allow = nb.button("Allow")
    sleeper = nb.submit("import time; time.sleep(8); print('slept')")
    nb.wait_for(lambda: sleeper.outputs == [] and time.monotonic() - sleeper.started > 0.7, 5, "the sleeping cell under way")
    nb.click(allow)
    nb.wait_for(lambda: (home / "work" / "early.txt").exists() and "done early" in cell.text(), 5, "the allowed call run during the sleep")
    assert not sleeper.done.is_set()  # acted on while the other cell still runs
    # and the kernel is not said to be idle meanwhile (a frontend shows the last status it got;
    # the subshell's "idle" after the click made JupyterLab show Idle beside a running cell)
    assert ("idle", "comm_msg") not in nb.statuses and nb.statuses[-1] == ("busy", "execute_request"), nb.statuses[-5:]
    assert sleeper.done.wait(30) and "slept" in sleeper.text()
    # Stop, too
    cell = nb.ok("%%claude --bg\nAn endless story")
    nb.wait_for(lambda: "Paragraph 1:" in cell.text(), 30, "the story streaming")
    stop = nb.button("Stop")
    sleeper = nb.submit("import time; time.sleep(8); print('slept')")
    time.sleep(0.7)
    nb.click(stop)
    nb.wait_for(lambda: "■ Stopped" in cell.text(), 5, "the background turn stopped during the sleep")
    assert not sleeper.done.is_set()
    assert sleeper.done.wait(30)


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_with_top_level_await_off_the_approval_buttons_work(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """``%autoawait off``: the cell waits in plain code, and its approval buttons work (they
    looked live and did nothing; the cell hung until Stop)."""
    nb.ok("%autoawait off")
    script(api, run_touch)
    cell = nb.submit("%%claude\ntouch plain.txt")
    nb.click(nb.button("Allow"))
    assert cell.done.wait(30), "the cell hung after Allow"
    assert (home / "work" / "plain.txt").exists() and "✔ **Allowed:** `Bash touch plain.txt`" in cell.text()
    cell = nb.submit("%%claude\ntouch refused.txt")
    nb.click(nb.button("Deny"))
    assert cell.done.wait(30) and not (home / "work" / "refused.txt").exists()
    # a kernel without subshells (ipykernel 6, say) could never take the click: the call is
    # denied at once with the reason in the cell, and the cell ends (it hung until Stop)
    nb.ok("from claude_sdkurl.notebook import _clicks\n_clicks._subshell[id(get_ipython().kernel)] = None")
    cell = nb.submit("%%claude\ntouch held.txt")
    assert cell.done.wait(30), "the cell hung"
    assert "**Denied, not asked:** `Bash touch held.txt`" in cell.text() and "`%autoawait on`" in cell.text()
    assert not (home / "work" / "held.txt").exists() and not [o for o in cell.outputs if VIEW in o.get("data", {})]
    (told,) = [r for r in api.message_requests() if r.tool_results()][-1:]
    assert "cannot take clicks" in str(told.tool_results()[-1].get("content"))
    # a background turn there says on its card that a click waits for a running cell
    nb.ok("%autoawait on")
    cell = nb.ok("%%claude --bg\ntouch later.txt")
    nb.button("Allow")
    assert "A click here is acted on when it ends" in str(nb.comms.values())
    nb.click(nb.button("Deny"))
    nb.wait_for(lambda: "this turn" in cell.text(), 30, "the background turn's end")


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_decision_line_stays_below_its_tool_call_and_no_output_is_left_empty(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """The card (and the "Denied" line that replaces it) below the tool call it decides, even when
    the cell's thread is slow to show the call (a loaded machine: here, held 1 s); and a turn
    leaves no empty output behind (saved files kept two per turn: the emptied status lines)."""
    nb.ok("from claude_sdkurl.notebook import _view\nimport time as _t\n_add = _view.TurnView.add\n"
          "def _slow(self, m):\n    if type(m).__name__ == 'AssistantMessage': _t.sleep(1.0)\n    return _add(self, m)\n"
          "_view.TurnView.add = _slow")  # fmt: skip
    script(api, run_touch)
    cell = nb.submit("%%claude\ntouch no.txt")
    nb.click(nb.button("Deny"))
    assert cell.done.wait(30)
    shown = cell.text()
    assert shown.index("Bash touch no.txt") < shown.index("**Denied:**"), shown
    nb.ok("_view.TurnView.add = _add")

    def empties(c: Any) -> list[dict[str, Any]]:
        return [o for o in c.outputs if o.get("output_type") == "display_data" and not str(o["data"].get("text/markdown", "x")).strip()
                and VIEW not in o["data"]]  # fmt: skip

    assert empties(cell) == [], cell.outputs
    cell = nb.ok("%%claude --allowed-tools Bash\ntouch yes.txt")  # a waiting line, then the call, then another
    assert "did it" in cell.text() and empties(cell) == [], cell.outputs
    cell = nb.ok("%%claude --bg\nhello in the background")
    nb.wait_for(lambda: "this turn" in cell.text() and not [o for o in cell.outputs if VIEW in o.get("data", {})], 30, "the end")
    assert empties(cell) == [], cell.outputs


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_stop_in_a_stream_text_cell_is_one_line_and_stops_the_cli(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """The stop button in a ``stream_text(query(...))`` cell: the text so far stays, one line says
    it stopped (a KeyboardInterrupt traceback through the SDK's frames before), and the query's
    CLI is stopped then, not when the generator is collected."""
    api.enqueue(Reply([{"type": "text", "text": STORY * 8}], chunk=20, delay=0.05))
    nb.ok("import dataclasses\nfrom claude_sdkurl import query\nfrom claude_sdkurl.display import stream_text\n"
          "opts = dataclasses.replace(_nb.agent().options, include_partial_messages=True)")  # fmt: skip
    cell = nb.submit("stream_text(query('An endless story', opts))")
    nb.wait_for(lambda: "Paragraph 1:" in cell.text(), 30, "the story streaming")
    nb.interrupt()
    assert cell.done.wait(10)
    assert [e["traceback"] for e in cell.errors()] == [["■ Stopped: stream_text stopped; its query's CLI is stopped, the text so far is above"]]
    assert "Paragraph 1:" in cell.text() and "Traceback" not in cell.text()
    nb.wait_for(lambda: not clis_with(home), 3, "no CLI left after the stop")
    assert nb.ok("import sys\nprint(isinstance(sys.last_value, KeyboardInterrupt))").text().strip() == "True"  # a script still stops


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_kernel_restart_mid_turn_leaves_a_stopped_note(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """Restarting the kernel mid-turn: the cut answer gets its "stopped" line (it ended with none,
    as if the answer were whole), saying how to go on; the CLI is stopped."""
    api.enqueue(Reply([{"type": "text", "text": STORY * 8}], chunk=20, delay=0.05))
    cell = nb.submit("%%claude\nAn endless story")
    nb.wait_for(lambda: "Paragraph 1:" in cell.text(), 30, "the story streaming")
    nb.km.restart_kernel(now=False)
    # (bounds for a machine at load 20+: the restart starts a new kernel process, and the old
    # kernel's CLI is stopped by its orphan watcher; both came later than 10 s and 5 s under two burners)
    nb.wait_for(lambda: "■ Stopped: the kernel restarted" in cell.text(), 60, "the stopped line")
    assert "`%%claude --continue`" in cell.text() and "Paragraph 1:" in cell.text()
    nb.wait_for(lambda: not clis_with(home), 30, "no CLI left after the restart")
    # The new kernel runs a cell. Asked through the Kernel's own reader threads: jupyter_client's
    # wait_for_ready() read the same ZMQ sockets as those threads, and two readers tore messages
    # (runs F and H under two burners: "Invalid Signature", "<IDS|MSG> is not in list"). A cell
    # sent while the new kernel's sockets were still connecting may be lost: sent again.
    deadline = time.monotonic() + 120
    while True:
        try:
            assert nb.ok("print('the new kernel')", timeout=15).text().strip() == "the new kernel"
            break
        except TimeoutError:
            if time.monotonic() > deadline:
                raise


RELAY_TOKEN = "notebook-relay-token-0123456789"


def serve_relay(nb: Kernel) -> int:
    """A relay with steering in the kernel, before any cell starts a CLI (it taps new ones)."""
    out = nb.ok(f"from claude_sdkurl import relay as _relay\n_r = _relay.serve(port=0, steer=True, token={RELAY_TOKEN!r}, "
                "announce=False)\nprint(_r.port)")  # fmt: skip
    return int(out.text().strip())


def frontend_says(port: int, frame: dict[str, Any], until: Callable[[dict[str, Any]], bool] | None, timeout: float = 60) -> None:
    """A /ws frontend of the protocol notes writes ``frame`` into the session, then reads its
    lines until one satisfies ``until``."""
    import json

    from websockets.sync.client import connect

    with connect(f"ws://127.0.0.1:{port}/ws?token={RELAY_TOKEN}", open_timeout=10) as ws:
        ws.send(json.dumps(frame))
        end = time.monotonic() + timeout
        while until is not None:
            line = json.loads(ws.recv(timeout=max(0.1, end - time.monotonic())))
            if until(line):
                return


def page_message(text_: str, session_id: str) -> dict[str, Any]:
    return {"type": "user", "message": {"role": "user", "content": text_}, "parent_tool_use_id": None, "session_id": session_id}


def answered(what: str) -> Callable[[dict[str, Any]], bool]:
    return lambda line: line.get("type") == "result" and line.get("result") == f"answer to: {what}"


@pytest.mark.parametrize("transport", ["stdio", "websocket"], indirect=True)
def test_a_message_from_the_relays_page_leaves_every_later_cell_with_its_own_answer(nb: Kernel, api: MockMessagesAPI) -> None:
    """Issue 60, item 1: after a message typed on the relay's page into the notebook's session,
    the next cell showed the page message's answer, the one after it the previous cell's, and
    _claude held the wrong text from then on. Between cells and during one."""
    port = serve_relay(nb)
    script(api, lambda r: text(f"answer to: {r.last_user_text()}"))
    nb.ok("%%claude\nFirst question")
    sid = nb.ok("print(_claude.session_id)").text().strip()
    frontend_says(port, page_message("From the page", sid), answered("From the page"))  # between two cells
    cell = nb.ok("%%claude\nWhat now?")
    assert nb.ok("print(repr(_claude.text))").text().strip() == repr("answer to: What now?")
    shown = cell.text()
    assert "outside this notebook" in shown and shown.index("answer to: From the page") < shown.index("answer to: What now?")
    cell = nb.ok("%%claude\nAnd then?")
    assert nb.ok("print(repr(_claude.text))").text().strip() == repr("answer to: And then?")
    assert "outside this notebook" not in cell.text() and "From the page" not in cell.text()
    # during a cell: the cell keeps its own answer; the page's turn, which the CLI takes after
    # it, is shown by the next cell, apart
    script(api, lambda r: Reply([{"type": "text", "text": f"answer to: {r.last_user_text()}"}], chunk=2, delay=0.05)
           if r.last_user_text() == "Slowly" else text(f"answer to: {r.last_user_text()}"))  # fmt: skip
    slow = nb.submit("%%claude\nSlowly")
    nb.wait_for(lambda: "answer" in slow.text(), 30, "the slow answer streaming")
    frontend_says(port, page_message("Meanwhile", sid), None)
    assert slow.done.wait(60)
    assert nb.ok("print(repr(_claude.text))").text().strip() == repr("answer to: Slowly")
    cell = nb.ok("%%claude\nLast one")
    assert nb.ok("print(repr(_claude.text))").text().strip() == repr("answer to: Last one")
    assert "answer to: Meanwhile" in cell.text() and "outside this notebook" in cell.text()


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_the_relays_interrupt_stops_a_cell_as_the_stop_button_does(nb: Kernel, api: MockMessagesAPI) -> None:
    """Issue 60, item 2: the page's Interrupt ended the cell as an error (error_during_execution
    and the CLI's diagnostic) with _claude.stopped False."""
    port = serve_relay(nb)
    script(api, lambda r: Reply([{"type": "text", "text": STORY * 4}], chunk=20, delay=0.05)
           if "endless" in r.last_user_text() else text(f"answer to: {r.last_user_text()}"))  # fmt: skip
    cell = nb.submit("%%claude\nAn endless story")
    nb.wait_for(lambda: "Paragraph 1:" in cell.text(), 30, "the story streaming")
    frontend_says(port, {"type": "control_request", "request_id": "page-1", "request": {"subtype": "interrupt"}}, None)
    assert cell.done.wait(30) and not cell.errors()
    shown = cell.text()
    assert "■ Stopped from the relay's page" in shown and "error_during_execution" not in shown and "⚠" not in shown
    assert nb.ok("print(_claude.stopped, _claude.error)").text().strip() == "True None"
    nb.ok("%%claude\nAnd now?")
    assert nb.ok("print(repr(_claude.text))").text().strip() == repr("answer to: And now?")


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_what_a_newcomer_sees_said_once_in_the_notebooks_words(nb: Kernel, api: MockMessagesAPI, home: Path) -> None:
    """Issue 60, items 7 and 9: bypassPermissions as root said "Every tool runs without asking",
    then showed the CLI's refusal twice with no hint; relay.serve() printed its link as a pink
    line; configure() as a cell's last line printed a raw repr."""
    if os.geteuid() != 0:
        pytest.skip("the CLI refuses bypassPermissions to root alone")
    script(api, run_touch)
    cell = nb.run("%%claude --permission-mode bypassPermissions\ntouch x.txt", timeout=60)
    shown = cell.text()
    assert "IS_SANDBOX=1" in shown and "runs without asking" not in shown, shown
    assert shown.count("root") == 1 and not [o for o in cell.outputs if o.get("output_type") == "stream"]
    assert clis_with(home) == [] and api.message_requests() == []  # nothing started to be refused
    link = nb.ok("from claude_sdkurl import relay as _relay\n_r = _relay.serve(port=0)")
    assert not [o for o in link.outputs if o.get("output_type") == "stream"]
    assert "[watch the sessions](http://127.0.0.1:" in link.text()
    nb.ok("_r.close()")
    said = nb.ok("_nb.configure(_nb.agent().options)").text()
    assert "%%claude: model" in said and "permission mode `default`" in said and "object at 0x" not in said


@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_a_cli_that_writes_much_on_stderr_as_it_starts_still_starts(nb: Kernel, api: MockMessagesAPI, cli_paths: dict[str, Path],
                                                                    tmp_path: Path) -> None:  # fmt: skip
    """The notebook takes the CLI's standard error itself (to show it once): its callback must
    never wait for the lock a cell holds while the CLI starts, or a CLI that writes more than a
    pipe holds before it answers (here 300 KB of warnings) would stop, and the cell with it."""
    cli = tmp_path / "claude"
    cli.write_text(f"#!/bin/sh\nyes 'a warning from the CLI' | head -n 12000 >&2\nexec {cli_paths['stdio']} \"$@\"\n")
    cli.chmod(0o755)
    nb.ok(f"_nb.configure(__import__('dataclasses').replace(_nb.agent().options, cli_path={str(cli)!r}))")
    script(api, lambda r: text(f"answer to: {r.last_user_text()}"))
    cell = nb.run("%%claude\nstill there?", timeout=90)
    shown = cell.text()
    assert "answer to: still there?" in shown and "a warning from the CLI" in shown, shown[-500:]
    assert shown.count("a warning from the CLI") <= 50  # the first lines, not 12,000
