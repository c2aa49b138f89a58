"""Every log record carries the request id of the request (or task) it was written under."""

from __future__ import annotations

import logging

from gpuplatform.observability.request_id import current_request_id


class RequestIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id() or "-"
        return True
