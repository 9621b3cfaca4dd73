"""Upload raw setup folders: validated, kept on this machine, and added to the site."""

import streamlit as st

from benchcards import upload
from benchcards.paths import LOCAL
from ingest.validate import IngestError
from ui import common

common.page("Upload", "⬆️")
common.store()
st.title("Upload raw results")
st.markdown(
    "Upload a **setup folder** (with `setup.json` and `speed/`, `quality/`, `fit/` runs, each "
    "`<kind>/<run_id>/contract.json` plus its logs) as a `.zip`, or pick the folder itself. Every file is checked "
    "against the JSON Schemas in `schemas/`; if anything is wrong, you get every error with its file and field, and "
    "nothing is stored.")
kind = st.segmented_control("Upload as", ["zip archive", "folder"], default="zip archive", key="kind")
if kind == "folder":
    picked = st.file_uploader("Setup folder", accept_multiple_files="directory", key="folder")
    files = [(f.name, f.getvalue()) for f in picked or []]
else:
    picked = st.file_uploader("Zip of one or more setup folders", type=["zip"], key="zip")
    files = None
if st.button("Validate and add", type="primary", disabled=not picked):
    try:
        if files is None:
            files = upload.files_from_zip(picked.getvalue())
        report = upload.accept(files, common.db_path(), label=getattr(picked, "name", "upload"))
    except IngestError as exc:
        st.error(f"Rejected: {len(exc.errors)} problem(s). Nothing was stored.")
        st.code("\n".join(exc.errors), language=None, wrap_lines=True)
    else:
        st.success(f"Added: {report.text()}")
        for sid in report.new + report.replaced + report.unchanged:
            st.page_link("pages/1_Setup_card.py", label=f"Open the card of {sid}", query_params={"setup": sid},
                         icon=":material/arrow_forward:")
st.caption(f"Uploaded folders are kept in `{LOCAL.relative_to(LOCAL.parent.parent)}` on this machine.")
