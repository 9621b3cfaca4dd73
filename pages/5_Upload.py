"""Upload raw setup folders: validated, kept on this machine, and added to the site."""

import streamlit as st

from benchcards import paths
from ingest import upload
from ingest.errors import IngestError
from ingest.limits import LIMITS
from ui import common, importing

common.page("Upload", "⬆️")
common.store()
st.title("Upload raw results")
st.markdown(
    "Upload a **setup folder** (with `setup.json` and `speed/`, `quality/`, `fit/` runs, each "
    "`<kind>/<run_id>/contract.json` plus its logs) as a `.zip`, or pick the folder itself. Every file is checked "
    "against the JSON Schemas in `schemas/`; if anything is wrong, you get every error with its file and field, and "
    "nothing is stored. A setup id or run id that another source already uses is refused.")
st.caption(f"Limits: {LIMITS.upload_bytes // 2**20} MiB per archive, {LIMITS.inflated_total // 2**20} MiB unpacked, "
           f"{LIMITS.zip_entries:,} files; contracts up to {LIMITS.contract_bytes // 2**20} MiB. Only the standard "
           "zip compression (deflate) is read; encrypted archives are refused.")
kind = st.segmented_control("Upload as", ["zip archive", "folder", "results of another tool"], default="zip archive",
                            key="kind")
if kind == "results of another tool":
    importing.section(importing.default_save(common.db_path(), paths.LOCAL))
    st.stop()
if kind == "folder":
    picked = st.file_uploader("Setup folder", accept_multiple_files="directory", key="folder")
else:
    picked = st.file_uploader("Zip of one or more setup folders", type=["zip"], key="zip")
if st.button("Validate and add", type="primary", disabled=not picked):
    try:
        with st.spinner("Checking every file…"):
            if kind == "folder":
                files = [(f.name, f.getvalue()) for f in picked or []]
                result = upload.accept_files(files, common.db_path(), label="folder")
            else:
                result = upload.accept_zip(picked.getvalue(), common.db_path(), label=picked.name)
    except IngestError as exc:
        st.error(f"Rejected: {exc.count:,} problem(s). Nothing was stored.")
        st.code("\n".join(exc.errors), language=None, wrap_lines=True)
        if exc.notes:
            st.caption("Not taken from the upload:")
            st.code("\n".join(exc.notes), language=None, wrap_lines=True)
    else:
        if result.report is None:
            st.info("Unchanged: exactly this is already stored. Nothing was stored again.")
        else:
            st.success(f"Added: {result.report.text()}")
        for sid, what in result.setups.items():
            st.page_link("pages/1_Setup_card.py", label=f"Open the card of {common.md(sid)} ({what})",
                         query_params={"setup": sid}, icon=":material/arrow_forward:")
        if result.skipped:
            st.caption("Not taken from the upload:")
            st.code("\n".join(result.skipped), language=None, wrap_lines=True)
st.caption(f"Uploaded folders are kept in `{paths.LOCAL.name}/` beside the demo data on this machine.")
