"""What the served model (MLflow's scoring server over the attnlab pyfunc model) takes in one
request, and the shape of the reasons it answers a refused request with."""

from __future__ import annotations

#: The most rows one request may hold. A default-size model decodes about 3,000 date rows a second
#: on one CPU core, so the largest request is answered in seconds: well inside the scoring server's
#: request timeout (60 s), whose 504 does not stop the computation, and a server told to stop
#: (SIGTERM) waits no longer than that for the request it is computing.
MAX_ROWS = 10_000
#: The longest reason a refused request is answered with, in characters.
LONGEST_REASON = 300


def rows_problem(count: int, limit: int = MAX_ROWS) -> str | None:
    """Why a request of ``count`` rows is refused, or None when it is taken."""
    if count <= limit:
        return None
    return (
        f"the request holds {count:,} rows and the served model takes at most {limit:,} rows per "
        f"request; send them in requests of {limit:,} rows or fewer"
    )


def one_sentence(reason: str, longest: int = LONGEST_REASON) -> str:
    """``reason`` as one sentence on one line: runs of whitespace (newlines included) become one
    space, and a reason over ``longest`` characters is cut and ends with '...'."""
    text = " ".join(reason.split())
    if len(text) > longest:
        text = text[: longest - 3].rstrip() + "..."
    return text
