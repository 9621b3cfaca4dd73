"""Every size bound of the write side, in one place.

Input is data from strangers: each dimension that could grow without end (bytes,
files, nesting, names, errors) has a bound here, and each bound has a clear error
message where it is enforced. Nothing is trusted from a header: sizes are counted
while reading.
"""

from __future__ import annotations

from dataclasses import dataclass

MiB = 2**20


@dataclass(frozen=True)
class Limits:
    """Bounds on raw folders, JSON documents, uploads and error reports."""

    #: one contract.json; a real one is well under 1 MiB (thousands of records)
    contract_bytes: int = 16 * MiB
    #: setup.json
    setup_bytes: int = 1 * MiB
    #: nesting of objects and arrays in a JSON document (the schemas need fewer than 10)
    json_depth: int = 64
    #: one attachment (hashed in chunks, never held in memory whole)
    attachment_bytes: int = 1024 * MiB
    #: files and folders in one setup folder
    files_per_setup: int = 10_000
    #: folder levels below a setup folder (or below an ingest root, when looking for setup folders)
    dir_depth: int = 16
    #: bytes of one file or folder name (UTF-8)
    name_bytes: int = 255
    #: bytes of a path relative to its setup folder (UTF-8)
    path_bytes: int = 1024
    #: errors listed per file; the rest are counted
    errors_per_file: int = 20
    #: errors listed in one report; the rest are counted
    errors_total: int = 400
    #: characters of one error message (values quoted in it are cut)
    message_chars: int = 400
    #: the uploaded archive itself
    upload_bytes: int = 200 * MiB
    #: bytes all entries of an archive inflate to, counted while inflating
    inflated_total: int = 512 * MiB
    #: bytes one entry inflates to, counted while inflating
    inflated_file: int = 128 * MiB
    #: entries of an archive (files and folders)
    zip_entries: int = 10_000
    #: the archive's central directory (read before any entry, so it is bounded first)
    zip_directory_bytes: int = 8 * MiB
    #: a quality item file (JSONL, live/items.py), read on the command line or uploaded on the Run live page
    items_file_bytes: int = 64 * MiB
    #: items in one item file
    items_per_file: int = 20_000
    #: one line (one item) of an item file
    item_line_bytes: int = 4 * MiB
    #: nesting of one item's JSON (an item is flat: strings, numbers and a list of choices)
    item_json_depth: int = 3
    #: a regex scorer's pattern
    item_pattern_chars: int = 500
    #: one counted repeat of a pattern ({m}, {m,n}, {m,}; live/regex_bounds.py): the regex module expands it
    #: when it compiles, so a{1000000000} would allocate without end
    item_repeat_count: int = 1000
    #: the size the counted repeats expand a pattern to, nesting multiplied ((a{100}){100} is 10,000)
    item_repeat_size: int = 20_000


    def upload_mib(self) -> int:
        """The archive limit in whole MiB: the Upload page's widget and ``server.maxUploadSize`` in
        .streamlit/config.toml use this number (Streamlit writes it 'MB')."""
        return self.upload_bytes // MiB

    def file_mib(self) -> int:
        """The limit of one file of a folder upload (and of one archive entry, unpacked) in whole MiB."""
        return self.inflated_file // MiB

    def upload_text(self) -> str:
        """The upload limits in one sentence, as the Upload page, the upload CLI and the README say them."""
        return (f"a zip archive up to {self.upload_mib()} MiB; unpacked (or picked as a folder) each file up to "
                f"{self.file_mib()} MiB and {self.inflated_total // MiB} MiB in all, at most "
                f"{self.zip_entries:,} files; a contract up to {self.contract_bytes // MiB} MiB")


#: the bounds in force
LIMITS = Limits()
