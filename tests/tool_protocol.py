"""The protocol of the test tools that run in interpreters of their own (`paimon_tool.py` under
pypaimon's, `paimon_java_tool.py` under Java Paimon's): this module imports neither, so both
tools share it; `paimon_fixtures._Tool` is its other end."""
from __future__ import annotations

import contextlib
import io
import json
import sys
import traceback
from collections.abc import Callable, Mapping

# starts each answer line of `serve`: anything else on stdout (a library's print) is not an answer
ANSWER = "@@paimon-tool-answer@@ "


def serve(commands: Mapping[str, Callable[..., None]]) -> None:
    """Many commands in one interpreter (importing pypaimon takes ~1.5 s, starting Java's more,
    and the tests run hundreds of commands).  Each stdin line is a JSON list [command, *args];
    each answer is one stdout line, ANSWER + JSON {"out": what the command printed} or
    {"error": its traceback}."""
    answers = sys.stdout
    for line in sys.stdin:
        printed = io.StringIO()
        try:
            command, *args = json.loads(line)
            with contextlib.redirect_stdout(printed):
                commands[command](*args)
            answer = {"out": printed.getvalue()}
        except Exception:
            answer = {"error": printed.getvalue() + traceback.format_exc()}
        answers.write(ANSWER + json.dumps(answer) + "\n")
        answers.flush()


def main(commands: Mapping[str, Callable[..., None]]) -> None:
    """``tool.py serve``, or ``tool.py COMMAND ARG...`` once."""
    command, *args = sys.argv[1:]
    serve(commands) if command == "serve" else commands[command](*args)
