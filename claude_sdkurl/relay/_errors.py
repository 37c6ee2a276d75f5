"""The relay's error (in a module of its own: the token file and the server both raise it)."""


class RelayError(Exception):
    """The relay cannot be started as asked (a setting that would expose it, a port in use)."""
