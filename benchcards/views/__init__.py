"""What a person reads, in words: the card, compare, display tables and downloads. The only place where prose
lives; walked by the Streamlit pages and the static export alike."""
