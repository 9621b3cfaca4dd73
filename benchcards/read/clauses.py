"""The SQL clauses the reads share: the latest run wins, and which setups are method tests or reported.

Where several setups ran the same metric in several runs, the latest run wins. Fragments only: no
connection is opened here.
"""

from __future__ import annotations

from schemas.models import Setup

__all__ = ["DEMO_ENGINE", "LATEST_FIT", "LATEST_METRICS", "LATEST_QUALITY", "TINY_MODEL_BYTES", "TINY_MODEL_PARAMS_B", "is_method_test", "latest_fit", "latest_metrics", "latest_quality", "method_test_sql", "reported_sql"]


def _latest(table: str, partition: str, order: str, where: str = "") -> str:
    """Rows of ``table`` where the latest run wins per ``partition`` (filter applied first)."""
    return (f"SELECT * FROM {table} {('WHERE ' + where) if where else ''} "
            f"QUALIFY row_number() OVER (PARTITION BY {partition} ORDER BY {order}) = 1")


def latest_metrics(where: str = "") -> str:
    return _latest("metrics", "setup_id, metric, prompt, level", "run_order DESC", where)


def latest_quality(where: str = "") -> str:
    return _latest("quality_tests", "setup_id, test", "(status = 'ok') DESC, run_order DESC", where)


def latest_fit(where: str = "") -> str:
    return _latest("fit_headline", "setup_id", "run_order DESC", where)


LATEST_METRICS = latest_metrics()
LATEST_QUALITY = latest_quality()
LATEST_FIT = latest_fit()


#: smallest model that is ranked as a model: a setup whose weights are smaller (file or parameters) is a
#: method test however its setup.json is marked (see ``METHOD_TEST_SQL``)
TINY_MODEL_BYTES = 500_000_000
#: the engine name of the bundled demo server (``live.demo_server``): a simulated engine, so a method test
DEMO_ENGINE = "demo"
TINY_MODEL_PARAMS_B = 0.5


def method_test_sql(alias: str = "s") -> str:
    """SQL (over the ``setups`` table as ``alias``) that is true for a method test: a real measurement that shows
    how benchcards measures rather than how fast a model runs. The rule (docs/definitions.md): the setup says so
    (``method_test`` in setup.json), or its engine is the bundled demo server (``DEMO_ENGINE``), or its model
    file is under 500 MB, or it has under 0.5 B parameters.
    Method tests get their own badge and stay out of default selections and ranking charts unless picked."""
    a = alias
    return (f"(coalesce(json_extract_string({a}.setup_json, '$.method_test'), 'false') = 'true' "
            f"OR coalesce({a}.engine = '{DEMO_ENGINE}', false) "
            f"OR coalesce({a}.model_bytes < {TINY_MODEL_BYTES}, false) "
            f"OR coalesce({a}.params_total_b < {TINY_MODEL_PARAMS_B}, false))")


def is_method_test(setup: Setup) -> bool:
    """``method_test_sql`` for one parsed setup."""
    m = setup.model
    return bool(setup.method_test or setup.engine.name == DEMO_ENGINE or (m.file_bytes is not None and m.file_bytes < TINY_MODEL_BYTES)
                or (m.params_total_b is not None and m.params_total_b < TINY_MODEL_PARAMS_B))


def reported_sql(alias: str = "s") -> str:
    """SQL (over ``setups`` as ``alias``) that is true for a reported setup: its figures are what someone else
    posted (docs/definitions.md#reported), with the lowest trust badge and never ranked above a measured one."""
    return f"EXISTS (SELECT 1 FROM runs rr WHERE rr.setup_id = {alias}.setup_id AND rr.kind = 'reported')"
