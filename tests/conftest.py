"""What the Python tests share: the rocescope binary ($ROCESCOPE_BIN, else
built with cargo) and a way to run it."""
import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def binary() -> Path:
    if os.environ.get("ROCESCOPE_BIN"):
        return Path(os.environ["ROCESCOPE_BIN"])
    subprocess.run(["cargo", "build", "--quiet", "--locked", "-p", "rocescope", "--bin", "rocescope"],
                   cwd=ROOT, check=True)
    meta = json.loads(subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"],
                                     cwd=ROOT, check=True, capture_output=True, text=True).stdout)
    return Path(meta["target_directory"]) / "debug" / "rocescope"


class Rocescope:
    """Runs the binary, requiring success (its stderr in the failure)."""

    def __init__(self, path: Path):
        self.path = path

    def __call__(self, *args):
        out = subprocess.run([str(self.path), *map(str, args)], capture_output=True, text=True)
        assert out.returncode == 0, f"rocescope {args}: {out.stderr}\n{out.stdout}"
        return out


@pytest.fixture(scope="session")
def rocescope() -> Rocescope:
    return Rocescope(binary())
