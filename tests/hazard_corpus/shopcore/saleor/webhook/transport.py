import logging

logger = logging.getLogger(__name__)


def send(payload):
    logger.info("Execute webhook %s", payload["id"])  # safe: log message with placeholder
    raise ValueError("Reset connection")  # safe: error text
