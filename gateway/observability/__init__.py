"""What the gateway tells its operators: Prometheus metrics, OpenTelemetry traces and
events, logs and the access line.
"""
