"""What the service tells its operators: Prometheus metrics (web and worker), the request id that
ties a request's logs, audit rows and tasks together, and the log filter that stamps it."""
