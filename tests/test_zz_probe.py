import json
from pathlib import Path
import pytest
from claude_sdkurl.evals import run_eval, Target, variants
from claude_sdkurl.types import AssistantMessage, SystemMessage
from . import evals_agent
from .test_realcli_evals import tasks, seed  # noqa

@pytest.mark.parametrize("transport", ["stdio"], indirect=True)
def test_probe(make_options, api, seed, home):
    api.responder = evals_agent.model
    add = tasks(seed)[0]
    for i in range(3):
        r = run_eval(variants(add, "kill"), [Target("agent", make_options(), program=evals_agent.program())], runs=1, keep_workspaces=True)
        a = r.attempts[0]
        for m in a.messages:
            if isinstance(m, AssistantMessage):
                print("WIRE", m.message_id if hasattr(m,'message_id') else None, m.usage)
        sids = [m.data.get("session_id") for m in a.messages if isinstance(m, SystemMessage)]
        for sid in sids:
            for p in home.rglob(f"{sid}.jsonl"):
                for line in p.read_text().splitlines():
                    e = json.loads(line)
                    if e.get("type") == "assistant":
                        print("TRANSCRIPT", e["message"].get("id"), e["message"].get("usage", {}).get("output_tokens"))
