"""Options shared by the `strait` sub-commands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

CONFIG_ENV = "STRAIT_CONFIG"  # the cli image sets it, as the services' images do
TRANSLATOR_ENV = "STRAIT_TRANSLATOR_URL"
ConfigOption = Annotated[Path | None, typer.Option("--config", envvar=CONFIG_ENV, help="MM2-format properties file")]
TranslatorOption = Annotated[
    str | None,
    typer.Option("--translator", envvar=TRANSLATOR_ENV, help="offset translator URL, e.g. http://127.0.0.1:8080"),
]
TokenOption = Annotated[
    str | None, typer.Option("--token", envvar="STRAIT_TRANSLATOR_TOKEN", help="the translator's bearer token")
]
JsonOption = Annotated[bool, typer.Option("--json", help="machine-readable output")]
GroupOption = Annotated[str, typer.Option("--group", help="the consumer group")]
SourceOption = Annotated[str, typer.Option("--from", help="alias of the cluster the group consumed from")]
TargetOption = Annotated[str, typer.Option("--to", help="alias of the cluster the group moves to")]
