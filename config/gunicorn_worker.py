"""gunicorn's sync worker, answering the requests it refuses itself in the error shape.

gunicorn reads the request line and the headers before Django sees anything, and refuses
what breaks its limits (``limit_request_line``, ``limit_request_fields``,
``limit_request_field_size``) or HTTP's grammar with an HTML page of its own
(``gunicorn.util.write_error``); no setting changes that page. Raising the limits until
Django answers cannot work for the request line: gunicorn takes at most 8190 bytes there, or
0 for no limit at all, which would let a client make a worker read any amount. So the limits
stay gunicorn's (config/gunicorn.conf.py) and this worker says the same thing in JSON, with
the same status, the same log line, and the limit that was passed.
"""

from __future__ import annotations

import json
from datetime import timedelta
from http import HTTPStatus
from typing import Any

from gunicorn import util
from gunicorn.config import Config
from gunicorn.http import errors
from gunicorn.http.wsgi import Response, default_environ
from gunicorn.workers.sync import SyncWorker

from ops.errors import error_body

# The application's own failures (a response header it may not send) or the server's
# configuration: a 500, not the client's fault.
_NOT_THE_CLIENTS = (
    errors.InvalidResponseHeader,
    errors.InvalidResponseHeaderName,
    errors.ConfigurationProblem,
)


def refusal(exc: BaseException, cfg: Config) -> tuple[int, str, str]:
    """The status, code and message for an error gunicorn met before the application ran
    (its statuses are those of ``gunicorn.workers.base.Worker.handle_error``)."""
    if not isinstance(exc, errors.ParseException) or isinstance(exc, _NOT_THE_CLIENTS):
        return 500, "server_error", "Something went wrong on our side; it has been logged."
    if isinstance(exc, errors.LimitRequestLine):
        return (
            414,
            "request_line_too_long",
            "The request line (method, path and query string) is longer than this server's"
            f" limit of {cfg.limit_request_line:,} bytes: send long values in a JSON body.",
        )
    if isinstance(exc, errors.LimitRequestHeaders):
        if str(exc).endswith("fields size"):
            what = (
                f"A header (name and value) is longer than {cfg.limit_request_field_size:,} bytes"
            )
        elif str(exc).endswith("fields"):
            what = f"The request has more than {cfg.limit_request_fields} headers"
        else:
            what = "The headers together are longer than this server reads"
        return 431, "headers_too_large", f"{what}, this server's limit."
    if isinstance(exc, errors.UnsupportedTransferCoding):
        return 501, "not_implemented", f"{exc}: send the body with a Content-Length."
    if isinstance(exc, errors.ExpectationFailed):
        return 417, "expectation_failed", str(exc)
    if isinstance(exc, errors.ForbiddenProxyRequest):
        return 403, "forbidden", "Request forbidden."
    return 400, "malformed_request", f"The request is not valid HTTP: {str(exc)[:200]}"


class JsonErrorsWorker(SyncWorker):
    def handle_error(self, req: Any, client: Any, addr: Any, exc: BaseException) -> None:
        addr = addr or ("", -1)  # a Unix socket
        status, code, message = refusal(exc, self.cfg)
        if status == 500:
            self.log.exception("Error handling request %s", getattr(req, "uri", "(none read)"))
        else:
            self.log.warning("Invalid request from ip=%s: %s", addr[0], exc)
            req = req or getattr(exc, "req", None)
        body = json.dumps(error_body(code, message)).encode()
        reason = HTTPStatus(status).phrase
        if req is not None:  # the access log has a line for it, as for any answer
            environ = default_environ(req, client, self.cfg)
            environ["REMOTE_ADDR"], environ["REMOTE_PORT"] = addr[0], str(addr[1])
            response = Response(req, client, self.cfg)
            response.status = f"{status} {reason}"
            response.response_length = len(body)
            self.log.access(response, req, environ, timedelta(0))
        head = (
            f"HTTP/1.1 {status} {reason}\r\nConnection: close\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        try:
            util.write_nonblock(client, head.encode("latin-1") + body)
        except Exception:
            self.log.debug("Failed to send error message.")
