"""The sampling fields of every Run live mode: the fields of ``live.settings.SamplingSettings`` with its defaults,
labels and help (one definition, the command line's), read back through the model so that a value is checked by
the rule that checks ``--temperature`` and the others."""

from __future__ import annotations

from typing import Any

import streamlit as st

from live.settings import SamplingSettings, build, flag_of, label_of, page_default

__all__ = ["EXPANDER", "sampling_fields", "sampling_settings"]

#: the heading of the sampling fields on the page
EXPANDER = "Sampling (sent with every request)"


def _extra(name: str) -> dict[str, Any]:
    extra = SamplingSettings.model_fields[name].json_schema_extra
    return extra if isinstance(extra, dict) else {}


def sampling_fields(prefix: str) -> dict[str, Any]:
    """Draw one field per ``SamplingSettings`` field (widget keys ``<prefix>_<name>``) in a closed expander,
    four to a row; returns the values as typed (None: left empty, not sent)."""
    names = list(SamplingSettings.model_fields)
    values: dict[str, Any] = {}
    with st.expander(EXPANDER):
        for start in range(0, len(names), 4):
            for col, name in zip(st.columns(4), names[start:start + 4]):
                values[name] = _field(col, prefix, name)
    return values


def _field(col: Any, prefix: str, name: str) -> Any:
    extra, default = _extra(name), page_default(SamplingSettings, name)
    label, help_ = label_of(SamplingSettings, name), SamplingSettings.model_fields[name].description
    low, high = extra.get("form") or (None, None)
    key = f"{prefix}_{name}"
    if extra["kind"] == "str":
        return col.text_input(label, default or "", key=key, help=help_) or None
    if extra["kind"] == "int":
        return col.number_input(label, None if low is None else int(low), None if high is None else int(high),
                                default, step=1, key=key, help=help_, placeholder="not sent")
    return col.number_input(label, low, high, default, step=0.05, format="%.2f", key=key, help=help_,
                            placeholder="not sent")


def sampling_settings(values: dict[str, Any]) -> tuple[SamplingSettings | None, list[str]]:
    """The typed fields as ``SamplingSettings``, or None and one problem a line, each naming its field as the
    page does (the model's check, which names the command-line flag, with the field's label instead)."""
    typed = {k: (int(v) if _extra(k)["kind"] == "int" and v is not None else v) for k, v in values.items()}
    settings, problems = build(SamplingSettings, typed)
    for name in SamplingSettings.model_fields:
        flag, label = flag_of(SamplingSettings, name), label_of(SamplingSettings, name)
        problems = [f"{label}{p[len(flag):]}" if p.startswith(flag + ":") else p for p in problems]
    return settings, problems
