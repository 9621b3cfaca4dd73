"""The demo build timeline: synthetic llama-bench outputs of four builds, imported as setup folders.

``python -m ingest.importers.demo data/raw`` writes the timeline the shipped demo data holds (one
setup per build, marked synthetic); the llama-bench outputs themselves come from
``devdata.synth.llama_bench_output``, and the importer turns them into setups exactly as it would
a user's file.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from devdata.synth import BUILDS, llama_bench_output
from ingest.importers import Options, Source, convert


def generate_builds(out: Path, seed: int = 1) -> list[Path]:
    """Write the demo build timeline; returns the setup folders written.

    Side effects: writes ``out/<setup_id>/`` folders (setup.json, a speed run with the original output),
    replacing files of the same names.
    """
    sources = [Source(f"llama-bench-b{b}.json", llama_bench_output(seed, b, c, (pp, tg, deep)))
               for b, c, pp, tg, deep in BUILDS]
    opts = Options(synthetic=True, title_prefix="Synthetic: ", id_prefix="timeline-demo",
                   measured_by="devdata.synth")
    written = []
    for res in convert(sources, opts, force="llama-bench"):
        for conv in res.setups:
            conv.setup["provenance"] = (f"devdata.synth seed {seed}: a synthetic llama-bench output, "
                                        "generated, not measured, imported with the llama-bench importer; "
                                        "its GPU memory, file size and command are the generator's own")
            for run in conv.runs:
                # what the importer would assume of a real file (VRAM from the GPU table, the file size from
                # model_size, the command from the columns) the generator states: it chose them
                if isinstance(run.contract.get("imported"), dict):
                    run.contract["imported"]["assumed"] = []
            for rel, data in conv.files():
                target = out / conv.setup_id / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            written.append(out / conv.setup_id)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ingest.importers.demo",
        description="Write the demo build timeline: synthetic llama-bench outputs of four llama.cpp builds (a "
                    "prefill gain, a deep-context decode regression and its fix), imported as setup folders "
                    "marked synthetic.",
        epilog="example:\n  python -m ingest.importers.demo data/raw", formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, help="folder to write the setup folders into")
    parser.add_argument("--seed", type=int, default=1, help="seed of the synthetic repetitions (default 1)")
    args = parser.parse_args(argv)
    for p in generate_builds(args.out, args.seed):
        print(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
