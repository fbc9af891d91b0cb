"""Prefect flows and tasks over attnlab's components; all MLflow calls live here."""
