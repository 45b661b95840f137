"""Disturbances under load: a PostgreSQL outage, and a config reload."""
