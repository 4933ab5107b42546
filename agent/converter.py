"""The project's data converter: pydantic for every payload (and, with S3 configured,
Temporal's ExternalStorage for big ones). Worker, client, CLI and tests all use this one."""

from __future__ import annotations

from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.converter import DataConverter


def agent_data_converter() -> DataConverter:
    """The data converter every client and worker of this project uses."""
    return pydantic_data_converter
