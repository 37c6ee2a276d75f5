"""A Django application with synchronous views, deployed as Django is: several worker processes.

Every user has a conversation with Claude Code (``claude_sdkurl.Conversations``) that any worker
can serve and that a restart does not lose: the conversations' keys, sessions and leases are in
a SQLite file in the CLI's config directory, shared by the workers (on several machines, give
``Conversations`` a PostgreSQL store and the options a shared ``session_store``). A message
streams back as server-sent events from a plain generator (``StreamingHttpResponse``).

    pip install 'claude-sdkurl' django gunicorn
    cd examples && gunicorn -k gthread --threads 8 -w 4 -b 127.0.0.1:8000 django_app:application

Then ``curl -N 'http://127.0.0.1:8000/chat/alice?prompt=Hello'``. Offline by default (a real CLI
against the bundled mock model); ``CLAUDE_SDKURL_LIVE=1`` uses your own login. ``WORKSPACES``
names the users' folders (the default is ``~/.cache/claude-django``; one for every worker).
A single file for the example's sake: in a project, the settings go to ``settings.py``, the views
to an app's ``views.py``, and ``Conversations`` to a module every view imports.
"""

from __future__ import annotations

import atexit
import dataclasses
import json
import os
import re
import secrets
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

settings.configure(
    DEBUG=False,
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY") or secrets.token_hex(32),  # (no sessions or cookies here)
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
)

from django.core.wsgi import get_wsgi_application  # noqa: E402 - after the settings
from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest, JsonResponse, StreamingHttpResponse  # noqa: E402
from django.urls import path  # noqa: E402

from claude_sdkurl import Conversations, ResultMessage, StreamEvent  # noqa: E402
from claude_sdkurl.testing import DemoEnvironment  # noqa: E402

USER = re.compile(r"[A-Za-z0-9_-]{1,64}")  # a user id is a name, never a path

workspaces = Path(os.environ.get("WORKSPACES") or Path.home() / ".cache" / "claude-django")
workspaces.mkdir(mode=0o700, parents=True, exist_ok=True)
demo = DemoEnvironment(home=workspaces / ".demo-home")  # offline unless CLAUDE_SDKURL_LIVE=1
base = demo.options(include_partial_messages=True, allowed_tools=["Read"])
if os.environ.get("SESSION_HOST"):  # the CLIs live in a session host (a socket path, or "auto": started on demand)
    from claude_sdkurl import host

    conversations = Conversations(base, host=host.ensure() if os.environ["SESSION_HOST"] == "auto" else os.environ["SESSION_HOST"])
else:
    conversations = Conversations(base, max_live=int(os.environ.get("MAX_LIVE", "4")), idle_timeout=120)
atexit.register(conversations.close)


def _events(user: str, prompt: str) -> Iterator[str]:
    options = dataclasses.replace(base, cwd=str(workspaces / user))
    streamed = False
    try:
        for message in conversations.send(user, prompt, options):
            if isinstance(message, StreamEvent):
                delta = message.event.get("delta") or {}
                if message.event.get("type") == "content_block_delta" and delta.get("type") == "text_delta":
                    streamed = True
                    yield f"data: {json.dumps({'text': delta.get('text', '')})}\n\n"
            elif isinstance(message, ResultMessage):
                if not streamed and message.result:
                    yield f"data: {json.dumps({'text': message.result})}\n\n"
                done = {"session": message.session_id, "error": message.is_error, "worker": os.getpid()}
                yield f"event: done\ndata: {json.dumps(done)}\n\n"
    except Exception as e:  # said to the browser; the conversation hibernates and goes on next time
        yield f"event: failed\ndata: {json.dumps({'error': type(e).__name__})}\n\n"


def chat(request: HttpRequest, user: str) -> HttpResponse:
    prompt = request.GET.get("prompt", "").strip()
    if not USER.fullmatch(user) or not prompt or len(prompt) > 20_000:
        return HttpResponseBadRequest("a user id is letters, digits, '-' and '_'; a prompt is 1 to 20,000 characters")
    (workspaces / user).mkdir(mode=0o700, exist_ok=True)
    response = StreamingHttpResponse(_events(user, prompt), content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


def stats(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"live": conversations.live(), "conversations": dict(conversations.stats), "worker": os.getpid()})


urlpatterns = [path("chat/<str:user>", chat), path("stats", stats)]
application = get_wsgi_application()
