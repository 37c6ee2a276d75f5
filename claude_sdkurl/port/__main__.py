"""``python -m claude_sdkurl.port``: see :mod:`claude_sdkurl.port`."""

import sys

from ._command import main

sys.exit(main())
