"""The engine: the machine room under the public areas.

The sans-I/O core (``protocol``: lines in, events out; ``run``: intents in, lines out; ``parse``),
the transports (``transport/``), the launch plan (``launch``, ``cli``), the session (``session``:
core + transport + callback workers; ``control``: a handler per control subtype; ``workers``),
how ``query()`` and a client get a session (``start``; pools' common part ``stock``, spare CLIs
``spares``), the session store mechanics a run needs (``paths``, ``resume``, ``storecall``,
``mirror``, ``carried``), and the ground helpers (``usercode``, ``cancel``, ``deadline``,
``limits``, ``log``, ``trace``).

Nothing here is public: import the package's public modules. The engine imports only itself and
the package's ground floor (``types``, ``_errors``, ``_version``); areas reach into it, never the
other way round (what an area adds to a run, it registers: ``observe``). ``tests/test_layers.py``
checks it.
"""
