"""json.loads for what users wrote.

The standard parser recurses once per nested array or object and raises RecursionError
past the interpreter's limit (a composer.json of 200 000 `[`): not a ValueError, so a
reader that catches a malformed file's ValueError crashed on it (audit 44). Here it is
a JSONDecodeError too, with the same handling as any other malformed file.
"""

from __future__ import annotations

from typing import Any


def loads(text: str) -> Any:
    # json imported here: importing this module is on every check's path (the command
    # readers), parsing JSON is not (3 ms of start-up, as cmdline's Dockerfile reading)
    import json

    try:
        return json.loads(text)
    except RecursionError:
        raise json.JSONDecodeError("nested deeper than pool-advisor reads", text, 0) from None
