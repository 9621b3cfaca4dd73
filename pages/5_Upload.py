"""Upload raw setup folders: validated, kept on this machine, and added to the site."""

import streamlit as st

from benchcards.read import paths
from ingest.limits import LIMITS
from ui import common, importing, jobs

common.page("Upload", "⬆️")
common.store()
st.title("Upload raw results")
st.markdown(
    "Upload a **setup folder** (with `setup.json` and `speed/`, `quality/`, `fit/` runs, each "
    "`<kind>/<run_id>/contract.json` plus its logs) as a `.zip`, or pick the folder itself. Every file is checked "
    "against the JSON Schemas in `schemas/`; if anything is wrong, you get every error with its file and field, and "
    "nothing is stored. A setup id or run id that another source already uses is refused.")
st.caption(f"Limits: {LIMITS.upload_text()} (the upload box writes MiB as “MB”). Only the standard zip "
           "compression (deflate) is read; encrypted archives are refused.")
with st.expander("How to make a setup folder", icon=":material/help:"):
    st.markdown(
        "- **Measure a server** on this machine with **Run live** (or `python -m live measure --help` in a shell): "
        "it writes a complete setup folder and adds it to the site.\n"
        "- **Start from an example**: `python -m devdata.synth OUT --count 1` writes a realistic (synthetic) "
        "setup folder to copy; the demo folders in `data/raw/` are examples of the layout too (most hold "
        "synthetic demo data, marked *synthetic* on the site, not measurements).\n"
        "- **Write one by hand**: the layout and the rules are in the README's *Raw folders* section; every field "
        "is described in the JSON Schemas below (and `schemas/models.py`). Check a folder before uploading with "
        "`python -m ingest FOLDER --check`.")
    st.markdown("```\n<setup>/setup.json                      the setup: hardware, engine, model, server argv, sampling\n"
            "<setup>/speed/<run_id>/contract.json    a speed run\n"
            "<setup>/quality/<run_id>/contract.json  a quality run\n"
            "<setup>/fit/<run_id>/contract.json      a memory test\n"
            "<setup>/<kind>/<run_id>/...             logs and other raw files of that run\n```")
    cols = st.columns(4)
    for col, name in zip(cols, ("setup", "speed", "quality", "fit")):
        col.download_button(f"{name}.schema.json", (paths.SCHEMAS / f"{name}.schema.json").read_bytes(),
                            file_name=f"{name}.schema.json", mime="application/json", key=f"schema-{name}",
                            icon=":material/data_object:")
kind = st.segmented_control("Upload as", ["zip archive", "folder", "results of another tool"], default="zip archive",
                            key="kind")
if kind == "results of another tool":
    importing.section(common.db_path(), paths.LOCAL)
    st.stop()
if kind == "folder":
    picked = st.file_uploader("Setup folder", accept_multiple_files="directory", key="folder",
                              max_upload_size=LIMITS.file_mib())
else:
    picked = st.file_uploader("Zip of one or more setup folders", type=["zip"], key="zip",
                              max_upload_size=LIMITS.upload_mib())
if st.button("Validate and add", type="primary", disabled=not picked):
    job = {"db": common.db_path(), "local": paths.LOCAL}
    if kind == "folder":
        out = jobs.run("files", {**job, "files": [(f.name, f.getvalue()) for f in picked or []], "label": "folder"},
                       "Checking every file")
    else:
        out = jobs.run("zip", {**job, "data": picked.getvalue(), "label": picked.name}, "Unpacking and checking every file")
    if out.status in ("rejected", "not imported"):
        st.error(f"Rejected: {out.count:,} problem(s). Nothing was stored.")
        st.code("\n".join(out.errors), language=None, wrap_lines=True)
        if out.notes:
            st.caption("Not taken from the upload:")
            st.code("\n".join(out.notes), language=None, wrap_lines=True)
    elif out.report is None:  # the database, or the time limit: one clear line
        st.error(f"Not stored: {out.errors[0] if out.errors else 'the upload did not finish'}")
    else:
        result = out.report
        if result.report is None:
            st.info("Unchanged: exactly this is already stored. Nothing was stored again.")
        else:
            st.success(f"Added: {result.report.text()}")
            if result.report.warning_list:
                st.warning("Warnings (stored with the figures; each is also on its setup's card under "
                           "*Warnings*):\n\n" + "\n".join(f"- {common.md(w)}" for w in result.report.warning_list[:50])
                           + (f"\n\n… and {len(result.report.warning_list) - 50:,} more on the cards."
                              if len(result.report.warning_list) > 50 else ""))
        for sid, what in result.setups.items():
            st.page_link("pages/1_Setup_card.py", label=f"Open the card of {common.md(sid)} ({what})",
                         query_params={"setup": sid}, icon=":material/arrow_forward:")
        if result.skipped:
            st.caption("Not taken from the upload:")
            st.code("\n".join(result.skipped), language=None, wrap_lines=True)
st.caption(f"Uploaded folders are kept in {common.md(paths.shown(paths.LOCAL))} on this machine "
           "(`$BENCHCARDS_LOCAL` sets where).")
