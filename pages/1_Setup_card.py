"""Setup card: everything measured for one setup, and how to measure it again.

The sections, their words and their order are benchcards.views.cardview's (the export walks the same list);
ui.cardpage draws them.
"""

import streamlit as st

from benchcards.read import card_data
from ui import cardpage, common

common.page("Setup card", "🗂️")
store = common.store()

if not card_data.setup_ids(store):
    st.info("No setups yet: nothing to show a card for.")
    st.stop()
named = st.query_params.get("setup")  # read before the picker, which drops an unknown id from the URL
sid = common.setup_picker(store, "Setup", key="setup")
if sid is None:
    if not named:  # an unknown id was just named in the picker's warning, which says what to do: say it once
        st.info("Choose a setup above, or open one from the overview.")
    st.stop()
cardpage.show(store, card_data.card(store, sid))
