"""Tapes: record a real agent run once, replay it offline and deterministically.

A *wire tape* holds every frame of one session both ways (the control plane included), with a
header naming the SDK, CLI and model versions. :func:`record` writes one per session started
inside it; :func:`replay` plays them back with no CLI at all, in one of three modes:

* ``"inert"``: the messages only; no callback runs;
* ``"stub"``: the session in lockstep, the tape's answers to the program's control requests;
  no callback runs;
* ``"verify"``: as stub, and the CLI's requests are replayed so the program's callbacks run
  again; what they answer, and every frame the program writes, is compared with the tape, and
  the first difference raises :class:`TapeMismatch` naming the entry and field.

A *model tape* (:func:`model_tape`) holds the Messages API exchanges of a live run instead:
served to the real CLI by a proxy on ``ANTHROPIC_BASE_URL``, the CLI, its tools and the
program's callbacks run for real, with no network.

A tape that ends in a failure (the CLI killed, an error the session ended with) replays it as
the same exception. Tapes of ``claude-agent-cassette`` read unchanged: see
``docs/guide/testing.md`` for where its format and ours differ.
"""

from ._context import record, replay, tapes_at
from ._format import FORMAT, Entry, Tape, TapeError, load, save
from ._model import ModelTape, ModelTapeMiss, model_tape, normalised_request
from ._scrub import Scrubber
from ._wire import MODES, RecordingTransport, ReplayTransport, TapeMismatch, first_difference, normalised

__all__ = [
    "model_tape",
    "ModelTape",
    "ModelTapeMiss",
    "normalised_request",
    "record",
    "replay",
    "tapes_at",
    "Tape",
    "Entry",
    "TapeError",
    "TapeMismatch",
    "Scrubber",
    "load",
    "save",
    "FORMAT",
    "MODES",
    "RecordingTransport",
    "ReplayTransport",
    "first_difference",
    "normalised",
]
