"""The setup of a result that a client-side tool measured against a served endpoint (GuideLLM, llama-benchy).

Such tools record the model name they sent and their own figures, never the server's engine, command or
hardware: those come from the options (``--engine``, ``--server-cmd``, ``--gpu`` ...) or stay defaults that
are listed as assumed on the card. One builder, so the two importers name, key and describe a setup alike.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ingest.importers import hardware as hw
from ingest.importers.base import Options, Source, short_hash, slug
from schemas.models import SCHEMA_VERSION


@dataclass(frozen=True)
class Tool:
    """How a setup names the tool that measured it."""

    label: str  # as titles show it: "GuideLLM"
    tag: str  # the setup id's last piece: "guidellm"
    what: str  # the file, as messages name it: "a GuideLLM report"
    not_in: str  # where the server command is missing from: "the report"


def client_setup(src: Source, opts: Options, model_id: str, tool: Tool, notes: str,
                 assumed: list[dict[str, str]], measured_at: str | None = None) -> tuple[str, dict[str, Any]]:
    """The setup id and setup.json of one result; appends what it assumed to ``assumed`` (pure).

    ``model_id`` is the model the file (or ``--model``) names, a path or a repo id; ``measured_at`` a
    day (YYYY-MM-DD) to list, when the caller knows it at this point.
    """
    hardware = hw.hardware(src, opts, None, assumed=assumed, what=tool.what)
    name = model_id.rstrip("/").rsplit("/", 1)[-1]
    _, quant, _ = hw.split_model_file(name)
    model: dict[str, Any] = {"name": name}
    if "/" in model_id and not model_id.startswith("/"):
        model["repo"] = model_id
    if quant:
        model["quant"] = quant
    engine_name = opts.engine or "OpenAI-compatible server"
    if not opts.engine:
        assumed.append({"field": "engine.name", "value": engine_name,
                        "source": f"default ({tool.label} does not record the server engine; pass --engine)"})
    engine: dict[str, Any] = {"name": engine_name}
    if opts.engine_version:
        engine["version"] = opts.engine_version
    argv = list(opts.server_cmd) if opts.server_cmd else [f"{engine_name} (command not given)"]
    assumed.append({"field": "server.argv", "value": " ".join(argv)[:200],
                    "source": "--server-cmd" if opts.server_cmd else f"default (not in {tool.not_in})"})
    setup = setup_document(opts, name, hardware, model, engine, argv, tool.tag, tool.label,
                           f"imported from the {tool.what.split(' ', 1)[1]} {src.basename}")
    setup_id = setup["setup_id"]
    setup["notes"] = notes
    if measured_at:
        setup["measured_at"] = [measured_at]
    if opts.measured_by:
        setup["measured_by"] = opts.measured_by
    return setup_id, setup


def setup_document(opts: Options, name: str, hardware: dict[str, Any], model: dict[str, Any],
                   engine: dict[str, Any], argv: list[str], tag: str, label: str, provenance: str) -> dict[str, Any]:
    """The setup.json of an imported result: its id a digest of hardware, model, engine and command after the
    readable parts (``--id-prefix``, model, GPU, engine, ``tag``), its title "<model> on <GPU>, <engine>
    (<label>)" after ``--title-prefix`` (pure)."""
    gl = hw.gpu_label(hardware)
    key = (hardware, model, engine, argv)
    bits = [opts.id_prefix or "", slug(name, 40), slug(gl, 24), slug(engine["name"], 16), tag]
    return {
        "schema_version": SCHEMA_VERSION, "setup_id": f"{'-'.join(b for b in bits if b)[:100]}-{short_hash(key)}",
        "title": ((opts.title_prefix or "") + f"{name} on {gl}, {engine['name']} ({label})")[:200],
        "synthetic": bool(opts.synthetic), "provenance": provenance,
        "hardware": hardware, "engine": engine, "model": model, "server": {"argv": argv},
    }


def add_day(setup: dict[str, Any], day: str) -> None:
    """List ``day`` in the setup's ``measured_at`` (sorted, once); changes ``setup``."""
    days = setup.setdefault("measured_at", [])
    if day not in days:
        days.append(day)
        days.sort()
